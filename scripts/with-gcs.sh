#!/usr/bin/env bash
# Run a command with the simulated GCS served over HTTP (slotlog-gcs-http, built by
# `cargo build --release`) on a free loopback port: `scripts/with-gcs.sh CMD...`.
# Exports SLOTLOG_GCS_BASE_URL (object_store's base URL, and http:// turns plain HTTP on),
# SLOTLOG_GCS_BUCKET and GOOGLE_SERVICE_ACCOUNT (a key with OAuth off, so requests go
# unsigned), runs the command, stops the server (also on failure or interrupt) and exits
# with the command's status. GCS's one mutation per name per second is on.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${SLOTLOG_GCS_HTTP:-$here/../target/release/slotlog-gcs-http}"
if [[ $# -eq 0 ]]; then
    echo "usage: $0 COMMAND [ARGS...]" >&2
    exit 2
fi
if [[ ! -x "$bin" ]]; then
    echo "gcs-http: no $bin (cargo build --release -p slotlog-gcs-http)" >&2
    exit 1
fi

state="$here/../target/gcs-run.$$"
mkdir -p "$state"
bucket="slotlog-test"
# setsid: its own process group, so the trap ends the server and nothing else.
setsid "$bin" --bucket "$bucket" >"$state/out" 2>"$state/log" </dev/null &
pid=$!
trap 'kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; rm -rf "$state"' EXIT
for _ in $(seq 1 100); do
    grep -q '^listening on ' "$state/out" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || { cat "$state/log" >&2; exit 1; }
    sleep 0.05
done
base="$(sed -n 's/^listening on //p' "$state/out")"
[[ -n "$base" ]] || { echo "gcs-http: did not start" >&2; exit 1; }
cat >"$state/key.json" <<JSON
{"disable_oauth": true, "client_email": "", "private_key": "", "private_key_id": ""}
JSON
export SLOTLOG_GCS_BASE_URL="$base" SLOTLOG_GCS_BUCKET="$bucket" GOOGLE_SERVICE_ACCOUNT="$state/key.json"
echo "gcs-http: running, pid $pid, $base" >&2

status=0
"$@" || status=$?
exit "$status"
