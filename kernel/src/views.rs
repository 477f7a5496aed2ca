//! Views (the record: "a view pins its snapshot at its first read"): several reads that
//! all see one state of the world. A view's first read is served like any read, fresh
//! enough for its kind, and pins the state it answered from; every later read of the
//! view answers from that state, however many slots install meanwhile.
//!
//! A pin holds no copy of the world. Each document a slot touches after the pinned
//! sequence is kept as it was there (captured the first time a later slot touches it),
//! with the policy; any other document is read from the served world, which holds it
//! unchanged (documents are never removed). So a pin grows with the documents changed
//! since it, and pins at one sequence share their images.
//!
//! Pins are bounded: at most `views_max` per replica, none older than `view_age_max`
//! (at most the checkpoint grace, so a view never needs what collection may delete): a
//! view past that answers `ViewExpired` and lets go; and at most `view_images_max`
//! documents held over every pin: past it the views at the oldest pinned sequence (which
//! hold the most) are evicted, and answer `ViewEvicted`. A pin also ends with its replica: a
//! restarted replica holds no pins, and a read that names a pin it does not hold is
//! answered `ViewExpired`, never from another state.

use crate::format::Slot;
use crate::hash::Hash32;
use crate::ids::OperationId;
use crate::ids::ViewId;
use crate::time::Instant;
use crate::world::{Document, Path, ReceiptAnswer, WorldState};
use core::time::Duration;
use std::collections::{BTreeMap, BTreeSet};

/// The documents changed since one pinned sequence, as they were there.
struct Pinned {
    /// Every document a slot after the pin touched, as it was at the pin (None: absent).
    images: BTreeMap<Path, Option<Document>>,
    /// Views pinned here.
    views: BTreeSet<ViewId>,
}

/// One view's pin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pin {
    sequence: u64,
    pinned_at: Instant,
}

/// Why a view read cannot be answered from a pin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PinProblem {
    /// The view is older than `view_age_max`, or its pin is not held here (a restart).
    Expired,
    /// The view was evicted to keep the images held within `view_images_max`.
    Evicted,
    /// `views_max` views are pinned already.
    Exhausted { views: usize },
}

/// Counters a report reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViewStats {
    /// Views pinned.
    pub pinned: u64,
    /// Views that reached `view_age_max` (or named a pin not held) and were answered
    /// `ViewExpired`.
    pub expired: u64,
    /// First reads refused because `views_max` views were pinned.
    pub refused: u64,
    /// Views their callers let go.
    pub released: u64,
    /// Views evicted to keep the images within `view_images_max`.
    pub evicted: u64,
    /// Views pinned now.
    pub pinned_now: usize,
    /// Documents held as they were at some pin, over every pinned sequence: what pins
    /// cost in memory.
    pub images_held: usize,
}

pub(crate) struct Views {
    views_max: usize,
    age_max: Duration,
    images_max: usize,
    /// Images held over every pinned sequence.
    images_held: usize,
    /// Views evicted and not read since, to answer `ViewEvicted` (at most `views_max`,
    /// the oldest forgotten first: a forgotten one answers `ViewExpired`).
    evicted: BTreeSet<ViewId>,
    pins: BTreeMap<ViewId, Pin>,
    /// By sequence, the images the views pinned there share.
    at: BTreeMap<u64, Pinned>,
    /// Pins by age, oldest first, to expire them.
    by_age: BTreeSet<(Instant, ViewId)>,
    stats: ViewStats,
}

impl Views {
    pub fn new(views_max: usize, age_max: Duration, images_max: usize) -> Views {
        Views {
            views_max,
            age_max,
            images_max,
            images_held: 0,
            evicted: BTreeSet::new(),
            pins: BTreeMap::new(),
            at: BTreeMap::new(),
            by_age: BTreeSet::new(),
            stats: ViewStats::default(),
        }
    }

    /// The counters, with what is pinned now.
    pub fn stats(&self) -> ViewStats {
        invariant_eq!(self.images_held, self.at.values().map(|p| p.images.len()).sum::<usize>());
        ViewStats { pinned_now: self.pins.len(), images_held: self.images_held, ..self.stats.clone() }
    }

    /// The sequence `view` is pinned at, if it is pinned and young enough.
    pub fn pinned(&self, view: ViewId, now: Instant) -> Option<u64> {
        let pin = self.pins.get(&view)?;
        (now < pin.pinned_at + self.age_max).then_some(pin.sequence)
    }

    /// Pins `view` at the served world's sequence, if there is room.
    pub fn pin(&mut self, view: ViewId, world: &WorldState, now: Instant) -> Result<u64, PinProblem> {
        self.expire(now);
        if let Some(sequence) = self.pinned(view, now) {
            return Ok(sequence);
        }
        if self.pins.len() >= self.views_max {
            self.stats.refused += 1;
            return Err(PinProblem::Exhausted { views: self.pins.len() });
        }
        let sequence = world.sequence();
        self.pins.insert(view, Pin { sequence, pinned_at: now });
        self.by_age.insert((now, view));
        let pinned = self
            .at
            .entry(sequence)
            .or_insert_with(|| Pinned { images: BTreeMap::new(), views: BTreeSet::new() });
        pinned.views.insert(view);
        self.stats.pinned += 1;
        Ok(sequence)
    }

    /// The caller let `view` go.
    pub fn release(&mut self, view: ViewId) {
        if self.unpin(view) {
            self.stats.released += 1;
        }
    }

    /// A read of `view` asks for a pin at `expected` that is not held, or too old: it
    /// is let go, and the read answered `ViewExpired`.
    pub fn expired(&mut self, view: ViewId) -> PinProblem {
        self.unpin(view);
        if self.evicted.remove(&view) {
            return PinProblem::Evicted;
        }
        self.stats.expired += 1;
        PinProblem::Expired
    }

    /// Lets go of every view past `view_age_max`.
    pub fn expire(&mut self, now: Instant) {
        while let Some(&(pinned_at, view)) = self.by_age.first() {
            if now < pinned_at + self.age_max {
                break;
            }
            self.unpin(view);
        }
    }

    fn unpin(&mut self, view: ViewId) -> bool {
        let Some(pin) = self.pins.remove(&view) else { return false };
        self.by_age.remove(&(pin.pinned_at, view));
        if let Some(pinned) = self.at.get_mut(&pin.sequence) {
            pinned.views.remove(&view);
            if pinned.views.is_empty() {
                self.images_held -= pinned.images.len();
                self.at.remove(&pin.sequence);
            }
        }
        true
    }

    /// Evicts every view at the oldest pinned sequence, which holds the most images.
    fn evict_oldest(&mut self) {
        let Some((_, pinned)) = self.at.first_key_value() else { return };
        for view in pinned.views.clone() {
            self.unpin(view);
            self.stats.evicted += 1;
            self.evicted.insert(view);
            if self.evicted.len() > self.views_max {
                self.evicted.pop_first();
            }
        }
    }

    /// Takes `slot` before `world` applies it: each document it touches, as it is now,
    /// for every pin that has not held it yet.
    pub fn record(&mut self, world: &WorldState, slot: &Slot) {
        if self.at.is_empty() || slot.first_sequence != world.next_sequence() {
            return;
        }
        for pinned in self.at.values_mut() {
            for entry in slot.members.iter().filter_map(|m| m.entry.as_ref()) {
                if !pinned.images.contains_key(&entry.path) {
                    pinned.images.insert(entry.path.clone(), world.document(&entry.path).cloned());
                    self.images_held += 1;
                }
            }
        }
        while self.images_held > self.images_max {
            self.evict_oldest();
        }
    }

    /// The world as `view` pinned it, read through `served`.
    pub fn world<'a>(&'a self, view: ViewId, served: &'a WorldState) -> Option<AtPin<'a>> {
        let pin = self.pins.get(&view)?;
        let pinned = self.at.get(&pin.sequence).expect("every pin has its images");
        Some(AtPin { served, sequence: pin.sequence, images: &pinned.images })
    }
}

/// What a read answers from: the served world, or the world at a view's pin.
pub(crate) trait ReadWorld {
    /// The last sequence this state includes.
    fn sequence(&self) -> u64;
    /// The document at `path`, if there is one.
    fn document(&self, path: &Path) -> Option<&Document>;
    /// Documents from `start` on, in path order.
    fn documents_from<'a>(&'a self, start: &str) -> Box<dyn Iterator<Item = (&'a Path, &'a Document)> + 'a>;
    /// Documents whose current body has `hash`, in path order, after `start_after`.
    fn paths_with_body<'a>(
        &'a self,
        hash: &'a Hash32,
        start_after: Option<&'a str>,
    ) -> Box<dyn Iterator<Item = &'a Path> + 'a>;
    /// A receipt read's answer.
    fn receipt_answer(&self, op_id: &OperationId, since: Option<u64>) -> ReceiptAnswer;
}

impl ReadWorld for WorldState {
    fn sequence(&self) -> u64 {
        WorldState::sequence(self)
    }
    fn document(&self, path: &Path) -> Option<&Document> {
        WorldState::document(self, path)
    }
    fn documents_from<'a>(&'a self, start: &str) -> Box<dyn Iterator<Item = (&'a Path, &'a Document)> + 'a> {
        Box::new(WorldState::documents_from(self, start))
    }
    fn paths_with_body<'a>(
        &'a self,
        hash: &'a Hash32,
        start_after: Option<&'a str>,
    ) -> Box<dyn Iterator<Item = &'a Path> + 'a> {
        Box::new(WorldState::paths_with_body_after(self, hash, start_after))
    }
    fn receipt_answer(&self, op_id: &OperationId, since: Option<u64>) -> ReceiptAnswer {
        WorldState::receipt_answer(self, op_id, since)
    }
}

/// The world at a pin: a document changed since from its image, any other as served.
pub(crate) struct AtPin<'a> {
    served: &'a WorldState,
    sequence: u64,
    images: &'a BTreeMap<Path, Option<Document>>,
}

impl AtPin<'_> {
    /// Whether the document at `path` changed since the pin (its image is held).
    pub fn changed(&self, path: &Path) -> bool {
        self.images.contains_key(path)
    }

    /// The bodies documents changed since the pin held at it.
    pub fn changed_bodies(&self) -> impl Iterator<Item = &Hash32> {
        self.images.values().flatten().map(|d| &d.entry.body_hash)
    }
}

impl ReadWorld for AtPin<'_> {
    fn sequence(&self) -> u64 {
        self.sequence
    }
    fn document(&self, path: &Path) -> Option<&Document> {
        match self.images.get(path) {
            Some(image) => image.as_ref(),
            None => self.served.document(path),
        }
    }
    fn documents_from<'a>(&'a self, start: &str) -> Box<dyn Iterator<Item = (&'a Path, &'a Document)> + 'a> {
        // The served world holds every path the pin's world does (documents are never
        // removed); one created since is an image of None.
        Box::new(self.served.documents_from(start).filter_map(|(path, doc)| match self.images.get(path) {
            Some(image) => image.as_ref().map(|d| (path, d)),
            None => Some((path, doc)),
        }))
    }
    fn paths_with_body<'a>(
        &'a self,
        hash: &'a Hash32,
        start_after: Option<&'a str>,
    ) -> Box<dyn Iterator<Item = &'a Path> + 'a> {
        let unchanged =
            self.served.paths_with_body_after(hash, start_after).filter(|p| !self.images.contains_key(*p));
        let changed = self.images.iter().filter_map(move |(p, image)| {
            let holds = image.as_ref().is_some_and(|d| d.entry.body_hash == *hash);
            (holds && start_after.is_none_or(|a| p.as_str() > a)).then_some(p)
        });
        Box::new(Merged { a: unchanged.peekable(), b: changed.peekable() })
    }
    /// A receipt committed after the pin is not in its world. One the served window has
    /// let go is unknown: answered from the served window, which starts later, so never
    /// `Absent` where the pin's world might hold it.
    fn receipt_answer(&self, op_id: &OperationId, since: Option<u64>) -> ReceiptAnswer {
        let held = self.served.receipt(op_id).filter(|r| r.sequence <= self.sequence);
        crate::world::receipt_window::answer(held, self.served.sequence(), since)
    }
}

/// Two iterators of paths in order, as one in order (no path is in both).
struct Merged<'a, A: Iterator<Item = &'a Path>, B: Iterator<Item = &'a Path>> {
    a: core::iter::Peekable<A>,
    b: core::iter::Peekable<B>,
}

impl<'a, A: Iterator<Item = &'a Path>, B: Iterator<Item = &'a Path>> Iterator for Merged<'a, A, B> {
    type Item = &'a Path;
    fn next(&mut self) -> Option<&'a Path> {
        match (self.a.peek(), self.b.peek()) {
            (Some(a), Some(b)) if b < a => self.b.next(),
            (Some(_), _) => self.a.next(),
            (None, _) => self.b.next(),
        }
    }
}
