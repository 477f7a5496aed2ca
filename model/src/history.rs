//! What clients saw: every write a run issued, when, and how it was answered. The
//! harness records it; the checker judges it against the log.

use bytes::Bytes;
use slotlog_kernel::effect::{Read, WatchEnd};
use slotlog_kernel::ids::OperationId;
use slotlog_kernel::reply::{ReadError, ReadOk, WriteError, WriteOk};
use slotlog_kernel::time::Instant;
use slotlog_kernel::world::{Mutation, Receipt};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Answered {
        at: Instant,
        result: Result<WriteOk, WriteError>,
    },
    /// The replica crashed before answering: the write may or may not be in the log.
    Crashed,
    /// Written into the log before the run started (a seeded world).
    Preloaded,
    /// No answer by the end of the run, from a replica that did not crash.
    Unanswered,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientOp {
    pub replica: usize,
    pub op_id: OperationId,
    pub mutation: Mutation,
    /// True time the request reached the replica.
    pub invoked_at: Instant,
    pub outcome: Outcome,
}

impl ClientOp {
    pub fn answered_at(&self) -> Option<Instant> {
        match &self.outcome {
            Outcome::Answered { at, .. } => Some(*at),
            _ => None,
        }
    }
}

/// How a read came out. (A record of a run, kept whole: the answer is not boxed.)
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadOutcome {
    Answered { at: Instant, result: Result<ReadOk, ReadError> },
    Crashed,
    Unanswered,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadOp {
    pub replica: usize,
    pub read: Read,
    pub invoked_at: Instant,
    pub outcome: ReadOutcome,
}

/// How a watch session ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionEnd {
    /// Still open when the run ended, or closed by its subscriber.
    Open,
    Ended(WatchEnd),
    Crashed,
}

/// One subscription: from a cursor, the events it received in order, and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchSession {
    pub replica: usize,
    pub cursor: u64,
    pub started_at: Instant,
    pub events: Vec<Receipt>,
    pub end: SessionEnd,
}

#[derive(Clone, Debug, Default)]
pub struct History {
    pub ops: Vec<ClientOp>,
    pub reads: Vec<ReadOp>,
    pub watches: Vec<WatchSession>,
}

/// One object of the world as the bucket held it at the end of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredObject {
    pub key: String,
    pub bytes: Bytes,
    /// Store-side creation time, on the run's true clock.
    pub created_at: Instant,
}
