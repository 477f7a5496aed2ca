//! What a client asks the world to do. Plain data: the kernel validates and evaluates it
//! (`world::evaluate`), the reference model evaluates it independently.

use crate::ids::OperationId;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// A write precondition on the current version (of a document, or of the policy).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Expected {
    /// No precondition: a blind write.
    Any,
    /// The document must not exist (for the policy: it was never set, version 0).
    Absent,
    /// The current version must be exactly this.
    Version(u64),
}

/// The world-wide policy as a client states it. Validated and normalized before use
/// (`world::policy`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PolicyBody {
    /// Versions kept per document; older ones are pruned on the document's next write.
    pub retention_versions: u32,
    /// Largest body a publish or append may leave.
    pub body_bytes_max: u64,
    /// Paths under these prefixes refuse every mutation.
    pub read_only_prefixes: Vec<String>,
}

/// One mutation. Paths are raw client strings; they are normalized on validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// Replace a document's body (creating the document when absent).
    Publish {
        /// The document's path, as the client gave it.
        path: String,
        /// The new body.
        body: Bytes,
        /// The document's new catalog record (SPEC 1.3): None or empty for none. A publish
        /// replaces the record with its body; an append or archive flip keeps it.
        catalog: Option<String>,
        /// The precondition on the document's version.
        expected: Expected,
    },
    /// Add bytes to the end of the current body (creating the document when absent).
    Append {
        /// The document's path, as the client gave it.
        path: String,
        /// The bytes to add.
        bytes: Bytes,
        /// The precondition on the document's version.
        expected: Expected,
    },
    /// Archive or unarchive an existing document. An archived document refuses writes.
    SetArchived {
        /// The document's path, as the client gave it.
        path: String,
        /// True to archive, false to unarchive.
        archived: bool,
        /// The precondition on the document's version.
        expected: Expected,
    },
    /// Replace the world's policy.
    SetPolicy {
        /// The new policy.
        policy: PolicyBody,
        /// The precondition on the policy version.
        expected: Expected,
    },
}

/// A mutation with the operation id that names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Write {
    /// Names the mutation: settles an uncertain outcome, makes a retry idempotent.
    pub op_id: OperationId,
    /// What it asks for.
    pub mutation: Mutation,
}

impl Mutation {
    /// The mutation's precondition.
    pub fn expected(&self) -> Expected {
        match self {
            Mutation::Publish { expected, .. }
            | Mutation::Append { expected, .. }
            | Mutation::SetArchived { expected, .. }
            | Mutation::SetPolicy { expected, .. } => *expected,
        }
    }

    /// The raw path, for mutations of one document.
    pub fn raw_path(&self) -> Option<&str> {
        match self {
            Mutation::Publish { path, .. }
            | Mutation::Append { path, .. }
            | Mutation::SetArchived { path, .. } => Some(path),
            Mutation::SetPolicy { .. } => None,
        }
    }
}
