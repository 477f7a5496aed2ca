//! The ledger (SPEC 10.11, bounded steps): what a replica keeps since its newest
//! checkpoint so that a step can fold the world as it was at the step's boundary, not
//! only at the tip. It holds the slots applied since that checkpoint, each document those
//! slots touched as it was at the checkpoint (captured the first time a slot touches it),
//! the policy there, and the receipts of the checkpoint's window that the served world
//! has since let go. Untouched documents are read from the served world, which holds
//! them unchanged; so the ledger grows with the changes since the newest checkpoint, as
//! the held version records do, never with the world.
//!
//! It owns no I/O and never changes the served world. The snapshot records every slot
//! into it before applying the slot; the compactor moves its base on when a checkpoint
//! is written or adopted.

use crate::checkpoint::{FoldSource, Object, ObjectKind};
use crate::format::encode_body;
use crate::format::{HistoryRef, Slot, StoredReceipt};
use crate::hash::Hash32;
use crate::ids::WorldId;
use crate::world::{
    receipts_from, request_digest, Document, Path, Policy, SlotMember, StateView, WorldState,
};
use bytes::Bytes;
use std::collections::{btree_map, BTreeMap, BTreeSet, VecDeque};
use std::ops::Range;

pub(crate) struct Ledger {
    /// Off for a replica that never compacts: it keeps nothing.
    enabled: bool,
    /// The sequence of the newest checkpoint the ledger counts from.
    base: u64,
    /// Every document a slot since `base` touched, as it was at `base` (None: absent).
    before: BTreeMap<Path, Option<Document>>,
    policy: Policy,
    /// Receipts of sequences up to `base` that a step's window may still need and the
    /// served world no longer holds, in sequence order.
    dropped: VecDeque<StoredReceipt>,
    /// The slots applied since `base`, with their hashes, in order.
    slots: VecDeque<(Slot, Hash32)>,
    /// Bytes of the bodies those slots carry: held here until a step writes them out.
    carried_bytes: u64,
}

/// What the ledger held before a record, to undo it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Recorded {
    dropped: usize,
    slots: usize,
    carried_bytes: u64,
}

/// The ledger's size, as a memory report reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LedgerHeld {
    /// Slots applied since the newest checkpoint.
    pub slots: usize,
    /// Documents those slots touched, each held as it was at that checkpoint.
    pub documents: usize,
    /// Bytes of the bodies those slots carry (SPEC 5.7), held until a step writes them
    /// out as blobs.
    pub carried_bytes: u64,
}

/// Where a step ends: the slot at which the documents changed since the newest
/// checkpoint reach the step's most (SPEC 10.11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Boundary {
    pub sequence: u64,
    pub hash: Hash32,
    /// Slots applied after it.
    pub slots_after: u64,
}

impl Ledger {
    /// A ledger counting from `world`, the state of the newest checkpoint (or genesis).
    pub fn new(world: &WorldState) -> Ledger {
        Ledger {
            enabled: true,
            base: world.sequence(),
            before: BTreeMap::new(),
            policy: StateView::policy(world).clone(),
            dropped: VecDeque::new(),
            slots: VecDeque::new(),
            carried_bytes: 0,
        }
    }

    /// The bodies carried by the slots through `sequence` (a step's boundary), each once,
    /// as objects to write out before the step's checkpoint (SPEC 5.7); none of `stored`.
    pub fn carried_through(&self, sequence: u64, stored: &BTreeSet<Hash32>) -> Vec<Object> {
        let mut seen: BTreeSet<Hash32> = BTreeSet::new();
        let carried = self.slots.iter().take_while(|(slot, _)| slot.last_sequence() <= sequence);
        carried
            .flat_map(|(slot, _)| slot.bodies_by_hash())
            .filter(|(name, _)| !stored.contains(name) && seen.insert(*name))
            .map(|(name, body)| Object {
                kind: ObjectKind::Body,
                name,
                bytes: Bytes::from(encode_body(body)),
            })
            .collect()
    }

    /// The body `hash` as the slot holding `sequence` carried it, when the ledger holds
    /// that slot (one applied since the newest checkpoint): a read finds it here rather
    /// than in the bucket. Slots are in sequence order, so the search is a bisection.
    pub fn carried_body(&self, sequence: u64, hash: &Hash32) -> Option<Bytes> {
        let i = self.slots.partition_point(|(slot, _)| slot.last_sequence() < sequence);
        let (slot, _) = self.slots.get(i).filter(|(slot, _)| slot.first_sequence <= sequence)?;
        slot.body(hash).cloned()
    }

    /// A replica that never compacts keeps nothing.
    pub fn disable(&mut self) {
        self.enabled = false;
        self.before.clear();
        self.dropped.clear();
        self.slots.clear();
        self.carried_bytes = 0;
    }

    /// Takes `slot` before `world` applies it: the documents it touches first, and the
    /// receipts of the base's window that applying it will make the world let go.
    pub fn record(&mut self, world: &WorldState, slot: &Slot, hash: Hash32) -> Recorded {
        let recorded = Recorded {
            dropped: self.dropped.len(),
            slots: self.slots.len(),
            carried_bytes: self.carried_bytes,
        };
        if !self.enabled || slot.first_sequence != world.next_sequence() {
            return recorded;
        }
        let keep_from = world.receipts_from_sequence().max(receipts_from(self.base));
        let held_from = receipts_from(slot.last_sequence());
        let leaving = world.receipts_since(keep_from).take_while(|r| r.receipt.sequence < held_from);
        self.dropped.extend(leaving.filter(|r| r.receipt.sequence <= self.base).cloned());
        for m in &slot.members {
            if let Some(entry) = &m.entry {
                // One search of the map for both the question and the insert.
                if let btree_map::Entry::Vacant(v) = self.before.entry(entry.path.clone()) {
                    v.insert(world.document(&entry.path).cloned());
                }
            }
        }
        self.carried_bytes += carried_bytes(slot);
        self.slots.push_back((slot.clone(), hash));
        recorded
    }

    /// The slot just recorded did not apply (the replica fails closed): forget it. The
    /// images it took are of documents unchanged since the base, so they stay true.
    pub fn undo(&mut self, recorded: Recorded) {
        self.dropped.truncate(recorded.dropped);
        self.slots.truncate(recorded.slots);
        self.carried_bytes = recorded.carried_bytes;
    }

    /// What it holds now: slots since its base, documents captured as they were there,
    /// and the bodies those slots carry.
    pub fn held(&self) -> LedgerHeld {
        LedgerHeld {
            slots: self.slots.len(),
            documents: self.before.len(),
            carried_bytes: self.carried_bytes,
        }
    }

    /// The boundary of the next step, when it falls before the tip: the end of the first
    /// slot at which the documents changed since the base reach `docs_max`, or of the
    /// slot before one that would take them past it. A function of the log and the
    /// newest checkpoint alone, so racing compactors cut the same step.
    pub fn boundary(&self, docs_max: usize) -> Option<Boundary> {
        let mut changed: BTreeSet<&Path> = BTreeSet::new();
        let mut new: Vec<&Path> = Vec::new();
        let mut end: Option<usize> = None;
        for (i, (slot, _)) in self.slots.iter().enumerate() {
            // The slot's paths not changed before it, each once.
            new.clear();
            new.extend(slot.members.iter().filter_map(|m| m.entry.as_ref().map(|e| &e.path)));
            new.retain(|p| !changed.contains(p));
            new.sort_unstable();
            new.dedup();
            if changed.len() + new.len() > docs_max {
                // A step holds at least one slot (the limit is at least a slot's most).
                end = Some(i.saturating_sub(1));
                break;
            }
            changed.extend(new.iter().copied());
            if changed.len() == docs_max {
                end = Some(i);
                break;
            }
        }
        let i = end?;
        let slots_after = (self.slots.len() - i - 1) as u64;
        if slots_after == 0 {
            return None;
        }
        let (slot, hash) = &self.slots[i];
        Some(Boundary { sequence: slot.last_sequence(), hash: *hash, slots_after })
    }

    /// The world as it was at `at`, a slot boundary after the base, for a fold.
    pub fn world_at<'w>(&'w self, served: &'w WorldState, at: Boundary) -> AtBoundary<'w> {
        invariant!(at.sequence > self.base && at.sequence <= served.sequence());
        let (images, policy) = self.images_at(at.sequence);
        // Those of later members the served world let go are made here; the rest are read
        // where they are held, not copied. A receipt is a function of its member alone
        // (SPEC 10.13), so the served world's is the one a member makes.
        let from = receipts_from(at.sequence);
        let served_from = served.receipts_from_sequence();
        let let_go: Vec<StoredReceipt> =
            self.receipts_after_base(from.max(self.base + 1)..served_from.min(at.sequence + 1)).collect();
        let absent = images.values().filter(|d| d.is_none()).count() as u64;
        AtBoundary {
            world_id: served.world_id(),
            served,
            sequence: at.sequence,
            tip_hash: at.hash,
            policy,
            document_count: served.document_count() as u64 - absent,
            images,
            receipts: Receipts { from, dropped: &self.dropped, let_go, served_from },
        }
    }

    /// Every touched document and the policy as they were at `at`: the base's, with the
    /// slots through `at` applied.
    fn images_at(&self, at: u64) -> (BTreeMap<Path, Option<Document>>, Policy) {
        let mut images = self.before.clone();
        let mut policy = self.policy.clone();
        for (slot, _) in self.slots.iter().take_while(|(s, _)| s.last_sequence() <= at) {
            for m in &slot.members {
                apply(m, &mut policy, |path| {
                    Some(images.get_mut(path).expect("every touched document has an image"))
                });
            }
        }
        (images, policy)
    }

    /// The receipts of the members since the base whose sequences are in `sequences`.
    fn receipts_after_base(&self, sequences: Range<u64>) -> impl Iterator<Item = StoredReceipt> + '_ {
        let members = self.slots.iter().flat_map(|(s, _)| s.members.iter());
        let wanted = members.take_while(move |m| m.sequence() < sequences.end);
        wanted.filter(move |m| m.sequence() >= sequences.start).map(request_digest::stored_receipt)
    }

    /// A checkpoint at `at` was written or adopted, its documents storing their versions
    /// in the blocks `adopt` names: the ledger counts from there.
    pub fn rebase(&mut self, served: &WorldState, at: u64, adopt: &[(Path, Vec<HistoryRef>, u64)]) {
        if !self.enabled || at <= self.base || at > served.sequence() {
            return;
        }
        let from = receipts_from(at);
        let let_go = served.receipts_from_sequence();
        self.dropped.retain(|r| r.receipt.sequence >= from);
        let moved: Vec<StoredReceipt> =
            self.receipts_after_base(from.max(self.base + 1)..let_go.min(at + 1)).collect();
        self.dropped.extend(moved);
        // The documents the slots after `at` touch keep their images, as they were at
        // `at`; the rest are let go before the slots through `at` are applied to them.
        let mut touched: Vec<Path> = self
            .slots
            .iter()
            .filter(|(s, _)| s.last_sequence() > at)
            .flat_map(|(s, _)| s.members.iter().filter_map(|m| m.entry.as_ref().map(|e| e.path.clone())))
            .collect();
        touched.sort_unstable();
        touched.dedup();
        let mut images = std::mem::take(&mut self.before);
        let mut kept = touched.iter().peekable();
        // Both in path order: one walk.
        images.retain(|path, _| {
            while kept.next_if(|p| *p < path).is_some() {}
            kept.peek().is_some_and(|p| *p == path)
        });
        while self.slots.front().is_some_and(|(s, _)| s.last_sequence() <= at) {
            let (slot, _) = self.slots.pop_front().expect("a front slot");
            for m in &slot.members {
                apply(m, &mut self.policy, |path| images.get_mut(path));
            }
            self.carried_bytes -= carried_bytes(&slot);
        }
        adopt_into(&mut images, adopt);
        self.before = images;
        self.base = at;
    }
}

/// Applies member `m` to the policy and to its document's image, which `image` finds
/// (None: an image not kept).
fn apply<'i>(
    m: &SlotMember,
    policy: &mut Policy,
    image: impl FnOnce(&Path) -> Option<&'i mut Option<Document>>,
) {
    if let Some(rules) = &m.policy {
        *policy = Policy { version: m.receipt.version, rules: rules.clone() };
    }
    let Some(entry) = &m.entry else { return };
    let Some(image) = image(&entry.path) else { return };
    match image {
        Some(doc) => doc.apply(entry.clone(), m.version.clone()),
        None => {
            let doc = Document::held(entry.clone(), m.version.clone())
                .expect("an applied member starts a document at version 1");
            *image = Some(doc);
        }
    }
}

/// The images' documents store their versions through the given one in the blocks
/// `adopt` names. `adopt` comes from a fold, in path order; walked beside the images then.
pub(super) fn adopt_into(
    images: &mut BTreeMap<Path, Option<Document>>,
    adopt: &[(Path, Vec<HistoryRef>, u64)],
) {
    if !adopt.is_sorted_by(|a, b| a.0 < b.0) {
        for (path, blocks, through) in adopt {
            if let Some(Some(doc)) = images.get_mut(path) {
                doc.adopt(blocks, *through);
            }
        }
        return;
    }
    let mut adopting = adopt.iter().peekable();
    for (path, image) in images.iter_mut() {
        while adopting.next_if(|(p, _, _)| p < path).is_some() {}
        let Some((_, blocks, through)) = adopting.peek().filter(|(p, _, _)| p == path) else { continue };
        if let Some(doc) = image {
            doc.adopt(blocks, *through);
        }
    }
}

/// The world at a step's boundary, read through the served world: a touched document
/// from its image, any other as the served world holds it (unchanged since the base).
pub(crate) struct AtBoundary<'w> {
    world_id: WorldId,
    served: &'w WorldState,
    sequence: u64,
    tip_hash: Hash32,
    policy: Policy,
    document_count: u64,
    images: BTreeMap<Path, Option<Document>>,
    receipts: Receipts<'w>,
}

/// The receipts of the window at a step's boundary, from `from` on, in sequence order:
/// those of the base's window the served world let go (the ledger's), those of later
/// members it let go (made for the step), then the ones it holds, from `served_from`.
struct Receipts<'w> {
    from: u64,
    dropped: &'w VecDeque<StoredReceipt>,
    let_go: Vec<StoredReceipt>,
    served_from: u64,
}

impl FoldSource for AtBoundary<'_> {
    fn world_id(&self) -> WorldId {
        self.world_id
    }
    fn sequence(&self) -> u64 {
        self.sequence
    }
    fn tip_hash(&self) -> Hash32 {
        self.tip_hash
    }
    fn policy(&self) -> &Policy {
        &self.policy
    }
    fn document_count(&self) -> u64 {
        self.document_count
    }
    fn documents(&self) -> Box<dyn Iterator<Item = (&Path, &Document)> + '_> {
        // Both in path order: the images are walked beside the served documents rather
        // than searched for each (a search per document was most of a fold's walk).
        let mut images = self.images.iter().peekable();
        Box::new(self.served.documents().filter_map(move |(path, doc)| {
            while images.next_if(|(p, _)| *p < path).is_some() {}
            match images.next_if(|(p, _)| *p == path) {
                Some((_, image)) => image.as_ref().map(|d| (path, d)),
                None => Some((path, doc)),
            }
        }))
    }
    fn receipts_since(&self, from: u64) -> Box<dyn Iterator<Item = &StoredReceipt> + '_> {
        let (r, at) = (&self.receipts, self.sequence);
        let from = from.max(r.from);
        let dropped = r.dropped.iter().filter(move |x| x.receipt.sequence >= from);
        let let_go = r.let_go.iter().filter(move |x| x.receipt.sequence >= from);
        let held = self.served.receipts_since(from.max(r.served_from));
        Box::new(dropped.chain(let_go).chain(held.take_while(move |x| x.receipt.sequence <= at)))
    }
}

/// Bytes of the bodies `slot` carries.
fn carried_bytes(slot: &Slot) -> u64 {
    slot.bodies.iter().map(|b| b.len() as u64).sum()
}
