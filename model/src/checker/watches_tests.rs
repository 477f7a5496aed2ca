//! The watch delivery rule (issue 19): every event within the run's bound of its slot's
//! creation (or the watch's start), and none owed past the bound when the watch closes or
//! the run ends.

use super::watches::delivery;
use super::{CheckReport, Rule, SlotSpan, Violation};
use crate::history::{History, SessionEnd, WatchSession};
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::OperationId;
use slotlog_kernel::time::Instant;
use slotlog_kernel::world::{Receipt, ReceiptKind};

const BOUND_MS: u64 = 7_000;

/// One single-member slot per entry, created at these milliseconds.
fn spans(created_ms: &[u64]) -> Vec<SlotSpan> {
    let span = |(i, ms): (usize, &u64)| SlotSpan {
        first: i as u64 + 1,
        last: i as u64 + 1,
        created_at: Instant::from_millis(*ms),
        hash: Hash32::ZERO,
    };
    created_ms.iter().enumerate().map(span).collect()
}

fn receipt(sequence: u64) -> Receipt {
    Receipt {
        op_id: OperationId::from(u128::from(sequence)),
        sequence,
        kind: ReceiptKind::Published,
        path: None,
        version: 1,
    }
}

/// A watch from cursor 0, started at `start_ms`, that got sequences 1.. at these times.
fn session(start_ms: u64, delivered_ms: &[u64], closed_ms: Option<u64>) -> WatchSession {
    WatchSession {
        replica: 2,
        cursor: 0,
        started_at: Instant::from_millis(start_ms),
        events: (1..=delivered_ms.len() as u64).map(receipt).collect(),
        delivered_at: delivered_ms.iter().map(|ms| Instant::from_millis(*ms)).collect(),
        closed_at: closed_ms.map(Instant::from_millis),
        end: SessionEnd::Open,
    }
}

fn judge(watch: WatchSession, spans: &[SlotSpan], ended_ms: u64) -> CheckReport {
    let history = History {
        watches: vec![watch],
        ended_at: Some(Instant::from_millis(ended_ms)),
        ..History::default()
    };
    let mut r = CheckReport::default();
    delivery(&history, spans, core::time::Duration::from_millis(BOUND_MS), &mut r);
    r
}

#[test]
fn events_within_the_bound_pass_and_the_longest_lag_is_reported() {
    let r = judge(session(0, &[5_100, 8_000], None), &spans(&[100, 2_000]), 20_000);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.watch_delivery_lag_ms_max, Some(6_000.0));
}

#[test]
fn an_event_later_than_the_bound_is_caught() {
    let r = judge(session(0, &[1_000, 9_001], None), &spans(&[100, 2_000]), 20_000);
    let [v] = &r.violations[..] else { panic!("{:?}", r.violations) };
    assert_eq!(v.rule(), Rule::WatchDelivery);
    assert_eq!(
        *v,
        Violation::WatchDeliveredLate { watch: 0, sequence: 2, lag_ms: 7_001, bound_ms: BOUND_MS }
    );
}

#[test]
fn an_event_before_the_watch_began_is_due_from_its_start() {
    let r = judge(session(10_000, &[16_000], None), &spans(&[100]), 20_000);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.watch_delivery_lag_ms_max, Some(6_000.0));
}

#[test]
fn an_event_never_delivered_past_the_bound_is_caught_at_the_end() {
    let r = judge(session(0, &[1_000], None), &spans(&[100, 2_000]), 9_001);
    assert_eq!(
        r.violations,
        vec![Violation::WatchNeverDelivered { watch: 0, sequence: 2, waited_ms: 7_001, bound_ms: BOUND_MS }]
    );
    let in_time = judge(session(0, &[1_000], None), &spans(&[100, 2_000]), 9_000);
    assert!(in_time.violations.is_empty(), "not yet owed: {:?}", in_time.violations);
}

#[test]
fn a_watch_its_subscriber_closed_owes_nothing_after_it_closed() {
    let r = judge(session(0, &[1_000], Some(3_000)), &spans(&[100, 2_000]), 60_000);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
}
