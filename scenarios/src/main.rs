//! `slotlog`: run, sweep and list the seeded simulation scenarios.

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use slotlog_scenarios::scenario::{Overrides, Scenario, SCENARIOS};
use slotlog_scenarios::tools::bench_cold_start as cold_start;
use slotlog_scenarios::{run_scenario, sweep::sweep};
use slotlog_sim::gcs::ProfileKind;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "slotlog", about = "slotlog's seeded multi-replica simulation", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone, Debug, Default)]
struct RunFlags {
    /// Replicas (stores) writing the world.
    #[arg(long)]
    replicas: Option<usize>,
    /// Virtual seconds the clients send writes for.
    #[arg(long)]
    duration_s: Option<f64>,
    /// Store profile: gcs, gcs-shaped or fast.
    #[arg(long)]
    profile: Option<ProfileKind>,
    /// Members per batch (fixes the batch size: no growth while deep).
    #[arg(long)]
    batch_max: Option<usize>,
    /// Batches built and staged ahead of the slot create in flight (0 to 3).
    #[arg(long)]
    ahead: Option<usize>,
    /// Open-loop arrival rate, writes per second in total.
    #[arg(long)]
    rate: Option<f64>,
    /// Closed-loop writers per replica.
    #[arg(long)]
    writers: Option<usize>,
    /// Turns between replicas: on (the default) or off, for comparison.
    #[arg(long, value_parser = parse_on_off)]
    turns: Option<bool>,
    /// Checkpoint every this many slots (the scenario's cadence otherwise).
    #[arg(long)]
    checkpoint_slots: Option<u64>,
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(format!("expected on or off, got {other:?}")),
    }
}

impl RunFlags {
    fn overrides(&self) -> Overrides {
        Overrides {
            replicas: self.replicas,
            duration_s: self.duration_s,
            profile: self.profile,
            batch_max: self.batch_max,
            ahead: self.ahead,
            rate: self.rate,
            writers: self.writers,
            turns: self.turns,
            checkpoint_slots: self.checkpoint_slots,
            defects: Default::default(),
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
        #[arg(long, default_value_t = 60.0)]
        duration_s: f64,
        #[arg(long, default_value_t = 8)]
        writers: usize,
        #[arg(long, default_value_t = 500)]
        paths: u32,
        /// UDP port on loopback to hear peers' commit hints on.
        #[arg(long)]
        listen: Option<u16>,
        /// Peers' hint ports, comma-separated.
        #[arg(long, value_delimiter = ',')]
        peers: Vec<u16>,
        /// Write a checkpoint every this many slots (default: the kernel's 8,192).
        #[arg(long)]
        checkpoint_slots: Option<u64>,
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
    /// Benchmarks of the production driver on local disk.
    Bench {
        #[command(subcommand)]
        bench: Bench,
    },
    /// List the scenarios.
    List,
    /// Run one scenario for one seed and report.
    Run {
        scenario: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print one JSON object instead of the readable report.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        flags: RunFlags,
    },
    /// Run a scenario, a comma-separated list of them, or `all`, over a range of seeds; exit 1
    /// on any failure.
    Sweep {
        scenario: String,
        /// Seeds as A..B, both included.
        #[arg(long, default_value = "1..200")]
        seeds: String,
        /// Threads; defaults to the machine's cores.
        #[arg(long)]
        jobs: Option<usize>,
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
        /// Print one JSON object instead of the readable report.
        #[arg(long)]
        json: bool,
    },
    /// The opening half of `cold-start`, run as its own process; prints JSON.
    #[command(hide = true)]
    ColdStartOpen {
        #[arg(long)]
        dir: std::path::PathBuf,
    },
}

/// `all`, one scenario, or a comma-separated list of them.
fn scenarios_named(names: &str) -> Option<Vec<&'static Scenario>> {
    if names == "all" {
        return Some(SCENARIOS.iter().collect());
    }
    names.split(',').map(|n| Scenario::find(n.trim())).collect()
}

fn parse_seeds(s: &str) -> Option<std::ops::RangeInclusive<u64>> {
    let (a, b) = s.split_once("..")?;
    let (a, b) = (a.trim().parse().ok()?, b.trim_start_matches('=').trim().parse().ok()?);
    (a <= b).then_some(a..=b)
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime").block_on(f)
}

fn tool_exit(result: Result<bool, String>) -> ExitCode {
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
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
        } => {
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
            };
            tool_exit(block_on(slotlog_scenarios::tools::writer::run(args)).map(|()| true))
        }
        Command::Verify { store, prefix, logs } => {
            tool_exit(block_on(slotlog_scenarios::tools::verify::run(&store, &prefix, &logs)))
        }
        Command::Inspect { store, prefix } => {
            tool_exit(block_on(slotlog_scenarios::tools::inspect::run(&store, &prefix)))
        }
        Command::Bench { bench: Bench::ColdStart { docs, slots_after, dir, keep, json } } => {
            let args = cold_start::Args { docs, slots_after, dir, keep };
            // The world's directory goes only after the report is out.
            let (report, _dir) = cold_start::run(&args);
            let report = report.map(|r| {
                if json {
                    println!("{}", serde_json::to_string_pretty(&r).expect("a report serializes"));
                } else {
                    print!("{}", r.text());
                }
                true
            });
            tool_exit(report)
        }
        Command::Bench { bench: Bench::ColdStartOpen { dir } } => {
            let report = block_on(cold_start::open(&dir))
                .map(|r| println!("{}", serde_json::to_string(&r).expect("a report serializes")));
            tool_exit(report.map(|()| true))
        }
        Command::List => {
            for s in SCENARIOS {
                println!("{:<10} {}", s.name, s.about);
            }
            ExitCode::SUCCESS
        }
        Command::Run { scenario, seed, json, flags } => {
            let Some(s) = Scenario::find(&scenario) else {
                eprintln!("unknown scenario {scenario:?}; `slotlog list` names them");
                return ExitCode::from(2);
            };
            let report = run_scenario(s, seed, &flags.overrides());
            if json {
                println!("{}", serde_json::to_string_pretty(&report).expect("a report serializes"));
            } else {
                print!("{}", report.text());
            }
            if report.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Command::Sweep { scenario, seeds, jobs, flags } => {
            let Some(list) = scenarios_named(&scenario) else {
                eprintln!("unknown scenario {scenario:?}; `slotlog list` names them, or use `all`");
                return ExitCode::from(2);
            };
            let Some(range) = parse_seeds(&seeds) else {
                eprintln!("--seeds takes A..B with A <= B, got {seeds:?}");
                return ExitCode::from(2);
            };
            let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            let total = list.len() as u64 * (range.end() - range.start() + 1);
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template("{bar:40} {pos}/{len} runs, {elapsed} ({msg})")
                    .expect("a valid template"),
            );
            let failed = std::sync::atomic::AtomicUsize::new(0);
            let overrides = flags.overrides();
            let result = sweep(&list, range, &overrides, jobs, &|r| {
                if !r.passed() {
                    failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    bar.println(format!(
                        "FAIL {} seed {}: {}",
                        r.scenario,
                        r.seed,
                        r.violations.first().map_or("", |v| v.as_str())
                    ));
                }
                bar.set_message(format!("{} failed", failed.load(std::sync::atomic::Ordering::Relaxed)));
                bar.inc(1);
            });
            bar.finish();
            println!("{} runs, {} failed", result.runs, result.failures.len());
            for f in &result.failures {
                println!("  replay: {}", f.report.repro);
            }
            if result.failures.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
