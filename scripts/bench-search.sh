#!/usr/bin/env bash
# Body search on a large world (issue 20): for each size, build a world of DOCS documents
# of words (200 to 2,000 bytes, a skewed 4,096-word vocabulary) with a full checkpoint and
# its body segments on local disk (SEGMENTS=none: without segments), open it with the production driver in a separate process, search at once
# and every 100 ms until bodies answer, then time 200 queries. One table row a size; the
# rows also go to target/bench/search.json. A 1,000,000-document row needs about 3 GB of
# disk under TMPDIR and several minutes.
set -euo pipefail
slotlog=${1:-target/release/slotlog}
sizes=${SIZES:-10000 100000 1000000}
segments=()
[[ ${SEGMENTS:-} == none ]] && segments=(--no-segments)
mkdir -p target/bench
json=target/bench/search.json
rm -f "$json.rows"
printf '%9s %8s %17s %8s %11s %9s %10s %10s\n' docs body_mb first_body_answer catalog resident_mb index_mb p50_ms p99_ms
for docs in $sizes; do
  "$slotlog" bench search --docs "$docs" "${segments[@]}" --json 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)
print("%9d %8.0f %15.2f s %8d %11.0f %9.0f %10.2f %10.2f" % (r["docs"], r["body_mb"], r["first_body_answer_s"],
    r["catalog_answers_before"], r["resident_mb"], r["index_mb"], r["query_p50_ms"], r["query_p99_ms"]))
r["config"] = "%d docs, %d segment parts" % (r["docs"], r["segment_parts"])
print(json.dumps(r), file=sys.stderr)' 2>>"$json.rows"
done
python3 -c 'import json,sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))' "$json.rows" >"$json"
rm -f "$json.rows"
"$slotlog" plot-bench "$json" --label config --value first_body_answer_s,resident_mb,query_p99_ms --out target/bench/search.svg
