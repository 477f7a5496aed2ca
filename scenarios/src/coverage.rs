//! Coverage: which of the kernel's marks (`slotlog_kernel::Mark`) a run or a sweep hit,
//! and which of them CI's sweep must hit.
//!
//! Every mark is required unless [`NOT_REQUIRED`] lists it with the reason, so a mark
//! added to the kernel is required until a scenario reaches it or someone writes down why
//! none does. `slotlog sweep --require-coverage` fails naming each required mark no run
//! hit. Each mark says what rare path it marks in `kernel/src/marks.rs`.

use slotlog_kernel::{Mark, Marks};
use std::collections::BTreeMap;

/// Marks the CI sweep (`just test`: light seeds 1..100, cheap 101..500, heavy 1..40,
/// collect 1..10) is not required to reach, each with why.
pub const NOT_REQUIRED: &[(Mark, &str)] = &[
    (
        Mark::CreateTakenOlderThanIndex,
        "a name below the tip and older than the index of recent slots can be found taken only by a create sent before the index moved recent_slots_max slots on; no scenario stalls a create that long (kernel test: a_store_that_loses_to_a_slot_older_than_its_index_reports_the_winners_last_sequence)",
    ),
    (
        Mark::CreatedSlotGone,
        "a slot created and then gone before its metadata read needs collection to take it within one round trip of its create; only a clock-stopped stall at the create in soak48 (S3 rules) comes near",
    ),
    (
        Mark::AbortHeadUncertain,
        "needs a replica to fail closed while its head create is in flight; CI's scenarios fail closed only to reopen (reload, post-create check), which do not race a create",
    ),
    (
        Mark::CatchUpGapRelisted,
        "a name a listing skipped that then reads absent is a break in the log: the replica fails closed, which no passing run does (kernel test: a_name_a_catch_up_listing_skipped_that_reads_absent_is_a_break)",
    ),
    (
        Mark::ProbeBelowCollection,
        "collection passing a live replica's tip needs a pause longer than slot retention; soak48's 13 h pause reaches it, CI's scenarios have none",
    ),
    (
        Mark::FeedBeforeSlotCollected,
        "a watcher resuming before a checkpoint whose slots collection takes while it reads needs watch and collect in one run; no CI scenario has both",
    ),
    (
        Mark::FeedVerifiedBeforeCheckpoint,
        "a watcher resuming before the checkpoint its replica cold-started from needs watchers and checkpoint cold starts in one run; kernel feed tests reach it",
    ),
    (
        Mark::OpenCheckpointRelisted,
        "a listed checkpoint gone when read with none skipped needs a drop to take it between an opener's listing and its read",
    ),
    (
        Mark::OpenFallbackCheckpoint,
        "reached by `--damage-at-open checkpoint` (compact), which CI's sweep does not pass; kernel open tests reach it",
    ),
    (
        Mark::OpenGenesisRace,
        "every scenario makes its world with one replica before the others open; kernel open tests race two geneses",
    ),
    (
        Mark::OpenCheckpointZeroRace,
        "as open_genesis_race: checkpoint zero is made by the first replica alone, unless a fault hits that one create",
    ),
    (
        Mark::AdoptionAbandoned,
        "needs a peer's checkpoint that cannot be read whole: damage at rest (`--damage-at-open`) or a drop racing the adoption",
    ),
    (
        Mark::BackstopStepped,
        "needs `--role backstop`; CI's scenarios run eager compactors",
    ),
    (
        Mark::BackstopDeferred,
        "needs `--role backstop`; CI's scenarios run eager compactors",
    ),
    (
        Mark::FreshenRaced,
        "a freshen that loses to another write of the same object needs two runs freshening one old object at once",
    ),
    (
        Mark::CheckpointFreshened,
        "a checkpoint name found taken by identical bytes older than the freshen age needs a racer hours behind; soak48 reaches it",
    ),
    (
        Mark::RunOnDamaged,
        "needs a checkpoint name holding bytes that do not decode: damage at rest",
    ),
    (
        Mark::RunOverdue,
        "needs a run stalled past checkpoint_run_ms_max between its look and its create: soak48's clock-stopped stall at a checkpoint object create",
    ),
    (
        Mark::CheckpointWithdrawn,
        "needs a checkpoint create landing more than the grace after its look: soak48's late creates and stalls",
    ),
    (
        Mark::DropAbandoned,
        "needs a kept checkpoint or its root unreadable during a drop: damage at rest",
    ),
    (
        Mark::CollectionOff,
        "needs a backend that cannot condition a delete; the simulated store always can",
    ),
    (
        Mark::StalledCreateRefused,
        "needs a slot create landing later than reload_after_ms after its base: soak48's clock-stopped stall at a slot create",
    ),
    (
        Mark::ReloadUnconfirmed,
        "needs a replica unconfirmed past the reload age (an hour): soak48's 13 h pause",
    ),
];

/// The marks the CI sweep must hit: every mark not in [`NOT_REQUIRED`].
pub fn required() -> Vec<Mark> {
    Mark::ALL.iter().copied().filter(|m| !NOT_REQUIRED.iter().any(|(n, _)| n == m)).collect()
}

/// Every mark by name with its count, zeros included: a run's `coverage`.
pub fn counts(marks: &Marks) -> BTreeMap<String, u64> {
    marks.iter().map(|(m, n)| (m.name().to_string(), n)).collect()
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
        assert_eq!(required().len() + NOT_REQUIRED.len(), Mark::ALL.len());
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
