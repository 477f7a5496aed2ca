//! Property tests of the on-bucket formats (SPEC 2 to 6): valid objects round-trip to the
//! same value and the same bytes; damaged objects are refused with an error, never a panic
//! and never another valid object; shape rules are enforced on decode.

use super::frame::{encode_raw, DecodeError, Kind, NameRule, HEADER_LEN, TRAILER_LEN};
use super::rule::ShapeRule;
use super::snapshot_tests::worked_example_slot;
use super::{decode_body, encode_body, Checkpoint, Keys, Marker, Slot, SLOT_MEMBERS_MAX};
use crate::hash::Hash32;
use crate::ids::{OperationId, StoreId, WorldId};
use crate::world::entry::{
    IndexEntry, MemberRule, PruneRange, Receipt, ReceiptKind, SlotMember, VersionKind, VersionRecord,
};
use crate::world::path::Path;
use crate::world::policy::{PolicyRules, BODY_BYTES_LIMIT, READ_ONLY_PREFIXES_MAX, RETENTION_VERSIONS_MAX};
use proptest::prelude::*;
use std::collections::BTreeSet;

pub(super) const CASES: u32 = 256;

// ---------------------------------------------------------------------------------------
// Strategies. Every generated slot satisfies `Slot::decode`'s shape rules by construction.

/// Small, then anywhere up to `max`: exercises one-byte and multi-byte varints.
pub(super) fn spread(max: u64) -> BoxedStrategy<u64> {
    prop_oneof![1..=127u64.min(max), 1..=max].boxed()
}

pub(super) fn hash32() -> BoxedStrategy<Hash32> {
    any::<[u8; 32]>().prop_map(Hash32).boxed()
}

/// A segment that is never `.` or `..`, with some non-ASCII to exercise UTF-8 lengths.
fn segment() -> BoxedStrategy<String> {
    "[a-zA-Z0-9_.~é漢-]{1,12}".prop_filter("dot segment", |s| s != "." && s != "..").boxed()
}

/// A path through `Path::parse`, from segments joined by one or two slashes, with or
/// without a leading and a trailing slash (all normalized away).
pub(super) fn path() -> BoxedStrategy<Path> {
    (prop::collection::vec((segment(), any::<bool>()), 1..5), any::<bool>(), any::<bool>())
        .prop_map(|(segs, lead, trail)| {
            let mut raw = String::new();
            if lead {
                raw.push('/');
            }
            for (i, (s, double)) in segs.iter().enumerate() {
                if i > 0 {
                    raw.push_str(if *double { "//" } else { "/" });
                }
                raw.push_str(s);
            }
            if trail {
                raw.push('/');
            }
            Path::parse(&raw).expect("generated paths are valid")
        })
        .boxed()
}

/// Rules in the shape `PolicyRules::from_body` makes: in range, prefixes sorted, no repeats.
pub(super) fn policy_rules() -> BoxedStrategy<PolicyRules> {
    (
        1..=RETENTION_VERSIONS_MAX,
        prop_oneof![0..=1024u64, 0..=BODY_BYTES_LIMIT],
        prop::collection::vec(path(), 0..6),
    )
        .prop_map(|(retention_versions, body_bytes_max, prefixes)| {
            let set: BTreeSet<Path> = prefixes.into_iter().collect();
            PolicyRules { retention_versions, body_bytes_max, read_only_prefixes: set.into_iter().collect() }
        })
        .boxed()
}

/// Everything about a member except its sequence and operation id, which the slot assigns.
#[derive(Clone, Debug)]
enum MemberSpec {
    Document {
        kind: ReceiptKind,
        path: Path,
        version: u64,
        first_version: u64,
        /// Whether to prune, and where the prune starts (below `first_version`).
        prune_from: Option<u64>,
        body_hash: Hash32,
        body_len: u64,
    },
    Policy {
        version: u64,
        rules: PolicyRules,
    },
}

fn member_spec() -> BoxedStrategy<MemberSpec> {
    let kind = prop_oneof![
        Just(ReceiptKind::Published),
        Just(ReceiptKind::Appended),
        Just(ReceiptKind::Archived),
        Just(ReceiptKind::Unarchived),
    ];
    let document = (
        kind,
        path(),
        spread(u64::MAX / 2),
        any::<u64>(),
        any::<bool>(),
        any::<u64>(),
        hash32(),
        spread(u64::MAX),
    )
        .prop_map(|(kind, path, version, first_pick, prune, prune_pick, body_hash, body_len)| {
            let first_version = 1 + first_pick % version;
            let versioned = matches!(kind, ReceiptKind::Published | ReceiptKind::Appended);
            let prune_from =
                (versioned && prune && first_version > 1).then(|| 1 + prune_pick % (first_version - 1));
            MemberSpec::Document { kind, path, version, first_version, prune_from, body_hash, body_len }
        });
    let policy = (spread(u64::MAX / 2), policy_rules())
        .prop_map(|(version, rules)| MemberSpec::Policy { version, rules });
    prop_oneof![4 => document, 1 => policy].boxed()
}

impl MemberSpec {
    fn member(&self, sequence: u64, op_id: OperationId) -> SlotMember {
        match self.clone() {
            MemberSpec::Policy { version, rules } => SlotMember {
                receipt: Receipt { op_id, sequence, kind: ReceiptKind::PolicySet, path: None, version },
                entry: None,
                version: None,
                prune: None,
                policy: Some(rules),
            },
            MemberSpec::Document { kind, path, version, first_version, prune_from, body_hash, body_len } => {
                let version_kind = match kind {
                    ReceiptKind::Published => Some(VersionKind::Publish),
                    ReceiptKind::Appended => Some(VersionKind::Append),
                    _ => None,
                };
                SlotMember {
                    receipt: Receipt { op_id, sequence, kind, path: Some(path.clone()), version },
                    entry: Some(IndexEntry {
                        path,
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
                    prune: prune_from.map(|first| PruneRange { first, last: first_version - 1 }),
                    policy: None,
                }
            }
        }
    }
}

pub(super) fn world_id() -> BoxedStrategy<WorldId> {
    any::<[u8; 16]>().prop_map(WorldId).boxed()
}

/// A checkpoint of any shape the decoder admits: checkpoint zero of some world and marker
/// (schema 1), or a full one naming a root (schema 2), freshened or not.
pub(super) fn checkpoint() -> BoxedStrategy<Checkpoint> {
    let zero = (world_id(), hash32()).prop_map(|(w, h)| Checkpoint::zero(w, h));
    let full = (
        world_id(),
        2..=u64::MAX,
        hash32(),
        spread(u64::MAX),
        hash32(),
        prop_oneof![Just(0), spread(u64::MAX)],
    )
        .prop_map(|(world_id, next_sequence, previous_hash, document_count, root, stamp)| {
            Checkpoint::full(world_id, next_sequence, previous_hash, document_count, root).with_stamp(stamp)
        });
    prop_oneof![zero, full].boxed()
}

/// A slot of 1 to 8 members: contiguous sequences, distinct operation ids (shuffled, so
/// not always ascending), parts agreeing.
pub(super) fn slot() -> BoxedStrategy<Slot> {
    (1usize..=8)
        .prop_flat_map(|n| {
            (
                world_id(),
                spread(u64::MAX / 2),
                any::<u64>(),
                hash32(),
                prop::collection::vec(member_spec(), n),
                prop::collection::btree_set(any::<u128>(), n)
                    .prop_map(|set| set.into_iter().collect::<Vec<u128>>())
                    .prop_shuffle(),
                prop::collection::vec(super::catalog_tests::catalog_item(), n),
            )
        })
        .prop_map(|(world_id, first_sequence, store, prev_hash, specs, ops, items)| Slot {
            world_id,
            first_sequence,
            store_id: StoreId(store),
            prev_hash,
            members: specs
                .iter()
                .zip(ops)
                .zip(items)
                .enumerate()
                .map(|(i, ((spec, op), (modified_us, catalog)))| {
                    let mut m = spec.member(first_sequence + i as u64, OperationId::from(op));
                    if let Some(e) = m.entry.as_mut() {
                        (e.modified_us, e.catalog) = (modified_us, catalog);
                    }
                    m
                })
                .collect(),
            bodies: Vec::new(),
        })
        .boxed()
}

/// The error a single flipped bit at `index` must give, by the frame region it falls in
/// (SPEC 3: the checks run magic, kind, schema, length, checksum).
pub(super) fn flip_refusal_is_expected(index: usize, error: &DecodeError) -> bool {
    match index {
        0..=3 => *error == DecodeError::Foreign,
        4 => matches!(error, DecodeError::UnknownKind(_) | DecodeError::WrongKind { .. }),
        // A flip to another schema of the kind (a slot's 1 to 3) gets past the schema
        // check and is refused by the checksum.
        5..=6 => matches!(error, DecodeError::UnknownSchema { .. } | DecodeError::Checksum { .. }),
        7..=10 => matches!(error, DecodeError::Length { .. }),
        _ => matches!(error, DecodeError::Checksum { .. }),
    }
}

/// The error a cut to `len` bytes must give: too short for a frame, else a length mismatch.
pub(super) fn truncation_refusal_is_expected(len: usize, error: &DecodeError) -> bool {
    if len < HEADER_LEN + TRAILER_LEN {
        *error == DecodeError::Foreign
    } else {
        let payload = (len - HEADER_LEN - TRAILER_LEN) as u64;
        match error {
            DecodeError::Length { declared, actual } => *actual == payload && declared != actual,
            _ => false,
        }
    }
}

/// Breaks exactly one shape rule of the member; `pick` chooses which rule.
fn break_member(m: &mut SlotMember, pick: u8) {
    if m.receipt.kind == ReceiptKind::PolicySet {
        match pick % 5 {
            0 => m.policy.as_mut().expect("rules").retention_versions = 0,
            1 => m.receipt.path = Some(Path::parse("/x").expect("valid")),
            2 => m.prune = Some(PruneRange { first: 1, last: 1 }),
            3 => m.receipt.version = 0,
            _ => m.policy = None,
        }
        return;
    }
    let versioned = m.version.is_some();
    match pick % 7 {
        0 => m.entry.as_mut().expect("entry").version += 1,
        1 => m.receipt.path = None,
        2 => m.entry = None,
        3 => m.policy = Some(PolicyRules::default()),
        4 => m.entry.as_mut().expect("entry").modified_sequence ^= 1,
        5 => {
            let e = m.entry.as_mut().expect("entry");
            e.archived = !e.archived;
        }
        _ if versioned => m.version = None,
        _ => {
            let e = m.entry.clone().expect("entry");
            m.version = Some(VersionRecord {
                version: e.version,
                sequence: m.receipt.sequence,
                op_id: m.receipt.op_id,
                body_hash: e.body_hash,
                body_len: e.body_len,
                kind: VersionKind::Publish,
            });
        }
    }
}

/// A byte position within an object, and a bit of that byte.
pub(super) fn position() -> BoxedStrategy<(prop::sample::Index, u8)> {
    (any::<prop::sample::Index>(), 0u8..8).boxed()
}

pub(super) fn bytes_up_to(max: usize) -> BoxedStrategy<Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..max).boxed()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn a_valid_slot_round_trips_to_the_same_value_and_bytes(slot in slot()) {
        let bytes = slot.encode();
        let decoded = Slot::decode(&bytes).expect("a valid slot decodes");
        prop_assert_eq!(&decoded, &slot);
        prop_assert_eq!(decoded.encode(), bytes);
    }

    #[test]
    fn a_slot_is_taken_only_under_its_own_name(slot in slot(), other in spread(u64::MAX)) {
        let bytes = slot.encode();
        prop_assert_eq!(Slot::decode_at(slot.first_sequence, &bytes), Ok(slot.clone()));
        if other != slot.first_sequence {
            let misnamed = DecodeError::Misnamed(NameRule::SlotUnderAnotherName { first_sequence: slot.first_sequence });
            prop_assert_eq!(Slot::decode_at(other, &bytes), Err(misnamed));
        }
        let damaged = &bytes[..bytes.len() - 1];
        let refused = Slot::decode_at(slot.first_sequence, damaged);
        prop_assert!(matches!(refused, Err(DecodeError::Length { .. })), "{:?}", refused);
    }

    #[test]
    fn a_flipped_bit_in_a_slot_is_refused(slot in slot(), (pick, bit) in position()) {
        let mut bytes = slot.encode();
        let index = pick.index(bytes.len());
        bytes[index] ^= 1 << bit;
        match Slot::decode(&bytes) {
            Ok(other) => {
                prop_assert!(false, "bit {} of byte {} gave a valid slot {:?}", bit, index, other)
            }
            Err(e) => {
                prop_assert!(flip_refusal_is_expected(index, &e), "byte {}: {:?}", index, e)
            }
        }
    }

    #[test]
    fn a_truncated_or_extended_slot_is_refused(
        slot in slot(),
        cut in any::<prop::sample::Index>(),
        extra in prop::collection::vec(any::<u8>(), 1..8),
    ) {
        let bytes = slot.encode();
        let len = cut.index(bytes.len());
        let error = Slot::decode(&bytes[..len]).expect_err("a cut slot is refused");
        prop_assert!(truncation_refusal_is_expected(len, &error), "cut to {}: {:?}", len, error);
        let mut longer = bytes.clone();
        longer.extend_from_slice(&extra);
        let longer = Slot::decode(&longer);
        prop_assert!(matches!(longer, Err(DecodeError::Length { .. })), "extended: {:?}", longer);
    }

    #[test]
    fn a_slot_breaking_a_shape_rule_is_refused_as_invalid(
        slot in slot(),
        which in any::<prop::sample::Index>(),
        pick in any::<u8>(),
    ) {
        let mut bad = slot.clone();
        let n = bad.members.len();
        match pick % 6 {
            0 => bad.first_sequence = 0,
            1 => bad.members.clear(),
            2 => bad.members[n - 1].receipt.sequence += 1,
            3 if n >= 2 => {
                // Same operation id twice, kept consistent within the member.
                let dup = bad.members[0].receipt.op_id;
                let m = &mut bad.members[n - 1];
                m.receipt.op_id = dup;
                if let Some(v) = m.version.as_mut() {
                    v.op_id = dup;
                }
            }
            _ => break_member(&mut bad.members[which.index(n)], pick / 6),
        }
        prop_assume!(bad != slot);
        // Encoded without `Slot::encode`, whose debug assertion would refuse the shape.
        let decoded = Slot::decode(&bad.encode_unchecked());
        prop_assert!(matches!(decoded, Err(DecodeError::Shape(_))), "{:?}", decoded);
    }

    #[test]
    fn a_damaged_payload_under_a_good_frame_never_panics(
        slot in slot(),
        pick in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        // The checksum is recomputed, so the damage reaches postcard and the shape rules.
        let mut payload = postcard::to_allocvec(&slot).expect("encodes");
        let index = pick.index(payload.len());
        payload[index] = byte;
        if let Ok(decoded) = Slot::decode(&encode_raw(Kind::Slot, &payload)) {
            // Whatever decodes is a valid slot, and round-trips as one.
            prop_assert_eq!(Slot::decode(&decoded.encode()), Ok(decoded));
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic_a_decoder(bytes in bytes_up_to(400), expected in hash32()) {
        let _ = Slot::decode(&bytes);
        let _ = Marker::decode(&bytes);
        let _ = Checkpoint::decode(&bytes);
        let _ = decode_body(&bytes, &expected);
    }

    #[test]
    fn arbitrary_payloads_in_a_good_frame_never_panic_a_decoder(payload in bytes_up_to(400)) {
        let _ = Slot::decode(&encode_raw(Kind::Slot, &payload));
        let _ = Marker::decode(&encode_raw(Kind::Marker, &payload));
        let _ = Checkpoint::decode(&encode_raw(Kind::Checkpoint, &payload));
        let body = encode_raw(Kind::Body, &payload);
        prop_assert_eq!(decode_body(&body, &Hash32::of(&payload)), Ok(payload.clone()));
    }

    #[test]
    fn a_marker_round_trips_and_refuses_damage(
        world_id in world_id(),
        store in any::<u64>(),
        (pick, bit) in position(),
    ) {
        let marker = Marker::new(world_id, StoreId(store));
        let bytes = marker.encode();
        prop_assert_eq!(Marker::decode(&bytes), Ok(marker.clone()));
        prop_assert_eq!(marker.encode(), bytes.clone());
        let mut flipped = bytes.clone();
        let index = pick.index(flipped.len());
        flipped[index] ^= 1 << bit;
        let error = Marker::decode(&flipped).expect_err("a flipped marker is refused");
        prop_assert!(flip_refusal_is_expected(index, &error), "byte {}: {:?}", index, error);
        prop_assert!(Marker::decode(&bytes[..bytes.len() - 1]).is_err());
        // A marker is never taken for a slot or a body.
        let as_slot = Slot::decode(&bytes).map(|_| ());
        let wrong = |expected| Err(DecodeError::WrongKind { expected, found: Kind::Marker });
        prop_assert_eq!(as_slot, wrong(Kind::Slot));
        let as_body = decode_body(&bytes, &Hash32::ZERO).map(|_| ());
        prop_assert_eq!(as_body, wrong(Kind::Body));
    }

    #[test]
    fn a_checkpoint_round_trips_and_refuses_damage(
        checkpoint in checkpoint(),
        (pick, bit) in position(),
        cut in any::<prop::sample::Index>(),
    ) {
        let bytes = checkpoint.encode();
        prop_assert_eq!(Checkpoint::decode(&bytes), Ok(checkpoint.clone()));
        prop_assert_eq!(checkpoint.encode(), bytes.clone());
        let mut flipped = bytes.clone();
        let index = pick.index(flipped.len());
        flipped[index] ^= 1 << bit;
        let error = Checkpoint::decode(&flipped).expect_err("a flipped checkpoint is refused");
        prop_assert!(flip_refusal_is_expected(index, &error), "byte {}: {:?}", index, error);
        let len = cut.index(bytes.len());
        let error = Checkpoint::decode(&bytes[..len]).expect_err("a truncated checkpoint is refused");
        prop_assert!(truncation_refusal_is_expected(len, &error), "cut to {}: {:?}", len, error);
        // A checkpoint is never taken for a marker, a slot or a body, nor they for it.
        let wrong = |expected| Err(DecodeError::WrongKind { expected, found: Kind::Checkpoint });
        prop_assert_eq!(Marker::decode(&bytes).map(|_| ()), wrong(Kind::Marker));
        prop_assert_eq!(Slot::decode(&bytes).map(|_| ()), wrong(Kind::Slot));
        prop_assert_eq!(decode_body(&bytes, &Hash32::ZERO).map(|_| ()), wrong(Kind::Body));
        let marker = Marker::new(checkpoint.world_id, StoreId(1)).encode();
        let not_a_checkpoint = Err(DecodeError::WrongKind { expected: Kind::Checkpoint, found: Kind::Marker });
        prop_assert_eq!(Checkpoint::decode(&marker), not_a_checkpoint);
    }

    #[test]
    fn checkpoint_zero_is_a_function_of_the_world_and_the_marker_hash(
        world_id in world_id(),
        marker_hash in hash32(),
    ) {
        let bytes = Checkpoint::zero(world_id, marker_hash).encode();
        prop_assert_eq!(bytes.len(), HEADER_LEN + 16 + 1 + 32 + 1 + 1 + TRAILER_LEN);
        prop_assert_eq!(&bytes, &Checkpoint::zero(world_id, marker_hash).encode());
        prop_assert!(Checkpoint::decode(&bytes).expect("decodes").is_zero());
    }

    #[test]
    fn checkpoint_keys_round_trip_and_sort_by_next_sequence(
        prefix in "[a-z0-9/]{0,16}",
        a in any::<u64>(),
        b in any::<u64>(),
    ) {
        let keys = Keys::new(&prefix);
        let (ka, kb) = (keys.checkpoint(a), keys.checkpoint(b));
        prop_assert!(ka.starts_with(&keys.checkpoints_prefix()));
        prop_assert_eq!(keys.parse_checkpoint(&ka), Some(a));
        prop_assert_eq!(ka.cmp(&kb), a.cmp(&b), "byte order of keys is sequence order");
        prop_assert_eq!(keys.parse_checkpoint(&keys.slot(a)), None);
        prop_assert_eq!(keys.parse_slot(&ka), None);
        prop_assert_eq!(keys.parse_checkpoint(&keys.marker()), None);
        prop_assert_eq!(keys.parse_checkpoint(&format!("{ka}0")), None);
    }

    #[test]
    fn a_body_round_trips_and_refuses_damage_or_another_name(
        body in bytes_up_to(600),
        other in hash32(),
        (pick, bit) in position(),
    ) {
        let name = Hash32::of(&body);
        let bytes = encode_body(&body);
        prop_assert_eq!(bytes.len(), HEADER_LEN + body.len() + TRAILER_LEN);
        prop_assert_eq!(decode_body(&bytes, &name), Ok(body.clone()));
        if other != name {
            let refused = Err(DecodeError::Misnamed(NameRule::BodyNotItsHash));
            prop_assert_eq!(decode_body(&bytes, &other), refused);
        }
        let mut flipped = bytes.clone();
        let index = pick.index(flipped.len());
        flipped[index] ^= 1 << bit;
        let error = decode_body(&flipped, &name).expect_err("a flipped body is refused");
        prop_assert!(flip_refusal_is_expected(index, &error), "byte {}: {:?}", index, error);
    }

    #[test]
    fn slot_keys_round_trip_and_sort_by_sequence(
        prefix in "[a-z0-9/]{0,16}",
        a in any::<u64>(),
        b in any::<u64>(),
    ) {
        let keys = Keys::new(&prefix);
        prop_assert!(keys.root().is_empty() || keys.root().ends_with('/'));
        let (ka, kb) = (keys.slot(a), keys.slot(b));
        prop_assert!(ka.starts_with(&keys.log_prefix()));
        prop_assert_eq!(ka.len(), keys.log_prefix().len() + 16);
        prop_assert_eq!(keys.parse_slot(&ka), Some(a));
        prop_assert_eq!(keys.parse_slot(&kb), Some(b));
        prop_assert_eq!(ka.cmp(&kb), a.cmp(&b), "byte order of keys is sequence order");
        let upper = format!("{}{:016X}", keys.log_prefix(), a);
        let expected = if upper == ka { Some(a) } else { None };
        prop_assert_eq!(keys.parse_slot(&upper), expected, "hex digits must be lowercase");
        prop_assert_eq!(keys.parse_slot(&keys.marker()), None);
        prop_assert_eq!(keys.parse_slot(&keys.log_prefix()), None);
        prop_assert_eq!(keys.parse_slot(&keys.body(&Hash32::of(&a.to_le_bytes()))), None);
        prop_assert_eq!(keys.parse_slot(&format!("{ka}0")), None);
        prop_assert_eq!(keys.parse_slot(&ka[..ka.len() - 1]), None);
    }

    #[test]
    fn a_slot_under_another_sequence_name_is_noticed_by_the_key_round_trip(
        slot in slot(),
        same in any::<bool>(),
        other in any::<u64>(),
        prefix in "[a-z0-9]{0,8}",
    ) {
        // A slot's bytes do not carry its key. A reader compares the sequence the key names
        // with the slot's first sequence; only a match may be applied under that name.
        let keys = Keys::new(&prefix);
        let stored_under = keys.slot(if same { slot.first_sequence } else { other });
        let decoded = Slot::decode(&slot.encode()).expect("valid");
        let named = keys.parse_slot(&stored_under).expect("a slot key");
        let agrees = named == decoded.first_sequence;
        prop_assert_eq!(agrees, same || other == slot.first_sequence);
        prop_assert_eq!(stored_under == keys.slot(decoded.first_sequence), agrees);
    }
}

// ---------------------------------------------------------------------------------------
// Fixed cases.

#[test]
fn every_single_bit_flip_of_the_worked_example_is_refused() {
    let bytes = worked_example_slot().encode();
    for index in 0..bytes.len() {
        for bit in 0..8 {
            let mut flipped = bytes.clone();
            flipped[index] ^= 1 << bit;
            let error = Slot::decode(&flipped).expect_err("refused");
            assert!(flip_refusal_is_expected(index, &error), "byte {index} bit {bit}: {error:?}");
        }
    }
}

#[test]
fn every_truncation_of_the_worked_example_is_refused() {
    let bytes = worked_example_slot().encode();
    for len in 0..bytes.len() {
        let error = Slot::decode(&bytes[..len]).expect_err("refused");
        assert!(truncation_refusal_is_expected(len, &error), "cut to {len}: {error:?}");
    }
}

/// Members on distinct paths at sequences 1..=n.
pub(super) fn publishes(n: usize) -> Slot {
    let mut slot = worked_example_slot();
    let template = slot.members[0].clone();
    slot.members = (0..n)
        .map(|i| {
            let mut m = template.clone();
            let seq = 1 + i as u64;
            let op = OperationId::from(1000 + i as u128);
            let p = Path::parse(&format!("/d{i}")).expect("valid");
            m.receipt.op_id = op;
            m.receipt.sequence = seq;
            m.receipt.path = Some(p.clone());
            let e = m.entry.as_mut().expect("entry");
            e.path = p;
            e.modified_sequence = seq;
            let v = m.version.as_mut().expect("version");
            v.sequence = seq;
            v.op_id = op;
            m
        })
        .collect();
    slot
}

#[test]
fn a_slot_holds_at_most_256_members() {
    let full = publishes(SLOT_MEMBERS_MAX);
    assert_eq!(Slot::decode(&full.encode()).map(|s| s.members.len()), Ok(SLOT_MEMBERS_MAX));
    let over = publishes(SLOT_MEMBERS_MAX + 1);
    assert_eq!(
        Slot::decode(&over.encode_unchecked()),
        Err(DecodeError::Shape(ShapeRule::SlotTooManyMembers))
    );
}

#[test]
fn policy_rules_must_be_normalized_to_decode() {
    let mut slot = worked_example_slot();
    let op = slot.members[0].receipt.op_id;
    let rules = |prefixes: &[&str]| PolicyRules {
        retention_versions: 3,
        body_bytes_max: 10,
        read_only_prefixes: prefixes.iter().map(|p| Path::parse(p).expect("valid")).collect(),
    };
    slot.members = vec![SlotMember {
        receipt: Receipt { op_id: op, sequence: 1, kind: ReceiptKind::PolicySet, path: None, version: 1 },
        entry: None,
        version: None,
        prune: None,
        policy: Some(rules(&["/a", "/b"])),
    }];
    assert!(Slot::decode(&slot.encode()).is_ok());
    for bad in [
        rules(&["/b", "/a"]),
        rules(&["/a", "/a"]),
        PolicyRules { body_bytes_max: BODY_BYTES_LIMIT + 1, ..rules(&[]) },
    ] {
        slot.members[0].policy = Some(bad);
        assert_eq!(
            Slot::decode(&slot.encode_unchecked()),
            Err(DecodeError::Shape(ShapeRule::Member(MemberRule::PolicyRulesNotNormalized)))
        );
    }
    let many: Vec<String> = (0..=READ_ONLY_PREFIXES_MAX).map(|i| format!("/p{i:03}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    slot.members[0].policy = Some(rules(&many));
    assert_eq!(
        Slot::decode(&slot.encode_unchecked()),
        Err(DecodeError::Shape(ShapeRule::Member(MemberRule::PolicyRulesNotNormalized)))
    );
}

/// The worked example's payload with `edit` applied, in a good frame.
fn reframed(edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let bytes = worked_example_slot().encode();
    let mut payload = bytes[HEADER_LEN..bytes.len() - TRAILER_LEN].to_vec();
    edit(&mut payload);
    encode_raw(Kind::Slot, &payload)
}

/// Offsets in the worked example's payload (SPEC 5.6 lists them from the frame start,
/// 11 bytes earlier).
const RECEIPT_KIND_AT: usize = 0x4f - HEADER_LEN;
const RECEIPT_PATH_AT: usize = 0x52 - HEADER_LEN;
const ARCHIVED_AT: usize = 0x61 - HEADER_LEN;
const PRUNE_TAG_AT: usize = 0xb9 - HEADER_LEN;

#[test]
fn the_worked_example_offsets_are_where_the_spec_says() {
    let payload = postcard::to_allocvec(&worked_example_slot()).expect("encodes");
    assert_eq!(payload[RECEIPT_KIND_AT], 0);
    assert_eq!(&payload[RECEIPT_PATH_AT..RECEIPT_PATH_AT + 5], b"/a.md");
    assert_eq!(payload[ARCHIVED_AT], 0);
    assert_eq!(payload[PRUNE_TAG_AT], 0);
}

#[test]
fn a_payload_that_is_not_a_slot_is_malformed() {
    // An enum discriminant past the last variant (ReceiptKind has 5).
    assert_eq!(Slot::decode(&reframed(|p| p[RECEIPT_KIND_AT] = 5)), Err(DecodeError::Malformed));
    // A bool other than 0 or 1.
    assert_eq!(Slot::decode(&reframed(|p| p[ARCHIVED_AT] = 2)), Err(DecodeError::Malformed));
    // An Option tag other than 0 or 1.
    assert_eq!(Slot::decode(&reframed(|p| p[PRUNE_TAG_AT] = 2)), Err(DecodeError::Malformed));
    // A path that is valid but not normalized ("//.md" normalizes to "/.md").
    assert_eq!(Slot::decode(&reframed(|p| p[RECEIPT_PATH_AT + 1] = b'/')), Err(DecodeError::Malformed));
    // A path that is not UTF-8.
    assert_eq!(Slot::decode(&reframed(|p| p[RECEIPT_PATH_AT + 1] = 0xff)), Err(DecodeError::Malformed));
    // A path with a control character.
    assert_eq!(Slot::decode(&reframed(|p| p[RECEIPT_PATH_AT + 1] = 0x01)), Err(DecodeError::Malformed));
    // The payload ends early.
    assert_eq!(
        Slot::decode(&reframed(|p| {
            p.pop();
        })),
        Err(DecodeError::Malformed)
    );
    // An empty payload.
    assert_eq!(Slot::decode(&encode_raw(Kind::Slot, &[])), Err(DecodeError::Malformed));
}

#[test]
fn bytes_after_the_slot_are_trailing() {
    assert_eq!(
        Slot::decode(&reframed(|p| p.extend_from_slice(&[0, 0]))),
        Err(DecodeError::Trailing { bytes: 2 })
    );
    let m = super::snapshot_tests::marker();
    // Schema 1's payload: the world id and the creator, as a struct of the two encodes.
    let mut marker = postcard::to_allocvec(&(m.world_id, m.created_by)).expect("encodes");
    marker.push(0);
    assert_eq!(Marker::decode(&encode_raw(Kind::Marker, &marker)), Err(DecodeError::Trailing { bytes: 1 }));
}

/// SPEC 5.1: one value has one byte form. Postcard 1.2.0 would read an overlong varint
/// (here `81 00` for 1) as the value, so decoding re-encodes and refuses another form.
#[test]
fn an_overlong_varint_is_refused_as_not_canonical() {
    const FIRST_SEQUENCE_AT: usize = 16; // after the 16-byte world id
    let bytes = reframed(|p| {
        assert_eq!(p[FIRST_SEQUENCE_AT], 1);
        p.splice(FIRST_SEQUENCE_AT..=FIRST_SEQUENCE_AT, [0x81, 0x00]);
    });
    assert_eq!(Slot::decode(&bytes), Err(DecodeError::NotCanonical));
}

/// A varint longer than its type allows is malformed, not wrapped.
#[test]
fn a_varint_past_its_type_is_malformed() {
    // u64 takes at most 10 bytes and the tenth at most 0x01.
    let bytes = reframed(|p| {
        p.splice(16..=16, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]);
    });
    assert_eq!(Slot::decode(&bytes), Err(DecodeError::Malformed));
}

// ---------------------------------------------------------------------------------------
// Crafted objects that once panicked the decoder (found by this suite): each is framed and
// checksummed, no correct writer makes one, and the decoder refuses it.

#[test]
fn a_slot_whose_sequences_pass_u64_max_is_refused_not_a_panic() {
    let mut slot = publishes(2);
    slot.first_sequence = u64::MAX;
    slot.members[0].receipt.sequence = u64::MAX;
    slot.members[0].entry.as_mut().expect("entry").modified_sequence = u64::MAX;
    slot.members[0].version.as_mut().expect("version").sequence = u64::MAX;
    let bytes = slot.encode_unchecked();
    let result = std::panic::catch_unwind(|| Slot::decode(&bytes));
    assert_eq!(result.ok(), Some(Err(DecodeError::Shape(ShapeRule::SlotSequencesOverflow))));
}

#[test]
fn a_prune_range_ending_at_u64_max_is_refused_not_a_panic() {
    let mut slot = worked_example_slot();
    let m = &mut slot.members[0];
    m.receipt.version = 5;
    let e = m.entry.as_mut().expect("entry");
    e.version = 5;
    e.first_version = 5;
    m.version.as_mut().expect("version").version = 5;
    m.prune = Some(PruneRange { first: 1, last: u64::MAX });
    let bytes = slot.encode_unchecked();
    let result = std::panic::catch_unwind(|| Slot::decode(&bytes));
    let refused = DecodeError::Shape(ShapeRule::Member(MemberRule::PruneNotBelowFirstVersion));
    assert_eq!(result.ok(), Some(Err(refused)));
}
