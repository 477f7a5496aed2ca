//! The read path (SPEC 8): exact and catalog reads answered from the snapshot once it is
//! fresh enough, one shared probe of the tip in flight at a time, and reading ahead on a
//! peer's hint. It may not answer from a snapshot older than a read's class allows. When
//! its probe finds a slot at the name the committer is creating, it leaves that name to
//! the committer (which settles it with its own create) instead of reading it.
//!
//! Freshness is one rule. The snapshot records the latest instant it was known to be the
//! tip (`Snapshot::current_since`). An exact read is answered once that instant is at or
//! after its arrival; a catalog read once it is within a second before its arrival. A
//! probe (a metadata read of the next slot name) that finds nothing moves the instant to
//! when it was sent; one that finds a slot reads it, installs it, and looks again. Every
//! read that arrived before the probe was sent shares its answer; a read that arrived
//! later waits for the next probe.
//!
//! The probe is a flight (the record's amendment): a call that fails on a 429, 5xx or
//! timeout is retried up to `probe_attempts_max` attempts; a flight that still fails, or
//! meets any other error, answers every read waiting on it `Unavailable` at once and ends.
//! The next read starts a new flight; a hint or the committer waits out a backoff first.

use crate::blob::{BlobError, BlobOp, BlobOutcome, BlobResult};
use crate::bodies::Bodies;
use crate::config::{Config, Defects};
use crate::effect::{Effect, Read};
use crate::format::{Keys, Slot};
use crate::hash::Hash32;
use crate::history::History;
use crate::ids::{OperationId, RequestId, ViewId};
use crate::io::{Call, Io, Purpose};
use crate::marks::Mark;
use crate::read_answers::{fetch, list, retained_versions, Found};
use crate::reply::{Answer, CheckpointProblem, FailReason, ReadError, ReadOk, Reply};
use crate::search::query::{words, Query};
use crate::search::{Search, SearchMatch};
use crate::snapshot::Snapshot;
use crate::time::Instant;
use crate::views::{PinProblem, ReadWorld};
use crate::world::{IndexEntry, Path, VersionRecord};
use bytes::Bytes;
use core::time::Duration;
use std::collections::{BTreeMap, BTreeSet};

/// The calls the read path's probe makes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum ProbeCall {
    /// Is the slot after the tip absent? (metadata only)
    TipStat { sequence: u64 },
    /// Read the slot the stat found at this name.
    SlotGet { sequence: u64 },
    /// The next name was absent while a peer's hint says the world is past it: list the
    /// first name from there, to tell a race from a tip collection has passed.
    TipList { sequence: u64 },
}

/// The most entries one lookup, listing or hash lookup returns.
pub const READ_LIMIT_MAX: u32 = 1_000;

/// A read whose input has been checked.
#[derive(Clone, Debug, PartialEq, Eq)]
enum ValidRead {
    Fetch { path: Path, version: Option<u64> },
    Versions { path: Path },
    Receipt { op_id: OperationId, since: Option<u64> },
    Lookup { prefix: String, start_after: Option<String>, limit: usize },
    List { directory: Option<Path>, start_after: Option<String>, limit: usize },
    HashLookup { hash: Hash32, start_after: Option<String>, limit: usize },
    IsDirectory { path: Option<Path> },
    Search { query: Query, start_after: Option<String>, limit: usize },
}

impl ValidRead {
    fn is_exact(&self) -> bool {
        matches!(
            self,
            ValidRead::Fetch { .. }
                | ValidRead::Versions { .. }
                | ValidRead::Receipt { .. }
                | ValidRead::IsDirectory { .. }
        )
    }
}

/// A directory's path as a read names it: None for the root (`/`, or only slashes).
fn directory(path: &str) -> Result<Option<Path>, crate::world::PathProblem> {
    if path.split('/').all(str::is_empty) {
        Ok(None)
    } else {
        Path::parse(path).map(Some)
    }
}

fn limit(l: u32) -> usize {
    if l == 0 || l > READ_LIMIT_MAX {
        READ_LIMIT_MAX as usize
    } else {
        l as usize
    }
}

fn validate(read: &Read) -> Result<ValidRead, ReadError> {
    Ok(match read {
        Read::Fetch { path, version } => {
            ValidRead::Fetch { path: Path::parse(path).map_err(ReadError::InvalidPath)?, version: *version }
        }
        Read::Versions { path } => {
            ValidRead::Versions { path: Path::parse(path).map_err(ReadError::InvalidPath)? }
        }
        Read::Receipt { op_id, since } => ValidRead::Receipt { op_id: *op_id, since: *since },
        Read::Lookup { prefix, start_after, limit: l } => {
            ValidRead::Lookup { prefix: prefix.clone(), start_after: start_after.clone(), limit: limit(*l) }
        }
        Read::List { directory: d, start_after, limit: l } => ValidRead::List {
            directory: directory(d).map_err(ReadError::InvalidPath)?,
            start_after: start_after.clone(),
            limit: limit(*l),
        },
        Read::HashLookup { hash, start_after, limit: l } => {
            ValidRead::HashLookup { hash: *hash, start_after: start_after.clone(), limit: limit(*l) }
        }
        Read::IsDirectory { path } => {
            ValidRead::IsDirectory { path: directory(path).map_err(ReadError::InvalidPath)? }
        }
        Read::Search { query, start_after, limit: l } => ValidRead::Search {
            query: Query::parse(query).map_err(ReadError::InvalidQuery)?,
            start_after: start_after.clone(),
            limit: limit(*l),
        },
    })
}

struct PendingRead {
    read: ValidRead,
    arrived: Instant,
    deadline: Instant,
    /// A snapshot was already fresh enough for it: it waited only for a history block.
    fresh: bool,
    /// The view it reads, and whether the view's pin must already be held (a later
    /// read of the view) rather than made (its first).
    view: Option<(ViewId, bool)>,
    /// A search waiting for an index covering its state (counted when it first came).
    waiting_index: bool,
}

struct AwaitingBody {
    id: RequestId,
    at_sequence: u64,
    entry: IndexEntry,
    version: VersionRecord,
    deadline: Instant,
}

/// The one probe of the tip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Probe {
    Idle,
    /// Is the slot at this name absent?
    Stat {
        sequence: u64,
    },
    /// Reading the slot found at this name.
    Get {
        sequence: u64,
    },
    /// The slot at this name exists and the committer is settling its own create there.
    Parked {
        sequence: u64,
    },
}

/// Counters a report reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Exact reads answered.
    pub exact: u64,
    /// Catalog reads answered.
    pub catalog: u64,
    /// Metadata reads of the next slot name.
    pub probes: u64,
    /// Slots a probe or a hint installed.
    pub slots_followed: u64,
    /// Reads answered `Busy`: too many were waiting.
    pub refused_busy: u64,
    /// Reads answered `Deadline`.
    pub deadlines: u64,
    /// Reads answered `Unavailable` because the probe they waited on failed.
    pub unavailable: u64,
    /// Probe flights that failed (their retries spent, or a permanent error).
    pub flights_failed: u64,
}

pub(crate) struct Reads {
    keys: Keys,
    pending_max: usize,
    deadline: Duration,
    catalog_staleness: Duration,
    defects: Defects,
    pending: BTreeMap<RequestId, PendingRead>,
    deadlines: BTreeSet<(Instant, RequestId)>,
    probe: Probe,
    /// Fetches answered but for their body, by body hash; they keep their deadlines.
    awaiting_body: BTreeMap<Hash32, Vec<AwaitingBody>>,
    /// Searches waiting for an index covering their state, by when they answer from the
    /// catalog instead.
    index_waits: BTreeSet<(Instant, RequestId)>,
    /// Reads waiting for a history block, by block name; they keep their deadlines.
    awaiting_history: BTreeMap<Hash32, Vec<(RequestId, PendingRead)>>,
    pub stats: ReadStats,
    failed: Option<FailReason>,
    probe_attempts_max: u32,
    /// Flights failed since a probe call last succeeded: lengthens the cool-off.
    flights_failed_in_row: u32,
    /// After a failed flight, a probe no read asked for (a hint, the committer) waits
    /// until then, so a store that is down is not probed back to back.
    cool_off_until: Option<Instant>,
}

impl Reads {
    /// Probe flights failed since a probe call last succeeded.
    pub fn flights_failed_in_row(&self) -> u32 {
        self.flights_failed_in_row
    }

    pub fn new(config: &Config, keys: Keys) -> Reads {
        Reads {
            keys,
            pending_max: config.read_pending_max,
            deadline: config.request_deadline,
            catalog_staleness: config.catalog_staleness_max,
            defects: config.defects(),
            pending: BTreeMap::new(),
            deadlines: BTreeSet::new(),
            probe: Probe::Idle,
            awaiting_body: BTreeMap::new(),
            index_waits: BTreeSet::new(),
            awaiting_history: BTreeMap::new(),
            stats: ReadStats::default(),
            failed: None,
            probe_attempts_max: config.probe_attempts_max,
            flights_failed_in_row: 0,
            cool_off_until: None,
        }
    }

    pub fn submit(&mut self, now: Instant, id: RequestId, read: &Read, io: &mut Io) {
        self.submit_in(now, id, read, None, io);
    }

    /// A read of `view`. A later read of the view (`pinned`: the sequence its first read
    /// answered at) is answered from the pin at once, or `ViewExpired` when the pin is
    /// not held at that sequence or is too old; a first read waits for freshness like any.
    pub fn submit_view(
        &mut self,
        now: Instant,
        id: RequestId,
        (view, pinned): (ViewId, Option<u64>),
        read: &Read,
        sn: Option<&mut Snapshot>,
        io: &mut Io,
    ) {
        if let (Some(expected), None) = (pinned, &self.failed) {
            let held = sn.as_ref().and_then(|sn| sn.views.pinned(view, now));
            if held != Some(expected) {
                let gone = sn.map_or(PinProblem::Expired, |sn| sn.views.expired(view));
                let error = pin_gone(gone, io);
                return reply(io, id, Err(error));
            }
        }
        self.submit_in(now, id, read, Some((view, pinned.is_some())), io);
    }

    fn submit_in(
        &mut self,
        now: Instant,
        id: RequestId,
        read: &Read,
        view: Option<(ViewId, bool)>,
        io: &mut Io,
    ) {
        if let Some(reason) = &self.failed {
            return reply(io, id, Err(ReadError::Failed(reason.clone())));
        }
        let read = match validate(read) {
            Ok(r) => r,
            Err(error) => return reply(io, id, Err(error)),
        };
        if self.pending.len() >= self.pending_max {
            self.stats.refused_busy += 1;
            return reply(io, id, Err(ReadError::Busy { pending: self.pending.len() }));
        }
        let deadline = now + self.deadline;
        self.deadlines.insert((deadline, id));
        // A later read of a view needs no newer tip: its state is pinned.
        let fresh = view.is_some_and(|(_, later)| later);
        self.pending
            .insert(id, PendingRead { read, arrived: now, deadline, fresh, view, waiting_index: false });
    }

    /// The next read deadline, or the end of a cool-off after a failed flight.
    pub fn next_deadline(&self) -> Option<Instant> {
        let deadline = self.deadlines.first().map(|(t, _)| *t);
        let index_wait = self.index_waits.first().map(|(t, _)| *t);
        deadline.into_iter().chain(index_wait).chain(self.cool_off_until).min()
    }

    pub fn expire(&mut self, now: Instant, io: &mut Io) {
        while let Some(&(t, id)) = self.deadlines.first() {
            if t > now {
                break;
            }
            self.deadlines.pop_first();
            let waited_for_body = self.awaiting_body.values_mut().any(|list| {
                let before = list.len();
                list.retain(|a| a.id != id);
                list.len() < before
            });
            let waited_for_history = self.awaiting_history.values_mut().any(|list| {
                let before = list.len();
                list.retain(|(waiting, _)| *waiting != id);
                list.len() < before
            });
            self.index_waits.retain(|&(_, waiting)| waiting != id);
            if self.pending.remove(&id).is_some() || waited_for_body || waited_for_history {
                self.stats.deadlines += 1;
                io.marks.hit(Mark::ReadDeadline);
                reply(io, id, Err(ReadError::Deadline));
            }
        }
    }

    /// The flight failed with `error`: every read waiting on it (every read not yet fresh
    /// enough) is answered `Unavailable` at once, and the probe ends. The next read starts
    /// a new flight; anything else that needs the tip waits out a backoff.
    fn flight_failed(&mut self, now: Instant, error: BlobError, attempt: u32, io: &mut Io) {
        self.probe = Probe::Idle;
        self.stats.flights_failed += 1;
        io.marks.hit(Mark::ProbeFlightFailed);
        self.flights_failed_in_row = self.flights_failed_in_row.saturating_add(1);
        self.cool_off_until = Some(now + io.backoff(attempt.saturating_add(self.flights_failed_in_row)));
        let waiting: Vec<RequestId> =
            self.pending.iter().filter(|(_, r)| !r.fresh).map(|(id, _)| *id).collect();
        for id in waiting {
            let r = self.pending.remove(&id).expect("listed");
            self.deadlines.remove(&(r.deadline, id));
            self.stats.unavailable += 1;
            reply(io, id, Err(ReadError::Unavailable { error }));
        }
    }

    pub fn fail(&mut self, reason: FailReason, io: &mut Io) {
        let waiting = self.pending.keys().copied().chain(self.awaiting_body.values().flatten().map(|w| w.id));
        let waiting = waiting.chain(self.awaiting_history.values().flatten().map(|(id, _)| *id));
        for id in waiting.collect::<Vec<_>>() {
            reply(io, id, Err(ReadError::Failed(reason.clone())));
        }
        self.pending.clear();
        self.awaiting_body.clear();
        self.awaiting_history.clear();
        self.deadlines.clear();
        self.index_waits.clear();
        self.failed = Some(reason);
    }

    fn fresh_enough(&self, now: Instant, sn: &Snapshot, r: &PendingRead) -> bool {
        // A view's first read racing another that pinned it reads the pin.
        if r.fresh || r.view.is_some_and(|(view, _)| sn.views.pinned(view, now).is_some()) {
            true
        } else if r.read.is_exact() {
            self.defects.exact_read_skips_probe || sn.current_since(r.arrived)
        } else {
            let since = Instant::from_micros(
                r.arrived.as_micros().saturating_sub(self.catalog_staleness.as_micros() as u64),
            );
            self.defects.catalog_ignores_staleness || sn.current_since(since)
        }
    }

    /// Answers every read the snapshot is fresh enough for, and starts a probe if anyone
    /// (a read, a hint, the committer's answers-only batch) still needs a newer tip.
    pub fn serve(
        &mut self,
        now: Instant,
        sn: &mut Snapshot,
        creating: Option<u64>,
        committer_needs_tip: bool,
        (bodies, history, search): (&mut Bodies, &mut History, &mut Search),
        io: &mut Io,
    ) -> Result<(), FailReason> {
        if self.failed.is_some() {
            return Ok(());
        }
        sn.views.expire(now);
        let ready: Vec<RequestId> =
            self.pending.iter().filter(|(_, r)| self.fresh_enough(now, sn, r)).map(|(id, _)| *id).collect();
        for id in ready {
            let r = self.pending.remove(&id).expect("listed");
            let at_view = match r.view {
                None => None,
                Some((view, later)) => match view_to_read(now, view, later, sn, io) {
                    Ok(view) => Some(view),
                    Err(error) => {
                        self.deadlines.remove(&(r.deadline, id));
                        // A search waiting for the index whose view went: no wake-up left.
                        self.index_waits.retain(|&(_, waiting)| waiting != id);
                        reply(io, id, Err(error));
                        continue;
                    }
                },
            };
            match self.answer(now, id, &r, (sn, at_view), (bodies, history, search), io) {
                Answered::Yes => {
                    self.deadlines.remove(&(r.deadline, id));
                    self.index_waits.remove(&(r.arrived + search.wait(), id));
                }
                Answered::AwaitingIndex => {
                    self.index_waits.insert((r.arrived + search.wait(), id));
                    // Its view is pinned now: later attempts read the pin.
                    let view = r.view.map(|(view, _)| (view, true));
                    self.pending.insert(id, PendingRead { fresh: true, view, waiting_index: true, ..r });
                }
                Answered::AwaitingBody => {}
                Answered::AwaitingHistory(block) => {
                    self.awaiting_history
                        .entry(block)
                        .or_default()
                        .push((id, PendingRead { fresh: true, ..r }));
                }
                Answered::Broken(block, problem) => {
                    self.pending.insert(id, r);
                    let key = self.keys.history(&block);
                    return Err(FailReason::CheckpointMismatch { key, problem });
                }
            }
        }
        // A read still pending waits on a probe: it starts one at once, even right after
        // a failed flight. A hint or the committer waits out the cool-off.
        let cooled = self.cool_off_until.is_none_or(|t| t <= now);
        if cooled {
            self.cool_off_until = None;
        }
        // A search waiting for the index has its state: it needs no probe.
        let reads_need_tip = self.pending.values().any(|r| !r.fresh);
        let wanted = reads_need_tip || (cooled && (sn.behind_hints() || committer_needs_tip));
        let next = sn.world.next_sequence();
        match self.probe {
            Probe::Idle if wanted => self.stat(now, next, io),
            Probe::Parked { sequence } if creating != Some(sequence) => {
                self.probe = Probe::Idle;
                if wanted {
                    self.stat(now, next, io);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn stat(&mut self, now: Instant, sequence: u64, io: &mut Io) {
        self.stats.probes += 1;
        self.probe = Probe::Stat { sequence };
        let op = BlobOp::Stat { key: self.keys.slot(sequence) };
        io.issue(now, Purpose::Probe(ProbeCall::TipStat { sequence }), op, 0);
    }

    /// A probe call completed. An error is a reason to fail the replica closed.
    pub fn on_done(
        &mut self,
        now: Instant,
        sn: &mut Snapshot,
        creating: Option<u64>,
        (what, call): (ProbeCall, Call),
        result: BlobResult,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        if matches!(result, Ok(_) | Err(BlobError::NotFound)) {
            self.flights_failed_in_row = 0;
        }
        match (what, result) {
            (ProbeCall::TipStat { sequence }, Err(BlobError::NotFound)) => {
                self.probe = Probe::Idle;
                // Absent at the next name when the stat was sent: the snapshot was the tip
                // then. (If the world moved on meanwhile, the newer state is unconfirmed.)
                if sequence == sn.world.next_sequence() && sn.behind_hints() {
                    self.probe = Probe::Stat { sequence };
                    let op = BlobOp::List {
                        prefix: self.keys.log_prefix(),
                        start_after: Some(self.keys.slot(sequence - 1)),
                        limit: 1,
                    };
                    io.issue(now, Purpose::Probe(ProbeCall::TipList { sequence }), op, 0);
                    io.marks.hit(Mark::ProbeTipListed);
                } else if sequence == sn.world.next_sequence() {
                    sn.confirm_current(call.issued_at);
                    let sharing = self.pending.values().filter(|r| !r.fresh && r.arrived <= call.issued_at);
                    if sharing.count() >= 2 {
                        io.marks.hit(Mark::ProbeShared);
                    }
                }
            }
            (ProbeCall::TipList { sequence }, Ok(BlobOutcome::Listed { entries, .. })) => {
                self.probe = Probe::Idle;
                let first = entries.first().and_then(|e| self.keys.parse_slot(&e.key));
                match first {
                    // A later slot is there and the next is not: collection deleted the
                    // slots after this replica's tip (SPEC 10.15). Reopen.
                    Some(found) if found > sequence && sequence == sn.world.next_sequence() => {
                        io.marks.hit(Mark::ProbeBelowCollection);
                        return Err(FailReason::BelowCollection { next: sequence, found });
                    }
                    // The next slot landed meanwhile: the next probe reads it.
                    Some(_) => {}
                    // Nothing past the tip when the listing was sent: a hint past a tip
                    // the store just showed cannot be met; forget it rather than probe
                    // again and again.
                    None if sequence == sn.world.next_sequence() => {
                        io.marks.hit(Mark::ProbeHintUnmet);
                        sn.confirm_current(call.issued_at);
                        sn.hinted = sn.hinted.min(sn.world.sequence());
                    }
                    None => {}
                }
            }
            (ProbeCall::TipStat { sequence }, Ok(_)) => {
                if sequence != sn.world.next_sequence() {
                    self.probe = Probe::Idle;
                } else if creating == Some(sequence) {
                    io.marks.hit(Mark::ProbeParked);
                    self.probe = Probe::Parked { sequence };
                } else {
                    self.probe = Probe::Get { sequence };
                    let op = BlobOp::Get { key: self.keys.slot(sequence) };
                    io.issue(now, Purpose::Probe(ProbeCall::SlotGet { sequence }), op, 0);
                }
            }
            (ProbeCall::SlotGet { sequence }, Ok(BlobOutcome::Got { bytes, .. })) => {
                self.probe = Probe::Idle;
                let slot = Slot::decode_at(sequence, &bytes)
                    .map_err(|error| FailReason::Decode { key: self.keys.slot(sequence), error })?;
                if sequence == sn.world.next_sequence() {
                    sn.install(&slot, Hash32::of(&bytes), now).map_err(FailReason::Apply)?;
                    self.stats.slots_followed += 1;
                    io.marks.hit(Mark::ProbeFollowedSlot);
                }
            }
            (ProbeCall::SlotGet { .. }, Err(BlobError::NotFound)) => self.probe = Probe::Idle,
            // A 429, 5xx or timeout is retried inside the flight while attempts remain,
            // as an object-store client's own retries would be.
            (_, Err(error)) if is_transient(error) && call.attempt + 1 < self.probe_attempts_max => {
                io.marks.hit(Mark::ProbeRetried);
                io.retry_later(now, call);
            }
            (_, Err(error)) => self.flight_failed(now, error, call.attempt, io),
            _ => io.retry_later(now, call),
        }
        Ok(())
    }

    /// A history block arrived (verified against its name): the reads waiting on it are
    /// served again, from the snapshot of that moment, without waiting for freshness.
    pub fn on_history(&mut self, block: &Hash32) {
        for (id, r) in self.awaiting_history.remove(block).unwrap_or_default() {
            self.pending.insert(id, r);
        }
    }

    /// A body arrived (verified against its hash): answer the fetches waiting on it.
    pub fn on_body(&mut self, hash: &Hash32, body: &Bytes, io: &mut Io) {
        for a in self.awaiting_body.remove(hash).unwrap_or_default() {
            self.deadlines.remove(&(a.deadline, a.id));
            let answer = Answer::Document { entry: a.entry, version: a.version, body: body.clone() };
            reply(io, a.id, Ok(ReadOk { at_sequence: a.at_sequence, answer }));
        }
    }

    /// Answers from the snapshot as it is now: every part of one answer from one state.
    /// A read that waits for a body or a history block keeps its deadline.
    #[allow(clippy::too_many_arguments)]
    fn answer(
        &mut self,
        now: Instant,
        id: RequestId,
        pending: &PendingRead,
        (sn, at_view): (&Snapshot, Option<ViewId>),
        (bodies, history, search): (&mut Bodies, &mut History, &mut Search),
        io: &mut Io,
    ) -> Answered {
        let read = &pending.read;
        let at_view = at_view.filter(|_| !self.defects.view_reads_tip);
        let pinned = at_view.and_then(|view| sn.views.world(view, &sn.world));
        let world: &dyn ReadWorld = match &pinned {
            Some(at_pin) => at_pin,
            None => &sn.world,
        };
        let at_sequence = world.sequence();
        if at_sequence < sn.world.sequence() {
            io.marks.hit(Mark::ViewReadBehindTip);
        }
        if read.is_exact() {
            self.stats.exact += 1;
        } else if !pending.waiting_index {
            self.stats.catalog += 1;
        }
        let answer = match read {
            ValidRead::Fetch { path, version } => match fetch(world, path, *version, history) {
                Err(Found::Answer(a)) => *a,
                Err(found) => return self.not_in_hand(now, found, history, io),
                Ok((entry, version)) => match bodies.get(&version.body_hash).or_else(|| {
                    let body = sn.ledger.carried_body(version.sequence, &version.body_hash)?;
                    bodies.remember(version.body_hash, body.clone());
                    Some(body)
                }) {
                    Some(body) => Answer::Document { entry, version, body },
                    None => {
                        // The body is content-addressed: read later, it is still this state's.
                        let hash = version.body_hash;
                        io.marks.hit(Mark::ReadAwaitsBody);
                        bodies.fetch(now, hash, Some((version.sequence, version.body_len)), &sn.recent, io);
                        let waiting =
                            AwaitingBody { id, at_sequence, entry, version, deadline: pending.deadline };
                        self.awaiting_body.entry(hash).or_default().push(waiting);
                        return Answered::AwaitingBody;
                    }
                },
            },
            ValidRead::Versions { path } => match world.document(path) {
                Some(d) => match retained_versions(d, history) {
                    Ok(versions) => Answer::Versions { entry: d.entry.clone(), versions },
                    Err(found) => return self.not_in_hand(now, found, history, io),
                },
                None => Answer::NotFound,
            },
            ValidRead::Receipt { op_id, since } => Answer::Receipt(world.receipt_answer(op_id, *since)),
            ValidRead::Lookup { prefix, start_after, limit } => {
                let from = match start_after {
                    Some(a) if a.as_str() >= prefix.as_str() => format!("{a}\0"),
                    _ => prefix.clone(),
                };
                let mut entries: Vec<IndexEntry> = world
                    .documents_from(&from)
                    .take_while(|(p, _)| p.as_str().starts_with(prefix.as_str()))
                    .take(limit + 1)
                    .map(|(_, d)| d.entry.clone())
                    .collect();
                let more = entries.len() > *limit;
                entries.truncate(*limit);
                Answer::Lookup { entries, more }
            }
            ValidRead::List { directory, start_after, limit } => {
                list(world, directory.as_ref(), start_after.as_deref(), *limit)
            }
            ValidRead::HashLookup { hash, start_after, limit } => {
                let mut paths: Vec<Path> =
                    world.paths_with_body(hash, start_after.as_deref()).take(limit + 1).cloned().collect();
                let more = paths.len() > *limit;
                paths.truncate(*limit);
                Answer::Paths { paths, more }
            }
            ValidRead::Search { query, start_after, limit } => {
                let covered = search.covers(sn, pinned.as_ref()) || self.defects.search_ignores_coverage;
                let (entries, more, matched) = if covered {
                    io.marks.hit(Mark::SearchBodyAnswer);
                    if pending.waiting_index {
                        io.marks.hit(Mark::SearchWaitedForIndex);
                    }
                    if at_sequence < sn.world.sequence() {
                        io.marks.hit(Mark::SearchBodyBehindTip);
                    }
                    search.stats.body_answers += 1;
                    let (entries, more) = search.body_page(world, query, start_after.as_deref(), *limit);
                    (entries, more, SearchMatch::Body)
                } else if now < pending.arrived + search.wait() {
                    return Answered::AwaitingIndex;
                } else {
                    io.marks.hit(Mark::SearchCatalogAnswer);
                    search.stats.catalog_answers += 1;
                    let (entries, more) = search.catalog_page(world, query, start_after.as_deref(), *limit);
                    if entries.iter().any(|e| !query.matches(&words(e.path.as_str()).collect::<Vec<_>>())) {
                        io.marks.hit(Mark::SearchCatalogRecordMatched);
                    }
                    (entries, more, SearchMatch::Catalog)
                };
                Answer::Search { entries, matched, more }
            }
            ValidRead::IsDirectory { path } => Answer::IsDirectory(match path {
                None => true,
                Some(p) => {
                    let under = format!("{}/", p.as_str());
                    world.documents_from(&under).next().is_some_and(|(q, _)| q.as_str().starts_with(&under))
                }
            }),
        };
        reply(io, id, Ok(ReadOk { at_sequence, answer }));
        Answered::Yes
    }
}

/// The view a read answers from, pinning it on its first read; or why it cannot.
fn view_to_read(
    now: Instant,
    view: ViewId,
    later: bool,
    sn: &mut Snapshot,
    io: &mut Io,
) -> Result<ViewId, ReadError> {
    if sn.views.pinned(view, now).is_some() {
        return Ok(view);
    }
    if later {
        // Pinned when the read came, gone since: too old now, or evicted.
        return Err(pin_gone(sn.views.expired(view), io));
    }
    match sn.views.pin(view, &sn.world, now) {
        Ok(_) => Ok(view),
        Err(PinProblem::Exhausted { views }) => Err(ReadError::ViewsExhausted { views }),
        Err(PinProblem::Expired) => Err(ReadError::ViewExpired),
        Err(PinProblem::Evicted) => Err(ReadError::ViewEvicted),
    }
}

/// The answer of a view read whose pin is gone.
fn pin_gone(gone: PinProblem, io: &mut Io) -> ReadError {
    if gone == PinProblem::Evicted {
        io.marks.hit(Mark::ViewEvicted);
        ReadError::ViewEvicted
    } else {
        io.marks.hit(Mark::ViewExpired);
        ReadError::ViewExpired
    }
}

/// What became of a read served from the snapshot.
enum Answered {
    Yes,
    AwaitingBody,
    /// A search whose state no index covers yet: it waits, up to the search wait.
    AwaitingIndex,
    /// Its version record is in this history block, being read.
    AwaitingHistory(Hash32),
    /// A history block does not hold what a checkpoint promised: the replica fails closed.
    Broken(Hash32, CheckpointProblem),
}

impl Reads {
    /// Reads the history blocks a read needs; it waits for the first.
    fn not_in_hand(&self, now: Instant, found: Found, history: &mut History, io: &mut Io) -> Answered {
        if matches!(found, Found::InBlock(_) | Found::InBlocks(..)) {
            io.marks.hit(Mark::ReadAwaitsHistory);
        }
        match found {
            Found::InBlock(block) => {
                history.fetch(now, block, io);
                Answered::AwaitingHistory(block)
            }
            Found::InBlocks(first, blocks) => {
                for block in blocks {
                    history.fetch(now, block, io);
                }
                Answered::AwaitingHistory(first)
            }
            Found::Broken(block, problem) => Answered::Broken(block, problem),
            Found::Answer(_) => unreachable!("an answer is in hand"),
        }
    }
}

/// A failure the store may not repeat: worth another attempt inside the flight.
fn is_transient(error: BlobError) -> bool {
    matches!(error, BlobError::Throttled | BlobError::Unavailable | BlobError::Timeout)
}

fn reply(io: &mut Io, id: RequestId, result: Result<ReadOk, ReadError>) {
    io.effects.push_back(Effect::Reply { id, reply: Reply::Read(result) });
}
