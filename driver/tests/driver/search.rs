//! Body search through the driver: a search answers from bodies once the index covers
//! the state, pages in path order, sees a write once it is indexed, pages one state
//! through a view, and refuses a query with no word as invalid input.

use object_store::memory::InMemory;
use slotlog::{Answer, Error, ErrorKind, Expected, ReadOk, SearchMatch, World, WorldConfig};
use std::sync::Arc;

fn found(ok: &ReadOk) -> (Vec<&str>, SearchMatch, bool) {
    match &ok.answer {
        Answer::Search { entries, matched, more } => {
            (entries.iter().map(|e| e.path.as_str()).collect(), *matched, *more)
        }
        other => panic!("a search's answer, not {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_answers_from_bodies_pages_and_follows_writes() {
    let world =
        World::builder(Arc::new(InMemory::new())).prefix("w").config(WorldConfig::default()).open().await;
    let world = world.unwrap();
    for i in 0..30 {
        let body = if i % 3 == 0 {
            format!("note {i}: the Quick brown fox")
        } else {
            format!("note {i}: a slow dog")
        };
        world.publish(&format!("/notes/{i:02}.md"), body, Expected::Absent).await.unwrap();
    }
    let first = world.search("quick \"BROWN fox\"", None, 4).await.unwrap();
    let (paths, matched, more) = found(&first);
    assert_eq!(
        (paths, matched, more),
        (vec!["/notes/00.md", "/notes/03.md", "/notes/06.md", "/notes/09.md"], SearchMatch::Body, true)
    );
    let next = world.search("quick \"BROWN fox\"", Some("/notes/09.md"), 0).await.unwrap();
    assert_eq!(
        found(&next).0,
        ["/notes/12.md", "/notes/15.md", "/notes/18.md", "/notes/21.md", "/notes/24.md", "/notes/27.md"]
    );

    let view = world.view();
    let pinned = view.search("dog", None, 0).await.unwrap();
    assert_eq!(found(&pinned).0.len(), 20);
    world.publish("/notes/01.md", "no animals", Expected::Any).await.unwrap();
    let later = view.search("dog", None, 0).await.unwrap();
    assert_eq!((later.at_sequence, found(&later).0.len()), (pinned.at_sequence, 20), "the view's state");
    let tip = world.search("dog", None, 0).await.unwrap();
    assert_eq!(
        found(&tip),
        (found(&later).0[1..].to_vec(), SearchMatch::Body, false),
        "the write, once indexed"
    );

    let stats = world.stats().await.unwrap();
    assert!(stats.search.body_answers >= 5 && stats.search.builds == 1, "{:?}", stats.search);
    assert!(stats.search_index_bytes > 0);

    let refused = world.search(" \"\" ", None, 0).await.unwrap_err();
    assert!(matches!(refused, Error::Read(_)) && refused.kind() == ErrorKind::InvalidInput, "{refused:?}");
    drop(view);
    world.close().await;
}

/// A world whose compactor wrote body segments, opened again: the index's build reads
/// the segments' parts, which the driver decodes, verifies and tokenizes on its blocking
/// pool and hands in with their completions (SPEC 8.6, `Input::BlobDonePrepared`), and
/// answers from bodies exactly as a build from blobs would; a catalog record travels
/// through the slots and the checkpoint into the reopened world's entries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reopened_world_builds_its_index_from_segments_prepared_off_the_loop() {
    let store = Arc::new(InMemory::new());
    let mut config = WorldConfig::default();
    config.kernel.checkpoint_slots = 4;
    let writer = World::builder(store.clone()).prefix("w").config(config).open().await.unwrap();
    for i in 0..24 {
        let body = if i % 4 == 0 { format!("{i}: a red maple") } else { format!("{i}: an oak") };
        let path = format!("/trees/{i:02}.md");
        writer.publish_with_record(&path, body, &format!("tree {i}"), Expected::Absent).await.unwrap();
    }
    // The compactor writes a label's segment after its checkpoint: wait for one.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while writer.stats().await.unwrap().compactor.segments.written == 0 {
        assert!(std::time::Instant::now() < deadline, "no segment written");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    writer.close().await;

    let mut config = WorldConfig::default();
    config.kernel.read_only = true;
    let reader = World::builder(store).prefix("w").config(config).open().await.unwrap();
    let mut answer = reader.search("RED maple", None, 0).await.unwrap();
    while found(&answer).1 != SearchMatch::Body {
        assert!(std::time::Instant::now() < deadline, "no body answer");
        answer = reader.search("RED maple", None, 0).await.unwrap();
    }
    let expected =
        ["/trees/00.md", "/trees/04.md", "/trees/08.md", "/trees/12.md", "/trees/16.md", "/trees/20.md"];
    assert_eq!(found(&answer).0, expected);
    let Answer::Search { entries, .. } = &answer.answer else { unreachable!("a search") };
    assert_eq!(entries[1].catalog.as_deref(), Some("tree 4"));
    assert!(entries.iter().all(|e| e.modified_us > 0), "times from the store's clock");
    let stats = reader.stats().await.unwrap();
    assert!(
        stats.search.segment_parts_read > 0 && stats.search.bodies_from_segments > 0,
        "{:?}",
        stats.search
    );
    reader.close().await;
}
