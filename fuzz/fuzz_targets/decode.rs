//! Every decoder of the on-bucket formats, fed the fuzzer's bytes. A decoder answers with
//! a typed error or a value, never a panic (libFuzzer also catches a hang or an
//! allocation past its limit); a value it decodes is the one its bytes encode, so it
//! re-encodes to exactly those bytes; an object decoded under its own content name is
//! the object decoded without one.
#![no_main]

use libfuzzer_sys::fuzz_target;
use slotlog_kernel::format::frame::decode_raw;
use slotlog_kernel::format::{
    decode_body, Checkpoint, DecodeError, HistoryBlock, Kind, Marker, ReceiptBlock, Root, Shard, Slot,
};
use slotlog_kernel::hash::Hash32;

/// Decodes `bytes` with `decode`; what decodes must re-encode to `bytes`.
fn round_trip<T>(
    bytes: &[u8],
    decode: impl Fn(&[u8]) -> Result<T, DecodeError>,
    encode: impl Fn(&T) -> Vec<u8>,
) -> Option<T> {
    let value = decode(bytes).ok()?;
    assert!(encode(&value) == bytes, "a decoded object re-encodes to other bytes");
    Some(value)
}

fuzz_target!(|bytes: &[u8]| {
    for kind in [
        Kind::Marker,
        Kind::Slot,
        Kind::Body,
        Kind::Checkpoint,
        Kind::Root,
        Kind::Shard,
        Kind::History,
        Kind::Receipts,
    ] {
        let _ = decode_raw(kind, bytes);
    }
    round_trip(bytes, Marker::decode, Marker::encode);
    if let Some(slot) = round_trip(bytes, Slot::decode, Slot::encode) {
        let at = Slot::decode_at(slot.first_sequence, bytes).expect("a slot decodes at its own sequence");
        assert_eq!(at.first_sequence, slot.first_sequence);
    }
    round_trip(bytes, Checkpoint::decode, Checkpoint::encode);
    // A content-addressed object is also read under a name: its content hash names it,
    // any other name refuses it.
    let other = Hash32::of(b"another name");
    if let Some(root) = round_trip(bytes, Root::decode, Root::encode) {
        let named = Root::decode_named(bytes, &root.content_hash()).expect("a root decodes under its name");
        assert!(named == root, "a root decodes as another under its name");
        assert!(Root::decode_named(bytes, &other).is_err() || root.content_hash() == other);
    }
    if let Some(shard) = round_trip(bytes, Shard::decode, Shard::encode) {
        let named =
            Shard::decode_named(bytes, &shard.content_hash()).expect("a shard decodes under its name");
        assert!(named == shard, "a shard decodes as another under its name");
        assert!(Shard::decode_named(bytes, &other).is_err() || shard.content_hash() == other);
    }
    if let Some(block) = round_trip(bytes, HistoryBlock::decode, HistoryBlock::encode) {
        let named = HistoryBlock::decode_named(bytes, &block.content_hash())
            .expect("a history block decodes under its name");
        assert!(named == block, "a history block decodes as another under its name");
    }
    if let Some(block) = round_trip(bytes, ReceiptBlock::decode, ReceiptBlock::encode) {
        let named = ReceiptBlock::decode_named(bytes, &block.content_hash())
            .expect("a receipt block decodes under its name");
        assert!(named == block, "a receipt block decodes as another under its name");
    }
    // A body is named by the hash of its bytes: refused under any other name.
    let _ = decode_body(bytes, &Hash32::of(bytes));
    let _ = decode_body(bytes, &other);
});
