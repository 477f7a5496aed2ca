//! One test per rule of checkpoint zero at opening (SPEC 10, SPEC 7 "Opening"): genesis
//! writes the marker and then checkpoint zero; an opener that finds the marker without it
//! writes it; racing openers end with one identical object; any other checkpoint fails the
//! open closed with its typed reason. Marker and log rules are in `committer_tests`.

use crate::blob::{BlobError, BlobOp};
use crate::config::Config;
use crate::format::frame::HEADER_LEN;
use crate::format::{Checkpoint, CheckpointRule, DecodeError, Marker, Root, ShapeRule};
use crate::hash::Hash32;
use crate::ids::{StoreId, WorldId};
use crate::marks::Mark;
use crate::reply::{CheckpointProblem, FailReason, WriteError};
use crate::testkit::{is_checkpoint_create, is_slot_get, keys, Fate, Harness, MemStore, WORLD};
use crate::time::Instant;
use bytes::Bytes;
use core::time::Duration;

/// The marker the stores below hold.
fn marker_bytes() -> Bytes {
    Bytes::from(Marker::new(WORLD, StoreId(5)).encode())
}

/// This world's checkpoint zero, as every opener must write it.
fn zero_bytes() -> Bytes {
    Bytes::from(Checkpoint::zero(WORLD, Hash32::of(&marker_bytes())).encode())
}

/// A store holding the marker and nothing else: a genesis that stopped before checkpoint zero.
fn store_with_marker_only() -> MemStore {
    let mut store = MemStore::default();
    store.put(Instant::ZERO, keys().marker(), marker_bytes());
    store
}

/// A store holding the marker and `bytes` at `key`.
fn store_with_checkpoint(key: String, bytes: Bytes) -> MemStore {
    let mut store = store_with_marker_only();
    store.put(Instant::ZERO, key, bytes);
    store
}

/// Keys of every create the replica sent, in order.
fn creates(h: &Harness) -> Vec<String> {
    h.log.iter().filter(|op| matches!(op, BlobOp::Create { .. })).map(|op| op.key().to_string()).collect()
}

fn checkpoint_keys(store: &MemStore) -> Vec<String> {
    store.objects.keys().filter(|k| k.starts_with(&keys().checkpoints_prefix())).cloned().collect()
}

/// Opens on `store`, expects the open to fail closed with `reason`, and checks the replica
/// neither read the log nor wrote anything, and refuses writes with that reason.
fn fails_closed_with(store: MemStore, reason: FailReason) -> Harness {
    let mut h = Harness::with_store(Config::default(), store, 2);
    h.failure_expected = true;
    let early = h.publish(1, "/a.md", "a");
    h.run();
    assert_eq!(h.failures, vec![reason.clone()]);
    assert!(h.replica.is_failed() && !h.replica.is_open());
    assert_eq!(h.reply(early), Some(&Err(WriteError::Failed(reason))));
    let log_listed =
        h.log.iter().any(|op| matches!(op, BlobOp::List { prefix, .. } if *prefix == keys().log_prefix()));
    assert!(!log_listed, "the log is not read past a checkpoint we cannot trust");
    assert!(creates(&h).is_empty(), "nothing is written over it");
    h
}

#[test]
fn genesis_writes_the_marker_then_checkpoint_zero() {
    let mut h = Harness::new(Config::default());
    h.run();
    assert!(h.replica.is_open());
    assert_eq!(creates(&h), vec![keys().marker(), keys().checkpoint(1)]);
    let marker = h.store.bytes(&keys().marker()).expect("a marker");
    let checkpoint = h.store.bytes(&keys().checkpoint(1)).expect("checkpoint zero");
    assert_eq!(checkpoint, Bytes::from(Checkpoint::zero(WORLD, Hash32::of(&marker)).encode()));
    let created_at = h.log.iter().position(is_checkpoint_create).expect("created");
    let log_listed_at = h
        .log
        .iter()
        .position(|op| matches!(op, BlobOp::List { prefix, .. } if *prefix == keys().log_prefix()))
        .expect("the log is listed");
    assert!(created_at < log_listed_at, "checkpoint zero is in place before the log is read");
    assert!(
        !h.log
            .iter()
            .any(|op| matches!(op, BlobOp::List { prefix, .. } if *prefix == keys().checkpoints_prefix())),
        "a genesis that made the marker knows no checkpoint can exist yet"
    );
}

#[test]
fn an_opener_finding_the_marker_without_checkpoint_zero_writes_it() {
    let mut h = Harness::with_store(Config::default(), store_with_marker_only(), 2);
    h.run();
    assert!(h.replica.is_open());
    assert_eq!(creates(&h), vec![keys().checkpoint(1)]);
    assert_eq!(h.store.bytes(&keys().checkpoint(1)), Some(zero_bytes()));
    assert_eq!(h.replica.world().expect("open").tip_hash(), Hash32::of(&marker_bytes()));
}

#[test]
fn an_opener_finding_checkpoint_zero_loads_it_and_writes_nothing() {
    let mut h =
        Harness::with_store(Config::default(), store_with_checkpoint(keys().checkpoint(1), zero_bytes()), 2);
    let gets_before = h.log.len();
    h.run();
    assert!(h.replica.is_open());
    assert!(creates(&h).is_empty());
    assert!(
        h.log[gets_before..]
            .iter()
            .any(|op| matches!(op, BlobOp::Get { key } if *key == keys().checkpoint(1))),
        "the newest checkpoint is read and verified"
    );
}

#[test]
fn two_racing_geneses_end_with_one_identical_checkpoint_zero() {
    let mut first = Harness::new(Config::default());
    first.deliver_until(is_checkpoint_create);
    // While its create is in flight, a second opener reads the marker and makes checkpoint zero.
    let mut second = Harness::with_store(Config::default(), std::mem::take(&mut first.store), 2);
    second.run();
    assert!(second.replica.is_open());
    assert_eq!(creates(&second), vec![keys().checkpoint(1)]);
    first.store = std::mem::take(&mut second.store);
    first.run(); // its create finds the name taken, reads it back: the same bytes
    assert!(first.replica.is_open());
    assert_eq!(checkpoint_keys(&first.store), vec![keys().checkpoint(1)]);
    let sent: Vec<&Bytes> = first
        .log
        .iter()
        .chain(second.log.iter())
        .filter_map(|op| match op {
            BlobOp::Create { key, bytes } if *key == keys().checkpoint(1) => Some(bytes),
            _ => None,
        })
        .collect();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0], sent[1], "both wrote the same bytes");
    assert_eq!(first.store.bytes(&keys().checkpoint(1)).as_ref(), Some(sent[0]));
    let tip = |h: &Harness| h.replica.world().expect("open").tip_hash();
    assert_eq!(tip(&first), tip(&second));
    assert_eq!(
        (first.marked(Mark::OpenCheckpointZeroRace), second.marked(Mark::OpenCheckpointZeroRace)),
        (1, 0)
    );
}

#[test]
fn a_checkpoint_create_that_timed_out_but_landed_is_read_back_as_ours() {
    let mut h = Harness::with_store(Config::default(), store_with_marker_only(), 2);
    h.deliver_until(is_checkpoint_create);
    h.deliver_with(Fate::TimeoutApplied);
    h.run();
    assert!(h.replica.is_open());
    assert_eq!(creates(&h), vec![keys().checkpoint(1)], "read back, not created again");
    assert_eq!(h.store.bytes(&keys().checkpoint(1)), Some(zero_bytes()));
}

#[test]
fn a_checkpoint_create_that_failed_without_landing_is_made_again() {
    let mut h = Harness::with_store(Config::default(), store_with_marker_only(), 2);
    h.deliver_until(is_checkpoint_create);
    h.deliver_with(Fate::Fail(BlobError::Unavailable));
    h.run();
    assert!(h.replica.is_open());
    assert_eq!(creates(&h), vec![keys().checkpoint(1), keys().checkpoint(1)]);
    assert_eq!(h.store.bytes(&keys().checkpoint(1)), Some(zero_bytes()));
}

#[test]
fn a_throttled_checkpoint_create_is_retried() {
    let mut h = Harness::with_store(Config::default(), store_with_marker_only(), 2);
    h.deliver_until(is_checkpoint_create);
    h.deliver_with(Fate::Fail(BlobError::Throttled));
    assert!(h.calls.is_empty(), "the retry waits for its backoff");
    h.run();
    assert!(h.replica.is_open());
    assert_eq!(creates(&h), vec![keys().checkpoint(1), keys().checkpoint(1)]);
}

#[test]
fn a_prefix_holding_a_checkpoint_but_no_marker_is_not_a_world() {
    let mut store = MemStore::default();
    store.put(Instant::ZERO, keys().checkpoint(1), zero_bytes());
    let mut h = Harness::with_store(Config::default(), store, 1);
    h.failure_expected = true;
    h.run();
    assert!(matches!(h.failures.as_slice(), [FailReason::ForeignObjects { .. }]), "{:?}", h.failures);
    assert!(creates(&h).is_empty(), "no marker is made there");
}

#[test]
fn a_foreign_object_at_a_checkpoint_name_fails_closed() {
    let key = keys().checkpoint(1);
    let store = store_with_checkpoint(key.clone(), Bytes::from_static(b"{\"checkpoint\":0}"));
    fails_closed_with(store, FailReason::Decode { key, error: DecodeError::Foreign });
}

#[test]
fn an_object_under_checkpoints_that_is_not_a_checkpoint_name_fails_closed() {
    let key = format!("{}notes.txt", keys().checkpoints_prefix());
    let store = store_with_checkpoint(key.clone(), zero_bytes());
    fails_closed_with(store, FailReason::Decode { key, error: DecodeError::Foreign });
}

#[test]
fn a_damaged_checkpoint_fails_closed() {
    let key = keys().checkpoint(1);
    let mut damaged = zero_bytes().to_vec();
    damaged[20] ^= 1;
    let error = Checkpoint::decode(&damaged).expect_err("damaged");
    assert!(matches!(error, DecodeError::Checksum { .. }), "{error:?}");
    let store = store_with_checkpoint(key.clone(), Bytes::from(damaged));
    fails_closed_with(store, FailReason::Decode { key, error });
}

#[test]
fn a_full_checkpoint_that_cannot_be_loaded_falls_back_to_checkpoint_zero() {
    let writer = world_of(4);
    let mut store = writer.store.clone();
    let (root_key, _) = root_of(&store, 5);
    store.objects.remove(&root_key);
    let cold = cold_start(store);
    assert!(cold.replica.is_open(), "a checkpoint that cannot be loaded costs only replay");
    same_tip_and_documents(&writer, &cold);
    let key = keys().checkpoint(5);
    let problem = CheckpointProblem::ObjectMissing { key: root_key };
    let reason = FailReason::CheckpointMismatch { key: key.clone(), problem };
    assert_eq!(cold.warnings, vec![crate::effect::Warning::CheckpointSkipped { key, reason }]);
    assert_eq!(cold.replica.compactor_stats().loaded_at_open, 0, "opened from checkpoint zero");
}

#[test]
fn the_newest_checkpoint_is_the_greatest_key_across_pages() {
    let later = |n: u64| Checkpoint::full(WORLD, n, Hash32::of(b"a slot"), 0, Hash32::of(b"root"));
    let mut store = store_with_checkpoint(keys().checkpoint(1), zero_bytes());
    for n in [0x10, 0x100, 0x2] {
        store.put(Instant::ZERO, keys().checkpoint(n), Bytes::from(later(n).encode()));
    }
    let mut h = Harness::with_store(Config { list_page_max: 1, ..Config::default() }, store, 2);
    h.failure_expected = true;
    h.run();
    let gets: Vec<&str> = h
        .log
        .iter()
        .filter(|op| matches!(op, BlobOp::Get { key } if key.contains("/checkpoints/")))
        .map(|op| op.key())
        .collect();
    // None of them loads (their roots are missing): each is tried newest first.
    let tried = [0x100, 0x10, 0x2, 0x1].map(|n| keys().checkpoint(n));
    assert_eq!(gets, tried.iter().map(String::as_str).collect::<Vec<_>>());
    // The log is empty, so nothing bridges checkpoint zero to where the others stood.
    assert!(matches!(&h.failures[..], [FailReason::ReplayGone { .. }]), "{:?}", h.failures);
}

#[test]
fn checkpoint_zero_naming_a_root_fails_closed() {
    // Schema 2 at next sequence 1: a full checkpoint that covers no slot.
    let key = keys().checkpoint(1);
    let zero = Checkpoint::zero(WORLD, Hash32::of(&marker_bytes()));
    let mut bytes = Checkpoint::full(WORLD, 2, zero.previous_hash, 0, Hash32::of(b"root")).encode();
    bytes[HEADER_LEN + 16] = 1; // next_sequence (after the world id) 2 -> 1, then the CRC again
    let crc_at = bytes.len() - 4;
    let crc = crc32c::crc32c(&bytes[..crc_at]).to_le_bytes();
    bytes[crc_at..].copy_from_slice(&crc);
    let error = Checkpoint::decode(&bytes).expect_err("covers no slot");
    let rule = ShapeRule::Checkpoint(CheckpointRule::FullCoversNoSlot { next_sequence: 1 });
    assert_eq!(error, DecodeError::Shape(rule));
    let store = store_with_checkpoint(key.clone(), Bytes::from(bytes));
    fails_closed_with(store, FailReason::Decode { key, error });
}

#[test]
fn checkpoint_zero_of_another_world_fails_closed() {
    let key = keys().checkpoint(1);
    let other = WorldId([1; 16]);
    let bytes = Bytes::from(Checkpoint::zero(other, Hash32::of(&marker_bytes())).encode());
    let problem = CheckpointProblem::ForeignWorld { found: other };
    fails_closed_with(
        store_with_checkpoint(key.clone(), bytes),
        FailReason::CheckpointMismatch { key, problem },
    );
}

#[test]
fn checkpoint_zero_of_another_marker_fails_closed() {
    let key = keys().checkpoint(1);
    let found = Hash32::of(b"a replaced marker");
    let bytes = Bytes::from(Checkpoint::zero(WORLD, found).encode());
    let problem = CheckpointProblem::NotTheMarker { found };
    fails_closed_with(
        store_with_checkpoint(key.clone(), bytes),
        FailReason::CheckpointMismatch { key, problem },
    );
}

#[test]
fn a_checkpoint_under_another_sequence_name_fails_closed() {
    let key = keys().checkpoint(2);
    let problem = CheckpointProblem::Misnamed { next_sequence: 1 };
    fails_closed_with(
        store_with_checkpoint(key.clone(), zero_bytes()),
        FailReason::CheckpointMismatch { key, problem },
    );
}

#[test]
fn a_create_that_finds_other_bytes_at_checkpoint_zero_fails_closed() {
    let mut h = Harness::with_store(Config::default(), store_with_marker_only(), 2);
    h.failure_expected = true;
    h.deliver_until(is_checkpoint_create);
    let found = Hash32::of(b"a replaced marker");
    let now = h.now;
    h.store.put(now, keys().checkpoint(1), Bytes::from(Checkpoint::zero(WORLD, found).encode()));
    h.run();
    let problem = CheckpointProblem::NotTheMarker { found };
    assert_eq!(h.failures, vec![FailReason::CheckpointMismatch { key: keys().checkpoint(1), problem }]);
    assert!(!h.replica.is_open());
}

// Falling back from a full checkpoint (SPEC 10.12, the amendments issue: "a damaged or
// missing newest checkpoint costs only replay").

/// Checkpoints every `slots` slots, at once.
fn compacting(slots: u64) -> Config {
    Config { checkpoint_slots: slots, checkpoint_jitter: Duration::ZERO, ..Config::default() }
}

/// A world of `n` documents, one publish per slot, checkpointed every four slots.
fn world_of(n: u128) -> Harness {
    let mut h = Harness::opened(compacting(4));
    for i in 1..=n {
        let r = h.publish(i, &format!("/d{i}.md"), &format!("body {i}"));
        h.settle();
        assert!(matches!(h.reply(r), Some(Ok(_))), "{:?}", h.reply(r));
    }
    h
}

/// The root of the checkpoint at `next_sequence`, and its key.
fn root_of(store: &MemStore, next_sequence: u64) -> (String, Root) {
    let c = Checkpoint::decode(&store.bytes(&keys().checkpoint(next_sequence)).expect("stored"))
        .expect("decodes");
    let key = keys().root_object(&c.root.expect("a full checkpoint"));
    let root = Root::decode(&store.bytes(&key).expect("stored")).expect("decodes");
    (key, root)
}

/// Flips one byte in the middle of the object at `key`.
fn damage(store: &mut MemStore, key: &str) {
    let (bytes, _, _) = store.objects.get_mut(key).expect("stored");
    let mut flipped = bytes.to_vec();
    let at = flipped.len() / 2;
    flipped[at] ^= 0x40;
    *bytes = Bytes::from(flipped);
}

/// Opens a second replica on `store` and runs it until it is open or failed.
fn cold_start(store: MemStore) -> Harness {
    let mut cold = Harness::with_store(Config::default(), store, 2);
    cold.failure_expected = true;
    cold.run();
    cold
}

/// What every replica at one tip must agree on.
fn same_tip_and_documents(a: &Harness, b: &Harness) {
    let (a, b) = (a.replica.world().expect("open"), b.replica.world().expect("open"));
    assert_eq!((a.sequence(), a.tip_hash()), (b.sequence(), b.tip_hash()));
    let entries =
        |w: &crate::world::WorldState| w.documents().map(|(_, d)| d.entry.clone()).collect::<Vec<_>>();
    assert_eq!(entries(a), entries(b));
}

#[test]
fn each_kind_of_damage_to_the_newest_checkpoint_costs_only_replay_from_the_one_before() {
    let writer = world_of(8);
    let (root_key, root) = root_of(&writer.store, 9);
    let (_, older_root) = root_of(&writer.store, 5);
    // The newest is a step over the older's shards: a delta is what only it uses.
    assert_eq!(root.shards, older_root.shards);
    let shard = root.deltas.iter().find(|d| !older_root.deltas.contains(d)).map(|d| keys().delta(&d.block));
    let shard = shard.expect("a delta only the newest uses");
    let receipts = keys().receipts(&root.receipts.last().expect("a receipt block").block);
    assert!(!older_root.receipts.iter().any(|r| keys().receipts(&r.block) == receipts));
    let newest = keys().checkpoint(9);
    type Harm = Box<dyn Fn(&mut MemStore)>;
    let cases: Vec<(&str, Harm, String)> = vec![
        ("a damaged checkpoint object", Box::new(|s| damage(s, &keys().checkpoint(9))), newest.clone()),
        (
            "a damaged root",
            Box::new({
                let k = root_key.clone();
                move |s| damage(s, &k)
            }),
            root_key.clone(),
        ),
        (
            "a missing root",
            Box::new({
                let k = root_key.clone();
                move |s| {
                    s.objects.remove(&k);
                }
            }),
            root_key,
        ),
        (
            "a damaged delta",
            Box::new({
                let k = shard.clone();
                move |s| damage(s, &k)
            }),
            shard.clone(),
        ),
        (
            "a missing delta",
            Box::new({
                let k = shard.clone();
                move |s| {
                    s.objects.remove(&k);
                }
            }),
            shard,
        ),
        (
            "a damaged receipt block",
            Box::new({
                let k = receipts.clone();
                move |s| damage(s, &k)
            }),
            receipts.clone(),
        ),
        (
            "a missing receipt block",
            Box::new({
                let k = receipts.clone();
                move |s| {
                    s.objects.remove(&k);
                }
            }),
            receipts,
        ),
    ];
    for (kind, harm, named) in cases {
        let mut store = writer.store.clone();
        harm(&mut store);
        let cold = cold_start(store);
        assert!(cold.failures.is_empty(), "{kind}: {:?}", cold.failures);
        same_tip_and_documents(&writer, &cold);
        let [crate::effect::Warning::CheckpointSkipped { key, reason }] = &cold.warnings[..] else {
            panic!("{kind}: one skipped checkpoint, got {:?}", cold.warnings);
        };
        assert_eq!(key, &newest, "{kind}");
        assert!(reason.to_string().contains(&named), "{kind}: {reason} names {named}");
        let stats = cold.replica.compactor_stats();
        assert_eq!((stats.loaded_at_open, stats.skipped_at_open), (1, 1), "{kind}: opened from checkpoint 5");
        let replayed: Vec<String> =
            cold.log.iter().filter(|op| is_slot_get(op)).map(|op| op.key().to_string()).collect();
        assert_eq!(replayed, (5..=8).map(|s| keys().slot(s)).collect::<Vec<_>>(), "{kind}");
    }
}

#[test]
fn a_deleted_newest_checkpoint_object_opens_from_the_one_before_with_nothing_to_skip() {
    let writer = world_of(8);
    let mut store = writer.store.clone();
    store.objects.remove(&keys().checkpoint(9));
    let cold = cold_start(store);
    same_tip_and_documents(&writer, &cold);
    assert!(cold.warnings.is_empty(), "a checkpoint no listing shows is not skipped, just absent");
    assert_eq!(cold.replica.compactor_stats().loaded_at_open, 1);
}

#[test]
fn a_listed_checkpoint_gone_when_read_falls_back_instead_of_listing_again() {
    let writer = world_of(8);
    let mut cold = Harness::with_store(Config::default(), writer.store.clone(), 2);
    let newest = keys().checkpoint(9);
    cold.deliver_until(|op| matches!(op, BlobOp::Get { key } if *key == keys().checkpoint(9)));
    cold.store.objects.remove(&newest);
    cold.run();
    same_tip_and_documents(&writer, &cold);
    let problem = CheckpointProblem::ObjectMissing { key: newest.clone() };
    let reason = FailReason::CheckpointMismatch { key: newest.clone(), problem };
    assert_eq!(cold.warnings, vec![crate::effect::Warning::CheckpointSkipped { key: newest, reason }]);
    let listings = cold
        .log
        .iter()
        .filter(|op| matches!(op, BlobOp::List { prefix, .. } if *prefix == keys().checkpoints_prefix()));
    assert_eq!(listings.count(), 1, "no second listing");
    assert_eq!(cold.marked(Mark::OpenFallbackCheckpoint), 1);
    assert_eq!(cold.marked(Mark::OpenCheckpointRelisted), 0, "fell back, did not start over");
}

#[test]
fn falling_back_past_collected_slots_fails_closed_naming_the_checkpoints_and_the_slot() {
    let writer = world_of(10);
    let mut store = writer.store.clone();
    // Collection took the slots below the oldest kept checkpoint (5); then both kept
    // checkpoints were damaged.
    for s in 1..5 {
        store.objects.remove(&keys().slot(s));
    }
    let (newest_root, _) = root_of(&store, 9);
    let (older_root, _) = root_of(&store, 5);
    damage(&mut store, &newest_root);
    damage(&mut store, &older_root);
    let cold = cold_start(store);
    assert!(!cold.replica.is_open(), "no world with a gap is served");
    let [FailReason::ReplayGone { skipped, fell_back_to, missing }] = &cold.failures[..] else {
        panic!("one typed failure, got {:?}", cold.failures);
    };
    let skipped: Vec<&str> = skipped.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(skipped, vec![keys().checkpoint(9), keys().checkpoint(5)]);
    assert_eq!((fell_back_to, missing), (&keys().checkpoint(1), &keys().slot(1)));
    let slot_reads = cold.log.iter().filter(|op| matches!(op, BlobOp::Get { key } if *key == keys().slot(1)));
    assert_eq!(slot_reads.count(), 1, "the missing name is read once, not in a loop");
}

#[test]
fn a_log_that_ends_short_of_a_skipped_checkpoint_fails_closed() {
    let writer = world_of(8);
    let mut store = writer.store.clone();
    // Only the newest checkpoint is kept, every slot below it collected, and it is damaged.
    store.objects.remove(&keys().checkpoint(5));
    for s in 1..=8 {
        store.objects.remove(&keys().slot(s));
    }
    let (root, _) = root_of(&store, 9);
    damage(&mut store, &root);
    let cold = cold_start(store);
    assert!(!cold.replica.is_open(), "an empty world is not served in place of eight slots");
    let [FailReason::ReplayGone { skipped, fell_back_to, missing }] = &cold.failures[..] else {
        panic!("one typed failure, got {:?}", cold.failures);
    };
    assert_eq!(skipped.iter().map(|s| s.key.clone()).collect::<Vec<_>>(), vec![keys().checkpoint(9)]);
    assert_eq!((fell_back_to, missing), (&keys().checkpoint(1), &keys().slot(1)));
}
