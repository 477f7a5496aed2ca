//! Admission and deadlines: a write enters the queue or is refused at once (`Busy`, or the
//! replica's failure), and every write is answered by its deadline, `Expired` while still
//! queued and `Uncertain` once a slot holding it may yet commit.
//!
//! Admission keeps a reserve for control work (003: capacity reserved for control): the
//! last sixteenth of the queue takes only `set_policy` and archive flips, which also go
//! ahead of every ordinary write waiting, so an overloaded world still takes the writes
//! that steer it. An ordinary write is refused too when the queue ahead of it would not
//! drain within `admission_wait_max` at the pace this store has been committing while
//! writes waited: `Busy` at once, not `Expired` ten seconds later.

use super::{reply, Committer, Pending};
use crate::ids::{OperationId, RequestId};
use crate::io::Io;
use crate::marks::Mark;
use crate::reply::WriteError;
use crate::time::Instant;
use crate::world::ValidMutation;
use core::time::Duration;
use std::collections::{BTreeSet, VecDeque};

/// One part in this many of the queue is kept for control work.
pub const QUEUE_CONTROL_SHARE: usize = 16;

/// The window the drain pace is measured over.
const DRAIN_WINDOW: Duration = Duration::from_secs(5);

/// Whether a write steers the world rather than changing a document's content: it keeps
/// the queue's reserve and goes ahead of ordinary writes.
pub(super) fn is_control(mutation: &ValidMutation) -> bool {
    matches!(mutation, ValidMutation::SetPolicy { .. } | ValidMutation::SetArchived { .. })
}

/// The pace at which this store's queue drains: members its slots committed while writes
/// still waited behind them, over the last `DRAIN_WINDOW`. A slot confirmed with nothing
/// waiting says nothing of capacity (it carried what was offered) and starts over.
#[derive(Default)]
pub(super) struct DrainPace {
    slots: VecDeque<(Instant, u64)>,
}

impl DrainPace {
    pub fn record(&mut self, now: Instant, members: u64, backlogged: bool) {
        if !backlogged {
            self.slots.clear();
            return;
        }
        self.slots.push_back((now, members));
        while self.slots.len() > 2 && self.slots.front().is_some_and(|&(t, _)| now - t > DRAIN_WINDOW) {
            self.slots.pop_front();
        }
    }

    /// Members a second, once the slots measured span a second or more.
    pub fn per_s(&self) -> Option<f64> {
        let (&(first, _), &(last, _)) = (self.slots.front()?, self.slots.back()?);
        let span = (last - first).as_secs_f64();
        let members: u64 = self.slots.iter().skip(1).map(|&(_, m)| m).sum();
        (span >= 1.0).then(|| members as f64 / span)
    }
}

impl Committer {
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
        let queued = self.queue.len();
        let max = self.config.queue_members_max;
        let control = is_control(&mutation);
        let wait_max = self.config.admission_wait_max.as_secs_f64();
        let too_slow = !control
            && wait_max > 0.0
            && self.pace.per_s().is_some_and(|per_s| (queued + 1) as f64 > per_s * wait_max);
        let full = queued >= if control { max } else { max - max / QUEUE_CONTROL_SHARE };
        if (full || too_slow) && !self.config.defects().admit_everything {
            self.stats.refused_busy += 1;
            self.stats.refused_pace += u64::from(!full);
            io.marks.hit(Mark::WriteRefusedBusy);
            reply(io, request, Err(WriteError::Busy { queued }));
            return;
        }
        let deadline = now + self.config.request_deadline;
        self.deadlines.insert((deadline, request));
        let pending =
            Pending { request, op_id, mutation, arrived: now, deadline, answered: false, read: None };
        if control {
            // Ahead of every ordinary write waiting, behind the control work before it.
            let at = self.queue.iter().take_while(|p| is_control(&p.mutation)).count();
            self.stats.control_admitted += 1;
            self.queue.insert(at, pending);
        } else {
            self.queue.push_back(pending);
        }
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
            io.marks.hit(Mark::WriteExpiredQueued);
            reply(io, p.request, Err(WriteError::Expired { op_id: p.op_id }));
            false
        });
        for batch in &mut self.pipeline {
            // A batch builds on its base and is never moved: its members commit past it
            // or not at all (an answered member is never requeued).
            let since = batch.base_sequence + 1;
            let riding = batch.built.iter_mut().map(|b| &mut b.pending).chain(batch.unbuilt.iter_mut());
            for p in riding {
                if due.contains(&p.request) && !p.answered {
                    p.answered = true;
                    stats.uncertain += 1;
                    io.marks.hit(Mark::WriteUncertainAtDeadline);
                    reply(io, p.request, Err(WriteError::Uncertain { op_id: p.op_id, since }));
                }
            }
        }
    }
}
