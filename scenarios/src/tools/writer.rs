//! `slotlog writer`: one process writing a world in a real store, logging every write it
//! was told is committed, so `verify` can check none was lost. Several writers on one
//! world pass commit hints to each other over UDP on loopback (the crate's
//! `Peers::Udp`).
//!
//! It never reports success over a failure: a log line it cannot append (disk full) stops
//! every writer and fails the run, since an acknowledged write missing from the log would
//! hide a loss from `verify`; a store that stops the world (credentials, a missing bucket,
//! a failed-closed replica) fails it with the store's words; and a run in which no write
//! was acknowledged fails with the last failure.

use bytes::Bytes;
use indicatif::{ProgressBar, ProgressStyle};
use slotlog::object_store_blobs::ObjectStoreBlobs;
use slotlog::{new_op_id, Error, Health, HintKey, PeerHints, Peers, TelemetryStats, World, WorldConfig};
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::world::{Expected, Mutation, Write};
use slotlog_kernel::{WriteError, WriteOk};
use std::io::IsTerminal as _;
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Failed writes said one by one on stderr; the rest are only counted (a flood of
/// `Busy` from thousands of writers says nothing more).
const FAILURES_SAID_MAX: u64 = 10;

pub struct WriterArgs {
    pub url: String,
    pub prefix: String,
    pub log: String,
    pub duration_s: f64,
    pub writers: usize,
    /// Paths the writers pick among (fewer: more contention on documents).
    pub paths: u32,
    /// UDP port to hear peers' hints on, and the peers' ports.
    pub listen: Option<u16>,
    pub peers: Vec<u16>,
    /// Checkpoint after this many slots (the kernel's default when None).
    pub checkpoint_slots: Option<u64>,
    /// Print the world's health and telemetry counters on stdout at the end of the run,
    /// before it closes (docs/OPERATIONS.md, "Health").
    pub health: Option<HealthFormat>,
}

/// How `--health` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HealthFormat {
    /// One `key=value` line a field.
    Text,
    /// One JSON object (`--json`).
    Json,
}

/// The variable a hint key is read from: 64 hex digits (32 bytes), the same for every
/// writer of the world (docs/SECURITY.md). Never on the command line, where `ps` shows it.
pub const HINT_KEY_VAR: &str = "SLOTLOG_HINT_KEY";

/// The hint key from [`HINT_KEY_VAR`], if set. A malformed one is refused without
/// echoing it.
fn hint_key() -> Result<Option<HintKey>, String> {
    let Some(hex) = std::env::var(HINT_KEY_VAR).ok().filter(|v| !v.is_empty()) else { return Ok(None) };
    let refuse = || format!("{HINT_KEY_VAR} is not 64 hex digits (32 bytes)");
    let hex = hex.trim().as_bytes();
    if hex.len() != 64 {
        return Err(refuse());
    }
    let mut key = [0u8; 32];
    for (byte, pair) in key.iter_mut().zip(hex.chunks(2)) {
        let pair = std::str::from_utf8(pair).map_err(|_| refuse())?;
        *byte = u8::from_str_radix(pair, 16).map_err(|_| refuse())?;
    }
    Ok(Some(HintKey::new(key)))
}

/// What the writers saw, shared between them.
#[derive(Default)]
struct Tally {
    acked: AtomicU64,
    uncertain: AtomicU64,
    failed: AtomicU64,
    /// Set when the run must end at once; `fatal` says why.
    stop: AtomicBool,
    fatal: Mutex<Option<String>>,
    last_failure: Mutex<Option<String>>,
}

impl Tally {
    fn fail_run(&self, why: String) {
        self.fatal.lock().expect("tally").get_or_insert(why);
        self.stop.store(true, Ordering::Release);
    }
}

/// Writes until the duration ends. Ok(true): writes were acknowledged and logged.
/// Err: why the run failed (the store, the log, or no write acknowledged at all).
pub async fn run(args: WriterArgs) -> Result<bool, String> {
    let (store, backend, prefix) = super::store(&args.url, &args.prefix, true)?;
    let blobs = Arc::new(ObjectStoreBlobs::new(store, backend));
    let mut config = WorldConfig::default();
    if let Some(slots) = args.checkpoint_slots {
        // A short test run: a checkpoint due should not wait out the default 10 s jitter
        // (at 1 s, a 3 s run once made only two checkpoints where tests count on more).
        config.kernel.checkpoint_slots = slots;
        config.kernel.checkpoint_jitter = Duration::from_millis(100);
    }
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.log)
        .map_err(|e| format!("cannot open the log {}: {e}", args.log))?;
    let log = Arc::new(Mutex::new(log));
    // Peers' hints over UDP on loopback, through the crate's own transport.
    if args.listen.is_some() || !args.peers.is_empty() {
        let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, args.listen.unwrap_or(0)));
        let peers = args.peers.iter().map(|p| SocketAddr::from((Ipv4Addr::LOCALHOST, *p))).collect();
        let mut hints = PeerHints::new(listen, peers);
        hints.key = hint_key()?;
        config.peers = Peers::Udp(hints);
    }
    let world = World::open_on(blobs, &prefix, config).await.map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(args.duration_s);
    let tally = Arc::new(Tally::default());
    let progress = tokio::spawn(report_progress(tally.clone(), args.duration_s));
    let mut tasks = Vec::new();
    for _ in 0..args.writers {
        let (world, log, tally, paths) = (world.clone(), log.clone(), tally.clone(), args.paths.max(1));
        let log_path = args.log.clone();
        tasks.push(tokio::spawn(async move {
            while tokio::time::Instant::now() < deadline && !tally.stop.load(Ordering::Acquire) {
                let op_id = new_op_id();
                let n = u32::from_le_bytes(op_id.0[..4].try_into().expect("4 bytes")) % paths;
                let path = format!("/docs/{n:05}.md");
                let body = Bytes::from(format!("{op_id} wrote this"));
                let hash = Hash32::of(&body);
                let write = Write {
                    op_id,
                    mutation: Mutation::Publish {
                        path: path.clone(),
                        body,
                        catalog: None,
                        expected: Expected::Any,
                    },
                };
                let line = match world.write(write).await {
                    Ok(WriteOk::Committed(r)) => {
                        tally.acked.fetch_add(1, Ordering::Relaxed);
                        format!("acked {op_id} {} {} {} {path}\n", r.sequence, r.version, hash.to_hex())
                    }
                    Err(Error::Write(WriteError::Uncertain { .. })) => {
                        tally.uncertain.fetch_add(1, Ordering::Relaxed);
                        format!("uncertain {op_id}\n")
                    }
                    Ok(_) => continue,
                    // The world is gone (stopped by the store, failed closed, closed): no
                    // later write can pass.
                    Err(
                        e @ (Error::Store(_) | Error::Failed(_) | Error::Closed | Error::OpenDeadline { .. }),
                    ) => {
                        tally.fail_run(e.to_string());
                        return;
                    }
                    Err(Error::Write(WriteError::Failed(reason))) => {
                        tally.fail_run(format!("the world failed closed: {reason}"));
                        return;
                    }
                    Err(e) => {
                        let failed = tally.failed.fetch_add(1, Ordering::Relaxed) + 1;
                        if failed <= FAILURES_SAID_MAX {
                            eprintln!("write failed: {e}");
                        }
                        if failed == FAILURES_SAID_MAX {
                            eprintln!("(further failed writes are counted, not said)");
                        }
                        *tally.last_failure.lock().expect("tally") = Some(e.to_string());
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                // Never an acknowledged write missing from the log: fail the run instead.
                if let Err(e) = log.lock().expect("log").write_all(line.as_bytes()) {
                    tally.fail_run(format!(
                        "cannot append to the log {log_path}: {e} (write {op_id} is not logged)"
                    ));
                    return;
                }
            }
        }));
    }
    for t in tasks {
        if let Err(e) = t.await {
            tally.fail_run(format!("a writer task ended abnormally: {e}"));
        }
    }
    progress.abort();
    if let Some(format) = args.health {
        let health = world.health().await;
        let telemetry = world.stats().await.map(|s| s.telemetry).unwrap_or_default();
        let value = health_json(&health, &telemetry);
        match format {
            HealthFormat::Json => println!("{value}"),
            HealthFormat::Text => print_text(&value),
        }
    }
    let udp = args.listen.is_some() || !args.peers.is_empty();
    if let (true, Ok(stats)) = (udp, world.stats().await) {
        let h = stats.hints;
        eprintln!(
            "writer: hints sent={} received={} refused={} foreign_world={} forged={} replayed={} dropped={}",
            h.sent, h.received, h.refused, h.foreign_world, h.forged, h.replayed, h.dropped
        );
    }
    world.close().await;
    let (acked, uncertain, failed) = (
        tally.acked.load(Ordering::Relaxed),
        tally.uncertain.load(Ordering::Relaxed),
        tally.failed.load(Ordering::Relaxed),
    );
    eprintln!(
        "writer: acked={acked} uncertain={uncertain} failed={failed} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    if let Some(why) = tally.fatal.lock().expect("tally").take() {
        return Err(why);
    }
    if acked == 0 {
        let last = tally.last_failure.lock().expect("tally").take();
        return Err(match last {
            Some(e) => format!("no write was acknowledged: {failed} failed, the last with: {e}"),
            None => format!("no write was acknowledged ({uncertain} uncertain)"),
        });
    }
    Ok(true)
}

/// A world's health and telemetry counters as one JSON object: durations in ms, the
/// world id in hex, absent facts as null. Holds no credentials (`Health` has none).
pub fn health_json(health: &Health, telemetry: &TelemetryStats) -> serde_json::Value {
    let ms = |d: Duration| d.as_micros() as f64 / 1e3;
    let ago = |e: &Option<(Duration, String)>| {
        e.as_ref().map(|(ago, what)| serde_json::json!({ "ago_ms": ms(*ago), "what": what }))
    };
    serde_json::json!({
        "state": health.state.as_str(),
        "reason": health.reason,
        "world_id": health.world_id.map(|w| w.to_string()),
        "sequence": health.sequence,
        "unconfirmed_ms": health.unconfirmed.map(ms),
        "newest_slot": health.newest_slot.map(|(first, last, age)| {
            serde_json::json!({ "first": first, "last": last, "age_ms": ms(age) })
        }),
        "committed_through": health.committed_through,
        "checkpointing": health.checkpointing,
        "compactor_last_error": ago(&health.compactor_last_error),
        "collecting": health.collecting,
        "collection_off": health.collection_off,
        "collector_last_error": ago(&health.collector_last_error),
        "probe_failures_in_row": health.probe_failures_in_row,
        "probe_failures": health.probe_failures,
        "store_failures_recent": health.store_failures_recent,
        "store_last_error": ago(&health.store_last_error),
        "queued": health.queued,
        "commands_waiting": health.commands_waiting,
        "calls_in_flight": health.calls_in_flight,
        "reloads": health.reloads,
        "telemetry": {
            "writes_timed": telemetry.writes_timed,
            "slow_writes": telemetry.slow_writes,
            "slow_reads": telemetry.slow_reads,
            "warnings": telemetry.warnings,
            "errors": telemetry.errors,
            "samples_dropped": telemetry.samples_dropped,
            "write_ms_max": telemetry.write_us_max as f64 / 1e3,
        },
    })
}

/// One `health.key=value` line a field, nested objects flattened with dots.
fn print_text(value: &serde_json::Value) {
    fn lines(prefix: &str, value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(fields) => {
                for (key, field) in fields {
                    lines(&format!("{prefix}.{key}"), field, out);
                }
            }
            serde_json::Value::String(s) => out.push(format!("{prefix}={s}")),
            other => out.push(format!("{prefix}={other}")),
        }
    }
    let mut out = Vec::new();
    lines("health", value, &mut out);
    println!("{}", out.join("\n"));
}

/// Progress while the writers write: on a terminal a bar with the rate and the time left;
/// elsewhere (a CI log, a pipe) a line every [`PROGRESS_EVERY`].
async fn report_progress(tally: Arc<Tally>, duration_s: f64) {
    let started = std::time::Instant::now();
    let total_s = duration_s.ceil() as u64;
    let bar = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(total_s);
        bar.set_style(
            ProgressStyle::with_template("writer {bar:30} {pos}/{len} s, ETA {eta}: {msg}")
                .expect("a valid template"),
        );
        Some(bar)
    } else {
        None
    };
    let tick = if bar.is_some() { Duration::from_secs(1) } else { PROGRESS_EVERY };
    loop {
        tokio::time::sleep(tick).await;
        let elapsed = started.elapsed().as_secs_f64();
        let acked = tally.acked.load(Ordering::Relaxed);
        let line = format!(
            "acked={acked} ({:.0}/s) uncertain={} failed={}",
            acked as f64 / elapsed,
            tally.uncertain.load(Ordering::Relaxed),
            tally.failed.load(Ordering::Relaxed)
        );
        match &bar {
            Some(bar) => {
                bar.set_position((elapsed as u64).min(total_s));
                bar.set_message(line);
            }
            None => eprintln!("writer: {elapsed:.0} s of {duration_s}: {line}"),
        }
    }
}

/// How often the writer says how far it got when no one watches a bar.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);
