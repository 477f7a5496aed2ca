//! Loading a full checkpoint at open (SPEC 10.12): its root, then its shards, deltas and
//! receipt blocks, each read at most once, a bounded number in flight, each verified against the
//! name its referrer gave it. History blocks stay in the bucket until a read needs one.

use super::OpenCall;
use crate::blob::{BlobError, BlobOp, BlobOutcome, BlobResult};
use crate::checkpoint::{object_key, Layers, ObjectKind, Restore};
use crate::format::{Checkpoint, Keys};
use crate::hash::Hash32;
use crate::io::{Call, Io, Purpose};
use crate::reply::{CheckpointProblem, FailReason};
use crate::time::Instant;
use crate::world::WorldState;
use std::collections::{BTreeSet, VecDeque};

pub(super) struct Load {
    pub key: String,
    restore: Restore,
    /// Objects to read, not yet asked for.
    queue: VecDeque<(ObjectKind, Hash32)>,
    in_flight: usize,
    in_flight_max: usize,
    /// Every object name the checkpoint uses: what the compactor may reuse.
    pub names: BTreeSet<Hash32>,
    /// Its root's shards and deltas, once loaded: what the compactor steps over.
    pub layers: Option<Layers>,
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
        let restore = Restore::new(checkpoint, false);
        let root = restore.root_name();
        let mut load = Load {
            key,
            restore,
            queue: VecDeque::new(),
            in_flight: 0,
            in_flight_max,
            names: BTreeSet::new(),
            layers: None,
        };
        load.queue.push_back((ObjectKind::Root, root));
        load.send(keys, now, io);
        load
    }

    pub fn next_sequence(&self) -> u64 {
        self.restore.checkpoint.next_sequence
    }

    /// The hash of the slot holding `next_sequence - 1`, as the checkpoint names it.
    pub fn previous_hash(&self) -> Hash32 {
        self.restore.checkpoint.previous_hash
    }

    fn send(&mut self, keys: &Keys, now: Instant, io: &mut Io) {
        while self.in_flight < self.in_flight_max {
            let Some((kind, name)) = self.queue.pop_front() else { break };
            self.in_flight += 1;
            self.names.insert(name);
            let key = object_key(kind, &name, keys);
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
    ) -> Result<Option<WorldState>, FailReason> {
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
        let wanted = self.restore.feed(&self.key, (kind, name), &key, &bytes)?;
        self.queue.extend(wanted);
        self.send(keys, now, io);
        if self.in_flight > 0 || !self.queue.is_empty() || !self.restore.is_complete() {
            return Ok(None);
        }
        self.layers = self.restore.layers();
        let fresh = Restore::new(self.restore.checkpoint.clone(), false);
        let restore = std::mem::replace(&mut self.restore, fresh);
        restore
            .finish()
            .map(Some)
            .map_err(|problem| FailReason::CheckpointMismatch { key: self.key.clone(), problem })
    }
}
