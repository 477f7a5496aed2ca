//! Catch-up: a loser reads the slots past the one it lost to before it rebuilds (record:
//! "a loser's recovery is then the winner's read, one listing and a rebuild in memory").
//! Batches are not built while it runs: they would be stale once it installs.

use super::{CommitCall, Committer};
use crate::blob::{BlobError, BlobOp, BlobOutcome, BlobResult};
use crate::format::{DecodeError, Slot};
use crate::hash::Hash32;
use crate::io::{Call, Io, Purpose};
use crate::reply::FailReason;
use crate::snapshot::Snapshot;
use crate::time::Instant;
use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};

/// Names one catch-up listing asks for.
const CATCH_UP_LIST_MAX: u32 = 64;

#[derive(Debug, Default)]
pub(super) struct CatchUp {
    /// Listed names not yet installed, in order.
    listed: VecDeque<u64>,
    fetched: BTreeMap<u64, Bytes>,
    /// The listing stopped at its limit: list again after the last name.
    more: bool,
    after: Option<String>,
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
        for e in &entries {
            match self.keys.parse_slot(&e.key) {
                Some(sequence) if sequence > sn.world.sequence() => {
                    cu.listed.push_back(sequence);
                    let op = BlobOp::Get { key: e.key.clone() };
                    io.issue(now, Purpose::Commit(CommitCall::CatchUpGet { sequence }), op, 0);
                }
                Some(_) => {}
                None => return Err(FailReason::Decode { key: e.key.clone(), error: DecodeError::Foreign }),
            }
        }
        cu.after = entries.last().map(|e| e.key.clone()).or(cu.after.take());
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
            Err(BlobError::NotFound) => Err(FailReason::SlotVanished { sequence }),
            _ if self.catch_up.is_none() => Ok(()),
            _ => {
                io.retry_later(now, call);
                Ok(())
            }
        }
    }

    /// Installs the listed slots in order as they arrive; lists on, or ends the catch-up.
    fn advance_catch_up(&mut self, now: Instant, sn: &mut Snapshot, io: &mut Io) -> Result<(), FailReason> {
        let cu = self.catch_up.as_mut().expect("catching up");
        while let Some(&sequence) = cu.listed.front() {
            if sequence <= sn.world.sequence() {
                cu.listed.pop_front(); // a probe installed it meanwhile
                cu.fetched.remove(&sequence);
                continue;
            }
            let Some(bytes) = cu.fetched.remove(&sequence) else { break };
            cu.listed.pop_front();
            let slot = Slot::decode_at(sequence, &bytes)
                .map_err(|error| FailReason::Decode { key: self.keys.slot(sequence), error })?;
            sn.install(&slot, Hash32::of(&bytes), now).map_err(FailReason::Apply)?;
        }
        if !cu.listed.is_empty() {
            return Ok(());
        }
        if cu.more {
            self.list_catch_up(now, io);
            return Ok(());
        }
        self.catch_up = None;
        Ok(())
    }
}
