//! The simulation's random sources and the few distributions they sample.
//!
//! Each concern gets its own ChaCha8 stream, keyed from the run seed through blake3's key
//! derivation, so that changing how one concern draws (say, the fault rates) leaves the
//! other's draws where they were.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

use crate::math;

/// 2^-53: the spacing of the 53-bit grid `unit` draws from.
const UNIT_SCALE: f64 = 1.0 / 9_007_199_254_740_992.0;

/// One seeded stream.
#[derive(Clone, Debug)]
pub(crate) struct SimRng(ChaCha8Rng);

impl SimRng {
    /// The stream named `context` for `seed`. `context` is a fixed string per concern.
    pub(crate) fn derive(seed: u64, context: &'static str) -> Self {
        SimRng(ChaCha8Rng::from_seed(blake3::derive_key(context, &seed.to_le_bytes())))
    }

    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 * UNIT_SCALE
    }

    /// Uniform in [lo, hi).
    pub(crate) fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        assert!(lo <= hi);
        lo + (hi - lo) * self.unit()
    }

    /// Uniform in [0, n) (n > 0), by widening multiply; the bias is below 2^-32 for the
    /// ranges the store uses.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        ((u128::from(self.0.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Standard normal, by Marsaglia's polar form of Box-Muller (no trigonometry, so it
    /// stays inside the deterministic arithmetic of [`math`]). The second variate is
    /// dropped so a draw never depends on an earlier one.
    pub(crate) fn normal(&mut self) -> f64 {
        loop {
            let u = 2.0 * self.unit() - 1.0;
            let v = 2.0 * self.unit() - 1.0;
            let s = u * u + v * v;
            if s > 0.0 && s < 1.0 {
                return u * (-2.0 * math::ln(s) / s).sqrt();
            }
        }
    }

    /// Exponential with the given mean: the gap between Poisson arrivals.
    pub(crate) fn exponential(&mut self, mean: f64) -> f64 {
        -mean * math::ln(1.0 - self.unit())
    }

    /// True with probability `p`.
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Lognormal with the given median and log-space standard deviation.
    pub(crate) fn lognormal(&mut self, median: f64, sigma: f64) -> f64 {
        median * math::exp(sigma * self.normal())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let mut a = SimRng::derive(7, "slotlog-sim gcs test a");
        let mut b = SimRng::derive(7, "slotlog-sim gcs test a");
        let mut c = SimRng::derive(7, "slotlog-sim gcs test c");
        let xs: Vec<u64> = (0..8).map(|_| a.below(1 << 40)).collect();
        let ys: Vec<u64> = (0..8).map(|_| b.below(1 << 40)).collect();
        let zs: Vec<u64> = (0..8).map(|_| c.below(1 << 40)).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
    }

    #[test]
    fn normal_has_zero_mean_and_unit_variance() {
        let mut r = SimRng::derive(1, "slotlog-sim gcs test normal");
        let n = 50_000;
        let xs: Vec<f64> = (0..n).map(|_| r.normal()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.02, "mean {mean}");
        assert!((var - 1.0).abs() < 0.03, "variance {var}");
    }

    #[test]
    fn unit_stays_in_the_half_open_interval() {
        let mut r = SimRng::derive(3, "slotlog-sim gcs test unit");
        for _ in 0..10_000 {
            let u = r.unit();
            assert!((0.0..1.0).contains(&u));
        }
    }
}
