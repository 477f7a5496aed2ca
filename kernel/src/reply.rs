//! What a caller hears back.

use crate::blob::BlobError;
use crate::format::DecodeError;
use crate::hash::Hash32;
use crate::ids::{OperationId, WorldId};
use crate::world::{
    ApplyError, IndexEntry, Invalid, Path, PathProblem, Receipt, ReceiptAnswer, Rejection, VersionRecord,
};
use bytes::Bytes;

/// A write that succeeded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteOk {
    /// The write is a member of a confirmed slot.
    Committed(Receipt),
    /// The write would have changed nothing (SPEC 1.4 check 9); judged at `at_sequence`.
    Unchanged {
        /// The document's version, or the policy version for `set_policy`.
        version: u64,
        /// The sequence of the state it was judged at.
        at_sequence: u64,
    },
    /// The operation id was already committed; this is its first receipt.
    Duplicate {
        /// The receipt of the member that committed it first.
        receipt: Receipt,
        /// The sequence of the state it was judged at.
        at_sequence: u64,
    },
}

/// `committed: published /a v2 at 17 op:…`, `unchanged v2 at 17`, `duplicate of … at 20`.
impl core::fmt::Display for WriteOk {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            WriteOk::Committed(receipt) => write!(f, "committed: {receipt}"),
            WriteOk::Unchanged { version, at_sequence } => write!(f, "unchanged v{version} at {at_sequence}"),
            WriteOk::Duplicate { receipt, at_sequence } => {
                write!(f, "duplicate of {receipt} at {at_sequence}")
            }
        }
    }
}

/// A write that did not succeed. Every variant says whether it may still apply.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// Wrong input; never queued, never applied.
    #[error(transparent)]
    Invalid(Invalid),
    /// A precondition failed at `at_sequence`; not applied.
    #[error("rejected at sequence {at_sequence}: {rejection}")]
    Rejected {
        /// The precondition that failed, with its data.
        rejection: Rejection,
        /// The sequence of the state it was judged at.
        at_sequence: u64,
    },
    /// The queue was full; not queued, not applied.
    #[error("the queue is full at {queued} members")]
    Busy {
        /// Members in the queue.
        queued: usize,
    },
    /// The deadline passed while the write still waited in the queue; never part of a
    /// slot create, so it is not applied and never will be.
    #[error("{op_id} expired in the queue and is not applied")]
    Expired {
        /// The write's operation id.
        op_id: OperationId,
    },
    /// The deadline passed while a slot holding the write may still commit. Its receipt
    /// settles it: read it with this `since`, the first sequence the write could commit
    /// at, so that "absent" is exact and a receipt gone from the window is `Expired`.
    #[error("{op_id} may still commit at {since} or later; its receipt settles it")]
    Uncertain {
        /// The write's operation id.
        op_id: OperationId,
        /// The first sequence the write could commit at.
        since: u64,
    },
    /// The replica is read-only (`Config::read_only`); never queued, never applied.
    /// (Not `Rejection::ReadOnly`, a policy's read-only prefix, which refuses a write on
    /// any replica.)
    #[error("this replica is read-only")]
    ReadOnlyReplica,
    /// The replica failed closed; nothing more is applied through it.
    #[error("the replica failed closed")]
    Failed(#[source] FailReason),
}

/// Why a replica stopped. Each means the bucket holds something this replica cannot trust.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FailReason {
    /// An object of this world failed to decode.
    #[error("{key} does not decode")]
    Decode {
        /// The object's name.
        key: String,
        /// Why it does not decode.
        #[source]
        error: DecodeError,
    },
    /// The marker names another world.
    #[error("the marker names another world")]
    ForeignWorld,
    /// The prefix holds objects but no marker: not a world, and not empty.
    #[error("{key} is under the prefix, but no marker is")]
    ForeignObjects {
        /// The first object found under the prefix.
        key: String,
    },
    /// A read-only replica found no world under its prefix: it makes none.
    #[error("no world under the prefix (no {key}), and a read-only replica makes none")]
    NoWorld {
        /// The marker's name.
        key: String,
    },
    /// A slot did not continue the chain this replica holds.
    #[error(transparent)]
    Apply(ApplyError),
    /// A body the log names is not in the bucket.
    #[error("body {hash} is not in the bucket")]
    BodyMissing {
        /// BLAKE3 of the missing body.
        hash: Hash32,
    },
    /// A slot name the log needs is not readable although a create found it taken.
    #[error("slot {sequence} is taken but cannot be read")]
    SlotVanished {
        /// First sequence of the slot.
        sequence: u64,
    },
    /// A checkpoint that decodes but does not belong to this world's marker.
    #[error("{key}: {problem}")]
    CheckpointMismatch {
        /// The checkpoint's name.
        key: String,
        /// How it contradicts the world.
        problem: CheckpointProblem,
    },
    /// This replica's slot create landed more than the reload age after the slot it built
    /// on, so it may sit in a name collection freed, below the real tip (SPEC 10.15). Its
    /// members were answered `Uncertain`; reopen from the newest checkpoint.
    #[error("{key} landed at store time {landed_us} µs, long after its base at {base_us} µs: possibly below collection")]
    CreateBelowCollection {
        /// The slot's name.
        key: String,
        /// Store time of its base, in µs: the later of the creation of the slot it built on
        /// and the sending of the create.
        base_us: u64,
        /// Store time its create landed, in µs.
        landed_us: u64,
    },
    /// The slot this replica just created is gone or replaced when it asked the store for
    /// its creation time: only collection or a stall past the slot retention does that.
    /// Its members were answered `Uncertain`; reopen from the newest checkpoint.
    #[error("{key}, created by this replica, is gone or replaced before it could be confirmed")]
    CreatedSlotGone {
        /// The slot's name.
        key: String,
    },
    /// The snapshot went unconfirmed longer than the reload age: slots past it may have
    /// been collected, so a missing slot no longer proves the tip (SPEC 10.15). Nothing
    /// was answered from it; reopen from the newest checkpoint.
    #[error("unconfirmed for {unconfirmed_ms} ms, past the reload age: reopen from the newest checkpoint")]
    Unconfirmed {
        /// How long the snapshot went unconfirmed, in ms.
        unconfirmed_ms: u64,
    },
    /// The slot after this replica's tip is gone while a later one is there: collection
    /// passed the tip (a replica stopped for longer than the slot retention). Reopen from
    /// the newest checkpoint (SPEC 10.15).
    #[error("slot {next} is gone but slot {found} is there: collection passed this replica's tip; reopen")]
    BelowCollection {
        /// First sequence of the missing slot after the tip.
        next: u64,
        /// First sequence of the later slot that is there.
        found: u64,
    },
    /// No checkpoint newer than `fell_back_to` loads (each is named with its reason), and
    /// the slot `missing`, needed to replay from `fell_back_to` to where the newest of
    /// them stood, is gone (collected, SPEC 10.12): opening from it would serve a world
    /// with a gap, so the opening fails closed.
    #[error("no checkpoint newer than {fell_back_to} loads ({} skipped) and {missing}, needed to replay from it, is gone", skipped.len())]
    ReplayGone {
        /// Each newer checkpoint, with why it did not load.
        skipped: Vec<SkippedCheckpoint>,
        /// The name of the checkpoint the opening fell back to.
        fell_back_to: String,
        /// The name of the missing slot.
        missing: String,
    },
}

/// A checkpoint an opening could not load, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedCheckpoint {
    /// The checkpoint's name.
    pub key: String,
    /// Why it could not be loaded.
    pub reason: FailReason,
}

impl FailReason {
    /// The replica asks to be reopened from the newest checkpoint (the reload rule, SPEC
    /// 10.15), rather than having found something in the bucket it cannot trust.
    pub fn is_reload(&self) -> bool {
        matches!(
            self,
            FailReason::Unconfirmed { .. }
                | FailReason::CreateBelowCollection { .. }
                | FailReason::CreatedSlotGone { .. }
                | FailReason::BelowCollection { .. }
        )
    }
}

/// How a checkpoint that decodes contradicts the world it was found in.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointProblem {
    /// It names another world.
    #[error("checkpoint of another world {found}")]
    ForeignWorld {
        /// The world it names.
        found: WorldId,
    },
    /// Its `next_sequence` is not the one its key names.
    #[error("checkpoint names next sequence {next_sequence}, not its key's")]
    Misnamed {
        /// The next sequence it names.
        next_sequence: u64,
    },
    /// Checkpoint zero names another predecessor than the marker's hash.
    #[error("checkpoint zero names {found}, not the marker's hash")]
    NotTheMarker {
        /// The predecessor hash it names.
        found: Hash32,
    },
    /// Its root does not repeat what the checkpoint object says (sequence, anchor, count).
    #[error("its root does not repeat the checkpoint's sequence, anchor or count")]
    RootDisagrees,
    /// A shard is not the one the root names at this index, or of another layout.
    #[error("shard {index} is not the one its root names there")]
    ShardDisagrees {
        /// The shard's index.
        index: u32,
    },
    /// A delta holds another number of entries than the root's reference to it says.
    #[error("delta {position} is not the one its root names there")]
    DeltaDisagrees {
        /// The delta's position in the root.
        position: usize,
    },
    /// A document's history blocks do not hold exactly its retained versions.
    #[error("the history blocks of {path} do not hold exactly its retained versions")]
    HistoryDisagrees {
        /// The document's path.
        path: Path,
    },
    /// A receipt block is not the run of sequences the root says it holds.
    #[error("a receipt block is not the run of sequences its root names")]
    ReceiptsDisagree,
    /// An object the checkpoint uses is not in the bucket.
    #[error("{key}, which it uses, is missing")]
    ObjectMissing {
        /// The missing object's name.
        key: String,
    },
    /// A checkpoint at a sequence this replica folded holds other content: two replicas
    /// disagree about the log.
    #[error("it holds other content than this replica folded at that sequence")]
    Diverged,
}

/// What a read found, all of it from one snapshot: the state through `at_sequence`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadOk {
    /// The sequence of the snapshot the read answered from.
    pub at_sequence: u64,
    /// What it found.
    pub answer: Answer,
}

/// What a read found, by the kind of read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// `Fetch`: the document's entry, the version asked for, and its body.
    Document {
        /// The document's index entry.
        entry: IndexEntry,
        /// The version record asked for.
        version: VersionRecord,
        /// That version's body.
        body: Bytes,
    },
    /// `Versions`: the entry and every retained version, oldest first.
    Versions {
        /// The document's index entry.
        entry: IndexEntry,
        /// Its retained version records, oldest first.
        versions: Vec<VersionRecord>,
    },
    /// `Fetch` or `Versions` of a path that is not a document.
    NotFound,
    /// `Fetch` of a version that was pruned or is not yet written.
    VersionNotRetained {
        /// The oldest retained version.
        first_version: u64,
        /// The current version.
        current: u64,
    },
    /// `Receipt`: committed with its receipt, absent, or expired (SPEC 10.13).
    Receipt(ReceiptAnswer),
    /// `Search`: entries in path order, how they were matched, and `more` when the limit
    /// cut the answer short.
    Search {
        /// The entries found.
        entries: Vec<IndexEntry>,
        /// Body mode (exact for the state) or catalog mode (paths only).
        matched: crate::search::SearchMatch,
        /// True when the limit cut the answer short.
        more: bool,
    },
    /// `Lookup`: entries in path order; `more` when the limit cut it short.
    Lookup {
        /// The entries found.
        entries: Vec<IndexEntry>,
        /// True when the limit cut the answer short.
        more: bool,
    },
    /// `List`: the documents and the subdirectories directly in the directory.
    Listing {
        /// The documents directly in the directory.
        documents: Vec<IndexEntry>,
        /// The subdirectories directly in it.
        directories: Vec<Path>,
        /// True when the limit cut the answer short.
        more: bool,
        /// With `more`: the name of the last child answered (a subdirectory's ends with
        /// `/`), to pass as `start_after` for the next page.
        next: Option<String>,
    },
    /// `HashLookup`: paths in order.
    Paths {
        /// The paths found, in order.
        paths: Vec<Path>,
        /// True when the limit cut the answer short.
        more: bool,
    },
    /// `IsDirectory`: whether some document lies under the path.
    IsDirectory(bool),
}

/// A read that did not succeed; nothing was read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The path is not a valid path.
    #[error(transparent)]
    InvalidPath(PathProblem),
    /// A search's query cannot be run.
    #[error(transparent)]
    InvalidQuery(crate::search::query::QueryProblem),
    /// Too many reads waiting; nothing was queued.
    #[error("{pending} reads are waiting already")]
    Busy {
        /// Reads already waiting.
        pending: usize,
    },
    /// The deadline passed before the replica could confirm a fresh enough snapshot.
    #[error("the deadline passed before a fresh enough snapshot")]
    Deadline,
    /// The check of the tip this read waited on failed (its retries spent, or an error
    /// the store would repeat); nothing was read. Sending the read again starts a new
    /// check.
    #[error("the store failed the tip check this read waited on: {error}")]
    Unavailable {
        /// The store's error.
        error: BlobError,
    },
    /// The view is older than `view_age_max`, or its pin is gone (its replica
    /// restarted): nothing was read. Open a new view.
    #[error("the view expired; open a new one")]
    ViewExpired,
    /// The view was evicted: the documents held for pins passed `view_images_max`, and
    /// its pin was among the oldest. Nothing was read. Open a new view.
    #[error("the view was evicted to bound the memory pins hold; open a new one")]
    ViewEvicted,
    /// `views_max` views are pinned already; nothing was pinned or read.
    #[error("{views} views are pinned already")]
    ViewsExhausted {
        /// Views pinned.
        views: usize,
    },
    /// The replica failed closed.
    #[error("the replica failed closed")]
    Failed(#[source] FailReason),
}

/// The answer to one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// The answer to a write.
    Write(Result<WriteOk, WriteError>),
    /// The answer to a read.
    Read(Result<ReadOk, ReadError>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ShapeRule;
    use crate::world::{ApplyRule, MemberRule};
    use std::error::Error;

    #[test]
    fn a_decode_failure_names_the_key_and_gives_the_rule_as_its_source() {
        let error = DecodeError::Shape(ShapeRule::Member(MemberRule::PolicyPrunes));
        let reason = FailReason::Decode { key: "w/log/7".into(), error };
        assert_eq!(reason.to_string(), "w/log/7 does not decode");
        assert_eq!(reason.source().map(ToString::to_string), Some("policy member prunes".into()));
        let write = WriteError::Failed(reason);
        assert_eq!(write.to_string(), "the replica failed closed");
        let rule = write.source().and_then(Error::source).map(ToString::to_string);
        assert_eq!(rule, Some("policy member prunes".into()));
    }

    #[test]
    fn an_inconsistent_member_names_its_sequence_and_rule() {
        let error = ApplyError::Inconsistent { sequence: 7, rule: ApplyRule::VersionNotNext };
        assert_eq!(
            FailReason::Apply(error).to_string(),
            "member 7: a version does not follow the current one"
        );
    }

    #[test]
    fn a_rejection_names_the_conflicting_version_and_the_blocking_path() {
        let at = |rejection| WriteError::Rejected { rejection, at_sequence: 9 }.to_string();
        assert_eq!(
            at(Rejection::Conflict { current: Some(3) }),
            "rejected at sequence 9: expected version does not hold: current version 3"
        );
        assert_eq!(
            at(Rejection::Conflict { current: None }),
            "rejected at sequence 9: expected version does not hold: absent"
        );
        let blocking = Path::parse("/a").expect("a path");
        assert_eq!(
            at(Rejection::Topology { blocking }),
            "rejected at sequence 9: the path would nest with /a"
        );
    }
}
