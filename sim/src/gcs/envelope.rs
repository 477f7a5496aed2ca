//! The bucket's write envelope: object writes per second over the last second, and what
//! the bucket does past its comfortable rate (slower, then 429s).

/// Width of one bucket of the write-rate ring.
pub const WRITE_RATE_BUCKET_US: u64 = 100_000;
/// Buckets in the one-second window: ten of 100 ms.
pub const WRITE_RATE_BUCKETS: u64 = 10;
/// Slots in the ring: the window plus the bucket now filling, so the oldest bucket can be
/// weighted by how much of it is still inside the last second.
const WRITE_RATE_SLOTS: usize = WRITE_RATE_BUCKETS as usize + 1;

/// Where the bucket's latency and refusals start to climb with the write rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Envelope {
    /// Above this many object writes per second, write latency climbs (record: "latency
    /// doubles from about 1,000 creates/s").
    pub latency_doubles_from_per_s: f64,
    /// Each this many writes/s beyond `latency_doubles_from_per_s` adds one more times
    /// the latency: 200 makes it double at ~1,200/s.
    pub latency_slope_per_s: f64,
    /// Above this many object writes per second, writes get 429s (record: "429s past
    /// about 1,200/s").
    pub throttle_from_per_s: f64,
    /// The refusal probability grows by one over this many writes/s past the threshold
    /// (assumed: 600, so refusals reach their cap at ~1,740/s).
    pub throttle_slope_per_s: f64,
    /// The bucket never refuses every write (assumed 0.9: some get through at any rate).
    pub throttle_probability_max: f64,
}

impl Default for Envelope {
    fn default() -> Self {
        Envelope {
            latency_doubles_from_per_s: 1_000.0,
            latency_slope_per_s: 200.0,
            throttle_from_per_s: 1_200.0,
            throttle_slope_per_s: 600.0,
            throttle_probability_max: 0.9,
        }
    }
}

impl Envelope {
    /// Multiplier on a write's latency at `rate_per_s`.
    pub fn latency_factor(&self, rate_per_s: f64) -> f64 {
        if rate_per_s <= self.latency_doubles_from_per_s {
            return 1.0;
        }
        1.0 + (rate_per_s - self.latency_doubles_from_per_s) / self.latency_slope_per_s
    }

    /// Probability a write is refused with a 429 at `rate_per_s`.
    pub fn throttle_probability(&self, rate_per_s: f64) -> f64 {
        if rate_per_s <= self.throttle_from_per_s {
            return 0.0;
        }
        ((rate_per_s - self.throttle_from_per_s) / self.throttle_slope_per_s)
            .min(self.throttle_probability_max)
    }

    pub(crate) fn validate(&self) {
        assert!(self.latency_doubles_from_per_s >= 0.0);
        assert!(self.latency_slope_per_s > 0.0);
        assert!(self.throttle_from_per_s >= 0.0);
        assert!(self.throttle_slope_per_s > 0.0);
        assert!((0.0..=1.0).contains(&self.throttle_probability_max));
    }
}

/// Object writes submitted over the last second, in a fixed ring of 100 ms buckets.
///
/// The estimate is a sliding window: the bucket now filling, the nine before it, and the
/// one before those weighted by the part of it still within the last second, so a steady
/// rate reads as itself rather than as a 10% sawtooth.
///
/// Expects submits in non-decreasing time, as a discrete-event harness gives them; a
/// write slightly out of order is counted in its own bucket while that bucket is still in
/// the ring, and dropped otherwise.
#[derive(Clone, Debug, Default)]
pub struct WriteRate {
    /// Per slot: which 100 ms period it holds, and the writes in it.
    period: [u64; WRITE_RATE_SLOTS],
    count: [u64; WRITE_RATE_SLOTS],
    /// The latest period seen.
    period_latest: u64,
}

impl WriteRate {
    fn slot(period: u64) -> usize {
        (period % WRITE_RATE_SLOTS as u64) as usize
    }

    /// Count one write at `now_us` and return the rate including it.
    pub fn record(&mut self, now_us: u64) -> f64 {
        let period = now_us / WRITE_RATE_BUCKET_US;
        self.period_latest = self.period_latest.max(period);
        if period + WRITE_RATE_BUCKETS >= self.period_latest {
            let s = Self::slot(period);
            if self.period[s] != period {
                self.period[s] = period;
                self.count[s] = 0;
            }
            self.count[s] += 1;
        }
        self.rate_per_s(now_us)
    }

    /// Writes per second over the second ending at `now_us` (or at the latest write
    /// seen, if that is later).
    pub fn rate_per_s(&self, now_us: u64) -> f64 {
        let now_period = now_us / WRITE_RATE_BUCKET_US;
        let (current, elapsed) = if now_period >= self.period_latest {
            let in_bucket_us = now_us % WRITE_RATE_BUCKET_US;
            (now_period, in_bucket_us as f64 / WRITE_RATE_BUCKET_US as f64)
        } else {
            (self.period_latest, 1.0)
        };
        let mut total = 0.0;
        for s in 0..WRITE_RATE_SLOTS {
            let (p, n) = (self.period[s], self.count[s]);
            if n == 0 || p > current {
                continue;
            }
            let age = current - p;
            if age < WRITE_RATE_BUCKETS {
                total += n as f64;
            } else if age == WRITE_RATE_BUCKETS {
                total += n as f64 * (1.0 - elapsed);
            }
        }
        // The window is exactly one second long.
        total
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{small_create, Shape};
    use super::super::{GcsConfig, ProfileKind, SimGcs};
    use super::*;
    use slotlog_kernel::time::Instant;

    #[test]
    fn write_rate_counts_the_last_second() {
        let mut r = WriteRate::default();
        for i in 0..500 {
            r.record(i * 2_000); // 500 writes/s for one second
        }
        assert!((r.rate_per_s(999_000) - 500.0).abs() < 1.0);
        // Two seconds later the window is empty.
        assert_eq!(r.rate_per_s(3_000_000), 0.0);
        assert_eq!(r.record(3_000_000), 1.0);
    }

    #[test]
    fn envelope_factors_follow_the_record() {
        let e = Envelope::default();
        assert_eq!(e.latency_factor(900.0), 1.0);
        assert!((e.latency_factor(1_200.0) - 2.0).abs() < 1e-12);
        assert_eq!(e.throttle_probability(1_200.0), 0.0);
        assert!((e.throttle_probability(1_500.0) - 0.5).abs() < 1e-12);
        assert_eq!(e.throttle_probability(10_000.0), 0.9);
    }

    /// Submit creates at `per_s` for `secs` seconds; return (throttled, total) over the
    /// last second (the window is full by then).
    fn throttles_at(per_s: u64, secs: u64) -> (usize, usize) {
        let mut gcs = SimGcs::new(GcsConfig::of(ProfileKind::Gcs), 5);
        let gap_us = 1_000_000 / per_s;
        let n = per_s * secs;
        let mut last_second = (0, 0);
        for i in 0..n {
            let now = Instant::from_micros(i * gap_us);
            let plan = gcs.submit(now, &small_create(&format!("k{i}")));
            if i >= n - per_s {
                last_second.1 += 1;
                if Shape::of(&plan, now) == Shape::Throttled {
                    last_second.0 += 1;
                }
            }
        }
        last_second
    }

    #[test]
    fn envelope_throttles_past_1200_writes_per_second_and_not_at_500() {
        let (throttled, total) = throttles_at(500, 3);
        assert_eq!(throttled, 0, "no 429s at 500 writes/s ({total} writes)");
        let (throttled, total) = throttles_at(2_000, 3);
        let share = throttled as f64 / total as f64;
        // At 2,000 submitted/s the probability is capped at 0.9.
        assert!((0.85..0.95).contains(&share), "429 share at 2,000/s: {share}");
        let (throttled, total) = throttles_at(1_500, 3);
        let share = throttled as f64 / total as f64;
        assert!((0.45..0.55).contains(&share), "429 share at 1,500/s: {share}");
    }

    #[test]
    fn envelope_doubles_write_latency_near_1200_per_second() {
        let median_ms = |per_s: u64| {
            let mut gcs = SimGcs::new(GcsConfig::of(ProfileKind::Gcs), 9);
            let gap_us = 1_000_000 / per_s;
            let mut ms: Vec<f64> = (0..per_s * 3)
                .filter_map(|i| {
                    let now = Instant::from_micros(i * gap_us);
                    let plan = gcs.submit(now, &small_create(&format!("k{i}")));
                    (i >= per_s && Shape::of(&plan, now) == Shape::Applied)
                        .then(|| plan.reply_at.saturating_since(now).as_secs_f64() * 1e3)
                })
                .collect();
            ms.sort_by(f64::total_cmp);
            ms[ms.len() / 2]
        };
        let at_1000 = median_ms(1_000);
        let at_1200 = median_ms(1_200);
        assert!((50.0..54.0).contains(&at_1000), "median at 1,000/s: {at_1000}");
        assert!((at_1200 / at_1000 - 2.0).abs() < 0.1, "1,200/s over 1,000/s: {}", at_1200 / at_1000);
    }
}
