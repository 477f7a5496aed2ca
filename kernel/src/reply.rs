//! What a caller hears back.

use crate::format::DecodeError;
use crate::hash::Hash32;
use crate::ids::OperationId;
use crate::world::{ApplyError, Invalid, Receipt, Rejection};

/// A write that succeeded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteOk {
    /// The write is a member of a confirmed slot.
    Committed(Receipt),
    /// The write would have changed nothing (SPEC 1.4 check 9); judged at `at_sequence`.
    Unchanged { version: u64, at_sequence: u64 },
    /// The operation id was already committed; this is its first receipt.
    Duplicate { receipt: Receipt, at_sequence: u64 },
}

/// A write that did not succeed. Every variant says whether it may still apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteError {
    /// Wrong input; never queued, never applied.
    Invalid(Invalid),
    /// A precondition failed at `at_sequence`; not applied.
    Rejected { rejection: Rejection, at_sequence: u64 },
    /// The queue was full; not queued, not applied.
    Busy { queued: usize },
    /// The deadline passed while the write still waited in the queue; never part of a
    /// slot create, so it is not applied and never will be.
    Expired { op_id: OperationId },
    /// The deadline passed while a slot holding the write may still commit. Its receipt
    /// settles it.
    Uncertain { op_id: OperationId },
    /// The replica failed closed; nothing more is applied through it.
    Failed(FailReason),
}

/// Why a replica stopped. Each means the bucket holds something this replica cannot trust.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailReason {
    /// An object of this world failed to decode.
    Decode { key: String, error: DecodeError },
    /// The marker names another world.
    ForeignWorld,
    /// A slot did not continue the chain this replica holds.
    Apply(ApplyError),
    /// A body the log names is not in the bucket.
    BodyMissing { hash: Hash32 },
    /// A slot name the log needs is not readable although a create found it taken.
    SlotVanished { sequence: u64 },
}

/// The answer to one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Write(Result<WriteOk, WriteError>),
}
