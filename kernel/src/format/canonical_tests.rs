//! The strict reader against the reference it replaced (postcard, then a re-encode compared
//! with the payload): for every object kind, valid objects and damaged ones (bit flips,
//! bytes set, truncations, extensions, insertions, deletions, lengths past the end, overlong
//! varints) get the same answer from every decoder, the same value or the same
//! `DecodeError`; and so does a payload of every serde shape the reader implements.

use super::frame::{
    decode_payload, decode_payload_reference, encode_raw_schema, reference, HEADER_LEN, TRAILER_LEN,
};
use super::hostile_tests::{examples, marker_strategy, mutate, mutation, segment_part};
use super::roundtrip_tests::{bytes_up_to, checkpoint, hash32, path, slot, world_id};
use super::{
    checkpoint_objects_tests, Checkpoint, DecodeError, Delta, HistoryBlock, Marker, ReceiptBlock, Root,
    SegmentPart, Shard, Slot,
};
use crate::hash::Hash32;
use crate::ids::{OperationId, WorldId};
use crate::world::entry::{IndexEntry, PruneRange, Receipt, SlotMember, VersionRecord};
use crate::world::policy::PolicyRules;
use bytes::Bytes;
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

/// Cases per property: each runs every decoder twice on a few byte strings.
const CASES: u32 = 512;

/// What every decoder says of one byte string.
#[derive(Debug, PartialEq)]
struct Verdicts<'a> {
    marker: Result<Marker, DecodeError>,
    slot: Result<(Slot, Vec<Hash32>), DecodeError>,
    slot_unplaced: Result<(Slot, Vec<&'a [u8]>), DecodeError>,
    checkpoint: Result<Checkpoint, DecodeError>,
    root: Result<Root, DecodeError>,
    shard: Result<Shard, DecodeError>,
    history: Result<HistoryBlock, DecodeError>,
    receipts: Result<ReceiptBlock, DecodeError>,
    delta: Result<Delta, DecodeError>,
    segment: Result<SegmentPart, DecodeError>,
}

fn verdicts(bytes: &[u8]) -> Verdicts<'_> {
    Verdicts {
        marker: Marker::decode(bytes),
        slot: Slot::decode_hashed(bytes),
        slot_unplaced: Slot::decode_unplaced(bytes),
        checkpoint: Checkpoint::decode(bytes),
        root: Root::decode(bytes),
        shard: Shard::decode(bytes),
        history: HistoryBlock::decode(bytes),
        receipts: ReceiptBlock::decode(bytes),
        delta: Delta::decode(bytes),
        segment: SegmentPart::decode(bytes),
    }
}

/// Every decoder gives the same answer through the strict reader and the reference.
fn same_verdicts(bytes: &[u8]) -> Result<(), TestCaseError> {
    let strict = verdicts(bytes);
    let referenced = reference::with(|| verdicts(bytes));
    prop_assert_eq!(strict, referenced);
    Ok(())
}

/// `object`'s payload damaged by `damage`, in a good frame of the object's kind and schema.
fn reframed(object: &[u8], damage: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut payload = object[HEADER_LEN..object.len() - TRAILER_LEN].to_vec();
    damage(&mut payload);
    let schema = u16::from_le_bytes([object[5], object[6]]);
    let mut framed = encode_raw_schema(super::Kind::Marker, schema, &payload);
    framed[4] = object[4];
    let end = framed.len() - TRAILER_LEN;
    let crc = crc32c::crc32c(&framed[..end]);
    framed[end..].copy_from_slice(&crc.to_le_bytes());
    framed
}

/// A byte below 0x80 at `at` (a varint's last byte, if one ends there) written with
/// `extra` more bytes: `0x80`s and a closing `0x00`, the same value in an overlong form.
#[derive(Clone, Debug)]
struct Overlong {
    at: prop::sample::Index,
    extra: usize,
}

fn overlong() -> BoxedStrategy<Overlong> {
    (any::<prop::sample::Index>(), 1usize..4).prop_map(|(at, extra)| Overlong { at, extra }).boxed()
}

fn lengthen(bytes: &mut Vec<u8>, o: &Overlong) {
    let ends: Vec<usize> = (0..bytes.len()).filter(|&i| bytes[i] < 0x80).collect();
    if ends.is_empty() {
        return;
    }
    let at = ends[o.at.index(ends.len())];
    let mut longer = vec![bytes[at] | 0x80];
    longer.extend(std::iter::repeat_n(0x80, o.extra - 1));
    longer.push(0);
    bytes.splice(at..at + 1, longer);
}

/// A slot carrying some of its members' new bodies (schema 2, or 4 with a catalog column).
pub(super) fn carrying_slot() -> BoxedStrategy<Slot> {
    (slot(), prop::collection::vec(bytes_up_to(40), 8))
        .prop_map(|(mut slot, bodies)| {
            let mut carried: Vec<Bytes> = Vec::new();
            for (m, body) in slot.members.iter_mut().zip(bodies) {
                let (Some(v), Some(e)) = (m.version.as_mut(), m.entry.as_mut()) else { continue };
                let hash = Hash32::of(&body);
                (v.body_hash, v.body_len) = (hash, body.len() as u64);
                (e.body_hash, e.body_len) = (hash, body.len() as u64);
                if !carried.iter().any(|b| Hash32::of(b) == hash) {
                    carried.push(Bytes::from(body));
                }
            }
            slot.bodies = carried;
            slot
        })
        .boxed()
}

/// A valid object of any kind, as bytes.
fn object() -> BoxedStrategy<Vec<u8>> {
    let delta = checkpoint_objects_tests::shard()
        .prop_filter("a delta holds an entry", |s| !s.entries.is_empty())
        .prop_map(|s| Delta { entries: s.entries, stamp: s.stamp });
    prop_oneof![
        marker_strategy().prop_map(|v| v.encode()),
        slot().prop_map(|v| v.encode()),
        carrying_slot().prop_map(|v| v.encode()),
        checkpoint().prop_map(|v| v.encode()),
        checkpoint_objects_tests::root().prop_map(|v| v.encode()),
        checkpoint_objects_tests::shard().prop_map(|v| v.encode()),
        checkpoint_objects_tests::history_block().prop_map(|v| v.encode()),
        checkpoint_objects_tests::receipt_block().prop_map(|v| v.encode()),
        delta.prop_map(|v| v.encode()),
        segment_part().prop_map(|v| v.encode()),
    ]
    .boxed()
}

// ---------------------------------------------------------------------------------------
// Every serde shape the reader implements, in one payload.

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Shape {
    Unit,
    Newtype(u16),
    Tuple(i32, bool),
    Struct { a: i64, b: Option<char> },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Unit;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Pair(u8, u64);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Everything {
    a: u8,
    b: i8,
    c: u16,
    d: i16,
    e: u32,
    f: i32,
    g: u64,
    h: i64,
    i: u128,
    j: i128,
    k: bool,
    l: Option<u32>,
    m: char,
    n: String,
    o: Vec<u8>,
    #[serde(with = "serde_bytes")]
    p: Vec<u8>,
    q: Vec<Shape>,
    r: (u8, u64),
    s: [u8; 3],
    t: Hash32,
    u: WorldId,
    v: Option<OperationId>,
    w: Box<str>,
    x: (),
    y: Unit,
    z: Pair,
    bytes: Bytes,
}

fn shape() -> BoxedStrategy<Shape> {
    prop_oneof![
        Just(Shape::Unit),
        any::<u16>().prop_map(Shape::Newtype),
        (any::<i32>(), any::<bool>()).prop_map(|(a, b)| Shape::Tuple(a, b)),
        (any::<i64>(), any::<Option<char>>()).prop_map(|(a, b)| Shape::Struct { a, b }),
    ]
    .boxed()
}

fn everything() -> BoxedStrategy<Everything> {
    let numbers = (
        any::<u8>(),
        any::<i8>(),
        any::<u16>(),
        any::<i16>(),
        any::<u32>(),
        any::<i32>(),
        any::<u64>(),
        any::<i64>(),
        any::<u128>(),
        any::<i128>(),
        any::<bool>(),
        any::<Option<u32>>(),
    );
    let rest = (
        any::<char>(),
        ".{0,8}",
        bytes_up_to(8),
        bytes_up_to(8),
        prop::collection::vec(shape(), 0..4),
        any::<(u8, u64)>(),
        any::<[u8; 3]>(),
        hash32(),
        world_id(),
        any::<Option<[u8; 16]>>(),
        ".{0,4}",
        (any::<u8>(), any::<u64>(), bytes_up_to(8)),
    );
    (numbers, rest)
        .prop_map(|((a, b, c, d, e, f, g, h, i, j, k, l), (m, n, o, p, q, r, s, t, u, v, w, z))| Everything {
            a,
            b,
            c,
            d,
            e,
            f,
            g,
            h,
            i,
            j,
            k,
            l,
            m,
            n,
            o,
            p,
            q,
            r,
            s,
            t,
            u,
            v: v.map(OperationId),
            w: w.into(),
            x: (),
            y: Unit,
            z: Pair(z.0, z.1),
            bytes: Bytes::from(z.2),
        })
        .boxed()
}

/// The strict reader and the reference agree on `payload` read as an `Everything`.
fn same_payload_verdict(payload: &[u8]) -> Result<(), TestCaseError> {
    prop_assert_eq!(decode_payload::<Everything>(payload), decode_payload_reference::<Everything>(payload));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn every_decoder_answers_a_damaged_payload_as_the_reference_does(
        object in object(),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        same_verdicts(&object)?;
        same_verdicts(&reframed(&object, |p| mutations.iter().for_each(|m| mutate(p, m))))?;
    }

    #[test]
    fn every_decoder_answers_an_overlong_varint_as_the_reference_does(
        object in object(),
        lengthened in prop::collection::vec(overlong(), 1..3),
        mutations in prop::collection::vec(mutation(), 0..2),
    ) {
        let damaged = reframed(&object, |p| {
            lengthened.iter().for_each(|o| lengthen(p, o));
            mutations.iter().for_each(|m| mutate(p, m));
        });
        same_verdicts(&damaged)?;
    }

    #[test]
    fn every_decoder_answers_a_damaged_frame_as_the_reference_does(
        object in object(),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let mut bytes = object.clone();
        mutations.iter().for_each(|m| mutate(&mut bytes, m));
        same_verdicts(&bytes)?;
    }

    #[test]
    fn every_decoder_answers_random_payloads_as_the_reference_does(
        payload in bytes_up_to(400),
        kind in 1u8..=10,
        schema in 1u16..=4,
    ) {
        let mut framed = encode_raw_schema(super::Kind::Marker, schema, &payload);
        framed[4] = kind;
        same_verdicts(&reframed(&framed, |_| ()))?;
    }

    #[test]
    fn every_serde_shape_reads_as_the_reference_reads_it(
        value in everything(),
        mutations in prop::collection::vec(mutation(), 0..3),
        lengthened in prop::collection::vec(overlong(), 0..3),
    ) {
        let mut payload = postcard::to_allocvec(&value).expect("encodes");
        prop_assert_eq!(decode_payload::<Everything>(&payload), Ok(value));
        lengthened.iter().for_each(|o| lengthen(&mut payload, o));
        same_payload_verdict(&payload)?;
        mutations.iter().for_each(|m| mutate(&mut payload, m));
        same_payload_verdict(&payload)?;
    }

    #[test]
    fn random_bytes_read_as_the_reference_reads_them(payload in bytes_up_to(300)) {
        same_payload_verdict(&payload)?;
    }
}

/// Every cut, every overlong last byte and every length past the end of each worked
/// example gets the reference's answer.
#[test]
fn every_cut_and_overlong_byte_of_each_example_is_answered_as_the_reference_does() {
    for original in examples() {
        let object = original.encode();
        let payload_len = object.len() - HEADER_LEN - TRAILER_LEN;
        let mut damaged: Vec<Vec<u8>> = Vec::new();
        for at in 0..payload_len {
            damaged.push(reframed(&object, |p| p.truncate(at)));
            if object[HEADER_LEN + at] < 0x80 {
                damaged.push(reframed(&object, |p| {
                    let b = p[at];
                    p.splice(at..at + 1, [b | 0x80, 0]);
                }));
            }
            for past in [1, 1 << 20, u64::MAX] {
                damaged.push(reframed(&object, |p| {
                    let after = (p.len() - at - 1) as u64;
                    p.splice(at..at + 1, super::hostile_tests::varint(after.saturating_add(past)));
                }));
            }
        }
        for bytes in &damaged {
            same_verdicts(bytes).unwrap_or_else(|e| panic!("{}: {e}", original.kind()));
        }
    }
}

#[test]
fn overlong_varints_are_not_canonical_and_a_bad_one_is_malformed_first() {
    // 300 in its two bytes, then with a third that adds nothing.
    assert_eq!(decode_payload::<u32>(&[0xac, 0x02]), Ok(300));
    assert_eq!(decode_payload::<u32>(&[0xac, 0x82, 0x00]), Err(DecodeError::NotCanonical));
    // A sixth byte is past a u32's varint: malformed, before any canonical judgement.
    assert_eq!(decode_payload::<u32>(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00]), Err(DecodeError::Malformed));
    // A fifth byte of a u32 holds at most four bits.
    assert_eq!(decode_payload::<u32>(&[0xff, 0xff, 0xff, 0xff, 0x0f]), Ok(u32::MAX));
    assert_eq!(decode_payload::<u32>(&[0xff, 0xff, 0xff, 0xff, 0x1f]), Err(DecodeError::Malformed));
    // Trailing bytes are judged before the form: an overlong value with bytes after it.
    assert_eq!(decode_payload::<u64>(&[0x85, 0x00, 0x01]), Err(DecodeError::Trailing { bytes: 1 }));
    // An overlong length and an overlong enum tag are overlong varints too.
    assert_eq!(decode_payload::<String>(&[0x81, 0x00, b'a']), Err(DecodeError::NotCanonical));
    assert_eq!(decode_payload::<Shape>(&[0x80, 0x00]), Err(DecodeError::NotCanonical));
    assert_eq!(decode_payload::<Shape>(&[0x04]), Err(DecodeError::Malformed));
}

#[test]
fn an_id_and_a_hash_read_as_their_bytes_from_the_reader_and_from_postcard() {
    let value = (WorldId([7; 16]), Hash32::of(b"x"), OperationId([9; 16]));
    let payload = postcard::to_allocvec(&value).expect("encodes");
    assert_eq!(payload.len(), 64, "no lengths: the bytes alone");
    assert_eq!(decode_payload::<(WorldId, Hash32, OperationId)>(&payload), Ok(value));
    assert_eq!(postcard::from_bytes::<(WorldId, Hash32, OperationId)>(&payload).ok(), Some(value));
    assert_eq!(decode_payload::<(WorldId, Hash32)>(&payload[..40]), Err(DecodeError::Malformed));
}

// ---------------------------------------------------------------------------------------
// A slot member's reader against the derived form it replaced.

/// `SlotMember` as serde derives its reading (and writing, which `decode_payload` asks for).
#[derive(Serialize, Deserialize)]
struct DerivedMember {
    receipt: Receipt,
    entry: Option<IndexEntry>,
    version: Option<VersionRecord>,
    prune: Option<PruneRange>,
    policy: Option<PolicyRules>,
}

impl From<DerivedMember> for SlotMember {
    fn from(m: DerivedMember) -> SlotMember {
        SlotMember {
            receipt: m.receipt,
            entry: m.entry,
            version: m.version,
            prune: m.prune,
            policy: m.policy,
        }
    }
}

/// The member reader and the derived form agree on `bytes`, through the strict reader and
/// through postcard.
fn same_member(bytes: &[u8]) -> Result<(), TestCaseError> {
    let derived = decode_payload::<DerivedMember>(bytes).map(SlotMember::from);
    prop_assert_eq!(decode_payload::<SlotMember>(bytes), derived);
    let derived = postcard::from_bytes::<DerivedMember>(bytes).ok().map(SlotMember::from);
    prop_assert_eq!(postcard::from_bytes::<SlotMember>(bytes).ok(), derived);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn a_member_reads_as_its_derived_form(
        slot in slot(),
        other_path in path(),
        elsewhere in any::<bool>(),
        mutations in prop::collection::vec(mutation(), 0..3),
    ) {
        for mut member in slot.members {
            if let Some(e) = member.entry.as_mut() {
                // The time and the record are the catalog column's, not the member's form.
                (e.modified_us, e.catalog) = (0, None);
                if elsewhere {
                    e.path = other_path.clone();
                }
            }
            let mut bytes = postcard::to_allocvec(&member).expect("encodes");
            let read = decode_payload::<SlotMember>(&bytes).expect("reads");
            prop_assert_eq!(&read, &member);
            same_member(&bytes)?;
            mutations.iter().for_each(|m| mutate(&mut bytes, m));
            same_member(&bytes)?;
        }
    }
}
