//! Judging watches: each session must receive the log's changes after its cursor, in
//! order, none missing, none twice; and a resync only when its cursor was further back
//! than the replica's index of newest slots.

use super::{holding, CheckOptions, CheckReport, SlotSpan, Violation};
use crate::history::{History, SessionEnd};
use slotlog_kernel::world::Receipt;
use slotlog_kernel::WatchEnd;

pub(super) fn check(
    history: &History,
    receipts: &[&Receipt],
    spans: &[SlotSpan],
    options: CheckOptions,
    r: &mut CheckReport,
) {
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
