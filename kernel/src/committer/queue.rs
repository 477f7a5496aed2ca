//! Admission and deadlines: a write enters the queue or is refused at once (`Busy`, or the
//! replica's failure), and every write is answered by its deadline, `Expired` while still
//! queued and `Uncertain` once a slot holding it may yet commit.

use super::{reply, Committer, Pending};
use crate::ids::{OperationId, RequestId};
use crate::io::Io;
use crate::marks::Mark;
use crate::reply::WriteError;
use crate::time::Instant;
use crate::world::ValidMutation;
use std::collections::BTreeSet;

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
        if self.queue.len() >= self.config.queue_members_max {
            self.stats.refused_busy += 1;
            io.marks.hit(Mark::WriteRefusedBusy);
            reply(io, request, Err(WriteError::Busy { queued: self.queue.len() }));
            return;
        }
        let deadline = now + self.config.request_deadline;
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
