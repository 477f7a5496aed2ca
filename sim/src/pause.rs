//! Replicas that stop for hours and resume (issue 10 and the collection-fences issue): a
//! suspended VM, a long GC pause, a partition. A paused replica takes no input and sends
//! nothing; what reaches it waits, and is delivered in order when it resumes. A stall is
//! the worst-placed pause: it begins as the replica sends a slot create, which is held
//! with it, so the create goes out hours after the batch was built.

use slotlog_kernel::effect::Input;
use slotlog_kernel::{BlobOp, BlobOpId, Instant};
use std::collections::VecDeque;

/// A replica paused once, at a set time, for a set time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pause {
    pub node: usize,
    pub at_ms: u64,
    pub for_ms: u64,
}

/// A replica stalled at the first slot create it sends after `after_ms`, for `for_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stall {
    pub node: usize,
    pub after_ms: u64,
    pub for_ms: u64,
}

/// What one node holds while paused.
#[derive(Debug, Default)]
pub(crate) struct Paused {
    pub until: Option<Instant>,
    /// Inputs that arrived meanwhile, in order.
    pub inputs: VecDeque<Input>,
    /// Calls it sent at the moment it stopped (the stalled create among them).
    pub calls: Vec<(BlobOpId, BlobOp)>,
    /// The stall has happened (it happens once a run).
    pub stalled: bool,
}

impl Paused {
    pub fn is_paused(&self) -> bool {
        self.until.is_some()
    }
}
