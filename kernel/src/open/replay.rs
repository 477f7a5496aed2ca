//! Replay at open (SPEC 7 "Opening", "A listing is a hint"): list the log past the
//! checkpoint, read every listed slot (a bounded number in flight) and apply them in
//! sequence order.
//!
//! A listing is not a snapshot (a local directory is walked while writers create names in
//! it), so a page may hold slot N+1 without slot N. A gap is settled, never trusted: the
//! missing name is read directly; present, it is applied and replay goes on; absent, the
//! log is listed once more from that name; still absent behind a present successor, the
//! log is broken and the opening fails closed with `ApplyError::Gap`. Every slot is
//! checked against its name as it arrives (`Slot::decode_at`), so a slot stored under
//! another name fails closed naming that key, whether or not replay reaches it.

use super::OpenCall;
use crate::blob::{BlobError, BlobOp, BlobOutcome, BlobResult, ObjectMeta};
use crate::format::{DecodeError, Keys, ShapeRule, Slot};
use crate::hash::Hash32;
use crate::io::{Call, Io, Purpose};
use crate::marks::Mark;
use crate::reply::FailReason;
use crate::snapshot::Snapshot;
use crate::time::Instant;
use crate::world::ApplyError;
use std::collections::{BTreeMap, BTreeSet};

/// A name a listing skipped while a later name was listed, being settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Gap {
    /// The missing name: the sequence replay needs next.
    sequence: u64,
    /// The least name listed past it.
    successor: u64,
    /// The direct read found nothing; the re-list from the name is in flight.
    relisting: bool,
}

pub(super) struct Replay {
    keys: Keys,
    gets_max: usize,
    list_page_max: u32,
    /// Every slot name listed or read, so a re-list adds only what is new.
    known: BTreeSet<u64>,
    /// Listed names not yet asked for.
    to_fetch: BTreeSet<u64>,
    /// Slot reads in flight.
    reading: BTreeSet<u64>,
    /// Slots read, checked against their names, not yet applied (they arrive out of order).
    fetched: BTreeMap<u64, (Slot, Hash32)>,
    gap: Option<Gap>,
    /// The last key the listing returned, and whether more may follow.
    list_after: Option<String>,
    listing: bool,
    list_done: bool,
    /// When the last listing call was sent: every slot created before then was listed.
    pub last_list_at: Instant,
}

impl Replay {
    /// Starts listing the log after `after` (the name of the slot the checkpoint ends at;
    /// None from the start).
    pub fn start(
        keys: Keys,
        after: Option<String>,
        (gets_max, list_page_max): (usize, u32),
        now: Instant,
        io: &mut Io,
    ) -> Replay {
        let mut replay = Replay {
            keys,
            gets_max,
            list_page_max,
            known: BTreeSet::new(),
            to_fetch: BTreeSet::new(),
            reading: BTreeSet::new(),
            fetched: BTreeMap::new(),
            gap: None,
            list_after: after,
            listing: false,
            list_done: false,
            last_list_at: now,
        };
        replay.list_next(now, io);
        replay
    }

    pub fn on_done(
        &mut self,
        now: Instant,
        what: OpenCall,
        (call, result): (Call, BlobResult),
        sn: &mut Snapshot,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        match (what, result) {
            (OpenCall::LogList, Ok(BlobOutcome::Listed { entries, more })) => {
                self.listing = false;
                self.last_list_at = call.issued_at;
                self.add_listed(&entries)?;
                // The greatest key, whatever order the page came in.
                if let Some(last) = entries.iter().map(|e| &e.key).max() {
                    self.list_after = Some(last.clone());
                }
                self.list_done = !more;
            }
            (OpenCall::ReplayGet { sequence }, Ok(BlobOutcome::Got { bytes, .. })) => {
                self.reading.remove(&sequence);
                self.arrived(sequence, &bytes)?;
            }
            // A listed slot that is gone: something deletes what it must not.
            (OpenCall::ReplayGet { sequence }, Err(BlobError::NotFound)) => {
                return Err(FailReason::SlotVanished { sequence });
            }
            (OpenCall::GapGet { sequence }, Ok(BlobOutcome::Got { bytes, .. })) => {
                self.gap = None;
                self.arrived(sequence, &bytes)?;
            }
            (OpenCall::GapGet { sequence }, Err(BlobError::NotFound)) => self.relist(now, sequence, io),
            (OpenCall::GapList { sequence }, Ok(BlobOutcome::Listed { entries, .. })) => {
                self.on_relisted(sequence, &entries)?;
            }
            _ => {
                io.retry_later(now, call);
                return Ok(());
            }
        }
        self.apply_ready(now, sn)?;
        self.settle_gap(now, sn, io);
        self.fetch_more(now, io);
        Ok(())
    }

    /// Every listed name has been read and applied, and no gap is open.
    pub fn is_done(&self) -> bool {
        self.list_done && self.to_fetch.is_empty() && self.reading.is_empty() && self.gap.is_none()
    }

    /// Once done: a slot read that replay never applied sits at a name inside a slot it
    /// did apply, so the log holds two slots for one sequence.
    pub fn leftover(&self, sn: &Snapshot) -> Result<(), FailReason> {
        match self.fetched.first_key_value() {
            Some((&found, _)) => {
                Err(FailReason::Apply(ApplyError::Gap { expected: sn.world.next_sequence(), found }))
            }
            None => Ok(()),
        }
    }

    /// Queues the names of a page not seen before. Only slot names may live under the log.
    fn add_listed(&mut self, entries: &[ObjectMeta]) -> Result<(), FailReason> {
        for e in entries {
            let sequence = match self.keys.parse_slot(&e.key) {
                Some(0) => {
                    let error = DecodeError::Shape(ShapeRule::SlotAtSequenceZero);
                    return Err(FailReason::Decode { key: e.key.clone(), error });
                }
                Some(sequence) => sequence,
                None => return Err(FailReason::Decode { key: e.key.clone(), error: DecodeError::Foreign }),
            };
            if self.known.insert(sequence) {
                self.to_fetch.insert(sequence);
            }
        }
        Ok(())
    }

    /// A slot read arrived: it must be the slot its name says, whether or not replay
    /// reaches it.
    fn arrived(&mut self, sequence: u64, bytes: &[u8]) -> Result<(), FailReason> {
        let slot = Slot::decode_at(sequence, bytes)
            .map_err(|error| FailReason::Decode { key: self.keys.slot(sequence), error })?;
        self.fetched.insert(sequence, (slot, Hash32::of(bytes)));
        Ok(())
    }

    /// The direct read of a gap's name found nothing: list once more from that name.
    fn relist(&mut self, now: Instant, sequence: u64, io: &mut Io) {
        let Some(gap) = self.gap.as_mut().filter(|g| g.sequence == sequence) else { return };
        gap.relisting = true;
        let start_after = (sequence > 1).then(|| self.keys.slot(sequence - 1));
        let op = BlobOp::List { prefix: self.keys.log_prefix(), start_after, limit: self.list_page_max };
        io.issue(now, Purpose::Open(OpenCall::GapList { sequence }), op, 0);
    }

    /// The re-list after a gap's name read as absent. Listed now, it is read like any
    /// other; still absent behind a present successor, the log is broken.
    fn on_relisted(&mut self, sequence: u64, entries: &[ObjectMeta]) -> Result<(), FailReason> {
        let Some(gap) = self.gap.filter(|g| g.sequence == sequence && g.relisting) else { return Ok(()) };
        self.add_listed(entries)?;
        let listed: Vec<u64> = entries.iter().filter_map(|e| self.keys.parse_slot(&e.key)).collect();
        if listed.contains(&sequence) {
            self.gap = None;
            self.to_fetch.insert(sequence);
            return Ok(());
        }
        let found = listed.into_iter().min().unwrap_or(gap.successor);
        Err(FailReason::Apply(ApplyError::Gap { expected: sequence, found }))
    }

    /// Applies fetched slots that continue the chain.
    fn apply_ready(&mut self, now: Instant, sn: &mut Snapshot) -> Result<(), FailReason> {
        while let Some((slot, hash)) = self.fetched.remove(&sn.world.next_sequence()) {
            sn.install(&slot, hash, now).map_err(FailReason::Apply)?;
        }
        // Nobody watches a world that is still opening.
        sn.fresh.clear();
        Ok(())
    }

    /// Replay needs a name no listing gave while a later one was listed: read it directly.
    fn settle_gap(&mut self, now: Instant, sn: &Snapshot, io: &mut Io) {
        let next = sn.world.next_sequence();
        if self.gap.is_some() || self.known.contains(&next) {
            return;
        }
        let Some(&successor) = self.known.range(next + 1..).next() else { return };
        self.known.insert(next);
        io.marks.hit(Mark::OpenReplayGap);
        self.gap = Some(Gap { sequence: next, successor, relisting: false });
        let op = BlobOp::Get { key: self.keys.slot(next) };
        io.issue(now, Purpose::Open(OpenCall::GapGet { sequence: next }), op, 0);
    }

    fn list_next(&mut self, now: Instant, io: &mut Io) {
        self.listing = true;
        let op = BlobOp::List {
            prefix: self.keys.log_prefix(),
            start_after: self.list_after.clone(),
            limit: self.list_page_max,
        };
        io.issue(now, Purpose::Open(OpenCall::LogList), op, 0);
    }

    fn fetch_more(&mut self, now: Instant, io: &mut Io) {
        while self.reading.len() < self.gets_max {
            let Some(sequence) = self.to_fetch.pop_first() else { break };
            self.reading.insert(sequence);
            let op = BlobOp::Get { key: self.keys.slot(sequence) };
            io.issue(now, Purpose::Open(OpenCall::ReplayGet { sequence }), op, 0);
        }
        // List the next page once this one is nearly read, so the gets keep flowing.
        if !self.list_done && !self.listing && self.to_fetch.len() < self.gets_max {
            self.list_next(now, io);
        }
    }
}
