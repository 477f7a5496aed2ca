//! One test per rule of views: a view's reads all answer from the state its first read
//! pinned, whatever installs meanwhile; a view past `view_age_max`, or one whose pin this
//! replica does not hold, answers `ViewExpired`; at most `views_max` are pinned.

use crate::config::Config;
use crate::effect::{Input, Read, Request};
use crate::hash::Hash32;
use crate::ids::{RequestId, ViewId};
use crate::marks::Mark;
use crate::reply::{Answer, ReadError, ReadOk};
use crate::testkit::Harness;
use core::time::Duration;

fn view_read(h: &mut Harness, view: u64, pinned: Option<u64>, read: Read) -> RequestId {
    h.request(Request::ViewRead { view: ViewId(view), pinned, read })
}

fn fetch(p: &str) -> Read {
    Read::Fetch { path: p.into(), version: None }
}

fn answered(h: &mut Harness, view: u64, pinned: Option<u64>, read: Read) -> ReadOk {
    let id = view_read(h, view, pinned, read);
    h.settle();
    h.read_ok(id).clone()
}

fn refused(h: &mut Harness, view: u64, pinned: Option<u64>, read: Read) -> ReadError {
    let id = view_read(h, view, pinned, read);
    h.settle();
    match h.read_replies.get(&id) {
        Some(Err(e)) => e.clone(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn body_of(ok: &ReadOk) -> Option<(u64, &[u8])> {
    match &ok.answer {
        Answer::Document { version, body, .. } => Some((version.version, body.as_ref())),
        Answer::NotFound => None,
        other => panic!("a fetch's answer, not {other:?}"),
    }
}

fn publish_all(h: &mut Harness, writes: &[(u128, &str, &str)]) {
    for (op, p, body) in writes {
        h.publish(*op, p, body);
    }
    h.run();
}

#[test]
fn a_views_reads_all_answer_from_the_state_its_first_read_pinned() {
    let mut h = Harness::opened(Config::default());
    publish_all(&mut h, &[(1, "/d/a.md", "a1"), (2, "/d/b.md", "same"), (3, "/d/c.md", "same")]);
    let first = answered(&mut h, 7, None, fetch("/d/a.md"));
    let pinned = first.at_sequence;
    assert_eq!(body_of(&first), Some((1, &b"a1"[..])));
    // After the pin: a changed document, a new one, a body moved between documents.
    publish_all(&mut h, &[(4, "/d/a.md", "a2"), (5, "/d/new.md", "n"), (6, "/d/b.md", "other")]);
    publish_all(&mut h, &[(7, "/d/c.md", "c2"), (8, "/d/a.md", "a3")]);
    let tip = h.replica.world().expect("open").sequence();
    assert!(tip > pinned);

    let later = answered(&mut h, 7, Some(pinned), fetch("/d/a.md"));
    assert_eq!((later.at_sequence, body_of(&later)), (pinned, Some((1, &b"a1"[..]))));
    let absent = answered(&mut h, 7, Some(pinned), fetch("/d/new.md"));
    assert_eq!((absent.at_sequence, absent.answer), (pinned, Answer::NotFound), "created after the pin");
    let listing =
        answered(&mut h, 7, Some(pinned), Read::List { directory: "/d".into(), start_after: None, limit: 0 });
    let Answer::Listing { documents, .. } = &listing.answer else { panic!("a listing") };
    let listed: Vec<(&str, u64)> = documents.iter().map(|e| (e.path.as_str(), e.version)).collect();
    assert_eq!(listed, [("/d/a.md", 1), ("/d/b.md", 1), ("/d/c.md", 1)]);
    let same = Read::HashLookup { hash: Hash32::of(b"same"), start_after: None, limit: 1 };
    let page = answered(&mut h, 7, Some(pinned), same);
    assert_eq!(
        page.answer,
        Answer::Paths { paths: vec![crate::world::Path::parse("/d/b.md").unwrap()], more: true }
    );
    let next = Read::HashLookup { hash: Hash32::of(b"same"), start_after: Some("/d/b.md".into()), limit: 1 };
    let page = answered(&mut h, 7, Some(pinned), next);
    assert_eq!(
        page.answer,
        Answer::Paths { paths: vec![crate::world::Path::parse("/d/c.md").unwrap()], more: false }
    );
    let versions = answered(&mut h, 7, Some(pinned), Read::Versions { path: "/d/a.md".into() });
    let Answer::Versions { entry, versions } = &versions.answer else { panic!("versions") };
    assert_eq!((entry.version, versions.len()), (1, 1), "the versions as they were at the pin");
    assert!(h.marked(Mark::ViewReadBehindTip) >= 6);

    // A plain read, and another view's first read, see the tip.
    let plain = h.read(fetch("/d/a.md"));
    h.settle();
    assert_eq!(body_of(h.read_ok(plain)), Some((3, &b"a3"[..])));
    let other = answered(&mut h, 8, None, fetch("/d/a.md"));
    assert_eq!(other.at_sequence, tip);
    let stats = h.replica.view_stats();
    assert_eq!((stats.pinned, stats.pinned_now), (2, 2));
    assert_eq!(stats.images_held, 4, "the four documents changed since the first pin; none since the second");
    h.input(Input::ViewRelease { view: ViewId(7) });
    h.input(Input::ViewRelease { view: ViewId(8) });
    let stats = h.replica.view_stats();
    assert_eq!((stats.released, stats.pinned_now, stats.images_held), (2, 0, 0));
}

#[test]
fn a_view_older_than_its_age_answers_expired_and_lets_go() {
    let config = Config { view_age_max: Duration::from_secs(60), ..Config::default() };
    let mut h = Harness::opened(config);
    publish_all(&mut h, &[(1, "/a.md", "a")]);
    let pinned = answered(&mut h, 1, None, fetch("/a.md")).at_sequence;
    publish_all(&mut h, &[(2, "/a.md", "b")]);
    h.advance(Duration::from_secs(59));
    assert_eq!(answered(&mut h, 1, Some(pinned), fetch("/a.md")).at_sequence, pinned, "still young enough");
    h.advance(Duration::from_secs(1));
    assert_eq!(refused(&mut h, 1, Some(pinned), fetch("/a.md")), ReadError::ViewExpired);
    assert_eq!(refused(&mut h, 1, Some(pinned), fetch("/a.md")), ReadError::ViewExpired, "never re-pinned");
    let stats = h.replica.view_stats();
    assert_eq!((stats.pinned_now, stats.images_held), (0, 0), "the pin and its images went");
    assert!(stats.expired >= 1);
    assert!(h.marked(Mark::ViewExpired) >= 2);
}

#[test]
fn a_read_naming_a_pin_this_replica_does_not_hold_answers_expired() {
    // As after a restart: the view's first read answered at 1 on the replica before.
    let mut h = Harness::opened(Config::default());
    publish_all(&mut h, &[(1, "/a.md", "a"), (2, "/b.md", "b")]);
    assert_eq!(refused(&mut h, 3, Some(1), fetch("/a.md")), ReadError::ViewExpired);
    // Held, but at another sequence than the caller says: not the caller's state.
    let pinned = answered(&mut h, 4, None, fetch("/a.md")).at_sequence;
    assert_eq!(refused(&mut h, 4, Some(pinned - 1), fetch("/a.md")), ReadError::ViewExpired);
}

#[test]
fn views_past_the_limit_are_refused_until_one_is_released() {
    let config = Config { views_max: 2, ..Config::default() };
    let mut h = Harness::opened(config);
    publish_all(&mut h, &[(1, "/a.md", "a")]);
    answered(&mut h, 1, None, fetch("/a.md"));
    answered(&mut h, 2, None, fetch("/a.md"));
    assert_eq!(refused(&mut h, 3, None, fetch("/a.md")), ReadError::ViewsExhausted { views: 2 });
    h.input(Input::ViewRelease { view: ViewId(1) });
    assert_eq!(answered(&mut h, 3, None, fetch("/a.md")).at_sequence, 1);
    assert_eq!(h.replica.view_stats().refused, 1);
}

#[test]
fn a_views_first_read_waits_for_freshness_like_any_read() {
    let mut h = Harness::opened(Config::default());
    publish_all(&mut h, &[(1, "/a.md", "a")]);
    h.advance_ms(5);
    let id = view_read(&mut h, 9, None, fetch("/a.md"));
    assert!(!h.read_replies.contains_key(&id), "it waits for a probe of the tip");
    h.settle();
    assert_eq!(h.read_ok(id).at_sequence, 1);
}

#[test]
fn past_the_images_bound_the_views_at_the_oldest_pin_are_evicted() {
    let config = Config { view_images_max: 3, ..Config::default() };
    let mut h = Harness::opened(config);
    publish_all(&mut h, &[(1, "/a.md", "a"), (2, "/b.md", "b"), (3, "/c.md", "c")]);
    let old = answered(&mut h, 1, None, fetch("/a.md")).at_sequence;
    publish_all(&mut h, &[(4, "/a.md", "a2"), (5, "/b.md", "b2")]);
    let young = answered(&mut h, 2, None, fetch("/a.md")).at_sequence;
    // The old pin holds /a and /b; this slot adds /c to it and /c to the young one: 4 > 3.
    publish_all(&mut h, &[(6, "/c.md", "c2")]);
    assert_eq!(refused(&mut h, 1, Some(old), fetch("/a.md")), ReadError::ViewEvicted);
    assert_eq!(refused(&mut h, 1, Some(old), fetch("/a.md")), ReadError::ViewExpired, "said once");
    assert_eq!(
        answered(&mut h, 2, Some(young), fetch("/c.md")).at_sequence,
        young,
        "the young view reads on"
    );
    let stats = h.replica.view_stats();
    assert_eq!((stats.evicted, stats.pinned_now, stats.images_held), (1, 1, 1));
    assert_eq!(h.marked(Mark::ViewEvicted), 1);
}
