//! The ambiguity bound's record, kept by the harness from the calls it carries (never
//! from what the kernel reports): a slot create answered by an error that may have
//! applied (a timeout, a 5xx) opens a wait on its name, and the replica's next
//! definitive answer on that name (a read, or a create again) closes it. The report
//! judges the longest wait (rule `AmbiguityBound`).

use slotlog_kernel::blob::{BlobError, BlobOp, BlobResult};
use slotlog_kernel::time::Instant;
use std::collections::{BTreeMap, BTreeSet};

/// One replica incarnation's open waits.
#[derive(Debug, Default)]
pub struct AmbiguityWatch {
    /// Slot names created and answered ambiguously, since when.
    open: BTreeMap<String, Instant>,
    /// Slot names seen to hold a slot (created, found taken, or read): an ambiguous
    /// answer arriving after (a hedged twin's, a late one) leaves nothing to settle.
    decided: BTreeSet<String>,
    /// The longest wait closed so far, in µs.
    longest_us: u64,
}

impl AmbiguityWatch {
    /// Records the answer to `op`, a call on a slot name, at `now`.
    pub fn on_answer(&mut self, now: Instant, op: &BlobOp, result: &BlobResult) {
        let key = op.key();
        let ambiguous = matches!(result, Err(BlobError::Timeout | BlobError::Unavailable));
        let definitive = !ambiguous && !matches!(result, Err(BlobError::Throttled));
        match op {
            BlobOp::Create { .. } if ambiguous && !self.decided.contains(key) => {
                self.open.entry(key.to_string()).or_insert(now);
            }
            BlobOp::Create { .. } | BlobOp::Get { .. } | BlobOp::Stat { .. } if definitive => {
                if !matches!(result, Err(BlobError::NotFound)) {
                    self.decided.insert(key.to_string());
                }
                if let Some(since) = self.open.remove(key) {
                    self.longest_us = self.longest_us.max(now.saturating_since(since).as_micros() as u64);
                }
            }
            _ => {}
        }
    }

    /// The longest wait so far, counting the waits still open as ending `now`.
    pub fn longest_us(&self, now: Instant) -> u64 {
        let open = self.open.values().map(|since| now.saturating_since(*since).as_micros() as u64);
        open.fold(self.longest_us, u64::max)
    }

    /// The longest wait closed so far (a crashed incarnation's: its open waits end with
    /// it, owed by no one).
    pub fn settled_longest_us(&self) -> u64 {
        self.longest_us
    }

    /// Waits still open.
    #[cfg(test)]
    pub fn open(&self) -> usize {
        self.open.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use slotlog_kernel::blob::{BlobOutcome, ObjectMeta};

    const KEY: &str = "w/log/0000000000000007";

    fn create() -> BlobOp {
        BlobOp::Create { key: KEY.to_string(), bytes: Bytes::from_static(b"slot") }
    }

    fn get() -> BlobOp {
        BlobOp::Get { key: KEY.to_string() }
    }

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    fn got() -> BlobResult {
        let meta = ObjectMeta { key: KEY.to_string(), generation: 1.into(), created_at_us: 0, size: 4 };
        Ok(BlobOutcome::Got { bytes: Bytes::from_static(b"slot"), meta })
    }

    #[test]
    fn a_read_after_a_timed_out_create_closes_the_wait() {
        let mut w = AmbiguityWatch::default();
        w.on_answer(at(100), &create(), &Err(BlobError::Timeout));
        w.on_answer(at(150), &get(), &Err(BlobError::Throttled));
        assert_eq!(w.open(), 1, "a throttled read settles nothing");
        w.on_answer(at(400), &get(), &got());
        assert_eq!((w.open(), w.longest_us(at(10_000))), (0, 300_000));
    }

    #[test]
    fn absent_then_created_again_ambiguously_opens_a_new_wait() {
        let mut w = AmbiguityWatch::default();
        w.on_answer(at(0), &create(), &Err(BlobError::Unavailable));
        w.on_answer(at(10), &get(), &Err(BlobError::NotFound));
        w.on_answer(at(20), &create(), &Err(BlobError::Timeout));
        assert_eq!(w.open(), 1);
        assert_eq!(w.longest_us(at(50)), 30_000, "the second wait, still open, is the longest");
    }

    #[test]
    fn an_ambiguous_answer_after_the_name_was_decided_opens_nothing() {
        // A hedged twin landed first; the original's timeout arrives afterwards.
        let mut w = AmbiguityWatch::default();
        w.on_answer(at(0), &create(), &Err(BlobError::AlreadyExists));
        w.on_answer(at(2_000), &create(), &Err(BlobError::Timeout));
        assert_eq!((w.open(), w.longest_us(at(60_000))), (0, 0));
    }

    #[test]
    fn a_wait_never_settled_counts_until_the_end() {
        let mut w = AmbiguityWatch::default();
        w.on_answer(at(1_000), &create(), &Err(BlobError::Timeout));
        assert_eq!(w.longest_us(at(41_000)), 40_000_000);
    }
}
