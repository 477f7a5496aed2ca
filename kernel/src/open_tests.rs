//! One test per rule of checkpoint zero at opening (SPEC 10, SPEC 7 "Opening"): genesis
//! writes the marker and then checkpoint zero; an opener that finds the marker without it
//! writes it; racing openers end with one identical object; any other checkpoint fails the
//! open closed with its typed reason. Marker and log rules are in `committer_tests`.

use crate::blob::{BlobError, BlobOp};
use crate::config::Config;
use crate::format::frame::HEADER_LEN;
use crate::format::{Checkpoint, CheckpointRule, DecodeError, Marker, ShapeRule};
use crate::hash::Hash32;
use crate::ids::{StoreId, WorldId};
use crate::reply::{CheckpointProblem, FailReason, WriteError};
use crate::testkit::{is_checkpoint_create, keys, Fate, Harness, MemStore, WORLD};
use crate::time::Instant;
use bytes::Bytes;

/// The marker the stores below hold.
fn marker_bytes() -> Bytes {
    Bytes::from(Marker { world_id: WORLD, created_by: StoreId(5) }.encode())
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
    let key = keys().checkpoint(1025);
    let root = Hash32::of(b"root");
    let later = Checkpoint::full(WORLD, 1025, Hash32::of(b"slot 1024"), 3, root);
    let mut store = store_with_checkpoint(keys().checkpoint(1), zero_bytes());
    store.put(Instant::ZERO, key.clone(), Bytes::from(later.encode()));
    let mut h = Harness::with_store(Config::default(), store, 2);
    h.run();
    assert!(h.replica.is_open(), "a checkpoint that cannot be loaded costs only replay");
    let problem = CheckpointProblem::ObjectMissing { key: keys().root_object(&root) };
    let reason = FailReason::CheckpointMismatch { key: key.clone(), problem };
    assert_eq!(h.warnings, vec![crate::effect::Warning::CheckpointSkipped { key, reason }]);
}

#[test]
fn the_newest_checkpoint_is_the_greatest_key_across_pages() {
    let later = |n: u64| Checkpoint::full(WORLD, n, Hash32::of(b"a slot"), 0, Hash32::of(b"root"));
    let mut store = store_with_checkpoint(keys().checkpoint(1), zero_bytes());
    for n in [0x10, 0x100, 0x2] {
        store.put(Instant::ZERO, keys().checkpoint(n), Bytes::from(later(n).encode()));
    }
    let mut h = Harness::with_store(Config { list_page_max: 1, ..Config::default() }, store, 2);
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
