//! Views through the driver: a view's reads see the state its first read pinned while
//! writes commit meanwhile, paging a directory through one view sees it whole and once,
//! a view past its age answers `ViewExpired`, and the per-caller bound holds.

use object_store::memory::InMemory;
use slotlog::{Answer, Error, ErrorKind, Expected, ReadError, World, WorldConfig};
use std::sync::Arc;
use std::time::Duration;

async fn open(config: WorldConfig) -> World {
    World::builder(Arc::new(InMemory::new())).prefix("w").config(config).open().await.unwrap()
}

fn body(answer: &Answer) -> &[u8] {
    match answer {
        Answer::Document { body, .. } => body,
        other => panic!("a document, not {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_pages_one_state_while_writes_commit() {
    let world = open(WorldConfig::default()).await;
    for i in 0..300 {
        world.publish(&format!("/dir/{i:04}.md"), "v1", Expected::Absent).await.unwrap();
    }
    let view = world.view();
    let first = view.list("/dir", None, 100).await.unwrap();
    let pinned = view.pinned_at().expect("pinned by its first read");
    assert_eq!(first.at_sequence, pinned);
    let mut names: Vec<String> = Vec::new();
    let mut page = first;
    loop {
        let Answer::Listing { documents, next, .. } = &page.answer else { panic!("a listing") };
        assert_eq!(page.at_sequence, pinned, "every page from the pinned state");
        names.extend(documents.iter().map(|e| e.path.as_str().to_string()));
        // Between pages: new documents, and documents changed, that the view must not see.
        let i = names.len();
        world.publish(&format!("/dir/{i:04}.md"), "v2", Expected::Any).await.unwrap();
        world.publish(&format!("/dir/new-{i:04}.md"), "n", Expected::Absent).await.unwrap();
        let Some(after) = next.clone() else { break };
        page = view.list("/dir", Some(&after), 100).await.unwrap();
    }
    let expected: Vec<String> = (0..300).map(|i| format!("/dir/{i:04}.md")).collect();
    assert_eq!(names, expected, "the directory as it was, whole and once");
    let old = view.fetch("/dir/0100.md", None).await.unwrap();
    assert_eq!((old.at_sequence, body(&old.answer)), (pinned, &b"v1"[..]));
    let now = world.fetch("/dir/0100.md", None).await.unwrap();
    assert_eq!(body(&now.answer), b"v2", "outside the view, the tip");
    assert!(!view.is_directory("/dir/new-0100.md").await.unwrap());
    let stats = world.stats().await.unwrap();
    assert_eq!(stats.views.pinned_now, 1);
    assert!(stats.views.images_held >= 6, "the documents changed since the pin, held as they were");
    drop(view);
    // The release goes through the command queue: the next call comes after it.
    world.fetch("/dir/0000.md", None).await.unwrap();
    let stats = world.stats().await.unwrap();
    assert_eq!((stats.views.pinned_now, stats.views.images_held, stats.views.released), (0, 0, 1));
    world.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_past_its_age_answers_expired() {
    let mut config = WorldConfig::default();
    config.kernel.view_age_max = Duration::from_millis(300);
    let world = open(config).await;
    world.publish("/a.md", "a", Expected::Absent).await.unwrap();
    let view = world.view();
    view.fetch("/a.md", None).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let error = view.fetch("/a.md", None).await.unwrap_err();
    assert_eq!(error, Error::Read(ReadError::ViewExpired));
    assert_eq!(error.kind(), ErrorKind::Resync);
    assert!(world.view().fetch("/a.md", None).await.is_ok(), "a new view reads on");
    world.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_caller_cannot_take_more_than_its_views() {
    let mut config = WorldConfig::default();
    config.views_per_caller_max = 2;
    let world = open(config).await;
    let a = world.view_for("tenant-a").unwrap();
    let b = world.view_for("tenant-a").unwrap();
    let refused = world.view_for("tenant-a").unwrap_err();
    assert_eq!(refused, Error::Views { caller: "tenant-a".into(), views: 2 });
    assert_eq!(refused.kind(), ErrorKind::Unavailable);
    assert!(world.view_for("tenant-b").is_ok(), "another caller has its own");
    drop(a);
    assert!(world.view_for("tenant-a").is_ok(), "a dropped view gives its place back");
    drop(b);
    world.close().await;
}
