//! One test per rule of body search (SPEC 8.6): a body answer only from an index covering
//! the state read, exact for it; a catalog answer (paths) after the wait otherwise, said
//! so; a view searches its pin; installs past the queue bound collapse into one
//! comparison; the index is dropped when idle or too large.

use crate::blob::BlobOp;
use crate::config::Config;
use crate::effect::{Read, Request};
use crate::ids::{RequestId, ViewId};
use crate::marks::Mark;
use crate::reply::{Answer, ReadError, ReadOk};
use crate::search::query::QueryProblem;
use crate::search::SearchMatch;
use crate::testkit::{blob_bodies, keys, publish, Harness, Peer};
use crate::world::{Expected, Mutation};
use core::time::Duration;

fn search(q: &str, start_after: Option<&str>, limit: u32) -> Read {
    Read::Search { query: q.into(), start_after: start_after.map(Into::into), limit }
}

/// The paths and mode of a search's answer.
fn found(ok: &ReadOk) -> (Vec<&str>, SearchMatch, bool) {
    match &ok.answer {
        Answer::Search { entries, matched, more } => {
            (entries.iter().map(|e| e.path.as_str()).collect(), *matched, *more)
        }
        other => panic!("a search's answer, not {other:?}"),
    }
}

fn publish_all(h: &mut Harness, writes: &[(u128, &str, &str)]) {
    for (op, p, body) in writes {
        h.publish(*op, p, body);
    }
    h.settle();
}

fn is_body_get(op: &BlobOp) -> bool {
    matches!(op, BlobOp::Get { key } if key.starts_with(&keys().blobs_prefix()))
}

/// An exact read, so the replica installs what a peer committed.
fn learn_tip(h: &mut Harness) {
    let id = h.read(Read::Versions { path: "/x.md".into() });
    h.settle();
    h.read_ok(id);
}

#[test]
fn a_first_search_builds_the_index_and_answers_from_bodies_exactly() {
    let mut h = Harness::opened(Config::default());
    publish_all(
        &mut h,
        &[
            (1, "/a.md", "The big dog barks"),
            (2, "/b.md", "a dog, big and red"),
            (3, "/c.md", "no animals here"),
            (4, "/dog.md", "nothing"),
        ],
    );
    let id = h.read(search("DOG big", None, 0));
    h.settle();
    let (paths, matched, more) = found(h.read_ok(id));
    assert_eq!((paths, matched, more), (vec!["/a.md", "/b.md"], SearchMatch::Body, false));
    assert_eq!(h.marked(Mark::SearchBodyAnswer), 1);

    let phrase = h.read(search("\"big dog\"", None, 0));
    h.settle();
    assert_eq!(found(h.read_ok(phrase)).0, ["/a.md"], "a phrase holds its words in order, adjacent");

    // Paged in path order.
    let first = h.read(search("dog", None, 1));
    h.settle();
    assert_eq!(found(h.read_ok(first)), (vec!["/a.md"], SearchMatch::Body, true));
    let next = h.read(search("dog", Some("/a.md"), 1));
    h.settle();
    assert_eq!(found(h.read_ok(next)), (vec!["/b.md"], SearchMatch::Body, false));

    // A write moves the answer with it once indexed: the old body no longer matches.
    publish_all(&mut h, &[(5, "/a.md", "a cat now")]);
    let after = h.read(search("dog", None, 0));
    h.settle();
    assert_eq!(found(h.read_ok(after)).0, ["/b.md"]);
    assert_eq!(h.replica.search_stats().builds, 1);
}

#[test]
fn a_catalog_answer_matches_the_path_and_the_catalog_record_each_part_in_one() {
    let mut h = Harness::opened(blob_bodies(Config::default()));
    let mut peer = Peer::following(&h);
    let cataloged = |path: &str, body: &str, record: &str| Mutation::Publish {
        path: path.into(),
        body: body.to_string().into(),
        catalog: Some(record.into()),
        expected: Expected::Absent,
    };
    peer.commit(
        &mut h,
        &[
            (1, cataloged("/pets/dog.md", "a cat", "Draft: Brown")),
            (2, cataloged("/x.md", "dog", "final: red dog")),
            (3, cataloged("/y.md", "dog", "draft brown")),
            (4, publish("/brown.md", "draft", Expected::Absent)),
        ],
    );
    learn_tip(&mut h);
    let id = h.read(search("draft dog", None, 0));
    let phrase = h.read(search("\"md draft\"", None, 0));
    h.deliver_all_but(is_body_get);
    h.advance(Duration::from_secs(1));
    h.fire_timer();
    h.deliver_all_but(is_body_get);
    // "draft" from the record, "dog" from the path; a body's words do not count.
    assert_eq!(found(h.read_ok(id)), (vec!["/pets/dog.md"], SearchMatch::Catalog, false));
    // A phrase is held within one of them: the path's last word and the record's first
    // are not adjacent.
    assert_eq!(found(h.read_ok(phrase)), (vec![], SearchMatch::Catalog, false));
    assert_eq!(h.marked(Mark::SearchCatalogRecordMatched), 1);
}

/// A replica that learned a peer's slot of two documents: "dog" in one's path, in the
/// other's body.
fn dog_in_a_path_and_in_a_body() -> (Harness, Peer) {
    let mut h = Harness::opened(blob_bodies(Config::default()));
    let mut peer = Peer::following(&h);
    let none = Expected::Absent;
    peer.commit(&mut h, &[(1, publish("/pets/dog.md", "a cat", none)), (2, publish("/x.md", "dog", none))]);
    learn_tip(&mut h);
    (h, peer)
}

#[test]
fn without_an_index_in_time_a_search_answers_from_the_catalog_and_says_so() {
    let (mut h, _peer) = dog_in_a_path_and_in_a_body();
    let id = h.read(search("dog", None, 0));
    // The probe finds the peer's slot; the bodies' reads are held back.
    h.deliver_all_but(is_body_get);
    assert!(!h.read_replies.contains_key(&id), "it waits for the index");
    h.advance(Duration::from_secs(1));
    h.fire_timer();
    h.deliver_all_but(is_body_get);
    let (paths, matched, _) = found(h.read_ok(id));
    assert_eq!((paths, matched), (vec!["/pets/dog.md"], SearchMatch::Catalog), "paths only, flagged");
    assert_eq!(h.marked(Mark::SearchCatalogAnswer), 1);

    // Once the bodies arrive, the same search answers from them.
    h.settle();
    let again = h.read(search("dog", None, 0));
    h.settle();
    assert_eq!(found(h.read_ok(again)), (vec!["/x.md"], SearchMatch::Body, false));
    assert_eq!(h.marked(Mark::SearchWaitedForIndex), 0, "the index covered it at once");
}

#[test]
fn a_catalog_answer_asked_again_at_its_state_is_the_same_and_at_a_later_state_is_the_later_ones() {
    let (mut h, mut peer) = dog_in_a_path_and_in_a_body();
    let none = Expected::Absent;
    // Each search waits out the index (its bodies' reads held back), then answers from
    // the catalog: its sequence and paths.
    let catalog = |h: &mut Harness| -> (u64, Vec<String>) {
        let id = h.read(search("dog", None, 0));
        h.deliver_all_but(is_body_get);
        h.advance(Duration::from_secs(1));
        h.fire_timer();
        h.deliver_all_but(is_body_get);
        let ok = h.read_ok(id);
        let (paths, matched, _) = found(ok);
        assert_eq!(matched, SearchMatch::Catalog);
        (ok.at_sequence, paths.into_iter().map(str::to_owned).collect())
    };
    let first = catalog(&mut h);
    assert_eq!(first.1, ["/pets/dog.md"]);
    assert_eq!(catalog(&mut h), first, "asked again at the same state");
    // A later state (installed with its body's read held back too) answers anew.
    peer.commit(&mut h, &[(3, publish("/dog/b.md", "x", none))]);
    let id = h.read(Read::Versions { path: "/x.md".into() });
    h.deliver_all_but(is_body_get);
    h.read_ok(id);
    let later = catalog(&mut h);
    assert!(later.0 > first.0, "the later state is read");
    assert_eq!(later.1, ["/dog/b.md", "/pets/dog.md"]);
    assert_eq!(h.marked(Mark::SearchCatalogAnswer), 3);
}

#[test]
fn a_search_that_waits_for_the_index_answers_from_bodies_when_it_covers_in_time() {
    let mut h = Harness::opened(blob_bodies(Config::default()));
    let mut peer = Peer::following(&h);
    peer.commit(&mut h, &[(1, publish("/x.md", "dog", Expected::Absent))]);
    learn_tip(&mut h);
    let id = h.read(search("dog", None, 0));
    h.deliver_all_but(is_body_get);
    h.advance(Duration::from_millis(500));
    h.settle();
    assert_eq!(found(h.read_ok(id)), (vec!["/x.md"], SearchMatch::Body, false));
    assert_eq!(h.marked(Mark::SearchWaitedForIndex), 1);
}

#[test]
fn a_views_searches_answer_from_its_pin() {
    let mut h = Harness::opened(Config::default());
    publish_all(&mut h, &[(1, "/a.md", "red fox"), (2, "/b.md", "blue fox")]);
    let view = |h: &mut Harness, pinned: Option<u64>, q: &str| -> RequestId {
        h.request(Request::ViewRead { view: ViewId(3), pinned, read: search(q, None, 0) })
    };
    let first = view(&mut h, None, "fox");
    h.settle();
    let pinned = h.read_ok(first).at_sequence;
    assert_eq!(found(h.read_ok(first)).0, ["/a.md", "/b.md"]);
    publish_all(&mut h, &[(3, "/a.md", "green owl"), (4, "/c.md", "grey fox")]);
    let later = view(&mut h, Some(pinned), "fox");
    h.settle();
    assert_eq!(h.read_ok(later).at_sequence, pinned);
    assert_eq!(found(h.read_ok(later)), (vec!["/a.md", "/b.md"], SearchMatch::Body, false));
    assert!(h.marked(Mark::SearchBodyBehindTip) >= 1);
    let tip = h.read(search("fox", None, 0));
    h.settle();
    assert_eq!(found(h.read_ok(tip)).0, ["/b.md", "/c.md"]);
}

#[test]
fn an_idle_index_is_dropped_and_built_again_on_the_next_search() {
    let config = Config { search_idle_max: Duration::from_secs(60), ..Config::default() };
    let mut h = Harness::opened(config);
    publish_all(&mut h, &[(1, "/a.md", "word")]);
    let id = h.read(search("word", None, 0));
    h.run();
    assert_eq!(found(h.read_ok(id)).1, SearchMatch::Body);
    h.advance(Duration::from_secs(61));
    h.run();
    assert_eq!(h.marked(Mark::SearchIndexIdle), 1);
    assert_eq!(h.replica.search_index_bytes(), 0);
    let again = h.read(search("word", None, 0));
    h.run();
    assert_eq!(found(h.read_ok(again)).1, SearchMatch::Body);
    assert_eq!(h.replica.search_stats().builds, 2);
}

#[test]
fn an_index_past_its_bound_is_dropped_and_searches_answer_from_the_catalog() {
    let config = Config { search_bytes_max: 200, ..Config::default() };
    let mut h = Harness::opened(config);
    let body = (0..50).map(|i| format!("w{i}")).collect::<Vec<_>>().join(" ");
    publish_all(&mut h, &[(1, "/w0.md", &body)]);
    let id = h.read(search("w0", None, 0));
    h.settle();
    h.advance(Duration::from_secs(1));
    h.fire_timer();
    assert_eq!(found(h.read_ok(id)), (vec!["/w0.md"], SearchMatch::Catalog, false));
    assert_eq!(h.marked(Mark::SearchIndexOverBudget), 1);
    assert_eq!(h.replica.search_index_bytes(), 0);
}

#[test]
fn a_query_with_no_word_is_refused_with_the_reason() {
    let mut h = Harness::opened(Config::default());
    let id = h.read(search(" \"\" ;", None, 0));
    h.settle();
    assert_eq!(h.read_replies.get(&id), Some(&Err(ReadError::InvalidQuery(QueryProblem::Empty))));
}

#[test]
fn a_writable_replica_set_to_warm_builds_its_index_at_open_and_a_read_only_one_does_not() {
    let warm = Config { search_warm_at_open: true, ..Config::default() };
    // Opened without firing timers: `opened` would run on to the index's idle age.
    let mut h = Harness::new(warm.clone());
    h.settle();
    assert!(h.replica.is_open());
    assert_eq!(h.replica.search_stats().builds, 1, "started at open, before any search");
    publish_all(&mut h, &[(1, "/a.md", "warm words")]);
    let id = h.read(search("warm", None, 0));
    h.settle();
    assert_eq!(found(h.read_ok(id)), (vec!["/a.md"], SearchMatch::Body, false));
    assert_eq!(h.replica.search_stats().builds, 1);
    let lazy = Harness::opened(Config::default());
    assert_eq!(lazy.replica.search_stats().builds, 0, "the default waits for a search");
    let mut reader = Harness::with_store(Config { read_only: true, ..warm }, h.store.clone(), 5);
    reader.settle();
    assert!(reader.replica.is_open());
    assert_eq!(reader.replica.search_stats().builds, 0, "a read-only replica never warms");
}

#[test]
fn a_views_search_waiting_for_the_index_when_the_view_expires_is_refused_and_leaves_no_wake_up() {
    let config = Config { view_age_max: Duration::from_millis(500), ..blob_bodies(Config::default()) };
    let mut h = Harness::opened(config);
    let mut peer = Peer::following(&h);
    peer.commit(&mut h, &[(1, publish("/x.md", "dog", Expected::Absent))]);
    learn_tip(&mut h);
    let id = h.request(Request::ViewRead { view: ViewId(9), pinned: None, read: search("dog", None, 0) });
    h.deliver_all_but(is_body_get);
    assert!(!h.read_replies.contains_key(&id), "it waits for the index, its view pinned");
    h.advance(Duration::from_millis(600));
    h.fire_timer();
    h.deliver_all_but(is_body_get);
    assert_eq!(h.read_replies.get(&id), Some(&Err(ReadError::ViewExpired)));
    // Past the search's wait: nothing of it is left due, or the replica would be woken
    // at that instant again and again.
    h.advance(Duration::from_millis(500));
    h.fire_timer();
    let next = h.replica.poll_timeout();
    assert!(next.is_none_or(|t| t > h.now), "a wake-up at {next:?} with the clock at {:?}", h.now);
}

/// A build takes its first bodies from the bucket's body segments (SPEC 10.17): one
/// listing of `segments/`, then the parts of each label's newest whole window, and a blob
/// read only for a body no such part holds, or holds under another hash.
#[test]
fn a_build_reads_bodies_from_segments_and_blobs_only_for_what_they_lack() {
    build_from_segments(false, false);
}

/// The same build with every part tokenized outside the replica, as the driver does on
/// its blocking pool: the same reads, the same answer.
#[test]
fn a_build_given_its_parts_tokenized_reads_and_answers_the_same() {
    build_from_segments(true, false);
}

/// Parts that carry their bodies' words (schema 2, as the compactor writes them): the
/// build takes the words of label 0's part rather than tokenizing it, and tokenizes label
/// 1's, whose body does not hash to its hash: the same reads, the same answer, inside the
/// replica or out.
#[test]
fn a_build_takes_the_words_parts_carry_and_answers_the_same() {
    build_from_segments(false, true);
    build_from_segments(true, true);
}

fn build_from_segments(prepare_parts: bool, worded: bool) {
    use crate::format::{SegmentBody, SegmentName, SegmentPart};
    use crate::hash::Hash32;
    use bytes::Bytes;
    let config = blob_bodies(Config::default());
    let mut writer = Harness::opened(config.clone());
    let writes = [
        (1, "/a.md", "alpha dog"),
        (2, "/b.md", "beta dog"),
        (3, "/c.md", "gamma dog"),
        (4, "/d.md", "delta dog"),
    ];
    publish_all(&mut writer, &writes);
    let mut store = writer.store.clone();
    let body = |s: &str| SegmentBody { hash: Hash32::of(s.as_bytes()), body: s.as_bytes().to_vec() };
    let mut put = |label: u32, window: u64, bodies: Vec<SegmentBody>| {
        let parts = if worded { crate::search::segment_parts(bodies) } else { SegmentPart::split(bodies) };
        for part in parts.expect("fits") {
            let name = SegmentName { bits: 1, label, window, part: part.part };
            store.put(writer.now, keys().segment(&name), Bytes::from(part.encode()));
        }
    };
    // Label 0's newest whole window holds alpha and beta; its older one gamma, unread.
    put(0, 4, vec![body("gamma dog")]);
    put(0, 5, vec![body("alpha dog"), body("beta dog")]);
    // Label 1's part holds delta under gamma's hash: not trusted.
    put(1, 5, vec![SegmentBody { hash: Hash32::of(b"gamma dog"), body: b"delta dog".to_vec() }]);
    // A key under segments/ that names no part.
    store.put(writer.now, format!("{}notes.txt", keys().segments_prefix()), Bytes::from_static(b"hi"));

    let mut h = Harness::with_store(config, store, 2);
    h.prepare_parts = prepare_parts;
    h.run();
    let id = h.read(search("dog", None, 0));
    h.run();
    assert_eq!(found(h.read_ok(id)), (vec!["/a.md", "/b.md", "/c.md", "/d.md"], SearchMatch::Body, false));
    let segment_gets: Vec<&BlobOp> = h
        .log
        .iter()
        .filter(|op| matches!(op, BlobOp::Get { key } if key.starts_with(&keys().segments_prefix())))
        .collect();
    assert_eq!(segment_gets.len(), 2, "the newest whole window of each label: {segment_gets:?}");
    assert_eq!(h.log.iter().filter(|op| is_body_get(op)).count(), 2, "gamma and delta from their blobs");
    let stats = h.replica.search_stats();
    assert_eq!((stats.segment_parts_read, stats.bodies_from_segments, stats.bodies_fetched), (2, 2, 2));
    assert_eq!(h.marked(Mark::SearchSegmentRead), 2);
    assert_eq!(h.marked(Mark::SearchSegmentWordsTaken), u64::from(worded), "label 0's part alone");
    assert_eq!(h.parts_prepared, if prepare_parts { 2 } else { 0 });
}

/// Segments are a cache: a build whose listing of `segments/` the store refuses reads
/// every body from its blob and still answers from bodies.
#[test]
fn a_build_whose_segment_listing_fails_reads_blobs() {
    let config = blob_bodies(Config::default());
    let mut writer = Harness::opened(config.clone());
    publish_all(&mut writer, &[(1, "/a.md", "alpha dog"), (2, "/b.md", "beta dog")]);
    let mut h = Harness::with_store(config, writer.store.clone(), 2);
    h.run();
    let id = h.read(search("dog", None, 0));
    let listing =
        |op: &BlobOp| matches!(op, BlobOp::List { prefix, .. } if *prefix == keys().segments_prefix());
    assert!(h.find(listing).is_some(), "a build lists segments first");
    assert!(h.pending(is_body_get).is_empty(), "no blob read before the listing ends");
    h.bring_forward(listing);
    h.deliver_with(crate::testkit::Fate::Fail(crate::blob::BlobError::Unsupported));
    h.run();
    assert_eq!(found(h.read_ok(id)), (vec!["/a.md", "/b.md"], SearchMatch::Body, false));
    assert_eq!(h.replica.search_stats().bodies_fetched, 2);
}
