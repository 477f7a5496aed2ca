//! Judging watches: each session must receive the log's changes after its cursor, in
//! order, none missing, none twice; and a resync only when its cursor was further back
//! than the replica's index of newest slots. When the run sets a delivery bound, every
//! event reaches every watch within it: from the slot's creation in the store (or the
//! watch's start, for a slot created before), hints or none.

use super::{holding, micros, CheckOptions, CheckReport, SlotSpan, Violation};
use crate::history::{History, SessionEnd};
use core::time::Duration;
use slotlog_kernel::time::Instant;
use slotlog_kernel::world::Receipt;
use slotlog_kernel::WatchEnd;

pub(super) fn check(
    history: &History,
    receipts: &[&Receipt],
    spans: &[SlotSpan],
    options: CheckOptions,
    r: &mut CheckReport,
) {
    if let Some(bound) = options.watch_delivery_bound {
        delivery(history, spans, bound, r);
    }
    for (i, w) in history.watches.iter().enumerate() {
        r.watch_sessions += 1;
        r.watch_events += w.events.len() as u64;
        for (k, e) in w.events.iter().enumerate() {
            let sequence = w.cursor + 1 + k as u64;
            match receipts.get(sequence as usize - 1) {
                Some(expected) if **expected == *e => {}
                Some(expected) => {
                    r.violation(Violation::WatchEventDiffers {
                        watch: i,
                        cursor: w.cursor,
                        event: k,
                        got: Box::new(e.clone()),
                        expected: Box::new((*expected).clone()),
                    });
                    break;
                }
                None => {
                    r.violation(Violation::WatchEventPastTip {
                        watch: i,
                        cursor: w.cursor,
                        got: Box::new(e.clone()),
                    });
                    break;
                }
            }
        }
        if let SessionEnd::Ended(WatchEnd::Resync { cursor, tip }) = &w.end {
            r.watch_resyncs += 1;
            if *cursor != w.cursor + w.events.len() as u64 {
                let delivered = w.cursor + w.events.len() as u64;
                r.violation(Violation::WatchResyncCursor { watch: i, cursor: *cursor, delivered });
            }
            let (Some(first), Some(last)) = (holding(spans, cursor + 1), holding(spans, *tip)) else {
                r.violation(Violation::WatchResyncOutsideLog { watch: i, cursor: *cursor, tip: *tip });
                continue;
            };
            let slots_behind = spans.partition_point(|s| s.first <= last.first)
                - spans.partition_point(|s| s.first < first.first);
            if slots_behind <= options.recent_slots_max {
                r.violation(Violation::WatchResyncEarly {
                    watch: i,
                    cursor: *cursor,
                    slots_behind,
                    tip: *tip,
                });
            }
        }
    }
}

/// The watch delivery rule: each event within `bound_ms` of when it was due from (its
/// slot's creation, or the watch's start if later); a watch its replica did not end owes
/// every event due from more than `bound_ms` before its subscriber closed it, or before
/// the run ended.
pub(super) fn delivery(history: &History, spans: &[SlotSpan], bound: Duration, r: &mut CheckReport) {
    let bound_us = micros(bound);
    let bound_ms = bound_us / 1_000;
    let mut lag_us_max = 0u64;
    let due_from = |w: &crate::history::WatchSession, sequence: u64| -> Option<Instant> {
        holding(spans, sequence).map(|s| s.created_at.max(w.started_at))
    };
    for (i, w) in history.watches.iter().enumerate() {
        for (k, at) in w.delivered_at.iter().enumerate() {
            let sequence = w.cursor + 1 + k as u64;
            let Some(from) = due_from(w, sequence) else { continue }; // WatchEvents judges it
            let lag_us = at.as_micros().saturating_sub(from.as_micros());
            lag_us_max = lag_us_max.max(lag_us);
            if lag_us > bound_us {
                let lag_ms = lag_us / 1_000;
                r.violation(Violation::WatchDeliveredLate { watch: i, sequence, lag_ms, bound_ms });
                break;
            }
        }
        let (SessionEnd::Open, Some(end)) = (&w.end, w.closed_at.or(history.ended_at)) else { continue };
        let next = w.cursor + 1 + w.events.len() as u64;
        if let Some(from) = due_from(w, next) {
            let waited_us = end.as_micros().saturating_sub(from.as_micros());
            if waited_us > bound_us {
                lag_us_max = lag_us_max.max(waited_us);
                let waited_ms = waited_us / 1_000;
                r.violation(Violation::WatchNeverDelivered { watch: i, sequence: next, waited_ms, bound_ms });
            }
        }
    }
    r.watch_delivery_lag_ms_max = Some(lag_us_max as f64 / 1_000.0);
}
