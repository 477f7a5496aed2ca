//! Scenario-level guarantees, organised by the decision record's sections: determinism
//! of the simulation itself, and the seeds that once found bugs, kept as regressions.

use slotlog_scenarios::run_scenario;
use slotlog_scenarios::scenario::{Overrides, Scenario};

fn run(name: &str, seed: u64, o: &Overrides) -> slotlog_scenarios::Report {
    run_scenario(Scenario::find(name).expect("a scenario"), seed, o)
}

mod reproduction {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_trace() {
        let o = Overrides { duration_s: Some(5.0), ..Overrides::default() };
        let a = run("faults", 7, &o);
        let b = run("faults", 7, &o);
        assert_eq!(a.trace_hash, b.trace_hash);
        assert_eq!((a.offered, a.acked, a.uncertain), (b.offered, b.acked, b.uncertain));
    }

    #[test]
    fn another_seed_gives_another_trace() {
        let o = Overrides { duration_s: Some(5.0), ..Overrides::default() };
        assert_ne!(run("faults", 7, &o).trace_hash, run("faults", 8, &o).trace_hash);
    }

    #[test]
    fn checking_determinism_runs_a_seed_twice_to_the_same_trace() {
        let o = Overrides { duration_s: Some(3.0), ..Overrides::default() };
        let d = slotlog_scenarios::scenario::Determinism::check(
            Scenario::find("crash").expect("a scenario"),
            5,
            &o,
        );
        assert!(d.same(), "{}", d.text());
        assert_eq!(d.first.trace_hash.len(), 64);
        assert!(d.text().contains(&d.first.trace_hash));
    }

    #[test]
    fn the_trace_a_run_writes_hashes_to_its_trace_hash() {
        let o = Overrides { duration_s: Some(3.0), ..Overrides::default() };
        let mut lines = String::new();
        let mut sink = |e: &slotlog_sim::TraceEvent<'_>| {
            lines += &slotlog_scenarios::trace::line(e);
            lines.push('\n');
        };
        let s = Scenario::find("faults").expect("a scenario");
        let report = slotlog_scenarios::run_scenario_traced(s, 7, &o, Some(&mut sink));
        assert_eq!(slotlog_scenarios::trace::hash_lines(&lines), Ok(report.trace_hash.clone()));
        assert_eq!(report.trace_hash, run("faults", 7, &o).trace_hash, "tracing changes nothing");
    }

    #[test]
    fn a_report_names_the_command_that_replays_it() {
        let o = Overrides { duration_s: Some(2.0), batch_max: Some(16), ..Overrides::default() };
        let r = run("saturate", 3, &o);
        assert_eq!(r.repro, "slotlog run saturate --seed 3 --duration-s 2 --batch-max 16");
    }
}

/// The store semantics collection will be tested under (issues 10 and 17): the `s3`
/// profile and content version tokens run the existing scenarios clean, say so in the
/// report, and replay from the command the report names.
mod store_rules {
    use super::*;
    use slotlog_sim::gcs::{ProfileKind, VersionTokens};

    #[test]
    fn the_s3_profile_makes_content_tokens_and_reports_them() {
        let o = Overrides { duration_s: Some(3.0), profile: Some(ProfileKind::S3), ..Overrides::default() };
        let r = run("crash", 2, &o);
        assert!(r.passed(), "{:?}", r.violations);
        assert_eq!((r.profile.as_str(), r.store.etag.as_str(), r.forks), ("s3", "content", 0));
        assert_eq!(r.repro, "slotlog run crash --seed 2 --duration-s 3 --profile s3");
    }

    #[test]
    fn etag_content_runs_clean_on_gcs_and_names_itself_in_the_replay() {
        let o =
            Overrides { duration_s: Some(3.0), etag: Some(VersionTokens::Content), ..Overrides::default() };
        let r = run("faults", 4, &o);
        assert!(r.passed(), "{:?}", r.violations);
        assert_eq!((r.profile.as_str(), r.store.etag.as_str()), ("gcs", "content"));
        assert_eq!(r.repro, "slotlog run faults --seed 4 --duration-s 3 --etag content");
        assert_eq!(r.store.objects_max, Some(r.store.objects_end), "nothing is deleted yet");
    }
}

/// Runs that once failed, each with the finding it exposed (docs/SIMULATION.md).
mod regressions {
    use super::*;

    #[test]
    fn conflicts_seed_1_policy_version_zero_holds_at_genesis() {
        let r = run("conflicts", 1, &Overrides::default());
        assert!(r.passed(), "{:?}", r.violations);
        assert!(r.rejected > 0 && r.acked > 0, "the run still exercises conflicts");
    }

    /// A replica stopped a day between its last look and its checkpoint create landing
    /// (SPEC 10.15, "A checkpoint that lands late"): the checkpoint names a root a drop
    /// took meanwhile; its writer died first, and a drop takes it once past the grace.
    /// Seed 57 found it; since the compactor reads 64 blocks at once, not 16, that seed
    /// runs otherwise (and passes), and seed 52 landed one late; since slots grow with
    /// the queue and carry their bodies (issue 11), seed 84 did; since replicas take
    /// names in turn (docs/TURNS.md, "Rotation") and steps write deltas (SPEC 10.16),
    /// seed 72 did; since listings page and control work goes first, seed 56 did; since
    /// a slot seals after its answered callers have written again (SPEC 7), seeds 2, 10,
    /// 62, 83 and 93 of 1..100 did; since drops sweep body segments (SPEC 10.17), seeds 18
    /// and 80 did; since segment parts carry their words, seeds 27, 28, 40 and 55 of
    /// 1..100 did; since a body is read from its slot first only when the slot carries
    /// bodies, seed 96 of 1..100 does. Which seed it is moves with the scenario's timing,
    /// so the test takes the first that lands one late of those found (newest first), then
    /// seeds 1..100; every seed it runs, and the earlier finders, must pass.
    #[test]
    fn a_checkpoint_landing_a_day_late_is_taken_by_a_drop() {
        let found = [96, 27, 28, 40, 55, 18, 80, 2, 10, 62, 83, 93];
        let late = found.into_iter().chain(1..=100).find(|&seed| {
            let r = run("collect", seed, &Overrides::default());
            assert!(r.passed(), "seed {seed}: {:?}", r.violations);
            let c = &r.collection;
            assert_eq!(c.reachable_missing, 0, "seed {seed}: {c:?}");
            c.checkpoints_landed_late > 0
        });
        assert!(late.is_some(), "no collect seed of 1..100 landed a checkpoint late");
        for seed in [57, 84, 72, 56] {
            let earlier = run("collect", seed, &Overrides::default());
            assert!(earlier.passed(), "seed {seed}: {:?}", earlier.violations);
        }
    }
}

/// Turns without hints (docs/TURNS.md, "Without hints"; issue 11): every commit hint lost.
mod turns_without_hints {
    use super::*;

    /// Before blind turns, one store took every slot and each other store's 128 writes
    /// riding its batches expired `Uncertain` (share_min 0): a loser read one winning slot
    /// per lost create while the winner pipelined, and no hint told the winner to hold.
    #[test]
    fn race_seed_1_with_every_hint_lost_starves_no_store() {
        let o = Overrides { hints: Some(false), ..Overrides::default() };
        let r = run("race", 1, &o);
        assert!(r.passed(), "{:?}", r.violations);
        assert_eq!((r.uncertain, r.expired, r.lost), (0, 0, 0));
        assert!(r.share_min >= 0.3, "share_min {}", r.share_min);
        assert!(r.per_replica.iter().all(|p| p.slots_won > 0), "{:?}", r.per_replica);
        assert_eq!(r.repro, "slotlog run race --seed 1 --hints off");
    }

    /// A store alone, with hints carried, never holds: the lone store's figures are the
    /// record's, with or without blind turns.
    #[test]
    fn a_lone_store_with_hints_carried_never_holds() {
        let r = run("single", 1, &Overrides { duration_s: Some(10.0), ..Overrides::default() });
        assert!(r.passed(), "{:?}", r.violations);
        assert_eq!(r.per_replica[0].holds, 0);
    }
}

/// The decision record's "Group commit": one store alone.
mod group_commit {
    use super::*;

    #[test]
    fn a_single_store_at_250_writes_per_second_acknowledges_them_all() {
        let r = run("single", 1, &Overrides { duration_s: Some(10.0), ..Overrides::default() });
        assert!(r.passed(), "{:?}", r.violations);
        assert_eq!(r.lost, 0);
        assert!(r.acked as f64 >= 0.99 * r.offered as f64, "acked {} of {}", r.acked, r.offered);
    }
}

/// The decision record's "Checkpoints, world marker and cold start".
mod checkpoints {
    use super::*;

    #[test]
    fn every_checkpoint_a_run_writes_is_the_models_and_cold_starts_load_them() {
        let r = run("compact", 1, &Overrides::default());
        assert!(r.passed(), "{:?}", r.violations);
        let c = &r.checkpoints;
        assert!(c.in_bucket >= 2, "{c:?}");
        assert_eq!(c.judged, c.in_bucket, "the checker judged every checkpoint in the bucket");
        assert_eq!(c.model_mismatches, 0);
        assert!(c.objects_reused > 0, "a checkpoint reuses what the one before it wrote: {c:?}");
        assert!(c.loaded_at_open > 0, "a restarted replica opened from a full checkpoint: {c:?}");
        assert!(c.adopted > 0, "a due replica adopted a peer's newer checkpoint: {c:?}");
        // The ledger holds what changed since the newest checkpoint, and lets it go there.
        let m = &r.memory;
        assert!(m.ledger_slots_max > 0 && m.ledger_documents_max > 0, "{m:?}");
        assert!(m.ledger_slots_end <= m.ledger_slots_max, "{m:?}");
    }

    /// With the writers as backstops, the eager follower writes every checkpoint and the
    /// writers only adopt (SPEC 10.14).
    #[test]
    fn backstop_writers_adopt_the_eager_followers_checkpoints_and_write_none() {
        let o = Overrides {
            role: Some(slotlog_kernel::CompactionRole::Backstop),
            duration_s: Some(30.0),
            ..Overrides::default()
        };
        let r = run("compact", 1, &o);
        assert!(r.passed(), "{:?}", r.violations);
        let c = &r.checkpoints;
        assert_eq!(c.by_writers, 0, "{c:?}");
        assert!(c.written > 0, "the follower stepped: {c:?}");
        assert!(c.adopted > 0, "the writers adopted: {c:?}");
        assert_eq!((c.judged, c.model_mismatches), (c.in_bucket, 0));
    }
}

/// Checkpoints issue, "beyond the record": with the eager store gone for good, the
/// backstop writers take over its checkpoints once the newest is older than
/// `backstop_after` (20 minutes) on the store's clock, although each of them restarts
/// every few seconds (compact's crashes), and they do not all write the same steps.
mod takeover {
    use super::*;

    #[test]
    fn backstops_take_over_when_the_eager_store_is_gone_though_they_restart_often() {
        let o = Overrides {
            role: Some(slotlog_kernel::CompactionRole::Backstop),
            rate: Some(30.0),
            duration_s: Some(1_320.0),
            followers_down_at_s: Some(30.0),
            ..Overrides::default()
        };
        let r = run("compact", 1, &o);
        assert!(r.passed(), "{:?}", r.violations);
        assert_eq!(r.lost, 0);
        let c = &r.checkpoints;
        assert!(c.by_writers > 0, "the backstops took over: {c:?}");
        assert!(c.identical_races <= c.runs, "at most one step a takeover written twice: {c:?}");
        assert_eq!((c.judged, c.model_mismatches), (c.in_bucket, 0), "{c:?}");
    }
}

/// Checkpoints issue, "bounded steps": with the step lowered to 256 documents (the
/// least it may be), the compact scenario's backlogs (its 2,000-document seed, then
/// cadences of 64 slots that change more than 256 documents) fold in several steps a
/// run, and the checker finds every step's checkpoint equal to the model at its sequence.
/// With a step larger than the world, each run is one step.
mod bounded_steps {
    use super::*;

    #[test]
    fn a_backlog_past_the_step_limit_folds_in_steps_the_checker_accepts() {
        let o = Overrides { duration_s: Some(20.0), step_docs: Some(256), ..Overrides::default() };
        let r = run("compact", 1, &o);
        assert!(r.passed(), "{:?}", r.violations);
        let c = &r.checkpoints;
        assert!(c.steps > c.runs, "runs took several steps: {c:?}");
        assert_eq!((c.judged, c.model_mismatches), (c.in_bucket, 0), "{c:?}");
        assert_eq!(r.lost, 0);
    }

    #[test]
    fn a_step_larger_than_the_world_folds_each_run_in_one_step() {
        let o = Overrides { duration_s: Some(20.0), step_docs: Some(1 << 20), ..Overrides::default() };
        let r = run("compact", 1, &o);
        assert!(r.passed(), "{:?}", r.violations);
        let c = &r.checkpoints;
        assert!(c.runs > 0, "{c:?}");
        // One fold a run: a run that ended at its last look without writing folded once too.
        assert_eq!(c.steps, c.runs, "{c:?}");
        assert_eq!((c.judged, c.model_mismatches), (c.in_bucket, 0), "{c:?}");
    }
}

/// The decision record's "Change feed", as its amendment "the change feed reaches past
/// the ring" states it: reach, not ring.
mod change_feed {
    use super::*;

    /// A watcher resuming from a cursor just before the checkpoint its replica
    /// cold-started from is served from the slots before that checkpoint, read from the
    /// bucket and verified along the chain, because they are within the reach (16,384
    /// slots). Seeds 33, 168 and 171 resynced it when the feed read only slots it had
    /// indexed. Which seeds meet the case moves with the scenario's timing (6, 8, 21, 40,
    /// 47 and 59 of 1..60 did with checkpoint deltas and rotation, issue 11), so the test
    /// runs the seeds that found the defect, then seeds from 1 on until two have read
    /// slots before a checkpoint, and asks every run to pass without a resync. Seeds are
    /// found with checkpoints folded whole, so the test keeps the record's step (32,768
    /// documents, larger than the world): with `crash`'s own step of 256 the checkpoints
    /// fall at other sequences.
    #[test]
    fn a_watcher_resuming_just_before_a_cold_start_checkpoint_reads_the_slots_before_it() {
        const SEEDS_MAX: u64 = 80;
        let o = Overrides { step_docs: Some(32_768), ..Overrides::default() };
        let mut read_before = Vec::new();
        for seed in [33, 168, 171].into_iter().chain(1..=SEEDS_MAX) {
            let r = run("crash", seed, &o);
            assert!(r.passed(), "seed {seed}: {:?}", r.violations);
            assert_eq!(r.watch.resyncs, 0, "seed {seed}");
            if r.watch.slots_verified_before_checkpoint > 0 {
                read_before.push(seed);
            }
            if read_before.len() >= 2 {
                return;
            }
        }
        panic!("only seeds {read_before:?} of 1..={SEEDS_MAX} read slots before a checkpoint");
    }
}

/// SPEC 10.12, "a checkpoint that cannot be loaded costs only replay": in the crash
/// scenario (restarts every few seconds, checkpoints every 32 slots), every cold start
/// finds the newest full checkpoint damaged at rest, the checkpoint object itself or the
/// root it names, and the harness puts the bytes back once that replica has opened. The
/// replica skips it, opens from an older full checkpoint and replays the log past it: no
/// write is lost, no replica fails closed, and the checker, judging the bucket as the
/// replicas wrote it, finds every checkpoint equal to the model.
mod damaged_checkpoint_at_open {
    use super::*;
    use slotlog_sim::DamagedObject;

    fn opens_from_an_older_checkpoint(object: DamagedObject) {
        let o = Overrides { damage_at_open: Some(object), ..Overrides::default() };
        // Seeds whose cold starts meet the damage with an older full checkpoint in the
        // bucket (on seed 3 every damaged open had only checkpoint zero below it and
        // replayed from genesis, as correct, but not what this test shows).
        for seed in [1, 2, 4] {
            let r = run("crash", seed, &o);
            assert!(r.passed(), "{object:?} seed {seed}: {:?}", r.violations);
            assert_eq!(r.lost, 0, "{object:?} seed {seed}");
            let c = &r.checkpoints;
            assert!(c.damaged_at_open > 0, "{object:?} seed {seed}: the damage was made: {c:?}");
            assert!(c.damaged_opened_from_older > 0, "{object:?} seed {seed}: {c:?}");
            assert!(c.skipped_at_open >= c.damaged_opened_from_older, "{object:?} seed {seed}: {c:?}");
            assert_eq!(c.damage_repaired + c.damage_replaced, c.damaged_at_open, "{object:?} seed {seed}");
            assert_eq!((c.judged, c.model_mismatches), (c.in_bucket, 0), "{object:?} seed {seed}: {c:?}");
        }
    }

    #[test]
    fn a_damaged_newest_checkpoint_object_is_skipped_for_an_older_one() {
        opens_from_an_older_checkpoint(DamagedObject::Checkpoint);
    }

    #[test]
    fn a_damaged_newest_root_is_skipped_for_an_older_checkpoint() {
        opens_from_an_older_checkpoint(DamagedObject::Root);
    }
}

mod gate {
    use super::*;

    /// The gate's shape at a small size: a world preloaded with its full checkpoint, both
    /// stores opening from it, clients that start once they have, and a follower whose
    /// apply lag is sampled for every slot the writer creates.
    #[test]
    fn a_world_preloaded_with_its_checkpoint_opens_from_it_and_its_follower_applies_every_slot() {
        let o = Overrides { docs: Some(20_000), duration_s: Some(10.0), ..Overrides::default() };
        let r = run("gate", 1, &o);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert_eq!(r.lost, 0);
        assert_eq!(r.checkpoints.loaded_at_open, 2, "writer and follower open from the preloaded checkpoint");
        assert!(r.checkpoints.judged >= 1, "the preloaded checkpoint is judged like any other");
        // 250 writes/s over the 10 s counted from when both had opened.
        assert!((2_250..=2_750).contains(&r.offered), "offered {}", r.offered);
        let follower = r.follower.expect("the follower applied slots");
        let created = r.per_replica[0].slots_won;
        assert!(follower.slots_sampled >= created * 9 / 10, "{} of {created}", follower.slots_sampled);
    }
}

mod paging {
    use super::*;

    /// Listings paged with cursors over a directory of 10,000 documents while writes land,
    /// each page judged by the checker against the model at the page's own snapshot.
    #[test]
    fn listings_page_over_ten_thousand_documents_while_writes_land() {
        let o = Overrides { docs: Some(10_000), duration_s: Some(5.0), ..Overrides::default() };
        let r = run("reads", 1, &o);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert!(r.reads.catalog > 100 && r.reads.exact > 100, "{:?}", r.reads);
    }
}
