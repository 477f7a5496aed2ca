//! Turns (SPEC 7, turns): a peer that lost a name to this store reports the winner's
//! sequence through a hint. A hint inside one of this store's newest slots (or the one it
//! is creating) means a turn is owed: after its next win the store holds its next create
//! until a peer's slot is installed, or the hold runs out. A lone store never waits.

use super::CommitterStats;
use crate::config::Config;
use crate::ids::StoreId;
use crate::marks::{Mark, Marks};
use crate::snapshot::Snapshot;
use crate::time::Instant;
use core::ops::RangeInclusive;
use core::time::Duration;

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
}

impl Turns {
    pub fn new(config: &Config, store_id: StoreId) -> Turns {
        Turns {
            enabled: config.turns,
            store_id,
            hold: Duration::from_millis(config.hold_ms),
            turn_slots_max: config.turn_slots_max,
            owed: None,
            held: None,
            held_through: 0,
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
    /// the hint is younger than a hold, hold the next create.
    pub fn start_hold(&mut self, now: Instant, sn: &Snapshot, stats: &mut CommitterStats, marks: &mut Marks) {
        let Some(owed) = self.owed.take() else { return };
        let answered = sn.recent.from(owed.base + 1).any(|s| s.store_id != self.store_id);
        if answered || now.saturating_since(owed.at) > self.hold {
            marks.hit(Mark::HoldSkipped);
            return;
        }
        marks.hit(Mark::HoldBegun);
        stats.holds += 1;
        self.held_through = owed.base;
        self.held = Some(Hold { since: now, until: now + self.hold, base: sn.world.sequence() });
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
        if answered {
            stats.holds_answered += 1;
            marks.hit(Mark::HoldAnsweredByPeer);
            return HoldCheck::Answered;
        }
        marks.hit(Mark::HoldExpiredByClock);
        HoldCheck::Free
    }
}
