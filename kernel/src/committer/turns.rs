//! Turns (SPEC 7, turns): a peer that lost a name to this store reports the winner's
//! sequence through a hint. A hint inside one of this store's newest slots (or the one it
//! is creating) means a turn is owed: after its next win the store holds its next create
//! until a peer's slot is installed, or the hold runs out. A lone store never waits.
//!
//! Blind turns (docs/TURNS.md, "Without hints"): when hints are lost, no loser can say it
//! lost, and a store that pipelines its creates wins every name. A store that sees a
//! peer's slot in the log while it writes, but no hint for it, holds, as for a turn,
//! after a streak of its own slots; a hold no peer takes doubles the streak before the
//! next one, up to a gap in time. That evidence ages out. A store whose embedder passes
//! it no hints at all also probes: it holds at every doubling of a streak alone, since
//! peers that never won a name are invisible to it. A lone store whose embedder carries
//! hints never waits.
//!
//! Rotation (docs/TURNS.md, "Rotation"): where hints arrive, a store that wrote one of
//! the newest slots gives the next name to a peer writing with it that wrote none of
//! them, so that racing stores take names in turn instead of losing creates to decide.

use super::CommitterStats;
use crate::config::Config;
use crate::ids::StoreId;
use crate::marks::{Mark, Marks};
use crate::snapshot::{SlotSpan, Snapshot};
use crate::time::Instant;
use core::ops::RangeInclusive;
use core::time::Duration;

/// A store gives way to a peer's turn for this many of its create round trips.
const ROTATION_WAIT_CREATES: u32 = 3;
/// The most doublings of the wins an owed hint lets pass after owed holds no peer
/// answered (docs/TURNS.md, rule 4): 2^16 - 1 wins, about an hour of slots at 20 a second.
const OWED_BACKOFF_DOUBLINGS_MAX: u32 = 16;

/// A peer lost to this store and is retrying: owed a turn at the store's next win.
#[derive(Clone, Copy, Debug)]
struct Owed {
    at: Instant,
    /// The last sequence of the hinted slot: a peer slot after it answers the hint.
    base: u64,
}

/// The store is giving a peer its turn: the head's create waits.
#[derive(Clone, Copy, Debug)]
struct Hold {
    since: Instant,
    until: Instant,
    /// The tip when the hold began: a slot installed past it is the peer's.
    base: u64,
    /// Begun for an owed turn (a hint): one that runs out unanswered backs owed holds off.
    owed: bool,
}

/// What a hold means for the head's create now.
pub(super) enum HoldCheck {
    /// Wait.
    Holding,
    /// No hold, or it ran out: create.
    Free,
    /// A peer's slot arrived: rebuild the held batches on it, then create.
    Answered,
}

pub(super) struct Turns {
    enabled: bool,
    store_id: StoreId,
    hold: Duration,
    turn_slots_max: usize,
    owed: Option<Owed>,
    held: Option<Hold>,
    /// The last hinted slot that earned a hold: a hint at or before it holds nothing more.
    held_through: u64,
    /// Owed holds in a row that ran out with no peer's slot: hints no peer follows up (a
    /// peer gone, or hints forged on the network). Each doubles the wins that pass before
    /// an owed hint holds again; a hold a peer's slot answers starts over.
    owed_unanswered: u32,
    /// Wins still to pass before an owed hint may hold again.
    owed_skip_wins: u64,
    /// The tip this store last gave way at under rotation: once a tip, never twice.
    rotated_at: u64,
    rotation: Rotation,
    blind: Blind,
}

/// Rotation (docs/TURNS.md, "Rotation"): where hints reach this store, the writers of the
/// newest slots take names in turn. A store that wrote one of the last `n - 1` slots,
/// while a peer that writes with it (`n` writers in all) wrote none of them, gives that
/// peer the next name before it creates: one handoff a slot, no create lost to it.
#[derive(Clone, Debug)]
struct Rotation {
    /// Newest slots that say who writes with this store; 0 turns rotation off.
    window_slots: usize,
    /// How recent a peer's slot must be to count it as writing now.
    peer_for: Duration,
    /// How long to give way, in this store's create round trips: the peer needs about
    /// two (the read of the newest slot, then its create), plus a hint's flight.
    wait_creates: u32,
    /// The peers the current wait is for, each with the last sequence of its newest slot.
    awaiting: Vec<(StoreId, u64)>,
    /// Peers that let a turn pass, with the newest slot they had then: not waited for
    /// again until they write a newer one, so a peer that went quiet costs one wait.
    passed: Vec<(StoreId, u64)>,
}

/// What the blind rule knows of the log's newest slots: the streak of this store's own
/// slots since the newest peer slot, and that peer slot.
#[derive(Clone, Copy, Debug)]
struct Blind {
    /// 0: blind turns off.
    streak_slots: u64,
    /// The streak of the first hold while no live peer is known.
    probe_slots: u64,
    gap_max: Duration,
    peer_for: Duration,
    /// The last sequence the streak counted; None before this store's first win.
    seen_through: Option<u64>,
    /// Own slots since the newest peer slot.
    own: u64,
    /// The newest peer slot seen.
    peer: Option<PeerSlot>,
    /// The streak at which the next blind hold begins: `streak_slots` after a live peer
    /// slot (`probe_slots` otherwise), doubled by every hold since.
    next_at: u64,
    /// When the last hold (blind or owed) began.
    last_hold: Option<Instant>,
    hold_creates: u32,
    /// A moving average of this store's slot create round trips (1/8 per sample, as
    /// TCP's smoothed round trip): what a blind hold is sized by.
    create_rtt_us: Option<u64>,
}

/// A peer's slot the blind rule counted.
#[derive(Clone, Copy, Debug)]
struct PeerSlot {
    last: u64,
    installed_at: Instant,
    /// Seen after this store's first win: a peer writing while this store writes. A peer
    /// slot seen only at the first win may be a writer gone long ago (the log a restarted
    /// store opens on holds its previous incarnation's slots).
    live: bool,
}

impl Blind {
    /// Counts the slots installed since the last look, oldest first.
    fn observe(&mut self, sn: &Snapshot, store_id: StoreId) {
        let live = self.seen_through.is_some();
        for s in sn.recent.from(self.seen_through.map_or(0, |t| t + 1)) {
            if s.store_id == store_id {
                self.own += 1;
            } else {
                self.own = 0;
                self.next_at = if live { self.streak_slots } else { self.first_probe() };
                self.peer = Some(PeerSlot { last: s.last, installed_at: s.installed_at, live });
            }
        }
        self.seen_through = Some(sn.world.sequence());
    }

    /// Whether a win now begins a blind hold.
    ///
    /// A store that has seen a peer write while it writes (a live peer slot), with no
    /// hint for that slot (hints are not reaching this store), holds at every doubling of
    /// its streak from `streak_slots`, and at least every `gap_max`, while that slot is
    /// younger than `peer_for`. Once a hint covers it, owed turns serve the peers instead.
    ///
    /// A store that knows of no such peer holds only if its embedder passes it no hints
    /// at all (`probe_slots` above 0): at every doubling of its streak from
    /// `probe_slots`, so a peer that started with it, or joined soon after, is offered a
    /// name, and a lone store waits a number of times that grows with the logarithm of
    /// its streak.
    fn due(&self, now: Instant, sn: &Snapshot) -> bool {
        if self.streak_slots == 0 {
            return false;
        }
        match self.peer.filter(|p| p.live) {
            Some(peer) if sn.hinted >= peer.last => false,
            Some(peer) if now.saturating_since(peer.installed_at) <= self.peer_for => {
                let gap = self.last_hold.is_none_or(|at| now.saturating_since(at) >= self.gap_max);
                self.own >= self.streak_slots && (self.own >= self.next_at || gap)
            }
            _ => self.probe_slots > 0 && self.own >= self.next_at.max(self.probe_slots),
        }
    }

    /// The streak of the first hold while no live peer is known.
    fn first_probe(&self) -> u64 {
        if self.probe_slots > 0 {
            self.probe_slots
        } else {
            self.streak_slots
        }
    }

    /// `creates` of this store's create round trips, at most `hold`.
    fn hold_for(&self, creates: u32, hold: Duration) -> Duration {
        let us = self.create_rtt_us.map(|us| us.saturating_mul(u64::from(creates)));
        us.map_or(hold, |us| hold.min(Duration::from_micros(us)))
    }
}

impl Rotation {
    /// The peers whose turn it is, with the last sequence of each one's newest slot;
    /// empty when it is this store's. `n` writers are this store and the peers that wrote
    /// a hinted slot among the newest `window_slots`, installed within `peer_for` and
    /// newer than any turn they let pass. It is a peer's turn when this store wrote one
    /// of the newest `n - 1` slots and that peer wrote none of them.
    fn peers_due(&mut self, now: Instant, sn: &Snapshot, me: StoreId) -> Vec<(StoreId, u64)> {
        let newest: Vec<&SlotSpan> = sn.recent.newest(self.window_slots).collect();
        // A peer out of the window needs no memory of a turn it let pass: bounded by it.
        self.passed.retain(|&(p, _)| newest.iter().any(|s| s.store_id == p));
        let mut peers: Vec<(StoreId, u64)> = Vec::new();
        for s in &newest {
            let writing = s.store_id != me
                && s.last <= sn.hinted
                && now.saturating_since(s.installed_at) <= self.peer_for
                && !self.passed.iter().any(|&(p, last)| p == s.store_id && s.last <= last);
            if writing && peers.iter().all(|&(p, _)| p != s.store_id) {
                peers.push((s.store_id, s.last));
            }
        }
        let last_turns = &newest[..peers.len().min(newest.len())];
        if last_turns.iter().all(|s| s.store_id != me) {
            return Vec::new();
        }
        peers.retain(|&(p, _)| last_turns.iter().all(|s| s.store_id != p));
        peers
    }

    /// A wait ended by its clock: the peers it was for let their turn pass.
    fn wait_ran_out(&mut self) {
        for (peer, last) in self.awaiting.drain(..) {
            match self.passed.iter_mut().find(|(p, _)| *p == peer) {
                Some(entry) => entry.1 = entry.1.max(last),
                None => self.passed.push((peer, last)),
            }
        }
    }
}

impl Turns {
    pub fn new(config: &Config, store_id: StoreId) -> Turns {
        Turns {
            enabled: config.turns,
            store_id,
            hold: config.hold,
            turn_slots_max: config.turn_slots_max,
            owed: None,
            held: None,
            held_through: 0,
            owed_unanswered: 0,
            owed_skip_wins: 0,
            rotated_at: 0,
            rotation: Rotation {
                window_slots: config.rotation_window_slots,
                peer_for: config.rotation_peer,
                wait_creates: ROTATION_WAIT_CREATES,
                awaiting: Vec::new(),
                passed: Vec::new(),
            },
            blind: Blind {
                streak_slots: config.blind_streak_slots,
                gap_max: config.blind_gap_max,
                peer_for: config.blind_peer,
                seen_through: None,
                own: 0,
                peer: None,
                probe_slots: config.blind_probe_slots,
                next_at: if config.blind_probe_slots > 0 {
                    config.blind_probe_slots
                } else {
                    config.blind_streak_slots
                },
                last_hold: None,
                hold_creates: config.blind_hold_creates,
                create_rtt_us: None,
            },
        }
    }

    /// When the current hold ends.
    pub fn hold_until(&self) -> Option<Instant> {
        self.held.map(|h| h.until)
    }

    /// A peer committed through `sequence`. Inside one of this store's newest slots, or
    /// the slot it is `creating`, it means the peer lost that name to this store and is
    /// retrying: the store owes it a turn.
    pub fn on_hint(
        &mut self,
        now: Instant,
        sn: &Snapshot,
        sequence: u64,
        creating: Option<RangeInclusive<u64>>,
        marks: &mut Marks,
    ) {
        if !self.enabled {
            return;
        }
        let creating = creating.filter(|r| r.contains(&sequence)).map(|r| *r.end());
        let ours = sn
            .recent
            .holding(sequence)
            .filter(|s| s.store_id == self.store_id)
            .filter(|_| {
                let newer_own = sn.recent.from(sequence).filter(|s| s.store_id == self.store_id).count();
                newer_own <= self.turn_slots_max
            })
            .map(|s| s.last);
        let Some(base) = creating.or(ours) else { return };
        if base <= self.held_through {
            return; // this hint already earned its hold
        }
        if creating == Some(base) {
            marks.hit(Mark::TurnOwedWhileCreating);
        }
        self.owed = Some(Owed { at: now, base });
    }

    /// After a win: if a peer is owed a turn, and no peer slot answered the hint since, and
    /// the hint is younger than a hold, hold the next create, unless owed holds are backing
    /// off (owed holds in a row ran out with no peer's slot). Without hints, the blind
    /// rule may hold instead.
    pub fn start_hold(&mut self, now: Instant, sn: &Snapshot, stats: &mut CommitterStats, marks: &mut Marks) {
        if !self.enabled {
            return;
        }
        self.blind.observe(sn, self.store_id);
        let backing_off = self.owed_skip_wins > 0;
        self.owed_skip_wins = self.owed_skip_wins.saturating_sub(1);
        if let Some(owed) = self.owed.take() {
            let answered = sn.recent.from(owed.base + 1).any(|s| s.store_id != self.store_id);
            if answered || now.saturating_since(owed.at) > self.hold || backing_off {
                marks.hit(Mark::HoldSkipped);
            } else {
                marks.hit(Mark::HoldBegun);
                self.held_through = owed.base;
                self.begin(now, self.hold, true, sn, stats);
                return;
            }
        }
        if self.blind.due(now, sn) {
            marks.hit(Mark::BlindHoldBegun);
            stats.blind_holds += 1;
            self.begin(now, self.blind.hold_for(self.blind.hold_creates, self.hold), false, sn, stats);
        }
    }

    /// Before the head's create at the tip: give way if it is a peer's turn (rotation).
    /// Peers count only through slots a hint told of, so a store that hears no hints
    /// never waits on this rule (blind turns serve it), and neither does a lone store.
    pub fn give_way(&mut self, now: Instant, sn: &Snapshot, stats: &mut CommitterStats, marks: &mut Marks) {
        let tip = sn.world.sequence();
        if !self.enabled || self.held.is_some() || self.rotated_at == tip || self.rotation.window_slots == 0 {
            return;
        }
        self.rotated_at = tip;
        let due = self.rotation.peers_due(now, sn, self.store_id);
        if due.is_empty() {
            return;
        }
        marks.hit(Mark::RotationGaveWay);
        stats.rotation_waits += 1;
        stats.holds += 1;
        self.rotation.awaiting = due;
        let wait = self.blind.hold_for(self.rotation.wait_creates, self.hold);
        self.held = Some(Hold { since: now, until: now + wait, base: tip, owed: false });
    }

    /// A slot create of this store's was answered (won or taken) `rtt` after it was sent.
    pub fn on_create_answered(&mut self, rtt: Duration) {
        let sample = rtt.as_micros().min(u128::from(u64::MAX)) as u64;
        let rtt = &mut self.blind.create_rtt_us;
        *rtt = Some(rtt.map_or(sample, |avg| avg - avg / 8 + sample / 8));
    }

    /// Holds the next create for `hold`; the streak before the next blind hold doubles.
    fn begin(&mut self, now: Instant, hold: Duration, owed: bool, sn: &Snapshot, stats: &mut CommitterStats) {
        stats.holds += 1;
        self.held = Some(Hold { since: now, until: now + hold, base: sn.world.sequence(), owed });
        self.blind.next_at = self.blind.own.max(1).saturating_mul(2);
        self.blind.last_hold = Some(now);
    }

    /// Ends the hold when a peer's slot arrived or when it ran out.
    pub fn check(
        &mut self,
        now: Instant,
        sn: &Snapshot,
        stats: &mut CommitterStats,
        marks: &mut Marks,
    ) -> HoldCheck {
        let Some(h) = self.held else { return HoldCheck::Free };
        let answered = sn.world.sequence() > h.base;
        if !answered && now < h.until {
            return HoldCheck::Holding;
        }
        self.held = None;
        stats.hold_ms_total += now.saturating_since(h.since).as_millis() as u64;
        let overrun_us = now.saturating_since(h.until).as_micros() as u64;
        stats.hold_overrun_us_max = stats.hold_overrun_us_max.max(overrun_us);
        if answered {
            self.rotation.awaiting.clear();
            self.owed_unanswered = 0;
            self.owed_skip_wins = 0;
            stats.holds_answered += 1;
            marks.hit(Mark::HoldAnsweredByPeer);
            return HoldCheck::Answered;
        }
        if h.owed {
            // No peer took the turn a hint said it was owed: let 1, 3, 7, ... wins pass
            // before the next owed hold, so hints no peer follows up (forged ones) cost at
            // most about log2(wins) holds.
            self.owed_unanswered = (self.owed_unanswered + 1).min(OWED_BACKOFF_DOUBLINGS_MAX);
            self.owed_skip_wins = (1u64 << self.owed_unanswered) - 1;
        }
        marks.hit(Mark::HoldExpiredByClock);
        self.rotation.wait_ran_out();
        HoldCheck::Free
    }
}
