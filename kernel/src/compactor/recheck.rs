//! The last look before a checkpoint create (SPEC 10.15, "a run writes only on its own
//! base"). A run reuses the objects of the checkpoint it built on without creating them
//! again, and a drop may delete those once three newer checkpoints exist. A run that took
//! its time (a replica stopped with its clock, so its own bound saw nothing) must not then
//! write a checkpoint that names them. So once every object is stored, the run lists the
//! checkpoints after its base: any other one there ends the run without its create (the
//! next look adopts it), and the listing's creation times tell the store's clock, on
//! which the run bound is judged too.

use super::{step, Compactor, StepCall};
use crate::blob::{BlobOp, BlobOutcome, BlobResult};
use crate::io::{Call, Io};
use crate::marks::Mark;
use crate::time::Instant;

impl Compactor {
    pub(super) fn recheck(&mut self, now: Instant, start_after: Option<String>, io: &mut Io) {
        let start_after = start_after.unwrap_or_else(|| self.keys.checkpoint(self.newest_next_sequence));
        let op =
            BlobOp::List { prefix: self.keys.checkpoints_prefix(), start_after: Some(start_after), limit: 8 };
        io.issue(now, step(StepCall::Recheck), op, 0);
    }

    pub(super) fn on_recheck(
        &mut self,
        now: Instant,
        call: Call,
        result: BlobResult,
        store_now_us: Option<u64>,
        io: &mut Io,
    ) {
        let Ok(BlobOutcome::Listed { entries, more }) = result else {
            io.retry_later(now, call);
            return;
        };
        let run = self.run.as_ref().expect("running");
        let next_sequence = run.checkpoint.next_sequence;
        let ours = self.keys.checkpoint(next_sequence);
        // A checkpoint found unusable (damaged) supersedes nothing: passing over it is how
        // this replica writes past it.
        let other = |key: &str| {
            key != ours && self.keys.parse_checkpoint(key).is_none_or(|s| !self.unusable.contains(&s))
        };
        let superseded = entries.iter().any(|e| other(&e.key)) || (more && entries.is_empty());
        if let (true, false, Some(last)) = (more, superseded, entries.last()) {
            let last = Some(last.key.clone());
            return self.recheck(now, last, io);
        }
        let local_overdue = now.saturating_since(self.run_began) > self.run_ms_max;
        let store_overdue = match (self.run_began_store_us, store_now_us) {
            (Some(began), Some(store_now)) => {
                store_now.saturating_sub(began) > self.run_ms_max.as_micros() as u64
            }
            _ => false,
        };
        if superseded || local_overdue || store_overdue {
            if superseded {
                self.stats.runs_superseded += 1;
                io.marks.hit(Mark::RunSuperseded);
            } else {
                io.marks.hit(Mark::RunOverdue);
                // Objects it names may have been judged unused by a drop meanwhile.
                self.stats.runs_overdue += 1;
            }
            self.run = None;
            self.run_target = None;
        } else {
            // The store's time at the look, for the check after the create (`landed`):
            // where the look carried none, the earliest time known since.
            self.run_began_store_us = self.run_began_store_us.or(store_now_us);
            let op = BlobOp::Create { key: ours, bytes: run.checkpoint_bytes.clone() };
            io.issue(now, step(StepCall::CheckpointCreate { next_sequence }), op, 0);
        }
    }
}
