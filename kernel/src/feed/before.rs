//! The slots before the checkpoint a replica opened from (SPEC 9). After a cold start the
//! replica's index of newest slots begins at that checkpoint, yet the feed reaches
//! `recent_slots_max` slots back from the tip whoever installed them: a watcher resuming
//! from a cursor just before the checkpoint is served from the bucket, not resynced.
//!
//! This module owns that region and nothing else. It lists the slot names before the
//! checkpoint, reads the slots, and verifies them newest first back along the chain: the
//! newest against the checkpoint's `previous_hash`, each older one against the `prev_hash`
//! of the slot after it. Only verified slots reach the feed, as spans it reads and checks
//! like indexed ones. Sequences below `floor` are not served (their slots are gone, or
//! past the reach, or the index has moved past the checkpoint): a watcher there resyncs.
//! A slot that is there but does not chain fails the replica closed. It never delivers.

use super::FeedCall;
use crate::blob::{BlobOp, ObjectMeta};
use crate::format::{DecodeError, Keys, NameRule, ShapeRule, Slot, SLOT_MEMBERS_MAX};
use crate::hash::Hash32;
use crate::ids::StoreId;
use crate::io::{Io, Purpose};
use crate::reply::FailReason;
use crate::snapshot::{SlotSpan, Snapshot};
use crate::time::Instant;
use crate::world::Receipt;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Sequences one slot can hold at most: the slot holding a sequence starts no further back.
const SLOT_SEQUENCES_MAX: u64 = SLOT_MEMBERS_MAX as u64;

/// Where a subscriber whose next sequence is before the index stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reach {
    /// The slot holding it is verified: read from there.
    Verified,
    /// Listing and reading towards it.
    Reading,
    /// Not served: gone, past the reach, or not before the checkpoint at all.
    Gone,
}

/// A slot read and decoded, waiting for the slot after it to be verified.
struct Read {
    hash: Hash32,
    last: u64,
    prev_hash: Hash32,
    store_id: StoreId,
    receipts: Vec<Receipt>,
}

pub(super) struct Before {
    keys: Keys,
    /// The checkpoint's next sequence: where the index began.
    pub start: u64,
    /// Slots verified, oldest first, contiguous through `start - 1`.
    verified: VecDeque<SlotSpan>,
    /// The hash the slot ending just before the oldest verified must have: the `prev_hash`
    /// of the oldest verified (the checkpoint's `previous_hash` while none is).
    expect: Hash32,
    /// Sequences below this are not served.
    floor: u64,
    /// Every slot name from here up to the oldest verified is in `listed` (or was verified).
    listed_from: u64,
    /// Names listed and not yet verified, ascending.
    listed: BTreeSet<u64>,
    /// The listing in flight, by the lowest sequence it covers.
    listing: Option<u64>,
    /// Slot reads in flight.
    requested: BTreeSet<u64>,
    /// Slots read, by first sequence, waiting for the slots after them to be verified.
    read: BTreeMap<u64, Read>,
    list_page_max: u32,
    /// The feed's reach in slots back from the tip (`recent_slots_max`).
    reach_slots_max: usize,
}

impl Before {
    /// The region before a checkpoint whose next sequence is `start` and whose previous
    /// hash is `previous_hash` (the hash of the slot holding `start - 1`).
    pub fn new(
        keys: Keys,
        (start, previous_hash): (u64, Hash32),
        list_page_max: u32,
        reach_slots_max: usize,
    ) -> Before {
        invariant!(start > 1, "checkpoint zero has nothing before it");
        Before {
            keys,
            start,
            verified: VecDeque::new(),
            expect: previous_hash,
            floor: 1,
            listed_from: start,
            listed: BTreeSet::new(),
            listing: None,
            requested: BTreeSet::new(),
            read: BTreeMap::new(),
            list_page_max,
            reach_slots_max,
        }
    }

    /// The oldest verified sequence (`start` while none is).
    fn oldest(&self) -> u64 {
        self.verified.front().map_or(self.start, |s| s.first)
    }

    /// Slots this region may still verify: the reach less what the index and the region
    /// already hold.
    fn room(&self, sn: &Snapshot) -> usize {
        self.reach_slots_max.saturating_sub(sn.recent.len()).saturating_sub(self.verified.len())
    }

    /// Keeps the region within the reach as the index grows: the oldest verified slots go
    /// first, and everything once the index has moved past the checkpoint (from then on
    /// the index alone spans the reach).
    pub fn trim(&mut self, sn: &Snapshot) {
        if sn.recent.oldest().is_some_and(|s| s.first > self.start) {
            self.raise_floor(self.start);
            return;
        }
        let reach = self.reach_slots_max.saturating_sub(sn.recent.len());
        while self.verified.len() > reach {
            self.verified.pop_front();
        }
        if self.verified.len() == reach {
            self.raise_floor(self.oldest());
        }
    }

    /// Sequences below `floor` are not served; what is held for them goes.
    fn raise_floor(&mut self, floor: u64) {
        if floor <= self.floor {
            return;
        }
        self.floor = floor;
        while self.verified.front().is_some_and(|s| s.first < floor) {
            self.verified.pop_front();
        }
        self.listed = self.listed.split_off(&floor);
        self.read = self.read.split_off(&floor);
        // Reads in flight below the floor still land; they are dropped on arrival.
    }

    /// Where a subscriber whose next sequence is `next` stands.
    pub fn reach(&self, next: u64, sn: &Snapshot) -> Reach {
        if next >= self.start || next < self.floor {
            return Reach::Gone;
        }
        let oldest = self.oldest();
        if next >= oldest {
            return Reach::Verified;
        }
        // Each slot holds at most SLOT_SEQUENCES_MAX sequences: a cursor further back than
        // that many per slot of room is past the reach, whatever the listing would say.
        if oldest - next > (self.room(sn) as u64).saturating_mul(SLOT_SEQUENCES_MAX) {
            return Reach::Gone;
        }
        Reach::Reading
    }

    /// Verified spans from the one holding `next` on, oldest first.
    pub fn from(&self, next: u64) -> impl Iterator<Item = &SlotSpan> {
        let i = self.verified.partition_point(|s| s.last < next);
        self.verified.range(i..)
    }

    /// The slot at `sequence` was read before (so verified, or since let go) and is gone
    /// now: nothing through it is served.
    pub fn lost(&mut self, sequence: u64) {
        let last = self.verified.iter().find(|s| s.first == sequence).map_or(sequence, |s| s.last);
        self.raise_floor(last + 1);
    }

    /// Lists and reads towards `want`, the oldest next sequence a subscriber waits for,
    /// with at most `gets_max` slot reads in flight or waiting to be verified.
    pub fn pump(&mut self, now: Instant, want: u64, gets_max: usize, sn: &Snapshot, io: &mut Io) {
        // The slot holding `want` starts at most SLOT_SEQUENCES_MAX - 1 before it.
        let lo = want.saturating_sub(SLOT_SEQUENCES_MAX - 1).max(1);
        if self.listing.is_none() && self.listed_from > lo {
            self.listing = Some(lo);
            let start_after = (lo > 1).then(|| self.keys.slot(lo - 1));
            self.list(now, start_after, io);
        }
        // Read newest first, from the listed slot holding `want` (or the oldest listed, if
        // none can hold it) up, no more than the room left.
        let lowest = self.listed.range(..=want).next_back().copied().unwrap_or(want);
        let room = self.room(sn);
        let mut asked = Vec::new();
        for &first in self.listed.range(lowest..).rev().take(room) {
            if self.requested.len() + self.read.len() + asked.len() >= gets_max {
                break;
            }
            if !self.requested.contains(&first) && !self.read.contains_key(&first) {
                asked.push(first);
            }
        }
        for first in asked {
            self.requested.insert(first);
            let op = BlobOp::Get { key: self.keys.slot(first) };
            io.issue(now, Purpose::Feed(FeedCall::ReadBefore { sequence: first }), op, 0);
        }
    }

    fn list(&mut self, now: Instant, start_after: Option<String>, io: &mut Io) {
        let op = BlobOp::List { prefix: self.keys.log_prefix(), start_after, limit: self.list_page_max };
        io.issue(now, Purpose::Feed(FeedCall::ListBefore), op, 0);
    }

    /// A page of the listing arrived. Only slot names may live under the log.
    pub fn on_listed(
        &mut self,
        now: Instant,
        entries: &[ObjectMeta],
        more: bool,
        sn: &Snapshot,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        let lo = self.listing.expect("a listing in flight");
        let mut reached_known = false;
        for e in entries {
            let first = match self.keys.parse_slot(&e.key) {
                Some(0) => {
                    let error = DecodeError::Shape(ShapeRule::SlotAtSequenceZero);
                    return Err(FailReason::Decode { key: e.key.clone(), error });
                }
                Some(first) => first,
                None => return Err(FailReason::Decode { key: e.key.clone(), error: DecodeError::Foreign }),
            };
            if first >= self.listed_from {
                reached_known = true;
                break;
            }
            if first >= self.floor {
                self.listed.insert(first);
            }
        }
        // More names than the room left: the oldest are past the reach.
        let room = self.room(sn);
        if self.listed.len() > room {
            while self.listed.len() > room {
                self.listed.pop_first();
            }
            let floor = self.listed.first().copied().unwrap_or_else(|| self.oldest());
            self.raise_floor(floor);
        }
        if reached_known || !more {
            self.listing = None;
            self.listed_from = self.listed_from.min(lo);
        } else {
            let start_after = entries.last().map(|e| e.key.clone());
            self.list(now, start_after, io);
        }
        Ok(())
    }

    /// A slot read arrived; it waits until the slot after it is verified.
    pub fn on_read(&mut self, sequence: u64, bytes: &[u8]) -> Result<(), FailReason> {
        self.requested.remove(&sequence);
        if !self.listed.contains(&sequence) {
            return Ok(()); // below the floor since it was asked for
        }
        let key = self.keys.slot(sequence);
        let slot = Slot::decode_at(sequence, bytes).map_err(|error| FailReason::Decode { key, error })?;
        let read = Read {
            hash: Hash32::of(bytes),
            last: slot.last_sequence(),
            prev_hash: slot.prev_hash,
            store_id: slot.store_id,
            receipts: slot.members.into_iter().map(|m| m.receipt).collect(),
        };
        self.read.insert(sequence, read);
        Ok(())
    }

    /// The listed slot at `sequence` is not in the bucket: nothing through it is served.
    pub fn on_gone(&mut self, sequence: u64) {
        self.requested.remove(&sequence);
        let after = self.listed.range(sequence + 1..).next().copied().unwrap_or_else(|| self.oldest());
        self.raise_floor(after);
    }

    /// Verifies what has been read, newest first, back along the chain; returns the
    /// receipts of each slot newly verified, by first sequence. A slot that is there but
    /// not the one the chain names is refused: the replica fails closed.
    pub fn verify(&mut self, now: Instant) -> Result<Vec<(u64, Vec<Receipt>)>, FailReason> {
        let mut verified = Vec::new();
        loop {
            let oldest = self.oldest();
            if oldest <= self.floor {
                break;
            }
            // The slot holding `oldest - 1` starts no earlier than this.
            let earliest = oldest.saturating_sub(SLOT_SEQUENCES_MAX).max(1);
            let Some(&first) = self.listed.range(earliest..oldest).next_back() else {
                if self.listed_from <= earliest {
                    // Every name it could have was listed, and none is there: gone.
                    self.raise_floor(oldest);
                }
                break;
            };
            let Some(read) = self.read.remove(&first) else { break };
            self.listed.remove(&first);
            let refused = || {
                let error = DecodeError::Misnamed(NameRule::SlotNotInTheChain);
                FailReason::Decode { key: self.keys.slot(first), error }
            };
            if read.hash != self.expect {
                if read.last + 1 < oldest {
                    // A slot between them starts at `read.last + 1` and no listing gave it
                    // (a listing is not a snapshot): read that name directly. Absent, it
                    // is gone (`on_gone`) and the chain cannot be followed past here.
                    self.listed.insert(first);
                    self.read.insert(first, read);
                    self.listed.insert(self.read[&first].last + 1);
                    break;
                }
                return Err(refused());
            }
            if read.last + 1 != oldest {
                return Err(refused());
            }
            self.expect = read.prev_hash;
            self.verified.push_front(SlotSpan {
                first,
                last: read.last,
                hash: read.hash,
                store_id: read.store_id,
                created_at_us: None,
                installed_at: now,
                // Not known here, and the feed reads no bodies.
                carries_bodies: true,
            });
            verified.push((first, read.receipts));
        }
        Ok(verified)
    }
}
