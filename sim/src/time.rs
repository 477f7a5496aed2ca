//! Configured durations in the units the simulator counts and draws in. A configuration
//! speaks `Duration`; virtual time is whole µs, and some draws are made in ms.

use core::time::Duration;

/// Whole µs (virtual time's unit) and whole ms, saturating: the kernel's conversions.
pub(crate) use slotlog_kernel::time::{micros, millis};

/// `d` in ms with its µs as a fraction: for draws made in ms. Exact for whole ms, so a
/// draw is the one a count of ms made.
pub(crate) fn millis_f64(d: Duration) -> f64 {
    micros(d) as f64 / 1_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_ms_convert_exactly() {
        for ms in [0, 1, 5, 300, 2_000, 3_600_000, 48 * 3_600_000] {
            let d = Duration::from_millis(ms);
            assert_eq!((micros(d), millis(d), millis_f64(d)), (ms * 1_000, ms, ms as f64));
        }
    }

    #[test]
    fn past_u64_saturates() {
        assert_eq!((micros(Duration::MAX), millis(Duration::MAX)), (u64::MAX, u64::MAX));
    }
}
