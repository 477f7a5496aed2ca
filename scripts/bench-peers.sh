#!/usr/bin/env bash
# slotlog beside SlateDB and delta-rs (issue 11, "Peers, side by side"): bench/peers, a
# Cargo workspace of its own that CI never builds. Each system runs in one process over a
# fresh object_store ThrottledStore(InMemory): puts 40 ms, then GCS-shaped (put 40, get 25,
# list 30 ms); closed loops of 64 and 256 writers, 256-byte values to new keys, durable
# acknowledgement. Prints the table and writes the rows to target/bench/peers.json.
#
# Extra arguments go to the bench (`just bench peers --duration-s 30 --writers 64`;
# `--help` lists them). PEERS_DELTA=0 leaves delta-rs out (its build is the long one:
# arrow and parquet). Built in target/peers unless CARGO_TARGET_DIR says otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
slotlog=${1:-target/release/slotlog} # the slotlog binary the bench recipe passes, for plot-bench
shift || true
features=(--features delta)
if [ "${PEERS_DELTA:-1}" = 0 ]; then features=(); fi
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target/peers}
cargo build --release --manifest-path bench/peers/Cargo.toml "${features[@]}"
"$CARGO_TARGET_DIR/release/slotlog-bench-peers" --json-out target/bench/peers.json "$@"
if [ -x "$slotlog" ]; then
  "$slotlog" plot-bench target/bench/peers.json --label system,config,writers,handles \
    --value writes_per_s,p99_ms --out target/bench/peers.svg
else
  echo "no $slotlog to draw target/bench/peers.svg with (just build makes it)" >&2
fi
