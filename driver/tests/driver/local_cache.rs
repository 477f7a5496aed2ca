//! `WorldConfig::local_cache`: a body another handle wrote is read from the store once and
//! kept on local disk; a cache directory that cannot be used fails the open before any
//! store call.

use object_store::memory::InMemory;
use slotlog::{Answer, Error, ErrorKind, Expected, LocalCache, World, WorldConfig};
use std::sync::Arc;

fn cached(dir: &std::path::Path) -> WorldConfig {
    let mut config = WorldConfig::default();
    config.local_cache = Some(LocalCache::new(dir, 1 << 20));
    config
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_read_through_the_cache_is_kept_on_disk_and_read_back_whole() {
    let store = Arc::new(InMemory::new());
    let cache = tempfile::tempdir().unwrap();
    // Past the inline limit (16 KiB): a blob of its own, not carried in the slot.
    let body = "x".repeat(40_000);
    let writer = World::open(store.clone(), "w", WorldConfig::default()).await.unwrap();
    writer.publish("/big", body.clone(), Expected::Absent).await.unwrap();
    writer.close().await;
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0);
    for _ in 0..2 {
        let reader = World::open(store.clone(), "w", cached(cache.path())).await.unwrap();
        let read = reader.fetch("/big", None).await.unwrap();
        let Answer::Document { body: got, .. } = read.answer else { panic!("{:?}", read.answer) };
        assert_eq!(got.as_ref(), body.as_bytes());
        reader.close().await;
        let files = std::fs::read_dir(cache.path()).unwrap().count();
        assert_eq!(files, 1, "the body's blob, and nothing that is not a content object");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cache_directory_that_cannot_be_made_fails_the_open() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let error = World::open(Arc::new(InMemory::new()), "w", cached(&file.path().join("cache")))
        .await
        .err()
        .expect("refused");
    assert!(matches!(error, Error::LocalCache { .. }), "{error:?}");
    assert_eq!(error.kind(), ErrorKind::Configuration);
}
