//! The answers the model gives (SPEC 1.4, 1.5): a verdict per mutation, and the receipt
//! an applied member leaves behind.

use crate::path::PathProblem;
use crate::policy::{ModelPolicyBody, PolicyProblem};
use slotlog_kernel::ids::OperationId;

/// The outcome of evaluating one mutation against one state: exactly one of the five
/// kinds of SPEC 1.4.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It becomes a member with the next sequence.
    Applied(ModelApplied),
    /// A success that changes nothing: the document's version, or the policy version for
    /// `set_policy`.
    Unchanged {
        /// The document's version, or the policy version.
        version: u64,
    },
    /// The operation id is already committed: the receipt of the member that committed
    /// it first.
    Duplicate(ModelReceipt),
    /// A precondition failed against the state.
    Rejected(ModelRejection),
    /// The input is wrong whatever the state.
    Invalid(ModelInvalid),
}

/// What an applied member did, in enough detail to compare with the kernel's member
/// record field by field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelApplied {
    /// The receipt the member answers with.
    pub receipt: ModelReceipt,
    /// The document's archived flag after the member (false for `set_policy`).
    pub archived: bool,
    /// The document's current body hash after the member (None for `set_policy`).
    pub body_hash: Option<[u8; 32]>,
    /// The document's current body length after the member (0 for `set_policy`).
    pub body_len: u64,
    /// The document's first retained version after the member (0 for `set_policy`).
    pub first_version: u64,
    /// The document's catalog record after the member (None for `set_policy`).
    pub catalog: Option<String>,
    /// The inclusive version range this write pruned (SPEC 1.3), if any.
    pub prune: Option<(u64, u64)>,
    /// A version record was added (publish and append).
    pub new_version: bool,
    /// The new normalized policy (`set_policy` only).
    pub policy: Option<ModelPolicyBody>,
}

/// SPEC 1.5: what an applied member answers with, then and on every duplicate after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelReceipt {
    /// The operation id the member committed.
    pub op_id: OperationId,
    /// The member's sequence.
    pub sequence: u64,
    /// What the member did.
    pub kind: ReceiptKind,
    /// The normalized path; None for `PolicySet`.
    pub path: Option<String>,
    /// The document's version after the member, or the new policy version.
    pub version: u64,
}

/// The kind of an applied member (and of a version record: `Published` or `Appended`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReceiptKind {
    /// A publish: a new current body.
    Published,
    /// An append: bytes added to the current body, as a new version.
    Appended,
    /// An archive: the document now refuses writes.
    Archived,
    /// An unarchive: the document accepts writes again.
    Unarchived,
    /// A `set_policy`: a new policy version.
    PolicySet,
}

/// Why a mutation was refused against a state, with the data SPEC 1.4 says it carries.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelRejection {
    /// The expected version failed; `current` is the document's (or policy's) version,
    /// None when the document is absent (or the policy version is 0).
    #[error("expected version does not hold: current {current:?}")]
    Conflict {
        /// The document's (or policy's) version; None when absent (or 0).
        current: Option<u64>,
    },
    /// Creating the path would make one document an ancestor of another.
    #[error("the path would nest with {blocking}")]
    Topology {
        /// The document's path that nests with the write's.
        blocking: String,
    },
    /// The path is under this read-only prefix.
    #[error("the path is under read-only prefix {prefix}")]
    ReadOnly {
        /// The read-only prefix, normalized.
        prefix: String,
    },
    /// The new body is `size` bytes, over the policy's `max`.
    #[error("a body of {size} bytes exceeds the maximum {max}")]
    TooLarge {
        /// The new body's length, in bytes.
        size: u64,
        /// The policy's `body_bytes_max`, in bytes.
        max: u64,
    },
    /// The document is archived and refuses writes.
    #[error("the document is archived")]
    Archived,
    /// `set_archived` on a path with no document.
    #[error("the document does not exist")]
    NotFound,
    /// The operation id committed other content at `sequence`, inside the receipt
    /// window (SPEC 10.13).
    #[error("the operation id committed other content at sequence {sequence}")]
    OperationIdReused {
        /// Sequence of the member that committed the operation id first.
        sequence: u64,
    },
}

/// Why a mutation is invalid whatever the state.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelInvalid {
    /// The path is not a valid path.
    #[error(transparent)]
    Path(PathProblem),
    /// The policy of a `set_policy` is not valid.
    #[error("policy: {0}")]
    Policy(PolicyProblem),
    /// A publish's catalog record is longer than 1,024 bytes (SPEC 1.3).
    #[error("a catalog record of {len} bytes exceeds the maximum {max}")]
    CatalogRecordTooLong {
        /// The record's length, in bytes.
        len: usize,
        /// The most, 1,024.
        max: usize,
    },
}
