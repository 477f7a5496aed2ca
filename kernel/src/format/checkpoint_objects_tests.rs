//! The objects of a full checkpoint (SPEC 10.5 to 10.9): every kind round-trips to the same
//! value and bytes, a freshen stamp changes the bytes and never the content hash, damage is
//! refused, and one test per shape rule, named after it.

use super::frame::{encode_raw, encode_value, DecodeError, Kind, NameRule};
use super::layout::{history_window, history_window_start, shard_bits_for, shard_count, shard_of};
use super::roundtrip_tests::{
    bytes_up_to, flip_refusal_is_expected, hash32, path, policy_rules, position, spread,
    truncation_refusal_is_expected, world_id, CASES,
};
use super::rule::{HistoryRule, ReceiptBlockRule, RootRule, ShapeRule, ShardRule};
use super::snapshot_tests::{example_history, example_receipts, example_root, example_shard};
use super::{
    HistoryBlock, HistoryRef, ReceiptBlock, ReceiptBlockRef, Root, Shard, ShardEntry, StoredReceipt,
    RECEIPTS_PER_BLOCK_MAX, RECORDS_PER_HISTORY_BLOCK_MAX,
};
use crate::hash::Hash32;
use crate::ids::OperationId;
use crate::world::entry::{IndexEntry, Receipt, ReceiptKind, VersionKind, VersionRecord};
use crate::world::path::Path;
use crate::world::policy::{Policy, PolicyRules};
use proptest::prelude::*;
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------------------
// Strategies. Every generated object satisfies its decoder's shape rules by construction.

fn record(version: u64) -> BoxedStrategy<VersionRecord> {
    (spread(u64::MAX), any::<u128>(), hash32(), spread(1 << 26), any::<bool>())
        .prop_map(move |(sequence, op, body_hash, body_len, append)| VersionRecord {
            version,
            sequence,
            op_id: OperationId::from(op),
            body_hash,
            body_len,
            kind: if append { VersionKind::Append } else { VersionKind::Publish },
        })
        .boxed()
}

/// Up to 256 consecutive versions inside one window, at any window.
pub(super) fn history_block() -> BoxedStrategy<HistoryBlock> {
    (path(), 0..(u64::MAX / 256 - 1), 0..256u64)
        .prop_flat_map(|(path, window, offset)| {
            let first = history_window_start(window) + offset;
            let len = 1..=(256 - offset) as usize;
            (Just(path), Just(first), len)
        })
        .prop_flat_map(|(path, first, len)| {
            let records: Vec<_> = (0..len as u64).map(|i| record(first + i)).collect();
            (Just(path), records)
        })
        .prop_map(|(path, records)| HistoryBlock { path, records })
        .boxed()
}

/// An entry retaining `first_version ..= version` (at most about 1,000 versions) with the
/// history references the shard rules require.
fn shard_entry(path: Path) -> BoxedStrategy<ShardEntry> {
    let catalog = super::catalog_tests::catalog_item();
    (spread(1 << 40), 0..1_000u64, 0..256u64, hash32(), any::<u64>(), spread(u64::MAX), any::<bool>())
        .prop_flat_map(
            move |(first_version, span, back, body_hash, body_len, modified_sequence, archived)| {
                let version = first_version + span;
                let windows = history_window(version) - history_window(first_version) + 1;
                let start = history_window_start(history_window(first_version));
                // The first block may begin anywhere in its window up to the first retained version.
                let first_block = first_version - back.min(first_version - start);
                let entry = IndexEntry {
                    path: path.clone(),
                    version,
                    first_version,
                    archived,
                    body_hash,
                    body_len,
                    modified_sequence,
                    modified_us: 0,
                    catalog: None,
                };
                (Just(entry), Just(first_block), prop::collection::vec(hash32(), windows as usize))
            },
        )
        .prop_map(|(entry, first_block, blocks)| {
            let first_window = history_window(entry.first_version);
            let history = blocks
                .into_iter()
                .enumerate()
                .map(|(i, block)| {
                    let first_version =
                        if i == 0 { first_block } else { history_window_start(first_window + i as u64) };
                    HistoryRef { first_version, block }
                })
                .collect();
            ShardEntry { entry, history }
        })
        .prop_flat_map(move |e| (Just(e), catalog.clone()))
        .prop_map(|(mut e, (modified_us, catalog))| {
            (e.entry.modified_us, e.entry.catalog) = (modified_us, catalog);
            e
        })
        .boxed()
}

/// A shard of a small layout holding the generated paths that fall in it.
pub(super) fn shard() -> BoxedStrategy<Shard> {
    (
        0..=4u8,
        prop::collection::vec(path(), 0..12),
        any::<prop::sample::Index>(),
        spread(u64::MAX),
        any::<bool>(),
    )
        .prop_flat_map(|(shard_bits, paths, pick, stamp, stamped)| {
            let index = pick.index(shard_count(shard_bits) as usize) as u32;
            let mine: BTreeMap<Path, ()> =
                paths.into_iter().filter(|p| shard_of(p, shard_bits) == index).map(|p| (p, ())).collect();
            let entries: Vec<_> = mine.into_keys().map(shard_entry).collect();
            (Just(shard_bits), Just(index), entries, Just(if stamped { stamp } else { 0 }))
        })
        .prop_map(|(shard_bits, index, entries, stamp)| Shard { shard_bits, index, entries, stamp })
        .boxed()
}

/// Receipts of the sequences `first .. first + n`, given distinct operation ids in order.
pub(super) fn receipt_block() -> BoxedStrategy<ReceiptBlock> {
    (spread(u64::MAX - 64), prop::collection::btree_set(any::<u128>(), 1..24), any::<u64>(), any::<bool>())
        .prop_flat_map(|(first, ops, stamp, stamped)| {
            let n = ops.len();
            let sequences = Just((0..n as u64).map(|i| first + i).collect::<Vec<_>>()).prop_shuffle();
            let kinds = prop::collection::vec(0..5u8, n);
            let paths = prop::collection::vec(path(), n);
            let digests = prop::collection::vec(hash32(), n);
            let versions = prop::collection::vec(spread(u64::MAX), n);
            (Just(ops), sequences, kinds, paths, digests, versions, Just(if stamped { stamp } else { 0 }))
        })
        .prop_map(|(ops, sequences, kinds, paths, digests, versions, stamp)| {
            let receipts = ops
                .into_iter()
                .enumerate()
                .map(|(i, op)| {
                    let kind = [
                        ReceiptKind::Published,
                        ReceiptKind::Appended,
                        ReceiptKind::Archived,
                        ReceiptKind::Unarchived,
                        ReceiptKind::PolicySet,
                    ][kinds[i] as usize];
                    let path = (kind != ReceiptKind::PolicySet).then(|| paths[i].clone());
                    let receipt = Receipt {
                        op_id: OperationId::from(op),
                        sequence: sequences[i],
                        kind,
                        path,
                        version: versions[i],
                    };
                    StoredReceipt { receipt, request_digest: digests[i] }
                })
                .collect();
            ReceiptBlock { receipts, stamp }
        })
        .boxed()
}

/// A root of a world of up to 3,000 documents whose receipt window ends at its sequence.
pub(super) fn root() -> BoxedStrategy<Root> {
    (
        world_id(),
        (2..=u64::MAX - 1).prop_flat_map(|next| (Just(next), 0..=(next - 1).min(5_000))),
        hash32(),
        0..=3_000u64,
        (spread(u64::MAX), policy_rules()),
        prop::collection::vec(1..=RECEIPTS_PER_BLOCK_MAX as u64, 0..4),
        any::<u64>(),
    )
        .prop_flat_map(
            |(world_id, (next_sequence, window), previous_hash, document_count, policy, cuts, stamp)| {
                let shard_bits = shard_bits_for(document_count);
                let shards = prop::collection::vec(hash32(), shard_count(shard_bits) as usize);
                // Split the window into blocks: the generated sizes, then whatever is left in
                // blocks of the largest size.
                let from = next_sequence - window;
                let mut refs = Vec::new();
                let mut at = from;
                let mut sizes = cuts.into_iter().chain(std::iter::repeat(RECEIPTS_PER_BLOCK_MAX as u64));
                while at < next_sequence {
                    let size = sizes.next().expect("endless").min(next_sequence - at);
                    refs.push((at, at + size - 1));
                    at += size;
                }
                let blocks = prop::collection::vec(hash32(), refs.len());
                (
                    Just((
                        world_id,
                        next_sequence,
                        previous_hash,
                        document_count,
                        policy,
                        shard_bits,
                        from,
                        stamp,
                    )),
                    shards,
                    Just(refs),
                    blocks,
                )
            },
        )
        .prop_map(|(fixed, shards, refs, blocks)| {
            let (
                world_id,
                next_sequence,
                previous_hash,
                document_count,
                (version, rules),
                shard_bits,
                from,
                stamp,
            ) = fixed;
            let receipts = refs
                .into_iter()
                .zip(blocks)
                .map(|((first_sequence, last_sequence), block)| ReceiptBlockRef {
                    first_sequence,
                    last_sequence,
                    block,
                })
                .collect();
            Root {
                world_id,
                next_sequence,
                previous_hash,
                document_count,
                policy: Policy { version, rules },
                shard_bits,
                shards,
                deltas: vec![],
                receipts_from_sequence: from,
                receipts,
                stamp,
            }
        })
        .boxed()
}

// ---------------------------------------------------------------------------------------
// Round trips, stamps and damage.

/// What every object kind must do: round-trip, refuse a flipped bit and a cut, and keep
/// its content hash across a stamp (`stamped` is the same object with another stamp).
fn behaves<T: PartialEq + std::fmt::Debug>(
    decode: impl Fn(&[u8]) -> Result<T, DecodeError>,
    value: &T,
    bytes: &[u8],
    (pick, bit): (prop::sample::Index, u8),
    cut: prop::sample::Index,
) -> Result<(), TestCaseError> {
    let decoded = decode(bytes);
    prop_assert_eq!(decoded.as_ref(), Ok(value));
    let mut flipped = bytes.to_vec();
    let index = pick.index(flipped.len());
    flipped[index] ^= 1 << bit;
    let error = decode(&flipped).expect_err("a flipped object is refused");
    prop_assert!(flip_refusal_is_expected(index, &error), "byte {}: {:?}", index, error);
    let len = cut.index(bytes.len());
    let error = decode(&bytes[..len]).expect_err("a truncated object is refused");
    prop_assert!(truncation_refusal_is_expected(len, &error), "cut to {}: {:?}", len, error);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn a_history_block_round_trips_and_is_named_by_its_bytes(
        block in history_block(), flip in position(), cut in any::<prop::sample::Index>(),
    ) {
        let bytes = block.encode();
        behaves(HistoryBlock::decode, &block, &bytes, flip, cut)?;
        prop_assert_eq!(block.content_hash(), Hash32::of(&bytes));
        prop_assert_eq!(HistoryBlock::decode_named(&bytes, &Hash32::of(&bytes)), Ok(block.clone()));
        for v in block.records.iter().map(|r| r.version) {
            prop_assert_eq!(block.record(v).map(|r| r.version), Some(v));
        }
    }

    #[test]
    fn a_shard_round_trips_and_a_stamp_keeps_its_content_hash(
        shard in shard(), other in any::<u64>(), flip in position(), cut in any::<prop::sample::Index>(),
    ) {
        let bytes = shard.encode();
        behaves(Shard::decode, &shard, &bytes, flip, cut)?;
        let restamped = shard.clone().with_stamp(other);
        prop_assert_eq!(restamped.content_hash(), shard.content_hash());
        prop_assert_eq!(shard.content_hash(), Hash32::of(&shard.clone().with_stamp(0).encode()));
        if other != shard.stamp {
            prop_assert_ne!(restamped.encode(), bytes.clone());
        }
        prop_assert_eq!(Shard::decode_named(&restamped.encode(), &shard.content_hash()), Ok(restamped));
        for e in &shard.entries {
            let first = e.block_of(e.entry.first_version).expect("the first version's block");
            prop_assert!(first.first_version <= e.entry.first_version);
            let last = e.block_of(e.entry.version).expect("the current version's block");
            prop_assert_eq!(history_window(last.first_version), history_window(e.entry.version));
        }
    }

    #[test]
    fn a_receipt_block_round_trips_and_a_stamp_keeps_its_content_hash(
        block in receipt_block(), other in any::<u64>(), flip in position(), cut in any::<prop::sample::Index>(),
    ) {
        let bytes = block.encode();
        behaves(ReceiptBlock::decode, &block, &bytes, flip, cut)?;
        let restamped = block.clone().with_stamp(other);
        prop_assert_eq!(restamped.content_hash(), block.content_hash());
        if other != block.stamp {
            prop_assert_ne!(restamped.encode(), bytes.clone());
        }
        prop_assert_eq!(ReceiptBlock::decode_named(&restamped.encode(), &block.content_hash()), Ok(restamped));
    }

    #[test]
    fn a_root_round_trips_and_a_stamp_keeps_its_content_hash(
        root in root(), other in any::<u64>(), flip in position(), cut in any::<prop::sample::Index>(),
    ) {
        let bytes = root.encode();
        behaves(Root::decode, &root, &bytes, flip, cut)?;
        let restamped = root.clone().with_stamp(other);
        prop_assert_eq!(restamped.content_hash(), root.content_hash());
        if other != root.stamp {
            prop_assert_ne!(restamped.encode(), bytes.clone());
        }
        prop_assert_eq!(Root::decode_named(&restamped.encode(), &root.content_hash()), Ok(restamped));
    }

    #[test]
    fn arbitrary_payloads_in_a_good_frame_never_panic_a_checkpoint_object_decoder(payload in bytes_up_to(400)) {
        let _ = Root::decode(&encode_raw(Kind::Root, &payload));
        let _ = Shard::decode(&encode_raw(Kind::Shard, &payload));
        let _ = HistoryBlock::decode(&encode_raw(Kind::History, &payload));
        let _ = ReceiptBlock::decode(&encode_raw(Kind::Receipts, &payload));
    }

    #[test]
    fn a_damaged_shard_payload_under_a_good_frame_never_panics(
        shard in shard(), pick in any::<prop::sample::Index>(), byte in any::<u8>(),
    ) {
        let mut payload = postcard::to_allocvec(&shard).expect("encodes");
        let index = pick.index(payload.len());
        payload[index] = byte;
        if let Ok(decoded) = Shard::decode(&encode_raw(Kind::Shard, &payload)) {
            prop_assert_eq!(Shard::decode(&decoded.encode()), Ok(decoded));
        }
    }
}

#[test]
fn one_kind_is_never_read_as_another() {
    let objects = [
        (Kind::Root, example_root().encode()),
        (Kind::Shard, example_shard().encode()),
        (Kind::History, example_history().encode()),
        (Kind::Receipts, example_receipts().encode()),
    ];
    for (found, bytes) in &objects {
        let wrong = |expected| Err(DecodeError::WrongKind { expected, found: *found });
        if *found != Kind::Root {
            assert_eq!(Root::decode(bytes).map(|_| ()), wrong(Kind::Root));
        }
        if *found != Kind::Shard {
            assert_eq!(Shard::decode(bytes).map(|_| ()), wrong(Kind::Shard));
        }
        if *found != Kind::History {
            assert_eq!(HistoryBlock::decode(bytes).map(|_| ()), wrong(Kind::History));
        }
        if *found != Kind::Receipts {
            assert_eq!(ReceiptBlock::decode(bytes).map(|_| ()), wrong(Kind::Receipts));
        }
    }
}

#[test]
fn an_object_under_another_name_is_not_its_name() {
    let name = Hash32::of(b"another object");
    let not = |kind, found| DecodeError::Misnamed(NameRule::NotItsName { kind, name, found });
    let (root, shard, history, receipts) =
        (example_root(), example_shard(), example_history(), example_receipts());
    assert_eq!(Root::decode_named(&root.encode(), &name), Err(not(Kind::Root, root.content_hash())));
    assert_eq!(Shard::decode_named(&shard.encode(), &name), Err(not(Kind::Shard, shard.content_hash())));
    let found = history.content_hash();
    assert_eq!(HistoryBlock::decode_named(&history.encode(), &name), Err(not(Kind::History, found)));
    let found = receipts.content_hash();
    assert_eq!(ReceiptBlock::decode_named(&receipts.encode(), &name), Err(not(Kind::Receipts, found)));
}

#[test]
fn a_first_write_has_stamp_zero_and_its_content_hash_is_the_hash_of_its_bytes() {
    let shard = example_shard();
    assert_eq!(shard.stamp, 0);
    assert_eq!(shard.content_hash(), Hash32::of(&shard.encode()));
    let fresh = shard.clone().with_stamp(300);
    let (a, b) = (shard.encode(), fresh.encode());
    assert_ne!(a, b);
    // Only the stamp (the payload's last varint, here one byte growing to two), the
    // length and the CRC differ.
    assert_eq!(b.len(), a.len() + 1);
    assert_eq!(a[..7], b[..7]);
    assert_eq!(a[11..a.len() - 5], b[11..a.len() - 5]);
    assert_eq!(fresh.content_hash(), shard.content_hash());
}

// ---------------------------------------------------------------------------------------
// Shape rules, one test each. Broken objects are encoded without the encoders, whose debug
// assertions refuse them.

fn root_refused(root: &Root) -> Result<Root, DecodeError> {
    Root::decode(&root.encode_unchecked())
}

fn root_rule(rule: RootRule) -> Result<Root, DecodeError> {
    Err(DecodeError::Shape(ShapeRule::Root(rule)))
}

#[test]
fn root_covers_at_least_one_slot() {
    let root = Root { next_sequence: 1, receipts_from_sequence: 1, receipts: vec![], ..example_root() };
    assert_eq!(root_refused(&root), root_rule(RootRule::CoversNoSlot { next_sequence: 1 }));
}

#[test]
fn root_layout_is_the_one_the_shard_rule_gives_for_its_count() {
    let root = Root { document_count: 300, ..example_root() };
    let rule = RootRule::LayoutNotForCount { document_count: 300, shard_bits: 0, expected: 1 };
    assert_eq!(root_refused(&root), root_rule(rule));
}

#[test]
fn root_names_one_shard_per_index_of_its_layout() {
    let mut root = example_root();
    root.shards.push(Hash32::ZERO);
    assert_eq!(root_refused(&root), root_rule(RootRule::ShardCount { shard_bits: 0, found: 2 }));
    root.shards.clear();
    assert_eq!(root_refused(&root), root_rule(RootRule::ShardCount { shard_bits: 0, found: 0 }));
}

#[test]
fn root_policy_rules_are_normalized() {
    let mut root = example_root();
    root.policy.rules = PolicyRules { retention_versions: 0, ..PolicyRules::default() };
    assert_eq!(root_refused(&root), root_rule(RootRule::PolicyNotNormalized));
}

#[test]
fn root_receipt_window_starts_inside_the_log() {
    for from in [0, 3] {
        let root = Root { receipts_from_sequence: from, ..example_root() };
        let rule = RootRule::ReceiptWindowOutside { receipts_from_sequence: from, next_sequence: 2 };
        assert_eq!(root_refused(&root), root_rule(rule));
    }
}

#[test]
fn root_receipt_ref_holds_one_to_the_block_limit() {
    let mut root = Root { next_sequence: 5_000, ..example_root() };
    root.receipts[0].last_sequence = 0;
    let rule = RootRule::ReceiptRefSize { position: 0, first_sequence: 1, last_sequence: 0 };
    assert_eq!(root_refused(&root), root_rule(rule));
    let last_sequence = RECEIPTS_PER_BLOCK_MAX as u64 + 1;
    root.receipts[0].last_sequence = last_sequence;
    let rule = RootRule::ReceiptRefSize { position: 0, first_sequence: 1, last_sequence };
    assert_eq!(root_refused(&root), root_rule(rule));
}

#[test]
fn root_receipt_refs_are_contiguous_from_the_window_start() {
    let block = Hash32::ZERO;
    let mut root = Root { next_sequence: 11, ..example_root() };
    root.receipts = vec![
        ReceiptBlockRef { first_sequence: 1, last_sequence: 4, block },
        ReceiptBlockRef { first_sequence: 6, last_sequence: 10, block },
    ];
    let rule = RootRule::ReceiptRefsNotContiguous { position: 1, expected: 5, found: 6 };
    assert_eq!(root_refused(&root), root_rule(rule));
    root.receipts_from_sequence = 2;
    let rule = RootRule::ReceiptRefsNotContiguous { position: 0, expected: 2, found: 1 };
    assert_eq!(root_refused(&root), root_rule(rule));
}

#[test]
fn root_receipt_refs_end_at_the_last_covered_sequence() {
    let mut root = Root { next_sequence: 3, ..example_root() };
    assert_eq!(root_refused(&root), root_rule(RootRule::ReceiptRefsEnd { expected: 2, found: 1 }));
    root.next_sequence = 2;
    root.receipts[0].last_sequence = 2;
    assert_eq!(root_refused(&root), root_rule(RootRule::ReceiptRefsEnd { expected: 1, found: 2 }));
    // An empty window holds no block.
    let empty = Root { receipts_from_sequence: 2, receipts: vec![], ..example_root() };
    assert_eq!(Root::decode(&empty.encode()), Ok(empty.clone()));
    let root = Root { receipts_from_sequence: 2, ..example_root() };
    let rule = RootRule::ReceiptRefsNotContiguous { position: 0, expected: 2, found: 1 };
    assert_eq!(root_refused(&root), root_rule(rule));
}

fn shard_refused(shard: &Shard) -> Result<Shard, DecodeError> {
    Shard::decode(&encode_value(Kind::Shard, shard))
}

fn shard_rule(rule: ShardRule) -> Result<Shard, DecodeError> {
    Err(DecodeError::Shape(ShapeRule::Shard(rule)))
}

/// An entry at `at` retaining `first ..= version`, with the references the rules require.
fn entry(at: &str, first: u64, version: u64) -> ShardEntry {
    let path = Path::parse(at).expect("a valid path");
    let windows = history_window(first)..=history_window(version);
    let history = windows
        .enumerate()
        .map(|(i, w)| HistoryRef {
            first_version: if i == 0 { first } else { history_window_start(w) },
            block: Hash32::ZERO,
        })
        .collect();
    let entry = IndexEntry {
        path,
        version,
        first_version: first,
        archived: false,
        body_hash: Hash32::ZERO,
        body_len: 0,
        modified_sequence: 1,
        modified_us: 0,
        catalog: None,
    };
    ShardEntry { entry, history }
}

fn one_entry_shard(e: ShardEntry) -> Shard {
    Shard { shard_bits: 0, index: 0, entries: vec![e], stamp: 0 }
}

#[test]
fn shard_bits_are_at_most_16() {
    let shard = Shard { shard_bits: 17, index: 0, entries: vec![], stamp: 0 };
    assert_eq!(shard_refused(&shard), shard_rule(ShardRule::BitsTooMany { shard_bits: 17 }));
}

#[test]
fn shard_index_is_inside_its_layout() {
    let shard = Shard { shard_bits: 2, index: 4, entries: vec![], stamp: 0 };
    assert_eq!(shard_refused(&shard), shard_rule(ShardRule::IndexOutsideLayout { index: 4, shard_bits: 2 }));
}

#[test]
fn shard_entries_are_sorted_by_path_each_once() {
    let mut shard =
        Shard { shard_bits: 0, index: 0, entries: vec![entry("/b", 1, 1), entry("/a", 1, 1)], stamp: 0 };
    let path = Path::parse("/a").expect("valid");
    assert_eq!(shard_refused(&shard), shard_rule(ShardRule::EntriesNotSorted { path }));
    shard.entries = vec![entry("/a", 1, 1), entry("/a", 1, 1)];
    let path = Path::parse("/a").expect("valid");
    assert_eq!(shard_refused(&shard), shard_rule(ShardRule::EntriesNotSorted { path }));
}

#[test]
fn shard_holds_only_paths_of_its_index() {
    let e = entry("/notes/a.md", 1, 1);
    let theirs = shard_of(&e.entry.path, 1);
    let shard = Shard { shard_bits: 1, index: 1 - theirs, entries: vec![e.clone()], stamp: 0 };
    let rule = ShardRule::PathInOtherShard { path: e.entry.path, shard: theirs };
    assert_eq!(shard_refused(&shard), shard_rule(rule));
}

#[test]
fn shard_entry_versions_are_in_order() {
    for (first, version) in [(0, 1), (1, 0), (3, 2)] {
        let mut e = entry("/a", 1, 1);
        (e.entry.first_version, e.entry.version) = (first, version);
        let rule = ShardRule::EntryVersionsOutOfOrder { path: e.entry.path.clone() };
        assert_eq!(shard_refused(&one_entry_shard(e)), shard_rule(rule));
    }
}

#[test]
fn shard_entry_has_one_history_ref_per_window_of_its_retained_versions() {
    // Versions 200 ..= 600 span windows 0, 1 and 2.
    let mut e = entry("/a", 200, 600);
    assert_eq!(e.history.len(), 3);
    let path = e.entry.path.clone();
    e.history.pop();
    let rule = ShardRule::HistoryRefsCount { path: path.clone(), expected: 3, found: 2 };
    assert_eq!(shard_refused(&one_entry_shard(e.clone())), shard_rule(rule));
    e.history.clear();
    let rule = ShardRule::HistoryRefsCount { path, expected: 3, found: 0 };
    assert_eq!(shard_refused(&one_entry_shard(e)), shard_rule(rule));
}

#[test]
fn shard_history_refs_start_where_their_window_requires() {
    let path = Path::parse("/a").expect("valid");
    let misplaced = |position, first_version| {
        shard_rule(ShardRule::HistoryRefMisplaced { path: path.clone(), position, first_version })
    };
    let good = entry("/a", 200, 600);
    assert_eq!(Shard::decode(&one_entry_shard(good.clone()).encode()), Ok(one_entry_shard(good.clone())));
    // The first block may start earlier in its window (versions pruned since) ...
    let mut e = good.clone();
    e.history[0].first_version = 1;
    assert_eq!(Shard::decode(&one_entry_shard(e.clone()).encode()), Ok(one_entry_shard(e)));
    // ... but not after the first retained version, nor in another window, nor at 0.
    for first_version in [201, 257, 0] {
        let mut e = good.clone();
        e.history[0].first_version = first_version;
        assert_eq!(shard_refused(&one_entry_shard(e)), misplaced(0, first_version));
    }
    // A later block starts at its window's first version.
    let mut e = good;
    e.history[1].first_version = 258;
    assert_eq!(shard_refused(&one_entry_shard(e)), misplaced(1, 258));
}

fn history_refused(block: &HistoryBlock) -> Result<HistoryBlock, DecodeError> {
    HistoryBlock::decode(&encode_value(Kind::History, block))
}

fn history_rule(rule: HistoryRule) -> Result<HistoryBlock, DecodeError> {
    Err(DecodeError::Shape(ShapeRule::History(rule)))
}

/// A block of `versions`, in the order given, of the example's record.
fn block_of(versions: impl IntoIterator<Item = u64>) -> HistoryBlock {
    let template = example_history().records[0].clone();
    let records = versions.into_iter().map(|version| VersionRecord { version, ..template.clone() }).collect();
    HistoryBlock { path: Path::parse("/a.md").expect("valid"), records }
}

#[test]
fn history_block_is_not_empty() {
    assert_eq!(history_refused(&block_of([])), history_rule(HistoryRule::Empty));
}

#[test]
fn history_block_holds_at_most_256_records() {
    let full = block_of(1..=256);
    assert_eq!(full.records.len(), RECORDS_PER_HISTORY_BLOCK_MAX);
    assert_eq!(HistoryBlock::decode(&full.encode()), Ok(full));
    let rule = HistoryRule::TooManyRecords { count: 257 };
    assert_eq!(history_refused(&block_of(1..=257)), history_rule(rule));
}

#[test]
fn history_block_versions_start_at_1() {
    assert_eq!(history_refused(&block_of(0..=3)), history_rule(HistoryRule::VersionZero));
}

#[test]
fn history_block_versions_are_consecutive() {
    let rule = HistoryRule::VersionsNotConsecutive { after: 2, found: 4 };
    assert_eq!(history_refused(&block_of([1, 2, 4])), history_rule(rule));
    let rule = HistoryRule::VersionsNotConsecutive { after: 2, found: 1 };
    assert_eq!(history_refused(&block_of([1, 2, 1])), history_rule(rule));
    let rule = HistoryRule::VersionsNotConsecutive { after: u64::MAX, found: 0 };
    assert_eq!(history_refused(&block_of([u64::MAX, 0])), history_rule(rule));
}

#[test]
fn history_block_stays_in_one_window() {
    let tail = block_of(200..=256);
    assert_eq!(HistoryBlock::decode(&tail.encode()), Ok(tail));
    let rule = HistoryRule::CrossesWindow { first: 200, last: 257 };
    assert_eq!(history_refused(&block_of(200..=257)), history_rule(rule));
}

fn receipts_refused(block: &ReceiptBlock) -> Result<ReceiptBlock, DecodeError> {
    ReceiptBlock::decode(&encode_value(Kind::Receipts, block))
}

fn receipts_rule(rule: ReceiptBlockRule) -> Result<ReceiptBlock, DecodeError> {
    Err(DecodeError::Shape(ShapeRule::Receipts(rule)))
}

/// Publish receipts of `(operation id, sequence)` pairs, in the order given.
fn receipts_of(pairs: impl IntoIterator<Item = (u128, u64)>) -> ReceiptBlock {
    let template = example_receipts().receipts[0].clone();
    let receipts = pairs
        .into_iter()
        .map(|(op, sequence)| StoredReceipt {
            receipt: Receipt { op_id: OperationId::from(op), sequence, ..template.receipt.clone() },
            ..template.clone()
        })
        .collect();
    ReceiptBlock { receipts, stamp: 0 }
}

#[test]
fn receipt_block_is_not_empty() {
    assert_eq!(receipts_refused(&receipts_of([])), receipts_rule(ReceiptBlockRule::Empty));
}

#[test]
fn receipt_block_holds_at_most_the_limit() {
    let n = RECEIPTS_PER_BLOCK_MAX as u64;
    let full = receipts_of((1..=n).map(|i| (i as u128, i)));
    assert_eq!(ReceiptBlock::decode(&full.encode()), Ok(full));
    let rule = ReceiptBlockRule::TooManyReceipts { count: RECEIPTS_PER_BLOCK_MAX + 1 };
    assert_eq!(receipts_refused(&receipts_of((1..=n + 1).map(|i| (i as u128, i)))), receipts_rule(rule));
}

#[test]
fn receipt_block_is_sorted_by_operation_id_each_once() {
    let rule = ReceiptBlockRule::NotSortedByOperation { position: 2 };
    assert_eq!(receipts_refused(&receipts_of([(1, 1), (5, 2), (3, 3)])), receipts_rule(rule.clone()));
    assert_eq!(receipts_refused(&receipts_of([(1, 1), (5, 2), (5, 3)])), receipts_rule(rule));
    // Sorted by operation id, the sequences may come in any order.
    let shuffled = receipts_of([(1, 3), (5, 1), (9, 2)]);
    assert_eq!(ReceiptBlock::decode(&shuffled.encode()), Ok(shuffled.clone()));
    assert_eq!(shuffled.sequences(), Some((1, 3)));
}

#[test]
fn receipt_block_sequences_are_one_contiguous_run() {
    let rule = ReceiptBlockRule::SequencesNotContiguous { after: 2, found: 4 };
    assert_eq!(receipts_refused(&receipts_of([(1, 4), (2, 1), (3, 2)])), receipts_rule(rule));
    let rule = ReceiptBlockRule::SequencesNotContiguous { after: 2, found: 2 };
    assert_eq!(receipts_refused(&receipts_of([(1, 2), (2, 2)])), receipts_rule(rule));
}

#[test]
fn receipt_block_path_matches_kind() {
    let mut block = receipts_of([(1, 1), (2, 2)]);
    block.receipts[1].receipt.path = None;
    let rule = ReceiptBlockRule::PathDoesNotMatchKind { position: 1 };
    assert_eq!(receipts_refused(&block), receipts_rule(rule.clone()));
    block.receipts[1].receipt = Receipt { kind: ReceiptKind::PolicySet, ..block.receipts[0].receipt.clone() };
    block.receipts[1].receipt.op_id = OperationId::from(2);
    block.receipts[1].receipt.sequence = 2;
    assert_eq!(receipts_refused(&block), receipts_rule(rule));
}
