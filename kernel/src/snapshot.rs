//! The replica's snapshot: the world it loaded plus every slot applied since, an index of
//! its newest slots, and the latest instant it knew that world to be the tip. Every path
//! that learns of a slot (an own commit, a lost race, a read's probe, a peer's hint)
//! installs through [`Snapshot::install`], in sequence order, and no install waits on a
//! bucket call: by the time a slot reaches it, its bytes are in hand.

use crate::compactor::Ledger;
use crate::format::Slot;
use crate::hash::Hash32;
use crate::ids::StoreId;
use crate::time::Instant;
use crate::views::Views;
use crate::world::{ApplyError, Receipt, WorldState};
use std::collections::VecDeque;

/// One slot of the index: its sequences, its hash and its writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SlotSpan {
    pub first: u64,
    pub last: u64,
    pub hash: Hash32,
    pub store_id: StoreId,
    /// The store's creation time of the slot, when this replica created it.
    pub created_at_us: Option<u64>,
    /// When this replica installed it.
    pub installed_at: Instant,
    /// Whether it carries bodies (schemas 2 and 4): only then is a body read from it
    /// before its blob.
    pub carries_bodies: bool,
}

/// The newest slots, oldest first, at most `slots_max`.
pub(crate) struct RecentSlots {
    spans: VecDeque<SlotSpan>,
    slots_max: usize,
}

impl RecentSlots {
    pub fn new(slots_max: usize) -> RecentSlots {
        RecentSlots { spans: VecDeque::new(), slots_max }
    }

    fn push(&mut self, span: SlotSpan) {
        invariant!(self.spans.back().is_none_or(|b| b.last + 1 == span.first));
        self.spans.push_back(span);
        while self.spans.len() > self.slots_max {
            self.spans.pop_front();
        }
    }

    /// The span holding `sequence`, if it is among the newest slots.
    pub fn holding(&self, sequence: u64) -> Option<&SlotSpan> {
        let i = self.spans.partition_point(|s| s.last < sequence);
        self.spans.get(i).filter(|s| s.first <= sequence)
    }

    /// Spans from the one holding `sequence` on, in order.
    pub fn from(&self, sequence: u64) -> impl Iterator<Item = &SlotSpan> {
        let i = self.spans.partition_point(|s| s.last < sequence);
        self.spans.range(i..)
    }

    fn newest_mut(&mut self) -> Option<&mut SlotSpan> {
        self.spans.back_mut()
    }

    /// The newest `n` slots, newest first.
    pub fn newest(&self, n: usize) -> impl Iterator<Item = &SlotSpan> {
        self.spans.iter().rev().take(n)
    }

    /// The oldest indexed slot.
    pub fn oldest(&self) -> Option<&SlotSpan> {
        self.spans.front()
    }

    /// Slots indexed: it only grows, until it holds `slots_max`.
    pub fn len(&self) -> usize {
        self.spans.len()
    }
}

/// What an install did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Installed {
    /// The slot was new and is now applied.
    Applied,
    /// The slot was already applied (someone else installed it first).
    AlreadyHeld,
}

/// Where a slot to install comes from.
#[derive(Clone, Copy)]
enum Origin {
    /// This replica's committer built it on the state it is installed on.
    Own,
    /// Read from the bucket (a peer's, or one of ours found again): judged member by member.
    Read,
}

pub(crate) struct Snapshot {
    pub world: WorldState,
    pub recent: RecentSlots,
    /// The world was the tip at some instant at or after this. Reset by any install that
    /// is not known to be the tip.
    pub current_since: Option<Instant>,
    /// Receipts of members installed since the feed last took them, in sequence order.
    pub fresh: Vec<Receipt>,
    /// The highest sequence a peer said it committed through (its hints).
    pub hinted: u64,
    /// The latest instant the state (or an older one of this snapshot) was known to be
    /// the tip: how long the replica has gone unconfirmed (SPEC 10.15, the reload rule).
    pub confirmed_at: Instant,
    /// What a checkpoint step needs since the newest checkpoint (SPEC 10.11): every slot
    /// installed goes through it first.
    pub ledger: Ledger,
    /// The views pinned on this snapshot: every slot installed goes through them first.
    pub views: Views,
    /// The bodies installs brought, for the search index while it is active.
    pub search: crate::search::Installs,
}

impl Snapshot {
    pub fn new(
        world: WorldState,
        recent_slots_max: usize,
        (views_max, view_age_max, view_images_max): (usize, core::time::Duration, usize),
        current_since: Instant,
    ) -> Snapshot {
        Snapshot {
            views: Views::new(views_max, view_age_max, view_images_max),
            ledger: Ledger::new(&world),
            world,
            recent: RecentSlots::new(recent_slots_max),
            current_since: Some(current_since),
            fresh: Vec::new(),
            hinted: 0,
            confirmed_at: current_since,
            search: Default::default(),
        }
    }

    /// Applies a slot that continues the chain, or recognizes one already applied. A slot
    /// under an applied name with other bytes means the log forked: refused.
    pub fn install(&mut self, slot: &Slot, hash: Hash32, now: Instant) -> Result<Installed, ApplyError> {
        self.install_from(slot, hash, now, Origin::Read)
    }

    /// [`Snapshot::install`] for a slot this replica's committer built and created: its
    /// members are not judged again ([`WorldState::apply_own_slot`]).
    pub fn install_own(&mut self, slot: &Slot, hash: Hash32, now: Instant) -> Result<Installed, ApplyError> {
        self.install_from(slot, hash, now, Origin::Own)
    }

    fn install_from(
        &mut self,
        slot: &Slot,
        hash: Hash32,
        now: Instant,
        origin: Origin,
    ) -> Result<Installed, ApplyError> {
        if slot.first_sequence <= self.world.sequence() {
            return match self.recent.holding(slot.first_sequence) {
                Some(s) if s.first == slot.first_sequence && s.hash == hash => Ok(Installed::AlreadyHeld),
                Some(_) => Err(ApplyError::ChainBreak { sequence: slot.first_sequence }),
                // Older than the index: nothing reads that far back through an install.
                None => Ok(Installed::AlreadyHeld),
            };
        }
        let recorded = self.ledger.record(&self.world, slot, hash);
        // Images of documents as they are before the slot: true even if it does not apply.
        self.views.record(&self.world, slot);
        self.search.record(&self.world, slot);
        let applied = match origin {
            Origin::Own => self.world.apply_own_slot(slot, hash),
            Origin::Read => self.world.apply_slot(slot, hash),
        };
        if let Err(e) = applied {
            self.ledger.undo(recorded);
            return Err(e);
        }
        // A newer state: whoever installs it says whether it is known to be the tip.
        self.current_since = None;
        self.recent.push(SlotSpan {
            first: slot.first_sequence,
            last: slot.last_sequence(),
            hash,
            store_id: slot.store_id,
            created_at_us: None,
            installed_at: now,
            carries_bodies: !slot.bodies.is_empty(),
        });
        self.fresh.extend(slot.members.iter().map(|m| m.receipt.clone()));
        Ok(Installed::Applied)
    }

    /// Notes the store's creation time of the slot at `first`, the newest installed.
    pub fn note_created(&mut self, first: u64, created_at_us: u64) {
        if let Some(span) = self.recent.newest_mut().filter(|s| s.first == first) {
            span.created_at_us = Some(created_at_us);
        }
    }

    /// The state is known to have been the tip at `at`.
    pub fn confirm_current(&mut self, at: Instant) {
        if self.current_since.is_none_or(|t| t < at) {
            self.current_since = Some(at);
        }
        self.confirmed_at = self.confirmed_at.max(at);
    }

    /// Whether a peer said the world is past this snapshot.
    pub fn behind_hints(&self) -> bool {
        self.hinted > self.world.sequence()
    }

    /// Whether the state was the tip at some instant at or after `since`.
    pub fn current_since(&self, since: Instant) -> bool {
        self.current_since.is_some_and(|t| t >= since)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(first: u64, last: u64) -> SlotSpan {
        SlotSpan {
            first,
            last,
            hash: Hash32::ZERO,
            store_id: StoreId(0),
            created_at_us: None,
            installed_at: Instant::ZERO,
            carries_bodies: true,
        }
    }

    #[test]
    fn the_index_keeps_only_the_newest_slots() {
        let mut r = RecentSlots::new(3);
        for i in 0..5 {
            r.push(span(i * 10 + 1, i * 10 + 10));
        }
        assert_eq!(r.len(), 3);
        assert!(r.holding(15).is_none(), "evicted");
        assert_eq!(r.holding(25).map(|s| s.first), Some(21));
        assert_eq!(r.holding(50).map(|s| s.first), Some(41));
        assert!(r.holding(51).is_none());
        assert_eq!(r.from(33).map(|s| s.first).collect::<Vec<_>>(), vec![31, 41]);
    }
}
