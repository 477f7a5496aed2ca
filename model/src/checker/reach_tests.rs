//! The collection rules, judged from a name history alone.

use super::reach::{check, Ages};
use super::{CheckReport, Rule, Violation};
use crate::history::{NameChange, NameHistory};
use slotlog_kernel::format::{Checkpoint, Keys, Root, SegmentName};
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::WorldId;
use slotlog_kernel::time::Instant;
use slotlog_kernel::world::policy::{Policy, PolicyRules};

const MINUTE_US: u64 = 60_000_000;
const HOUR_US: u64 = 60 * MINUTE_US;
const AGES: Ages = Ages { grace_us: 15 * MINUTE_US, slot_retention_us: 24 * HOUR_US };

fn keys() -> Keys {
    Keys::new("w")
}

fn history() -> NameHistory {
    let k = keys();
    NameHistory::keeping_bytes_under(vec![k.log_prefix(), k.checkpoints_prefix(), k.roots_prefix()])
}

/// Records checkpoint `next_sequence` using shard `shard` at `at_us`: shard, root, checkpoint.
fn checkpoint(names: &mut NameHistory, next_sequence: u64, shard: u8, at_us: u64) -> String {
    checkpoint_over(names, next_sequence, shard, at_us, true)
}

/// The same, creating the shard only when `create_shard` and it is absent.
fn checkpoint_over(
    names: &mut NameHistory,
    next_sequence: u64,
    shard: u8,
    at_us: u64,
    create_shard: bool,
) -> String {
    let at = Instant::from_micros(at_us);
    let shard_name = Hash32::of(&[shard]);
    if create_shard && names.held_at(&keys().shard(&shard_name), at).is_none() {
        names.record(at, &keys().shard(&shard_name), NameChange::Created, Some(&[shard]));
    }
    let root = Root {
        world_id: WorldId([1; 16]),
        next_sequence,
        previous_hash: Hash32::ZERO,
        document_count: 0,
        policy: Policy { version: 0, rules: PolicyRules::default() },
        shard_bits: 0,
        shards: vec![shard_name],
        deltas: vec![],
        receipts_from_sequence: next_sequence,
        receipts: vec![],
        stamp: 0,
    };
    let root_bytes = root.encode();
    let root_name = Hash32::of(&root_bytes);
    names.record(at, &keys().root_object(&root_name), NameChange::Created, Some(&root_bytes));
    let c = Checkpoint::full(WorldId([1; 16]), next_sequence, Hash32::ZERO, 0, root_name);
    names.record(at, &keys().checkpoint(next_sequence), NameChange::Created, Some(&c.encode()));
    keys().checkpoint(next_sequence)
}

fn delete(names: &mut NameHistory, key: &str, at_us: u64) {
    names.record(Instant::from_micros(at_us), key, NameChange::Deleted, None);
}

fn judge(names: &NameHistory) -> CheckReport {
    let mut r = CheckReport::default();
    check(names, &keys(), AGES, &mut r);
    r
}

fn rules(r: &CheckReport) -> Vec<Rule> {
    r.violations.iter().map(Violation::rule).collect()
}

#[test]
fn deleting_a_shard_a_kept_checkpoint_reaches_is_caught() {
    let mut names = history();
    checkpoint(&mut names, 10, 1, 0);
    delete(&mut names, &keys().shard(&Hash32::of(&[1])), HOUR_US);
    let r = judge(&names);
    assert_eq!((r.reachable_missing, rules(&r)), (1, vec![Rule::Reachable]));
    assert!(matches!(r.violations[0], Violation::ReachableDeleted { .. }));
}

#[test]
fn a_checkpoint_past_the_newest_three_with_an_old_successor_and_its_shard_may_go() {
    let mut names = history();
    let old = checkpoint(&mut names, 10, 1, 0);
    for (i, s) in [(20, 2), (30, 3), (40, 4)] {
        checkpoint(&mut names, i, s, (i / 10) * HOUR_US);
    }
    delete(&mut names, &keys().shard(&Hash32::of(&[1])), 5 * HOUR_US);
    delete(&mut names, &old, 5 * HOUR_US + 1);
    assert_eq!(rules(&judge(&names)), vec![]);
}

#[test]
fn deleting_a_kept_checkpoint_is_caught() {
    let mut names = history();
    let first = checkpoint(&mut names, 10, 1, 0);
    checkpoint(&mut names, 20, 2, HOUR_US);
    delete(&mut names, &first, 2 * HOUR_US);
    let r = judge(&names);
    assert!(r.violations.iter().any(|v| matches!(v, Violation::KeptCheckpointDeleted { .. })));
}

#[test]
fn a_slot_goes_only_once_covered_and_past_the_retention() {
    let mut names = history();
    let slot = |s: u64| keys().slot(s);
    for s in 1..=3 {
        names.record(Instant::from_micros(s), &slot(s), NameChange::Created, Some(&[s as u8]));
    }
    checkpoint(&mut names, 3, 1, HOUR_US);
    delete(&mut names, &slot(1), 25 * HOUR_US);
    assert_eq!(rules(&judge(&names)), vec![], "covered and a day old");
    delete(&mut names, &slot(3), 26 * HOUR_US);
    let r = judge(&names);
    assert!(matches!(r.violations[..], [Violation::RetainedSlotDeleted { .. }]), "not covered: {r:?}");
}

#[test]
fn a_young_covered_slot_is_retained() {
    let mut names = history();
    names.record(Instant::ZERO, &keys().slot(1), NameChange::Created, Some(&[1]));
    checkpoint(&mut names, 2, 1, MINUTE_US);
    delete(&mut names, &keys().slot(1), HOUR_US);
    assert_eq!(rules(&judge(&names)), vec![Rule::Reachable]);
}

#[test]
fn content_objects_are_never_deleted() {
    let mut names = history();
    let block = keys().history(&Hash32::of(b"h"));
    names.record(Instant::ZERO, &block, NameChange::Created, Some(b"h"));
    delete(&mut names, &block, 100 * HOUR_US);
    let r = judge(&names);
    assert!(matches!(r.violations[..], [Violation::ContentDeleted { .. }]));
}

#[test]
fn a_checkpoint_created_over_a_missing_shard_is_caught() {
    let mut names = history();
    checkpoint(&mut names, 10, 2, 0);
    names.record(Instant::ZERO, &keys().shard(&Hash32::of(&[1])), NameChange::Created, Some(&[1]));
    delete(&mut names, &keys().shard(&Hash32::of(&[1])), 5);
    // A late create of a checkpoint reusing the collected shard.
    checkpoint_over(&mut names, 20, 1, 10, false);
    let r = judge(&names);
    assert!(r.violations.iter().any(|v| matches!(v, Violation::CheckpointReachesMissing { .. })), "{r:?}");
}

/// Slot 19 (holding the sequence checkpoint 20 covers) created at `at_us`.
fn slot_19(names: &mut NameHistory, at_us: u64) {
    names.record(Instant::from_micros(at_us), &keys().slot(19), NameChange::Created, Some(&[19]));
}

#[test]
fn a_checkpoint_landing_within_the_grace_of_what_it_covers_over_a_missing_shard_is_caught() {
    let mut names = history();
    names.record(Instant::ZERO, &keys().shard(&Hash32::of(&[1])), NameChange::Created, Some(&[1]));
    delete(&mut names, &keys().shard(&Hash32::of(&[1])), HOUR_US);
    slot_19(&mut names, HOUR_US);
    checkpoint_over(&mut names, 20, 1, HOUR_US + 10 * MINUTE_US, false);
    let r = judge(&names);
    assert_eq!((rules(&r), r.checkpoints_landed_late), (vec![Rule::Reachable], 0), "{r:?}");
}

/// A writer stalled between its last look and its create landing (SPEC 10.15): what it
/// names may be gone, and its writer withdraws it even while it is kept.
#[test]
fn a_checkpoint_landing_past_the_grace_of_what_it_covers_is_withdrawn_not_judged() {
    let mut names = history();
    slot_19(&mut names, 0);
    checkpoint(&mut names, 10, 2, 0);
    names.record(Instant::ZERO, &keys().shard(&Hash32::of(&[1])), NameChange::Created, Some(&[1]));
    delete(&mut names, &keys().shard(&Hash32::of(&[1])), HOUR_US);
    let late = checkpoint_over(&mut names, 20, 1, 26 * HOUR_US, false);
    delete(&mut names, &late, 26 * HOUR_US + 1);
    let r = judge(&names);
    assert_eq!((rules(&r), r.checkpoints_landed_late), (vec![], 1), "{r:?}");
}

#[test]
fn a_kept_checkpoint_that_landed_in_time_may_not_be_withdrawn() {
    let mut names = history();
    slot_19(&mut names, 0);
    checkpoint(&mut names, 10, 2, 0);
    let prompt = checkpoint(&mut names, 20, 1, MINUTE_US);
    delete(&mut names, &prompt, HOUR_US);
    let r = judge(&names);
    assert!(r.violations.iter().any(|v| matches!(v, Violation::KeptCheckpointDeleted { .. })), "{r:?}");
}

/// The generation fence (SPEC 10.15): a drop's delete at the generation it listed must
/// fail once a freshen rewrote the object; one that succeeds took an object written
/// within the grace, as a freshen that keeps the bytes allows where the version token is
/// a hash of them.
#[test]
fn deleting_an_object_freshened_within_the_grace_is_caught() {
    let mut names = history();
    let shard = keys().shard(&Hash32::of(&[1]));
    names.record(Instant::ZERO, &shard, NameChange::Created, Some(&[1]));
    names.record(Instant::from_micros(HOUR_US), &shard, NameChange::Rewritten, Some(&[1, 7]));
    delete(&mut names, &shard, HOUR_US + MINUTE_US);
    let r = judge(&names);
    assert!(matches!(r.violations[..], [Violation::YoungDeleted { .. }]), "{r:?}");
}

#[test]
fn an_object_freshened_more_than_the_grace_before_may_be_deleted() {
    let mut names = history();
    let shard = keys().shard(&Hash32::of(&[1]));
    names.record(Instant::ZERO, &shard, NameChange::Created, Some(&[1]));
    names.record(Instant::from_micros(HOUR_US), &shard, NameChange::Rewritten, Some(&[1, 7]));
    delete(&mut names, &shard, 2 * HOUR_US);
    assert_eq!(rules(&judge(&names)), vec![]);
}

/// A freshen that writes the bytes the name held leaves an S3 ETag (a hash of them) as it
/// was, so a drop's delete at the listed ETag would still succeed.
#[test]
fn a_rewrite_that_keeps_the_bytes_is_caught() {
    let mut names = history();
    let shard = keys().shard(&Hash32::of(&[1]));
    names.record(Instant::ZERO, &shard, NameChange::Created, Some(&[1]));
    names.record(Instant::from_micros(HOUR_US), &shard, NameChange::Rewritten, Some(&[1, 7]));
    assert_eq!(rules(&judge(&names)), vec![], "new bytes");
    names.record(Instant::from_micros(2 * HOUR_US), &shard, NameChange::Rewritten, Some(&[1, 7]));
    let r = judge(&names);
    assert!(matches!(r.violations[..], [Violation::RewriteKeptBytes { .. }]), "{r:?}");
}

/// Records body segment part `part` of label 0 in layout `bits`, window `window`, at `at_us`.
fn segment(names: &mut NameHistory, bits: u8, window: u64, part: u32, at_us: u64) -> String {
    let key = keys().segment(&SegmentName { bits, label: 0, window, part });
    names.record(Instant::from_micros(at_us), &key, NameChange::Created, Some(&[part as u8]));
    key
}

/// Body segments (SPEC 10.17): a reader of a kept checkpoint's layout reads its label's
/// newest whole window, so a drop may not take a part of it.
#[test]
fn deleting_a_part_of_the_newest_whole_segment_window_is_caught() {
    let mut names = history();
    checkpoint(&mut names, 10, 1, 0);
    segment(&mut names, 0, 1, 0, 0);
    let newest = segment(&mut names, 0, 2, 0, 0);
    segment(&mut names, 0, 2, 1, 0);
    // A newer window without part 0 is not whole: window 2 stays the newest whole one.
    segment(&mut names, 0, 3, 1, 0);
    delete(&mut names, &newest, HOUR_US);
    let r = judge(&names);
    assert!(matches!(r.violations[..], [Violation::NewestSegmentDeleted { .. }]), "{r:?}");
    assert_eq!(rules(&r), vec![Rule::Reachable]);
}

#[test]
fn deleting_a_superseded_segment_window_or_another_layouts_parts_passes() {
    let mut names = history();
    checkpoint(&mut names, 10, 1, 0);
    let superseded = [segment(&mut names, 0, 1, 0, 0), segment(&mut names, 0, 1, 1, 0)];
    segment(&mut names, 0, 2, 0, 0);
    // Layout 1 is no kept checkpoint's: its newest whole window may go too.
    let other = segment(&mut names, 1, 2, 0, 0);
    for key in superseded.iter().chain([&other]) {
        delete(&mut names, key, HOUR_US);
    }
    assert_eq!(rules(&judge(&names)), vec![]);
}
