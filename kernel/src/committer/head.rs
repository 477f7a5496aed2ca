//! The head batch's slot create and its outcomes (SPEC 7): won (install and answer),
//! taken (read the slot there: ours after all, or a peer's to install and rebuild on),
//! ambiguous (read the slot: absent means the identical bytes again).

use super::batch::answer_batch;
use super::catch_up::CatchUp;
use super::reply;
use super::{CommitCall, Committer, RECOVERIES_REMEMBERED_MAX};
use crate::blob::{BlobError, BlobOp, BlobOutcome, BlobResult, Generation, WriteTime, Written};
use crate::effect::Effect;
use crate::format::Slot;
use crate::hash::Hash32;
use crate::io::{Call, Io, Purpose};
use crate::marks::{Mark, Marks};
use crate::reply::{FailReason, WriteError};
use crate::snapshot::{Installed, Snapshot};
use crate::time::{micros, Instant};

impl Committer {
    /// Moves the head batch one step. True when it answered and removed the head, so the
    /// pipeline may move again.
    pub(super) fn drive_head(&mut self, now: Instant, sn: &mut Snapshot, io: &mut Io) -> bool {
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
        let has_members = head.has_members();
        if has_members {
            self.turns.give_way(now, sn, &mut self.stats, &mut io.marks);
        }
        if has_members && self.holding(now, sn, &mut io.marks) {
            return false;
        }
        if self.pipeline.len() == 1 {
            if self.seal_deferred_at.is_some() && has_members {
                io.marks.hit(Mark::SealDeferred);
                return false;
            }
            self.seal_last(sn);
        }
        let Some(head) = self.pipeline.front_mut() else { return true };
        let Some(enc) = &head.slot else {
            // Nothing to commit: answers stand once the base is known to have been the tip
            // after every member arrived (the read path's probe confirms it).
            if head.base_sequence < world_sequence {
                io.marks.hit(Mark::AnswersOnlyRebuilt);
                self.requeue_all();
                return true;
            }
            if sn.current_since(head.latest_arrival()) {
                let mut head = self.pipeline.pop_front().expect("head");
                answer_batch(now, &mut head, &mut self.deadlines, io);
                return true;
            }
            return false;
        };
        let sequence = enc.slot.first_sequence;
        if let Some(lost_at) = self.lost_at.take() {
            if self.stats.recoveries_us.len() == RECOVERIES_REMEMBERED_MAX {
                self.stats.recoveries_us.pop_front();
            }
            self.stats.recoveries_us.push_back(now.saturating_since(lost_at).as_micros() as u64);
        }
        let op = BlobOp::Create { key: self.keys.slot(sequence), bytes: enc.bytes.clone() };
        head.first_create_at.get_or_insert(now);
        if head.sent_store_us.is_none() {
            head.sent_store_us = io.store_clock.seen_us();
        }
        self.head_call = true;
        io.issue(now, Purpose::Commit(CommitCall::SlotCreate { sequence }), op, 0);
        if self.config.defects().ack_before_confirm {
            let head = self.pipeline.front_mut().expect("head");
            answer_batch(now, head, &mut self.deadlines, io);
        }
        false
    }

    pub(super) fn on_slot_created(
        &mut self,
        now: Instant,
        sn: &mut Snapshot,
        sequence: u64,
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        invariant!(self.head_call);
        invariant_eq!(self.head_sequence(), Some(sequence));
        if matches!(result, Ok(_) | Err(BlobError::AlreadyExists)) {
            self.turns.on_create_answered(now.saturating_since(call.issued_at));
        }
        if let (Ok(_), Some(head)) = (&result, self.pipeline.front_mut()) {
            head.created_at.get_or_insert(now);
        }
        match result {
            Ok(BlobOutcome::Created(Written { time: None, generation, .. }))
                if !self.config.defects().skip_post_create_check =>
            {
                // No store time in the answer: a stat of the new slot gives it.
                self.stats.slot_stats_after_create += 1;
                io.marks.hit(Mark::CreateUntimedStat);
                let op = BlobOp::Stat { key: self.keys.slot(sequence) };
                io.issue(now, Purpose::Commit(CommitCall::SlotStat { sequence, generation }), op, 0);
            }
            Ok(outcome) => {
                let landed = match outcome {
                    BlobOutcome::Created(written) => written.time,
                    _ => None,
                };
                self.commit_head(now, sn, landed, io)?
            }
            // The name is already installed: the slot there is known, no read needed.
            Err(BlobError::AlreadyExists) if sequence <= sn.world.sequence() => {
                let theirs =
                    sn.recent.holding(sequence).filter(|s| s.first == sequence).map(|s| (s.hash, s.last));
                let ours = self.pipeline.front().and_then(|b| b.slot.as_ref()).map(|e| e.hash);
                self.lost_at.get_or_insert(now);
                match theirs {
                    Some((hash, _)) if Some(hash) == ours => {
                        io.marks.hit(Mark::CreateTakenWasOurs);
                        self.commit_head(now, sn, None, io)?
                    }
                    Some((_, last)) => self.lost(last, now, sn, io),
                    // Older than the index: read it to learn whose it is, and where it ends.
                    None => {
                        io.marks.hit(Mark::CreateTakenOlderThanIndex);
                        self.read_slot(now, sequence, false, io)
                    }
                }
            }
            Err(BlobError::AlreadyExists) => {
                self.lost_at.get_or_insert(now);
                self.read_slot(now, sequence, false, io)
            }
            Err(BlobError::Throttled) => io.retry_later(now, call),
            Err(_) => {
                self.stats.creates_ambiguous += 1;
                io.marks.hit(Mark::CreateAmbiguous);
                if self.config.defects().skip_ambiguous_read {
                    self.commit_head(now, sn, None, io)?;
                } else {
                    self.read_slot(now, sequence, true, io);
                }
            }
        }
        Ok(())
    }

    /// Reads the head's name: to settle an ambiguous create, or to learn whose slot took it.
    fn read_slot(&mut self, now: Instant, sequence: u64, ambiguous: bool, io: &mut Io) {
        self.settling_ambiguous = ambiguous;
        let op = BlobOp::Get { key: self.keys.slot(sequence) };
        io.issue(now, Purpose::Commit(CommitCall::SlotGet { sequence }), op, 0);
    }

    pub(super) fn on_slot_read(
        &mut self,
        now: Instant,
        sn: &mut Snapshot,
        sequence: u64,
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        invariant!(self.head_call);
        match result {
            Ok(BlobOutcome::Got { meta, bytes }) => {
                let ours = self.pipeline.front().and_then(|b| b.slot.as_ref()).map(|e| e.hash);
                let ambiguous = self.settling_ambiguous;
                if ours == Some(Hash32::of(&bytes)) {
                    io.marks.hit(if ambiguous {
                        Mark::CreateAmbiguousSettledOurs
                    } else {
                        Mark::CreateTakenWasOurs
                    });
                    self.commit_head(now, sn, Some(WriteTime::Created(meta.created_at_us)), io)?;
                } else {
                    if ambiguous {
                        io.marks.hit(Mark::CreateAmbiguousSettledTheirs);
                    }
                    self.install_peer_slot(now, sn, sequence, &bytes, io)?;
                }
            }
            Err(BlobError::NotFound) => {
                // A tip check saw the slot, the read did not: slots are never deleted.
                let enc = self.pipeline.front().and_then(|b| b.slot.as_ref());
                let enc = enc.ok_or(FailReason::SlotVanished { sequence })?;
                // Absent after an ambiguous create: the identical bytes again.
                invariant_eq!(enc.slot.first_sequence, sequence);
                if self.settling_ambiguous {
                    io.marks.hit(Mark::CreateAmbiguousSettledAbsent);
                }
                let op = BlobOp::Create { key: self.keys.slot(sequence), bytes: enc.bytes.clone() };
                io.issue(now, Purpose::Commit(CommitCall::SlotCreate { sequence }), op, call.attempt + 1);
            }
            _ => io.retry_later(now, call),
        }
        Ok(())
    }

    /// The store's own record of the slot this replica just created. The slot is its
    /// creation time unless it is gone or replaced, which only collection or a stall past
    /// the slot retention could do: then nothing says where it stands, and its members are
    /// answered `Uncertain`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn on_slot_stat(
        &mut self,
        now: Instant,
        sn: &mut Snapshot,
        sequence: u64,
        generation: &Generation,
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        invariant!(self.head_call);
        match result {
            Ok(BlobOutcome::Stat(meta)) if &meta.generation == generation => {
                self.commit_head(now, sn, Some(WriteTime::Created(meta.created_at_us)), io)
            }
            Ok(BlobOutcome::Stat(_)) | Err(BlobError::NotFound) => {
                io.marks.hit(Mark::CreatedSlotGone);
                self.refuse_head(io);
                Err(FailReason::CreatedSlotGone { key: self.keys.slot(sequence) })
            }
            _ => {
                io.retry_later(now, call);
                Ok(())
            }
        }
    }

    /// The head's slot is in the log: install it and answer its members. `landed_us` is
    /// the store's creation time of the slot, when the answer carried it.
    fn commit_head(
        &mut self,
        now: Instant,
        sn: &mut Snapshot,
        landed: Option<WriteTime>,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        // A name found taken was ours after all: no loss to recover from.
        self.lost_at = None;
        if let Some(landed) = landed {
            self.check_not_below_collection(sn, landed.created_by_us(), io)?;
        }
        let mut head = self.pipeline.pop_front().expect("a head to commit");
        head.created_at.get_or_insert(now);
        let enc = head.slot.as_ref().expect("a committed head has a slot");
        match sn.install_own(&enc.slot, enc.hash, now) {
            // The slot landed after its first create was sent; then the world was exactly
            // this, so it was the tip at an instant at or after that send.
            Ok(Installed::Applied) => sn.confirm_current(head.first_create_at.expect("a create was sent")),
            Ok(Installed::AlreadyHeld) => {}
            Err(e) => panic!("own slot {} does not apply: {e:?}", enc.slot.first_sequence),
        }
        let (first, last, members) =
            (enc.slot.first_sequence, enc.slot.last_sequence(), enc.slot.members.len());
        self.head_call = false;
        self.losses_in_row = 0;
        self.turns.start_hold(now, sn, &mut self.stats, &mut io.marks);
        self.stats.slots_won += 1;
        self.stats.members_committed += members as u64;
        self.pace.record(now, members as u64, !self.queue.is_empty());
        if let Some(landed) = landed {
            sn.note_created(first, landed.reached_us());
        }
        answer_batch(now, &mut head, &mut self.deadlines, io);
        io.effects.push_back(Effect::Committed { sequence: last });
        if self.config.seal_after_answers {
            self.seal_deferred_at = Some(now);
        }
        Ok(())
    }

    /// The post-create check (SPEC 10.15): a slot created more than `reload_after`
    /// after the slot it builds on (on the store's clock) may have landed in a name
    /// collection freed, below the log's real tip: a fork. Its members are answered
    /// `Uncertain`, never acknowledged, and the replica fails closed so it reopens from
    /// the newest checkpoint. The base is the later of the store's creation time of the
    /// slot built on (when this replica created it) and the newest store time it had seen
    /// when it sent the create: store times both, so a local clock that stopped during a
    /// suspend cannot move them.
    fn check_not_below_collection(
        &mut self,
        sn: &Snapshot,
        landed_us: u64,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        if self.config.defects().skip_post_create_check {
            return Ok(());
        }
        let head = self.pipeline.front_mut().expect("a head to commit");
        let sequence = head.slot.as_ref().expect("a created head has a slot").slot.first_sequence;
        let built_on = sn.recent.holding(sequence - 1).filter(|s| s.last + 1 == sequence);
        let built_on_us = built_on.and_then(|s| s.created_at_us);
        let Some(base_us) = built_on_us.max(head.sent_store_us) else { return Ok(()) };
        if landed_us.saturating_sub(base_us) <= micros(self.config.reload_after) {
            return Ok(());
        }
        self.stats.stalled_creates_refused += 1;
        io.marks.hit(Mark::StalledCreateRefused);
        self.refuse_head(io);
        Err(FailReason::CreateBelowCollection { key: self.keys.slot(sequence), base_us, landed_us })
    }

    /// Answers the head's members `Uncertain`: its slot exists but may not be in the log.
    fn refuse_head(&mut self, io: &mut Io) {
        let head = self.pipeline.front_mut().expect("a head to refuse");
        let since = head.base_sequence + 1;
        for b in head.built.iter_mut().filter(|b| !b.pending.answered) {
            b.pending.answered = true;
            self.deadlines.remove(&(b.pending.deadline, b.pending.request));
            reply(io, b.pending.request, Err(WriteError::Uncertain { op_id: b.pending.op_id, since }));
        }
    }

    /// A peer's slot holds the name the head wanted: install it and requeue every batch.
    fn install_peer_slot(
        &mut self,
        now: Instant,
        sn: &mut Snapshot,
        sequence: u64,
        bytes: &[u8],
        io: &mut Io,
    ) -> Result<(), FailReason> {
        let slot = Slot::decode_at(sequence, bytes)
            .map_err(|error| FailReason::Decode { key: self.keys.slot(sequence), error })?;
        sn.install(&slot, Hash32::of(bytes), now).map_err(FailReason::Apply)?;
        self.lost(slot.last_sequence(), now, sn, io);
        Ok(())
    }

    /// A peer's slot, through `winner_last`, holds the head's name: report it to peers and
    /// rebuild every batch on the new tip.
    fn lost(&mut self, winner_last: u64, now: Instant, sn: &Snapshot, io: &mut Io) {
        self.lost_at.get_or_insert(now);
        self.head_call = false;
        self.stats.slots_lost += 1;
        io.effects.push_back(Effect::Committed { sequence: winner_last });
        self.requeue_all();
        self.losses_in_row = self.losses_in_row.saturating_add(1);
        // A peer said the world is further on, or this is the second name lost in a row
        // to a slot no hint told of (hints are not reaching this store): a peer pipelines
        // faster than a loser reads one slot a loss, so the next name is taken too. List
        // past the tip and read what is there before rebuilding, rather than lose one
        // name a time (docs/TURNS.md, rules 6 and 7).
        let hinted = sn.behind_hints();
        let unhinted_again = self.losses_in_row >= 2 && sn.hinted < winner_last;
        if hinted || unhinted_again {
            if !hinted {
                io.marks.hit(Mark::CatchUpAfterLosses);
            }
            let after = sn.recent.holding(sn.world.sequence()).map(|s| self.keys.slot(s.first));
            self.catch_up = Some(CatchUp::after(after));
            io.marks.hit(Mark::CatchUpListed);
            self.list_catch_up(now, io);
        }
    }

    /// Whether the head's create must wait for a peer's turn; a hold a peer's slot
    /// answered rebuilds the held batches once on it.
    pub(super) fn holding(&mut self, now: Instant, sn: &Snapshot, marks: &mut Marks) -> bool {
        match self.turns.check(now, sn, &mut self.stats, marks) {
            super::turns::HoldCheck::Holding => true,
            super::turns::HoldCheck::Free => false,
            super::turns::HoldCheck::Answered => {
                self.requeue_all();
                false
            }
        }
    }
}
