//! The world: documents by path, versions, policy, receipts, and the rules that decide
//! what a mutation does (docs/SPEC.md section 1).

mod body_index;
pub mod document;
pub mod entry;
pub mod evaluate;
pub(crate) mod merge;
pub mod mutation;
pub mod path;
pub mod policy;
pub mod state;
pub mod verdict;
pub mod view;

pub use document::{Document, DocumentProblem, VersionAt};
pub use entry::{
    IndexEntry, MemberRule, PruneRange, Receipt, ReceiptKind, SlotMember, VersionKind, VersionRecord,
};
pub use evaluate::{evaluate, validate, Evaluation, ValidMutation};
pub use mutation::{Expected, Mutation, PolicyBody, Write};
pub use path::{Path, PathDecodeError, PathProblem};
pub use policy::{Policy, PolicyProblem, PolicyRules};
pub use state::{receipts_from, ApplyError, ApplyRule, RestoreProblem, WorldState, RECEIPT_WINDOW_SEQUENCES};
pub use verdict::{Invalid, Rejection};
pub use view::{Layered, Overlay, StateView};
