//! What the checker finds: one [`Violation`] per breach, with the data that shows it, and
//! the [`Rule`] it breaks (docs/SIMULATION.md, "The checker"). Reports render a violation
//! with `Display`; tests match on its rule.

use crate::history::NameChange;
use crate::{
    ModelApplied, ModelDocument, ModelPolicy, ModelPolicyBody, ModelReceipt, ModelReceiptAnswer,
    ModelVersion, Verdict,
};
use slotlog_kernel::format::DecodeError;
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::{OperationId, WorldId};
use slotlog_kernel::reply::{Answer, WriteError, WriteOk};
use slotlog_kernel::time::Instant;
use slotlog_kernel::world::{
    ApplyError, IndexEntry, Invalid, Path, PathProblem, PruneRange, Receipt, VersionRecord,
};
use slotlog_kernel::Read;

/// A rule the checker judges a run by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// A world that acknowledged a write has a marker, which decodes and names it.
    Marker,
    /// Checkpoint zero exists and is exactly SPEC 10's bytes for the world and marker;
    /// every other checkpoint is a full checkpoint anchored at the end of a slot, laid out
    /// by SPEC 10.4, and holds exactly the model's state at the sequence it covers.
    CheckpointMismatch,
    /// Every object in the log is a slot of this world that decodes and is named by its
    /// first sequence.
    SlotObject,
    /// Slots are contiguous from sequence 1.
    ChainGap,
    /// Every slot names its predecessor's hash (the first the marker's).
    ChainBreak,
    /// A slot is created after its predecessor.
    SlotOrder,
    /// The kernel's own replay applies every slot.
    KernelReplay,
    /// Every member was issued by a client.
    UnissuedMember,
    /// No operation id is committed twice.
    DuplicateMember,
    /// Every member is what the model applies for its request.
    ModelDivergence,
    /// The kernel's state after the log is the model's.
    StateDivergence,
    /// No answer names a state past the log's tip.
    AnswerPastTip,
    /// A write's answer is the model's at the state it names, and agrees with the log.
    WriteAnswer,
    /// A read's answer is the model's at the state it names.
    ReadAnswer,
    /// A receipt read answers "absent" only when the operation did not commit inside the
    /// receipt window and the window covers the read's `since` (SPEC 10.13): otherwise a
    /// caller settling an `Uncertain` write on it would write twice.
    ReceiptAbsence,
    /// The state a write answer names was the tip while the write was in flight.
    AnswerOutOfTime,
    /// An acknowledged write's slot was created while the write was in flight.
    CommitOutOfFlight,
    /// Every request a live replica holds is answered.
    Unanswered,
    /// Every acknowledged write is in the log.
    LostAcknowledgedWrite,
    /// A write acknowledged before another began has the smaller sequence.
    RealTimeOrder,
    /// An exact read answers at a state that was the tip while it was in flight.
    ExactReadStale,
    /// A catalog read answers at a state no older than the staleness bound.
    CatalogLag,
    /// A watch receives the log's receipts after its cursor, in order, none missing.
    WatchEvents,
    /// A watch resyncs only at its cursor and only when the cursor is out of the index.
    WatchResync,
    /// A slot name holds one set of bytes for the whole run: created again only with
    /// the same bytes, never rewritten to others (issue 10's fork).
    SlotFork,
    /// Nothing a kept checkpoint (the newest three, and any whose successor is younger
    /// than the grace) or a retained slot reaches is ever missing, and content objects
    /// are never deleted (SPEC 10.15).
    Reachable,
    /// The store's name history fits each name (no create of a present name, no rewrite
    /// or delete of an absent one, time never back) and accounts for the bucket's end.
    NameHistory,
}

/// One breach of a rule, with the data that shows it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    #[error("writes were acknowledged but the world has no marker")]
    NoMarker,
    #[error("the marker names another world")]
    MarkerForeignWorld,
    #[error("the marker does not decode: {error}")]
    MarkerUndecodable { error: DecodeError },

    #[error("the world has a marker but no checkpoint zero")]
    CheckpointZeroMissing,
    #[error("checkpoint zero names another world: {found}")]
    CheckpointZeroForeignWorld { found: WorldId },
    #[error("checkpoint zero names next sequence {next_sequence}")]
    CheckpointZeroNextSequence { next_sequence: u64 },
    #[error("checkpoint zero does not name the marker's hash")]
    CheckpointZeroNotTheMarker,
    #[error("checkpoint zero holds {documents} documents under root {root:?}")]
    CheckpointZeroNotEmpty { documents: u64, root: Option<Hash32> },
    #[error("checkpoint zero does not decode: {error}")]
    CheckpointZeroUndecodable { error: DecodeError },
    #[error("checkpoint zero is not the bytes SPEC 10 gives for this world and marker")]
    CheckpointZeroBytes,

    #[error("{key} under checkpoints/ is not a checkpoint name")]
    NotACheckpointName { key: String },
    #[error("{key} does not decode: {error}")]
    CheckpointUndecodable { key: String, error: DecodeError },
    #[error("{key} holds the checkpoint of next sequence {next_sequence}")]
    CheckpointMisnamed { key: String, next_sequence: u64 },
    #[error("{key} names another world: {found}")]
    CheckpointForeignWorld { key: String, found: WorldId },
    #[error("{key} covers sequence {covered}, past the log's tip {tip}")]
    CheckpointPastTip { key: String, covered: u64, tip: u64 },
    #[error("{key} covers sequence {covered}, inside the slot of sequences {slot_first} to {slot_last}")]
    CheckpointInsideSlot { key: String, covered: u64, slot_first: u64, slot_last: u64 },
    #[error("{key} names previous hash {found}; the slot holding its last sequence hashes to {expected}")]
    CheckpointPreviousHash { key: String, expected: Hash32, found: Hash32 },
    #[error("{key} names {object}, which is not in the bucket")]
    CheckpointObjectMissing { key: String, object: String },
    #[error("{key} names {object}, which does not decode: {error}")]
    CheckpointObjectUndecodable { key: String, object: String, error: DecodeError },
    #[error("{key} and its root disagree on the {field}")]
    CheckpointRootDisagrees { key: String, field: CheckpointField },
    #[error("{key} holds {found} documents, the model {model}")]
    CheckpointDocumentCount { key: String, found: u64, model: u64 },
    #[error("{key} holds policy {found:?}, the model {model:?}")]
    CheckpointPolicy { key: String, found: Box<ModelPolicy>, model: Box<ModelPolicy> },
    #[error("{key} has {shards} shards of {shard_bits} bits; the rule gives {expected} bits")]
    CheckpointLayout { key: String, shard_bits: u8, shards: usize, expected: u8 },
    #[error("{key}: the shard at position {position} is shard {index} of {shard_bits} bits")]
    CheckpointShardMisplaced { key: String, position: u32, shard_bits: u8, index: u32 },
    #[error("{key}: the shard at position {position} holds {path} out of path order")]
    CheckpointShardNotSorted { key: String, position: u32, path: String },
    #[error("{key}: {path} is in shard {position}; the rule puts it in shard {expected}")]
    CheckpointPathInWrongShard { key: String, path: String, position: u32, expected: u32 },
    #[error("{key} lacks {path}")]
    CheckpointDocumentMissing { key: String, path: String },
    #[error("{key} holds {path}, which the model does not")]
    CheckpointDocumentExtra { key: String, path: String },
    #[error("{key}: {path} is {found:?}, the model {model:?}")]
    CheckpointEntryDiffers { key: String, path: String, found: Box<IndexEntry>, model: Box<ModelDocument> },
    #[error("{key}: {path} names {found} history blocks; its retained versions span {expected} windows")]
    CheckpointHistoryRefs { key: String, path: String, expected: u64, found: usize },
    #[error(
        "{key}: {path}'s history reference {position} starts at version {first_version}, outside its window"
    )]
    CheckpointHistoryRefMisplaced { key: String, path: String, position: usize, first_version: u64 },
    #[error(
        "{key}: {path}'s history reference {position} names version {named}; its block starts at {found}"
    )]
    CheckpointHistoryBlockStart { key: String, path: String, position: usize, named: u64, found: u64 },
    #[error("{key}: a history block of {path} holds the versions of {found}")]
    CheckpointHistoryPath { key: String, path: String, found: Path },
    #[error("{key}: {path} lacks version {version}")]
    CheckpointVersionMissing { key: String, path: String, version: u64 },
    #[error("{key}: {path} holds version {version}, which the model does not retain")]
    CheckpointVersionExtra { key: String, path: String, version: u64 },
    #[error("{key}: {path} version {version} is {found:?}, the model {model:?}")]
    CheckpointVersionDiffers {
        key: String,
        path: String,
        version: u64,
        found: Box<VersionRecord>,
        model: Box<ModelVersion>,
    },
    #[error("{key} holds receipts from sequence {found}; the window starts at {expected}")]
    CheckpointReceiptWindow { key: String, expected: u64, found: u64 },
    #[error("{key}: receipt block reference {position} covers {found:?}; the cut gives {expected:?}")]
    CheckpointReceiptBlockCut {
        key: String,
        position: usize,
        found: Option<(u64, u64)>,
        expected: Option<(u64, u64)>,
    },
    #[error(
        "{key}: receipt block {position} is named for sequences {first_sequence} to {last_sequence} \
         but holds {receipts} receipts of {found:?}"
    )]
    CheckpointReceiptBlockRun {
        key: String,
        position: usize,
        first_sequence: u64,
        last_sequence: u64,
        found: Option<(u64, u64)>,
        receipts: usize,
    },
    #[error("{key} lacks the receipt of sequence {sequence}")]
    CheckpointReceiptMissing { key: String, sequence: u64 },
    #[error("{key} holds a receipt of sequence {sequence}, outside the model's window")]
    CheckpointReceiptExtra { key: String, sequence: u64 },
    #[error("{key}: the receipt of sequence {sequence} is {found:?}, the model {model:?}")]
    CheckpointReceiptDiffers { key: String, sequence: u64, found: Box<Receipt>, model: Box<ModelReceipt> },
    #[error("{key}: the receipt of sequence {sequence} holds a request digest other than its request's")]
    CheckpointRequestDigest { key: String, sequence: u64 },

    #[error("{key} in the log is not a slot name")]
    NotASlotName { key: String },
    #[error("slot {sequence} does not decode: {error}")]
    SlotUndecodable { sequence: u64, error: DecodeError },
    #[error("slot named {sequence} starts at {first_sequence}")]
    SlotMisnamed { sequence: u64, first_sequence: u64 },
    #[error("slot {sequence} names another world")]
    SlotForeignWorld { sequence: u64 },
    #[error("gap in the log: expected slot {expected}, found {found}")]
    ChainGap { expected: u64, found: u64 },
    #[error("chain break at slot {sequence}")]
    ChainBreak { sequence: u64 },
    #[error("slot {sequence} was created before its predecessor")]
    SlotCreatedEarly { sequence: u64 },
    #[error("slot {sequence} does not apply on the kernel's state: {error}")]
    KernelCannotApply { sequence: u64, error: ApplyError },

    #[error("slot {sequence} holds {op_id:?}, which no client issued")]
    UnissuedMember { sequence: u64, op_id: OperationId },
    #[error("{op_id:?} is committed twice")]
    CommittedTwice { op_id: OperationId },
    #[error("member {sequence} ({op_id:?}) differs from the model: {diff}")]
    MemberDiffers { sequence: u64, op_id: OperationId, diff: MemberDiff },
    #[error("member {sequence} ({op_id:?}) is in the log, but the model says {model:?}")]
    MemberNotApplied { sequence: u64, op_id: OperationId, model: Verdict },

    #[error("replaying the log, the kernel holds {kernel} documents and the model {model}")]
    DocumentCount { kernel: usize, model: usize },
    #[error("the kernel holds {path} and the model does not")]
    DocumentNotInModel { path: Path },
    #[error("{path}: the kernel holds {kernel:?}, the model {model:?}")]
    DocumentDiffers { path: Path, kernel: Box<IndexEntry>, model: Box<ModelDocument> },
    #[error("{path}: the kernel retains versions {kernel:?}, the model {model:?}")]
    RetainedVersionsDiffer { path: Path, kernel: Vec<u64>, model: Vec<u64> },

    #[error("{op_id:?} was answered at sequence {at}, past the log's tip")]
    WriteAnsweredPastTip { op_id: OperationId, at: u64 },
    #[error("read {read} was answered at sequence {at}, past the log's tip")]
    ReadAnsweredPastTip { read: usize, at: u64 },
    #[error("{op_id:?} answered Invalid({invalid:?}); the model says {model:?}")]
    InvalidDisagrees { op_id: OperationId, invalid: Invalid, model: Verdict },
    #[error("{op_id:?} was answered {answer:?}; at that state the model says {model:?}")]
    AnswerDisagrees { op_id: OperationId, answer: Box<Result<WriteOk, WriteError>>, model: Verdict },
    #[error("{op_id:?} was acknowledged with {acknowledged:?}, the log holds {logged:?}")]
    ReceiptDiffers { op_id: OperationId, acknowledged: Box<Receipt>, logged: Box<Receipt> },
    #[error("{op_id:?} was answered duplicate of {answered:?}, the log holds {logged:?}")]
    DuplicateReceiptDiffers { op_id: OperationId, answered: Box<Receipt>, logged: Box<Receipt> },
    #[error("{op_id:?} was answered {answer:?}, yet the log commits it at {sequence}")]
    RefusedYetCommitted { op_id: OperationId, answer: Box<Result<WriteOk, WriteError>>, sequence: u64 },
    #[error("{op_id:?} was judged at sequence {at}, a state that was not the tip while it was in flight")]
    JudgedOutOfTime { op_id: OperationId, at: u64 },
    #[error("{op_id:?}'s slot was created outside the time its write was in flight")]
    CommitOutOfFlight { op_id: OperationId },
    #[error("{op_id:?} on replica {replica} was never answered")]
    WriteUnanswered { op_id: OperationId, replica: usize },
    #[error("read {read} on replica {replica} was never answered")]
    ReadUnanswered { read: usize, replica: usize },
    #[error("{op_id:?} was acknowledged at sequence {sequence} but is not in the log")]
    LostWrite { op_id: OperationId, sequence: u64 },
    #[error("preloaded {op_id:?} is not in the log")]
    PreloadedMissing { op_id: OperationId },
    #[error("sequence {sequence} began after a write with a larger sequence was acknowledged")]
    RealTimeOrder { sequence: u64 },

    #[error("slot {key} forked: it held bytes {first} and, from {at:?}, bytes {other}")]
    SlotForked { key: String, first: Hash32, other: Hash32, at: Instant },
    #[error("{key} deleted at {at:?} while kept checkpoint {checkpoint} reaches it")]
    ReachableDeleted { key: String, checkpoint: String, at: Instant },
    #[error("kept checkpoint {key} deleted at {at:?}")]
    KeptCheckpointDeleted { key: String, at: Instant },
    #[error("slot {key} deleted at {at:?}: younger than the retention, or not covered by the oldest kept checkpoint")]
    RetainedSlotDeleted { key: String, at: Instant },
    #[error("{key} deleted at {at:?}, written at {written:?}: less than the grace before (a delete the generation fence should have refused)")]
    YoungDeleted { key: String, written: Instant, at: Instant },
    #[error("{key} rewritten at {at:?} with the bytes it held: where the version token is a hash of the bytes (S3's ETag) the fence did not move")]
    RewriteKeptBytes { key: String, at: Instant },
    #[error("content object {key} deleted at {at:?}; content is never collected")]
    ContentDeleted { key: String, at: Instant },
    #[error("checkpoint {checkpoint} created at {at:?} reaches {missing}, which is missing")]
    CheckpointReachesMissing { checkpoint: String, missing: String, at: Instant },
    #[error("the store's history of {key} does not fit it: {change:?} at {at:?}")]
    NameHistoryIncoherent { key: String, change: NameChange, at: Instant },
    #[error("the store's history of {key} does not account for what the bucket holds at the end")]
    NameHistoryDisagrees { key: String },

    #[error("exact read {read} on replica {replica} answered at sequence {at}, a state {} ms older than the read", Ms(*lag_us))]
    ExactReadStale { read: usize, replica: usize, at: u64, lag_us: u64 },
    #[error("catalog read {read} on replica {replica} answered at sequence {at}, a state {} ms older than the read", Ms(*lag_us))]
    CatalogReadStale { read: usize, replica: usize, at: u64, lag_us: u64 },
    #[error(
        "read {read} ({request:?}) at sequence {at}: answered {answer:?}, which the model does not give"
    )]
    ReadDiffers { read: usize, request: Read, at: u64, answer: Box<Answer> },
    #[error("read {read} ({request:?}) at sequence {at}: answered absent, but the model says {model:?}")]
    ReceiptAbsentNotExact { read: usize, request: Read, at: u64, model: ModelReceiptAnswer },
    #[error("read {read} ({request:?}) names no path but was refused for one")]
    ReadRefusedWithoutPath { read: usize, request: Read },
    #[error("read {read} was refused {problem:?}, but the model normalizes {raw:?}")]
    ReadRefusalDisagrees { read: usize, problem: PathProblem, raw: String },

    #[error("watch {watch} from {cursor}: event {event} is {got:?}, the log holds {expected:?}")]
    WatchEventDiffers { watch: usize, cursor: u64, event: usize, got: Box<Receipt>, expected: Box<Receipt> },
    #[error("watch {watch} from {cursor} received {got:?}, past the log's tip")]
    WatchEventPastTip { watch: usize, cursor: u64, got: Box<Receipt> },
    #[error("watch {watch} resynced at cursor {cursor} after delivering through {delivered}")]
    WatchResyncCursor { watch: usize, cursor: u64, delivered: u64 },
    #[error("watch {watch} resynced at cursor {cursor} with tip {tip}, outside the log")]
    WatchResyncOutsideLog { watch: usize, cursor: u64, tip: u64 },
    #[error(
        "watch {watch} resynced at cursor {cursor}, only {slots_behind} slots behind its replica's tip {tip}"
    )]
    WatchResyncEarly { watch: usize, cursor: u64, slots_behind: usize, tip: u64 },
}

impl Violation {
    /// The rule this violation breaks.
    pub fn rule(&self) -> Rule {
        use Violation as V;
        match self {
            V::NoMarker | V::MarkerForeignWorld | V::MarkerUndecodable { .. } => Rule::Marker,
            V::CheckpointZeroMissing
            | V::CheckpointZeroForeignWorld { .. }
            | V::CheckpointZeroNextSequence { .. }
            | V::CheckpointZeroNotTheMarker
            | V::CheckpointZeroNotEmpty { .. }
            | V::CheckpointZeroUndecodable { .. }
            | V::CheckpointZeroBytes
            | V::NotACheckpointName { .. }
            | V::CheckpointUndecodable { .. }
            | V::CheckpointMisnamed { .. }
            | V::CheckpointForeignWorld { .. }
            | V::CheckpointPastTip { .. }
            | V::CheckpointInsideSlot { .. }
            | V::CheckpointPreviousHash { .. }
            | V::CheckpointObjectMissing { .. }
            | V::CheckpointObjectUndecodable { .. }
            | V::CheckpointRootDisagrees { .. }
            | V::CheckpointDocumentCount { .. }
            | V::CheckpointPolicy { .. }
            | V::CheckpointLayout { .. }
            | V::CheckpointShardMisplaced { .. }
            | V::CheckpointShardNotSorted { .. }
            | V::CheckpointPathInWrongShard { .. }
            | V::CheckpointDocumentMissing { .. }
            | V::CheckpointDocumentExtra { .. }
            | V::CheckpointEntryDiffers { .. }
            | V::CheckpointHistoryRefs { .. }
            | V::CheckpointHistoryRefMisplaced { .. }
            | V::CheckpointHistoryBlockStart { .. }
            | V::CheckpointHistoryPath { .. }
            | V::CheckpointVersionMissing { .. }
            | V::CheckpointVersionExtra { .. }
            | V::CheckpointVersionDiffers { .. }
            | V::CheckpointReceiptWindow { .. }
            | V::CheckpointReceiptBlockCut { .. }
            | V::CheckpointReceiptBlockRun { .. }
            | V::CheckpointReceiptMissing { .. }
            | V::CheckpointReceiptExtra { .. }
            | V::CheckpointReceiptDiffers { .. }
            | V::CheckpointRequestDigest { .. } => Rule::CheckpointMismatch,
            V::NotASlotName { .. }
            | V::SlotUndecodable { .. }
            | V::SlotMisnamed { .. }
            | V::SlotForeignWorld { .. } => Rule::SlotObject,
            V::ChainGap { .. } => Rule::ChainGap,
            V::ChainBreak { .. } => Rule::ChainBreak,
            V::SlotCreatedEarly { .. } => Rule::SlotOrder,
            V::KernelCannotApply { .. } => Rule::KernelReplay,
            V::UnissuedMember { .. } => Rule::UnissuedMember,
            V::CommittedTwice { .. } => Rule::DuplicateMember,
            V::MemberDiffers { .. } | V::MemberNotApplied { .. } => Rule::ModelDivergence,
            V::DocumentCount { .. }
            | V::DocumentNotInModel { .. }
            | V::DocumentDiffers { .. }
            | V::RetainedVersionsDiffer { .. } => Rule::StateDivergence,
            V::WriteAnsweredPastTip { .. } | V::ReadAnsweredPastTip { .. } => Rule::AnswerPastTip,
            V::InvalidDisagrees { .. }
            | V::AnswerDisagrees { .. }
            | V::ReceiptDiffers { .. }
            | V::DuplicateReceiptDiffers { .. }
            | V::RefusedYetCommitted { .. } => Rule::WriteAnswer,
            V::JudgedOutOfTime { .. } => Rule::AnswerOutOfTime,
            V::CommitOutOfFlight { .. } => Rule::CommitOutOfFlight,
            V::WriteUnanswered { .. } | V::ReadUnanswered { .. } => Rule::Unanswered,
            V::LostWrite { .. } | V::PreloadedMissing { .. } => Rule::LostAcknowledgedWrite,
            V::RealTimeOrder { .. } => Rule::RealTimeOrder,
            V::SlotForked { .. } => Rule::SlotFork,
            V::ReachableDeleted { .. }
            | V::KeptCheckpointDeleted { .. }
            | V::RetainedSlotDeleted { .. }
            | V::ContentDeleted { .. }
            | V::YoungDeleted { .. }
            | V::RewriteKeptBytes { .. }
            | V::CheckpointReachesMissing { .. } => Rule::Reachable,
            V::NameHistoryIncoherent { .. } | V::NameHistoryDisagrees { .. } => Rule::NameHistory,
            V::ExactReadStale { .. } => Rule::ExactReadStale,
            V::CatalogReadStale { .. } => Rule::CatalogLag,
            V::ReadDiffers { .. } | V::ReadRefusedWithoutPath { .. } | V::ReadRefusalDisagrees { .. } => {
                Rule::ReadAnswer
            }
            V::ReceiptAbsentNotExact { .. } => Rule::ReceiptAbsence,
            V::WatchEventDiffers { .. } | V::WatchEventPastTip { .. } => Rule::WatchEvents,
            V::WatchResyncCursor { .. } | V::WatchResyncOutsideLog { .. } | V::WatchResyncEarly { .. } => {
                Rule::WatchResync
            }
        }
    }
}

/// A field a full checkpoint repeats from its root (SPEC 10.1): the two must be equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum CheckpointField {
    #[error("world id")]
    WorldId,
    #[error("next sequence")]
    NextSequence,
    #[error("previous hash")]
    PreviousHash,
    #[error("document count")]
    DocumentCount,
}

/// The first field in which a member differs from what the model applies.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MemberDiff {
    #[error("receipt {kernel:?} against {model:?}")]
    Receipt { kernel: Box<Receipt>, model: Box<ModelReceipt> },
    #[error("entry {kernel:?} against {model:?}")]
    Entry { kernel: Box<IndexEntry>, model: Box<ModelApplied> },
    #[error("no entry")]
    NoEntry,
    #[error("version record presence")]
    VersionRecordPresence,
    #[error("version record {kernel:?} against {model:?}")]
    VersionRecord { kernel: Box<VersionRecord>, model: Box<ModelApplied> },
    #[error("prune {kernel:?} against {model:?}")]
    Prune { kernel: Option<PruneRange>, model: Option<(u64, u64)> },
    #[error("policy {kernel:?} against {model:?}")]
    Policy { kernel: Option<ModelPolicyBody>, model: Option<ModelPolicyBody> },
}

/// Microseconds shown as whole milliseconds, as reports have always shown a read's lag.
struct Ms(u64);

impl core::fmt::Display for Ms {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:.0}", self.0 as f64 / 1_000.0)
    }
}
