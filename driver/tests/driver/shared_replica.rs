//! Handles on one world in one process share one replica (issue 11; docs/OPERATIONS.md,
//! "Handles in one process"): opened with an equal configuration they commit through one
//! replica, so their writes ride the same slots; each keeps its own close and watches;
//! the replica ends with its last handle. A different configuration, a read-only handle
//! or `share_replica` off opens a replica of its own.

use futures_util::FutureExt;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::throttle::{ThrottleConfig, ThrottledStore};
use object_store::ObjectStore;
use slotlog::{Answer, Error, Expected, World, WorldConfig, WriteOk};
use std::sync::Arc;
use std::time::Duration;

async fn open(store: &Arc<dyn ObjectStore>, config: WorldConfig) -> World {
    World::builder(store.clone()).prefix("w").config(config).open().await.unwrap()
}

/// A store whose every put takes `put_ms`: writes wait long enough to meet in a slot.
fn throttled(put_ms: u64) -> Arc<dyn ObjectStore> {
    let throttle =
        ThrottleConfig { wait_put_per_call: Duration::from_millis(put_ms), ..ThrottleConfig::default() };
    Arc::new(ThrottledStore::new(InMemory::new(), throttle))
}

/// `n` writes from each handle at once, all awaited; every one must commit.
async fn write_together(worlds: &[&World], n: usize, tag: &str) {
    let mut tasks = Vec::new();
    for (h, world) in worlds.iter().enumerate() {
        for i in 0..n {
            let world = (*world).clone();
            let path = format!("/{tag}/h{h}/{i}.md");
            tasks.push(tokio::spawn(async move { world.publish(&path, "x", Expected::Any).await }));
        }
    }
    for t in tasks {
        assert!(matches!(t.await.unwrap(), Ok(WriteOk::Committed(_))));
    }
}

async fn exists(world: &World, path: &str) -> bool {
    match world.fetch(path, None).await {
        Ok(read) => matches!(read.answer, Answer::Document { .. }),
        Err(e) => panic!("{e:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_handles_opened_alike_commit_through_one_replica() {
    let store = throttled(20);
    let a = open(&store, WorldConfig::default()).await;
    let b = open(&store, WorldConfig::default()).await;
    let c = open(&store, WorldConfig::default()).await;
    assert_eq!((a.world_id(), b.world_id()), (c.world_id(), c.world_id()));
    write_together(&[&a, &b, &c], 20, "t").await;
    let stats = a.stats().await.unwrap();
    assert_eq!(stats.handles, 3);
    // One replica committed every handle's writes, in slots shared between them: 60
    // members in fewer slots than one handle's 20 writes would need alone.
    assert_eq!(stats.members_committed, 60, "{stats:?}");
    assert!(stats.slots_won < 20, "{stats:?}");
    assert_eq!((stats.slots_lost, stats.hints.shared_in_process), (0, 0), "no race, no hint: {stats:?}");
    assert_eq!(b.stats().await.unwrap().members_committed, 60);
    // Each handle reads every handle's writes at once.
    assert!(exists(&c, "/t/h0/19.md").await && exists(&a, "/t/h2/19.md").await);
    for w in [a, b, c] {
        w.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_one_handle_leaves_the_others_writing_and_the_last_close_ends_the_replica() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
    let a = open(&store, WorldConfig::default()).await;
    let b = open(&store, WorldConfig::default()).await;
    let c = open(&store, WorldConfig::default()).await;
    let mut a_watch = a.watch(0).await.unwrap();
    let mut b_watch = b.watch(0).await.unwrap();
    write_together(&[&a, &b, &c], 3, "before").await;
    a.close().await;
    // a is closed, its watch ended; b and c write on, and b's watch hears them.
    assert!(matches!(a.publish("/a.md", "x", Expected::Any).await, Err(Error::Closed)));
    let ended = loop {
        match a_watch.next().await {
            Ok(_) => continue,
            Err(e) => break e,
        }
    };
    assert!(matches!(ended, Error::Closed), "{ended:?}");
    assert_eq!(b.stats().await.unwrap().handles, 2);
    write_together(&[&b, &c], 3, "after").await;
    let mut heard = 0;
    while heard < 9 + 6 {
        b_watch.next().await.unwrap();
        heard += 1;
    }
    b.close().await;
    c.publish("/c.md", "x", Expected::Any).await.unwrap();
    assert_eq!(c.stats().await.unwrap().handles, 1);
    c.close().await;
    // The replica ended with its last handle: a new handle opens one of its own, from
    // the store, and finds every write.
    let d = open(&store, WorldConfig::default()).await;
    let stats = d.stats().await.unwrap();
    assert_eq!((stats.handles, stats.members_committed), (1, 0), "a new replica: {stats:?}");
    for path in ["/before/h0/2.md", "/before/h2/0.md", "/after/h1/2.md", "/c.md"] {
        assert!(exists(&d, path).await, "{path}");
    }
    d.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closing_handle_waits_for_its_own_writes_only() {
    let store = throttled(200);
    let a = open(&store, WorldConfig::default()).await;
    let b = open(&store, WorldConfig::default()).await;
    // Polled once: handed to the replica (a put takes 200 ms, so not answered yet).
    let mut write = Box::pin(a.publish("/a.md", "x", Expected::Any));
    assert!((&mut write).now_or_never().is_none());
    a.close().await;
    // Taken before the close, answered before it returned: committed, not dropped.
    let answered = write.now_or_never().expect("answered before close returned");
    assert!(matches!(answered, Ok(WriteOk::Committed(_))), "{answered:?}");
    assert!(exists(&b, "/a.md").await);
    b.publish("/b.md", "x", Expected::Any).await.unwrap();
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_handle_dropped_ends_the_replica() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let a = open(&store, WorldConfig::default()).await;
    let b = open(&store, WorldConfig::default()).await;
    a.publish("/a.md", "x", Expected::Any).await.unwrap();
    drop(a);
    assert_eq!(b.stats().await.unwrap().handles, 1, "a dropped handle leaves the count");
    drop(b);
    let c = open(&store, WorldConfig::default()).await;
    let stats = c.stats().await.unwrap();
    assert_eq!((stats.handles, stats.members_committed), (1, 0), "a new replica: {stats:?}");
    assert!(exists(&c, "/a.md").await);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_different_configuration_a_read_only_handle_or_the_opt_out_opens_its_own_replica() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let a = open(&store, WorldConfig::default()).await;
    let mut limits = WorldConfig::default();
    limits.kernel.request_deadline += Duration::from_secs(1);
    let mut own = WorldConfig::default();
    own.share_replica = false;
    let mut read_only = WorldConfig::default();
    read_only.kernel.read_only = true;
    // Per-handle fields alone do not keep handles apart.
    let mut per_handle = WorldConfig::default();
    per_handle.watch_buffer_events = 16;
    per_handle.views_per_caller_max = 2;
    let others = [
        open(&store, limits).await,
        open(&store, own.clone()).await,
        open(&store, own).await,
        open(&store, read_only).await,
    ];
    let joined = open(&store, per_handle).await;
    a.publish("/a.md", "x", Expected::Any).await.unwrap();
    assert_eq!(a.stats().await.unwrap().handles, 2, "a and joined");
    assert_eq!(joined.stats().await.unwrap().members_committed, 1);
    for other in &others {
        let stats = other.stats().await.unwrap();
        assert_eq!((stats.handles, stats.members_committed), (1, 0), "a replica of its own: {stats:?}");
        assert!(exists(other, "/a.md").await, "it reads the store");
    }
    for w in others.into_iter().chain([a, joined]) {
        w.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handles_opened_at_once_share_one_replica() {
    let store = throttled(20);
    let opens: Vec<_> = (0..3)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { open(&store, WorldConfig::default()).await })
        })
        .collect();
    let mut worlds = Vec::new();
    for o in opens {
        worlds.push(o.await.unwrap());
    }
    assert_eq!(worlds[0].stats().await.unwrap().handles, 3);
    for w in worlds {
        w.close().await;
    }
}
