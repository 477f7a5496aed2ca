//! The `slotlog` command line as CI sees it: stdout and stderr are pipes, never a
//! terminal. A failing run must explain itself there: its FAIL lines and its replay
//! command as it happens, machine-readable lines and JUnit XML on request.

use std::process::{Command, Output};

fn slotlog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_slotlog")).args(args).output().expect("slotlog runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8 output")
}

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("slotlog-cli-{}-{name}", std::process::id()))
}

#[test]
fn a_failing_sweep_into_a_pipe_prints_each_fail_line_its_replay_and_a_summary() {
    let out = slotlog(&[
        "sweep",
        "conflicts",
        "--seeds",
        "1..2",
        "--duration-s",
        "3",
        "--jobs",
        "2",
        "--defect",
        "ack-before-confirm",
    ]);
    assert_eq!(out.status.code(), Some(1), "a failed run fails the sweep");
    let stdout = text(&out.stdout);
    for seed in [1, 2] {
        assert!(stdout.contains(&format!("FAIL conflicts seed {seed}: ")), "{stdout}");
        let replay = format!(
            "  replay: slotlog run conflicts --seed {seed} --duration-s 3 --defect ack-before-confirm"
        );
        assert!(stdout.contains(&replay), "{stdout}");
    }
    assert!(stdout.contains("conflicts       2 runs     2 failed   wall "), "{stdout}");
    assert!(stdout.contains("2 runs, 2 failed"), "{stdout}");
}

#[test]
fn sweep_json_prints_one_parseable_line_per_run_and_nothing_else_on_stdout() {
    let out = slotlog(&["sweep", "fast2,conflicts", "--seeds", "1..3", "--duration-s", "1", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let mut seen: Vec<(String, u64)> = stdout
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            for field in ["scenario", "seed", "passed", "violations", "wall_ms", "trace_hash", "repro"] {
                assert!(v.get(field).is_some(), "{field} missing from {line}");
            }
            assert_eq!(v["passed"], true);
            assert_eq!(v["trace_hash"].as_str().map(str::len), Some(64));
            (v["scenario"].as_str().expect("a name").to_string(), v["seed"].as_u64().expect("a seed"))
        })
        .collect();
    seen.sort();
    let expected: Vec<(String, u64)> =
        ["conflicts", "fast2"].iter().flat_map(|s| (1..=3).map(move |n| (s.to_string(), n))).collect();
    assert_eq!(seen, expected);
    assert!(text(&out.stderr).contains("6 runs, 0 failed"), "the summary goes to stderr with --json");
}

#[test]
fn sweep_junit_writes_a_suite_per_scenario_and_a_failure_per_failed_seed() {
    let path = temp_path("junit.xml");
    let out = slotlog(&[
        "sweep",
        "conflicts",
        "--seeds",
        "1..2",
        "--duration-s",
        "3",
        "--defect",
        "ack-before-confirm",
        "--junit",
        path.to_str().expect("a UTF-8 path"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let xml = std::fs::read_to_string(&path).expect("the JUnit file");
    std::fs::remove_file(&path).ok();
    let report = quick_junit::Report::deserialize_from_str(&xml).expect("JUnit XML");
    assert_eq!((report.tests, report.failures), (2, 2));
    let suite = &report.test_suites[0];
    assert_eq!(suite.name.as_str(), "conflicts");
    assert_eq!(suite.test_cases[0].name.as_str(), "seed 1");
    assert!(
        xml.contains("replay: slotlog run conflicts --seed 2 --duration-s 3 --defect ack-before-confirm"),
        "{xml}"
    );
}

#[test]
fn run_check_determinism_passes_for_a_seed_and_names_its_trace() {
    let out = slotlog(&["run", "faults", "--seed", "3", "--duration-s", "3", "--check-determinism"]);
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("determinism: faults seed 3 ran twice, trace "), "{stdout}");
}

#[test]
fn run_trace_writes_lines_that_hash_to_the_reported_trace_hash() {
    let path = temp_path("trace.txt");
    let file = path.to_str().expect("a UTF-8 path");
    let out = slotlog(&["run", "faults", "--seed", "3", "--duration-s", "3", "--json", "--trace", file]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON report");
    let trace = std::fs::read_to_string(&path).expect("the trace file");
    let rehashed = slotlog(&["trace-hash", file]);
    std::fs::remove_file(&path).ok();
    assert!(trace.lines().count() > 1_000, "a trace of every event");
    assert!(trace.lines().all(|l| !l.contains(" event#")), "every event has a name");
    assert_eq!(text(&rehashed.stdout).trim(), report["trace_hash"].as_str().expect("a hash"));
}
