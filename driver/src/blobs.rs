//! The blob backend a World runs over: one async call per kernel blob operation. The
//! driver runs each call with its own timeout; a call that outlives it is `Timeout`, an
//! outcome the kernel treats as unknown and settles by reading.

use crate::error::StoreErrorKind;
use slotlog_kernel::blob::{BlobError, BlobOp, BlobOutcome, BlobResult};
use std::future::Future;
use std::pin::Pin;

/// A blob call under way: resolves to the store's answer, in the kernel's terms.
pub type BlobFuture = Pin<Box<dyn Future<Output = BlobResult> + Send + 'static>>;

/// A call's outcome with the store's account of a failure: see [`Blobs::execute_explained`].
pub type ExplainedFuture = Pin<Box<dyn Future<Output = Result<BlobOutcome, CallFailure>> + Send + 'static>>;

/// A failed call as the store told it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallFailure {
    /// What the kernel's contract calls it (what [`Blobs::execute`] answers).
    pub error: BlobError,
    /// Set when no retry will pass (a refused credential, a missing bucket, an operation
    /// the store cannot do): the driver stops the world with it instead of handing the
    /// kernel a failure it would retry forever.
    pub permanent: Option<StoreErrorKind>,
    /// The HTTP status, when the store answered with one.
    pub status: Option<u16>,
    /// The store's own message; empty when the backend gives none.
    pub message: String,
}

impl From<BlobError> for CallFailure {
    /// A failure with no account beyond its kind: never permanent.
    fn from(error: BlobError) -> CallFailure {
        CallFailure { error, permanent: None, status: None, message: String::new() }
    }
}

/// A store the kernel's blob contract runs on (`slotlog_kernel::blob`).
pub trait Blobs: Send + Sync + 'static {
    /// Carry out `op`. Implementations map every store error onto the kernel's result
    /// kinds; one that cannot tell whether a write happened answers `Timeout`.
    fn execute(&self, op: BlobOp) -> BlobFuture;

    /// Carry out `op`, and on failure say whether it is permanent, with the store's own
    /// message and status. The driver calls this one. The default is [`Blobs::execute`]
    /// with no account: every failure goes to the kernel, bounded only by the retry
    /// budget and the open deadline.
    fn execute_explained(&self, op: BlobOp) -> ExplainedFuture {
        let call = self.execute(op);
        Box::pin(async move { call.await.map_err(CallFailure::from) })
    }

    /// A short name for logs and `inspect` (`memory`, `file`, `s3`, `gcs`, `sim`).
    fn kind(&self) -> &'static str;

    /// Who the store is, for sharing commit hints in process: handles whose blobs name the
    /// same store, with the same prefix and world id, hand each other their hints with no
    /// wiring (docs/OPERATIONS.md, "Commit hints"). None (the default): only handles
    /// opened on this very `Blobs` (one `Arc`) share them.
    fn identity(&self) -> Option<String> {
        None
    }
}
