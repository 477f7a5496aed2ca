//! The committer: one per world per replica (SPEC 7). It owns the write queue, the batches
//! built and staged ahead, the head batch's slot create, and the confirmed state they all
//! build on. It may not read the bucket except through [`Io`], and never answers a write
//! before the state it was judged against is confirmed.
//!
//! The pipeline is a queue of batches: the head is built on the confirmed state; each
//! batch behind it on the one before it. Only the head creates its slot, and only once its
//! bodies are stored, so slot k+1 is never created before slot k is confirmed.

use crate::blob::{BlobError, BlobOp, BlobOutcome, BlobResult};
use crate::body_cache::BodyCache;
use crate::config::Config;
use crate::effect::Effect;
use crate::format::{encode_body, Keys, Slot};
use crate::hash::Hash32;
use crate::ids::{OperationId, RequestId, StoreId};
use crate::io::{Call, Io, Purpose};
use crate::reply::{FailReason, Reply, WriteError, WriteOk};
use crate::snapshot::{Installed, Snapshot};
use crate::time::Instant;
use crate::world::{
    evaluate, Evaluation, Layered, Overlay, Receipt, Rejection, SlotMember, StateView, ValidMutation,
};
use bytes::Bytes;
use core::time::Duration;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A write waiting for, or riding in, a batch.
#[derive(Clone, Debug)]
pub(crate) struct Pending {
    pub request: RequestId,
    pub op_id: OperationId,
    pub mutation: ValidMutation,
    pub arrived: Instant,
    pub deadline: Instant,
    /// `Uncertain` was already given; the write still rides its slot but is never requeued.
    pub answered: bool,
    /// The base body this write's batch read (appends); kept across requeues so the batch
    /// that takes it next reads nothing again.
    pub read: Option<(Hash32, Bytes)>,
}

/// How a member came out when its batch was built.
#[derive(Clone, Debug)]
enum Judged {
    Member,
    Unchanged { version: u64 },
    Duplicate(Receipt),
    Rejected(Rejection),
}

#[derive(Clone, Debug)]
struct Built {
    pending: Pending,
    judged: Judged,
    /// The last sequence of the state it was judged against.
    at_sequence: u64,
}

#[derive(Clone, Debug)]
struct Encoded {
    slot: Slot,
    bytes: Bytes,
    hash: Hash32,
}

#[derive(Debug)]
struct Batch {
    base_sequence: u64,
    /// Judged members, in queue order.
    built: Vec<Built>,
    /// Taken from the queue, not yet judged: the front waits for a body.
    unbuilt: VecDeque<Pending>,
    overlay: Overlay,
    members: Vec<SlotMember>,
    /// The slot, once built, when any member applied.
    slot: Option<Encoded>,
    /// Bodies this batch's slot names that are not yet stored.
    bodies_waiting: BTreeSet<Hash32>,
    /// When this batch's first slot create was sent.
    first_create_at: Option<Instant>,
}

impl Batch {
    fn is_built(&self) -> bool {
        self.unbuilt.is_empty()
    }

    fn tip_hash_after(&self, before: Hash32) -> Hash32 {
        self.slot.as_ref().map_or(before, |e| e.hash)
    }

    fn latest_arrival(&self) -> Instant {
        self.built
            .iter()
            .filter(|b| !b.pending.answered)
            .map(|b| b.pending.arrived)
            .max()
            .unwrap_or(Instant::ZERO)
    }
}

#[derive(Clone, Debug)]
enum BodyState {
    Creating(Bytes),
    Stored,
}

/// Stored bodies remembered so a batch does not create them again; past this many the
/// oldest is forgotten (a repeated create only costs one call that finds it taken).
const STORED_BODIES_REMEMBERED_MAX: usize = 4_096;

/// Recoveries remembered for a report (newest kept).
const RECOVERIES_REMEMBERED_MAX: usize = 4_096;

/// A peer lost to this store and is retrying: owed a turn at the store's next win.
#[derive(Clone, Copy, Debug)]
struct Owed {
    at: Instant,
    /// The last sequence of the hinted slot: a peer slot after it answers the hint.
    base: u64,
}

/// The store is giving a peer its turn: the head's create waits.
#[derive(Clone, Copy, Debug)]
struct Hold {
    since: Instant,
    until: Instant,
    /// The tip when the hold began: a slot installed past it is the peer's.
    base: u64,
}

/// A loser reading the slots past the one it lost to before it rebuilds (record: "a
/// loser's recovery is then the winner's read, one listing and a rebuild in memory").
#[derive(Debug, Default)]
struct CatchUp {
    /// Listed names not yet installed, in order.
    listed: VecDeque<u64>,
    fetched: BTreeMap<u64, Bytes>,
    /// The listing stopped at its limit: list again after the last name.
    more: bool,
    after: Option<String>,
}

/// Names one catch-up listing asks for.
const CATCH_UP_LIST_MAX: u32 = 64;

/// Counters a report reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitterStats {
    pub slots_won: u64,
    pub slots_lost: u64,
    pub creates_ambiguous: u64,
    pub members_committed: u64,
    pub refused_busy: u64,
    pub expired: u64,
    pub uncertain: u64,
    pub requeued: u64,
    pub body_reads: u64,
    /// Calls sent a second time because the first had not answered in time.
    pub calls_hedged: u64,
    /// Turns given: holds begun, and their time in all.
    pub holds: u64,
    pub hold_ms_total: u64,
    /// Holds that ended because a peer's slot arrived (the rest ran out).
    pub holds_answered: u64,
    /// Time from each lost create to this store's next create, microseconds (newest kept).
    pub recoveries_us: VecDeque<u64>,
}

pub(crate) struct Committer {
    config: Config,
    keys: Keys,
    store_id: StoreId,
    queue: VecDeque<Pending>,
    deadlines: BTreeSet<(Instant, RequestId)>,
    pipeline: VecDeque<Batch>,
    /// A slot create or slot read of the head is in flight or waiting to retry.
    head_call: bool,
    bodies: BTreeMap<Hash32, BodyState>,
    stored_order: VecDeque<Hash32>,
    body_cache: BodyCache,
    pub stats: CommitterStats,
    failed: Option<FailReason>,
    owed: Option<Owed>,
    hold: Option<Hold>,
    /// The last hinted slot that earned a hold: a hint at or before it holds nothing more.
    held_through: u64,
    /// When the head last lost its name, until the next create is sent.
    lost_at: Option<Instant>,
    catch_up: Option<CatchUp>,
}

impl Committer {
    pub fn new(config: Config, keys: Keys, store_id: StoreId) -> Committer {
        Committer {
            body_cache: BodyCache::new(config.body_cache_bytes_max),
            config,
            keys,
            store_id,
            queue: VecDeque::new(),
            deadlines: BTreeSet::new(),
            pipeline: VecDeque::new(),
            head_call: false,
            bodies: BTreeMap::new(),
            stored_order: VecDeque::new(),
            stats: CommitterStats::default(),
            failed: None,
            owed: None,
            hold: None,
            held_through: 0,
            lost_at: None,
            catch_up: None,
        }
    }

    /// The name the head is creating (or settling), while that call is outstanding: a
    /// read's probe leaves that name to the committer.
    pub fn creating(&self) -> Option<u64> {
        if self.head_call {
            self.head_sequence()
        } else {
            None
        }
    }

    /// When the head holds only answers (no member applied), the instant after which the
    /// tip must be confirmed before they can be given.
    pub fn needs_tip_since(&self, sn: &Snapshot) -> Option<Instant> {
        let head = self.pipeline.front()?;
        let waiting = head.is_built() && head.slot.is_none() && head.base_sequence == sn.world.sequence();
        let since = head.latest_arrival();
        (waiting && !sn.current_since(since)).then_some(since)
    }

    /// A body this replica holds in memory.
    pub fn body(&self, hash: &Hash32) -> Option<Bytes> {
        find_body(&self.body_cache, &self.bodies, hash)
    }

    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// The next instant the committer has something to do: a deadline, or a hold's end.
    pub fn next_deadline(&self) -> Option<Instant> {
        let deadline = self.deadlines.first().map(|(t, _)| *t);
        let hold = self.hold.map(|h| h.until);
        deadline.into_iter().chain(hold).min()
    }

    /// A peer committed through `sequence`. Inside one of this store's newest slots, or
    /// the slot it is creating, it means the peer lost that name to this store and is
    /// retrying: the store owes it a turn.
    pub fn on_hint(&mut self, now: Instant, sn: &Snapshot, sequence: u64) {
        if !self.config.turns {
            return;
        }
        let creating = self
            .pipeline
            .front()
            .and_then(|b| b.slot.as_ref())
            .filter(|e| {
                self.head_call && (e.slot.first_sequence..=e.slot.last_sequence()).contains(&sequence)
            })
            .map(|e| e.slot.last_sequence());
        let ours = sn
            .recent
            .holding(sequence)
            .filter(|s| s.store_id == self.store_id)
            .filter(|_| {
                let newer_own = sn.recent.from(sequence).filter(|s| s.store_id == self.store_id).count();
                newer_own <= self.config.turn_slots_max
            })
            .map(|s| s.last);
        let Some(base) = creating.or(ours) else { return };
        if base <= self.held_through {
            return; // this hint already earned its hold
        }
        self.owed = Some(Owed { at: now, base });
    }

    /// Admits a validated write, or refuses it at once.
    pub fn submit(
        &mut self,
        now: Instant,
        request: RequestId,
        op_id: OperationId,
        mutation: ValidMutation,
        io: &mut Io,
    ) {
        if let Some(reason) = &self.failed {
            reply(io, request, Err(WriteError::Failed(reason.clone())));
            return;
        }
        if self.queue.len() >= self.config.queue_members_max {
            self.stats.refused_busy += 1;
            reply(io, request, Err(WriteError::Busy { queued: self.queue.len() }));
            return;
        }
        let deadline = now + Duration::from_millis(self.config.request_deadline_ms);
        self.deadlines.insert((deadline, request));
        self.queue.push_back(Pending {
            request,
            op_id,
            mutation,
            arrived: now,
            deadline,
            answered: false,
            read: None,
        });
    }

    /// Answers every write whose deadline has passed: `Expired` while still queued,
    /// `Uncertain` once in a batch (its slot may yet commit).
    pub fn expire(&mut self, now: Instant, io: &mut Io) {
        let mut due = BTreeSet::new();
        while let Some(&(t, r)) = self.deadlines.first() {
            if t > now {
                break;
            }
            self.deadlines.pop_first();
            due.insert(r);
        }
        if due.is_empty() {
            return;
        }
        let stats = &mut self.stats;
        self.queue.retain(|p| {
            if !due.contains(&p.request) {
                return true;
            }
            stats.expired += 1;
            reply(io, p.request, Err(WriteError::Expired { op_id: p.op_id }));
            false
        });
        for batch in &mut self.pipeline {
            let riding = batch.built.iter_mut().map(|b| &mut b.pending).chain(batch.unbuilt.iter_mut());
            for p in riding {
                if due.contains(&p.request) && !p.answered {
                    p.answered = true;
                    stats.uncertain += 1;
                    reply(io, p.request, Err(WriteError::Uncertain { op_id: p.op_id }));
                }
            }
        }
    }

    /// Fails every waiting write and refuses later ones.
    pub fn fail(&mut self, reason: FailReason, io: &mut Io) {
        if self.failed.is_some() {
            return;
        }
        let mut all: Vec<Pending> = self.queue.drain(..).collect();
        for batch in self.pipeline.drain(..) {
            all.extend(batch.built.into_iter().map(|b| b.pending));
            all.extend(batch.unbuilt);
        }
        for p in all.into_iter().filter(|p| !p.answered) {
            reply(io, p.request, Err(WriteError::Failed(reason.clone())));
        }
        self.deadlines.clear();
        io.effects.push_back(Effect::Failed(reason.clone()));
        self.failed = Some(reason);
    }

    pub fn is_failed(&self) -> bool {
        self.failed.is_some()
    }

    pub fn failure(&self) -> Option<&FailReason> {
        self.failed.as_ref()
    }

    /// Routes the completion of a call this committer made.
    pub fn on_done(&mut self, now: Instant, sn: &mut Snapshot, call: Call, result: BlobResult, io: &mut Io) {
        if self.failed.is_some() {
            return;
        }
        match call.purpose.clone() {
            Purpose::BodyCreate { hash } => self.on_body_created(now, hash, call, result, io),
            Purpose::SlotCreate { sequence } => self.on_slot_created(now, sn, sequence, call, result, io),
            Purpose::SlotGet { sequence } => self.on_slot_read(now, sn, sequence, call, result, io),
            Purpose::CatchUpList => self.on_catch_up_list(now, sn, call, result, io),
            Purpose::CatchUpGet { sequence } => self.on_catch_up_get(now, sn, sequence, call, result, io),
            other => unreachable!("not a committer call: {other:?}"),
        }
    }

    /// Makes every step that needs no bucket answer: forms and builds batches, starts the
    /// head's create, answers batches that need no slot.
    pub fn pump(&mut self, now: Instant, sn: &mut Snapshot, io: &mut Io) {
        if self.failed.is_some() {
            return;
        }
        // A hold ends by its own clock (or a peer's slot), whatever the head is doing.
        self.holding(now, sn);
        loop {
            self.fill_pipeline(now, sn, io);
            if !self.drive_head(now, sn, io) {
                break;
            }
        }
        debug_assert!(self.pipeline.len() <= 1 + self.config.batches_ahead_max);
    }

    fn fill_pipeline(&mut self, now: Instant, sn: &Snapshot, io: &mut Io) {
        if self.catch_up.is_some() {
            return; // batches built now would be stale once the catch-up installs
        }
        let depth_max = 1 + self.config.batches_ahead_max;
        while self.pipeline.len() < depth_max && !self.queue.is_empty() {
            if let Some(last) = self.pipeline.back() {
                if !last.is_built() {
                    return;
                }
            }
            let take = if self.queue.len() >= self.config.batch_members_deep_max {
                self.config.batch_members_deep_max
            } else {
                self.config.batch_members_max
            };
            let unbuilt: VecDeque<Pending> = self.queue.drain(..take.min(self.queue.len())).collect();
            let base_sequence =
                self.pipeline.back().map_or_else(|| sn.world.sequence(), |b| b.overlay.sequence());
            self.pipeline.push_back(Batch {
                base_sequence,
                built: Vec::new(),
                unbuilt,
                overlay: Overlay::new(base_sequence),
                members: Vec::new(),
                slot: None,
                bodies_waiting: BTreeSet::new(),
                first_create_at: None,
            });
            self.build_last(now, sn, io);
        }
    }

    /// Judges the last batch's members in order until one needs a body not at hand.
    fn build_last(&mut self, now: Instant, sn: &Snapshot, io: &mut Io) {
        let world = &sn.world;
        // The batches before the last are its layers; the last is built.
        let batches = self.pipeline.make_contiguous();
        let (ahead, last) = batches.split_at_mut(batches.len() - 1);
        let batch = &mut last[0];
        while let Some(mut p) = batch.unbuilt.pop_front() {
            let mut layers: Vec<&Overlay> = ahead.iter().map(|b| &b.overlay).collect();
            layers.push(&batch.overlay);
            let view = Layered::new(world, &layers);
            if let ValidMutation::Append { path, .. } = &p.mutation {
                if let Some(e) = view.entry(path.as_str()) {
                    let needed = e.body_hash;
                    if p.read.as_ref().is_none_or(|(h, _)| *h != needed) {
                        if let Some(bytes) = find_body(&self.body_cache, &self.bodies, &needed) {
                            p.read = Some((needed, bytes));
                        }
                    }
                }
            }
            let read = p.read.clone();
            let body_of = move |h: &Hash32| read.as_ref().filter(|(rh, _)| rh == h).map(|(_, b)| b.clone());
            let at_sequence = view.sequence();
            let evaluation = evaluate(&view, p.op_id, &p.mutation, &body_of);
            drop(layers);
            let judged = match evaluation {
                Evaluation::NeedsBody(hash) => {
                    let purpose = Purpose::BodyGet { hash };
                    if !io.is_pending(&purpose) {
                        self.stats.body_reads += 1;
                        io.issue(now, purpose, BlobOp::Get { key: self.keys.body(&hash) }, 0);
                    }
                    batch.unbuilt.push_front(p);
                    return;
                }
                Evaluation::Applied { member, body } => {
                    if let Some(body) = body {
                        let hash = member.version.as_ref().expect("a new body makes a version").body_hash;
                        self.body_cache.insert(hash, body.clone());
                        let stored = world.paths_with_body(&hash).next().is_some();
                        if !stored && need_body_stored(&mut self.bodies, &self.keys, hash, body, now, io) {
                            batch.bodies_waiting.insert(hash);
                        }
                    }
                    batch.overlay.apply(&member);
                    batch.members.push(member);
                    Judged::Member
                }
                Evaluation::Unchanged { version } => Judged::Unchanged { version },
                Evaluation::Duplicate(r) => Judged::Duplicate(r),
                Evaluation::Rejected(r) => Judged::Rejected(r),
            };
            batch.built.push(Built { pending: p, judged, at_sequence });
        }
        if !batch.members.is_empty() {
            let prev_hash = ahead.iter().fold(world.tip_hash(), |h, b| b.tip_hash_after(h));
            let slot = Slot {
                world_id: world.world_id(),
                first_sequence: batch.base_sequence + 1,
                store_id: self.store_id,
                prev_hash,
                members: batch.members.clone(),
            };
            let bytes = Bytes::from(slot.encode());
            let hash = Hash32::of(&bytes);
            debug_assert_eq!(slot.last_sequence(), batch.overlay.sequence());
            batch.slot = Some(Encoded { slot, bytes, hash });
        }
    }

    /// Moves the head batch one step. True when it answered and removed the head, so the
    /// pipeline may move again.
    fn drive_head(&mut self, now: Instant, sn: &mut Snapshot, io: &mut Io) -> bool {
        if self.head_call {
            return false;
        }
        let world_sequence = sn.world.sequence();
        let Some(head) = self.pipeline.front_mut() else { return false };
        if !head.is_built() || !head.bodies_waiting.is_empty() {
            return false;
        }
        // A probe or a peer's hint may have installed slots past the head's base. The head
        // still creates: its lost create is the signal (SPEC 7), and what tells peers.
        assert!(head.base_sequence <= world_sequence, "the head builds on a confirmed state");
        if head.slot.is_some() && self.holding(now, sn) {
            return false;
        }
        let Some(head) = self.pipeline.front_mut() else { return true };
        match &head.slot {
            Some(enc) => {
                let sequence = enc.slot.first_sequence;
                if let Some(lost_at) = self.lost_at.take() {
                    if self.stats.recoveries_us.len() == RECOVERIES_REMEMBERED_MAX {
                        self.stats.recoveries_us.pop_front();
                    }
                    self.stats.recoveries_us.push_back(now.saturating_since(lost_at).as_micros() as u64);
                }
                let op = BlobOp::Create { key: self.keys.slot(sequence), bytes: enc.bytes.clone() };
                head.first_create_at.get_or_insert(now);
                self.head_call = true;
                io.issue(now, Purpose::SlotCreate { sequence }, op, 0);
                if self.config.defects.ack_before_confirm {
                    let head = self.pipeline.front_mut().expect("head");
                    answer_batch(head, &mut self.deadlines, io);
                }
                false
            }
            None => {
                // Nothing to commit: answers stand once the base is known to have been
                // the tip after every member arrived (the read path's probe confirms it).
                if head.base_sequence < world_sequence {
                    self.requeue_all();
                    true
                } else if sn.current_since(head.latest_arrival()) {
                    let mut head = self.pipeline.pop_front().expect("head");
                    answer_batch(&mut head, &mut self.deadlines, io);
                    true
                } else {
                    false
                }
            }
        }
    }

    fn on_slot_created(
        &mut self,
        now: Instant,
        sn: &mut Snapshot,
        sequence: u64,
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) {
        debug_assert!(self.head_call);
        debug_assert_eq!(self.head_sequence(), Some(sequence));
        match result {
            Ok(_) => self.commit_head(now, sn, io),
            // The name is already installed: the slot there is known, no read needed.
            Err(BlobError::AlreadyExists) if sequence <= sn.world.sequence() => {
                let theirs =
                    sn.recent.holding(sequence).filter(|s| s.first == sequence).map(|s| (s.hash, s.last));
                let ours = self.pipeline.front().and_then(|b| b.slot.as_ref()).map(|e| e.hash);
                self.lost_at.get_or_insert(now);
                match theirs {
                    Some((hash, _)) if Some(hash) == ours => self.commit_head(now, sn, io),
                    Some((_, last)) => self.lost(last, now, sn, io),
                    // Older than the index: read it to learn whose it is, and where it ends.
                    None => self.read_slot(now, sequence, io),
                }
            }
            Err(BlobError::AlreadyExists) => {
                self.lost_at.get_or_insert(now);
                self.read_slot(now, sequence, io)
            }
            Err(BlobError::Throttled) => io.retry_later(now, call),
            Err(_) => {
                self.stats.creates_ambiguous += 1;
                if self.config.defects.skip_ambiguous_read {
                    self.commit_head(now, sn, io);
                } else {
                    self.read_slot(now, sequence, io);
                }
            }
        }
    }

    fn read_slot(&mut self, now: Instant, sequence: u64, io: &mut Io) {
        io.issue(now, Purpose::SlotGet { sequence }, BlobOp::Get { key: self.keys.slot(sequence) }, 0);
    }

    fn on_slot_read(
        &mut self,
        now: Instant,
        sn: &mut Snapshot,
        sequence: u64,
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) {
        debug_assert!(self.head_call);
        match result {
            Ok(BlobOutcome::Got { bytes, .. }) => {
                let ours = self.pipeline.front().and_then(|b| b.slot.as_ref()).map(|e| e.hash);
                if ours == Some(Hash32::of(&bytes)) {
                    self.commit_head(now, sn, io);
                } else {
                    self.install_peer_slot(now, sn, sequence, &bytes, io);
                }
            }
            Err(BlobError::NotFound) => {
                if let Some(enc) = self.pipeline.front().and_then(|b| b.slot.as_ref()) {
                    // Absent after an ambiguous create: the identical bytes again.
                    debug_assert_eq!(enc.slot.first_sequence, sequence);
                    let op = BlobOp::Create { key: self.keys.slot(sequence), bytes: enc.bytes.clone() };
                    io.issue(now, Purpose::SlotCreate { sequence }, op, call.attempt + 1);
                } else {
                    // A tip check saw the slot, the read did not: slots are never deleted.
                    self.fail(FailReason::SlotVanished { sequence }, io);
                }
            }
            _ => io.retry_later(now, call),
        }
    }

    /// The head's slot is in the log: install it and answer its members.
    fn commit_head(&mut self, now: Instant, sn: &mut Snapshot, io: &mut Io) {
        // A name found taken was ours after all: no loss to recover from.
        self.lost_at = None;
        let mut head = self.pipeline.pop_front().expect("a head to commit");
        let enc = head.slot.clone().expect("a committed head has a slot");
        match sn.install(&enc.slot, enc.hash, now) {
            // The slot landed after its first create was sent; then the world was exactly
            // this, so it was the tip at an instant at or after that send.
            Ok(Installed::Applied) => sn.confirm_current(head.first_create_at.expect("a create was sent")),
            Ok(Installed::AlreadyHeld) => {}
            Err(e) => panic!("own slot {} does not apply: {e:?}", enc.slot.first_sequence),
        }
        self.head_call = false;
        self.start_hold(now, sn);
        self.stats.slots_won += 1;
        self.stats.members_committed += enc.slot.members.len() as u64;
        answer_batch(&mut head, &mut self.deadlines, io);
        io.effects.push_back(Effect::Committed { sequence: enc.slot.last_sequence() });
    }

    /// A peer's slot holds the name the head wanted: install it and requeue every batch.
    fn install_peer_slot(
        &mut self,
        now: Instant,
        sn: &mut Snapshot,
        sequence: u64,
        bytes: &[u8],
        io: &mut Io,
    ) {
        let key = self.keys.slot(sequence);
        let slot = match Slot::decode(bytes) {
            Ok(s) => s,
            Err(error) => return self.fail(FailReason::Decode { key, error }, io),
        };
        if slot.first_sequence != sequence {
            return self.fail(
                FailReason::Decode {
                    key,
                    error: crate::format::DecodeError::Misnamed(
                        crate::format::NameRule::SlotUnderAnotherName,
                    ),
                },
                io,
            );
        }
        if let Err(e) = sn.install(&slot, Hash32::of(bytes), now) {
            return self.fail(FailReason::Apply(e), io);
        }
        self.lost(slot.last_sequence(), now, sn, io);
    }

    /// After a win: if a peer is owed a turn, and no peer slot answered the hint since, and
    /// the hint is younger than a hold, hold the next create.
    fn start_hold(&mut self, now: Instant, sn: &Snapshot) {
        let Some(owed) = self.owed.take() else { return };
        let hold = Duration::from_millis(self.config.hold_ms);
        let answered = sn.recent.from(owed.base + 1).any(|s| s.store_id != self.store_id);
        if answered || now.saturating_since(owed.at) > hold {
            return;
        }
        self.stats.holds += 1;
        self.held_through = owed.base;
        self.hold = Some(Hold { since: now, until: now + hold, base: sn.world.sequence() });
    }

    /// Whether the head's create must wait for a peer's turn. Ends the hold when a peer's
    /// slot arrived (rebuilding the held batches once on it) or when it ran out.
    fn holding(&mut self, now: Instant, sn: &Snapshot) -> bool {
        let Some(h) = self.hold else { return false };
        let answered = sn.world.sequence() > h.base;
        if !answered && now < h.until {
            return true;
        }
        self.hold = None;
        self.stats.hold_ms_total += now.saturating_since(h.since).as_millis() as u64;
        if answered {
            self.stats.holds_answered += 1;
            self.requeue_all();
        }
        false
    }

    /// A peer's slot, through `winner_last`, holds the head's name: report it to peers and
    /// rebuild every batch on the new tip.
    fn lost(&mut self, winner_last: u64, now: Instant, sn: &Snapshot, io: &mut Io) {
        self.lost_at.get_or_insert(now);
        self.head_call = false;
        self.stats.slots_lost += 1;
        io.effects.push_back(Effect::Committed { sequence: winner_last });
        self.requeue_all();
        // A peer said the world is further on: the next name is taken too. List past the
        // tip and read what is there before rebuilding, rather than lose one name a time.
        if sn.behind_hints() {
            let after = sn.recent.holding(sn.world.sequence()).map(|s| self.keys.slot(s.first));
            self.catch_up = Some(CatchUp { after, ..CatchUp::default() });
            self.list_catch_up(now, io);
        }
    }

    fn list_catch_up(&mut self, now: Instant, io: &mut Io) {
        let after = self.catch_up.as_ref().expect("catching up").after.clone();
        let op =
            BlobOp::List { prefix: self.keys.log_prefix(), start_after: after, limit: CATCH_UP_LIST_MAX };
        io.issue(now, Purpose::CatchUpList, op, 0);
    }

    fn on_catch_up_list(
        &mut self,
        now: Instant,
        sn: &mut Snapshot,
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) {
        let Ok(BlobOutcome::Listed { entries, more }) = result else {
            return io.retry_later(now, call);
        };
        let Some(cu) = self.catch_up.as_mut() else { return };
        cu.more = more;
        for e in &entries {
            match self.keys.parse_slot(&e.key) {
                Some(seq) if seq > sn.world.sequence() => {
                    cu.listed.push_back(seq);
                    io.issue(
                        now,
                        Purpose::CatchUpGet { sequence: seq },
                        BlobOp::Get { key: e.key.clone() },
                        0,
                    );
                }
                Some(_) => {}
                None => {
                    let error = crate::format::DecodeError::Foreign;
                    return self.fail(FailReason::Decode { key: e.key.clone(), error }, io);
                }
            }
        }
        cu.after = entries.last().map(|e| e.key.clone()).or(cu.after.take());
        self.advance_catch_up(now, sn, io);
    }

    fn on_catch_up_get(
        &mut self,
        now: Instant,
        sn: &mut Snapshot,
        sequence: u64,
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) {
        match result {
            // A read that lands after the catch-up ended (a probe installed the slot first)
            // has nothing left to do.
            Ok(BlobOutcome::Got { bytes, .. }) => {
                let Some(cu) = self.catch_up.as_mut() else { return };
                cu.fetched.insert(sequence, bytes);
                self.advance_catch_up(now, sn, io);
            }
            Err(BlobError::NotFound) => self.fail(FailReason::SlotVanished { sequence }, io),
            _ if self.catch_up.is_none() => {}
            _ => io.retry_later(now, call),
        }
    }

    /// Installs the listed slots in order as they arrive; lists on, or ends the catch-up.
    fn advance_catch_up(&mut self, now: Instant, sn: &mut Snapshot, io: &mut Io) {
        let cu = self.catch_up.as_mut().expect("catching up");
        while let Some(&seq) = cu.listed.front() {
            if seq <= sn.world.sequence() {
                cu.listed.pop_front(); // a probe installed it meanwhile
                cu.fetched.remove(&seq);
                continue;
            }
            let Some(bytes) = cu.fetched.remove(&seq) else { break };
            cu.listed.pop_front();
            let key = self.keys.slot(seq);
            let slot = match Slot::decode(&bytes) {
                Ok(s) if s.first_sequence == seq => s,
                Ok(_) => {
                    let error =
                        crate::format::DecodeError::Misnamed(crate::format::NameRule::SlotUnderAnotherName);
                    return self.fail(FailReason::Decode { key, error }, io);
                }
                Err(error) => return self.fail(FailReason::Decode { key, error }, io),
            };
            if let Err(e) = sn.install(&slot, Hash32::of(&bytes), now) {
                return self.fail(FailReason::Apply(e), io);
            }
        }
        let cu = self.catch_up.as_ref().expect("catching up");
        if !cu.listed.is_empty() {
            return;
        }
        if cu.more {
            return self.list_catch_up(now, io);
        }
        self.catch_up = None;
    }

    /// Puts every batch's writes back at the front of the queue, in order, with their reads.
    fn requeue_all(&mut self) {
        let mut front: Vec<Pending> = Vec::new();
        for batch in self.pipeline.drain(..) {
            let riding = batch.built.into_iter().map(|b| b.pending).chain(batch.unbuilt);
            for p in riding {
                if p.answered {
                    // Uncertain was given; the log settles it (this name went to a peer).
                    self.deadlines.remove(&(p.deadline, p.request));
                } else {
                    front.push(p);
                }
            }
        }
        self.stats.requeued += front.len() as u64;
        for p in front.into_iter().rev() {
            self.queue.push_front(p);
        }
    }

    fn on_body_created(&mut self, now: Instant, hash: Hash32, call: Call, result: BlobResult, io: &mut Io) {
        match result {
            Ok(_) | Err(BlobError::AlreadyExists) => {
                self.bodies.insert(hash, BodyState::Stored);
                self.stored_order.push_back(hash);
                while self.stored_order.len() > STORED_BODIES_REMEMBERED_MAX {
                    let old = self.stored_order.pop_front().expect("non-empty");
                    if matches!(self.bodies.get(&old), Some(BodyState::Stored)) {
                        self.bodies.remove(&old);
                    }
                }
                for b in &mut self.pipeline {
                    b.bodies_waiting.remove(&hash);
                }
            }
            Err(_) => io.retry_later(now, call),
        }
    }

    /// A body read from the bucket (verified against its hash by the replica).
    pub fn on_body(&mut self, now: Instant, sn: &Snapshot, hash: Hash32, body: Bytes, io: &mut Io) {
        self.body_cache.insert(hash, body.clone());
        // The last batch may wait on this body; a stale read is harmless, since a build
        // uses a read only when its hash is the one it needs.
        let waiting = self.pipeline.back_mut().and_then(|b| b.unbuilt.front_mut());
        if let Some(p) = waiting {
            p.read = Some((hash, body));
            self.build_last(now, sn, io);
        }
    }

    fn head_sequence(&self) -> Option<u64> {
        self.pipeline.front().and_then(|b| b.slot.as_ref()).map(|e| e.slot.first_sequence)
    }
}

/// A body from memory: the cache, or one being created.
fn find_body(cache: &BodyCache, bodies: &BTreeMap<Hash32, BodyState>, hash: &Hash32) -> Option<Bytes> {
    cache.peek(hash).or_else(|| match bodies.get(hash) {
        Some(BodyState::Creating(b)) => Some(b.clone()),
        _ => None,
    })
}

/// Starts storing a body unless it is stored or on its way. True while it is not stored.
fn need_body_stored(
    bodies: &mut BTreeMap<Hash32, BodyState>,
    keys: &Keys,
    hash: Hash32,
    body: Bytes,
    now: Instant,
    io: &mut Io,
) -> bool {
    match bodies.get(&hash) {
        Some(BodyState::Stored) => false,
        Some(BodyState::Creating(_)) => true,
        None => {
            let op = BlobOp::Create { key: keys.body(&hash), bytes: Bytes::from(encode_body(&body)) };
            io.issue(now, Purpose::BodyCreate { hash }, op, 0);
            bodies.insert(hash, BodyState::Creating(body));
            true
        }
    }
}

/// Answers every member of a batch that has not been answered.
fn answer_batch(batch: &mut Batch, deadlines: &mut BTreeSet<(Instant, RequestId)>, io: &mut Io) {
    let mut slot_index = 0;
    for b in &mut batch.built {
        let outcome = match &b.judged {
            Judged::Member => {
                let enc = batch.slot.as_ref().expect("members make a slot");
                let receipt = enc.slot.members[slot_index].receipt.clone();
                slot_index += 1;
                Ok(WriteOk::Committed(receipt))
            }
            Judged::Unchanged { version } => {
                Ok(WriteOk::Unchanged { version: *version, at_sequence: b.at_sequence })
            }
            Judged::Duplicate(r) => Ok(WriteOk::Duplicate { receipt: r.clone(), at_sequence: b.at_sequence }),
            Judged::Rejected(r) => {
                Err(WriteError::Rejected { rejection: r.clone(), at_sequence: b.at_sequence })
            }
        };
        if !b.pending.answered {
            b.pending.answered = true;
            deadlines.remove(&(b.pending.deadline, b.pending.request));
            reply(io, b.pending.request, outcome);
        }
    }
}

fn reply(io: &mut Io, id: RequestId, result: Result<WriteOk, WriteError>) {
    io.effects.push_back(Effect::Reply { id, reply: Reply::Write(result) });
}
