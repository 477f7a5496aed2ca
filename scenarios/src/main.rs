//! `slotlog`: run, sweep and list the seeded simulation scenarios.

use clap::builder::{PossibleValue, PossibleValuesParser, RangedU64ValueParser};
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use slotlog_kernel::format::SLOT_MEMBERS_MAX;
use slotlog_kernel::{CompactionRole, Defects};
use slotlog_scenarios::scenario::{
    set_defect, Determinism, Overrides, Scenario, Without, DEFECT_NAMES, SCENARIOS,
};
use slotlog_scenarios::shrink::shrink;
use slotlog_scenarios::sweep::{fail_lines, junit, RunLine};
use slotlog_scenarios::tools::bench_checkpoint_step as checkpoint_step;
use slotlog_scenarios::tools::bench_cold_start as cold_start;
use slotlog_scenarios::trace::line as trace_line;
use slotlog_scenarios::{run_scenario, run_scenario_traced, sweep::sweep};
use slotlog_sim::gcs::{ProfileKind, VersionTokens};
use slotlog_sim::{DamagedObject, TraceEvent};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Parser)]
#[command(name = "slotlog", about = "slotlog's seeded multi-replica simulation", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log more on stderr: -v says what the store calls do (warnings are always on),
    /// -vv each call, -vvv everything. `RUST_LOG` (tracing's filter syntax) overrides it.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
}

/// Logs from the driver (its store calls and what it retries) to stderr, at the level `-v`
/// asks for or as `RUST_LOG` says.
fn install_logging(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// Exit codes, as docs/OPERATIONS.md lists them. 0 is success.
mod exit {
    /// A failure found: a checker violation, a failed run or sweep, a lost write, a broken
    /// chain or checkpoint.
    pub const FOUND: u8 = 1;
    /// A usage error: an unknown flag or a value out of range (clap's own code).
    pub const USAGE: u8 = 2;
    /// The store or the environment refused: a store URL that cannot be opened, missing
    /// or refused credentials, a missing bucket, directory or world, a store that does not
    /// answer, a writer whose writes all failed, a file that cannot be read or written.
    pub const STORE: u8 = 3;
}

/// The most replicas a simulated world takes.
const REPLICAS_MAX: u64 = 64;
/// The most closed-loop writers per replica (simulated) or per process (`writer`).
const WRITERS_MAX: u64 = 10_000;
/// The highest open-loop arrival rate, writes per second in total: past this the
/// simulation's queues only grow.
const RATE_PER_S_MAX: f64 = 100_000.0;
/// The longest simulated run, virtual seconds (a day).
const RUN_DURATION_S_MAX: f64 = 86_400.0;
/// The longest `writer` run, seconds (a year).
const WRITER_DURATION_S_MAX: f64 = 31_536_000.0;
/// The most seeds one sweep runs.
const SWEEP_SEEDS_MAX: u64 = 10_000_000;

/// A number of seconds or a rate: finite, above zero, at most `max`.
fn positive_at_most(max: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let v: f64 = s.trim().parse().map_err(|_| format!("{s:?} is not a number"))?;
        if !v.is_finite() || v <= 0.0 || v > max {
            return Err(format!("must be a finite number above 0 and at most {max}"));
        }
        Ok(v)
    }
}

/// The scenarios by name, each with its description, for `run`'s help and suggestions.
fn scenario_names() -> PossibleValuesParser {
    PossibleValuesParser::new(SCENARIOS.iter().map(|s| PossibleValue::new(s.name).help(s.about)))
}

/// `all`, one scenario, or a comma-separated list of them.
fn parse_scenarios(names: &str) -> Result<String, String> {
    match scenarios_named(names) {
        Some(_) => Ok(names.to_string()),
        None => {
            let known: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
            Err(format!("expected all, or scenarios from {}, comma-separated", known.join(", ")))
        }
    }
}

#[derive(clap::Args, Clone, Debug, Default)]
struct RunFlags {
    /// Replicas (stores) writing the world (1 to 64).
    #[arg(long, value_parser = RangedU64ValueParser::<usize>::new().range(1..=REPLICAS_MAX))]
    replicas: Option<usize>,
    /// Virtual seconds the clients send writes for (above 0, at most a day).
    #[arg(long, value_parser = positive_at_most(RUN_DURATION_S_MAX))]
    duration_s: Option<f64>,
    /// Store profile: gcs, gcs-shaped, fast or s3 (S3's store rules at gcs latencies).
    #[arg(long)]
    profile: Option<ProfileKind>,
    /// Version tokens: content (a hash of the bytes, as S3's ETag: an identical rewrite
    /// keeps it; the s3 profile's default) or generation (changes on every write; the
    /// default elsewhere).
    #[arg(long, value_parser = parse_etag)]
    etag: Option<VersionTokens>,
    /// The most members a batch takes (1 to a slot's most; the default is a slot's most, so
    /// batches grow with the queue; 16 or 32 reproduce the record's table).
    #[arg(long, value_parser = RangedU64ValueParser::<usize>::new().range(1..=SLOT_MEMBERS_MAX as u64))]
    batch_max: Option<usize>,
    /// Batches built and staged ahead of the slot create in flight (0 to 3).
    #[arg(long, value_parser = RangedU64ValueParser::<usize>::new().range(0..=3))]
    ahead: Option<usize>,
    /// Where new bodies go: inline (small ones ride in their slot, the default) or blob
    /// (every body a blob created before its slot, as the record did).
    #[arg(long, value_parser = parse_bodies)]
    bodies: Option<bool>,
    /// Open-loop arrival rate, writes per second in total (above 0, at most 100,000).
    #[arg(long, value_parser = positive_at_most(RATE_PER_S_MAX))]
    rate: Option<f64>,
    /// Closed-loop writers per replica (1 to 10,000).
    #[arg(long, value_parser = RangedU64ValueParser::<usize>::new().range(1..=WRITERS_MAX))]
    writers: Option<usize>,
    /// Turns between replicas: on (the default) or off, for comparison.
    #[arg(long, value_parser = parse_on_off)]
    turns: Option<bool>,
    /// Commit hints between replicas: on (the scenario's own, the default) or off (every
    /// hint lost: replicas learn of peers' slots only from lost creates and tip checks).
    #[arg(long, value_parser = parse_on_off)]
    hints: Option<bool>,
    /// Forged commit hints from a party on the network: on sends every replica 1,000 a
    /// second a little past the tip (docs/SECURITY.md); off (the default) sends none.
    #[arg(long, value_parser = parse_on_off)]
    hint_flood: Option<bool>,
    /// Checkpoint every this many slots (the scenario's cadence otherwise; at least 1).
    #[arg(long, value_parser = RangedU64ValueParser::<u64>::new().range(1..))]
    checkpoint_slots: Option<u64>,
    /// The most documents one checkpoint step folds (the scenario's otherwise; at least a
    /// slot's most members, 256).
    #[arg(long, value_parser = RangedU64ValueParser::<usize>::new().range(SLOT_MEMBERS_MAX as u64..))]
    step_docs: Option<usize>,
    /// Documents in the world before the run (the scenario's otherwise; `gate`'s is
    /// 1,000,000). Not with a scenario whose replicas make the world (`edges`).
    #[arg(long)]
    docs: Option<usize>,
    /// Compaction role of the stores that take writes: eager, backstop or off (followers
    /// stay eager).
    #[arg(long, value_parser = parse_role)]
    role: Option<CompactionRole>,
    /// Before each cold start, damage the newest full checkpoint's object (checkpoint) or
    /// its root (root) at rest, so the replica opens from an older one; put back once it
    /// has opened.
    #[arg(long, value_parser = parse_damaged_object)]
    damage_at_open: Option<DamagedObject>,
    /// Take the stores that take no writes down at this virtual second for the rest of
    /// the run, so the writers must take over their checkpoints (above 0, at most a day).
    #[arg(long, value_parser = positive_at_most(RUN_DURATION_S_MAX))]
    followers_down_at_s: Option<f64>,
    /// Go without these disturbances, comma-separated: crashes, store-faults (429s, 5xx,
    /// timeouts, late creates), stalls (pauses and clock-stopped stalls), skew, hint-loss.
    #[arg(long, value_delimiter = ',', value_parser = PossibleValuesParser::new(Without::NAMES))]
    without: Vec<String>,
    /// Switch on a deliberate kernel defect (for tests of the command line: a sweep that
    /// must fail). Repeatable.
    #[arg(long = "defect", hide = true, value_parser = parse_defect)]
    defects: Vec<String>,
}

fn parse_defect(s: &str) -> Result<String, String> {
    if DEFECT_NAMES.contains(&s) {
        Ok(s.to_string())
    } else {
        Err(format!("expected one of {DEFECT_NAMES:?}"))
    }
}

fn parse_role(s: &str) -> Result<CompactionRole, String> {
    match s {
        "eager" => Ok(CompactionRole::Eager),
        "backstop" => Ok(CompactionRole::Backstop),
        "off" => Ok(CompactionRole::Off),
        other => Err(format!("expected eager, backstop or off, got {other:?}")),
    }
}

fn parse_damaged_object(s: &str) -> Result<DamagedObject, String> {
    match s {
        "checkpoint" => Ok(DamagedObject::Checkpoint),
        "root" => Ok(DamagedObject::Root),
        other => Err(format!("expected checkpoint or root, got {other:?}")),
    }
}

fn parse_etag(s: &str) -> Result<VersionTokens, String> {
    s.parse().map_err(|e: slotlog_sim::gcs::UnknownVersionTokens| e.to_string())
}

/// `inline` or `blob`: whether small bodies ride in their slot.
fn parse_bodies(s: &str) -> Result<bool, String> {
    match s {
        "inline" => Ok(true),
        "blob" => Ok(false),
        _ => Err("expected inline or blob".into()),
    }
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(format!("expected on or off, got {other:?}")),
    }
}

impl RunFlags {
    /// Why these flags cannot apply to every scenario in `list`, if they cannot.
    fn refusal(&self, list: &[&Scenario]) -> Option<String> {
        list.iter().find_map(|s| {
            let c = s.config(1, &Overrides::default());
            if self.followers_down_at_s.is_some() && c.followers != 1 {
                return Some(format!(
                    "--followers-down-at-s needs a scenario with one store that takes no writes; {} has {}",
                    s.name, c.followers
                ));
            }
            if self.docs.is_some() && c.empty_bucket {
                return Some(format!("--docs needs a world to preload; {}'s replicas make theirs", s.name));
            }
            None
        })
    }

    fn overrides(&self) -> Overrides {
        Overrides {
            replicas: self.replicas,
            duration_s: self.duration_s,
            profile: self.profile,
            etag: self.etag,
            batch_max: self.batch_max,
            ahead: self.ahead,
            bodies_inline: self.bodies,
            rate: self.rate,
            writers: self.writers,
            turns: self.turns,
            hints: self.hints,
            hint_flood: self.hint_flood,
            checkpoint_slots: self.checkpoint_slots,
            step_docs: self.step_docs,
            docs: self.docs,
            role: self.role,
            damage_at_open: self.damage_at_open,
            followers_down_at_s: self.followers_down_at_s,
            without: {
                let mut w = Without::default();
                for name in &self.without {
                    assert!(w.set(name), "the parser admits only known kinds");
                }
                w
            },
            defects: {
                let mut d = Defects::default();
                for name in &self.defects {
                    assert!(set_defect(&mut d, name), "the parser admits only known defects");
                }
                d
            },
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Write a world in a real store, logging every acknowledged write (for `verify`).
    Writer {
        /// memory://, file:///dir, s3://bucket/prefix, gs://bucket/prefix (s3 endpoint
        /// and credentials from SLOTLOG_S3_ENDPOINT, AWS_ACCESS_KEY_ID, ...).
        #[arg(long)]
        store: String,
        #[arg(long, default_value = "worlds/w")]
        prefix: String,
        /// File the acknowledged writes are appended to.
        #[arg(long)]
        log: String,
        /// Seconds to write for (above 0, at most a year).
        #[arg(long, default_value_t = 60.0, value_parser = positive_at_most(WRITER_DURATION_S_MAX))]
        duration_s: f64,
        /// Concurrent writers (1 to 10,000).
        #[arg(long, default_value_t = 8, value_parser = RangedU64ValueParser::<usize>::new().range(1..=WRITERS_MAX))]
        writers: usize,
        /// Paths the writers pick among (at least 1).
        #[arg(long, default_value_t = 500, value_parser = RangedU64ValueParser::<u32>::new().range(1..=u64::from(u32::MAX)))]
        paths: u32,
        /// UDP port on loopback to hear peers' commit hints on.
        #[arg(long)]
        listen: Option<u16>,
        /// Peers' hint ports, comma-separated.
        #[arg(long, value_delimiter = ',')]
        peers: Vec<u16>,
        /// Write a checkpoint every this many slots (default: the kernel's 8,192).
        #[arg(long, value_parser = RangedU64ValueParser::<u64>::new().range(1..))]
        checkpoint_slots: Option<u64>,
        /// Print the world's health (state, snapshot age, background work, store
        /// failures) and telemetry counters on stdout at the end of the run.
        #[arg(long)]
        health: bool,
        /// With --health: print it as one JSON object.
        #[arg(long, requires = "health")]
        json: bool,
    },
    /// Read a world back and check every write the writers logged: prints lost=N.
    Verify {
        #[arg(long)]
        store: String,
        #[arg(long, default_value = "worlds/w")]
        prefix: String,
        /// The writers' logs.
        #[arg(long, num_args = 1..)]
        logs: Vec<String>,
    },
    /// What a world in a store holds: tip, slots, chain, checkpoints, objects and bytes.
    Inspect {
        #[arg(long)]
        store: String,
        #[arg(long, default_value = "worlds/w")]
        prefix: String,
    },
    /// Body search of a world in a store, from a read-only replica: documents whose body
    /// holds every word and quoted phrase of QUERY, in path order; the first line says
    /// whether bodies answered or only the catalog (paths) did within --wait-s. A query
    /// with no word is a usage error (exit 2).
    Search {
        #[arg(long)]
        store: String,
        #[arg(long, default_value = "worlds/w")]
        prefix: String,
        /// Words and "quoted phrases".
        query: String,
        /// Page on after this path.
        #[arg(long)]
        start_after: Option<String>,
        /// The most documents to print (1 to 1,000).
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000))]
        limit: u32,
        /// Seconds to keep asking while the index is built before settling for the catalog.
        #[arg(long, default_value_t = 30.0)]
        wait_s: f64,
    },
    /// Benchmarks of the production driver on local disk.
    Bench {
        #[command(subcommand)]
        bench: Bench,
    },
    /// List the scenarios.
    List,
    /// Hash a trace file written by `run --trace` as the simulation hashes its events:
    /// prints the trace hash the run reported.
    TraceHash { file: std::path::PathBuf },
    /// Draw a benchmark's JSON rows (a list of objects, as `just bench` writes them) as an
    /// SVG of horizontal bars: one chart a value column, a bar a row.
    PlotBench {
        /// The JSON file.
        input: std::path::PathBuf,
        /// Columns whose values, joined, label each bar.
        #[arg(long, value_delimiter = ',', required = true)]
        label: Vec<String>,
        /// Numeric columns, one chart each.
        #[arg(long, value_delimiter = ',', required = true)]
        value: Vec<String>,
        /// Where to write the SVG.
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Run one scenario for one seed and report.
    Run {
        #[arg(value_parser = scenario_names())]
        scenario: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print one JSON object instead of the readable report.
        #[arg(long)]
        json: bool,
        /// Run the seed twice and fail unless both runs hash the same trace.
        #[arg(long)]
        check_determinism: bool,
        /// Write the run's event trace to this file, one event a line with virtual time
        /// (the lines hash to the report's trace hash).
        #[arg(long, value_name = "FILE")]
        trace: Option<std::path::PathBuf>,
        /// Draw acknowledged writes a second and p50/p99 latency over virtual time into
        /// this SVG file.
        #[arg(long, value_name = "FILE")]
        plot: Option<std::path::PathBuf>,
        #[command(flatten)]
        flags: RunFlags,
    },
    /// From a failing run, search smaller ones (fewer replicas, a shorter run, half the
    /// rate or writers, a kind of disturbance fewer) that break the same checker rule, and
    /// print the smallest one's replay command. Exit 1 if the run given passes.
    Shrink {
        #[arg(value_parser = scenario_names())]
        scenario: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The most runs the search makes, the first included (2 to 10,000).
        #[arg(long, default_value_t = 60, value_parser = RangedU64ValueParser::<usize>::new().range(2..=10_000))]
        runs_max: usize,
        #[command(flatten)]
        flags: RunFlags,
    },
    /// Run a scenario, a comma-separated list of them, or `all`, over a range of seeds; exit 1
    /// on any failure.
    Sweep {
        #[arg(value_parser = parse_scenarios)]
        scenario: String,
        /// Seeds as A..B, both included (at most 10,000,000 of them).
        #[arg(long, default_value = "1..200", value_parser = parse_seeds)]
        seeds: std::ops::RangeInclusive<u64>,
        /// Threads (1 to 1,024); defaults to the machine's cores.
        #[arg(long, value_parser = RangedU64ValueParser::<usize>::new().range(1..=1_024))]
        jobs: Option<usize>,
        /// Print one JSON line per run to stdout as it ends (the readable lines go to stderr).
        #[arg(long)]
        json: bool,
        /// Write JUnit XML to this file at the end: a test suite per scenario, a test case per seed.
        #[arg(long, value_name = "FILE")]
        junit: Option<std::path::PathBuf>,
        /// Fail the sweep (exit 1) when a required coverage mark is never hit, naming each
        /// (kernel/src/marks.rs says what each marks; docs/GUARANTEES.md, who reaches it).
        #[arg(long)]
        require_coverage: bool,
        /// Add this sweep's coverage to what this file keeps (JSON: the scenarios swept
        /// and each mark's hits; made if absent) and judge coverage on the sum: how CI's
        /// several sweeps are judged as one.
        #[arg(long, value_name = "FILE")]
        coverage_file: Option<std::path::PathBuf>,
        #[command(flatten)]
        flags: RunFlags,
    },
}

#[derive(Subcommand)]
enum Bench {
    /// Build a world of N documents with a full checkpoint and M slots after it, then open
    /// it in a separate process: open time, peak RSS, checkpoint size and write time.
    ColdStart {
        #[arg(long)]
        docs: u64,
        #[arg(long, default_value_t = 1_024)]
        slots_after: u64,
        /// Build the world here (absent or empty); default: a temp dir, removed after.
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
        /// Keep the world's directory afterwards.
        #[arg(long)]
        keep: bool,
        /// Open twice through a local cache (`WorldConfig::local_cache`): empty, then warm.
        #[arg(long)]
        cache: bool,
        /// Print one JSON object instead of the readable report.
        #[arg(long)]
        json: bool,
    },
    /// Build a world of N documents with a full checkpoint, change M spread documents, and
    /// fold one step over it, as the compactor does (deltas) and as a merge: what each
    /// uploads and how long it takes, and a cold start from the step's checkpoint.
    CheckpointStep {
        #[arg(long)]
        docs: u64,
        #[arg(long, default_value_t = 30_000)]
        changed: u64,
        /// Build the world here (absent or empty); default: a temp dir, removed after.
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
        /// Keep the world's directory afterwards.
        #[arg(long)]
        keep: bool,
        /// Skip the cold starts before and after the step.
        #[arg(long)]
        no_open: bool,
        /// Print one JSON object instead of the readable report.
        #[arg(long)]
        json: bool,
    },
    /// Build a world of N documents of words with a full checkpoint, open it in another
    /// process and search it: how long until a search answers from bodies, what the
    /// index holds in memory, and query latency over a fixed set (issue 20).
    Search {
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
        docs: u64,
        /// Build the world here (absent or empty); default: a temp dir, removed after.
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
        /// Keep the world's directory afterwards.
        #[arg(long)]
        keep: bool,
        /// Write no body segments, so the index reads one blob per body.
        #[arg(long)]
        no_segments: bool,
        /// Print one JSON object instead of the readable report.
        #[arg(long)]
        json: bool,
    },
    /// The searching half of `search`, run as its own process; prints JSON.
    #[command(hide = true)]
    SearchOpen {
        #[arg(long)]
        dir: std::path::PathBuf,
        #[arg(long)]
        docs: u64,
    },
    /// Writes a kept `search` world's body segments again, in the current window (after a
    /// change to the segment format; the reader takes a label's newest window).
    #[command(hide = true)]
    SearchSegments {
        #[arg(long)]
        dir: std::path::PathBuf,
        #[arg(long)]
        docs: u64,
    },
    /// The opening half of `cold-start`, run as its own process; prints JSON.
    #[command(hide = true)]
    ColdStartOpen {
        #[arg(long)]
        dir: std::path::PathBuf,
        #[arg(long)]
        cache_dir: Option<std::path::PathBuf>,
    },
}

/// `all`, one scenario, or a comma-separated list of them.
fn scenarios_named(names: &str) -> Option<Vec<&'static Scenario>> {
    if names == "all" {
        return Some(SCENARIOS.iter().filter(|s| s.in_all).collect());
    }
    names.split(',').map(|n| Scenario::find(n.trim())).collect()
}

fn parse_seeds(s: &str) -> Result<std::ops::RangeInclusive<u64>, String> {
    let usage = || format!("expected A..B with A <= B, at most {SWEEP_SEEDS_MAX} seeds");
    let (a, b) = s.split_once("..").ok_or_else(usage)?;
    let a: u64 = a.trim().parse().map_err(|_| usage())?;
    let b: u64 = b.trim_start_matches('=').trim().parse().map_err(|_| usage())?;
    if a > b || b - a >= SWEEP_SEEDS_MAX {
        return Err(usage());
    }
    Ok(a..=b)
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime").block_on(f)
}

/// A tool's verdict: true passes (0), false is a failure found (1), an error is the store
/// or the environment refusing (3), said on stderr.
/// Prints a bench's report, as pretty JSON or as its text; true (a bench found nothing).
fn print_bench(report: &impl serde::Serialize, json: bool, text: String) -> bool {
    if json {
        println!("{}", serde_json::to_string_pretty(report).expect("a report serializes"));
    } else {
        print!("{text}");
    }
    true
}

fn tool_exit(result: Result<bool, String>) -> ExitCode {
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(exit::FOUND),
        Err(e) => {
            eprintln!("slotlog: {e}");
            ExitCode::from(exit::STORE)
        }
    }
}

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Rust ignores SIGPIPE, so a print to a closed pipe (`slotlog inspect | head`) panics.
/// Like every Unix filter, the tool should just end when its reader does.
fn end_quietly_when_the_reader_goes() {
    #[cfg(unix)]
    // SAFETY: called first thing in `main`, before any thread exists; SIG_DFL is a valid
    // disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Two costs of fresh memory, measured with perf on `run` (2 cores, seed 1):
/// - mimalloc returns freed memory to the OS 10 ms after it is freed; the simulation frees
///   and allocates again faster than that, so the memory came straight back zeroed: 65%
///   of a `saturate` run went to zeroing pages. Keeping freed memory made it 1.6 times
///   faster, for a few percent more resident memory.
/// - A run keeps what it writes (the store's objects, every write and answer), so it
///   touches about 100 MiB of fresh memory: in 4 KiB pages, `single` took 23,700 page
///   faults, 14% of its time. mimalloc's large OS pages (2 MiB, through transparent huge
///   pages, whether the machine gives them `always` or on `madvise`) take it in about 400
///   faults, for about 150 MiB resident instead of 107. (mimalloc 2 used its regions
///   sparsely, and huge pages zeroed 856 MiB for 150 resident: this tool turned them
///   off. mimalloc 3 packs them.)
///   Only this tool's process: the `slotlog` library leaves memory to its embedder.
fn tune_memory() {
    /// `mi_option_purge_delay` in mimalloc's option enum (libmimalloc-sys names no
    /// constant for it).
    const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    // SAFETY: mi_option_set stores one option value; -1 is purge_delay's documented "never".
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    // SAFETY: as above; 1 allows large OS pages, which mimalloc falls back from where the
    // OS gives none.
    unsafe { libmimalloc_sys::mi_option_set(libmimalloc_sys::mi_option_large_os_pages, 1) };
}

fn main() -> ExitCode {
    end_quietly_when_the_reader_goes();
    tune_memory();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // `--help` and `--version` come this way too, on stdout.
            return if e.use_stderr() { ExitCode::from(exit::USAGE) } else { ExitCode::SUCCESS };
        }
    };
    install_logging(cli.verbose);
    match cli.command {
        Command::Writer {
            store,
            prefix,
            log,
            duration_s,
            writers,
            paths,
            listen,
            peers,
            checkpoint_slots,
            health,
            json,
        } => {
            use slotlog_scenarios::tools::writer::HealthFormat;
            let args = slotlog_scenarios::tools::writer::WriterArgs {
                url: store,
                prefix,
                log,
                duration_s,
                writers,
                paths,
                listen,
                peers,
                checkpoint_slots,
                health: health.then_some(if json { HealthFormat::Json } else { HealthFormat::Text }),
            };
            tool_exit(block_on(slotlog_scenarios::tools::writer::run(args)))
        }
        Command::Verify { store, prefix, logs } => {
            tool_exit(block_on(slotlog_scenarios::tools::verify::run(&store, &prefix, &logs)))
        }
        Command::Inspect { store, prefix } => {
            tool_exit(block_on(slotlog_scenarios::tools::inspect::run(&store, &prefix)))
        }
        Command::Search { store, prefix, query, start_after, limit, wait_s } => {
            if let Err(problem) = slotlog_kernel::search::query::Query::parse(&query) {
                eprintln!("slotlog: {problem}");
                return ExitCode::from(exit::USAGE);
            }
            let args = slotlog_scenarios::tools::search::Args {
                url: store,
                prefix,
                query,
                start_after,
                limit,
                wait_s,
            };
            tool_exit(block_on(slotlog_scenarios::tools::search::run(args)))
        }
        Command::Bench { bench: Bench::ColdStart { docs, slots_after, dir, keep, cache, json } } => {
            let args = cold_start::Args { docs, slots_after, dir, keep, cache };
            // The world's directory goes only after the report is out.
            let (report, _dir) = cold_start::run(&args);
            tool_exit(report.map(|r| print_bench(&r, json, r.text())))
        }
        Command::Bench { bench: Bench::CheckpointStep { docs, changed, dir, keep, no_open, json } } => {
            let args = checkpoint_step::Args { docs, changed, dir, keep, no_open };
            // The world's directory goes only after the report is out.
            let (report, _dir) = checkpoint_step::run(&args);
            tool_exit(report.map(|r| print_bench(&r, json, r.text())))
        }
        Command::Bench { bench: Bench::Search { docs, dir, keep, no_segments, json } } => {
            let args = slotlog_scenarios::tools::bench_search::Args { docs, dir, keep, no_segments };
            let (report, _dir) = slotlog_scenarios::tools::bench_search::run(&args);
            tool_exit(report.map(|r| print_bench(&r, json, r.text())))
        }
        Command::Bench { bench: Bench::SearchOpen { dir, docs } } => {
            let report = block_on(slotlog_scenarios::tools::bench_search::search_open(&dir, docs))
                .map(|r| println!("{}", serde_json::to_string(&r).expect("a report serializes")));
            tool_exit(report.map(|()| true))
        }
        Command::Bench { bench: Bench::SearchSegments { dir, docs } } => {
            let written = block_on(slotlog_scenarios::tools::bench_search::rewrite_segments(&dir, docs))
                .map(|n| println!("{n} segment parts written"));
            tool_exit(written.map(|()| true))
        }
        Command::Bench { bench: Bench::ColdStartOpen { dir, cache_dir } } => {
            let report = block_on(cold_start::open(&dir, cache_dir.as_deref()))
                .map(|r| println!("{}", serde_json::to_string(&r).expect("a report serializes")));
            tool_exit(report.map(|()| true))
        }
        Command::PlotBench { input, label, value, out } => {
            match slotlog_scenarios::plot_bench::write_svg(&input, &label, &value, &out) {
                Ok(bars) => {
                    eprintln!("{bars} bars drawn to {}", out.display());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("{e}");
                    ExitCode::from(exit::STORE)
                }
            }
        }
        Command::TraceHash { file } => {
            let text = match std::fs::read_to_string(&file) {
                Ok(text) => text,
                Err(e) => {
                    eprintln!("cannot read {}: {e}", file.display());
                    return ExitCode::from(exit::STORE);
                }
            };
            match slotlog_scenarios::trace::hash_lines(&text) {
                Ok(hash) => {
                    println!("{hash}");
                    ExitCode::SUCCESS
                }
                Err(bad) => {
                    eprintln!("{}: line {} is no trace line: {}", file.display(), bad.line, bad.why);
                    ExitCode::from(exit::FOUND)
                }
            }
        }
        Command::List => {
            for s in SCENARIOS {
                println!("{:<10} {}", s.name, s.about);
            }
            ExitCode::SUCCESS
        }
        Command::Shrink { scenario, seed, runs_max, flags } => {
            let s = Scenario::find(&scenario).expect("clap admits only known scenarios");
            if let Some(refusal) = flags.refusal(&[s]) {
                eprintln!("{refusal}");
                return ExitCode::from(exit::USAGE);
            }
            slotlog_scenarios::scenario::QUIET_RUN_PANICS.store(true, Ordering::Relaxed);
            let mut run = |o: &Overrides| run_scenario(s, seed, o);
            let mut tried = |change: &str, alike: bool| {
                eprintln!("  {change}: {}", if alike { "still fails alike, kept" } else { "no" });
            };
            match shrink(s, seed, &flags.overrides(), runs_max, &mut run, &mut tried) {
                Ok(found) => {
                    println!(
                        "rule {} broken; {} runs, {} changes kept",
                        found.rule,
                        found.runs,
                        found.kept.len()
                    );
                    for change in &found.kept {
                        println!("  {change}");
                    }
                    println!("smallest: {}", found.repro);
                    ExitCode::SUCCESS
                }
                Err(passes) => {
                    eprintln!("{passes}");
                    ExitCode::from(exit::FOUND)
                }
            }
        }
        Command::Run { scenario, seed, json, check_determinism, trace, plot, flags } => {
            let s = Scenario::find(&scenario).expect("clap admits only known scenarios");
            if let Some(refusal) = flags.refusal(&[s]) {
                eprintln!("{refusal}");
                return ExitCode::from(exit::USAGE);
            }
            let overrides = flags.overrides();
            let (report, determinism) = if let Some(path) = &trace {
                let file = match std::fs::File::create(path) {
                    Ok(file) => file,
                    Err(e) => {
                        eprintln!("cannot write the trace to {}: {e}", path.display());
                        return ExitCode::from(exit::STORE);
                    }
                };
                let mut out = std::io::BufWriter::new(file);
                let mut written = Ok(());
                let mut sink = |e: &TraceEvent<'_>| {
                    if written.is_ok() {
                        written = writeln!(out, "{}", trace_line(e));
                    }
                };
                let report = run_scenario_traced(s, seed, &overrides, Some(&mut sink));
                if let Err(e) = written.and_then(|()| out.flush()) {
                    eprintln!("cannot write the trace to {}: {e}", path.display());
                    return ExitCode::from(exit::STORE);
                }
                // A determinism check alongside a trace compares the traced run with a second.
                let determinism = check_determinism.then(|| Determinism {
                    second: run_scenario(s, seed, &overrides),
                    first: report.clone(),
                });
                (report, determinism)
            } else if check_determinism {
                let d = Determinism::check(s, seed, &overrides);
                (d.first.clone(), Some(d))
            } else {
                (run_scenario(s, seed, &overrides), None)
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&report).expect("a report serializes"));
            } else {
                print!("{}", report.text());
            }
            if let Some(path) = &plot {
                if let Err(e) = slotlog_scenarios::plot::write_svg(&report, path) {
                    eprintln!("{e}");
                    return ExitCode::from(exit::STORE);
                }
            }
            let mut ok = report.passed();
            if let Some(d) = determinism {
                // On stderr with --json, so stdout stays one JSON object.
                if json {
                    eprintln!("{}", d.text());
                } else {
                    println!("{}", d.text());
                }
                ok &= d.same();
            }
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(exit::FOUND)
            }
        }
        Command::Sweep {
            scenario,
            seeds: range,
            jobs,
            json,
            junit: junit_path,
            require_coverage,
            coverage_file,
            flags,
        } => {
            let list = scenarios_named(&scenario).expect("clap admits only known scenarios");
            if let Some(refusal) = flags.refusal(&list) {
                eprintln!("{refusal}");
                return ExitCode::from(exit::USAGE);
            }
            let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            let total = list.len() as u64 * (range.end() - range.start() + 1);
            // The bar only where someone watches: on a terminal. Elsewhere (CI logs, a pipe)
            // it would be hidden, and a hidden bar's `println` prints nothing, so every line
            // below is written directly, with the bar suspended while it is.
            let bar = if std::io::stderr().is_terminal() {
                let bar = ProgressBar::new(total);
                bar.set_style(
                    ProgressStyle::with_template(
                        "{bar:40} {pos}/{len} runs, {per_sec}, {elapsed}, ETA {eta} ({msg})",
                    )
                    .expect("a valid template"),
                );
                bar
            } else {
                ProgressBar::hidden()
            };
            // With --json, stdout carries the JSON lines only and the readable lines go to stderr.
            let say = |text: &str| {
                bar.suspend(|| {
                    if json {
                        let mut err = std::io::stderr().lock();
                        let _ = writeln!(err, "{text}");
                    } else {
                        let mut out = std::io::stdout().lock();
                        let _ = writeln!(out, "{text}");
                        let _ = out.flush();
                    }
                })
            };
            say(&format!(
                "sweep: {} over seeds {}..={} ({} runs on {} threads)",
                list.iter().map(|s| s.name).collect::<Vec<_>>().join(","),
                range.start(),
                range.end(),
                total,
                jobs
            ));
            let failed = AtomicUsize::new(0);
            let overrides = flags.overrides();
            let started = std::time::Instant::now();
            slotlog_scenarios::scenario::QUIET_RUN_PANICS.store(true, Ordering::Relaxed);
            let result = sweep(&list, range, &overrides, jobs, &|r| {
                if json {
                    let line = RunLine::from(r).json();
                    bar.suspend(|| {
                        let mut out = std::io::stdout().lock();
                        let _ = writeln!(out, "{line}");
                        let _ = out.flush();
                    });
                }
                if !r.passed() {
                    failed.fetch_add(1, Ordering::Relaxed);
                    say(&fail_lines(r).join("\n"));
                }
                bar.set_message(format!("{} failed", failed.load(Ordering::Relaxed)));
                bar.inc(1);
            });
            bar.finish_and_clear();
            let mut summary = String::new();
            for s in result.summaries() {
                summary += &format!("  {}\n", s.text());
            }
            summary += &format!(
                "{} runs, {} failed, in {:.1} s",
                result.runs(),
                result.failures.len(),
                started.elapsed().as_secs_f64()
            );
            for f in &result.failures {
                summary += &format!("\n  replay: {}", f.report.repro);
            }
            let mut swept: std::collections::BTreeSet<String> =
                result.summaries().into_iter().map(|s| s.scenario).collect();
            let mut required = slotlog_scenarios::coverage::required(&swept);
            let mut verdict = result.coverage_verdict(&required);
            if let Some(path) = &coverage_file {
                let before: slotlog_scenarios::coverage::CoverageFile = match std::fs::read_to_string(path) {
                    Ok(text) => match serde_json::from_str(&text) {
                        Ok(file) => file,
                        Err(e) => {
                            eprintln!("{} holds no coverage counts: {e}", path.display());
                            return ExitCode::from(exit::STORE);
                        }
                    },
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Default::default(),
                    Err(e) => {
                        eprintln!("cannot read {}: {e}", path.display());
                        return ExitCode::from(exit::STORE);
                    }
                };
                slotlog_scenarios::coverage::add(&mut verdict.coverage, &before.coverage);
                swept.extend(before.swept);
                required = slotlog_scenarios::coverage::required(&swept);
                verdict.coverage_missed = slotlog_scenarios::coverage::missed(&required, &verdict.coverage)
                    .into_iter()
                    .map(str::to_string)
                    .collect();
                let file = slotlog_scenarios::coverage::CoverageFile {
                    swept,
                    coverage: verdict.coverage.clone(),
                    coverage_missed: verdict.coverage_missed.clone(),
                };
                let text = serde_json::to_string_pretty(&file).expect("counts serialize");
                if let Err(e) = std::fs::write(path, text + "\n") {
                    eprintln!("cannot write {}: {e}", path.display());
                    return ExitCode::from(exit::STORE);
                }
            }
            summary += &format!(
                "\ncoverage: {} of {} required marks hit",
                required.len() - verdict.coverage_missed.len(),
                required.len()
            );
            if !verdict.coverage_missed.is_empty() {
                summary += &format!("; missed: {}", verdict.coverage_missed.join(", "));
            }
            say(&summary);
            if let Some(path) = junit_path {
                let xml = junit(&result.lines).to_string().expect("the JUnit report serializes");
                if let Err(e) = std::fs::write(&path, xml) {
                    eprintln!("cannot write the JUnit report to {}: {e}", path.display());
                    return ExitCode::from(exit::STORE);
                }
            }
            let coverage_failed = require_coverage && !verdict.coverage_missed.is_empty();
            if coverage_failed {
                eprintln!("FAIL coverage: required marks never hit: {}", verdict.coverage_missed.join(", "));
            }
            if result.failures.is_empty() && !coverage_failed {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(exit::FOUND)
            }
        }
    }
}
