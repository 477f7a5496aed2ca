//! Latency distributions: the shape of one call's service time before load, tails,
//! spikes and transfer are applied.

use core::time::Duration;

use crate::math;
use crate::rng::SimRng;
use crate::time::micros;

/// The standard normal's 99th percentile: a lognormal's p99 is `median * e^(Z99 * sigma)`.
const Z99: f64 = 2.326_347_874_040_840_8;

/// One operation's latency before scaling.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LatencyModel {
    /// Lognormal fixed by its median and 99th percentile (drawn in whole µs).
    LogNormal {
        /// The median.
        median: Duration,
        /// The 99th percentile.
        p99: Duration,
    },
    /// `base` times a uniform factor in `[1 - jitter, 1 + jitter)` (drawn in whole µs).
    Jittered {
        /// The latency before jitter.
        base: Duration,
        /// The most it scales by either way, as a fraction.
        jitter: f64,
    },
}

impl LatencyModel {
    /// Checks the parameters make a distribution; panics on a bad profile.
    pub(crate) fn validate(&self) {
        match *self {
            LatencyModel::LogNormal { median, p99 } => {
                assert!(micros(median) > 0, "lognormal median must be positive");
                assert!(p99 >= median, "lognormal p99 below its median");
            }
            LatencyModel::Jittered { base, jitter } => {
                assert!(micros(base) > 0, "jittered base must be positive");
                assert!((0.0..1.0).contains(&jitter), "jitter must be in [0, 1)");
            }
        }
    }

    /// One sample in microseconds, with the median (or base) multiplied by `median_scale`.
    pub(crate) fn sample_us(&self, rng: &mut SimRng, median_scale: f64) -> f64 {
        match *self {
            LatencyModel::LogNormal { median, p99 } => {
                let (median_us, p99_us) = (micros(median), micros(p99));
                let sigma = math::ln(p99_us as f64 / median_us as f64) / Z99;
                rng.lognormal(median_us as f64 * median_scale, sigma)
            }
            LatencyModel::Jittered { base, jitter } => {
                micros(base) as f64 * median_scale * rng.uniform(1.0 - jitter, 1.0 + jitter)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    fn quantiles(model: LatencyModel) -> (f64, f64) {
        let mut rng = SimRng::derive(11, "slotlog-sim gcs test latency");
        let mut xs: Vec<f64> = (0..40_000).map(|_| model.sample_us(&mut rng, 1.0)).collect();
        xs.sort_by(f64::total_cmp);
        (xs[xs.len() / 2], xs[xs.len() * 99 / 100])
    }

    #[test]
    fn lognormal_hits_its_median_and_p99() {
        let (p50, p99) = quantiles(LatencyModel::LogNormal { median: ms(22), p99: ms(37) });
        assert!((p50 - 22_000.0).abs() < 400.0, "p50 {p50}");
        assert!((p99 - 37_000.0).abs() < 1_200.0, "p99 {p99}");
    }

    #[test]
    fn jittered_stays_within_its_band() {
        let (p50, _) = quantiles(LatencyModel::Jittered { base: ms(45), jitter: 0.1 });
        assert!((p50 - 45_000.0).abs() < 500.0);
        let mut rng = SimRng::derive(12, "slotlog-sim gcs test latency");
        let m = LatencyModel::Jittered { base: ms(45), jitter: 0.1 };
        for _ in 0..10_000 {
            let x = m.sample_us(&mut rng, 1.0);
            assert!((40_500.0..49_500.0).contains(&x));
        }
    }
}
