//! `slotlog shrink`: from a failing run, a smaller run that breaks the same rule. A
//! greedy search: it tries one smaller variant at a time (fewer replicas, a shorter run,
//! half the rate or the writers, one kind of disturbance fewer), keeps the first that
//! still breaks the rule, and starts over from it, until no variant does or the budget
//! of runs is spent. The same seed throughout: a smaller run is a different schedule, so
//! only its verdict carries over, which is why the rule, not the message, must match.

use crate::report::Report;
use crate::scenario::{Overrides, Scenario, Without};
use slotlog_sim::Arrivals;

/// What a search found.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The rule the first run broke, which every kept variant broke too.
    pub rule: String,
    /// The smallest failing variant's overrides, and the command that replays it.
    pub overrides: Overrides,
    pub repro: String,
    /// The changes kept, in order.
    pub kept: Vec<String>,
    /// Runs made, the first included.
    pub runs: usize,
}

/// The run given passed: nothing to shrink.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{repro} passes: there is no failure to shrink")]
pub struct Passes {
    pub repro: String,
}

/// Searches from `start` for at most `runs_max` runs, running each variant with `run`
/// (the simulation, or a stand-in in tests) and telling `tried` what each showed.
pub fn shrink(
    scenario: &Scenario,
    seed: u64,
    start: &Overrides,
    runs_max: usize,
    run: &mut dyn FnMut(&Overrides) -> Report,
    tried: &mut dyn FnMut(&str, bool),
) -> Result<Shrunk, Passes> {
    let repro = |o: &Overrides| format!("slotlog run {} --seed {seed}{}", scenario.name, o.flags());
    let first = run(start);
    let Some(rule) = first.rules.first().cloned() else { return Err(Passes { repro: repro(start) }) };
    let mut best = start.clone();
    let mut kept = Vec::new();
    let mut runs = 1;
    'search: loop {
        for (change, candidate) in smaller(scenario, seed, &best) {
            if runs >= runs_max {
                break 'search;
            }
            runs += 1;
            let alike = run(&candidate).rules.contains(&rule);
            tried(&change, alike);
            if alike {
                best = candidate;
                kept.push(change);
                continue 'search;
            }
        }
        break;
    }
    Ok(Shrunk { rule, repro: repro(&best), overrides: best, kept, runs })
}

/// The variants one step smaller than `o`, each with what it changes.
fn smaller(scenario: &Scenario, seed: u64, o: &Overrides) -> Vec<(String, Overrides)> {
    let c = scenario.config(seed, o);
    let mut out = Vec::new();
    let mut replicas = vec![1, c.replicas / 2, c.replicas.saturating_sub(1)];
    replicas.dedup();
    for r in replicas.into_iter().filter(|r| (1..c.replicas).contains(r)) {
        out.push((format!("replicas {} -> {r}", c.replicas), Overrides { replicas: Some(r), ..o.clone() }));
    }
    // In whole ms, as `--duration-s` is read.
    let duration_ms = c.duration.as_millis() as u64;
    if duration_ms >= 2_000 {
        let half = (duration_ms / 2) as f64 / 1_000.0;
        let change = format!("duration {} s -> {half} s", duration_ms as f64 / 1_000.0);
        out.push((change, Overrides { duration_s: Some(half), ..o.clone() }));
    }
    match c.workload.arrivals {
        Arrivals::Open { rate_per_s } if rate_per_s >= 2.0 => {
            let half = (rate_per_s / 2.0).floor();
            out.push((
                format!("rate {rate_per_s}/s -> {half}/s"),
                Overrides { rate: Some(half), ..o.clone() },
            ));
        }
        Arrivals::Closed { writers_per_replica: w } if w >= 2 => {
            let half = w / 2;
            out.push((format!("writers {w} -> {half}"), Overrides { writers: Some(half), ..o.clone() }));
        }
        _ => {}
    }
    for name in Without::NAMES {
        let mut without = o.without;
        if !without.names().contains(&name) && without.set(name) {
            out.push((format!("without {name}"), Overrides { without, ..o.clone() }));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three replicas that crash, store faults, stalls-free: room to shrink each way.
    fn crash() -> &'static Scenario {
        Scenario::find("crash").expect("a scenario")
    }

    /// A stand-in for the simulation: the run breaks `Rule` while it has at least two
    /// replicas and keeps its crashes, and passes otherwise.
    fn fails_with_two_replicas_and_crashes(o: &Overrides) -> Report {
        let c = crash().config(1, o);
        let fails = c.replicas >= 2 && c.crashes.is_some();
        let rules = if fails { vec!["Rule".to_string()] } else { vec![] };
        Report { rules, ..Report::default() }
    }

    #[test]
    fn it_keeps_what_the_failure_needs_and_strips_the_rest() {
        let s = crash();
        let start = crash().config(1, &Overrides::default());
        assert!(start.replicas > 2 && start.crashes.is_some(), "the scenario has room to shrink");
        let mut run = fails_with_two_replicas_and_crashes;
        let found = shrink(s, 1, &Overrides::default(), 100, &mut run, &mut |_, _| {}).expect("it fails");
        assert_eq!(found.rule, "Rule");
        let c = s.config(1, &found.overrides);
        assert_eq!((c.replicas, c.crashes.is_some()), (2, true), "{found:?}");
        assert!(c.duration < start.duration, "{found:?}");
        let w = found.overrides.without;
        assert!(w.store_faults && w.stalls && w.skew && w.hint_loss && !w.crashes, "{found:?}");
        assert!(found.repro.starts_with("slotlog run crash --seed 1 --replicas 2"), "{}", found.repro);
        assert!(found.repro.contains("--without store-faults,stalls,skew,hint-loss"), "{}", found.repro);
    }

    #[test]
    fn a_passing_run_has_nothing_to_shrink() {
        let mut run = |_: &Overrides| Report::default();
        let found = shrink(crash(), 1, &Overrides::default(), 100, &mut run, &mut |_, _| {});
        assert!(found.is_err());
    }

    #[test]
    fn it_stops_at_its_budget() {
        let mut run = fails_with_two_replicas_and_crashes;
        let found = shrink(crash(), 1, &Overrides::default(), 3, &mut run, &mut |_, _| {}).expect("fails");
        assert_eq!(found.runs, 3);
    }
}
