//! Bounded telemetry: when each write passed its phases (queued, built, sent, created,
//! confirmed), samples of slow writes and reads, and the warnings and errors the driver loop met,
//! kept in a queue of fixed capacity that drops (and counts) what does not fit instead of
//! ever holding up the loop. The last quarter of the queue is reserved for warnings and
//! errors, so a flood of slow writes cannot crowd out the sample that says why.
//!
//! Owns the samples and their counters; the loop (`runtime`) feeds it, and
//! [`World::telemetry`](crate::World::telemetry) takes what it holds.

use slotlog_kernel::ids::{OperationId, RequestId};
use slotlog_kernel::time::Instant as KernelInstant;
use slotlog_kernel::WritePhases;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// Samples the queue holds at most, by default: 256 (at about 300 bytes each, under
/// 100 KiB per world whoever reads them or not).
pub const TELEMETRY_SAMPLES_MAX: usize = 256;

/// When one write passed each phase of the write path, as times since its world was
/// opened on this handle: queued ≤ built ≤ sent ≤ created ≤ confirmed. A write answered
/// with no slot (unchanged, a duplicate, rejected) has no `sent` or `created`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteTimings {
    /// The write's operation id.
    pub op_id: OperationId,
    /// Handed to the replica (its command taken off the queue).
    pub queued: Duration,
    /// Judged into its batch (the last time, when a lost race requeued it).
    pub built: Duration,
    /// Its slot's first create sent.
    pub sent: Option<Duration>,
    /// Its slot known to have landed.
    pub created: Option<Duration>,
    /// Its slot installed and the write answered.
    pub confirmed: Duration,
}

impl WriteTimings {
    /// From queued to confirmed.
    pub fn total(&self) -> Duration {
        self.confirmed.saturating_sub(self.queued)
    }
}

/// What a sample records.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SampleKind {
    /// A write that took longer than `WorldConfig::slow_request_after` from queued to
    /// confirmed.
    SlowWrite(WriteTimings),
    /// A read that took longer than `WorldConfig::slow_request_after` from handed in to
    /// answered.
    SlowRead {
        /// An exact read (it checks the tip), or a catalog read.
        exact: bool,
        /// When it was handed in (since the world was opened on this handle).
        queued: Duration,
        /// From handed in to answered.
        took: Duration,
    },
    /// Something that cost time but not correctness (a transient store failure, a
    /// checkpoint skipped, a reload).
    Warning(String),
    /// The world failed closed or stopped.
    Error(String),
}

/// One sample, with when it was taken (since the world was opened on this handle).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sample {
    /// When it was taken.
    pub at: Duration,
    /// What it records.
    pub kind: SampleKind,
}

impl Sample {
    fn reserved(&self) -> bool {
        matches!(self.kind, SampleKind::Warning(_) | SampleKind::Error(_))
    }
}

/// Telemetry's counters, as [`WorldStats`](crate::WorldStats) carries them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TelemetryStats {
    /// Writes whose phases were timed.
    pub writes_timed: u64,
    /// Of those, slower than `slow_request_after`.
    pub slow_writes: u64,
    /// Reads answered slower than `slow_request_after`.
    pub slow_reads: u64,
    /// Warnings sampled...
    pub warnings: u64,
    /// ...and errors.
    pub errors: u64,
    /// Samples dropped because the queue was full (for slow writes: its unreserved part).
    pub samples_dropped: u64,
    /// The longest write from queued to confirmed.
    pub write_us_max: u64,
}

/// What [`World::telemetry`](crate::World::telemetry) hands back: the samples taken since
/// the last call, oldest first, and the counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Telemetry {
    /// The samples, oldest first.
    pub samples: Vec<Sample>,
    /// The counters since the world was opened on this handle.
    pub stats: TelemetryStats,
}

/// A queue of at most `capacity` samples; slow writes and reads may fill only the part outside the
/// reserve (its last quarter), warnings and errors all of it. Full: the new sample is
/// dropped and counted, never an old one moved or the caller made to wait.
pub(crate) struct Samples {
    queue: VecDeque<Sample>,
    capacity: usize,
    reserved: usize,
    /// A write slower than this from queued to confirmed is sampled.
    slow_after: Duration,
    pub stats: TelemetryStats,
}

impl Samples {
    pub fn new(capacity: usize, slow_after: Duration) -> Samples {
        let reserved = capacity / 4;
        Samples { queue: VecDeque::new(), capacity, reserved, slow_after, stats: TelemetryStats::default() }
    }

    /// Keeps `sample` if it fits; false when it was dropped.
    pub fn push(&mut self, sample: Sample) -> bool {
        let room = if sample.reserved() { self.capacity } else { self.capacity - self.reserved };
        if self.queue.len() >= room {
            self.stats.samples_dropped += 1;
            return false;
        }
        self.queue.push_back(sample);
        debug_assert!(self.queue.len() <= self.capacity);
        true
    }

    /// Everything held, oldest first; the queue is empty after.
    pub fn take(&mut self) -> Telemetry {
        Telemetry { samples: self.queue.drain(..).collect(), stats: self.stats.clone() }
    }

    /// A warning: sampled, and logged at `warn`.
    pub fn warning(&mut self, at: Duration, what: String) {
        self.stats.warnings += 1;
        self.push(Sample { at, kind: SampleKind::Warning(what) });
    }

    /// An error: sampled (logging is the caller's: it says more).
    pub fn error(&mut self, at: Duration, what: String) {
        self.stats.errors += 1;
        self.push(Sample { at, kind: SampleKind::Error(what) });
    }

    /// A write answered from its batch: traced at `debug`, and at `warn` with a sample
    /// when slower than `slow_after`.
    pub fn write_answered(&mut self, op_id: OperationId, phases: &WritePhases) {
        let since = |i: KernelInstant| Duration::from_micros(i.as_micros());
        let timings = WriteTimings {
            op_id,
            queued: since(phases.queued),
            built: since(phases.built),
            sent: phases.sent.map(since),
            created: phases.created.map(since),
            confirmed: since(phases.confirmed),
        };
        let total = timings.total();
        self.stats.writes_timed += 1;
        self.stats.write_us_max = self.stats.write_us_max.max(total.as_micros() as u64);
        let ms = |d: Duration| d.saturating_sub(timings.queued).as_secs_f64() * 1e3;
        let (built_ms, confirmed_ms) = (ms(timings.built), ms(timings.confirmed));
        let created_ms = timings.created.map(ms);
        if total <= self.slow_after {
            tracing::debug!(%op_id, built_ms, ?created_ms, confirmed_ms, "write phases");
            return;
        }
        self.stats.slow_writes += 1;
        tracing::warn!(%op_id, built_ms, ?created_ms, confirmed_ms, "slow write");
        self.push(Sample { at: timings.confirmed, kind: SampleKind::SlowWrite(timings) });
    }

    /// A read answered: sampled, and logged at `warn`, when slower than `slow_after`.
    pub fn read_answered(&mut self, exact: bool, queued: KernelInstant, answered: KernelInstant) {
        let took = answered.saturating_since(queued);
        if took <= self.slow_after {
            return;
        }
        self.stats.slow_reads += 1;
        let took_ms = took.as_secs_f64() * 1e3;
        tracing::warn!(exact, took_ms, "slow read");
        let queued = Duration::from_micros(queued.as_micros());
        let at = Duration::from_micros(answered.as_micros());
        self.push(Sample { at, kind: SampleKind::SlowRead { exact, queued, took } });
    }
}

/// Operation ids of the writes answered in one drain of effects, to name their phases.
pub(crate) type Answered = BTreeMap<RequestId, OperationId>;

#[cfg(test)]
mod tests {
    use super::*;

    fn slow(n: u64) -> Sample {
        let d = Duration::from_millis(n);
        let timings = WriteTimings {
            op_id: OperationId([n as u8; 16]),
            queued: Duration::ZERO,
            built: d,
            sent: Some(d),
            created: Some(d),
            confirmed: d,
        };
        Sample { at: d, kind: SampleKind::SlowWrite(timings) }
    }

    fn warning(n: u64) -> Sample {
        Sample { at: Duration::from_millis(n), kind: SampleKind::Warning(format!("w{n}")) }
    }

    #[test]
    fn a_full_queue_drops_new_samples_and_counts_them() {
        let mut samples = Samples::new(8, Duration::ZERO);
        for n in 0..8 {
            samples.push(warning(n));
        }
        assert!(!samples.push(warning(8)));
        assert!(!samples.push(slow(9)));
        let taken = samples.take();
        assert_eq!(taken.samples.len(), 8);
        assert_eq!(taken.samples[0], warning(0), "the oldest stay; the new are dropped");
        assert_eq!(taken.stats.samples_dropped, 2);
    }

    #[test]
    fn slow_writes_leave_the_last_quarter_to_warnings_and_errors() {
        let mut samples = Samples::new(8, Duration::ZERO);
        let kept = (0..8).filter(|n| samples.push(slow(*n))).count();
        assert_eq!(kept, 6, "slow writes fill three quarters");
        assert_eq!(samples.stats.samples_dropped, 2);
        assert!(samples.push(warning(10)));
        assert!(samples.push(Sample { at: Duration::ZERO, kind: SampleKind::Error("e".into()) }));
        assert!(!samples.push(warning(11)), "full at the capacity");
        assert_eq!(samples.take().samples.len(), 8);
    }

    #[test]
    fn taking_empties_the_queue_and_keeps_the_counters() {
        let mut samples = Samples::new(4, Duration::ZERO);
        for n in 0..5 {
            samples.push(slow(n));
        }
        assert_eq!(samples.take().samples.len(), 3);
        let again = samples.take();
        assert!(again.samples.is_empty());
        assert_eq!(again.stats.samples_dropped, 2);
        assert!(samples.push(slow(6)), "room again once taken");
    }

    #[test]
    fn a_read_slower_than_the_bound_is_sampled_outside_the_reserve() {
        let mut samples = Samples::new(4, Duration::from_millis(50));
        let at = KernelInstant::from_millis;
        samples.read_answered(true, at(0), at(10));
        for _ in 0..4 {
            samples.read_answered(false, at(0), at(100));
        }
        let taken = samples.take();
        assert_eq!(taken.stats.slow_reads, 4);
        assert_eq!((taken.samples.len(), taken.stats.samples_dropped), (3, 1), "the reserve is kept");
        let took = Duration::from_millis(100);
        assert!(
            matches!(taken.samples[0].kind, SampleKind::SlowRead { exact: false, took: t, .. } if t == took)
        );
    }

    #[test]
    fn a_write_slower_than_the_bound_is_sampled_and_a_fast_one_only_counted() {
        let mut samples = Samples::new(4, Duration::from_millis(50));
        let at = KernelInstant::from_millis;
        let phases = |confirmed| WritePhases {
            request: RequestId(1),
            queued: at(10),
            built: at(11),
            sent: Some(at(12)),
            created: Some(at(13)),
            confirmed: at(confirmed),
        };
        samples.write_answered(OperationId([1; 16]), &phases(20));
        samples.write_answered(OperationId([2; 16]), &phases(100));
        let taken = samples.take();
        assert_eq!((taken.stats.writes_timed, taken.stats.slow_writes), (2, 1));
        assert_eq!(taken.stats.write_us_max, 90_000);
        let [Sample { kind: SampleKind::SlowWrite(t), .. }] = &taken.samples[..] else {
            panic!("one slow write sampled: {:?}", taken.samples)
        };
        assert_eq!((t.op_id, t.total()), (OperationId([2; 16]), Duration::from_millis(90)));
    }
}
