#!/usr/bin/env bash
# The record's gate (issue 19): `slotlog run gate` — one store at 250 writes/s for 10
# virtual minutes on a 1,000,000-document world opened from its checkpoint, with a
# follower that is also the eager compactor — printed beside the record's own figures.
# Arguments after the slotlog path go to `run` (e.g. `--duration-s 60`, `--seed 2`,
# `--bodies blob`). Takes a few minutes and about 9 GB of memory; the report goes to
# target/bench/gate.json.
set -euo pipefail
slotlog=${1:-target/release/slotlog}
shift || true
mkdir -p target/bench
json=target/bench/gate.json
"$slotlog" run gate --json "$@" >"$json"
python3 - "$json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
l, f, c = r["latency_ms"], r.get("follower") or {}, r["checkpoints"]
lag = f.get("apply_lag_ms", {})
print("%-10s %9s %6s %5s %8s %8s %8s %12s %12s %11s" % ("", "writes", "lost", "viol", "p50_ms", "p99_ms",
      "p999_ms", "lag_p50_ms", "lag_p99_ms", "checkpoints"))
print("%-10s %9d %6d %5d %8.0f %8.0f %8.0f %12.0f %12.0f %11d" % ("slotlog", r["acked"], r["lost"],
      r["violations_total"], l["p50"], l["p99"], l["p999"], lag.get("p50", 0), lag.get("p99", 0), c["written"]))
print("%-10s %9d %6d %5s %8.0f %8.0f %8.0f %12s %12.0f %11s" % ("record", 150012, 0, "-", 143, 196, 319, "-", 166, "-"))
print("repro: " + r["repro"])
PY
