//! The builder opens what `World::open` opens, with the same checks; a `Watch` is a
//! `Stream` of every change, then the error that ended it, then nothing.

use futures_util::StreamExt;
use object_store::memory::InMemory;
use slotlog::{Error, Expected, PrefixRule, World};
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread")]
async fn a_world_opened_by_the_builder_is_the_world_under_its_prefix() {
    let store = Arc::new(InMemory::new());
    let world = World::builder(store.clone()).prefix("worlds/b").open().await.unwrap();
    world.publish("/a", "one", Expected::Absent).await.unwrap();
    world.close().await;
    // The same prefix opened the plain way sees the write; another prefix does not.
    let again = World::open(store.clone(), "worlds/b", Default::default()).await.unwrap();
    assert_eq!(again.versions("/a").await.unwrap().at_sequence, 1);
    again.close().await;
    let other = World::builder(store).prefix("worlds/c").open().await.unwrap();
    assert_eq!(other.versions("/a").await.unwrap().at_sequence, 0, "another prefix is another world");
    other.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_builder_checks_the_prefix_before_any_call() {
    let err = World::builder(Arc::new(InMemory::new())).prefix("/w").open().await.err().expect("refused");
    assert!(matches!(&err, Error::Prefix(p) if p.rule == PrefixRule::NoLeadingSlash), "{err:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watch_streams_every_change_then_its_end_then_nothing() {
    let world = World::builder(Arc::new(InMemory::new())).prefix("w").open().await.unwrap();
    for path in ["/a", "/b", "/c"] {
        world.publish(path, "x", Expected::Absent).await.unwrap();
    }
    let mut watch = world.watch(0).await.unwrap();
    let first: Vec<_> = (&mut watch).take(3).map(|c| c.unwrap().path.map(|p| p.to_string())).collect().await;
    assert_eq!(first, [Some("/a".to_string()), Some("/b".to_string()), Some("/c".to_string())]);
    world.close().await;
    let ended = StreamExt::next(&mut watch).await.expect("the error that ended the watch");
    assert!(ended.is_err(), "{ended:?}");
    assert!(StreamExt::next(&mut watch).await.is_none(), "the stream ends after its error");
}

/// `close()` drains (issue 12): every write taken before it is called is answered,
/// committed here since the store is healthy, never `Closed`; later calls are refused.
#[tokio::test(flavor = "multi_thread")]
async fn close_answers_every_write_already_taken_before_it_returns() {
    let store = Arc::new(InMemory::new());
    let world = World::builder(store.clone()).prefix("w").open().await.unwrap();
    let paths: Vec<String> = (0..200).map(|i| format!("/d/{i}")).collect();
    let mut writes: Vec<_> =
        paths.iter().map(|p| Box::pin(world.publish(p, "x", Expected::Absent))).collect();
    // One poll each sends the request to the driver loop (or is refused `Busy` at once;
    // one already answered, the loop running on another thread, is done too).
    let (mut busy, mut done) = (0, 0);
    let mut taken = Vec::new();
    for mut w in writes.drain(..) {
        match futures_util::poll!(w.as_mut()) {
            std::task::Poll::Pending => taken.push(w),
            std::task::Poll::Ready(Err(Error::Busy)) => busy += 1,
            std::task::Poll::Ready(Ok(_)) => done += 1,
            std::task::Poll::Ready(other) => panic!("{other:?}"),
        }
    }
    let (answers, ()) = tokio::join!(futures_util::future::join_all(taken), world.close());
    let closed = answers.iter().filter(|a| matches!(a, Err(Error::Closed))).count();
    assert_eq!(closed, 0, "writes taken before close were answered Closed");
    let committed = answers.iter().filter(|a| a.is_ok()).count() + done;
    assert_eq!(committed + busy, paths.len(), "every write committed or refused at once");
    assert!(!answers.is_empty(), "writes were in flight when close was called");
    assert!(matches!(world.publish("/late", "x", Expected::Absent).await, Err(Error::Closed)));
    let again = World::open(store, "w", Default::default()).await.unwrap();
    let stored = again.versions("/d/199").await.unwrap().at_sequence > 0;
    assert!(stored || busy > 0, "the last write is stored unless the queue refused some");
    again.close().await;
}
