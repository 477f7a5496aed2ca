//! The world: documents by path, versions, policy, receipts, and the rules that decide
//! what a mutation does (docs/SPEC.md section 1).

mod body_index;
#[cfg(test)]
mod catalog_tests;
pub mod document;
mod documents;
pub mod entry;
pub mod evaluate;
pub(crate) mod merge;
pub mod mutation;
#[cfg(test)]
mod own_slot_tests;
pub mod path;
pub mod policy;
pub mod receipt_key;
mod receipt_table;
pub mod receipt_window;
#[cfg(test)]
mod receipts_tests;
pub mod request_digest;
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
pub use receipt_key::ReceiptKey;
pub use receipt_window::{receipts_from, ReceiptAnswer, RECEIPT_WINDOW_SEQUENCES};
pub use state::{ApplyError, ApplyRule, RestoreProblem, WorldState};
pub use verdict::{Invalid, Rejection};
pub use view::{Layered, Overlay, StateView};
