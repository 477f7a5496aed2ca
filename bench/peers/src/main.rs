//! slotlog beside its peers (SlateDB, delta-rs) in one process, each over a fresh
//! `ThrottledStore(InMemory)` with the same latency shape: closed loops of writers, each
//! write a 256-byte value to a new key, acknowledged only once durable in the store.
//! Prints one table and writes the same rows to `target/bench/peers.json`.
//!
//! `just bench peers` runs it; `cargo run --release -- --help` lists the flags.

#[cfg(feature = "delta")]
mod delta_target;
mod load;
mod slatedb_target;
mod slotlog_target;
mod store;

use clap::Parser;
use load::Measured;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use store::{CallCounts, Shape};
use tokio::time::{sleep_until, Instant};

#[derive(Parser, Debug)]
#[command(about = "slotlog against SlateDB and delta-rs over one throttled in-memory object store")]
struct Args {
    /// Latency shapes: put40 (puts 40 ms) and gcs (put 40, get 25, list 30 ms).
    #[arg(long, value_delimiter = ',', default_value = "put40,gcs")]
    configs: Vec<Shape>,
    /// Closed-loop writer counts.
    #[arg(long, value_delimiter = ',', default_value = "64,256")]
    writers: Vec<usize>,
    /// Systems to run; delta only when built with `--features delta`.
    #[arg(long, value_delimiter = ',', default_values_t = default_systems())]
    systems: Vec<SystemArg>,
    /// slotlog handles on one world in this process (writers spread round-robin).
    #[arg(long, value_delimiter = ',', default_value = "1,3")]
    handles: Vec<usize>,
    /// Commit hints between slotlog handles: the crate's in-process sharing (true), or
    /// none (false: the kernel's blind turns alone).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    hints: bool,
    /// slotlog handles on one world in this process commit through one replica (true, the
    /// crate's default), or each through a replica of its own (false: `share_replica`
    /// off, as handles in separate processes would).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    share_replica: bool,
    /// Override slotlog's kernel `batches_ahead_max` (default: the kernel's own).
    #[arg(long)]
    batches_ahead: Option<usize>,
    /// SlateDB WAL flush intervals in ms; `default` is SlateDB's own (100 ms in 0.18).
    #[arg(long, value_delimiter = ',', default_value = "default,10")]
    slatedb_flush_ms: Vec<String>,
    /// Seconds of load before measuring.
    #[arg(long, default_value_t = 2.0)]
    warmup_s: f64,
    /// Seconds measured.
    #[arg(long, default_value_t = 10.0)]
    duration_s: f64,
    /// Bytes per value.
    #[arg(long, default_value_t = 256)]
    value_bytes: usize,
    /// Tokio worker threads (default: one per core).
    #[arg(long)]
    worker_threads: Option<usize>,
    /// Where the rows go as JSON.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/bench/peers.json"))]
    json_out: PathBuf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum SystemArg {
    Slotlog,
    Slatedb,
    Delta,
}

impl std::fmt::Display for SystemArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SystemArg::Slotlog => "slotlog",
            SystemArg::Slatedb => "slatedb",
            SystemArg::Delta => "delta",
        })
    }
}

fn default_systems() -> Vec<SystemArg> {
    let mut systems = vec![SystemArg::Slotlog, SystemArg::Slatedb];
    if cfg!(feature = "delta") {
        systems.push(SystemArg::Delta);
    }
    systems
}

/// One row of the table and of `peers.json`.
#[derive(Clone, Debug, Serialize)]
struct Row {
    system: String,
    config: String,
    writers: usize,
    handles: usize,
    writes_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    /// Writes that failed inside the window, by label.
    errors: BTreeMap<String, u64>,
    /// This row's writes/s over each peer's at the same config and writers.
    ratio_to: BTreeMap<String, f64>,
    /// Store calls inside the window per acknowledged write (slotlog and SlateDB; delta-rs
    /// runs on its own object_store version, uncounted).
    #[serde(skip_serializing_if = "Option::is_none")]
    calls_per_write: Option<BTreeMap<String, f64>>,
    /// slotlog: slots created per second and members per slot inside the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    slots_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    members_per_slot: Option<f64>,
    /// slotlog with several handles: each handle's writes over a fair share, the least.
    #[serde(skip_serializing_if = "Option::is_none")]
    share_min: Option<f64>,
}

impl Row {
    fn new(system: String, shape: Shape, writers: usize, handles: usize, m: &Measured) -> Row {
        Row {
            system,
            config: shape.name().to_string(),
            writers,
            handles,
            writes_per_s: round(m.writes_per_s(), 1),
            p50_ms: round(m.quantile_ms(0.50), 1),
            p99_ms: round(m.quantile_ms(0.99), 1),
            errors: m.errors.clone(),
            ratio_to: BTreeMap::new(),
            calls_per_write: None,
            slots_per_s: None,
            members_per_slot: None,
            share_min: None,
        }
    }
}

fn round(x: f64, places: i32) -> f64 {
    let k = 10f64.powi(places);
    (x * k).round() / k
}

fn per_write(calls: CallCounts, writes: u64) -> BTreeMap<String, f64> {
    let w = writes.max(1) as f64;
    let mut out = BTreeMap::new();
    for (name, n) in [
        ("create", calls.create),
        ("update", calls.update),
        ("put", calls.put),
        ("get", calls.get),
        ("head", calls.head),
        ("list", calls.list),
        ("delete", calls.delete),
    ] {
        if n > 0 {
            out.insert(name.to_string(), round(n as f64 / w, 3));
        }
    }
    out
}

struct Plan {
    warmup: Duration,
    window: Duration,
    value_bytes: usize,
}

impl Plan {
    /// Runs the loop and, beside it, samples `probe` when the window opens and closes.
    async fn run<W, P, F, S>(&self, writers: Vec<W>, probe: P) -> (Measured, S, S)
    where
        W: load::Writer,
        P: Fn() -> F,
        F: std::future::Future<Output = S>,
    {
        let start = Instant::now();
        let (warmup, window) = (self.warmup, self.window);
        let sampler = async {
            sleep_until(start + warmup).await;
            let first = probe().await;
            sleep_until(start + warmup + window).await;
            let last = probe().await;
            (first, last)
        };
        let (measured, (first, last)) =
            tokio::join!(load::closed_loop(writers, start, warmup, window), sampler);
        (measured, first, last)
    }
}

async fn run_slotlog(
    plan: &Plan,
    shape: Shape,
    writers: usize,
    handles: usize,
    tune: &slotlog_target::Tune,
) -> Row {
    let (store, calls) = store::fresh(shape);
    let worlds = slotlog_target::open(store, handles, tune).await.expect("slotlog opens");
    let loop_writers: Vec<_> = (0..writers)
        .map(|w| slotlog_target::SlotlogWriter {
            world: worlds[w % handles].clone(),
            writer: w,
            value_bytes: plan.value_bytes,
        })
        .collect();
    let probe = || {
        let worlds = worlds.clone();
        let calls = calls.clone();
        async move {
            let mut slots = 0;
            let mut members = 0;
            for world in &worlds {
                let stats = world.stats().await.expect("stats of an open world");
                // A shared replica's counters are every handle's: count them once.
                let share = stats.handles.max(1);
                slots += stats.slots_won / share;
                members += stats.members_committed / share;
            }
            (calls.snapshot(), slots, members)
        }
    };
    let (m, (calls0, slots0, members0), (calls1, slots1, members1)) = plan.run(loop_writers, probe).await;
    for world in &worlds {
        world.close().await;
    }
    let mut system =
        if tune.hints || handles == 1 { "slotlog".to_string() } else { "slotlog (no hints)".to_string() };
    if handles > 1 && !tune.share_replica {
        system += " (a replica each)";
    }
    let mut row = Row::new(system, shape, writers, handles, &m);
    row.calls_per_write = Some(per_write(calls1.since(calls0), m.writes));
    let slots = slots1 - slots0;
    row.slots_per_s = Some(round(slots as f64 / plan.window.as_secs_f64(), 1));
    row.members_per_slot = Some(round((members1 - members0) as f64 / slots.max(1) as f64, 2));
    if handles > 1 {
        let mut per_handle = vec![0u64; handles];
        for (w, n) in m.per_writer.iter().enumerate() {
            per_handle[w % handles] += n;
        }
        let fair = m.writes as f64 / handles as f64;
        let least = *per_handle.iter().min().expect("at least one handle") as f64;
        row.share_min = Some(round(if fair > 0.0 { least / fair } else { 0.0 }, 2));
    }
    row
}

async fn run_slatedb(plan: &Plan, shape: Shape, writers: usize, flush: Duration, is_default: bool) -> Row {
    let (store, calls) = store::fresh(shape);
    let db = slatedb_target::open(store, flush).await.expect("SlateDB opens");
    let loop_writers: Vec<_> = (0..writers)
        .map(|w| slatedb_target::SlateWriter { db: db.clone(), writer: w, value_bytes: plan.value_bytes })
        .collect();
    let probe = || {
        let calls = calls.clone();
        async move { calls.snapshot() }
    };
    let (m, calls0, calls1) = plan.run(loop_writers, probe).await;
    if let Err(e) = db.close().await {
        eprintln!("slatedb close: {e}");
    }
    let system =
        format!("slatedb flush {}ms{}", flush.as_millis(), if is_default { " (default)" } else { "" });
    let mut row = Row::new(system, shape, writers, 1, &m);
    row.calls_per_write = Some(per_write(calls1.since(calls0), m.writes));
    row
}

#[cfg(feature = "delta")]
async fn run_delta(plan: &Plan, shape: Shape, writers: usize) -> Row {
    let tables = delta_target::open(shape, writers).await.expect("delta-rs creates its table");
    let loop_writers: Vec<_> = tables
        .into_iter()
        .enumerate()
        .map(|(w, table)| delta_target::DeltaWriterLoop { table, writer: w, value_bytes: plan.value_bytes })
        .collect();
    let (m, (), ()) = plan.run(loop_writers, || async {}).await;
    Row::new("delta-rs".to_string(), shape, writers, 1, &m)
}

#[cfg(not(feature = "delta"))]
async fn run_delta(_plan: &Plan, _shape: Shape, _writers: usize) -> Row {
    unreachable!("checked in main: delta needs the `delta` feature")
}

/// Fills each row's `ratio_to`: its writes/s over every peer's (every system but
/// slotlog) at the same config and writer count.
fn fill_ratios(rows: &mut [Row]) {
    let peers: Vec<Row> = rows.iter().filter(|r| !r.system.starts_with("slotlog")).cloned().collect();
    for row in rows.iter_mut() {
        row.ratio_to.clear();
        for peer in peers.iter().filter(|p| p.config == row.config && p.writers == row.writers) {
            if peer.system != row.system && peer.writes_per_s > 0.0 {
                row.ratio_to.insert(peer.system.clone(), round(row.writes_per_s / peer.writes_per_s, 2));
            }
        }
    }
}

fn print_table(rows: &[Row]) {
    let mut peers: Vec<String> = Vec::new();
    for row in rows.iter().filter(|r| !r.system.starts_with("slotlog")) {
        if !peers.contains(&row.system) {
            peers.push(row.system.clone());
        }
    }
    let mut header = format!(
        "{:<30} {:<6} {:>7} {:>7} {:>10} {:>8} {:>8} {:>7}",
        "system", "config", "writers", "handles", "writes/s", "p50 ms", "p99 ms", "errors"
    );
    for peer in &peers {
        header.push_str(&format!(" {:>w$}", format!("/ {peer}"), w = peer.len().max(6) + 2));
    }
    println!("{header}");
    for row in rows {
        let errors: u64 = row.errors.values().sum();
        let mut line = format!(
            "{:<30} {:<6} {:>7} {:>7} {:>10.1} {:>8.1} {:>8.1} {:>7}",
            row.system,
            row.config,
            row.writers,
            row.handles,
            row.writes_per_s,
            row.p50_ms,
            row.p99_ms,
            errors
        );
        for peer in &peers {
            let cell = row.ratio_to.get(peer).map(|r| format!("{r:.2}x")).unwrap_or_else(|| "-".into());
            line.push_str(&format!(" {:>w$}", cell, w = peer.len().max(6) + 2));
        }
        println!("{line}");
    }
    println!();
    println!("{:<30} {:<6} {:>7} {:>7}  store calls per acknowledged write (window); slotlog slots/s, members/slot, share_min; errors", "system", "config", "writers", "handles");
    for row in rows {
        let calls = row
            .calls_per_write
            .as_ref()
            .map(|c| c.iter().map(|(k, v)| format!("{k} {v:.3}")).collect::<Vec<_>>().join(", "))
            .unwrap_or_else(|| "not counted".into());
        let mut extra = String::new();
        if let (Some(s), Some(m)) = (row.slots_per_s, row.members_per_slot) {
            extra.push_str(&format!("; {s:.1} slots/s, {m:.2} members/slot"));
        }
        if let Some(share) = row.share_min {
            extra.push_str(&format!(", share_min {share:.2}"));
        }
        if !row.errors.is_empty() {
            extra.push_str(&format!("; errors {:?}", row.errors));
        }
        println!(
            "{:<30} {:<6} {:>7} {:>7}  {calls}{extra}",
            row.system, row.config, row.writers, row.handles
        );
    }
}

fn write_json(path: &PathBuf, rows: &[Row]) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("create the JSON's directory");
    }
    let text = serde_json::to_string_pretty(rows).expect("rows serialize");
    std::fs::write(path, text + "\n").expect("write the JSON");
}

fn main() {
    let args = Args::parse();
    if args.systems.contains(&SystemArg::Delta) && !cfg!(feature = "delta") {
        eprintln!(
            "delta-rs is behind a cargo feature: build with `--features delta` (see bench/peers/Cargo.toml)"
        );
        std::process::exit(2);
    }
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    runtime.enable_all();
    if let Some(n) = args.worker_threads {
        runtime.worker_threads(n);
    }
    let runtime = runtime.build().expect("a tokio runtime");
    runtime.block_on(run(args));
}

async fn run(args: Args) {
    let plan = Plan {
        warmup: Duration::from_secs_f64(args.warmup_s),
        window: Duration::from_secs_f64(args.duration_s),
        value_bytes: args.value_bytes,
    };
    let tune = slotlog_target::Tune {
        hints: args.hints,
        share_replica: args.share_replica,
        batches_ahead: args.batches_ahead,
    };
    let flushes: Vec<(Duration, bool)> = args
        .slatedb_flush_ms
        .iter()
        .map(|f| match f.as_str() {
            "default" => (slatedb_target::default_flush(), true),
            ms => (
                Duration::from_millis(ms.parse().expect("--slatedb-flush-ms: `default` or milliseconds")),
                false,
            ),
        })
        .collect();
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    eprintln!(
        "peers: {} s warm-up, {} s measured, {}-byte values, {} cores, tokio workers {}",
        args.warmup_s,
        args.duration_s,
        args.value_bytes,
        cores,
        args.worker_threads.map_or_else(|| "one per core".to_string(), |n| n.to_string())
    );
    let mut rows: Vec<Row> = Vec::new();
    for &shape in &args.configs {
        for &writers in &args.writers {
            let mut runs: Vec<Row> = Vec::new();
            for &system in &args.systems {
                match system {
                    SystemArg::Slotlog => {
                        for &handles in &args.handles {
                            eprintln!("run: slotlog, {}, {writers} writers, {handles} handles", shape.name());
                            let row = run_slotlog(&plan, shape, writers, handles, &tune).await;
                            runs.push(row);
                        }
                    }
                    SystemArg::Slatedb => {
                        for &(flush, is_default) in &flushes {
                            eprintln!("run: slatedb flush {flush:?}, {}, {writers} writers", shape.name());
                            let row = run_slatedb(&plan, shape, writers, flush, is_default).await;
                            runs.push(row);
                        }
                    }
                    SystemArg::Delta => {
                        eprintln!("run: delta-rs, {}, {writers} writers", shape.name());
                        let row = run_delta(&plan, shape, writers).await;
                        runs.push(row);
                    }
                }
                // Let a closed system's background tasks wind down before the next.
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            for row in runs {
                eprintln!(
                    "  {} {} {}w {}h: {:.1} writes/s p50 {:.1} ms p99 {:.1} ms",
                    row.system,
                    row.config,
                    row.writers,
                    row.handles,
                    row.writes_per_s,
                    row.p50_ms,
                    row.p99_ms
                );
                rows.push(row);
            }
            fill_ratios(&mut rows);
            write_json(&args.json_out, &rows);
        }
    }
    print_table(&rows);
    eprintln!("rows written to {}", args.json_out.display());
}
