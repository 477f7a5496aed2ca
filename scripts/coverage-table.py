#!/usr/bin/env python3
"""Rewrites the "reached in CI by" column of docs/GUARANTEES.md's mark tables from the
per-run lines of `slotlog sweep --json` (one or more files, e.g. the four sweeps of
`just test`): for each mark, the scenarios whose runs hit it, with how many did.

    slotlog sweep <scenarios> --seeds <seeds> --json > target/sweep-1.jsonl   # each sweep
    scripts/coverage-table.py docs/GUARANTEES.md target/sweep-*.jsonl
"""
import collections
import json
import re
import sys


def main(doc, sweeps):
    runs = collections.Counter()  # scenario -> runs
    hits = collections.defaultdict(collections.Counter)  # mark -> scenario -> runs that hit
    for path in sweeps:
        for line in open(path):
            run = json.loads(line)
            runs[run["scenario"]] += 1
            for mark, n in run.get("coverage", {}).items():
                if n > 0:
                    hits[mark][run["scenario"]] += 1

    def reached(mark):
        by = sorted(hits[mark].items(), key=lambda kv: (-kv[1] / runs[kv[0]], kv[0]))
        return ", ".join(f"{s} ({n}/{runs[s]})" for s, n in by) or "—"

    row = re.compile(r"^\| `([a-z_0-9]+)` \| (.*?) \| (.*?) \| (.*) \|$")
    out = []
    for line in open(doc).read().splitlines():
        m = row.match(line)
        if m:
            mark, what, _, required = m.groups()
            line = f"| `{mark}` | {what} | {reached(mark)} | {required} |"
        out.append(line)
    open(doc, "w").write("\n".join(out) + "\n")
    total = sum(runs.values())
    print(f"{doc}: reached-by column from {total} runs of {', '.join(sorted(runs))}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
