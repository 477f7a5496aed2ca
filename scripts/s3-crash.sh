#!/usr/bin/env bash
# The multi-process crash test (scripts/store-crash.sh) on a real S3 server (moto on
# loopback). Run under with-moto.sh (`just s3-crash` does).
set -euo pipefail
: "${SLOTLOG_S3_ENDPOINT:?run under scripts/with-moto.sh}"
: "${SLOTLOG_S3_BUCKET:?run under scripts/with-moto.sh}"
exec "$(dirname "${BASH_SOURCE[0]}")/store-crash.sh" "${1:-target/release/slotlog}" "s3://$SLOTLOG_S3_BUCKET"
