//! Checkpoints as a replica derives and loads them (SPEC 10): `fold` turns the world at
//! its tip into every object of the checkpoint that covers it, and `Restore` turns the
//! objects read back into a world. Both are pure; the compactor writes what `fold` makes,
//! the opening reads what `Restore` needs. Nothing here knows who wrote an object.
//!
//! The fold is a function of the world (hence of the log up to its tip) and of the layers
//! of the checkpoint it folds over (SPEC 10.16), so every replica that folds the same
//! sequence over the same checkpoint makes the same bytes and names.

use crate::format::{
    history_window, history_window_start, shard_bits_for, shard_count, shard_of, Checkpoint, Delta, DeltaRef,
    HistoryBlock, HistoryRef, Keys, ReceiptBlock, ReceiptBlockRef, Root, Shard, ShardEntry, StoredReceipt,
    DELTA_ENTRIES_MAX,
};
use crate::hash::Hash32;
use crate::ids::WorldId;
use crate::reply::{CheckpointProblem, FailReason};
use crate::world::merge::SortedMerge;
use crate::world::{receipts_from, Document, Path, Policy, StateView, WorldState};
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};

mod receipts;
pub use receipts::ReceiptBlocks;

/// Which objects a drop may take (SPEC 10.9): fenced ones carry a stamp and are
/// collected with the checkpoints that use them; content objects never are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ObjectKind {
    /// A history block: a content object, never collected.
    History,
    /// A receipt block: fenced, collected once no kept checkpoint uses it.
    Receipts,
    /// A shard: fenced, collected once no kept checkpoint uses it.
    Shard,
    /// A root: fenced, collected once no kept checkpoint uses it.
    Root,
    /// A delta (SPEC 10.16): fenced, collected once no kept checkpoint uses it.
    Delta,
    /// A body a slot carried, written out as its blob before the checkpoint that covers
    /// the slot (SPEC 5.7): a content object, never collected. Named by the body's hash.
    Body,
}

/// One object of a checkpoint, ready to create.
#[derive(Clone, Debug)]
pub struct Object {
    /// What it is.
    pub kind: ObjectKind,
    /// Its hash, which names it (`<kind's prefix><hash>`).
    pub name: Hash32,
    /// Its bytes.
    pub bytes: Bytes,
}

impl Object {
    /// Its key in the world.
    pub fn key(&self, keys: &Keys) -> String {
        object_key(self.kind, &self.name, keys)
    }
}

/// The layers of the checkpoint a step folds over (SPEC 10.16): its root's shards and
/// deltas, and the sequence it covers up to. A step names them again and adds a delta of
/// the documents changed since, unless the merge rule says to write every shard anew.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layers {
    /// The checkpoint's next sequence: a document modified at or after it changed since.
    pub next_sequence: u64,
    /// Its layout.
    pub shard_bits: u8,
    /// Its shards, shard 0 first.
    pub shards: Vec<Hash32>,
    /// Its deltas, oldest first.
    pub deltas: Vec<DeltaRef>,
}

impl Layers {
    /// The layers a root names.
    pub fn of(root: &Root) -> Layers {
        Layers {
            next_sequence: root.next_sequence,
            shard_bits: root.shard_bits,
            shards: root.shards.clone(),
            deltas: root.deltas.clone(),
        }
    }

    /// Every object name the layers use.
    pub fn names(&self) -> impl Iterator<Item = Hash32> + '_ {
        self.shards.iter().copied().chain(self.deltas.iter().map(|d| d.block))
    }
}

/// A world's merge rule (SPEC 10.16), fixed in its marker (SPEC 4). A function of the
/// base checkpoint's root and the log alone, so racers that fold over the same checkpoint
/// write the same bytes.
pub use crate::format::MergeRule;

impl MergeRule {
    /// The rule a store's configuration gives a world it creates.
    pub fn of(config: &crate::config::Config) -> MergeRule {
        MergeRule {
            delta_entries_per_mille_max: config.checkpoint_delta_entries_per_mille_max,
            deltas_max: config.checkpoint_deltas_max,
        }
    }

    /// Whether a step over `base` that changed `changed` documents, in a world of
    /// `document_count` laid out in `shard_bits`, adds deltas (true) or merges (false).
    pub fn layers(&self, base: &Layers, changed: usize, document_count: u64, shard_bits: u8) -> bool {
        if base.shard_bits != shard_bits {
            return false;
        }
        let deltas = base.deltas.len() + changed.div_ceil(DELTA_ENTRIES_MAX);
        let entries = base.deltas.iter().map(|d| u64::from(d.entries)).sum::<u64>() + changed as u64;
        let entries_max =
            (document_count * self.delta_entries_per_mille_max / 1_000).max(DELTA_ENTRIES_MAX as u64);
        deltas <= self.deltas_max && entries <= entries_max
    }
}

/// Every object of one checkpoint. `objects` is in the order they may be created:
/// whatever an object names comes before it (history and receipt blocks, then shards and
/// deltas, then the root); the checkpoint object itself goes last, once all of them are
/// stored. History blocks the checkpoint takes unchanged from the one before, and the
/// shards and deltas it names again from the checkpoint it folded over, are not among them.
pub struct Folded {
    /// The checkpoint object.
    pub checkpoint: Checkpoint,
    /// Its root (also among `objects`): what the next step folds over.
    pub root: Root,
    /// Every object it names that is not yet stored, in create order.
    pub objects: Vec<Object>,
    /// Documents whose versions through the given one the checkpoint stores in these
    /// blocks, for the replica to adopt once it is written.
    pub adopt: Vec<(Path, Vec<HistoryRef>, u64)>,
    /// History blocks taken unchanged from the checkpoint before (not among `objects`).
    pub history_reused: u64,
}

/// Why a fold cannot finish now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FoldError {
    /// These stored history blocks must be read first: a window they hold gained or lost
    /// versions.
    NeedBlocks(Vec<Hash32>),
    /// A block read for a document does not hold what its reference promised.
    Disagrees(CheckpointProblem),
}

/// A world as a fold reads it: the served world at its tip, or the world as it was at a
/// step's boundary (the compactor's ledger, SPEC 10.11).
pub trait FoldSource {
    /// The world's id.
    fn world_id(&self) -> WorldId;
    /// The last sequence the checkpoint covers, and the hash of the slot that ends there.
    fn sequence(&self) -> u64;
    /// Hash of the slot that ends at `sequence()`.
    fn tip_hash(&self) -> Hash32;
    /// The policy in force.
    fn policy(&self) -> &Policy;
    /// Documents in the world.
    fn document_count(&self) -> u64;
    /// Every document, in path order.
    fn documents(&self) -> Box<dyn Iterator<Item = (&Path, &Document)> + '_>;
    /// The receipts of the window this sequence keeps, from `from` on.
    fn receipts_since(&self, from: u64) -> Box<dyn Iterator<Item = &StoredReceipt> + '_>;
}

impl FoldSource for WorldState {
    fn world_id(&self) -> WorldId {
        WorldState::world_id(self)
    }
    fn sequence(&self) -> u64 {
        WorldState::sequence(self)
    }
    fn tip_hash(&self) -> Hash32 {
        WorldState::tip_hash(self)
    }
    fn policy(&self) -> &Policy {
        StateView::policy(self)
    }
    fn document_count(&self) -> u64 {
        WorldState::document_count(self) as u64
    }
    fn documents(&self) -> Box<dyn Iterator<Item = (&Path, &Document)> + '_> {
        Box::new(WorldState::documents(self))
    }
    fn receipts_since(&self, from: u64) -> Box<dyn Iterator<Item = &StoredReceipt> + '_> {
        Box::new(WorldState::receipts_since(self, from))
    }
}

/// The checkpoint covering `world` through its last sequence, every shard written anew.
/// The world must hold at least one slot. `blocks` gives the stored history blocks read so
/// far; a window that changed since its block was stored needs that block's records, and
/// the fold names the blocks it lacks.
pub fn fold<'b, W: FoldSource + ?Sized>(
    world: &W,
    blocks: &dyn Fn(&Hash32) -> Option<&'b HistoryBlock>,
) -> Result<Folded, FoldError> {
    fold_over(world, None, blocks)
}

/// The checkpoint covering `world` through its last sequence, folded over `base` (the
/// newest checkpoint the world adopted, with the merge rule): when the rule allows, it
/// names the base's shards and deltas again and adds deltas of the documents modified
/// since; otherwise, and with no base, it writes every shard. Either way the world it
/// holds is the world's.
pub fn fold_over<'b, W: FoldSource + ?Sized>(
    world: &W,
    base: Option<(&Layers, MergeRule)>,
    blocks: &dyn Fn(&Hash32) -> Option<&'b HistoryBlock>,
) -> Result<Folded, FoldError> {
    fold_over_reusing(world, base, blocks, &mut ReceiptBlocks::default())
}

/// [`fold_over`], taking again the receipt blocks an earlier fold made into
/// `receipt_blocks` where their receipts are the same: the same checkpoint, made cheaper.
pub fn fold_over_reusing<'b, W: FoldSource + ?Sized>(
    world: &W,
    base: Option<(&Layers, MergeRule)>,
    blocks: &dyn Fn(&Hash32) -> Option<&'b HistoryBlock>,
    receipt_blocks: &mut ReceiptBlocks,
) -> Result<Folded, FoldError> {
    let sequence = world.sequence();
    assert!(sequence >= 1, "checkpoint zero is the only checkpoint of an empty log");
    let document_count = world.document_count();
    let shard_bits = shard_bits_for(document_count);
    let mut objects = Vec::new();
    let mut needed = Vec::new();
    let mut adopt = Vec::new();
    let mut history_reused = 0;
    // Each shard sized for its share of the documents and some slack (paths spread evenly
    // under BLAKE3): grown one push at a time, moving its entries each time, they were
    // most of a fold's allocating.
    let shards = shard_count(shard_bits) as usize;
    let share = document_count as usize / shards;
    let mut entries: Vec<Vec<ShardEntry>> =
        (0..shards).map(|_| Vec::with_capacity(share + share / 4 + 16)).collect();
    // Documents modified since the base, in path order: a delta's entries.
    let changed_since = base.map_or(u64::MAX, |(layers, _)| layers.next_sequence);
    let mut changed = Vec::new();
    // Documents come in path order, so every shard's entries do too.
    for (path, doc) in world.documents() {
        let history = fold_history(doc, blocks, &mut objects, &mut needed).map_err(FoldError::Disagrees)?;
        history_reused += history.iter().filter(|r| doc.stored_blocks().contains(r)).count() as u64;
        if history.as_slice() != doc.stored_blocks() || doc.held_versions().len() > 0 {
            adopt.push((path.clone(), history.clone(), doc.entry.version));
        }
        let entry = ShardEntry { entry: doc.entry.clone(), history };
        if doc.entry.modified_sequence >= changed_since {
            changed.push(entry.clone());
        }
        entries[shard_of(path, shard_bits) as usize].push(entry);
    }
    if !needed.is_empty() {
        needed.sort();
        needed.dedup();
        return Err(FoldError::NeedBlocks(needed));
    }
    let receipts_from_sequence = receipts_from(sequence);
    let receipts = receipt_blocks.fold(world.receipts_since(receipts_from_sequence), &mut objects);
    let layered =
        base.filter(|(layers, rule)| rule.layers(layers, changed.len(), document_count, shard_bits));
    let (shards, deltas) = match layered {
        Some((layers, _)) => (layers.shards.clone(), fold_deltas(layers, changed, &mut objects)),
        None => (fold_shards(shard_bits, entries, &mut objects), Vec::new()),
    };
    let root = Root {
        world_id: world.world_id(),
        next_sequence: sequence + 1,
        previous_hash: world.tip_hash(),
        document_count,
        policy: world.policy().clone(),
        shard_bits,
        shards,
        deltas,
        receipts_from_sequence,
        receipts,
        stamp: 0,
    };
    let bytes = Bytes::from(root.encode());
    let root_name = Hash32::of(&bytes);
    objects.push(Object { kind: ObjectKind::Root, name: root_name, bytes });
    let checkpoint =
        Checkpoint::full(world.world_id(), sequence + 1, world.tip_hash(), document_count, root_name);
    Ok(Folded { checkpoint, root, objects, adopt, history_reused })
}

/// Every shard of the layout, written anew.
fn fold_shards(shard_bits: u8, entries: Vec<Vec<ShardEntry>>, objects: &mut Vec<Object>) -> Vec<Hash32> {
    let mut shards = Vec::with_capacity(entries.len());
    for (index, entries) in entries.into_iter().enumerate() {
        let shard = Shard { shard_bits, index: index as u32, entries, stamp: 0 };
        let bytes = Bytes::from(shard.encode());
        let name = Hash32::of(&bytes);
        shards.push(name);
        objects.push(Object { kind: ObjectKind::Shard, name, bytes });
    }
    shards
}

/// The base's deltas, then the changed entries (in path order) cut into deltas of
/// `DELTA_ENTRIES_MAX` from the first path on, so the cut is a function of the entries.
fn fold_deltas(base: &Layers, changed: Vec<ShardEntry>, objects: &mut Vec<Object>) -> Vec<DeltaRef> {
    let mut deltas = base.deltas.clone();
    for chunk in changed.chunks(DELTA_ENTRIES_MAX) {
        let delta = Delta { entries: chunk.to_vec(), stamp: 0 };
        let bytes = Bytes::from(delta.encode());
        let name = Hash32::of(&bytes);
        deltas.push(DeltaRef { entries: chunk.len() as u32, block: name });
        objects.push(Object { kind: ObjectKind::Delta, name, bytes });
    }
    deltas
}

/// A document's history blocks at the world's tip: one per 256-version window of its
/// retained versions, each holding exactly the retained versions of its window (so the
/// bytes depend on the log alone, not on which checkpoint a replica stepped from). A
/// stored block whose window did not change is referenced again; any other is made from
/// the stored block's records (when `blocks` has them; else named in `needed`) and the
/// records held in memory.
fn fold_history<'b>(
    doc: &Document,
    blocks: &dyn Fn(&Hash32) -> Option<&'b HistoryBlock>,
    objects: &mut Vec<Object>,
    needed: &mut Vec<Hash32>,
) -> Result<Vec<HistoryRef>, CheckpointProblem> {
    let e = &doc.entry;
    let through = doc.stored_through();
    let first_window = history_window(e.first_version);
    let mut refs = Vec::with_capacity((history_window(e.version) + 1).saturating_sub(first_window) as usize);
    for window in first_window..=history_window(e.version) {
        let lo = e.first_version.max(history_window_start(window));
        let hi = e.version.min(history_window_start(window + 1) - 1);
        let mut records = Vec::new();
        if lo <= through {
            let stored = doc.stored_blocks()[(window - first_window) as usize];
            if hi <= through && stored.first_version == lo {
                refs.push(stored);
                continue;
            }
            let Some(block) = blocks(&stored.block) else {
                needed.push(stored.block);
                continue;
            };
            let wanted = lo..=hi.min(through);
            records.extend(block.records.iter().filter(|v| wanted.contains(&v.version)).cloned());
            if block.path != e.path || !records.iter().map(|v| v.version).eq(wanted) {
                return Err(CheckpointProblem::HistoryDisagrees { path: e.path.clone() });
            }
        }
        records.extend(doc.held_versions().filter(|v| (lo..=hi).contains(&v.version)).cloned());
        let block = HistoryBlock { path: e.path.clone(), records };
        let bytes = Bytes::from(block.encode());
        let name = Hash32::of(&bytes);
        refs.push(HistoryRef { first_version: lo, block: name });
        objects.push(Object { kind: ObjectKind::History, name, bytes });
    }
    Ok(refs)
}

/// A root must repeat its checkpoint's world, sequence, anchor and count (SPEC 10.12):
/// checked by an opener and by an adopting compactor alike.
pub(crate) fn root_fits(c: &Checkpoint, root: &Root) -> Result<(), CheckpointProblem> {
    let fits = root.world_id == c.world_id
        && root.next_sequence == c.next_sequence
        && root.previous_hash == c.previous_hash
        && root.document_count == c.document_count;
    if fits {
        Ok(())
    } else {
        Err(CheckpointProblem::RootDisagrees)
    }
}

/// A world being rebuilt from a checkpoint's objects as they arrive, in any order. It
/// checks that each object is the one its referrer names and that they fit together.
/// An opening replica leaves history blocks in the bucket (its documents reference them,
/// SPEC 10.5); a tool that judges the whole checkpoint reads and checks them all.
pub(crate) struct Restore {
    pub checkpoint: Checkpoint,
    read_history: bool,
    root: Option<Root>,
    /// Shards not yet read, by name, with their index in the layout.
    shards_wanted: BTreeMap<Hash32, Vec<u32>>,
    /// The entries of each shard read, each in path order.
    runs: Vec<Vec<ShardEntry>>,
    /// Deltas not yet read, by name, with their positions in the root.
    deltas_wanted: BTreeMap<Hash32, Vec<usize>>,
    /// The entries of each delta by its position, once read.
    delta_runs: Vec<Option<Vec<ShardEntry>>>,
    history_wanted: BTreeSet<Hash32>,
    history: BTreeMap<Hash32, HistoryBlock>,
    receipts_wanted: BTreeMap<Hash32, ReceiptBlockRef>,
    receipts: Vec<StoredReceipt>,
}

impl Restore {
    pub fn new(checkpoint: Checkpoint, read_history: bool) -> Restore {
        invariant!(!checkpoint.is_zero());
        Restore {
            checkpoint,
            read_history,
            root: None,
            shards_wanted: BTreeMap::new(),
            runs: Vec::new(),
            deltas_wanted: BTreeMap::new(),
            delta_runs: Vec::new(),
            history_wanted: BTreeSet::new(),
            history: BTreeMap::new(),
            receipts_wanted: BTreeMap::new(),
            receipts: Vec::new(),
        }
    }

    pub fn root_name(&self) -> Hash32 {
        self.checkpoint.root.expect("a full checkpoint names its root")
    }

    /// The layers the root names, once it arrived.
    pub fn layers(&self) -> Option<Layers> {
        self.root.as_ref().map(Layers::of)
    }

    /// The root arrived: returns the shards, deltas and receipt blocks to read next.
    fn on_root(&mut self, root: Root) -> Result<Vec<(ObjectKind, Hash32)>, CheckpointProblem> {
        root_fits(&self.checkpoint, &root)?;
        let mut wanted = Vec::new();
        for (index, name) in root.shards.iter().enumerate() {
            let first = !self.shards_wanted.contains_key(name);
            self.shards_wanted.entry(*name).or_default().push(index as u32);
            if first {
                wanted.push((ObjectKind::Shard, *name));
            }
        }
        self.delta_runs = vec![None; root.deltas.len()];
        for (position, d) in root.deltas.iter().enumerate() {
            let first = !self.deltas_wanted.contains_key(&d.block);
            self.deltas_wanted.entry(d.block).or_default().push(position);
            if first {
                wanted.push((ObjectKind::Delta, d.block));
            }
        }
        for r in &root.receipts {
            if self.receipts_wanted.insert(r.block, *r).is_none() {
                wanted.push((ObjectKind::Receipts, r.block));
            }
        }
        self.root = Some(root);
        Ok(wanted)
    }

    /// A delta arrived: it must hold as many entries as the root says, each with the
    /// history its versions need; returns the history blocks to read next.
    fn on_delta(&mut self, name: Hash32, delta: Delta) -> Result<Vec<Hash32>, CheckpointProblem> {
        let root = self.root.as_ref().expect("deltas are read after the root");
        let positions = self.deltas_wanted.remove(&name).unwrap_or_default();
        for &position in &positions {
            if root.deltas[position].entries as usize != delta.entries.len() {
                return Err(CheckpointProblem::DeltaDisagrees { position });
            }
        }
        let wanted = self.entries_read(&delta.entries)?;
        for position in positions {
            self.delta_runs[position] = Some(delta.entries.clone());
        }
        Ok(wanted)
    }

    /// Checks the history references of entries read from a shard or a delta, and
    /// returns the blocks to read when the whole checkpoint is judged.
    fn entries_read(&mut self, entries: &[ShardEntry]) -> Result<Vec<Hash32>, CheckpointProblem> {
        let mut wanted = Vec::new();
        for e in entries {
            // A checkpoint's blocks hold exactly the retained versions: the first block
            // starts at the first retained version.
            if e.history.first().is_some_and(|r| r.first_version != e.entry.first_version) {
                return Err(CheckpointProblem::HistoryDisagrees { path: e.entry.path.clone() });
            }
            for r in e.history.iter().filter(|_| self.read_history) {
                if self.history_wanted.insert(r.block) {
                    wanted.push(r.block);
                }
            }
        }
        Ok(wanted)
    }

    /// A shard arrived: returns the history blocks to read next.
    fn on_shard(&mut self, name: Hash32, shard: Shard) -> Result<Vec<Hash32>, CheckpointProblem> {
        let root = self.root.as_ref().expect("shards are read after the root");
        let indexes = self.shards_wanted.remove(&name).unwrap_or_default();
        // Two empty shards of one layout differ only by their index, so one name holds
        // one index; a shard is taken only at the index it names.
        if indexes != [shard.index] || shard.shard_bits != root.shard_bits {
            return Err(CheckpointProblem::ShardDisagrees { index: shard.index });
        }
        let wanted = self.entries_read(&shard.entries)?;
        self.runs.push(shard.entries);
        Ok(wanted)
    }

    fn on_history(&mut self, name: Hash32, block: HistoryBlock) {
        self.history.insert(name, block);
    }

    fn on_receipts(&mut self, name: Hash32, block: ReceiptBlock) -> Result<(), CheckpointProblem> {
        let r = self.receipts_wanted.remove(&name).ok_or(CheckpointProblem::ReceiptsDisagree)?;
        if block.sequences() != Some((r.first_sequence, r.last_sequence)) {
            return Err(CheckpointProblem::ReceiptsDisagree);
        }
        self.receipts.extend(block.receipts);
        Ok(())
    }

    /// Whether every object has arrived.
    pub fn is_complete(&self) -> bool {
        let history_done = self.history_wanted.iter().all(|h| self.history.contains_key(h));
        self.root.is_some()
            && self.shards_wanted.is_empty()
            && self.deltas_wanted.is_empty()
            && self.receipts_wanted.is_empty()
            && history_done
    }

    /// The world the checkpoint holds, once complete.
    pub fn finish(self) -> Result<WorldState, CheckpointProblem> {
        invariant!(self.is_complete());
        let root = self.root.expect("complete");
        let count = self.runs.iter().map(Vec::len).sum();
        // Shards interleave by path: merged, the documents come in path order, and the
        // world's index is built in one pass. The deltas are runs after the shards, oldest
        // first; the merge yields equal paths lowest run first, so of a path's entries the
        // last is the newest delta's, the one that counts.
        let mut runs = self.runs;
        runs.extend(self.delta_runs.into_iter().map(|d| d.expect("complete")));
        let (read_history, history) = (self.read_history, &self.history);
        let document = |e: ShardEntry| {
            let path = e.entry.path.clone();
            let disagrees = || CheckpointProblem::HistoryDisagrees { path: path.clone() };
            let doc = if read_history {
                let mut versions = Vec::new();
                for r in &e.history {
                    let block = &history[&r.block];
                    if block.path != e.entry.path || block.first_version() != Some(r.first_version) {
                        return Err(disagrees());
                    }
                    versions.extend(block.records.iter().cloned());
                }
                Document::held(e.entry, versions)
            } else {
                Document::stored(e.entry, e.history)
            };
            let doc = doc.map_err(|_| disagrees())?;
            Ok((path, doc))
        };
        // A path's entry is taken once the merge has moved past the path.
        let mut documents = Vec::with_capacity(count);
        let mut pending: Option<ShardEntry> = None;
        for e in SortedMerge::new(runs, |e: &ShardEntry| e.entry.path.as_str()) {
            match pending.take() {
                Some(p) if p.entry.path != e.entry.path => documents.push(document(p)?),
                _ => {}
            }
            pending = Some(e);
        }
        if let Some(p) = pending {
            documents.push(document(p)?);
        }
        if documents.len() as u64 != root.document_count {
            return Err(CheckpointProblem::RootDisagrees);
        }
        WorldState::restore(
            root.world_id,
            root.next_sequence - 1,
            root.previous_hash,
            root.policy,
            documents,
            root.receipts_from_sequence,
            self.receipts,
        )
        .map_err(|_| CheckpointProblem::RootDisagrees)
    }
}

impl Restore {
    /// Takes the bytes read at `object_key` for the object `(kind, name)`: decodes them by
    /// name, fits them in, and returns the objects to read next. `key` names the
    /// checkpoint, for the reason a failure gives.
    pub fn feed(
        &mut self,
        key: &str,
        (kind, name): (ObjectKind, Hash32),
        object_key: &str,
        bytes: &[u8],
    ) -> Result<Vec<(ObjectKind, Hash32)>, FailReason> {
        let mismatch = |problem| FailReason::CheckpointMismatch { key: key.to_string(), problem };
        let decode_failed = |error| FailReason::Decode { key: object_key.to_string(), error };
        Ok(match kind {
            ObjectKind::Root => {
                self.on_root(Root::decode_named(bytes, &name).map_err(decode_failed)?).map_err(mismatch)?
            }
            ObjectKind::Shard => {
                let shard = Shard::decode_named(bytes, &name).map_err(decode_failed)?;
                let wanted = self.on_shard(name, shard).map_err(mismatch)?;
                wanted.into_iter().map(|h| (ObjectKind::History, h)).collect()
            }
            ObjectKind::Delta => {
                let delta = Delta::decode_named(bytes, &name).map_err(decode_failed)?;
                let wanted = self.on_delta(name, delta).map_err(mismatch)?;
                wanted.into_iter().map(|h| (ObjectKind::History, h)).collect()
            }
            ObjectKind::History => {
                self.on_history(name, HistoryBlock::decode_named(bytes, &name).map_err(decode_failed)?);
                Vec::new()
            }
            // A restore never asks for a body: a checkpoint names bodies only by hash.
            ObjectKind::Body => Vec::new(),
            ObjectKind::Receipts => {
                let block = ReceiptBlock::decode_named(bytes, &name).map_err(decode_failed)?;
                self.on_receipts(name, block).map_err(mismatch)?;
                Vec::new()
            }
        })
    }
}

/// Loads a full checkpoint at once from `get` (key to bytes), every history block
/// included and held in memory: for tools that judge a whole checkpoint (`slotlog verify`).
pub fn load(
    key: &str,
    checkpoint: Checkpoint,
    keys: &Keys,
    get: &dyn Fn(&str) -> Option<Bytes>,
) -> Result<WorldState, FailReason> {
    let mismatch = |problem| FailReason::CheckpointMismatch { key: key.to_string(), problem };
    let mut restore = Restore::new(checkpoint, true);
    let mut queue = std::collections::VecDeque::from([(ObjectKind::Root, restore.root_name())]);
    while let Some((kind, name)) = queue.pop_front() {
        let object_key = object_key(kind, &name, keys);
        let bytes = get(&object_key)
            .ok_or_else(|| mismatch(CheckpointProblem::ObjectMissing { key: object_key.clone() }))?;
        queue.extend(restore.feed(key, (kind, name), &object_key, &bytes)?);
    }
    restore.finish().map_err(mismatch)
}

/// Where an object of `kind` named `name` is stored.
pub fn object_key(kind: ObjectKind, name: &Hash32, keys: &Keys) -> String {
    match kind {
        ObjectKind::History => keys.history(name),
        ObjectKind::Receipts => keys.receipts(name),
        ObjectKind::Shard => keys.shard(name),
        ObjectKind::Root => keys.root_object(name),
        ObjectKind::Delta => keys.delta(name),
        ObjectKind::Body => keys.body(name),
    }
}

/// The object `bytes` (of `kind`, as its first write stored it) with freshen stamp
/// `stamp` (SPEC 10.9): other bytes, the same content. None for a content object (history
/// blocks are never freshened) or bytes that do not decode.
pub fn restamp(kind: ObjectKind, bytes: &[u8], stamp: u64) -> Option<Bytes> {
    let encoded = match kind {
        ObjectKind::History | ObjectKind::Body => return None,
        ObjectKind::Receipts => ReceiptBlock::decode(bytes).ok()?.with_stamp(stamp).encode(),
        ObjectKind::Shard => Shard::decode(bytes).ok()?.with_stamp(stamp).encode(),
        ObjectKind::Root => Root::decode(bytes).ok()?.with_stamp(stamp).encode(),
        ObjectKind::Delta => Delta::decode(bytes).ok()?.with_stamp(stamp).encode(),
    };
    Some(Bytes::from(encoded))
}
