//! Injected faults: the misbehaviour drawn per operation at submit, independently of the
//! latency profile (its own random stream, a fixed number of draws per operation).

use crate::rng::SimRng;
use crate::time::micros;
use core::time::Duration;

/// A spike multiplies latency by at least this much (assumed: a spike is an outlier well
/// past the profile's own tail, which reaches 5x).
pub const SPIKE_FACTOR_MIN: f64 = 5.0;

/// Rates of each injected fault, per operation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Faults {
    /// 429 that is not the envelope's: replied after a short round trip, never applied.
    pub throttle_rate: f64,
    /// 5xx: replied after a short round trip, never applied.
    pub unavailable_rate: f64,
    /// The operation applied normally but the caller timed out first.
    pub timeout_applied_rate: f64,
    /// The operation was lost and the caller timed out.
    pub timeout_lost_rate: f64,
    /// Creates only: the caller timed out and the create landed later still (the
    /// record's "a create that lands after its caller gave up").
    pub late_create_rate: f64,
    /// A late create lands at least this long after its caller's timeout (0: just
    /// after): minutes model a writer stalled between building a batch and its create
    /// reaching the store (issue 17), long enough for collection to act meanwhile.
    pub late_create_min: Duration,
    /// A late create lands up to this long after its caller's timeout.
    pub late_create_max: Duration,
    /// Latency multiplied by a uniform factor in [`SPIKE_FACTOR_MIN`], `spike_factor_max`.
    pub spike_rate: f64,
    /// See `spike_rate`.
    pub spike_factor_max: f64,
}

impl Default for Faults {
    fn default() -> Self {
        Self::none()
    }
}

impl Faults {
    /// A well-behaved store.
    pub fn none() -> Self {
        Faults {
            throttle_rate: 0.0,
            unavailable_rate: 0.0,
            timeout_applied_rate: 0.0,
            timeout_lost_rate: 0.0,
            late_create_rate: 0.0,
            late_create_min: Duration::ZERO,
            late_create_max: Duration::ZERO,
            spike_rate: 0.0,
            spike_factor_max: SPIKE_FACTOR_MIN,
        }
    }

    /// The "faults" scenario: each misbehaviour a few percent of operations.
    pub fn high() -> Self {
        Faults {
            throttle_rate: 0.03,
            unavailable_rate: 0.02,
            timeout_applied_rate: 0.02,
            timeout_lost_rate: 0.02,
            late_create_rate: 0.03,
            late_create_min: Duration::ZERO,
            late_create_max: Duration::from_secs(3),
            spike_rate: 0.02,
            spike_factor_max: 20.0,
        }
    }

    /// Creates that land minutes after their caller gave up, at `rate`, and nothing else:
    /// a stalled writer's create arriving after collection could have freed its name.
    pub fn late_creates_minutes(rate: f64, min: Duration, max: Duration) -> Self {
        Faults { late_create_rate: rate, late_create_min: min, late_create_max: max, ..Self::none() }
    }

    /// Sum of the mutually exclusive outcomes' rates (a spike combines with any).
    fn exclusive_rate_sum(&self) -> f64 {
        self.throttle_rate
            + self.unavailable_rate
            + self.timeout_applied_rate
            + self.timeout_lost_rate
            + self.late_create_rate
    }

    pub(crate) fn validate(&self) {
        for rate in [
            self.throttle_rate,
            self.unavailable_rate,
            self.timeout_applied_rate,
            self.timeout_lost_rate,
            self.late_create_rate,
            self.spike_rate,
        ] {
            assert!((0.0..=1.0).contains(&rate), "fault rate {rate} outside [0, 1]");
        }
        assert!(self.exclusive_rate_sum() <= 1.0, "fault rates sum past 1");
        assert!(self.spike_factor_max >= SPIKE_FACTOR_MIN);
        assert!(self.late_create_min <= self.late_create_max, "late creates: min past max");
    }

    /// Draw this operation's faults: always five draws, whatever comes out.
    pub(crate) fn draw(&self, rng: &mut SimRng, is_create: bool) -> Draw {
        let u_kind = rng.unit();
        let u_spike = rng.unit();
        let u_spike_factor = rng.unit();
        let u_late = rng.unit();
        let u_envelope = rng.unit();
        let mut edge = 0.0;
        let mut band = |rate: f64| {
            let lo = edge;
            edge += rate;
            (lo..edge).contains(&u_kind)
        };
        let injected = if band(self.throttle_rate) {
            Injected::Throttled
        } else if band(self.unavailable_rate) {
            Injected::Unavailable
        } else if band(self.timeout_applied_rate) {
            Injected::TimeoutApplied
        } else if band(self.timeout_lost_rate) {
            Injected::TimeoutLost
        } else if band(self.late_create_rate) && is_create {
            Injected::LateCreate
        } else {
            Injected::None
        };
        let spike_factor = (u_spike < self.spike_rate)
            .then_some(SPIKE_FACTOR_MIN + (self.spike_factor_max - SPIKE_FACTOR_MIN) * u_spike_factor);
        // In [min + 1 µs, max]: strictly after the caller's timeout. With min 0 this is
        // the draw every earlier run made.
        let span_us = micros(self.late_create_max - self.late_create_min);
        let late_by_us = micros(self.late_create_min) + 1 + (u_late * span_us as f64) as u64;
        Draw { injected, spike_factor, late_by_us, u_envelope }
    }
}

/// The mutually exclusive injected outcomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Injected {
    None,
    Throttled,
    Unavailable,
    TimeoutApplied,
    TimeoutLost,
    LateCreate,
}

/// One operation's fault draws.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Draw {
    pub injected: Injected,
    pub spike_factor: Option<f64>,
    /// How long after the caller's timeout a late create lands.
    pub late_by_us: u64,
    /// The uniform the envelope's 429 decision compares against.
    pub u_envelope: f64,
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{small_create, Shape};
    use super::super::{GcsConfig, PlannedReply, ProfileKind, SimGcs};
    use super::*;
    use slotlog_kernel::blob::{BlobError, BlobOp};
    use slotlog_kernel::time::Instant;
    use std::collections::BTreeMap;

    const N: u64 = 40_000;

    /// Within four standard deviations of the binomial expectation.
    fn assert_rate(what: &str, seen: u64, n: u64, rate: f64) {
        let expected = n as f64 * rate;
        let sd = (n as f64 * rate * (1.0 - rate)).sqrt();
        assert!(
            (seen as f64 - expected).abs() <= 4.0 * sd + 1.0,
            "{what}: {seen} of {n}, expected {expected:.0} ± {:.0}",
            4.0 * sd
        );
    }

    #[test]
    fn each_fault_occurs_at_its_rate_with_its_apply_and_reply_shape() {
        let faults = Faults::high();
        let config = GcsConfig::of(ProfileKind::GcsShaped).with_faults(faults);
        let timeout_us = micros(config.client_timeout);
        let mut gcs = SimGcs::new(config, 21);
        let mut shapes: BTreeMap<Shape, u64> = BTreeMap::new();
        let mut spikes = 0;
        for i in 0..N {
            // 10 creates/s: far from the envelope (which gcs-shaped does not have anyway).
            let now = Instant::from_micros(1_000 + i * 100_000);
            let plan = gcs.submit(now, &small_create(&format!("k{i}")));
            let shape = Shape::of(&plan, now);
            *shapes.entry(shape).or_default() += 1;
            let reply_us = plan.reply_at.as_micros() - now.as_micros();
            match shape {
                Shape::Throttled | Shape::Unavailable => {
                    assert!(plan.apply_at.is_none());
                    assert!(reply_us < timeout_us / 10, "a refusal is a short round trip");
                }
                Shape::TimeoutApplied => {
                    let apply = plan.apply_at.unwrap();
                    assert_eq!(reply_us, timeout_us);
                    assert!(now < apply && apply < plan.reply_at);
                }
                Shape::TimeoutLost => assert_eq!(reply_us, timeout_us),
                Shape::LateCreate => {
                    assert_eq!(reply_us, timeout_us);
                    let late_us = plan.apply_at.unwrap().as_micros() - plan.reply_at.as_micros();
                    assert!((1..=micros(faults.late_create_max)).contains(&late_us));
                }
                Shape::Applied => {
                    let apply = plan.apply_at.unwrap();
                    assert!(now < apply && apply < plan.reply_at);
                    // gcs-shaped creates are at most 49.5 ms unspiked, at least 202 spiked.
                    if reply_us > 100_000 {
                        spikes += 1;
                        assert!(reply_us >= 202_500);
                    }
                }
            }
        }
        let count = |s: Shape| shapes.get(&s).copied().unwrap_or(0);
        assert_rate("throttled", count(Shape::Throttled), N, faults.throttle_rate);
        assert_rate("unavailable", count(Shape::Unavailable), N, faults.unavailable_rate);
        assert_rate("timeout applied", count(Shape::TimeoutApplied), N, faults.timeout_applied_rate);
        assert_rate("timeout lost", count(Shape::TimeoutLost), N, faults.timeout_lost_rate);
        assert_rate("late create", count(Shape::LateCreate), N, faults.late_create_rate);
        // Spikes are drawn for every operation but only land on those that run their
        // normal course (applied, or applied with a timeout reply).
        let normal = count(Shape::Applied) + count(Shape::TimeoutApplied);
        assert_rate("spike", gcs.stats().spikes, normal, faults.spike_rate);
        assert!(spikes > 0 && spikes <= gcs.stats().spikes);
        let stats = gcs.stats();
        assert_eq!(stats.creates, N);
        assert_eq!(stats.throttled, count(Shape::Throttled));
        assert_eq!(stats.unavailable, count(Shape::Unavailable));
        assert_eq!(stats.late_creates, count(Shape::LateCreate));
        assert_eq!(
            stats.timeouts,
            count(Shape::TimeoutApplied) + count(Shape::TimeoutLost) + count(Shape::LateCreate)
        );
    }

    #[test]
    fn late_creates_apply_after_their_reply_and_only_for_creates() {
        let faults =
            Faults { late_create_rate: 1.0, late_create_max: Duration::from_secs(3), ..Faults::none() };
        let mut gcs = SimGcs::new(GcsConfig::of(ProfileKind::Fast).with_faults(faults), 4);
        let now = Instant::from_millis(10);
        for i in 0..100 {
            let plan = gcs.submit(now, &small_create(&format!("k{i}")));
            assert_eq!(plan.reply, PlannedReply::Fault(BlobError::Timeout));
            assert!(plan.apply_at.unwrap() > plan.reply_at);
        }
        let get = gcs.submit(now, &BlobOp::Get { key: "k0".into() });
        assert_eq!(get.reply, PlannedReply::Applied);
    }

    #[test]
    fn late_creates_land_minutes_later_even_into_a_name_deleted_meanwhile() {
        use slotlog_kernel::blob::BlobOutcome;
        let faults = Faults::late_creates_minutes(1.0, Duration::from_secs(120), Duration::from_secs(600));
        for kind in [ProfileKind::Gcs, ProfileKind::S3] {
            let config = GcsConfig::of(kind).with_faults(faults);
            let timeout_us = micros(config.client_timeout);
            let mut gcs = SimGcs::new(config, 9);
            let issued = Instant::from_millis(1_000);
            let mut applies = Vec::new();
            for i in 0..200 {
                let plan = gcs.submit(issued, &small_create(&format!("k{i}")));
                assert_eq!(plan.reply, PlannedReply::Fault(BlobError::Timeout));
                let late_us = plan.apply_at.unwrap().as_micros() - issued.as_micros() - timeout_us;
                assert!((120_000_001..=600_000_000).contains(&late_us), "{kind}: late by {late_us} µs");
                applies.push(plan.apply_at.unwrap());
            }
            // Meanwhile a peer creates k0 and a collector deletes it.
            let peer = gcs.apply(Instant::from_millis(1_100), &small_create("k0"));
            let Ok(BlobOutcome::Created(meta)) = peer else { panic!("{peer:?}") };
            let del = BlobOp::Delete { key: "k0".into(), if_generation: meta.generation };
            assert_eq!(gcs.apply(Instant::from_millis(60_000), &del), Ok(BlobOutcome::Deleted));
            // The stale create lands into the free name: nothing fences it at the store.
            let late = gcs.apply(applies[0], &small_create("k0"));
            assert!(matches!(late, Ok(BlobOutcome::Created(_))), "{kind}: {late:?}");
            assert_eq!(gcs.object("k0").unwrap().1.created_at_us, applies[0].as_micros());
        }
    }

    #[test]
    fn an_operation_slower_than_the_client_timeout_is_a_timeout_that_applied() {
        let faults = Faults { spike_rate: 1.0, spike_factor_max: 100.0, ..Faults::none() };
        let config = GcsConfig::of(ProfileKind::GcsShaped).with_faults(faults);
        let timeout_us = micros(config.client_timeout);
        let mut gcs = SimGcs::new(config, 8);
        let mut late_applies = 0;
        for i in 0..1_000 {
            let now = Instant::from_millis(i * 100);
            let plan = gcs.submit(now, &small_create(&format!("k{i}")));
            let apply = plan.apply_at.expect("slow operations still apply");
            if plan.reply == PlannedReply::Fault(BlobError::Timeout) {
                assert_eq!(plan.reply_at.as_micros() - now.as_micros(), timeout_us);
                late_applies += usize::from(apply > plan.reply_at);
            } else {
                assert!(plan.reply_at.as_micros() - now.as_micros() <= timeout_us);
            }
        }
        // 45 ms x [5, 100): over 2 s from ~44x; the apply point is past 2 s for some.
        assert!(late_applies > 50, "{late_applies} applied after the timeout");
    }
}
