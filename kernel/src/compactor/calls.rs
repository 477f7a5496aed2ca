//! Every call the compactor makes, by purpose: a step's or an adoption's. A completion
//! comes back to the compactor under one of these and to no other owner.

use crate::checkpoint::ObjectKind;
use crate::hash::Hash32;
use crate::io::Purpose;

/// The calls the compactor makes: a step's, or an adoption's.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum CompactCall {
    Step(StepCall),
    Adopt(AdoptCall),
    Segment(SegmentCall),
}

/// The calls of writing a body segment (SPEC 10.17), one label at a time.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum SegmentCall {
    /// List the label's prefix (paged).
    List,
    /// Read a part of the label's newest whole segment.
    Part { part: u32 },
    /// Read a body the segment lacked from its blob.
    Blob { hash: Hash32 },
    /// Create one part of the new segment if absent.
    Create { part: u32 },
}

pub(super) fn step(what: StepCall) -> Purpose {
    Purpose::Compact(CompactCall::Step(what))
}

pub(super) fn adopt(what: AdoptCall) -> Purpose {
    Purpose::Compact(CompactCall::Adopt(what))
}

/// The calls of a step: writing a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum StepCall {
    /// Create one object of the checkpoint if absent.
    Create {
        kind: ObjectKind,
        name: Hash32,
    },
    /// After an ambiguous create of an object: is it stored? (metadata only)
    Stat {
        kind: ObjectKind,
        name: Hash32,
    },
    /// Create the checkpoint object at `checkpoints/<next_sequence>` if absent.
    CheckpointCreate {
        next_sequence: u64,
    },
    /// Read the checkpoint object there: a racer's, or ours after an ambiguous create.
    CheckpointGet {
        next_sequence: u64,
    },
    /// Our create of it was answered without a store time (S3): its metadata, for the
    /// post-create check (SPEC 10.15, "A checkpoint that lands late").
    CheckpointStat {
        next_sequence: u64,
    },
    /// Delete our own checkpoint that landed too late to vouch for what it names, at the
    /// generation our create made.
    CheckpointWithdraw {
        next_sequence: u64,
    },
    /// Rewrite a stored object (or the checkpoint object) found old, with a new stamp, at
    /// the generation its metadata read returned (SPEC 10.15, the freshen).
    Freshen {
        kind: ObjectKind,
        name: Hash32,
    },
    CheckpointFreshen {
        next_sequence: u64,
    },
    /// List the checkpoints after the run's base once every object is stored, before the
    /// checkpoint create (SPEC 10.15, "a run writes only on its own base").
    Recheck,
}

/// The calls of looking for a newer checkpoint and adopting it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum AdoptCall {
    /// List the checkpoints after the newest one known, before stepping.
    Look,
    /// Read a peer's newer checkpoint object, then its root and its changed shards.
    Checkpoint {
        next_sequence: u64,
    },
    Root,
    Shard {
        name: Hash32,
    },
    /// A delta of the peer's root this replica does not know (SPEC 10.16).
    Delta {
        name: Hash32,
    },
}
