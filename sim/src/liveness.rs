//! A run always ends with a verdict (issue 13). A replica that stops making progress can
//! leave a simulation spinning at one virtual instant, or growing its queue or memory
//! until the machine kills the whole sweep; the watch here stops such a run and says
//! which rule it broke, so the report fails it with its repro line like any other
//! violation. The budgets are far past what any scenario needs (measured figures beside
//! each), so a run that meets one is broken, not busy.

use core::time::Duration;
use slotlog_kernel::time::Instant;

/// Bounds past which a run is stopped as not live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LivenessBudget {
    /// Events in a row at one virtual instant. Time that does not advance is a wake-up
    /// loop: the longest run of one instant in `compact` over 300 virtual seconds (four
    /// replicas, crashes and checkpoints) was 105 events.
    pub same_instant_events_max: u64,
    /// Events in one run. `compact` over 600 virtual seconds handles about 3.3 million.
    pub events_max: u64,
    /// Events waiting at once: each stands for a call, an arrival or a timer, so a queue
    /// this deep is a loop that schedules faster than it consumes.
    pub queued_events_max: usize,
    /// Version records all replicas hold together, sampled once a virtual second: the
    /// most `compact` held over 600 virtual seconds was about 17,000.
    pub resident_version_records_max: u64,
    /// How long a replica may hold writes, while the bucket injects no fault, without
    /// answering one on its merits (committed, unchanged, rejected): past it the replica
    /// is starved. Measured: the longest wait over `just test`'s sweeps is in
    /// docs/SIMULATION.md; a write's own deadline is 10 s, and a starved store lets one
    /// expire after another.
    pub starved_max: Duration,
}

impl Default for LivenessBudget {
    fn default() -> Self {
        LivenessBudget {
            same_instant_events_max: 1_000_000,
            events_max: 200_000_000,
            queued_events_max: 10_000_000,
            resident_version_records_max: 20_000_000,
            starved_max: Duration::from_secs(8),
        }
    }
}

/// Why a run was stopped before its deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotLive {
    /// Virtual time stopped advancing: a wake-up loop.
    #[error("virtual time stuck at {} us for {events} events in a row", at.as_micros())]
    TimeStuck {
        /// The instant time stayed at.
        at: Instant,
        /// Events handled there in a row.
        events: u64,
    },
    /// The run handled more events than its budget.
    #[error("the run handled {events} events, past its budget")]
    EventBudget {
        /// Events handled when it was stopped.
        events: u64,
    },
    /// More events waited at once than the budget.
    #[error("{queued} events were waiting at once, past the budget")]
    QueueBudget {
        /// Events waiting when it was stopped.
        queued: usize,
    },
    /// A replica held writes past the starvation budget, the bucket healthy, answering
    /// none on its merits.
    #[error("replica {replica} held writes for {waited_ms} ms with none committed or refused on its merits")]
    Starved {
        /// Which replica.
        replica: usize,
        /// How long it had held writes when it was stopped.
        waited_ms: u64,
    },
    /// The replicas held more version records than the budget.
    #[error("the replicas held {records} version records, past the budget")]
    MemoryBudget {
        /// Version records held together.
        records: u64,
    },
}

impl NotLive {
    /// The rule's name in reports (`rules`), like the checker's rules.
    pub fn rule(&self) -> &'static str {
        match self {
            NotLive::TimeStuck { .. } => "LivenessTimeStuck",
            NotLive::EventBudget { .. } => "LivenessEventBudget",
            NotLive::QueueBudget { .. } => "LivenessQueueBudget",
            NotLive::MemoryBudget { .. } => "LivenessMemoryBudget",
            NotLive::Starved { .. } => "LivenessStarved",
        }
    }
}

/// Counts what the run loop hands it, event by event.
pub(crate) struct LivenessWatch {
    budget: LivenessBudget,
    events: u64,
    instant: Instant,
    at_instant: u64,
}

impl LivenessWatch {
    pub fn new(budget: LivenessBudget) -> LivenessWatch {
        LivenessWatch { budget, events: 0, instant: Instant::ZERO, at_instant: 0 }
    }

    /// One event is about to be handled at `at`, with `queued` more waiting.
    pub fn on_event(&mut self, at: Instant, queued: usize) -> Result<(), NotLive> {
        self.events += 1;
        if at == self.instant {
            self.at_instant += 1;
        } else {
            (self.instant, self.at_instant) = (at, 1);
        }
        if self.at_instant > self.budget.same_instant_events_max {
            return Err(NotLive::TimeStuck { at, events: self.at_instant });
        }
        if self.events > self.budget.events_max {
            return Err(NotLive::EventBudget { events: self.events });
        }
        if queued > self.budget.queued_events_max {
            return Err(NotLive::QueueBudget { queued });
        }
        Ok(())
    }

    /// The replicas hold `records` version records together.
    pub fn on_memory(&self, records: u64) -> Result<(), NotLive> {
        if records > self.budget.resident_version_records_max {
            return Err(NotLive::MemoryBudget { records });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tight() -> LivenessBudget {
        LivenessBudget {
            same_instant_events_max: 3,
            events_max: 10,
            queued_events_max: 5,
            resident_version_records_max: 100,
            starved_max: Duration::from_secs(1),
        }
    }

    #[test]
    fn time_that_stops_advancing_is_stuck_past_the_budget() {
        let mut w = LivenessWatch::new(tight());
        let at = Instant::from_millis(7);
        for _ in 0..3 {
            assert_eq!(w.on_event(at, 0), Ok(()));
        }
        assert_eq!(w.on_event(at, 0), Err(NotLive::TimeStuck { at, events: 4 }));
    }

    #[test]
    fn time_that_advances_starts_the_count_again() {
        let mut w = LivenessWatch::new(tight());
        for ms in [1, 1, 1, 2, 2, 2, 3] {
            assert_eq!(w.on_event(Instant::from_millis(ms), 0), Ok(()));
        }
    }

    #[test]
    fn a_run_past_its_event_budget_is_stopped() {
        let mut w = LivenessWatch::new(tight());
        for ms in 0..10 {
            assert_eq!(w.on_event(Instant::from_millis(ms), 0), Ok(()));
        }
        assert_eq!(w.on_event(Instant::from_millis(10), 0), Err(NotLive::EventBudget { events: 11 }));
    }

    #[test]
    fn a_queue_past_its_budget_is_stopped() {
        let mut w = LivenessWatch::new(tight());
        assert_eq!(w.on_event(Instant::ZERO, 5), Ok(()));
        assert_eq!(w.on_event(Instant::ZERO, 6), Err(NotLive::QueueBudget { queued: 6 }));
    }

    #[test]
    fn memory_past_its_budget_is_stopped() {
        let w = LivenessWatch::new(tight());
        assert_eq!(w.on_memory(100), Ok(()));
        assert_eq!(w.on_memory(101), Err(NotLive::MemoryBudget { records: 101 }));
    }
}
