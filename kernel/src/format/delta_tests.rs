//! Deltas and the roots that name them (SPEC 10.16): both round-trip to the same value and
//! bytes, a freshen changes a delta's bytes and never its content hash, a root without
//! deltas keeps schema 1's bytes, and one test per shape rule, named after it.

use super::frame::{DecodeError, Kind, NameRule};
use super::root::{SCHEMA_DELTAS, SCHEMA_SHARDS};
use super::rule::{DeltaRule, RootRule, ShapeRule, ShardRule};
use super::snapshot_tests::{example_delta, example_layered_root, example_root, example_shard};
use super::{Delta, DeltaRef, Root, ShardEntry, DELTAS_PER_ROOT_MAX, DELTA_ENTRIES_MAX};
use crate::hash::Hash32;
use crate::world::path::Path;

fn delta_rule(rule: DeltaRule) -> Result<Delta, DecodeError> {
    Err(DecodeError::Shape(ShapeRule::Delta(rule)))
}

fn root_rule(rule: RootRule) -> Result<Root, DecodeError> {
    Err(DecodeError::Shape(ShapeRule::Root(rule)))
}

/// Bytes of a delta that may break its rules (the encoder's debug assertion refuses them).
fn delta_refused(delta: &Delta) -> Result<Delta, DecodeError> {
    Delta::decode(&super::frame::encode_value(Kind::Delta, delta))
}

/// The example entry at another path.
fn entry_at(path: &str) -> ShardEntry {
    let mut e = example_shard().entries[0].clone();
    e.entry.path = Path::parse(path).expect("a valid path");
    e
}

#[test]
fn a_delta_round_trips_and_a_freshen_keeps_its_content_hash() {
    let delta = Delta { entries: vec![entry_at("/a.md"), entry_at("/b.md"), entry_at("/c/d.md")], stamp: 0 };
    let bytes = delta.encode();
    assert_eq!(Delta::decode_named(&bytes, &Hash32::of(&bytes)).as_ref(), Ok(&delta));
    assert_eq!(Delta::decode(&bytes).expect("decodes").encode(), bytes);
    let fresh = delta.clone().with_stamp(7);
    assert_ne!(fresh.encode(), bytes);
    assert_eq!(fresh.content_hash(), delta.content_hash());
    assert_eq!(Delta::decode_named(&fresh.encode(), &delta.content_hash()).as_ref(), Ok(&fresh));
}

#[test]
fn a_delta_read_under_another_name_is_refused() {
    let bytes = example_delta().encode();
    let found = Hash32::of(&bytes);
    let refused = Delta::decode_named(&bytes, &Hash32::ZERO);
    assert_eq!(
        refused,
        Err(DecodeError::Misnamed(NameRule::NotItsName { kind: Kind::Delta, name: Hash32::ZERO, found }))
    );
}

#[test]
fn a_delta_holds_at_least_one_entry() {
    assert_eq!(delta_refused(&Delta { entries: vec![], stamp: 0 }), delta_rule(DeltaRule::Empty));
}

#[test]
fn a_delta_holds_at_most_delta_entries_max() {
    let entries: Vec<ShardEntry> =
        (0..=DELTA_ENTRIES_MAX).map(|i| entry_at(&format!("/d{i:05}.md"))).collect();
    let rule = DeltaRule::TooManyEntries { count: DELTA_ENTRIES_MAX + 1 };
    assert_eq!(delta_refused(&Delta { entries: entries.clone(), stamp: 0 }), delta_rule(rule));
    let full = Delta { entries: entries[..DELTA_ENTRIES_MAX].to_vec(), stamp: 0 };
    assert_eq!(Delta::decode(&full.encode()).as_ref(), Ok(&full));
}

#[test]
fn delta_entries_are_in_strictly_ascending_path_order() {
    let swapped = Delta { entries: vec![entry_at("/b.md"), entry_at("/a.md")], stamp: 0 };
    let rule = DeltaRule::EntriesNotSorted { path: Path::parse("/a.md").expect("valid") };
    assert_eq!(delta_refused(&swapped), delta_rule(rule.clone()));
    let twice = Delta { entries: vec![entry_at("/a.md"), entry_at("/a.md")], stamp: 0 };
    assert_eq!(delta_refused(&twice), delta_rule(rule));
}

#[test]
fn a_delta_entry_keeps_the_rules_of_a_shard_entry() {
    let mut e = entry_at("/a.md");
    e.history.clear();
    let rule = ShardRule::HistoryRefsCount { path: e.entry.path.clone(), expected: 1, found: 0 };
    assert_eq!(delta_refused(&Delta { entries: vec![e], stamp: 0 }), delta_rule(DeltaRule::Entry(rule)));
}

#[test]
fn a_root_naming_deltas_is_schema_2_and_round_trips() {
    let root = example_layered_root();
    let bytes = root.encode();
    assert_eq!(u16::from_le_bytes([bytes[5], bytes[6]]), SCHEMA_DELTAS);
    assert_eq!(Root::decode_named(&bytes, &root.content_hash()).as_ref(), Ok(&root));
    let fresh = root.clone().with_stamp(3);
    assert_eq!(fresh.content_hash(), root.content_hash());
    assert_eq!(Root::decode_named(&fresh.encode(), &root.content_hash()).as_ref(), Ok(&fresh));
}

#[test]
fn a_root_without_deltas_keeps_schema_1_bytes() {
    let root = example_root();
    let bytes = root.encode();
    assert_eq!(u16::from_le_bytes([bytes[5], bytes[6]]), SCHEMA_SHARDS);
    assert_eq!(Root::decode(&bytes).expect("decodes").deltas, vec![]);
}

#[test]
fn a_schema_2_root_names_at_least_one_delta() {
    let bytes = example_root().encode_in(SCHEMA_DELTAS);
    assert_eq!(Root::decode(&bytes), root_rule(RootRule::NoDeltas));
}

#[test]
fn a_root_names_at_most_deltas_per_root_max() {
    let d = example_layered_root().deltas[0];
    let root = Root { deltas: vec![d; DELTAS_PER_ROOT_MAX + 1], ..example_layered_root() };
    let rule = RootRule::TooManyDeltas { count: DELTAS_PER_ROOT_MAX + 1 };
    assert_eq!(Root::decode(&root.encode_unchecked()), root_rule(rule));
}

#[test]
fn a_delta_reference_names_one_to_delta_entries_max_entries() {
    for entries in [0, DELTA_ENTRIES_MAX as u32 + 1] {
        let d = DeltaRef { entries, block: Hash32::ZERO };
        let root = Root { deltas: vec![example_layered_root().deltas[0], d], ..example_layered_root() };
        let rule = RootRule::DeltaRefSize { position: 1, entries };
        assert_eq!(Root::decode(&root.encode_unchecked()), root_rule(rule));
    }
}
