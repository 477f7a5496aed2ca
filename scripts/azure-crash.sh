#!/usr/bin/env bash
# The multi-process crash test (scripts/store-crash.sh) on Azure's emulator (Azurite on
# loopback). Run under with-azurite.sh (`just azure-crash` does).
set -euo pipefail
: "${SLOTLOG_AZURE_CONTAINER:?run under scripts/with-azurite.sh}"
export CRASH_PORTS="${CRASH_PORTS:-47320 47321 47322}"
exec "$(dirname "${BASH_SOURCE[0]}")/store-crash.sh" "${1:-target/release/slotlog}" "az://$SLOTLOG_AZURE_CONTAINER"
