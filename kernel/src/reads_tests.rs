//! One test per rule of the read path (SPEC 8), driven through `testkit`: exact reads
//! check the next slot name, catalog reads may trail by a second, one probe is shared,
//! each read has its own deadline, and a peer's hint is followed without a read waiting.
//! A peer is simulated by writing its slots straight into the store (`testkit::Peer`).

use crate::blob::{BlobError, BlobOp, BlobResult};
use crate::config::Config;
use crate::effect::{Input, Read};
use crate::hash::Hash32;
use crate::ids::{OperationId, RequestId};
use crate::reply::{Answer, FailReason, ReadError, ReadOk};
use crate::testkit::{
    blob_bodies, is_body_get, is_slot_create, is_slot_get, is_slot_stat, keys, publish, Fate, Harness, Peer,
};
use crate::world::{Expected, Mutation, Path, PathProblem, PolicyBody, ReceiptAnswer};
use bytes::Bytes;
use core::time::Duration;

// General helpers.

/// No hedging, so a test that fires timers fires only the ones it means to.
fn no_hedging() -> Config {
    Config { hedge_after: Duration::ZERO, ..Config::default() }
}

fn stat_of(sequence: u64) -> BlobOp {
    BlobOp::Stat { key: keys().slot(sequence) }
}

fn get_of(sequence: u64) -> BlobOp {
    BlobOp::Get { key: keys().slot(sequence) }
}

fn path(p: &str) -> Path {
    Path::parse(p).expect("a valid path")
}

fn fetch(p: &str) -> Read {
    Read::Fetch { path: p.into(), version: None }
}

fn fetch_version(p: &str, version: u64) -> Read {
    Read::Fetch { path: p.into(), version: Some(version) }
}

fn lookup(prefix: &str, start_after: Option<&str>, limit: u32) -> Read {
    Read::Lookup { prefix: prefix.into(), start_after: start_after.map(str::to_string), limit }
}

fn list(directory: &str, limit: u32) -> Read {
    list_after(directory, None, limit)
}

fn list_after(directory: &str, start_after: Option<&str>, limit: u32) -> Read {
    Read::List { directory: directory.into(), start_after: start_after.map(str::to_string), limit }
}

/// Commits each write in a slot of its own.
fn publish_each(h: &mut Harness, writes: &[(u128, &str, &str)]) {
    for (op, p, body) in writes {
        let r = h.publish(*op, p, body);
        h.settle();
        h.receipt(r);
    }
}

fn tip(h: &Harness) -> u64 {
    h.replica.world().expect("open").sequence()
}

/// The path, version and body of a `Fetch` answer; panics on any other answer.
fn document(ok: &ReadOk) -> (String, u64, Bytes) {
    match &ok.answer {
        Answer::Document { entry, version, body } => {
            assert_eq!(Hash32::of(body), version.body_hash, "the body of the version answered");
            (entry.path.as_str().to_string(), version.version, body.clone())
        }
        other => panic!("expected a document, got {other:?}"),
    }
}

fn entry_paths(entries: &[crate::world::IndexEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.path.as_str()).collect()
}

fn paths(paths: &[Path]) -> Vec<&str> {
    paths.iter().map(Path::as_str).collect()
}

fn set_retention(h: &mut Harness, op: u128, versions: u32) {
    let policy =
        PolicyBody { retention_versions: versions, body_bytes_max: 1 << 20, read_only_prefixes: Vec::new() };
    let r = h.write(op, Mutation::SetPolicy { policy, expected: Expected::Any });
    h.settle();
    h.receipt(r);
}

/// A replica that cold-started on a log written by another harness: no body is in its
/// memory.
fn cold_replica(config: Config, writes: &[(u128, &str, &str)]) -> Harness {
    let mut writer = Harness::opened(blob_bodies(Config::default()));
    publish_each(&mut writer, writes);
    let mut h = Harness::with_store(config, std::mem::take(&mut writer.store), 2);
    h.settle();
    assert!(h.replica.is_open());
    assert_eq!(tip(&h), writes.len() as u64);
    h
}

/// [`cold_replica`] on a log whose writer carried its small bodies in its slots.
fn cold_replica_on_carried(config: Config, writes: &[(u128, &str, &str)]) -> Harness {
    let mut writer = Harness::opened(Config::default());
    publish_each(&mut writer, writes);
    assert_eq!(writer.body_creates(), 0, "every body carried");
    let mut h = Harness::with_store(config, std::mem::take(&mut writer.store), 2);
    h.settle();
    assert!(h.replica.is_open());
    h
}

// Bodies carried in slots (SPEC 5.7).

/// The keys the replica read since `mark` in its log of calls.
fn gets_since(h: &Harness, mark: usize) -> Vec<String> {
    h.log[mark..]
        .iter()
        .filter(|op| matches!(op, BlobOp::Get { .. }))
        .map(|op| op.key().to_string())
        .collect()
}

#[test]
fn a_carried_body_is_read_from_the_slot_of_its_version() {
    let mut h = cold_replica_on_carried(Config::default(), &[(1, "/a.md", "one"), (2, "/b.md", "two")]);
    let mark = h.log.len();
    let r = h.read(fetch("/b.md"));
    h.settle();
    assert_eq!(document(h.read_ok(r)), ("/b.md".into(), 1, Bytes::from_static(b"two")));
    assert_eq!(gets_since(&h, mark), vec![keys().slot(2)], "its slot, and no blob");
}

#[test]
fn a_body_whose_slot_carries_none_is_read_from_its_blob_alone() {
    let mut h = cold_replica(Config::default(), &[(1, "/a.md", "one"), (2, "/b.md", "two")]);
    let mark = h.log.len();
    let r = h.read(fetch("/b.md"));
    h.settle();
    assert_eq!(document(h.read_ok(r)), ("/b.md".into(), 1, Bytes::from_static(b"two")));
    let blob = keys().body(&Hash32::of(b"two"));
    assert_eq!(gets_since(&h, mark), vec![blob], "its blob, not its slot first");
}

#[test]
fn a_carried_body_of_a_slot_since_the_newest_checkpoint_is_read_from_the_ledger() {
    // A compacting replica keeps the slots since its newest checkpoint (the ledger): a
    // body one of them carries is read from memory, with no store call.
    let compacting = Config { checkpoint_slots: 64, ..Config::default() };
    let mut h = cold_replica_on_carried(compacting, &[(1, "/a.md", "one"), (2, "/b.md", "two")]);
    let mark = h.log.len();
    let r = h.read(fetch("/b.md"));
    h.settle();
    assert_eq!(document(h.read_ok(r)), ("/b.md".into(), 1, Bytes::from_static(b"two")));
    let calls: Vec<&BlobOp> = h.log[mark..].iter().filter(|op| !is_slot_stat(op)).collect();
    assert!(calls.is_empty(), "read from the ledger, not the bucket: {calls:?}");
}

#[test]
fn reading_one_carried_body_caches_the_others_its_slot_carries() {
    let mut writer = Harness::opened(Config::default());
    let writes = [(1, publish("/a.md", "one", Expected::Any)), (2, publish("/b.md", "two", Expected::Any))];
    let (mut slot, bodies) = Peer::following(&writer).build(&writer.store, &writes);
    // One slot carrying both bodies, and no blob of either.
    slot.bodies = bodies;
    let now = writer.now;
    writer.store.put(now, keys().slot(1), Bytes::from(slot.encode()));
    let mut h = Harness::with_store(Config::default(), std::mem::take(&mut writer.store), 2);
    h.settle();
    assert_eq!(tip(&h), 2);
    let r = h.read(fetch("/a.md"));
    h.settle();
    assert_eq!(document(h.read_ok(r)), ("/a.md".into(), 1, Bytes::from_static(b"one")));
    let mark = h.log.len();
    let r = h.read(fetch("/b.md"));
    h.settle();
    assert_eq!(document(h.read_ok(r)), ("/b.md".into(), 1, Bytes::from_static(b"two")));
    let body_calls = h.log[mark..].iter().filter(|op| !is_slot_stat(op)).count();
    assert_eq!(body_calls, 0, "the sibling came from the cache: {:?}", &h.log[mark..]);
}

#[test]
fn a_carried_body_whose_slot_is_not_indexed_is_found_by_listing_after_its_blob_is_absent() {
    let config = Config { recent_slots_max: 1, ..Config::default() };
    let mut h = cold_replica_on_carried(config, &[(1, "/a.md", "one"), (2, "/b.md", "two")]);
    let mark = h.log.len();
    let r = h.read(fetch("/a.md"));
    h.settle();
    assert_eq!(document(h.read_ok(r)), ("/a.md".into(), 1, Bytes::from_static(b"one")));
    let calls: Vec<String> = h.log[mark..]
        .iter()
        .filter(|op| !is_slot_stat(op))
        .map(|op| match op {
            BlobOp::List { .. } => "list".to_string(),
            op => op.key().to_string(),
        })
        .collect();
    let blob = keys().body(&Hash32::of(b"one"));
    assert_eq!(calls, vec![blob, "list".into(), keys().slot(1)], "blob, then the listing, then the slot");
}

#[test]
fn a_body_neither_its_slot_nor_a_blob_holds_fails_closed() {
    let mut h = cold_replica(Config::default(), &[(1, "/a.md", "one")]);
    let hash = Hash32::of(b"one");
    h.store.objects.remove(&keys().body(&hash));
    h.failure_expected = true;
    let r = h.read(fetch("/a.md"));
    h.settle();
    assert_eq!(h.failures, vec![FailReason::BodyMissing { hash }]);
    let answered = h.read_replies.get(&r);
    assert_eq!(answered, Some(&Err(ReadError::Failed(FailReason::BodyMissing { hash }))), "answered");
}

// Exact reads: the tip is checked after the read arrived.

#[test]
fn an_exact_read_checks_the_next_slot_name_first() {
    let mut h = Harness::opened(Config::default());
    publish_each(&mut h, &[(1, "/a.md", "a")]);
    h.advance_ms(1);
    let mark = h.log.len();
    let r = h.read(fetch("/a.md"));
    assert!(!h.read_replies.contains_key(&r), "not answered before the tip is checked");
    assert_eq!(h.pending(|_| true), vec![stat_of(2)], "a metadata read of the next slot name");
    h.deliver();
    let ok = h.read_ok(r);
    assert_eq!(ok.at_sequence, 1, "the next name was free: the snapshot is the tip");
    assert_eq!(document(ok), ("/a.md".into(), 1, Bytes::from_static(b"a")));
    assert_eq!(h.log[mark..], [stat_of(2)]);
}

#[test]
fn an_exact_read_sees_a_peers_commit_made_before_it_began() {
    let mut h = Harness::opened(blob_bodies(Config::default()));
    let mut peer = Peer::following(&h);
    peer.commit(&mut h, &[(50, publish("/p.md", "peer", Expected::Any))]);
    h.advance_ms(1);
    let mark = h.log.len();
    let r = h.read(fetch("/p.md"));
    h.settle();
    let ok = h.read_ok(r).clone();
    assert_eq!(ok.at_sequence, 1);
    assert_eq!(document(&ok), ("/p.md".into(), 1, Bytes::from_static(b"peer")));
    let Answer::Document { entry, .. } = &ok.answer else { unreachable!() };
    let body = BlobOp::Get { key: keys().body(&entry.body_hash) };
    assert_eq!(
        h.log[mark..],
        [stat_of(1), get_of(1), stat_of(2), body],
        "found the slot, read it, installed it, looked again, then read the body"
    );
    assert_eq!(h.replica.read_stats().slots_followed, 1);
}

#[test]
fn concurrent_exact_reads_share_one_probe() {
    let mut h = Harness::opened(Config::default());
    publish_each(&mut h, &[(1, "/a.md", "a")]);
    h.advance_ms(1);
    let mark = h.log.len();
    let f = h.read(fetch("/a.md"));
    let v = h.read(Read::Versions { path: "/a.md".into() });
    let r = h.read(Read::Receipt { op_id: OperationId::from(1u128), since: None });
    assert_eq!(h.pending(|_| true), vec![stat_of(2)], "one probe for three reads");
    h.settle();
    assert_eq!(h.log[mark..], [stat_of(2)]);
    for id in [f, v, r] {
        assert_eq!(h.read_ok(id).at_sequence, 1);
    }
    assert_eq!(h.replica.read_stats().probes, 1);
    assert_eq!(h.marked(crate::marks::Mark::ProbeShared), 1);
}

#[test]
fn a_read_that_arrives_after_the_probe_was_sent_waits_for_the_next_one() {
    let mut h = Harness::opened(Config::default());
    publish_each(&mut h, &[(1, "/a.md", "a")]);
    h.advance_ms(1);
    let first = h.read(fetch("/a.md"));
    h.advance_ms(1);
    let second = h.read(fetch("/a.md"));
    assert_eq!(h.pending(|_| true), vec![stat_of(2)], "no second probe while one is out");
    h.deliver();
    assert_eq!(h.read_ok(first).at_sequence, 1);
    assert!(!h.read_replies.contains_key(&second), "the probe was sent before it arrived");
    assert_eq!(h.pending(|_| true), vec![stat_of(2)], "the next probe");
    h.deliver();
    assert_eq!(h.read_ok(second).at_sequence, 1);
    assert_eq!(h.replica.read_stats().probes, 2);
}

#[test]
fn each_read_has_its_own_deadline() {
    let mut h = Harness::opened(Config { request_deadline: Duration::from_millis(500), ..no_hedging() });
    let first_at = h.now;
    let first = h.read(fetch("/a.md"));
    h.advance_ms(100);
    let second = h.read(fetch("/a.md"));
    assert_eq!(h.pending(|_| true), vec![stat_of(1)], "the probe is held");
    h.fire_timer();
    assert_eq!(h.now, first_at + core::time::Duration::from_millis(500));
    assert_eq!(h.read_replies.get(&first), Some(&Err(ReadError::Deadline)));
    assert!(!h.read_replies.contains_key(&second), "its own deadline is later");
    h.fire_timer();
    assert_eq!(h.read_replies.get(&second), Some(&Err(ReadError::Deadline)));
    assert_eq!(h.replica.read_stats().deadlines, 2);
    assert_eq!(h.replica.poll_timeout(), None, "nothing left to wait for");
}

#[test]

fn a_fetch_waiting_for_its_body_still_has_its_deadline() {
    let mut h = cold_replica(
        blob_bodies(Config { request_deadline: Duration::from_millis(500), ..no_hedging() }),
        &[(1, "/a.md", "a")],
    );
    h.advance_ms(1);
    let arrived = h.now;
    let r = h.read(fetch("/a.md"));
    h.deliver();
    assert_eq!(h.pending(|_| true).len(), 1, "the snapshot is confirmed; the body read is held");
    assert!(h.pending(is_body_get).len() == 1);
    assert_eq!(
        h.replica.poll_timeout(),
        Some(arrived + core::time::Duration::from_millis(500)),
        "the read's deadline is still set"
    );
    h.fire_timer();
    assert_eq!(h.read_replies.get(&r), Some(&Err(ReadError::Deadline)));
}

#[test]
fn a_held_probe_does_not_block_the_committers_writes() {
    let mut h = Harness::opened(no_hedging());
    h.advance_ms(1);
    let r = h.read(fetch("/a.md"));
    assert_eq!(h.pending(|_| true), vec![stat_of(1)]);
    let w = h.publish(1, "/a.md", "a");
    h.deliver_all_but(is_slot_stat);
    assert_eq!(h.receipt(w).sequence, 1, "the write committed while the probe was held");
    assert_eq!(h.pending(|_| true), vec![stat_of(1)], "still held");
    // The slot's create was sent after the read arrived and found the name free: that
    // confirms the new state as the tip for the read.
    assert_eq!(document(h.read_ok(r)), ("/a.md".into(), 1, Bytes::from_static(b"a")));
    h.deliver();
    assert!(h.calls.is_empty(), "the stale probe found the committed slot and is done");
}

// Catalog reads: up to a second behind.

#[test]
fn a_catalog_read_within_a_second_of_a_confirmed_tip_is_answered_at_once() {
    let mut h = Harness::opened(Config::default());
    publish_each(&mut h, &[(1, "/a.md", "a")]);
    h.advance_ms(900);
    let mark = h.log.len();
    let r = h.read(lookup("/", None, 10));
    let ok = h.read_ok(r);
    assert_eq!(ok.at_sequence, 1);
    assert!(
        matches!(&ok.answer, Answer::Lookup { entries, more: false } if entry_paths(entries) == ["/a.md"])
    );
    assert_eq!(h.log.len(), mark, "no tip check");
}

#[test]
fn a_catalog_read_after_a_second_probes_the_tip() {
    let mut h = Harness::opened(Config::default());
    publish_each(&mut h, &[(1, "/a.md", "a")]);
    h.advance_ms(1_100);
    let r = h.read(lookup("/", None, 10));
    assert!(!h.read_replies.contains_key(&r));
    assert_eq!(h.pending(|_| true), vec![stat_of(2)]);
    h.deliver();
    assert_eq!(h.read_ok(r).at_sequence, 1);

    // Under a steady stream of catalog reads, at most one tip check a second.
    let mut stats_at = Vec::new();
    let mut reads = Vec::new();
    for _ in 0..40 {
        h.advance_ms(100);
        let before = h.log.len();
        reads.push(h.read(list("/", 10)));
        if h.log[before..].iter().any(is_slot_stat) {
            stats_at.push(h.now);
        }
        h.settle();
    }
    for id in reads {
        assert_eq!(h.read_ok(id).at_sequence, 1);
    }
    assert!(stats_at.len() >= 3, "four seconds of reads check the tip: {stats_at:?}");
    for pair in stats_at.windows(2) {
        assert!(
            pair[1] - pair[0] >= core::time::Duration::from_secs(1),
            "two checks within a second: {pair:?}"
        );
    }
}

// What each read answers.

#[test]
fn fetch_of_an_absent_document_is_not_found() {
    let mut h = Harness::opened(Config::default());
    publish_each(&mut h, &[(1, "/a.md", "a")]);
    let f = h.read(fetch("/b.md"));
    let v = h.read(Read::Versions { path: "/b.md".into() });
    let dir = h.read(fetch("/a.md/x"));
    h.settle();
    for id in [f, v, dir] {
        assert_eq!(h.read_ok(id), &ReadOk { at_sequence: 1, answer: Answer::NotFound });
    }
}

#[test]
fn fetch_of_a_pruned_version_is_not_retained() {
    let mut h = Harness::opened(Config::default());
    set_retention(&mut h, 100, 2);
    publish_each(&mut h, &[(1, "/a.md", "1"), (2, "/a.md", "2"), (3, "/a.md", "3"), (4, "/a.md", "4")]);
    let pruned = h.read(fetch_version("/a.md", 2));
    let future = h.read(fetch_version("/a.md", 5));
    let kept = h.read(fetch_version("/a.md", 3));
    h.settle();
    let not_retained = Answer::VersionNotRetained { first_version: 3, current: 4 };
    assert_eq!(h.read_ok(pruned).answer, not_retained);
    assert_eq!(h.read_ok(future).answer, not_retained, "a version not yet written");
    assert_eq!(document(h.read_ok(kept)), ("/a.md".into(), 3, Bytes::from_static(b"3")));
}

#[test]
fn fetch_returns_the_body_of_the_version_asked_for() {
    let mut h = cold_replica(Config::default(), &[(1, "/a.md", "one"), (2, "/a.md", "two")]);
    let mark = h.log.len();
    let old = h.read(fetch_version("/a.md", 1));
    let current = h.read(fetch("/a.md"));
    h.settle();
    let old = h.read_ok(old).clone();
    let current = h.read_ok(current).clone();
    assert_eq!(document(&old), ("/a.md".into(), 1, Bytes::from_static(b"one")));
    assert_eq!(document(&current), ("/a.md".into(), 2, Bytes::from_static(b"two")));
    let hashes: Vec<Hash32> = [&old, &current]
        .iter()
        .map(|ok| match &ok.answer {
            Answer::Document { entry, version, .. } => {
                assert_eq!(entry.version, 2, "the entry is the document's current one");
                version.body_hash
            }
            _ => unreachable!(),
        })
        .collect();
    assert_ne!(hashes[0], hashes[1]);
    let body_gets: Vec<BlobOp> = h.log[mark..].iter().filter(|op| is_body_get(op)).cloned().collect();
    let expected: Vec<BlobOp> = hashes.iter().map(|hash| BlobOp::Get { key: keys().body(hash) }).collect();
    assert_eq!(body_gets, expected, "each body read from its blob, not from memory");
}

#[test]
fn versions_lists_the_retained_versions() {
    let mut h = Harness::opened(Config::default());
    set_retention(&mut h, 100, 2);
    publish_each(&mut h, &[(1, "/a.md", "1"), (2, "/a.md", "2"), (3, "/a.md", "3")]);
    let r = h.read(Read::Versions { path: "/a.md".into() });
    h.settle();
    let ok = h.read_ok(r);
    assert_eq!(ok.at_sequence, 4);
    let Answer::Versions { entry, versions } = &ok.answer else { panic!("versions: {ok:?}") };
    assert_eq!((entry.first_version, entry.version), (2, 3));
    let listed: Vec<(u64, OperationId, u64)> =
        versions.iter().map(|v| (v.version, v.op_id, v.sequence)).collect();
    assert_eq!(
        listed,
        vec![(2, OperationId::from(2u128), 3), (3, OperationId::from(3u128), 4)],
        "oldest first"
    );
    assert_eq!(versions.last().map(|v| v.body_hash), Some(entry.body_hash));
}

#[test]
fn receipt_settles_a_committed_operation_id() {
    let mut h = Harness::opened(Config::default());
    let w = h.publish(7, "/a.md", "a");
    h.settle();
    let receipt = h.receipt(w).clone();
    let known = h.read(Read::Receipt { op_id: OperationId::from(7u128), since: None });
    let unknown = h.read(Read::Receipt { op_id: OperationId::from(8u128), since: None });
    h.settle();
    assert_eq!(
        h.read_ok(known),
        &ReadOk { at_sequence: 1, answer: Answer::Receipt(ReceiptAnswer::Committed(receipt)) }
    );
    assert_eq!(
        h.read_ok(unknown),
        &ReadOk { at_sequence: 1, answer: Answer::Receipt(ReceiptAnswer::Absent) }
    );
}

#[test]
fn lookup_returns_documents_under_a_prefix_in_order_with_paging() {
    let mut h = Harness::opened(Config::default());
    publish_each(
        &mut h,
        &[
            (1, "/docs/c.md", "c"),
            (2, "/docs/a.md", "a"),
            (3, "/other.md", "o"),
            (4, "/docs/b.md", "b"),
            (5, "/docsx.md", "x"),
        ],
    );
    let first = h.read(lookup("/docs/", None, 2));
    let second = h.read(lookup("/docs/", Some("/docs/b.md"), 2));
    let bytewise = h.read(lookup("/docs", None, 0));
    let before = h.read(lookup("/docs/", Some("/a.md"), 10));
    h.settle();
    let entries = |id: RequestId| match &h.read_ok(id).answer {
        Answer::Lookup { entries, more } => (entry_paths(entries), *more),
        other => panic!("a lookup: {other:?}"),
    };
    assert_eq!(entries(first), (vec!["/docs/a.md", "/docs/b.md"], true));
    assert_eq!(entries(second), (vec!["/docs/c.md"], false));
    assert_eq!(entries(bytewise), (vec!["/docs/a.md", "/docs/b.md", "/docs/c.md", "/docsx.md"], false));
    assert_eq!(
        entries(before),
        (vec!["/docs/a.md", "/docs/b.md", "/docs/c.md"], false),
        "start_after before the prefix"
    );
}

#[test]
fn list_returns_documents_and_subdirectories_directly_in_a_directory() {
    let mut h = Harness::opened(Config::default());
    publish_each(
        &mut h,
        &[
            (1, "/a.md", "a"),
            (2, "/d/b.md", "b"),
            (3, "/d/e/c.md", "c"),
            (4, "/d/e/f/g.md", "g"),
            (5, "/d-x.md", "x"),
            (6, "/z.md", "z"),
            (7, "/d/e2/h.md", "h"),
        ],
    );
    let root = h.read(list("/", 10));
    let nested = h.read(list("/d", 10));
    let deeper = h.read(list("/d/e/", 10));
    let cut = h.read(list("/", 2));
    let empty = h.read(list("/nothing", 10));
    h.settle();
    let listing = |id: RequestId| match &h.read_ok(id).answer {
        Answer::Listing { documents, directories, more, .. } => {
            (entry_paths(documents), paths(directories), *more)
        }
        other => panic!("a listing: {other:?}"),
    };
    assert_eq!(listing(root), (vec!["/a.md", "/d-x.md", "/z.md"], vec!["/d"], false));
    assert_eq!(listing(nested), (vec!["/d/b.md"], vec!["/d/e", "/d/e2"], false), "no contents of /d/e");
    assert_eq!(listing(deeper), (vec!["/d/e/c.md"], vec!["/d/e/f"], false));
    assert_eq!(listing(cut), (vec!["/a.md", "/d-x.md"], vec![], true));
    assert_eq!(listing(empty), (vec![], vec![], false));
}

#[test]
fn hash_lookup_returns_the_paths_with_that_body() {
    let mut h = Harness::opened(Config::default());
    publish_each(
        &mut h,
        &[(1, "/b.md", "same"), (2, "/a.md", "same"), (3, "/c.md", "other"), (4, "/d.md", "same")],
    );
    publish_each(&mut h, &[(5, "/d.md", "changed")]);
    let world = h.replica.world().expect("open");
    let same = world.document(&path("/a.md")).expect("a").entry.body_hash;
    assert_eq!(world.document(&path("/b.md")).expect("b").entry.body_hash, same);
    let all = h.read(Read::HashLookup { hash: same, start_after: None, limit: 10 });
    let one = h.read(Read::HashLookup { hash: same, start_after: None, limit: 1 });
    let none = h.read(Read::HashLookup { hash: Hash32::of(b"absent"), start_after: None, limit: 10 });
    let after = h.read(Read::HashLookup { hash: same, start_after: Some("/a.md".into()), limit: 10 });
    h.settle();
    let found = |id: RequestId| match &h.read_ok(id).answer {
        Answer::Paths { paths: p, more } => (paths(p), *more),
        other => panic!("paths: {other:?}"),
    };
    assert_eq!(found(all), (vec!["/a.md", "/b.md"], false), "in order; /d.md's current body differs");
    assert_eq!(found(one), (vec!["/a.md"], true));
    assert_eq!(found(none), (vec![], false));
    assert_eq!(found(after), (vec!["/b.md"], false), "the next page");
}

#[test]
fn a_listing_pages_by_name_and_a_directory_cursor_skips_its_contents() {
    let mut h = Harness::opened(Config::default());
    publish_each(
        &mut h,
        &[
            (1, "/a.md", "a"),
            (2, "/d/b.md", "b"),
            (3, "/d!x.md", "x"), // sorts between /d and /d/
            (4, "/d/e/c.md", "c"),
            (5, "/e.md", "e"),
        ],
    );
    let first = h.read(list_after("/", None, 2));
    let second = h.read(list_after("/", Some("/d!x.md"), 2));
    let inside = h.read(list_after("/", Some("/d/b.md"), 10)); // a path inside /d/: /d/ is before it
    let last = h.read(list_after("/", Some("/d/"), 2));
    h.settle();
    let page = |id: RequestId| match &h.read_ok(id).answer {
        Answer::Listing { documents, directories, more, next } => {
            (entry_paths(documents), paths(directories), *more, next.clone())
        }
        other => panic!("a listing: {other:?}"),
    };
    assert_eq!(page(first), (vec!["/a.md", "/d!x.md"], vec![], true, Some("/d!x.md".to_string())));
    assert_eq!(page(second), (vec!["/e.md"], vec!["/d"], false, None), "/d/ then /e.md, in name order");
    assert_eq!(page(inside), (vec!["/e.md"], vec![], false, None));
    assert_eq!(page(last), (vec!["/e.md"], vec![], false, None));
}

#[test]
fn paging_a_large_directory_answers_every_child_once() {
    let mut h = Harness::opened(Config::default());
    let writes: Vec<(u128, String)> = (0..2_500u128).map(|i| (i + 1, format!("/big/{i:05}.md"))).collect();
    for chunk in writes.chunks(256) {
        for (op, p) in chunk {
            h.publish(*op, p, "x");
        }
        h.run();
    }
    let mut seen: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let id = h.read(list_after("/big", cursor.as_deref(), 1_000));
        h.settle();
        let Answer::Listing { documents, more, next, .. } = &h.read_ok(id).answer else {
            panic!("a listing")
        };
        seen.extend(entry_paths(documents).into_iter().map(str::to_string));
        if !more {
            break;
        }
        cursor = next.clone();
    }
    assert_eq!(seen.len(), 2_500);
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "in order, none twice");
    // Every one of them holds the same body: page through the hash's paths alike.
    let hash = Hash32::of(b"x");
    let mut by_hash: Vec<String> = Vec::new();
    loop {
        let read = Read::HashLookup { hash, start_after: by_hash.last().cloned(), limit: 700 };
        let id = h.read(read);
        h.settle();
        let Answer::Paths { paths: page, more } = &h.read_ok(id).answer else { panic!("paths") };
        let more = *more;
        by_hash.extend(page.iter().map(|p| p.as_str().to_string()));
        if !more {
            break;
        }
    }
    assert_eq!(by_hash, seen);
}

#[test]
fn is_directory_answers_at_the_tip() {
    let mut h = Harness::opened(Config::default());
    publish_each(&mut h, &[(1, "/d/e/f.md", "f"), (2, "/g.md", "g")]);
    let reads: Vec<RequestId> = ["/", "/d", "/d/e", "/d/e/f.md", "/g.md", "/nothing"]
        .map(|p| h.read(Read::IsDirectory { path: p.into() }))
        .into();
    h.settle();
    let answers: Vec<bool> = reads
        .iter()
        .map(|id| match h.read_ok(*id).answer {
            Answer::IsDirectory(is) => is,
            ref other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(answers, [true, true, true, false, false, false]);
    assert!(Read::IsDirectory { path: "/d".into() }.is_exact(), "checked at the tip, as a fetch is");
}

// Refusals.

#[test]
fn an_invalid_path_is_refused_at_once() {
    let mut h = Harness::opened(Config::default());
    h.advance_ms(1);
    let mark = h.log.len();
    let dots = h.read(fetch("/a/../b.md"));
    let empty = h.read(Read::Versions { path: "//".into() });
    let control = h.read(list("/a\u{1}", 10));
    let long = h.read(fetch(&format!("/{}", "x".repeat(300))));
    assert_eq!(h.read_replies.get(&dots), Some(&Err(ReadError::InvalidPath(PathProblem::DotSegment))));
    assert_eq!(h.read_replies.get(&empty), Some(&Err(ReadError::InvalidPath(PathProblem::Empty))));
    assert_eq!(
        h.read_replies.get(&control),
        Some(&Err(ReadError::InvalidPath(PathProblem::ControlCharacter)))
    );
    assert_eq!(h.read_replies.get(&long), Some(&Err(ReadError::InvalidPath(PathProblem::SegmentTooLong))));
    assert_eq!(h.log.len(), mark, "nothing queued, no probe");
}

#[test]
fn a_full_read_queue_refuses_with_busy() {
    let mut h = Harness::opened(Config { read_pending_max: 2, ..Config::default() });
    h.advance_ms(1);
    let a = h.read(fetch("/a.md"));
    let b = h.read(Read::Versions { path: "/b.md".into() });
    let c = h.read(fetch("/c.md"));
    assert_eq!(h.read_replies.get(&c), Some(&Err(ReadError::Busy { pending: 2 })));
    assert_eq!(h.replica.read_stats().refused_busy, 1);
    h.settle();
    assert_eq!(h.read_ok(a).at_sequence, 0);
    assert_eq!(h.read_ok(b).at_sequence, 0);
    let e = h.read(fetch("/e.md"));
    h.settle();
    assert_eq!(h.read_ok(e).answer, Answer::NotFound, "room again once answered");
}

// Hints.

#[test]
fn follow_reads_ahead_to_a_peers_sequence() {
    let mut h = Harness::opened(Config::default());
    let mut peer = Peer::following(&h);
    peer.commit(
        &mut h,
        &[(50, publish("/p.md", "p", Expected::Any)), (51, publish("/q.md", "q", Expected::Any))],
    );
    let mark = h.log.len();
    h.input(Input::Follow { sequence: 2 });
    h.settle();
    assert_eq!(h.log[mark..], [stat_of(1), get_of(1)], "read ahead to the hint, then stop");
    assert!(h.read_replies.is_empty());
    let world = h.replica.world().expect("open");
    assert_eq!(world.sequence(), 2);
    assert!(world.document(&path("/q.md")).is_some());
    assert_eq!(h.replica.read_stats().slots_followed, 1);
}

#[test]
fn follow_of_a_sequence_already_served_does_nothing() {
    let mut h = Harness::opened(Config::default());
    publish_each(&mut h, &[(1, "/a.md", "a"), (2, "/b.md", "b")]);
    let mark = h.log.len();
    h.input(Input::Follow { sequence: 2 });
    h.input(Input::Follow { sequence: 1 });
    h.input(Input::Follow { sequence: 0 });
    assert!(h.calls.is_empty());
    assert_eq!(h.log.len(), mark, "no call");
    assert_eq!(h.replica.read_stats().probes, 0);
}

#[test]
fn a_hint_past_what_the_store_holds_costs_one_probe_and_is_forgotten() {
    let mut h = Harness::opened(Config::default());
    h.input(Input::Follow { sequence: 50 });
    assert_eq!(h.replica.read_stats().probes, 1);
    h.run();
    assert!(h.calls.is_empty(), "no probe after the store showed the tip");
    assert_eq!(h.replica.read_stats().probes, 1);
}

// The probe and the committer.

#[test]
fn the_probe_leaves_the_name_the_committer_is_creating_to_the_committer() {
    let mut h = Harness::opened(Config::default());
    let w = h.publish(1, "/a.md", "a");
    h.deliver_all_but(is_slot_create);
    assert_eq!(h.pending(|_| true).len(), 1, "our slot create at 1 is out");
    // The create lands in the store; its answer is held.
    let created: BlobResult = h.apply_early(is_slot_create);
    assert!(created.is_ok());
    h.advance_ms(1);
    let r = h.read(fetch("/a.md"));
    assert_eq!(h.pending(is_slot_stat), vec![stat_of(1)]);
    assert!(h.bring_forward(is_slot_stat));
    h.deliver();
    assert!(h.store.bytes(&keys().slot(1)).is_some(), "the stat found our slot");
    assert!(!h.log.iter().any(is_slot_get), "the probe does not read the name the committer is creating");
    assert_eq!(h.replica.read_stats().slots_followed, 0);
    assert!(!h.read_replies.contains_key(&r));
    assert!(h.pending(is_slot_stat).is_empty(), "parked, not polling");
    assert!(h.bring_forward(is_slot_create));
    h.deliver_with(Fate::Answer(created));
    assert_eq!(h.receipt(w).sequence, 1);
    h.settle();
    assert!(!h.log.iter().any(is_slot_get));
    let ok = h.read_ok(r);
    assert_eq!(ok.at_sequence, 1);
    assert_eq!(document(ok), ("/a.md".into(), 1, Bytes::from_static(b"a")), "the answer holds our write");
    assert_eq!(h.log.iter().filter(|op| **op == stat_of(2)).count(), 1, "then the probe looked past it");
}

// The probe is a flight (the record's amendment).

/// A world of one slot, and two exact reads waiting on one probe of slot 2.
fn two_reads_on_one_flight() -> (Harness, [RequestId; 2]) {
    let mut h = Harness::opened(no_hedging());
    publish_each(&mut h, &[(1, "/a.md", "a")]);
    h.advance_ms(1);
    let waiting = [h.read(fetch("/a.md")), h.read(fetch("/a.md"))];
    assert_eq!(h.pending(|_| true), vec![stat_of(2)], "one probe for both");
    (h, waiting)
}

#[test]
fn a_throttled_probe_is_retried_inside_its_flight() {
    let (mut h, waiting) = two_reads_on_one_flight();
    h.deliver_with(Fate::Fail(BlobError::Throttled));
    assert!(waiting.iter().all(|r| !h.read_replies.contains_key(r)), "the waiters keep waiting");
    assert!(h.calls.is_empty(), "the retry waits out its backoff");
    h.fire_timer();
    assert_eq!(h.pending(|_| true), vec![stat_of(2)]);
    h.deliver();
    for r in waiting {
        assert_eq!(h.read_ok(r).at_sequence, 1);
    }
    assert_eq!(h.replica.read_stats().flights_failed, 0);
}

#[test]
fn a_failed_probe_answers_every_waiter_with_its_error() {
    let (mut h, waiting) = two_reads_on_one_flight();
    let mut joined = Vec::new();
    for attempt in 1..Config::default().probe_attempts_max {
        h.deliver_with(Fate::Fail(BlobError::Throttled));
        assert!(h.read_replies.is_empty(), "attempt {attempt} is retried");
        // A read arriving while the flight retries waits on the same flight.
        h.advance_ms(1);
        joined.push(h.read(fetch("/a.md")));
        h.fire_timer();
        assert_eq!(h.pending(|_| true), vec![stat_of(2)], "still one probe");
    }
    // The last attempt fails with a 5xx: that error is what every waiter hears.
    h.deliver_with(Fate::Fail(BlobError::Unavailable));
    let error = BlobError::Unavailable;
    for r in waiting.iter().chain(&joined) {
        assert_eq!(h.read_replies.get(r), Some(&Err(ReadError::Unavailable { error })), "answered at once");
    }
    let stats = h.replica.read_stats();
    assert_eq!((stats.unavailable, stats.flights_failed), (2 + joined.len() as u64, 1));
    assert!(h.calls.is_empty(), "the flight ended: nothing probes for reads already answered");
}

#[test]
fn a_probe_error_the_store_would_repeat_fails_the_flight_at_once() {
    let (mut h, waiting) = two_reads_on_one_flight();
    h.deliver_with(Fate::Fail(BlobError::Unsupported));
    let error = BlobError::Unsupported;
    for r in waiting {
        assert_eq!(h.read_replies.get(&r), Some(&Err(ReadError::Unavailable { error })));
    }
    assert_eq!(h.replica.read_stats().flights_failed, 1);
}

#[test]
fn a_read_after_a_failed_probe_starts_a_new_flight() {
    let (mut h, _) = two_reads_on_one_flight();
    h.deliver_with(Fate::Fail(BlobError::Unsupported));
    assert!(h.calls.is_empty());
    let later = h.read(fetch("/a.md"));
    assert_eq!(h.pending(|_| true), vec![stat_of(2)], "sent at once, not after a backoff");
    h.deliver();
    assert_eq!(h.read_ok(later).at_sequence, 1);
    assert_eq!(h.replica.read_stats().probes, 2);
}

#[test]
fn a_hint_after_a_failed_probe_waits_out_a_backoff() {
    let (mut h, _) = two_reads_on_one_flight();
    h.deliver_with(Fate::Fail(BlobError::Unsupported));
    h.input(Input::Follow { sequence: 5 });
    assert!(h.calls.is_empty(), "no read waits: the hint does not probe a failing store back to back");
    let failed_at = h.now;
    h.fire_timer();
    assert!(h.now > failed_at);
    assert_eq!(h.pending(|_| true), vec![stat_of(2)], "the hint probes once the cool-off ends");
}
