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
    let runs = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("required marks hit; missed: "), "two small scenarios miss some marks: {stderr}");
    let mut seen: Vec<(String, u64)> = runs
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            for field in ["scenario", "seed", "passed", "violations", "wall_ms", "trace_hash", "repro"] {
                assert!(v.get(field).is_some(), "{field} missing from {line}");
            }
            assert_eq!(v["passed"], true);
            assert_eq!(v["trace_hash"].as_str().map(str::len), Some(64));
            assert!(v["coverage"].is_object(), "{line}");
            (v["scenario"].as_str().expect("a name").to_string(), v["seed"].as_u64().expect("a seed"))
        })
        .collect();
    seen.sort();
    let expected: Vec<(String, u64)> =
        ["conflicts", "fast2"].iter().flat_map(|s| (1..=3).map(move |n| (s.to_string(), n))).collect();
    assert_eq!(seen, expected);
    assert!(stderr.contains("6 runs, 0 failed"), "the summary goes to stderr with --json");
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

/// One store never owes a turn (a lone store never waits), so a sweep of `single` cannot
/// reach the hold marks: with `--require-coverage` it fails and names them; without, the
/// same runs pass.
#[test]
fn require_coverage_fails_a_sweep_that_cannot_reach_a_required_mark_and_names_it() {
    let args = ["sweep", "single", "--seeds", "1..1", "--duration-s", "1"];
    let out = slotlog(&[&args[..], &["--require-coverage"]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let fail = stderr.lines().find(|l| l.starts_with("FAIL coverage: ")).expect("a coverage FAIL line");
    for mark in ["hold_begun", "hold_expired_by_clock", "hold_answered_by_peer"] {
        assert!(fail.contains(mark), "{mark} not named: {fail}");
    }
    let stdout = text(&out.stdout);
    assert!(stdout.contains("1 runs, 0 failed"), "every run passed: {stdout}");
    assert!(stdout.contains("required marks hit; missed: "), "{stdout}");
    let out = slotlog(&args);
    assert!(out.status.success(), "without the flag coverage only reports: {}", text(&out.stderr));
}

/// CI's sweeps are several commands: `--coverage-file` sums their coverage, and the last
/// one's `--require-coverage` judges the sum.
#[test]
fn a_coverage_file_sums_the_sweeps_that_name_it() {
    let file = temp_path("coverage.json");
    std::fs::remove_file(&file).ok();
    let path = file.to_str().expect("a UTF-8 path");
    let sweep = |scenario: &str| {
        let args =
            ["sweep", scenario, "--seeds", "1..1", "--duration-s", "1", "--json", "--coverage-file", path];
        let out = slotlog(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let run: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one run line");
        let kept = std::fs::read_to_string(&file).expect("the file");
        (run, serde_json::from_str::<serde_json::Value>(&kept).expect("JSON counts"))
    };
    let (_, single) = sweep("single");
    assert!(single["coverage"].get("hold_begun").is_none(), "a lone store never holds");
    let (fast2, both) = sweep("fast2");
    std::fs::remove_file(&file).ok();
    let hold = |v: &serde_json::Value| v["coverage"]["hold_begun"].as_u64().unwrap_or(0);
    assert!(hold(&fast2) > 0, "{fast2}");
    assert_eq!(hold(&both), hold(&fast2) + hold(&single), "the file holds the sum");
    assert_eq!(both["swept"], serde_json::json!(["fast2", "single"]), "and the scenarios swept");
    let missed = |v: &serde_json::Value| v["coverage_missed"].as_array().expect("a list").len();
    assert!(missed(&both) < missed(&single), "fast2's holds are no longer missed");
}

#[test]
fn run_json_reports_coverage_of_every_mark() {
    let out = slotlog(&["run", "fast2", "--seed", "1", "--duration-s", "1", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let coverage = v["coverage"].as_object().expect("coverage, mark to count");
    assert_eq!(coverage.len(), slotlog_kernel::Mark::ALL.len(), "zeros included");
    for mark in slotlog_kernel::Mark::ALL {
        assert!(coverage[mark.name()].is_u64(), "{}", mark.name());
    }
    // fast2 is the record's model of turns: two stores that lose names to each other.
    assert!(coverage["hold_begun"].as_u64() > Some(0), "{coverage:?}");
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

/// Flag values no run may take, each with why: `run` and `sweep` share these flags, so both
/// are checked against one list.
const BAD_RUN_FLAGS: &[&[&str]] = &[
    &["--replicas", "0"],
    &["--ahead", "9"],
    &["--batch-max", "0"],
    &["--writers", "0"],
    &["--rate", "0"],
    &["--rate=-5"],
    &["--rate", "NaN"],
    &["--rate", "inf"],
    &["--duration-s", "1e30"],
    &["--duration-s", "0"],
    &["--checkpoint-slots", "0"],
];

/// `writer` values refused before any store is touched.
const BAD_WRITER_FLAGS: &[&[&str]] = &[
    &["--duration-s=-1"],
    &["--duration-s", "1e30"],
    &["--duration-s", "NaN"],
    &["--writers", "0"],
    &["--paths", "0"],
];

/// The command with the flags appended.
fn with_flags<'a>(command: &[&'a str], flags: &[&'a str]) -> Vec<&'a str> {
    command.iter().chain(flags).copied().collect()
}

/// Exits 2 with clap's usage message, and no panic.
fn assert_usage_error(args: &[&str]) {
    let out = slotlog(args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains("error: "), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
}

#[test]
fn run_and_sweep_refuse_flag_values_out_of_range_as_usage_errors() {
    for flags in BAD_RUN_FLAGS {
        assert_usage_error(&with_flags(&["run", "single"], flags));
        assert_usage_error(&with_flags(&["sweep", "single", "--seeds", "1..1"], flags));
    }
}

#[test]
fn unknown_scenarios_and_huge_seed_ranges_are_usage_errors_that_name_the_way_out() {
    let out = slotlog(&["run", "singel"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("single"), "suggests the scenario: {}", text(&out.stderr));
    assert_usage_error(&["sweep", "singel"]);
    assert_usage_error(&["sweep", "single", "--seeds", "1..18446744073709551615"]);
    assert_usage_error(&["sweep", "single", "--seeds", "5..1"]);
}

#[test]
fn writer_refuses_bad_values_before_it_touches_the_store() {
    let dir = temp_path("writer-bad-flags");
    let url = format!("file://{}", dir.display());
    let log = temp_path("writer-bad-flags.log");
    for flags in BAD_WRITER_FLAGS {
        let log = log.to_str().expect("a UTF-8 path");
        assert_usage_error(&with_flags(&["writer", "--store", &url, "--log", log], flags));
        assert!(!dir.exists(), "{flags:?} made the store's directory");
        assert!(!std::path::Path::new(log).exists(), "{flags:?} made the log");
    }
}

#[test]
fn inspect_and_verify_of_a_missing_directory_fail_and_create_nothing() {
    let dir = temp_path("no-such-dir");
    let url = format!("file://{}", dir.display());
    for args in [vec!["inspect", "--store", &url], vec!["verify", "--store", &url, "--logs", "/dev/null"]] {
        let out = slotlog(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {stderr}");
        assert!(stderr.contains("no directory"), "{args:?}: {stderr}");
        assert!(!dir.exists(), "{args:?} made {}", dir.display());
    }
}

#[test]
fn inspect_of_an_empty_store_is_an_error_not_a_world() {
    let dir = temp_path("empty-store");
    std::fs::create_dir_all(&dir).expect("a directory");
    let url = format!("file://{}", dir.display());
    let out = slotlog(&["inspect", "--store", &url]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no world"), "{}", text(&out.stderr));
}

#[test]
fn a_writer_whose_log_cannot_be_appended_fails_with_the_cause() {
    let dir = temp_path("log-full");
    let url = format!("file://{}", dir.display());
    // Every write to /dev/full fails with ENOSPC: a full disk.
    let out =
        slotlog(&["writer", "--store", &url, "--log", "/dev/full", "--duration-s", "2", "--writers", "2"]);
    std::fs::remove_dir_all(&dir).ok();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("cannot append to the log /dev/full"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_writer_against_a_closed_port_fails_within_the_open_deadline_naming_the_cause() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let log = temp_path("closed-port.log");
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_slotlog"))
        .args(["writer", "--store", "s3://b/p", "--log", log.to_str().expect("a UTF-8 path")])
        .env("SLOTLOG_S3_ENDPOINT", format!("http://127.0.0.1:{port}"))
        .env("AWS_ACCESS_KEY_ID", "key")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .output()
        .expect("slotlog runs");
    let elapsed = started.elapsed();
    std::fs::remove_file(&log).ok();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(elapsed < std::time::Duration::from_secs(30), "took {elapsed:?}, past the open deadline");
    assert!(stderr.contains("Connection refused"), "{stderr}");
}

#[test]
fn moto_a_writer_takes_its_endpoint_and_credentials_from_the_aws_environment() {
    let (Ok(endpoint), Ok(bucket)) =
        (std::env::var("SLOTLOG_S3_ENDPOINT"), std::env::var("SLOTLOG_S3_BUCKET"))
    else {
        eprintln!("SKIPPED moto_a_writer_takes_its_endpoint_and_credentials_from_the_aws_environment: run under scripts/with-moto.sh");
        return;
    };
    let store = format!("s3://{bucket}/cli-env-{}", std::process::id());
    let log = temp_path("aws-env.log");
    let log = log.to_str().expect("a UTF-8 path");
    let with_aws_env = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_slotlog"))
            .args(args)
            .env_remove("SLOTLOG_S3_ENDPOINT")
            .env("AWS_ENDPOINT_URL", &endpoint)
            .output()
            .expect("slotlog runs")
    };
    let wrote =
        with_aws_env(&["writer", "--store", &store, "--log", log, "--duration-s", "2", "--writers", "2"]);
    assert!(wrote.status.success(), "{}", text(&wrote.stderr));
    let verified = with_aws_env(&["verify", "--store", &store, "--logs", log]);
    std::fs::remove_file(log).ok();
    assert!(verified.status.success(), "{}{}", text(&verified.stdout), text(&verified.stderr));
    assert!(text(&verified.stdout).contains(" lost=0"), "{}", text(&verified.stdout));
    let missing = with_aws_env(&[
        "inspect",
        "--store",
        &format!("s3://slotlog-no-such-bucket-{}/w", std::process::id()),
    ]);
    assert_eq!(missing.status.code(), Some(3), "{}", text(&missing.stderr));
    assert!(text(&missing.stderr).contains("bucket does not exist"), "{}", text(&missing.stderr));
}

/// `slotlog inspect | head`: the reader closes the pipe before the tool has printed all;
/// the tool ends as Unix filters do (by SIGPIPE), never with a panic.
#[cfg(unix)]
#[test]
fn a_reader_that_closes_the_pipe_early_ends_the_tool_quietly() {
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    // The reader's end is closed before the tool starts, so its first print meets a closed
    // pipe whatever the scheduling (closing it after `spawn` raced the tool's first print:
    // a print that fits the pipe's buffer succeeds).
    let mut fds = [0; 2];
    // SAFETY: pipe writes two new descriptors into the array it is given.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "a pipe");
    // SAFETY: both descriptors are new and owned here alone.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(reader);
    let child = Command::new(env!("CARGO_BIN_EXE_slotlog"))
        .arg("list")
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .spawn()
        .expect("slotlog runs");
    let out = child.wait_with_output().expect("slotlog ends");
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?} {stderr}", out.status);
}

/// `slotlog shrink` on a run a deliberate defect breaks: it prints a smaller run, and
/// that run, replayed, breaks the same rule.
#[test]
fn shrink_finds_a_smaller_run_that_fails_alike() {
    let out = slotlog(&[
        "shrink",
        "conflicts",
        "--seed",
        "1",
        "--duration-s",
        "3",
        "--runs-max",
        "30",
        "--defect",
        "ack-before-confirm",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("rule CommitOutOfFlight broken"), "{stdout}");
    let smallest = stdout.lines().find_map(|l| l.strip_prefix("smallest: slotlog ")).expect("a smallest run");
    assert!(smallest.contains("--replicas 1"), "{smallest}");
    let args: Vec<&str> = smallest.split_whitespace().collect();
    let replay = slotlog(&args);
    assert_eq!(replay.status.code(), Some(1), "the smallest run fails: {}", text(&replay.stdout));
    assert!(text(&replay.stdout).contains("created outside the time its write was in flight"));
}

#[test]
fn shrink_of_a_passing_run_says_so_and_exits_1() {
    let out = slotlog(&["shrink", "conflicts", "--seed", "1", "--duration-s", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("passes: there is no failure to shrink"), "{}", text(&out.stderr));
}

#[test]
fn run_with_plot_writes_an_svg_with_a_line_per_series() {
    let path = temp_path("plot.svg");
    let out =
        slotlog(&["run", "single", "--seed", "1", "--duration-s", "5", "--plot", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let svg = std::fs::read_to_string(&path).expect("the plot was written");
    std::fs::remove_file(&path).ok();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "not an SVG document");
    // Throughput in blue, p50 in green, p99 in red: each a polyline of many points.
    for colour in ["#0000FF", "#00FF00", "#FF0000"] {
        let line = svg
            .split("<polyline")
            .skip(1)
            .find(|p| p.contains(&format!("stroke=\"{colour}\"")) && p.matches(',').count() > 3)
            .unwrap_or_else(|| panic!("no series drawn in {colour}"));
        assert!(line.contains("points="), "{line}");
    }
}

#[test]
fn run_with_a_plot_it_cannot_write_says_so() {
    let out = slotlog(&["run", "single", "--duration-s", "1", "--plot", "/no/such/dir/out.svg"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("cannot draw /no/such/dir/out.svg"), "{}", text(&out.stderr));
}

#[test]
fn verbose_flags_turn_on_the_drivers_logs_and_rust_log_overrides_them() {
    let dir = temp_path("verbose");
    std::fs::create_dir_all(&dir).unwrap();
    let store = format!("file://{}", dir.join("store").display());
    let log = dir.join("acked").display().to_string();
    let writer = |extra: &[&str], rust_log: Option<&str>| {
        let mut args = extra.to_vec();
        args.extend(["writer", "--store", &store, "--log", &log, "--duration-s", "0.3", "--writers", "1"]);
        let mut command = Command::new(env!("CARGO_BIN_EXE_slotlog"));
        command.args(&args).env_remove("RUST_LOG");
        if let Some(filter) = rust_log {
            command.env("RUST_LOG", filter);
        }
        let out = command.output().expect("slotlog runs");
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    let quiet = writer(&[], None);
    assert!(!quiet.contains("DEBUG"), "{quiet}");
    let loud = writer(&["-vv"], None);
    assert!(loud.contains("DEBUG") && loud.contains("blob"), "{loud}");
    assert!(!loud.contains('\u{1b}'), "no colour codes into a pipe");
    let filtered = writer(&["-vv"], Some("warn"));
    assert!(!filtered.contains("DEBUG"), "RUST_LOG wins over -v: {filtered}");
    std::fs::remove_dir_all(&dir).ok();
}
