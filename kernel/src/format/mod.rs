//! On-bucket formats (SPEC sections 2 to 6): keys, the frame every object is wrapped in,
//! the world marker, checkpoints, slots and body blobs. Encoding is deterministic: the same value gives
//! the same bytes on every machine, which is what lets a slot's hash chain the log.

pub mod body;
pub(crate) mod canonical;
mod catalog;
pub mod chain;
pub mod checkpoint;
pub mod delta;
pub mod frame;
pub mod history;
pub mod key;
pub mod layout;
pub mod marker;
mod member_reader;
pub mod receipts;
pub mod root;
pub mod rule;
pub mod segment;
pub mod shard;
pub mod slot;
mod slot_writer;
pub mod stamp;

pub use body::{decode_body, encode_body};
pub use catalog::column_item_bytes_max;
pub use chain::{scan_chain, ChainProblem, ChainScan, ChainWalk, SlotLink};
pub use checkpoint::Checkpoint;
pub use delta::{Delta, DeltaRef, DELTAS_PER_ROOT_MAX, DELTA_ENTRIES_MAX};
pub use frame::{DecodeError, Kind, NameRule};
pub use history::HistoryBlock;
pub use key::{Keys, SegmentName};
pub use layout::{
    history_window, history_window_start, receipt_block_of, shard_bits_for, shard_count, shard_of,
    DOCUMENTS_PER_SHARD_TARGET, RECORDS_PER_HISTORY_BLOCK_MAX, SHARD_BITS_MAX,
};
pub use marker::{Marker, MergeRule};
pub use receipts::{ReceiptBlock, ReceiptBlockRef, StoredReceipt, RECEIPTS_PER_BLOCK_MAX};
pub use root::Root;
pub use rule::{
    CheckpointRule, DeltaRule, HistoryRule, ReceiptBlockRule, RootRule, SegmentRule, ShapeRule, ShardRule,
};
pub use segment::{
    newest_whole_window, segment_window, verified_bodies, window_holds, SegmentBody, SegmentPart,
    SegmentWords, SEGMENT_PARTS_MAX, SEGMENT_PART_BODY_BYTES_MAX, SEGMENT_WINDOW_MS,
};
pub use shard::{HistoryRef, Shard, ShardEntry};
pub use slot::{Slot, SLOT_MEMBERS_MAX};

#[cfg(test)]
mod canonical_tests;
#[cfg(test)]
mod catalog_tests;
#[cfg(test)]
mod checkpoint_objects_tests;
#[cfg(test)]
mod delta_tests;
#[cfg(test)]
mod hostile_tests;
#[cfg(test)]
mod roundtrip_tests;
#[cfg(test)]
mod slot_writer_tests;
#[cfg(test)]
mod snapshot_tests;
