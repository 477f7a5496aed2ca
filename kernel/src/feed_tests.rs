//! One test per rule of the change feed (SPEC 9), driven through `testkit`: every change
//! in order exactly once, within credit, from the ring while it holds the history, from
//! slots behind it (before the checkpoint a replica cold-started from too, each verified
//! along the chain), and a resync (never silence) past the reach or once the slots are gone.

use crate::blob::{BlobError, BlobOp};
use crate::config::Config;
use crate::effect::{Input, WatchEnd};
use crate::format::{DecodeError, NameRule};
use crate::ids::RequestId;
use crate::reply::FailReason;
use crate::testkit::{is_slot_get, is_slot_stat, keys, publish, Fate, Harness, MemStore, Peer};
use crate::time::Instant;
use crate::world::Expected;
use crate::world::Receipt;
use core::time::Duration;

// General helpers.

/// Commits `n` writes, each in a slot of its own, with op ids from `first_op`; returns
/// their receipts.
fn commit_each(h: &mut Harness, first_op: u128, n: u128) -> Vec<Receipt> {
    (first_op..first_op + n)
        .map(|op| {
            let r = h.publish(op, &format!("/d/{op}.md"), &format!("body {op}"));
            h.settle();
            h.receipt(r).clone()
        })
        .collect()
}

fn sequences(events: &[Receipt]) -> Vec<u64> {
    events.iter().map(|r| r.sequence).collect()
}

fn events(h: &Harness, id: RequestId) -> Vec<Receipt> {
    h.changes.get(&id).cloned().unwrap_or_default()
}

fn slot_gets(ops: &[BlobOp]) -> Vec<String> {
    ops.iter().filter(|op| is_slot_get(op)).map(|op| op.key().to_string()).collect()
}

fn tip(h: &Harness) -> u64 {
    h.replica.world().expect("open").sequence()
}

/// A store holding `n` single-write slots, written by another harness.
fn store_with_slots(n: u128) -> (MemStore, Vec<Receipt>) {
    let mut writer = Harness::opened(Config::default());
    let receipts = commit_each(&mut writer, 1, n);
    (std::mem::take(&mut writer.store), receipts)
}

// Order and credit.

#[test]
fn a_watch_delivers_every_change_in_order_exactly_once() {
    let mut h = Harness::opened(Config::default());
    let w = h.watch(0, 1_000);
    let mut receipts = commit_each(&mut h, 1, 3);
    // Some writes share a slot: batches behind a slot create in flight.
    let batched: Vec<RequestId> = (4..10).map(|op| h.publish(op, &format!("/e/{op}.md"), "e")).collect();
    h.settle();
    receipts.extend(batched.iter().map(|r| h.receipt(*r).clone()));
    assert!(h.slots_sent().iter().any(|s| s.members.len() > 1), "a slot with several members");
    receipts.sort_by_key(|r| r.sequence);
    let got = events(&h, w);
    assert_eq!(sequences(&got), (1..=9).collect::<Vec<u64>>(), "in sequence order, none twice");
    assert_eq!(got, receipts, "the events are the receipts");
    assert!(!h.ended.contains_key(&w));
}

#[test]
fn a_watch_delivers_no_more_than_its_credit() {
    let mut h = Harness::opened(Config::default());
    let w = h.watch(0, 2);
    let receipts = commit_each(&mut h, 1, 5);
    assert_eq!(events(&h, w), receipts[..2]);
    assert!(!h.ended.contains_key(&w), "out of credit is not an end");
}

#[test]
fn credit_resumes_delivery() {
    let mut h = Harness::opened(Config::default());
    let w = h.watch(0, 2);
    let receipts = commit_each(&mut h, 1, 5);
    assert_eq!(events(&h, w).len(), 2);
    h.input(Input::WatchCredit { id: w, events: 2 });
    assert_eq!(events(&h, w), receipts[..4], "two more");
    h.input(Input::WatchCredit { id: w, events: 10 });
    assert_eq!(events(&h, w), receipts, "the rest");
    let later = commit_each(&mut h, 6, 2);
    assert_eq!(events(&h, w)[5..], later[..], "unused credit carries to live events");
}

#[test]

fn credit_given_while_opening_counts_once_open() {
    let (store, receipts) = store_with_slots(3);
    let mut h = Harness::with_store(Config::default(), store, 2);
    let w = h.watch(0, 0);
    h.input(Input::WatchCredit { id: w, events: 3 });
    h.settle();
    assert!(h.replica.is_open());
    assert_eq!(events(&h, w), receipts, "the credit sent before the open is not lost");
}

// Where a resume reads from.

#[test]
fn a_resume_inside_the_ring_reads_no_slot() {
    let mut h = Harness::opened(Config::default());
    let first = h.watch(0, 1_000);
    let receipts = commit_each(&mut h, 1, 5);
    assert_eq!(events(&h, first), receipts);
    let mark = h.log.len();
    let second = h.watch(2, 1_000);
    h.settle();
    assert_eq!(events(&h, second), receipts[2..]);
    assert_eq!(slot_gets(&h.log[mark..]), Vec::<String>::new(), "the ring held it");
    assert_eq!(h.replica.feed_stats().resumes_ring, 1);
    assert_eq!(h.replica.feed_stats().slot_reads, 0);
}

#[test]
fn a_resume_behind_the_ring_reads_slots_in_pages() {
    let mut h = Harness::opened(Config { ring_events_max: 8, ..Config::default() });
    let receipts = commit_each(&mut h, 1, 30);
    let mark = h.log.len();
    let w = h.watch(0, 1_000);
    let first_page: Vec<String> = (1..=8).map(|s| keys().slot(s)).collect();
    assert_eq!(slot_gets(&h.pending(|_| true)), first_page, "one page: a ring's worth of events");
    assert!(events(&h, w).is_empty());
    h.settle();
    assert_eq!(events(&h, w), receipts, "every event, in order");
    let all_slots: Vec<String> = (1..=30).map(|s| keys().slot(s)).collect();
    assert_eq!(slot_gets(&h.log[mark..]), all_slots, "each slot read once");
    assert_eq!(h.replica.feed_stats().resumes_slots, 1);
    let live = commit_each(&mut h, 31, 3);
    assert_eq!(events(&h, w)[30..], live[..], "then live");
    assert_eq!(slot_gets(&h.log[mark..]).len(), 30, "live events come from the ring");
}

#[test]
fn a_resume_past_the_newest_slots_resyncs() {
    let mut h = Harness::opened(Config { recent_slots_max: 4, ring_events_max: 2, ..Config::default() });
    let receipts = commit_each(&mut h, 1, 10);
    let mark = h.log.len();
    let oldest_held = h.watch(6, 100);
    let too_old = h.watch(5, 100);
    let from_start = h.watch(0, 100);
    h.settle();
    assert_eq!(events(&h, oldest_held), receipts[6..], "slots 7 to 10 are the newest four");
    assert!(!h.ended.contains_key(&oldest_held));
    assert_eq!(h.ended.get(&too_old), Some(&WatchEnd::Resync { cursor: 5, tip: 10 }));
    assert_eq!(h.ended.get(&from_start), Some(&WatchEnd::Resync { cursor: 0, tip: 10 }));
    assert!(events(&h, too_old).is_empty() && events(&h, from_start).is_empty());
    assert_eq!(slot_gets(&h.log[mark..]).len(), 4, "no slot read for a resync");
    assert_eq!(h.replica.feed_stats().resyncs, 2);
    assert_eq!(h.marked(crate::marks::Mark::FeedResync), 2);
}

#[test]
fn a_slow_watcher_is_never_lapped_silently() {
    let mut h = Harness::opened(Config { ring_events_max: 8, ..Config::default() });
    let slow = h.watch(0, 0);
    let fast = h.watch(0, 1_000);
    let receipts = commit_each(&mut h, 1, 20);
    assert_eq!(events(&h, fast), receipts);
    assert!(events(&h, slow).is_empty());
    let mark = h.log.len();
    h.input(Input::WatchCredit { id: slow, events: 1_000 });
    h.settle();
    assert_eq!(events(&h, slow), receipts, "every event, in order, none twice");
    let lapped: Vec<String> = (1..=12).map(|s| keys().slot(s)).collect();
    assert_eq!(slot_gets(&h.log[mark..]), lapped, "what the ring dropped, from slots");
    assert!(!h.ended.contains_key(&slow));
    let live = commit_each(&mut h, 21, 2);
    assert_eq!(events(&h, slow)[20..], live[..]);
    assert_eq!(events(&h, fast)[20..], live[..]);
}

#[test]
fn a_slow_watcher_past_the_newest_slots_is_told_to_resync() {
    let mut h = Harness::opened(Config { ring_events_max: 2, recent_slots_max: 4, ..Config::default() });
    let slow = h.watch(0, 1);
    let receipts = commit_each(&mut h, 1, 10);
    assert_eq!(events(&h, slow), receipts[..1]);
    h.input(Input::WatchCredit { id: slow, events: 100 });
    h.settle();
    assert_eq!(h.ended.get(&slow), Some(&WatchEnd::Resync { cursor: 1, tip: 10 }));
    assert_eq!(events(&h, slow), receipts[..1], "nothing skipped silently");
    h.input(Input::WatchCredit { id: slow, events: 100 });
    let later = commit_each(&mut h, 11, 1);
    assert_eq!(later[0].sequence, 11);
    assert_eq!(events(&h, slow).len(), 1, "an ended watch hears nothing more");
}

// Subscriptions.

#[test]
fn an_unwatched_hub_holds_no_ring() {
    let mut h = Harness::opened(Config::default());
    let first = h.watch(0, 1_000);
    let receipts = commit_each(&mut h, 1, 5);
    assert_eq!(events(&h, first), receipts);
    h.input(Input::Unwatch { id: first });
    let mark = h.log.len();
    let second = h.watch(2, 1_000);
    h.settle();
    assert_eq!(events(&h, second), receipts[2..]);
    let read: Vec<String> = (3..=5).map(|s| keys().slot(s)).collect();
    assert_eq!(slot_gets(&h.log[mark..]), read, "the ring went with the last watcher");
    assert_eq!(h.replica.feed_stats().resumes_ring, 0);
    let more = commit_each(&mut h, 6, 1);
    assert_eq!(events(&h, first), receipts, "an unwatched subscriber hears nothing more");
    assert_eq!(events(&h, second)[3..], more[..]);
}

#[test]
fn too_many_watches_are_refused_with_busy() {
    let mut h = Harness::opened(Config { watches_max: 2, ..Config::default() });
    let a = h.watch(0, 10);
    let b = h.watch(0, 10);
    let c = h.watch(0, 10);
    assert_eq!(h.ended.get(&c), Some(&WatchEnd::Busy { watches: 2 }));
    let receipts = commit_each(&mut h, 1, 1);
    assert_eq!(events(&h, a), receipts);
    assert_eq!(events(&h, b), receipts);
    assert!(events(&h, c).is_empty(), "nothing was subscribed");
    h.input(Input::Unwatch { id: a });
    let d = h.watch(0, 10);
    h.settle();
    assert!(!h.ended.contains_key(&d), "room again");
    assert_eq!(events(&h, d), receipts);
}

#[test]
fn a_watch_asked_for_while_opening_starts_once_open() {
    let (store, receipts) = store_with_slots(3);
    let mut h = Harness::with_store(Config::default(), store, 2);
    assert!(!h.replica.is_open());
    let w = h.watch(1, 100);
    assert!(events(&h, w).is_empty() && !h.ended.contains_key(&w));
    h.settle();
    assert!(h.replica.is_open());
    assert_eq!(events(&h, w), receipts[1..], "the backlog after the cursor");
    let live = commit_each(&mut h, 10, 2);
    assert_eq!(events(&h, w)[2..], live[..], "then live");
    assert_eq!(tip(&h), 5);
}

// Before the checkpoint a replica cold-started from.

/// A store whose newest checkpoint is `checkpoints/11` (one every five slots) over slots 1
/// to 12, one write each; their receipts.
fn store_with_checkpoint_at_11() -> (MemStore, Vec<Receipt>) {
    let config = Config { checkpoint_slots: 5, checkpoint_jitter: Duration::ZERO, ..Config::default() };
    let mut writer = Harness::opened(config);
    let receipts = commit_each(&mut writer, 1, 12);
    assert!(writer.store.bytes(&keys().checkpoint(11)).is_some(), "a checkpoint at 11");
    (std::mem::take(&mut writer.store), receipts)
}

/// A replica opened from the newest checkpoint in `store`.
fn cold_start(config: Config, store: MemStore) -> Harness {
    let mut h = Harness::with_store(config, store, 2);
    h.run();
    assert!(h.replica.is_open());
    assert_eq!(slot_gets(&h.log), vec![keys().slot(11), keys().slot(12)], "opened from checkpoint 11");
    h
}

fn log_lists(ops: &[BlobOp]) -> usize {
    ops.iter()
        .filter(|op| matches!(op, BlobOp::List { prefix, .. } if *prefix == keys().log_prefix()))
        .count()
}

#[test]
fn a_cursor_before_the_cold_start_checkpoint_reads_the_earlier_slots_from_the_bucket() {
    let (store, receipts) = store_with_checkpoint_at_11();
    let mut h = cold_start(Config::default(), store);
    let mark = h.log.len();
    let w = h.watch(7, 100);
    h.settle();
    assert_eq!(events(&h, w), receipts[7..], "8 to 12, in order, none twice");
    assert!(!h.ended.contains_key(&w), "no resync: the slots are in the bucket and in reach");
    let gets = slot_gets(&h.log[mark..]);
    let before: Vec<String> = [10, 9, 8].iter().map(|s| keys().slot(*s)).collect();
    assert_eq!(gets[..3], before[..], "read newest first, each verified against the one after it");
    assert_eq!(gets.len(), 5, "then the indexed 11 and 12; the verified ones were kept at hand");
    assert_eq!(log_lists(&h.log[mark..]), 1, "one listing names them");
    assert_eq!(h.replica.feed_stats().slots_verified_before_checkpoint, 3);
    assert_eq!(h.replica.feed_stats().resyncs, 0);
    let live = commit_each(&mut h, 20, 2);
    assert_eq!(events(&h, w)[5..], live[..], "then live");
}

#[test]
fn a_watch_asked_for_while_opening_from_a_checkpoint_reads_the_slots_before_it() {
    let (store, receipts) = store_with_checkpoint_at_11();
    let mut h = Harness::with_store(Config::default(), store, 2);
    let w = h.watch(4, 100);
    h.run();
    assert!(h.replica.is_open());
    assert_eq!(events(&h, w), receipts[4..]);
    assert!(!h.ended.contains_key(&w));
}

#[test]
fn a_slot_before_the_checkpoint_that_does_not_chain_to_it_fails_closed() {
    let (mut store, _) = store_with_checkpoint_at_11();
    // Another history of the same world: its slot 9 decodes under the name, but it is not
    // the slot whose hash slot 10 names as its predecessor.
    let mut other = Harness::opened(Config::default());
    commit_each(&mut other, 100, 9);
    let key = keys().slot(9);
    let foreign = other.store.bytes(&key).expect("slot 9");
    assert_ne!(store.bytes(&key), Some(foreign.clone()));
    store.objects.remove(&key);
    store.put(Instant::ZERO, key.clone(), foreign);
    let mut h = cold_start(Config::default(), store);
    h.failure_expected = true;
    let w = h.watch(7, 100);
    h.settle();
    let refused = FailReason::Decode { key, error: DecodeError::Misnamed(NameRule::SlotNotInTheChain) };
    assert_eq!(h.failures, vec![refused.clone()]);
    assert_eq!(h.ended.get(&w), Some(&WatchEnd::Failed(refused)));
    assert!(events(&h, w).is_empty(), "nothing served from a chain that does not hold");
    assert_eq!(h.replica.feed_stats().slots_verified_before_checkpoint, 1, "slot 10 only");
}

#[test]
fn a_cursor_whose_slots_are_gone_from_the_bucket_still_resyncs() {
    let (mut store, receipts) = store_with_checkpoint_at_11();
    // Collected: slots 1 to 8.
    for s in 1..=8 {
        store.objects.remove(&keys().slot(s)).expect("present");
    }
    let mut h = cold_start(Config::default(), store);
    let gone = h.watch(6, 100);
    let held = h.watch(8, 100);
    h.settle();
    assert_eq!(h.ended.get(&gone), Some(&WatchEnd::Resync { cursor: 6, tip: 12 }));
    assert!(events(&h, gone).is_empty());
    assert_eq!(events(&h, held), receipts[8..], "9 and 10 are still there, verified");
    assert!(!h.ended.contains_key(&held));
}

#[test]
fn a_slot_collected_between_the_listing_and_its_read_resyncs_the_cursors_it_held() {
    let (store, receipts) = store_with_checkpoint_at_11();
    let mut h = cold_start(Config::default(), store);
    let gone = h.watch(6, 100);
    let held = h.watch(8, 100);
    h.deliver_until(|op| is_slot_get(op) && op.key() == keys().slot(8));
    h.deliver_with(Fate::Fail(BlobError::NotFound));
    h.settle();
    assert_eq!(h.ended.get(&gone), Some(&WatchEnd::Resync { cursor: 6, tip: 12 }));
    assert_eq!(events(&h, held), receipts[8..]);
    assert!(!h.ended.contains_key(&held));
    assert_eq!(h.marked(crate::marks::Mark::FeedBeforeSlotCollected), 1);
}

#[test]
fn a_cursor_before_the_checkpoint_past_the_reach_resyncs() {
    let (store, receipts) = store_with_checkpoint_at_11();
    // Four slots of reach: the index holds 11 and 12, so 9 and 10 are the last in reach.
    let mut h = cold_start(Config { recent_slots_max: 4, ..Config::default() }, store);
    let past = h.watch(7, 100);
    let last_in_reach = h.watch(8, 100);
    h.settle();
    assert_eq!(h.ended.get(&past), Some(&WatchEnd::Resync { cursor: 7, tip: 12 }));
    assert_eq!(events(&h, last_in_reach), receipts[8..]);
    assert!(!slot_gets(&h.log).contains(&keys().slot(8)), "nothing past the reach is read");
    // Two more slots fill the index: the reach no longer goes before the checkpoint.
    commit_each(&mut h, 20, 2);
    let late = h.watch(9, 100);
    h.settle();
    assert_eq!(h.ended.get(&late), Some(&WatchEnd::Resync { cursor: 9, tip: 14 }));
}

#[test]
fn a_slot_before_the_checkpoint_its_listing_skipped_is_read_directly_and_served() {
    let (mut store, receipts) = store_with_checkpoint_at_11();
    // The listing before the checkpoint leaves slot 9 out (a listing is not a snapshot).
    store.hidden.insert(keys().slot(9), 1);
    let mut h = cold_start(Config::default(), store);
    let mark = h.log.len();
    let w = h.watch(7, 100);
    h.settle();
    assert_eq!(events(&h, w), receipts[7..], "8 to 12, in order, none twice");
    assert!(!h.ended.contains_key(&w), "no resync: the skipped name was read directly");
    assert!(slot_gets(&h.log[mark..]).contains(&keys().slot(9)));
    assert_eq!(log_lists(&h.log[mark..]), 1, "one listing, then a direct read");
    assert_eq!(h.replica.feed_stats().slots_verified_before_checkpoint, 3);
}

// The backstop poll (record: 5 s, only while a watcher waits), the slot cache's idle
// time, and bounded batches.

/// Moves the clock on `step` at a time, `n` times, firing whatever is due and delivering
/// every call; returns the tip stats sent meanwhile.
fn idle_for(h: &mut Harness, step: Duration, n: usize) -> usize {
    let mark = h.log.len();
    for _ in 0..n {
        h.advance(step);
        h.replica.handle_timeout(h.now);
        h.drain();
        h.settle();
    }
    h.log[mark..].iter().filter(|op| is_slot_stat(op)).count()
}

#[test]
fn the_poll_runs_only_while_a_watcher_waits() {
    let mut h = Harness::opened(Config::default());
    assert_eq!(idle_for(&mut h, Duration::from_secs(5), 12), 0, "nobody watches: no poll");
    assert_eq!(h.replica.poll_timeout(), None, "and no wake-up for one");
    let mark = h.log.len();
    let w = h.watch(0, 100);
    h.settle();
    let at_once = h.log[mark..].iter().filter(|op| is_slot_stat(op)).count();
    assert_eq!(at_once, 1, "a minute without learning the tip: the first watch polls at once");
    assert_eq!(idle_for(&mut h, Duration::from_secs(5), 12), 12, "then one probe per 5 s");
    assert_eq!(h.replica.feed_stats().polls, 13);
    h.input(Input::Unwatch { id: w });
    assert_eq!(idle_for(&mut h, Duration::from_secs(5), 12), 0, "unwatched: the poll stops");
    assert_eq!(h.replica.feed_stats().polls, 13);
}

#[test]
fn the_poll_waits_its_interval_after_the_tip_was_last_learned_and_reads_on_to_the_tip() {
    let mut h = Harness::opened(Config::default());
    let w = h.watch(0, 100);
    h.advance_ms(700);
    // An exact read confirms the tip now: the poll is due 5 s after it, not before.
    let learned = h.now;
    let r = h.read(crate::effect::Read::Receipt { op_id: crate::ids::OperationId::from(1), since: None });
    h.settle();
    h.read_ok(r);
    assert_eq!(h.replica.poll_timeout(), Some(learned + Duration::from_secs(5)));
    // A peer commits two slots and sends no hint.
    let mut peer = Peer::following(&h);
    peer.commit(&mut h, &[(50, publish("/p.md", "p", Expected::Any))]);
    peer.commit(&mut h, &[(51, publish("/q.md", "q", Expected::Any))]);
    h.now = learned + Duration::from_millis(4_999);
    h.replica.handle_timeout(h.now);
    h.drain();
    assert!(h.pending(is_slot_stat).is_empty(), "not before the interval");
    h.fire_timer();
    assert_eq!(h.now, learned + Duration::from_secs(5));
    assert_eq!(h.pending(is_slot_stat).len(), 1, "the read path's probe, once");
    h.settle();
    assert_eq!(sequences(&events(&h, w)), vec![1, 2], "one poll reads on to the tip");
    assert_eq!(h.replica.feed_stats().polls, 1);
    // Absent at the next name (the stat sent 1 ms before its answer): the next poll is one
    // interval after that probe.
    assert_eq!(h.replica.poll_timeout(), Some(h.now + Duration::from_millis(4_999)));
}

#[test]
fn a_zero_poll_interval_turns_the_poll_off() {
    let mut h = Harness::opened(Config { watch_poll: Duration::ZERO, ..Config::default() });
    h.watch(0, 100);
    h.settle();
    assert_eq!(idle_for(&mut h, Duration::from_secs(5), 6), 0);
    assert_eq!(h.replica.poll_timeout(), None);
}

#[test]
fn the_slot_cache_empties_after_its_idle_time_without_a_backlog_read() {
    let (store, receipts) = store_with_slots(10);
    let idle = Duration::from_secs(30 * 60);
    let config = Config { ring_events_max: 2, watch_poll: Duration::ZERO, ..Config::default() };
    let mut h = Harness::with_store(config, store, 2);
    h.settle();
    let w = h.watch(0, 1_000);
    h.settle();
    assert_eq!(events(&h, w), receipts, "caught up from slots");
    assert!(h.replica.feed_slots_cached() > 0, "the slots read are cached");
    assert_eq!(h.replica.poll_timeout(), Some(h.now + idle), "a wake-up for the idle end");
    h.advance(idle - Duration::from_secs(1));
    h.replica.handle_timeout(h.now);
    h.drain();
    assert!(h.replica.feed_slots_cached() > 0, "not before the idle time");
    h.fire_timer();
    assert_eq!(h.replica.feed_slots_cached(), 0, "emptied");
    assert_eq!(h.replica.feed_stats().slot_cache_idled, 1);
    assert_eq!(h.replica.poll_timeout(), None, "nothing cached, no wake-up");
    // A later catch-up reads the slots again.
    let mark = h.log.len();
    let again = h.watch(0, 1_000);
    h.settle();
    assert_eq!(events(&h, again), receipts);
    assert!(!slot_gets(&h.log[mark..]).is_empty(), "read from the bucket again");
}

#[test]
fn catch_up_goes_in_batches_of_at_most_64_kib() {
    let mut h = Harness::opened(Config::default());
    let w = h.watch(0, 0);
    let dir = "x".repeat(200);
    let ids: Vec<RequestId> = (1..=600).map(|op| h.publish(op, &format!("/{dir}/{op}.md"), "b")).collect();
    h.settle();
    let receipts: Vec<Receipt> = ids.iter().map(|id| h.receipt(*id).clone()).collect();
    let total: usize = receipts.iter().map(crate::feed::event_bytes).sum();
    assert!(total > 2 * crate::feed::CHANGES_BYTES_MAX, "more than two batches' worth");
    h.input(Input::WatchCredit { id: w, events: 10_000 });
    assert_eq!(sequences(&events(&h, w)), (1..=600).collect::<Vec<u64>>(), "all, in order");
    assert!(h.change_batch_bytes.len() >= 3, "split: {:?}", h.change_batch_bytes);
    assert!(h.change_batch_bytes.iter().all(|b| *b <= crate::feed::CHANGES_BYTES_MAX));
}
