//! Body search (SPEC 8.6): documents whose current body matches a query, answered from an
//! index only when that index covers every body of the state the search reads, and from
//! the catalog (document paths) otherwise, flagged as such. Never a partial body answer.
//!
//! Nothing here runs on the commit path or while a slot is applied. An install only notes
//! the bodies it brought (`Installs`, in the snapshot) while the index is active; the
//! replica hands those notes over when it settles, and the index reads and tokenizes the
//! bodies it lacks in the background, a bounded number of bytes at a time. The index is
//! built on the first search, kept current while searches come, and dropped after
//! `search_idle_max` without one, or when it grows past `search_bytes_max`.
//!
//! The index is keyed by body hash, so it holds one immutable entry per body, right for
//! every snapshot: a state is covered when every body its documents hold is indexed. A
//! build takes its first bodies from the bucket's body segments (`segments`), then reads
//! from blobs what they lacked.

mod index;
mod prepare;
pub mod query;
mod segments;
mod varint;

use crate::blob::BlobResult;
use crate::bodies::Bodies;
use crate::config::Config;
use crate::format::Keys;
use crate::hash::Hash32;
use crate::io::{Call, Io};
use crate::marks::Mark;
use crate::snapshot::Snapshot;
use crate::time::Instant;
use crate::views::{AtPin, ReadWorld};
use crate::world::{IndexEntry, Path, WorldState};
use bytes::Bytes;
use core::time::Duration;
use index::{ContentIndex, Translation};
pub use prepare::{prepare_part, segment_parts, Prepared, PreparedPart};
pub(crate) use prepare::{segment_parts_reusing, words_of, CarriedBodies, CarriedWords};
use query::{words, Query};
use rustc_hash::FxHashSet;
pub(crate) use segments::SearchCall;
use segments::{Loaded, Room, SegmentLoad};
use std::collections::{BTreeSet, VecDeque};

/// More installs than this queued for the index collapse into one comparison with the
/// served state (the record's amendment: 1,024).
pub const INSTALLS_QUEUED_MAX: usize = 1_024;

/// Past this many bodies holding a query's words, a page is found by walking documents in
/// path order rather than by sorting every matching body's documents.
const SCAN_ABOVE_BODIES: u64 = 1_024;

/// Catalog answers kept for a search asked again at the same state (see
/// [`Search::catalog_page`]).
const CATALOG_ANSWERS_KEPT: usize = 4;

/// How a search answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SearchMatch {
    /// From document bodies: exact for the state answered from.
    Body,
    /// From the catalog (document paths) only: no index covered the state in time.
    Catalog,
}

/// Counters a report reads (serialized as the simulation's `search` report).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SearchStats {
    /// Searches answered in body mode.
    pub body_answers: u64,
    /// Searches answered in catalog mode.
    pub catalog_answers: u64,
    /// Times an index was started (the first search, or one after it was dropped).
    pub builds: u64,
    /// Bodies read and indexed.
    pub bodies_indexed: u64,
    /// Bodies the index asked the bucket for, one blob each.
    pub bodies_fetched: u64,
    /// Segment parts read for a build (SPEC 10.17).
    pub segment_parts_read: u64,
    /// Bodies a build took from segment parts rather than blobs.
    pub bodies_from_segments: u64,
    /// Times the index was dropped for going unused.
    pub idle_drops: u64,
    /// Times the index was dropped for growing past its bound.
    pub over_budget_drops: u64,
}

impl SearchStats {
    /// Adds another replica's (or incarnation's) counters to these.
    pub fn add(&mut self, other: &SearchStats) {
        let SearchStats {
            body_answers,
            catalog_answers,
            builds,
            bodies_indexed,
            bodies_fetched,
            segment_parts_read,
            bodies_from_segments,
            idle_drops,
            over_budget_drops,
        } = other;
        self.body_answers += body_answers;
        self.catalog_answers += catalog_answers;
        self.builds += builds;
        self.bodies_indexed += bodies_indexed;
        self.bodies_fetched += bodies_fetched;
        self.segment_parts_read += segment_parts_read;
        self.bodies_from_segments += bodies_from_segments;
        self.idle_drops += idle_drops;
        self.over_budget_drops += over_budget_drops;
    }
}

/// What installs brought since the index last took them. Kept in the snapshot, because
/// every install goes through it; it records only while the index is active.
#[derive(Default)]
pub(crate) struct Installs {
    active: bool,
    added: Vec<Hash32>,
    replaced: Vec<Hash32>,
    queued: usize,
    /// Too many queued: the index compares itself with the whole served state instead.
    collapsed: bool,
}

impl Installs {
    /// Notes the bodies a slot brings and those it replaces, before it is applied.
    pub fn record(&mut self, world: &WorldState, slot: &crate::format::Slot) {
        if !self.active || self.collapsed {
            return;
        }
        self.queued += 1;
        if self.queued > INSTALLS_QUEUED_MAX {
            self.collapsed = true;
            self.added.clear();
            self.replaced.clear();
            return;
        }
        for entry in slot.members.iter().filter_map(|m| m.entry.as_ref()) {
            if let Some(old) = world.document(&entry.path).filter(|d| d.entry.body_hash != entry.body_hash) {
                self.replaced.push(old.entry.body_hash);
            }
            self.added.push(entry.body_hash);
        }
    }

    fn is_drained(&self) -> bool {
        self.queued == 0 && !self.collapsed
    }
}

pub(crate) struct Search {
    keys: Keys,
    list_page_max: u32,
    wait: Duration,
    idle_max: Duration,
    bytes_max: usize,
    fetches_max: usize,
    step_bytes_max: usize,
    warm_at_open: bool,
    /// How long a replaced body stays indexed for views still pinned where it was.
    retire_after: Duration,
    active: bool,
    /// Compare with the whole served state before trusting `missing`.
    rescan: bool,
    last_search: Instant,
    /// The last time the replica settled the index: a step left over is due then.
    settled_at: Instant,
    /// No build starts before this (after a drop for size).
    refused_until: Option<Instant>,
    index: ContentIndex,
    /// Bodies the served state holds that are not indexed. A hash set (a fixed hasher, and
    /// nothing depends on its order): a build takes one out per body, and at a million
    /// bodies B-tree searches, this set's among them, were about 5% of a build's samples.
    missing: FxHashSet<Hash32>,
    /// Of those, the ones not asked for yet, in the order they were found.
    queue: VecDeque<Hash32>,
    fetching: BTreeSet<Hash32>,
    /// Bodies in hand, tokenized, waiting for their step to be indexed, and their bytes.
    ready: VecDeque<Ready>,
    ready_bytes: usize,
    /// A segment part the embedder tokenized, handed in with its read's completion.
    offered: Option<PreparedPart>,
    /// The build's reading of segments, until it is done: blobs wait for it.
    segments: Option<SegmentLoad>,
    /// Bodies the served state stopped holding, and when.
    retired: VecDeque<(Instant, Hash32)>,
    /// The last few catalog answers, newest last.
    catalog_answers: VecDeque<CatalogAnswer>,
    pub stats: SearchStats,
}

/// A catalog page, with what determines it: the state's sequence (a state is a function
/// of its sequence, so every view at one sequence reads the same documents), the query
/// and the page asked for.
struct CatalogAnswer {
    sequence: u64,
    query: Query,
    start_after: Option<String>,
    limit: usize,
    entries: Vec<IndexEntry>,
    more: bool,
}

impl Search {
    pub fn new(config: &Config, keys: Keys) -> Search {
        Search {
            keys,
            list_page_max: config.list_page_max,
            wait: config.search_wait,
            idle_max: config.search_idle_max,
            bytes_max: config.search_bytes_max,
            fetches_max: config.search_fetches_max,
            step_bytes_max: config.search_step_bytes_max,
            warm_at_open: config.search_warm_at_open,
            retire_after: config.view_age_max,
            active: false,
            rescan: false,
            last_search: Instant::ZERO,
            settled_at: Instant::ZERO,
            refused_until: None,
            index: ContentIndex::default(),
            missing: FxHashSet::default(),
            queue: VecDeque::new(),
            fetching: BTreeSet::new(),
            ready: VecDeque::new(),
            ready_bytes: 0,
            offered: None,
            segments: None,
            retired: VecDeque::new(),
            catalog_answers: VecDeque::new(),
            stats: SearchStats::default(),
        }
    }

    /// Whether the index starts when the replica opens (`search_warm_at_open`).
    pub fn warms_at_open(&self) -> bool {
        self.warm_at_open
    }

    /// How long a search waits for an index covering its state.
    pub fn wait(&self) -> Duration {
        self.wait
    }

    /// Bytes the index holds, as counted.
    pub fn bytes(&self) -> usize {
        self.index.bytes()
    }

    /// A search came: the index is used, and built if it was not.
    pub fn touch(&mut self, now: Instant) {
        self.last_search = now;
        if self.active || self.refused_until.is_some_and(|t| now < t) {
            return;
        }
        self.refused_until = None;
        self.active = true;
        self.rescan = true;
        self.stats.builds += 1;
    }

    /// When the index needs the replica again: at once while bodies wait to be indexed,
    /// or when it goes idle.
    pub fn next_deadline(&self) -> Option<Instant> {
        if !self.active {
            return None;
        }
        // A build just asked for, or bodies in hand: due at once.
        if self.rescan || !self.ready.is_empty() || self.segments.as_ref().is_some_and(|l| l.is_done()) {
            return Some(self.settled_at);
        }
        Some(self.last_search + self.idle_max)
    }

    /// A body arrived (verified against its hash): kept for indexing if the index lacks it.
    pub fn on_body(&mut self, hash: &Hash32, body: &Bytes) {
        let asked = self.fetching.remove(hash);
        if self.active && (asked || self.missing.contains(hash)) {
            self.push_ready(*hash, body.clone());
        }
    }

    fn push_ready(&mut self, hash: Hash32, body: Bytes) {
        self.ready_bytes += body.len();
        let part = prepare::prepare_body(hash, &body);
        self.ready.push_back(Ready {
            part,
            waiting: VecDeque::from([0]),
            translation: Translation::default(),
        });
    }

    /// The next completion is of a segment part already tokenized: `part`.
    pub fn offer(&mut self, part: PreparedPart) {
        self.offered = Some(part);
    }

    /// That completion is routed: an offer it did not take goes.
    pub fn withdraw(&mut self) {
        self.offered = None;
    }

    /// A segment call completed. A call of a build since dropped is ignored.
    pub fn on_done(&mut self, now: Instant, what: SearchCall, call: Call, result: BlobResult, io: &mut Io) {
        let build = match &what {
            SearchCall::List { build } | SearchCall::Part { build, .. } => *build,
        };
        let offered = self.offered.take();
        let Some(load) = self.segments.as_mut().filter(|l| l.build() == build) else { return };
        if let Loaded::Part(part) = load.on_done(now, what, call, result, offered, &self.keys, io) {
            self.stats.segment_parts_read += 1;
            io.marks.hit(Mark::SearchSegmentRead);
            if part.words_taken() {
                io.marks.hit(Mark::SearchSegmentWordsTaken);
            }
            // No body missing is indexed: one leaves `missing` as it is indexed.
            let waiting: VecDeque<usize> = (part.bodies().iter().enumerate())
                .filter(|(_, b)| self.missing.contains(&b.hash))
                .map(|(i, _)| i)
                .collect();
            if !waiting.is_empty() {
                self.stats.bodies_from_segments += waiting.len() as u64;
                self.ready_bytes += waiting.iter().map(|i| part.bodies()[*i].len).sum::<usize>();
                self.ready.push_back(Ready { part, waiting, translation: Translation::default() });
            }
        }
    }

    /// Takes what installs brought, reads the bodies the index lacks, and indexes a step
    /// of those in hand.
    pub fn settle(&mut self, now: Instant, sn: &mut Snapshot, bodies: &mut Bodies, io: &mut Io) {
        self.settled_at = now;
        if self.active && now.saturating_since(self.last_search) >= self.idle_max {
            io.marks.hit(Mark::SearchIndexIdle);
            self.stats.idle_drops += 1;
            self.drop_index(sn);
            return;
        }
        if !self.active {
            return;
        }
        let installs = std::mem::take(&mut sn.search);
        sn.search.active = true;
        if installs.collapsed {
            io.marks.hit(Mark::SearchInstallsCollapsed);
        }
        if self.rescan || installs.collapsed {
            self.rescan = false;
            self.missing.clear();
            self.queue.clear();
            // A build finds every body missing and indexes them all: sized once, the
            // tables do not hold an old copy beside a new one as they grow (at a million
            // bodies the set's 35 MB beside 69).
            if self.index.is_empty() {
                let count = sn.world.body_hashes().size_hint().0;
                self.missing.reserve(count);
                self.queue.reserve(count);
                self.index.reserve(count);
            }
            for hash in sn.world.body_hashes() {
                if !self.index.contains(hash) {
                    self.missing.insert(*hash);
                    self.queue.push_back(*hash);
                }
            }
            // A build reads segments first; a comparison after collapsed installs finds
            // few bodies missing, and blobs serve them.
            if self.index.is_empty() && !self.missing.is_empty() {
                self.segments = Some(SegmentLoad::new(self.stats.builds));
            }
        } else {
            // Only what the served state holds now: a slot may replace a body another
            // member of it (or an earlier slot) just brought.
            for hash in installs.added {
                let held = sn.world.paths_with_body(&hash).next().is_some();
                if held && !self.index.contains(&hash) && self.missing.insert(hash) {
                    self.queue.push_back(hash);
                }
            }
            // A body replaced before it was indexed is not worth reading once no document
            // holds it; an indexed one stays a while for views pinned where it was.
            for hash in installs.replaced {
                if sn.world.paths_with_body(&hash).next().is_some() {
                    continue;
                }
                if !self.missing.remove(&hash) {
                    self.retired.push_back((now, hash));
                }
            }
        }
        self.forget_retired(now, &sn.world);
        self.load_segments(now, io);
        if self.segments.is_none() {
            self.fetch(now, sn, bodies, io);
        }
        self.index_step(sn, io);
    }

    fn load_segments(&mut self, now: Instant, io: &mut Io) {
        let Some(load) = self.segments.as_mut() else { return };
        let room = Room {
            reads_max: self.fetches_max,
            list_page_max: self.list_page_max,
            waiting_bytes: self.ready_bytes,
        };
        load.pump(now, &self.keys, room, io);
        // Blobs start once the segments' bodies are indexed, so none is read twice.
        if load.is_done() && self.ready.is_empty() {
            self.segments = None;
        }
    }

    /// Drops the index and everything it was doing; the stats stay.
    fn drop_index(&mut self, sn: &mut Snapshot) {
        self.active = false;
        self.rescan = false;
        self.index = ContentIndex::default();
        self.missing.clear();
        self.queue.clear();
        self.fetching.clear();
        self.ready.clear();
        self.ready_bytes = 0;
        self.offered = None;
        self.segments = None;
        self.retired.clear();
        sn.search = Installs::default();
    }

    /// Drops bodies the served state stopped holding long enough ago that no view can be
    /// pinned where they were.
    fn forget_retired(&mut self, now: Instant, world: &WorldState) {
        while let Some(&(at, hash)) = self.retired.front() {
            if now.saturating_since(at) < self.retire_after {
                break;
            }
            self.retired.pop_front();
            if world.paths_with_body(&hash).next().is_none() {
                self.index.remove(&hash);
            }
        }
    }

    fn fetch(&mut self, now: Instant, sn: &Snapshot, bodies: &mut Bodies, io: &mut Io) {
        while self.fetching.len() < self.fetches_max {
            let Some(hash) = self.queue.pop_front() else { break };
            if !self.missing.contains(&hash) || self.index.contains(&hash) {
                continue;
            }
            // Replaced since it was found (a document written again): no longer needed.
            let Some(path) = sn.world.paths_with_body(&hash).next() else {
                self.missing.remove(&hash);
                continue;
            };
            if let Some(body) = bodies.get(&hash) {
                self.push_ready(hash, body);
                continue;
            }
            // Where a version with this body was written, for a body carried in its slot.
            let at = sn.world.document(path).and_then(|d| {
                d.held_versions().filter(|v| v.body_hash == hash).last().map(|v| (v.sequence, v.body_len))
            });
            self.stats.bodies_fetched += 1;
            self.fetching.insert(hash);
            bodies.fetch(now, hash, at, &sn.recent, io);
        }
    }

    fn index_step(&mut self, sn: &mut Snapshot, io: &mut Io) {
        let mut budget = self.step_bytes_max;
        while budget > 0 {
            let Some(ready) = self.ready.front_mut() else { break };
            let Some(i) = ready.waiting.pop_front() else {
                let mut done = self.ready.pop_front().expect("the front is there");
                self.index.end_part(&done.part, &mut done.translation);
                continue;
            };
            let body = &ready.part.bodies()[i];
            self.ready_bytes -= body.len;
            budget = budget.saturating_sub(body.len.max(1));
            // A body still held somewhere since it was asked for; one no state holds now
            // is not worth its bytes.
            if !self.missing.remove(&body.hash) {
                continue;
            }
            self.index.insert_prepared(&ready.part, i, &mut ready.translation);
            self.stats.bodies_indexed += 1;
            if self.index.bytes() > self.bytes_max {
                io.marks.hit(Mark::SearchIndexOverBudget);
                self.stats.over_budget_drops += 1;
                self.refused_until = Some(self.last_search + self.idle_max);
                self.drop_index(sn);
                return;
            }
        }
        // Only the front part can have bodies waiting for their postings: the index is
        // whole before anything reads it.
        if let Some(front) = self.ready.front_mut() {
            if front.waiting.is_empty() {
                let mut done = self.ready.pop_front().expect("the front is there");
                self.index.end_part(&done.part, &mut done.translation);
            } else {
                self.index.post_pending(&front.part, &mut front.translation);
            }
        }
        // Emptied, the set gives back its table (a million entries' after a build).
        if self.missing.is_empty() {
            self.missing = FxHashSet::default();
        }
    }

    /// Whether the index covers the served state (`pin` None) or a view's pin: every
    /// body its documents hold is indexed.
    pub fn covers(&self, sn: &Snapshot, pin: Option<&AtPin<'_>>) -> bool {
        if !self.active || self.rescan || !sn.search.is_drained() {
            return false;
        }
        match pin {
            None => self.missing.is_empty(),
            Some(pin) => {
                // Bodies the served state lacks matter only where the pin's documents
                // are the served ones; every changed document's body at the pin must be
                // indexed itself.
                let served_ok =
                    self.missing.iter().all(|h| sn.world.paths_with_body(h).all(|p| pin.changed(p)));
                served_ok && pin.changed_bodies().all(|h| self.index.contains(h))
            }
        }
    }

    /// The catalog page of `query` in `world` ([`catalog_page`]), or the same page kept
    /// from the last answers at the same state. While an index builds, a client asking
    /// again meets the same state each time, and each answer walks every path: at a
    /// million documents about 0.2 s of the replica's thread, a fifth of its work during
    /// a build that four such answers a second share.
    pub fn catalog_page(
        &mut self,
        world: &dyn ReadWorld,
        query: &Query,
        start_after: Option<&str>,
        limit: usize,
    ) -> (Vec<IndexEntry>, bool) {
        let sequence = world.sequence();
        let kept = self.catalog_answers.iter().find(|a| {
            a.sequence == sequence
                && a.limit == limit
                && a.start_after.as_deref() == start_after
                && a.query == *query
        });
        if let Some(a) = kept {
            return (a.entries.clone(), a.more);
        }
        let (entries, more) = catalog_page(world, query, start_after, limit);
        if self.catalog_answers.len() == CATALOG_ANSWERS_KEPT {
            self.catalog_answers.pop_front();
        }
        self.catalog_answers.push_back(CatalogAnswer {
            sequence,
            query: query.clone(),
            start_after: start_after.map(str::to_owned),
            limit,
            entries: entries.clone(),
            more,
        });
        (entries, more)
    }

    /// The page of documents matching `query` in `world`, after `start_after`, at most
    /// `limit` (and whether more follow), in body mode. The caller has checked coverage.
    pub fn body_page(
        &self,
        world: &dyn ReadWorld,
        query: &Query,
        start_after: Option<&str>,
        limit: usize,
    ) -> (Vec<IndexEntry>, bool) {
        let Some(candidates) = self.index.candidates(query) else { return (Vec::new(), false) };
        if candidates.ids.len() > SCAN_ABOVE_BODIES {
            // Many bodies hold the words: walking documents in path order finds a page
            // soonest, checking phrases only for the documents it passes.
            let from = start_after.map_or(String::new(), |a| format!("{a}\0"));
            let found = world.documents_from(&from).filter(|(_, d)| {
                let id = self.index.body_id(&d.entry.body_hash);
                id.is_some_and(|id| candidates.ids.contains(id) && self.index.holds(id, &candidates))
            });
            return page(world, found.map(|(p, _)| p), limit);
        }
        let mut paths: Vec<&Path> = Vec::new();
        for id in candidates.ids.iter().filter(|id| self.index.holds(*id, &candidates)) {
            let Some(hash) = self.index.hash_of(id) else { continue };
            // Each body's documents in order: a page needs at most limit + 1 of each.
            paths.extend(world.paths_with_body(hash, start_after).take(limit + 1));
        }
        paths.sort();
        paths.dedup();
        page(world, paths.into_iter(), limit)
    }
}

/// Tokenized bodies in hand: a segment part's, or one body's.
struct Ready {
    part: Prepared,
    /// The part's bodies still to index, in order.
    waiting: VecDeque<usize>,
    translation: Translation,
}

/// The page of documents whose path's and catalog record's words match `query`, in
/// catalog mode: each part held by the path or by the record (SPEC 8.6).
pub(crate) fn catalog_page(
    world: &dyn ReadWorld,
    query: &Query,
    start_after: Option<&str>,
    limit: usize,
) -> (Vec<IndexEntry>, bool) {
    let from = start_after.map_or(String::new(), |a| format!("{a}\0"));
    // A cheap test first: ASCII text holds a word only if it holds it as a substring,
    // ignoring ASCII case (the fold of an ASCII word is its ASCII lowercase).
    let ascii: Vec<&[u8]> =
        query.parts().iter().flatten().filter(|w| w.is_ascii()).map(|w| w.as_bytes()).collect();
    let contains = |text: &str, w: &[u8]| text.as_bytes().windows(w.len()).any(|b| b.eq_ignore_ascii_case(w));
    let may_hold = |path: &str, record: Option<&str>| {
        !path.is_ascii()
            || record.is_some_and(|r| !r.is_ascii())
            || ascii.iter().all(|w| contains(path, w) || record.is_some_and(|r| contains(r, w)))
    };
    let matches = |path: &str, record: Option<&str>| {
        let path_words: Vec<String> = words(path).collect();
        let record_words: Vec<String> = record.map(|r| words(r).collect()).unwrap_or_default();
        query.matches_any(&[&path_words, &record_words])
    };
    let found = world
        .documents_from(&from)
        .filter(|(p, d)| {
            let record = d.entry.catalog.as_deref();
            may_hold(p.as_str(), record) && matches(p.as_str(), record)
        })
        .map(|(p, _)| p)
        .take(limit + 1);
    page(world, found, limit)
}

fn page<'a>(
    world: &dyn ReadWorld,
    paths: impl Iterator<Item = &'a Path>,
    limit: usize,
) -> (Vec<IndexEntry>, bool) {
    let mut entries: Vec<IndexEntry> =
        paths.take(limit + 1).filter_map(|p| world.document(p)).map(|d| d.entry.clone()).collect();
    let more = entries.len() > limit;
    entries.truncate(limit);
    (entries, more)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Slot;
    use crate::ids::{StoreId, WorldId};

    #[test]
    fn installs_past_the_queue_bound_collapse_into_one_comparison() {
        let world = WorldState::genesis(WorldId([7; 16]), Hash32::of(b"marker"));
        let slot = Slot {
            world_id: world.world_id(),
            first_sequence: 1,
            store_id: StoreId(1),
            prev_hash: world.tip_hash(),
            members: Vec::new(),
            bodies: Vec::new(),
        };
        let mut idle = Installs::default();
        idle.record(&world, &slot);
        assert!(idle.is_drained(), "nothing is recorded while the index is not active");
        let mut installs = Installs { active: true, ..Installs::default() };
        for _ in 0..INSTALLS_QUEUED_MAX {
            installs.record(&world, &slot);
        }
        assert!(!installs.collapsed);
        installs.record(&world, &slot);
        assert!(installs.collapsed && installs.added.is_empty() && !installs.is_drained());
    }
}
