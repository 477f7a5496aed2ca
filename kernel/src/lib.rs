//! slotlog-kernel: the pure state machine behind slotlog.
//!
//! A [`Replica`] has no I/O, clock, thread, async or global randomness. Everything enters
//! as an [`Input`] with the current [`Instant`], and everything leaves as an [`Effect`].
//!
//! **The drain rule.** After every call to [`Replica::handle`] or
//! [`Replica::handle_timeout`], call [`Replica::poll_effect`] until it returns `None` and
//! carry out each effect (run blob operations, deliver replies, pass commit hints to
//! peers); then ask [`Replica::poll_timeout`] for the next wake-up and call
//! `handle_timeout` no earlier than that. A wake-up that comes early or twice is harmless.
//! Feed every blob completion back with its [`BlobOpId`]; a completion the replica does
//! not know (say, from before a restart) is ignored.
//!
//! Modules own one concept each: `format` (bytes on the bucket), `world` (the rules),
//! `committer` (the write path), `bodies` (body blobs), `open` (cold start), `reads` (the
//! read path and its probe), `feed` (the change feed), `compactor` (checkpoints),
//! `collector` (what no kept checkpoint needs), `io` (calls, retries and the routing of
//! each completion to the owner that made the call), `marks` (counts of the rare branches
//! taken, for coverage).

// Every public item says what it is; CI denies warnings (issue 12).
#![warn(missing_docs)]

/// Asserts an invariant of the kernel's own state. On in tests, in debug builds and with the
/// `invariants` feature (the simulator's build, whose release profile leaves Rust's debug
/// assertions off: std's own checks compiled into this crate, for `unsafe` preconditions
/// and its collections' internals, were about 5% of a simulated run and guard no code of
/// ours); off in an embedder's release build, as a `debug_assert!` is.
macro_rules! invariant {
    ($($arg:tt)*) => {
        if cfg!(any(test, debug_assertions, feature = "invariants")) {
            assert!($($arg)*);
        }
    };
}

/// `invariant!` for two values that must be equal.
macro_rules! invariant_eq {
    ($($arg:tt)*) => {
        if cfg!(any(test, debug_assertions, feature = "invariants")) {
            assert_eq!($($arg)*);
        }
    };
}

pub mod blob;
pub(crate) mod bodies;
pub(crate) mod body_cache;
pub mod checkpoint;
pub(crate) mod collector;
pub(crate) mod committer;
pub(crate) mod compactor;
pub mod config;
pub mod effect;
pub(crate) mod feed;
pub mod format;
pub mod hash;
pub mod hash_many;
pub(crate) mod history;
pub mod ids;
pub(crate) mod io;
pub mod marks;
pub(crate) mod open;
pub(crate) mod read_answers;
pub(crate) mod reads;
pub mod replica;
pub mod reply;
pub mod search;
pub(crate) mod snapshot;
pub(crate) mod store_clock;
pub mod time;
pub(crate) mod views;
pub mod world;

#[cfg(test)]
mod feed_tests;
#[cfg(test)]
mod history_tests;
#[cfg(test)]
mod open_tests;
#[cfg(test)]
mod read_only_tests;
#[cfg(test)]
mod reads_tests;
#[cfg(test)]
mod search_tests;
#[cfg(test)]
mod testkit;
#[cfg(test)]
mod views_tests;

pub use blob::{BlobError, BlobOp, BlobOutcome, BlobResult, Generation, ObjectMeta, Written};
pub use collector::{Collected, CollectorStats};
pub use committer::{CommitterStats, WritePhases};
pub use compactor::{CompactorStats, LedgerHeld, SegmentStats};
pub use config::{CompactionRole, Config, ConfigError, Defects};
pub use effect::{Effect, Input, Read, Request, Warning, WatchEnd};
pub use feed::{event_bytes, FeedStats, CHANGES_BYTES_MAX};
pub use hash::Hash32;
pub use ids::{BlobOpId, OperationId, RequestId, StoreId, ViewId, WorldId};
pub use marks::{Mark, Marks};
pub use reads::{ReadStats, READ_LIMIT_MAX};
pub use replica::{Identity, Replica, ReplicaHealth};
pub use reply::{
    Answer, CheckpointProblem, FailReason, ReadError, ReadOk, Reply, SkippedCheckpoint, WriteError, WriteOk,
};
pub use time::Instant;
pub use views::ViewStats;
