#!/usr/bin/env bash
# The record's throughput table under the gcs profile: one store, a closed loop of 256
# writers, batch size and batches ahead varied. Prints writes/s, slots/s and p50 per row,
# each a mean over SEEDS seeds, next to the record's real-GCS figures; the same rows go to
# target/bench/throughput.json and a chart of them to target/bench/throughput.svg.
set -euo pipefail
slotlog=${1:-target/release/slotlog}
seeds=${SEEDS:-1 2 3}
mkdir -p target/bench
json=target/bench/throughput.json
rows=()
printf '%-24s %10s %9s %8s %s\n' config writes/s slots/s p50_ms "record (real GCS)"
row() {
  local label=$1 record=$2; shift 2
  local out
  out=$(for s in $seeds; do "$slotlog" run saturate --seed "$s" --duration-s 30 "$@" --json; done | python3 -c '
import json, sys
dec = json.JSONDecoder(); text = sys.stdin.read(); i = 0; rows = []
while i < len(text):
    while i < len(text) and text[i].isspace(): i += 1
    if i >= len(text): break
    obj, i = dec.raw_decode(text, i); rows.append(obj)
assert all(not r["violations"] for r in rows), "a run failed its checker"
n = len(rows)
print("%.1f %.1f %.1f" % (sum(r["throughput_wps"] for r in rows)/n, sum(r["slots_per_s"] for r in rows)/n, sum(r["latency_ms"]["p50"] for r in rows)/n))')
  read -r wps sps p50 <<<"$out"
  printf '%-24s %10s %9s %8s %s\n' "$label" "$wps" "$sps" "$p50" "$record"
  rows+=("{\"config\": \"$label\", \"writes_per_s\": $wps, \"slots_per_s\": $sps, \"p50_ms\": $p50, \"record\": \"$record\"}")
}
# The record's rows: every body a blob, batches of a fixed size.
row "batch 16, 2 ahead" "352-355" --bodies blob --batch-max 16 --ahead 2
row "batch 32, 1 ahead" "470-512" --bodies blob --batch-max 32 --ahead 1
row "batch 16, 1 ahead" "256-291" --bodies blob --batch-max 16 --ahead 1
row "batch 16, 3 ahead" "no gain over 2" --bodies blob --batch-max 16 --ahead 3
# Past the record: small bodies carried in their slot, batches growing to 256.
row "default (carried, 256)" "-"
row "carried, 256, 0 ahead" "-" --ahead 0
(IFS=,; echo "[${rows[*]}]") >"$json"
"$slotlog" plot-bench "$json" --label config --value writes_per_s,p50_ms --out target/bench/throughput.svg
