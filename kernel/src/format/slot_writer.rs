//! A slot's payload written by hand: byte for byte what postcard writes for the slot's
//! serde form (SPEC 5), without serde's walk. Every write encodes its slot once, and that
//! walk, twice (a size pass, then the bytes), pushing ids and hashes a byte at a time, was
//! most of the cost of a commit's encoding. `slot_writer_tests` holds it to postcard.

use crate::hash::Hash32;
use crate::world::entry::{
    IndexEntry, PruneRange, Receipt, ReceiptKind, SlotMember, VersionKind, VersionRecord,
};
use crate::world::path::Path;
use crate::world::policy::PolicyRules;
use bytes::Bytes;

/// At most the bytes of a member's fixed part (its ids, hashes, tags and varints; paths,
/// records and rules apart): receipt 16 + 10 + 1 + 1 + 10 + 10, entry 1 + 10 + 10 + 1 +
/// 32 + 10 + 10 + 10, version 1 + 10 + 10 + 16 + 32 + 10 + 1, prune 1 + 20, policy 1 + 5
/// + 10 + 10, and slack.
const MEMBER_FIXED_BYTES_MAX: usize = 320;

/// Appends `value` as a postcard varint (LEB128).
#[inline]
pub(super) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// A length, as postcard writes a `usize`.
#[inline]
fn put_len(out: &mut Vec<u8>, len: usize) {
    put_varint(out, len as u64);
}

/// A string or a byte string: its length, then its bytes.
#[inline]
fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_len(out, bytes.len());
    out.extend_from_slice(bytes);
}

/// An option as postcard writes it: its tag, then the value when there is one.
#[inline]
fn put_option<T: ?Sized>(out: &mut Vec<u8>, value: Option<&T>, put: impl FnOnce(&mut Vec<u8>, &T)) {
    out.push(u8::from(value.is_some()));
    if let Some(v) = value {
        put(out, v);
    }
}

fn put_path(out: &mut Vec<u8>, path: &Path) {
    put_bytes(out, path.as_str().as_bytes());
}

fn put_hash(out: &mut Vec<u8>, hash: &Hash32) {
    out.extend_from_slice(&hash.0);
}

/// An enum's variant, as postcard writes it: its index as a varint (one byte for these).
fn receipt_kind_index(kind: ReceiptKind) -> u8 {
    match kind {
        ReceiptKind::Published => 0,
        ReceiptKind::Appended => 1,
        ReceiptKind::Archived => 2,
        ReceiptKind::Unarchived => 3,
        ReceiptKind::PolicySet => 4,
    }
}

fn version_kind_index(kind: VersionKind) -> u8 {
    match kind {
        VersionKind::Publish => 0,
        VersionKind::Append => 1,
    }
}

fn put_receipt(out: &mut Vec<u8>, r: &Receipt) {
    out.extend_from_slice(&r.op_id.0);
    put_varint(out, r.sequence);
    out.push(receipt_kind_index(r.kind));
    put_option(out, r.path.as_ref(), put_path);
    put_varint(out, r.version);
}

/// The entry's serde form: its time and record go in the catalog column, not here.
fn put_entry(out: &mut Vec<u8>, e: &IndexEntry) {
    put_path(out, &e.path);
    put_varint(out, e.version);
    put_varint(out, e.first_version);
    out.push(u8::from(e.archived));
    put_hash(out, &e.body_hash);
    put_varint(out, e.body_len);
    put_varint(out, e.modified_sequence);
}

fn put_version(out: &mut Vec<u8>, v: &VersionRecord) {
    put_varint(out, v.version);
    put_varint(out, v.sequence);
    out.extend_from_slice(&v.op_id.0);
    put_hash(out, &v.body_hash);
    put_varint(out, v.body_len);
    out.push(version_kind_index(v.kind));
}

fn put_prune(out: &mut Vec<u8>, p: &PruneRange) {
    put_varint(out, p.first);
    put_varint(out, p.last);
}

fn put_rules(out: &mut Vec<u8>, rules: &PolicyRules) {
    put_varint(out, u64::from(rules.retention_versions));
    put_varint(out, rules.body_bytes_max);
    put_len(out, rules.read_only_prefixes.len());
    for prefix in &rules.read_only_prefixes {
        put_path(out, prefix);
    }
}

fn put_member(out: &mut Vec<u8>, m: &SlotMember) {
    put_receipt(out, &m.receipt);
    put_option(out, m.entry.as_ref(), put_entry);
    put_option(out, m.version.as_ref(), put_version);
    put_option(out, m.prune.as_ref(), put_prune);
    put_option(out, m.policy.as_ref(), put_rules);
}

/// At most the bytes [`put_member`] writes for `m`.
fn member_bytes_max(m: &SlotMember) -> usize {
    let path = |p: &Path| 10 + p.as_str().len();
    MEMBER_FIXED_BYTES_MAX
        + m.receipt.path.as_ref().map_or(0, path)
        + m.entry.as_ref().map_or(0, |e| path(&e.path))
        + m.policy.as_ref().map_or(0, |r| r.read_only_prefixes.iter().map(path).sum())
}

/// What a slot's payload holds, borrowed: the fields of its serde form in order, with
/// the carried bodies (schemas 2 and 4) and the catalog column (3 and 4) when it has them.
pub(super) struct SlotPayload<'a> {
    pub(super) world_id: &'a [u8; 16],
    pub(super) first_sequence: u64,
    pub(super) store_id: u64,
    pub(super) prev_hash: &'a Hash32,
    pub(super) members: &'a [SlotMember],
    pub(super) bodies: Option<&'a [Bytes]>,
    pub(super) column: Option<&'a [super::catalog::CatalogItem<&'a str>]>,
}

impl SlotPayload<'_> {
    /// At most the bytes [`SlotPayload::write`] appends.
    pub(super) fn bytes_max(&self) -> usize {
        let members: usize = self.members.iter().map(member_bytes_max).sum();
        let bodies: usize = self.bodies.unwrap_or_default().iter().map(|b| 10 + b.len()).sum();
        let column: usize =
            self.column.unwrap_or_default().iter().map(|c| 21 + c.record.map_or(0, str::len)).sum();
        16 + 10 + 10 + 32 + 3 * 10 + members + bodies + column
    }

    /// Appends the payload's bytes.
    pub(super) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.world_id);
        put_varint(out, self.first_sequence);
        put_varint(out, self.store_id);
        put_hash(out, self.prev_hash);
        put_len(out, self.members.len());
        for m in self.members {
            put_member(out, m);
        }
        if let Some(bodies) = self.bodies {
            put_len(out, bodies.len());
            for body in bodies {
                put_bytes(out, body);
            }
        }
        if let Some(column) = self.column {
            put_len(out, column.len());
            for item in column {
                put_varint(out, item.modified_us);
                put_option(out, item.record, |out, record: &str| put_bytes(out, record.as_bytes()));
            }
        }
    }
}
