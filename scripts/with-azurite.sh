#!/usr/bin/env bash
# Run a command with Azurite's blob service up: `scripts/with-azurite.sh cargo nextest run`.
# Exports SLOTLOG_AZURE_CONTAINER, AZURITE_BLOB_STORAGE_URL and AZURE_STORAGE_USE_EMULATOR,
# runs the command, stops the server (also on failure or interrupt) and exits with the
# command's status.
exec "$(dirname "${BASH_SOURCE[0]}")/with-server.sh" azurite "$@"
