//! Everything that goes into and comes out of a replica.

use crate::blob::{BlobOp, BlobResult};
use crate::ids::{BlobOpId, RequestId};
use crate::reply::{FailReason, Reply};
use crate::world::Write;

/// A request from a client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    Write(Write),
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
}
