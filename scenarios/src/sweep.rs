//! Many seeds of many scenarios, across threads. Runs are independent and each is
//! deterministic, so the threads change only how fast the sweep finishes.
//!
//! Also what a sweep tells the world: the `FAIL` line a failed run prints as it happens,
//! one JSON line per run (`--json`), the per-scenario summary, the coverage marks no run
//! hit, and JUnit XML for CI systems (`--junit`). Each is a pure function of the runs'
//! reports, so tests can judge the formats without a terminal.

use crate::report::Report;
use crate::scenario::{run_scenario, Overrides, Scenario};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// One failed run: its report holds the violations and the command that replays it.
pub struct Failure {
    pub report: Report,
}

/// What a sweep keeps of each run: the verdict, its cost, and how to replay it. This is
/// also the `--json` line, one per run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunLine {
    pub scenario: String,
    pub seed: u64,
    pub passed: bool,
    /// The violations the report lists (the first ones, when there are very many).
    pub violations: Vec<String>,
    /// All violations, listed or not.
    pub violations_total: usize,
    pub wall_ms: u64,
    pub virtual_s: f64,
    /// Empty when an assertion stopped the run before it ended.
    pub trace_hash: String,
    pub repro: String,
    /// The kernel marks the run hit, with their counts (marks it missed are left out).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub coverage: BTreeMap<String, u64>,
}

impl From<&Report> for RunLine {
    fn from(r: &Report) -> RunLine {
        RunLine {
            scenario: r.scenario.clone(),
            seed: r.seed,
            passed: r.passed(),
            violations: r.violations.clone(),
            violations_total: r.violations_total,
            wall_ms: (r.wall_s * 1_000.0).round() as u64,
            virtual_s: r.virtual_s,
            trace_hash: r.trace_hash.clone(),
            repro: r.repro.clone(),
            coverage: r.coverage.iter().filter(|(_, n)| **n > 0).map(|(m, n)| (m.clone(), *n)).collect(),
        }
    }
}

impl RunLine {
    /// The line as `--json` prints it: one JSON object, no newline inside.
    pub fn json(&self) -> String {
        serde_json::to_string(self).expect("a run line serializes")
    }
}

pub struct SweepResult {
    /// Every run, ordered by scenario (as given) and seed.
    pub lines: Vec<RunLine>,
    /// The failed runs' full reports, in the same order.
    pub failures: Vec<Failure>,
}

impl SweepResult {
    pub fn runs(&self) -> usize {
        self.lines.len()
    }

    /// Every mark's hits summed over the runs (marks no run hit are absent).
    pub fn coverage(&self) -> BTreeMap<String, u64> {
        let mut sum = BTreeMap::new();
        for line in &self.lines {
            for (mark, n) in &line.coverage {
                *sum.entry(mark.clone()).or_insert(0) += n;
            }
        }
        sum
    }

    /// The runs' coverage summed, judged against `required` marks.
    pub fn coverage_verdict(&self, required: &[slotlog_kernel::Mark]) -> CoverageVerdict {
        let coverage = self.coverage();
        CoverageVerdict {
            coverage_missed: crate::coverage::missed(required, &coverage)
                .into_iter()
                .map(str::to_string)
                .collect(),
            coverage,
        }
    }

    /// One summary per scenario, in the order the scenarios were given.
    pub fn summaries(&self) -> Vec<ScenarioSummary> {
        let mut out: Vec<ScenarioSummary> = Vec::new();
        for line in &self.lines {
            let at = match out.iter().position(|s| s.scenario == line.scenario) {
                Some(at) => at,
                None => {
                    out.push(ScenarioSummary {
                        scenario: line.scenario.clone(),
                        ..ScenarioSummary::default()
                    });
                    out.len() - 1
                }
            };
            let s = &mut out[at];
            s.runs += 1;
            s.failed += usize::from(!line.passed);
            s.wall_ms_total += line.wall_ms;
            s.wall_ms_max = s.wall_ms_max.max(line.wall_ms);
        }
        out
    }
}

/// A sweep's coverage: what its runs hit, and the required marks none did.
#[derive(Clone, Debug, PartialEq)]
pub struct CoverageVerdict {
    /// Each mark some run hit, with its hits summed over the runs.
    pub coverage: BTreeMap<String, u64>,
    /// The required marks no run hit (`coverage::required`), in the kernel's order.
    pub coverage_missed: Vec<String>,
}

/// A scenario's share of a sweep.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScenarioSummary {
    pub scenario: String,
    pub runs: usize,
    pub failed: usize,
    /// Wall time of its runs added up (threads overlap, so this is the CPU it took), and
    /// the slowest run.
    pub wall_ms_total: u64,
    pub wall_ms_max: u64,
}

impl ScenarioSummary {
    /// `single      200 runs    0 failed   wall 128.4 s (0.64 s a run, slowest 0.91 s)`
    pub fn text(&self) -> String {
        let mean_s = self.wall_ms_total as f64 / 1_000.0 / self.runs.max(1) as f64;
        format!(
            "{:<10} {:>6} runs {:>5} failed   wall {:.1} s ({:.2} s a run, slowest {:.2} s)",
            self.scenario,
            self.runs,
            self.failed,
            self.wall_ms_total as f64 / 1_000.0,
            mean_s,
            self.wall_ms_max as f64 / 1_000.0
        )
    }
}

/// Violations a `FAIL` block lists before it points at the replay for the rest.
pub const FAIL_VIOLATIONS_SHOWN_MAX: usize = 3;

/// What a failed run prints the moment it ends: `FAIL <scenario> seed <n>: <violation>`,
/// one such line per listed violation (up to [`FAIL_VIOLATIONS_SHOWN_MAX`]), then the
/// command that replays it. Empty for a run that passed.
pub fn fail_lines(r: &Report) -> Vec<String> {
    if r.passed() {
        return Vec::new();
    }
    let mut out: Vec<String> = r
        .violations
        .iter()
        .take(FAIL_VIOLATIONS_SHOWN_MAX)
        .map(|v| format!("FAIL {} seed {}: {v}", r.scenario, r.seed))
        .collect();
    let shown = out.len();
    if r.violations_total > shown {
        out.push(format!(
            "FAIL {} seed {}: ... and {} more violations (the replay lists them)",
            r.scenario,
            r.seed,
            r.violations_total - shown
        ));
    }
    out.push(format!("  replay: {}", r.repro));
    out
}

/// The sweep as JUnit XML: one test suite per scenario, one test case per seed, and a
/// failure element on each failed case naming its first violation (the message), all of
/// them and the replay command (the text).
pub fn junit(lines: &[RunLine]) -> quick_junit::Report {
    use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, TestSuite};
    let mut report = quick_junit::Report::new("slotlog sweep");
    let mut suites: Vec<TestSuite> = Vec::new();
    for line in lines {
        let at = match suites.iter().position(|s| s.name.as_str() == line.scenario) {
            Some(at) => at,
            None => {
                suites.push(TestSuite::new(line.scenario.as_str()));
                suites.len() - 1
            }
        };
        let status = if line.passed {
            TestCaseStatus::success()
        } else {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status.set_type("violation");
            status.set_message(line.violations.first().map_or("failed", |v| v.as_str()));
            let mut text: String = line.violations.iter().map(|v| format!("{v}\n")).collect();
            if line.violations_total > line.violations.len() {
                text += &format!("... and {} more\n", line.violations_total - line.violations.len());
            }
            text += &format!("replay: {}\n", line.repro);
            status.set_description(text);
            status
        };
        let mut case = TestCase::new(format!("seed {}", line.seed), status);
        case.set_classname(format!("slotlog.{}", line.scenario));
        case.set_time(Duration::from_millis(line.wall_ms));
        case.add_property(quick_junit::Property::new("trace_hash", line.trace_hash.as_str()));
        case.add_property(quick_junit::Property::new("repro", line.repro.as_str()));
        let suite = &mut suites[at];
        suite.add_test_case(case);
        let ms: u64 = lines.iter().filter(|l| l.scenario == line.scenario).map(|l| l.wall_ms).sum();
        suite.set_time(Duration::from_millis(ms));
    }
    let total_ms: u64 = lines.iter().map(|l| l.wall_ms).sum();
    report.add_test_suites(suites);
    report.set_time(Duration::from_millis(total_ms));
    report
}

/// Runs every (scenario, seed) pair on `jobs` threads; `progress` is called after each.
pub fn sweep(
    scenarios: &[&'static Scenario],
    seeds: std::ops::RangeInclusive<u64>,
    overrides: &Overrides,
    jobs: usize,
    progress: &(dyn Fn(&Report) + Sync),
) -> SweepResult {
    let work: Vec<(usize, &Scenario, u64)> = scenarios
        .iter()
        .enumerate()
        .flat_map(|(i, s)| seeds.clone().map(move |seed| (i, *s, seed)))
        .collect();
    let next = AtomicUsize::new(0);
    let lines = Mutex::new(Vec::with_capacity(work.len()));
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(order, scenario, seed)) = work.get(i) else { break };
                let report = run_scenario(scenario, seed, overrides);
                progress(&report);
                lines.lock().expect("no panics hold the lock").push((order, RunLine::from(&report)));
                if !report.passed() {
                    failures.lock().expect("no panics hold the lock").push((order, Failure { report }));
                }
            });
        }
    });
    let mut lines = lines.into_inner().expect("threads joined");
    lines.sort_by_key(|(order, l)| (*order, l.seed));
    let mut failures = failures.into_inner().expect("threads joined");
    failures.sort_by_key(|(order, f)| (*order, f.report.seed));
    SweepResult {
        lines: lines.into_iter().map(|(_, l)| l).collect(),
        failures: failures.into_iter().map(|(_, f)| f).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed_report() -> Report {
        Report {
            scenario: "faults".into(),
            seed: 3,
            wall_s: 0.25,
            violations: vec![
                "acknowledged op 7 is missing from the log".into(),
                "a <second> & \"one\"".into(),
            ],
            violations_total: 9,
            trace_hash: "ab12".into(),
            repro: "slotlog run faults --seed 3 --duration-s 2".into(),
            ..Report::default()
        }
    }

    fn passed_report(seed: u64) -> Report {
        Report {
            scenario: "single".into(),
            seed,
            wall_s: 0.5,
            trace_hash: "cd34".into(),
            repro: format!("slotlog run single --seed {seed}"),
            ..Report::default()
        }
    }

    #[test]
    fn a_json_line_is_one_line_that_parses_with_every_field() {
        let line = RunLine::from(&failed_report()).json();
        assert!(!line.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&line).expect("a JSON object");
        assert_eq!(v["scenario"], "faults");
        assert_eq!(v["seed"], 3);
        assert_eq!(v["passed"], false);
        assert_eq!(v["violations"].as_array().map(Vec::len), Some(2));
        assert_eq!(v["violations_total"], 9);
        assert_eq!(v["wall_ms"], 250);
        assert_eq!(v["trace_hash"], "ab12");
        assert_eq!(v["repro"], "slotlog run faults --seed 3 --duration-s 2");
        let back: RunLine = serde_json::from_str(&line).expect("a run line");
        assert_eq!(back, RunLine::from(&failed_report()));
    }

    #[test]
    fn a_failed_run_prints_fail_lines_with_its_violations_and_replay() {
        let lines = fail_lines(&failed_report());
        assert_eq!(lines[0], "FAIL faults seed 3: acknowledged op 7 is missing from the log");
        assert_eq!(lines[1], "FAIL faults seed 3: a <second> & \"one\"");
        assert_eq!(lines[2], "FAIL faults seed 3: ... and 7 more violations (the replay lists them)");
        assert_eq!(lines[3], "  replay: slotlog run faults --seed 3 --duration-s 2");
        assert_eq!(lines.len(), 4);
        assert!(fail_lines(&passed_report(1)).is_empty());
    }

    #[test]
    fn summaries_count_runs_failures_and_wall_time_per_scenario() {
        let result = SweepResult {
            lines: vec![
                RunLine::from(&passed_report(1)),
                RunLine::from(&passed_report(2)),
                RunLine::from(&failed_report()),
            ],
            failures: Vec::new(),
        };
        let s = result.summaries();
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[0].scenario.as_str(), s[0].runs, s[0].failed, s[0].wall_ms_total),
            ("single", 2, 0, 1_000)
        );
        assert_eq!((s[1].scenario.as_str(), s[1].runs, s[1].failed, s[1].wall_ms_max), ("faults", 1, 1, 250));
        assert!(
            s[0].text().starts_with("single          2 runs     0 failed   wall 1.0 s"),
            "{}",
            s[0].text()
        );
    }

    #[test]
    fn junit_has_a_suite_per_scenario_a_case_per_seed_and_a_failure_with_the_violations() {
        let lines = vec![
            RunLine::from(&passed_report(1)),
            RunLine::from(&passed_report(2)),
            RunLine::from(&failed_report()),
        ];
        let xml = junit(&lines).to_string().expect("XML");
        let back = quick_junit::Report::deserialize_from_str(&xml).expect("the XML parses back");
        assert_eq!((back.tests, back.failures), (3, 1));
        assert_eq!(back.test_suites.len(), 2);
        let single = &back.test_suites[0];
        assert_eq!((single.name.as_str(), single.tests, single.failures), ("single", 2, 0));
        assert_eq!(single.test_cases[0].name.as_str(), "seed 1");
        assert!(matches!(single.test_cases[1].status, quick_junit::TestCaseStatus::Success { .. }));
        let faults = &back.test_suites[1];
        assert_eq!((faults.name.as_str(), faults.tests, faults.failures), ("faults", 1, 1));
        let quick_junit::TestCaseStatus::NonSuccess { kind, message, description, .. } =
            &faults.test_cases[0].status
        else {
            panic!("the failed run is a failure: {:?}", faults.test_cases[0].status);
        };
        assert_eq!(*kind, quick_junit::NonSuccessKind::Failure);
        assert_eq!(message.as_ref().map(|m| m.as_str()), Some("acknowledged op 7 is missing from the log"));
        let description = description.as_ref().expect("a description").as_str();
        assert!(description.contains("a <second> & \"one\""), "escaped and back: {description}");
        assert!(description.contains("... and 7 more"));
        assert!(description.contains("replay: slotlog run faults --seed 3 --duration-s 2"));
    }

    #[test]
    fn junit_of_a_sweep_that_passed_has_no_failures() {
        let xml = junit(&[RunLine::from(&passed_report(1))]).to_string().expect("XML");
        assert!(!xml.contains("<failure"), "{xml}");
        let back = quick_junit::Report::deserialize_from_str(&xml).expect("the XML parses back");
        assert_eq!((back.tests, back.failures, back.errors), (1, 0, 0));
    }
}
