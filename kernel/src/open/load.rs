//! Loading a full checkpoint at open (SPEC 10.12): its root, then its shards and receipt
//! blocks, then the history blocks the shards name, each read at most once, a bounded
//! number in flight, each verified against the name its referrer gave it.

use super::OpenCall;
use crate::blob::{BlobError, BlobOp, BlobOutcome, BlobResult};
use crate::checkpoint::{ObjectKind, Restore};
use crate::format::{Checkpoint, HistoryBlock, Keys, ReceiptBlock, Root, Shard};
use crate::hash::Hash32;
use crate::io::{Call, Io, Purpose};
use crate::reply::{CheckpointProblem, FailReason};
use crate::time::Instant;
use crate::world::WorldState;
use std::collections::{BTreeSet, VecDeque};

/// Why a checkpoint could not be loaded: a reason the opening may fall back from.
pub(super) type LoadFailure = FailReason;

pub(super) struct Load {
    pub key: String,
    restore: Restore,
    /// Objects to read, not yet asked for.
    queue: VecDeque<(ObjectKind, Hash32)>,
    in_flight: usize,
    in_flight_max: usize,
    /// Every object name the checkpoint uses: what the compactor may reuse.
    pub names: BTreeSet<Hash32>,
}

impl Load {
    pub fn start(
        key: String,
        checkpoint: Checkpoint,
        in_flight_max: usize,
        keys: &Keys,
        now: Instant,
        io: &mut Io,
    ) -> Load {
        let restore = Restore::new(checkpoint);
        let root = restore.root_name();
        let mut load = Load {
            key,
            restore,
            queue: VecDeque::new(),
            in_flight: 0,
            in_flight_max,
            names: BTreeSet::new(),
        };
        load.queue.push_back((ObjectKind::Root, root));
        load.send(keys, now, io);
        load
    }

    pub fn next_sequence(&self) -> u64 {
        self.restore.checkpoint.next_sequence
    }

    fn send(&mut self, keys: &Keys, now: Instant, io: &mut Io) {
        while self.in_flight < self.in_flight_max {
            let Some((kind, name)) = self.queue.pop_front() else { break };
            self.in_flight += 1;
            self.names.insert(name);
            let key = match kind {
                ObjectKind::Root => keys.root_object(&name),
                ObjectKind::Shard => keys.shard(&name),
                ObjectKind::History => keys.history(&name),
                ObjectKind::Receipts => keys.receipts(&name),
            };
            io.issue(now, Purpose::Open(OpenCall::CheckpointObject { kind, name }), BlobOp::Get { key }, 0);
        }
    }

    /// An object of the checkpoint arrived (or failed). Ok(Some(world)) once all are in.
    pub fn on_done(
        &mut self,
        keys: &Keys,
        now: Instant,
        (kind, name): (ObjectKind, Hash32),
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) -> Result<Option<WorldState>, LoadFailure> {
        let key = call.op.key().to_string();
        let bytes = match result {
            Ok(BlobOutcome::Got { bytes, .. }) => bytes,
            Err(BlobError::NotFound) => {
                let problem = CheckpointProblem::ObjectMissing { key };
                return Err(FailReason::CheckpointMismatch { key: self.key.clone(), problem });
            }
            _ => {
                io.retry_later(now, call);
                return Ok(None);
            }
        };
        self.in_flight -= 1;
        let decode_failed = |error| FailReason::Decode { key: key.clone(), error };
        let mismatch = |problem| FailReason::CheckpointMismatch { key: self.key.clone(), problem };
        match kind {
            ObjectKind::Root => {
                let root = Root::decode_named(&bytes, &name).map_err(decode_failed)?;
                let wanted = self.restore.on_root(root).map_err(mismatch)?;
                self.queue.extend(wanted);
            }
            ObjectKind::Shard => {
                let shard = Shard::decode_named(&bytes, &name).map_err(decode_failed)?;
                let wanted = self.restore.on_shard(name, shard).map_err(mismatch)?;
                self.queue.extend(wanted.into_iter().map(|h| (ObjectKind::History, h)));
            }
            ObjectKind::History => {
                let block = HistoryBlock::decode_named(&bytes, &name).map_err(decode_failed)?;
                self.restore.on_history(name, block);
            }
            ObjectKind::Receipts => {
                let block = ReceiptBlock::decode_named(&bytes, &name).map_err(decode_failed)?;
                self.restore.on_receipts(name, block).map_err(mismatch)?;
            }
        }
        self.send(keys, now, io);
        if self.in_flight > 0 || !self.queue.is_empty() || !self.restore.is_complete() {
            return Ok(None);
        }
        let fresh = Restore::new(self.restore.checkpoint.clone());
        let restore = std::mem::replace(&mut self.restore, fresh);
        restore
            .finish()
            .map(Some)
            .map_err(|problem| FailReason::CheckpointMismatch { key: self.key.clone(), problem })
    }
}
