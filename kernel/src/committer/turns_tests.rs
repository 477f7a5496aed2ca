//! One test per rule of turns (docs/TURNS.md, "The protocol"), in the record's order:
//! a loser's hint, a winner's hold and its end, the bounds on holds, turns off, a loser's
//! catch-up, blind turns without hints, and the counters a report reads. Driven through `testkit`; a peer is
//! simulated by planting its slots straight into the store (`testkit::Peer`) and passing
//! its hints in as `Input::Follow`, as an embedder would.

use crate::blob::BlobOp;
use crate::config::Config;
use crate::effect::Input;
use crate::format::Slot;
use crate::hash::Hash32;
use crate::ids::{OperationId, RequestId};
use crate::marks::Mark;
use crate::reply::FailReason;
use crate::testkit::{
    blob_bodies, is_body_create, is_slot_create, is_slot_stat, keys, publish, Harness, Peer,
};
use crate::world::ApplyError;
use crate::world::Expected;
use bytes::Bytes;
use core::time::Duration;

// Helpers.

/// Turns on, with the record's `hold` and `turn_slots_max`, rotation off so that each
/// rule before it is seen alone. Tests fire timers on purpose, so hedging is off: the
/// timer they mean is the one that fires.
fn turns_on() -> Config {
    Config { hedge_after: Duration::ZERO, rotation_window_slots: 0, ..Config::default() }
}

/// Turns as the default has them: rotation on too.
fn rotation_on() -> Config {
    Config { hedge_after: Duration::ZERO, ..Config::default() }
}

fn turns_off() -> Config {
    Config { turns: false, ..turns_on() }
}

fn hold(config: &Config) -> Duration {
    config.hold
}

/// Keys of the slot creates waiting to be delivered.
fn pending_slot_creates(h: &Harness) -> Vec<String> {
    h.pending(is_slot_create).iter().map(|op| op.key().to_string()).collect()
}

/// Keys of every slot create this store ever sent, in order.
fn slot_creates_sent(h: &Harness) -> Vec<String> {
    h.log.iter().filter(|op| is_slot_create(op)).map(|op| op.key().to_string()).collect()
}

/// The slot in the one pending create at `sequence`, with its bytes.
fn pending_slot(h: &Harness, sequence: u64) -> (Slot, Bytes) {
    let key = keys().slot(sequence);
    let creates = h.pending(|op| is_slot_create(op) && op.key() == key);
    match creates.as_slice() {
        [BlobOp::Create { bytes, .. }] => (Slot::decode(bytes).expect("our slot decodes"), bytes.clone()),
        other => panic!("expected one create at {key}, got {other:?}"),
    }
}

fn member_ops(slot: &Slot) -> Vec<OperationId> {
    slot.members.iter().map(|m| m.op_id()).collect()
}

fn lists_in(ops: &[BlobOp]) -> Vec<BlobOp> {
    ops.iter().filter(|op| matches!(op, BlobOp::List { .. })).cloned().collect()
}

/// The catch-up listing past the slot at `first` (the loser's newest).
fn list_after(first: u64) -> BlobOp {
    BlobOp::List { prefix: keys().log_prefix(), start_after: Some(keys().slot(first)), limit: 64 }
}

fn is_get_of(sequence: u64) -> impl Fn(&BlobOp) -> bool {
    let key = keys().slot(sequence);
    move |op| matches!(op, BlobOp::Get { key: k } if *k == key)
}

/// Publishes one of our writes and delivers every call up to its slot create, which is
/// left pending.
fn own_write_at_its_create(h: &mut Harness, op: u128) -> RequestId {
    let r = h.publish(op, &format!("/own/{op}.md"), &format!("own {op}"));
    h.deliver_all_but(is_slot_create);
    r
}

/// Publishes one of our writes and delivers it through its commit; fires no timer.
fn commit_own(h: &mut Harness, op: u128) -> u64 {
    let r = h.publish(op, &format!("/own/{op}.md"), &format!("own {op}"));
    h.settle();
    h.receipt(r).sequence
}

/// The peer's next slot, of one write per op, planted in the store; returns its bytes.
fn peer_commits(peer: &mut Peer, h: &mut Harness, ops: &[u128]) -> Bytes {
    let writes: Vec<_> = ops
        .iter()
        .map(|op| (*op, publish(&format!("/peer/{op}.md"), &format!("peer {op}"), Expected::Any)))
        .collect();
    peer.commit(h, &writes)
}

fn follow(h: &mut Harness, sequence: u64) {
    h.input(Input::Follow { sequence });
}

/// A peer lost slot 1 to this store while it was creating it: the hint arrives during the
/// create, a second write is staged behind it, and the create then wins. Returns the
/// harness just after the win, and the second write.
fn won_slot_1_a_peer_lost(config: Config) -> (Harness, RequestId) {
    let mut h = Harness::opened(config);
    let first = own_write_at_its_create(&mut h, 1);
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(1)]);
    follow(&mut h, 1);
    let second = own_write_at_its_create(&mut h, 2);
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(1)], "the second write waits behind slot 1");
    assert!(h.bring_forward(is_slot_create));
    h.deliver();
    assert_eq!(h.receipt(first).sequence, 1, "slot 1 won");
    (h, second)
}

// A loser says so (TURNS.md 1).

#[test]
fn a_store_that_loses_a_slot_reports_the_winners_last_sequence() {
    let mut h = Harness::opened(turns_on());
    let r = own_write_at_its_create(&mut h, 1);
    let mut peer = Peer::following(&h);
    peer_commits(&mut peer, &mut h, &[101, 102]);
    h.deliver();
    assert_eq!(h.pending(|_| true), vec![BlobOp::Get { key: keys().slot(1) }], "taken: read the winner");
    assert!(h.committed.is_empty(), "nothing is reported before the winner is known");
    h.deliver();
    assert_eq!(h.committed, vec![2], "the winner's slot holds 1 and 2: its last is 2");
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(3)]);
    h.settle();
    assert_eq!(h.receipt(r).sequence, 3);
    assert_eq!(h.committed, vec![2, 3], "then our own commit, as for any win");
}

#[test]
fn a_store_that_loses_to_a_slot_it_already_installed_reports_the_winners_last_sequence() {
    let mut h = Harness::opened(blob_bodies(turns_on()));
    let r = h.publish(1, "/own/1.md", "own 1");
    let mut peer = Peer::following(&h);
    peer_commits(&mut peer, &mut h, &[101, 102]);
    peer_commits(&mut peer, &mut h, &[103]);
    // The peer's hint makes the probe install its slots 1..2 and 3 while our body is
    // stored; our batch, built on sequence 0, still creates at 1.
    follow(&mut h, 3);
    h.deliver_all_but(|op| matches!(op, BlobOp::Create { .. }));
    assert_eq!(h.replica.world().expect("open").sequence(), 3);
    h.deliver_until(is_slot_create);
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(1)]);
    h.deliver();
    assert_eq!(h.committed, vec![2], "the winner's last sequence (2), not the tip (3)");
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(4)], "installed already: no read, rebuilt at once");
    h.settle();
    assert_eq!(h.receipt(r).sequence, 4);
    assert_eq!(h.replica.stats().slots_lost, 1);
}

#[test]
fn a_store_that_loses_to_a_slot_older_than_its_index_reports_the_winners_last_sequence() {
    let mut h = Harness::opened(blob_bodies(Config { recent_slots_max: 1, ..turns_on() }));
    let r = h.publish(1, "/own/1.md", "own 1");
    let mut peer = Peer::following(&h);
    peer_commits(&mut peer, &mut h, &[101, 102]);
    peer_commits(&mut peer, &mut h, &[103]);
    // The probe installs 1..2 and then 3, which alone stays indexed.
    follow(&mut h, 3);
    h.deliver_all_but(|op| matches!(op, BlobOp::Create { .. }));
    assert_eq!(h.replica.world().expect("open").sequence(), 3);
    h.deliver_until(is_slot_create);
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(1)]);
    h.deliver(); // taken; the winner is older than the index, so it is read
    assert!(h.committed.is_empty(), "nothing reported before the winner is known");
    assert!(h.find(|op| matches!(op, BlobOp::Get { key } if *key == keys().slot(1))).is_some());
    h.deliver();
    assert_eq!(h.committed, vec![2], "the winner's slot holds 1 and 2: its last is 2");
    h.settle();
    assert_eq!(h.receipt(r).sequence, 4);
}

// A winner learns it is owed a turn and holds after its next win (TURNS.md 2, 3).

#[test]
fn a_hint_inside_the_slot_being_created_holds_the_next_create_after_that_win() {
    let config = turns_on();
    let (mut h, second) = won_slot_1_a_peer_lost(config.clone());
    let won_at = h.now;
    assert_eq!(h.replica.stats().holds, 1);
    h.settle();
    assert!(h.calls.is_empty(), "the staged slot 2 is held: {:?}", h.calls);
    assert_eq!(slot_creates_sent(&h), vec![keys().slot(1)]);
    assert!(h.reply(second).is_none());
    assert_eq!(h.replica.poll_timeout(), Some(won_at + hold(&config)), "the hold's end is the next wake-up");
    assert_eq!((h.marked(Mark::TurnOwedWhileCreating), h.marked(Mark::HoldBegun)), (1, 1));
}

#[test]
fn a_hint_inside_an_own_recent_slot_holds_the_create_after_the_next_win() {
    let mut h = Harness::opened(turns_on());
    assert_eq!(commit_own(&mut h, 1), 1);
    follow(&mut h, 1);
    assert!(h.calls.is_empty(), "a hint the store holds costs no call");
    let second = own_write_at_its_create(&mut h, 2);
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(2)], "no hold before the next win");
    assert_eq!(h.replica.stats().holds, 0);
    let third = own_write_at_its_create(&mut h, 3);
    h.deliver();
    assert_eq!(h.receipt(second).sequence, 2, "the next win");
    assert_eq!(h.replica.stats().holds, 1);
    h.settle();
    assert!(h.calls.is_empty(), "slot 3 is held after the win");
    assert!(h.reply(third).is_none());
    assert_eq!(slot_creates_sent(&h), vec![keys().slot(1), keys().slot(2)]);
}

#[test]
fn a_hint_at_the_last_sequence_of_a_multi_member_slot_being_created_owes_a_turn() {
    let mut h = Harness::opened(Config { batches_ahead_max: 0, ..turns_on() });
    let first = own_write_at_its_create(&mut h, 1);
    h.publish(2, "/own/2.md", "own 2");
    h.publish(3, "/own/3.md", "own 3");
    h.deliver();
    assert_eq!(h.receipt(first).sequence, 1);
    h.deliver_all_but(is_slot_create);
    let (slot, _) = pending_slot(&h, 2);
    assert_eq!(slot.last_sequence(), 3, "slot 2 holds 2 and 3");
    // A peer lost slot 2 to it: the loser reports the winner's last sequence.
    follow(&mut h, 3);
    let fourth = h.publish(4, "/own/4.md", "own 4");
    h.deliver_all_but(is_slot_create);
    assert!(h.bring_forward(is_slot_create));
    h.deliver();
    assert_eq!(h.committed.last(), Some(&3), "slot 2 won");
    h.settle();
    assert!(h.reply(fourth).is_none(), "held after the win");
    assert!(h.pending(is_slot_create).is_empty());
    assert_eq!(h.replica.stats().holds, 1);
}

#[test]
fn a_hint_only_inside_the_newest_turn_slots_max_own_slots_owes_a_turn() {
    let config = Config { turn_slots_max: 2, ..turns_on() };
    let mut h = Harness::opened(config);
    for op in 1..=3 {
        assert_eq!(commit_own(&mut h, op), op as u64);
    }
    // Slot 1 is the third newest own slot: outside the two newest.
    follow(&mut h, 1);
    assert_eq!(commit_own(&mut h, 4), 4, "the next win");
    assert_eq!(commit_own(&mut h, 5), 5, "is not followed by a hold");
    assert_eq!(h.replica.stats().holds, 0);
    // Slot 4 is the second newest: inside.
    follow(&mut h, 4);
    assert_eq!(commit_own(&mut h, 6), 6, "the next win");
    let held = h.publish(7, "/own/7.md", "own 7");
    h.settle();
    assert!(h.reply(held).is_none(), "held after the win");
    assert!(h.pending(is_slot_create).is_empty());
    assert_eq!(h.replica.stats().holds, 1);
}

#[test]
fn a_peers_slot_installed_during_the_hold_rebuilds_the_held_batch_once_on_it() {
    let (mut h, second) = won_slot_1_a_peer_lost(turns_on());
    h.settle();
    assert!(h.calls.is_empty(), "held");
    // The peer's retry wins slot 2; its hint brings it in through the probe.
    let mut peer = Peer::following(&h);
    let theirs = peer_commits(&mut peer, &mut h, &[100]);
    h.advance_ms(40);
    follow(&mut h, 2);
    h.deliver_all_but(is_slot_create);
    assert_eq!(h.replica.world().expect("open").sequence(), 2, "the peer's slot is installed");
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(3)], "the next create is after the peer's slot");
    let (slot, _) = pending_slot(&h, 3);
    assert_eq!(slot.prev_hash, Hash32::of(&theirs), "rebuilt on the peer's slot");
    assert_eq!(member_ops(&slot), vec![OperationId::from(2)]);
    h.settle();
    assert_eq!(h.receipt(second).sequence, 3);
    assert_eq!(slot_creates_sent(&h), vec![keys().slot(1), keys().slot(3)], "no create at 2");
    let stats = h.replica.stats();
    assert_eq!(stats.slots_lost, 0, "no create lost");
    assert_eq!(stats.requeued, 1, "the held write was rebuilt once");
    assert_eq!((stats.holds, stats.holds_answered), (1, 1));
    assert_eq!((h.marked(Mark::HoldAnsweredByPeer), h.marked(Mark::HoldExpiredByClock)), (1, 0));
}

#[test]
fn a_hold_that_runs_out_creates_as_built() {
    let config = turns_on();
    let (mut h, second) = won_slot_1_a_peer_lost(config.clone());
    let won_at = h.now;
    h.settle();
    assert!(h.calls.is_empty(), "held");
    h.advance(config.hold - Duration::from_millis(1));
    h.replica.handle_timeout(h.now);
    h.drain();
    assert!(h.calls.is_empty(), "still held a millisecond before the hold ends");
    h.fire_timer();
    assert_eq!(h.now, won_at + hold(&config));
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(2)], "the hold ran out: create at once");
    // Without turns the same inputs create slot 2 at the win: the held bytes are those.
    let (unheld, _) = won_slot_1_a_peer_lost(turns_off());
    let (_, built) = pending_slot(&unheld, 2);
    let (_, created) = pending_slot(&h, 2);
    assert_eq!(created, built, "created as it had built");
    h.settle();
    assert_eq!(h.receipt(second).sequence, 2);
    let stats = h.replica.stats();
    assert_eq!(stats.requeued, 0, "nothing was rebuilt");
    assert_eq!((stats.holds, stats.holds_answered), (1, 0));
    assert_eq!(stats.hold_overrun_us_max, 0, "woken when it asked, the hold ended on time");
    assert_eq!((h.marked(Mark::HoldExpiredByClock), h.marked(Mark::HoldAnsweredByPeer)), (1, 0));
}

#[test]
fn a_hold_woken_late_ends_at_that_wake_up_and_counts_the_overrun() {
    let config = turns_on();
    let (mut h, _) = won_slot_1_a_peer_lost(config.clone());
    h.settle();
    assert!(h.calls.is_empty(), "held");
    h.advance(config.hold + Duration::from_millis(25));
    h.replica.handle_timeout(h.now);
    h.drain();
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(2)], "the late wake-up ends the hold");
    assert_eq!(h.replica.stats().hold_overrun_us_max, 25_000);
    assert_eq!(h.marked(Mark::HoldExpiredByClock), 1);
}

// Holds are bounded (TURNS.md 4).

#[test]
fn each_hint_holds_at_most_once() {
    let config = turns_on();
    let mut h = Harness::opened(config.clone());
    commit_own(&mut h, 1);
    // The same hint, passed on twice.
    follow(&mut h, 1);
    follow(&mut h, 1);
    own_write_at_its_create(&mut h, 2);
    let third = own_write_at_its_create(&mut h, 3);
    h.deliver();
    h.settle();
    assert!(h.reply(third).is_none(), "held once");
    h.fire_timer();
    h.settle();
    assert_eq!(h.receipt(third).sequence, 3);
    assert_eq!(h.replica.stats().holds, 1);
    // Slot 1 is still among the newest own slots; its hint is spent.
    let fourth = h.publish(4, "/own/4.md", "own 4");
    h.settle();
    assert_eq!(h.receipt(fourth).sequence, 4, "the win after a hold is not held again");
    assert_eq!(h.replica.stats().holds, 1);
    assert_eq!(h.replica.poll_timeout(), None, "nothing waits");
}

/// Hints no peer follows up (a peer gone, or hints forged on the network, docs/SECURITY.md):
/// a lone store told at every create that a peer lost to it holds after its 1st, 3rd,
/// 7th, 15th and 31st wins, no more: 1, 3, 7, ... wins pass after each owed hold that
/// ran out with no peer's slot.
#[test]
fn owed_holds_no_peer_answers_back_off_to_one_a_doubling_of_wins() {
    let config = turns_on();
    let mut h = Harness::opened(config.clone());
    let mut held_after = Vec::new();
    for op in 1..=40u128 {
        let r = own_write_at_its_create(&mut h, op);
        assert_eq!(pending_slot_creates(&h), vec![keys().slot(op as u64)]);
        follow(&mut h, op as u64);
        let holds = h.replica.stats().holds;
        h.settle();
        assert_eq!(h.receipt(r).sequence, op as u64);
        if h.replica.stats().holds > holds {
            held_after.push(op);
            h.fire_timer();
            h.settle();
        }
        assert_eq!(h.replica.poll_timeout(), None, "no hold outlives its clock");
    }
    assert_eq!(held_after, vec![1, 3, 7, 15, 31]);
    let stats = h.replica.stats();
    assert_eq!((stats.holds, stats.holds_answered), (5, 0));
    assert_eq!(h.marked(Mark::HoldExpiredByClock), 5);
}

/// A hold a peer's slot answers starts the back-off over: the next owed hint holds.
#[test]
fn an_owed_hold_a_peer_answers_ends_the_back_off() {
    let config = turns_on();
    let mut h = Harness::opened(config.clone());
    // Win 1 holds and runs out unanswered: win 2 lets its hint pass.
    for op in 1..=2u128 {
        own_write_at_its_create(&mut h, op);
        follow(&mut h, op as u64);
        h.settle();
        if h.replica.poll_timeout().is_some() {
            h.fire_timer();
            h.settle();
        }
    }
    assert_eq!(h.replica.stats().holds, 1, "the second hint was let pass");
    // Win 3 holds (one win passed), write 4 staged behind it; a peer's slot answers it.
    own_write_at_its_create(&mut h, 3);
    follow(&mut h, 3);
    let fourth = own_write_at_its_create(&mut h, 4);
    h.deliver();
    h.settle();
    assert!(h.calls.is_empty(), "held");
    assert_eq!(h.replica.stats().holds, 2);
    let mut peer = Peer::following(&h);
    peer_commits(&mut peer, &mut h, &[100]);
    h.advance_ms(40);
    follow(&mut h, 4);
    h.settle();
    assert_eq!(h.receipt(fourth).sequence, 5, "rebuilt on the peer's slot 4");
    assert_eq!(h.replica.stats().holds_answered, 1);
    // The next hint inside the store's create holds again at once.
    own_write_at_its_create(&mut h, 6);
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(6)]);
    follow(&mut h, 6);
    h.settle();
    assert_eq!(h.replica.stats().holds, 3, "the back-off started over");
}

#[test]
fn a_hint_more_than_hold_ms_before_the_win_holds_nothing() {
    let config = turns_on();
    let mut h = Harness::opened(config.clone());
    commit_own(&mut h, 1);
    follow(&mut h, 1);
    let hinted_at = h.now;
    h.advance(config.hold);
    own_write_at_its_create(&mut h, 2);
    let third = own_write_at_its_create(&mut h, 3);
    h.deliver();
    assert!(h.now > hinted_at + hold(&config), "the win is more than a hold after the hint");
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(3)], "created at once");
    h.settle();
    assert_eq!(h.receipt(third).sequence, 3);
    assert_eq!(h.replica.stats().holds, 0);
}

#[test]
fn a_hint_exactly_hold_ms_before_the_win_still_holds() {
    let config = turns_on();
    let mut h = Harness::opened(config.clone());
    commit_own(&mut h, 1);
    follow(&mut h, 1);
    let hinted_at = h.now;
    own_write_at_its_create(&mut h, 2);
    let third = own_write_at_its_create(&mut h, 3);
    // A delivery moves the clock 1 ms: the win lands exactly a hold after the hint.
    h.now = hinted_at + (hold(&config) - Duration::from_millis(1));
    h.deliver();
    assert_eq!(h.now, hinted_at + hold(&config));
    assert_eq!(h.replica.stats().holds, 1);
    h.settle();
    assert!(h.reply(third).is_none(), "held");
    assert!(h.pending(is_slot_create).is_empty());
}

#[test]
fn a_hint_answered_by_a_peers_slot_before_the_win_holds_nothing() {
    let mut h = Harness::opened(turns_on());
    commit_own(&mut h, 1);
    follow(&mut h, 1);
    let second = own_write_at_its_create(&mut h, 2);
    // The peer that lost slot 1 retried and won slot 2: our create at 2 loses to it.
    let mut peer = Peer::following(&h);
    peer_commits(&mut peer, &mut h, &[100]);
    h.deliver();
    h.deliver();
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(3)], "rebuilt after the peer's slot");
    let third = own_write_at_its_create(&mut h, 3);
    h.deliver();
    assert_eq!(h.receipt(second).sequence, 3, "the next win");
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(4)], "the hint was answered: no hold");
    h.settle();
    assert_eq!(h.receipt(third).sequence, 4);
    assert_eq!(h.replica.stats().holds, 0);
}

#[test]

fn a_hint_answered_by_a_peers_slot_installed_before_the_hint_arrived_holds_nothing() {
    let mut h = Harness::opened(turns_on());
    commit_own(&mut h, 1);
    let second = own_write_at_its_create(&mut h, 2);
    // The peer that lost slot 1 retried and won slot 2; our create at 2 loses to it.
    let mut peer = Peer::following(&h);
    peer_commits(&mut peer, &mut h, &[100]);
    h.deliver();
    h.deliver();
    assert_eq!(h.replica.world().expect("open").sequence(), 2, "the peer's slot 2 is installed");
    // Only now does the peer's hint for slot 1 arrive: its turn was already taken.
    follow(&mut h, 1);
    let third = own_write_at_its_create(&mut h, 3);
    assert!(h.bring_forward(|op| is_slot_create(op) && op.key() == keys().slot(3)));
    h.deliver();
    assert_eq!(h.receipt(second).sequence, 3, "the next win");
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(4)], "the hint was answered: no hold");
    h.settle();
    assert_eq!(h.receipt(third).sequence, 4);
    assert_eq!(h.replica.stats().holds, 0);
}

#[test]

fn a_hint_that_already_held_holds_nothing_when_passed_on_again() {
    let config = blob_bodies(turns_on());
    let (mut h, second) = won_slot_1_a_peer_lost(config.clone());
    let won_at = h.now;
    h.settle();
    assert_eq!(h.replica.stats().holds, 1, "the hint for slot 1 holds once");
    // The same hint again, during the hold it caused (the embedder passed it twice).
    h.advance_ms(100);
    follow(&mut h, 1);
    let third = h.publish(3, "/own/3.md", "own 3");
    h.deliver_all_but(is_slot_create);
    h.fire_timer();
    assert_eq!(h.now, won_at + hold(&config), "no peer came: the hold ran out");
    assert!(h.bring_forward(|op| is_slot_create(op) && op.key() == keys().slot(2)));
    h.deliver();
    assert_eq!(h.receipt(second).sequence, 2, "the next win");
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(3)], "the hint for slot 1 has held already");
    h.settle();
    assert_eq!(h.receipt(third).sequence, 3);
    assert_eq!(h.replica.stats().holds, 1);
}

#[test]
fn a_lone_store_never_waits() {
    let mut h = Harness::opened(rotation_on());
    let writes: Vec<RequestId> =
        (1..=40).map(|op| h.publish(op, &format!("/own/{op}.md"), &format!("own {op}"))).collect();
    h.settle();
    for r in &writes {
        assert!(matches!(h.reply(*r), Some(Ok(crate::reply::WriteOk::Committed(_)))), "{r:?} waited");
    }
    let stats = h.replica.stats();
    assert!(stats.slots_won > 1, "several slots, each created at the win before it");
    assert_eq!((stats.holds, stats.hold_ms_total), (0, 0));
    assert_eq!(h.replica.poll_timeout(), None, "no hold to wake for");
}

#[test]
fn a_hint_for_a_sequence_the_store_did_not_write_holds_nothing() {
    let mut h = Harness::opened(turns_on());
    let mut peer = Peer::following(&h);
    peer_commits(&mut peer, &mut h, &[101]);
    follow(&mut h, 1);
    h.settle();
    assert_eq!(h.replica.world().expect("open").sequence(), 1, "the peer's win, followed");
    assert_eq!(commit_own(&mut h, 1), 2);
    peer.world = h.replica.world().expect("open").clone();
    peer_commits(&mut peer, &mut h, &[102]);
    // The peer's hints for its own slots: one followed ahead, one the store already holds.
    follow(&mut h, 3);
    h.settle();
    assert_eq!(h.replica.world().expect("open").sequence(), 3);
    follow(&mut h, 1);
    follow(&mut h, 3);
    assert_eq!(commit_own(&mut h, 2), 4, "the next win");
    assert_eq!(commit_own(&mut h, 3), 5, "is not followed by a hold");
    assert_eq!(h.replica.stats().holds, 0);
}

// Rotation (docs/TURNS.md, "Rotation").

/// Commits one own write whose slot create takes `rtt_ms`, the round trip a rotation
/// wait is sized by.
fn commit_own_taking(h: &mut Harness, op: u128, rtt_ms: u64) -> u64 {
    let r = own_write_at_its_create(h, op);
    h.advance_ms(rtt_ms);
    h.settle();
    h.receipt(r).sequence
}

/// A peer won slot 1 (its hint followed), then this store won slot 2 in a 40 ms create.
fn a_peers_slot_then_ours(config: Config) -> (Harness, Peer) {
    let mut h = Harness::opened(config);
    let mut peer = Peer::following(&h);
    peer_commits(&mut peer, &mut h, &[101]);
    follow(&mut h, 1);
    h.settle();
    assert_eq!(commit_own_taking(&mut h, 1, 40), 2, "the newest slot was the peer's: no wait");
    assert_eq!(h.marked(Mark::RotationGaveWay), 0);
    peer.world = h.replica.world().expect("open").clone();
    (h, peer)
}

#[test]
fn a_store_that_wrote_the_newest_slot_gives_the_next_name_to_a_peer_writing_with_it() {
    let (mut h, mut peer) = a_peers_slot_then_ours(rotation_on());
    let r = own_write_at_its_create(&mut h, 2);
    assert_eq!(pending_slot_creates(&h), Vec::<String>::new(), "the peer's turn");
    assert_eq!(h.marked(Mark::RotationGaveWay), 1);
    let theirs = peer_commits(&mut peer, &mut h, &[102]);
    h.advance_ms(40);
    follow(&mut h, 3);
    h.deliver_all_but(is_slot_create);
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(4)], "created after the peer's slot");
    let (slot, _) = pending_slot(&h, 4);
    assert_eq!(slot.prev_hash, Hash32::of(&theirs));
    h.settle();
    assert_eq!(h.receipt(r).sequence, 4);
    let stats = h.replica.stats();
    assert_eq!((stats.rotation_waits, stats.holds_answered, stats.slots_lost), (1, 1, 0), "no create lost");
    assert_eq!(h.marked(Mark::RotationGaveWay), 1, "the newest slot is the peer's: no second wait");
}

#[test]
fn a_wait_for_a_peers_turn_lasts_three_create_round_trips_and_a_peer_that_lets_it_pass_is_not_waited_for_again(
) {
    let (mut h, mut peer) = a_peers_slot_then_ours(rotation_on());
    let r = own_write_at_its_create(&mut h, 2);
    let waited_at = h.now;
    assert_eq!(pending_slot_creates(&h), Vec::<String>::new(), "the peer's turn");
    h.fire_timer();
    // Three of the store's create round trips (a moving average of about 40 ms here),
    // well inside a hold.
    let waited = h.now.saturating_since(waited_at);
    assert!(waited >= Duration::from_millis(3 * 40) && waited < Duration::from_millis(3 * 45), "{waited:?}");
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(3)], "the turn passed: created as built");
    h.settle();
    assert_eq!(h.receipt(r).sequence, 3);
    for op in 3..=6 {
        assert_eq!(commit_own_taking(&mut h, op, 40), op as u64 + 1, "no wait for a peer that passed");
    }
    assert_eq!(h.marked(Mark::RotationGaveWay), 1);
    // A newer slot of the peer's makes it a writer again: the store gives way once more.
    peer.world = h.replica.world().expect("open").clone();
    peer_commits(&mut peer, &mut h, &[103]);
    follow(&mut h, 8);
    h.settle();
    assert_eq!(commit_own_taking(&mut h, 7, 40), 9);
    own_write_at_its_create(&mut h, 8);
    assert_eq!(pending_slot_creates(&h), Vec::<String>::new(), "the peer's turn again");
    assert_eq!(h.marked(Mark::RotationGaveWay), 2);
}

#[test]
fn a_peers_slot_no_hint_told_of_earns_no_rotation_wait() {
    let mut h = Harness::opened(rotation_on());
    let mut peer = Peer::following(&h);
    peer_commits(&mut peer, &mut h, &[101]);
    assert_eq!(commit_own_taking(&mut h, 1, 40), 2, "lost slot 1 unhinted, won slot 2");
    own_write_at_its_create(&mut h, 2);
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(3)], "blind turns serve unhinted peers");
    assert_eq!(h.marked(Mark::RotationGaveWay), 0);
}

#[test]
fn a_peers_slot_older_than_rotation_peer_ms_earns_no_rotation_wait() {
    let config = rotation_on();
    let (mut h, _) = a_peers_slot_then_ours(config.clone());
    h.advance(config.rotation_peer + Duration::from_millis(1));
    own_write_at_its_create(&mut h, 2);
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(3)], "the peer went quiet");
    assert_eq!(h.marked(Mark::RotationGaveWay), 0);
}

#[test]
fn rotation_off_never_waits() {
    let (mut h, _) = a_peers_slot_then_ours(Config { rotation_window_slots: 0, ..rotation_on() });
    own_write_at_its_create(&mut h, 2);
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(3)]);
    assert_eq!(h.replica.stats().rotation_waits, 0);
}

// Turns off (Config::turns).

#[test]
fn turns_off_never_holds() {
    let (mut h, second) = won_slot_1_a_peer_lost(turns_off());
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(2)], "created at the win despite the hint");
    h.settle();
    assert_eq!(h.receipt(second).sequence, 2);
    // A hint inside an own committed slot holds nothing either.
    follow(&mut h, 2);
    own_write_at_its_create(&mut h, 3);
    let fourth = own_write_at_its_create(&mut h, 4);
    h.deliver();
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(4)]);
    h.settle();
    assert_eq!(h.receipt(fourth).sequence, 4);
    assert_eq!(h.replica.stats().holds, 0);
    assert_eq!(h.replica.poll_timeout(), None);
}

// A loser catches up by listing (TURNS.md 6).

#[test]
fn a_loser_behind_the_hints_lists_past_its_tip_and_installs_every_slot_before_it_rebuilds() {
    let mut h = Harness::opened(turns_on());
    let r = own_write_at_its_create(&mut h, 1);
    let mut peer = Peer::following(&h);
    peer_commits(&mut peer, &mut h, &[101]);
    peer_commits(&mut peer, &mut h, &[102]);
    let third = peer_commits(&mut peer, &mut h, &[103]);
    follow(&mut h, 3);
    let opened_log = h.log.len();
    // The probe the hint started is left pending: the catch-up alone brings the slots in.
    assert!(h.bring_forward(is_slot_create));
    h.deliver();
    assert!(h.bring_forward(is_get_of(1)));
    h.deliver();
    assert_eq!(h.committed, vec![1]);
    assert_eq!(h.pending(|op| matches!(op, BlobOp::List { .. })), vec![list_after(1)]);
    assert!(h.pending(is_slot_create).is_empty(), "no rebuild before the catch-up");
    assert!(h.bring_forward(|op| matches!(op, BlobOp::List { .. })));
    h.deliver();
    assert!(h.find(is_get_of(2)).is_some() && h.find(is_get_of(3)).is_some(), "every listed slot is read");
    assert!(h.bring_forward(is_get_of(3)));
    h.deliver();
    assert!(h.pending(is_slot_create).is_empty(), "slot 2 is not installed yet");
    assert_eq!(h.replica.world().expect("open").sequence(), 1);
    assert!(h.bring_forward(is_get_of(2)));
    h.deliver();
    assert_eq!(h.replica.world().expect("open").sequence(), 3, "installed in order");
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(4)], "then rebuilt after the last");
    let (slot, _) = pending_slot(&h, 4);
    assert_eq!(slot.prev_hash, Hash32::of(&third));
    h.settle();
    assert_eq!(h.receipt(r).sequence, 4);
    assert_eq!(slot_creates_sent(&h), vec![keys().slot(1), keys().slot(4)], "no name lost one at a time");
    assert_eq!(h.replica.stats().slots_lost, 1);
    assert_eq!(lists_in(&h.log[opened_log..]), vec![list_after(1)], "one listing");
}

#[test]
fn a_catch_up_past_one_listing_lists_on_after_the_last_name() {
    let mut h = Harness::opened(turns_on());
    let r = own_write_at_its_create(&mut h, 1);
    let mut peer = Peer::following(&h);
    for op in 0..70 {
        peer_commits(&mut peer, &mut h, &[100 + op]);
    }
    follow(&mut h, 70);
    let opened_log = h.log.len();
    h.deliver_all_but(|op| is_slot_stat(op) || (is_slot_create(op) && op.key() != keys().slot(1)));
    assert_eq!(lists_in(&h.log[opened_log..]), vec![list_after(1), list_after(65)], "64 names a listing");
    assert_eq!(h.replica.world().expect("open").sequence(), 70);
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(71)]);
    h.settle();
    assert_eq!(h.receipt(r).sequence, 71);
    assert_eq!(slot_creates_sent(&h), vec![keys().slot(1), keys().slot(71)]);
    assert_eq!((h.marked(Mark::CatchUpListed), h.marked(Mark::CatchUpPaged)), (1, 1));
}

/// A loser whose slot 1 lost to a peer that has since committed through slot 4; the
/// hint is in, and every call but the probe's stats and later creates is delivered.
fn lost_to_a_peer_through_4(hide: impl FnOnce(&mut Harness)) -> (Harness, RequestId) {
    let mut h = Harness::opened(turns_on());
    let r = own_write_at_its_create(&mut h, 1);
    let mut peer = Peer::following(&h);
    for op in 101..=104 {
        peer_commits(&mut peer, &mut h, &[op]);
    }
    hide(&mut h);
    follow(&mut h, 4);
    h.deliver_all_but(|op| is_slot_stat(op) || (is_slot_create(op) && op.key() != keys().slot(1)));
    (h, r)
}

#[test]
fn a_name_a_catch_up_listing_skipped_is_read_directly_and_installed() {
    let (mut h, r) = lost_to_a_peer_through_4(|h| {
        h.store.hidden.insert(keys().slot(3), 1);
    });
    assert!(h.failures.is_empty(), "{:?}", h.failures);
    assert_eq!(h.replica.world().expect("open").sequence(), 4);
    assert_eq!(h.log.iter().filter(|op| is_get_of(3)(op)).count(), 1, "read once, directly");
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(5)]);
    h.settle();
    assert_eq!(h.receipt(r).sequence, 5);
    assert_eq!((h.marked(Mark::CatchUpGapRead), h.marked(Mark::CatchUpGapRelisted)), (1, 0));
}

#[test]
fn a_name_a_catch_up_listing_skipped_that_reads_absent_is_a_break() {
    let (h, _) = lost_to_a_peer_through_4(|h| {
        h.store.objects.remove(&keys().slot(3));
        h.failure_expected = true;
    });
    assert_eq!(h.failures, vec![FailReason::Apply(ApplyError::Gap { expected: 3, found: 4 })]);
    let relist = BlobOp::List { prefix: keys().log_prefix(), start_after: Some(keys().slot(2)), limit: 64 };
    assert!(h.log.contains(&relist), "listed once more from the missing name first");
    assert!(pending_slot_creates(&h).is_empty(), "nothing written past the break");
    assert_eq!((h.marked(Mark::CatchUpGapRead), h.marked(Mark::CatchUpGapRelisted)), (1, 1));
}

#[test]
fn a_loser_with_no_hint_past_the_lost_slot_rebuilds_at_once_without_listing() {
    for hint in [None, Some(1)] {
        let mut h = Harness::opened(turns_on());
        let r = own_write_at_its_create(&mut h, 1);
        let mut peer = Peer::following(&h);
        peer_commits(&mut peer, &mut h, &[101]);
        if let Some(sequence) = hint {
            follow(&mut h, sequence);
        }
        let opened_log = h.log.len();
        assert!(h.bring_forward(is_slot_create));
        h.deliver();
        assert!(h.bring_forward(is_get_of(1)));
        h.deliver();
        assert_eq!(pending_slot_creates(&h), vec![keys().slot(2)], "hint {hint:?}: rebuilt at once");
        h.settle();
        assert_eq!(h.receipt(r).sequence, 2);
        assert_eq!(lists_in(&h.log[opened_log..]), Vec::<BlobOp>::new(), "hint {hint:?}: no listing");
    }
}

// Without hints: blind turns (TURNS.md, "Without hints").

/// A store that has won slot 1 alone, then lost slot 2 to a peer whose hint never came
/// (hints are lost), and won slot 3: a peer wrote while it writes, unhinted. Its streak is
/// 1. Returns the harness and the peer (following the world through slot 3).
fn a_peer_wrote_unhinted_while_writing(config: Config) -> (Harness, Peer) {
    let mut h = Harness::opened(config);
    assert_eq!(commit_own(&mut h, 1), 1, "the first win: nothing seen of any peer yet");
    let mut peer = Peer::following(&h);
    peer_commits(&mut peer, &mut h, &[101]);
    assert_eq!(commit_own(&mut h, 2), 3, "slot 2 lost to the peer, rebuilt, slot 3 won");
    assert_eq!(h.replica.stats().slots_lost, 1);
    peer.world = h.replica.world().expect("open").clone();
    (h, peer)
}

/// Commits own writes from `op` on (operation ids apart from the peers', 101 to 104)
/// while none is held; returns how many committed before
/// a win began a hold (the write after it is left waiting), or None if all of `count`
/// committed.
fn commit_until_held(h: &mut Harness, op: u128, count: u128) -> Option<u128> {
    for i in 0..count {
        let holds = h.replica.stats().holds;
        let r = h.publish(op + i, &format!("/own/{}.md", op + i), "own");
        h.settle();
        if h.reply(r).is_none() {
            assert_eq!(h.replica.stats().holds, holds, "a hold began at the win before this write");
            return Some(i);
        }
        if h.replica.stats().holds > holds {
            return Some(i + 1);
        }
    }
    None
}

/// The longest run of slots one store made in a row in the store's log.
fn longest_run_of_one_store(h: &Harness) -> usize {
    let mut longest = 0;
    let mut run = 0;
    let mut last = None;
    for key in h.store.slot_keys() {
        let slot = Slot::decode(&h.store.bytes(&key).expect("a slot")).expect("decodes");
        run = if last == Some(slot.store_id) { run + 1 } else { 1 };
        last = Some(slot.store_id);
        longest = longest.max(run);
    }
    longest
}

#[test]
fn without_hints_a_store_holds_after_blind_streak_slots_of_its_own_since_a_peers_slot() {
    let config = turns_on();
    let (mut h, _) = a_peer_wrote_unhinted_while_writing(config.clone());
    // Slot 3 was the first of the streak; seven more make eight.
    assert_eq!(commit_until_held(&mut h, 10, 20), Some(7));
    let won_at = h.now;
    assert_eq!((h.replica.stats().blind_holds, h.marked(Mark::BlindHoldBegun)), (1, 1));
    let waiting = h.publish(500, "/own/500.md", "own 500");
    h.settle();
    assert!(h.reply(waiting).is_none(), "held");
    assert!(h.pending(is_slot_create).is_empty());
    // Every create round trip in this harness is 1 ms: the hold is four of them.
    let creates = Duration::from_millis(u64::from(config.blind_hold_creates));
    assert_eq!(h.replica.poll_timeout(), Some(won_at + creates), "not hold");
    h.fire_timer();
    h.settle();
    assert_eq!(h.receipt(waiting).sequence, 11, "no peer took the name: created as built");
}

#[test]
fn a_blind_hold_no_peer_takes_doubles_the_streak_before_the_next() {
    let (mut h, _) = a_peer_wrote_unhinted_while_writing(turns_on());
    assert_eq!(commit_until_held(&mut h, 10, 20), Some(7), "the streak reached 8");
    h.fire_timer();
    h.settle();
    assert_eq!(commit_until_held(&mut h, 1_000, 40), Some(8), "and then 16");
    h.fire_timer();
    h.settle();
    assert_eq!(commit_until_held(&mut h, 2_000, 40), Some(16), "and then 32");
    assert_eq!(h.replica.stats().blind_holds, 3);
}

#[test]
fn while_a_peers_slot_is_recent_a_store_holds_at_least_every_blind_gap_max() {
    let config = turns_on();
    let (mut h, _) = a_peer_wrote_unhinted_while_writing(config.clone());
    assert_eq!(commit_until_held(&mut h, 10, 20), Some(7));
    h.fire_timer();
    h.settle();
    // The next hold is due at a streak of 16, or once blind_gap_max has passed.
    h.advance(config.blind_gap_max);
    assert_eq!(commit_until_held(&mut h, 1_000, 20), Some(1), "the first win past the gap holds");
    assert_eq!(h.replica.stats().blind_holds, 2);
}

#[test]
fn without_hints_no_store_makes_more_than_blind_streak_slots_in_a_row_while_a_peer_takes_its_holds() {
    let config = turns_on();
    let (mut h, mut peer) = a_peer_wrote_unhinted_while_writing(config.clone());
    let mut op = 1_000;
    for round in 0..4 {
        let committed = commit_until_held(&mut h, op, 40).expect("a blind hold");
        op += 100;
        assert!(committed <= config.blind_streak_slots as u128, "round {round}: {committed}");
        // The peer takes the held name (its hint is lost), and the store's create after
        // the hold loses to it and rebuilds past it.
        peer.world = h.replica.world().expect("open").clone();
        peer_commits(&mut peer, &mut h, &[op]);
        op += 1;
        let waiting = h.publish(op, &format!("/own/{op}.md"), "own");
        op += 1;
        h.fire_timer();
        h.settle();
        assert!(h.reply(waiting).is_some(), "round {round}: committed past the peer's slot");
    }
    let stats = h.replica.stats();
    assert_eq!((stats.blind_holds, stats.slots_lost), (4, 5), "every hold taken, every one lost once");
    assert_eq!(longest_run_of_one_store(&h), config.blind_streak_slots as usize);
}

#[test]
fn a_peers_slot_a_hint_told_of_earns_no_blind_hold() {
    let (mut h, _) = a_peer_wrote_unhinted_while_writing(turns_on());
    follow(&mut h, 2);
    assert_eq!(commit_until_held(&mut h, 10, 40), None, "hints reach the store: owed turns serve");
    assert_eq!(h.replica.stats().holds, 0);
}

#[test]
fn a_peers_slot_older_than_blind_peer_ms_earns_no_blind_hold() {
    let config = turns_on();
    let (mut h, _) = a_peer_wrote_unhinted_while_writing(config.clone());
    h.advance(config.blind_peer + Duration::from_millis(1));
    assert_eq!(commit_until_held(&mut h, 10, 40), None, "the peer went quiet");
    assert_eq!(h.replica.stats().holds, 0);
}

#[test]
fn a_peers_slot_seen_before_the_first_win_earns_no_blind_hold() {
    // The log a store opens on (or loses to before its first win) may hold the slots of
    // a writer gone long ago, its own previous incarnation's say.
    let mut h = Harness::opened(turns_on());
    let mut peer = Peer::following(&h);
    peer_commits(&mut peer, &mut h, &[101]);
    assert_eq!(commit_own(&mut h, 1), 2, "lost slot 1, won slot 2: the first win");
    assert_eq!(commit_until_held(&mut h, 10, 40), None);
    assert_eq!(h.replica.stats().holds, 0);
}

#[test]
fn a_store_whose_embedder_passes_no_hints_probes_at_every_doubling_of_a_streak_alone() {
    let config = Config { blind_probe_slots: 4, ..turns_on() };
    let mut h = Harness::opened(config);
    assert_eq!(commit_until_held(&mut h, 10, 40), Some(4), "no peer ever seen: a probe at 4");
    h.fire_timer();
    h.settle();
    assert_eq!(commit_until_held(&mut h, 1_000, 40), Some(4), "at 8");
    h.fire_timer();
    h.settle();
    assert_eq!(commit_until_held(&mut h, 2_000, 40), Some(8), "at 16");
    assert_eq!(h.replica.stats().blind_holds, 3);
}

#[test]
fn a_store_whose_embedder_carries_hints_and_sees_no_peer_never_holds() {
    let mut h = Harness::opened(turns_on());
    assert_eq!(turns_on().blind_probe_slots, Config::default().blind_probe_slots);
    assert_eq!(commit_until_held(&mut h, 10, 100), None, "the harness carries hints: probes off");
    assert_eq!(h.replica.stats().holds, 0);
}

#[test]
fn blind_turns_off_never_hold() {
    let (mut h, _) = a_peer_wrote_unhinted_while_writing(Config { blind_streak_slots: 0, ..turns_on() });
    assert_eq!(commit_until_held(&mut h, 10, 40), None);
    let (mut h, _) = a_peer_wrote_unhinted_while_writing(turns_off());
    assert_eq!(commit_until_held(&mut h, 10, 40), None);
}

#[test]
fn a_loser_that_loses_twice_in_a_row_to_slots_no_hint_told_of_lists_past_its_tip() {
    let mut h = Harness::opened(turns_on());
    let r = own_write_at_its_create(&mut h, 1);
    let mut peer = Peer::following(&h);
    for op in 101..=104 {
        peer_commits(&mut peer, &mut h, &[op]);
    }
    let opened_log = h.log.len();
    h.deliver_all_but(|op| is_slot_stat(op) || (is_slot_create(op) && op.key() == keys().slot(5)));
    // Slot 1 lost: its winner read, rebuilt at 2. Slot 2 lost too: read, then a listing
    // finds 3 and 4 instead of losing them one at a time.
    assert_eq!(slot_creates_sent(&h), vec![keys().slot(1), keys().slot(2), keys().slot(5)]);
    assert_eq!(lists_in(&h.log[opened_log..]), vec![list_after(2)]);
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(5)]);
    h.settle();
    assert_eq!(h.receipt(r).sequence, 5);
    assert_eq!((h.marked(Mark::CatchUpAfterLosses), h.replica.stats().slots_lost), (1, 2));
}

// Counters (CommitterStats).

#[test]
fn holds_count_holds_begun_holds_answered_and_their_time() {
    let config = turns_on();
    let (mut h, second) = won_slot_1_a_peer_lost(config.clone());
    let first_hold_at = h.now;
    h.settle();
    // The first hold is answered by the peer's slot 2.
    let mut peer = Peer::following(&h);
    peer_commits(&mut peer, &mut h, &[100]);
    h.advance_ms(40);
    follow(&mut h, 2);
    h.deliver_all_but(is_slot_create);
    let answered_at = h.now;
    let first_ms = (answered_at - first_hold_at).as_millis() as u64;
    assert_eq!(h.replica.stats().hold_ms_total, first_ms);
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(3)]);
    // A peer lost slot 3 to us too; the second hold runs out.
    follow(&mut h, 3);
    let fourth = own_write_at_its_create(&mut h, 4);
    assert!(h.bring_forward(is_slot_create));
    h.deliver();
    assert_eq!(h.receipt(second).sequence, 3);
    h.settle();
    assert!(h.reply(fourth).is_none(), "held");
    h.fire_timer();
    h.settle();
    assert_eq!(h.receipt(fourth).sequence, 4);
    let stats = h.replica.stats();
    assert_eq!((stats.holds, stats.holds_answered), (2, 1));
    assert_eq!(stats.hold_ms_total, first_ms + config.hold.as_millis() as u64);
}

#[test]
fn recoveries_us_records_the_time_from_a_lost_create_to_the_next_create() {
    let mut h = Harness::opened(blob_bodies(turns_on()));
    let r = h.publish(1, "/own/1.md", "own 1");
    let mut peer = Peer::following(&h);
    peer_commits(&mut peer, &mut h, &[101]);
    peer_commits(&mut peer, &mut h, &[102]);
    peer_commits(&mut peer, &mut h, &[103]);
    // The hint's probe installs slot 1 and then is left pending; our batch, built on 0,
    // still creates at 1, and finds it taken by a slot it holds (no read).
    follow(&mut h, 3);
    assert!(h.bring_forward(is_slot_stat));
    h.deliver();
    assert!(h.bring_forward(is_get_of(1)));
    h.deliver();
    assert_eq!(h.replica.world().expect("open").sequence(), 1);
    assert!(h.bring_forward(is_body_create));
    h.deliver();
    assert!(h.bring_forward(is_slot_create));
    h.deliver();
    let lost_at = h.now;
    assert_eq!(h.committed, vec![1], "lost");
    assert!(h.replica.stats().recoveries_us.is_empty(), "no create since the loss");
    // The catch-up reads slots 2 and 3 before the next create.
    h.deliver_all_but(|op| is_slot_stat(op) || is_slot_create(op));
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(4)]);
    let recovery_us = (h.now - lost_at).as_micros() as u64;
    assert_eq!(recovery_us, 3_000, "a listing and two reads");
    assert_eq!(h.replica.stats().recoveries_us, vec![recovery_us]);
    h.settle();
    assert_eq!(h.receipt(r).sequence, 4);
    assert_eq!(h.replica.stats().recoveries_us, vec![recovery_us], "a win records nothing");
}

#[test]

fn a_recovery_counts_the_read_of_the_winners_slot() {
    let mut h = Harness::opened(turns_on());
    let r = own_write_at_its_create(&mut h, 1);
    let mut peer = Peer::following(&h);
    peer_commits(&mut peer, &mut h, &[101]);
    h.deliver();
    let lost_at = h.now;
    assert_eq!(h.pending(|_| true), vec![BlobOp::Get { key: keys().slot(1) }], "the create was lost");
    h.deliver();
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(2)]);
    let recovery_us = (h.now - lost_at).as_micros() as u64;
    assert_eq!(recovery_us, 1_000, "the winner's read");
    assert_eq!(h.replica.stats().recoveries_us, vec![recovery_us]);
    h.settle();
    assert_eq!(h.receipt(r).sequence, 2);
}

#[test]
fn a_catch_up_whose_gap_a_probe_installed_first_ends_when_the_gap_read_answers() {
    // Crash seed 7, found by the simulation's starvation rule: the catch-up read the name
    // its listing skipped while a probe installed it; the read's answer then found the gap
    // installed, and the catch-up waited on it for good, and every batch behind it.
    let mut h = Harness::opened(turns_on());
    let r = own_write_at_its_create(&mut h, 1);
    let mut peer = Peer::following(&h);
    for op in 101..=104 {
        peer_commits(&mut peer, &mut h, &[op]);
    }
    h.store.hidden.insert(keys().slot(3), 1);
    follow(&mut h, 4);
    let held = |op: &BlobOp| {
        is_slot_stat(op) || is_get_of(3)(op) || (is_slot_create(op) && op.key() != keys().slot(1))
    };
    h.deliver_all_but(held);
    assert_eq!(
        h.replica.world().expect("open").sequence(),
        2,
        "the catch-up installed 2 and read 3 directly"
    );
    let gap_read = h.calls.iter().find(|(_, op)| is_get_of(3)(op)).expect("the gap's read").0;
    // Every other call goes first: the probe installs 3 and 4 before the gap's read answers.
    while let Some(i) = h.calls.iter().position(|(id, op)| *id != gap_read && !is_slot_create(op)) {
        let call = h.calls.remove(i).expect("index");
        h.calls.push_front(call);
        h.deliver();
    }
    assert_eq!(h.replica.world().expect("open").sequence(), 4, "the probe installed the gap and past it");
    assert!(pending_slot_creates(&h).is_empty(), "batches wait for the catch-up");
    h.deliver(); // the gap's read
    assert_eq!(pending_slot_creates(&h), vec![keys().slot(5)], "the catch-up ended");
    h.settle();
    assert_eq!(h.receipt(r).sequence, 5);
}
