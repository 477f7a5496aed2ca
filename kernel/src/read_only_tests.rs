//! A read-only replica (`Config::read_only`): it opens only a world that exists, never
//! sends a create, rewrite or delete (no genesis, no checkpoint zero, no checkpoint, no
//! collection), answers every write `ReadOnlyReplica`, and reads like any replica.

use crate::config::Config;
use crate::effect::{Input, Read};
use crate::marks::Mark;
use crate::reply::{Answer, FailReason, WriteError};
use crate::testkit::{keys, Harness};
use core::time::Duration;

fn read_only() -> Config {
    Config { read_only: true, ..Config::default() }
}

/// Checkpoints every 4 slots with no jitter: a writing replica would write several.
fn compacting(read_only: bool) -> Config {
    Config { read_only, checkpoint_slots: 4, checkpoint_jitter: Duration::ZERO, ..Config::default() }
}

#[test]
fn a_read_only_replica_reads_a_world_and_changes_nothing_in_the_store() {
    let mut writer = Harness::opened(Config::default());
    for i in 0..3u128 {
        writer.publish(i + 1, &format!("/d/{i}.md"), "x");
        writer.run();
    }
    let mut reader = Harness::with_store(compacting(true), writer.store.clone(), 2);
    reader.run();
    assert!(reader.replica.is_open());
    let id = reader.read(Read::Fetch { path: "/d/1.md".into(), version: None });
    reader.settle();
    assert!(matches!(reader.read_ok(id).answer, Answer::Document { .. }));
    let w = reader.publish(100, "/d/new.md", "y");
    reader.settle();
    assert_eq!(reader.reply(w), Some(&Err(WriteError::ReadOnlyReplica)));
    // A peer writes on, past the checkpoint cadence; the reader follows it.
    for i in 3..20u128 {
        writer.publish(i + 1, &format!("/d/{i}.md"), "x");
        writer.run();
    }
    reader.store = writer.store.clone();
    reader.input(Input::Follow { sequence: 20 });
    reader.advance(Duration::from_secs(3_600));
    reader.run();
    assert_eq!(reader.replica.world().expect("open").sequence(), 20);
    assert!(reader.log.iter().all(|op| !op.changes_store()), "{:?}", reader.log);
    assert_eq!(reader.replica.compactor_stats().written, 0);
}

#[test]
fn a_read_only_replica_makes_no_world_in_an_empty_prefix() {
    let mut h = Harness::new(read_only());
    h.failure_expected = true;
    h.run();
    assert_eq!(h.failures, vec![FailReason::NoWorld { key: keys().marker() }]);
    assert!(h.log.iter().all(|op| !op.changes_store()));
}

#[test]
fn a_read_only_replica_opens_a_world_without_checkpoint_zero_and_makes_none() {
    let writer = Harness::opened(Config::default());
    let mut store = writer.store.clone();
    store.objects.remove(&keys().checkpoint(1));
    let mut h = Harness::with_store(read_only(), store, 2);
    h.run();
    assert!(h.replica.is_open());
    assert_eq!(h.marked(Mark::OpenReadOnlyWithoutZero), 1);
    assert!(h.log.iter().all(|op| !op.changes_store()));
    assert!(!h.store.objects.contains_key(&keys().checkpoint(1)));
}
