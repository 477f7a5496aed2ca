//! Many seeds of many scenarios, across threads. Runs are independent and each is
//! deterministic, so the threads change only how fast the sweep finishes.

use crate::report::Report;
use crate::scenario::{run_scenario, Overrides, Scenario};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// One failed run: its report holds the violations and the command that replays it.
pub struct Failure {
    pub report: Report,
}

pub struct SweepResult {
    pub runs: usize,
    pub failures: Vec<Failure>,
}

/// Runs every (scenario, seed) pair on `jobs` threads; `progress` is called after each.
pub fn sweep(
    scenarios: &[&'static Scenario],
    seeds: std::ops::RangeInclusive<u64>,
    overrides: &Overrides,
    jobs: usize,
    progress: &(dyn Fn(&Report) + Sync),
) -> SweepResult {
    let work: Vec<(&Scenario, u64)> =
        scenarios.iter().flat_map(|s| seeds.clone().map(move |seed| (*s, seed))).collect();
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(scenario, seed)) = work.get(i) else { break };
                let report = run_scenario(scenario, seed, overrides);
                progress(&report);
                if !report.passed() {
                    failures.lock().expect("no panics hold the lock").push(Failure { report });
                }
            });
        }
    });
    let mut failures = failures.into_inner().expect("threads joined");
    failures.sort_by(|a, b| (&a.report.scenario, a.report.seed).cmp(&(&b.report.scenario, b.report.seed)));
    SweepResult { runs: work.len(), failures }
}
