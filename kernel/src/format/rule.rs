//! The shape rules of checkpoint objects (SPEC 10), one enum per kind, each rule with the
//! data that shows where it broke. A decoder refuses an object breaking one with
//! `DecodeError::Shape`; the rules never look outside the object.

use crate::world::path::Path;
use crate::world::MemberRule;
use core::fmt;

/// Why a decoded object is not one the format admits: what [`DecodeError::Shape`] names.
///
/// [`DecodeError::Shape`]: super::frame::DecodeError::Shape
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShapeRule {
    /// SPEC 5.4.
    SlotAtSequenceZero,
    /// A slot with no members.
    SlotEmpty,
    /// A slot with more than `SLOT_MEMBERS_MAX` members.
    SlotTooManyMembers,
    /// A slot whose sequences run past `u64::MAX`.
    SlotSequencesOverflow,
    /// Members not at consecutive sequences from the slot's first.
    MembersNotContiguous,
    /// Two members of one slot with the same operation id.
    OperationIdTwice,
    /// A carried body (schema 2) that is no member's new version body, or that comes
    /// before a body of an earlier member, or twice.
    InlineBodyOutOfPlace,
    /// A carried body longer than [`super::slot::INLINE_BODY_BYTES_MAX`].
    InlineBodyTooLong,
    /// A marker (schema 2) whose merge rule lets a root name more deltas than a root may.
    MarkerDeltasPastRootMax {
        /// The count it names.
        deltas_max: u64,
    },
    /// A catalog column (SPEC 5.8) whose length is not the number of entries it follows.
    CatalogColumnCount {
        /// Entries the object holds.
        entries: usize,
        /// Items in its column.
        column: usize,
    },
    /// A catalog record longer than `CATALOG_RECORD_BYTES_MAX`, or present and empty.
    CatalogRecordOutOfBounds {
        /// The record's length, in bytes.
        len: usize,
    },
    /// A member breaks a rule of its own.
    Member(MemberRule),
    /// A checkpoint breaks a rule of SPEC 10.2.
    Checkpoint(CheckpointRule),
    /// A root breaks a rule of SPEC 10.5.
    Root(RootRule),
    /// A shard breaks a rule of SPEC 10.6.
    Shard(ShardRule),
    /// A history block breaks a rule of SPEC 10.7.
    History(HistoryRule),
    /// A receipt block breaks a rule of SPEC 10.8.
    Receipts(ReceiptBlockRule),
    /// A delta breaks a rule of SPEC 10.16.
    Delta(DeltaRule),
    /// A segment part breaks a rule of SPEC 10.17.
    Segment(SegmentRule),
}

/// SPEC 10.2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckpointRule {
    /// Schema 1 holds only checkpoint zero, at next sequence 1.
    ZeroNotAtFirstSequence {
        /// The next sequence it names.
        next_sequence: u64,
    },
    /// Schema 1 holds only checkpoint zero, which has no documents.
    ZeroWithDocuments {
        /// The document count it names.
        document_count: u64,
    },
    /// Schema 1 holds only checkpoint zero, which names no shards.
    ZeroWithShards {
        /// Shards it names.
        shards: usize,
    },
    /// A full checkpoint (schema 2) covers at least one slot.
    FullCoversNoSlot {
        /// The next sequence it names.
        next_sequence: u64,
    },
}

/// SPEC 10.5.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RootRule {
    /// A root covers at least one slot (checkpoint zero has no root).
    CoversNoSlot {
        /// The next sequence it names.
        next_sequence: u64,
    },
    /// The layout is not the one the shard rule gives for the document count.
    LayoutNotForCount {
        /// The document count it names.
        document_count: u64,
        /// The shard bits it names.
        shard_bits: u8,
        /// The shard bits the rule gives for the count.
        expected: u8,
    },
    /// The root names a shard count other than `1 << shard_bits`.
    ShardCount {
        /// The shard bits it names.
        shard_bits: u8,
        /// Shards it names.
        found: usize,
    },
    /// The policy rules are not in the normalized form `set_policy` produces.
    PolicyNotNormalized,
    /// The receipt window starts at sequence 0 or after the checkpoint.
    ReceiptWindowOutside {
        /// The window's first sequence it names.
        receipts_from_sequence: u64,
        /// The next sequence it names.
        next_sequence: u64,
    },
    /// A receipt block reference at `position` is empty (last before first) or holds more
    /// than `RECEIPTS_PER_BLOCK_MAX` receipts.
    ReceiptRefSize {
        /// The reference's position.
        position: usize,
        /// First sequence it names.
        first_sequence: u64,
        /// Last sequence it names.
        last_sequence: u64,
    },
    /// The receipt block at `position` does not start right after the one before it (or,
    /// the first, at the window's start).
    ReceiptRefsNotContiguous {
        /// The reference's position.
        position: usize,
        /// The sequence it should start at.
        expected: u64,
        /// The sequence it starts at.
        found: u64,
    },
    /// A root of schema 2 names no delta (a root without deltas is written in schema 1).
    NoDeltas,
    /// More deltas than `DELTAS_PER_ROOT_MAX`.
    TooManyDeltas {
        /// Deltas it names.
        count: usize,
    },
    /// A delta reference at `position` names 0 entries or more than `DELTA_ENTRIES_MAX`.
    DeltaRefSize {
        /// The reference's position.
        position: usize,
        /// Entries it names.
        entries: u32,
    },
    /// The receipt blocks do not end at the last sequence the checkpoint covers.
    ReceiptRefsEnd {
        /// The last sequence the checkpoint covers.
        expected: u64,
        /// The last sequence the blocks reach (one before the window's start when there are
        /// none).
        found: u64,
    },
}

/// SPEC 10.6.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardRule {
    /// More shard bits than `SHARD_BITS_MAX`.
    BitsTooMany {
        /// The shard bits it names.
        shard_bits: u8,
    },
    /// The shard's index is not below `1 << shard_bits`.
    IndexOutsideLayout {
        /// The index it names.
        index: u32,
        /// The shard bits it names.
        shard_bits: u8,
    },
    /// Entries are not in strictly ascending path order (a path twice, or out of order).
    EntriesNotSorted {
        /// The first path out of order.
        path: Path,
    },
    /// An entry whose path the shard rule puts in another shard.
    PathInOtherShard {
        /// The entry's path.
        path: Path,
        /// The shard the rule gives it.
        shard: u32,
    },
    /// Version 0, first version 0, or the first retained version after the current one.
    EntryVersionsOutOfOrder {
        /// The entry's path.
        path: Path,
    },
    /// The entry's history references are not one per 256-version window from its first
    /// retained version's window to its current version's.
    HistoryRefsCount {
        /// The entry's path.
        path: Path,
        /// Windows from the first retained version's to the current version's.
        expected: u64,
        /// History references it holds.
        found: usize,
    },
    /// The history reference at `position` does not start where its window requires.
    HistoryRefMisplaced {
        /// The entry's path.
        path: Path,
        /// The reference's position.
        position: usize,
        /// The version it starts at.
        first_version: u64,
    },
}

/// SPEC 10.16.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeltaRule {
    /// No entries.
    Empty,
    /// More than `DELTA_ENTRIES_MAX` entries.
    TooManyEntries {
        /// Entries it holds.
        count: usize,
    },
    /// Entries not in strictly ascending path order (the path after the break).
    EntriesNotSorted {
        /// The first path out of order.
        path: Path,
    },
    /// An entry breaks a rule a shard's entry keeps (SPEC 10.6).
    Entry(ShardRule),
}

/// SPEC 10.17.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SegmentRule {
    /// A part count of zero or past `SEGMENT_PARTS_MAX`.
    PartCount {
        /// The count it names.
        parts: u32,
    },
    /// A part number not below the part count.
    PartPastCount {
        /// The part number it names.
        part: u32,
        /// The count it names.
        parts: u32,
    },
    /// Bodies not in strictly ascending hash order (the position after the break).
    BodiesNotSorted {
        /// The position of the first body out of order.
        position: usize,
    },
    /// More body bytes than one part may hold.
    TooLarge {
        /// Body bytes it holds.
        bytes: u64,
    },
    /// Words counted for another number of bodies than the part holds.
    WordCountsPerBody {
        /// Bodies the counts are for.
        counts: usize,
        /// Bodies the part holds.
        bodies: usize,
    },
    /// The bodies' word counts add up to another number than the words listed.
    WordsCounted {
        /// The sum of the counts.
        counted: u64,
        /// Word numbers listed.
        words: u64,
    },
    /// A word's length is zero, runs past the text or ends inside a character, or (the
    /// number past the last word) the lengths end before the text does.
    WordText {
        /// The word's number.
        word: u32,
    },
    /// Word numbers' bytes that are not a whole number of numbers.
    WordBytes {
        /// Their length.
        bytes: u64,
    },
    /// A word number that is neither one met before nor the next new one, or (the
    /// position past the last) a word never met.
    WordNumbering {
        /// Its position among the words listed.
        position: u64,
    },
}

/// SPEC 10.7.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HistoryRule {
    /// No records.
    Empty,
    /// More than `RECORDS_PER_HISTORY_BLOCK_MAX` records.
    TooManyRecords {
        /// Records it holds.
        count: usize,
    },
    /// A record at version 0.
    VersionZero,
    /// A record whose version is not the one before it plus 1.
    VersionsNotConsecutive {
        /// The version before.
        after: u64,
        /// The version that follows it.
        found: u64,
    },
    /// The records run past the 256-version window of the first one.
    CrossesWindow {
        /// Version of the first record.
        first: u64,
        /// Version of the last record.
        last: u64,
    },
}

/// SPEC 10.8.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReceiptBlockRule {
    /// No receipts.
    Empty,
    /// More than `RECEIPTS_PER_BLOCK_MAX` receipts.
    TooManyReceipts {
        /// Receipts it holds.
        count: usize,
    },
    /// Receipts not in strictly ascending operation id order (an id twice, or out of order).
    NotSortedByOperation {
        /// Position of the first receipt out of order.
        position: usize,
    },
    /// The receipts' sequences are not one contiguous run, each once.
    SequencesNotContiguous {
        /// A sequence held.
        after: u64,
        /// The next sequence held, which is not `after + 1`.
        found: u64,
    },
    /// A receipt whose kind and path disagree (a policy receipt with a path, a document
    /// receipt without one).
    PathDoesNotMatchKind {
        /// Position of the receipt.
        position: usize,
    },
}

impl From<CheckpointRule> for ShapeRule {
    fn from(rule: CheckpointRule) -> Self {
        ShapeRule::Checkpoint(rule)
    }
}
impl From<RootRule> for ShapeRule {
    fn from(rule: RootRule) -> Self {
        ShapeRule::Root(rule)
    }
}
impl From<ShardRule> for ShapeRule {
    fn from(rule: ShardRule) -> Self {
        ShapeRule::Shard(rule)
    }
}
impl From<HistoryRule> for ShapeRule {
    fn from(rule: HistoryRule) -> Self {
        ShapeRule::History(rule)
    }
}
impl From<SegmentRule> for ShapeRule {
    fn from(rule: SegmentRule) -> Self {
        ShapeRule::Segment(rule)
    }
}
impl From<DeltaRule> for ShapeRule {
    fn from(rule: DeltaRule) -> Self {
        ShapeRule::Delta(rule)
    }
}
impl From<ReceiptBlockRule> for ShapeRule {
    fn from(rule: ReceiptBlockRule) -> Self {
        ShapeRule::Receipts(rule)
    }
}

impl fmt::Display for ShapeRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShapeRule::SlotAtSequenceZero => f.write_str("slot at sequence 0"),
            ShapeRule::SlotEmpty => f.write_str("slot without members"),
            ShapeRule::SlotTooManyMembers => f.write_str("slot with too many members"),
            ShapeRule::SlotSequencesOverflow => f.write_str("slot sequences pass the largest sequence"),
            ShapeRule::MembersNotContiguous => {
                f.write_str("member sequences are not contiguous from the first")
            }
            ShapeRule::OperationIdTwice => f.write_str("one operation id twice in a slot"),
            ShapeRule::InlineBodyOutOfPlace => {
                f.write_str("a carried body that is no member's new body, out of member order or twice")
            }
            ShapeRule::InlineBodyTooLong => f.write_str("a carried body longer than a slot may carry"),
            ShapeRule::MarkerDeltasPastRootMax { deltas_max } => {
                write!(f, "a marker whose merge rule allows {deltas_max} deltas, more than a root names")
            }
            ShapeRule::CatalogColumnCount { entries, column } => {
                write!(f, "a catalog column of {column} items after {entries} entries")
            }
            ShapeRule::CatalogRecordOutOfBounds { len } => {
                write!(f, "a catalog record of {len} bytes (1 to 1,024 are admitted)")
            }
            ShapeRule::Member(r) => write!(f, "{r}"),
            ShapeRule::Checkpoint(r) => write!(f, "checkpoint: {r}"),
            ShapeRule::Root(r) => write!(f, "root: {r}"),
            ShapeRule::Shard(r) => write!(f, "shard: {r}"),
            ShapeRule::History(r) => write!(f, "history block: {r}"),
            ShapeRule::Receipts(r) => write!(f, "receipt block: {r}"),
            ShapeRule::Delta(r) => write!(f, "delta: {r}"),
            ShapeRule::Segment(r) => write!(f, "segment part: {r}"),
        }
    }
}

impl fmt::Display for CheckpointRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckpointRule::ZeroNotAtFirstSequence { next_sequence } => {
                write!(f, "schema 1 at next sequence {next_sequence}, not 1")
            }
            CheckpointRule::ZeroWithDocuments { document_count } => {
                write!(f, "schema 1 with {document_count} documents")
            }
            CheckpointRule::ZeroWithShards { shards } => write!(f, "schema 1 naming {shards} shards"),
            CheckpointRule::FullCoversNoSlot { next_sequence } => {
                write!(f, "full checkpoint at next sequence {next_sequence} covers no slot")
            }
        }
    }
}

impl fmt::Display for RootRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RootRule::CoversNoSlot { next_sequence } => {
                write!(f, "next sequence {next_sequence} covers no slot")
            }
            RootRule::LayoutNotForCount { document_count, shard_bits, expected } => write!(
                f,
                "{shard_bits} shard bits for {document_count} documents, the shard rule gives {expected}"
            ),
            RootRule::ShardCount { shard_bits, found } => {
                write!(f, "{found} shards for {shard_bits} shard bits")
            }
            RootRule::PolicyNotNormalized => write!(f, "policy rules not normalized"),
            RootRule::ReceiptWindowOutside { receipts_from_sequence, next_sequence } => write!(
                f,
                "receipt window from {receipts_from_sequence} outside 1 ..= next sequence {next_sequence}"
            ),
            RootRule::ReceiptRefSize { position, first_sequence, last_sequence } => write!(
                f,
                "receipt block {position} spans {first_sequence} ..= {last_sequence}: empty or too many"
            ),
            RootRule::ReceiptRefsNotContiguous { position, expected, found } => {
                write!(f, "receipt block {position} starts at {found}, not {expected}")
            }
            RootRule::ReceiptRefsEnd { expected, found } => {
                write!(f, "receipt blocks end at {found}, not {expected}")
            }
            RootRule::NoDeltas => write!(f, "schema 2 naming no delta"),
            RootRule::TooManyDeltas { count } => write!(f, "{count} deltas, more than a root names"),
            RootRule::DeltaRefSize { position, entries } => {
                write!(f, "delta reference {position} names {entries} entries")
            }
        }
    }
}

impl fmt::Display for ShardRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShardRule::BitsTooMany { shard_bits } => write!(f, "{shard_bits} shard bits, more than allowed"),
            ShardRule::IndexOutsideLayout { index, shard_bits } => {
                write!(f, "index {index} outside a layout of {shard_bits} bits")
            }
            ShardRule::EntriesNotSorted { path } => write!(f, "entry {path} out of path order"),
            ShardRule::PathInOtherShard { path, shard } => write!(f, "{path} belongs in shard {shard}"),
            ShardRule::EntryVersionsOutOfOrder { path } => write!(f, "{path}: entry versions out of order"),
            ShardRule::HistoryRefsCount { path, expected, found } => {
                write!(f, "{path}: {found} history references, its versions span {expected} windows")
            }
            ShardRule::HistoryRefMisplaced { path, position, first_version } => write!(
                f,
                "{path}: history reference {position} starts at version {first_version}, outside its window"
            ),
        }
    }
}

impl fmt::Display for HistoryRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HistoryRule::Empty => write!(f, "no records"),
            HistoryRule::TooManyRecords { count } => write!(f, "{count} records, more than allowed"),
            HistoryRule::VersionZero => write!(f, "a record at version 0"),
            HistoryRule::VersionsNotConsecutive { after, found } => {
                write!(f, "version {found} follows version {after}")
            }
            HistoryRule::CrossesWindow { first, last } => {
                write!(f, "versions {first} ..= {last} cross a 256-version window")
            }
        }
    }
}

impl fmt::Display for DeltaRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeltaRule::Empty => write!(f, "no entries"),
            DeltaRule::TooManyEntries { count } => write!(f, "{count} entries, more than a delta holds"),
            DeltaRule::EntriesNotSorted { path } => write!(f, "entries not sorted by path at {path}"),
            DeltaRule::Entry(r) => write!(f, "{r}"),
        }
    }
}

impl fmt::Display for SegmentRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SegmentRule::PartCount { parts } => write!(f, "a count of {parts} parts"),
            SegmentRule::PartPastCount { part, parts } => write!(f, "part {part} of {parts}"),
            SegmentRule::BodiesNotSorted { position } => write!(f, "body {position} out of hash order"),
            SegmentRule::TooLarge { bytes } => write!(f, "{bytes} body bytes, more than a part holds"),
            SegmentRule::WordCountsPerBody { counts, bodies } => {
                write!(f, "word counts for {counts} bodies in a part of {bodies}")
            }
            SegmentRule::WordsCounted { counted, words } => {
                write!(f, "{counted} words counted, {words} listed")
            }
            SegmentRule::WordText { word } => write!(f, "word {word} not a piece of the words' text"),
            SegmentRule::WordBytes { bytes } => write!(f, "{bytes} bytes of word numbers, not whole numbers"),
            SegmentRule::WordNumbering { position } => {
                write!(f, "word number {position} out of first-met order")
            }
        }
    }
}

impl fmt::Display for ReceiptBlockRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReceiptBlockRule::Empty => write!(f, "no receipts"),
            ReceiptBlockRule::TooManyReceipts { count } => write!(f, "{count} receipts, more than allowed"),
            ReceiptBlockRule::NotSortedByOperation { position } => {
                write!(f, "receipt {position} out of operation id order")
            }
            ReceiptBlockRule::SequencesNotContiguous { after, found } => {
                write!(f, "sequence {found} follows sequence {after}")
            }
            ReceiptBlockRule::PathDoesNotMatchKind { position } => {
                write!(f, "receipt {position}: path does not match its kind")
            }
        }
    }
}
