# Every routine command. `just --list` shows them.

# Simulation builds may need their own RUSTFLAGS later (madsim); they get their own
# target directory so they never rebuild the main one.
export CARGO_TERM_COLOR := "never"

slotlog := "target/release/slotlog"

# Build the simulator and the tests (release: simulations are CPU-bound).
build:
    cargo build --release --workspace --all-targets

# Run the default scenario and print its report.
sim SCENARIO="single" SEED="1": build
    {{slotlog}} run {{SCENARIO}} --seed {{SEED}}

# The full test suite: unit, property and cross-crate tests, then a sweep of 200 seeds
# over every scenario. This is what CI runs.
test: build
    if command -v cargo-nextest >/dev/null; then cargo nextest run --release --workspace --no-fail-fast; else cargo test --release --workspace; fi
    cargo test --release --workspace --doc
    {{slotlog}} sweep all --seeds 1..200

# Sweep seeds over one scenario or `all`.
sweep SCENARIO="all" SEEDS="1..200": build
    {{slotlog}} sweep {{SCENARIO}} --seeds {{SEEDS}}

# Replay one run exactly (the command a failing run prints).
repro SCENARIO SEED: build
    {{slotlog}} run {{SCENARIO}} --seed {{SEED}}

# Long soak: many more seeds than CI runs. Not part of `just test`.
soak SEEDS="1..5000": build
    {{slotlog}} sweep all --seeds {{SEEDS}}

# Benchmarks. `just bench throughput` reproduces the record's batch/ahead table.
bench WHAT="throughput": build
    scripts/bench-{{WHAT}}.sh {{slotlog}}

# Formatting and lints.
lint:
    cargo fmt --all --check
    cargo clippy --workspace --all-targets -- -D warnings
