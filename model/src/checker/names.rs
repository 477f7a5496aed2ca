//! The bucket's name history, judged: a slot name holds one set of bytes for the whole
//! run (issue 10: "a slot name is ever created twice with different bytes (a fork)"),
//! and the history accounts for every object in the bucket at the end. Derives from the
//! store's record alone; knows nothing of the kernel.

use super::{CheckReport, Violation};
use crate::history::{NameChange, NameHistory, StoredObject};
use bytes::Bytes;
use slotlog_kernel::format::Keys;
use slotlog_kernel::format::Slot;
use slotlog_kernel::ids::OperationId;
use std::collections::{BTreeMap, BTreeSet};

/// Judges `names` (recorded by the harness) against the bucket's end state `objects`
/// (every object under the world's prefix) and fills the store totals. A fork none of
/// whose members was acknowledged (`acked` holds every acknowledged operation id) was
/// caught by its writer: counted as refused, not as a violation.
pub(super) fn check(
    names: &NameHistory,
    objects: &[StoredObject],
    keys: &Keys,
    acked: &BTreeSet<OperationId>,
    r: &mut CheckReport,
) {
    let log_prefix = keys.log_prefix();
    let root = keys.root();
    for (key, events) in names.names() {
        if !key.starts_with(&log_prefix) {
            continue;
        }
        // Every set of bytes the name ever held, created or rewritten into it.
        let mut held = events.iter().filter_map(|e| e.bytes_hash.map(|h| (h, e.at)));
        let Some((first, _)) = held.next() else { continue };
        if let Some((other, at)) = held.find(|(h, _)| *h != first) {
            let slot = names.bytes_of(&other).and_then(|b| Slot::decode(b).ok());
            let refused = slot.is_some_and(|s| s.members.iter().all(|m| !acked.contains(&m.receipt.op_id)));
            if refused {
                r.forks_refused += 1;
            } else {
                r.forks += 1;
                r.violation(Violation::SlotForked { key: key.to_owned(), first, other, at });
            }
        }
    }
    for (key, event) in names.incoherent() {
        if key.starts_with(root) {
            r.violation(Violation::NameHistoryIncoherent {
                key: key.clone(),
                change: event.change,
                at: event.at,
            });
        }
    }
    // The history's last word on each name under the world is what the bucket holds:
    // the same bytes (compared whole; the store usually hands back the very `Bytes` the
    // history kept, so most comparisons end at the pointer) created at the same instant.
    let mut last: BTreeMap<&str, (&Bytes, u64)> = BTreeMap::new();
    for (key, events, held) in names.names_held() {
        if !key.starts_with(root) {
            continue;
        }
        if let Some(e) = events.last().filter(|e| e.change != NameChange::Deleted) {
            let bytes = held.expect("a present name has bytes");
            last.insert(key, (bytes, e.at.as_micros()));
        }
    }
    for o in objects {
        let agrees = last
            .remove(o.key.as_str())
            .is_some_and(|(bytes, at)| at == o.created_at.as_micros() && same_bytes(bytes, &o.bytes));
        if !agrees {
            r.violation(Violation::NameHistoryDisagrees { key: o.key.clone() });
        }
    }
    for key in last.into_keys() {
        r.violation(Violation::NameHistoryDisagrees { key: key.to_owned() });
    }
    r.store_objects_max = Some(names.objects_max());
}

/// Equal bytes; shared `Bytes` are equal without reading them.
fn same_bytes(a: &Bytes, b: &Bytes) -> bool {
    (a.as_ptr() == b.as_ptr() && a.len() == b.len()) || a == b
}
