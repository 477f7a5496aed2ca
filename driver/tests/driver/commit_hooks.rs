//! Commit hooks run off the driver loop: several may be added, each sees the newest
//! sequence the world is committed through, and a hook that blocks stalls no commit.

use object_store::memory::InMemory;
use slotlog::{Expected, World, WriteOk};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The sequence a write committed at.
fn committed_at(ok: WriteOk) -> u64 {
    match ok {
        WriteOk::Committed(receipt) => receipt.sequence,
        other => panic!("not committed: {other:?}"),
    }
}

/// Waits (up to 10 s) until `seen` reaches `at_least`.
async fn reaches(seen: &AtomicU64, at_least: u64) -> bool {
    for _ in 0..1_000 {
        if seen.load(Ordering::Acquire) >= at_least {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_hook_sees_the_newest_committed_sequence() {
    let world = World::builder(Arc::new(InMemory::new())).prefix("w").open().await.unwrap();
    let (a, b) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    for seen in [a.clone(), b.clone()] {
        world.on_commit(move |sequence| {
            let before = seen.swap(sequence, Ordering::AcqRel);
            assert!(sequence > before, "each call newer than the last: {before} then {sequence}");
        });
    }
    let mut last = 0;
    for i in 0..20 {
        last = committed_at(world.publish(&format!("/d{i}"), "x", Expected::Absent).await.unwrap());
    }
    assert!(reaches(&a, last).await && reaches(&b, last).await, "both hooks reach {last}");
    world.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hook_that_blocks_stalls_no_commit() {
    let world = World::builder(Arc::new(InMemory::new())).prefix("w").open().await.unwrap();
    let released = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(AtomicU64::new(0));
    let (hook_released, hook_seen) = (released.clone(), seen.clone());
    world.on_commit(move |sequence| {
        // Blocks its thread until the test lets go, as a slow synchronous hook would.
        while !hook_released.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(1));
        }
        hook_seen.store(sequence, Ordering::Release);
    });
    // The hook is stuck on its first call; writes go on committing meanwhile.
    let mut last = 0;
    for i in 0..50 {
        let ok = tokio::time::timeout(
            Duration::from_secs(5),
            world.publish(&format!("/d{i}"), "x", Expected::Absent),
        )
        .await
        .expect("committed while the hook was blocked")
        .unwrap();
        last = committed_at(ok);
    }
    assert_eq!(seen.load(Ordering::Acquire), 0, "the hook has not finished a call yet");
    released.store(true, Ordering::Release);
    assert!(reaches(&seen, last).await, "once free it catches up to {last}, skipping what it missed");
    world.close().await;
}
