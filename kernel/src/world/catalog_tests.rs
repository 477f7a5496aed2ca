//! Each document's modified time and catalog record (SPEC 1.3): what a publish, an append
//! and an archive flip make of them, and what the reuse rule reads of a record.

use super::entry::CATALOG_RECORD_BYTES_MAX;
use super::evaluate::{evaluate, validate, Evaluation};
use super::mutation::{Expected, Mutation};
use super::{IndexEntry, Invalid, Rejection, StateView, WorldState};
use crate::format::Slot;
use crate::hash::Hash32;
use crate::ids::{OperationId, StoreId, WorldId};
use bytes::Bytes;
use std::collections::BTreeMap;

const WORLD: WorldId = WorldId([9; 16]);

fn publish(path: &str, body: &'static [u8], record: Option<&str>) -> Mutation {
    let catalog = record.map(str::to_string);
    Mutation::Publish { path: path.into(), body: body.into(), catalog, expected: Expected::Any }
}

fn append(path: &str, bytes: &'static [u8]) -> Mutation {
    Mutation::Append { path: path.into(), bytes: bytes.into(), expected: Expected::Any }
}

fn archive(path: &str) -> Mutation {
    Mutation::SetArchived { path: path.into(), archived: true, expected: Expected::Any }
}

/// A world and the bodies its documents have, for appends to read.
struct World {
    state: WorldState,
    bodies: BTreeMap<Hash32, Bytes>,
}

fn judge(w: &World, op: u128, m: &Mutation, store_us: u64) -> Evaluation {
    let body_of = |h: &Hash32| w.bodies.get(h).cloned();
    evaluate(&w.state, OperationId::from(op), &validate(m).expect("a valid mutation"), store_us, &body_of)
}

/// Commits `m` in a slot of its own at store time `store_us`; returns the entry it made.
fn commit(w: &mut World, op: u128, m: &Mutation, store_us: u64) -> IndexEntry {
    let Evaluation::Applied { member, body } = judge(w, op, m, store_us) else { panic!("{m:?} applies") };
    if let Some(body) = body {
        w.bodies.insert(Hash32::of(&body), body);
    }
    let slot = Slot {
        world_id: WORLD,
        first_sequence: w.state.next_sequence(),
        store_id: StoreId(1),
        prev_hash: w.state.tip_hash(),
        members: vec![member.clone()],
        bodies: Vec::new(),
    };
    let bytes = slot.encode();
    let decoded = Slot::decode(&bytes).expect("the slot reads back");
    assert_eq!(decoded, slot, "the time and record survive the slot's bytes");
    w.state.apply_slot(&decoded, Hash32::of(&bytes)).expect("the slot applies");
    w.state.entry("/a").expect("the document").clone()
}

fn genesis() -> World {
    World { state: WorldState::genesis(WORLD, Hash32::of(b"marker")), bodies: BTreeMap::new() }
}

#[test]
fn a_publish_sets_the_record_and_an_append_or_archive_flip_keeps_it() {
    let mut w = genesis();
    let e = commit(&mut w, 1, &publish("/a", b"one", Some("draft: oak")), 1_000);
    assert_eq!((e.catalog.as_deref(), e.modified_us), (Some("draft: oak"), 1_000));
    let e = commit(&mut w, 2, &append("/a", b" more"), 2_000);
    assert_eq!((e.catalog.as_deref(), e.modified_us), (Some("draft: oak"), 2_000));
    let e = commit(&mut w, 3, &archive("/a"), 3_000);
    assert_eq!((e.catalog.as_deref(), e.modified_us, e.archived), (Some("draft: oak"), 3_000, true));
}

#[test]
fn a_publish_without_a_record_or_with_an_empty_one_leaves_none() {
    let mut w = genesis();
    commit(&mut w, 1, &publish("/a", b"one", Some("final")), 10);
    assert_eq!(commit(&mut w, 2, &publish("/a", b"two", None), 20).catalog, None);
    commit(&mut w, 3, &publish("/a", b"three", Some("final")), 30);
    assert_eq!(commit(&mut w, 4, &publish("/a", b"four", Some("")), 40).catalog, None);
}

#[test]
fn the_same_body_is_unchanged_only_with_the_same_record() {
    let mut w = genesis();
    commit(&mut w, 1, &publish("/a", b"one", Some("draft")), 10);
    let same = judge(&w, 2, &publish("/a", b"one", Some("draft")), 20);
    assert_eq!(same, Evaluation::Unchanged { version: 1 });
    let e = commit(&mut w, 3, &publish("/a", b"one", Some("final")), 30);
    assert_eq!((e.version, e.catalog.as_deref()), (2, Some("final")), "a new record is a new version");
}

#[test]
fn a_record_longer_than_1024_bytes_is_invalid() {
    let at_most = "x".repeat(CATALOG_RECORD_BYTES_MAX);
    assert!(validate(&publish("/a", b"one", Some(&at_most))).is_ok());
    let over = "x".repeat(CATALOG_RECORD_BYTES_MAX + 1);
    let refused = Err(Invalid::CatalogRecordTooLong { len: over.len(), max: CATALOG_RECORD_BYTES_MAX });
    assert_eq!(validate(&publish("/a", b"one", Some(&over))), refused);
}

#[test]
fn a_document_s_time_never_moves_back_whatever_clock_builds_the_next_change() {
    let mut w = genesis();
    commit(&mut w, 1, &publish("/a", b"one", None), 5_000);
    // A replica whose view of the store's clock is behind the last writer's.
    assert_eq!(commit(&mut w, 2, &publish("/a", b"two", None), 4_000).modified_us, 5_000);
    assert_eq!(commit(&mut w, 3, &append("/a", b"!"), 0).modified_us, 5_000);
    assert_eq!(commit(&mut w, 4, &archive("/a"), 6_000).modified_us, 6_000);
}

#[test]
fn an_operation_id_sent_again_with_another_record_is_refused_and_with_the_same_is_a_duplicate() {
    let mut w = genesis();
    commit(&mut w, 1, &publish("/a", b"one", Some("draft")), 10);
    assert!(matches!(judge(&w, 1, &publish("/a", b"one", Some("draft")), 20), Evaluation::Duplicate(_)));
    let reused = Evaluation::Rejected(Rejection::OperationIdReused { sequence: 1 });
    assert_eq!(judge(&w, 1, &publish("/a", b"one", Some("final")), 20), reused);
    assert_eq!(judge(&w, 1, &publish("/a", b"one", None), 20), reused);
}
