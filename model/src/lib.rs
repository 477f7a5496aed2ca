//! slotlog-model: the reference model: a plain sequential specification of a world; the
//! checker that judges runs lives beside it.
//!
//! The model follows docs/SPEC.md section 1 independently of the kernel, as simply as it
//! can be written, so that when the two disagree in simulation the SPEC can decide which
//! one is wrong.

// Every public item says what it is; CI denies warnings (issue 12).
#![warn(missing_docs)]

pub mod checker;
pub mod checkpoint;
pub mod document;
pub mod history;
pub mod path;
pub mod policy;
pub mod request;
pub mod search;
pub mod verdict;
pub mod world;

pub use checker::{check, CheckOptions, CheckReport, MemberDiff, Rule, Violation};
pub use checkpoint::{CheckpointDocument, ModelCheckpoint};
pub use document::{body_hash, Current, ModelDocument, ModelVersion};
pub use history::{
    ClientOp, History, NameChange, NameEvent, NameHistory, Outcome, ReadOp, ReadOutcome, SessionEnd,
    StoredObject, WatchSession,
};
pub use path::{normalize_path, PathProblem};
pub use policy::{normalize_policy, ModelPolicy, ModelPolicyBody, PolicyProblem};
pub use request::ModelRequest;
pub use verdict::{ModelApplied, ModelInvalid, ModelReceipt, ModelRejection, ReceiptKind, Verdict};
pub use world::{ModelReceiptAnswer, ModelWorld};
