#!/usr/bin/env bash
# The multi-process crash test (scripts/store-crash.sh) on the simulated GCS served over
# HTTP (slotlog-gcs-http on loopback). Run under with-gcs.sh (`just gcs-crash` does).
set -euo pipefail
: "${SLOTLOG_GCS_BUCKET:?run under scripts/with-gcs.sh}"
export CRASH_PORTS="${CRASH_PORTS:-47330 47331 47332}"
exec "$(dirname "${BASH_SOURCE[0]}")/store-crash.sh" "${1:-target/release/slotlog}" "gs://$SLOTLOG_GCS_BUCKET"
