//! The object key scheme (SPEC 2). Every key of a world lives under its prefix.

use crate::hash::{Hash32, HEX_DIGITS};

/// Builds and parses a world's object keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keys {
    /// Empty, or ends with `/`.
    root: String,
}

/// Slot and checkpoint names are a sequence in 16 lowercase hex digits, so byte order is
/// sequence order.
const SEQUENCE_DIGITS: usize = 16;

impl Keys {
    /// `prefix` may be empty; a trailing `/` is optional.
    pub fn new(prefix: &str) -> Keys {
        let trimmed = prefix.trim_end_matches('/');
        let root = if trimmed.is_empty() { String::new() } else { format!("{trimmed}/") };
        Keys { root }
    }

    /// The prefix every key of the world starts with.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// The marker's key.
    pub fn marker(&self) -> String {
        format!("{}marker", self.root)
    }

    /// The prefix every slot key starts with.
    pub fn log_prefix(&self) -> String {
        format!("{}log/", self.root)
    }

    /// The key of the slot whose first sequence is `first_sequence`: 16 hex digits.
    pub fn slot(&self, first_sequence: u64) -> String {
        self.sequence_key("log/", first_sequence)
    }

    /// The prefix every checkpoint key starts with.
    pub fn checkpoints_prefix(&self) -> String {
        format!("{}checkpoints/", self.root)
    }

    /// A checkpoint is named by its next sequence, the first one it does not cover.
    pub fn checkpoint(&self, next_sequence: u64) -> String {
        self.sequence_key("checkpoints/", next_sequence)
    }

    /// The prefix every body blob key starts with.
    pub fn blobs_prefix(&self) -> String {
        format!("{}blobs/", self.root)
    }

    /// The prefix every history block key starts with.
    pub fn history_prefix(&self) -> String {
        format!("{}history/", self.root)
    }

    /// The key of the body blob whose body hashes to `hash`.
    pub fn body(&self, hash: &Hash32) -> String {
        self.hash_key("blobs/", hash)
    }

    /// The prefix every root key starts with.
    pub fn roots_prefix(&self) -> String {
        format!("{}roots/", self.root)
    }

    /// A root is named by its content hash (SPEC 10.9).
    pub fn root_object(&self, hash: &Hash32) -> String {
        self.hash_key("roots/", hash)
    }

    /// The prefix every shard key starts with.
    pub fn shards_prefix(&self) -> String {
        format!("{}shards/", self.root)
    }

    /// A shard is named by its content hash (SPEC 10.9).
    pub fn shard(&self, hash: &Hash32) -> String {
        self.hash_key("shards/", hash)
    }

    /// Where deltas live, for a collector to list.
    pub fn deltas_prefix(&self) -> String {
        format!("{}deltas/", self.root)
    }

    /// A delta is named by its content hash (SPEC 10.9).
    pub fn delta(&self, hash: &Hash32) -> String {
        self.hash_key("deltas/", hash)
    }

    /// A history block is named by the hash of its bytes. Never listed: history blocks
    /// are never collected, so there is no parser.
    pub fn history(&self, hash: &Hash32) -> String {
        self.hash_key("history/", hash)
    }

    /// The prefix every receipt block key starts with.
    pub fn receipts_prefix(&self) -> String {
        format!("{}receipts/", self.root)
    }

    /// A receipt block is named by its content hash (SPEC 10.9).
    pub fn receipts(&self, hash: &Hash32) -> String {
        self.hash_key("receipts/", hash)
    }

    /// The prefix every segment part key starts with (SPEC 10.17).
    pub fn segments_prefix(&self) -> String {
        format!("{}segments/", self.root)
    }

    /// The prefix of one shard label's segments: `segments/<bits>-<label>/`, the shard
    /// bits in two decimal digits and the label in eight hex digits.
    pub fn segment_label_prefix(&self, bits: u8, label: u32) -> String {
        format!("{}segments/{bits:02}-{label:08x}/", self.root)
    }

    /// The key of one segment part: the window in 16 hex digits and the part in 4, so
    /// byte order is window order, then part order.
    pub fn segment(&self, name: &SegmentName) -> String {
        format!("{}{:016x}/{:04x}", self.segment_label_prefix(name.bits, name.label), name.window, name.part)
    }

    /// The segment part a key names, or None for a key that is not exactly one.
    pub fn parse_segment(&self, key: &str) -> Option<SegmentName> {
        let rest = key.strip_prefix(&self.root)?.strip_prefix("segments/")?;
        let mut fields = rest.split('/');
        let (label_field, window, part) = (fields.next()?, fields.next()?, fields.next()?);
        if fields.next().is_some() {
            return None;
        }
        let (bits, label) = label_field.split_once('-')?;
        let name = SegmentName {
            bits: parse_digits(bits, 2, 10)?.try_into().ok()?,
            label: parse_digits(label, 8, 16)?.try_into().ok()?,
            window: parse_digits(window, 16, 16)?,
            part: parse_digits(part, 4, 16)?.try_into().ok()?,
        };
        (self.segment(&name) == key).then_some(name)
    }

    /// `<root><dir><64 hex digits>`, built in one allocation (keys are made for every
    /// body and slot call, so this is on the simulator's hot path).
    fn hash_key(&self, dir: &str, hash: &Hash32) -> String {
        let mut key = String::with_capacity(self.root.len() + dir.len() + 64);
        key.push_str(&self.root);
        key.push_str(dir);
        hash.push_hex(&mut key);
        key
    }

    /// `<root><dir><16 hex digits>`: the same as `format!("{root}{dir}{sequence:016x}")`.
    fn sequence_key(&self, dir: &str, sequence: u64) -> String {
        let mut digits = [0u8; SEQUENCE_DIGITS];
        for (i, d) in digits.iter_mut().enumerate() {
            let shift = 4 * (SEQUENCE_DIGITS - 1 - i);
            *d = HEX_DIGITS[((sequence >> shift) & 15) as usize];
        }
        let mut key = String::with_capacity(self.root.len() + dir.len() + SEQUENCE_DIGITS);
        key.push_str(&self.root);
        key.push_str(dir);
        key.push_str(core::str::from_utf8(&digits).expect("hex digits are ASCII"));
        key
    }

    /// The content hash a root key names, or None for a key that is not a root name.
    pub fn parse_root(&self, key: &str) -> Option<Hash32> {
        Hash32::from_hex(key.strip_prefix(&self.root)?.strip_prefix("roots/")?)
    }

    /// The content hash a shard key names, or None for a key that is not a shard name.
    pub fn parse_shard(&self, key: &str) -> Option<Hash32> {
        Hash32::from_hex(key.strip_prefix(&self.root)?.strip_prefix("shards/")?)
    }

    /// The content hash a delta key names, or None for a key that is not one.
    pub fn parse_delta(&self, key: &str) -> Option<Hash32> {
        Hash32::from_hex(key.strip_prefix(&self.root)?.strip_prefix("deltas/")?)
    }

    /// The content hash a receipt block key names, or None for a key that is not one.
    pub fn parse_receipts(&self, key: &str) -> Option<Hash32> {
        Hash32::from_hex(key.strip_prefix(&self.root)?.strip_prefix("receipts/")?)
    }

    /// The first sequence a slot key names, or None for a key that is not a slot name.
    pub fn parse_slot(&self, key: &str) -> Option<u64> {
        parse_sequence(key.strip_prefix(&self.root)?.strip_prefix("log/")?)
    }

    /// The next sequence a checkpoint key names, or None for a key that is not a
    /// checkpoint name.
    pub fn parse_checkpoint(&self, key: &str) -> Option<u64> {
        parse_sequence(key.strip_prefix(&self.root)?.strip_prefix("checkpoints/")?)
    }
}

/// What a segment part key names (SPEC 10.17).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SegmentName {
    /// The shard bits of the layout the label belongs to.
    pub bits: u8,
    /// The shard index within that layout.
    pub label: u32,
    /// The 10-minute store-clock window it was written in.
    pub window: u64,
    /// The part number, from 0.
    pub part: u32,
}

/// Exactly `width` lowercase digits of `radix`.
fn parse_digits(digits: &str, width: usize, radix: u32) -> Option<u64> {
    if digits.len() != width || !digits.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// Exactly 16 lowercase hex digits, read as a sequence.
fn parse_sequence(digits: &str) -> Option<u64> {
    if digits.len() != SEQUENCE_DIGITS
        || !digits.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_keys_sort_by_sequence() {
        let k = Keys::new("worlds/w1/");
        assert_eq!(k.slot(1), "worlds/w1/log/0000000000000001");
        assert!(k.slot(0xff) < k.slot(0x100));
        assert_eq!(k.parse_slot(&k.slot(0xabc)), Some(0xabc));
        assert_eq!(k.parse_slot("worlds/w1/log/00000000000000AB"), None);
        assert_eq!(k.parse_slot("worlds/w2/log/0000000000000001"), None);
    }

    #[test]
    fn checkpoint_keys_sort_by_next_sequence() {
        let k = Keys::new("worlds/w1/");
        assert_eq!(k.checkpoint(1), "worlds/w1/checkpoints/0000000000000001");
        assert!(k.checkpoint(1).starts_with(&k.checkpoints_prefix()));
        assert!(k.checkpoint(0xff) < k.checkpoint(0x100));
        assert_eq!(k.parse_checkpoint(&k.checkpoint(0xabc)), Some(0xabc));
        assert_eq!(k.parse_checkpoint("worlds/w1/checkpoints/00000000000000AB"), None);
        assert_eq!(k.parse_checkpoint("worlds/w2/checkpoints/0000000000000001"), None);
        assert_eq!(k.parse_checkpoint(&k.slot(1)), None, "a slot name is not a checkpoint name");
        assert_eq!(k.parse_slot(&k.checkpoint(1)), None, "nor the other way round");
        assert_eq!(k.parse_checkpoint(&format!("{}0", k.checkpoint(1))), None);
    }

    #[test]
    fn content_addressed_checkpoint_keys_round_trip() {
        let k = Keys::new("worlds/w1/");
        let h = Hash32::of(b"object");
        let hex = h.to_hex();
        assert_eq!(k.root_object(&h), format!("worlds/w1/roots/{hex}"));
        assert_eq!(k.shard(&h), format!("worlds/w1/shards/{hex}"));
        assert_eq!(k.history(&h), format!("worlds/w1/history/{hex}"));
        assert_eq!(k.receipts(&h), format!("worlds/w1/receipts/{hex}"));
        assert!(k.root_object(&h).starts_with(&k.roots_prefix()));
        assert!(k.shard(&h).starts_with(&k.shards_prefix()));
        assert!(k.receipts(&h).starts_with(&k.receipts_prefix()));
        assert_eq!(k.parse_root(&k.root_object(&h)), Some(h));
        assert_eq!(k.parse_shard(&k.shard(&h)), Some(h));
        assert_eq!(k.parse_delta(&k.delta(&h)), Some(h));
        assert_eq!(k.parse_delta(&k.shard(&h)), None);
        assert_eq!(k.parse_receipts(&k.receipts(&h)), Some(h));
        // Each parser takes only its own kind, root and exact 64 lowercase digits.
        assert_eq!(k.parse_root(&k.shard(&h)), None);
        assert_eq!(k.parse_shard(&k.receipts(&h)), None);
        assert_eq!(k.parse_receipts(&k.root_object(&h)), None);
        assert_eq!(k.parse_shard(&format!("worlds/w2/shards/{hex}")), None);
        assert_eq!(k.parse_shard(&format!("worlds/w1/shards/{}", hex.to_uppercase())), None);
        assert_eq!(k.parse_shard(&format!("worlds/w1/shards/{hex}0")), None);
        assert_eq!(k.parse_shard(&format!("worlds/w1/shards/{}", &hex[1..])), None);
    }

    #[test]
    fn keys_spell_sequences_and_hashes_as_format_does() {
        let k = Keys::new("worlds/w1");
        for sequence in [0, 1, 0xabc, 0x0123_4567_89ab_cdef, u64::MAX] {
            assert_eq!(k.slot(sequence), format!("worlds/w1/log/{sequence:016x}"));
            assert_eq!(k.checkpoint(sequence), format!("worlds/w1/checkpoints/{sequence:016x}"));
        }
        let h = Hash32::of(b"object");
        let hex: String = h.0.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(h.to_hex(), hex);
        assert_eq!(k.body(&h), format!("worlds/w1/blobs/{hex}"));
    }

    #[test]
    fn segment_keys_sort_by_window_then_part_and_round_trip() {
        let k = Keys::new("worlds/w1");
        let n = SegmentName { bits: 3, label: 5, window: 0x2a, part: 1 };
        assert_eq!(k.segment(&n), "worlds/w1/segments/03-00000005/000000000000002a/0001");
        assert!(k.segment(&n).starts_with(&k.segment_label_prefix(3, 5)));
        assert!(k.segment_label_prefix(3, 5).starts_with(&k.segments_prefix()));
        assert_eq!(k.parse_segment(&k.segment(&n)), Some(n));
        assert!(k.segment(&n) < k.segment(&SegmentName { window: 0x2b, part: 0, ..n }));
        assert!(k.segment(&n) < k.segment(&SegmentName { part: 2, ..n }));
        // Each field at its exact width and case, nothing after the part, no other root.
        assert_eq!(k.parse_segment("worlds/w1/segments/3-00000005/000000000000002a/0001"), None);
        assert_eq!(k.parse_segment("worlds/w1/segments/03-00000005/000000000000002A/0001"), None);
        assert_eq!(k.parse_segment("worlds/w1/segments/03-00000005/000000000000002a/0001/x"), None);
        assert_eq!(k.parse_segment("worlds/w1/segments/0a-00000005/000000000000002a/0001"), None);
        assert_eq!(k.parse_segment("worlds/w2/segments/03-00000005/000000000000002a/0001"), None);
        assert_eq!(k.parse_segment(&k.shard(&Hash32::ZERO)), None);
    }

    #[test]
    fn an_empty_prefix_roots_keys_at_the_top() {
        let k = Keys::new("");
        assert_eq!(k.marker(), "marker");
        assert_eq!(k.checkpoint(1), "checkpoints/0000000000000001");
        assert_eq!(k.body(&Hash32::ZERO), format!("blobs/{}", "0".repeat(64)));
    }
}
