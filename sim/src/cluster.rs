//! The deterministic multi-replica harness: a discrete-event loop over virtual time that
//! drives many kernels against one simulated GCS, with writers, readers, watchers,
//! commit hints between replicas, crashes and restarts.
//!
//! One seed decides everything: the store's latencies and faults, the workload, the
//! crashes, the hints' delays and losses, the replicas' own seeds, and the order of
//! events that fall on the same microsecond (ties are broken by a draw, not by insertion
//! order). The same (configuration, seed, code) gives the same trace hash on every machine.

use crate::ambiguity::AmbiguityWatch;
use crate::gcs::{AtRestDamage, GcsConfig, PlannedReply, SimGcs, StoreStats};
use crate::liveness::{LivenessBudget, LivenessWatch, NotLive};
use crate::pause::{Gone, Pause, Paused, Stall, StallAt};
use crate::rng::SimRng;
use crate::time::{micros, millis, millis_f64};
use crate::workload::{Arrivals, Generator, ReadLoad, ViewLoad, WatchLoad, Workload};
use bytes::Bytes;
use core::time::Duration;
use rustc_hash::FxHashMap;
use slotlog_kernel::blob::{BlobOp, BlobResult};
use slotlog_kernel::checkpoint::fold;
use slotlog_kernel::format::{encode_body, Checkpoint, Keys, Marker, Slot, SLOT_MEMBERS_MAX};
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::{BlobOpId, RequestId, StoreId, ViewId, WorldId};
use slotlog_kernel::reply::{FailReason, ReadError, Reply};
use slotlog_kernel::time::Instant;
use slotlog_kernel::world::{evaluate, validate, Evaluation, Receipt, ReceiptKey, WorldState, Write};
use slotlog_kernel::{
    CollectorStats, CommitterStats, CompactorStats, Config, Effect, FeedStats, Identity, Input, Marks,
    ReadStats, Replica, Request, Warning, WatchEnd, WriteError, WriteOk,
};
use slotlog_model::{
    ClientOp, History, NameChange, NameHistory, Outcome, ReadOp, ReadOutcome, SessionEnd, StoredObject,
    WatchSession,
};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// Random crashes: each live replica (while another stays up) crashes at this mean
/// interval across the cluster, and comes back after a pause.
#[derive(Clone, Debug, PartialEq)]
pub struct Crashes {
    /// The mean time between crashes (exponentially distributed), cluster-wide.
    pub mean_interval: Duration,
    /// How long a crashed replica stays down, drawn uniformly between these in whole ms.
    pub down_min: Duration,
    /// See `down_min`.
    pub down_max: Duration,
}

/// The writer of the preloaded slots and marker: no replica's (a replica's store id is its
/// node in the high half and its incarnation in the low), so every replica sees the
/// preload as a peer's slots, as a store joining a world others wrote does.
const PRELOAD_STORE_ID: StoreId = StoreId(u64::MAX);

/// How commit hints (`Effect::Committed`) travel between replicas.
#[derive(Clone, Debug, PartialEq)]
pub struct Hints {
    /// A hint is lost with this probability, per receiving replica.
    pub loss_rate: f64,
    /// The same for followers, which may be cut off from hints entirely.
    pub follower_loss_rate: f64,
    /// A hint that arrives takes between these to arrive, drawn uniformly.
    pub delay_min: Duration,
    /// See `delay_min`.
    pub delay_max: Duration,
    /// Forged hints (docs/SECURITY.md): a party on the network between replicas, with no
    /// hint key to stop it, sends every replica this many hints a second while the
    /// clients write, each naming a sequence 1 to `flood_ahead` past the newest one it
    /// overheard in a real hint. 0 (the default): none, and nothing of the run changes.
    pub flood_per_s: u64,
    /// See `flood_per_s`: how far past the overheard tip a forged hint names.
    pub flood_ahead: u64,
}

impl Default for Hints {
    fn default() -> Self {
        Hints {
            loss_rate: 0.0,
            follower_loss_rate: 0.0,
            delay_min: Duration::from_millis(1),
            delay_max: Duration::from_millis(5),
            flood_per_s: 0,
            flood_ahead: 0,
        }
    }
}

/// Which object of the newest full checkpoint a cold start finds damaged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DamagedObject {
    /// The checkpoint object itself (`checkpoints/<next sequence>`).
    Checkpoint,
    /// The root the checkpoint names (`roots/<hash>`).
    Root,
}

/// What [`ClusterConfig::damage_at_open`] did over the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DamageCounts {
    /// Cold starts that found the newest full checkpoint damaged.
    pub damaged: u32,
    /// Of those, the ones whose replica skipped a checkpoint and opened from an older
    /// full one (not checkpoint zero) while the damage was in place.
    pub opened_from_older: u32,
    /// Damage undone once its replica had opened, failed or gone down again.
    pub repaired: u32,
    /// Damage left as it was because a write or a delete had replaced the object since.
    pub replaced: u32,
}

#[derive(Clone, Debug)]
/// Everything one simulated run is made of: the replicas and their configuration, the
/// store, the workload and every disturbance. With the seed, it fixes the run.
pub struct ClusterConfig {
    /// Seeds every random choice of the run (the store's, the workload's, the chaos').
    pub seed: u64,
    /// Replicas that take writes.
    pub replicas: usize,
    /// Replicas that take no writes (readers and watchers only).
    pub followers: usize,
    /// The followers are read-only replicas (`Config::read_only`): they never create,
    /// rewrite or delete (the kernel asserts it at every call) and write no checkpoint.
    pub followers_read_only: bool,
    /// The simulated store: its profile, faults, listings and version tokens.
    pub gcs: GcsConfig,
    /// The kernel configuration every replica runs with.
    pub kernel: Config,
    /// The compaction role of the replicas that take writes, when not the kernel
    /// config's (followers keep that one): `backstop` writers beside an eager follower.
    pub writers_role: Option<slotlog_kernel::CompactionRole>,
    /// What the clients write, and how fast.
    pub workload: Workload,
    /// Readers, if any, and how fast they read.
    pub reads: Option<ReadLoad>,
    /// Views, if any: clients pinning one state and reading it several times.
    pub views: Option<ViewLoad>,
    /// Watchers, if any, and how they come and go.
    pub watchers: Option<WatchLoad>,
    /// How commit hints travel between replicas.
    pub hints: Hints,
    /// Clients send writes for this long.
    pub duration: Duration,
    /// Documents written into the log before the run, and how many to a slot.
    pub preload_documents: usize,
    /// See `preload_documents`.
    pub preload_members_per_slot: usize,
    /// After the preloaded slots, a full checkpoint of them too, made by the kernel's own
    /// `fold`: replicas open from it instead of replaying the preload (the `gate`
    /// scenario's million documents).
    pub preload_checkpoint: bool,
    /// The clients start once every replica has opened, and the run's duration counts
    /// from then: a world whose open takes seconds (a million documents) is measured as
    /// it serves, not as it opens.
    pub clients_wait_for_open: bool,
    /// The bucket starts empty: the replicas make the world themselves, racing their
    /// geneses (marker, then checkpoint zero) through the store's faults. Needs
    /// `preload_documents` 0.
    pub empty_bucket: bool,
    /// Random crashes and restarts, if any.
    pub crashes: Option<Crashes>,
    /// A replica paused once for a long time, and one stalled at a slot create.
    pub pause: Option<Pause>,
    /// A replica stopped for good.
    pub gone: Option<Gone>,
    /// Clock-stopped stalls at chosen calls, each striking once.
    pub stalls: Vec<Stall>,
    /// Each replica's clock runs ahead of true time by up to this much.
    pub clock_skew_max: Duration,
    /// After the clients stop, how long the run may take to settle every write.
    pub settle_max: Duration,
    /// The world's key prefix in the bucket.
    pub prefix: String,
    /// Just before each cold start (a restart after a crash or a reopen), this object of
    /// the newest full checkpoint is damaged at rest, so the replica must open from an
    /// older one (SPEC 10.12). Once that replica has opened (or failed, or gone down) the
    /// bytes are put back, so the checker judges the bucket the replicas wrote. One
    /// damage is in place at a time; peers that read it meanwhile meet it as they would
    /// real damage.
    pub damage_at_open: Option<DamagedObject>,
    /// Past these bounds a run is stopped as not live, with a verdict.
    pub liveness: LivenessBudget,
}

impl ClusterConfig {
    /// A run of `replicas` writing stores over `gcs` under `workload`, seeded by `seed`:
    /// no followers, readers, watchers or disturbances, 10 s of writes, the kernel's
    /// default configuration.
    pub fn new(seed: u64, replicas: usize, gcs: GcsConfig, workload: Workload) -> ClusterConfig {
        ClusterConfig {
            seed,
            replicas,
            followers: 0,
            followers_read_only: false,
            writers_role: None,
            gcs,
            kernel: Config::default(),
            workload,
            reads: None,
            views: None,
            watchers: None,
            hints: Hints::default(),
            duration: Duration::from_secs(10),
            preload_documents: 0,
            preload_members_per_slot: SLOT_MEMBERS_MAX,
            preload_checkpoint: false,
            clients_wait_for_open: false,
            empty_bucket: false,
            crashes: None,
            pause: None,
            gone: None,
            stalls: Vec::new(),
            clock_skew_max: Duration::ZERO,
            settle_max: Duration::from_secs(60),
            prefix: "worlds/sim".to_string(),
            damage_at_open: None,
            liveness: LivenessBudget::default(),
        }
    }

    fn nodes(&self) -> usize {
        self.replicas + self.followers
    }
}

/// What one replica did over the run, all incarnations together.
#[derive(Clone, Debug, Default)]
pub struct ReplicaReport {
    /// The committer's counters.
    pub stats: CommitterStats,
    /// The reads' counters.
    pub reads: ReadStats,
    /// The views' counters, summed over incarnations (`images_held` the most one held).
    pub views: slotlog_kernel::ViewStats,
    /// Body search's counters.
    pub search: slotlog_kernel::search::SearchStats,
    /// The change feed's counters.
    pub feed: FeedStats,
    /// Times the replica crashed.
    pub crashes: u32,
    /// Why it failed closed, if it did (and was not reopened).
    pub failed: Option<FailReason>,
    /// Every warning it gave.
    pub warnings: Vec<Warning>,
    /// The compactor's counters.
    pub compactor: CompactorStats,
    /// The collector's counters.
    pub collector: CollectorStats,
    /// Times the replica failed closed asking to be reopened (a create refused below
    /// collection) and was.
    pub reopened: u32,
    /// Times the replica came back unconfirmed past the reload age and was reopened from
    /// the newest checkpoint (the reload rule).
    pub reloads: u32,
    /// Whether it took no writes.
    pub follower: bool,
    /// Commit hints it sent.
    pub hints_sent: u64,
    /// The rare branches the replica took (the kernel's coverage marks).
    pub marks: Marks,
    /// The longest a slot create of this replica, answered with an error that may have
    /// applied (a timeout, a 5xx), waited for a definitive answer on its name (a read,
    /// or a create again, answered with something other than such an error). Taken from
    /// the calls the harness carried, not from the kernel: the ambiguity bound.
    pub ambiguous_open_us_max: u64,
    /// The longest the replica held writes without answering one on its merits (the
    /// starvation rule's measure, from the harness's own record of its requests), ms,
    /// sampled once a virtual second.
    pub starved_ms_max: u64,
    /// A follower's apply lag, µs: for every slot created after it opened, from the
    /// slot's landing in the store to the follower holding it in its snapshot. Taken from
    /// the store's record and the follower's world, not from the kernel's own counters.
    pub apply_lag_us: Vec<u64>,
}

/// What a run did, for the checker and the report.
pub struct RunResult {
    /// Every client call with its answer, and the store's record of every name.
    pub history: History,
    /// The objects under the world's prefix when the run ended.
    pub objects: Vec<StoredObject>,
    /// The world's keys.
    pub keys: Keys,
    /// The world the replicas wrote.
    pub world_id: WorldId,
    /// When the clients stopped.
    pub workload_end: Instant,
    /// When the clients started: zero, or when every replica had opened
    /// (`clients_wait_for_open`).
    pub workload_start: Instant,
    /// When the run ended: settled, out of settle time, or stopped as not live.
    pub end: Instant,
    /// The hash of the run's trace: the same for the same configuration, seed and code.
    pub trace_hash: Hash32,
    /// What each replica did, all its incarnations together.
    pub replicas: Vec<ReplicaReport>,
    /// What the store did.
    pub store: StoreStats,
    /// Writes and reads still unanswered when the settle time ran out.
    pub unsettled: usize,
    /// Version records and ledger sizes the replicas held, sampled.
    pub memory: MemorySamples,
    /// When some replica was writing a checkpoint (folding, reading blocks or creating
    /// objects), as `[from, to)` spans in order of their start; spans may overlap.
    pub checkpoint_spans: Vec<(Instant, Instant)>,
    /// Objects damaged before cold starts, and how the openers met them.
    pub damage: DamageCounts,
    /// Why the run was stopped before its deadline, if it was.
    pub not_live: Option<NotLive>,
}

/// Version records the replicas held, sampled once a virtual second (the largest replica
/// each time): what a checkpoint must bound.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemorySamples {
    /// The most at any sample.
    pub resident_version_records_max: u64,
    /// At 120 virtual seconds (None if the run was shorter).
    pub resident_version_records_120s: Option<u64>,
    /// At the end of the run.
    pub resident_version_records_end: u64,
    /// The most slots and documents any replica's compactor ledger held (SPEC 10.11), and
    /// at the end: bounded by the changes since the newest checkpoint, not by the world.
    pub ledger_slots_max: u64,
    /// See `ledger_slots_max`.
    pub ledger_documents_max: u64,
    /// See `ledger_slots_max`.
    pub ledger_slots_end: u64,
    /// See `ledger_slots_max`.
    pub ledger_documents_end: u64,
    /// The next sample is due at this many virtual seconds.
    next_s: u64,
}

#[derive(Clone, Debug)]
enum Event {
    /// A client sends a write: an open-loop arrival, or a closed-loop writer's next.
    Arrival {
        writer: Option<usize>,
    },
    ReadArrival {
        exact: bool,
    },
    /// A client opens a view and makes its first read.
    ViewStart,
    /// A view's next read, or its release once it has made them all.
    ViewNext {
        view: usize,
    },
    Apply {
        ticket: u64,
    },
    Reply {
        ticket: u64,
    },
    Wake {
        node: usize,
        incarnation: u32,
    },
    Hint {
        node: usize,
        incarnation: u32,
        sequence: u64,
    },
    /// The next round of forged hints (`Hints::flood_per_s`), one to every live replica.
    Flood,
    Crash,
    Restart {
        node: usize,
    },
    /// The replica stops for good (`ClusterConfig::gone`).
    Gone {
        node: usize,
    },
    /// A replica stops taking input and sending calls for `length`, then resumes.
    Pause {
        node: usize,
        length: Duration,
    },
    Resume {
        node: usize,
    },
    /// A replica that failed closed asking to be reopened is stopped and started again.
    Reopen {
        node: usize,
    },
    WatchStart {
        watcher: usize,
    },
    WatchStop {
        watcher: usize,
        session: usize,
    },
    WatchCredit {
        watcher: usize,
        session: usize,
        events: u32,
    },
}

struct Ticket {
    node: usize,
    incarnation: u32,
    id: BlobOpId,
    op: BlobOp,
    planned: PlannedReply,
    result: Option<BlobResult>,
    /// The apply is still to come.
    applying: bool,
    /// The reply is still to come.
    replying: bool,
}

/// A client's view: the replica it reads, the state its first read pinned, and the
/// reads it has left to make.
#[derive(Debug)]
struct SimView {
    node: usize,
    incarnation: u32,
    pinned: Option<u64>,
    reads_left: u64,
}

/// A request in flight at a replica, by what it is.
#[derive(Clone, Copy, Debug)]
enum InFlight {
    Write(usize),
    Read(usize),
    Watch { watcher: usize, session: usize },
}

struct Node {
    replica: Option<Replica>,
    incarnation: u32,
    /// The replica's clock minus true time.
    skew_us: u64,
    /// True time the replica's clock did not see: it was suspended (a stall), and a
    /// monotonic clock does not count a suspend.
    frozen_us: u64,
    /// True time of the wake-up scheduled for the replica, if any.
    wake_at: Option<Instant>,
    requests: BTreeMap<RequestId, InFlight>,
    report: ReplicaReport,
    /// Since when the replica has been writing a checkpoint.
    checkpointing_since: Option<Instant>,
    paused: Paused,
    /// Stopped for good: never restarted.
    gone: bool,
    /// The ambiguous slot creates this incarnation still has to settle.
    ambiguity: AmbiguityWatch,
    /// Since when the replica has held writes and answered none of them on its merits
    /// (the liveness watch's starvation rule).
    starving_since: Option<Instant>,
    /// The sequence this incarnation's world held when last looked at (None before it
    /// opened): a follower's apply lag is counted for the slots past it.
    applied_through: Option<u64>,
}

struct Watcher {
    node: usize,
    /// The session open now, and the request naming it.
    session: Option<(usize, RequestId)>,
    /// The last sequence this watcher has seen, across sessions.
    seen: u64,
}

struct Cluster<'a> {
    config: &'a ClusterConfig,
    keys: Keys,
    /// Which of the configured stalls have struck (each strikes once a run).
    stalls_struck: Vec<bool>,
    world_id: WorldId,
    now: Instant,
    queue: BinaryHeap<Reverse<(Instant, u64, u64)>>,
    /// Each queued event by its serial. Looked up, never walked, so a hash map: as a
    /// B-tree, with the tickets below, it was 2% of a `faults` run.
    events: FxHashMap<u64, Event>,
    next_serial: u64,
    tiebreak: SimRng,
    chaos: SimRng,
    /// Draws the forged hints' sequences: a stream of its own, so a run without a flood
    /// draws exactly what it drew before.
    flood: SimRng,
    /// The newest sequence a real hint carried: what a party on the network overhears.
    overheard_through: u64,
    gcs: SimGcs,
    /// Each blob call in flight by its ticket: looked up, never walked.
    tickets: FxHashMap<u64, Ticket>,
    next_ticket: u64,
    nodes: Vec<Node>,
    generator: Generator,
    history: History,
    writes: Vec<Write>,
    writer_node: Vec<usize>,
    request_writer: BTreeMap<RequestId, usize>,
    watchers: Vec<Watcher>,
    views: Vec<SimView>,
    next_request: u64,
    trace: TraceHasher,
    /// Where each traced event also goes, when the caller asked to see them.
    trace_sink: Option<&'a mut (dyn FnMut(&TraceEvent<'_>) + 'a)>,
    workload_end: Instant,
    /// When the clients started (zero unless they waited for the replicas to open).
    workload_start: Instant,
    /// The clients wait for every replica to open (`clients_wait_for_open`).
    clients_waiting: bool,
    /// Whether the settle phase has begun: the clients stopped at `workload_end`, and from
    /// the first event past it the bucket injects no fault (see [`Cluster::calm`]).
    calm: bool,
    memory: MemorySamples,
    checkpoint_spans: Vec<(Instant, Instant)>,
    /// The damage in place, and the replica whose cold start it was made for.
    damage: Option<(usize, AtRestDamage)>,
    damage_counts: DamageCounts,
    liveness: LivenessWatch,
    not_live: Option<NotLive>,
    /// When each slot landed in the store, by its first sequence; kept only when the run
    /// has followers, whose apply lag it measures.
    slots_landed: BTreeMap<u64, Instant>,
}

/// One event of the trace the run's `trace_hash` is computed over: the virtual time, then
/// the numbers (the first says what happened, see `slotlog run --trace`) and the text,
/// hashed in that order as little-endian u64s and UTF-8 bytes.
#[derive(Clone, Copy, Debug)]
pub struct TraceEvent<'e> {
    /// Virtual microseconds since the run began.
    pub at_us: u64,
    /// What happened (the first number) and to what.
    pub parts: &'e [u64],
    /// Anything said in words (an answer, a reason).
    pub text: &'e str,
}

impl TraceEvent<'_> {
    /// Feeds this event to a trace hasher exactly as the run does.
    pub fn hash_into(&self, hasher: &mut blake3::Hasher) {
        hasher.update(&self.at_us.to_le_bytes());
        for p in self.parts {
            hasher.update(&p.to_le_bytes());
        }
        hasher.update(self.text.as_bytes());
    }
}

/// The run's trace hasher: the same bytes [`TraceEvent::hash_into`] feeds, gathered in a
/// buffer and handed to BLAKE3 in large pieces. A hash does not depend on how its input
/// is split, and one `update` of 64 KiB costs far less than thousands of 8-byte ones (and
/// takes BLAKE3's many-chunk SIMD path).
#[derive(Default)]
struct TraceHasher {
    hasher: blake3::Hasher,
    buffer: Vec<u8>,
}

/// Bytes gathered before they go to the hasher.
const TRACE_BUFFER_BYTES_MAX: usize = 64 * 1024;

impl TraceHasher {
    /// Appends an event's time and numbers; its text follows through `fmt::Write`.
    fn begin(&mut self, at_us: u64, parts: &[u64]) {
        if self.buffer.len() >= TRACE_BUFFER_BYTES_MAX {
            self.hasher.update(&self.buffer);
            self.buffer.clear();
        }
        self.buffer.extend_from_slice(&at_us.to_le_bytes());
        for p in parts {
            self.buffer.extend_from_slice(&p.to_le_bytes());
        }
    }

    fn finalize(mut self) -> Hash32 {
        self.hasher.update(&self.buffer);
        self.buffer.clear();
        Hash32(*self.hasher.finalize().as_bytes())
    }
}

impl core::fmt::Write for TraceHasher {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.buffer.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// Runs the cluster `config` describes to its end (the workload's end plus the settle
/// time, or a liveness stop) and returns what it did.
pub fn run(config: &ClusterConfig) -> RunResult {
    run_inner(config, None)
}

/// [`run`], handing every traced event to `sink` as it happens.
pub fn run_traced(config: &ClusterConfig, sink: &mut dyn FnMut(&TraceEvent<'_>)) -> RunResult {
    run_inner(config, Some(sink))
}

/// About how many writes a run issues, preloaded ones included: an open workload's rate
/// over the run, a quarter more for its draws. The two records of every write are sized
/// for it once, rather than doubled and copied (fresh memory each time) as they grow: a
/// reserve only takes address space until it is written. Closed workloads are paced by
/// their answers: those records grow as they go.
fn writes_expected(config: &ClusterConfig) -> usize {
    let open = match config.workload.arrivals {
        Arrivals::Open { rate_per_s } => rate_per_s * config.duration.as_secs_f64() * 1.25,
        Arrivals::Closed { .. } => 0.0,
    };
    config.preload_documents + (open.clamp(0.0, WRITES_RESERVED_MAX as f64) as usize)
}

/// The most writes [`writes_expected`] reserves for, whatever the rate says.
const WRITES_RESERVED_MAX: usize = 1 << 20;

fn run_inner<'a>(
    config: &'a ClusterConfig,
    trace_sink: Option<&'a mut (dyn FnMut(&TraceEvent<'_>) + 'a)>,
) -> RunResult {
    assert!(config.replicas > 0, "a cluster needs a replica that writes");
    let keys = Keys::new(&config.prefix);
    let kept_prefixes = vec![keys.log_prefix(), keys.checkpoints_prefix(), keys.roots_prefix()];
    let mut seeds = SimRng::derive(config.seed, "slotlog-sim cluster");
    let mut world_bytes = [0u8; 16];
    world_bytes[..8].copy_from_slice(&seeds.next_u64().to_le_bytes());
    world_bytes[8..].copy_from_slice(&seeds.next_u64().to_le_bytes());
    let stalls_struck = vec![false; config.stalls.len()];
    let writes_expected = writes_expected(config);
    let mut c = Cluster {
        config,
        keys,
        stalls_struck,
        world_id: WorldId(world_bytes),
        now: Instant::ZERO,
        queue: BinaryHeap::new(),
        events: FxHashMap::default(),
        next_serial: 0,
        tiebreak: SimRng::derive(config.seed, "slotlog-sim ties"),
        chaos: SimRng::derive(config.seed, "slotlog-sim chaos"),
        flood: SimRng::derive(config.seed, "slotlog-sim hint flood"),
        overheard_through: 0,
        gcs: SimGcs::new(config.gcs, config.seed),
        tickets: FxHashMap::default(),
        next_ticket: 0,
        nodes: Vec::new(),
        generator: Generator::new(config.workload.clone(), config.seed),
        history: History {
            // Slots, checkpoints and roots keep their bytes: the checker judges the whole
            // log and what kept checkpoints reach after collection deleted them.
            names: Some(NameHistory::keeping_bytes_under(kept_prefixes)),
            ops: Vec::with_capacity(writes_expected),
            ..History::default()
        },
        writes: Vec::with_capacity(writes_expected),
        writer_node: Vec::new(),
        request_writer: BTreeMap::new(),
        watchers: Vec::new(),
        views: Vec::new(),
        next_request: 0,
        trace: TraceHasher::default(),
        trace_sink,
        workload_end: Instant::ZERO + config.duration,
        workload_start: Instant::ZERO,
        clients_waiting: config.clients_wait_for_open,
        calm: false,
        memory: MemorySamples::default(),
        checkpoint_spans: Vec::new(),
        damage: None,
        damage_counts: DamageCounts::default(),
        liveness: LivenessWatch::new(config.liveness),
        not_live: None,
        slots_landed: BTreeMap::new(),
    };
    c.preload();
    for n in 0..config.nodes() {
        let skew_us_max = micros(config.clock_skew_max);
        let skew_us = if skew_us_max == 0 { 0 } else { c.chaos.below(skew_us_max) };
        let report = ReplicaReport { follower: n >= config.replicas, ..ReplicaReport::default() };
        c.nodes.push(Node {
            replica: None,
            incarnation: 0,
            skew_us,
            frozen_us: 0,
            wake_at: None,
            requests: BTreeMap::new(),
            report,
            checkpointing_since: None,
            paused: Paused::default(),
            gone: false,
            ambiguity: AmbiguityWatch::default(),
            starving_since: None,
            applied_through: None,
        });
        c.start_node(n);
    }
    if !c.clients_waiting {
        c.start_clients();
    }
    if config.reads.is_some() {
        c.schedule(Instant::ZERO, Event::ReadArrival { exact: true });
        c.schedule(Instant::ZERO, Event::ReadArrival { exact: false });
    }
    if config.views.is_some() {
        c.schedule(Instant::ZERO, Event::ViewStart);
    }
    if let Some(w) = &config.watchers {
        let first = if w.followers_only { config.replicas } else { 0 };
        for n in first..config.nodes() {
            for _ in 0..w.per_node {
                let watcher = c.watchers.len();
                c.watchers.push(Watcher { node: n, session: None, seen: 0 });
                let at = Instant::ZERO + ms(c.chaos.uniform(0.0, millis_f64(w.pause_max)));
                c.schedule(at, Event::WatchStart { watcher });
            }
        }
    }
    if let Some(p) = config.pause {
        c.schedule(Instant::ZERO + p.at, Event::Pause { node: p.node, length: p.length });
    }
    if let Some(g) = config.gone {
        c.schedule(Instant::ZERO + g.at, Event::Gone { node: g.node });
    }
    if let Some(cr) = &config.crashes {
        let first = Instant::ZERO + ms(c.chaos.exponential(millis_f64(cr.mean_interval)));
        c.schedule(first, Event::Crash);
    }
    let settle = config.settle_max;
    while let Some(Reverse((at, _, serial))) = c.queue.pop() {
        if at > c.workload_end + settle {
            break;
        }
        let event = c.events.remove(&serial).expect("every queued serial has an event");
        if c.is_stale(&event, at) {
            continue;
        }
        if let Err(stop) = c.liveness.on_event(at, c.events.len()) {
            c.not_live = Some(stop);
            break;
        }
        c.now = at;
        if !c.calm && !c.clients_waiting && at >= c.workload_end {
            c.calm();
        }
        c.sample_memory();
        if c.not_live.is_some() {
            break;
        }
        c.step(event);
    }
    c.finish()
}

fn ms(v: f64) -> Duration {
    Duration::from_micros((v * 1_000.0) as u64)
}

impl Cluster<'_> {
    /// The clients begin: the first arrival (open loop) or every writer's first (closed).
    fn start_clients(&mut self) {
        self.clients_waiting = false;
        self.workload_start = self.now;
        self.workload_end = self.now + self.config.duration;
        match self.config.workload.arrivals {
            Arrivals::Open { .. } => self.schedule(self.now, Event::Arrival { writer: None }),
            Arrivals::Closed { writers_per_replica } => {
                for n in 0..self.config.replicas {
                    for _ in 0..writers_per_replica {
                        let w = self.writer_node.len();
                        self.writer_node.push(n);
                        self.schedule(self.now, Event::Arrival { writer: Some(w) });
                    }
                }
            }
        }
        if self.config.hints.flood_per_s > 0 {
            self.schedule(self.now, Event::Flood);
        }
    }

    /// Sends every live replica a forged hint a little past the overheard tip, and
    /// schedules the next round while the clients write.
    fn flood(&mut self) {
        if self.now >= self.workload_end {
            return;
        }
        let h = &self.config.hints;
        let ahead = h.flood_ahead.max(1);
        for node in 0..self.nodes.len() {
            if self.nodes[node].replica.is_none() {
                continue;
            }
            let sequence = self.overheard_through + 1 + self.flood.below(ahead);
            self.trace(&[21, node as u64, sequence], "");
            self.input(node, Input::Follow { sequence });
        }
        let period_us = (1_000_000 / self.config.hints.flood_per_s).max(1);
        self.schedule(self.now + Duration::from_micros(period_us), Event::Flood);
    }

    /// The settle phase (issue 13): once the clients have stopped, the bucket stops
    /// injecting faults (its profile's latency, write envelope and listing order stay; no
    /// crash comes after the workload either), so "every queued write settles" becomes a
    /// checked claim: the starvation rule holds every replica from here on, in every
    /// scenario, and whatever is still unanswered at the settle deadline is a violation.
    fn calm(&mut self) {
        self.calm = true;
        self.gcs.calm();
        self.trace(&[20], "");
        for n in &mut self.nodes {
            // A wait that began under faults is judged from the calm on.
            n.starving_since = n.starving_since.map(|since| since.max(self.now));
        }
    }

    fn schedule(&mut self, at: Instant, event: Event) {
        self.next_serial += 1;
        let tie = self.tiebreak.next_u64();
        self.queue.push(Reverse((at, tie, self.next_serial)));
        self.events.insert(self.next_serial, event);
    }

    fn trace(&mut self, parts: &[u64], text: &str) {
        self.trace_fmt(parts, format_args!("{text}"));
    }

    /// Traces an event whose text is formatted straight into the trace buffer: the same
    /// bytes as `format!` and [`TraceEvent::hash_into`], without a `String` per event.
    fn trace_fmt(&mut self, parts: &[u64], text: core::fmt::Arguments<'_>) {
        use core::fmt::Write as _;
        let at_us = self.now.as_micros();
        self.trace.begin(at_us, parts);
        let text_from = self.trace.buffer.len();
        self.trace.write_fmt(text).expect("formatting into a buffer cannot fail");
        if let Some(sink) = self.trace_sink.as_mut() {
            let text = std::str::from_utf8(&self.trace.buffer[text_from..]).expect("only text is written");
            sink(&TraceEvent { at_us, parts, text });
        }
    }

    /// Traces a committed write's answer: the text `trace_fmt` gives it, written as bytes.
    fn trace_committed(&mut self, parts: &[u64], receipt: &Receipt) {
        let at_us = self.now.as_micros();
        self.trace.begin(at_us, parts);
        let text_from = self.trace.buffer.len();
        crate::trace_text::push_committed(&mut self.trace.buffer, receipt);
        if let Some(sink) = self.trace_sink.as_mut() {
            let text = std::str::from_utf8(&self.trace.buffer[text_from..]).expect("only text is written");
            sink(&TraceEvent { at_us, parts, text });
        }
    }

    fn kernel_now(&self, node: usize) -> Instant {
        let n = &self.nodes[node];
        Instant::from_micros(self.now.as_micros() + n.skew_us - n.frozen_us)
    }

    /// Replicas clients can reach: running and not paused (a load balancer stops sending
    /// to one that stopped answering).
    fn live(&self, writers_only: bool) -> Vec<usize> {
        let n = if writers_only { self.config.replicas } else { self.nodes.len() };
        (0..n).filter(|&i| self.nodes[i].replica.is_some() && !self.nodes[i].paused.is_paused()).collect()
    }

    fn pick(&mut self, from: &[usize]) -> Option<usize> {
        (!from.is_empty()).then(|| from[self.chaos.below(from.len() as u64) as usize])
    }

    /// Writes the preloaded documents straight into the bucket: a marker and full slots,
    /// built with the kernel's own rules. No checkpoint zero, as a genesis that stopped
    /// after the marker (or an older build) leaves a world: every run's replicas race to
    /// make it on opening, through whatever faults the store injects.
    fn preload(&mut self) {
        if self.config.empty_bucket {
            assert_eq!(self.config.preload_documents, 0, "an empty bucket holds no preloaded documents");
            return;
        }
        let writes = self.generator.preload(self.config.preload_documents);
        // The world takes the merge rule its replicas are configured with, as a genesis by
        // one of them would.
        let merge_rule = slotlog_kernel::checkpoint::MergeRule::of(&self.config.kernel);
        let marker = Marker { world_id: self.world_id, created_by: PRELOAD_STORE_ID, merge_rule };
        let marker_bytes = Bytes::from(marker.encode());
        let marker_hash = Hash32::of(&marker_bytes);
        let mut world = WorldState::genesis(self.world_id, marker_hash);
        self.put(self.keys.marker(), marker_bytes);
        for chunk in writes.chunks(self.config.preload_members_per_slot.clamp(1, SLOT_MEMBERS_MAX)) {
            let mut members = Vec::new();
            let mut overlay = slotlog_kernel::world::Overlay::new(world.sequence());
            for (w, body) in chunk {
                let valid = validate(&w.mutation).expect("preloaded writes are valid");
                let layers = [&overlay];
                let view = slotlog_kernel::world::Layered::new(&world, &layers);
                let Evaluation::Applied { member, .. } = evaluate(&view, w.op_id, &valid, 0, &|_| None)
                else {
                    panic!("a preloaded write applies");
                };
                overlay.apply(&member);
                // The body's name from the hash `validate` took of it above, not a second one
                // (the checker's model hashes it on its own and must find the same).
                let body_hash =
                    member.version.as_ref().expect("a preloaded publish makes a version").body_hash;
                members.push(member);
                self.put(self.keys.body(&body_hash), Bytes::from(encode_body(body)));
            }
            let slot = Slot {
                world_id: self.world_id,
                first_sequence: world.next_sequence(),
                store_id: PRELOAD_STORE_ID,
                prev_hash: world.tip_hash(),
                members,
                bodies: Vec::new(),
            };
            let bytes = Bytes::from(slot.encode());
            world.apply_slot(&slot, Hash32::of(&bytes)).expect("the preload chains");
            self.put(self.keys.slot(slot.first_sequence), bytes);
        }
        if self.config.preload_checkpoint {
            self.preload_checkpoint(&world, marker_hash);
        }
        for (w, _) in writes {
            self.history.ops.push(ClientOp {
                replica: usize::MAX,
                op_id: w.op_id,
                mutation: w.mutation,
                invoked_at: Instant::ZERO,
                outcome: Outcome::Preloaded,
            });
        }
    }

    /// Checkpoint zero and the full checkpoint of the preloaded world, every object it
    /// names before it, as genesis and a compactor would have left them. The checker
    /// judges both like any other.
    fn preload_checkpoint(&mut self, world: &WorldState, marker_hash: Hash32) {
        let zero = Checkpoint::zero(self.world_id, marker_hash);
        self.put(self.keys.checkpoint(zero.next_sequence), Bytes::from(zero.encode()));
        let folded = fold(world, &|_| None).expect("a world built in memory holds every version");
        for object in folded.objects {
            self.put(object.key(&self.keys), object.bytes);
        }
        let checkpoint = Bytes::from(folded.checkpoint.encode());
        self.put(self.keys.checkpoint(folded.checkpoint.next_sequence), checkpoint);
    }

    fn put(&mut self, key: String, bytes: Bytes) {
        let op = BlobOp::Create { key, bytes };
        let result = self.gcs.apply(Instant::ZERO, &op);
        assert!(result.is_ok(), "preload into an empty bucket");
        record_name(&mut self.history, Instant::ZERO, &op, &result);
    }

    /// Samples the apply lag of the slots a follower's world gained since last looked at.
    /// The world it opened with is its baseline: those slots are not lag but history.
    fn follower_applied(&mut self, node: usize) {
        let Some(sequence) = self.nodes[node].replica.as_ref().and_then(|r| r.world()).map(|w| w.sequence())
        else {
            return;
        };
        let n = &mut self.nodes[node];
        match n.applied_through {
            None => n.applied_through = Some(sequence),
            Some(through) if sequence > through => {
                for (_, landed) in self.slots_landed.range(through + 1..=sequence) {
                    n.report.apply_lag_us.push((self.now - *landed).as_micros() as u64);
                }
                n.applied_through = Some(sequence);
            }
            Some(_) => {}
        }
    }

    fn start_node(&mut self, n: usize) {
        self.nodes[n].applied_through = None;
        let incarnation = self.nodes[n].incarnation;
        let rng_seed = self.chaos.next_u64();
        let identity = Identity {
            world_id: Some(self.world_id),
            store_id: StoreId(((n as u64) << 32) | u64::from(incarnation)),
            prefix: self.config.prefix.clone(),
            rng_seed,
            // From the run's seed, with no draw of its own, so traces stay as they were.
            receipt_key: ReceiptKey::from_seed(rng_seed),
        };
        let now = self.kernel_now(n);
        let mut kernel = self.config.kernel.clone();
        if let Some(role) = self.config.writers_role.filter(|_| n < self.config.replicas) {
            kernel.compaction = role;
        }
        if n >= self.config.replicas && self.config.followers_read_only {
            kernel.read_only = true;
        }
        // The harness is an embedder with a hint transport unless it loses every hint to
        // this node: as the driver does with peers configured, it turns the kernel's
        // blind probes off, and a lone replica never waits (docs/TURNS.md, "Without
        // hints"). Lost hints are still made up for by the evidence of peers' slots.
        let loss = if n < self.config.replicas {
            self.config.hints.loss_rate
        } else {
            self.config.hints.follower_loss_rate
        };
        if loss < 1.0 {
            kernel.blind_probe_slots = 0;
        }
        let replica = Replica::new(kernel, identity, now).expect("a valid kernel config");
        self.nodes[n].replica = Some(replica);
        self.trace(&[1, n as u64, u64::from(incarnation)], "start");
        self.drain(n);
    }

    /// A wake-up superseded by a later schedule, or an event for a replica incarnation
    /// that crashed.
    fn is_stale(&self, event: &Event, at: Instant) -> bool {
        match event {
            Event::Wake { node, incarnation } => {
                let n = &self.nodes[*node];
                n.incarnation != *incarnation || n.wake_at != Some(at)
            }
            Event::Hint { node, incarnation, .. } => self.nodes[*node].incarnation != *incarnation,
            _ => false,
        }
    }

    fn step(&mut self, event: Event) {
        match event {
            Event::Arrival { writer } => self.arrival(writer),
            Event::ReadArrival { exact } => self.read_arrival(exact),
            Event::ViewStart => self.view_start(),
            Event::ViewNext { view } => self.view_next(view),
            Event::Apply { ticket } => {
                let t = self.tickets.get_mut(&ticket).expect("ticket");
                let result = self.gcs.apply(self.now, &t.op);
                record_name(&mut self.history, self.now, &t.op, &result);
                if self.config.followers > 0 && result.is_ok() {
                    if let (BlobOp::Create { .. }, Some(first)) = (&t.op, self.keys.parse_slot(t.op.key())) {
                        self.slots_landed.entry(first).or_insert(self.now);
                    }
                }
                t.applying = false;
                if t.planned == PlannedReply::Applied {
                    t.result = Some(result.clone());
                }
                let done = !t.replying;
                let (tag, generation, size) = result_digest(&result);
                self.trace(&[2, ticket, tag, generation, size], "");
                if done {
                    self.tickets.remove(&ticket);
                }
            }
            Event::Reply { ticket } => {
                let t = self.tickets.get_mut(&ticket).expect("ticket");
                t.replying = false;
                let result = match t.planned {
                    PlannedReply::Applied => t.result.take().expect("applied before its reply"),
                    PlannedReply::Fault(e) => Err(e),
                };
                let (node, incarnation, id, op) = (t.node, t.incarnation, t.id, t.op.clone());
                if !t.applying {
                    self.tickets.remove(&ticket);
                }
                self.trace(&[3, ticket, node as u64], "");
                if self.nodes[node].incarnation == incarnation {
                    if self.keys.parse_slot(op.key()).is_some() {
                        self.nodes[node].ambiguity.on_answer(self.now, &op, &result);
                    }
                    self.input(node, Input::BlobDone { id, result });
                }
            }
            Event::Wake { node, .. } if self.nodes[node].paused.is_paused() => {
                self.nodes[node].wake_at = None;
            }
            Event::Pause { node, length } => self.pause(node, length),
            Event::Resume { node } => self.resume(node),
            Event::Reopen { node } => {
                if self.nodes[node].replica.is_some() {
                    self.take_down(node);
                    self.schedule(self.now, Event::Restart { node });
                }
            }
            Event::Wake { node, .. } => {
                self.nodes[node].wake_at = None;
                let now = self.kernel_now(node);
                if let Some(r) = self.nodes[node].replica.as_mut() {
                    r.handle_timeout(now);
                    self.drain(node);
                }
            }
            Event::Hint { node, sequence, .. } => {
                self.trace(&[11, node as u64, sequence], "");
                self.input(node, Input::Follow { sequence });
            }
            Event::Flood => self.flood(),
            Event::Crash => self.crash(),
            Event::Gone { node } => {
                self.trace(&[19, node as u64], "gone");
                self.nodes[node].gone = true;
                if self.nodes[node].replica.is_some() {
                    self.take_down(node);
                }
            }
            Event::Restart { node } if self.nodes[node].gone => {}
            Event::Restart { node } => {
                self.trace(&[6, node as u64], "restart");
                self.damage_newest_checkpoint(node);
                self.start_node(node);
                let writers: Vec<usize> =
                    (0..self.writer_node.len()).filter(|&w| self.writer_node[w] == node).collect();
                for w in writers {
                    if !self.request_writer.values().any(|&x| x == w) && self.now < self.workload_end {
                        self.schedule(self.now, Event::Arrival { writer: Some(w) });
                    }
                }
            }
            Event::WatchStart { watcher } => self.watch_start(watcher),
            Event::WatchStop { watcher, session } => self.watch_stop(watcher, session),
            Event::WatchCredit { watcher, session, events } => {
                let w = &self.watchers[watcher];
                if let Some((s, id)) = w.session {
                    if s == session {
                        let node = w.node;
                        self.input(node, Input::WatchCredit { id, events });
                    }
                }
            }
        }
    }

    /// Hands a live replica an input and carries out what it emits; a paused one keeps
    /// it for when it resumes.
    fn input(&mut self, node: usize, input: Input) {
        if self.nodes[node].paused.is_paused() {
            self.nodes[node].paused.inputs.push_back(input);
            return;
        }
        let now = self.kernel_now(node);
        if let Some(r) = self.nodes[node].replica.as_mut() {
            r.handle(now, input);
            self.drain(node);
        }
    }

    fn new_request(&mut self, node: usize, what: InFlight) -> RequestId {
        self.next_request += 1;
        let id = RequestId(self.next_request);
        self.nodes[node].requests.insert(id, what);
        id
    }

    fn arrival(&mut self, writer: Option<usize>) {
        if self.now >= self.workload_end {
            return;
        }
        let node = match writer {
            Some(w) => self.writer_node[w],
            None => {
                if let Some(start) = self.idle_until() {
                    self.schedule(start, Event::Arrival { writer: None });
                    return;
                }
                if let Arrivals::Open { rate_per_s } = self.config.workload.arrivals {
                    let gap = self.chaos.exponential(1_000.0 / rate_per_s);
                    self.schedule(self.now + ms(gap), Event::Arrival { writer: None });
                }
                let live = self.live(true);
                let Some(n) = self.pick(&live) else { return };
                n
            }
        };
        if self.nodes[node].replica.is_none() {
            return; // a writer on a crashed replica resumes at its restart
        }
        let write = self.generator.next_write();
        let index = self.history.ops.len();
        self.history.ops.push(ClientOp {
            replica: node,
            op_id: write.op_id,
            mutation: write.mutation.clone(),
            invoked_at: self.now,
            outcome: Outcome::Unanswered,
        });
        self.writes.push(write.clone());
        let request = self.new_request(node, InFlight::Write(index));
        self.nodes[node].starving_since.get_or_insert(self.now);
        if let Some(w) = writer {
            self.request_writer.insert(request, w);
        }
        self.trace(&[4, node as u64, write.op_id.as_u128() as u64], "");
        self.input(node, Input::Request { id: request, request: Request::Write(write) });
    }

    /// Between bursts: when the next one starts.
    fn idle_until(&self) -> Option<Instant> {
        let bursts = self.config.workload.bursts?;
        bursts.next_start(self.now)
    }

    fn read_arrival(&mut self, exact: bool) {
        if self.now >= self.workload_end {
            return;
        }
        let load = self.config.reads.clone().expect("reads configured");
        let rate = if exact { load.exact_per_s } else { load.catalog_per_s };
        if rate <= 0.0 {
            return;
        }
        if let Some(start) = self.idle_until() {
            self.schedule(start, Event::ReadArrival { exact });
            return;
        }
        let gap = self.chaos.exponential(1_000.0 / rate);
        self.schedule(self.now + ms(gap), Event::ReadArrival { exact });
        let live = self.live(exact && !load.exact_on_followers);
        let Some(node) = self.pick(&live) else { return };
        let read = self.generator.next_read(exact);
        self.send_read(node, read, None);
    }

    /// Sends `read` to `node`, as a read of view `view` if one is given.
    fn send_read(&mut self, node: usize, read: slotlog_kernel::Read, view: Option<usize>) {
        let index = self.history.reads.len();
        self.history.reads.push(ReadOp {
            replica: node,
            read: read.clone(),
            invoked_at: self.now,
            outcome: ReadOutcome::Unanswered,
            view,
        });
        let id = self.new_request(node, InFlight::Read(index));
        self.trace(&[12, node as u64, id.0], "");
        let request = match view {
            None => Request::Read(read),
            Some(v) => {
                let view = ViewId(v as u64 + 1);
                Request::ViewRead { view, pinned: self.views[v].pinned, read }
            }
        };
        self.input(node, Input::Request { id, request });
    }

    fn view_start(&mut self) {
        if self.now >= self.workload_end {
            return;
        }
        let load = self.config.views.clone().expect("views configured");
        let gap = self.chaos.exponential(1_000.0 / load.per_s);
        self.schedule(self.now + ms(gap), Event::ViewStart);
        let live = self.live(false);
        let Some(node) = self.pick(&live) else { return };
        let reads_left = 1 + self.chaos.below(load.reads_max.max(1));
        let incarnation = self.nodes[node].incarnation;
        let view = self.views.len();
        self.views.push(SimView { node, incarnation, pinned: None, reads_left });
        self.view_next(view);
    }

    /// The view's next read; once it has made them all, its release. A view ends with its
    /// replica's incarnation: a client whose replica restarted opens a new one.
    fn view_next(&mut self, view: usize) {
        let v = &self.views[view];
        let node = v.node;
        if self.nodes[node].incarnation != v.incarnation || self.nodes[node].replica.is_none() {
            return;
        }
        if v.reads_left == 0 {
            self.trace(&[20, node as u64, view as u64], "release");
            return self.input(node, Input::ViewRelease { view: ViewId(view as u64 + 1) });
        }
        self.views[view].reads_left -= 1;
        let read = self.generator.next_view_read();
        self.send_read(node, read, Some(view));
    }

    fn watch_start(&mut self, watcher: usize) {
        let load = self.config.watchers.clone().expect("watchers configured");
        if self.watchers[watcher].session.is_some() {
            return;
        }
        let mut live = self.live(false);
        if load.followers_only {
            live.retain(|&n| n >= self.config.replicas);
        }
        let Some(node) = self.pick(&live) else { return };
        let mut cursor = self.watchers[watcher].seen;
        if self.chaos.chance(load.old_cursor_rate) {
            cursor = cursor.saturating_sub(1 + self.chaos.below(load.old_cursor_back_max.max(1)));
        }
        let session = self.history.watches.len();
        self.history.watches.push(WatchSession {
            replica: node,
            cursor,
            started_at: self.now,
            events: Vec::new(),
            delivered_at: Vec::new(),
            closed_at: None,
            end: SessionEnd::Open,
        });
        let id = self.new_request(node, InFlight::Watch { watcher, session });
        self.watchers[watcher].node = node;
        self.watchers[watcher].session = Some((session, id));
        if self.now < self.workload_end {
            let length = self.chaos.exponential(millis_f64(load.session_mean));
            self.schedule(self.now + ms(length), Event::WatchStop { watcher, session });
        }
        self.trace(&[13, node as u64, cursor], "");
        self.input(node, Input::Request { id, request: Request::Watch { cursor, credit: load.credit } });
    }

    fn watch_stop(&mut self, watcher: usize, session: usize) {
        let Some((s, id)) = self.watchers[watcher].session else { return };
        if s != session {
            return;
        }
        let node = self.watchers[watcher].node;
        self.nodes[node].requests.remove(&id);
        self.watchers[watcher].session = None;
        self.history.watches[session].closed_at = Some(self.now);
        self.input(node, Input::Unwatch { id });
        self.resume_later(watcher);
    }

    fn resume_later(&mut self, watcher: usize) {
        let Some(load) = self.config.watchers.clone() else { return };
        if self.now < self.workload_end {
            let at = self.now + ms(self.chaos.uniform(0.0, millis_f64(load.pause_max)));
            self.schedule(at, Event::WatchStart { watcher });
        }
    }

    fn crash(&mut self) {
        let Some(cr) = self.config.crashes.clone() else { return };
        if self.now >= self.workload_end {
            return;
        }
        let next = self.now + ms(self.chaos.exponential(millis_f64(cr.mean_interval)));
        self.schedule(next, Event::Crash);
        // A paused replica is not crashed: the pause is the fault it is there to show.
        let live = self.live(false);
        if live.len() < 2 {
            return;
        }
        let node = self.pick(&live).expect("live");
        self.trace(&[5, node as u64], "crash");
        self.take_down(node);
        let (down_ms_min, down_ms_max) = (millis(cr.down_min), millis(cr.down_max));
        let down = down_ms_min + self.chaos.below(down_ms_max - down_ms_min + 1);
        self.schedule(self.now + Duration::from_millis(down), Event::Restart { node });
    }

    /// Stops a replica: what it held is gone, what it was asked and never answered ends
    /// as crashed.
    fn take_down(&mut self, node: usize) {
        self.end_checkpoint_span(node);
        self.repair_damage(node);
        let n = &mut self.nodes[node];
        let replica = n.replica.take().expect("live");
        merge(&mut n.report, &replica);
        n.incarnation += 1;
        n.wake_at = None;
        n.report.crashes += 1;
        // A new incarnation owes nothing for its predecessor's creates: it opens afresh.
        let settled = std::mem::take(&mut n.ambiguity).settled_longest_us();
        n.report.ambiguous_open_us_max = n.report.ambiguous_open_us_max.max(settled);
        n.starving_since = None;
        for (request, what) in std::mem::take(&mut n.requests) {
            match what {
                InFlight::Write(index) => {
                    self.history.ops[index].outcome = Outcome::Crashed;
                    self.generator.forget(&self.writes[index - self.config.preload_documents].op_id);
                    self.request_writer.remove(&request);
                }
                InFlight::Read(index) => self.history.reads[index].outcome = ReadOutcome::Crashed,
                InFlight::Watch { watcher, session } => {
                    self.history.watches[session].end = SessionEnd::Crashed;
                    self.watchers[watcher].session = None;
                    self.resume_later(watcher);
                }
            }
        }
    }

    /// Stops a live replica for `length`: its inputs wait, its calls are held.
    fn pause(&mut self, node: usize, length: Duration) {
        if self.nodes[node].replica.is_none() || self.nodes[node].paused.is_paused() {
            return;
        }
        // In whole ms, as the trace has always counted it.
        self.trace(&[12, node as u64, millis(length)], "pause");
        let until = self.now + length;
        self.nodes[node].paused.until = Some(until);
        self.schedule(until, Event::Resume { node });
    }

    /// The replica goes on where it stopped: the calls it was sending go out, then what
    /// reached it meanwhile arrives in order, then its clock is read.
    fn resume(&mut self, node: usize) {
        self.trace(&[13, node as u64], "resume");
        let paused = std::mem::take(&mut self.nodes[node].paused);
        for (id, op) in paused.calls {
            self.submit(node, id, op);
        }
        for input in paused.inputs {
            self.input(node, input);
        }
        let now = self.kernel_now(node);
        if let Some(r) = self.nodes[node].replica.as_mut() {
            r.handle_timeout(now);
            self.drain(node);
        }
    }

    /// Damages the newest full checkpoint's object (as `damage_at_open` says) for `node`'s
    /// cold start, unless a damage is in place already.
    fn damage_newest_checkpoint(&mut self, node: usize) {
        let Some(object) = self.config.damage_at_open else { return };
        if self.damage.is_some() {
            return;
        }
        let prefix = self.keys.checkpoints_prefix();
        let newest = self
            .gcs
            .objects()
            .filter(|(key, _, _)| key.starts_with(&prefix))
            .filter_map(|(key, bytes, _)| Some((self.keys.parse_checkpoint(key)?, key, bytes)))
            .filter(|(next_sequence, _, _)| *next_sequence > 1)
            .max_by_key(|(next_sequence, _, _)| *next_sequence);
        let Some((_, key, bytes)) = newest else { return };
        let key = match object {
            DamagedObject::Checkpoint => Some(key.to_owned()),
            DamagedObject::Root => {
                Checkpoint::decode(bytes).ok().and_then(|c| c.root).map(|root| self.keys.root_object(&root))
            }
        };
        let Some(damage) = key.and_then(|key| self.gcs.damage_at_rest(&key)) else { return };
        self.trace(&[17, node as u64], &damage.key);
        self.damage_counts.damaged += 1;
        self.damage = Some((node, damage));
    }

    /// Puts back what was damaged for `node`'s cold start, if anything is.
    fn repair_damage(&mut self, node: usize) {
        if self.damage.as_ref().is_none_or(|(n, _)| *n != node) {
            return;
        }
        let (_, damage) = self.damage.take().expect("checked");
        let stats = self.nodes[node].replica.as_ref().filter(|r| r.is_open()).map(|r| r.compactor_stats());
        if stats.is_some_and(|s| s.skipped_at_open > 0 && s.loaded_at_open > 0) {
            self.damage_counts.opened_from_older += 1;
        }
        let repaired = self.gcs.repair_at_rest(&damage);
        if repaired {
            self.damage_counts.repaired += 1;
        } else {
            self.damage_counts.replaced += 1;
        }
        self.trace(&[18, node as u64, u64::from(repaired)], &damage.key);
    }

    fn end_checkpoint_span(&mut self, node: usize) {
        if let Some(since) = self.nodes[node].checkpointing_since.take() {
            self.checkpoint_spans.push((since, self.now));
        }
    }

    /// Carries out every effect the replica emitted, then schedules its wake-up.
    fn drain(&mut self, node: usize) {
        loop {
            let Some(effect) = self.nodes[node].replica.as_mut().and_then(|r| r.poll_effect()) else { break };
            match effect {
                Effect::Blob { id, op } => self.submit(node, id, op),
                Effect::Reply { id, reply } => self.answer(node, id, reply),
                Effect::Committed { sequence } => self.hint(node, sequence),
                Effect::Failed(reason) => {
                    self.trace_fmt(&[8, node as u64], format_args!("{reason:?}"));
                    if matches!(reason, FailReason::Unconfirmed { .. } | FailReason::BelowCollection { .. }) {
                        self.nodes[node].report.reloads += 1;
                        self.schedule(self.now, Event::Reopen { node });
                    } else if matches!(
                        reason,
                        FailReason::CreateBelowCollection { .. } | FailReason::CreatedSlotGone { .. }
                    ) {
                        // What the replica asks for: its operator (here, the harness)
                        // reopens it from the newest checkpoint.
                        self.nodes[node].report.reopened += 1;
                        self.schedule(self.now, Event::Reopen { node });
                    } else {
                        self.nodes[node].report.failed = Some(reason);
                    }
                }
                Effect::Changes { id, events } => self.changes(node, id, events),
                Effect::WatchEnded { id, end } => self.watch_ended(node, id, end),
                Effect::Warning(warning) => {
                    self.trace_fmt(&[9, node as u64], format_args!("{warning:?}"));
                    self.nodes[node].report.warnings.push(warning);
                }
            }
        }
        if self.nodes[node].replica.as_ref().is_some_and(|r| r.is_open() || r.is_failed()) {
            self.repair_damage(node);
        }
        if node >= self.config.replicas {
            self.follower_applied(node);
        }
        if self.clients_waiting && self.nodes.iter().all(|n| n.replica.as_ref().is_some_and(|r| r.is_open()))
        {
            self.start_clients();
        }
        let checkpointing = self.nodes[node].replica.as_ref().is_some_and(|r| r.is_checkpointing());
        match (checkpointing, self.nodes[node].checkpointing_since) {
            (true, None) => self.nodes[node].checkpointing_since = Some(self.now),
            (false, Some(_)) => self.end_checkpoint_span(node),
            _ => {}
        }
        // A wake-up whose time no longer matches `wake_at` is stale and does nothing.
        let n = &self.nodes[node];
        let at = n.replica.as_ref().and_then(|r| r.poll_timeout()).map(|t| {
            Instant::from_micros((t.as_micros() + n.frozen_us).saturating_sub(n.skew_us)).max(self.now)
        });
        if at != n.wake_at {
            let incarnation = n.incarnation;
            self.nodes[node].wake_at = at;
            if let Some(at) = at {
                self.schedule(at, Event::Wake { node, incarnation });
            }
        }
    }

    /// Passes a commit hint to every other live replica, each with its own delay, or loses it.
    fn hint(&mut self, from: usize, sequence: u64) {
        self.trace(&[7, from as u64, sequence], "");
        self.nodes[from].report.hints_sent += 1;
        self.overheard_through = self.overheard_through.max(sequence);
        let h = self.config.hints.clone();
        for node in 0..self.nodes.len() {
            let loss = if node < self.config.replicas { h.loss_rate } else { h.follower_loss_rate };
            if node == from || self.nodes[node].replica.is_none() || self.chaos.chance(loss) {
                continue;
            }
            let delay =
                millis_f64(h.delay_min) + self.chaos.uniform(0.0, millis_f64(h.delay_max - h.delay_min));
            let incarnation = self.nodes[node].incarnation;
            self.schedule(self.now + ms(delay), Event::Hint { node, incarnation, sequence });
        }
    }

    /// Stalls the node at `op` if a stall not yet struck is placed there.
    fn stall_if_due(&mut self, node: usize, op: &BlobOp) {
        let due = self.config.stalls.iter().enumerate().find(|(i, s)| {
            let place = match (s.at, op) {
                (StallAt::SlotCreate, BlobOp::Create { key, .. }) => self.keys.parse_slot(key).is_some(),
                (StallAt::CheckpointObjectCreate, BlobOp::Create { key, .. }) => {
                    let k = &self.keys;
                    [k.shards_prefix(), k.roots_prefix(), k.receipts_prefix()]
                        .iter()
                        .any(|p| key.starts_with(p))
                }
                (StallAt::Delete, BlobOp::Delete { .. }) => true,
                _ => false,
            };
            let due = !self.stalls_struck[*i] && self.now >= Instant::ZERO + s.after && !self.calm;
            s.node == node && place && due
        });
        if let Some((i, s)) = due.map(|(i, s)| (i, *s)) {
            self.stalls_struck[i] = true;
            self.pause(node, s.length);
            // Suspended: its clock resumes where it stopped.
            self.nodes[node].frozen_us += micros(s.length);
        }
    }

    fn submit(&mut self, node: usize, id: BlobOpId, op: BlobOp) {
        if !self.nodes[node].paused.is_paused() {
            self.stall_if_due(node, &op);
        }
        if self.nodes[node].paused.is_paused() {
            self.nodes[node].paused.calls.push((id, op));
            return;
        }
        let plan = self.gcs.submit(self.now, &op);
        self.next_ticket += 1;
        let ticket = self.next_ticket;
        self.trace(&[9, ticket, node as u64, op.upload_len() as u64], op.key());
        self.tickets.insert(
            ticket,
            Ticket {
                node,
                incarnation: self.nodes[node].incarnation,
                id,
                op,
                planned: plan.reply,
                result: None,
                applying: plan.apply_at.is_some(),
                replying: true,
            },
        );
        if let Some(at) = plan.apply_at {
            self.schedule(at, Event::Apply { ticket });
        }
        self.schedule(plan.reply_at, Event::Reply { ticket });
    }

    fn answer(&mut self, node: usize, request: RequestId, reply: Reply) {
        let Some(what) = self.nodes[node].requests.remove(&request) else {
            panic!("replica {node} answered {request:?}, which it was not asked or answered twice");
        };
        match (what, reply) {
            (InFlight::Write(index), Reply::Write(result)) => {
                match &result {
                    Ok(WriteOk::Committed(receipt)) => {
                        self.trace_committed(&[10, node as u64, request.0], receipt)
                    }
                    Ok(ok) => self.trace_fmt(&[10, node as u64, request.0], format_args!("{ok}")),
                    Err(e) => self.trace_fmt(&[10, node as u64, request.0], format_args!("error: {e:?}")),
                }
                let write = &self.writes[index - self.config.preload_documents];
                self.generator.observe(write, &result);
                self.note_write_answered(node, &result);
                self.history.ops[index].outcome = Outcome::Answered { at: self.now, result };
                if let Some(w) = self.request_writer.remove(&request) {
                    self.schedule(self.now, Event::Arrival { writer: Some(w) });
                }
            }
            (InFlight::Read(index), Reply::Read(result)) => {
                let (at, kind) = match &result {
                    Ok(ok) => (ok.at_sequence, std::mem::discriminant(&ok.answer)),
                    Err(_) => (u64::MAX, std::mem::discriminant(&slotlog_kernel::Answer::NotFound)),
                };
                self.trace_fmt(&[14, node as u64, request.0, at], format_args!("{kind:?}"));
                if let Some(view) = self.history.reads[index].view {
                    match &result {
                        Ok(ok) => {
                            self.views[view].pinned.get_or_insert(ok.at_sequence);
                        }
                        // Gone: a client opens a new view rather than read this one on.
                        Err(ReadError::ViewExpired | ReadError::ViewEvicted) => {
                            self.views[view].reads_left = 0
                        }
                        Err(_) => {}
                    }
                    let gap = self.config.views.as_ref().map_or(Duration::ZERO, |l| l.gap_max);
                    let at = self.now + ms(self.chaos.uniform(0.0, millis_f64(gap)));
                    self.schedule(at, Event::ViewNext { view });
                }
                self.history.reads[index].outcome = ReadOutcome::Answered { at: self.now, result };
            }
            (what, reply) => panic!("replica {node} answered {what:?} with {reply:?}"),
        }
    }

    /// A write of `node` was answered: on its merits (committed, unchanged, rejected,
    /// invalid) the replica made progress; a write that timed out waiting (expired,
    /// uncertain) or was refused for a full queue did not, so the watch goes on.
    fn note_write_answered(&mut self, node: usize, result: &Result<WriteOk, WriteError>) {
        let progress = !matches!(
            result,
            Err(WriteError::Expired { .. } | WriteError::Uncertain { .. } | WriteError::Busy { .. })
        );
        let n = &mut self.nodes[node];
        let more = n.requests.values().any(|w| matches!(w, InFlight::Write(_)));
        if !more {
            n.starving_since = None;
        } else if progress {
            n.starving_since = Some(self.now);
        }
    }

    /// The starvation rule, once a virtual second: while the bucket injects no fault (a
    /// scenario without faults, or any run's settle phase), no replica holds writes for
    /// longer than the budget without answering one on its merits. A paused or opening
    /// replica is not starved, nor one that holds no writes.
    fn judge_starvation(&mut self) {
        // The store's faults as they are now: none in a healthy scenario or once calm.
        let healthy = self.gcs.config().faults == crate::gcs::Faults::none();
        for (i, n) in self.nodes.iter_mut().enumerate() {
            let opening = n.replica.as_ref().is_some_and(|r| r.world().is_none());
            if n.paused.is_paused() || opening {
                // Not the commit path's doing: the pause is the fault, and an open
                // replaying a long log holds its writes until it is done.
                n.starving_since = n.starving_since.map(|_| self.now);
                continue;
            }
            let Some(since) = n.starving_since else { continue };
            let waited = self.now.saturating_since(since);
            let waited_ms = waited.as_millis() as u64;
            n.report.starved_ms_max = n.report.starved_ms_max.max(waited_ms);
            // Judged in whole ms, as reported.
            let starved = waited_ms > millis(self.config.liveness.starved_max);
            if healthy && starved && self.not_live.is_none() {
                self.not_live = Some(NotLive::Starved { replica: i, waited_ms });
            }
        }
    }

    fn changes(&mut self, node: usize, id: RequestId, events: Vec<slotlog_kernel::world::Receipt>) {
        let Some(&InFlight::Watch { watcher, session }) = self.nodes[node].requests.get(&id) else {
            panic!("changes for {id:?}, which is no watch on replica {node}");
        };
        self.trace(&[15, node as u64, events.len() as u64, events.last().map_or(0, |e| e.sequence)], "");
        let n = events.len() as u32;
        if let Some(last) = events.last() {
            self.watchers[watcher].seen = last.sequence;
        }
        let session_history = &mut self.history.watches[session];
        session_history.delivered_at.extend(events.iter().map(|_| self.now));
        session_history.events.extend(events);
        let load = self.config.watchers.clone().expect("watchers configured");
        let consume = self.chaos.uniform(0.0, millis_f64(load.consume_max));
        self.schedule(self.now + ms(consume), Event::WatchCredit { watcher, session, events: n });
    }

    fn watch_ended(&mut self, node: usize, id: RequestId, end: WatchEnd) {
        let Some(InFlight::Watch { watcher, session }) = self.nodes[node].requests.remove(&id) else {
            panic!("an end for {id:?}, which is no watch on replica {node}");
        };
        self.trace_fmt(&[16, node as u64, id.0], format_args!("{end:?}"));
        if let WatchEnd::Resync { tip, .. } = end {
            // The subscriber rebuilds from a read of the world, then watches from its tip.
            self.watchers[watcher].seen = tip;
        }
        self.history.watches[session].end = SessionEnd::Ended(end);
        self.watchers[watcher].session = None;
        self.resume_later(watcher);
    }

    /// The most version records any live replica holds now.
    fn resident_version_records(&self) -> u64 {
        let held = self.nodes.iter().filter_map(|n| n.replica.as_ref()).map(|r| r.resident_version_records());
        held.max().unwrap_or(0) as u64
    }

    /// The most any live replica's ledger holds now: slots, and documents.
    fn ledger_held(&self) -> (u64, u64) {
        let live = self.nodes.iter().filter_map(|n| n.replica.as_ref()).map(|r| r.ledger_held());
        live.fold((0, 0), |(s, d), h| (s.max(h.slots as u64), d.max(h.documents as u64)))
    }

    /// Samples once a virtual second, between events: sampling schedules nothing, so it
    /// changes no run.
    fn sample_memory(&mut self) {
        let now_s = self.now.as_micros() / 1_000_000;
        if now_s < self.memory.next_s {
            return;
        }
        self.memory.next_s = now_s + 1;
        let held = self.resident_version_records();
        if let Err(stop) = self.liveness.on_memory(held) {
            self.not_live = Some(stop);
        }
        self.judge_starvation();
        let (ledger_slots, ledger_documents) = self.ledger_held();
        let m = &mut self.memory;
        m.resident_version_records_max = m.resident_version_records_max.max(held);
        m.ledger_slots_max = m.ledger_slots_max.max(ledger_slots);
        m.ledger_documents_max = m.ledger_documents_max.max(ledger_documents);
        if now_s >= 120 && m.resident_version_records_120s.is_none() {
            m.resident_version_records_120s = Some(held);
        }
    }

    fn finish(mut self) -> RunResult {
        let mut unsettled = 0;
        for n in &self.nodes {
            for what in n.requests.values() {
                if matches!(what, InFlight::Write(_) | InFlight::Read(_)) {
                    unsettled += 1;
                }
            }
        }
        self.memory.resident_version_records_end = self.resident_version_records();
        (self.memory.ledger_slots_end, self.memory.ledger_documents_end) = self.ledger_held();
        for node in 0..self.nodes.len() {
            self.end_checkpoint_span(node);
            // A replica still opening when the run ended: the bucket is judged undamaged.
            self.repair_damage(node);
        }
        self.history.ended_at = Some(self.now);
        let mut replicas = Vec::new();
        for n in &mut self.nodes {
            if let Some(r) = &n.replica {
                merge(&mut n.report, r);
                if n.report.failed.is_none() {
                    let longest = n.ambiguity.longest_us(self.now);
                    n.report.ambiguous_open_us_max = n.report.ambiguous_open_us_max.max(longest);
                }
            }
            replicas.push(n.report.clone());
        }
        let root = self.keys.root().to_string();
        let objects = self
            .gcs
            .objects_under(&root)
            .map(|(key, bytes, created_at_us)| StoredObject {
                key: key.to_string(),
                bytes: bytes.clone(),
                created_at: Instant::from_micros(created_at_us),
            })
            .collect();
        RunResult {
            history: self.history,
            objects,
            keys: self.keys,
            world_id: self.world_id,
            workload_end: self.workload_end,
            workload_start: self.workload_start,
            end: self.now,
            trace_hash: self.trace.finalize(),
            replicas,
            store: *self.gcs.stats(),
            unsettled,
            memory: self.memory,
            checkpoint_spans: self.checkpoint_spans,
            damage: self.damage_counts,
            not_live: self.not_live,
        }
    }
}

/// Adds what the store did to a name, if `op` changed one, to the history the checker
/// judges: the record is the store's result, not what any replica believed.
fn record_name(history: &mut History, at: Instant, op: &BlobOp, result: &BlobResult) {
    use slotlog_kernel::blob::BlobOutcome;
    let Some(names) = history.names.as_mut() else { return };
    match (op, result) {
        (BlobOp::Create { key, bytes }, Ok(BlobOutcome::Created(_))) => {
            names.record_held(at, key, NameChange::Created, Some(bytes))
        }
        (BlobOp::Rewrite { key, bytes, .. }, Ok(BlobOutcome::Rewritten(_))) => {
            names.record_held(at, key, NameChange::Rewritten, Some(bytes))
        }
        (BlobOp::Delete { key, .. }, Ok(BlobOutcome::Deleted)) => {
            names.record_held(at, key, NameChange::Deleted, None)
        }
        _ => {}
    }
}

/// What the trace records of a store result: its kind, generation and size, not its bytes.
fn result_digest(result: &BlobResult) -> (u64, u64, u64) {
    use slotlog_kernel::blob::BlobOutcome;
    match result {
        Ok(BlobOutcome::Created(w)) | Ok(BlobOutcome::Rewritten(w)) => {
            (1, w.generation.as_number().unwrap_or(0), w.size)
        }
        Ok(BlobOutcome::Stat(m)) => (1, m.generation.as_number().unwrap_or(0), m.size),
        Ok(BlobOutcome::Got { meta, .. }) => (2, meta.generation.as_number().unwrap_or(0), meta.size),
        Ok(BlobOutcome::Listed { entries, more }) => (
            3,
            entries.last().and_then(|e| e.generation.as_number()).unwrap_or(0),
            entries.len() as u64 * 2 + u64::from(*more),
        ),
        Ok(BlobOutcome::Deleted) => (4, 0, 0),
        Err(e) => (5 + *e as u64, 0, 0),
    }
}

/// Adds an incarnation's counters into the replica's report.
fn merge(into: &mut ReplicaReport, r: &Replica) {
    let s = r.stats();
    let t = &mut into.stats;
    t.slots_won += s.slots_won;
    t.slots_lost += s.slots_lost;
    t.creates_ambiguous += s.creates_ambiguous;
    t.members_committed += s.members_committed;
    t.refused_busy += s.refused_busy;
    t.expired += s.expired;
    t.uncertain += s.uncertain;
    t.requeued += s.requeued;
    t.body_reads += s.body_reads;
    t.calls_hedged += s.calls_hedged;
    t.holds += s.holds;
    t.blind_holds += s.blind_holds;
    t.rotation_waits += s.rotation_waits;
    t.hold_ms_total += s.hold_ms_total;
    t.hold_overrun_us_max = t.hold_overrun_us_max.max(s.hold_overrun_us_max);
    t.holds_answered += s.holds_answered;
    t.recoveries_us.extend(s.recoveries_us.iter().copied());
    t.stalled_creates_refused += s.stalled_creates_refused;
    t.slot_stats_after_create += s.slot_stats_after_create;
    into.marks.add(r.marks());
    into.compactor.add(r.compactor_stats());
    into.collector.add(r.collector_stats());
    let (rs, t) = (r.read_stats(), &mut into.reads);
    t.exact += rs.exact;
    t.catalog += rs.catalog;
    t.probes += rs.probes;
    t.slots_followed += rs.slots_followed;
    t.refused_busy += rs.refused_busy;
    t.deadlines += rs.deadlines;
    t.unavailable += rs.unavailable;
    let (vs, t) = (r.view_stats(), &mut into.views);
    t.pinned += vs.pinned;
    t.expired += vs.expired;
    t.refused += vs.refused;
    t.released += vs.released;
    t.evicted += vs.evicted;
    t.images_held = t.images_held.max(vs.images_held);
    into.search.add(r.search_stats());
    let (fs, t) = (r.feed_stats(), &mut into.feed);
    t.watches += fs.watches;
    t.events_delivered += fs.events_delivered;
    t.resumes_ring += fs.resumes_ring;
    t.resumes_slots += fs.resumes_slots;
    t.resyncs += fs.resyncs;
    t.slot_reads += fs.slot_reads;
    t.slots_verified_before_checkpoint += fs.slots_verified_before_checkpoint;
    t.polls += fs.polls;
    t.slot_cache_idled += fs.slot_cache_idled;
}
