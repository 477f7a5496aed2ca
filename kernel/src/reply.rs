//! What a caller hears back.

use crate::format::{DecodeError, SlotProblem};
use crate::hash::Hash32;
use crate::ids::{OperationId, WorldId};
use crate::world::{ApplyError, IndexEntry, Invalid, Path, PathProblem, Receipt, Rejection, VersionRecord};
use bytes::Bytes;

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
    /// The prefix holds objects but no marker: not a world, and not empty.
    ForeignObjects { key: String },
    /// The slot at `key` starts at `first_sequence`, not at the sequence its name says.
    SlotMisnamed { key: String, first_sequence: u64 },
    /// The slot at `key` is not the one this replica installed under that name.
    SlotNotInstalled { key: String },
    /// A slot did not continue the chain this replica holds.
    Apply(ApplyError),
    /// A body the log names is not in the bucket.
    BodyMissing { hash: Hash32 },
    /// A slot name the log needs is not readable although a create found it taken.
    SlotVanished { sequence: u64 },
    /// The newest checkpoint is one this build cannot load: it covers slots or holds
    /// shards. Only checkpoint zero can be opened today.
    CheckpointUnsupported { key: String },
    /// A checkpoint that decodes but does not belong to this world's marker.
    CheckpointMismatch { key: String, problem: CheckpointProblem },
}

impl FailReason {
    /// The reason to fail closed on the bytes at the slot name `key`.
    pub fn slot(key: String, problem: SlotProblem) -> FailReason {
        match problem {
            SlotProblem::Decode(error) => FailReason::Decode { key, error },
            SlotProblem::Misnamed { first_sequence } => FailReason::SlotMisnamed { key, first_sequence },
        }
    }
}

/// How a checkpoint that decodes contradicts the world it was found in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckpointProblem {
    /// It names another world.
    ForeignWorld { found: WorldId },
    /// Its `next_sequence` is not the one its key names.
    Misnamed { next_sequence: u64 },
    /// Checkpoint zero names another predecessor than the marker's hash.
    NotTheMarker { found: Hash32 },
}

/// What a read found, all of it from one snapshot: the state through `at_sequence`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadOk {
    pub at_sequence: u64,
    pub answer: Answer,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// `Fetch`: the document's entry, the version asked for, and its body.
    Document { entry: IndexEntry, version: VersionRecord, body: Bytes },
    /// `Versions`: the entry and every retained version, oldest first.
    Versions { entry: IndexEntry, versions: Vec<VersionRecord> },
    /// `Fetch` or `Versions` of a path that is not a document.
    NotFound,
    /// `Fetch` of a version that was pruned or is not yet written.
    VersionNotRetained { first_version: u64, current: u64 },
    /// `Receipt`: the receipt, or None while the operation id is not committed.
    Receipt(Option<Receipt>),
    /// `Lookup`: entries in path order; `more` when the limit cut it short.
    Lookup { entries: Vec<IndexEntry>, more: bool },
    /// `List`: the documents and the subdirectories directly in the directory.
    Listing { documents: Vec<IndexEntry>, directories: Vec<Path>, more: bool },
    /// `HashLookup`: paths in order.
    Paths { paths: Vec<Path>, more: bool },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadError {
    InvalidPath(PathProblem),
    /// Too many reads waiting; nothing was queued.
    Busy {
        pending: usize,
    },
    /// The deadline passed before the replica could confirm a fresh enough snapshot.
    Deadline,
    Failed(FailReason),
}

/// The answer to one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Write(Result<WriteOk, WriteError>),
    Read(Result<ReadOk, ReadError>),
}
