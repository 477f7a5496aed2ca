//! The receipt window's answers and the reuse rule (SPEC 10.13), on world states: a
//! window of 262,144 sequences is too long for a simulated run, so a state past it is
//! restored directly.

use super::evaluate::{evaluate, validate, Evaluation};
use super::mutation::{Expected, Mutation, PolicyBody};
use super::receipt_window::{receipts_from, ReceiptAnswer, RECEIPT_WINDOW_SEQUENCES};
use super::request_digest;
use super::{Policy, Receipt, ReceiptKind, Rejection, WorldState};
use crate::format::{Slot, StoredReceipt};
use crate::hash::Hash32;
use crate::ids::{OperationId, StoreId, WorldId};

const WORLD: WorldId = WorldId([7; 16]);

fn publish(path: &str, body: &'static [u8], expected: Expected) -> Mutation {
    Mutation::Publish { path: path.into(), body: body.into(), catalog: None, expected }
}

fn policy_body(retention_versions: u32) -> PolicyBody {
    PolicyBody { retention_versions, body_bytes_max: 1 << 20, read_only_prefixes: vec!["/locked".into()] }
}

fn judge(world: &WorldState, op: u128, m: &Mutation) -> Evaluation {
    evaluate(world, OperationId::from(op), &validate(m).expect("a valid mutation"), 0, &|_| None)
}

/// Commits `m` under `op` in a slot of its own; returns its receipt.
fn commit(world: &mut WorldState, op: u128, m: &Mutation) -> Receipt {
    let Evaluation::Applied { member, .. } = judge(world, op, m) else { panic!("{m:?} applies") };
    let slot = Slot {
        world_id: WORLD,
        first_sequence: world.next_sequence(),
        store_id: StoreId(1),
        prev_hash: world.tip_hash(),
        members: vec![member.clone()],
        bodies: Vec::new(),
    };
    world.apply_slot(&slot, Hash32::of(&slot.encode())).expect("the slot applies");
    member.receipt
}

/// A world at `sequence` whose window holds policy receipts, operation id = sequence,
/// with the digests `digest` gives.
fn restored(sequence: u64, digest: impl Fn(u64) -> Hash32) -> WorldState {
    let from = receipts_from(sequence);
    let receipts = (from..=sequence)
        .map(|s| StoredReceipt {
            receipt: Receipt {
                op_id: OperationId::from(u128::from(s)),
                sequence: s,
                kind: ReceiptKind::PolicySet,
                path: None,
                version: s,
            },
            request_digest: digest(s),
        })
        .collect();
    let policy = Policy { version: sequence, ..Policy::default() };
    WorldState::restore(WORLD, sequence, Hash32::ZERO, policy, vec![], from, receipts).expect("a world")
}

/// A world one block past the window: sequences 1 to 4,096 have left it.
fn past_the_window() -> WorldState {
    restored(RECEIPT_WINDOW_SEQUENCES + 4_096, |_| Hash32::ZERO)
}

#[test]
fn a_receipt_outside_the_window_answers_expired_not_absent() {
    let world = past_the_window();
    let window_from = world.receipts_from_sequence();
    assert_eq!(window_from, 4_097);
    // Operation 1 committed at sequence 1, which the window no longer holds.
    assert_eq!(world.receipt_answer(&OperationId::from(1u128), None), ReceiptAnswer::Expired { window_from });
    // Never committed, but a caller that could have committed it at 4,096 cannot know.
    let never = OperationId::from(u128::MAX);
    assert_eq!(world.receipt_answer(&never, Some(4_096)), ReceiptAnswer::Expired { window_from });
}

#[test]
fn an_absent_receipt_since_inside_the_window_is_exact() {
    let world = past_the_window();
    let never = OperationId::from(u128::MAX);
    assert_eq!(world.receipt_answer(&never, Some(4_097)), ReceiptAnswer::Absent);
    assert_eq!(world.receipt_answer(&never, Some(world.next_sequence())), ReceiptAnswer::Absent);
    // Before anything left the window, "since genesis" is covered.
    let young = restored(100, |_| Hash32::ZERO);
    assert_eq!(young.receipt_answer(&never, None), ReceiptAnswer::Absent);
}

#[test]
fn a_receipt_inside_the_window_answers_committed_whatever_its_since() {
    let world = past_the_window();
    let op = OperationId::from(5_000u128);
    let ReceiptAnswer::Committed(receipt) = world.receipt_answer(&op, None) else { panic!("committed") };
    assert_eq!((receipt.op_id, receipt.sequence), (op, 5_000));
    assert_eq!(world.receipt_answer(&op, Some(world.next_sequence())), ReceiptAnswer::Committed(receipt));
}

#[test]
fn an_operation_id_reused_with_other_content_is_refused() {
    let mut world = WorldState::genesis(WORLD, Hash32::ZERO);
    commit(&mut world, 1, &publish("/a.md", b"x", Expected::Any));
    commit(&mut world, 2, &publish("/b.md", b"y", Expected::Any));
    let reused = Evaluation::Rejected(Rejection::OperationIdReused { sequence: 1 });
    assert_eq!(judge(&world, 1, &publish("/a.md", b"other", Expected::Any)), reused);
    assert_eq!(judge(&world, 1, &publish("/c.md", b"x", Expected::Any)), reused);
    let append = Mutation::Append { path: "/a.md".into(), bytes: "x".into(), expected: Expected::Any };
    assert_eq!(judge(&world, 1, &append), reused);
    let archive = Mutation::SetArchived { path: "/a.md".into(), archived: true, expected: Expected::Any };
    assert_eq!(judge(&world, 1, &archive), reused);
    let policy = Mutation::SetPolicy { policy: policy_body(3), expected: Expected::Any };
    assert_eq!(judge(&world, 1, &policy), reused);
}

#[test]
fn an_operation_id_resent_with_the_same_content_is_a_duplicate() {
    let mut world = WorldState::genesis(WORLD, Hash32::ZERO);
    let first = commit(&mut world, 1, &publish("/a.md", b"x", Expected::Any));
    commit(&mut world, 2, &publish("/a.md", b"y", Expected::Any));
    // The precondition is not content: the same operation sent with another is the same.
    for expected in [Expected::Any, Expected::Absent, Expected::Version(9)] {
        assert_eq!(judge(&world, 1, &publish("/a.md", b"x", expected)), Evaluation::Duplicate(first.clone()));
    }
    // A raw path that normalizes to the same path is the same content.
    assert_eq!(judge(&world, 1, &publish("/a.md/", b"x", Expected::Any)), Evaluation::Duplicate(first));
}

#[test]
fn a_receipt_without_a_recorded_digest_is_taken_for_the_same_content() {
    let world = restored(10, |_| Hash32::ZERO);
    let Evaluation::Duplicate(receipt) = judge(&world, 3, &publish("/a.md", b"x", Expected::Any)) else {
        panic!("a duplicate")
    };
    assert_eq!(receipt.sequence, 3);
    // With a recorded digest the same request is refused.
    let recorded = restored(10, |s| Hash32::of(&s.to_le_bytes()));
    assert_eq!(
        judge(&recorded, 3, &publish("/a.md", b"x", Expected::Any)),
        Evaluation::Rejected(Rejection::OperationIdReused { sequence: 3 })
    );
}

#[test]
fn an_operation_id_outside_the_window_commits_again() {
    let world = past_the_window();
    assert!(matches!(judge(&world, 1, &publish("/a.md", b"x", Expected::Any)), Evaluation::Applied { .. }));
    // Inside the window the same id is known.
    assert!(matches!(judge(&world, 5_000, &publish("/a.md", b"x", Expected::Any)), Evaluation::Duplicate(_)));
}

#[test]
fn a_member_and_its_request_have_one_digest() {
    let mut world = WorldState::genesis(WORLD, Hash32::ZERO);
    commit(&mut world, 1, &publish("/a.md", b"x", Expected::Any));
    let policy = policy_body(3);
    let requests = [
        publish("/b.md", b"y", Expected::Any),
        Mutation::Append { path: "/a.md".into(), bytes: "more".into(), expected: Expected::Any },
        Mutation::SetArchived { path: "/a.md".into(), archived: true, expected: Expected::Any },
        Mutation::SetPolicy { policy, expected: Expected::Any },
    ];
    let mut digests = Vec::new();
    for (i, m) in requests.iter().enumerate() {
        let valid = validate(m).expect("valid");
        let body_of = |_: &Hash32| Some(bytes::Bytes::from_static(b"x"));
        let op = OperationId::from(10 + i as u128);
        let Evaluation::Applied { member, .. } = evaluate(&world, op, &valid, 0, &body_of) else {
            panic!("{m:?}")
        };
        let digest = request_digest::of_request(&valid);
        assert_eq!(request_digest::of_member(&member), digest, "{m:?}");
        assert_ne!(digest, Hash32::ZERO);
        digests.push(digest);
    }
    digests.sort();
    digests.dedup();
    assert_eq!(digests.len(), requests.len(), "each kind has its own digest");
}
