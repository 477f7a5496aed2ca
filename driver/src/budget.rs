//! The retry budget: how many times in a row one call may fail transiently before the
//! driver stops the world instead of letting the kernel retry it again.
//!
//! The kernel retries a failed call with backoff and no attempt cap, and it reissues the
//! identical operation (same kind, key and listing offset), so the driver recognises a
//! retry by the operation alone. Owns the failure streak of each call; decides nothing
//! about what a failure means (`object_store_blobs` does) or what stopping does
//! (`runtime` does).

use std::collections::BTreeMap;

/// Calls with a failure streak the budget tracks at once. A call the kernel abandons
/// after a transient failure (a create it settles by reading instead) leaves its streak
/// behind; past this many, the streak touched longest ago is forgotten.
pub(crate) const FAILING_CALLS_MAX: usize = 4_096;

/// One call as the kernel reissues it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct CallKey {
    pub op: &'static str,
    pub key: String,
    /// A listing's offset: each page of a listing is its own call.
    pub start_after: Option<String>,
}

/// Consecutive transient failures per call.
pub(crate) struct RetryBudget {
    retries_max: u32,
    /// Failures in a row, and when (a serial) the streak last grew.
    streaks: BTreeMap<CallKey, (u32, u64)>,
    serial: u64,
}

impl RetryBudget {
    pub fn new(retries_max: u32) -> RetryBudget {
        RetryBudget { retries_max, streaks: BTreeMap::new(), serial: 0 }
    }

    /// The call answered (or failed for good, or with one of the contract's outcomes):
    /// its streak ends.
    pub fn answered(&mut self, call: &CallKey) {
        self.streaks.remove(call);
    }

    /// The call failed transiently. Returns the failures in a row, and whether they are
    /// past the budget (the first failure plus `retries_max` retries).
    pub fn failed(&mut self, call: &CallKey) -> (u32, bool) {
        self.serial += 1;
        if !self.streaks.contains_key(call) && self.streaks.len() >= FAILING_CALLS_MAX {
            let stalest = self.streaks.iter().min_by_key(|(_, (_, at))| *at).map(|(k, _)| k.clone());
            if let Some(k) = stalest {
                self.streaks.remove(&k);
            }
        }
        let streak = self.streaks.entry(call.clone()).or_insert((0, 0));
        streak.0 += 1;
        streak.1 = self.serial;
        (streak.0, streak.0 > self.retries_max)
    }

    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.streaks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(key: &str) -> CallKey {
        CallKey { op: "get", key: key.into(), start_after: None }
    }

    #[test]
    fn a_call_failing_past_its_retry_budget_is_over_budget() {
        let mut budget = RetryBudget::new(2);
        assert_eq!(budget.failed(&call("a")), (1, false));
        assert_eq!(budget.failed(&call("a")), (2, false));
        assert_eq!(budget.failed(&call("a")), (3, true));
    }

    #[test]
    fn a_zero_budget_allows_no_retry() {
        let mut budget = RetryBudget::new(0);
        assert_eq!(budget.failed(&call("a")), (1, true));
    }

    #[test]
    fn an_answer_ends_the_streak() {
        let mut budget = RetryBudget::new(1);
        budget.failed(&call("a"));
        budget.answered(&call("a"));
        assert_eq!(budget.failed(&call("a")), (1, false));
    }

    #[test]
    fn each_call_has_its_own_streak() {
        let mut budget = RetryBudget::new(1);
        budget.failed(&call("a"));
        assert_eq!(budget.failed(&call("b")), (1, false));
        let page = CallKey { start_after: Some("a".into()), ..call("a") };
        assert_eq!(budget.failed(&page), (1, false));
        assert_eq!(budget.failed(&call("a")), (2, true));
    }

    #[test]
    fn failing_calls_tracked_are_bounded_and_the_stalest_is_forgotten() {
        let mut budget = RetryBudget::new(5);
        budget.failed(&call("stale"));
        for i in 0..FAILING_CALLS_MAX {
            budget.failed(&call(&format!("k{i}")));
        }
        assert_eq!(budget.tracked(), FAILING_CALLS_MAX);
        // "stale" was forgotten to make room: its streak starts over.
        assert_eq!(budget.failed(&call("stale")), (1, false));
        assert_eq!(budget.tracked(), FAILING_CALLS_MAX);
    }
}
