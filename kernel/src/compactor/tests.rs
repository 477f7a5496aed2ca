//! One test per rule of the compactor and of opening from a full checkpoint (SPEC 10.11,
//! 10.12): the cadence, objects before the checkpoint object, reuse of unchanged objects,
//! a taken name settled by comparing content, cold start from the newest checkpoint, and
//! falling back from one that cannot be loaded.

use crate::blob::{BlobError, BlobOp, BlobOutcome, ObjectMeta, WriteTime, DATE_RESOLUTION_US};
use crate::checkpoint::fold;
use crate::config::{CompactionRole, Config};
use crate::effect::Warning;
use crate::format::{Checkpoint, HistoryBlock, Keys};
use crate::hash::Hash32;
use crate::reply::{CheckpointProblem, FailReason};
use crate::testkit::{is_checkpoint_create, is_slot_get, keys, Fate, Harness, MemStore, WORLD};
use crate::world::{IndexEntry, Path, StateView, VersionRecord, WorldState};
use bytes::Bytes;
use core::time::Duration;

/// Checkpoints every `slots` slots, at once.
pub(super) fn compacting(slots: u64) -> Config {
    Config { checkpoint_slots: slots, checkpoint_jitter: Duration::ZERO, ..Config::default() }
}

/// Commits one publish per slot, one after the other, firing no timer (so the checkpoint
/// interval never passes).
pub(super) fn write_docs(h: &mut Harness, first_op: u128, n: u128) {
    for i in 0..n {
        let r = h.publish(first_op + i, &format!("/d{}.md", first_op + i), &format!("body {i}"));
        h.settle();
        assert!(matches!(h.reply(r), Some(Ok(_))), "{:?}", h.reply(r));
    }
}

pub(super) fn full_checkpoints(store: &MemStore) -> Vec<u64> {
    let k = keys();
    store.objects.keys().filter_map(|key| k.parse_checkpoint(key)).filter(|s| *s > 1).collect()
}

/// Every retained version of every document, its stored ones read from the store's
/// history blocks.
fn all_versions(w: &WorldState, store: &MemStore) -> Vec<(IndexEntry, Vec<VersionRecord>)> {
    let mut out = Vec::new();
    for (_, d) in w.documents() {
        let mut versions = Vec::new();
        for r in d.stored_blocks() {
            let block = HistoryBlock::decode(&store.bytes(&keys().history(&r.block)).expect("stored"))
                .expect("a block");
            let through = d.stored_through();
            let retained = |v: &&VersionRecord| v.version >= d.entry.first_version && v.version <= through;
            versions.extend(block.records.iter().filter(retained).cloned());
        }
        versions.extend(d.held_versions().cloned());
        out.push((d.entry.clone(), versions));
    }
    out
}

/// The parts of a world every replica must agree on.
pub(super) fn same_world(a: &WorldState, b: &WorldState, store: &MemStore) {
    assert_eq!(a.sequence(), b.sequence());
    assert_eq!(a.tip_hash(), b.tip_hash());
    assert_eq!(a.policy(), b.policy());
    assert_eq!(all_versions(a, store), all_versions(b, store));
    let receipts = |w: &WorldState| w.receipts_since(1).cloned().collect::<Vec<_>>();
    assert_eq!(receipts(a), receipts(b));
}

#[test]
fn a_checkpoint_is_written_once_the_cadence_of_slots_is_reached() {
    let mut h = Harness::opened(compacting(4));
    write_docs(&mut h, 1, 3);
    assert!(full_checkpoints(&h.store).is_empty(), "three slots are short of the cadence");
    write_docs(&mut h, 4, 1);
    assert_eq!(full_checkpoints(&h.store), vec![5]);
    assert_eq!(h.replica.compactor_stats().written, 1);
}

#[test]
fn the_checkpoint_object_is_created_after_every_object_it_names() {
    let mut h = Harness::opened(compacting(2));
    write_docs(&mut h, 1, 2);
    let creates: Vec<&BlobOp> = h.log.iter().filter(|op| matches!(op, BlobOp::Create { .. })).collect();
    let at = creates.iter().position(|op| is_checkpoint_create(op) && op.key() != keys().checkpoint(1));
    let at = at.expect("a full checkpoint was created");
    // Only body segments, optional work, come after it (SPEC 10.17).
    let after: Vec<&str> = creates[at + 1..].iter().map(|op| op.key()).collect();
    assert!(
        after.iter().all(|k| keys().parse_segment(k).is_some()),
        "only segments after the checkpoint: {after:?}"
    );
    assert!(!after.is_empty(), "the rewritten shards' segments follow the checkpoint");
    assert!(creates[..at].iter().all(|op| keys().parse_segment(op.key()).is_none()), "no segment before it");
    for kind in ["/roots/", "/shards/", "/history/", "/receipts/"] {
        assert!(creates[..at].iter().any(|op| op.key().contains(kind)), "{kind} before the checkpoint");
    }
}

#[test]
fn a_step_writes_the_bodies_its_slots_carried_out_as_blobs_before_its_checkpoint() {
    let mut h = Harness::opened(compacting(4));
    write_docs(&mut h, 1, 3);
    assert_eq!(h.body_creates(), 0, "the slots carry their bodies");
    write_docs(&mut h, 4, 1);
    assert_eq!(full_checkpoints(&h.store), vec![5]);
    let creates: Vec<&BlobOp> = h.log.iter().filter(|op| matches!(op, BlobOp::Create { .. })).collect();
    let at = creates.iter().position(|op| op.key() == keys().checkpoint(5)).expect("created");
    // write_docs numbers bodies from 0 in each call: "body 0" twice, one blob.
    for i in 0..3u128 {
        let key = keys().body(&Hash32::of(format!("body {i}").as_bytes()));
        assert!(creates[..at].iter().any(|op| op.key() == key), "{key} before the checkpoint");
        assert!(h.store.bytes(&key).is_some(), "{key} stored");
    }
    assert_eq!(h.replica.compactor_stats().bodies_written_out, 3, "each body once a step");
    write_docs(&mut h, 10, 4);
    assert_eq!(full_checkpoints(&h.store), vec![5, 9]);
    assert_eq!(h.replica.compactor_stats().bodies_written_out, 7, "the next step writes only its own slots'");
}

#[test]
fn a_checkpoint_reuses_the_objects_that_did_not_change() {
    let mut h = Harness::opened(compacting(8));
    write_docs(&mut h, 1, 8);
    write_docs(&mut h, 100, 8);
    let stats = h.replica.compactor_stats();
    assert_eq!(stats.written, 2);
    // The second checkpoint changed 8 documents' history: the first 8 are reused.
    assert!(stats.objects_reused >= 8, "{stats:?}");
}

#[test]
fn the_interval_writes_a_checkpoint_when_slots_are_few() {
    let config = Config { checkpoint_slots: 1_000, checkpoint_jitter: Duration::ZERO, ..Config::default() };
    let mut h = Harness::opened(config);
    write_docs(&mut h, 1, 1);
    h.advance(Config::default().checkpoint_interval);
    h.run();
    assert_eq!(full_checkpoints(&h.store), vec![2]);
}

#[test]
fn the_bodies_the_slots_carry_make_a_checkpoint_due_before_the_slot_count_does() {
    // Four 1,000-byte bodies a checkpoint: the slot count (1,000) and the interval never
    // come due here, so only the carried bytes can start a step.
    let config = Config { checkpoint_carried_bytes: 4_000, ..compacting(1_000) };
    let mut h = Harness::opened(config);
    let publish = |h: &mut Harness, op: u128| {
        let r = h.publish(op, &format!("/c{op}.md"), &format!("{op:04}").repeat(250));
        h.settle();
        assert!(matches!(h.reply(r), Some(Ok(_))), "{:?}", h.reply(r));
    };
    for op in 1..=3 {
        publish(&mut h, op);
    }
    assert_eq!(h.replica.ledger_held().carried_bytes, 3_000);
    assert!(full_checkpoints(&h.store).is_empty(), "3,000 bytes held: not yet due");
    publish(&mut h, 4);
    assert_eq!(full_checkpoints(&h.store), vec![5], "due at 4,000 bytes");
    assert_eq!(h.marked(crate::marks::Mark::CheckpointDueCarried), 1);
    assert_eq!(h.replica.compactor_stats().bodies_written_out, 4);
    assert_eq!(h.replica.ledger_held().carried_bytes, 0, "the step took what the ledger held");
    for op in 5..=8 {
        publish(&mut h, op);
    }
    assert_eq!(full_checkpoints(&h.store), vec![5, 9], "and again 4,000 bytes later");
    assert_eq!(h.marked(crate::marks::Mark::CheckpointDueCarried), 2);
}

#[test]
fn a_replica_with_compaction_off_writes_no_checkpoint() {
    let mut h = Harness::opened(Config { compaction: CompactionRole::Off, ..compacting(1) });
    write_docs(&mut h, 1, 4);
    assert!(full_checkpoints(&h.store).is_empty());
}

#[test]
fn a_cold_start_loads_the_newest_checkpoint_and_replays_only_the_slots_after_it() {
    let mut h = Harness::opened(compacting(5));
    write_docs(&mut h, 1, 12);
    assert_eq!(full_checkpoints(&h.store), vec![6, 11]);
    let mut cold = Harness::with_store(Config::default(), h.store.clone(), 2);
    cold.run();
    assert!(cold.replica.is_open());
    let replayed: Vec<String> =
        cold.log.iter().filter(|op| is_slot_get(op)).map(|op| op.key().to_string()).collect();
    assert_eq!(replayed, vec![keys().slot(11), keys().slot(12)], "only the slots after checkpoint 11");
    same_world(h.replica.world().expect("open"), cold.replica.world().expect("open"), &h.store);
    assert!(cold.warnings.is_empty());
}

#[test]
fn an_ambiguous_checkpoint_create_that_landed_is_read_back_and_taken() {
    let mut h = Harness::opened(compacting(3));
    write_docs(&mut h, 1, 2);
    let r = h.publish(3, "/d3.md", "body");
    h.deliver_until(is_checkpoint_create_full);
    h.deliver_with(Fate::TimeoutApplied);
    h.settle();
    assert!(matches!(h.reply(r), Some(Ok(_))));
    let stats = h.replica.compactor_stats();
    assert_eq!((stats.written, stats.identical_races), (0, 1), "{stats:?}");
    assert_eq!(full_checkpoints(&h.store), vec![4]);
}

#[test]
fn a_checkpoint_name_holding_other_content_fails_the_replica_closed() {
    let mut h = Harness::opened(compacting(3));
    write_docs(&mut h, 1, 2);
    // Another replica claims sequence 3's checkpoint with another root.
    let other = Checkpoint::full(WORLD, 4, Hash32::of(b"some slot"), 3, Hash32::of(b"another root"));
    h.store.put(h.now, keys().checkpoint(4), Bytes::from(other.encode()));
    h.failure_expected = true;
    let r = h.publish(3, "/d3.md", "body");
    h.settle();
    assert!(matches!(h.reply(r), Some(Ok(_))), "the write itself committed");
    let problem = CheckpointProblem::Diverged;
    assert_eq!(h.failures, vec![FailReason::CheckpointMismatch { key: keys().checkpoint(4), problem }]);
}

/// Bit rot at the name a run is about to create: the bytes there do not decode, which is
/// damage, not another replica's content. It costs only that checkpoint: the run ends with
/// a warning, the replica stays up, and a later step writes past the name.
#[test]
fn a_checkpoint_name_found_damaged_at_the_create_ends_the_run_and_a_later_step_writes_past_it() {
    let mut h = Harness::opened(compacting(4));
    write_docs(&mut h, 1, 3);
    let r = h.publish(4, "/d4.md", "body");
    h.deliver_all_but(is_checkpoint_create_full);
    assert!(h.find(is_checkpoint_create_full).is_some(), "the run is at its checkpoint create");
    h.store.put(h.now, keys().checkpoint(5), Bytes::from_static(b"not a checkpoint"));
    h.settle();
    assert!(matches!(h.reply(r), Some(Ok(_))), "{:?}", h.reply(r));
    assert_eq!(h.replica.compactor_stats().runs_on_damaged, 1);
    let skipped = |w: &Warning| matches!(w, Warning::CheckpointSkipped { key, reason: FailReason::Decode { .. } } if *key == keys().checkpoint(5));
    assert!(h.warnings.iter().any(skipped), "{:?}", h.warnings);
    write_docs(&mut h, 5, 4);
    assert_eq!(full_checkpoints(&h.store), vec![5, 9]);
    assert_eq!(h.replica.compactor_stats().written, 1, "{:?}", h.replica.compactor_stats());
}

/// A damaged checkpoint newer than the newest a replica knows is given up at its
/// adoption, and then passed over: before, every later look tried to adopt it again, and
/// the replica never stepped again.
#[test]
fn a_damaged_newer_checkpoint_is_given_up_once_and_the_replica_steps_past_it() {
    let mut h = Harness::opened(compacting(4));
    write_docs(&mut h, 1, 2);
    h.store.put(h.now, keys().checkpoint(3), Bytes::from_static(b"not a checkpoint"));
    write_docs(&mut h, 3, 2);
    let stats = h.replica.compactor_stats().clone();
    assert_eq!((stats.adoptions_abandoned, stats.written), (1, 0), "{stats:?}");
    write_docs(&mut h, 5, 4);
    let stats = h.replica.compactor_stats().clone();
    assert_eq!((stats.adoptions_abandoned, stats.written), (1, 1), "{stats:?}");
    assert_eq!(full_checkpoints(&h.store), vec![3, 9]);
}

#[test]
fn a_checkpoint_missing_an_object_costs_only_replay_from_the_one_before() {
    let mut h = Harness::opened(compacting(4));
    write_docs(&mut h, 1, 9);
    assert_eq!(full_checkpoints(&h.store), vec![5, 9]);
    let mut store = h.store.clone();
    let shard = store.objects.keys().find(|k| k.contains("/shards/")).cloned().expect("a shard");
    // Take one shard or delta of the newest checkpoint away (one the older does not use).
    let newest_shards = shards_of(&store, &keys(), 9);
    let older_shards = shards_of(&store, &keys(), 5);
    let taken = newest_shards.iter().find(|s| !older_shards.contains(s)).cloned().unwrap_or(shard);
    store.objects.remove(&taken);
    let mut cold = Harness::with_store(Config::default(), store, 2);
    cold.run();
    assert!(cold.replica.is_open());
    same_world(h.replica.world().expect("open"), cold.replica.world().expect("open"), &h.store);
    let reason = FailReason::CheckpointMismatch {
        key: keys().checkpoint(9),
        problem: CheckpointProblem::ObjectMissing { key: taken },
    };
    assert_eq!(cold.warnings, vec![Warning::CheckpointSkipped { key: keys().checkpoint(9), reason }]);
}

/// A run has no timer of its own: blocks its fold asks for must be asked of the store in
/// the same step, or in an idle world the run waits for the next input, past its bound
/// (the `collect` scenario lost over half its runs that way).
#[test]
fn a_run_asks_for_the_stored_blocks_its_fold_needs_without_waiting_for_an_input() {
    let mut a = Harness::opened(compacting(4));
    write_docs(&mut a, 1, 4);
    assert_eq!(full_checkpoints(&a.store), vec![5]);
    // A cold start from that checkpoint holds none of its history blocks.
    let mut b = Harness::with_store(compacting(4), a.store.clone(), 2);
    b.run();
    for i in 1..=4u128 {
        let r = b.publish(100 + i, &format!("/d{i}.md"), "again");
        b.settle();
        assert!(matches!(b.reply(r), Some(Ok(_))), "{:?}", b.reply(r));
    }
    // Every document's window gained a version since its block was stored: the fold
    // reads the four blocks, and the run ends with no further input.
    assert_eq!(full_checkpoints(&b.store), vec![5, 9], "{:?}", b.replica.compactor_stats());
    assert_eq!(b.replica.compactor_stats().written, 1);
}

#[test]
fn the_fold_is_a_function_of_the_world_alone() {
    let mut a = Harness::opened(Config::default());
    write_docs(&mut a, 1, 5);
    let mut b = Harness::with_store(Config::default(), a.store.clone(), 2);
    b.run();
    let fold_held = |w| fold(w, &|_| None).expect("every version is held");
    let (fa, fb) = (fold_held(a.replica.world().expect("open")), fold_held(b.replica.world().expect("open")));
    assert_eq!(fa.checkpoint, fb.checkpoint);
    let objects = |f: &crate::checkpoint::Folded| {
        f.objects.iter().map(|o| (o.key(&keys()), o.bytes.clone())).collect::<Vec<_>>()
    };
    assert_eq!(objects(&fa), objects(&fb));
}

#[test]
fn a_throttled_object_create_is_retried() {
    let mut h = Harness::opened(compacting(1));
    let r = h.publish(1, "/a.md", "a");
    h.deliver_until(|op| matches!(op, BlobOp::Create { key, .. } if key.contains("/history/")));
    h.deliver_with(Fate::Fail(BlobError::Throttled));
    h.run();
    assert!(matches!(h.reply(r), Some(Ok(_))));
    assert_eq!(full_checkpoints(&h.store), vec![2]);
}

pub(super) fn is_checkpoint_create_full(op: &BlobOp) -> bool {
    is_checkpoint_create(op) && op.key() != keys().checkpoint(1)
}

/// The keys of the shards and deltas a checkpoint's root names.
fn shards_of(store: &MemStore, k: &Keys, next_sequence: u64) -> Vec<String> {
    let c = Checkpoint::decode(&store.bytes(&k.checkpoint(next_sequence)).expect("stored")).expect("decodes");
    let root_key = k.root_object(&c.root.expect("full"));
    let root = crate::format::Root::decode(&store.bytes(&root_key).expect("root")).expect("decodes");
    root.shards.iter().map(|s| k.shard(s)).chain(root.deltas.iter().map(|d| k.delta(&d.block))).collect()
}

/// Found by the `skip_ambiguous_read` defect test: a replica that failed closed with a
/// checkpoint due kept asking to be woken at that past instant, and the simulation spun.
#[test]
fn a_replica_that_failed_closed_asks_for_no_wake_up() {
    let mut h = Harness::opened(Config {
        checkpoint_slots: 1,
        checkpoint_jitter: Duration::from_millis(10_000),
        ..Config::default()
    });
    let r = h.publish(1, "/a.md", "a");
    h.settle();
    assert!(matches!(h.reply(r), Some(Ok(_))));
    assert!(h.replica.poll_timeout().is_some(), "a checkpoint is due after its jitter");
    // A foreign object at the next slot name: the next exact read's probe fails closed.
    h.store.put(h.now, keys().slot(2), Bytes::from_static(b"not a slot"));
    h.failure_expected = true;
    h.advance_ms(1);
    h.read(crate::effect::Read::Fetch { path: "/a.md".into(), version: None });
    h.settle();
    assert_eq!(h.failures.len(), 1, "{:?}", h.failures);
    assert_eq!(h.replica.poll_timeout(), None);
}

/// Copies every object of `from` that `to` lacks (a peer's checkpoint landing).
fn copy_missing(from: &MemStore, to: &mut MemStore, now: crate::time::Instant) {
    for (key, (bytes, _, _)) in &from.objects {
        if to.bytes(key).is_none() {
            to.put(now, key.clone(), bytes.clone());
        }
    }
}

/// A world of six slots in `a`'s store, and a peer `b` with a lower cadence that opened
/// on the same log and wrote the checkpoint after slot 6 into its copy of the bucket.
fn a_peer_checkpointed_after_six_slots(a_config: Config) -> (Harness, Harness) {
    let mut a = Harness::opened(a_config);
    write_docs(&mut a, 1, 6);
    let mut b = Harness::with_store(compacting(4), a.store.clone(), 2);
    b.run();
    assert_eq!(full_checkpoints(&b.store), vec![7]);
    assert_eq!(b.replica.compactor_stats().written, 1);
    (a, b)
}

#[test]
fn a_due_replica_adopts_a_peers_newer_checkpoint_and_writes_none() {
    let (mut a, b) = a_peer_checkpointed_after_six_slots(compacting(8));
    copy_missing(&b.store, &mut a.store, a.now);
    assert_eq!(a.replica.resident_version_records(), 6);
    write_docs(&mut a, 7, 2);
    assert_eq!(full_checkpoints(&a.store), vec![7], "the peer's checkpoint is adopted, not stepped past");
    let stats = a.replica.compactor_stats();
    assert_eq!((stats.looks, stats.adopted, stats.written), (1, 1, 0), "{stats:?}");
    assert_eq!(a.replica.resident_version_records(), 2, "only the versions after the peer's checkpoint");
    // What it serves is unchanged: a cold start from the bucket agrees with it.
    let mut cold = Harness::with_store(Config::default(), a.store.clone(), 3);
    cold.run();
    same_world(a.replica.world().unwrap(), cold.replica.world().unwrap(), &a.store);
}

#[test]
fn after_an_adoption_the_cadence_counts_again_and_a_replica_steps_when_no_peer_did() {
    let (mut a, b) = a_peer_checkpointed_after_six_slots(compacting(8));
    copy_missing(&b.store, &mut a.store, a.now);
    write_docs(&mut a, 7, 2);
    assert_eq!(a.replica.compactor_stats().adopted, 1);
    write_docs(&mut a, 9, 7);
    assert_eq!(full_checkpoints(&a.store), vec![7], "a cadence since the adoption is not yet reached");
    write_docs(&mut a, 16, 1);
    assert_eq!(full_checkpoints(&a.store), vec![7, 17]);
    assert_eq!(a.replica.compactor_stats().written, 1);
}

#[test]
fn a_peers_checkpoint_ahead_of_the_tip_is_installed_once_the_tip_reaches_it() {
    let (mut a, mut b) = a_peer_checkpointed_after_six_slots(compacting(8));
    // The peer commits four more slots and checkpoints them; `a` has not seen the slots.
    write_docs(&mut b, 100, 4);
    assert_eq!(full_checkpoints(&b.store), vec![7, 11]);
    copy_missing(&b.store, &mut a.store, a.now);
    // The interval passes: `a` looks, finds the checkpoint after slot 10 and reads it,
    // but its tip is at 6, so it holds the adoption.
    a.advance_ms(600_000);
    a.replica.handle_timeout(a.now);
    a.drain();
    a.settle();
    let stats = a.replica.compactor_stats().clone();
    assert_eq!((stats.looks, stats.adopted, stats.written), (1, 0, 0), "{stats:?}");
    assert!(a.replica.is_checkpointing(), "the adoption waits for the tip");
    assert_eq!(a.replica.resident_version_records(), 6);
    // `a` writes: its create finds slot 7 taken, it catches up past 10, and adopts.
    write_docs(&mut a, 7, 1);
    let stats = a.replica.compactor_stats().clone();
    assert_eq!((stats.adopted, stats.written), (1, 0), "{stats:?}");
    assert_eq!(a.replica.resident_version_records(), 1, "only its own write after the peer's checkpoint");
    let mut cold = Harness::with_store(Config::default(), a.store.clone(), 3);
    cold.run();
    same_world(a.replica.world().unwrap(), cold.replica.world().unwrap(), &a.store);
}

fn is_shard_get(op: &BlobOp) -> bool {
    matches!(op, BlobOp::Get { key } if key.starts_with(&keys().shards_prefix()))
}

/// The record's third adoption try rebases under the install lock, because installing a
/// snapshot rebased before a commit drops that commit. Here the install is one step of the
/// replica's state machine on the served snapshot itself (SPEC 10.14): a commit that
/// lands while the adoption reads is in the world the install changes, and stays.
#[test]
fn a_commit_that_lands_while_an_adoption_reads_is_kept_by_its_install() {
    let (mut a, b) = a_peer_checkpointed_after_six_slots(compacting(8));
    copy_missing(&b.store, &mut a.store, a.now);
    a.advance_ms(600_000);
    a.replica.handle_timeout(a.now);
    a.drain();
    a.deliver_all_but(is_shard_get);
    assert!(a.find(is_shard_get).is_some(), "the adoption is reading the peer's shards");
    let during = a.publish(50, "/d1.md", "written during the adoption");
    a.deliver_all_but(is_shard_get);
    assert!(matches!(a.reply(during), Some(Ok(_))), "{:?}", a.reply(during));
    assert_eq!(a.replica.compactor_stats().adopted, 0);
    a.settle();
    assert_eq!(a.replica.compactor_stats().adopted, 1);
    let path = Path::parse("/d1.md").expect("a path");
    let doc = a.replica.world().unwrap().document(&path).expect("the document");
    assert_eq!(doc.entry.version, 2, "the commit made during the adoption is served");
    assert_eq!(doc.held_versions().map(|v| v.version).collect::<Vec<_>>(), vec![2], "and held");
    let mut cold = Harness::with_store(Config::default(), a.store.clone(), 3);
    cold.run();
    same_world(a.replica.world().unwrap(), cold.replica.world().unwrap(), &a.store);
}

/// A checkpoint older than the one the served snapshot stands on (a peer's run that
/// resumed late) is never adopted: a look lists only names after the newest it knows.
#[test]
fn a_checkpoint_older_than_the_served_one_is_never_adopted() {
    let (mut a, mut b) = a_peer_checkpointed_after_six_slots(compacting(8));
    write_docs(&mut b, 100, 4);
    assert_eq!(full_checkpoints(&b.store), vec![7, 11]);
    // `a` adopts the newest, then the peer's older checkpoint appears in its bucket.
    let older = b.store.bytes(&keys().checkpoint(7)).expect("stored");
    let mut newest_only = b.store.clone();
    newest_only.objects.remove(&keys().checkpoint(7));
    copy_missing(&newest_only, &mut a.store, a.now);
    write_docs(&mut a, 7, 5);
    assert_eq!(a.replica.compactor_stats().adopted, 1);
    a.store.put(a.now, keys().checkpoint(7), older);
    a.advance_ms(600_000);
    write_docs(&mut a, 12, 8);
    let stats = a.replica.compactor_stats().clone();
    assert_eq!(stats.adopted, 1, "{stats:?}");
    assert!(stats.looks >= 2, "it looked again: {stats:?}");
}

#[test]
fn a_peers_checkpoint_that_names_another_chain_fails_the_replica_closed() {
    let mut a = Harness::opened(compacting(3));
    write_docs(&mut a, 1, 3);
    let before = full_checkpoints(&a.store);
    assert_eq!(before, vec![4]);
    write_docs(&mut a, 4, 1);
    // A "peer" claims the checkpoint after slot 5 with another chain anchor.
    let other = Checkpoint::full(WORLD, 6, Hash32::of(b"another slot"), 5, Hash32::of(b"another root"));
    a.store.put(a.now, keys().checkpoint(6), Bytes::from(other.encode()));
    a.failure_expected = true;
    write_docs(&mut a, 5, 2);
    let problem = CheckpointProblem::Diverged;
    assert_eq!(a.failures, vec![FailReason::CheckpointMismatch { key: keys().checkpoint(6), problem }]);
}

#[test]
fn a_backstop_adopts_and_steps_only_once_the_newest_checkpoint_is_old() {
    let backstop = Config {
        compaction: CompactionRole::Backstop,
        backstop_after: Duration::from_millis(1_200_000),
        ..compacting(4)
    };
    let mut h = Harness::opened(backstop);
    write_docs(&mut h, 1, 8);
    assert!(full_checkpoints(&h.store).is_empty(), "no peer stepped, and the newest is young");
    assert!(h.replica.compactor_stats().looks >= 1);
    h.advance_ms(1_200_000);
    h.settle();
    write_docs(&mut h, 9, 4);
    assert_eq!(h.replica.compactor_stats().written, 1, "{:?}", h.replica.compactor_stats());
    assert_eq!(full_checkpoints(&h.store).len(), 1);
}

/// A backstop that looked and deferred sleeps a cadence from that look. Its wake-up
/// once counted from the newest checkpoint alone, so after a deferral it was already
/// due and the replica was woken at one instant forever (`slotlog run edges --seed 1`:
/// a million wake-ups at 5.221234 s, stopped as not live).
#[test]
fn a_backstop_that_deferred_sleeps_a_cadence_from_its_look() {
    let backstop = Config {
        compaction: CompactionRole::Backstop,
        backstop_after: Duration::from_millis(1_200_000),
        checkpoint_interval: Duration::from_millis(60_000),
        ..compacting(1_000)
    };
    let mut h = Harness::opened(backstop);
    write_docs(&mut h, 1, 2);
    h.advance_ms(60_000);
    write_docs(&mut h, 3, 1);
    h.settle();
    assert_eq!(h.marked(crate::marks::Mark::BackstopDeferred), 1, "the look found the newest young");
    let wake = h.replica.poll_timeout().expect("a look a cadence on");
    assert!(wake >= h.now + core::time::Duration::from_millis(59_000), "woken at {wake:?}, now {:?}", h.now);
}

/// The backstop's age is the store's, not this replica's uptime (SPEC 10.14): a backstop
/// that opens when the newest checkpoint is already older than `backstop_after` on the
/// store's clock steps at its first look after writing, though it has known that
/// checkpoint for no time at all. Counted from its own open, a backstop restarted more
/// often than that (crashes, deploys) would never step while the eager store is dead.
#[test]
fn a_backstop_that_opens_after_the_newest_checkpoint_aged_on_the_store_steps_at_once() {
    let mut eager = Harness::opened(compacting(4));
    write_docs(&mut eager, 1, 8);
    let peers = full_checkpoints(&eager.store);
    assert!(!peers.is_empty(), "the eager store wrote checkpoints");
    let backstop = Config {
        compaction: CompactionRole::Backstop,
        backstop_after: Duration::from_millis(1_200_000),
        ..compacting(4)
    };
    let mut b = Harness::with_store(backstop, eager.store.clone(), 2);
    // The eager store died; 21 minutes on, the backstop opens. Its own creates tell it
    // the store's time.
    b.advance_ms(1_260_000);
    b.run();
    assert!(b.replica.is_open());
    write_docs(&mut b, 100, 8);
    let stats = b.replica.compactor_stats().clone();
    assert!(stats.written >= 1, "it stepped without waiting 20 minutes of its own: {stats:?}");
    assert!(full_checkpoints(&b.store).len() > peers.len());
}

/// A run delivered until its last look is pending: every object stored, the checkpoint
/// create not yet sent.
fn run_to_its_recheck(h: &mut Harness) {
    let is_recheck =
        |op: &BlobOp| matches!(op, BlobOp::List { prefix, .. } if *prefix == keys().checkpoints_prefix());
    let mut objects_created = false;
    for _ in 0..10_000 {
        let Some((_, op)) = h.calls.front().cloned() else { break };
        if objects_created && is_recheck(&op) {
            return;
        }
        if matches!(&op, BlobOp::Create { key, .. } if key.starts_with(&keys().roots_prefix())) {
            objects_created = true;
        }
        h.deliver();
    }
    panic!("no last look before the checkpoint create");
}

#[test]
fn a_run_that_finds_a_checkpoint_after_its_base_at_its_last_look_writes_none() {
    let mut h = Harness::opened(compacting(4));
    write_docs(&mut h, 1, 3);
    let r = h.publish(4, "/d4.md", "body");
    run_to_its_recheck(&mut h);
    // A peer's checkpoint appeared after the one this run built on.
    let peer = keys().checkpoint(3);
    h.store.objects.insert(peer, (Bytes::from_static(b"a peer's"), 999, h.now.as_micros()));
    h.settle();
    assert!(matches!(h.reply(r), Some(Ok(_))));
    assert_eq!(full_checkpoints(&h.store), vec![3], "no checkpoint of its own");
    assert_eq!(h.replica.compactor_stats().runs_superseded, 1);
    assert_eq!(h.replica.compactor_stats().written, 0);
}

#[test]
fn a_run_whose_last_look_shows_the_store_past_its_bound_writes_none() {
    let mut h = Harness::opened(compacting(4));
    write_docs(&mut h, 1, 3);
    h.publish(4, "/d4.md", "body");
    run_to_its_recheck(&mut h);
    // The replica's clock stood still (a suspend) while the store's ran on: the listing
    // shows a racer's identical checkpoint created past the run's bound.
    let stamp = h.now.as_micros() + Config::default().checkpoint_run_max.as_micros() as u64 + 1_000_000;
    let key = keys().checkpoint(5);
    let entry = ObjectMeta { key, generation: 999.into(), created_at_us: stamp, size: 1 };
    h.deliver_with(Fate::Answer(Ok(BlobOutcome::Listed { entries: vec![entry], more: false })));
    h.settle();
    let stats = h.replica.compactor_stats();
    assert_eq!(stats.runs_overdue, 1, "{stats:?}");
    // The next run begins on the store's clock as it now knows it, and writes.
    assert_eq!((stats.runs, stats.written), (2, 1), "{stats:?}");
}

/// A run taken to its checkpoint create, which is applied to the store and whose answer
/// is returned with the time `time` makes of the checkpoint's creation time.
fn checkpoint_created_late(
    h: &mut Harness,
    time: impl FnOnce(u64) -> Option<WriteTime>,
) -> crate::blob::BlobResult {
    write_docs(h, 1, 3);
    h.publish(4, "/d4.md", "body");
    run_to_its_recheck(h);
    h.deliver();
    assert!(h.calls.front().is_some_and(|(_, op)| is_checkpoint_create(op)), "{:?}", h.calls.front());
    let Ok(BlobOutcome::Created(mut written)) = h.apply_early(is_checkpoint_create) else {
        panic!("created")
    };
    written.time = time(written.time.expect("the harness's store answers with a time").created_by_us());
    Ok(BlobOutcome::Created(written))
}

const DAY_US: u64 = 24 * 3_600_000_000;

/// SPEC 10.15, "A checkpoint that lands late": the writer stopped a day between its last
/// look and its create landing; what the checkpoint names may have been dropped meanwhile.
#[test]
fn a_checkpoint_landing_past_the_grace_after_its_look_is_withdrawn_by_its_writer() {
    let mut h = Harness::opened(compacting(4));
    let answer = checkpoint_created_late(&mut h, |us| Some(WriteTime::Created(us + DAY_US)));
    h.deliver_with(Fate::Answer(answer));
    let withdraw = h.calls.front().map(|(_, op)| op.clone());
    assert!(
        matches!(&withdraw, Some(BlobOp::Delete { key, .. }) if *key == keys().checkpoint(5)),
        "{withdraw:?}"
    );
    h.settle();
    let stats = h.replica.compactor_stats();
    assert_eq!((stats.checkpoints_withdrawn, stats.written), (1, 0), "{stats:?}");
    assert!(!full_checkpoints(&h.store).contains(&5), "withdrawn");
}

#[test]
fn a_checkpoint_landing_within_the_grace_after_its_look_stands() {
    let mut h = Harness::opened(compacting(4));
    let grace_us = Config::default().checkpoint_grace.as_micros() as u64;
    let answer = checkpoint_created_late(&mut h, |us| Some(WriteTime::Created(us + grace_us / 2)));
    h.deliver_with(Fate::Answer(answer));
    h.settle();
    let stats = h.replica.compactor_stats();
    assert_eq!((stats.checkpoints_withdrawn, stats.written), (0, 1), "{stats:?}");
    assert!(full_checkpoints(&h.store).contains(&5));
}

/// A `Date` answer (`WriteTime::Answered`) says the checkpoint was created before the
/// next second: a date in the same second as the look stands with no metadata read, and
/// one half a second inside the grace is judged at its second's end, past it.
#[test]
fn a_checkpoint_answered_with_a_date_is_judged_at_the_end_of_its_second() {
    let mut h = Harness::opened(compacting(4));
    let answer = checkpoint_created_late(&mut h, |us| Some(WriteTime::date_of(us)));
    h.deliver_with(Fate::Answer(answer));
    h.settle();
    let stats = h.replica.compactor_stats();
    assert_eq!((stats.checkpoints_withdrawn, stats.written), (0, 1), "{stats:?}");
    assert!(!h.log.iter().any(|op| matches!(op, BlobOp::Stat { .. })), "the date is the store's time");

    let mut h = Harness::opened(compacting(4));
    let grace_us = Config::default().checkpoint_grace.as_micros() as u64;
    let inside = grace_us - DATE_RESOLUTION_US / 2;
    let answer = checkpoint_created_late(&mut h, |us| Some(WriteTime::Answered(us + inside)));
    h.deliver_with(Fate::Answer(answer));
    h.settle();
    let stats = h.replica.compactor_stats();
    assert_eq!((stats.checkpoints_withdrawn, stats.written), (1, 0), "{stats:?}");
}

/// On a store whose create answers carry no time (S3) the writer reads the checkpoint's
/// metadata, and judges its creation time the same way.
#[test]
fn a_checkpoint_created_without_a_time_is_judged_by_a_metadata_read() {
    let mut h = Harness::opened(compacting(4));
    let answer = checkpoint_created_late(&mut h, |_| None);
    h.deliver_with(Fate::Answer(answer));
    let stat = h.calls.front().map(|(_, op)| op.clone());
    assert_eq!(stat, Some(BlobOp::Stat { key: keys().checkpoint(5) }));
    let Ok(BlobOutcome::Stat(mut meta)) = h.apply_early(|op| matches!(op, BlobOp::Stat { .. })) else {
        panic!("a stat")
    };
    meta.created_at_us += DAY_US;
    h.deliver_with(Fate::Answer(Ok(BlobOutcome::Stat(meta))));
    h.settle();
    let stats = h.replica.compactor_stats();
    assert_eq!((stats.checkpoints_withdrawn, stats.written), (1, 0), "{stats:?}");
    assert!(!full_checkpoints(&h.store).contains(&5), "withdrawn");
}
