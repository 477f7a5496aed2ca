//! Everything that goes into and comes out of a replica.

use crate::blob::{BlobOp, BlobResult};
use crate::hash::Hash32;
use crate::ids::{BlobOpId, OperationId, RequestId, ViewId};
use crate::reply::{FailReason, Reply};
use crate::world::{Receipt, Write};

/// A read. Path reads (`Fetch`, `Versions`, `Receipt`, `IsDirectory`) are exact: they see
/// every write acknowledged on any replica before they began. Catalog reads (`Lookup`,
/// `List`, `HashLookup`) may trail another replica's commit by at most one second; each
/// pages with `start_after` and `limit`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Read {
    /// A document's current version, or version `version` while it is retained.
    Fetch {
        /// The document's path, as the client gave it.
        path: String,
        /// The version to read (None: the current one).
        version: Option<u64>,
    },
    /// A document's retained version records.
    Versions {
        /// The document's path, as the client gave it.
        path: String,
    },
    /// The receipt of an operation id: committed, absent, or expired (SPEC 10.13).
    /// `since` is the first sequence the operation could have committed at (an
    /// `Uncertain` write's `since`); None means since genesis. Settles an `Uncertain`.
    Receipt {
        /// The operation id.
        op_id: OperationId,
        /// First sequence it could have committed at (None: since genesis).
        since: Option<u64>,
    },
    /// Documents whose path starts with `prefix` (byte-wise), after `start_after`.
    Lookup {
        /// The path prefix, byte-wise.
        prefix: String,
        /// Paths strictly after this one (None: from the first).
        start_after: Option<String>,
        /// The most entries to answer with; 0, or more than
        /// [`READ_LIMIT_MAX`](crate::READ_LIMIT_MAX), means that maximum.
        limit: u32,
    },
    /// The documents and subdirectories directly in a directory (`/` for the root), in
    /// the order of their names: a document's name is its path, a subdirectory's its path
    /// and a `/`. Each page answers the children named after `start_after`; the answer's
    /// `next` is the name to pass for the next page.
    List {
        /// The directory's path (`/` for the root).
        directory: String,
        /// Children whose name sorts after this one (None: from the first).
        start_after: Option<String>,
        /// The most documents and subdirectories to answer with; 0, or more than
        /// [`READ_LIMIT_MAX`](crate::READ_LIMIT_MAX), means that maximum.
        limit: u32,
    },
    /// Documents whose current body has this hash, in path order.
    HashLookup {
        /// BLAKE3 of the body.
        hash: Hash32,
        /// Paths strictly after this one (None: from the first).
        start_after: Option<String>,
        /// The most paths to answer with; 0, or more than
        /// [`READ_LIMIT_MAX`](crate::READ_LIMIT_MAX), means that maximum.
        limit: u32,
    },
    /// Documents whose current body matches `query` (SPEC 8.6), in path order, after
    /// `start_after`. Answered in body mode from an index covering the state it reads, or
    /// after `Config::search_wait` without one, in catalog mode (paths only), flagged.
    Search {
        /// Words and quoted phrases.
        query: String,
        /// Paths strictly after this one (None: from the first).
        start_after: Option<String>,
        /// The most entries to answer with; 0, or more than
        /// [`READ_LIMIT_MAX`](crate::READ_LIMIT_MAX), means that maximum.
        limit: u32,
    },
    /// Whether a path is a directory (some document lies under it) at the tip: an exact
    /// read, unlike a `List`, so a check made after an acknowledged write sees it.
    IsDirectory {
        /// The path, as the client gave it (`/` is always a directory).
        path: String,
    },
}

impl Read {
    /// Exact reads check the tip; catalog reads accept a snapshot up to a second old.
    pub fn is_exact(&self) -> bool {
        matches!(
            self,
            Read::Fetch { .. } | Read::Versions { .. } | Read::Receipt { .. } | Read::IsDirectory { .. }
        )
    }
}

/// A request from a client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// A write: queued and committed in a batch, or refused.
    Write(Write),
    /// A read, answered from a snapshot fresh enough for its kind.
    Read(Read),
    /// A read of a view: the view's first read (`pinned` None) is served like any read
    /// and pins the state it answered from; every later one (`pinned`: the sequence the
    /// first answered at) answers from that state, or `ViewExpired`. Release the view
    /// with `Input::ViewRelease`.
    ViewRead {
        /// The view.
        view: ViewId,
        /// The sequence the view's first read answered at, once one has.
        pinned: Option<u64>,
        /// The read.
        read: Read,
    },
    /// Every change after `cursor`, in sequence order, exactly once. `credit` is how many
    /// events the subscriber can take before it sends `Input::WatchCredit`. The request's
    /// id names the subscription.
    Watch {
        /// The sequence the subscriber has seen through: events start at `cursor + 1`.
        cursor: u64,
        /// Events the subscriber can take now.
        credit: u32,
    },
}

/// One input to [`Replica::handle`](crate::Replica::handle).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// A client's request.
    Request {
        /// Names the request in its reply (and names a watch).
        id: RequestId,
        /// The request.
        request: Request,
    },
    /// The completion of a blob operation the replica emitted.
    BlobDone {
        /// The operation's id, as emitted in `Effect::Blob`.
        id: BlobOpId,
        /// What the store answered.
        result: BlobResult,
    },
    /// A `BlobDone` of a segment part the index asked for (named by
    /// [`Replica::search_part`](crate::Replica::search_part)), with the part already
    /// tokenized by [`prepare_part`](crate::search::prepare_part) from the bytes in
    /// `result`: the embedder may do that work on another thread.
    BlobDonePrepared {
        /// The operation's id, as emitted in `Effect::Blob`.
        id: BlobOpId,
        /// What the store answered.
        result: BlobResult,
        /// `prepare_part` of the bytes read, under the name `search_part` gave.
        part: crate::search::PreparedPart,
    },
    /// A peer says it committed through `sequence` (its `Effect::Committed`). Never blocks.
    Follow {
        /// The sequence the peer committed through.
        sequence: u64,
    },
    /// The subscriber of watch `id` can take this many more events.
    WatchCredit {
        /// The watch's request id.
        id: RequestId,
        /// Further events the subscriber can take.
        events: u32,
    },
    /// The subscriber of watch `id` is gone.
    Unwatch {
        /// The watch's request id.
        id: RequestId,
    },
    /// The view's holder is done with it: its pin goes.
    ViewRelease {
        /// The view.
        view: ViewId,
    },
}

/// Why a watch ended. Every end is said; a subscriber is never dropped silently.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WatchEnd {
    /// The cursor is older than the slots this replica can read a backlog from: the
    /// subscriber must rebuild from a read of the world at `tip`, then watch from there.
    #[error("cursor {cursor} is too far behind tip {tip}; read the world and watch again")]
    Resync {
        /// The watch's cursor.
        cursor: u64,
        /// This replica's tip.
        tip: u64,
    },
    /// Too many watches; nothing was subscribed.
    #[error("{watches} watches already")]
    Busy {
        /// Watches this replica already holds.
        watches: usize,
    },
    /// The replica failed closed.
    #[error("the replica failed closed")]
    Failed(#[source] FailReason),
}

/// One output, drained with [`Replica::poll_effect`](crate::Replica::poll_effect).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Run this operation on the store and feed the result back as `Input::BlobDone`.
    Blob {
        /// The operation's id, to hand back in `Input::BlobDone`.
        id: BlobOpId,
        /// The operation.
        op: BlobOp,
    },
    /// Answer a request.
    Reply {
        /// The request's id.
        id: RequestId,
        /// The answer.
        reply: Reply,
    },
    /// This replica learned the world is committed through `sequence` (its own slot, or
    /// one it lost to). Pass it to peers as a hint.
    Committed {
        /// The sequence the world is committed through.
        sequence: u64,
    },
    /// The replica failed closed and answers everything with `WriteError::Failed`.
    Failed(FailReason),
    /// The next changes for watch `id`, in sequence order, at most its credit.
    Changes {
        /// The watch's request id.
        id: RequestId,
        /// Receipts of the changes, one per sequence.
        events: Vec<Receipt>,
    },
    /// Watch `id` ended.
    WatchEnded {
        /// The watch's request id.
        id: RequestId,
        /// Why it ended.
        end: WatchEnd,
    },
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
    CheckpointSkipped {
        /// The checkpoint's name.
        key: String,
        /// Why it could not be loaded.
        reason: FailReason,
    },
}
