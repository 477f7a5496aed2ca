#!/usr/bin/env bash
# What one compactor step uploads (issue 11): for each size, build a world of DOCS
# documents with a full checkpoint on local disk, change CHANGED documents spread over it,
# fold one step over the checkpoint as the compactor does (deltas, SPEC 10.16) and as a
# merge (every shard anew, the step before deltas), and print one table row per step; then
# the cold start from the step's checkpoint and from the one before it. A 1,000,000
# document row needs several GB of disk under TMPDIR and a few minutes; the world is
# removed after each row.
set -euo pipefail
slotlog=${1:-target/release/slotlog}
sizes=${SIZES:-100000:3000 1000000:30000}
printf '%9s %7s %6s %11s %8s %8s %8s %13s %13s\n' \
  docs changed step uploaded_mb objects step_s deltas open_after_s open_before_s
for size in $sizes; do
  docs=${size%%:*} changed=${size##*:}
  "$slotlog" bench checkpoint-step --docs "$docs" --changed "$changed" --json 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)
after = r["open_after_step"]["open_s"] if r["open_after_step"] else float("nan")
before = r["open_before_step"]["open_s"] if r["open_before_step"] else float("nan")
for name in ("step", "merge"):
    s = r[name]
    print("%9d %7d %6s %11.2f %8d %8.2f %8d %13.2f %13.2f" % (r["docs"], r["changed"], name,
        s["uploaded_mb"], s["objects_created"], s["step_s"], s["deltas"], after, before))'
done
