//! Every tunable of a replica, with its source in its doc: counts and sizes carry their
//! unit in their name (`_max`, `_bytes`, `_slots`), times are `Duration`s.
//!
//! Times are `core::time::Duration`, not integers of milliseconds, so an embedder writes
//! `Duration::from_secs(30)` and cannot mistake the unit; the kernel reads no clock and
//! converts each one where it adds it to an [`Instant`](crate::Instant) or compares it
//! with a store's microsecond timestamps.

use crate::format::MergeRule;
use core::time::Duration;

/// A replica's configuration. [`Config::default`] holds the decision record's numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Config {
    /// The most members a batch takes from the queue. A batch takes whatever is queued up
    /// to this, with no timer, so batches grow with the queue (the record took 16, and 32
    /// "while the queue stays deep"; `--batch-max 16` reproduces it). 1 to a slot's most.
    pub batch_members_max: usize,
    /// New bodies up to this long travel inside their slot (SPEC 5.7), so one create
    /// commits a batch; longer ones are blobs created before the slot. 16 KiB costs about
    /// 0.3 ms of transfer at 50 MB/s, so a slot of small writes is not slowed by them. 0
    /// makes every body a blob, as the record did. At most `INLINE_BODY_BYTES_MAX`.
    pub body_inline_bytes_max: usize,
    /// A slot that would be longer than this moves carried bodies out to blobs, newest
    /// first, until it fits or carries none (1 MiB: about 20 ms of transfer at 50 MB/s).
    pub slot_bytes_max: usize,
    /// Batches built and staged while one slot create is in flight (record: 2; one ahead
    /// capped batch 16 at 256 to 291 writes/s, three added nothing). 0 to 3.
    pub batches_ahead_max: usize,
    /// After a slot's writes are answered, the open batch seals on the replica's next
    /// input instead of at once, so writers answered by that slot can ride the next one
    /// (docs/PERFORMANCE.md, "Peers"). No timer: the replica asks to be woken at once.
    pub seal_after_answers: bool,
    /// Writes waiting for a batch beyond which a new write is refused with `Busy`, so a
    /// caller hears at once instead of timing out (record: the 10 s deadline caps the queue
    /// at about ten seconds of throughput; 4,096 is about ten seconds at 400 writes/s).
    pub queue_members_max: usize,
    /// An ordinary write is also refused with `Busy` when the queue ahead of it would take
    /// longer than this to drain at the pace this store's slots have been committing while
    /// writes waited: under overload a caller hears `Busy` at once instead of `Expired` at
    /// its deadline. Half the request deadline; zero turns the pace rule off. Control work
    /// (`set_policy`, archive flips) is never refused by pace (docs/OPERATIONS.md,
    /// "Admission").
    pub admission_wait_max: Duration,
    /// How long a caller waits for its write (record: 10 s request deadline).
    pub request_deadline: Duration,
    /// First backoff after a throttled or failed call; doubles per attempt, jittered.
    pub retry_base: Duration,
    /// Longest backoff between two attempts of one call.
    pub retry_cap: Duration,
    /// A call unanswered this long is sent once more, identically, and the first answer
    /// wins: every call is safe to repeat (bodies are content-addressed, a slot retry is
    /// byte-identical). 200 ms is four times the record's small-create p99 (50 ms), so
    /// it fires on stuck calls and timeouts, not on load. `Duration::ZERO` disables hedging.
    pub hedge_after: Duration,
    /// Bytes of recent bodies held for appends, so an append to a hot document reads no
    /// blob.
    pub body_cache_bytes_max: usize,
    /// Slot reads in flight at once while replaying the log at cold start.
    pub replay_gets_max: usize,
    /// Keys asked for per listing call.
    pub list_page_max: u32,
    /// Reads waiting for a fresh enough snapshot beyond which a new read is refused with
    /// `Busy`.
    pub read_pending_max: usize,
    /// Attempts one tip probe call gets on a 429, 5xx or timeout before its flight fails
    /// and answers every read waiting on it `Unavailable` (record: "the probe is a
    /// flight"; a persistent failure then costs one flight per burst of reads). Three
    /// attempts wait about 60 ms of backoff, far inside a read's 10 s deadline, as an
    /// object-store client's own retries would.
    pub probe_attempts_max: u32,
    /// How much older than its arrival a catalog read's snapshot may be (record: catalog
    /// reads may trail another replica's commit by up to one second).
    pub catalog_staleness_max: Duration,
    /// The newest slots a replica indexes, and the feed's reach: a watcher up to this many
    /// slots behind the tip resumes from slots (after a cold start, those before the
    /// checkpoint are read from the bucket and verified), one further behind resyncs
    /// (record: 16,384, "reach, not ring").
    pub recent_slots_max: usize,
    /// Events the change feed's ring holds while anyone watches (record: 4,096); also the
    /// size of one backlog page.
    pub ring_events_max: usize,
    /// Watches beyond which a new one is refused with `Busy`.
    pub watches_max: usize,
    /// A read-only replica (issue 19): it never creates, rewrites or deletes anything.
    /// It opens only a world that exists (no genesis, no checkpoint zero), writes no
    /// checkpoint (whatever `compaction` says) and so collects nothing, and answers every
    /// write `WriteError::ReadOnlyReplica`. Reads, views and watches work as on any
    /// replica; read-only credentials suffice.
    pub read_only: bool,
    /// Views one replica keeps pinned at once (the record: "a view pins its snapshot at
    /// its first read"); past it a view's first read is refused with `ViewsExhausted`.
    /// A pin costs the documents changed since its sequence, shared by pins there.
    pub views_max: usize,
    /// The longest a view stays pinned: older, it answers `ViewExpired`. At most the
    /// checkpoint grace, so a view never needs what collection may delete.
    pub view_age_max: Duration,
    /// Documents held as they were at some pin, over every pin: past it, the views at the
    /// oldest pinned sequence are evicted (`ViewEvicted`). 262,144: about 100 MB at a few
    /// hundred bytes a document, and 17 minutes of 250 writes/s to distinct documents for
    /// one pin; many pins at many sequences share the bound.
    pub view_images_max: usize,
    /// How long a body search waits for an index covering its state before it answers
    /// from the catalog (the record: one second).
    pub search_wait: Duration,
    /// A search index unused this long is dropped (the record: 30 minutes).
    pub search_idle_max: Duration,
    /// The most bytes a search index may hold; past it the index is dropped and searches
    /// answer from the catalog until it has gone unused for `search_idle_max`.
    pub search_bytes_max: usize,
    /// Body reads the search index keeps in flight while it catches up (the record: its
    /// 16 shard workers).
    pub search_fetches_max: usize,
    /// Body bytes indexed in one step, so indexing never holds the replica for long.
    pub search_step_bytes_max: usize,
    /// A writable replica starts its search index as soon as it opens, off the commit
    /// path, rather than on its first search (the record's near-duplicate gate wanted an
    /// index from the first write). Off by default: an index costs memory and body reads
    /// nobody may want. A read-only replica never warms.
    pub search_warm_at_open: bool,
    /// Backlog slots the feed keeps decoded for watchers catching up together.
    pub feed_slots_cached_max: usize,
    /// The feed's slot cache (slots read for subscribers catching up) empties after this
    /// long without a backlog read, so a watcher that caught up long ago holds no memory
    /// for it (record: 30 minutes).
    pub feed_slots_idle: Duration,
    /// The backstop poll for watchers (record: 5 s, "only while a watcher waits"): a
    /// replica that has learned no slot for this long while anyone watches probes the tip,
    /// so its watchers advance without hints, writes or reads. `Duration::ZERO` turns the
    /// poll off (a replica whose hints are reliable, or a test showing what it is for).
    pub watch_poll: Duration,
    /// Turns (record: "Found by the dry run ..."): a store that learns a peer lost to it
    /// holds its next create after its next win, so the peer gets a slot. Off only for
    /// comparison runs.
    pub turns: bool,
    /// A hint inside one of this store's newest slots means a peer lost to it (record:
    /// 256, "over a second of slots at any rate"; eight starved a backlogged replica).
    pub turn_slots_max: usize,
    /// The longest hold (record: 300 ms, about twice the measured recovery of a loser;
    /// 1 s gave the same throughput, 100 ms and none lost more slots or starved a store).
    pub hold: Duration,
    /// Rotation (docs/TURNS.md, "Rotation"): how many of the newest slots say which peers
    /// write with this store, so that each takes the next name in turn; 0 turns it off.
    /// 16 is several rounds of any realistic number of writers, and lets a peer that
    /// went quiet drop out after as many slots.
    pub rotation_window_slots: usize,
    /// A peer's slot older than this does not count it as writing now (a peer that went
    /// quiet costs waits only until then).
    pub rotation_peer: Duration,
    /// Blind turns (docs/TURNS.md, "Without hints"): a store that has seen a peer write
    /// while it writes, and no hint for that slot, holds, as for a turn, once it has
    /// created this many slots in a row since that peer slot, and at every doubling of
    /// the streak after (a hold no peer takes doubles it). Measured on `race --hints off`
    /// seeds 1 to 60: at 8, share_min 0.75 or more and 89% of one store's writes/s; at 4,
    /// 0.92 and 71%; at 16, 0.65 and 94%. 0 turns blind turns off.
    pub blind_streak_slots: u64,
    /// A blind hold lasts this many of the store's own slot create round trips (a moving
    /// average), at most `hold`: a loser that keeps losing needs about three (its lost
    /// create, the read of the winner, a listing) to create in the name held for it.
    /// Holds in time alone wasted the fast profile (`fast2 --hints off`: 300 ms is 150
    /// creates, 870 writes/s against 5,900 sized by round trips); 4 gave a fairer `race
    /// --hints off` than 6 (share_min 0.75 against 0.68), 3 starved a store in `fast2`.
    pub blind_hold_creates: u32,
    /// While a peer's unhinted slot is younger than `blind_peer`, a store never goes
    /// longer than this between holds, however many went untaken: a peer that keeps
    /// losing is offered a name at least this often, well inside its writes' 10 s
    /// deadline.
    pub blind_gap_max: Duration,
    /// How long a peer's unhinted slot counts as evidence of a peer that may be waiting.
    /// Past it (the peer went quiet, or left) the store holds only if it probes.
    pub blind_peer: Duration,
    /// Blind probes, for a replica whose embedder passes it no peers' hints at all: a
    /// store that knows of no peer writing with it holds after this many of its own slots
    /// in a row, then at every doubling of that streak, so that peers that opened with
    /// it (racing from one tip, none ever winning a name, so never seen) are offered one.
    /// A lone store pays about log2(streak / this) holds. An embedder that carries hints
    /// sets 0: the driver does when it has peers to send them to, the simulation unless
    /// it loses every hint. With 0, lost hints are made up for only by the evidence of
    /// peers' slots (`blind_streak_slots`).
    pub blind_probe_slots: u64,
    /// Whether this replica writes checkpoints (SPEC 10.11). `Eager` is the record's
    /// default; `Off` for a replica that must never write (and for comparison runs).
    pub compaction: CompactionRole,
    /// A checkpoint is due once this many slots were applied since the newest one
    /// (record: 8,192, "the checkpoint cadence"; 1,024 slots replay in about 0.9 s).
    pub checkpoint_slots: u64,
    /// ...or once the newest one is this old and anything was applied since (record: 10
    /// minutes).
    pub checkpoint_interval: Duration,
    /// ...or once the bodies the slots applied since the newest one carry (SPEC 5.7) reach
    /// this many bytes. A compacting replica holds them in memory until a step writes them
    /// out as blobs, and by the slot count alone that could be 8,192 slots of up to a MiB
    /// each; 256 MiB bounds it (at a full MiB a slot, a step every 256 slots, about 10 s
    /// of slots in series).
    pub checkpoint_carried_bytes: u64,
    /// A due checkpoint waits a uniform draw up to this long, so replicas that applied the
    /// same slots do not all fold at once (record: a random delay; 10 s). Drawn in whole
    /// milliseconds, as the seeded runs always drew it.
    pub checkpoint_jitter: Duration,
    /// A `backstop` steps only once the newest checkpoint it knows is this old: the
    /// record's cadence (10 minutes) plus two step bounds (5 minutes each), so while an
    /// eager store is alive the backstops only adopt.
    pub backstop_after: Duration,
    /// Object creates one checkpoint keeps in flight: paces a checkpoint's burst so slot
    /// creates keep their latency (amendments issue: "compactor bursts"). At 8, a
    /// checkpoint of a 270,000-document world (2,048 shards and a block per changed
    /// document) outlasted the `compact` scenario's crash interval, so few finished and
    /// replicas held ever more versions (600 virtual s: 11 checkpoints, held versions 30k
    /// at 120 s and 123k at the end, commit p99 7.8 s); at 32, 200 checkpoints, 6k and 5k,
    /// p99 1.2 s.
    pub checkpoint_creates_in_flight_max: usize,
    /// History blocks one checkpoint reads at once: a window that gained versions since
    /// its block was stored is rewritten from that block (SPEC 10.5), so a step reads
    /// about one block per changed document before it can fold, and its creates wait on
    /// those reads. At 16 (25 ms a read), a step of 1,024 documents read for 1.6 s and
    /// the compactor folded about 310 documents/s, no more than the `compact` scenario
    /// writes: the backlog grew with the world (600 virtual s: held versions 3.6k at 120 s,
    /// 10.7k at the end). At 64, 4.7k and 5.9k, commit p99 unchanged (reads do not queue
    /// behind creates, and GCS reads about 5,000 objects/s a bucket).
    pub checkpoint_reads_in_flight_max: usize,
    /// History blocks a replica keeps after reading them for an old version (SPEC 10.5).
    /// A block holds at most 256 records of about 100 bytes, so 1,024 blocks are at most
    /// about 26 MB: the bound on memory that is not the index or the versions since the
    /// newest checkpoint.
    pub history_blocks_cached_max: usize,
    /// Whether a replica that wrote a checkpoint then drops what no kept checkpoint needs
    /// (SPEC 10.15). A backend that cannot condition a delete answers `Unsupported` and
    /// collection turns itself off; it never deletes unconditionally.
    pub collect: bool,
    /// The checkpoint grace (record: 15 minutes, "the checkpoint grace is configurable"):
    /// a checkpoint stays while its successor is younger, and a shard, root or receipt
    /// block goes only once older than this at the drop's start. At least
    /// [`CHECKPOINT_GRACE_MIN`].
    pub checkpoint_grace: Duration,
    /// A create that finds a shard, root, receipt block or checkpoint already stored and
    /// older than this rewrites it in place first, so a drop's delete at the generation it
    /// listed fails (record: 7.5 minutes, fixed so replicas with different graces stay
    /// fenced). Plus `checkpoint_run_max`, at most the grace.
    pub freshen_after: Duration,
    /// The longest a checkpoint run may take from its look to its checkpoint create
    /// (record: "each run is capped at 5 minutes"); a run past it ends without writing.
    pub checkpoint_run_max: Duration,
    /// The most distinct documents one checkpoint step folds (record: 32,768, "compaction
    /// in bounded steps"): a backlog larger than that is checkpointed in several steps,
    /// each cut where the documents changed since the newest checkpoint reach this many,
    /// so a step's memory and run time are bounded and progress accumulates. At least a
    /// slot's most members, so a step always holds one whole slot.
    pub checkpoint_step_docs_max: usize,
    /// The merge rule (SPEC 10.16): a step writes the documents it changed as deltas over
    /// the shards while the deltas' entries, in all, stay within this share of the
    /// documents (per mille; or one full delta, 2,048, in a smaller world), and within
    /// `checkpoint_deltas_max` deltas; otherwise it writes every shard anew. 64 (6.4%):
    /// a cold start decodes at most that many entries more than the shards hold, within
    /// the opening's 10% budget. It decides a step's bytes, so a world fixes it in its
    /// marker (SPEC 4) at genesis: this is what a world this store creates takes, and
    /// every store of a world follows its marker's.
    pub checkpoint_delta_entries_per_mille_max: u64,
    /// The most deltas a root names before a step merges them into the shards (SPEC
    /// 10.16): 32 bounds the GETs they add to a cold start (under 1% of 4,096 shards at a
    /// million documents), lets two steps of 30,000 changes (15 deltas each) layer, and
    /// makes a small world merge every 32 steps. 0 writes every step's shards anew, as
    /// before deltas. Fixed in a world's marker, as the share above is.
    pub checkpoint_deltas_max: usize,
    /// Slots covered by the oldest kept checkpoint are deleted once this old at the drop's
    /// start (record: 24 hours, for the change feed's cursors). At least twice
    /// `reload_after`.
    pub slot_retention: Duration,
    /// A replica whose tip has gone unconfirmed this long reloads from the newest
    /// checkpoint before it trusts a missing slot as the tip (record: 12 hours, half the
    /// slot retention).
    pub reload_after: Duration,
    /// Deletes one drop keeps in flight (slots go one at a time, oldest first, so the
    /// retained log never has a hole).
    pub collect_deletes_in_flight_max: usize,
    /// Deliberate defects, for proving the simulation catches them: only with the
    /// `defects` feature, which the simulation and its tests enable and production
    /// builds do not. Read them through [`Config::defects`].
    #[cfg(feature = "defects")]
    pub defects: Defects,
}

/// Whether a replica writes checkpoints (SPEC 10.11: the roles are these three).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CompactionRole {
    /// Writes a checkpoint whenever the cadence is reached and no peer wrote a newer one.
    #[default]
    Eager,
    /// Adopts peers' checkpoints; writes one only when the newest is older than
    /// `backstop_after` (the eager store is gone or stalled).
    Backstop,
    /// Never writes one (it still loads and replays them).
    Off,
}

/// Defects a test can switch on to show that the checker catches them. Settable only with
/// the kernel's `defects` feature (`Config::defects`); without it every one is off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Defects {
    /// Acknowledge a batch's members when its slot create is sent, not when it is confirmed.
    pub ack_before_confirm: bool,
    /// Take an ambiguous slot create (timeout, 5xx) as committed without reading the slot.
    pub skip_ambiguous_read: bool,
    /// Answer exact reads from the snapshot at hand, without checking the next slot name.
    pub exact_read_skips_probe: bool,
    /// Answer catalog reads from the snapshot at hand, however old.
    pub catalog_ignores_staleness: bool,
    /// Acknowledge a slot's members without the post-create check against collection.
    pub skip_post_create_check: bool,
    /// A freshen rewrites the stored bytes unchanged (on S3 the ETag stays, so a drop's
    /// delete at the listed ETag still succeeds).
    pub freshen_keeps_bytes: bool,
    /// A timer never cleared: the replica asks to be woken at once, whatever it has to
    /// do, so a host that wakes it when asked spins at one instant (the simulation's
    /// liveness judgement must stop such a run with a verdict).
    pub timer_never_cleared: bool,
    /// A catch-up keeps waiting on the name its listing skipped after a probe installed
    /// it (the defect crash seed 7 had): its batches wait for good, while the store is
    /// healthy (the simulation's starvation rule must stop it).
    pub catch_up_keeps_installed_gap: bool,
    /// Admission takes every write, however long the queue (no `Busy`): under overload
    /// writes wait out their deadlines (the admission bound must catch it).
    pub admit_everything: bool,
    /// The backstop poll for watchers never runs: a watcher on a replica without hints
    /// waits for good (the watch delivery rule must catch it).
    pub watch_poll_skipped: bool,
    /// A view's later reads answer from the served world, not its pin (the view
    /// snapshot rule must catch it).
    pub view_reads_tip: bool,
    /// A search answers in body mode from whatever the index holds, covering its state
    /// or not (the search answer rule must catch it).
    pub search_ignores_coverage: bool,
    /// A slot carries its bodies in reverse member order (the checker judges their places
    /// against the model's bodies, not through the kernel's decoder, and must catch it).
    pub carry_bodies_reversed: bool,
    /// An entry's modified time is taken a minute ahead of the store's clock, so after
    /// its slot's creation (the checker judges each time against the creation it saw).
    pub modified_time_ahead: bool,
    /// The compactor writes each segment body with the next body's words (well formed,
    /// so a reader takes them): the checker judges body answers by the model's own
    /// tokenizing of the bodies, and must catch them.
    pub segment_words_shifted: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            batch_members_max: crate::format::SLOT_MEMBERS_MAX,
            body_inline_bytes_max: 16 * 1024,
            slot_bytes_max: 1024 * 1024,
            batches_ahead_max: 2,
            seal_after_answers: true,
            queue_members_max: 4_096,
            admission_wait_max: Duration::from_secs(5),
            request_deadline: Duration::from_secs(10),
            retry_base: Duration::from_millis(20),
            retry_cap: Duration::from_secs(1),
            hedge_after: Duration::from_millis(200),
            body_cache_bytes_max: 32 * 1024 * 1024,
            replay_gets_max: 16,
            list_page_max: 1_000,
            read_pending_max: 4_096,
            probe_attempts_max: 3,
            catalog_staleness_max: Duration::from_secs(1),
            recent_slots_max: 16_384,
            ring_events_max: 4_096,
            watches_max: 1_024,
            read_only: false,
            views_max: 1_024,
            view_age_max: CHECKPOINT_GRACE_MIN,
            view_images_max: 1 << 18,
            feed_slots_cached_max: 1_024,
            search_wait: Duration::from_secs(1),
            search_idle_max: Duration::from_secs(30 * 60),
            search_bytes_max: 1 << 30,
            search_fetches_max: 16,
            search_step_bytes_max: 1 << 20,
            search_warm_at_open: false,
            feed_slots_idle: Duration::from_secs(30 * 60),
            watch_poll: Duration::from_secs(5),
            turns: true,
            turn_slots_max: 256,
            hold: Duration::from_millis(300),
            rotation_window_slots: 16,
            rotation_peer: Duration::from_secs(2),
            blind_streak_slots: 8,
            blind_hold_creates: 4,
            blind_gap_max: Duration::from_secs(4),
            blind_peer: Duration::from_secs(60),
            blind_probe_slots: 8,
            compaction: CompactionRole::Eager,
            checkpoint_slots: 8_192,
            checkpoint_interval: Duration::from_secs(10 * 60),
            checkpoint_carried_bytes: 256 * 1024 * 1024,
            checkpoint_jitter: Duration::from_secs(10),
            backstop_after: Duration::from_secs(20 * 60),
            checkpoint_creates_in_flight_max: 32,
            checkpoint_reads_in_flight_max: 64,
            history_blocks_cached_max: 1_024,
            collect: true,
            checkpoint_grace: CHECKPOINT_GRACE_MIN,
            freshen_after: Duration::from_secs(450),
            checkpoint_run_max: Duration::from_secs(5 * 60),
            checkpoint_step_docs_max: 32_768,
            checkpoint_delta_entries_per_mille_max: MergeRule::DEFAULT.delta_entries_per_mille_max,
            checkpoint_deltas_max: MergeRule::DEFAULT.deltas_max,
            slot_retention: Duration::from_secs(24 * 60 * 60),
            reload_after: Duration::from_secs(12 * 60 * 60),
            collect_deletes_in_flight_max: 16,
            #[cfg(feature = "defects")]
            defects: Defects::default(),
        }
    }
}

/// The shortest checkpoint grace a world may set (record: "the store refuses a grace
/// under 15 minutes"): a compactor that reused bytes just younger than the freshen age
/// (7.5 minutes) needs the rest of the grace to finish its run (at most 5 minutes).
pub const CHECKPOINT_GRACE_MIN: Duration = Duration::from_secs(15 * 60);

/// A configuration value out of its range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `batch_members_max` is 0 or above a slot's most members.
    #[error("batch member limits: 1 <= batch_members_max <= {}", crate::format::SLOT_MEMBERS_MAX)]
    BatchMembers,
    /// `body_inline_bytes_max` is above what a slot may carry.
    #[error("body_inline_bytes_max above {}", crate::format::slot::INLINE_BODY_BYTES_MAX)]
    BodyInline,
    /// `batches_ahead_max` is above 3.
    #[error("batches_ahead_max above 3")]
    BatchesAhead,
    /// `queue_members_max` is 0.
    #[error("queue_members_max is 0")]
    QueueMembers,
    /// `request_deadline` is zero.
    #[error("request_deadline is zero")]
    Deadline,
    /// `retry_base` is zero or above `retry_cap`.
    #[error("retry bounds: zero < retry_base <= retry_cap")]
    Retry,
    /// `replay_gets_max` or `list_page_max` is 0.
    #[error("replay_gets_max or list_page_max is 0")]
    Replay,
    /// `read_pending_max`, `probe_attempts_max`, `recent_slots_max`, `ring_events_max` or
    /// `watches_max` is 0.
    #[error("a read, slot index, ring or watch limit is 0")]
    Reads,
    /// A checkpoint cadence (`checkpoint_slots`, `checkpoint_interval`,
    /// `checkpoint_carried_bytes`), in-flight or cache limit is zero, `backstop_after` is under `checkpoint_interval`, or
    /// `checkpoint_deltas_max` is above what a root may name.
    #[error(
        "checkpoint limits: checkpoint_slots, checkpoint_interval, checkpoint_carried_bytes and \
         the in-flight and cache limits above zero, backstop_after >= checkpoint_interval, checkpoint_deltas_max <= {}",
        crate::format::DELTAS_PER_ROOT_MAX
    )]
    Checkpoints,
    /// The grace is under [`CHECKPOINT_GRACE_MIN`] or shorter than the freshen age plus a
    /// run, the slot retention is under twice the reload age (or that age is zero), or
    /// `collect_deletes_in_flight_max` is 0.
    #[error(
        "collection limits: checkpoint_grace >= {CHECKPOINT_GRACE_MIN:?}, freshen_after + \
         checkpoint_run_max <= checkpoint_grace, 2 * reload_after <= slot_retention, \
         collect_deletes_in_flight_max > 0"
    )]
    Collection,
    /// `view_age_max` is zero or past `checkpoint_grace`, or `view_images_max` is 0.
    #[error("view_age_max above zero and at most checkpoint_grace, view_images_max above zero")]
    Views,
    /// A search bound is zero.
    #[error("search_wait, search_idle_max, search_bytes_max, search_fetches_max, search_step_bytes_max above zero")]
    Search,
    /// `checkpoint_step_docs_max` is under a slot's most members.
    #[error("checkpoint_step_docs_max {found} under a slot's most members ({min})")]
    StepDocs {
        /// The configured `checkpoint_step_docs_max`.
        found: usize,
        /// A slot's most members.
        min: usize,
    },
}

impl Config {
    /// Checks every value against its range; the first one out of range is the error.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let slot_max = crate::format::SLOT_MEMBERS_MAX;
        if self.batch_members_max == 0 || self.batch_members_max > slot_max {
            return Err(ConfigError::BatchMembers);
        }
        if self.body_inline_bytes_max > crate::format::slot::INLINE_BODY_BYTES_MAX {
            return Err(ConfigError::BodyInline);
        }
        if self.batches_ahead_max > 3 {
            return Err(ConfigError::BatchesAhead);
        }
        if self.queue_members_max == 0 {
            return Err(ConfigError::QueueMembers);
        }
        if self.request_deadline.is_zero() {
            return Err(ConfigError::Deadline);
        }
        if self.retry_base.is_zero() || self.retry_cap < self.retry_base {
            return Err(ConfigError::Retry);
        }
        if self.replay_gets_max == 0 || self.list_page_max == 0 {
            return Err(ConfigError::Replay);
        }
        if self.read_pending_max == 0
            || self.probe_attempts_max == 0
            || self.recent_slots_max == 0
            || self.ring_events_max == 0
            || self.watches_max == 0
        {
            return Err(ConfigError::Reads);
        }
        if self.checkpoint_slots == 0
            || self.checkpoint_interval.is_zero()
            || self.checkpoint_carried_bytes == 0
            || self.backstop_after < self.checkpoint_interval
            || self.checkpoint_creates_in_flight_max == 0
            || self.checkpoint_reads_in_flight_max == 0
            || self.history_blocks_cached_max == 0
        {
            return Err(ConfigError::Checkpoints);
        }
        if self.checkpoint_deltas_max > crate::format::DELTAS_PER_ROOT_MAX {
            return Err(ConfigError::Checkpoints);
        }
        if self.checkpoint_step_docs_max < slot_max {
            return Err(ConfigError::StepDocs { found: self.checkpoint_step_docs_max, min: slot_max });
        }
        if self.checkpoint_grace < CHECKPOINT_GRACE_MIN
            || self.freshen_after.saturating_add(self.checkpoint_run_max) > self.checkpoint_grace
            || self.reload_after.is_zero()
            || self.reload_after.saturating_mul(2) > self.slot_retention
            || self.collect_deletes_in_flight_max == 0
        {
            return Err(ConfigError::Collection);
        }
        if self.view_age_max.is_zero()
            || self.view_age_max > self.checkpoint_grace
            || self.view_images_max == 0
        {
            return Err(ConfigError::Views);
        }
        if self.search_wait.is_zero()
            || self.search_idle_max.is_zero()
            || self.search_bytes_max == 0
            || self.search_fetches_max == 0
            || self.search_step_bytes_max == 0
        {
            return Err(ConfigError::Search);
        }
        Ok(())
    }

    /// The deliberate defects switched on: none unless built with the `defects` feature
    /// and set by a test.
    pub fn defects(&self) -> Defects {
        #[cfg(feature = "defects")]
        return self.defects;
        #[cfg(not(feature = "defects"))]
        Defects::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_valid_and_holds_the_record_numbers() {
        let c = Config::default();
        assert_eq!(c.validate(), Ok(()));
        assert_eq!((c.batch_members_max, c.batches_ahead_max), (256, 2));
        assert_eq!((c.body_inline_bytes_max, c.slot_bytes_max), (16 * 1024, 1024 * 1024));
        assert_eq!(c.request_deadline, Duration::from_secs(10));
    }

    #[test]
    fn a_grace_under_the_floor_is_refused() {
        let c =
            Config { checkpoint_grace: CHECKPOINT_GRACE_MIN - Duration::from_millis(1), ..Config::default() };
        assert_eq!(c.validate(), Err(ConfigError::Collection));
    }

    #[test]
    fn a_view_age_past_the_grace_or_zero_is_refused() {
        let past =
            Config { view_age_max: CHECKPOINT_GRACE_MIN + Duration::from_millis(1), ..Config::default() };
        assert_eq!(past.validate(), Err(ConfigError::Views));
        let zero = Config { view_age_max: Duration::ZERO, ..Config::default() };
        assert_eq!(zero.validate(), Err(ConfigError::Views));
        let longer = Config {
            checkpoint_grace: 2 * CHECKPOINT_GRACE_MIN,
            view_age_max: 2 * CHECKPOINT_GRACE_MIN,
            ..Config::default()
        };
        assert_eq!(longer.validate(), Ok(()), "a longer grace allows longer views");
    }

    #[test]
    fn a_zero_checkpoint_cadence_of_any_kind_is_refused() {
        let zero_slots = Config { checkpoint_slots: 0, ..Config::default() };
        let zero_interval = Config { checkpoint_interval: Duration::ZERO, ..Config::default() };
        let zero_carried = Config { checkpoint_carried_bytes: 0, ..Config::default() };
        for c in [zero_slots, zero_interval, zero_carried] {
            assert_eq!(c.validate(), Err(ConfigError::Checkpoints));
        }
    }

    #[test]
    fn a_freshen_age_that_leaves_no_room_for_a_run_is_refused() {
        let c = Config { freshen_after: Duration::from_secs(700), ..Config::default() };
        assert_eq!(c.validate(), Err(ConfigError::Collection));
    }

    #[test]
    fn a_reload_age_over_half_the_slot_retention_is_refused() {
        let c = Config { reload_after: Duration::from_millis(43_200_001), ..Config::default() };
        assert_eq!(c.validate(), Err(ConfigError::Collection));
    }

    #[test]
    fn a_step_smaller_than_one_slot_is_refused() {
        let min = crate::format::SLOT_MEMBERS_MAX;
        let c = Config { checkpoint_step_docs_max: min - 1, ..Config::default() };
        assert_eq!(c.validate(), Err(ConfigError::StepDocs { found: min - 1, min }));
        let c = Config { checkpoint_step_docs_max: min, ..Config::default() };
        assert_eq!(c.validate(), Ok(()));
    }

    #[test]
    fn more_than_three_batches_ahead_is_refused() {
        let c = Config { batches_ahead_max: 4, ..Config::default() };
        assert_eq!(c.validate(), Err(ConfigError::BatchesAhead));
    }

    #[test]
    fn a_batch_past_a_slot_or_a_body_past_what_a_slot_carries_is_refused() {
        let c = Config { batch_members_max: crate::format::SLOT_MEMBERS_MAX + 1, ..Config::default() };
        assert_eq!(c.validate(), Err(ConfigError::BatchMembers));
        let c = Config {
            body_inline_bytes_max: crate::format::slot::INLINE_BODY_BYTES_MAX + 1,
            ..Config::default()
        };
        assert_eq!(c.validate(), Err(ConfigError::BodyInline));
    }
}
