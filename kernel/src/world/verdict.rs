//! How a mutation comes out (SPEC 1.4): refusals with their data, never strings.

use super::path::{Path, PathProblem};
use super::policy::PolicyProblem;
use serde::{Deserialize, Serialize};

/// Input that is wrong whatever the world holds; answered before queueing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Invalid {
    /// The path is not a valid path.
    #[error(transparent)]
    Path(PathProblem),
    /// The policy of a `set_policy` is not valid.
    #[error("policy: {0}")]
    Policy(PolicyProblem),
    /// A publish's catalog record is longer than `CATALOG_RECORD_BYTES_MAX`.
    #[error("a catalog record of {len} bytes exceeds the maximum {max}")]
    CatalogRecordTooLong {
        /// The record's length, in bytes.
        len: usize,
        /// `CATALOG_RECORD_BYTES_MAX`.
        max: usize,
    },
}

/// A precondition that failed against the state a mutation was judged at.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
pub enum Rejection {
    /// The expected version did not hold; `current` is the document's (or policy's)
    /// version, None when absent.
    #[error("expected version does not hold: {}", Current(*current))]
    Conflict {
        /// The document's (or policy's) version; None when absent.
        current: Option<u64>,
    },
    /// The path would be an ancestor or descendant of `blocking`.
    #[error("the path would nest with {blocking}")]
    Topology {
        /// The document's path that nests with the write's.
        blocking: Path,
    },
    /// The path is under a read-only prefix.
    #[error("the path is under read-only prefix {prefix}")]
    ReadOnly {
        /// The read-only prefix.
        prefix: Path,
    },
    /// The resulting body would exceed the policy's maximum.
    #[error("a body of {size} bytes exceeds the maximum {max}")]
    TooLarge {
        /// The resulting body's length, in bytes.
        size: u64,
        /// The policy's `body_bytes_max`, in bytes.
        max: u64,
    },
    /// The document is archived.
    #[error("the document is archived")]
    Archived,
    /// `set_archived` on a document that does not exist.
    #[error("the document does not exist")]
    NotFound,
    /// The operation id committed at `sequence` with other content (SPEC 10.13): it
    /// names another operation, whose receipt is not this write's answer.
    #[error("the operation id committed other content at sequence {sequence}")]
    OperationIdReused {
        /// The sequence the operation id committed at.
        sequence: u64,
    },
}

/// A current version in a message: the number, or that there is none.
struct Current(Option<u64>);

impl core::fmt::Display for Current {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(v) => write!(f, "current version {v}"),
            None => f.write_str("absent"),
        }
    }
}
