//! One test per rule of replay at open (SPEC 7, "A listing is a hint"): a gap in a
//! listing is settled by reading the missing name, only a confirmed absence behind a
//! present successor is a break, a page in any order is applied in sequence order, and a
//! slot under another name fails the opening closed naming its key.

use crate::blob::BlobOp;
use crate::config::Config;
use crate::format::{DecodeError, NameRule};
use crate::reply::FailReason;
use crate::testkit::{keys, Harness, MemStore};
use crate::time::Instant;
use crate::world::ApplyError;

/// A store whose log holds `n` slots of one member each, written by one replica.
fn store_with_slots(n: u128) -> MemStore {
    let mut writer = Harness::opened(Config::default());
    for op in 1..=n {
        writer.publish(op, &format!("/d/{op}.md"), &format!("body {op}"));
        writer.run();
    }
    assert_eq!(writer.store.slot_keys().len(), n as usize);
    std::mem::take(&mut writer.store)
}

fn is_get(key: String) -> impl Fn(&BlobOp) -> bool {
    move |op| matches!(op, BlobOp::Get { key: k } if *k == key)
}

fn log_lists(h: &Harness) -> Vec<Option<String>> {
    h.log
        .iter()
        .filter_map(|op| match op {
            BlobOp::List { prefix, start_after, .. } if *prefix == keys().log_prefix() => {
                Some(start_after.clone())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_name_missing_from_a_listing_is_read_directly_and_applied() {
    let mut store = store_with_slots(4);
    store.hidden.insert(keys().slot(2), 1);
    let mut h = Harness::with_store(Config::default(), store, 2);
    h.run();
    assert!(h.failures.is_empty(), "{:?}", h.failures);
    assert_eq!(h.replica.world().expect("open").sequence(), 4);
    assert_eq!(h.log.iter().filter(|op| is_get(keys().slot(2))(op)).count(), 1, "read once, directly");
    assert_eq!(log_lists(&h), vec![None], "a read settled it: no re-list");
}

#[test]
fn a_name_missing_from_a_listing_and_from_a_read_is_listed_once_more_then_a_break() {
    let mut store = store_with_slots(4);
    store.objects.remove(&keys().slot(2));
    let mut h = Harness::with_store(Config::default(), store, 2);
    h.failure_expected = true;
    h.run();
    assert_eq!(h.failures, vec![FailReason::Apply(ApplyError::Gap { expected: 2, found: 3 })]);
    assert!(!h.replica.is_open());
    assert!(h.log.iter().any(is_get(keys().slot(2))), "the missing name was read");
    assert_eq!(log_lists(&h), vec![None, Some(keys().slot(1))], "and listed once more from it");
}

#[test]
fn a_name_the_relist_finds_is_read_and_applied() {
    // Absent at the direct read, created before the re-list: the world is whole.
    let mut store = store_with_slots(4);
    let second = store.objects.remove(&keys().slot(2)).expect("slot 2").0;
    let mut h = Harness::with_store(Config::default(), store, 2);
    h.deliver_until(|op| matches!(op, BlobOp::List { start_after: Some(a), .. } if *a == keys().slot(1)));
    let now = h.now;
    h.store.put(now, keys().slot(2), second);
    h.run();
    assert!(h.failures.is_empty(), "{:?}", h.failures);
    assert_eq!(h.replica.world().expect("open").sequence(), 4);
}

#[test]
fn pages_in_any_order_are_applied_in_sequence_order() {
    let mut store = store_with_slots(7);
    store.unsorted = true;
    let config = Config { list_page_max: 3, replay_gets_max: 2, ..Config::default() };
    let mut h = Harness::with_store(config, store, 2);
    h.run();
    assert!(h.failures.is_empty(), "{:?}", h.failures);
    assert_eq!(h.replica.world().expect("open").sequence(), 7);
    // Each page continues after the greatest key of the one before, whatever its order.
    let lists = log_lists(&h);
    assert_eq!(lists, vec![None, Some(keys().slot(3)), Some(keys().slot(6))]);
}

#[test]
fn a_slot_under_another_name_fails_the_opening_closed_naming_its_key() {
    // A copy of slot 1, an already held slot, placed at the tip's next name.
    let mut store = store_with_slots(3);
    let first = store.bytes(&keys().slot(1)).expect("slot 1");
    store.put(Instant::ZERO, keys().slot(4), first);
    let mut h = Harness::with_store(Config::default(), store, 2);
    h.failure_expected = true;
    h.run();
    let error = DecodeError::Misnamed(NameRule::SlotUnderAnotherName { first_sequence: 1 });
    assert_eq!(h.failures, vec![FailReason::Decode { key: keys().slot(4), error }]);
    assert!(!h.replica.is_open());
}

#[test]
fn a_slot_under_another_name_past_a_gap_fails_closed_naming_its_key() {
    // The copy sits past the tip with a name missing before it: replay never reaches it,
    // yet it is checked against its name as it arrives.
    let mut store = store_with_slots(3);
    let first = store.bytes(&keys().slot(1)).expect("slot 1");
    store.put(Instant::ZERO, keys().slot(9), first);
    let mut h = Harness::with_store(Config::default(), store, 2);
    h.failure_expected = true;
    h.deliver_until(|op| matches!(op, BlobOp::Get { key } if *key == keys().slot(9)));
    assert!(h.bring_forward(is_get(keys().slot(9))));
    h.run();
    let error = DecodeError::Misnamed(NameRule::SlotUnderAnotherName { first_sequence: 1 });
    assert_eq!(h.failures, vec![FailReason::Decode { key: keys().slot(9), error }]);
}
