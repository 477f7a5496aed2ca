//! Byte snapshots of every object kind (SPEC 2 to 6 and 10). Each snapshot is the exact object an
//! encoder writes for fixed values; any change to a byte, to the key scheme or to the slot
//! hash fails here. Such a change breaks every bucket already written, so a failing
//! snapshot means "new schema", never "accept the new bytes".

use super::frame::{Kind, HEADER_LEN, TRAILER_LEN};
use super::segment::verified_bodies;
use super::{
    decode_body, encode_body, shard_bits_for, Checkpoint, Delta, DeltaRef, HistoryBlock, HistoryRef, Keys,
    Marker, MergeRule, ReceiptBlock, ReceiptBlockRef, Root, SegmentBody, SegmentName, SegmentPart, Shard,
    ShardEntry, Slot, StoredReceipt,
};
use crate::hash::Hash32;
use crate::ids::{OperationId, StoreId, WorldId};
use crate::world::entry::{
    IndexEntry, PruneRange, Receipt, ReceiptKind, SlotMember, VersionKind, VersionRecord,
};
use crate::world::path::Path;
use crate::world::policy::{Policy, PolicyRules};
use bytes::Bytes;
use serde::Serialize;
use std::fmt::Write as _;

/// 16 readable bytes: "slotlog-world-01".
pub(super) const WORLD: WorldId = WorldId(*b"slotlog-world-01");

pub(super) fn path(s: &str) -> Path {
    Path::parse(s).expect("a valid path")
}

pub(super) fn op(n: u128) -> OperationId {
    OperationId::from(n)
}

pub(super) fn marker() -> Marker {
    Marker::new(WORLD, StoreId(0x0102_0304_0506_0708))
}

/// A document member (publish, append, archive or unarchive) whose parts agree.
fn document_member(
    kind: ReceiptKind,
    op_id: OperationId,
    sequence: u64,
    at: &str,
    (version, first_version): (u64, u64),
    body: &[u8],
    prune: Option<PruneRange>,
) -> SlotMember {
    let body_hash = Hash32::of(body);
    let body_len = body.len() as u64;
    let version_kind = match kind {
        ReceiptKind::Published => Some(VersionKind::Publish),
        ReceiptKind::Appended => Some(VersionKind::Append),
        _ => None,
    };
    SlotMember {
        receipt: Receipt { op_id, sequence, kind, path: Some(path(at)), version },
        entry: Some(IndexEntry {
            path: path(at),
            version,
            first_version,
            archived: kind == ReceiptKind::Archived,
            body_hash,
            body_len,
            modified_sequence: sequence,
            modified_us: 0,
            catalog: None,
        }),
        version: version_kind.map(|kind| VersionRecord {
            version,
            sequence,
            op_id,
            body_hash,
            body_len,
            kind,
        }),
        prune,
        policy: None,
    }
}

/// One member of each receipt kind, at sequences 300 to 304 (300 takes a two-byte varint).
fn five_kind_slot() -> Slot {
    let prefixes = vec![path("/archive"), path("/locked")];
    let policy = SlotMember {
        receipt: Receipt {
            op_id: op(0x55),
            sequence: 304,
            kind: ReceiptKind::PolicySet,
            path: None,
            version: 2,
        },
        entry: None,
        version: None,
        prune: None,
        policy: Some(PolicyRules {
            retention_versions: 3,
            body_bytes_max: 1 << 20,
            read_only_prefixes: prefixes,
        }),
    };
    Slot {
        world_id: WORLD,
        first_sequence: 300,
        store_id: StoreId(0x0102_0304_0506_0708),
        prev_hash: Hash32::of(b"the previous slot's object bytes"),
        members: vec![
            document_member(
                ReceiptKind::Published,
                op(0x11),
                300,
                "/notes/a.md",
                (5, 3),
                b"hello",
                Some(PruneRange { first: 1, last: 2 }),
            ),
            document_member(ReceiptKind::Appended, op(0x22), 301, "/notes/log.txt", (2, 1), b"ab", None),
            document_member(ReceiptKind::Archived, op(0x33), 302, "/notes/a.md", (5, 3), b"hello", None),
            document_member(ReceiptKind::Unarchived, op(0x44), 303, "/notes/a.md", (5, 3), b"hello", None),
            policy,
        ],
        bodies: Vec::new(),
    }
}

/// The SPEC 5.6 worked example: the first slot of the world of [`marker`], one publish.
pub(super) fn worked_example_slot() -> Slot {
    Slot {
        world_id: WORLD,
        first_sequence: 1,
        store_id: StoreId(7),
        prev_hash: Hash32::of(&marker().encode()),
        members: vec![document_member(ReceiptKind::Published, op(1), 1, "/a.md", (1, 1), b"hi", None)],
        bodies: Vec::new(),
    }
}

/// 32 bytes a line, each line led by its offset, then the length and the BLAKE3 hash.
fn hex_dump(bytes: &[u8]) -> String {
    let mut out = String::new();
    for (i, line) in bytes.chunks(32).enumerate() {
        let hex: Vec<String> = line.iter().map(|b| format!("{b:02x}")).collect();
        writeln!(out, "{:04x}  {}", i * 32, hex.join(" ")).expect("write to a string");
    }
    writeln!(out, "length {}", bytes.len()).expect("write to a string");
    writeln!(out, "blake3 {}", Hash32::of(bytes).to_hex()).expect("write to a string");
    out
}

fn pc<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    postcard::to_allocvec(value).expect("postcard encodes it")
}

/// The worked example split field by field. Each part is encoded on its own; the test
/// checks their concatenation is exactly the object `Slot::encode` writes.
fn worked_example_parts() -> Vec<(String, Vec<u8>)> {
    let slot = worked_example_slot();
    let m = &slot.members[0];
    let r = &m.receipt;
    let e = m.entry.as_ref().expect("a publish has an entry");
    let v = m.version.as_ref().expect("a publish has a version record");
    let path_bytes = |p: &Path| p.as_str().as_bytes().to_vec();
    let payload: Vec<(String, Vec<u8>)> = vec![
        ("slot.world_id ([u8; 16], raw)".into(), pc(&slot.world_id)),
        ("slot.first_sequence (varint) = 1".into(), pc(&slot.first_sequence)),
        ("slot.store_id (varint) = 7".into(), pc(&slot.store_id)),
        ("slot.prev_hash ([u8; 32]) = BLAKE3(marker object)".into(), pc(&slot.prev_hash)),
        ("slot.members length (varint) = 1".into(), pc(&slot.members.len())),
        ("receipt.op_id ([u8; 16])".into(), pc(&r.op_id)),
        ("receipt.sequence (varint) = 1".into(), pc(&r.sequence)),
        ("receipt.kind (varint) = 0 Published".into(), pc(&r.kind)),
        ("receipt.path: Option tag 1 = Some".into(), vec![1]),
        (
            "receipt.path length (varint) = 5".into(),
            pc(&r.path.as_ref().map(|p| p.as_str().len()).unwrap_or(0)),
        ),
        ("receipt.path bytes \"/a.md\"".into(), path_bytes(r.path.as_ref().expect("a path"))),
        ("receipt.version (varint) = 1".into(), pc(&r.version)),
        ("entry: Option tag 1 = Some".into(), vec![1]),
        ("entry.path length (varint) = 5".into(), pc(&e.path.as_str().len())),
        ("entry.path bytes \"/a.md\"".into(), path_bytes(&e.path)),
        ("entry.version (varint) = 1".into(), pc(&e.version)),
        ("entry.first_version (varint) = 1".into(), pc(&e.first_version)),
        ("entry.archived (bool) = false".into(), pc(&e.archived)),
        ("entry.body_hash ([u8; 32]) = BLAKE3(\"hi\")".into(), pc(&e.body_hash)),
        ("entry.body_len (varint) = 2".into(), pc(&e.body_len)),
        ("entry.modified_sequence (varint) = 1".into(), pc(&e.modified_sequence)),
        ("version: Option tag 1 = Some".into(), vec![1]),
        ("version.version (varint) = 1".into(), pc(&v.version)),
        ("version.sequence (varint) = 1".into(), pc(&v.sequence)),
        ("version.op_id ([u8; 16])".into(), pc(&v.op_id)),
        ("version.body_hash ([u8; 32])".into(), pc(&v.body_hash)),
        ("version.body_len (varint) = 2".into(), pc(&v.body_len)),
        ("version.kind (varint) = 0 Publish".into(), pc(&v.kind)),
        ("prune: Option tag 0 = None".into(), pc(&m.prune)),
        ("policy: Option tag 0 = None".into(), pc(&m.policy)),
    ];
    let payload_len: usize = payload.iter().map(|(_, b)| b.len()).sum();
    let mut parts: Vec<(String, Vec<u8>)> = vec![
        ("magic \"slog\"".into(), b"slog".to_vec()),
        ("kind = 2 (slot)".into(), vec![2]),
        ("schema (u16 LE) = 1".into(), 1u16.to_le_bytes().to_vec()),
        (format!("payload length (u32 LE) = {payload_len}"), (payload_len as u32).to_le_bytes().to_vec()),
    ];
    parts.extend(payload);
    let preceding: Vec<u8> = parts.iter().flat_map(|(_, b)| b.clone()).collect();
    parts.push((
        "CRC32C (u32 LE) of bytes 0 to here".into(),
        crc32c::crc32c(&preceding).to_le_bytes().to_vec(),
    ));
    parts
}

/// Offset, up to 16 bytes of hex a line, and the field each part is.
fn annotate(parts: &[(String, Vec<u8>)]) -> String {
    let mut out = String::new();
    let mut offset = 0;
    for (name, bytes) in parts {
        for (i, chunk) in bytes.chunks(16).enumerate() {
            let hex: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
            let label = if i == 0 { name.as_str() } else { "" };
            let line = format!("{:04x}  {:<47}  {label}", offset + i * 16, hex.join(" "));
            writeln!(out, "{}", line.trim_end()).expect("write to a string");
        }
        offset += bytes.len();
    }
    writeln!(out, "total {offset} bytes").expect("write to a string");
    out
}

#[test]
fn marker_bytes() {
    let m = marker();
    let bytes = m.encode();
    assert_eq!(Marker::decode(&bytes), Ok(m));
    insta::assert_snapshot!("marker", hex_dump(&bytes));
}

#[test]
fn marker_with_a_merge_rule_bytes() {
    let rule = MergeRule { delta_entries_per_mille_max: 100, deltas_max: 8 };
    let m = Marker { merge_rule: rule, ..marker() };
    let bytes = m.encode();
    assert_eq!(Marker::decode(&bytes), Ok(m));
    insta::assert_snapshot!("marker_with_rule", hex_dump(&bytes));
}

#[test]
fn slot_with_one_member_of_each_receipt_kind_bytes() {
    let slot = five_kind_slot();
    let bytes = slot.encode();
    assert_eq!(Slot::decode(&bytes).as_ref(), Ok(&slot));
    let kinds: Vec<ReceiptKind> = slot.members.iter().map(|m| m.receipt.kind).collect();
    assert_eq!(
        kinds,
        [
            ReceiptKind::Published,
            ReceiptKind::Appended,
            ReceiptKind::Archived,
            ReceiptKind::Unarchived,
            ReceiptKind::PolicySet
        ]
    );
    insta::assert_snapshot!("slot_five_kinds", hex_dump(&bytes));
}

/// The five-kind slot carrying its two new bodies (schema 2): "hello" for the publish at
/// 300 and "ab" for the append at 301, in that order.
#[test]
fn slot_carrying_bodies_bytes() {
    let mut slot = five_kind_slot();
    slot.bodies = vec![Bytes::from_static(b"hello"), Bytes::from_static(b"ab")];
    let bytes = slot.encode();
    assert_eq!(bytes[5..7], [2, 0], "schema 2");
    assert_eq!(Slot::decode(&bytes).as_ref(), Ok(&slot));
    insta::assert_snapshot!("slot_carrying_bodies", hex_dump(&bytes));
}

#[test]
fn body_blob_bytes() {
    let body = b"hello, slotlog\n";
    let bytes = encode_body(body);
    assert_eq!(decode_body(&bytes, &Hash32::of(body)).as_deref(), Ok(&body[..]));
    assert_eq!(&bytes[HEADER_LEN..bytes.len() - TRAILER_LEN], body, "a body blob's payload is the raw body");
    let key = Keys::new("worlds/w1").body(&Hash32::of(body));
    insta::assert_snapshot!("body_blob", format!("key {key}\n{}", hex_dump(&bytes)));
}

#[test]
fn keys_of_a_world() {
    let mut out = String::new();
    for prefix in ["", "worlds/w1", "worlds/w1/"] {
        let k = Keys::new(prefix);
        writeln!(out, "prefix {prefix:?}").expect("write");
        writeln!(out, "  marker {}", k.marker()).expect("write");
        writeln!(out, "  log    {}", k.log_prefix()).expect("write");
        for seq in [1u64, 300, u64::MAX] {
            writeln!(out, "  slot   {}", k.slot(seq)).expect("write");
        }
        writeln!(out, "  body   {}", k.body(&Hash32::of(b"hi"))).expect("write");
    }
    insta::assert_snapshot!("keys", out);
}

/// Checkpoint zero of the world of [`marker`] split field by field, like the worked example.
fn checkpoint_zero_parts() -> Vec<(String, Vec<u8>)> {
    let c = Checkpoint::zero(WORLD, Hash32::of(&marker().encode()));
    let payload: Vec<(String, Vec<u8>)> = vec![
        ("checkpoint.world_id ([u8; 16], raw)".into(), pc(&c.world_id)),
        ("checkpoint.next_sequence (varint) = 1".into(), pc(&c.next_sequence)),
        ("checkpoint.previous_hash ([u8; 32]) = BLAKE3(marker object)".into(), pc(&c.previous_hash)),
        ("checkpoint.document_count (varint) = 0".into(), pc(&c.document_count)),
        ("checkpoint.shards length (varint) = 0".into(), pc(&0usize)),
    ];
    let payload_len: usize = payload.iter().map(|(_, b)| b.len()).sum();
    let mut parts: Vec<(String, Vec<u8>)> = vec![
        ("magic \"slog\"".into(), b"slog".to_vec()),
        ("kind = 4 (checkpoint)".into(), vec![4]),
        ("schema (u16 LE) = 1".into(), 1u16.to_le_bytes().to_vec()),
        (format!("payload length (u32 LE) = {payload_len}"), (payload_len as u32).to_le_bytes().to_vec()),
    ];
    parts.extend(payload);
    let preceding: Vec<u8> = parts.iter().flat_map(|(_, b)| b.clone()).collect();
    parts.push((
        "CRC32C (u32 LE) of bytes 0 to here".into(),
        crc32c::crc32c(&preceding).to_le_bytes().to_vec(),
    ));
    parts
}

#[test]
fn checkpoint_zero_in_spec() {
    let marker_hash = Hash32::of(&marker().encode());
    let checkpoint = Checkpoint::zero(WORLD, marker_hash);
    let bytes = checkpoint.encode();
    let parts = checkpoint_zero_parts();
    let joined: Vec<u8> = parts.iter().flat_map(|(_, b)| b.clone()).collect();
    assert_eq!(joined, bytes, "the annotation covers every byte in order");
    assert_eq!(Checkpoint::decode(&bytes).as_ref(), Ok(&checkpoint));
    let key = Keys::new("worlds/w1").checkpoint(checkpoint.next_sequence);
    insta::assert_snapshot!(
        "checkpoint_zero",
        format!("key {key}\n{}{}", annotate(&parts), hex_dump(&bytes))
    );
}

#[test]
fn worked_example_in_spec() {
    let slot = worked_example_slot();
    let bytes = slot.encode();
    let parts = worked_example_parts();
    let joined: Vec<u8> = parts.iter().flat_map(|(_, b)| b.clone()).collect();
    assert_eq!(joined, bytes, "the annotation covers every byte in order");
    assert_eq!(Slot::decode(&bytes).as_ref(), Ok(&slot));
    insta::assert_snapshot!(
        "worked_example",
        format!("{}slot hash {}\n", annotate(&parts), Hash32::of(&bytes).to_hex())
    );
}

// ---------------------------------------------------------------------------------------
// Full checkpoints (SPEC 10). The worked example of SPEC 10.10: the world of the SPEC 5.6
// worked example after its slot 1 (one publish of "hi" at /a.md), checkpointed at next
// sequence 2. Each object is split field by field like the slot's worked example.

/// Wraps annotated payload parts in the frame: header before, CRC after.
fn framed(
    kind: Kind,
    kind_label: &str,
    schema: u16,
    payload: Vec<(String, Vec<u8>)>,
) -> Vec<(String, Vec<u8>)> {
    let payload_len: usize = payload.iter().map(|(_, b)| b.len()).sum();
    let mut parts: Vec<(String, Vec<u8>)> = vec![
        ("magic \"slog\"".into(), b"slog".to_vec()),
        (format!("kind = {} ({kind_label})", kind as u8), vec![kind as u8]),
        (format!("schema (u16 LE) = {schema}"), schema.to_le_bytes().to_vec()),
        (format!("payload length (u32 LE) = {payload_len}"), (payload_len as u32).to_le_bytes().to_vec()),
    ];
    parts.extend(payload);
    let preceding: Vec<u8> = parts.iter().flat_map(|(_, b)| b.clone()).collect();
    parts.push((
        "CRC32C (u32 LE) of bytes 0 to here".into(),
        crc32c::crc32c(&preceding).to_le_bytes().to_vec(),
    ));
    parts
}

fn joined(parts: &[(String, Vec<u8>)]) -> Vec<u8> {
    parts.iter().flat_map(|(_, b)| b.clone()).collect()
}

fn path_parts(field: &str, p: &Path) -> Vec<(String, Vec<u8>)> {
    vec![
        (format!("{field} length (varint) = {}", p.as_str().len()), pc(&p.as_str().len())),
        (format!("{field} bytes {:?}", p.as_str()), p.as_str().as_bytes().to_vec()),
    ]
}

/// The worked example's one publish member.
fn example_member() -> SlotMember {
    worked_example_slot().members[0].clone()
}

pub(super) fn example_history() -> HistoryBlock {
    let m = example_member();
    HistoryBlock { path: path("/a.md"), records: vec![m.version.expect("a publish has a version record")] }
}

pub(super) fn example_shard() -> Shard {
    let entry = example_member().entry.expect("a publish has an entry");
    let history = vec![HistoryRef { first_version: 1, block: example_history().content_hash() }];
    Shard { shard_bits: 0, index: 0, entries: vec![ShardEntry { entry, history }], stamp: 0 }
}

pub(super) fn example_receipts() -> ReceiptBlock {
    let receipt = example_member().receipt;
    let request_digest = Hash32::of(b"example request digest of operation 1");
    ReceiptBlock { receipts: vec![StoredReceipt { receipt, request_digest }], stamp: 0 }
}

pub(super) fn example_root() -> Root {
    Root {
        world_id: WORLD,
        next_sequence: 2,
        previous_hash: Hash32::of(&worked_example_slot().encode()),
        document_count: 1,
        policy: Policy::default(),
        shard_bits: shard_bits_for(1),
        shards: vec![example_shard().content_hash()],
        deltas: vec![],
        receipts_from_sequence: 1,
        receipts: vec![ReceiptBlockRef {
            first_sequence: 1,
            last_sequence: 1,
            block: example_receipts().content_hash(),
        }],
        stamp: 0,
    }
}

pub(super) fn example_checkpoint() -> Checkpoint {
    let root = example_root();
    Checkpoint::full(WORLD, 2, root.previous_hash, root.document_count, root.content_hash())
}

fn history_parts(h: &HistoryBlock) -> Vec<(String, Vec<u8>)> {
    let v = &h.records[0];
    let mut payload = path_parts("history.path", &h.path);
    payload.extend(vec![
        ("history.records length (varint) = 1".into(), pc(&h.records.len())),
        ("record.version (varint) = 1".into(), pc(&v.version)),
        ("record.sequence (varint) = 1".into(), pc(&v.sequence)),
        ("record.op_id ([u8; 16])".into(), pc(&v.op_id)),
        ("record.body_hash ([u8; 32]) = BLAKE3(\"hi\")".into(), pc(&v.body_hash)),
        ("record.body_len (varint) = 2".into(), pc(&v.body_len)),
        ("record.kind (varint) = 0 Publish".into(), pc(&v.kind)),
    ]);
    framed(Kind::History, "history block", 1, payload)
}

fn shard_parts(s: &Shard) -> Vec<(String, Vec<u8>)> {
    let e = &s.entries[0].entry;
    let h = &s.entries[0].history[0];
    let mut payload: Vec<(String, Vec<u8>)> = vec![
        ("shard.shard_bits (u8) = 0".into(), pc(&s.shard_bits)),
        ("shard.index (varint) = 0".into(), pc(&s.index)),
        ("shard.entries length (varint) = 1".into(), pc(&s.entries.len())),
    ];
    payload.extend(path_parts("entry.path", &e.path));
    payload.extend(vec![
        ("entry.version (varint) = 1".into(), pc(&e.version)),
        ("entry.first_version (varint) = 1".into(), pc(&e.first_version)),
        ("entry.archived (bool) = false".into(), pc(&e.archived)),
        ("entry.body_hash ([u8; 32]) = BLAKE3(\"hi\")".into(), pc(&e.body_hash)),
        ("entry.body_len (varint) = 2".into(), pc(&e.body_len)),
        ("entry.modified_sequence (varint) = 1".into(), pc(&e.modified_sequence)),
        ("entry.history length (varint) = 1".into(), pc(&s.entries[0].history.len())),
        ("history_ref.first_version (varint) = 1".into(), pc(&h.first_version)),
        ("history_ref.block ([u8; 32]) = the history block's hash".into(), pc(&h.block)),
        ("shard.stamp (varint) = 0".into(), pc(&s.stamp)),
    ]);
    framed(Kind::Shard, "shard", 1, payload)
}

fn receipts_parts(b: &ReceiptBlock) -> Vec<(String, Vec<u8>)> {
    receipts_parts_with(b, "request_digest ([u8; 32]) (an example value)")
}

fn receipts_parts_with(b: &ReceiptBlock, digest_label: &str) -> Vec<(String, Vec<u8>)> {
    let r = &b.receipts[0];
    let mut payload: Vec<(String, Vec<u8>)> = vec![
        ("receipts length (varint) = 1".into(), pc(&b.receipts.len())),
        ("receipt.op_id ([u8; 16])".into(), pc(&r.receipt.op_id)),
        ("receipt.sequence (varint) = 1".into(), pc(&r.receipt.sequence)),
        ("receipt.kind (varint) = 0 Published".into(), pc(&r.receipt.kind)),
        ("receipt.path: Option tag 1 = Some".into(), vec![1]),
    ];
    payload.extend(path_parts("receipt.path", r.receipt.path.as_ref().expect("a path")));
    payload.extend(vec![
        ("receipt.version (varint) = 1".into(), pc(&r.receipt.version)),
        (digest_label.into(), pc(&r.request_digest)),
        ("receipt_block.stamp (varint) = 0".into(), pc(&b.stamp)),
    ]);
    framed(Kind::Receipts, "receipt block", 1, payload)
}

fn root_parts(r: &Root) -> Vec<(String, Vec<u8>)> {
    let rules = &r.policy.rules;
    let reference = &r.receipts[0];
    let payload: Vec<(String, Vec<u8>)> = vec![
        ("root.world_id ([u8; 16], raw)".into(), pc(&r.world_id)),
        ("root.next_sequence (varint) = 2".into(), pc(&r.next_sequence)),
        ("root.previous_hash ([u8; 32]) = BLAKE3(slot 1 object)".into(), pc(&r.previous_hash)),
        ("root.document_count (varint) = 1".into(), pc(&r.document_count)),
        ("policy.version (varint) = 0".into(), pc(&r.policy.version)),
        ("policy.retention_versions (varint u32) = 64".into(), pc(&rules.retention_versions)),
        ("policy.body_bytes_max (varint) = 4194304".into(), pc(&rules.body_bytes_max)),
        ("policy.read_only_prefixes length (varint) = 0".into(), pc(&rules.read_only_prefixes.len())),
        ("root.shard_bits (u8) = 0".into(), pc(&r.shard_bits)),
        ("root.shards length (varint) = 1".into(), pc(&r.shards.len())),
        ("shards[0] ([u8; 32]) = the shard's content hash".into(), pc(&r.shards[0])),
        ("root.receipts_from_sequence (varint) = 1".into(), pc(&r.receipts_from_sequence)),
        ("root.receipts length (varint) = 1".into(), pc(&r.receipts.len())),
        ("receipt_ref.first_sequence (varint) = 1".into(), pc(&reference.first_sequence)),
        ("receipt_ref.last_sequence (varint) = 1".into(), pc(&reference.last_sequence)),
        ("receipt_ref.block ([u8; 32]) = the receipt block's content hash".into(), pc(&reference.block)),
        ("root.stamp (varint) = 0".into(), pc(&r.stamp)),
    ];
    framed(Kind::Root, "root", 1, payload)
}

fn full_checkpoint_parts(c: &Checkpoint) -> Vec<(String, Vec<u8>)> {
    let payload: Vec<(String, Vec<u8>)> = vec![
        ("checkpoint.world_id ([u8; 16], raw)".into(), pc(&c.world_id)),
        ("checkpoint.next_sequence (varint) = 2".into(), pc(&c.next_sequence)),
        ("checkpoint.previous_hash ([u8; 32]) = BLAKE3(slot 1 object)".into(), pc(&c.previous_hash)),
        ("checkpoint.document_count (varint) = 1".into(), pc(&c.document_count)),
        (
            "checkpoint.root ([u8; 32]) = the root's content hash".into(),
            pc(&c.root.expect("a full checkpoint")),
        ),
        (format!("checkpoint.stamp (varint) = {}", c.stamp), pc(&c.stamp)),
    ];
    framed(Kind::Checkpoint, "checkpoint", 2, payload)
}

/// The annotation, the key and the content hash of one object of the worked example.
fn explained(key: &str, parts: &[(String, Vec<u8>)], content_hash: Hash32) -> String {
    format!("key {key}\n{}content hash {}\n", annotate(parts), content_hash.to_hex())
}

#[test]
fn history_block_bytes() {
    let block = example_history();
    let bytes = block.encode();
    let parts = history_parts(&block);
    assert_eq!(joined(&parts), bytes, "the annotation covers every byte in order");
    assert_eq!(HistoryBlock::decode_named(&bytes, &Hash32::of(&bytes)).as_ref(), Ok(&block));
    let key = Keys::new("worlds/w1").history(&block.content_hash());
    insta::assert_snapshot!("history_block", explained(&key, &parts, block.content_hash()));
}

#[test]
fn shard_bytes() {
    let shard = example_shard();
    let bytes = shard.encode();
    let parts = shard_parts(&shard);
    assert_eq!(joined(&parts), bytes, "the annotation covers every byte in order");
    assert_eq!(Shard::decode_named(&bytes, &shard.content_hash()).as_ref(), Ok(&shard));
    let key = Keys::new("worlds/w1").shard(&shard.content_hash());
    insta::assert_snapshot!("shard", explained(&key, &parts, shard.content_hash()));
}

#[test]
fn receipt_block_bytes() {
    let block = example_receipts();
    let bytes = block.encode();
    let parts = receipts_parts(&block);
    assert_eq!(joined(&parts), bytes, "the annotation covers every byte in order");
    assert_eq!(ReceiptBlock::decode_named(&bytes, &block.content_hash()).as_ref(), Ok(&block));
    let key = Keys::new("worlds/w1").receipts(&block.content_hash());
    insta::assert_snapshot!("receipt_block", explained(&key, &parts, block.content_hash()));
}

/// The example member's receipt with the digest its request has (SPEC 10.13): what a
/// checkpoint writes.
#[test]
fn receipt_block_with_its_request_digest_bytes() {
    let member = example_member();
    let digest = crate::world::request_digest::of_member(&member);
    let block = ReceiptBlock {
        receipts: vec![StoredReceipt { receipt: member.receipt, request_digest: digest }],
        stamp: 0,
    };
    let bytes = block.encode();
    let label = "request_digest ([u8; 32]) = BLAKE3 of publish \"/a.md\" and its body hash (SPEC 10.13)";
    let parts = receipts_parts_with(&block, label);
    assert_eq!(joined(&parts), bytes, "the annotation covers every byte in order");
    assert_eq!(ReceiptBlock::decode_named(&bytes, &block.content_hash()).as_ref(), Ok(&block));
    let key = Keys::new("worlds/w1").receipts(&block.content_hash());
    insta::assert_snapshot!(
        "receipt_block_with_request_digest",
        explained(&key, &parts, block.content_hash())
    );
}

/// A block as builds before the digest was defined wrote it: 32 zero bytes, "not
/// recorded". Same schema, so it decodes as it always did; the reuse rule then takes the
/// receipt for the same content (`world::receipts_tests`).
#[test]
fn receipt_blocks_without_digests_still_decode() {
    let receipt = example_member().receipt;
    let block =
        ReceiptBlock { receipts: vec![StoredReceipt { receipt, request_digest: Hash32::ZERO }], stamp: 0 };
    let bytes = block.encode();
    let parts = receipts_parts_with(&block, "request_digest ([u8; 32]) = zero: not recorded");
    assert_eq!(joined(&parts), bytes, "the annotation covers every byte in order");
    assert_eq!(ReceiptBlock::decode_named(&bytes, &block.content_hash()).as_ref(), Ok(&block));
    let key = Keys::new("worlds/w1").receipts(&block.content_hash());
    insta::assert_snapshot!("receipt_block_without_digest", explained(&key, &parts, block.content_hash()));
}

#[test]
fn root_bytes() {
    let root = example_root();
    let bytes = root.encode();
    let parts = root_parts(&root);
    assert_eq!(joined(&parts), bytes, "the annotation covers every byte in order");
    assert_eq!(Root::decode_named(&bytes, &root.content_hash()).as_ref(), Ok(&root));
    let key = Keys::new("worlds/w1").root_object(&root.content_hash());
    insta::assert_snapshot!("root", explained(&key, &parts, root.content_hash()));
}

/// The full checkpoint as first written, then freshened with stamp 1: the bytes differ in
/// the stamp and the CRC only, and the content hash is the same.
#[test]
fn full_checkpoint_bytes_and_a_freshen() {
    let first = example_checkpoint();
    let fresh = example_checkpoint().with_stamp(1);
    let key = Keys::new("worlds/w1").checkpoint(first.next_sequence);
    let mut out = String::new();
    for c in [&first, &fresh] {
        let bytes = c.encode();
        let parts = full_checkpoint_parts(c);
        assert_eq!(joined(&parts), bytes, "the annotation covers every byte in order");
        assert_eq!(Checkpoint::decode(&bytes).as_ref(), Ok(c));
        writeln!(out, "stamp {}", c.stamp).expect("write");
        out.push_str(&explained(&key, &parts, c.content_hash()));
        writeln!(out, "blake3 of these bytes {}", Hash32::of(&bytes).to_hex()).expect("write");
    }
    assert_eq!(first.content_hash(), fresh.content_hash());
    assert_eq!(first.content_hash(), Hash32::of(&first.encode()));
    insta::assert_snapshot!("full_checkpoint", out);
}

// Deltas (SPEC 10.16). The same world laid out as a step over an empty shard would lay
// it out: the shard holds no entry, and one delta holds /a.md's. A root naming a delta is
// schema 2: the deltas follow the shards.

pub(super) fn example_delta() -> Delta {
    Delta { entries: example_shard().entries, stamp: 0 }
}

pub(super) fn example_layered_root() -> Root {
    let empty = Shard { entries: vec![], ..example_shard() };
    Root {
        shards: vec![empty.content_hash()],
        deltas: vec![DeltaRef { entries: 1, block: example_delta().content_hash() }],
        ..example_root()
    }
}

fn delta_parts(d: &Delta) -> Vec<(String, Vec<u8>)> {
    let e = &d.entries[0].entry;
    let h = &d.entries[0].history[0];
    let mut payload: Vec<(String, Vec<u8>)> =
        vec![("delta.entries length (varint) = 1".into(), pc(&d.entries.len()))];
    payload.extend(path_parts("entry.path", &e.path));
    payload.extend(vec![
        ("entry.version (varint) = 1".into(), pc(&e.version)),
        ("entry.first_version (varint) = 1".into(), pc(&e.first_version)),
        ("entry.archived (bool) = false".into(), pc(&e.archived)),
        ("entry.body_hash ([u8; 32]) = BLAKE3(\"hi\")".into(), pc(&e.body_hash)),
        ("entry.body_len (varint) = 2".into(), pc(&e.body_len)),
        ("entry.modified_sequence (varint) = 1".into(), pc(&e.modified_sequence)),
        ("entry.history length (varint) = 1".into(), pc(&d.entries[0].history.len())),
        ("history_ref.first_version (varint) = 1".into(), pc(&h.first_version)),
        ("history_ref.block ([u8; 32]) = the history block's hash".into(), pc(&h.block)),
        ("delta.stamp (varint) = 0".into(), pc(&d.stamp)),
    ]);
    framed(Kind::Delta, "delta", 1, payload)
}

fn layered_root_parts(r: &Root) -> Vec<(String, Vec<u8>)> {
    let rules = &r.policy.rules;
    let reference = &r.receipts[0];
    let delta = &r.deltas[0];
    let payload: Vec<(String, Vec<u8>)> = vec![
        ("root.world_id ([u8; 16], raw)".into(), pc(&r.world_id)),
        ("root.next_sequence (varint) = 2".into(), pc(&r.next_sequence)),
        ("root.previous_hash ([u8; 32]) = BLAKE3(slot 1 object)".into(), pc(&r.previous_hash)),
        ("root.document_count (varint) = 1".into(), pc(&r.document_count)),
        ("policy.version (varint) = 0".into(), pc(&r.policy.version)),
        ("policy.retention_versions (varint u32) = 64".into(), pc(&rules.retention_versions)),
        ("policy.body_bytes_max (varint) = 4194304".into(), pc(&rules.body_bytes_max)),
        ("policy.read_only_prefixes length (varint) = 0".into(), pc(&rules.read_only_prefixes.len())),
        ("root.shard_bits (u8) = 0".into(), pc(&r.shard_bits)),
        ("root.shards length (varint) = 1".into(), pc(&r.shards.len())),
        ("shards[0] ([u8; 32]) = the empty shard's content hash".into(), pc(&r.shards[0])),
        ("root.deltas length (varint) = 1".into(), pc(&r.deltas.len())),
        ("delta_ref.entries (varint u32) = 1".into(), pc(&delta.entries)),
        ("delta_ref.block ([u8; 32]) = the delta's content hash".into(), pc(&delta.block)),
        ("root.receipts_from_sequence (varint) = 1".into(), pc(&r.receipts_from_sequence)),
        ("root.receipts length (varint) = 1".into(), pc(&r.receipts.len())),
        ("receipt_ref.first_sequence (varint) = 1".into(), pc(&reference.first_sequence)),
        ("receipt_ref.last_sequence (varint) = 1".into(), pc(&reference.last_sequence)),
        ("receipt_ref.block ([u8; 32]) = the receipt block's content hash".into(), pc(&reference.block)),
        ("root.stamp (varint) = 0".into(), pc(&r.stamp)),
    ];
    framed(Kind::Root, "root", 2, payload)
}

#[test]
fn delta_bytes() {
    let delta = example_delta();
    let bytes = delta.encode();
    let parts = delta_parts(&delta);
    assert_eq!(joined(&parts), bytes, "the annotation covers every byte in order");
    assert_eq!(Delta::decode_named(&bytes, &delta.content_hash()).as_ref(), Ok(&delta));
    let key = Keys::new("worlds/w1").delta(&delta.content_hash());
    insta::assert_snapshot!("delta", explained(&key, &parts, delta.content_hash()));
}

#[test]
fn root_with_deltas_bytes() {
    let root = example_layered_root();
    let bytes = root.encode();
    let parts = layered_root_parts(&root);
    assert_eq!(joined(&parts), bytes, "the annotation covers every byte in order");
    assert_eq!(Root::decode_named(&bytes, &root.content_hash()).as_ref(), Ok(&root));
    let key = Keys::new("worlds/w1").root_object(&root.content_hash());
    insta::assert_snapshot!("root_with_deltas", explained(&key, &parts, root.content_hash()));
}

#[test]
fn keys_of_checkpoint_objects() {
    let mut out = String::new();
    let h = Hash32::of(b"hi");
    for prefix in ["", "worlds/w1"] {
        let k = Keys::new(prefix);
        writeln!(out, "prefix {prefix:?}").expect("write");
        writeln!(out, "  checkpoints {}", k.checkpoints_prefix()).expect("write");
        for seq in [1u64, 2, 0x2001] {
            writeln!(out, "  checkpoint  {}", k.checkpoint(seq)).expect("write");
        }
        writeln!(out, "  root        {}", k.root_object(&h)).expect("write");
        writeln!(out, "  shard       {}", k.shard(&h)).expect("write");
        writeln!(out, "  history     {}", k.history(&h)).expect("write");
        writeln!(out, "  receipts    {}", k.receipts(&h)).expect("write");
        writeln!(out, "  delta       {}", k.delta(&h)).expect("write");
    }
    insta::assert_snapshot!("keys_of_checkpoint_objects", out);
}

// Body segments (SPEC 10.17). One part of a two-part segment of label 1 of a two-bit
// layout, in window 0x2a, holding the body "hi". A part has no content hash: it is named
// by its label, window and number, and its bodies by their own hashes.

#[test]
fn segment_part_bytes() {
    let part = SegmentPart {
        part: 1,
        parts: 2,
        bodies: vec![SegmentBody { hash: Hash32::of(b"hi"), body: b"hi".to_vec() }],
        words: None,
    };
    let b = &part.bodies[0];
    let payload: Vec<(String, Vec<u8>)> = vec![
        ("segment.part (varint u32) = 1".into(), pc(&part.part)),
        ("segment.parts (varint u32) = 2".into(), pc(&part.parts)),
        ("segment.bodies length (varint) = 1".into(), pc(&part.bodies.len())),
        ("body.hash ([u8; 32]) = BLAKE3(\"hi\")".into(), pc(&b.hash)),
        ("body.body length (varint) = 2".into(), pc(&b.body.len())),
        ("body.body bytes = \"hi\"".into(), b.body.clone()),
    ];
    let parts = framed(Kind::Segment, "segment part", 1, payload);
    let bytes = part.encode();
    assert_eq!(joined(&parts), bytes, "the annotation covers every byte in order");
    let name = SegmentName { bits: 2, label: 1, window: 0x2a, part: 1 };
    assert_eq!(verified_bodies(&bytes, &name), Ok((2, part.bodies.clone())));
    let key = Keys::new("worlds/w1").segment(&name);
    insta::assert_snapshot!("segment_part", format!("key {key}\n{}", annotate(&parts)));
}

// Schema 2: the same kind of part carrying its bodies' words, as the compactor writes it.
// One body, "Hi hi, there": two distinct words, "hi" (0) and "there" (1), and the body's
// three words as their numbers.

#[test]
fn segment_part_with_words_bytes() {
    let body = b"Hi hi, there".to_vec();
    let parts = crate::search::segment_parts([SegmentBody { hash: Hash32::of(&body), body }]).expect("fits");
    let part = &parts[0];
    let b = &part.bodies[0];
    let w = part.words.as_ref().expect("the compactor's parts carry words");
    assert_eq!((w.text.as_str(), &w.lens[..], &w.counts[..]), ("hithere", &[2, 5][..], &[3][..]));
    assert_eq!(w.numbers().collect::<Vec<_>>(), [0, 0, 1]);
    let payload: Vec<(String, Vec<u8>)> = vec![
        ("segment.part (varint u32) = 0".into(), pc(&part.part)),
        ("segment.parts (varint u32) = 1".into(), pc(&part.parts)),
        ("segment.bodies length (varint) = 1".into(), pc(&part.bodies.len())),
        ("body.hash ([u8; 32]) = BLAKE3(\"Hi hi, there\")".into(), pc(&b.hash)),
        ("body.body length (varint) = 12".into(), pc(&b.body.len())),
        ("body.body bytes = \"Hi hi, there\"".into(), b.body.clone()),
        ("words.tokenizer (varint u32) = 1".into(), pc(&w.tokenizer)),
        ("words.text (varint length, UTF-8) = \"hithere\"".into(), pc(&w.text)),
        ("words.lens (varint count, varint u32 each) = [2, 5]".into(), pc(&w.lens)),
        ("words.counts (varint count, varint u32 each) = [3]".into(), pc(&w.counts)),
        (
            "words.words (varint length 6, then the numbers 0, 0, 1 as u16 LE)".into(),
            pc(&serde_bytes::Bytes::new(&w.words)),
        ),
    ];
    let framed_parts = framed(Kind::Segment, "segment part", 2, payload);
    let bytes = part.encode();
    assert_eq!(joined(&framed_parts), bytes, "the annotation covers every byte in order");
    assert_eq!(SegmentPart::decode(&bytes).as_ref(), Ok(part));
    insta::assert_snapshot!("segment_part_with_words", annotate(&framed_parts));
}
