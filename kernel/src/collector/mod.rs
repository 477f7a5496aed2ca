//! The collector (SPEC 10.15): after its replica wrote a checkpoint, it drops what no kept
//! checkpoint needs. It lists the checkpoints and decides which are kept (the newest three,
//! and any whose successor is younger than the grace); reads the kept ones' roots for the
//! shards, deltas and receipt blocks they use; deletes every shard, delta, receipt block
//! and root that no
//! kept checkpoint uses and that was older than the grace when the drop began; then the
//! body segment parts a newer whole window superseded, or of another layout than every
//! kept checkpoint's (SPEC 10.17), older than the grace; then the dropped checkpoint
//! objects; then, oldest first, the slots the oldest kept checkpoint
//! covers that were older than the slot retention. Every delete is conditioned on the
//! generation the drop listed, so an object freshened or written again since the listing
//! survives (the generation fence). Content objects (bodies, history blocks) are never
//! collected, and checkpoint zero, the world's anchor, stays.
//!
//! Ages are judged at the drop's start on the store's clock (`StoreClock`), never on the
//! replica's. A drop never blocks a commit or a read: its calls are its own.

#[cfg(test)]
mod tests;

use crate::blob::{BlobError, BlobOp, BlobOutcome, BlobResult, ObjectMeta};
use crate::config::Config;
use crate::format::{newest_whole_window, Checkpoint, Keys, Root, SegmentName};
use crate::hash::Hash32;
use crate::io::{Call, Io, Purpose};
use crate::marks::{Mark, Marks};
use crate::time::{micros, Instant};
use std::collections::{BTreeSet, VecDeque};

/// What a drop deletes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Collected {
    /// A shard no kept checkpoint uses.
    Shard,
    /// A delta no kept checkpoint uses (SPEC 10.16).
    Delta,
    /// A receipt block no kept checkpoint uses.
    Receipts,
    /// A root no kept checkpoint uses.
    Root,
    /// A body segment part a newer whole window of its label superseded, or of a layout
    /// no kept checkpoint has (SPEC 10.17).
    Segment,
    /// A checkpoint that is not kept.
    Checkpoint,
    /// A slot the oldest kept checkpoint covers, older than the slot retention.
    Slot,
}

/// The prefixes a drop lists, in the order it lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Listing {
    Checkpoints,
    Shards,
    Deltas,
    Receipts,
    Roots,
    Segments,
    Slots,
}

/// The calls the collector makes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum CollectCall {
    List(Listing),
    /// Read a kept checkpoint, then its root: the objects it uses.
    ReadCheckpoint {
        next_sequence: u64,
    },
    ReadRoot {
        name: Hash32,
    },
    /// Delete one object at the generation the drop listed.
    Delete {
        kind: Collected,
        key: String,
        size: u64,
    },
}

/// Reads a content-addressed object's name from its key.
type NameParser = fn(&Keys, &str) -> Option<Hash32>;

fn prefix(keys: &Keys, listing: Listing) -> String {
    match listing {
        Listing::Checkpoints => keys.checkpoints_prefix(),
        Listing::Shards => keys.shards_prefix(),
        Listing::Deltas => keys.deltas_prefix(),
        Listing::Receipts => keys.receipts_prefix(),
        Listing::Roots => keys.roots_prefix(),
        Listing::Segments => keys.segments_prefix(),
        Listing::Slots => keys.log_prefix(),
    }
}

fn collect(what: CollectCall) -> Purpose {
    Purpose::Collect(what)
}

/// Counters a report reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CollectorStats {
    /// Drops begun.
    pub drops: u64,
    /// Drops finished.
    pub drops_finished: u64,
    /// Drops given up (a kept checkpoint or its root unreadable).
    pub drops_abandoned: u64,
    /// Checkpoints deleted.
    pub deleted_checkpoints: u64,
    /// Roots deleted.
    pub deleted_roots: u64,
    /// Shards deleted.
    pub deleted_shards: u64,
    /// Deltas deleted.
    pub deleted_deltas: u64,
    /// Receipt blocks deleted.
    pub deleted_receipts: u64,
    /// Body segment parts deleted.
    pub deleted_segments: u64,
    /// Slots deleted.
    pub deleted_slots: u64,
    /// Bytes those deletes reclaimed (the sizes the drop listed).
    pub bytes_reclaimed: u64,
    /// Deletes refused because the object's generation had changed since the listing: a
    /// freshen or a new write won (the fence at work).
    pub fenced_deletes: u64,
    /// Deletes that found the object already gone (a peer's drop took it).
    pub already_gone: u64,
    /// The backend cannot condition a delete, so this replica collects nothing.
    pub off: bool,
}

impl CollectorStats {
    /// Adds another incarnation's counters (every field, so a new one is not forgotten).
    pub fn add(&mut self, other: &CollectorStats) {
        let CollectorStats {
            drops,
            drops_finished,
            drops_abandoned,
            deleted_checkpoints,
            deleted_roots,
            deleted_shards,
            deleted_deltas,
            deleted_receipts,
            deleted_segments,
            deleted_slots,
            bytes_reclaimed,
            fenced_deletes,
            already_gone,
            off,
        } = other;
        self.drops += drops;
        self.drops_finished += drops_finished;
        self.drops_abandoned += drops_abandoned;
        self.deleted_checkpoints += deleted_checkpoints;
        self.deleted_roots += deleted_roots;
        self.deleted_shards += deleted_shards;
        self.deleted_deltas += deleted_deltas;
        self.deleted_receipts += deleted_receipts;
        self.deleted_segments += deleted_segments;
        self.deleted_slots += deleted_slots;
        self.bytes_reclaimed += bytes_reclaimed;
        self.fenced_deletes += fenced_deletes;
        self.already_gone += already_gone;
        self.off |= off;
    }

    /// Objects deleted, of every kind.
    pub fn deleted(&self) -> u64 {
        self.deleted_checkpoints
            + self.deleted_roots
            + self.deleted_shards
            + self.deleted_deltas
            + self.deleted_receipts
            + self.deleted_segments
            + self.deleted_slots
    }
}

/// The checkpoint a drop starts from: the one its replica just wrote, its layout, and
/// every object name it uses (known, so the drop need not read it back).
pub(crate) struct Written {
    pub next_sequence: u64,
    pub shard_bits: u8,
    pub names: BTreeSet<Hash32>,
}

/// One drop under way.
struct Drop {
    /// The store's clock when the drop began: every age is judged against it.
    start_us: u64,
    /// The checkpoint this replica wrote, whose names `used` already holds.
    written: u64,
    stage: Listing,
    /// The listing of the current stage: the last key of the page before, whether a page
    /// is asked for, and whether the listing is over.
    after: Option<String>,
    listing: bool,
    listed: bool,
    checkpoints: Vec<ObjectMeta>,
    /// Names of the shards, receipt blocks and roots the kept checkpoints use.
    used: BTreeSet<Hash32>,
    /// The kept checkpoints' layouts: segments of any other go.
    kept_bits: BTreeSet<u8>,
    /// The segment parts listed of one label (bits and label), judged when the listing
    /// moves past it: the buffer holds one label's parts, never the whole prefix.
    label_parts: Vec<(SegmentName, ObjectMeta)>,
    /// Kept checkpoints still to read, and reads in flight.
    to_read: VecDeque<u64>,
    reads_in_flight: usize,
    /// The dropped checkpoint objects, deleted once what they used is gone.
    dropped: Vec<ObjectMeta>,
    /// The oldest kept full checkpoint: slots before it are covered.
    oldest_kept: Option<u64>,
    doomed: VecDeque<(Collected, ObjectMeta)>,
    deleting: usize,
}

pub(crate) struct Collector {
    keys: Keys,
    enabled: bool,
    grace_us: u64,
    slot_retention_us: u64,
    deletes_in_flight_max: usize,
    list_page_max: u32,
    drop: Option<Drop>,
    pub stats: CollectorStats,
    /// The last drop given up: when, and the store's error if one ended it (a health
    /// report's "last error").
    pub last_abandoned: Option<(Instant, Option<BlobError>)>,
}

impl Collector {
    pub fn new(config: &Config, keys: Keys) -> Collector {
        Collector {
            keys,
            enabled: config.collect,
            grace_us: micros(config.checkpoint_grace),
            slot_retention_us: micros(config.slot_retention),
            deletes_in_flight_max: config.collect_deletes_in_flight_max,
            list_page_max: config.list_page_max,
            drop: None,
            stats: CollectorStats::default(),
            last_abandoned: None,
        }
    }

    pub fn is_running(&self) -> bool {
        self.drop.is_some()
    }

    /// Begins a drop after this replica wrote `written`, at store time `start_us`. A drop
    /// already under way goes on instead (the next checkpoint starts the next one).
    pub fn start(&mut self, start_us: u64, written: Written) {
        if !self.enabled || self.stats.off || self.drop.is_some() {
            return;
        }
        self.stats.drops += 1;
        self.drop = Some(Drop {
            start_us,
            written: written.next_sequence,
            stage: Listing::Checkpoints,
            after: None,
            listing: false,
            listed: false,
            checkpoints: Vec::new(),
            used: written.names,
            kept_bits: BTreeSet::from([written.shard_bits]),
            label_parts: Vec::new(),
            to_read: VecDeque::new(),
            reads_in_flight: 0,
            dropped: Vec::new(),
            oldest_kept: None,
            doomed: VecDeque::new(),
            deleting: 0,
        });
    }

    /// Keeps the drop's listings, reads and deletes flowing.
    pub fn pump(&mut self, now: Instant, io: &mut Io) {
        let Some(drop) = self.drop.as_mut() else { return };
        loop {
            let in_flight_max = if drop.stage == Listing::Slots { 1 } else { self.deletes_in_flight_max };
            while drop.deleting < in_flight_max {
                let Some((kind, meta)) = drop.doomed.pop_front() else { break };
                drop.deleting += 1;
                let op = BlobOp::Delete { key: meta.key.clone(), if_generation: meta.generation.clone() };
                let what = CollectCall::Delete { kind, key: meta.key, size: meta.size };
                io.issue(now, collect(what), op, 0);
            }
            while drop.reads_in_flight < self.deletes_in_flight_max {
                let Some(next_sequence) = drop.to_read.pop_front() else { break };
                drop.reads_in_flight += 1;
                let op = BlobOp::Get { key: self.keys.checkpoint(next_sequence) };
                io.issue(now, collect(CollectCall::ReadCheckpoint { next_sequence }), op, 0);
            }
            let busy = drop.deleting > 0 || !drop.doomed.is_empty() || drop.reads_in_flight > 0;
            if busy || drop.listing {
                return;
            }
            if !drop.listed {
                drop.listing = true;
                let op = BlobOp::List {
                    prefix: prefix(&self.keys, drop.stage),
                    start_after: drop.after.clone(),
                    limit: self.list_page_max,
                };
                io.issue(now, collect(CollectCall::List(drop.stage)), op, 0);
                return;
            }
            // This stage's listing is over and its deletes are done: the next stage.
            let next = match drop.stage {
                Listing::Checkpoints => Listing::Shards,
                Listing::Shards => Listing::Deltas,
                Listing::Deltas => Listing::Receipts,
                Listing::Receipts => Listing::Roots,
                Listing::Roots => Listing::Segments,
                Listing::Segments => {
                    let dropped = std::mem::take(&mut drop.dropped);
                    drop.doomed.extend(dropped.into_iter().map(|m| (Collected::Checkpoint, m)));
                    Listing::Slots
                }
                Listing::Slots => {
                    self.stats.drops_finished += 1;
                    self.drop = None;
                    return;
                }
            };
            drop.stage = next;
            drop.after = None;
            drop.listed = false;
        }
    }

    /// A collector call completed. Nothing it meets fails the replica: the worst a drop
    /// does is stop and leave objects for the next one.
    pub fn on_done(&mut self, now: Instant, what: CollectCall, call: Call, result: BlobResult, io: &mut Io) {
        if self.drop.is_none() {
            return;
        }
        let (abandoned, error) = (self.stats.drops_abandoned, result.as_ref().err().copied());
        self.take_done(now, what, call, result, io);
        if self.stats.drops_abandoned > abandoned {
            self.last_abandoned = Some((now, error));
        }
    }

    fn take_done(&mut self, now: Instant, what: CollectCall, call: Call, result: BlobResult, io: &mut Io) {
        match (what, result) {
            (_, Err(e)) if e.is_transient() => io.retry_later(now, call),
            (CollectCall::List(stage), Ok(BlobOutcome::Listed { entries, more })) => {
                self.on_listed(stage, entries, more)
            }
            (CollectCall::ReadCheckpoint { next_sequence }, Ok(BlobOutcome::Got { bytes, .. })) => {
                let drop = self.drop.as_mut().expect("a drop");
                match Checkpoint::decode(&bytes) {
                    Ok(Checkpoint { root: Some(root), next_sequence: named, .. })
                        if named == next_sequence =>
                    {
                        drop.used.insert(root);
                        let op = BlobOp::Get { key: self.keys.root_object(&root) };
                        io.issue(now, collect(CollectCall::ReadRoot { name: root }), op, 0);
                    }
                    _ => self.abandon(&mut io.marks),
                }
            }
            (CollectCall::ReadRoot { name }, Ok(BlobOutcome::Got { bytes, .. })) => {
                let drop = self.drop.as_mut().expect("a drop");
                match Root::decode_named(&bytes, &name) {
                    Ok(root) => {
                        drop.kept_bits.insert(root.shard_bits);
                        drop.used.extend(root.shards);
                        drop.used.extend(root.deltas.iter().map(|d| d.block));
                        drop.used.extend(root.receipts.iter().map(|r| r.block));
                        drop.reads_in_flight -= 1;
                    }
                    Err(_) => self.abandon(&mut io.marks),
                }
            }
            (CollectCall::Delete { kind, size, .. }, result) => {
                self.on_deleted(kind, size, result, &mut io.marks)
            }
            // A kept checkpoint or its root that cannot be read: what it uses is unknown,
            // so nothing may be deleted on this drop's word.
            (_, _) => self.abandon(&mut io.marks),
        }
        self.pump(now, io);
    }

    fn on_listed(&mut self, stage: Listing, entries: Vec<ObjectMeta>, more: bool) {
        let (grace_us, retention_us) = (self.grace_us, self.slot_retention_us);
        let drop = self.drop.as_mut().expect("a drop");
        drop.listing = false;
        drop.after = entries.last().map(|e| e.key.clone()).or(drop.after.take());
        drop.listed = !more;
        let old = |m: &ObjectMeta, age_us: u64| m.created_at_us.saturating_add(age_us) <= drop.start_us;
        match stage {
            Listing::Checkpoints => {
                drop.checkpoints.extend(entries);
                if drop.listed {
                    self.decide();
                }
            }
            Listing::Shards | Listing::Deltas | Listing::Receipts | Listing::Roots => {
                let (kind, parse): (Collected, NameParser) = match stage {
                    Listing::Shards => (Collected::Shard, Keys::parse_shard),
                    Listing::Deltas => (Collected::Delta, Keys::parse_delta),
                    Listing::Receipts => (Collected::Receipts, Keys::parse_receipts),
                    _ => (Collected::Root, Keys::parse_root),
                };
                for m in entries {
                    let unused = parse(&self.keys, &m.key).is_some_and(|name| !drop.used.contains(&name));
                    if unused && old(&m, grace_us) {
                        drop.doomed.push_back((kind, m));
                    }
                }
            }
            Listing::Segments => {
                for m in entries {
                    // Not a segment part's key: not ours to judge.
                    let Some(name) = self.keys.parse_segment(&m.key) else { continue };
                    let label = |n: &SegmentName| (n.bits, n.label);
                    if drop.label_parts.first().is_some_and(|(n, _)| label(n) != label(&name)) {
                        judge_label(drop, grace_us);
                    }
                    drop.label_parts.push((name, m));
                }
                if drop.listed {
                    judge_label(drop, grace_us);
                }
            }
            Listing::Slots => {
                let covered_before = drop.oldest_kept.unwrap_or(0);
                for m in entries {
                    let covered = self.keys.parse_slot(&m.key).is_some_and(|first| first < covered_before);
                    if !(covered && old(&m, retention_us)) {
                        // The listing stops at the first slot it keeps.
                        drop.listed = true;
                        break;
                    }
                    drop.doomed.push_back((Collected::Slot, m));
                }
            }
        }
    }

    /// Which checkpoints are kept: the newest three, and any whose successor is younger
    /// than the grace. Of the rest, those older than the grace are dropped. Checkpoint
    /// zero is the world's anchor and is never dropped.
    fn decide(&mut self) {
        let grace_us = self.grace_us;
        let drop = self.drop.as_mut().expect("a drop");
        let mut full: Vec<(u64, ObjectMeta)> = std::mem::take(&mut drop.checkpoints)
            .into_iter()
            .filter_map(|m| self.keys.parse_checkpoint(&m.key).map(|s| (s, m)))
            .filter(|(s, _)| *s > 1)
            .collect();
        full.sort_by_key(|(s, _)| *s);
        let young = |m: &ObjectMeta| m.created_at_us.saturating_add(grace_us) > drop.start_us;
        for i in 0..full.len() {
            let newest_three = i + 3 >= full.len();
            let successor_young = full.get(i + 1).is_some_and(|(_, m)| young(m));
            let (next_sequence, meta) = &full[i];
            if newest_three || successor_young || young(meta) {
                drop.oldest_kept.get_or_insert(*next_sequence);
                if *next_sequence != drop.written {
                    drop.to_read.push_back(*next_sequence);
                }
            } else {
                drop.dropped.push(meta.clone());
            }
        }
    }

    fn on_deleted(&mut self, kind: Collected, size: u64, result: BlobResult, marks: &mut Marks) {
        let drop = self.drop.as_mut().expect("a drop");
        drop.deleting -= 1;
        match result {
            Ok(_) => {
                self.stats.bytes_reclaimed += size;
                match kind {
                    Collected::Shard => self.stats.deleted_shards += 1,
                    Collected::Delta => self.stats.deleted_deltas += 1,
                    Collected::Receipts => self.stats.deleted_receipts += 1,
                    Collected::Root => self.stats.deleted_roots += 1,
                    Collected::Segment => {
                        self.stats.deleted_segments += 1;
                        marks.hit(Mark::SegmentPartCollected);
                    }
                    Collected::Checkpoint => {
                        self.stats.deleted_checkpoints += 1;
                        marks.hit(Mark::CheckpointDropped);
                    }
                    Collected::Slot => {
                        self.stats.deleted_slots += 1;
                        marks.hit(Mark::SlotCollected);
                    }
                }
            }
            Err(BlobError::PreconditionFailed) => {
                self.stats.fenced_deletes += 1;
                marks.hit(Mark::DeleteFenced);
                // A slot is never rewritten: one at another generation ends the slots' turn.
                if kind == Collected::Slot {
                    drop.doomed.clear();
                    drop.listed = true;
                }
            }
            Err(BlobError::NotFound) => {
                self.stats.already_gone += 1;
                marks.hit(Mark::DeleteAlreadyGone);
            }
            Err(BlobError::Unsupported) => {
                self.stats.off = true;
                marks.hit(Mark::CollectionOff);
                self.abandon(marks);
            }
            Err(_) => self.abandon(marks),
        }
    }

    /// Ends the drop where it stands; the next drop starts over from its listings.
    fn abandon(&mut self, marks: &mut Marks) {
        if self.drop.take().is_some() {
            self.stats.drops_abandoned += 1;
            marks.hit(Mark::DropAbandoned);
        }
    }
}

/// Dooms the buffered label's parts past the grace that no kept checkpoint's reader
/// would want: all of them if the label's layout is none a kept checkpoint has, else
/// those of windows older than its newest whole one. Newer windows may be in progress
/// (part 0 is created last), and without a whole window a reader has nothing else.
fn judge_label(drop: &mut Drop, grace_us: u64) {
    let parts = std::mem::take(&mut drop.label_parts);
    let Some((first, _)) = parts.first() else { return };
    // None: another layout's label, every window of it goes.
    let newest = if drop.kept_bits.contains(&first.bits) {
        let names: Vec<SegmentName> = parts.iter().map(|(n, _)| *n).collect();
        let Some(newest) = newest_whole_window(&names) else { return };
        Some(newest)
    } else {
        None
    };
    for (name, m) in parts {
        let superseded = newest.is_none_or(|w| name.window < w);
        let old = m.created_at_us.saturating_add(grace_us) <= drop.start_us;
        if superseded && old {
            drop.doomed.push_back((Collected::Segment, m));
        }
    }
}
