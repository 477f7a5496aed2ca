//! A replica of one world: the one entry point of the kernel. It routes each input to
//! the part that owns it (opening, committer, bodies, read path, change feed) and then
//! lets each make the progress it can without the bucket. Owners report a reason to fail
//! closed; only the replica acts on it.

use crate::blob::{BlobOutcome, BlobResult};
use crate::bodies::{Bodies, BodyEvent};
use crate::collector::{Collector, CollectorStats};
use crate::committer::{Committer, CommitterStats};
use crate::compactor::{Compactor, CompactorStats, LedgerHeld};
use crate::config::{Config, ConfigError};
use crate::effect::{Effect, Input, Read, Request, Warning, WatchEnd};
use crate::feed::{Feed, FeedStats};
use crate::format::Keys;
use crate::history::History;
use crate::ids::{RequestId, StoreId, WorldId};
use crate::io::{Call, Io, Purpose, RetryPolicy};
use crate::open::{OpenCall, Opening, Progress};
use crate::reads::{ReadStats, Reads};
use crate::reply::{FailReason, Reply, WriteError};
use crate::search::Search;
use crate::snapshot::Snapshot;
use crate::time::Instant;
use crate::world::{validate, ReceiptKey, WorldState};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// Who this replica is and which world it serves.
#[derive(Clone, Debug)]
pub struct Identity {
    /// The world this replica serves; None adopts the marker's (and at genesis takes an
    /// id drawn from `rng_seed`).
    pub world_id: Option<WorldId>,
    /// Names this replica incarnation; recorded in every slot it writes.
    pub store_id: StoreId,
    /// Key prefix of the world in the bucket.
    pub prefix: String,
    /// Seeds the replica's RNG (backoff jitter). Same seed, same inputs: same outputs.
    pub rng_seed: u64,
    /// Keys the receipt window's hash of operation ids (clients choose them): drawn from
    /// the system's random source by a production embedder, from the run's seed by a
    /// simulation. Changes no answer.
    pub receipt_key: ReceiptKey,
}

/// What a health report reads of a replica at one instant: facts, no judgement (the
/// embedder decides what is degraded). Ages are on the replica's own clock, the one its
/// inputs carry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplicaHealth {
    /// It holds a confirmed state (it opened).
    pub open: bool,
    /// Why it failed closed, once it has.
    pub failed: Option<FailReason>,
    /// The served snapshot's last sequence, once open.
    pub sequence: Option<u64>,
    /// Since the served state (or an older one of it) was last known to be the tip: the
    /// age the reload rule bounds (SPEC 10.15).
    pub unconfirmed: Option<core::time::Duration>,
    /// The newest slot installed, first and last sequence, and how long ago.
    pub newest_slot: Option<(u64, u64, core::time::Duration)>,
    /// Probe flights failed since a probe call last succeeded...
    pub probe_failures_in_row: u32,
    /// ...and in all.
    pub probe_failures: u64,
    /// A checkpoint is being written.
    pub checkpointing: bool,
    /// A drop is under way.
    pub collecting: bool,
    /// The backend cannot condition a delete, so nothing is collected.
    pub collection_off: bool,
    /// The last drop given up: how long ago, and the store's error if one ended it.
    pub collector_last_abandoned: Option<(core::time::Duration, Option<crate::blob::BlobError>)>,
    /// Writes waiting in the queue, not yet in a batch.
    pub queued: usize,
    /// Blob calls in flight.
    pub calls_in_flight: usize,
}

/// One replica. Feed it inputs with `now`; after each, drain [`Replica::poll_effect`] until
/// it returns None and schedule a wake-up at [`Replica::poll_timeout`].
pub struct Replica {
    io: Io,
    opening: Option<Opening>,
    snapshot: Option<Snapshot>,
    committer: Committer,
    compactor: Compactor,
    collector: Collector,
    bodies: Bodies,
    history: History,
    reads: Reads,
    search: Search,
    feed: Feed,
    /// Watches asked for while the world was still opening.
    early_watches: Vec<(RequestId, u64, u32)>,
    watches_max: usize,
    /// A snapshot unconfirmed this long is not trusted (SPEC 10.15, the reload rule).
    reload_after: core::time::Duration,
    failed: Option<FailReason>,
    /// The deliberate defect: a wake-up asked for at once, always.
    timer_never_cleared: bool,
}

impl Replica {
    /// Starts opening the world: the first effects read its marker.
    pub fn new(config: Config, identity: Identity, now: Instant) -> Result<Replica, ConfigError> {
        config.validate()?;
        let keys = Keys::new(&identity.prefix);
        let mut io = Io::new(
            ChaCha8Rng::seed_from_u64(identity.rng_seed),
            RetryPolicy { base: config.retry_base, cap: config.retry_cap, hedge_after: config.hedge_after },
        );
        // The id a genesis would take, drawn from the seeded RNG.
        let genesis_world_id = {
            use rand_core::Rng;
            let mut id = [0u8; 16];
            io.rng.fill_bytes(&mut id);
            WorldId(id)
        };
        io.read_only = config.read_only;
        let config = match config.read_only {
            // It writes no checkpoint, so it collects nothing either.
            true => Config { compaction: crate::config::CompactionRole::Off, ..config },
            false => config,
        };
        let opening = Opening::start(&config, keys.clone(), &identity, genesis_world_id, now, &mut io);
        Ok(Replica {
            reads: Reads::new(&config, keys.clone()),
            search: Search::new(&config, keys.clone()),
            feed: Feed::new(&config, keys.clone()),
            watches_max: config.watches_max,
            reload_after: config.reload_after,
            timer_never_cleared: config.defects().timer_never_cleared,
            bodies: Bodies::new(keys.clone(), config.body_cache_bytes_max, config.body_inline_bytes_max),
            history: History::new(keys.clone(), config.history_blocks_cached_max),
            compactor: Compactor::new(&config, keys.clone(), now),
            collector: Collector::new(&config, keys.clone()),
            committer: Committer::new(config, keys.clone(), identity.store_id),
            io,
            opening: Some(opening),
            snapshot: None,
            early_watches: Vec::new(),
            failed: None,
        })
    }

    /// Feeds one input at `now`; then drain [`Replica::poll_effect`] (the drain rule).
    pub fn handle(&mut self, now: Instant, input: Input) {
        // Requests join a batch whose seal waits for them; anything else ends the wait.
        if !matches!(input, Input::Request { .. }) {
            self.committer.next_input();
        }
        self.check_confirmed(now);
        match input {
            Input::Request { id, request } => self.request(now, id, request),
            Input::BlobDone { id, result } => self.blob_completed(now, id, result),
            Input::BlobDonePrepared { id, result, part } => {
                self.search.offer(part);
                self.blob_completed(now, id, result);
                self.search.withdraw();
            }
            Input::Follow { sequence } => {
                if let Some(sn) = self.snapshot.as_mut() {
                    self.committer.on_hint(now, sn, sequence, &mut self.io.marks);
                    sn.hinted = sn.hinted.max(sequence);
                }
            }
            Input::WatchCredit { id, events } => match self.early_watches.iter_mut().find(|w| w.0 == id) {
                Some(w) => w.2 = w.2.saturating_add(events),
                None => self.feed.credit(id, events),
            },
            Input::Unwatch { id } => {
                self.early_watches.retain(|w| w.0 != id);
                self.feed.unwatch(id);
            }
            Input::ViewRelease { view } => {
                if let Some(sn) = self.snapshot.as_mut() {
                    sn.views.release(view);
                }
            }
        }
        self.settle(now);
    }

    /// Whether the replica waits for one more input to seal its next batch (it just
    /// answered a slot's writes, `Config::seal_after_answers`); it asks to be woken at once.
    pub fn seal_deferred(&self) -> bool {
        self.committer.seal_deferred()
    }

    /// Call at (or after) the instant [`Replica::poll_timeout`] named.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.committer.next_input();
        self.check_confirmed(now);
        self.io.reissue_due(now);
        self.committer.expire(now, &mut self.io);
        self.reads.expire(now, &mut self.io);
        self.settle(now);
    }

    /// The next effect to carry out, oldest first; None when drained.
    pub fn poll_effect(&mut self) -> Option<Effect> {
        self.io.effects.pop_front()
    }

    /// The next write phases kept, oldest first; None when taken. Only the newest 1,024
    /// are kept: take them after each drain of effects, or not at all.
    pub fn poll_write_phases(&mut self) -> Option<crate::committer::WritePhases> {
        self.io.phases.pop_front()
    }

    /// The replica's health facts at `now`. Reads only.
    pub fn health(&self, now: Instant) -> ReplicaHealth {
        let sn = self.snapshot.as_ref();
        ReplicaHealth {
            open: sn.is_some(),
            failed: self.failed.clone(),
            sequence: sn.map(|s| s.world.sequence()),
            unconfirmed: sn.map(|s| now.saturating_since(s.confirmed_at)),
            newest_slot: sn
                .and_then(|s| s.recent.newest(1).next())
                .map(|span| (span.first, span.last, now.saturating_since(span.installed_at))),
            probe_failures_in_row: self.reads.flights_failed_in_row(),
            probe_failures: self.reads.stats.flights_failed,
            checkpointing: self.compactor.is_running(),
            collecting: self.collector.is_running(),
            collection_off: self.collector.stats.off,
            collector_last_abandoned: self
                .collector
                .last_abandoned
                .map(|(at, error)| (now.saturating_since(at), error)),
            queued: self.committer.queued(),
            calls_in_flight: self.io.in_flight_len(),
        }
    }

    /// The next instant the replica needs [`Replica::handle_timeout`].
    pub fn poll_timeout(&self) -> Option<Instant> {
        // A replica that failed closed answers nothing more and needs no wake-up; its
        // owners' timers (a checkpoint due, say) would otherwise wake it forever.
        if self.failed.is_some() {
            return None;
        }
        if self.timer_never_cleared {
            return Some(Instant::ZERO);
        }
        let compactor = self.snapshot.as_ref().and_then(|sn| self.compactor.next_deadline(sn));
        let feed = self.snapshot.as_ref().and_then(|sn| self.feed.next_deadline(sn));
        // The index settles only with a snapshot: before the open it has nothing to do.
        let search = self.snapshot.as_ref().and_then(|_| self.search.next_deadline());
        [
            self.io.next_retry(),
            self.committer.next_deadline(),
            self.reads.next_deadline(),
            compactor,
            feed,
            search,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn request(&mut self, now: Instant, id: RequestId, request: Request) {
        // A search starts the index at once, so the settle after it can already build.
        if let Request::Read(Read::Search { .. }) | Request::ViewRead { read: Read::Search { .. }, .. } =
            &request
        {
            self.search.touch(now);
        }
        match request {
            Request::Write(_) if self.io.read_only => {
                let reply = Reply::Write(Err(WriteError::ReadOnlyReplica));
                self.io.effects.push_back(Effect::Reply { id, reply });
            }
            Request::Write(w) => match validate(&w.mutation) {
                Err(invalid) => {
                    let reply = Reply::Write(Err(WriteError::Invalid(invalid)));
                    self.io.effects.push_back(Effect::Reply { id, reply });
                }
                Ok(valid) => self.committer.submit(now, id, w.op_id, valid, &mut self.io),
            },
            Request::Read(read) => self.reads.submit(now, id, &read, &mut self.io),
            Request::ViewRead { view, pinned, read } => {
                self.reads.submit_view(now, id, (view, pinned), &read, self.snapshot.as_mut(), &mut self.io)
            }
            Request::Watch { cursor, credit } => {
                if let Some(reason) = &self.failed {
                    let end = WatchEnd::Failed(reason.clone());
                    self.io.effects.push_back(Effect::WatchEnded { id, end });
                } else if let Some(sn) = &self.snapshot {
                    self.feed.watch(id, cursor, credit, sn, &mut self.io);
                } else if self.early_watches.len() < self.watches_max {
                    self.io.marks.hit(crate::marks::Mark::WatchEarly);
                    self.early_watches.push((id, cursor, credit));
                } else {
                    let end = WatchEnd::Busy { watches: self.early_watches.len() };
                    self.io.effects.push_back(Effect::WatchEnded { id, end });
                }
            }
        }
    }

    fn blob_completed(&mut self, now: Instant, id: crate::ids::BlobOpId, mut result: BlobResult) {
        // A page may come in any order (a local directory is walked unsorted): every
        // owner sees its entries in key order.
        if let Ok(BlobOutcome::Listed { entries, .. }) = &mut result {
            entries.sort_unstable_by(|a, b| a.key.cmp(&b.key));
        }
        self.io.store_clock.observe(&result, now);
        if let Some((call, result)) = self.io.complete(id, result) {
            self.blob_done(now, call, result);
        }
    }

    /// Whether blob call `id` (just emitted, in flight) reads a segment part for the
    /// index, and under which name: its completion may then come as
    /// [`Input::BlobDonePrepared`], the part tokenized off the replica's thread.
    pub fn search_part(&self, id: crate::ids::BlobOpId) -> Option<crate::format::SegmentName> {
        match self.io.purpose_of(id)? {
            Purpose::Search(crate::search::SearchCall::Part { name, .. }) => Some(*name),
            _ => None,
        }
    }

    /// Routes a completion to the owner that made the call. Only the replica turns an
    /// owner's error into the replica's failure.
    fn blob_done(&mut self, now: Instant, call: Call, result: BlobResult) {
        if self.failed.is_some() {
            return;
        }
        let done = match call.purpose.clone() {
            Purpose::Open(what) => self.open_done(now, what, call, result),
            Purpose::Body(what) => match self.bodies.on_done(now, what, call, result, &mut self.io) {
                Ok(Some(BodyEvent::Stored(hash))) => {
                    self.committer.on_body_stored(&hash);
                    Ok(())
                }
                Ok(Some(BodyEvent::Read(hash, body))) => {
                    if let Some(sn) = &self.snapshot {
                        let (bodies, io) = (&mut self.bodies, &mut self.io);
                        self.committer.on_body_read(now, sn, hash, body.clone(), bodies, io);
                    }
                    self.reads.on_body(&hash, &body, &mut self.io);
                    self.search.on_body(&hash, &body);
                    Ok(())
                }
                Ok(None) => Ok(()),
                Err(reason) => Err(reason),
            },
            Purpose::Commit(what) => {
                let sn = self.snapshot.as_mut().expect("the committer calls only once open");
                self.committer.on_done(now, sn, what, call, result, &mut self.io)
            }
            Purpose::Probe(what) => {
                let sn = self.snapshot.as_mut().expect("probes only once open");
                self.reads.on_done(now, sn, self.committer.creating(), (what, call), result, &mut self.io)
            }
            Purpose::Feed(what) => {
                let sn = self.snapshot.as_ref().expect("the feed calls only once open");
                self.feed.on_done(now, sn, what, call, result, &mut self.io)
            }
            Purpose::Compact(what) => {
                let store_now_us = self.io.store_clock.now_us(now);
                self.compactor.on_done(now, what, call, result, store_now_us, &mut self.io)
            }
            Purpose::Collect(what) => {
                self.collector.on_done(now, what, call, result, &mut self.io);
                Ok(())
            }
            Purpose::Search(what) => {
                self.search.on_done(now, what, call, result, &mut self.io);
                Ok(())
            }
            Purpose::History(what) => match self.history.on_done(now, what, call, result, &mut self.io) {
                Ok(Some((name, block))) => {
                    self.compactor.on_history(name, &block);
                    self.reads.on_history(&name);
                    Ok(())
                }
                Ok(None) => Ok(()),
                Err(reason) => Err(reason),
            },
        };
        if let Err(reason) = done {
            self.fail(reason);
        }
    }

    fn open_done(
        &mut self,
        now: Instant,
        what: OpenCall,
        call: Call,
        result: BlobResult,
    ) -> Result<(), FailReason> {
        let Some(opening) = self.opening.as_mut() else { return Ok(()) };
        match opening.on_done(now, what, call, result, &mut self.io) {
            Progress::Working => Ok(()),
            Progress::Open(mut sn) => {
                let opening = self.opening.take().expect("opening");
                let skipped = opening.skipped.len();
                for (key, reason) in opening.skipped {
                    self.io.effects.push_back(Effect::Warning(Warning::CheckpointSkipped { key, reason }));
                }
                let (next_sequence, stored) = match opening.loaded {
                    Some(loaded) => {
                        self.feed.opened_from(loaded.next_sequence, loaded.previous_hash);
                        (loaded.next_sequence, (loaded.names, loaded.layers))
                    }
                    None => (1, Default::default()),
                };
                let created_us = opening.checkpoint_created_us;
                self.compactor.follow(opening.merge_rule);
                self.compactor.opened_at((next_sequence, skipped), created_us, stored, &mut sn, now);
                for (id, cursor, credit) in std::mem::take(&mut self.early_watches) {
                    self.feed.watch(id, cursor, credit, &sn, &mut self.io);
                }
                self.snapshot = Some(*sn);
                if self.search.warms_at_open() && !self.io.read_only {
                    self.search.touch(now);
                }
                Ok(())
            }
            Progress::Failed(reason) => Err(reason),
        }
    }

    /// Lets every part make the progress it can without the bucket.
    fn settle(&mut self, now: Instant) {
        if self.failed.is_some() {
            return;
        }
        let Some(sn) = self.snapshot.as_mut() else { return };
        self.committer.pump(now, sn, &mut self.bodies, &mut self.io);
        let compacted = self.compactor.pump(now, sn, &mut self.history, &mut self.io);
        if let Some(written) = self.compactor.take_written() {
            // The drop's ages are judged on the store's clock; the create just answered
            // with a time, so it is known.
            if let Some(start_us) = self.io.store_clock.now_us(now) {
                self.collector.start(start_us, written);
            }
        }
        self.collector.pump(now, &mut self.io);
        // The backstop poll rides the committer's want of the tip: the same probe, the
        // same cool-off after a failed flight.
        let poll = self.feed.poll_wanted(now, sn);
        let needs_tip = self.committer.needs_tip_since(sn).is_some() || poll;
        let creating = self.committer.creating();
        // After the committer and before the reads: indexing is never on the commit path,
        // and a search judges coverage with every install handed over.
        self.search.settle(now, sn, &mut self.bodies, &mut self.io);
        let owners = (&mut self.bodies, &mut self.history, &mut self.search);
        let served = self.reads.serve(now, sn, creating, needs_tip, owners, &mut self.io);
        self.feed.absorb(sn);
        self.feed.deliver(now, sn, &mut self.io);
        if let Err(reason) = compacted.and(served) {
            self.fail(reason);
        }
    }

    /// The reload rule: a replica back after its snapshot went unconfirmed past the
    /// reload age (a suspended VM, a pause of hours) may hold a world whose next slots
    /// collection deleted, so it would take a missing slot for the tip and serve or build
    /// on a stale world. It answers nothing from it and fails closed asking to be reopened
    /// from the newest checkpoint, before it takes the input that woke it.
    fn check_confirmed(&mut self, now: Instant) {
        let Some(sn) = &self.snapshot else { return };
        let unconfirmed = now.saturating_since(sn.confirmed_at);
        if self.failed.is_none() && unconfirmed > self.reload_after {
            self.io.marks.hit(crate::marks::Mark::ReloadUnconfirmed);
            self.fail(FailReason::Unconfirmed { unconfirmed_ms: unconfirmed.as_millis() as u64 });
        }
    }

    /// Fails the replica closed: every owner answers what waits on it, and the failure is
    /// announced once.
    fn fail(&mut self, reason: FailReason) {
        if self.failed.is_some() {
            return;
        }
        self.opening = None;
        self.committer.abort(&reason, &mut self.io);
        self.io.effects.push_back(Effect::Failed(reason.clone()));
        self.reads.fail(reason.clone(), &mut self.io);
        self.feed.fail(&reason, &mut self.io);
        for (id, _, _) in std::mem::take(&mut self.early_watches) {
            self.io.effects.push_back(Effect::WatchEnded { id, end: WatchEnd::Failed(reason.clone()) });
        }
        self.failed = Some(reason);
    }

    /// The confirmed state, once open.
    pub fn world(&self) -> Option<&WorldState> {
        self.snapshot.as_ref().map(|s| &s.world)
    }

    /// Whether the replica has opened (it holds a confirmed state).
    pub fn is_open(&self) -> bool {
        self.snapshot.is_some()
    }

    /// Whether the replica failed closed.
    pub fn is_failed(&self) -> bool {
        self.failed.is_some()
    }

    /// The rare branches this replica took, counted since it was made (see `marks`).
    pub fn marks(&self) -> &crate::marks::Marks {
        &self.io.marks
    }

    /// The committer's counters.
    pub fn stats(&self) -> CommitterStats {
        CommitterStats { calls_hedged: self.io.hedges_sent, ..self.committer.stats.clone() }
    }

    /// Version records the replica holds in memory (0 until open): those written since
    /// its newest checkpoint, and those of the history blocks it keeps cached.
    pub fn resident_version_records(&self) -> usize {
        self.world().map_or(0, |w| w.held_version_records()) + self.history.cached_records()
    }

    /// What the compactor's ledger holds since the newest checkpoint (SPEC 10.11): it
    /// grows with the changes since then, like the held version records.
    pub fn ledger_held(&self) -> LedgerHeld {
        self.snapshot.as_ref().map_or_else(LedgerHeld::default, |s| s.ledger.held())
    }

    /// Whether a checkpoint is being written (its blocks read, or its objects created).
    pub fn is_checkpointing(&self) -> bool {
        self.compactor.is_running()
    }

    /// Whether a drop is under way.
    pub fn is_collecting(&self) -> bool {
        self.collector.is_running()
    }

    /// The compactor's counters.
    pub fn compactor_stats(&self) -> &CompactorStats {
        &self.compactor.stats
    }

    /// The collector's counters.
    pub fn collector_stats(&self) -> &CollectorStats {
        &self.collector.stats
    }

    /// The read path's counters.
    /// Counters of body search.
    pub fn search_stats(&self) -> &crate::search::SearchStats {
        &self.search.stats
    }

    /// Bytes the search index holds, as counted.
    pub fn search_index_bytes(&self) -> usize {
        self.search.bytes()
    }

    /// Counters of the read path.
    pub fn read_stats(&self) -> &ReadStats {
        &self.reads.stats
    }

    /// The views' counters, and what is pinned now (none until open).
    pub fn view_stats(&self) -> crate::views::ViewStats {
        self.snapshot.as_ref().map_or_else(Default::default, |s| s.views.stats())
    }

    /// The change feed's counters.
    pub fn feed_stats(&self) -> &FeedStats {
        &self.feed.stats
    }

    /// Backlog slots the change feed holds decoded for watchers catching up.
    pub fn feed_slots_cached(&self) -> usize {
        self.feed.slots_cached()
    }

    /// Writes waiting in the queue, not yet in a batch.
    pub fn queued(&self) -> usize {
        self.committer.queued()
    }

    /// Slots won, slots lost and members committed so far: what an embedder's metrics
    /// follow from call to call, without copying every counter.
    pub fn commit_totals(&self) -> (u64, u64, u64) {
        let s = &self.committer.stats;
        (s.slots_won, s.slots_lost, s.members_committed)
    }

    /// Blob calls in flight.
    pub fn calls_in_flight(&self) -> usize {
        self.io.in_flight_len()
    }
}
