//! Judging watches: each session must receive the log's changes after its cursor, in
//! order, none missing, none twice; and a resync only when its cursor was further back
//! than the replica's index of newest slots.

use super::{holding, CheckOptions, CheckReport, SlotSpan};
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
                    r.violation(format!(
                        "watch {i} from {}: event {k} is {e:?}, the log holds {expected:?}",
                        w.cursor
                    ));
                    break;
                }
                None => {
                    r.violation(format!("watch {i} from {} received {e:?}, past the log's tip", w.cursor));
                    break;
                }
            }
        }
        if let SessionEnd::Ended(WatchEnd::Resync { cursor, tip }) = &w.end {
            r.watch_resyncs += 1;
            if *cursor != w.cursor + w.events.len() as u64 {
                r.violation(format!(
                    "watch {i} resynced at cursor {cursor} after delivering through {}",
                    w.cursor + w.events.len() as u64
                ));
            }
            let (Some(first), Some(last)) = (holding(spans, cursor + 1), holding(spans, *tip)) else {
                r.violation(format!("watch {i} resynced at cursor {cursor} with tip {tip}, outside the log"));
                continue;
            };
            let slots_behind = spans.partition_point(|s| s.first <= last.first)
                - spans.partition_point(|s| s.first < first.first);
            if slots_behind <= options.recent_slots_max {
                r.violation(format!(
                    "watch {i} resynced at cursor {cursor}, only {slots_behind} slots behind its replica's tip {tip}"
                ));
            }
        }
    }
}
