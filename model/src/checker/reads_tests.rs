//! The checker's receipt rules (SPEC 10.13): "absent" is judged against the model's own
//! receipt window, so a kernel that answers absent for an expired operation is caught.

use super::reads::{receipt_absence, Judge};
use super::{CheckOptions, CheckReport, Rule, Violation};
use crate::history::{History, ReadOp, ReadOutcome};
use crate::{ModelReceiptAnswer, ModelWorld};
use slotlog_kernel::ids::OperationId;
use slotlog_kernel::reply::Answer;
use slotlog_kernel::time::Instant;
use slotlog_kernel::world::{Expected, Mutation, ReceiptAnswer};
use slotlog_kernel::Read;

fn op(n: u64) -> OperationId {
    OperationId::from(u128::from(n))
}

fn flip(n: u64) -> Mutation {
    Mutation::SetArchived { path: "/a".into(), archived: n.is_multiple_of(2), expected: Expected::Any }
}

/// A model whose sequences 1 to 4,096 left the receipt window.
fn past_the_window() -> ModelWorld {
    let mut w = ModelWorld::new();
    w.apply(
        op(1),
        &Mutation::Publish { path: "/a".into(), body: "x".into(), catalog: None, expected: Expected::Any },
    );
    for n in 2..=crate::checkpoint::RECEIPT_WINDOW_SEQUENCES + 4_096 {
        w.apply(op(n), &flip(n));
    }
    w
}

const ABSENT: Answer = Answer::Receipt(ReceiptAnswer::Absent);

#[test]
fn a_kernel_answering_absent_for_an_expired_operation_is_caught() {
    let model = past_the_window();
    let at = model.sequence();
    let request = Read::Receipt { op_id: op(1), since: None };
    let found = receipt_absence(&model, 0, &request, &ABSENT, at).expect("a violation");
    assert_eq!(found.rule(), Rule::ReceiptAbsence);
    let Violation::ReceiptAbsentNotExact { model: expected, .. } = found else { panic!("{found:?}") };
    assert_eq!(expected, ModelReceiptAnswer::Expired { window_from: 4_097 });
    // So is one never committed whose `since` is before the window.
    let never = Read::Receipt { op_id: op(u64::MAX), since: Some(4_096) };
    assert!(receipt_absence(&model, 0, &never, &ABSENT, at).is_some());
}

#[test]
fn a_kernel_answering_absent_for_a_committed_operation_is_caught() {
    let mut model = ModelWorld::new();
    model.apply(op(1), &flip(1));
    model.apply(
        op(7),
        &Mutation::Publish { path: "/b".into(), body: "x".into(), catalog: None, expected: Expected::Any },
    );
    let request = Read::Receipt { op_id: op(7), since: Some(2) };
    assert!(receipt_absence(&model, 0, &request, &ABSENT, model.sequence()).is_some());
}

#[test]
fn absent_since_inside_the_window_passes() {
    let model = past_the_window();
    let at = model.sequence();
    let never = Read::Receipt { op_id: op(u64::MAX), since: Some(4_097) };
    assert_eq!(receipt_absence(&model, 0, &never, &ABSENT, at), None);
    let young = Read::Receipt { op_id: op(u64::MAX), since: None };
    assert_eq!(receipt_absence(&ModelWorld::new(), 0, &young, &ABSENT, 0), None);
}

/// A fetch of view 3 that reached its replica at `invoked_ms` and was answered with
/// `result` 10 ms later.
fn view_read(invoked_ms: u64, result: Result<slotlog_kernel::ReadOk, slotlog_kernel::ReadError>) -> ReadOp {
    let at = Instant::from_millis(invoked_ms + 10);
    ReadOp {
        replica: 0,
        read: Read::Fetch { path: "/a".into(), version: None },
        invoked_at: Instant::from_millis(invoked_ms),
        outcome: ReadOutcome::Answered { at, result },
        view: Some(3),
    }
}

#[test]
fn a_view_expired_before_its_age_is_caught_and_one_past_it_passes() {
    let pinned = slotlog_kernel::ReadOk { at_sequence: 0, answer: Answer::NotFound };
    let expired = Err(slotlog_kernel::ReadError::ViewExpired);
    let history = History {
        reads: vec![view_read(0, Ok(pinned)), view_read(500, expired.clone()), view_read(1_500, expired)],
        ..History::default()
    };
    let options =
        CheckOptions { view_age_max: core::time::Duration::from_secs(1), ..CheckOptions::default() };
    let mut r = CheckReport::default();
    Judge::new(&history, &[], options).judge_view_expiries(&mut r);
    let early = Violation::ViewExpiredEarly { read: 1, view: 3, age_ms: 510, age_max_ms: 1_000 };
    assert_eq!(early.rule(), Rule::ViewSnapshot);
    assert_eq!(r.violations, vec![early], "the one at 1,510 ms is past the age");
}
