//! The named scenarios. Each is a function of (overrides, seed) to a cluster
//! configuration; `run_scenario` runs it, checks it, and reports.

use crate::report::Report;
use slotlog_kernel::{CompactionRole, Defects};
use slotlog_model::CheckOptions;
use slotlog_sim::gcs::{Faults, GcsConfig, Listings, ProfileKind, VersionTokens, WriteTimes};
use slotlog_sim::{
    Arrivals, Bursts, ClusterConfig, Crashes, DamagedObject, Gone, Mix, Pause, ReadLoad, Stall, StallAt,
    TraceEvent, ViewLoad, WatchLoad, Workload,
};
use std::time::Duration;

/// What a run may change from a scenario's defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides {
    pub replicas: Option<usize>,
    pub duration_s: Option<f64>,
    pub profile: Option<ProfileKind>,
    /// How the store makes version tokens: content hashes (S3's ETag; the `s3` profile's
    /// default) or generations (every other profile's).
    pub etag: Option<VersionTokens>,
    pub batch_max: Option<usize>,
    pub ahead: Option<usize>,
    /// Small bodies ride in their slot (true) or every body is a blob (false, the record's way).
    pub bodies_inline: Option<bool>,
    pub rate: Option<f64>,
    pub writers: Option<usize>,
    /// Turns on or off (on by default), for comparison runs.
    pub turns: Option<bool>,
    /// Commit hints: `Some(false)` loses every one, to every replica and follower
    /// (`--hints off`); `Some(true)` or `None` keeps the scenario's own hint loss.
    pub hints: Option<bool>,
    /// Forged hints from a party on the network (`--hint-flood on`): every replica gets
    /// [`HINT_FLOOD_PER_S`] a second, each up to [`HINT_FLOOD_AHEAD`] past the overheard
    /// tip (`Hints::flood_per_s`, docs/SECURITY.md).
    pub hint_flood: Option<bool>,
    /// The checkpoint cadence in slots.
    pub checkpoint_slots: Option<u64>,
    /// The most documents one checkpoint step folds (`checkpoint_step_docs_max`).
    pub step_docs: Option<usize>,
    /// Documents in the world before the run (`preload_documents`).
    pub docs: Option<usize>,
    /// The compaction role of the replicas that take writes.
    pub role: Option<CompactionRole>,
    /// Damage this object of the newest full checkpoint before each cold start
    /// (`ClusterConfig::damage_at_open`).
    pub damage_at_open: Option<DamagedObject>,
    /// Virtual second at which the store that takes no writes stops for good (the writers
    /// must take over its checkpoints).
    pub followers_down_at_s: Option<f64>,
    /// Disturbances the run goes without (`--without`), as `shrink` strips them.
    pub without: Without,
    /// Deliberate kernel defects; only tests set these (in-process, or through the hidden
    /// `--defect` flag, so a test can watch a failing sweep from outside).
    pub defects: Defects,
}

/// Forged hints a second to every replica under `--hint-flood on`: several inside every
/// slot at the fastest rate measured (250 slots a second, `fast2`). More buys a forger
/// nothing: a store holds at most once a slot of its own, and owed holds no peer answers
/// back off (docs/SECURITY.md).
pub const HINT_FLOOD_PER_S: u64 = 1_000;
/// How far past the overheard tip a forged hint names under `--hint-flood on`: about a
/// slot's members in `race`, so most land inside the slot a store is creating.
pub const HINT_FLOOD_AHEAD: u64 = 64;

/// The deliberate defects by the names the hidden `--defect` flag takes.
pub const DEFECT_NAMES: &[&str] = &[
    "ack-before-confirm",
    "skip-ambiguous-read",
    "exact-read-skips-probe",
    "catalog-ignores-staleness",
    "skip-post-create-check",
    "freshen-keeps-bytes",
    "timer-never-cleared",
    "catch-up-keeps-installed-gap",
    "admit-everything",
    "watch-poll-skipped",
    "view-reads-tip",
    "search-ignores-coverage",
    "carry-bodies-reversed",
    "modified-time-ahead",
    "segment-words-shifted",
];

/// Switches on the defect `name` (one of [`DEFECT_NAMES`]); false for an unknown name.
pub fn set_defect(defects: &mut Defects, name: &str) -> bool {
    let flag = match name {
        "ack-before-confirm" => &mut defects.ack_before_confirm,
        "skip-ambiguous-read" => &mut defects.skip_ambiguous_read,
        "exact-read-skips-probe" => &mut defects.exact_read_skips_probe,
        "catalog-ignores-staleness" => &mut defects.catalog_ignores_staleness,
        "skip-post-create-check" => &mut defects.skip_post_create_check,
        "freshen-keeps-bytes" => &mut defects.freshen_keeps_bytes,
        "timer-never-cleared" => &mut defects.timer_never_cleared,
        "catch-up-keeps-installed-gap" => &mut defects.catch_up_keeps_installed_gap,
        "admit-everything" => &mut defects.admit_everything,
        "watch-poll-skipped" => &mut defects.watch_poll_skipped,
        "view-reads-tip" => &mut defects.view_reads_tip,
        "search-ignores-coverage" => &mut defects.search_ignores_coverage,
        "carry-bodies-reversed" => &mut defects.carry_bodies_reversed,
        "modified-time-ahead" => &mut defects.modified_time_ahead,
        "segment-words-shifted" => &mut defects.segment_words_shifted,
        _ => return false,
    };
    *flag = true;
    true
}

fn defect_names(d: &Defects) -> impl Iterator<Item = &'static str> {
    let on = [
        d.ack_before_confirm,
        d.skip_ambiguous_read,
        d.exact_read_skips_probe,
        d.catalog_ignores_staleness,
        d.skip_post_create_check,
        d.freshen_keeps_bytes,
        d.timer_never_cleared,
        d.catch_up_keeps_installed_gap,
        d.admit_everything,
        d.watch_poll_skipped,
        d.view_reads_tip,
        d.search_ignores_coverage,
        d.carry_bodies_reversed,
        d.modified_time_ahead,
        d.segment_words_shifted,
    ];
    DEFECT_NAMES.iter().zip(on).filter(|(_, on)| *on).map(|(name, _)| *name)
}

impl Overrides {
    /// The flags that reproduce these overrides on the command line.
    pub fn flags(&self) -> String {
        let mut s = String::new();
        if let Some(v) = self.replicas {
            s += &format!(" --replicas {v}");
        }
        if let Some(v) = self.duration_s {
            s += &format!(" --duration-s {v}");
        }
        if let Some(v) = self.profile {
            s += &format!(" --profile {v}");
        }
        if let Some(v) = self.etag {
            s += &format!(" --etag {v}");
        }
        if let Some(v) = self.batch_max {
            s += &format!(" --batch-max {v}");
        }
        if let Some(v) = self.ahead {
            s += &format!(" --ahead {v}");
        }
        if let Some(v) = self.rate {
            s += &format!(" --rate {v}");
        }
        if let Some(v) = self.writers {
            s += &format!(" --writers {v}");
        }
        if let Some(v) = self.turns {
            s += if v { " --turns on" } else { " --turns off" };
        }
        if let Some(v) = self.hints {
            s += if v { " --hints on" } else { " --hints off" };
        }
        if let Some(v) = self.hint_flood {
            s += if v { " --hint-flood on" } else { " --hint-flood off" };
        }
        if let Some(v) = self.checkpoint_slots {
            s += &format!(" --checkpoint-slots {v}");
        }
        if let Some(v) = self.step_docs {
            s += &format!(" --step-docs {v}");
        }
        if let Some(v) = self.docs {
            s += &format!(" --docs {v}");
        }
        match self.role {
            Some(CompactionRole::Eager) => s += " --role eager",
            Some(CompactionRole::Backstop) => s += " --role backstop",
            Some(CompactionRole::Off) => s += " --role off",
            None => {}
        }
        match self.damage_at_open {
            Some(DamagedObject::Checkpoint) => s += " --damage-at-open checkpoint",
            Some(DamagedObject::Root) => s += " --damage-at-open root",
            None => {}
        }
        if let Some(v) = self.followers_down_at_s {
            s += &format!(" --followers-down-at-s {v}");
        }
        let without = self.without.names();
        if !without.is_empty() {
            s += &format!(" --without {}", without.join(","));
        }
        for name in defect_names(&self.defects) {
            s += &format!(" --defect {name}");
        }
        s
    }
}

/// The kinds of disturbance a scenario injects that a run can go without.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Without {
    /// Replica crashes and restarts.
    pub crashes: bool,
    /// The store's injected errors: 429s, 5xx, timeouts, late and ambiguous creates.
    pub store_faults: bool,
    /// Pauses and clock-stopped stalls.
    pub stalls: bool,
    /// Clock skew between replicas.
    pub skew: bool,
    /// Lost commit hints.
    pub hint_loss: bool,
}

impl Without {
    /// Every kind by the name `--without` takes, with its switch.
    pub const NAMES: [&'static str; 5] = ["crashes", "store-faults", "stalls", "skew", "hint-loss"];

    fn switches(&mut self) -> [&mut bool; 5] {
        [&mut self.crashes, &mut self.store_faults, &mut self.stalls, &mut self.skew, &mut self.hint_loss]
    }

    /// Switches on the kind `name` (one of [`Without::NAMES`]); false for an unknown name.
    pub fn set(&mut self, name: &str) -> bool {
        let Some(i) = Self::NAMES.iter().position(|n| *n == name) else { return false };
        *self.switches()[i] = true;
        true
    }

    /// The names switched on, in [`Without::NAMES`] order.
    pub fn names(&self) -> Vec<&'static str> {
        let mut copy = *self;
        let on = copy.switches().map(|b| *b);
        Self::NAMES.iter().zip(on).filter(|(_, on)| *on).map(|(n, _)| *n).collect()
    }

    fn apply(&self, c: &mut ClusterConfig) {
        if self.crashes {
            c.crashes = None;
        }
        if self.store_faults {
            c.gcs.faults = Faults::none();
        }
        if self.stalls {
            c.pause = None;
            c.stalls.clear();
        }
        if self.skew {
            c.clock_skew_max = Duration::ZERO;
        }
        if self.hint_loss {
            c.hints.loss_rate = 0.0;
            c.hints.follower_loss_rate = 0.0;
        }
    }
}

pub struct Scenario {
    pub name: &'static str,
    pub about: &'static str,
    build: fn(u64) -> ClusterConfig,
    /// Swept by `sweep all`; a soak is swept only by name.
    pub in_all: bool,
}

pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "single",
        about: "one store, gcs profile, open loop 250 writes/s for 60 s on a 2,000-document world",
        build: single,
        in_all: true,
    },
    Scenario {
        name: "saturate",
        about: "one store, gcs profile, closed loop of 256 writers (honours --batch-max and --ahead)",
        build: saturate,
        in_all: true,
    },
    Scenario {
        name: "race",
        about: "R stores (default 3), gcs-shaped, 2,000-document seed, 30% creates 70% blind updates, 64 writers per store",
        build: race,
        in_all: true,
    },
    Scenario {
        name: "fast2",
        about: "two stores, fast profile (2 ms calls), closed loop, 1.5 s: the record's model of turns",
        build: fast2,
        in_all: true,
    },
    Scenario {
        name: "open300",
        about: "three stores, gcs-shaped, open loop 300 writes/s split evenly, 2,000-document seed, 30% creates 70% blind updates, 60 s",
        build: open300,
        in_all: true,
    },
    Scenario {
        name: "faults",
        about: "3 stores, gcs profile with every fault at high rates: 429, 5xx, timeouts, late creates, spikes",
        build: faults,
        in_all: true,
    },
    Scenario {
        name: "crash",
        about: "3 stores, gcs profile, random crashes and restarts, skewed clocks, checkpoints every 32 slots",
        build: crash,
        in_all: true,
    },
    Scenario {
        name: "reads",
        about: "3 stores writing 250 writes/s in total, readers of both classes on each; a follower without hints serving catalog reads",
        build: reads,
        in_all: true,
    },
    Scenario {
        name: "views",
        about: "3 stores writing 250 writes/s in total with crashes and faults, and clients opening 40 views a second that each read up to 8 times over up to 2.5 s, views aging out at 1.5 s and evicted past 1,500 documents held; the follower is a read-only replica, writers checkpoint every 16 slots",
        build: views,
        in_all: true,
    },
    Scenario {
        name: "search",
        about: "3 stores writing 150 writes/s of word bodies with crashes and faults, a follower, and body searches (plain and in views, paged): each answered from bodies only when the index covers its state, else from the catalog; checkpoints every 16 slots",
        build: search,
        in_all: true,
    },
    Scenario {
        name: "watch",
        about: "watchers that connect, disconnect and resume from cursors inside the ring, past it, and past 16,384 slots",
        build: watch,
        in_all: true,
    },
    Scenario {
        name: "watchpoll",
        about: "two writers at 4 writes/s, gcs profile, and a watch-only follower that hears no hint: every event reaches its watcher within the 5 s poll plus 2 s",
        build: watchpoll,
        in_all: true,
    },
    Scenario {
        name: "compact",
        about: "three writers at 300 writes/s open loop and a fourth store without writes, gcs-shaped, checkpoints every 32 slots, crashes and restarts that cold-start from checkpoints, 60 s",
        build: compact,
        in_all: true,
    },
    Scenario {
        name: "collect",
        about: "3 stores, gcs profile, grace and cadence at their defaults, 10 s bursts of writes every 30 minutes over 30 virtual hours, crashes: checkpoints, drops and slot collection",
        build: collect,
        in_all: true,
    },
    Scenario {
        name: "soak48",
        about: "collect's shape over 48 virtual hours with every fault: S3's rules on even seeds (every other one with creates answered without a time), GCS's on odd, faults high, creates landing minutes late, listings that miss objects, clock skew, a pause of 13 h, and clock-stopped stalls at a slot create, a checkpoint object create and a drop's delete",
        build: soak48,
        in_all: false,
    },
    Scenario {
        name: "edges",
        about: "the rare paths together: 3 stores and a follower make the world from an empty bucket (racing geneses), S3's rules with creates answered without a time, 1,500 writes/s offered against queues of 256 (Busy), backstop writers beside an eager follower, no hints, crashes whose cold start finds the newest checkpoint damaged, a writer paused past the request deadline",
        build: edges,
        in_all: true,
    },
    Scenario {
        name: "overload",
        about: "three stores, gcs-shaped, 8,000 writes/s offered open loop (about three times what they commit) with archive and policy flips among them, 10 s: Busy at once, control work admitted, nothing lost",
        build: overload,
        in_all: true,
    },
    Scenario {
        name: "gate",
        about: "the record's gate: one store at 250 writes/s open loop for 10 minutes on a 1,000,000-document world opened from its checkpoint, gcs profile, a follower that is also the eager compactor (a checkpoint every 1,024 slots)",
        build: gate,
        in_all: false,
    },
    Scenario {
        name: "conflicts",
        about: "many writers on a few documents: expected versions, appends, archive and policy flips, parent/child races",
        build: conflicts,
        in_all: true,
    },
];

impl Scenario {
    pub fn find(name: &str) -> Option<&'static Scenario> {
        SCENARIOS.iter().find(|s| s.name == name)
    }

    /// The cluster this scenario runs for `seed` with `o` applied.
    pub fn config(&self, seed: u64, o: &Overrides) -> ClusterConfig {
        let mut c = (self.build)(seed);
        if let Some(r) = o.replicas {
            c.replicas = r;
        }
        if let Some(d) = o.duration_s {
            // Whole ms, as the flag has always been read.
            c.duration = Duration::from_millis((d * 1_000.0) as u64);
        }
        if let Some(p) = o.profile {
            c.gcs = GcsConfig { faults: c.gcs.faults, listings: c.gcs.listings, ..GcsConfig::of(p) };
        }
        if let Some(e) = o.etag {
            c.gcs = c.gcs.with_tokens(e);
        }
        if let Some(b) = o.batch_max {
            c.kernel.batch_members_max = b;
        }
        if o.bodies_inline == Some(false) {
            c.kernel.body_inline_bytes_max = 0;
        }
        if let Some(a) = o.ahead {
            c.kernel.batches_ahead_max = a;
        }
        match &mut c.workload.arrivals {
            Arrivals::Open { rate_per_s } => {
                if let Some(r) = o.rate {
                    *rate_per_s = r;
                }
            }
            Arrivals::Closed { writers_per_replica } => {
                if let Some(w) = o.writers {
                    *writers_per_replica = w;
                }
            }
        }
        if let Some(t) = o.turns {
            c.kernel.turns = t;
        }
        if let Some(slots) = o.checkpoint_slots {
            c.kernel.checkpoint_slots = slots;
            c.kernel.checkpoint_jitter = c.kernel.checkpoint_jitter.min(Duration::from_secs(1));
        }
        if let Some(docs) = o.docs {
            c.preload_documents = docs;
        }
        if let Some(docs) = o.step_docs {
            c.kernel.checkpoint_step_docs_max = docs;
        }
        if o.role.is_some() {
            c.writers_role = o.role;
        }
        if o.damage_at_open.is_some() {
            c.damage_at_open = o.damage_at_open;
        }
        if let Some(at) = o.followers_down_at_s {
            assert!(
                c.followers == 1,
                "{} has {} stores without writes; one can be taken down",
                self.name,
                c.followers
            );
            // The follower is the node after the writers.
            c.gone = Some(Gone { node: c.replicas, at: Duration::from_millis((at * 1_000.0) as u64) });
        }
        o.without.apply(&mut c);
        // After `without`: `--hints off --without hint-loss` still loses every hint.
        if o.hints == Some(false) {
            c.hints.loss_rate = 1.0;
            c.hints.follower_loss_rate = 1.0;
        }
        if o.hint_flood == Some(true) {
            c.hints.flood_per_s = HINT_FLOOD_PER_S;
            c.hints.flood_ahead = HINT_FLOOD_AHEAD;
        }
        c.kernel.defects = o.defects;
        c
    }
}

thread_local! {
    /// Set while this thread runs a simulation: a panic then is a finding its report names.
    static IN_RUN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Where the last such panic fired.
    static PANIC_AT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Whether a run's assertion stays off stderr. A sweep sets it: there the raw panic text
/// (and a backtrace) would land between the FAIL lines on no run's behalf, and the FAIL
/// line names the assertion and where it fired; its replay prints the panic in full.
pub static QUIET_RUN_PANICS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Installs, once a process, a panic hook that records where a run's assertion fired for
/// the stopped run's report, then passes it to the hook that was there before unless
/// [`QUIET_RUN_PANICS`] is set. A panic outside a run is passed on unchanged.
fn record_run_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_RUN.get() {
                PANIC_AT.set(info.location().map(ToString::to_string));
                if QUIET_RUN_PANICS.load(std::sync::atomic::Ordering::Relaxed) {
                    return;
                }
            }
            previous(info);
        }));
    });
}

/// Runs one scenario and judges it.
pub fn run_scenario(scenario: &Scenario, seed: u64, o: &Overrides) -> Report {
    run_scenario_traced(scenario, seed, o, None)
}

/// [`run_scenario`], handing every event the trace hash covers to `sink` as it happens.
pub fn run_scenario_traced(
    scenario: &Scenario,
    seed: u64,
    o: &Overrides,
    sink: Option<&mut dyn FnMut(&TraceEvent<'_>)>,
) -> Report {
    let config = scenario.config(seed, o);
    let started = std::time::Instant::now();
    let repro = format!("slotlog run {} --seed {seed}{}", scenario.name, o.flags());
    // An assertion in the kernel, the store or the harness stops the run; it is a
    // finding like any violation, reported with the command that replays it. The sink
    // only writes out what it is handed, so a panic cannot leave it half-changed.
    let run = std::panic::AssertUnwindSafe(|| match sink {
        Some(sink) => slotlog_sim::run_traced(&config, sink),
        None => slotlog_sim::run(&config),
    });
    record_run_panics();
    IN_RUN.set(true);
    let outcome = std::panic::catch_unwind(run);
    IN_RUN.set(false);
    let result = match outcome {
        Ok(result) => result,
        Err(payload) => {
            let mut message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic without a message".to_string());
            if let Some(at) = PANIC_AT.take() {
                message += &format!(" (at {at})");
            }
            return Report::stopped(
                scenario.name,
                seed,
                &config,
                message,
                started.elapsed().as_secs_f64(),
                repro,
            );
        }
    };
    let options = CheckOptions {
        catalog_staleness: config.kernel.catalog_staleness_max,
        recent_slots_max: config.kernel.recent_slots_max,
        checkpoint_grace: config.kernel.checkpoint_grace,
        slot_retention: config.kernel.slot_retention,
        // From the scenario's own config: the poll interval its replicas run with, plus
        // the slack it states for the probe's latency.
        watch_delivery_bound: config
            .watchers
            .as_ref()
            .and_then(|w| w.delivery_slack)
            .map(|slack| config.kernel.watch_poll + slack),
        view_age_max: config.kernel.view_age_max,
    };
    let check =
        slotlog_model::check(&result.history, &result.objects, &result.keys, result.world_id, options);
    let wall_s = started.elapsed().as_secs_f64();
    Report::new(scenario.name, seed, &config, &result, &check, wall_s, repro)
}

/// What running one seed twice showed.
pub struct Determinism {
    pub first: Report,
    pub second: Report,
}

impl Determinism {
    /// Runs `scenario` for `seed` twice in this process and keeps both reports.
    pub fn check(scenario: &Scenario, seed: u64, o: &Overrides) -> Determinism {
        Determinism { first: run_scenario(scenario, seed, o), second: run_scenario(scenario, seed, o) }
    }

    /// Both runs hashed the same trace and reached the same verdict. A run an assertion
    /// stopped has no trace hash: two such runs agree when they stopped the same way.
    pub fn same(&self) -> bool {
        self.first.trace_hash == self.second.trace_hash && self.first.violations == self.second.violations
    }

    /// One line saying what was compared and what came out.
    pub fn text(&self) -> String {
        let (a, b) = (&self.first, &self.second);
        let hash =
            |h: &str| if h.is_empty() { "none (stopped on an assertion)".to_string() } else { h.to_string() };
        if self.same() {
            format!(
                "determinism: {} seed {} ran twice, trace {} both times",
                a.scenario,
                a.seed,
                hash(&a.trace_hash)
            )
        } else if a.trace_hash != b.trace_hash {
            format!(
                "NOT DETERMINISTIC: {} seed {} ran twice and gave trace {} then trace {} (replay: {} --check-determinism)",
                a.scenario,
                a.seed,
                hash(&a.trace_hash),
                hash(&b.trace_hash),
                a.repro
            )
        } else {
            format!(
                "NOT DETERMINISTIC: {} seed {} ran twice with trace {} both times but different verdicts: {:?} then {:?}",
                a.scenario,
                a.seed,
                hash(&a.trace_hash),
                a.violations,
                b.violations
            )
        }
    }
}

const MINUTE: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3_600);

fn single(seed: u64) -> ClusterConfig {
    let workload = Workload::new(Arrivals::Open { rate_per_s: 250.0 }, Mix::creates_and_blind_updates());
    let mut c = ClusterConfig::new(seed, 1, GcsConfig::of(ProfileKind::Gcs), workload);
    c.duration = Duration::from_secs(60);
    c.preload_documents = 2_000;
    c
}

/// Several times what three stores commit, offered open loop, with control work among the
/// writes: admission must refuse ordinary writes at once (`Busy`) rather than let them
/// expire, and keep taking `set_policy` and archive flips (003's reserve).
fn overload(seed: u64) -> ClusterConfig {
    let mix = Mix { create: 30, blind_update: 66, archive_flip: 2, policy_flip: 2, ..Mix::default() };
    let workload = Workload::new(Arrivals::Open { rate_per_s: 8_000.0 }, mix);
    let mut c = ClusterConfig::new(seed, 3, GcsConfig::of(ProfileKind::GcsShaped), workload);
    c.duration = Duration::from_secs(10);
    c.preload_documents = 2_000;
    c
}

/// The record's headline run (001, "the gate"): 150,000 writes on a million documents.
/// The world is preloaded as slots plus their full checkpoint, so the replicas open from
/// the checkpoint as they would in production, and the checker still replays every slot.
fn gate(seed: u64) -> ClusterConfig {
    let workload = Workload::new(Arrivals::Open { rate_per_s: 250.0 }, Mix::creates_and_blind_updates());
    let mut c = ClusterConfig::new(seed, 1, GcsConfig::of(ProfileKind::Gcs), workload);
    c.followers = 1;
    c.writers_role = Some(CompactionRole::Backstop);
    c.duration = Duration::from_secs(600);
    c.preload_documents = 1_000_000;
    c.preload_checkpoint = true;
    c.clients_wait_for_open = true;
    c.kernel.checkpoint_slots = 1_024;
    c
}

fn saturate(seed: u64) -> ClusterConfig {
    let workload =
        Workload::new(Arrivals::Closed { writers_per_replica: 256 }, Mix::creates_and_blind_updates());
    let mut c = ClusterConfig::new(seed, 1, GcsConfig::of(ProfileKind::Gcs), workload);
    c.duration = Duration::from_secs(20);
    c.preload_documents = 2_000;
    c
}

fn race(seed: u64) -> ClusterConfig {
    let workload =
        Workload::new(Arrivals::Closed { writers_per_replica: 64 }, Mix::creates_and_blind_updates());
    let mut c = ClusterConfig::new(seed, 3, GcsConfig::of(ProfileKind::GcsShaped), workload);
    c.duration = Duration::from_secs(20);
    c.preload_documents = 2_000;
    c
}

fn fast2(seed: u64) -> ClusterConfig {
    let workload =
        Workload::new(Arrivals::Closed { writers_per_replica: 64 }, Mix::creates_and_blind_updates());
    let mut c = ClusterConfig::new(seed, 2, GcsConfig::of(ProfileKind::Fast), workload);
    c.duration = Duration::from_millis(1_500);
    c.preload_documents = 2_000;
    c
}

fn open300(seed: u64) -> ClusterConfig {
    let workload = Workload::new(Arrivals::Open { rate_per_s: 300.0 }, Mix::creates_and_blind_updates());
    let mut c = ClusterConfig::new(seed, 3, GcsConfig::of(ProfileKind::GcsShaped), workload);
    c.duration = Duration::from_secs(60);
    c.preload_documents = 2_000;
    c
}

/// Readers on every replica at a modest rate, so every scenario exercises reads too.
fn some_reads() -> Option<ReadLoad> {
    Some(ReadLoad { exact_per_s: 20.0, catalog_per_s: 20.0, exact_on_followers: true })
}

fn faults(seed: u64) -> ClusterConfig {
    let mix = Mix {
        create: 20,
        blind_update: 40,
        expected_update: 15,
        append: 15,
        archive_flip: 5,
        republish: 5,
        ..Mix::default()
    };
    let workload = Workload::new(Arrivals::Open { rate_per_s: 120.0 }, mix);
    let gcs = GcsConfig::of(ProfileKind::Gcs).with_faults(Faults::high()).with_listings(Listings::local());
    let mut c = ClusterConfig::new(seed, 3, gcs, workload);
    c.duration = Duration::from_secs(20);
    c.preload_documents = 200;
    c.reads = some_reads();
    checkpoint_often(&mut c);
    c
}

/// Checkpoints every 32 slots (64 when batches stopped at 32 members; slots that grow
/// with the queue hold about twice as many), in steps of at most 256 documents (the least
/// a step may hold: a slot's most members), so a sweep exercises the compactor,
/// multi-step runs and cold start from full checkpoints.
fn checkpoint_often(c: &mut ClusterConfig) {
    c.kernel.checkpoint_slots = 32;
    c.kernel.checkpoint_jitter = Duration::from_secs(1);
    c.kernel.checkpoint_step_docs_max = 256;
}

fn compact(seed: u64) -> ClusterConfig {
    let workload = Workload::new(Arrivals::Open { rate_per_s: 300.0 }, Mix::creates_and_blind_updates());
    let mut c = ClusterConfig::new(seed, 3, GcsConfig::of(ProfileKind::GcsShaped), workload);
    c.followers = 1;
    c.duration = Duration::from_secs(60);
    c.preload_documents = 2_000;
    c.crashes = Some(Crashes {
        mean_interval: Duration::from_secs(8),
        down_min: Duration::from_millis(200),
        down_max: Duration::from_secs(2),
    });
    c.reads = some_reads();
    checkpoint_often(&mut c);
    // Steps of 1,024 documents: runs still take several steps, and the checker judges a
    // quarter as many checkpoints as at 256 (half the run's time in a sweep).
    c.kernel.checkpoint_step_docs_max = 1_024;
    c
}

/// Collection over many virtual hours: bursts keep the run cheap (the simulator skips
/// idle time) while checkpoints age past the grace and slots past the retention.
fn collect(seed: u64) -> ClusterConfig {
    let mut workload = Workload::new(Arrivals::Open { rate_per_s: 20.0 }, Mix::creates_and_blind_updates());
    workload.bursts = Some(Bursts { on: Duration::from_secs(10), off: 30 * MINUTE });
    let mut c = ClusterConfig::new(seed, 3, GcsConfig::of(ProfileKind::Gcs), workload);
    c.duration = 30 * HOUR;
    c.preload_documents = 200;
    c.crashes = Some(Crashes {
        mean_interval: 3 * HOUR,
        down_min: Duration::from_secs(1),
        down_max: Duration::from_secs(30),
    });
    c.clock_skew_max = Duration::from_millis(100);
    c.reads = Some(ReadLoad { exact_per_s: 5.0, catalog_per_s: 5.0, exact_on_followers: false });
    // A replica paused past the reload age, and one stalled at a slot create long enough
    // for the slot it wanted to be committed by a peer, covered and collected (24 h).
    c.pause = Some(Pause { node: 1, at: 2 * HOUR, length: 13 * HOUR });
    c.stalls = vec![Stall { node: 2, after: HOUR, length: 26 * HOUR, at: StallAt::SlotCreate }];
    c
}

/// `collect` over 48 virtual hours with every fault this simulator has (`just soak48`).
fn soak48(seed: u64) -> ClusterConfig {
    let mut c = collect(seed);
    let kind = if seed.is_multiple_of(2) { ProfileKind::S3 } else { ProfileKind::Gcs };
    let faults = Faults { late_create_max: 10 * MINUTE, ..Faults::high() };
    c.gcs = GcsConfig::of(kind).with_faults(faults).with_listings(Listings::local());
    // Every other S3 seed answers writes with no time at all, as a local directory does:
    // each slot and checkpoint is then judged by a metadata read after its create.
    if seed % 4 == 2 {
        c.gcs.rules = c.gcs.rules.with_write_times(WriteTimes::Untimed);
    }
    c.duration = 48 * HOUR;
    c.clock_skew_max = Duration::from_secs(2);
    c.crashes = Some(Crashes {
        mean_interval: HOUR,
        down_min: Duration::from_secs(1),
        down_max: Duration::from_secs(60),
    });
    c.stalls.extend([
        // A compactor run that resumes 40 minutes on, its clock stopped: past the grace.
        Stall { node: 0, after: 20 * HOUR, length: 3 * HOUR, at: StallAt::CheckpointObjectCreate },
        // A drop that resumes deleting from a listing 40 minutes old.
        Stall { node: 1, after: 30 * HOUR, length: 40 * MINUTE, at: StallAt::Delete },
    ]);
    c
}

fn crash(seed: u64) -> ClusterConfig {
    let workload = Workload::new(
        Arrivals::Open { rate_per_s: 150.0 },
        Mix { create: 30, blind_update: 50, expected_update: 10, append: 10, ..Mix::default() },
    );
    let gcs = GcsConfig::of(ProfileKind::Gcs).with_listings(Listings::local());
    let mut c = ClusterConfig::new(seed, 3, gcs, workload);
    c.duration = Duration::from_secs(20);
    c.preload_documents = 200;
    c.crashes = Some(Crashes {
        mean_interval: Duration::from_secs(2),
        down_min: Duration::from_millis(200),
        down_max: Duration::from_secs(3),
    });
    c.clock_skew_max = Duration::from_millis(100);
    c.reads = some_reads();
    c.watchers = Some(WatchLoad {
        per_node: 2,
        session_mean: Duration::from_secs(3),
        pause_max: Duration::from_millis(500),
        credit: 256,
        consume_max: Duration::from_millis(50),
        old_cursor_rate: 0.2,
        old_cursor_back_max: 500,
        followers_only: false,
        delivery_slack: None,
    });
    c.hints.loss_rate = 0.1;
    checkpoint_often(&mut c);
    // Most steps come due by the slot count, some by the bytes the slots carry:
    // checkpoint_due_carried in 6 of seeds 1..40.
    c.kernel.checkpoint_carried_bytes = 2048 * 1024;
    c
}

/// Paths no other scenario takes, in one short run (the coverage issue): each setting
/// below is here for the marks it reaches.
fn edges(seed: u64) -> ClusterConfig {
    let workload = Workload::new(Arrivals::Open { rate_per_s: 1_500.0 }, Mix::creates_and_blind_updates());
    // S3's rules, and creates answered without any time (a local directory's, or a store
    // of the embedder's own): create_untimed_stat.
    let mut gcs = GcsConfig::of(ProfileKind::S3);
    gcs.rules = gcs.rules.with_write_times(WriteTimes::Untimed);
    let mut c = ClusterConfig::new(seed, 3, gcs, workload);
    c.followers = 1;
    c.duration = Duration::from_secs(20);
    // open_genesis, open_genesis_race.
    c.empty_bucket = true;
    // More offered than a queue of 256 holds: write_refused_busy.
    c.kernel.queue_members_max = 256;
    // Writers step only when the follower's checkpoints are 5 s old: backstop_stepped
    // and backstop_deferred.
    checkpoint_often(&mut c);
    c.kernel.checkpoint_interval = Duration::from_secs(5);
    c.kernel.backstop_after = Duration::from_secs(5);
    c.writers_role = Some(CompactionRole::Backstop);
    // Writers hear no hints: they learn of peers' slots from lost creates and probes.
    c.hints.loss_rate = 1.0;
    // Cold starts meet a damaged newest checkpoint: open_fallback_checkpoint.
    c.crashes = Some(Crashes {
        mean_interval: Duration::from_secs(6),
        down_min: Duration::from_millis(200),
        down_max: Duration::from_secs(2),
    });
    c.damage_at_open = Some(DamagedObject::Checkpoint);
    c.reads = some_reads();
    // A writer paused past the request deadline (a GC pause, a suspended VM): reads it
    // was answering when it stopped pass their deadlines: read_deadline.
    c.pause = Some(Pause { node: 0, at: Duration::from_secs(8), length: Duration::from_secs(11) });
    c
}

fn conflicts(seed: u64) -> ClusterConfig {
    let mut workload = Workload::new(Arrivals::Closed { writers_per_replica: 8 }, Mix::contended());
    workload.hot_paths = Some(6);
    workload.parent_child_pairs = 4;
    workload.body_bytes_min = 16;
    workload.body_bytes_max = 256;
    let mut c = ClusterConfig::new(seed, 3, GcsConfig::of(ProfileKind::Gcs), workload);
    c.duration = Duration::from_secs(15);
    c.reads = some_reads();
    c
}

fn reads(seed: u64) -> ClusterConfig {
    let workload = Workload::new(Arrivals::Open { rate_per_s: 250.0 }, Mix::creates_and_blind_updates());
    let mut c = ClusterConfig::new(seed, 3, GcsConfig::of(ProfileKind::Gcs), workload);
    c.followers = 1;
    c.duration = Duration::from_secs(20);
    c.preload_documents = 2_000;
    // The follower hears no hints and serves only catalog reads: it stays within a second
    // of the tip by the tip checks those reads make, and by nothing else.
    c.reads = Some(ReadLoad { exact_per_s: 100.0, catalog_per_s: 100.0, exact_on_followers: false });
    c.hints.loss_rate = 0.05;
    c.hints.follower_loss_rate = 1.0;
    c.hints.delay_max = Duration::from_millis(20);
    c
}

fn views(seed: u64) -> ClusterConfig {
    let workload = Workload::new(Arrivals::Open { rate_per_s: 250.0 }, Mix::creates_and_blind_updates());
    // The profile's own faults (a few 429s, 5xx and timeouts) besides the crashes.
    let mut c = ClusterConfig::new(seed, 3, GcsConfig::of(ProfileKind::Gcs), workload);
    c.followers = 1;
    c.duration = Duration::from_secs(10);
    c.preload_documents = 2_000;
    c.views = Some(ViewLoad { per_s: 40.0, reads_max: 8, gap_max: Duration::from_millis(300) });
    // Short enough that views reading on past it are refused, long enough that most end first.
    c.kernel.view_age_max = core::time::Duration::from_millis(1_500);
    // Small enough that pins at many sequences pass it and the oldest are evicted.
    c.kernel.view_images_max = 1_500;
    // The follower is read-only: it serves reads and views, opens from the checkpoints
    // the writers make (every 16 slots) after a crash, and never writes.
    c.followers_read_only = true;
    c.kernel.checkpoint_slots = 16;
    c.kernel.checkpoint_jitter = Duration::ZERO;
    c.crashes = Some(Crashes {
        mean_interval: Duration::from_secs(3),
        down_min: Duration::from_millis(200),
        down_max: Duration::from_secs(2),
    });
    c
}

fn search(seed: u64) -> ClusterConfig {
    let mut workload = Workload::new(Arrivals::Open { rate_per_s: 150.0 }, Mix::creates_and_blind_updates());
    workload.word_bodies = true;
    workload.search_share = 0.6;
    workload.body_bytes_min = 16;
    workload.body_bytes_max = 600;
    // The profile's own faults (a few 429s, 5xx and timeouts) besides the crashes.
    let mut c = ClusterConfig::new(seed, 3, GcsConfig::of(ProfileKind::Gcs), workload);
    c.followers = 1;
    c.duration = Duration::from_secs(10);
    // Enough bodies that an index built after a crash takes longer than a search waits
    // (16 reads in flight of about 40 ms each), so some searches answer from the catalog.
    c.preload_documents = 800;
    c.reads = Some(ReadLoad { exact_per_s: 20.0, catalog_per_s: 60.0, exact_on_followers: false });
    c.views = Some(ViewLoad { per_s: 10.0, reads_max: 6, gap_max: Duration::from_millis(300) });
    c.kernel.checkpoint_slots = 16;
    c.kernel.checkpoint_jitter = Duration::ZERO;
    c.crashes = Some(Crashes {
        mean_interval: Duration::from_secs(3),
        down_min: Duration::from_millis(200),
        down_max: Duration::from_secs(2),
    });
    c
}

fn watch(seed: u64) -> ClusterConfig {
    let workload = Workload::new(Arrivals::Open { rate_per_s: 100.0 }, Mix::creates_and_blind_updates());
    let mut c = ClusterConfig::new(seed, 1, GcsConfig::of(ProfileKind::Gcs), workload);
    c.followers = 1;
    c.duration = Duration::from_secs(10);
    // More single-member slots than a replica indexes (16,384), so a cursor at 0 is past
    // them and one a few thousand back is inside them but past the ring.
    c.preload_documents = 16_600;
    c.preload_members_per_slot = 1;
    c.kernel.replay_gets_max = 256;
    c.watchers = Some(WatchLoad {
        per_node: 2,
        session_mean: Duration::from_secs(2),
        pause_max: Duration::from_millis(500),
        credit: 1_024,
        consume_max: Duration::from_millis(200),
        old_cursor_rate: 0.3,
        old_cursor_back_max: 12_000,
        followers_only: false,
        delivery_slack: None,
    });
    c
}

/// The slack `watchpoll` states on top of the poll interval: a poll reads the slots it
/// finds one by one (a stat and a read each, about 40 to 50 ms on the gcs profile), and
/// at 4 writes/s a 5 s poll finds at most about 20 slots, about 1 s; 2 s leaves room for
/// the jitter and the delivery.
pub const WATCHPOLL_SLACK: Duration = Duration::from_secs(2);

/// Watches without hints (issue 19): a follower that takes no writes, serves no reads and
/// hears no hint has only the backstop poll to advance its watcher, which must see every
/// event within the poll interval plus [`WATCHPOLL_SLACK`].
fn watchpoll(seed: u64) -> ClusterConfig {
    let workload = Workload::new(Arrivals::Open { rate_per_s: 4.0 }, Mix::creates_and_blind_updates());
    let mut c = ClusterConfig::new(seed, 2, GcsConfig::of(ProfileKind::Gcs), workload);
    c.followers = 1;
    c.duration = Duration::from_secs(30);
    c.hints.follower_loss_rate = 1.0;
    c.watchers = Some(WatchLoad {
        per_node: 1,
        // One session for the whole run, with credit to spare.
        session_mean: 10 * c.duration,
        pause_max: Duration::ZERO,
        credit: 1_024,
        consume_max: Duration::from_millis(10),
        old_cursor_rate: 0.0,
        old_cursor_back_max: 0,
        followers_only: true,
        delivery_slack: Some(WATCHPOLL_SLACK),
    });
    c
}
