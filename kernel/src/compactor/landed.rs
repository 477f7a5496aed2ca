//! The check after a checkpoint create (SPEC 10.15, "A checkpoint that lands late"). The
//! last look before the create leaves one round trip open: a replica stopped with its
//! clock between that look's answer and its create landing can write, hours later, a
//! checkpoint naming objects a drop took meanwhile. A drop can take one only if the
//! create landed more than the grace after the run's look on the store's clock, so the
//! writer compares the two and deletes its own checkpoint past that, at the generation
//! its create made: it never vouches for what it names, and no drop runs after it.

use super::{step, Compactor, StepCall};
use crate::blob::{
    BlobError, BlobOp, BlobOutcome, BlobResult, Generation, WriteTime, Written as BlobWritten,
};
use crate::collector::Written;
use crate::io::{Call, Io};
use crate::marks::Mark;
use crate::time::Instant;

impl Compactor {
    /// Our own create of the checkpoint at `next_sequence` succeeded.
    pub(super) fn on_created(&mut self, now: Instant, next_sequence: u64, outcome: BlobOutcome, io: &mut Io) {
        if let BlobOutcome::Created(BlobWritten { time: Some(landed), generation, .. }) = outcome {
            return self.on_landed(now, next_sequence, landed, generation, io);
        }
        // A store that answers a create without its time (S3): a metadata read tells it.
        let op = BlobOp::Stat { key: self.keys.checkpoint(next_sequence) };
        io.issue(now, step(StepCall::CheckpointStat { next_sequence }), op, 0);
    }

    /// The metadata read after an untimed create.
    pub(super) fn on_checkpoint_stat(
        &mut self,
        now: Instant,
        call: Call,
        next_sequence: u64,
        result: BlobResult,
        io: &mut Io,
    ) {
        match result {
            Ok(BlobOutcome::Stat(meta)) => self.on_landed(
                now,
                next_sequence,
                WriteTime::Created(meta.created_at_us),
                meta.generation,
                io,
            ),
            // Gone before the read: only a drop that judged it unkept takes a checkpoint,
            // so it landed late too.
            Err(BlobError::NotFound) => self.withdrawn(now),
            _ => io.retry_later(now, call),
        }
    }

    /// The delete of our late checkpoint: done, gone already, or rewritten since by a
    /// racer whose own run vouches for the same content. A store that cannot condition a
    /// delete leaves it to the drops (collection is off there anyway).
    pub(super) fn on_withdraw(&mut self, now: Instant, call: Call, result: BlobResult, io: &mut Io) {
        match result {
            Ok(_) | Err(BlobError::NotFound | BlobError::PreconditionFailed | BlobError::Unsupported) => {
                self.withdrawn(now)
            }
            Err(_) => io.retry_later(now, call),
        }
    }

    fn on_landed(
        &mut self,
        now: Instant,
        next_sequence: u64,
        landed: WriteTime,
        generation: Generation,
        io: &mut Io,
    ) {
        let landed_by_us = landed.created_by_us();
        let late =
            self.run_began_store_us.is_some_and(|look| landed_by_us.saturating_sub(look) > self.grace_us);
        if late {
            self.stats.checkpoints_withdrawn += 1;
            io.marks.hit(Mark::CheckpointWithdrawn);
            let op = BlobOp::Delete { key: self.keys.checkpoint(next_sequence), if_generation: generation };
            io.issue(now, step(StepCall::CheckpointWithdraw { next_sequence }), op, 0);
            return;
        }
        self.stats.written += 1;
        self.queue_segments(landed.reached_us());
        let run = self.run.as_ref().expect("running");
        let (names, shard_bits) = (run.names.clone(), run.layers.shard_bits);
        self.written_out = Some(Written { next_sequence, shard_bits, names });
        self.finish(next_sequence, now, true);
    }

    /// The run ends without its checkpoint; the cadence counts from now, as after a look.
    fn withdrawn(&mut self, now: Instant) {
        self.run = None;
        self.run_target = None;
        self.ended_without_step(now);
    }
}
