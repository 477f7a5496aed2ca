//! The blob backend a World runs over: one async call per kernel blob operation. The
//! driver runs each call with its own timeout; a call that outlives it is `Timeout`, an
//! outcome the kernel treats as unknown and settles by reading.

use slotlog_kernel::blob::{BlobOp, BlobResult};
use std::future::Future;
use std::pin::Pin;

pub type BlobFuture = Pin<Box<dyn Future<Output = BlobResult> + Send + 'static>>;

/// A store the kernel's blob contract runs on (`slotlog_kernel::blob`).
pub trait Blobs: Send + Sync + 'static {
    /// Carry out `op`. Implementations map every store error onto the kernel's result
    /// kinds; one that cannot tell whether a write happened answers `Timeout`.
    fn execute(&self, op: BlobOp) -> BlobFuture;

    /// A short name for logs and `inspect` (`memory`, `file`, `s3`, `gcs`, `sim`).
    fn kind(&self) -> &'static str;
}
