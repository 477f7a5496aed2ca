//! A replica's own slot (`WorldState::apply_own_slot`): the chain is checked as for any
//! slot; its members, judged when the batch was built, are judged again only in the
//! kernel's tests (in a simulation, the checker's auditor judges every slot).

use super::evaluate::{evaluate, validate, Evaluation};
use super::mutation::{Expected, Mutation};
use super::{ApplyError, ApplyRule, SlotMember, WorldState};
use crate::format::Slot;
use crate::hash::Hash32;
use crate::ids::{OperationId, StoreId, WorldId};

const WORLD: WorldId = WorldId([9; 16]);

fn member(world: &WorldState, op: u128, path: &str) -> SlotMember {
    let m = Mutation::Publish {
        path: path.into(),
        body: b"body".as_slice().into(),
        catalog: None,
        expected: Expected::Any,
    };
    let valid = validate(&m).expect("a valid mutation");
    match evaluate(world, OperationId::from(op), &valid, 0, &|_| None) {
        Evaluation::Applied { member, .. } => member,
        other => panic!("{path} applies: {other:?}"),
    }
}

fn slot_on(world: &WorldState, prev_hash: Hash32, members: Vec<SlotMember>) -> Slot {
    Slot {
        world_id: WORLD,
        first_sequence: world.next_sequence(),
        store_id: StoreId(1),
        prev_hash,
        members,
        bodies: Vec::new(),
    }
}

#[test]
fn an_own_slot_applies_as_any_slot_does() {
    let mut judged = WorldState::genesis(WORLD, Hash32::ZERO);
    let mut own = WorldState::genesis(WORLD, Hash32::ZERO);
    let a = member(&judged, 1, "/a/1");
    let slot = slot_on(&judged, judged.tip_hash(), vec![a]);
    let hash = Hash32::of(&slot.encode());
    judged.apply_slot(&slot, hash).expect("applies");
    own.apply_own_slot(&slot, hash).expect("applies");
    assert_eq!(own.sequence(), judged.sequence());
    assert_eq!(own.tip_hash(), judged.tip_hash());
    let paths = |w: &WorldState| w.documents().map(|(p, d)| (p.clone(), d.entry.clone())).collect::<Vec<_>>();
    assert_eq!(paths(&own), paths(&judged));
    assert_eq!(own.receipt(&OperationId::from(1)), judged.receipt(&OperationId::from(1)));
}

#[test]
fn an_own_slot_must_still_name_the_tip() {
    let mut world = WorldState::genesis(WORLD, Hash32::ZERO);
    let slot = slot_on(&world, Hash32::of(b"another predecessor"), vec![member(&world, 1, "/a/1")]);
    let refused = world.apply_own_slot(&slot, Hash32::of(&slot.encode()));
    assert!(matches!(refused, Err(ApplyError::ChainBreak { sequence: 1 })), "{refused:?}");
    assert_eq!(world.sequence(), 0, "nothing applied");
}

/// In the kernel's tests the members are judged too.
#[test]
fn an_own_slot_is_judged_in_tests() {
    let mut world = WorldState::genesis(WORLD, Hash32::ZERO);
    let a = member(&world, 1, "/a/1");
    let again = SlotMember { receipt: super::Receipt { sequence: 2, ..a.receipt.clone() }, ..a.clone() };
    // Not encoded: the encoder's own shape check refuses the copy first.
    let slot = slot_on(&world, world.tip_hash(), vec![a, again]);
    let refused = world.apply_own_slot(&slot, Hash32::of(b"two members, one operation id"));
    let expected = ApplyError::Inconsistent { sequence: 2, rule: ApplyRule::OperationIdCommittedTwice };
    assert_eq!(refused, Err(expected));
}
