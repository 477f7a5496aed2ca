//! What the driver reports through the `metrics` facade: nothing is recorded unless the
//! embedder installs a recorder (a Prometheus exporter, say), and then every world in the
//! process reports under these names.
//!
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | `slotlog_blob_calls_total` | counter | `kind` (create, get, stat, list, rewrite, delete), `outcome` (ok, already_exists, precondition_failed, not_found, throttled, unavailable, timeout, unsupported, other) | every store call answered; a lost slot race is a create answered `already_exists`, a retry follows each throttled, unavailable or timeout |
//! | `slotlog_blob_call_seconds` | histogram | `kind` | each call's time, answer or timeout |
//! | `slotlog_writes_total` | counter | `result` (committed, unchanged, duplicate, invalid, rejected, busy, expired, uncertain, failed, other) | every write answered |
//! | `slotlog_committed_through` | gauge | | the sequence the world is known committed through |
//! | `slotlog_slots_total` | counter | `outcome` (won, lost) | slot creates this process's replicas won, and names they found taken by a peer's slot |
//! | `slotlog_slot_members` | histogram | | writes in each slot won: the batch size |
//! | `slotlog_queue_depth` | gauge | | writes waiting in the commit queue, not yet in a batch |

use crate::blobs::CallFailure;
use slotlog_kernel::blob::{BlobError, BlobOutcome};
use slotlog_kernel::{Reply, WriteError, WriteOk};
use std::time::Duration;

/// Counts a store call and its time.
pub(crate) fn blob_call(kind: &'static str, result: &Result<BlobOutcome, CallFailure>, took: Duration) {
    let outcome = match result {
        Ok(_) => "ok",
        Err(f) => match f.error {
            BlobError::AlreadyExists => "already_exists",
            BlobError::PreconditionFailed => "precondition_failed",
            BlobError::NotFound => "not_found",
            BlobError::Throttled => "throttled",
            BlobError::Unavailable => "unavailable",
            BlobError::Timeout => "timeout",
            BlobError::Unsupported => "unsupported",
            _ => "other",
        },
    };
    metrics::counter!("slotlog_blob_calls_total", "kind" => kind, "outcome" => outcome).increment(1);
    metrics::histogram!("slotlog_blob_call_seconds", "kind" => kind).record(took.as_secs_f64());
}

/// Counts a write's answer by what it was.
pub(crate) fn write_answered(reply: &Reply) {
    let Reply::Write(answer) = reply else { return };
    let result = match answer {
        Ok(WriteOk::Committed(_)) => "committed",
        Ok(WriteOk::Unchanged { .. }) => "unchanged",
        Ok(WriteOk::Duplicate { .. }) => "duplicate",
        Err(WriteError::Invalid(_)) => "invalid",
        Err(WriteError::Rejected { .. }) => "rejected",
        Err(WriteError::Busy { .. }) => "busy",
        Err(WriteError::Expired { .. }) => "expired",
        Err(WriteError::Uncertain { .. }) => "uncertain",
        Err(WriteError::Failed(_)) => "failed",
        Err(_) => "other",
    };
    metrics::counter!("slotlog_writes_total", "result" => result).increment(1);
}

/// The sequence the world is known committed through.
pub(crate) fn committed_through(sequence: u64) {
    metrics::gauge!("slotlog_committed_through").set(sequence as f64);
}

/// Slots won since the last look (each with its share of the members committed) and
/// names lost.
pub(crate) fn slots(won: u64, lost: u64, members: u64) {
    if won > 0 {
        metrics::counter!("slotlog_slots_total", "outcome" => "won").increment(won);
        let per_slot = members as f64 / won as f64;
        for _ in 0..won {
            metrics::histogram!("slotlog_slot_members").record(per_slot);
        }
    }
    if lost > 0 {
        metrics::counter!("slotlog_slots_total", "outcome" => "lost").increment(lost);
    }
}

/// Writes waiting in the commit queue now.
pub(crate) fn queue_depth(queued: usize) {
    metrics::gauge!("slotlog_queue_depth").set(queued as f64);
}
