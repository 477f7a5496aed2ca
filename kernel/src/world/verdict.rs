//! How a mutation comes out (SPEC 1.4): refusals with their data, never strings.

use super::path::{Path, PathProblem};
use super::policy::PolicyProblem;
use serde::{Deserialize, Serialize};

/// Input that is wrong whatever the world holds; answered before queueing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Invalid {
    Path(PathProblem),
    Policy(PolicyProblem),
}

/// A precondition that failed against the state a mutation was judged at.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Rejection {
    /// The expected version did not hold; `current` is the document's (or policy's)
    /// version, None when absent.
    Conflict { current: Option<u64> },
    /// The path would be an ancestor or descendant of `blocking`.
    Topology { blocking: Path },
    /// The path is under a read-only prefix.
    ReadOnly { prefix: Path },
    /// The resulting body would exceed the policy's maximum.
    TooLarge { size: u64, max: u64 },
    /// The document is archived.
    Archived,
    /// `set_archived` on a document that does not exist.
    NotFound,
}
