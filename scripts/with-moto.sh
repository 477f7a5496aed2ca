#!/usr/bin/env bash
# Run a command with moto's S3 server up: `scripts/with-moto.sh cargo test -p slotlog-tests`.
# Exports SLOTLOG_S3_ENDPOINT, SLOTLOG_S3_BUCKET, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
# AWS_REGION and SLOTLOG_MOTO_PYTHON, runs the command, stops the server (also on failure or interrupt) and
# exits with the command's status.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ $# -eq 0 ]]; then
    echo "usage: $0 COMMAND [ARGS...]" >&2
    exit 2
fi

# A server of our own, whatever else is running.
export SLOTLOG_MOTO_STATE="$here/../target/moto-run.$$"
trap '"$here/moto.sh" stop; rm -rf "$SLOTLOG_MOTO_STATE"' EXIT
env_lines="$("$here/moto.sh" start)"
while IFS='=' read -r name value; do
    [[ -n "$name" ]] && export "$name=$value"
done <<<"$env_lines"

status=0
"$@" || status=$?
exit "$status"
