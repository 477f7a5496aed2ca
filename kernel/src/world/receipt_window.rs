//! The receipt window (SPEC 10.13): which receipts a world keeps, and what a receipt read
//! answers from them. A receipt outside the window is gone, so an operation id the window
//! does not hold is "absent" (not committed) only when the caller says it could not have
//! committed before the window's start; otherwise the answer is `Expired`: unknown.

use super::entry::Receipt;

/// Members whose receipts a world keeps: an operation id is answered as committed (and
/// refused as a duplicate) while its member is among about the newest this many. Bounds
/// memory and checkpoints: a receipt is about 100 bytes, so 26 MB, and about 17 minutes
/// at 250 writes/s, far past the 10 s a caller waits for an answer.
pub const RECEIPT_WINDOW_SEQUENCES: u64 = 262_144;

/// The first sequence whose receipt a world at `sequence` keeps: the window's start,
/// rounded down to a receipt block's start (SPEC 10.13) so checkpoints reuse whole blocks.
/// A function of the sequence alone, so every replica keeps the same receipts.
pub fn receipts_from(sequence: u64) -> u64 {
    let start = (sequence + 1).saturating_sub(RECEIPT_WINDOW_SEQUENCES).max(1);
    let block = crate::format::RECEIPTS_PER_BLOCK_MAX as u64;
    (start - 1) / block * block + 1
}

/// What a receipt read found in one snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReceiptAnswer {
    /// The operation id committed; this is its receipt.
    Committed(Receipt),
    /// Not committed from the read's `since` through the snapshot: the window covers all
    /// of that run, so this is exact. A write settled on it may be sent again.
    Absent,
    /// The window starts at `window_from`, after the read's `since`: the operation may
    /// have committed before it and its receipt is gone. Unknown, never "absent".
    Expired {
        /// First sequence of the receipt window.
        window_from: u64,
    },
}

/// The answer of a world at `sequence` that holds `held` for the operation id asked
/// about. `since` is the first sequence the operation could have committed at (None:
/// since genesis, sequence 1).
pub fn answer(held: Option<&Receipt>, sequence: u64, since: Option<u64>) -> ReceiptAnswer {
    if let Some(receipt) = held {
        return ReceiptAnswer::Committed(receipt.clone());
    }
    let window_from = receipts_from(sequence);
    if since.unwrap_or(1) >= window_from {
        ReceiptAnswer::Absent
    } else {
        ReceiptAnswer::Expired { window_from }
    }
}
