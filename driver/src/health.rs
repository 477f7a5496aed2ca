//! Health apart from liveness: whether a world is open and serving, how fresh what it
//! serves is, and what its background work and its store have been doing. Owns the
//! report's shape and the rule that names its state; the loop (`runtime`) gathers the
//! facts (the replica's, and the store failures it judged), and a handle whose loop is
//! gone reports closed or failed closed by itself.
//!
//! A report never holds credentials: a store failure is told by its operation, key, kind
//! and status, never the store's own message (which may echo a request).

use crate::error::{Error, StoreError};
use slotlog_kernel::ids::WorldId;
use slotlog_kernel::ReplicaHealth;
use std::collections::VecDeque;
use std::time::Duration;

/// Store failures remembered for "recently" (newest kept).
const STORE_FAILURES_REMEMBERED_MAX: usize = 64;

/// What a world is doing, by what a caller can expect of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HealthState {
    /// Opening: its replica is loading the world (at first, or again after a reload).
    /// Calls wait for it.
    Opening,
    /// Open, and its store answering.
    Serving,
    /// Open, but the store failed calls within `WorldConfig::degraded_window`, its tip
    /// probe is failing, or its command queue is full: calls may be slow or refused.
    Degraded,
    /// Stopped by a failure (the store refused for good, the replica failed closed,
    /// reloads past their limit): every call answers with it.
    FailedClosed,
    /// Closed by `close()`, or every handle's loop is gone.
    Closed,
}

impl HealthState {
    /// Its name in a report: `opening`, `serving`, `degraded`, `failed_closed`, `closed`.
    pub fn as_str(self) -> &'static str {
        match self {
            HealthState::Opening => "opening",
            HealthState::Serving => "serving",
            HealthState::Degraded => "degraded",
            HealthState::FailedClosed => "failed_closed",
            HealthState::Closed => "closed",
        }
    }
}

/// A world's health, from [`World::health`](crate::World::health). Ages are on this
/// process's monotonic clock (the replica's), which the store clock checks keep within
/// the reload rule's bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Health {
    /// What the world is doing.
    pub state: HealthState,
    /// Why it is degraded, failed closed or closed (no credentials, no store messages).
    pub reason: Option<String>,
    /// The world's id.
    pub world_id: Option<WorldId>,
    /// The served snapshot's last sequence.
    pub sequence: Option<u64>,
    /// Since the served snapshot was last known to be the tip (the reload rule's age).
    pub unconfirmed: Option<Duration>,
    /// The newest slot installed: first and last sequence, and how long ago.
    pub newest_slot: Option<(u64, u64, Duration)>,
    /// The sequence this world is known committed through (what the commit hooks saw).
    pub committed_through: u64,
    /// A checkpoint is being written.
    pub checkpointing: bool,
    /// The compactor's last problem (a checkpoint skipped or given up): how long ago, and
    /// what.
    pub compactor_last_error: Option<(Duration, String)>,
    /// A drop is under way.
    pub collecting: bool,
    /// The backend cannot condition a delete, so nothing is collected.
    pub collection_off: bool,
    /// The collector's last drop given up: how long ago, and the store's error if one
    /// ended it.
    pub collector_last_error: Option<(Duration, String)>,
    /// Tip probes failed since one last succeeded...
    pub probe_failures_in_row: u32,
    /// ...and in all, by this replica.
    pub probe_failures: u64,
    /// Store calls that failed (and were retried) within `WorldConfig::degraded_window`.
    pub store_failures_recent: u32,
    /// The last store call that failed: how long ago, and which.
    pub store_last_error: Option<(Duration, String)>,
    /// Writes waiting in the commit queue, not yet in a batch.
    pub queued: usize,
    /// Commands waiting for the driver loop (its queue holds `command_queue_max`).
    pub commands_waiting: usize,
    /// Store calls in flight.
    pub calls_in_flight: usize,
    /// Times the replica was reopened from the newest checkpoint.
    pub reloads: u64,
}

impl Health {
    /// A world with no loop to ask: closed, or failed closed with what stopped it.
    pub(crate) fn gone(stopped: Option<&Error>, world_id: WorldId) -> Health {
        let (state, reason) = match stopped {
            Some(error) => (HealthState::FailedClosed, Some(redacted(error))),
            None => (HealthState::Closed, Some("closed".to_string())),
        };
        Health { state, reason, world_id: Some(world_id), ..Health::empty() }
    }

    /// A world whose loop did not take the question: its command queue is full.
    pub(crate) fn busy(world_id: WorldId, commands_waiting: usize) -> Health {
        Health {
            state: HealthState::Degraded,
            reason: Some("the command queue is full".to_string()),
            world_id: Some(world_id),
            commands_waiting,
            ..Health::empty()
        }
    }

    fn empty() -> Health {
        Health {
            state: HealthState::Closed,
            reason: None,
            world_id: None,
            sequence: None,
            unconfirmed: None,
            newest_slot: None,
            committed_through: 0,
            checkpointing: false,
            compactor_last_error: None,
            collecting: false,
            collection_off: false,
            collector_last_error: None,
            probe_failures_in_row: 0,
            probe_failures: 0,
            store_failures_recent: 0,
            store_last_error: None,
            queued: 0,
            commands_waiting: 0,
            calls_in_flight: 0,
            reloads: 0,
        }
    }
}

/// What the loop remembers for health beyond the replica: recent store failures and the
/// compactor's last problem, with when (on the loop's clock, since the world's base).
pub(crate) struct HealthLog {
    /// Store failures within this long make the world degraded.
    degraded_window: Duration,
    store_failures: VecDeque<Duration>,
    store_last: Option<(Duration, String)>,
    compactor_last: Option<(Duration, String)>,
}

impl HealthLog {
    pub fn new(degraded_window: Duration) -> HealthLog {
        HealthLog { degraded_window, store_failures: VecDeque::new(), store_last: None, compactor_last: None }
    }

    /// A store call failed and goes to be retried (or stops the world).
    pub fn store_failed(&mut self, at: Duration, what: String) {
        if self.store_failures.len() == STORE_FAILURES_REMEMBERED_MAX {
            self.store_failures.pop_front();
        }
        self.store_failures.push_back(at);
        self.store_last = Some((at, what));
    }

    /// The compactor skipped or gave up a checkpoint.
    pub fn compactor_problem(&mut self, at: Duration, what: String) {
        self.compactor_last = Some((at, what));
    }
}

/// The facts the loop holds besides the replica's.
pub(crate) struct LoopFacts<'a> {
    pub now: Duration,
    pub world_id: Option<WorldId>,
    pub opening: bool,
    pub committed_through: u64,
    pub commands_waiting: usize,
    pub reloads: u64,
    pub log: &'a HealthLog,
}

/// The report, and the rule that names its state: failed closed over opening over
/// degraded over serving.
pub(crate) fn report(replica: &ReplicaHealth, facts: LoopFacts<'_>) -> Health {
    let ago = |(at, what): &(Duration, String)| (facts.now.saturating_sub(*at), what.clone());
    let window = facts.log.degraded_window;
    let window_from = facts.now.saturating_sub(window);
    let recent = facts.log.store_failures.iter().filter(|at| **at >= window_from).count() as u32;
    let (state, reason) = if let Some(failed) = &replica.failed {
        (HealthState::FailedClosed, Some(failed.to_string()))
    } else if facts.opening || !replica.open {
        (HealthState::Opening, None)
    } else if replica.probe_failures_in_row > 0 {
        let n = replica.probe_failures_in_row;
        (HealthState::Degraded, Some(format!("{n} tip probes failed in a row")))
    } else if recent > 0 {
        (HealthState::Degraded, Some(format!("{recent} store calls failed within {window:?}")))
    } else {
        (HealthState::Serving, None)
    };
    Health {
        state,
        reason,
        world_id: facts.world_id,
        sequence: replica.sequence,
        unconfirmed: replica.unconfirmed,
        newest_slot: replica.newest_slot,
        committed_through: facts.committed_through,
        checkpointing: replica.checkpointing,
        compactor_last_error: facts.log.compactor_last.as_ref().map(ago),
        collecting: replica.collecting,
        collection_off: replica.collection_off,
        collector_last_error: replica.collector_last_abandoned.map(|(ago, error)| {
            let what = match error {
                Some(error) => format!("a drop given up: {error}"),
                None => "a drop given up: a kept checkpoint unreadable".to_string(),
            };
            (ago, what)
        }),
        probe_failures_in_row: replica.probe_failures_in_row,
        probe_failures: replica.probe_failures,
        store_failures_recent: recent,
        store_last_error: facts.log.store_last.as_ref().map(ago),
        queued: replica.queued,
        commands_waiting: facts.commands_waiting,
        calls_in_flight: replica.calls_in_flight,
        reloads: facts.reloads,
    }
}

/// A store failure as a report tells it: operation, key, kind and status, never the
/// store's message.
pub(crate) fn store_failure(
    op: &str,
    key: &str,
    kind: &dyn std::fmt::Display,
    status: Option<u16>,
) -> String {
    match status {
        Some(status) => format!("{op} of {key:?}: {kind} (HTTP {status})"),
        None => format!("{op} of {key:?}: {kind}"),
    }
}

/// An error as a report tells it: a store error without its message.
pub(crate) fn redacted(error: &Error) -> String {
    let store = |e: &StoreError| store_failure(e.op, &e.key, &e.kind, e.status);
    match error {
        Error::Store(e) => store(e),
        Error::OpenDeadline { deadline, last_error } => match last_error {
            Some(e) => format!("no store call answered for {deadline:?}; the last failure: {}", store(e)),
            None => format!("no store call answered for {deadline:?}"),
        },
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::StoreErrorKind;

    #[test]
    fn a_store_error_is_reported_without_the_stores_message() {
        let secret = "SignatureDoesNotMatch: AWSAccessKeyId=AKIAEXAMPLE";
        let error =
            StoreError::new(StoreErrorKind::PermissionDenied, "create", "w/log/1", Some(403), secret, 1);
        let told = redacted(&Error::Store(error));
        assert!(!told.contains("AKIA"), "{told}");
        assert!(told.contains("w/log/1") && told.contains("403"), "{told}");
    }

    fn serving() -> ReplicaHealth {
        ReplicaHealth { open: true, sequence: Some(3), ..ReplicaHealth::default() }
    }

    fn facts(log: &HealthLog, now_s: u64) -> LoopFacts<'_> {
        LoopFacts {
            now: Duration::from_secs(now_s),
            world_id: None,
            opening: false,
            committed_through: 3,
            commands_waiting: 0,
            reloads: 0,
            log,
        }
    }

    #[test]
    fn store_failures_degrade_only_within_the_window() {
        let mut log = HealthLog::new(Duration::from_secs(60));
        assert_eq!(report(&serving(), facts(&log, 10)).state, HealthState::Serving);
        log.store_failed(Duration::from_secs(10), "get".into());
        assert_eq!(report(&serving(), facts(&log, 20)).state, HealthState::Degraded);
        assert_eq!(report(&serving(), facts(&log, 100)).state, HealthState::Serving);
    }

    #[test]
    fn a_failed_replica_is_failed_closed_and_an_unopened_one_opening() {
        let log = HealthLog::new(Duration::from_secs(60));
        let failed = ReplicaHealth { failed: Some(slotlog_kernel::FailReason::ForeignWorld), ..serving() };
        assert_eq!(report(&failed, facts(&log, 1)).state, HealthState::FailedClosed);
        assert_eq!(report(&ReplicaHealth::default(), facts(&log, 1)).state, HealthState::Opening);
    }
}
