//! Explicit time. The kernel never reads a clock: every entry point takes `now`.

use core::ops::{Add, Sub};
use core::time::Duration;

/// A point in time, in microseconds since an epoch the embedder chooses.
///
/// The simulation passes virtual time; the driver passes a monotonic clock. The kernel
/// only ever compares and offsets instants it was given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

impl Instant {
    /// The epoch.
    pub const ZERO: Instant = Instant(0);
    /// The latest instant.
    pub const MAX: Instant = Instant(u64::MAX);

    /// The instant `us` µs after the epoch.
    pub const fn from_micros(us: u64) -> Self {
        Instant(us)
    }

    /// The instant `ms` ms after the epoch.
    pub const fn from_millis(ms: u64) -> Self {
        Instant(ms * 1_000)
    }

    /// µs since the epoch.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// ms since the epoch, with the µs as a fraction.
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1_000.0
    }

    /// Time from `earlier` to `self`, zero when `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0))
    }
}

/// `d` in whole µs, saturating at `u64::MAX`: how the kernel compares a configured
/// `Duration` with a store's µs timestamps, and the simulator counts virtual time.
pub fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// `d` in whole ms, saturating at `u64::MAX`: for draws made in ms (a checkpoint's jitter,
/// the simulator's draws).
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.as_micros().min(u64::MAX as u128) as u64))
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Panics in debug builds when `rhs` is later: callers that may see that use
    /// [`Instant::saturating_since`].
    fn sub(self, rhs: Instant) -> Duration {
        invariant!(self.0 >= rhs.0, "instant subtraction went negative");
        Duration::from_micros(self.0.saturating_sub(rhs.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_saturates_instead_of_wrapping() {
        assert_eq!(Instant::MAX + Duration::from_secs(1), Instant::MAX);
    }

    #[test]
    fn since_is_zero_for_a_later_instant() {
        let a = Instant::from_millis(5);
        let b = Instant::from_millis(7);
        assert_eq!(a.saturating_since(b), Duration::ZERO);
        assert_eq!(b.saturating_since(a), Duration::from_millis(2));
    }
}
