//! The catalog column (SPEC 5.8): which schema each kind is written in, and what a
//! decoder refuses of a column.

use super::catalog::CatalogItem;
use super::frame::{encode_value_schema, DecodeError, Kind};
use super::roundtrip_tests::publishes;
use super::rule::ShapeRule;
use super::shard::{Shard, ShardEntry, SCHEMA_CATALOGED as SHARD_CATALOGED};
use super::slot::{Slot, SCHEMA_MEMBERS, SCHEMA_MEMBERS_CATALOGED, SCHEMA_WITH_BODIES_CATALOGED};
use super::Delta;
use crate::hash::Hash32;
use crate::world::entry::{IndexEntry, SlotMember, CATALOG_RECORD_BYTES_MAX};
use crate::world::Path;
use bytes::Bytes;
use proptest::prelude::*;
use serde::Serialize;

/// A modified time and a record for a generated entry: most have neither, as every entry
/// written before the column existed.
pub(super) fn catalog_item() -> BoxedStrategy<(u64, Option<Box<str>>)> {
    let record = "[a-zA-Zé0-9 :]{1,40}".prop_map(|r: String| Box::<str>::from(r));
    prop_oneof![
        2 => Just((0, None)),
        1 => (any::<u64>(), proptest::option::of(record)),
    ]
    .boxed()
}

/// The slot's payload in schema 3 with `column` as its column, whatever the entries hold.
fn schema_3_with(slot: &Slot, column: Vec<CatalogItem<&str>>) -> Vec<u8> {
    #[derive(Serialize)]
    struct Payload<'a> {
        world_id: crate::ids::WorldId,
        first_sequence: u64,
        store_id: crate::ids::StoreId,
        prev_hash: Hash32,
        members: &'a [SlotMember],
        catalog: Vec<CatalogItem<&'a str>>,
    }
    let payload = Payload {
        world_id: slot.world_id,
        first_sequence: slot.first_sequence,
        store_id: slot.store_id,
        prev_hash: slot.prev_hash,
        members: &slot.members,
        catalog: column,
    };
    encode_value_schema(Kind::Slot, SCHEMA_MEMBERS_CATALOGED, &payload)
}

fn stamped(slot: &mut Slot, i: usize, modified_us: u64, record: Option<&str>) {
    let e: &mut IndexEntry = slot.members[i].entry.as_mut().expect("a publish");
    e.modified_us = modified_us;
    e.catalog = record.map(Into::into);
}

#[test]
fn a_slot_whose_entries_have_no_time_or_record_keeps_the_schema_and_bytes_it_had() {
    let slot = publishes(3);
    let bytes = slot.encode();
    assert_eq!(
        (bytes[5..7].to_vec(), slot.schema()),
        (SCHEMA_MEMBERS.to_le_bytes().to_vec(), SCHEMA_MEMBERS)
    );
}

#[test]
fn a_slot_with_a_time_or_a_record_is_schema_3_and_round_trips_with_them() {
    let mut slot = publishes(3);
    stamped(&mut slot, 1, 1_700_000_000_000_000, None);
    stamped(&mut slot, 2, 1_700_000_000_000_001, Some("draft: Ørn"));
    let bytes = slot.encode();
    assert_eq!(u16::from_le_bytes([bytes[5], bytes[6]]), SCHEMA_MEMBERS_CATALOGED);
    let back = Slot::decode(&bytes).expect("decodes");
    assert_eq!(back, slot);
    assert_eq!(back.members[2].entry.as_ref().and_then(|e| e.catalog.as_deref()), Some("draft: Ørn"));
    assert_eq!(back.encode(), bytes, "one byte form");
}

#[test]
fn a_slot_carrying_bodies_with_a_column_is_schema_4() {
    let mut slot = publishes(1);
    let body = Bytes::from_static(b"one");
    let hash = Hash32::of(&body);
    let m = &mut slot.members[0];
    (m.version.as_mut().expect("a publish").body_hash, m.version.as_mut().expect("a publish").body_len) =
        (hash, 3);
    (m.entry.as_mut().expect("a publish").body_hash, m.entry.as_mut().expect("a publish").body_len) =
        (hash, 3);
    slot.bodies = vec![body];
    stamped(&mut slot, 0, 5, Some("r"));
    let bytes = slot.encode();
    assert_eq!(u16::from_le_bytes([bytes[5], bytes[6]]), SCHEMA_WITH_BODIES_CATALOGED);
    assert_eq!(Slot::decode(&bytes), Ok(slot));
}

#[test]
fn a_column_of_nothing_is_not_the_slot_s_one_form() {
    let slot = publishes(2);
    let empty =
        vec![CatalogItem { modified_us: 0, record: None }, CatalogItem { modified_us: 0, record: None }];
    assert_eq!(Slot::decode(&schema_3_with(&slot, empty)), Err(DecodeError::NotCanonical));
}

#[test]
fn a_column_must_have_one_item_per_entry() {
    let slot = publishes(2);
    let short = vec![CatalogItem { modified_us: 9, record: None }];
    let refused = Err(DecodeError::Shape(ShapeRule::CatalogColumnCount { entries: 2, column: 1 }));
    assert_eq!(Slot::decode(&schema_3_with(&slot, short)), refused);
    let item = || CatalogItem { modified_us: 9, record: None };
    let long = vec![item(), item(), item()];
    let refused = Err(DecodeError::Shape(ShapeRule::CatalogColumnCount { entries: 2, column: 3 }));
    assert_eq!(Slot::decode(&schema_3_with(&slot, long)), refused);
}

#[test]
fn a_record_is_one_to_1024_bytes() {
    let slot = publishes(1);
    let at_most = "x".repeat(CATALOG_RECORD_BYTES_MAX);
    let over = "x".repeat(CATALOG_RECORD_BYTES_MAX + 1);
    fn column(r: &str) -> Vec<CatalogItem<&str>> {
        vec![CatalogItem { modified_us: 1, record: Some(r) }]
    }
    assert!(Slot::decode(&schema_3_with(&slot, column(&at_most))).is_ok());
    let refused = |len| Err(DecodeError::Shape(ShapeRule::CatalogRecordOutOfBounds { len }));
    assert_eq!(Slot::decode(&schema_3_with(&slot, column(&over))), refused(CATALOG_RECORD_BYTES_MAX + 1));
    assert_eq!(Slot::decode(&schema_3_with(&slot, column(""))), refused(0));
}

fn shard_entry(path: &str, modified_us: u64, record: Option<&str>) -> ShardEntry {
    let entry = IndexEntry {
        path: Path::parse(path).expect("valid"),
        version: 1,
        first_version: 1,
        archived: false,
        body_hash: Hash32::ZERO,
        body_len: 0,
        modified_sequence: 1,
        modified_us,
        catalog: record.map(Into::into),
    };
    let history = vec![super::HistoryRef { first_version: 1, block: Hash32::ZERO }];
    ShardEntry { entry, history }
}

#[test]
fn shards_and_deltas_with_a_time_or_record_are_schema_2_and_named_by_those_bytes() {
    let plain = Shard { shard_bits: 0, index: 0, entries: vec![shard_entry("/a", 0, None)], stamp: 0 };
    assert_eq!(plain.schema(), 1);
    let entries = vec![shard_entry("/a", 0, None), shard_entry("/b", 7, Some("final: oak"))];
    let shard = Shard { shard_bits: 0, index: 0, entries: entries.clone(), stamp: 0 };
    let bytes = shard.encode();
    assert_eq!(u16::from_le_bytes([bytes[5], bytes[6]]), SHARD_CATALOGED);
    assert_eq!(Shard::decode_named(&bytes, &Hash32::of(&bytes)), Ok(shard.clone()));
    // A freshened copy keeps its name: the content hash is over the schema it is in.
    let fresh = shard.clone().with_stamp(9).encode();
    assert_eq!(Shard::decode_named(&fresh, &shard.content_hash()), Ok(shard.with_stamp(9)));

    let delta = Delta { entries, stamp: 0 };
    let bytes = delta.encode();
    assert_eq!(delta.schema(), 2);
    assert_eq!(Delta::decode_named(&bytes, &Hash32::of(&bytes)), Ok(delta.clone()));
    let fresh = delta.clone().with_stamp(3).encode();
    assert_eq!(Delta::decode_named(&fresh, &delta.content_hash()), Ok(delta.with_stamp(3)));
}
