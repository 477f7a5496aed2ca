//! The committer: one per world per replica (SPEC 7). It owns the write queue, the batches
//! built and staged ahead, the head batch's slot create, and the confirmed state they all
//! build on. It may not read the bucket except through [`Io`], and never answers a write
//! before the state it was judged against is confirmed.
//!
//! The pipeline is a queue of batches: the head is built on the confirmed state; each
//! batch behind it on the one before it. Only the head creates its slot, and only once its
//! bodies are stored, so slot k+1 is never created before slot k is confirmed.
//!
//! One job per file: `queue` (admission and deadlines), `batch` (forming and building
//! batches, answering members), `head` (the head's slot create and its outcomes), `turns`
//! (holds owed to peers), `catch_up` (a loser reading past the slot it lost to).

mod batch;
mod catch_up;
mod head;
mod queue;
mod turns;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod turns_tests;

use crate::blob::BlobResult;
use crate::blob::Generation;
use crate::bodies::Bodies;
use crate::config::Config;
use crate::effect::Effect;
use crate::format::Keys;
use crate::hash::Hash32;
use crate::ids::{OperationId, RequestId, StoreId};
use crate::io::{Call, Io};
use crate::marks::{Mark, Marks};
use crate::reply::{FailReason, Reply, WriteError, WriteOk};
use crate::snapshot::Snapshot;
use crate::time::Instant;
use crate::world::ValidMutation;
use batch::Batch;
use bytes::Bytes;
use catch_up::CatchUp;
use std::collections::{BTreeSet, VecDeque};
use turns::Turns;

/// The calls the committer makes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum CommitCall {
    /// The head batch's slot create at this name.
    SlotCreate { sequence: u64 },
    /// Read the slot at this name: to settle an ambiguous create, or the one we lost to.
    SlotGet { sequence: u64 },
    /// Learn the store's creation time of the slot just created at this generation, when
    /// the create's answer carried none (S3), before any member is answered.
    SlotStat { sequence: u64, generation: Generation },
    /// A loser lists the log past the slot it lost to, to catch up to the tip...
    CatchUpList,
    /// ...and reads each slot it listed.
    CatchUpGet { sequence: u64 },
}

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

/// Recoveries remembered for a report (newest kept).
const RECOVERIES_REMEMBERED_MAX: usize = 4_096;

/// Write phases kept for the embedder to take ([`Replica::poll_write_phases`]), newest
/// kept: one that never takes them (the simulator) holds at most this many.
///
/// [`Replica::poll_write_phases`]: crate::Replica::poll_write_phases
pub(crate) const PHASES_KEPT_MAX: usize = 1_024;

/// When a write answered from its batch passed each phase of the write path, on the
/// replica's clock: queued ≤ built ≤ sent ≤ created ≤ confirmed. A write answered with no
/// slot (unchanged, a duplicate, rejected) has no `sent` or `created`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WritePhases {
    /// The write's request.
    pub request: RequestId,
    /// Handed to the replica.
    pub queued: Instant,
    /// Judged into its batch (the last time, when a lost race requeued it).
    pub built: Instant,
    /// Its slot's first create sent.
    pub sent: Option<Instant>,
    /// Its slot known to have landed (the create's answer, or the read that settled it).
    pub created: Option<Instant>,
    /// Its slot installed and the write answered.
    pub confirmed: Instant,
}

/// Counters a report reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitterStats {
    /// Slots this replica created.
    pub slots_won: u64,
    /// Slot names this replica tried to create and found taken by a peer's slot.
    pub slots_lost: u64,
    /// Slot creates whose outcome the store left unknown (a timeout or a 5xx).
    pub creates_ambiguous: u64,
    /// Members in the slots this replica created.
    pub members_committed: u64,
    /// Writes answered `Busy`: the queue was full.
    pub refused_busy: u64,
    /// Of those, refused by pace: the queue would not have drained within
    /// `admission_wait_max` (the rest found it full).
    pub refused_pace: u64,
    /// Control writes (`set_policy`, archive flips) admitted, ahead of ordinary ones.
    pub control_admitted: u64,
    /// Writes answered `Expired`: the deadline passed while they waited in the queue.
    pub expired: u64,
    /// Writes answered `Uncertain`: the deadline passed while a slot holding them might
    /// still commit.
    pub uncertain: u64,
    /// Members put back at the queue's front because the slot name their batch built on
    /// went to a peer.
    pub requeued: u64,
    /// Current bodies read so that an append could be judged.
    pub body_reads: u64,
    /// Calls sent a second time because the first had not answered in time.
    pub calls_hedged: u64,
    /// Turns given: holds begun (owed and blind).
    pub holds: u64,
    /// Of those, blind holds: begun after a streak while peers' slots came unhinted.
    pub blind_holds: u64,
    /// Of those, rotation waits: a peer's turn by the newest slots' writers.
    pub rotation_waits: u64,
    /// Time spent in holds, in all, in ms.
    pub hold_ms_total: u64,
    /// Holds that ended because a peer's slot arrived (the rest ran out).
    pub holds_answered: u64,
    /// How long past its end the longest hold lasted, microseconds: a hold ends at the
    /// first wake-up after `hold`, so this is 0 for a replica woken when it asks
    /// (`poll_timeout`), and at most a pause for one that was not.
    pub hold_overrun_us_max: u64,
    /// Time from each lost create to this store's next create, microseconds (newest kept).
    pub recoveries_us: VecDeque<u64>,
    /// Slot creates that landed too long after their base and were refused before any
    /// member was acknowledged (SPEC 10.15, the post-create check).
    pub stalled_creates_refused: u64,
    /// Slot creates whose answer carried no store time (S3), so a stat of the new slot
    /// learned it before the members were answered: one round trip each.
    pub slot_stats_after_create: u64,
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
    pub stats: CommitterStats,
    failed: Option<FailReason>,
    turns: Turns,
    /// When the head last lost its name, until the next create is sent.
    lost_at: Option<Instant>,
    /// Names lost since this store's last win.
    losses_in_row: u32,
    catch_up: Option<CatchUp>,
    /// The head's slot read settles an ambiguous create (not a name found taken): which
    /// mark its answer hits.
    settling_ambiguous: bool,
    /// How fast the queue drains while writes wait (admission's pace rule).
    pace: queue::DrainPace,
    /// Set when a slot's writes were just answered: the open batch seals on the next
    /// input, not in this one, so writers answered now can join it (see `next_input`).
    seal_deferred_at: Option<Instant>,
}

impl Committer {
    pub fn new(config: Config, keys: Keys, store_id: StoreId) -> Committer {
        Committer {
            turns: Turns::new(&config, store_id),
            config,
            keys,
            store_id,
            queue: VecDeque::new(),
            deadlines: BTreeSet::new(),
            pipeline: VecDeque::new(),
            head_call: false,
            stats: CommitterStats::default(),
            failed: None,
            lost_at: None,
            losses_in_row: 0,
            catch_up: None,
            settling_ambiguous: false,
            pace: queue::DrainPace::default(),
            seal_deferred_at: None,
        }
    }

    /// An input other than a request reaches the replica: a seal deferred since writes
    /// were answered goes now.
    ///
    /// Why the deferral: the open batch becomes the head as soon as the head before it
    /// commits, in the same input. A caller that writes again as soon as it is answered
    /// (a closed loop, a queue worker) would always miss that batch and wait for the one
    /// after, so the writers split into two groups that take turns, each waiting two slot
    /// creates: half the throughput a slot could carry. Sealing on the next input (the
    /// replica asks to be woken at once, `next_deadline`; requests that come first join
    /// the batch) lets the driver hand over what the answered callers sent meanwhile. It costs no time: no timer, only one turn of
    /// the driver's loop.
    pub fn next_input(&mut self) {
        self.seal_deferred_at = None;
    }

    pub fn seal_deferred(&self) -> bool {
        self.seal_deferred_at.is_some()
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
        let waiting = head.is_built() && !head.has_members() && head.base_sequence == sn.world.sequence();
        let since = head.latest_arrival();
        (waiting && !sn.current_since(since)).then_some(since)
    }

    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// The next instant the committer has something to do: a deadline, or a hold's end.
    pub fn next_deadline(&self) -> Option<Instant> {
        let deadline = self.deadlines.first().map(|(t, _)| *t);
        deadline.into_iter().chain(self.turns.hold_until()).chain(self.seal_deferred_at).min()
    }

    /// A peer committed through `sequence`: perhaps a turn is owed (see `turns`).
    pub fn on_hint(&mut self, now: Instant, sn: &Snapshot, sequence: u64, marks: &mut Marks) {
        let creating = self
            .pipeline
            .front()
            .and_then(|b| b.slot.as_ref())
            .filter(|_| self.head_call)
            .map(|e| e.slot.first_sequence..=e.slot.last_sequence());
        self.turns.on_hint(now, sn, sequence, creating, marks);
    }

    /// Answers every waiting write with the replica's failure and refuses later ones. The
    /// replica, not the committer, announces the failure.
    pub fn abort(&mut self, reason: &FailReason, io: &mut Io) {
        if self.failed.is_some() {
            return;
        }
        let mut all: Vec<Pending> = self.queue.drain(..).collect();
        // The head's create was sent and not answered as lost: it may land after this,
        // so its members are not known to have failed.
        let mut head_unsettled = self.head_call && self.lost_at.is_none();
        for batch in self.pipeline.drain(..) {
            let sent = std::mem::take(&mut head_unsettled) && batch.first_create_at.is_some();
            if sent {
                io.marks.hit(Mark::AbortHeadUncertain);
            }
            let since = batch.base_sequence + 1;
            for b in batch.built.into_iter().filter(|b| !b.pending.answered) {
                if sent {
                    let uncertain = WriteError::Uncertain { op_id: b.pending.op_id, since };
                    reply(io, b.pending.request, Err(uncertain));
                } else {
                    all.push(b.pending);
                }
            }
            all.extend(batch.unbuilt);
        }
        for p in all.into_iter().filter(|p| !p.answered) {
            reply(io, p.request, Err(WriteError::Failed(reason.clone())));
        }
        self.deadlines.clear();
        self.failed = Some(reason.clone());
    }

    /// Routes the completion of a call this committer made. An error is a reason to fail
    /// the replica closed.
    pub fn on_done(
        &mut self,
        now: Instant,
        sn: &mut Snapshot,
        what: CommitCall,
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        if self.failed.is_some() {
            return Ok(());
        }
        match what {
            CommitCall::SlotCreate { sequence } => self.on_slot_created(now, sn, sequence, call, result, io),
            CommitCall::SlotGet { sequence } => self.on_slot_read(now, sn, sequence, call, result, io),
            CommitCall::SlotStat { sequence, generation } => {
                self.on_slot_stat(now, sn, sequence, &generation, call, result, io)
            }
            CommitCall::CatchUpList => self.on_catch_up_list(now, sn, call, result, io),
            CommitCall::CatchUpGet { sequence } => self.on_catch_up_get(now, sn, sequence, call, result, io),
        }
    }

    /// Makes every step that needs no bucket answer: forms and builds batches, starts the
    /// head's create, answers batches that need no slot.
    pub fn pump(&mut self, now: Instant, sn: &mut Snapshot, bodies: &mut Bodies, io: &mut Io) {
        if self.failed.is_some() {
            return;
        }
        // A hold ends by its own clock (or a peer's slot), whatever the head is doing.
        self.holding(now, sn, &mut io.marks);
        loop {
            self.fill_pipeline(now, sn, bodies, io);
            if !self.drive_head(now, sn, io) {
                break;
            }
        }
        invariant!(self.pipeline.len() <= 1 + self.config.batches_ahead_max);
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

    fn head_sequence(&self) -> Option<u64> {
        self.pipeline.front().and_then(|b| b.slot.as_ref()).map(|e| e.slot.first_sequence)
    }
}

fn reply(io: &mut Io, id: RequestId, result: Result<WriteOk, WriteError>) {
    io.effects.push_back(Effect::Reply { id, reply: Reply::Write(result) });
}
