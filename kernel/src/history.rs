//! History blocks read back from the bucket (SPEC 10.5): a replica holds only the version
//! records written since its newest checkpoint; an older version is in a history block,
//! read when a read or the compactor needs it, verified by its name and kept in a bounded
//! cache. It owns every history block read; it never decides what a read answers.

use crate::blob::{BlobError, BlobOp, BlobOutcome, BlobResult};
use crate::format::{HistoryBlock, Keys};
use crate::hash::Hash32;
use crate::io::{Call, Io, Purpose};
use crate::reply::{CheckpointProblem, FailReason};
use crate::time::Instant;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// The calls the history owner makes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum HistoryCall {
    /// Read the history block with this name.
    Get { block: Hash32 },
}

pub(crate) struct History {
    keys: Keys,
    /// Blocks read, the oldest read forgotten first past `cached_max`.
    cache: BTreeMap<Hash32, Arc<HistoryBlock>>,
    order: VecDeque<Hash32>,
    cached_max: usize,
}

impl History {
    pub fn new(keys: Keys, cached_max: usize) -> History {
        History { keys, cache: BTreeMap::new(), order: VecDeque::new(), cached_max }
    }

    pub fn get(&self, block: &Hash32) -> Option<&Arc<HistoryBlock>> {
        self.cache.get(block)
    }

    /// Reads a block unless it is cached or a read of it is already on its way.
    pub fn fetch(&mut self, now: Instant, block: Hash32, io: &mut Io) {
        let purpose = Purpose::History(HistoryCall::Get { block });
        if self.cache.contains_key(&block) || io.is_pending(&purpose) {
            return;
        }
        io.issue(now, purpose, BlobOp::Get { key: self.keys.history(&block) }, 0);
    }

    /// Version records the cache holds.
    pub fn cached_records(&self) -> usize {
        self.cache.values().map(|b| b.records.len()).sum()
    }

    /// A history call completed: the block, once it arrived and hashes to its name. A
    /// block missing or damaged is a reason to fail the replica closed: content objects
    /// are never collected, so a checkpoint named a block the bucket does not hold.
    pub fn on_done(
        &mut self,
        now: Instant,
        HistoryCall::Get { block }: HistoryCall,
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) -> Result<Option<(Hash32, Arc<HistoryBlock>)>, FailReason> {
        let key = self.keys.history(&block);
        match result {
            Ok(BlobOutcome::Got { bytes, .. }) => {
                let decoded = HistoryBlock::decode_named(&bytes, &block)
                    .map_err(|error| FailReason::Decode { key, error })?;
                let decoded = Arc::new(decoded);
                self.insert(block, decoded.clone());
                Ok(Some((block, decoded)))
            }
            Err(BlobError::NotFound) => {
                let problem = CheckpointProblem::ObjectMissing { key: key.clone() };
                Err(FailReason::CheckpointMismatch { key, problem })
            }
            _ => {
                io.retry_later(now, call);
                Ok(None)
            }
        }
    }

    fn insert(&mut self, name: Hash32, block: Arc<HistoryBlock>) {
        if self.cache.insert(name, block).is_none() {
            self.order.push_back(name);
        }
        while self.order.len() > self.cached_max {
            let old = self.order.pop_front().expect("non-empty");
            self.cache.remove(&old);
        }
    }
}
