#!/usr/bin/env bash
# Run a command with a test server up: `scripts/with-server.sh moto|azurite COMMAND...`.
# Starts it through scripts/NAME.sh with a state directory of its own (so concurrent runs
# never stop each other's server), exports the variables `NAME.sh start` prints, runs the
# command, stops the server (also on failure or interrupt) and exits with the command's
# status. scripts/with-moto.sh and scripts/with-azurite.sh say what each exports.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ $# -lt 2 ]]; then
    echo "usage: $0 moto|azurite COMMAND [ARGS...]" >&2
    exit 2
fi
name="$1"
shift
state_var="SLOTLOG_${name^^}_STATE"
export "$state_var=$here/../target/$name-run.$$"
trap '"$here/$name.sh" stop; rm -rf "${!state_var}"' EXIT
env_lines="$("$here/$name.sh" start)"
while IFS='=' read -r key value; do
    [[ -n "$key" ]] && export "$key=$value"
done <<<"$env_lines"

status=0
"$@" || status=$?
exit "$status"
