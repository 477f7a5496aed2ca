#!/usr/bin/env bash
# Run a command with Azurite's blob service up: `scripts/with-azurite.sh cargo nextest run`.
# Exports SLOTLOG_AZURE_CONTAINER, AZURITE_BLOB_STORAGE_URL and AZURE_STORAGE_USE_EMULATOR,
# runs the command, stops the server (also on failure or interrupt) and exits with the
# command's status.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ $# -eq 0 ]]; then
    echo "usage: $0 COMMAND [ARGS...]" >&2
    exit 2
fi

# A server of our own, whatever else is running.
export SLOTLOG_AZURITE_STATE="$here/../target/azurite-run.$$"
trap '"$here/azurite.sh" stop; rm -rf "$SLOTLOG_AZURITE_STATE"' EXIT
env_lines="$("$here/azurite.sh" start)"
while IFS='=' read -r name value; do
    [[ -n "$name" ]] && export "$name=$value"
done <<<"$env_lines"

status=0
"$@" || status=$?
exit "$status"
