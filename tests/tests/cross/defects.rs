//! A deliberately broken committer must make the sweep fail within 200 seeds. Each test
//! switches one defect on and walks seeds in order until the checker objects; the seeds
//! that found each defect are recorded in docs/SIMULATION.md.

use slotlog_kernel::Defects;
use slotlog_scenarios::scenario::{Overrides, Scenario};
use slotlog_scenarios::{run_scenario, Report};

/// The first (scenario, seed) whose run the checker fails, walking seeds 1..=200 and,
/// for each seed, the scenarios in order.
fn first_failure(defects: Defects, scenarios: &[&str]) -> Option<(String, u64, String)> {
    let overrides = Overrides { defects, ..Overrides::default() };
    for seed in 1..=200 {
        for name in scenarios {
            let s = Scenario::find(name).expect("a scenario");
            let report = run_scenario(s, seed, &overrides);
            if !report.passed() {
                return Some((name.to_string(), seed, report.violations[0].clone()));
            }
        }
    }
    None
}

#[test]
fn acknowledging_before_the_slot_is_confirmed_is_caught() {
    let found = first_failure(
        Defects { ack_before_confirm: true, ..Defects::default() },
        &["conflicts", "race", "faults"],
    );
    let (scenario, seed, violation) = found.expect("the checker catches acks before confirmation");
    eprintln!("ack_before_confirm caught by {scenario} seed {seed}: {violation}");
}

#[test]
fn skipping_the_read_after_an_ambiguous_create_is_caught() {
    let found =
        first_failure(Defects { skip_ambiguous_read: true, ..Defects::default() }, &["faults", "crash"]);
    let (scenario, seed, violation) = found.expect("the checker catches an unread ambiguous create");
    eprintln!("skip_ambiguous_read caught by {scenario} seed {seed}: {violation}");
}

#[test]
fn the_correct_committer_passes_the_same_runs() {
    for name in ["conflicts", "race", "faults", "crash"] {
        let s = Scenario::find(name).expect("a scenario");
        let report = run_scenario(s, 1, &Overrides::default());
        assert!(report.passed(), "{name} seed 1: {:?}", report.violations);
    }
}

#[test]
fn an_exact_read_that_skips_the_next_slot_check_is_caught() {
    let found = first_failure(
        Defects { exact_read_skips_probe: true, ..Defects::default() },
        &["reads", "conflicts"],
    );
    let (scenario, seed, violation) = found.expect("the checker catches a stale exact read");
    eprintln!("exact_read_skips_probe caught by {scenario} seed {seed}: {violation}");
}

#[test]
fn a_catalog_read_from_a_snapshot_older_than_a_second_is_caught() {
    let found = first_failure(Defects { catalog_ignores_staleness: true, ..Defects::default() }, &["reads"]);
    let (scenario, seed, violation) = found.expect("the checker catches a catalog read past its bound");
    eprintln!("catalog_ignores_staleness caught by {scenario} seed {seed}: {violation}");
}

#[test]
fn acknowledging_a_slot_created_below_collection_is_caught() {
    // The stalled writer's create lands in a name collection freed; without the
    // post-create check its members are acknowledged and lost with the fork.
    let found = first_failure(Defects { skip_post_create_check: true, ..Defects::default() }, &["collect"]);
    let (scenario, seed, violation) = found.expect("the checker catches an acknowledged fork");
    eprintln!("skip_post_create_check caught by {scenario} seed {seed}: {violation}");
}

/// On S3 a rewrite of the same bytes keeps the ETag, so a drop's delete at the listed ETag
/// would still take the object a new checkpoint uses. The checker judges every freshen for
/// the premise (the bytes change), since the race itself is rare. `collect` seeds met a
/// freshen now and then (1, later 39; none of 1..40 once slots carried entries' times), so
/// the defect is sought where freshens are routine: every `soak48` seed of 1..48 rewrites
/// (mark `freshen_rewrite`), and seed 1 is caught in about 5 s.
#[test]
fn a_freshen_that_keeps_the_bytes_is_caught() {
    let soak48 = Scenario::find("soak48").expect("a scenario");
    let defects = Defects { freshen_keeps_bytes: true, ..Defects::default() };
    let kept_bytes = |r: &Report| r.violations.iter().any(|v| v.contains("with the bytes it held"));
    let (seed, report) = first_caught(soak48, &[1], defects, "Reachable", |_, r| kept_bytes(r));
    eprintln!("freshen_keeps_bytes caught by collect seed {seed}: {}", report.violations[0]);
}

#[test]
fn a_replica_that_spins_at_one_instant_is_stopped_with_a_verdict() {
    let overrides = Overrides {
        defects: Defects { timer_never_cleared: true, ..Defects::default() },
        ..Overrides::default()
    };
    let report = run_scenario(Scenario::find("single").expect("a scenario"), 1, &overrides);
    assert!(!report.passed(), "a spinning replica passed");
    assert!(report.rules.iter().any(|r| r == "LivenessTimeStuck"), "rules: {:?}", report.rules);
    assert!(report.violations.iter().any(|v| v.contains("virtual time stuck")), "{:?}", report.violations);
}

/// The first seed, of the seeds that met the defect before (`known`) and then `1..=SEEDS_MAX`,
/// whose run of `scenario` with `defects` the checker stops by `rule` and `also` accepts,
/// with its report. Which seeds meet a timing defect moves with every change to the
/// scenario's timing (a new call, a reordered one), so the defect tests ask that the rule
/// catch it within a bounded range, not on one seed; the known seeds first keep it quick.
fn first_caught(
    scenario: &Scenario,
    known: &[u64],
    defects: Defects,
    rule: &str,
    also: impl Fn(u64, &Report) -> bool,
) -> (u64, Report) {
    const SEEDS_MAX: u64 = 200;
    let overrides = Overrides { defects, ..Overrides::default() };
    known
        .iter()
        .copied()
        .chain(1..=SEEDS_MAX)
        .map(|seed| (seed, run_scenario(scenario, seed, &overrides)))
        .find(|(seed, r)| r.rules.iter().any(|x| x == rule) && also(*seed, r))
        .unwrap_or_else(|| panic!("no seed of 1..={SEEDS_MAX} of {} was stopped by {rule}", scenario.name))
}

/// The starvation rule (sim/src/liveness.rs): with the bucket healthy, a replica that holds
/// writes for 8 s answering none on its merits is stopped. Crash seed 7 met the defect
/// (a catch-up waiting on a name a probe had installed): one replica sat on 51 writes for
/// 10 s until they expired, and the run passed the checker. Since, seeds 3, 7, 14, 34, 19
/// and 29 have met it as timing moved (19 and 29 of 1..400 after the seal after an answer,
/// only 144 of 1..200 once drops swept segments, none of 1..200 but 227, 341 and 535 of
/// 201..600 once reads took carried bodies from the ledger, 60 of 1..200 on 2026-12-06):
/// the first seed caught is judged, then run fixed.
#[test]
fn a_replica_that_holds_writes_and_commits_none_is_stopped_as_starved() {
    let crash = Scenario::find("crash").expect("a scenario");
    let defects = Defects { catch_up_keeps_installed_gap: true, ..Defects::default() };
    let held = |r: &Report| r.violations.iter().any(|v| v.contains("held writes"));
    let (seed, report) =
        first_caught(crash, &[60, 227, 341, 535, 144, 29, 19, 7], defects, "LivenessStarved", |_, r| held(r));
    assert!(held(&report), "seed {seed}: {:?}", report.violations);
    let fixed = run_scenario(crash, seed, &Overrides::default());
    assert!(fixed.passed(), "seed {seed}: {:?}", fixed.violations);
    assert_eq!(fixed.expired, 0, "seed {seed}");
}

/// The settle phase (sim/src/cluster.rs, `calm`): once the clients stop, the bucket
/// injects no more faults, so the starvation rule judges every scenario's end. `faults`
/// injects throughout its 20 s of writes, which used to leave the rule silent there: the
/// same defect is stopped after the clients stopped (seeds 7, 8, 18, 19, 23, 26, 27, 31,
/// 34 and 36 of 1..40 have been, as timing moved, and 22 on 2026-12-06), and that seed
/// passes fixed.
#[test]
fn a_replica_that_settles_nothing_once_faults_stop_is_stopped_as_starved() {
    let faults = Scenario::find("faults").expect("a scenario");
    let defects = Defects { catch_up_keeps_installed_gap: true, ..Defects::default() };
    let after_workload = |seed: u64, r: &Report| {
        r.virtual_s > faults.config(seed, &Overrides::default()).duration.as_secs_f64()
    };
    let (seed, _) = first_caught(faults, &[22, 19], defects, "LivenessStarved", after_workload);
    let fixed = run_scenario(faults, seed, &Overrides::default());
    assert!(fixed.passed(), "seed {seed}: {:?}", fixed.violations);
}

#[test]
fn a_run_past_its_memory_or_event_budget_is_stopped_with_a_verdict() {
    use slotlog_sim::{LivenessBudget, NotLive};
    let compact = Scenario::find("compact").expect("a scenario");
    let budget = |b: LivenessBudget| {
        let mut c = compact.config(1, &Overrides { duration_s: Some(5.0), ..Overrides::default() });
        c.liveness = b;
        slotlog_sim::run(&c).not_live
    };
    let memory = budget(LivenessBudget { resident_version_records_max: 10, ..LivenessBudget::default() });
    assert!(matches!(memory, Some(NotLive::MemoryBudget { records }) if records > 10), "{memory:?}");
    let events = budget(LivenessBudget { events_max: 1_000, ..LivenessBudget::default() });
    assert_eq!(events, Some(NotLive::EventBudget { events: 1_001 }));
    assert_eq!(budget(LivenessBudget::default()), None, "the default budgets stop a healthy run");
}

/// The admission bound: an overloaded world answers `Busy` at once and keeps taking
/// control work; a kernel that admits everything lets writes wait out their deadlines,
/// and the report stops it.
#[test]
fn an_overloaded_world_refuses_at_once_and_one_that_admits_everything_is_caught() {
    let overload = Scenario::find("overload").expect("a scenario");
    let short = Overrides { duration_s: Some(5.0), ..Overrides::default() };
    let r = run_scenario(overload, 1, &short);
    assert!(r.passed(), "{:?}", r.violations);
    assert_eq!(r.lost, 0);
    assert!(r.admission.busy > 0, "{:?}", r.admission);
    assert!(r.admission.control_offered > 0);
    assert_eq!(r.admission.control_admitted, r.admission.control_offered, "{:?}", r.admission);
    assert_eq!(r.admission.timeouts, 0);
    let defects = Defects { admit_everything: true, ..Defects::default() };
    // 10 s of three times what commits: the backlog outlasts the 10 s request deadline.
    let caught = run_scenario(overload, 1, &Overrides { defects, ..Overrides::default() });
    assert_eq!(caught.admission.busy, 0);
    assert!(caught.rules.iter().any(|r| r == "AdmissionBound"), "rules: {:?}", caught.rules);
}

/// Watches without hints (issue 19): the watch-only follower's watcher sees every event
/// within the poll plus the stated slack; a kernel whose poll never runs leaves it
/// waiting for good, and the watch delivery rule names it.
#[test]
fn a_watcher_without_hints_is_served_by_the_poll_and_one_without_the_poll_is_caught() {
    let watchpoll = Scenario::find("watchpoll").expect("a scenario");
    let r = run_scenario(watchpoll, 1, &Overrides::default());
    assert!(r.passed(), "{:?}", r.violations);
    assert!(r.watch.polls > 0, "the follower learned the tip by polling: {:?}", r.watch);
    assert!(r.watch.events_delivered > 0);
    let (lag, bound) =
        (r.watch.max_delivery_lag_ms.expect("judged"), r.watch.delivery_bound_ms.expect("set"));
    assert!(lag <= bound as f64, "{lag} ms over {bound} ms");
    let defects = Defects { watch_poll_skipped: true, ..Defects::default() };
    let caught = run_scenario(watchpoll, 1, &Overrides { defects, ..Overrides::default() });
    assert_eq!(caught.watch.polls, 0);
    assert!(caught.rules.iter().any(|r| r == "WatchDelivery"), "rules: {:?}", caught.rules);
}

#[test]
fn a_views_reads_stay_on_its_pin_and_a_view_reading_the_tip_is_caught() {
    // The first seed whose views both age out and are evicted (seed 3 was, until reads
    // took carried bodies from the ledger; 1, 4 and 5 are now); the follower is
    // read-only throughout. Every run it makes must pass.
    let views = Scenario::find("views").expect("a scenario");
    let (seed, r) = [3, 1, 4, 5]
        .into_iter()
        .chain(1..=40)
        .map(|seed| (seed, run_scenario(views, seed, &Overrides::default())))
        .inspect(|(seed, r)| assert!(r.passed(), "seed {seed}: {:?}", r.violations))
        .find(|(_, r)| r.views.expired > 0 && r.views.evicted > 0)
        .expect("a seed of 1..=40 whose views aged out and were evicted");
    assert!(r.views.reads_behind_tip > 0, "seed {seed}: later reads answered behind the tip: {:?}", r.views);
    let defects = Defects { view_reads_tip: true, ..Defects::default() };
    let caught = run_scenario(views, seed, &Overrides { defects, ..Overrides::default() });
    assert!(caught.rules.iter().any(|r| r == "ViewSnapshot"), "seed {seed}, rules: {:?}", caught.rules);
}

#[test]
fn searches_answer_from_bodies_only_when_covered_and_one_that_is_not_is_caught() {
    let search = Scenario::find("search").expect("a scenario");
    let r = run_scenario(search, 1, &Overrides::default());
    assert!(r.passed(), "{:?}", r.violations);
    assert!(r.search.body_answers > 0 && r.search.catalog_answers > 0, "both modes answered: {:?}", r.search);
    let defects = Defects { search_ignores_coverage: true, ..Defects::default() };
    let caught = run_scenario(search, 1, &Overrides { defects, ..Overrides::default() });
    assert!(caught.rules.iter().any(|r| r == "ReadAnswer"), "rules: {:?}", caught.rules);
}

/// Issue 20: a build takes the words a segment part carries without tokenizing its bodies,
/// so they are trusted as far as the part is; the checker judges every body answer by the
/// model's own tokenizing of the bodies, so a compactor writing each body the next one's
/// words is caught. Seed 2 is the first of `search` whose builds read segment parts.
#[test]
fn segment_parts_carrying_other_bodies_words_are_caught() {
    let search = Scenario::find("search").expect("a scenario");
    let r = run_scenario(search, 2, &Overrides::default());
    assert!(r.passed(), "{:?}", r.violations);
    assert!(r.coverage.get("search_segment_words_taken").is_some_and(|n| *n > 0), "seed 2 took parts' words");
    let defects = Defects { segment_words_shifted: true, ..Defects::default() };
    let caught = run_scenario(search, 2, &Overrides { defects, ..Overrides::default() });
    assert!(caught.rules.iter().any(|r| r == "ReadAnswer"), "rules: {:?}", caught.rules);
}

/// Issue 20: an entry's modified time is the one value of a member the model cannot
/// derive; the checker bounds it by its slot's creation, so a clock ahead is caught.
#[test]
fn a_modified_time_after_its_slot_s_creation_is_caught() {
    let defects = Defects { modified_time_ahead: true, ..Defects::default() };
    assert_single_seed_1_caught(defects, "ModelDivergence", "modified time");
}

/// Issue 13: the checker judges carried bodies against the bodies the model made rather
/// than through the kernel's decoder, so a committer that carries them out of member order
/// must still fail the run, on the slot rule, in its first seed.
#[test]
fn carrying_bodies_out_of_member_order_is_caught() {
    let defects = Defects { carry_bodies_reversed: true, ..Defects::default() };
    assert_single_seed_1_caught(defects, "SlotObject", "out of place");
}

/// `single` seed 1 with `defects` is stopped by `rule`, with a violation saying `text`.
fn assert_single_seed_1_caught(defects: Defects, rule: &str, text: &str) {
    let single = Scenario::find("single").expect("a scenario");
    let caught = run_scenario(single, 1, &Overrides { defects, ..Overrides::default() });
    assert!(caught.rules.iter().any(|r| r == rule), "rules: {:?}", caught.rules);
    assert!(
        caught.violations.iter().any(|v| v.contains(text)),
        "violations: {:?}",
        caught.violations.iter().take(3).collect::<Vec<_>>()
    );
}
