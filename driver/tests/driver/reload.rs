//! The reload (SPEC 10.15, the reload rule): a `World` whose replica fails closed asking
//! to be reopened (`Unconfirmed`, `CreateBelowCollection`) reopens it from the newest
//! checkpoint by itself and commits again; what the failure answered stays answered; and
//! reloads in a row without progress stop the world with `Error::Reloads`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use object_store::memory::InMemory;
use slotlog::object_store_blobs::{Backend, ObjectStoreBlobs};
use slotlog::{
    new_op_id, Answer, BlobFuture, Blobs, Error, Expected, ExplainedFuture, ReceiptAnswer, World, WorldConfig,
};
use slotlog_kernel::blob::{BlobOp, BlobOutcome};
use slotlog_kernel::world::{Mutation, Write};
use slotlog_kernel::{FailReason, WriteError, WriteOk};

/// The reload age: 12 hours.
const RELOAD_AFTER: Duration = Duration::from_secs(12 * 3_600);

fn memory() -> ObjectStoreBlobs {
    ObjectStoreBlobs::new(Arc::new(InMemory::new()), Backend::Memory)
}

/// Polls the world's counters until `done` holds (the loop reloads on its own time).
async fn stats_until(world: &World, done: impl Fn(&slotlog::WorldStats) -> bool) -> slotlog::WorldStats {
    for _ in 0..10_000 {
        let stats = world.stats().await.expect("stats");
        if done(&stats) {
            return stats;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("the counters never got there: {:?}", world.stats().await);
}

fn committed_at(ok: WriteOk) -> u64 {
    match ok {
        WriteOk::Committed(receipt) => receipt.sequence,
        other => panic!("not committed: {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_world_unconfirmed_past_the_reload_age_reopens_and_commits_again() {
    let world = World::open_on(Arc::new(memory()), "w", WorldConfig::default()).await.unwrap();
    let first = committed_at(world.publish("/a.md", "one", Expected::Any).await.unwrap());
    // Hours pass with no answer from the store (a suspended machine): the replica's timers
    // fire, it finds its snapshot unconfirmed past the reload age and asks to be reopened.
    tokio::time::advance(RELOAD_AFTER + Duration::from_secs(60)).await;
    let stats = stats_until(&world, |s| s.reloads == 1).await;
    assert_eq!(stats.reloads_unconfirmed, 1);
    let second = committed_at(world.publish("/b.md", "two", Expected::Any).await.unwrap());
    assert!(second > first, "the reopened replica commits after the old one's slot");
    match world.fetch("/a.md", None).await.unwrap().answer {
        Answer::Document { body, .. } => assert_eq!(&body[..], b"one"),
        other => panic!("{other:?}"),
    }
    assert_eq!(world.stats().await.unwrap().reloads, 1);
}

/// A store whose next `late` stats of a slot answer a creation time 13 hours after the
/// real one: what a writer that stalled at its create sees (SPEC 10.15, the post-create check).
struct LateSlots {
    inner: ObjectStoreBlobs,
    late: AtomicU32,
    /// Stats made late so far: each is later than the one before by the same step, so
    /// every one is late against the newest store time the replica has seen.
    made_late: AtomicU32,
}

impl LateSlots {
    fn new(late: u32) -> Arc<LateSlots> {
        Arc::new(LateSlots { inner: memory(), late: AtomicU32::new(late), made_late: AtomicU32::new(0) })
    }
}

impl Blobs for LateSlots {
    fn execute(&self, op: BlobOp) -> BlobFuture {
        self.inner.execute(op)
    }

    fn execute_explained(&self, op: BlobOp) -> ExplainedFuture {
        // object_store answers a create with no time, so the kernel stats the new slot:
        // that stat is what says when it landed.
        let slot_stat = matches!(&op, BlobOp::Stat { key } if key.contains("/log/"));
        let late = slot_stat
            && self.late.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
        let steps = if late { u64::from(self.made_late.fetch_add(1, Ordering::SeqCst)) + 1 } else { 0 };
        let call = self.inner.execute_explained(op);
        Box::pin(async move {
            let mut result = call.await;
            if let (true, Ok(BlobOutcome::Stat(meta))) = (late, result.as_mut()) {
                meta.created_at_us += steps * (RELOAD_AFTER + Duration::from_secs(3_600)).as_micros() as u64;
            }
            result
        })
    }

    fn kind(&self) -> &'static str {
        "late-slots"
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_landing_long_after_its_base_is_uncertain_and_the_world_reopens() {
    let blobs = LateSlots::new(0);
    let world = World::open_on(blobs.clone(), "w", WorldConfig::default()).await.unwrap();
    committed_at(world.publish("/a.md", "one", Expected::Any).await.unwrap());
    blobs.late.store(1, Ordering::SeqCst);
    let op_id = new_op_id();
    let write = Write {
        op_id,
        mutation: Mutation::Publish {
            path: "/b.md".into(),
            body: "two".into(),
            catalog: None,
            expected: Expected::Any,
        },
    };
    // The slot is in the bucket, but the replica cannot tell it is not below collection:
    // the write is answered Uncertain, never Committed, and never retried.
    // It could commit only after the first write's slot, at sequence 2.
    assert_eq!(world.write(write).await, Err(Error::Write(WriteError::Uncertain { op_id, since: 2 })));
    let stats = stats_until(&world, |s| s.reloads == 1).await;
    assert_eq!((stats.reloads_create_below_collection, stats.stalled_creates_refused), (1, 1));
    // The reopened replica reads the log from the newest checkpoint: the receipt settles it.
    match world.receipt_since(op_id, 2).await.unwrap().answer {
        Answer::Receipt(ReceiptAnswer::Committed(receipt)) => assert_eq!(receipt.op_id, op_id),
        other => panic!("the slot was created, so the receipt is there: {other:?}"),
    }
    committed_at(world.publish("/c.md", "three", Expected::Any).await.unwrap());
    assert_eq!(world.stats().await.unwrap().reloads, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloads_in_a_row_without_progress_stop_the_world_at_the_limit() {
    let blobs = LateSlots::new(u32::MAX);
    let mut config = WorldConfig::default();
    config.reloads_without_progress_max = 2;
    let world = World::open_on(blobs, "w", config).await.unwrap();
    // Even a new world's first slot is judged: its genesis read the marker's time back.
    for reloads in 1..=2 {
        let error = world.publish("/a.md", format!("try {reloads}"), Expected::Any).await.unwrap_err();
        assert!(matches!(error, Error::Write(WriteError::Uncertain { .. })), "{error}");
        stats_until(&world, |s| s.reloads == reloads).await;
    }
    let error = world.publish("/a.md", "try 3", Expected::Any).await.unwrap_err();
    assert!(matches!(error, Error::Write(WriteError::Uncertain { .. })), "{error}");
    // The third failure in a row is past the limit: the world stops, typed, for good.
    let stopped = loop {
        match world.fetch("/a.md", None).await {
            Err(Error::Reloads { reloads, last }) => break (reloads, last),
            _ => tokio::time::sleep(Duration::from_millis(1)).await,
        }
    };
    assert_eq!(stopped.0, 2);
    assert!(matches!(stopped.1, FailReason::CreateBelowCollection { .. }), "{:?}", stopped.1);
    assert!(matches!(world.publish("/b.md", "x", Expected::Any).await, Err(Error::Reloads { .. })));
}
