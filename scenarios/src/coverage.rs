//! Coverage: which of the kernel's marks (`slotlog_kernel::Mark`) a run or a sweep hit,
//! and which of them CI's sweep must hit.
//!
//! Every mark is required unless [`NOT_REQUIRED`] lists it with the reason, so a mark
//! added to the kernel is required until a scenario reaches it or someone writes down why
//! none does. `slotlog sweep --require-coverage` fails naming each required mark no run
//! hit. Each mark says what rare path it marks in `kernel/src/marks.rs`; docs/GUARANTEES.md
//! ("Coverage marks") lists each with the scenarios that reach it.

use serde::{Deserialize, Serialize};
use slotlog_kernel::{Mark, Marks};
use std::collections::{BTreeMap, BTreeSet};

/// Marks the CI sweep (`just test`: light seeds 1..100, cheap 101..500, heavy 1..40
/// with edges, collect 1..24, overload 1..8, search 1..30, soak48 38..46) is not required
/// to reach, each with why.
pub const NOT_REQUIRED: &[(Mark, &str)] = &[
    (
        Mark::CheckpointOtherLayers,
        "two stores stepping to one sequence from different checkpoints needs a racer whose last look and recheck both missed the other's newer checkpoint, then the same boundary; no scenario arranges it (kernel test a_racer_over_other_layers_ends_the_run_and_adopts)",
    ),
    (
        Mark::CreateTakenOlderThanIndex,
        "a name below the tip and older than the index of recent slots is found taken only by a create sent before the index moved recent_slots_max slots on; no scenario delays a create that long (kernel test a_store_that_loses_to_a_slot_older_than_its_index_reports_the_winners_last_sequence)",
    ),
    (
        Mark::CreatedSlotGone,
        "a slot gone between its untimed create and the metadata read after it needs creates answered without a time and collection taking the slot within one round trip; no scenario does",
    ),
    (
        Mark::CatchUpGapRelisted,
        "a name a catch-up listing skipped that then reads absent is a break in the log and fails the replica closed, which no passing run does (kernel test a_name_a_catch_up_listing_skipped_that_reads_absent_is_a_break)",
    ),
    (
        Mark::ProbeHintUnmet,
        "a hint past everything the store holds needs a hint from a peer whose slot never lands; CI's hints follow real slots (kernel test a_hint_past_what_the_store_holds_costs_one_probe_and_is_forgotten)",
    ),
    (
        Mark::FeedBeforeSlotCollected,
        "a watcher resuming before a checkpoint whose slots collection takes while it reads needs watchers and collection in one run; no CI scenario has both (kernel test a_slot_collected_between_the_listing_and_its_read_resyncs_the_cursors_it_held)",
    ),
    (
        Mark::CheckpointFreshened,
        "a checkpoint name found taken by identical bytes older than the freshen age needs a racer hours behind; collect's 10 seeds have none",
    ),
    (Mark::RunOnDamaged, "needs a checkpoint name holding bytes that do not decode: damage at rest"),
    (
        Mark::RunOverdue,
        "needs a run stalled past checkpoint_run_max between its look and its create; soak48's clock-stopped stall at a checkpoint object create is meant to, but hit it in none of seeds 1..6",
    ),
    (
        Mark::CheckpointWithdrawn,
        "needs a checkpoint create landing more than the grace after its look; soak48's late creates and stalls are meant to, but hit it in none of seeds 1..6 (kernel test a_checkpoint_landing_past_the_grace_after_its_look_is_withdrawn_by_its_writer)",
    ),
    (
        Mark::DeleteFenced,
        "needs a freshen (or a rewrite) of an object between a drop's listing and its delete; neither collect's 10 seeds nor soak48's 1..6 have one (kernel test a_shard_freshened_after_the_listing_survives_its_delete)",
    ),
    (Mark::CollectionOff, "needs a backend that cannot condition a delete; the simulated store always can"),
    (
        Mark::OpenReadOnlyWithoutZero,
        "needs a read-only replica opening a world whose genesis stopped between its marker and checkpoint zero; no scenario runs read-only replicas (kernel test a_read_only_replica_opens_a_world_without_checkpoint_zero_and_makes_none)",
    ),
    (
        Mark::SearchInstallsCollapsed,
        "needs more than 1,024 installs between two settles of one replica; the simulation settles after every input (kernel test installs_past_the_queue_bound_collapse_into_one_comparison)",
    ),
    (
        Mark::SearchIndexIdle,
        "needs 30 minutes without a search on a replica that searched; search runs 10 s (kernel test an_idle_index_is_dropped_and_built_again_on_the_next_search)",
    ),
    (
        Mark::SearchIndexOverBudget,
        "needs an index past search_bytes_max (1 GiB) (kernel test an_index_past_its_bound_is_dropped_and_searches_answer_from_the_catalog)",
    ),
];

/// Marks only a soak reaches (measured: `soak48` seeds 3..6 hit each, no other scenario
/// over `just test`'s seeds does), each with the scenario: required of a sweep that ran
/// that scenario (or of a coverage file one such sweep added to), and of no other, so
/// `sweep all` (which leaves the soaks out) is not failed for them.
pub const REACHED_ONLY_BY: &[(Mark, &str)] = &[
    (Mark::CatchUpPaged, "soak48"),
    (Mark::ProbeBelowCollection, "soak48"),
    (Mark::FreshenRaced, "soak48"),
    (Mark::DeleteAlreadyGone, "soak48"),
];

/// The marks a sweep of `swept` (scenario names) must hit: every mark not in
/// [`NOT_REQUIRED`], less those [`REACHED_ONLY_BY`] a scenario not swept.
pub fn required(swept: &BTreeSet<String>) -> Vec<Mark> {
    let not_swept = |m: &Mark| REACHED_ONLY_BY.iter().any(|(n, by)| n == m && !swept.contains(*by));
    Mark::ALL.iter().copied().filter(|m| !NOT_REQUIRED.iter().any(|(n, _)| n == m) && !not_swept(m)).collect()
}

/// What `sweep --coverage-file` keeps between sweeps: the scenarios swept so far,
/// every mark's hits summed over their runs, and the required marks still missed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CoverageFile {
    pub swept: BTreeSet<String>,
    pub coverage: BTreeMap<String, u64>,
    /// The required marks of the scenarios swept that no run hit: the sum's verdict,
    /// written for readers; recomputed, never read back.
    #[serde(skip_deserializing)]
    pub coverage_missed: Vec<String>,
}

/// Every mark by name with its count, zeros included: a run's `coverage`.
pub fn counts(marks: &Marks) -> BTreeMap<String, u64> {
    marks.iter().map(|(m, n)| (m.name().to_string(), n)).collect()
}

/// Adds the counts of `other` into `into` (both mark name to count).
pub fn add(into: &mut BTreeMap<String, u64>, other: &BTreeMap<String, u64>) {
    for (mark, n) in other {
        *into.entry(mark.clone()).or_insert(0) += n;
    }
}

/// The marks of `required` that `hit` (mark name to count) never hit, in declaration order.
pub fn missed(required: &[Mark], hit: &BTreeMap<String, u64>) -> Vec<&'static str> {
    required.iter().filter(|m| hit.get(m.name()).copied().unwrap_or(0) == 0).map(|m| m.name()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mark_not_required_is_listed_once_with_a_reason() {
        for (i, (mark, why)) in NOT_REQUIRED.iter().enumerate() {
            assert!(why.len() > 20, "{} needs a reason", mark.name());
            assert!(!NOT_REQUIRED[..i].iter().any(|(m, _)| m == mark), "{} listed twice", mark.name());
        }
        let all: BTreeSet<String> = REACHED_ONLY_BY.iter().map(|(_, by)| by.to_string()).collect();
        assert_eq!(required(&all).len() + NOT_REQUIRED.len(), Mark::ALL.len());
        for (mark, _) in REACHED_ONLY_BY {
            assert!(!NOT_REQUIRED.iter().any(|(m, _)| m == mark), "{} is both", mark.name());
        }
    }

    #[test]
    fn a_mark_only_a_soak_reaches_is_required_only_of_a_sweep_that_ran_it() {
        let light: BTreeSet<String> = ["single".to_string(), "faults".to_string()].into();
        assert!(!required(&light).contains(&Mark::CatchUpPaged));
        assert!(required(&light).contains(&Mark::HoldExpiredByClock));
        let with_soak: BTreeSet<String> = ["single".to_string(), "soak48".to_string()].into();
        assert!(required(&with_soak).contains(&Mark::CatchUpPaged));
    }

    #[test]
    fn missed_names_the_required_marks_with_no_hits_in_order() {
        let required = [Mark::HoldExpiredByClock, Mark::FeedResync, Mark::ProbeShared];
        let mut hit = BTreeMap::new();
        hit.insert("feed_resync".to_string(), 3);
        hit.insert("probe_shared".to_string(), 0);
        assert_eq!(missed(&required, &hit), vec!["hold_expired_by_clock", "probe_shared"]);
        hit.insert("hold_expired_by_clock".to_string(), 1);
        hit.insert("probe_shared".to_string(), 2);
        assert!(missed(&required, &hit).is_empty());
    }
}
