//! Carried bodies (SPEC 5.7) are judged by their bytes against the bodies the model made,
//! not by hashing them: each a member's new body, the first member with it, once, in
//! member order. The checker refuses exactly the slots the kernel's decoder refuses.

use super::{check, CheckOptions, Rule, Violation};
use crate::history::{ClientOp, History, Outcome, StoredObject};
use bytes::Bytes;
use slotlog_kernel::format::{Checkpoint, DecodeError, Keys, Marker, ShapeRule, Slot};
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::{OperationId, StoreId, WorldId};
use slotlog_kernel::time::Instant;
use slotlog_kernel::world::{evaluate, validate, Evaluation, Expected, Mutation, WorldState};

const WORLD: WorldId = WorldId([3; 16]);

fn object(key: String, bytes: Vec<u8>) -> StoredObject {
    StoredObject { key, bytes: Bytes::from(bytes), created_at: Instant::ZERO }
}

/// A world of one slot holding `writes` (path, body) as the kernel makes them and carrying
/// `carried`: what the checker finds, and what the kernel's decoder says of the slot.
fn judged(
    writes: &[(&str, &'static [u8])],
    carried: &[&'static [u8]],
) -> (Vec<Violation>, Result<(), DecodeError>) {
    let keys = Keys::new("w");
    let marker = Marker::new(WORLD, StoreId(1)).encode();
    let marker_hash = Hash32::of(&marker);
    let mut state = WorldState::genesis(WORLD, marker_hash);
    let (mut members, mut ops) = (Vec::new(), Vec::new());
    for (i, (path, body)) in writes.iter().enumerate() {
        let op_id = OperationId([i as u8 + 1; 16]);
        let mutation = Mutation::Publish {
            path: path.to_string(),
            body: Bytes::from_static(body),
            catalog: None,
            expected: Expected::Any,
        };
        let valid = validate(&mutation).expect("a valid write");
        let Evaluation::Applied { member, .. } = evaluate(&state, op_id, &valid, 0, &|_| None) else {
            panic!("the kernel applies {path}");
        };
        // Each member on the state of those before it, through a one-member scratch slot.
        let scratch = Slot {
            world_id: WORLD,
            first_sequence: member.sequence(),
            store_id: StoreId(1),
            prev_hash: state.tip_hash(),
            members: vec![member.clone()],
            bodies: Vec::new(),
        };
        state.apply_slot(&scratch, Hash32::of(b"scratch")).expect("applies");
        members.push(member);
        let outcome = Outcome::Preloaded;
        ops.push(ClientOp { replica: 0, op_id, mutation, invoked_at: Instant::ZERO, outcome });
    }
    let slot = Slot {
        world_id: WORLD,
        first_sequence: 1,
        store_id: StoreId(1),
        prev_hash: marker_hash,
        members,
        bodies: carried.iter().copied().map(Bytes::from_static).collect(),
    };
    let bytes = slot.encode();
    let decoder = Slot::decode(&bytes).map(|_| ());
    let objects = vec![
        object(keys.marker(), marker),
        object(keys.checkpoint(1), Checkpoint::zero(WORLD, marker_hash).encode()),
        object(keys.slot(1), bytes),
    ];
    let history = History { ops, ..History::default() };
    (check(&history, &objects, &keys, WORLD, CheckOptions::default()).violations, decoder)
}

const WRITES: [(&str, &[u8]); 3] = [("/a", b"one"), ("/b", b"two"), ("/c", b"three")];

fn out_of_place(body: usize) -> (Vec<Violation>, Result<(), DecodeError>) {
    let found = vec![Violation::CarriedBodyOutOfPlace { sequence: 1, body }];
    (found, Err(DecodeError::Shape(ShapeRule::InlineBodyOutOfPlace)))
}

#[test]
fn members_new_bodies_carried_once_in_member_order_pass() {
    assert_eq!(judged(&WRITES, &[b"one", b"two", b"three"]), (vec![], Ok(())));
    assert_eq!(judged(&WRITES, &[b"one", b"three"]), (vec![], Ok(())), "a subset in order");
    assert_eq!(judged(&WRITES, &[]), (vec![], Ok(())), "none: every new body a blob");
}

#[test]
fn a_carried_body_no_member_made_is_out_of_place() {
    assert_eq!(judged(&WRITES, &[b"one", b"four"]), out_of_place(1));
    assert_eq!(judged(&WRITES, &[b"tw"]), out_of_place(0), "a prefix of a member's body");
}

#[test]
fn carried_bodies_out_of_member_order_are_out_of_place() {
    assert_eq!(judged(&WRITES, &[b"two", b"one"]), out_of_place(1));
    assert_eq!(judged(&WRITES, &[b"three", b"one", b"two"]), out_of_place(1));
}

#[test]
fn a_body_carried_twice_is_out_of_place_even_when_two_members_made_it() {
    assert_eq!(judged(&WRITES, &[b"one", b"one"]), out_of_place(1));
    let same = [("/a", &b"one"[..]), ("/b", b"one"), ("/c", b"two")];
    assert_eq!(judged(&same, &[b"one", b"two"]), (vec![], Ok(())));
    assert_eq!(
        judged(&same, &[b"one", b"one"]),
        out_of_place(1),
        "the second member is not the first with it"
    );
    assert_eq!(out_of_place(0).0[0].rule(), Rule::SlotObject);
}
