//! The store's clock, as far as a replica can know it (SPEC 10.15). Ages that decide
//! what collection deletes and what a create freshens come from the store's own creation
//! times, never from a replica's clock: two replicas' clocks may disagree by any offset,
//! while a duration measured on one replica's clock is a duration on the store's.
//!
//! Every creation time a replica sees (of an object it created, read or listed) is a
//! moment the store has already passed, so the newest one seen, plus the local time
//! elapsed since it was seen, is a lower bound on the store's clock now (short by at
//! most the latency of the answer that carried it).

use crate::blob::{BlobOutcome, BlobResult, WriteTime};
use crate::time::Instant;

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StoreClock {
    /// The newest store time seen, and the local instant it arrived; None before any.
    seen: Option<(u64, Instant)>,
}

impl StoreClock {
    /// Learns from every store time in `result`.
    pub fn observe(&mut self, result: &BlobResult, now: Instant) {
        let newest = match result {
            Ok(BlobOutcome::Created(w) | BlobOutcome::Rewritten(w)) => w.time.map(WriteTime::reached_us),
            Ok(BlobOutcome::Stat(m)) => Some(m.created_at_us),
            Ok(BlobOutcome::Got { meta, .. }) => Some(meta.created_at_us),
            Ok(BlobOutcome::Listed { entries, .. }) => entries.iter().map(|e| e.created_at_us).max(),
            Ok(BlobOutcome::Deleted) | Err(_) => None,
        };
        if let Some(store_us) = newest {
            if self.now_us(now).is_none_or(|known| store_us > known) {
                self.seen = Some((store_us, now));
            }
        }
    }

    /// A lower bound on the store's clock at local instant `now`, in microseconds; None
    /// until the store has answered with a time.
    pub fn now_us(&self, now: Instant) -> Option<u64> {
        self.seen.map(|(store_us, at)| store_us + now.saturating_since(at).as_micros() as u64)
    }

    /// The newest store time seen, as it was: no local time added, so it holds however
    /// the replica's own clock behaved since.
    pub fn seen_us(&self) -> Option<u64> {
        self.seen.map(|(store_us, _)| store_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::ObjectMeta;

    fn created(at_us: u64) -> BlobResult {
        let meta = ObjectMeta { key: "k".into(), generation: 1.into(), created_at_us: at_us, size: 0 };
        Ok(BlobOutcome::Created(meta.into()))
    }

    #[test]
    fn the_estimate_runs_on_from_the_newest_time_seen() {
        let mut clock = StoreClock::default();
        assert_eq!(clock.now_us(Instant::from_millis(5)), None);
        clock.observe(&created(1_000_000), Instant::from_millis(10));
        assert_eq!(clock.now_us(Instant::from_millis(110)), Some(1_100_000));
    }

    #[test]
    fn an_older_time_seen_later_does_not_move_the_estimate_back() {
        let mut clock = StoreClock::default();
        clock.observe(&created(1_000_000), Instant::from_millis(10));
        clock.observe(&created(900_000), Instant::from_millis(20));
        assert_eq!(clock.now_us(Instant::from_millis(20)), Some(1_010_000));
        clock.observe(&created(2_000_000), Instant::from_millis(30));
        assert_eq!(clock.now_us(Instant::from_millis(30)), Some(2_000_000));
    }

    #[test]
    fn failures_and_deletes_carry_no_time() {
        let mut clock = StoreClock::default();
        clock.observe(&Err(crate::blob::BlobError::Timeout), Instant::ZERO);
        clock.observe(&Ok(BlobOutcome::Deleted), Instant::ZERO);
        assert_eq!(clock.now_us(Instant::ZERO), None);
    }
}
