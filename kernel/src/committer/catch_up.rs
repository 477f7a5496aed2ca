//! Catch-up: a loser reads the slots past the one it lost to before it rebuilds (record:
//! "a loser's recovery is then the winner's read, one listing and a rebuild in memory").
//! Batches are not built while it runs: they would be stale once it installs.
//!
//! A listing is a hint (SPEC 7): a name it skipped while a later one is listed is read
//! directly; absent, the log is listed once more from it; still absent behind a present
//! successor, the log is broken and the replica fails closed.

use super::{CommitCall, Committer};
use crate::blob::{BlobError, BlobOp, BlobOutcome, BlobResult};
use crate::format::{DecodeError, Slot};
use crate::hash::Hash32;
use crate::io::{Call, Io, Purpose};
use crate::marks::Mark;
use crate::reply::FailReason;
use crate::snapshot::Snapshot;
use crate::time::Instant;
use crate::world::ApplyError;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};

/// Names one catch-up listing asks for.
const CATCH_UP_LIST_MAX: u32 = 64;

#[derive(Debug, Default)]
pub(super) struct CatchUp {
    /// Names listed (or read for a gap) past the tip and not yet installed.
    listed: BTreeSet<u64>,
    fetched: BTreeMap<u64, Bytes>,
    /// The listing stopped at its limit: list again after the last name.
    more: bool,
    after: Option<String>,
    /// A name the listing skipped while a later one was listed, and whether its direct
    /// read found nothing and the re-list from it is in flight.
    gap: Option<(u64, bool)>,
}

impl CatchUp {
    /// A catch-up that lists the log after the key `after` (from the start if None).
    pub fn after(after: Option<String>) -> CatchUp {
        CatchUp { after, ..CatchUp::default() }
    }
}

impl Committer {
    pub(super) fn list_catch_up(&mut self, now: Instant, io: &mut Io) {
        let after = self.catch_up.as_ref().expect("catching up").after.clone();
        let op =
            BlobOp::List { prefix: self.keys.log_prefix(), start_after: after, limit: CATCH_UP_LIST_MAX };
        io.issue(now, Purpose::Commit(CommitCall::CatchUpList), op, 0);
    }

    pub(super) fn on_catch_up_list(
        &mut self,
        now: Instant,
        sn: &mut Snapshot,
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        let Ok(BlobOutcome::Listed { entries, more }) = result else {
            io.retry_later(now, call);
            return Ok(());
        };
        let Some(cu) = self.catch_up.as_mut() else { return Ok(()) };
        cu.more = more;
        let mut names = Vec::with_capacity(entries.len());
        for e in &entries {
            match self.keys.parse_slot(&e.key) {
                Some(sequence) => names.push(sequence),
                None => return Err(FailReason::Decode { key: e.key.clone(), error: DecodeError::Foreign }),
            }
        }
        if let Some((sequence, true)) = cu.gap {
            // The re-list after the gap's name read as absent.
            if !names.contains(&sequence) {
                let found = names.iter().copied().filter(|&n| n > sequence).min().unwrap_or(sequence + 1);
                return Err(FailReason::Apply(ApplyError::Gap { expected: sequence, found }));
            }
            cu.gap = None;
            let op = BlobOp::Get { key: self.keys.slot(sequence) };
            io.issue(now, Purpose::Commit(CommitCall::CatchUpGet { sequence }), op, 0);
        }
        for sequence in names {
            if sequence > sn.world.sequence() && cu.listed.insert(sequence) {
                let op = BlobOp::Get { key: self.keys.slot(sequence) };
                io.issue(now, Purpose::Commit(CommitCall::CatchUpGet { sequence }), op, 0);
            }
        }
        // The greatest key listed: pages come sorted, and a re-list may restart lower.
        cu.after = entries.last().map(|e| e.key.clone()).max(cu.after.take());
        self.advance_catch_up(now, sn, io)
    }

    pub(super) fn on_catch_up_get(
        &mut self,
        now: Instant,
        sn: &mut Snapshot,
        sequence: u64,
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        match result {
            // A read that lands after the catch-up ended (a probe installed the slot first)
            // has nothing left to do.
            Ok(BlobOutcome::Got { bytes, .. }) => {
                let Some(cu) = self.catch_up.as_mut() else { return Ok(()) };
                cu.fetched.insert(sequence, bytes);
                self.advance_catch_up(now, sn, io)
            }
            Err(BlobError::NotFound) => {
                let gap = self.catch_up.as_mut().and_then(|cu| cu.gap.as_mut());
                let Some(gap) = gap.filter(|g| g.0 == sequence && !g.1) else {
                    return Err(FailReason::SlotVanished { sequence });
                };
                // No listing gave it and it reads as absent: list once more from it.
                gap.1 = true;
                io.marks.hit(Mark::CatchUpGapRelisted);
                let after = (sequence > 1).then(|| self.keys.slot(sequence - 1));
                let op = BlobOp::List {
                    prefix: self.keys.log_prefix(),
                    start_after: after,
                    limit: CATCH_UP_LIST_MAX,
                };
                io.issue(now, Purpose::Commit(CommitCall::CatchUpList), op, 0);
                Ok(())
            }
            _ if self.catch_up.is_none() => Ok(()),
            _ => {
                io.retry_later(now, call);
                Ok(())
            }
        }
    }

    /// Installs the listed slots in order as they arrive; settles a gap by reading the
    /// missing name; lists on, or ends the catch-up.
    fn advance_catch_up(&mut self, now: Instant, sn: &mut Snapshot, io: &mut Io) -> Result<(), FailReason> {
        let cu = self.catch_up.as_mut().expect("catching up");
        // A probe or a hint may have installed names this catch-up was reading, a gap's
        // among them: what they bring is already in, and a gap installed is no gap. (A
        // gap left standing here kept the catch-up, and every batch, waiting for good:
        // crash seed 7, found by the starvation rule.)
        let tip = sn.world.sequence();
        cu.fetched.retain(|&sequence, _| sequence > tip);
        let keep = self.config.defects().catch_up_keeps_installed_gap;
        if !keep && cu.gap.is_some_and(|(sequence, _)| sequence <= tip) {
            cu.gap = None;
        }
        while let Some(&sequence) = cu.listed.first() {
            if sequence <= sn.world.sequence() {
                cu.listed.pop_first(); // a probe installed it meanwhile
                cu.fetched.remove(&sequence);
                continue;
            }
            let next = sn.world.next_sequence();
            if sequence > next {
                // The listing skipped `next`: read it directly.
                if cu.gap.is_none() {
                    io.marks.hit(Mark::CatchUpGapRead);
                    cu.gap = Some((next, false));
                    cu.listed.insert(next);
                    let op = BlobOp::Get { key: self.keys.slot(next) };
                    io.issue(now, Purpose::Commit(CommitCall::CatchUpGet { sequence: next }), op, 0);
                }
                return Ok(());
            }
            let Some(bytes) = cu.fetched.remove(&sequence) else { break };
            cu.listed.pop_first();
            if cu.gap.is_some_and(|g| g.0 == sequence) {
                cu.gap = None;
            }
            let slot = Slot::decode_at(sequence, &bytes)
                .map_err(|error| FailReason::Decode { key: self.keys.slot(sequence), error })?;
            sn.install(&slot, Hash32::of(&bytes), now).map_err(FailReason::Apply)?;
        }
        if !cu.listed.is_empty() || cu.gap.is_some() {
            return Ok(());
        }
        if cu.more {
            io.marks.hit(Mark::CatchUpPaged);
            self.list_catch_up(now, io);
            return Ok(());
        }
        self.catch_up = None;
        Ok(())
    }
}
