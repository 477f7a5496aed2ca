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
    /// A watch receives every event within the delivery bound of the slot's creation (or
    /// of its subscription, for events before it), hints or no hints: the backstop poll's
    /// interval plus the stated slack (judged only when the run sets a bound).
    WatchDelivery,
    /// Every read of a view answers at the state the view's first read pinned, fresh
    /// enough for the read that pinned it, and a view expires only once its age is past
    /// the kernel's `view_age_max`.
    ViewSnapshot,
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
    /// Writes were acknowledged, yet the world has no marker.
    #[error("writes were acknowledged but the world has no marker")]
    NoMarker,
    /// The marker names another world.
    #[error("the marker names another world")]
    MarkerForeignWorld,
    /// The marker does not decode.
    #[error("the marker does not decode: {error}")]
    MarkerUndecodable {
        /// Why it does not decode.
        error: DecodeError,
    },

    /// The world has a marker but no checkpoint zero.
    #[error("the world has a marker but no checkpoint zero")]
    CheckpointZeroMissing,
    /// Checkpoint zero names another world.
    #[error("checkpoint zero names another world: {found}")]
    CheckpointZeroForeignWorld {
        /// The world it names.
        found: WorldId,
    },
    /// Checkpoint zero names a next sequence other than 1.
    #[error("checkpoint zero names next sequence {next_sequence}")]
    CheckpointZeroNextSequence {
        /// The next sequence it names.
        next_sequence: u64,
    },
    /// Checkpoint zero does not name the marker's hash as its previous hash.
    #[error("checkpoint zero does not name the marker's hash")]
    CheckpointZeroNotTheMarker,
    /// Checkpoint zero names documents or a root.
    #[error("checkpoint zero holds {documents} documents under root {root:?}")]
    CheckpointZeroNotEmpty {
        /// The document count it names.
        documents: u64,
        /// The root it names (checkpoint zero has none).
        root: Option<Hash32>,
    },
    /// Checkpoint zero does not decode.
    #[error("checkpoint zero does not decode: {error}")]
    CheckpointZeroUndecodable {
        /// Why it does not decode.
        error: DecodeError,
    },
    /// Checkpoint zero decodes but is not the bytes SPEC 10 gives for this world and marker.
    #[error("checkpoint zero is not the bytes SPEC 10 gives for this world and marker")]
    CheckpointZeroBytes,

    /// An object under `checkpoints/` is not named as a checkpoint.
    #[error("{key} under checkpoints/ is not a checkpoint name")]
    NotACheckpointName {
        /// The object's name.
        key: String,
    },
    /// A full checkpoint does not decode.
    #[error("{key} does not decode: {error}")]
    CheckpointUndecodable {
        /// Name of the checkpoint.
        key: String,
        /// Why it does not decode.
        error: DecodeError,
    },
    /// A checkpoint's name and the next sequence it holds disagree.
    #[error("{key} holds the checkpoint of next sequence {next_sequence}")]
    CheckpointMisnamed {
        /// Name of the checkpoint.
        key: String,
        /// The next sequence it holds.
        next_sequence: u64,
    },
    /// A checkpoint names another world.
    #[error("{key} names another world: {found}")]
    CheckpointForeignWorld {
        /// Name of the checkpoint.
        key: String,
        /// The world it names.
        found: WorldId,
    },
    /// A checkpoint covers a sequence past the log's tip.
    #[error("{key} covers sequence {covered}, past the log's tip {tip}")]
    CheckpointPastTip {
        /// Name of the checkpoint.
        key: String,
        /// The last sequence it covers.
        covered: u64,
        /// The log's tip.
        tip: u64,
    },
    /// A checkpoint covers a sequence that is not the last of its slot.
    #[error("{key} covers sequence {covered}, inside the slot of sequences {slot_first} to {slot_last}")]
    CheckpointInsideSlot {
        /// Name of the checkpoint.
        key: String,
        /// The last sequence it covers.
        covered: u64,
        /// First sequence of the slot holding `covered`.
        slot_first: u64,
        /// Last sequence of that slot.
        slot_last: u64,
    },
    /// A checkpoint's previous hash is not the hash of the slot holding its last sequence.
    #[error("{key} names previous hash {found}; the slot holding its last sequence hashes to {expected}")]
    CheckpointPreviousHash {
        /// Name of the checkpoint.
        key: String,
        /// Hash of the slot holding its last sequence.
        expected: Hash32,
        /// The previous hash it names.
        found: Hash32,
    },
    /// A checkpoint names an object the bucket does not hold.
    #[error("{key} names {object}, which is not in the bucket")]
    CheckpointObjectMissing {
        /// Name of the checkpoint.
        key: String,
        /// Name of the missing object.
        object: String,
    },
    /// An object a checkpoint names does not decode.
    #[error("{key} names {object}, which does not decode: {error}")]
    CheckpointObjectUndecodable {
        /// Name of the checkpoint.
        key: String,
        /// Name of the object.
        object: String,
        /// Why it does not decode.
        error: DecodeError,
    },
    /// A checkpoint and its root disagree on a field both hold.
    #[error("{key} and its root disagree on the {field}")]
    CheckpointRootDisagrees {
        /// Name of the checkpoint.
        key: String,
        /// The field they disagree on.
        field: CheckpointField,
    },
    /// A checkpoint holds a document count other than the model's.
    #[error("{key} holds {found} documents, the model {model}")]
    CheckpointDocumentCount {
        /// Name of the checkpoint.
        key: String,
        /// Documents the checkpoint holds.
        found: u64,
        /// Documents the model holds at that sequence.
        model: u64,
    },
    /// A checkpoint holds a policy other than the model's.
    #[error("{key} holds policy {found:?}, the model {model:?}")]
    CheckpointPolicy {
        /// Name of the checkpoint.
        key: String,
        /// The checkpoint's policy.
        found: Box<ModelPolicy>,
        /// The model's policy at that sequence.
        model: Box<ModelPolicy>,
    },
    /// A checkpoint's shard bits are not the ones the layout rule gives for its document
    /// count, or it lists other than `2^shard_bits` shards.
    #[error("{key} has {shards} shards of {shard_bits} bits; the rule gives {expected} bits")]
    CheckpointLayout {
        /// Name of the checkpoint.
        key: String,
        /// Shard bits the checkpoint's root names.
        shard_bits: u8,
        /// Shards the root lists.
        shards: usize,
        /// Shard bits the rule gives.
        expected: u8,
    },
    /// A shard names other shard bits than its root, or an index other than its position.
    #[error("{key}: the shard at position {position} is shard {index} of {shard_bits} bits")]
    CheckpointShardMisplaced {
        /// Name of the checkpoint.
        key: String,
        /// Its position in the checkpoint's shard list.
        position: u32,
        /// Shard bits the shard names.
        shard_bits: u8,
        /// Shard index the shard names.
        index: u32,
    },
    /// A delta holds another number of entries than its root's reference says (SPEC 10.16).
    #[error("{key}: the delta at position {position} holds {found} entries, its reference says {named}")]
    CheckpointDeltaEntries {
        /// Name of the checkpoint.
        key: String,
        /// Its position in the root's deltas.
        position: usize,
        /// Entries the reference names.
        named: u32,
        /// Entries the delta holds.
        found: usize,
    },
    /// A root names more deltas, or more delta entries in all, than the merge rule (SPEC
    /// 10.16) lets a step layer: past either bound the step must merge into the shards.
    #[error(
        "{key} layers {deltas} deltas of {entries} entries over its shards; the merge rule allows {deltas_max} deltas and {entries_max} entries"
    )]
    CheckpointLayers {
        /// Name of the checkpoint.
        key: String,
        /// Deltas its root names.
        deltas: usize,
        /// Their entries in all, as the root's references count them.
        entries: u64,
        /// The most deltas a root may name (`checkpoint_deltas_max`).
        deltas_max: usize,
        /// The most entries: the rule's share of the checkpoint's documents, or one full
        /// delta, whichever is more.
        entries_max: u64,
    },
    /// A shard holds paths out of byte order.
    #[error("{key}: the shard at position {position} holds {path} out of path order")]
    CheckpointShardNotSorted {
        /// Name of the checkpoint.
        key: String,
        /// The shard's position.
        position: u32,
        /// The first path out of order.
        path: String,
    },
    /// A document sits in a shard other than the one the rule gives its path.
    #[error("{key}: {path} is in shard {position}; the rule puts it in shard {expected}")]
    CheckpointPathInWrongShard {
        /// Name of the checkpoint.
        key: String,
        /// The document's path.
        path: String,
        /// The shard it is in.
        position: u32,
        /// The shard the rule gives.
        expected: u32,
    },
    /// A checkpoint lacks a document the model holds.
    #[error("{key} lacks {path}")]
    CheckpointDocumentMissing {
        /// Name of the checkpoint.
        key: String,
        /// The document's path.
        path: String,
    },
    /// A checkpoint holds a document the model does not.
    #[error("{key} holds {path}, which the model does not")]
    CheckpointDocumentExtra {
        /// Name of the checkpoint.
        key: String,
        /// The document's path.
        path: String,
    },
    /// A document's index entry differs from the model's.
    #[error("{key}: {path} is {found:?}, the model {model:?}")]
    CheckpointEntryDiffers {
        /// Name of the checkpoint.
        key: String,
        /// The document's path.
        path: String,
        /// The checkpoint's entry.
        found: Box<IndexEntry>,
        /// The model's document.
        model: Box<ModelDocument>,
    },
    /// A document names a number of history blocks other than its retained versions' windows.
    #[error("{key}: {path} names {found} history blocks; its retained versions span {expected} windows")]
    CheckpointHistoryRefs {
        /// Name of the checkpoint.
        key: String,
        /// The document's path.
        path: String,
        /// Windows its retained versions span.
        expected: u64,
        /// History blocks it names.
        found: usize,
    },
    /// A history reference starts at a version outside its window.
    #[error(
        "{key}: {path}'s history reference {position} starts at version {first_version}, outside its window"
    )]
    CheckpointHistoryRefMisplaced {
        /// Name of the checkpoint.
        key: String,
        /// The document's path.
        path: String,
        /// The reference's position in the document's list.
        position: usize,
        /// The version it starts at.
        first_version: u64,
    },
    /// A history reference and the block it names start at different versions.
    #[error(
        "{key}: {path}'s history reference {position} names version {named}; its block starts at {found}"
    )]
    CheckpointHistoryBlockStart {
        /// Name of the checkpoint.
        key: String,
        /// The document's path.
        path: String,
        /// The reference's position in the document's list.
        position: usize,
        /// The version the reference names.
        named: u64,
        /// The version the block starts at.
        found: u64,
    },
    /// A history block holds another document's versions.
    #[error("{key}: a history block of {path} holds the versions of {found}")]
    CheckpointHistoryPath {
        /// Name of the checkpoint.
        key: String,
        /// The document's path.
        path: String,
        /// The path the block holds versions of.
        found: Path,
    },
    /// A checkpoint lacks a version the model retains.
    #[error("{key}: {path} lacks version {version}")]
    CheckpointVersionMissing {
        /// Name of the checkpoint.
        key: String,
        /// The document's path.
        path: String,
        /// The missing version.
        version: u64,
    },
    /// A checkpoint holds a version the model does not retain.
    #[error("{key}: {path} holds version {version}, which the model does not retain")]
    CheckpointVersionExtra {
        /// Name of the checkpoint.
        key: String,
        /// The document's path.
        path: String,
        /// The extra version.
        version: u64,
    },
    /// A version record differs from the model's.
    #[error("{key}: {path} version {version} is {found:?}, the model {model:?}")]
    CheckpointVersionDiffers {
        /// Name of the checkpoint.
        key: String,
        /// The document's path.
        path: String,
        /// The version.
        version: u64,
        /// The checkpoint's record.
        found: Box<VersionRecord>,
        /// The model's record.
        model: Box<ModelVersion>,
    },
    /// A checkpoint's receipts start at a sequence other than the receipt window's first.
    #[error("{key} holds receipts from sequence {found}; the window starts at {expected}")]
    CheckpointReceiptWindow {
        /// Name of the checkpoint.
        key: String,
        /// First sequence of the window.
        expected: u64,
        /// First sequence of the checkpoint's receipts.
        found: u64,
    },
    /// A receipt block reference covers a run of sequences other than the cut gives.
    #[error("{key}: receipt block reference {position} covers {found:?}; the cut gives {expected:?}")]
    CheckpointReceiptBlockCut {
        /// Name of the checkpoint.
        key: String,
        /// The reference's position.
        position: usize,
        /// First and last sequence the reference names (None: no reference there).
        found: Option<(u64, u64)>,
        /// First and last sequence the cut gives (None: no run there).
        expected: Option<(u64, u64)>,
    },
    /// A receipt block holds receipts other than the sequences its name gives.
    #[error(
        "{key}: receipt block {position} is named for sequences {first_sequence} to {last_sequence} \
         but holds {receipts} receipts of {found:?}"
    )]
    CheckpointReceiptBlockRun {
        /// Name of the checkpoint.
        key: String,
        /// The block's position.
        position: usize,
        /// First sequence its name gives.
        first_sequence: u64,
        /// Last sequence its name gives.
        last_sequence: u64,
        /// First and last sequence of the receipts it holds (None: none).
        found: Option<(u64, u64)>,
        /// Receipts it holds.
        receipts: usize,
    },
    /// A checkpoint lacks a receipt inside the model's window.
    #[error("{key} lacks the receipt of sequence {sequence}")]
    CheckpointReceiptMissing {
        /// Name of the checkpoint.
        key: String,
        /// The receipt's sequence.
        sequence: u64,
    },
    /// A checkpoint holds a receipt outside the model's window.
    #[error("{key} holds a receipt of sequence {sequence}, outside the model's window")]
    CheckpointReceiptExtra {
        /// Name of the checkpoint.
        key: String,
        /// The receipt's sequence.
        sequence: u64,
    },
    /// A receipt differs from the model's.
    #[error("{key}: the receipt of sequence {sequence} is {found:?}, the model {model:?}")]
    CheckpointReceiptDiffers {
        /// Name of the checkpoint.
        key: String,
        /// The receipt's sequence.
        sequence: u64,
        /// The checkpoint's receipt.
        found: Box<Receipt>,
        /// The model's receipt.
        model: Box<ModelReceipt>,
    },
    /// A receipt's request digest is not its request's (SPEC 10.13).
    #[error("{key}: the receipt of sequence {sequence} holds a request digest other than its request's")]
    CheckpointRequestDigest {
        /// Name of the checkpoint.
        key: String,
        /// The receipt's sequence.
        sequence: u64,
    },

    /// An object in the log is not named as a slot.
    #[error("{key} in the log is not a slot name")]
    NotASlotName {
        /// The object's name.
        key: String,
    },
    /// A slot does not decode.
    #[error("slot {sequence} does not decode: {error}")]
    SlotUndecodable {
        /// The first sequence its name gives.
        sequence: u64,
        /// Why it does not decode.
        error: DecodeError,
    },
    /// A slot carries a body that is not a member's new body as the model made it, the
    /// first member with that body, once, in member order (SPEC 5.7).
    #[error("slot {sequence} carries body {body} out of place: not, in order, a member's new body")]
    CarriedBodyOutOfPlace {
        /// The slot's first sequence.
        sequence: u64,
        /// The body's index among those the slot carries.
        body: usize,
    },
    /// A slot's name and its first sequence disagree.
    #[error("slot named {sequence} starts at {first_sequence}")]
    SlotMisnamed {
        /// The first sequence its name gives.
        sequence: u64,
        /// The first sequence it holds.
        first_sequence: u64,
    },
    /// A slot names another world.
    #[error("slot {sequence} names another world")]
    SlotForeignWorld {
        /// The slot's first sequence.
        sequence: u64,
    },
    /// The log skips sequences.
    #[error("gap in the log: expected slot {expected}, found {found}")]
    ChainGap {
        /// First sequence of the slot that should come next.
        expected: u64,
        /// First sequence of the slot that does.
        found: u64,
    },
    /// A slot does not name its predecessor's hash (the first slot: the marker's).
    #[error("chain break at slot {sequence}")]
    ChainBreak {
        /// The slot's first sequence.
        sequence: u64,
    },
    /// A slot was created before its predecessor.
    #[error("slot {sequence} was created before its predecessor")]
    SlotCreatedEarly {
        /// The slot's first sequence.
        sequence: u64,
    },
    /// The kernel's own replay refuses a slot.
    #[error("slot {sequence} does not apply on the kernel's state: {error}")]
    KernelCannotApply {
        /// The slot's first sequence.
        sequence: u64,
        /// Why the kernel refuses it.
        error: ApplyError,
    },

    /// A slot holds a member no client issued.
    #[error("slot {sequence} holds {op_id:?}, which no client issued")]
    UnissuedMember {
        /// The member's sequence.
        sequence: u64,
        /// The member's operation id.
        op_id: OperationId,
    },
    /// One operation id is committed by two members.
    #[error("{op_id:?} is committed twice")]
    CommittedTwice {
        /// The operation id.
        op_id: OperationId,
    },
    /// A member differs from what the model applies for its request.
    #[error("member {sequence} ({op_id:?}) differs from the model: {diff}")]
    MemberDiffers {
        /// The member's sequence.
        sequence: u64,
        /// The member's operation id.
        op_id: OperationId,
        /// The first field that differs.
        diff: MemberDiff,
    },
    /// A member is in the log, but the model does not apply its request.
    #[error("member {sequence} ({op_id:?}) is in the log, but the model says {model:?}")]
    MemberNotApplied {
        /// The member's sequence.
        sequence: u64,
        /// The member's operation id.
        op_id: OperationId,
        /// The model's verdict.
        model: Verdict,
    },

    /// After replaying the log, the kernel and the model hold different document counts.
    #[error("replaying the log, the kernel holds {kernel} documents and the model {model}")]
    DocumentCount {
        /// Documents the kernel holds.
        kernel: usize,
        /// Documents the model holds.
        model: usize,
    },
    /// After replaying the log, the kernel holds a document the model does not.
    #[error("the kernel holds {path} and the model does not")]
    DocumentNotInModel {
        /// The document's path.
        path: Path,
    },
    /// After replaying the log, a document differs from the model's.
    #[error("{path}: the kernel holds {kernel:?}, the model {model:?}")]
    DocumentDiffers {
        /// The document's path.
        path: Path,
        /// The kernel's entry.
        kernel: Box<IndexEntry>,
        /// The model's document.
        model: Box<ModelDocument>,
    },
    /// After replaying the log, a document retains versions other than the model's.
    #[error("{path}: the kernel retains versions {kernel:?}, the model {model:?}")]
    RetainedVersionsDiffer {
        /// The document's path.
        path: Path,
        /// Versions the kernel retains.
        kernel: Vec<u64>,
        /// Versions the model retains.
        model: Vec<u64>,
    },

    /// A write was answered at a sequence past the log's tip.
    #[error("{op_id:?} was answered at sequence {at}, past the log's tip")]
    WriteAnsweredPastTip {
        /// The write's operation id.
        op_id: OperationId,
        /// The sequence it was answered at.
        at: u64,
    },
    /// A read was answered at a sequence past the log's tip.
    #[error("read {read} was answered at sequence {at}, past the log's tip")]
    ReadAnsweredPastTip {
        /// Index of the read in the history.
        read: usize,
        /// The sequence it was answered at.
        at: u64,
    },
    /// A write was answered `Invalid`, and the model disagrees.
    #[error("{op_id:?} answered Invalid({invalid:?}); the model says {model:?}")]
    InvalidDisagrees {
        /// The write's operation id.
        op_id: OperationId,
        /// The reason it was given.
        invalid: Invalid,
        /// The model's verdict.
        model: Verdict,
    },
    /// A write's answer is not the model's at the state it names.
    #[error("{op_id:?} was answered {answer:?}; at that state the model says {model:?}")]
    AnswerDisagrees {
        /// The write's operation id.
        op_id: OperationId,
        /// The answer.
        answer: Box<Result<WriteOk, WriteError>>,
        /// The model's verdict at that state.
        model: Verdict,
    },
    /// A write was acknowledged with a receipt other than the log's.
    #[error("{op_id:?} was acknowledged with {acknowledged:?}, the log holds {logged:?}")]
    ReceiptDiffers {
        /// The write's operation id.
        op_id: OperationId,
        /// The receipt it was acknowledged with.
        acknowledged: Box<Receipt>,
        /// The receipt the log holds.
        logged: Box<Receipt>,
    },
    /// A write was answered duplicate with a receipt other than the log's.
    #[error("{op_id:?} was answered duplicate of {answered:?}, the log holds {logged:?}")]
    DuplicateReceiptDiffers {
        /// The write's operation id.
        op_id: OperationId,
        /// The receipt it was answered with.
        answered: Box<Receipt>,
        /// The receipt the log holds.
        logged: Box<Receipt>,
    },
    /// A write was refused, yet the log commits it.
    #[error("{op_id:?} was answered {answer:?}, yet the log commits it at {sequence}")]
    RefusedYetCommitted {
        /// The write's operation id.
        op_id: OperationId,
        /// The refusal.
        answer: Box<Result<WriteOk, WriteError>>,
        /// The sequence the log commits it at.
        sequence: u64,
    },
    /// A write was judged at a state that was not the tip while it was in flight.
    #[error("{op_id:?} was judged at sequence {at}, a state that was not the tip while it was in flight")]
    JudgedOutOfTime {
        /// The write's operation id.
        op_id: OperationId,
        /// The sequence of the state it names.
        at: u64,
    },
    /// A member's entry has a modified time after its slot's creation or before the
    /// document's previous one (SPEC 1.3).
    #[error(
        "member {sequence} gives {path} modified time {modified_us} us: its slot was created at \
         {created_us} us, its previous time was {previous_us} us"
    )]
    ModifiedTimeOutOfBounds {
        /// The member's sequence.
        sequence: u64,
        /// The document's path.
        path: String,
        /// The entry's modified time.
        modified_us: u64,
        /// The document's modified time before the member (0 for a new document).
        previous_us: u64,
        /// The slot's creation time, on the store's clock.
        created_us: u64,
    },
    /// A write's slot was created outside the time the write was in flight.
    #[error("{op_id:?}'s slot was created outside the time its write was in flight")]
    CommitOutOfFlight {
        /// The write's operation id.
        op_id: OperationId,
    },
    /// A write on a replica that did not crash was never answered.
    #[error("{op_id:?} on replica {replica} was never answered")]
    WriteUnanswered {
        /// The write's operation id.
        op_id: OperationId,
        /// Index of its replica.
        replica: usize,
    },
    /// A read on a replica that did not crash was never answered.
    #[error("read {read} on replica {replica} was never answered")]
    ReadUnanswered {
        /// Index of the read in the history.
        read: usize,
        /// Index of its replica.
        replica: usize,
    },
    /// An acknowledged write is not in the log.
    #[error("{op_id:?} was acknowledged at sequence {sequence} but is not in the log")]
    LostWrite {
        /// The write's operation id.
        op_id: OperationId,
        /// The sequence it was acknowledged at.
        sequence: u64,
    },
    /// A write preloaded into the log before the run is not in it.
    #[error("preloaded {op_id:?} is not in the log")]
    PreloadedMissing {
        /// The write's operation id.
        op_id: OperationId,
    },
    /// A write has a smaller sequence than one acknowledged before it began.
    #[error("sequence {sequence} began after a write with a larger sequence was acknowledged")]
    RealTimeOrder {
        /// The write's sequence.
        sequence: u64,
    },

    /// A slot name held two different sets of bytes over the run.
    #[error("slot {key} forked: it held bytes {first} and, from {at:?}, bytes {other}")]
    SlotForked {
        /// The slot's name.
        key: String,
        /// BLAKE3 of the bytes it held first.
        first: Hash32,
        /// BLAKE3 of the bytes it held later.
        other: Hash32,
        /// When it first held the other bytes (store time).
        at: Instant,
    },
    /// An object a kept checkpoint reaches was deleted.
    #[error("{key} deleted at {at:?} while kept checkpoint {checkpoint} reaches it")]
    ReachableDeleted {
        /// The object's name.
        key: String,
        /// Name of the kept checkpoint.
        checkpoint: String,
        /// When it was deleted (store time).
        at: Instant,
    },
    /// A body segment part of its label's newest whole window, in a kept checkpoint's layout, was deleted: a reader wants it (SPEC 10.17).
    #[error("segment part {key} deleted at {at:?}: its label's newest whole window, in a kept checkpoint's layout")]
    NewestSegmentDeleted {
        /// The part's name.
        key: String,
        /// When it was deleted (store time).
        at: Instant,
    },
    /// A kept checkpoint was deleted.
    #[error("kept checkpoint {key} deleted at {at:?}")]
    KeptCheckpointDeleted {
        /// Name of the checkpoint.
        key: String,
        /// When it was deleted (store time).
        at: Instant,
    },
    /// A slot younger than the retention, or not covered by the oldest kept checkpoint, was deleted.
    #[error("slot {key} deleted at {at:?}: younger than the retention, or not covered by the oldest kept checkpoint")]
    RetainedSlotDeleted {
        /// The slot's name.
        key: String,
        /// When it was deleted (store time).
        at: Instant,
    },
    /// An object was deleted less than the grace after it was written: a delete the generation fence should have refused.
    #[error("{key} deleted at {at:?}, written at {written:?}: less than the grace before (a delete the generation fence should have refused)")]
    YoungDeleted {
        /// The object's name.
        key: String,
        /// When it was written (store time).
        written: Instant,
        /// When it was deleted (store time).
        at: Instant,
    },
    /// An object was rewritten with the bytes it held, so where the version token is a hash of the bytes (S3's ETag) the fence did not move.
    #[error("{key} rewritten at {at:?} with the bytes it held: where the version token is a hash of the bytes (S3's ETag) the fence did not move")]
    RewriteKeptBytes {
        /// The object's name.
        key: String,
        /// When it was rewritten (store time).
        at: Instant,
    },
    /// A content object was deleted: content is never collected.
    #[error("content object {key} deleted at {at:?}; content is never collected")]
    ContentDeleted {
        /// The object's name.
        key: String,
        /// When it was deleted (store time).
        at: Instant,
    },
    /// A body of a version a checkpoint holds is not stored as a blob: once the slots the
    /// checkpoint covers are collected, a body only a slot carried is gone (SPEC 5.7).
    #[error("checkpoint {checkpoint} holds {path} version {version}, whose body {body} is not stored")]
    CheckpointBodyNotStored {
        /// Name of the checkpoint.
        checkpoint: String,
        /// The document.
        path: String,
        /// The version.
        version: u64,
        /// The body blob's name.
        body: String,
    },
    /// A checkpoint was created reaching an object that is missing.
    #[error("checkpoint {checkpoint} created at {at:?} reaches {missing}, which is missing")]
    CheckpointReachesMissing {
        /// Name of the checkpoint.
        checkpoint: String,
        /// Name of the missing object.
        missing: String,
        /// When the checkpoint was created (store time).
        at: Instant,
    },
    /// The store's history of a name does not fit it (a create of a present name, a rewrite or delete of an absent one, time running back).
    #[error("the store's history of {key} does not fit it: {change:?} at {at:?}")]
    NameHistoryIncoherent {
        /// The name.
        key: String,
        /// The change that does not fit.
        change: NameChange,
        /// When it happened (store time).
        at: Instant,
    },
    /// The store's history of a name does not account for what the bucket holds at the end.
    #[error("the store's history of {key} does not account for what the bucket holds at the end")]
    NameHistoryDisagrees {
        /// The name.
        key: String,
    },

    /// An exact read answered at a state older than the read.
    #[error("exact read {read} on replica {replica} answered at sequence {at}, a state {} ms older than the read", Ms(*lag_us))]
    ExactReadStale {
        /// Index of the read in the history.
        read: usize,
        /// Index of its replica.
        replica: usize,
        /// The sequence it answered at.
        at: u64,
        /// How much older than the read the state was, in µs.
        lag_us: u64,
    },
    /// A catalog read answered at a state older than the staleness bound allows.
    #[error("catalog read {read} on replica {replica} answered at sequence {at}, a state {} ms older than the read", Ms(*lag_us))]
    CatalogReadStale {
        /// Index of the read in the history.
        read: usize,
        /// Index of its replica.
        replica: usize,
        /// The sequence it answered at.
        at: u64,
        /// How much older than the read the state was, in µs.
        lag_us: u64,
    },
    /// A read's answer is not the model's at the state it names.
    #[error(
        "read {read} ({request:?}) at sequence {at}: answered {answer:?}, which the model does not give"
    )]
    ReadDiffers {
        /// Index of the read in the history.
        read: usize,
        /// What was read.
        request: Read,
        /// The sequence it answered at.
        at: u64,
        /// The answer.
        answer: Box<Answer>,
    },
    /// A receipt read answered absent where the model does not (SPEC 10.13).
    #[error("read {read} ({request:?}) at sequence {at}: answered absent, but the model says {model:?}")]
    ReceiptAbsentNotExact {
        /// Index of the read in the history.
        read: usize,
        /// What was read.
        request: Read,
        /// The sequence it answered at.
        at: u64,
        /// What the model answers.
        model: ModelReceiptAnswer,
    },
    /// A read that names no path was refused for a path problem.
    #[error("read {read} ({request:?}) names no path but was refused for one")]
    ReadRefusedWithoutPath {
        /// Index of the read in the history.
        read: usize,
        /// What was read.
        request: Read,
    },
    /// A search was refused as an invalid query though the model finds words in it,
    /// within the query bounds.
    #[error("search {read} refused {query:?} as invalid, but the model finds words in it")]
    SearchRefusalDisagrees {
        /// Index of the read in the history.
        read: usize,
        /// The query.
        query: String,
    },
    /// A read was refused for a path problem the model does not find.
    #[error("read {read} was refused {problem:?}, but the model normalizes {raw:?}")]
    ReadRefusalDisagrees {
        /// Index of the read in the history.
        read: usize,
        /// The problem it was refused for.
        problem: PathProblem,
        /// The path as the client gave it.
        raw: String,
    },

    /// A watch received a receipt other than the log's at that sequence.
    #[error("watch {watch} from {cursor}: event {event} is {got:?}, the log holds {expected:?}")]
    WatchEventDiffers {
        /// Index of the watch session in the history.
        watch: usize,
        /// The sequence it subscribed after.
        cursor: u64,
        /// Index of the event in the session.
        event: usize,
        /// The receipt it received.
        got: Box<Receipt>,
        /// The receipt the log holds.
        expected: Box<Receipt>,
    },
    /// A watch received a receipt past the log's tip.
    #[error("watch {watch} from {cursor} received {got:?}, past the log's tip")]
    WatchEventPastTip {
        /// Index of the watch session in the history.
        watch: usize,
        /// The sequence it subscribed after.
        cursor: u64,
        /// The receipt it received.
        got: Box<Receipt>,
    },
    /// A watch resynced at a cursor other than the last sequence it delivered.
    #[error("watch {watch} resynced at cursor {cursor} after delivering through {delivered}")]
    WatchResyncCursor {
        /// Index of the watch session in the history.
        watch: usize,
        /// The cursor it resynced at.
        cursor: u64,
        /// The last sequence it delivered.
        delivered: u64,
    },
    /// A watch resynced with a cursor or tip outside the log.
    #[error("watch {watch} resynced at cursor {cursor} with tip {tip}, outside the log")]
    WatchResyncOutsideLog {
        /// Index of the watch session in the history.
        watch: usize,
        /// The cursor it resynced at.
        cursor: u64,
        /// The tip it named.
        tip: u64,
    },
    /// A watch resynced while its cursor was no more than `recent_slots_max` slots behind
    /// its replica's tip.
    #[error(
        "watch {watch} resynced at cursor {cursor}, only {slots_behind} slots behind its replica's tip {tip}"
    )]
    WatchResyncEarly {
        /// Index of the watch session in the history.
        watch: usize,
        /// The cursor it resynced at.
        cursor: u64,
        /// Slots between the cursor and the tip.
        slots_behind: usize,
        /// The replica's tip it named.
        tip: u64,
    },
    /// A watch received an event later than the delivery bound after its slot was
    /// created (or after the watch began, for a slot created before).
    #[error("watch {watch}: sequence {sequence} delivered {lag_ms} ms after it was due from, over the {bound_ms} ms watch delivery bound")]
    WatchDeliveredLate {
        /// Index of the watch session in the history.
        watch: usize,
        /// The event's sequence.
        sequence: u64,
        /// From the slot's creation (or the watch's start) to the delivery.
        lag_ms: u64,
        /// The bound the run set.
        bound_ms: u64,
    },
    /// A read of a view answered at another state than the view's first answer.
    #[error("read {read} of view {view} answered at sequence {at}, where the view is pinned at {pinned}")]
    ViewMoved {
        /// Index of the read in the history.
        read: usize,
        /// The view.
        view: usize,
        /// The sequence it answered at.
        at: u64,
        /// The sequence the view's first answer named.
        pinned: u64,
    },
    /// A read of a view was answered `ViewExpired` before the view was that old.
    #[error("read {read} of view {view} answered ViewExpired {age_ms} ms after the view's first read, under the {age_max_ms} ms age")]
    ViewExpiredEarly {
        /// Index of the read in the history.
        read: usize,
        /// The view.
        view: usize,
        /// From the view's first read reaching its replica to this answer.
        age_ms: u64,
        /// The kernel's `view_age_max`.
        age_max_ms: u64,
    },
    /// A watch open at the end of the run never received an event whose slot was created
    /// longer than the delivery bound before the end.
    #[error("watch {watch}: sequence {sequence} never delivered, {waited_ms} ms after it was due from, over the {bound_ms} ms watch delivery bound")]
    WatchNeverDelivered {
        /// Index of the watch session in the history.
        watch: usize,
        /// The first sequence it did not receive.
        sequence: u64,
        /// From the slot's creation (or the watch's start) to the end of the run.
        waited_ms: u64,
        /// The bound the run set.
        bound_ms: u64,
    },
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
            | V::CheckpointDeltaEntries { .. }
            | V::CheckpointLayers { .. }
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
            | V::CarriedBodyOutOfPlace { .. }
            | V::SlotMisnamed { .. }
            | V::SlotForeignWorld { .. } => Rule::SlotObject,
            V::ChainGap { .. } => Rule::ChainGap,
            V::ChainBreak { .. } => Rule::ChainBreak,
            V::SlotCreatedEarly { .. } => Rule::SlotOrder,
            V::KernelCannotApply { .. } => Rule::KernelReplay,
            V::UnissuedMember { .. } => Rule::UnissuedMember,
            V::CommittedTwice { .. } => Rule::DuplicateMember,
            V::MemberDiffers { .. } | V::MemberNotApplied { .. } | V::ModifiedTimeOutOfBounds { .. } => {
                Rule::ModelDivergence
            }
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
            | V::NewestSegmentDeleted { .. }
            | V::RetainedSlotDeleted { .. }
            | V::ContentDeleted { .. }
            | V::YoungDeleted { .. }
            | V::RewriteKeptBytes { .. }
            | V::CheckpointReachesMissing { .. }
            | V::CheckpointBodyNotStored { .. } => Rule::Reachable,
            V::NameHistoryIncoherent { .. } | V::NameHistoryDisagrees { .. } => Rule::NameHistory,
            V::ExactReadStale { .. } => Rule::ExactReadStale,
            V::CatalogReadStale { .. } => Rule::CatalogLag,
            V::ReadDiffers { .. }
            | V::ReadRefusedWithoutPath { .. }
            | V::ReadRefusalDisagrees { .. }
            | V::SearchRefusalDisagrees { .. } => Rule::ReadAnswer,
            V::ReceiptAbsentNotExact { .. } => Rule::ReceiptAbsence,
            V::WatchEventDiffers { .. } | V::WatchEventPastTip { .. } => Rule::WatchEvents,
            V::WatchResyncCursor { .. } | V::WatchResyncOutsideLog { .. } | V::WatchResyncEarly { .. } => {
                Rule::WatchResync
            }
            V::WatchDeliveredLate { .. } | V::WatchNeverDelivered { .. } => Rule::WatchDelivery,
            V::ViewMoved { .. } | V::ViewExpiredEarly { .. } => Rule::ViewSnapshot,
        }
    }
}

/// A field a full checkpoint repeats from its root (SPEC 10.1): the two must be equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum CheckpointField {
    /// The world id.
    #[error("world id")]
    WorldId,
    /// The next sequence.
    #[error("next sequence")]
    NextSequence,
    /// The previous hash.
    #[error("previous hash")]
    PreviousHash,
    /// The document count.
    #[error("document count")]
    DocumentCount,
}

/// The first field in which a member differs from what the model applies.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MemberDiff {
    /// The receipts differ.
    #[error("receipt {kernel:?} against {model:?}")]
    Receipt {
        /// The kernel's receipt.
        kernel: Box<Receipt>,
        /// The model's.
        model: Box<ModelReceipt>,
    },
    /// The index entries differ.
    #[error("entry {kernel:?} against {model:?}")]
    Entry {
        /// The kernel's entry.
        kernel: Box<IndexEntry>,
        /// What the model applies.
        model: Box<ModelApplied>,
    },
    /// The kernel's member has no index entry where the model's has one.
    #[error("no entry")]
    NoEntry,
    /// One side has a version record and the other none.
    #[error("version record presence")]
    VersionRecordPresence,
    /// The version records differ.
    #[error("version record {kernel:?} against {model:?}")]
    VersionRecord {
        /// The kernel's record.
        kernel: Box<VersionRecord>,
        /// What the model applies.
        model: Box<ModelApplied>,
    },
    /// The prune ranges differ.
    #[error("prune {kernel:?} against {model:?}")]
    Prune {
        /// The kernel's range.
        kernel: Option<PruneRange>,
        /// The model's range (first and last version).
        model: Option<(u64, u64)>,
    },
    /// The policies differ.
    #[error("policy {kernel:?} against {model:?}")]
    Policy {
        /// The kernel's policy, in the model's terms.
        kernel: Option<ModelPolicyBody>,
        /// The model's policy.
        model: Option<ModelPolicyBody>,
    },
}

/// Microseconds shown as whole milliseconds, as reports have always shown a read's lag.
struct Ms(u64);

impl core::fmt::Display for Ms {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:.0}", self.0 as f64 / 1_000.0)
    }
}
