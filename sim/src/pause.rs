//! Replicas that stop for hours and resume (issue 10 and the collection-fences issue): a
//! suspended VM, a long GC pause, a partition. A paused replica takes no input and sends
//! nothing; what reaches it waits, and is delivered in order when it resumes. A stall is
//! a worst-placed pause with the replica's clock stopped (a suspend): it begins as the
//! replica sends a call of one kind ([`StallAt`]), which is held with it, so the call goes
//! out long after the replica decided to make it.

use core::time::Duration;
use slotlog_kernel::effect::Input;
use slotlog_kernel::{BlobOp, BlobOpId, Instant};
use std::collections::VecDeque;

/// A replica paused once, at a set time, for a set time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pause {
    /// The replica (its index among the cluster's nodes).
    pub node: usize,
    /// When the pause begins, from the start of the run.
    pub at: Duration,
    /// How long it lasts.
    pub length: Duration,
}

/// A replica stopped for good at `at`: taken down if it is up then, never restarted
/// (a store decommissioned, or dead past any restart), so its peers must do its work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gone {
    /// The replica (its index among the cluster's nodes).
    pub node: usize,
    /// When it goes, from the start of the run.
    pub at: Duration,
}

/// A replica stalled at the first call of kind `at` it sends after `after`, for
/// `length`, its clock stopped meanwhile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stall {
    /// The replica (its index among the cluster's nodes).
    pub node: usize,
    /// The stall strikes at the first call of its kind sent this long after the run began.
    pub after: Duration,
    /// How long the replica stays stopped, its clock too.
    pub length: Duration,
    /// The kind of call it stops at.
    pub at: StallAt,
}

/// Where a stall strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StallAt {
    /// A slot create: a batch built on a tip that may be long gone when it lands.
    SlotCreate,
    /// A create of a checkpoint's shard, root or receipt block: a compactor run that
    /// resumes with a fold, and objects it thinks stored, from long before.
    CheckpointObjectCreate,
    /// A delete: a collection drop that resumes deleting from a listing long stale.
    Delete,
}

/// What one node holds while paused.
#[derive(Debug, Default)]
pub(crate) struct Paused {
    pub until: Option<Instant>,
    /// Inputs that arrived meanwhile, in order.
    pub inputs: VecDeque<Input>,
    /// Calls it sent at the moment it stopped (the stalled call among them).
    pub calls: Vec<(BlobOpId, BlobOp)>,
}

impl Paused {
    pub fn is_paused(&self) -> bool {
        self.until.is_some()
    }
}
