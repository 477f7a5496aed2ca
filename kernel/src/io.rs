//! The replica's one way out: emitted effects, the blob calls in flight with their
//! purposes, calls waiting to be retried, and the seeded RNG that jitters backoff.

use crate::blob::BlobOp;
use crate::effect::Effect;
use crate::hash::Hash32;
use crate::ids::BlobOpId;
use crate::time::Instant;
use core::time::Duration;
use rand_chacha::ChaCha8Rng;
use rand_core::Rng;
use std::collections::{BTreeMap, VecDeque};

/// Why a blob call was made; decides what its completion does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Purpose {
    MarkerGet,
    MarkerCreate,
    LogList,
    ReplayGet {
        sequence: u64,
    },
    BodyCreate {
        hash: Hash32,
    },
    BodyGet {
        hash: Hash32,
    },
    /// The head batch's slot create at this name.
    SlotCreate {
        sequence: u64,
    },
    /// Read the slot at this name: to settle an ambiguous create, or the one we lost to.
    SlotGet {
        sequence: u64,
    },
    /// Is the slot after the tip absent? (metadata only)
    TipStat {
        sequence: u64,
    },
}

#[derive(Clone, Debug)]
pub(crate) struct Call {
    pub purpose: Purpose,
    pub op: BlobOp,
    /// Attempts before this one.
    pub attempt: u32,
    pub issued_at: Instant,
}

pub(crate) struct Io {
    pub effects: VecDeque<Effect>,
    next_id: u64,
    in_flight: BTreeMap<BlobOpId, Call>,
    /// Calls to reissue at a time, keyed by (due, serial) so order is deterministic.
    retries: BTreeMap<(Instant, u64), Call>,
    retry_serial: u64,
    pub rng: ChaCha8Rng,
    retry_base_ms: u64,
    retry_cap_ms: u64,
}

impl Io {
    pub fn new(rng: ChaCha8Rng, retry_base_ms: u64, retry_cap_ms: u64) -> Io {
        Io {
            effects: VecDeque::new(),
            next_id: 1,
            in_flight: BTreeMap::new(),
            retries: BTreeMap::new(),
            retry_serial: 0,
            rng,
            retry_base_ms,
            retry_cap_ms,
        }
    }

    pub fn issue(&mut self, now: Instant, purpose: Purpose, op: BlobOp, attempt: u32) -> BlobOpId {
        let id = BlobOpId(self.next_id);
        self.next_id += 1;
        self.effects.push_back(Effect::Blob { id, op: op.clone() });
        let previous = self.in_flight.insert(id, Call { purpose, op, attempt, issued_at: now });
        debug_assert!(previous.is_none());
        id
    }

    /// The call a completion belongs to; None for an id this replica never issued.
    pub fn complete(&mut self, id: BlobOpId) -> Option<Call> {
        self.in_flight.remove(&id)
    }

    /// Reissues `call` after a jittered exponential backoff.
    pub fn retry_later(&mut self, now: Instant, call: Call) {
        let due = now + self.backoff(call.attempt);
        self.retry_serial += 1;
        self.retries.insert((due, self.retry_serial), Call { attempt: call.attempt + 1, ..call });
    }

    /// Delay before attempt `attempt + 1`: base doubled per attempt, capped, then a
    /// uniform draw from its upper half so retrying peers spread out.
    pub fn backoff(&mut self, attempt: u32) -> Duration {
        let exp = self.retry_base_ms.saturating_mul(1u64 << attempt.min(20));
        let ceiling_us = exp.min(self.retry_cap_ms) * 1_000;
        let jitter_us = self.rng.next_u64() % (ceiling_us / 2 + 1);
        Duration::from_micros(ceiling_us / 2 + jitter_us)
    }

    /// Reissues every retry due by `now`.
    pub fn reissue_due(&mut self, now: Instant) {
        while let Some(entry) = self.retries.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let call = entry.remove();
            self.issue(now, call.purpose, call.op, call.attempt);
        }
    }

    pub fn next_retry(&self) -> Option<Instant> {
        self.retries.keys().next().map(|(t, _)| *t)
    }

    /// Whether any call for `purpose` is in flight or waiting to be retried.
    pub fn is_pending(&self, purpose: &Purpose) -> bool {
        self.in_flight.values().chain(self.retries.values()).any(|c| c.purpose == *purpose)
    }

    pub fn in_flight_len(&self) -> usize {
        self.in_flight.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    #[test]
    fn backoff_doubles_and_stays_under_the_cap() {
        let mut io = Io::new(ChaCha8Rng::seed_from_u64(1), 20, 1_000);
        for attempt in 0..40 {
            let d = io.backoff(attempt);
            let ceiling = (20u64 << attempt.min(20)).min(1_000);
            assert!(d.as_millis() as u64 >= ceiling / 2, "attempt {attempt}: {d:?}");
            assert!(d.as_millis() as u64 <= ceiling, "attempt {attempt}: {d:?}");
        }
    }

    #[test]
    fn a_retry_is_reissued_only_once_due() {
        let mut io = Io::new(ChaCha8Rng::seed_from_u64(1), 20, 1_000);
        let op = BlobOp::Get { key: "k".into() };
        let id = io.issue(Instant::ZERO, Purpose::MarkerGet, op, 0);
        io.effects.clear();
        let call = io.complete(id).unwrap();
        io.retry_later(Instant::ZERO, call);
        let due = io.next_retry().unwrap();
        io.reissue_due(Instant::from_micros(due.as_micros() - 1));
        assert!(io.effects.is_empty());
        io.reissue_due(due);
        assert_eq!(io.effects.len(), 1);
        assert!(io.is_pending(&Purpose::MarkerGet));
    }
}
