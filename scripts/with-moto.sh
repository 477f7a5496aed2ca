#!/usr/bin/env bash
# Run a command with moto's S3 server up: `scripts/with-moto.sh cargo test -p slotlog-tests`.
# Exports SLOTLOG_S3_ENDPOINT, SLOTLOG_S3_BUCKET, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
# AWS_REGION and SLOTLOG_MOTO_PYTHON, runs the command, stops the server (also on failure
# or interrupt) and exits with the command's status.
exec "$(dirname "${BASH_SOURCE[0]}")/with-server.sh" moto "$@"
