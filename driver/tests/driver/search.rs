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
