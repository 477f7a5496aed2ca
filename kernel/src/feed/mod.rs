//! The change feed (SPEC 9): every change in sequence order, exactly once per
//! subscriber. Slots are the durable record; this module holds only a ring of the newest
//! events (and only while someone watches), each subscriber's cursor and credit, and the
//! slot reads of subscribers catching up from behind the ring.
//!
//! A subscriber is never lapped silently: one that falls behind the ring reads its
//! backlog from slots, a page (about a ring's worth of events) at a time. The slots it may
//! read are the newest `recent_slots_max` up to the tip: the replica's index of newest
//! slots, and after a cold start from a checkpoint, the slots before that checkpoint that
//! `before` lists, reads and verifies along the chain. One whose cursor is older than
//! that, or whose slots are gone from the bucket, is told to resync.
//!
//! Events leave in batches of at most [`CHANGES_BYTES_MAX`], never one unbounded page.
//! While anyone watches, the feed also keeps the backstop poll (the record's 5 s): when
//! the replica has learned no slot for `watch_poll`, it asks the read path's probe for
//! the tip (the feed starts no call of its own for it), so watchers advance without
//! hints. Nobody watching, no poll. The slot cache empties after `feed_slots_idle`
//! without a backlog read.

mod before;

use crate::blob::{BlobError, BlobOp, BlobOutcome, BlobResult};
use crate::effect::{Effect, WatchEnd};
use crate::format::{DecodeError, Keys, NameRule, Slot};
use crate::hash::Hash32;
use crate::ids::RequestId;
use crate::io::{Call, Io, Purpose};
use crate::marks::{Mark, Marks};
use crate::reply::FailReason;
use crate::snapshot::{SlotSpan, Snapshot};
use crate::time::Instant;
use crate::world::Receipt;
use before::{Before, Reach};
use core::time::Duration;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The most bytes of events one `Effect::Changes` carries (record: catch-up is delivered
/// in 64 KB batches), counted by [`event_bytes`]. A single event larger than this still
/// goes, alone.
pub const CHANGES_BYTES_MAX: usize = 64 * 1024;

/// What one event counts against [`CHANGES_BYTES_MAX`]: its path plus a fixed 48 bytes
/// for the operation id (16), sequence (8), version (8), kind and framing, about what it
/// takes on the wire to a watcher.
pub fn event_bytes(r: &Receipt) -> usize {
    EVENT_FIXED_BYTES + r.path.as_ref().map_or(0, |p| p.as_str().len())
}

const EVENT_FIXED_BYTES: usize = 48;

/// How many of `events` (at least one, when any) fit in one batch of [`CHANGES_BYTES_MAX`].
fn fitting<'a>(events: impl Iterator<Item = &'a Receipt>) -> usize {
    let mut bytes = 0;
    let mut n = 0;
    for r in events {
        bytes += event_bytes(r);
        if n > 0 && bytes > CHANGES_BYTES_MAX {
            break;
        }
        n += 1;
    }
    n
}

/// Counters a report reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeedStats {
    /// Backstop polls started: rounds of the read path's probe asked for by watchers
    /// after `watch_poll` without a slot learned.
    pub polls: u64,
    /// Times the slot cache was emptied after `feed_slots_idle` without a backlog read.
    pub slot_cache_idled: u64,
    /// Subscriptions taken.
    pub watches: u64,
    /// Receipts delivered to subscribers.
    pub events_delivered: u64,
    /// Subscriptions that resumed from history the ring held.
    pub resumes_ring: u64,
    /// Subscriptions that read history from slots (at the start, or after falling behind).
    pub resumes_slots: u64,
    /// Subscriptions ended with `WatchEnd::Resync`: their cursor was out of reach.
    pub resyncs: u64,
    /// Slots read for subscribers' backlogs.
    pub slot_reads: u64,
    /// Slots before the checkpoint the replica opened from, read and verified along the
    /// chain for subscribers resuming before it.
    pub slots_verified_before_checkpoint: u64,
}

struct Sub {
    /// The next sequence to deliver.
    next: u64,
    credit: u64,
    /// Catching up from slots: the page being read.
    page: Option<Page>,
    /// Reading from slots rather than the ring (counts each fall behind once).
    behind: bool,
}

/// Slots a subscriber reads from behind the ring, oldest first; `asked` of them have
/// been asked for (or were already at hand).
struct Page {
    spans: VecDeque<SlotSpan>,
    asked: usize,
}

/// The calls the feed makes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum FeedCall {
    /// Read the backlog slot at `sequence`, which must be the one indexed or verified
    /// there (its object hash is `hash`).
    Slot { sequence: u64, hash: Hash32 },
    /// List slot names before the checkpoint the replica opened from.
    ListBefore,
    /// Read a slot before that checkpoint, to verify it along the chain.
    ReadBefore { sequence: u64 },
}

pub(crate) struct Feed {
    keys: Keys,
    ring_events_max: usize,
    watches_max: usize,
    page_events: u64,
    gets_max: usize,
    slots_cached_max: usize,
    list_page_max: u32,
    reach_slots_max: usize,
    /// The slots before the checkpoint the replica opened from (None at checkpoint zero,
    /// which has nothing before it).
    before: Option<Before>,
    /// The newest events, only while anyone watches; `ring_start` is the sequence the
    /// ring begins at (the next to come, when empty).
    ring: VecDeque<Receipt>,
    ring_start: u64,
    subs: BTreeMap<RequestId, Sub>,
    /// Events of slots read for backlogs, by first sequence; the oldest go first.
    slots: BTreeMap<u64, Vec<Receipt>>,
    slot_order: VecDeque<u64>,
    /// Backlog slots asked for and not yet read.
    requested: BTreeSet<u64>,
    /// The slot cache empties this long after its last backlog read.
    slots_idle: Duration,
    /// The last backlog read (a delivery from the slot cache, or a slot kept into it).
    slots_read_at: Option<Instant>,
    /// The backstop poll interval; zero is off.
    poll: Duration,
    /// A poll round asked for at this instant, until the snapshot is known current since.
    poll_round: Option<Instant>,
    /// The `watch_poll_skipped` defect.
    poll_skipped: bool,
    pub stats: FeedStats,
}

impl Feed {
    pub fn new(config: &crate::Config, keys: Keys) -> Feed {
        Feed {
            keys,
            ring_events_max: config.ring_events_max,
            watches_max: config.watches_max,
            page_events: config.ring_events_max as u64,
            gets_max: config.replay_gets_max,
            slots_cached_max: config.feed_slots_cached_max,
            list_page_max: config.list_page_max,
            reach_slots_max: config.recent_slots_max,
            before: None,
            ring: VecDeque::new(),
            ring_start: 0,
            subs: BTreeMap::new(),
            slots: BTreeMap::new(),
            slot_order: VecDeque::new(),
            requested: BTreeSet::new(),
            slots_idle: config.feed_slots_idle,
            slots_read_at: None,
            poll: config.watch_poll,
            poll_round: None,
            poll_skipped: config.defects().watch_poll_skipped,
            stats: FeedStats::default(),
        }
    }

    /// The replica opened from the full checkpoint whose next sequence is `next_sequence`
    /// and whose previous hash is `previous_hash`: the slots before it may be read.
    pub fn opened_from(&mut self, next_sequence: u64, previous_hash: Hash32) {
        if next_sequence > 1 {
            let anchor = (next_sequence, previous_hash);
            self.before =
                Some(Before::new(self.keys.clone(), anchor, self.list_page_max, self.reach_slots_max));
        }
    }

    /// Takes the snapshot's newly installed events into the ring (or drops them when
    /// nobody watches).
    pub fn absorb(&mut self, sn: &mut Snapshot) {
        if self.subs.is_empty() {
            sn.fresh.clear();
            return;
        }
        for r in sn.fresh.drain(..) {
            invariant_eq!(r.sequence, self.ring_start + self.ring.len() as u64);
            self.ring.push_back(r);
        }
        while self.ring.len() > self.ring_events_max {
            self.ring.pop_front();
            self.ring_start += 1;
        }
    }

    /// Subscribes `id` to every change after `cursor`.
    pub fn watch(&mut self, id: RequestId, cursor: u64, credit: u32, sn: &Snapshot, io: &mut Io) {
        if self.subs.len() >= self.watches_max {
            let end = WatchEnd::Busy { watches: self.subs.len() };
            io.effects.push_back(Effect::WatchEnded { id, end });
            return;
        }
        if self.subs.is_empty() {
            self.ring.clear();
            self.ring_start = sn.world.next_sequence();
        }
        self.stats.watches += 1;
        let next = cursor.saturating_add(1);
        if next <= sn.world.sequence() && next >= self.ring_start {
            self.stats.resumes_ring += 1;
        }
        self.subs.insert(id, Sub { next, credit: u64::from(credit), page: None, behind: false });
    }

    pub fn credit(&mut self, id: RequestId, events: u32) {
        if let Some(s) = self.subs.get_mut(&id) {
            s.credit += u64::from(events);
        }
    }

    /// The subscriber is gone; an unwatched hub holds no ring.
    pub fn unwatch(&mut self, id: RequestId) {
        self.subs.remove(&id);
        if self.subs.is_empty() {
            self.ring.clear();
            self.slots.clear();
            self.slot_order.clear();
            self.slots_read_at = None;
            self.poll_round = None;
            // Reads in flight still land; they are dropped on arrival.
        }
    }

    pub fn fail(&mut self, reason: &FailReason, io: &mut Io) {
        for id in std::mem::take(&mut self.subs).into_keys() {
            io.effects.push_back(Effect::WatchEnded { id, end: WatchEnd::Failed(reason.clone()) });
        }
        self.ring.clear();
    }

    /// Delivers what each subscriber has credit for, moves subscribers between the ring
    /// and slot reads, and starts the slot reads they need.
    pub fn deliver(&mut self, now: Instant, sn: &Snapshot, io: &mut Io) {
        if let Some(before) = self.before.as_mut() {
            before.trim(sn);
        }
        self.idle_slots(now);
        let ids: Vec<RequestId> = self.subs.keys().copied().collect();
        for id in ids {
            self.deliver_one(now, id, sn, io);
        }
        self.fetch_before(now, sn, io);
        self.fetch_pages(now, io);
    }

    fn deliver_one(&mut self, now: Instant, id: RequestId, sn: &Snapshot, io: &mut Io) {
        let tip = sn.world.sequence();
        let ring_end = self.ring_start + self.ring.len() as u64;
        let sub = self.subs.get_mut(&id).expect("listed");
        loop {
            if sub.credit == 0 || sub.next > tip {
                return;
            }
            if sub.page.is_none() && sub.next >= self.ring_start && sub.next < ring_end {
                let from = (sub.next - self.ring_start) as usize;
                sub.behind = false;
                let n = (sub.credit as usize).min(self.ring.len() - from);
                let n = fitting(self.ring.range(from..from + n));
                let events: Vec<Receipt> = self.ring.range(from..from + n).cloned().collect();
                sub.next += n as u64;
                sub.credit -= n as u64;
                self.stats.events_delivered += n as u64;
                io.effects.push_back(Effect::Changes { id, events });
                continue;
            }
            if sub.page.is_none() {
                // Behind the ring: read from slots while they are in the index, or verified
                // before the checkpoint the replica opened from.
                let reach = match (sn.recent.holding(sub.next), self.before.as_ref()) {
                    (Some(_), _) => Reach::Verified,
                    (None, Some(before)) => before.reach(sub.next, sn),
                    (None, None) => Reach::Gone,
                };
                if reach == Reach::Gone {
                    self.stats.resyncs += 1;
                    io.marks.hit(Mark::FeedResync);
                    let end = WatchEnd::Resync { cursor: sub.next - 1, tip };
                    io.effects.push_back(Effect::WatchEnded { id, end });
                    self.subs.remove(&id);
                    return;
                }
                if !sub.behind {
                    sub.behind = true;
                    self.stats.resumes_slots += 1;
                    io.marks.hit(Mark::FeedBehindRing);
                }
                if reach == Reach::Reading {
                    return; // `fetch_before` reads towards it
                }
                // A page: slots from the cursor until about a ring's worth of events, or
                // until the ring holds the rest.
                let mut spans = VecDeque::new();
                let mut events = 0;
                let verified = self.before.iter().flat_map(|b| b.from(sub.next));
                for s in verified.chain(sn.recent.from(sub.next)) {
                    if events >= self.page_events || s.first >= self.ring_start {
                        break;
                    }
                    events += s.last - s.first.max(sub.next) + 1;
                    spans.push_back(*s);
                }
                sub.page = Some(Page { spans, asked: 0 });
            }
            // Deliver the page's slots that have been read, in order.
            let page = sub.page.as_mut().expect("set above");
            let mut delivered_any = false;
            while let Some(span) = page.spans.front() {
                let Some(events) = self.slots.get(&span.first) else {
                    if !self.requested.contains(&span.first) {
                        page.asked = 0; // read once, since evicted: ask again
                    }
                    break;
                };
                let due = || events.iter().filter(|r| r.sequence >= sub.next).take(sub.credit as usize);
                let take: Vec<Receipt> = due().take(fitting(due())).cloned().collect();
                if !take.is_empty() {
                    self.slots_read_at = Some(now);
                    sub.next = take.last().expect("non-empty").sequence + 1;
                    sub.credit -= take.len() as u64;
                    self.stats.events_delivered += take.len() as u64;
                    io.effects.push_back(Effect::Changes { id, events: take });
                    delivered_any = true;
                }
                if sub.next > span.last {
                    page.spans.pop_front();
                    page.asked = page.asked.saturating_sub(1);
                } else {
                    break; // out of credit inside this slot
                }
            }
            if page.spans.is_empty() {
                sub.page = None;
                continue;
            }
            if !delivered_any || sub.credit == 0 {
                return;
            }
        }
    }

    /// Empties the slot cache once no backlog read touched it for `feed_slots_idle`.
    fn idle_slots(&mut self, now: Instant) {
        let Some(at) = self.slots_read_at else { return };
        if now.saturating_since(at) >= self.slots_idle {
            if !self.slots.is_empty() {
                self.stats.slot_cache_idled += 1;
            }
            self.slots.clear();
            self.slot_order.clear();
            self.slots_read_at = None;
        }
    }

    /// Slot events the feed holds decoded (the slot cache).
    pub fn slots_cached(&self) -> usize {
        self.slots.len()
    }

    /// Whether the backstop poll wants the tip probed now: someone watches, and the
    /// replica has learned nothing of the tip for `watch_poll` (the latest of the last
    /// confirmation and the last install). A round lasts until the snapshot is known
    /// current since it began, so a poll that finds slots reads on until the tip.
    pub fn poll_wanted(&mut self, now: Instant, sn: &Snapshot) -> bool {
        if self.subs.is_empty() || self.poll.is_zero() || self.poll_skipped {
            self.poll_round = None;
            return false;
        }
        if let Some(at) = self.poll_round {
            if !sn.current_since(at) {
                return true;
            }
            self.poll_round = None;
        }
        if self.next_poll(sn).is_some_and(|t| t <= now) {
            self.stats.polls += 1;
            self.poll_round = Some(now);
            return true;
        }
        false
    }

    /// When the feed next needs a wake-up: the next poll while anyone watches, and the
    /// slot cache's idle end while it holds anything.
    pub fn next_deadline(&self, sn: &Snapshot) -> Option<Instant> {
        let idle = self.slots_read_at.filter(|_| !self.slots.is_empty()).map(|t| t + self.slots_idle);
        let poll = if self.poll_round.is_some() { None } else { self.next_poll(sn) };
        idle.into_iter().chain(poll).min()
    }

    fn next_poll(&self, sn: &Snapshot) -> Option<Instant> {
        if self.subs.is_empty() || self.poll.is_zero() || self.poll_skipped {
            return None;
        }
        let installed = sn.recent.newest(1).next().map(|s| s.installed_at);
        Some(installed.map_or(sn.confirmed_at, |t| t.max(sn.confirmed_at)) + self.poll)
    }

    /// Lists and reads the slots before the checkpoint towards the oldest subscriber
    /// waiting on them.
    fn fetch_before(&mut self, now: Instant, sn: &Snapshot, io: &mut Io) {
        let Some(before) = self.before.as_mut() else { return };
        let waiting = self.subs.values().filter(|s| s.credit > 0 && s.page.is_none());
        let want = waiting.map(|s| s.next).filter(|n| before.reach(*n, sn) == Reach::Reading).min();
        if let Some(want) = want {
            let gets_max = self.gets_max.saturating_sub(self.requested.len());
            before.pump(now, want, gets_max, sn, io);
        }
    }

    /// Starts reads for the slots pages wait on, up to `gets_max` in flight.
    fn fetch_pages(&mut self, now: Instant, io: &mut Io) {
        for sub in self.subs.values_mut() {
            let Some(page) = sub.page.as_mut() else { continue };
            while page.asked < page.spans.len() && self.requested.len() < self.gets_max {
                let span = page.spans[page.asked];
                page.asked += 1;
                if self.slots.contains_key(&span.first) || !self.requested.insert(span.first) {
                    continue;
                }
                self.stats.slot_reads += 1;
                let purpose = Purpose::Feed(FeedCall::Slot { sequence: span.first, hash: span.hash });
                io.issue(now, purpose, BlobOp::Get { key: self.keys.slot(span.first) }, 0);
            }
        }
    }

    /// A call of the feed's settled.
    pub fn on_done(
        &mut self,
        now: Instant,
        sn: &Snapshot,
        what: FeedCall,
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        match what {
            FeedCall::Slot { sequence, hash } => self.on_slot(now, (sequence, hash), call, result, io),
            FeedCall::ListBefore => {
                let Some(before) = self.before.as_mut() else { return Ok(()) };
                match result {
                    Ok(BlobOutcome::Listed { entries, more }) => {
                        before.on_listed(now, &entries, more, sn, io)?;
                        self.verify_before(now, &mut io.marks)
                    }
                    _ => {
                        io.retry_later(now, call);
                        Ok(())
                    }
                }
            }
            FeedCall::ReadBefore { sequence } => {
                let Some(before) = self.before.as_mut() else { return Ok(()) };
                match result {
                    Ok(BlobOutcome::Got { bytes, .. }) => {
                        before.on_read(sequence, &bytes)?;
                        self.verify_before(now, &mut io.marks)
                    }
                    Err(BlobError::NotFound) => {
                        io.marks.hit(Mark::FeedBeforeSlotCollected);
                        before.on_gone(sequence);
                        Ok(())
                    }
                    _ => {
                        io.retry_later(now, call);
                        Ok(())
                    }
                }
            }
        }
    }

    /// Verifies what has been read before the checkpoint; keeps what it verified at hand
    /// for the pages about to read it.
    fn verify_before(&mut self, now: Instant, marks: &mut Marks) -> Result<(), FailReason> {
        let Some(before) = self.before.as_mut() else { return Ok(()) };
        for (sequence, events) in before.verify(now)? {
            self.stats.slots_verified_before_checkpoint += 1;
            marks.hit(Mark::FeedVerifiedBeforeCheckpoint);
            self.keep(now, sequence, events);
        }
        Ok(())
    }

    /// Keeps a slot's events for the pages reading it; the oldest kept go first.
    fn keep(&mut self, now: Instant, sequence: u64, events: Vec<Receipt>) {
        if self.subs.is_empty() || self.slots.contains_key(&sequence) {
            return;
        }
        self.slots.insert(sequence, events);
        self.slot_order.push_back(sequence);
        self.slots_read_at = Some(self.slots_read_at.map_or(now, |t| t.max(now)));
        while self.slot_order.len() > self.slots_cached_max {
            let old = self.slot_order.pop_front().expect("non-empty");
            self.slots.remove(&old);
        }
    }

    /// A backlog slot arrived.
    fn on_slot(
        &mut self,
        now: Instant,
        (sequence, hash): (u64, Hash32),
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        match result {
            Ok(BlobOutcome::Got { bytes, .. }) => {
                self.requested.remove(&sequence);
                let key = self.keys.slot(sequence);
                if Hash32::of(&bytes) != hash {
                    let error = DecodeError::Misnamed(NameRule::SlotNotTheInstalledOne);
                    return Err(FailReason::Decode { key, error });
                }
                let slot =
                    Slot::decode_at(sequence, &bytes).map_err(|error| FailReason::Decode { key, error })?;
                self.keep(now, sequence, slot.members.into_iter().map(|m| m.receipt).collect());
            }
            Err(BlobError::NotFound) => match self.before.as_mut() {
                // Before the checkpoint, a slot read once may since have been collected:
                // the pages waiting on it end in a resync.
                Some(before) if sequence < before.start => {
                    io.marks.hit(Mark::FeedBeforeSlotCollected);
                    self.requested.remove(&sequence);
                    before.lost(sequence);
                    for sub in self.subs.values_mut() {
                        if sub.page.as_ref().is_some_and(|p| p.spans.iter().any(|s| s.first == sequence)) {
                            sub.page = None;
                        }
                    }
                }
                _ => return Err(FailReason::SlotVanished { sequence }),
            },
            _ => io.retry_later(now, call),
        }
        Ok(())
    }
}
