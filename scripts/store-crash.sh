#!/usr/bin/env bash
# The multi-process crash test on a real store server: three `slotlog writer` processes
# write one world in STORE_URL for DURATION_S seconds, passing each other commit hints;
# every few seconds one is killed with SIGKILL and restarted. Then `slotlog verify` reads
# the world back and checks every write any writer was told is committed.
# Prints kills=N and verify's line (…lost=N); exits non-zero if anything was lost or
# broken, or if fewer than KILLS_MIN processes were killed.
#   scripts/store-crash.sh SLOTLOG STORE_URL
# Run under the wrapper that starts the server (s3-crash.sh, azure-crash.sh, gcs-crash.sh).
set -euo pipefail

slotlog=${1:?usage: $0 SLOTLOG STORE_URL}
store=${2:?usage: $0 SLOTLOG STORE_URL}
duration_s=${DURATION_S:-60}
kills_min=${KILLS_MIN:-10}
prefix="crash/$(date +%s)-$$"
work=$(mktemp -d)
ports=(${CRASH_PORTS:-47310 47311 47312})
pids=()

start_writer() {
    local i=$1 peers=()
    for j in 0 1 2; do [[ $j != "$i" ]] && peers+=("${ports[$j]}"); done
    # Each incarnation writes until the test's end, appending to the same log.
    local left=$(( end - SECONDS ))
    (( left > 0 )) || return 0
    "$slotlog" writer --store "$store" --prefix "$prefix" --log "$work/w$i.log" \
        --duration-s "$left" --writers 8 --paths 200 \
        --listen "${ports[$i]}" --peers "$(IFS=,; echo "${peers[*]}")" 2>>"$work/w$i.err" &
    pids[$i]=$!
}

end=$(( SECONDS + duration_s ))
for i in 0 1 2; do start_writer "$i"; done
kills=0
while (( SECONDS + 5 < end )); do
    sleep $(( 2 + RANDOM % 3 ))
    i=$(( RANDOM % 3 ))
    if kill -KILL "${pids[$i]}" 2>/dev/null; then
        wait "${pids[$i]}" 2>/dev/null || true
        kills=$(( kills + 1 ))
        sleep 0.$(( RANDOM % 9 + 1 ))
        start_writer "$i"
    fi
done
for i in 0 1 2; do wait "${pids[$i]}" 2>/dev/null || true; done

echo "kills=$kills"
status=0
"$slotlog" verify --store "$store" --prefix "$prefix" --logs "$work"/w0.log "$work"/w1.log "$work"/w2.log || status=$?
"$slotlog" inspect --store "$store" --prefix "$prefix" || true
if (( kills < kills_min )); then
    echo "only $kills kills, fewer than $kills_min" >&2
    status=1
fi
grep -h "write failed" "$work"/w*.err | sort | uniq -c | head -5 >&2 || true
exit "$status"
