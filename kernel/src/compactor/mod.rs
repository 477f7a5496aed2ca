//! The compactor (SPEC 10.11): when the newest checkpoint lags the tip by the cadence, it
//! folds the served snapshot into a checkpoint and writes it: every object that changed
//! since the checkpoint it knows (content objects first, then shards, then the root),
//! paced, and the checkpoint object last, created if absent. It never delays a commit:
//! it reads the snapshot, and its calls are its own.
//!
//! A racer that wrote the same sequence over the same checkpoint wrote the same bytes (the
//! fold is a function of the log and of the layers it folds over, SPEC 10.16), so a
//! checkpoint name found taken is read back and compared: the same world over other
//! layers ends the run (the next look adopts it); anything else means two replicas
//! disagree about the log, and the replica fails closed.
//!
//! Before it folds, a due compactor looks for a newer checkpoint than the one it knows
//! (SPEC 10.14, the defer rule): finding one, it adopts it and ends the run instead, so
//! the stores of a world take turns rather than all writing each step. A `backstop`
//! steps only when no checkpoint is newer than `backstop_after`.

mod adopt;
mod calls;
#[cfg(test)]
mod delta_tests;
mod freshen;
mod landed;
mod ledger;
mod recheck;
mod segments;
mod stats;
#[cfg(test)]
mod step_tests;
#[cfg(test)]
mod tests;

use crate::blob::{BlobError, BlobOp, BlobOutcome, BlobResult};
use crate::checkpoint::{fold_over_reusing, FoldError, Layers, MergeRule, Object, ObjectKind, ReceiptBlocks};
use crate::collector::Written;
use crate::config::{CompactionRole, Config};
use crate::effect::{Effect, Warning};
use crate::format::{Checkpoint, DecodeError, HistoryBlock, HistoryRef, Keys};
use crate::hash::Hash32;
use crate::history::History;
use crate::io::{Call, Io};
use crate::marks::Mark;
use crate::reply::{CheckpointProblem, FailReason};
use crate::snapshot::Snapshot;
use crate::time::{micros, millis, Instant};
use crate::world::Path;
use adopt::Adoption;
use bytes::Bytes;
use core::time::Duration;
use freshen::fresh_stamp;
use rand_core::Rng;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use calls::{adopt, step};
pub(crate) use calls::{AdoptCall, CompactCall, StepCall};
pub(crate) use ledger::Ledger;
pub use ledger::LedgerHeld;
pub use segments::SegmentStats;
use segments::{LabelBodies, SegmentWriter};
pub use stats::CompactorStats;

/// What brought a checkpoint due (SPEC 10.11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cadence {
    /// The slots applied since the newest checkpoint, or its age.
    SlotsOrAge,
    /// The bytes of the bodies those slots carry, alone.
    CarriedBytes,
}

/// Stored history blocks a fold needs before it can finish: a document's window that
/// gained or lost versions since its block was stored is rewritten from that block.
#[derive(Default)]
struct Gather {
    blocks: BTreeMap<Hash32, Arc<HistoryBlock>>,
    to_read: VecDeque<Hash32>,
    reading: BTreeSet<Hash32>,
}

/// One checkpoint being written.
struct Run {
    checkpoint: Checkpoint,
    checkpoint_bytes: Bytes,
    /// Objects not yet asked for, in creation order.
    queue: VecDeque<Object>,
    /// Objects asked for and not yet known stored, kept so an ambiguous create found
    /// absent can be sent again.
    in_flight: BTreeMap<Hash32, Bytes>,
    /// The world's slot count at the folded sequence.
    slots_at_fold: u64,
    /// Every object name of this checkpoint: what the next run may reuse.
    names: BTreeSet<Hash32>,
    /// What the replica adopts once the checkpoint is written.
    adopt: Vec<(Path, Vec<HistoryRef>, u64)>,
    /// Its root's layers: what the next step folds over.
    layers: Layers,
    checkpoint_sent: bool,
    /// The labels whose shards this step rewrote, with their live bodies: the segments
    /// to write once the checkpoint landed (SPEC 10.17).
    segment_labels: Vec<LabelBodies>,
}

pub(crate) struct Compactor {
    keys: Keys,
    role: CompactionRole,
    slots_max: u64,
    interval: Duration,
    carried_bytes_max: u64,
    backstop_after: Duration,
    jitter_ms: u64,
    creates_in_flight_max: usize,
    reads_in_flight_max: usize,
    /// The newest checkpoint this replica knows of (loaded or written): its next
    /// sequence, the world's slot count when it was learned, and when.
    newest_next_sequence: u64,
    slots_at_newest: u64,
    newest_at: Instant,
    /// The store's creation time of that checkpoint, where this replica read it: its
    /// age survives this replica's restarts, which `newest_at` does not (SPEC 10.14).
    newest_created_us: Option<u64>,
    /// Object names of that checkpoint: stored, so a run need not create them again.
    stored: BTreeSet<Hash32>,
    /// That checkpoint's shards and deltas (none for checkpoint zero), and when a step
    /// over them adds deltas rather than writing every shard (SPEC 10.16).
    layers: Option<Layers>,
    /// The world's, from its marker at open (SPEC 4), whatever this store is configured.
    merge_rule: MergeRule,
    /// When the cadence was first found reached, plus a jitter: the run starts then.
    due_at: Option<Instant>,
    /// When, and at how many slots and carried bytes, a look last ended a run without a
    /// step: the cadence counts from there too, so a backstop looks once a cadence, not
    /// on every input.
    looked_at: Instant,
    slots_at_look: u64,
    carried_at_look: u64,
    /// A look under way: the newest checkpoint it has listed so far.
    look: Option<u64>,
    /// A peer's checkpoint object being read, then its root and changed shards, then
    /// waiting for the tip to reach it.
    fetching: Option<u64>,
    adoption: Option<Adoption>,
    /// Checkpoints newer than the newest known that could not be used (damaged, or not
    /// fitting): a look passes over them, so one damaged checkpoint does not stop this
    /// replica stepping. Only names past the newest known are kept.
    unusable: BTreeSet<u64>,
    /// The world's slot count and the ledger's carried bytes at the last pump, for the
    /// calls that end a look.
    slots_applied: u64,
    carried_held: u64,
    /// A run reading the blocks its fold needs, then one writing the checkpoint.
    gather: Option<Gather>,
    run: Option<Run>,
    /// Blocks of the checkpoint just written, for the replica's documents to adopt.
    adopt: Vec<(Path, Vec<HistoryRef>, u64)>,
    /// Stored objects older than this on the store's clock are freshened before use.
    freshen_after_us: u64,
    run_ms_max: Duration,
    /// A checkpoint of ours that landed later than this after its run's look, on the
    /// store's clock, is withdrawn (SPEC 10.15).
    grace_us: u64,
    /// The deliberate defect: a freshen writes the first write's bytes again.
    freshen_keeps_bytes: bool,
    /// When the current run's look began: its checkpoint create must go out within
    /// `run_ms_max` of it, on this replica's clock and, as far as it knows it, the
    /// store's.
    run_began: Instant,
    run_began_store_us: Option<u64>,
    /// The checkpoint this replica's own create just wrote, for the collector.
    written_out: Option<Written>,
    /// The most documents one step folds, and the tip a run steps towards: it loops
    /// steps until the newest checkpoint covers it (SPEC 10.11, bounded steps).
    step_docs_max: usize,
    run_target: Option<u64>,
    /// The next look continues a run, and the tip when the current look began.
    continuing: bool,
    look_tip: u64,
    /// The sequence of a checkpoint just finished, for the ledger to count from.
    rebase_to: Option<u64>,
    /// Body segments of the labels our checkpoints rewrote (SPEC 10.17).
    segments: SegmentWriter,
    /// The receipt blocks the last fold made, for the next to take again.
    receipt_blocks: ReceiptBlocks,
    pub stats: CompactorStats,
}

impl Compactor {
    /// A compactor for a world opened at the checkpoint `next_sequence` whose objects
    /// are `stored` (empty for checkpoint zero).
    pub fn new(config: &Config, keys: Keys, now: Instant) -> Compactor {
        Compactor {
            keys,
            role: config.compaction,
            slots_max: config.checkpoint_slots,
            interval: config.checkpoint_interval,
            carried_bytes_max: config.checkpoint_carried_bytes,
            backstop_after: config.backstop_after,
            jitter_ms: millis(config.checkpoint_jitter),
            creates_in_flight_max: config.checkpoint_creates_in_flight_max,
            reads_in_flight_max: config.checkpoint_reads_in_flight_max,
            newest_next_sequence: 1,
            slots_at_newest: 0,
            newest_at: now,
            newest_created_us: None,
            stored: BTreeSet::new(),
            layers: None,
            merge_rule: MergeRule::DEFAULT,
            due_at: None,
            looked_at: now,
            slots_at_look: 0,
            carried_at_look: 0,
            look: None,
            fetching: None,
            adoption: None,
            unusable: BTreeSet::new(),
            slots_applied: 0,
            carried_held: 0,
            gather: None,
            run: None,
            adopt: Vec::new(),
            freshen_after_us: micros(config.freshen_after),
            run_ms_max: config.checkpoint_run_max,
            grace_us: micros(config.checkpoint_grace),
            freshen_keeps_bytes: config.defects().freshen_keeps_bytes,
            run_began: now,
            run_began_store_us: None,
            written_out: None,
            step_docs_max: config.checkpoint_step_docs_max,
            run_target: None,
            continuing: false,
            look_tip: 0,
            rebase_to: None,
            segments: SegmentWriter::new(config.checkpoint_reads_in_flight_max)
                .with_words_shifted(config.defects().segment_words_shifted),
            receipt_blocks: ReceiptBlocks::default(),
            stats: CompactorStats::default(),
        }
    }

    /// Takes the world's merge rule, as its marker names it.
    pub fn follow(&mut self, merge_rule: MergeRule) {
        self.merge_rule = merge_rule;
    }

    /// The world opened from the checkpoint at `next_sequence`, created at `created_us` on
    /// the store's clock where known, whose objects are `stored` and whose root's layers
    /// are `layers` (none for checkpoint zero).
    pub fn opened_at(
        &mut self,
        (next_sequence, skipped): (u64, usize),
        created_us: Option<u64>,
        (stored, layers): (BTreeSet<Hash32>, Option<Layers>),
        sn: &mut Snapshot,
        now: Instant,
    ) {
        self.layers = layers;
        if self.role == CompactionRole::Off {
            sn.ledger.disable();
        }
        if next_sequence > 1 {
            self.stats.loaded_at_open += 1;
        }
        self.stats.skipped_at_open += skipped as u64;
        self.newest_next_sequence = next_sequence;
        self.slots_at_newest = sn.world.slots_applied();
        self.carried_at_look = 0;
        self.newest_at = now;
        self.newest_created_us = created_us;
        self.stored = stored;
    }

    /// How old the newest checkpoint is at least: since this replica learned of it, or
    /// since the store created it where both that time and the store's clock are known.
    /// Both are lower bounds (SPEC 10.15), so the larger is too.
    fn newest_age(&self, now: Instant, store_now_us: Option<u64>) -> Duration {
        let known_for = now.saturating_since(self.newest_at);
        match (self.newest_created_us, store_now_us) {
            (Some(created), Some(store_now)) => {
                known_for.max(Duration::from_micros(store_now.saturating_sub(created)))
            }
            _ => known_for,
        }
    }

    /// The next instant the compactor has something to do on its own clock: none while
    /// nothing was applied since the newest checkpoint.
    pub fn next_deadline(&self, sn: &Snapshot) -> Option<Instant> {
        let idle = sn.world.sequence() < self.newest_next_sequence;
        if self.role == CompactionRole::Off || self.is_running() || idle {
            return None;
        }
        if self.run_target.is_some() {
            // A run between its steps goes on at once.
            return Some(self.newest_at);
        }
        // The cadence counts from the newest checkpoint or the last look that ended
        // without a step, whichever is later, as `cadence` does: a deadline from
        // the checkpoint alone would be due at once after a backstop deferred, and wake
        // the replica at one instant forever.
        Some(self.due_at.unwrap_or(self.newest_at.max(self.looked_at) + self.interval))
    }

    pub fn is_running(&self) -> bool {
        let adopting = self.look.is_some() || self.fetching.is_some() || self.adoption.is_some();
        adopting || self.gather.is_some() || self.run.is_some()
    }

    /// Starts a run when the cadence is reached, keeps its reads and creates flowing, and
    /// hands the world the blocks of a checkpoint just written.
    pub fn pump(
        &mut self,
        now: Instant,
        sn: &mut Snapshot,
        history: &mut History,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        let adopted = std::mem::take(&mut self.adopt);
        for (path, blocks, through) in &adopted {
            sn.world.adopt_history(path, blocks, *through);
        }
        if let Some(at) = self.rebase_to.take() {
            sn.ledger.rebase(&sn.world, at, &adopted);
        }
        if self.role == CompactionRole::Off {
            return Ok(());
        }
        self.slots_applied = sn.world.slots_applied();
        self.carried_held = sn.ledger.held().carried_bytes;
        self.check_chain(sn)?;
        self.install_adoption(now, sn, &mut io.marks);
        if let Some(target) = self.run_target.filter(|_| !self.is_running()) {
            if self.newest_next_sequence > target {
                self.run_target = None;
            } else {
                // The next step of the run: it looks first, so a store that finds a
                // newer checkpoint than its own adopts it and ends its run.
                self.continuing = true;
                io.marks.hit(Mark::RunStepContinued);
                self.begin_look(now, sn, io);
            }
        }
        let cadence = if self.is_running() { None } else { self.cadence(now, sn) };
        if let Some(cadence) = cadence {
            let due = *self.due_at.get_or_insert_with(|| {
                if cadence == Cadence::CarriedBytes {
                    io.marks.hit(Mark::CheckpointDueCarried);
                }
                let jitter_ms = io.rng.next_u64() % (self.jitter_ms + 1);
                now + Duration::from_millis(jitter_ms)
            });
            if now >= due {
                self.due_at = None;
                self.continuing = false;
                self.begin_look(now, sn, io);
            }
        }
        self.read_for_adoption(now, io);
        self.gather_blocks(now, sn, history, io)?;
        self.send(now, io);
        self.segments.pump(now, &self.keys, io);
        Ok(())
    }

    /// A look for a newer checkpoint, which starts a step's bound.
    fn begin_look(&mut self, now: Instant, sn: &Snapshot, io: &mut Io) {
        self.stats.looks += 1;
        self.run_began = now;
        self.run_began_store_us = io.store_clock.now_us(now);
        self.look_tip = sn.world.sequence();
        self.look = Some(self.newest_next_sequence);
        self.list_checkpoints(now, None, io);
    }

    /// Reads the blocks the fold lacks, a bounded number at once, and folds once none is
    /// outstanding: at the tip as it is then, so a fold that needs more blocks (a commit
    /// changed another window meanwhile) reads those and folds again.
    fn gather_blocks(
        &mut self,
        now: Instant,
        sn: &Snapshot,
        history: &mut History,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        let Some(gather) = self.gather.as_mut() else { return Ok(()) };
        // Loops so that the blocks a fold asks for are asked of the store now: the run
        // has no timer, and in an idle world the next input may be an hour away.
        loop {
            while gather.reading.len() < self.reads_in_flight_max {
                let Some(block) = gather.to_read.pop_front() else { break };
                match history.get(&block) {
                    Some(b) => {
                        gather.blocks.insert(block, b.clone());
                    }
                    None => {
                        gather.reading.insert(block);
                        history.fetch(now, block, io);
                    }
                }
            }
            if !gather.reading.is_empty() || !gather.to_read.is_empty() {
                return Ok(());
            }
            let blocks = &gather.blocks;
            // A step folds the world at its boundary, or at the tip when the documents
            // changed since the newest checkpoint are fewer than a step's most.
            let boundary = sn.ledger.boundary(self.step_docs_max);
            let (sequence, slots_at_fold) = match boundary {
                Some(b) => (b.sequence, sn.world.slots_applied() - b.slots_after),
                None => (sn.world.sequence(), sn.world.slots_applied()),
            };
            let base = self.layers.as_ref().map(|l| (l, self.merge_rule));
            let lookup = |h: &Hash32| blocks.get(h).map(|b| &**b);
            let receipt_blocks = &mut self.receipt_blocks;
            let folded = match boundary {
                Some(b) => {
                    fold_over_reusing(&sn.ledger.world_at(&sn.world, b), base, &lookup, receipt_blocks)
                }
                None => fold_over_reusing(&sn.world, base, &lookup, receipt_blocks),
            };
            match folded {
                Ok(folded) => {
                    self.gather = None;
                    let bodies = sn.ledger.carried_through(sequence, &self.stored);
                    self.start(folded, bodies, slots_at_fold);
                    return Ok(());
                }
                Err(FoldError::NeedBlocks(needed)) => {
                    // The fold names only blocks its lookup lacked, so this adds some.
                    assert!(!needed.is_empty(), "a fold that needs blocks names them");
                    gather.to_read.extend(needed);
                }
                Err(FoldError::Disagrees(problem)) => {
                    let key = self.keys.checkpoint(sequence + 1);
                    return Err(FailReason::CheckpointMismatch { key, problem });
                }
            }
        }
    }

    /// A history block arrived; a run waiting for it takes it.
    pub fn on_history(&mut self, name: Hash32, block: &Arc<HistoryBlock>) {
        if let Some(gather) = self.gather.as_mut() {
            if gather.reading.remove(&name) {
                gather.blocks.insert(name, block.clone());
            }
        }
    }

    /// A run ended without a step: the cadence counts from here too.
    fn ended_without_step(&mut self, now: Instant) {
        self.looked_at = now;
        self.slots_at_look = self.slots_applied;
        self.carried_at_look = self.carried_held;
    }

    /// Whether a checkpoint is due (SPEC 10.11), and by what.
    fn cadence(&self, now: Instant, sn: &Snapshot) -> Option<Cadence> {
        if sn.world.sequence() < self.newest_next_sequence {
            return None;
        }
        let slots = sn.world.slots_applied().saturating_sub(self.slots_at_newest.max(self.slots_at_look));
        let since = now.saturating_since(self.newest_at.max(self.looked_at));
        let carried = sn.ledger.held().carried_bytes.saturating_sub(self.carried_at_look);
        if slots >= self.slots_max || since >= self.interval {
            Some(Cadence::SlotsOrAge)
        } else {
            (carried >= self.carried_bytes_max).then_some(Cadence::CarriedBytes)
        }
    }

    /// Starts writing a fold: first the bodies the slots it covers carried, as blobs (a
    /// checkpoint names no body only a slot holds, since slots are collected behind it),
    /// then its objects, then the checkpoint object.
    fn start(&mut self, folded: crate::checkpoint::Folded, bodies: Vec<Object>, slots_at_fold: u64) {
        self.stats.steps += 1;
        self.stats.bodies_written_out += bodies.len() as u64;
        let layers = Layers::of(&folded.root);
        if layers.deltas.is_empty() {
            self.stats.merged_steps += 1;
        }
        let segment_labels = rewritten_labels(&folded);
        let mut names: BTreeSet<Hash32> = folded.objects.iter().map(|o| o.name).collect();
        let objects: Vec<Object> =
            folded.objects.into_iter().filter(|o| !self.stored.contains(&o.name)).collect();
        self.stats.objects_reused += (names.len() - objects.len()) as u64 + folded.history_reused;
        // Shards and deltas named again from the base are stored and used too.
        names.extend(layers.names());
        let queue: VecDeque<Object> = bodies.into_iter().chain(objects).collect();
        let checkpoint_bytes = Bytes::from(folded.checkpoint.encode());
        self.run = Some(Run {
            checkpoint: folded.checkpoint,
            checkpoint_bytes,
            queue,
            in_flight: BTreeMap::new(),
            slots_at_fold,
            names,
            adopt: folded.adopt,
            layers,
            checkpoint_sent: false,
            segment_labels,
        });
    }

    /// Sends object creates up to the limit in flight, and the checkpoint object once
    /// every other object is stored.
    fn send(&mut self, now: Instant, io: &mut Io) {
        let Some(run) = self.run.as_mut() else { return };
        while run.in_flight.len() < self.creates_in_flight_max {
            let Some(object) = run.queue.pop_front() else { break };
            run.in_flight.insert(object.name, object.bytes.clone());
            let op = BlobOp::Create { key: object.key(&self.keys), bytes: object.bytes };
            let what = StepCall::Create { kind: object.kind, name: object.name };
            io.issue(now, step(what), op, 0);
        }
        if run.queue.is_empty() && run.in_flight.is_empty() && !run.checkpoint_sent {
            run.checkpoint_sent = true;
            self.recheck(now, None, io);
        }
    }

    /// A compactor call completed. An error is a reason to fail the replica closed.
    pub fn on_done(
        &mut self,
        now: Instant,
        what: CompactCall,
        call: Call,
        result: BlobResult,
        store_now_us: Option<u64>,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        let what = match what {
            CompactCall::Adopt(AdoptCall::Look) => return self.on_look(now, call, result, io),
            CompactCall::Adopt(what) => {
                self.on_adoption_read(now, what, call, result, io);
                return Ok(());
            }
            CompactCall::Segment(what) => {
                self.segments.on_done(now, what, result, &self.keys, io);
                self.stats.segments = self.segments.stats.clone();
                return Ok(());
            }
            CompactCall::Step(_) if self.run.is_none() => return Ok(()),
            CompactCall::Step(what) => what,
        };
        match (what, result) {
            (StepCall::Create { name, .. }, Ok(_)) => self.object_stored(name, true),
            // A content object found stored is done: it is never collected (SPEC 10.15).
            (
                StepCall::Create { kind: ObjectKind::History | ObjectKind::Body, name },
                Err(BlobError::AlreadyExists),
            )
            | (StepCall::Stat { kind: ObjectKind::History | ObjectKind::Body, name }, Ok(_)) => {
                self.object_stored(name, false)
            }
            (
                StepCall::Create { .. } | StepCall::Stat { .. } | StepCall::Freshen { .. },
                Err(BlobError::Throttled),
            ) => io.retry_later(now, call),
            // Found stored, or ambiguous: a metadata read says whether it is there and how
            // old. (Content-addressed, so whatever is there is what we would write.)
            (StepCall::Create { kind, name }, Err(_))
            | (StepCall::Freshen { kind, name }, Err(BlobError::PreconditionFailed)) => {
                let freshen = matches!(call.op, BlobOp::Rewrite { .. });
                io.marks.hit(if freshen { Mark::FreshenRaced } else { Mark::ObjectCreateUnsettled });
                let op = BlobOp::Stat { key: call.op.key().to_string() };
                io.issue(now, step(StepCall::Stat { kind, name }), op, 0);
            }
            (StepCall::Stat { kind, name }, Ok(BlobOutcome::Stat(meta))) => {
                self.judge_found(now, kind, name, &meta, store_now_us, io)
            }
            (StepCall::Stat { kind, name } | StepCall::Freshen { kind, name }, Err(BlobError::NotFound)) => {
                let run = self.run.as_ref().expect("running");
                let bytes = run.in_flight.get(&name).expect("a stat settles an object in flight").clone();
                io.marks.hit(Mark::ObjectCreateSettledAbsent);
                let op = BlobOp::Create { key: call.op.key().to_string(), bytes };
                io.issue(now, step(StepCall::Create { kind, name }), op, call.attempt + 1);
            }
            (StepCall::Stat { .. } | StepCall::Freshen { .. }, Err(_)) => io.retry_later(now, call),
            (StepCall::Stat { name, .. }, Ok(_)) => self.object_stored(name, false),
            (StepCall::Freshen { name, .. }, Ok(_)) => {
                self.stats.freshened += 1;
                io.marks.hit(Mark::FreshenRewrite);
                self.object_stored(name, false)
            }
            (StepCall::CheckpointCreate { next_sequence }, Ok(outcome)) => {
                self.on_created(now, next_sequence, outcome, io)
            }
            (StepCall::CheckpointStat { next_sequence }, result) => {
                self.on_checkpoint_stat(now, call, next_sequence, result, io)
            }
            (StepCall::CheckpointWithdraw { .. }, result) => self.on_withdraw(now, call, result, io),
            (StepCall::CheckpointCreate { .. }, Err(BlobError::Throttled)) => io.retry_later(now, call),
            (StepCall::CheckpointCreate { next_sequence }, Err(_)) => {
                let op = BlobOp::Get { key: self.keys.checkpoint(next_sequence) };
                io.issue(now, step(StepCall::CheckpointGet { next_sequence }), op, 0);
            }
            (StepCall::CheckpointGet { next_sequence }, Ok(BlobOutcome::Got { meta, bytes })) => {
                if let Err(error) = Checkpoint::decode(&bytes) {
                    self.run_on_damaged(now, next_sequence, error, io);
                    return Ok(());
                }
                if !self.compare(next_sequence, &bytes)? {
                    // The same log folded over other layers: the run ends without this
                    // checkpoint as its own, and the next look adopts the one there.
                    self.stats.other_layers_races += 1;
                    io.marks.hit(Mark::CheckpointOtherLayers);
                    self.run = None;
                    self.run_target = None;
                } else if self.is_old(&meta, store_now_us) {
                    let run = self.run.as_ref().expect("running");
                    let stamp = if self.freshen_keeps_bytes { 0 } else { fresh_stamp(store_now_us) };
                    let bytes = Bytes::from(run.checkpoint.clone().with_stamp(stamp).encode());
                    let op = BlobOp::Rewrite { key: meta.key, bytes, if_generation: meta.generation };
                    io.issue(now, step(StepCall::CheckpointFreshen { next_sequence }), op, 0);
                } else {
                    self.stats.identical_races += 1;
                    io.marks.hit(Mark::CheckpointIdenticalRace);
                    self.finish(next_sequence, now, false);
                }
            }
            (StepCall::CheckpointFreshen { next_sequence }, Ok(_)) => {
                self.stats.freshened += 1;
                self.stats.identical_races += 1;
                io.marks.hit(Mark::CheckpointFreshened);
                io.marks.hit(Mark::CheckpointIdenticalRace);
                self.finish(next_sequence, now, false);
            }
            (StepCall::CheckpointFreshen { next_sequence }, Err(e)) if !e.is_transient() => {
                // Freshened or deleted meanwhile: read what is there now.
                let op = BlobOp::Get { key: self.keys.checkpoint(next_sequence) };
                io.issue(now, step(StepCall::CheckpointGet { next_sequence }), op, 0);
            }
            (StepCall::CheckpointFreshen { .. }, Err(_)) => io.retry_later(now, call),
            (StepCall::CheckpointGet { next_sequence }, Err(BlobError::NotFound)) => {
                // An ambiguous create that never landed: the identical bytes again.
                io.marks.hit(Mark::CheckpointCreateSettledAbsent);
                let bytes = self.run.as_ref().expect("running").checkpoint_bytes.clone();
                let op = BlobOp::Create { key: self.keys.checkpoint(next_sequence), bytes };
                let what = StepCall::CheckpointCreate { next_sequence };
                io.issue(now, step(what), op, call.attempt + 1);
            }
            (StepCall::CheckpointGet { .. }, _) => io.retry_later(now, call),
            (StepCall::Recheck, result) => self.on_recheck(now, call, result, store_now_us, io),
        }
        self.send(now, io);
        Ok(())
    }

    /// Our checkpoint landed at `landed_us` on the store's clock: the labels it rewrote
    /// get their segments of that window, after it and never in its way.
    fn queue_segments(&mut self, landed_us: u64) {
        let run = self.run.as_mut().expect("running");
        let labels = std::mem::take(&mut run.segment_labels);
        self.segments.checkpoint_landed(labels, crate::format::segment_window(landed_us / 1_000));
    }

    /// The checkpoint this replica's own create wrote since the last call, for a drop.
    pub fn take_written(&mut self) -> Option<Written> {
        self.written_out.take()
    }

    fn object_stored(&mut self, name: Hash32, created: bool) {
        let run = self.run.as_mut().expect("running");
        let was_in_flight = run.in_flight.remove(&name).is_some();
        invariant!(was_in_flight, "one answer per object");
        if created {
            self.stats.objects_created += 1;
        } else {
            self.stats.objects_found += 1;
        }
    }

    /// Our checkpoint's name holds bytes that do not decode: damage at rest, not another
    /// replica's content (a diverged log writes a checkpoint that decodes, and fails this
    /// replica closed in `compare`). Like any checkpoint that cannot be loaded it costs
    /// only replay (SPEC 10.12): the run ends with a warning, and a later step writes past it.
    fn run_on_damaged(&mut self, now: Instant, next_sequence: u64, error: DecodeError, io: &mut Io) {
        let key = self.keys.checkpoint(next_sequence);
        self.stats.runs_on_damaged += 1;
        io.marks.hit(Mark::RunOnDamaged);
        self.unusable.insert(next_sequence);
        self.run = None;
        self.run_target = None;
        let reason = FailReason::Decode { key: key.clone(), error };
        io.effects.push_back(Effect::Warning(Warning::CheckpointSkipped { key, reason }));
        self.ended_without_step(now);
    }

    /// The checkpoint at `next_sequence` found in the bucket must hold our content: true
    /// when it is ours (the stamp aside). False when it anchors the same log (world,
    /// sequence, chain anchor and count) on another root: a racer that folded over another
    /// checkpoint wrote other layers of the same world (SPEC 10.16). Anything else means
    /// the logs diverged.
    fn compare(&self, next_sequence: u64, found: &[u8]) -> Result<bool, FailReason> {
        let run = self.run.as_ref().expect("running");
        let ours = &run.checkpoint;
        let key = self.keys.checkpoint(next_sequence);
        let theirs =
            Checkpoint::decode(found).map_err(|error| FailReason::Decode { key: key.clone(), error })?;
        // A freshen changes only the stamp (SPEC 10.9).
        let theirs = theirs.with_stamp(0);
        if theirs == *ours {
            return Ok(true);
        }
        let same_log = theirs.root.is_some() && Checkpoint { root: ours.root, ..theirs } == *ours;
        if same_log {
            return Ok(false);
        }
        Err(FailReason::CheckpointMismatch { key, problem: CheckpointProblem::Diverged })
    }

    /// A step's checkpoint is in the bucket. A run goes on to its next step only when its
    /// own plain create wrote this one: a store that found the name taken by a racer
    /// leaves the rest of the backlog to it (the defer rule, applied between steps, so
    /// several backstops that took over together do not all step on).
    fn finish(&mut self, next_sequence: u64, now: Instant, own: bool) {
        let run = self.run.take().expect("running");
        self.rebase_to = Some(next_sequence - 1);
        if !own {
            self.run_target = None;
        }
        invariant_eq!(run.checkpoint.next_sequence, next_sequence);
        self.newest_next_sequence = next_sequence;
        self.unusable.retain(|s| *s > next_sequence);
        self.slots_at_newest = run.slots_at_fold;
        self.carried_at_look = 0;
        self.newest_at = now;
        // Known only on this replica's clock until a restart reads it back.
        self.newest_created_us = None;
        self.stored = run.names;
        self.layers = Some(run.layers);
        self.adopt = run.adopt;
    }
}

/// The labels whose shards a fold wrote anew, each with its live documents' body hashes.
fn rewritten_labels(folded: &crate::checkpoint::Folded) -> Vec<LabelBodies> {
    let root = &folded.root;
    let mut labels = Vec::new();
    for object in folded.objects.iter().filter(|o| o.kind == ObjectKind::Shard) {
        let Ok(shard) = crate::format::Shard::decode(&object.bytes) else { continue };
        let bodies: BTreeSet<Hash32> =
            shard.entries.iter().filter(|e| !e.entry.archived).map(|e| e.entry.body_hash).collect();
        for (index, _) in root.shards.iter().enumerate().filter(|(_, h)| **h == object.name) {
            labels.push(LabelBodies { bits: root.shard_bits, label: index as u32, bodies: bodies.clone() });
        }
    }
    labels
}
