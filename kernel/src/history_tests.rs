//! One test per rule of history kept in the bucket (SPEC 10.5): after a checkpoint a
//! replica holds only the version records written since; an older version is read from
//! its history block; a fold rewrites a changed window from its stored block and makes the
//! bytes a replica that held every version makes; a cold start reads no history block.

use crate::blob::BlobOp;
use crate::checkpoint::{fold_over, Layers, MergeRule};
use crate::config::Config;
use crate::effect::Read;
use crate::format::{Checkpoint, Slot, RECORDS_PER_HISTORY_BLOCK_MAX};
use crate::hash::Hash32;
use crate::reply::{Answer, FailReason};
use crate::testkit::{keys, Harness, MemStore};
use crate::world::WorldState;
use core::time::Duration;

/// Checkpoints every `slots` slots, at once.
fn compacting(slots: u64) -> Config {
    Config {
        checkpoint_slots: slots,
        checkpoint_jitter: Duration::ZERO,
        hedge_after: Duration::ZERO,
        ..Config::default()
    }
}

/// Publishes to `path` `n` times, one slot each, starting at operation `first_op`.
fn publish_n(h: &mut Harness, first_op: u128, path: &str, n: u128) {
    for i in 0..n {
        let r = h.publish(first_op + i, path, &format!("{path} body {i}"));
        h.settle();
        h.receipt(r);
    }
}

fn is_history_get(op: &BlobOp) -> bool {
    matches!(op, BlobOp::Get { key } if key.contains("/history/"))
}

fn history_gets(h: &Harness) -> usize {
    h.log.iter().filter(|op| is_history_get(op)).count()
}

/// `genesis` with the slots in `store` through `sequence` applied: a world that holds
/// every version.
fn replayed(mut world: WorldState, store: &MemStore, sequence: u64) -> WorldState {
    while world.sequence() < sequence {
        let key = keys().slot(world.next_sequence());
        let Some(bytes) = store.bytes(&key) else { break };
        let slot = Slot::decode_at(world.next_sequence(), &bytes).expect("a slot");
        world.apply_slot(&slot, Hash32::of(&bytes)).expect("applies");
    }
    world
}

fn fetch_version(path: &str, version: u64) -> Read {
    Read::Fetch { path: path.into(), version: Some(version) }
}

#[test]
fn after_a_checkpoint_a_replica_holds_only_the_versions_written_since() {
    let mut h = Harness::opened(compacting(8));
    publish_n(&mut h, 1, "/a.md", 8);
    h.settle();
    assert_eq!(h.replica.compactor_stats().written, 1);
    assert_eq!(h.replica.resident_version_records(), 0, "all eight are in the checkpoint's block");
    publish_n(&mut h, 100, "/a.md", 3);
    assert_eq!(h.replica.resident_version_records(), 3);
}

#[test]
fn an_old_version_is_read_from_its_history_block_and_the_block_is_kept() {
    let mut h = Harness::opened(compacting(4));
    publish_n(&mut h, 1, "/a.md", 6);
    assert_eq!(history_gets(&h), 0);
    let r = h.read(fetch_version("/a.md", 2));
    h.settle();
    let Answer::Document { version, body, .. } = &h.read_ok(r).answer else { panic!("a document") };
    assert_eq!((version.version, &body[..]), (2, &b"/a.md body 1"[..]));
    assert_eq!(history_gets(&h), 1);
    let again = h.read(fetch_version("/a.md", 3));
    h.settle();
    assert!(matches!(h.read_ok(again).answer, Answer::Document { .. }));
    assert_eq!(history_gets(&h), 1, "the block is cached");
}

#[test]
fn a_versions_read_gathers_every_block_of_the_document() {
    let mut h = Harness::opened(compacting(8));
    let n = RECORDS_PER_HISTORY_BLOCK_MAX as u128 + 20;
    publish_n(&mut h, 1, "/a.md", n);
    assert!(h.replica.compactor_stats().written >= 2);
    let before = history_gets(&h);
    let r = h.read(Read::Versions { path: "/a.md".into() });
    h.settle();
    let Answer::Versions { entry, versions } = &h.read_ok(r).answer else { panic!("versions") };
    let got: Vec<u64> = versions.iter().map(|v| v.version).collect();
    // Retention keeps the newest 64 versions, across the first window's end.
    assert_eq!(entry.first_version, n as u64 - 63);
    assert_eq!(got, (entry.first_version..=n as u64).collect::<Vec<_>>());
    assert_eq!(history_gets(&h) - before, 2, "one read per 256-version window");
}

#[test]
fn a_fold_from_stored_blocks_makes_the_bytes_of_a_fold_from_every_version() {
    let mut h = Harness::opened(compacting(8));
    let genesis = h.replica.world().expect("open").clone();
    // Windows that gain versions after their block was stored, across a window boundary,
    // and documents that stay untouched.
    publish_n(&mut h, 1, "/a.md", 250);
    publish_n(&mut h, 1_000, "/b.md", 3);
    publish_n(&mut h, 2_000, "/a.md", 14);
    publish_n(&mut h, 3_000, "/c.md", 5);
    h.settle();
    assert!(history_gets(&h) > 0, "a fold read a stored block to rewrite its window");
    // Every checkpoint in the store is the fold of the world that held every version, over
    // the layers of the checkpoint before it.
    let mut written: Vec<u64> =
        h.store.objects.keys().filter_map(|k| keys().parse_checkpoint(k)).filter(|s| *s > 1).collect();
    written.sort();
    assert!(written.len() >= 30, "{written:?}");
    let rule = MergeRule::of(&compacting(8));
    let mut base: Option<Layers> = None;
    for next_sequence in written {
        let stored = h.store.bytes(&keys().checkpoint(next_sequence)).expect("stored");
        let world = replayed(genesis.clone(), &h.store, next_sequence - 1);
        let over = base.as_ref().map(|l| (l, rule));
        let folded = fold_over(&world, over, &|_| None).expect("every version is held");
        base = Some(Layers::of(&folded.root));
        assert_eq!(Checkpoint::decode(&stored).expect("decodes"), folded.checkpoint);
        for object in &folded.objects {
            let key = object.key(&keys());
            assert_eq!(h.store.bytes(&key), Some(object.bytes.clone()), "{key}");
        }
    }
}

#[test]
fn a_cold_start_reads_no_history_block() {
    let mut h = Harness::opened(compacting(4));
    publish_n(&mut h, 1, "/a.md", 9);
    let mut cold = Harness::with_store(Config::default(), h.store.clone(), 2);
    cold.run();
    assert!(cold.replica.is_open());
    assert_eq!(history_gets(&cold), 0);
    let r = cold.read(fetch_version("/a.md", 1));
    cold.settle();
    assert!(matches!(cold.read_ok(r).answer, Answer::Document { .. }));
    assert_eq!(history_gets(&cold), 1);
}

#[test]
fn a_history_block_that_does_not_hash_to_its_name_fails_the_replica_closed() {
    let mut h = Harness::opened(compacting(4));
    publish_n(&mut h, 1, "/a.md", 4);
    let key = h.store.objects.keys().find(|k| k.contains("/history/")).cloned().expect("a block");
    let other = h.store.objects.keys().find(|k| k.contains("/shards/")).cloned().expect("a shard");
    let swapped = h.store.bytes(&other).expect("stored");
    h.store.objects.remove(&key);
    h.store.put(h.now, key.clone(), swapped);
    h.failure_expected = true;
    let r = h.read(fetch_version("/a.md", 1));
    h.settle();
    assert!(h.read_replies[&r].is_err());
    assert!(matches!(&h.failures[..], [FailReason::Decode { key: k, .. }] if *k == key), "{:?}", h.failures);
}
