//! Everything that goes into and comes out of a replica.

use crate::blob::{BlobOp, BlobResult};
use crate::hash::Hash32;
use crate::ids::{BlobOpId, OperationId, RequestId};
use crate::reply::{FailReason, Reply};
use crate::world::{Receipt, Write};

/// A read. Path reads (`Fetch`, `Versions`, `Receipt`) are exact: they see every write
/// acknowledged on any replica before they began. Catalog reads (`Lookup`, `List`,
/// `HashLookup`) may trail another replica's commit by at most one second.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Read {
    /// A document's current version, or version `version` while it is retained.
    Fetch { path: String, version: Option<u64> },
    /// A document's retained version records.
    Versions { path: String },
    /// The receipt of an operation id: committed, absent, or expired (SPEC 10.13).
    /// `since` is the first sequence the operation could have committed at (an
    /// `Uncertain` write's `since`); None means since genesis. Settles an `Uncertain`.
    Receipt { op_id: OperationId, since: Option<u64> },
    /// Documents whose path starts with `prefix` (byte-wise), after `start_after`.
    Lookup { prefix: String, start_after: Option<String>, limit: u32 },
    /// The documents and subdirectories directly in a directory (`/` for the root).
    List { directory: String, limit: u32 },
    /// Documents whose current body has this hash.
    HashLookup { hash: Hash32, limit: u32 },
}

impl Read {
    /// Exact reads check the tip; catalog reads accept a snapshot up to a second old.
    pub fn is_exact(&self) -> bool {
        matches!(self, Read::Fetch { .. } | Read::Versions { .. } | Read::Receipt { .. })
    }
}

/// A request from a client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    Write(Write),
    Read(Read),
    /// Every change after `cursor`, in sequence order, exactly once. `credit` is how many
    /// events the subscriber can take before it sends `Input::WatchCredit`. The request's
    /// id names the subscription.
    Watch {
        cursor: u64,
        credit: u32,
    },
}

/// One input to [`Replica::handle`](crate::Replica::handle).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    Request {
        id: RequestId,
        request: Request,
    },
    /// The completion of a blob operation the replica emitted.
    BlobDone {
        id: BlobOpId,
        result: BlobResult,
    },
    /// A peer says it committed through `sequence` (its `Effect::Committed`). Never blocks.
    Follow {
        sequence: u64,
    },
    /// The subscriber of watch `id` can take this many more events.
    WatchCredit {
        id: RequestId,
        events: u32,
    },
    /// The subscriber of watch `id` is gone.
    Unwatch {
        id: RequestId,
    },
}

/// Why a watch ended. Every end is said; a subscriber is never dropped silently.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WatchEnd {
    /// The cursor is older than the slots this replica can read a backlog from: the
    /// subscriber must rebuild from a read of the world at `tip`, then watch from there.
    #[error("cursor {cursor} is too far behind tip {tip}; read the world and watch again")]
    Resync { cursor: u64, tip: u64 },
    /// Too many watches; nothing was subscribed.
    #[error("{watches} watches already")]
    Busy { watches: usize },
    /// The replica failed closed.
    #[error("the replica failed closed")]
    Failed(#[source] FailReason),
}

/// One output, drained with [`Replica::poll_effect`](crate::Replica::poll_effect).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Run this operation on the store and feed the result back as `Input::BlobDone`.
    Blob { id: BlobOpId, op: BlobOp },
    /// Answer a request.
    Reply { id: RequestId, reply: Reply },
    /// This replica learned the world is committed through `sequence` (its own slot, or
    /// one it lost to). Pass it to peers as a hint.
    Committed { sequence: u64 },
    /// The replica failed closed and answers everything with `WriteError::Failed`.
    Failed(FailReason),
    /// The next changes for watch `id`, in sequence order, at most its credit.
    Changes { id: RequestId, events: Vec<Receipt> },
    /// Watch `id` ended.
    WatchEnded { id: RequestId, end: WatchEnd },
    /// Something went wrong that cost time but not correctness.
    Warning(Warning),
}

/// A problem the replica worked around.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Warning {
    /// The checkpoint at `key` could not be loaded at open; an older one was used and the
    /// slots after it replayed.
    #[error("checkpoint {key} skipped at open: {reason}")]
    CheckpointSkipped { key: String, reason: FailReason },
}
