//! The replica's one way out: emitted effects, the blob calls in flight with their
//! purposes, calls waiting to be retried, the seeded RNG that jitters backoff, and the
//! coverage marks every owner counts its rare branches in (they reach every owner with it).

use crate::blob::BlobOp;
use crate::blob::BlobResult;
use crate::effect::Effect;
use crate::ids::BlobOpId;
use crate::marks::{Mark, Marks};
use crate::time::{micros, Instant};
use core::time::Duration;
use rand_chacha::ChaCha8Rng;
use rand_core::Rng;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Why a blob call was made: the owner its completion goes to, and what that owner
/// asked. Each owner matches only its own calls; the replica routes by the outer variant.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Purpose {
    Open(crate::open::OpenCall),
    Commit(crate::committer::CommitCall),
    Probe(crate::reads::ProbeCall),
    Feed(crate::feed::FeedCall),
    Body(crate::bodies::BodyCall),
    Compact(crate::compactor::CompactCall),
    Collect(crate::collector::CollectCall),
    History(crate::history::HistoryCall),
    Search(crate::search::SearchCall),
}

#[derive(Clone, Debug)]
pub(crate) struct Call {
    pub purpose: Purpose,
    pub op: BlobOp,
    /// Attempts before this one.
    pub attempt: u32,
    pub issued_at: Instant,
}

/// One call as its purpose sees it: sent once, and perhaps once more as a hedge.
struct Logical {
    call: Call,
    /// The ids sent for it (one, or two once hedged).
    sent: Vec<BlobOpId>,
    /// Sends still unanswered.
    outstanding: u8,
    hedge_at: Option<Instant>,
}

/// When and how to resend calls.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RetryPolicy {
    pub base: Duration,
    pub cap: Duration,
    /// Zero: never hedge.
    pub hedge_after: Duration,
}

pub(crate) struct Io {
    pub effects: VecDeque<Effect>,
    next_id: u64,
    next_logical: u64,
    in_flight: BTreeMap<BlobOpId, u64>,
    logical: BTreeMap<u64, Logical>,
    /// Calls to reissue at a time, keyed by (due, serial) so order is deterministic.
    retries: BTreeMap<(Instant, u64), Call>,
    retry_serial: u64,
    /// Logical calls to hedge, by when.
    hedges: BTreeSet<(Instant, u64)>,
    /// Calls in flight or waiting to be retried, by purpose.
    pending: BTreeMap<Purpose, u32>,
    pub rng: ChaCha8Rng,
    policy: RetryPolicy,
    pub hedges_sent: u64,
    /// The store's clock, learnt from every answer (SPEC 10.15).
    pub store_clock: crate::store_clock::StoreClock,
    /// Rare branches taken; counted only, never read by the kernel.
    pub marks: Marks,
    /// A read-only replica's: no call that changes the store may go out.
    pub read_only: bool,
    /// When each write answered from its batch passed its phases, for the embedder to
    /// take; the newest `PHASES_KEPT_MAX`.
    pub phases: VecDeque<crate::committer::WritePhases>,
}

impl Io {
    pub fn new(rng: ChaCha8Rng, policy: RetryPolicy) -> Io {
        Io {
            effects: VecDeque::new(),
            next_id: 1,
            next_logical: 1,
            in_flight: BTreeMap::new(),
            logical: BTreeMap::new(),
            retries: BTreeMap::new(),
            retry_serial: 0,
            hedges: BTreeSet::new(),
            pending: BTreeMap::new(),
            rng,
            policy,
            hedges_sent: 0,
            store_clock: Default::default(),
            marks: Marks::default(),
            read_only: false,
            phases: VecDeque::new(),
        }
    }

    /// Keeps a write's phases, dropping the oldest past `PHASES_KEPT_MAX`: an embedder
    /// that never takes them costs a bounded buffer, never a stall.
    pub fn keep_phases(&mut self, phases: crate::committer::WritePhases) {
        if self.phases.len() == crate::committer::PHASES_KEPT_MAX {
            self.phases.pop_front();
        }
        self.phases.push_back(phases);
    }

    pub fn issue(&mut self, now: Instant, purpose: Purpose, op: BlobOp, attempt: u32) {
        assert!(!(self.read_only && op.changes_store()), "a read-only replica sent {op:?}");
        let l = self.next_logical;
        self.next_logical += 1;
        let hedge_at = (!self.policy.hedge_after.is_zero()).then(|| now + self.policy.hedge_after);
        if let Some(t) = hedge_at {
            self.hedges.insert((t, l));
        }
        let id = self.send(l, &op);
        *self.pending.entry(purpose.clone()).or_default() += 1;
        let call = Call { purpose, op, attempt, issued_at: now };
        self.logical.insert(l, Logical { call, sent: vec![id], outstanding: 1, hedge_at });
    }

    fn send(&mut self, logical: u64, op: &BlobOp) -> BlobOpId {
        let id = BlobOpId(self.next_id);
        self.next_id += 1;
        self.effects.push_back(Effect::Blob { id, op: op.clone() });
        let previous = self.in_flight.insert(id, logical);
        invariant!(previous.is_none());
        id
    }

    /// The purpose of the call `id` (in flight) was sent for.
    pub fn purpose_of(&self, id: BlobOpId) -> Option<&Purpose> {
        let l = self.in_flight.get(&id)?;
        self.logical.get(l).map(|logical| &logical.call.purpose)
    }

    /// The call a completion settles, with the result to act on. None for an id this
    /// replica never sent, a twin whose sibling already answered, or a transient failure
    /// while the sibling may still answer.
    pub fn complete(&mut self, id: BlobOpId, result: BlobResult) -> Option<(Call, BlobResult)> {
        let l = self.in_flight.remove(&id)?;
        let logical = self.logical.get_mut(&l).expect("an id in flight has its call");
        logical.outstanding -= 1;
        let transient = matches!(&result, Err(e) if e.is_transient());
        if transient && logical.outstanding > 0 {
            self.marks.hit(Mark::HedgeTwinAwaited);
            return None;
        }
        let logical = self.logical.remove(&l).expect("present");
        for other in logical.sent {
            self.in_flight.remove(&other);
        }
        if let Some(t) = logical.hedge_at {
            self.hedges.remove(&(t, l));
        }
        self.unpend(&logical.call.purpose);
        Some((logical.call, result))
    }

    /// Reissues `call` after a jittered exponential backoff.
    pub fn retry_later(&mut self, now: Instant, call: Call) {
        let due = now + self.backoff(call.attempt);
        *self.pending.entry(call.purpose.clone()).or_default() += 1;
        self.retry_serial += 1;
        self.retries.insert((due, self.retry_serial), Call { attempt: call.attempt + 1, ..call });
    }

    /// Delay before attempt `attempt + 1`: base doubled per attempt, capped, then a
    /// uniform draw from its upper half so retrying peers spread out.
    pub fn backoff(&mut self, attempt: u32) -> Duration {
        let exp_us = micros(self.policy.base).saturating_mul(1u64 << attempt.min(20));
        let ceiling_us = exp_us.min(micros(self.policy.cap));
        let jitter_us = self.rng.next_u64() % (ceiling_us / 2 + 1);
        Duration::from_micros(ceiling_us / 2 + jitter_us)
    }

    /// Reissues every retry due by `now`, and sends the twin of every call unanswered
    /// past its hedge time (each call at most once: the twin is the identical call).
    pub fn reissue_due(&mut self, now: Instant) {
        while let Some(entry) = self.retries.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let call = entry.remove();
            self.unpend(&call.purpose);
            self.issue(now, call.purpose, call.op, call.attempt);
        }
        while let Some(&(t, l)) = self.hedges.first() {
            if t > now {
                break;
            }
            self.hedges.remove(&(t, l));
            let Some(logical) = self.logical.get_mut(&l) else { continue };
            logical.hedge_at = None;
            logical.outstanding += 1;
            let op = logical.call.op.clone();
            let id = self.send(l, &op);
            self.logical.get_mut(&l).expect("present").sent.push(id);
            self.hedges_sent += 1;
            self.marks.hit(Mark::CallHedged);
        }
    }

    pub fn next_retry(&self) -> Option<Instant> {
        let retry = self.retries.keys().next().map(|(t, _)| *t);
        let hedge = self.hedges.first().map(|(t, _)| *t);
        match (retry, hedge) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn unpend(&mut self, purpose: &Purpose) {
        let n = self.pending.get_mut(purpose).expect("counted when issued");
        *n -= 1;
        if *n == 0 {
            self.pending.remove(purpose);
        }
    }

    /// Whether any call for `purpose` is in flight or waiting to be retried.
    pub fn is_pending(&self, purpose: &Purpose) -> bool {
        self.pending.contains_key(purpose)
    }

    pub fn in_flight_len(&self) -> usize {
        self.in_flight.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::{BlobError, BlobOutcome};
    use crate::open::OpenCall;
    use rand_core::SeedableRng;

    fn io(hedge_after_ms: u64) -> Io {
        Io::new(
            ChaCha8Rng::seed_from_u64(1),
            RetryPolicy {
                base: Duration::from_millis(20),
                cap: Duration::from_secs(1),
                hedge_after: Duration::from_millis(hedge_after_ms),
            },
        )
    }

    fn sent(io: &mut Io) -> Vec<BlobOpId> {
        io.effects
            .drain(..)
            .map(|e| match e {
                Effect::Blob { id, .. } => id,
                other => panic!("not a call: {other:?}"),
            })
            .collect()
    }

    fn get() -> BlobOp {
        BlobOp::Get { key: "k".into() }
    }

    #[test]
    fn backoff_doubles_and_stays_under_the_cap() {
        let mut io = io(0);
        for attempt in 0..40 {
            let d = io.backoff(attempt);
            let ceiling = (20u64 << attempt.min(20)).min(1_000);
            assert!(d.as_millis() as u64 >= ceiling / 2, "attempt {attempt}: {d:?}");
            assert!(d.as_millis() as u64 <= ceiling, "attempt {attempt}: {d:?}");
        }
    }

    #[test]
    fn a_retry_is_reissued_only_once_due() {
        let mut io = io(0);
        io.issue(Instant::ZERO, Purpose::Open(OpenCall::MarkerGet), get(), 0);
        let id = sent(&mut io)[0];
        let (call, _) = io.complete(id, Err(BlobError::Throttled)).unwrap();
        io.retry_later(Instant::ZERO, call);
        let due = io.next_retry().unwrap();
        io.reissue_due(Instant::from_micros(due.as_micros() - 1));
        assert!(io.effects.is_empty());
        io.reissue_due(due);
        assert_eq!(sent(&mut io).len(), 1);
        assert!(io.is_pending(&Purpose::Open(OpenCall::MarkerGet)));
    }

    #[test]
    fn an_unanswered_call_is_hedged_once_with_the_identical_call() {
        let mut io = io(200);
        io.issue(Instant::ZERO, Purpose::Open(OpenCall::MarkerGet), get(), 0);
        sent(&mut io);
        assert_eq!(io.next_retry(), Some(Instant::from_millis(200)));
        io.reissue_due(Instant::from_millis(199));
        assert!(io.effects.is_empty());
        io.reissue_due(Instant::from_millis(200));
        assert!(matches!(&io.effects[0], Effect::Blob { op, .. } if *op == get()));
        assert_eq!(sent(&mut io).len(), 1);
        io.reissue_due(Instant::from_millis(10_000));
        assert!(io.effects.is_empty(), "a call is hedged at most once");
        assert_eq!(io.hedges_sent, 1);
    }

    #[test]
    fn the_first_decisive_answer_of_two_wins_and_the_other_is_ignored() {
        let mut io = io(200);
        io.issue(Instant::ZERO, Purpose::Open(OpenCall::MarkerGet), get(), 0);
        let first = sent(&mut io)[0];
        io.reissue_due(Instant::from_millis(200));
        let twin = sent(&mut io)[0];
        let ok = Ok(BlobOutcome::Deleted);
        assert!(io.complete(twin, ok.clone()).is_some());
        assert!(io.complete(first, ok).is_none(), "the slow original is stale");
        assert!(!io.is_pending(&Purpose::Open(OpenCall::MarkerGet)));
    }

    #[test]
    fn a_transient_failure_waits_for_the_twin() {
        let mut io = io(200);
        io.issue(Instant::ZERO, Purpose::Open(OpenCall::MarkerGet), get(), 0);
        let first = sent(&mut io)[0];
        io.reissue_due(Instant::from_millis(200));
        let twin = sent(&mut io)[0];
        assert!(io.complete(first, Err(BlobError::Timeout)).is_none());
        let (_, result) = io.complete(twin, Err(BlobError::NotFound)).expect("the twin settles it");
        assert_eq!(result, Err(BlobError::NotFound));
    }

    #[test]
    fn a_call_answered_before_its_hedge_time_is_not_hedged() {
        let mut io = io(200);
        io.issue(Instant::ZERO, Purpose::Open(OpenCall::MarkerGet), get(), 0);
        let id = sent(&mut io)[0];
        let _settled = io.complete(id, Err(BlobError::NotFound)).expect("settled");
        assert_eq!(io.next_retry(), None);
        io.reissue_due(Instant::from_millis(500));
        assert!(io.effects.is_empty());
    }
}
