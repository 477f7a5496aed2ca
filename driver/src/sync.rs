//! The atomics and locks shared between the driver loop, its tasks and the handles: std's, or
//! loom's in the loom tests (`just loom`: `--cfg slotlog_loom`), so those tests explore
//! the interleavings of the production code itself, not of a copy.
//!
//! The cfg is slotlog's own, not `loom`: tokio and bytes read `cfg(loom)` and would need
//! loom as a dependency of theirs.

#[cfg(all(test, slotlog_loom))]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(all(test, slotlog_loom))]
pub(crate) use loom::sync::Mutex;
#[cfg(not(all(test, slotlog_loom)))]
pub(crate) use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(all(test, slotlog_loom)))]
pub(crate) use std::sync::Mutex;
