//! The name rules, one test each: forks of slot names, and a store history that must fit
//! each name and account for the bucket at the end.

use super::{check, CheckOptions, Rule, Violation};
use crate::history::{History, NameChange, NameHistory, StoredObject};
use bytes::Bytes;
use slotlog_kernel::format::Keys;
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::WorldId;
use slotlog_kernel::time::Instant;

const WORLD: WorldId = WorldId([5; 16]);

fn at(s: u64) -> Instant {
    Instant::from_millis(s * 1_000)
}

/// What the bucket holds at the end of `names`, as the harness would pass it.
fn end_objects(names: &NameHistory, bytes_of: &dyn Fn(&str, Hash32) -> Vec<u8>) -> Vec<StoredObject> {
    names
        .names()
        .filter_map(|(key, events)| {
            let last = events.last().filter(|e| e.change != NameChange::Deleted)?;
            Some(StoredObject {
                key: key.to_owned(),
                bytes: Bytes::from(bytes_of(key, last.bytes_hash?)),
                created_at: last.at,
            })
        })
        .collect()
}

fn judge(names: NameHistory, objects: &[StoredObject]) -> super::CheckReport {
    let history = History { names: Some(names), ..History::default() };
    check(&history, objects, &Keys::new("w"), WORLD, CheckOptions::default())
}

/// Records `changes` (key, seconds, change, bytes) and judges the history against the
/// bucket it leaves, whose bytes are looked up from the changes themselves.
fn run(changes: &[(&str, u64, NameChange, &str)]) -> super::CheckReport {
    let mut names = NameHistory::default();
    for (key, s, change, body) in changes {
        let bytes = (*change != NameChange::Deleted).then_some(body.as_bytes());
        names.record(at(*s), key, *change, bytes);
    }
    let bodies: Vec<(String, Hash32, Vec<u8>)> = changes
        .iter()
        .map(|(k, _, _, b)| (k.to_string(), Hash32::of(b.as_bytes()), b.as_bytes().to_vec()))
        .collect();
    let objects = end_objects(&names, &|key, hash| {
        bodies.iter().find(|(k, h, _)| k == key && *h == hash).expect("recorded").2.clone()
    });
    judge(names, &objects)
}

/// The rules broken, but for collection's (a slot deleted here without a checkpoint
/// covering it breaks those too; reach_tests judges them).
fn rules(r: &super::CheckReport) -> Vec<Rule> {
    r.violations.iter().map(Violation::rule).filter(|r| *r != Rule::Reachable).collect()
}

use NameChange::{Created, Deleted, Rewritten};

#[test]
fn a_slot_created_again_with_the_same_bytes_is_no_fork() {
    let r = run(&[
        ("w/log/0000000000000001", 1, Created, "a"),
        ("w/log/0000000000000001", 2, Deleted, ""),
        ("w/log/0000000000000001", 3, Created, "a"),
    ]);
    assert_eq!((r.forks, rules(&r)), (0, vec![]));
}

#[test]
fn a_slot_created_again_with_other_bytes_is_a_fork() {
    // The stale writer's create lands after collection freed the name.
    let r = run(&[
        ("w/log/0000000000000001", 1, Created, "a"),
        ("w/log/0000000000000001", 2, Deleted, ""),
        ("w/log/0000000000000001", 3, Created, "b"),
    ]);
    assert_eq!(r.forks, 1);
    assert_eq!(rules(&r), vec![Rule::SlotFork]);
    let fork = r.violations.iter().find(|v| v.rule() == Rule::SlotFork).expect("a fork");
    let Violation::SlotForked { at: when, first, other, .. } = fork else { unreachable!() };
    assert_eq!((*when, *first, *other), (at(3), Hash32::of(b"a"), Hash32::of(b"b")));
}

#[test]
fn a_slot_rewritten_to_other_bytes_is_a_fork() {
    let r =
        run(&[("w/log/0000000000000001", 1, Created, "a"), ("w/log/0000000000000001", 2, Rewritten, "b")]);
    assert_eq!((r.forks, rules(&r)), (1, vec![Rule::SlotFork]));
}

#[test]
fn other_names_may_hold_other_bytes_over_time() {
    let r = run(&[
        ("w/roots/x", 1, Created, "a"),
        ("w/roots/x", 2, Rewritten, "b"),
        ("w/roots/x", 3, Deleted, ""),
        ("w/roots/x", 4, Created, "c"),
    ]);
    assert_eq!((r.forks, rules(&r)), (0, vec![]));
}

#[test]
fn a_history_that_does_not_fit_its_name_is_a_violation() {
    let r =
        run(&[("w/roots/x", 1, Created, "a"), ("w/roots/x", 2, Created, "a"), ("w/roots/y", 3, Deleted, "")]);
    assert_eq!(rules(&r), vec![Rule::NameHistory, Rule::NameHistory]);
    assert!(matches!(&r.violations[0], Violation::NameHistoryIncoherent { change: Created, .. }));
    assert!(matches!(&r.violations[1], Violation::NameHistoryIncoherent { change: Deleted, .. }));
}

#[test]
fn the_history_must_account_for_the_bucket_at_the_end() {
    let mut names = NameHistory::default();
    names.record(at(1), "w/a", Created, Some(b"a"));
    names.record(at(1), "w/b", Created, Some(b"b"));
    let object = |key: &str, bytes: &'static [u8], s| StoredObject {
        key: key.into(),
        bytes: Bytes::from_static(bytes),
        created_at: at(s),
    };
    // w/b is missing, w/a holds other bytes, w/c was never recorded.
    let objects = [object("w/a", b"z", 1), object("w/c", b"c", 1)];
    let r = judge(names, &objects);
    let keys: Vec<&str> = r
        .violations
        .iter()
        .map(|v| match v {
            Violation::NameHistoryDisagrees { key } => key.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(keys, ["w/a", "w/c", "w/b"]);
}

#[test]
fn the_store_totals_count_objects_at_the_end_and_at_the_most() {
    let r = run(&[
        ("w/a", 1, Created, "aa"),
        ("w/b", 1, Created, "bbb"),
        ("w/c", 2, Created, "c"),
        ("w/a", 3, Deleted, ""),
        ("w/b", 4, Rewritten, "bbbbbb"),
        ("w/c", 5, Deleted, ""),
    ]);
    assert_eq!(rules(&r), vec![]);
    assert_eq!((r.store_objects_end, r.store_bytes_end, r.store_objects_max), (1, 6, Some(3)));
}

#[test]
fn held_at_answers_what_a_name_held_when() {
    let mut names = NameHistory::default();
    names.record(at(1), "k", Created, Some(b"one"));
    names.record(at(3), "k", Deleted, None);
    names.record(at(5), "k", Created, Some(b"two"));
    assert_eq!(names.held_at("k", at(0)), None);
    assert_eq!(names.held_at("k", at(1)).and_then(|e| e.bytes_hash), Some(Hash32::of(b"one")));
    assert_eq!(names.held_at("k", at(4)), None);
    assert_eq!(names.held_at("k", at(9)).and_then(|e| e.bytes_hash), Some(Hash32::of(b"two")));
    assert_eq!(
        (names.objects_now(), names.bytes_now(), names.objects_max(), names.bytes_max()),
        (1, 3, 1, 3)
    );
}
