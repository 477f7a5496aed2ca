#!/usr/bin/env bash
# Cold start from a full checkpoint (issue 9): for each size, build a world of DOCS
# documents with a full checkpoint and SLOTS slots after it on local disk, open it with
# the production driver in a separate process, and print one table row. A 1,000,000
# document row needs several GB of disk under TMPDIR (one file per document's history
# block and body) and a few minutes; the world is removed after each row.
# The rows also go to target/bench/cold-start.json, and a chart of them to
# target/bench/cold-start.svg.
set -euo pipefail
slotlog=${1:-target/release/slotlog}
sizes=${SIZES:-10000:1024 100000:1024 1000000:1024 1000000:8192}
mkdir -p target/bench
json=target/bench/cold-start.json
rm -f "$json.rows"
printf '%9s %7s %8s %12s %13s %8s %10s %10s %8s %10s\n' \
  docs slots open_s peak_rss_mb checkpoint_s ckpt_mb shards history cpu_s install_s
for size in $sizes; do
  docs=${size%%:*} slots=${size##*:}
  "$slotlog" bench cold-start --docs "$docs" --slots-after "$slots" --json 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin); o = r["open"]
print("%9d %7d %8.2f %12.0f %13.1f %8.1f %10d %10d %8.2f %10.3f" % (r["docs"], r["slots_after"], o["open_s"],
    o["peak_rss_mb"], r["checkpoint_s"], r["checkpoint_mb"], r["shards"], r["history_blocks"], o["cpu_s"],
    r["adopt_install_s"]))
row = {"config": "%d docs, %d slots" % (r["docs"], r["slots_after"]), "open_s": o["open_s"],
       "peak_rss_mb": o["peak_rss_mb"], "checkpoint_s": r["checkpoint_s"], "checkpoint_mb": r["checkpoint_mb"]}
print(json.dumps(row), file=sys.stderr)' 2>>"$json.rows"
done
python3 -c 'import json,sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))' "$json.rows" >"$json"
rm -f "$json.rows"
"$slotlog" plot-bench "$json" --label config --value open_s,peak_rss_mb,checkpoint_mb --out target/bench/cold-start.svg
