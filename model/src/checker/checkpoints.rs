//! Full checkpoints (SPEC 10.1, 10.4 to 10.8, 10.16). Every checkpoint in the bucket but
//! checkpoint zero is followed from its root through its shards, deltas, history blocks
//! and receipt blocks, and what it holds (the shards' entries, each overridden by the
//! newest delta's entry for its path) is compared with the model's own state at the
//! sequence it covers (`crate::checkpoint`).
//!
//! Only the format decoders are shared with the kernel; the layout, the history windows
//! and the receipt window are the model's, so a kernel bug in folding a checkpoint cannot
//! convince the checker. Content is compared, never stamps: a freshened object (SPEC 10.9)
//! holds the same content as its first write.

use super::violation::CheckpointField;
use super::{holding, receipt_to_model, CheckReport, SlotSpan, Violation};
use crate::checkpoint::{
    history_window, receipt_runs, shard_of, window_first_version, CheckpointDocument, ModelCheckpoint,
    SHARD_BITS_MAX,
};
use crate::history::StoredObject;
use crate::{ModelDocument, ModelPolicy, ModelPolicyBody, ModelVersion, ModelWorld, ReceiptKind};
use rustc_hash::{FxHashMap, FxHashSet};
use slotlog_kernel::format::{
    Checkpoint, DecodeError, Delta, HistoryBlock, Keys, MergeRule, ReceiptBlock, Root, Shard, ShardEntry,
    StoredReceipt, DELTA_ENTRIES_MAX,
};
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::WorldId;
use slotlog_kernel::world::{IndexEntry, Policy, VersionKind, VersionRecord};
use std::collections::BTreeMap;
use std::rc::Rc;

/// A full checkpoint found in the bucket, waiting for the replay to reach the sequence it
/// covers.
struct Found {
    key: String,
    checkpoint: Checkpoint,
    /// The hash of the slot holding the covered sequence, once the chain is known.
    anchor: Option<Hash32>,
    findings: Vec<Violation>,
}

/// Why an object a checkpoint names could not be read.
#[derive(Clone)]
enum Unreadable {
    Missing,
    Undecodable(DecodeError),
}

/// Decoded content objects by name. A shard, receipt block or history block is named by
/// many checkpoints of a run, so each is decoded once.
type Decoded<T> = FxHashMap<Hash32, Result<Rc<T>, Unreadable>>;

pub(super) struct Judge<'a> {
    keys: &'a Keys,
    world_id: WorldId,
    objects: FxHashMap<&'a str, &'a StoredObject>,
    /// Checkpoints by the sequence they cover (their next sequence minus 1).
    found: BTreeMap<u64, Vec<Found>>,
    shards: Decoded<Shard>,
    deltas: Decoded<Delta>,
    /// The world's merge rule, as its marker names it (SPEC 4).
    merge_rule: MergeRule,
    histories: Decoded<HistoryBlock>,
    receipt_blocks: Decoded<ReceiptBlock>,
    /// Documents judged to hold the model's content, for the checkpoints after.
    clean: CleanDocuments,
    /// Bodies found stored: the bucket does not change while it is judged.
    stored_bodies: FxHashSet<Hash32>,
}

/// Documents a checkpoint was found to hold as the model does, each with the entry it
/// held and the model's document it was judged against. Judging a document reads only
/// those two and the bucket, which does not change while it is judged; so a later
/// checkpoint that holds the same entry where the model holds the same document would
/// be judged clean again, and is not judged twice. Both are compared in full, never
/// assumed: a document that changed, on either side, is judged anew.
#[derive(Default)]
struct CleanDocuments {
    by_path: FxHashMap<String, (ShardEntry, CheckpointDocument)>,
}

impl CleanDocuments {
    /// Whether `e` against `d` was judged clean before.
    fn holds(&self, e: &ShardEntry, d: &CheckpointDocument) -> bool {
        self.by_path.get(d.path.as_str()).is_some_and(|(entry, document)| entry == e && document == d)
    }

    /// `e` against `d` was just judged clean.
    fn note(&mut self, e: &ShardEntry, d: &CheckpointDocument) {
        match self.by_path.get_mut(d.path.as_str()) {
            Some(judged) => *judged = (e.clone(), d.clone()),
            None => {
                self.by_path.insert(d.path.clone(), (e.clone(), d.clone()));
            }
        }
    }
}

/// Counts one judged checkpoint and reports what was found wrong with it.
fn settle(r: &mut CheckReport, findings: Vec<Violation>) {
    r.checkpoints_judged += 1;
    if !findings.is_empty() {
        r.checkpoint_mismatches += 1;
    }
    for v in findings {
        r.violation(v);
    }
}

fn load<T>(
    cache: &mut Decoded<T>,
    objects: &FxHashMap<&str, &StoredObject>,
    key: &str,
    name: &Hash32,
    decode: fn(&[u8], &Hash32) -> Result<T, DecodeError>,
) -> Result<Rc<T>, Unreadable> {
    cache
        .entry(*name)
        .or_insert_with(|| match objects.get(key) {
            None => Err(Unreadable::Missing),
            Some(o) => decode(&o.bytes, name).map(Rc::new).map_err(Unreadable::Undecodable),
        })
        .clone()
}

fn unreadable(key: &str, object: String, problem: Unreadable) -> Violation {
    let key = key.to_string();
    match problem {
        Unreadable::Missing => Violation::CheckpointObjectMissing { key, object },
        Unreadable::Undecodable(error) => Violation::CheckpointObjectUndecodable { key, object, error },
    }
}

impl<'a> Judge<'a> {
    /// Finds every checkpoint but checkpoint zero. Those that do not decode, or are not
    /// the checkpoint their key names, are judged at once; the rest wait for the model.
    pub fn collect(
        objects: &'a [StoredObject],
        keys: &'a Keys,
        world_id: WorldId,
        merge_rule: MergeRule,
        r: &mut CheckReport,
    ) -> Judge<'a> {
        let prefix = keys.checkpoints_prefix();
        let zero_key = keys.checkpoint(1);
        let mut found: BTreeMap<u64, Vec<Found>> = BTreeMap::new();
        for o in objects.iter().filter(|o| o.key.starts_with(&prefix) && o.key != zero_key) {
            let key = o.key.clone();
            let Some(named) = keys.parse_checkpoint(&key) else {
                settle(r, vec![Violation::NotACheckpointName { key }]);
                continue;
            };
            let checkpoint = match Checkpoint::decode(&o.bytes) {
                Ok(c) => c,
                Err(error) => {
                    settle(r, vec![Violation::CheckpointUndecodable { key, error }]);
                    continue;
                }
            };
            // Schema 1 decodes only at next sequence 1, which is checkpoint zero's key, so a
            // checkpoint named as it says is a full one.
            if checkpoint.next_sequence != named || checkpoint.is_zero() {
                let next_sequence = checkpoint.next_sequence;
                settle(r, vec![Violation::CheckpointMisnamed { key, next_sequence }]);
                continue;
            }
            let mut findings = Vec::new();
            if checkpoint.world_id != world_id {
                findings
                    .push(Violation::CheckpointForeignWorld { key: key.clone(), found: checkpoint.world_id });
            }
            let covered = checkpoint.next_sequence - 1;
            found.entry(covered).or_default().push(Found { key, checkpoint, anchor: None, findings });
        }
        Judge {
            keys,
            world_id,
            objects: objects.iter().map(|o| (o.key.as_str(), o)).collect(),
            found,
            shards: FxHashMap::default(),
            deltas: FxHashMap::default(),
            merge_rule,
            histories: FxHashMap::default(),
            receipt_blocks: FxHashMap::default(),
            clean: CleanDocuments::default(),
            stored_bodies: FxHashSet::default(),
        }
    }

    /// Anchors each checkpoint on the log: it covers through the last sequence of a slot
    /// and names that slot's hash. One past the tip covers what the log does not hold and
    /// is judged now.
    pub fn anchor(&mut self, spans: &[SlotSpan], tip: u64, r: &mut CheckReport) {
        for (covered, list) in self.found.split_off(&(tip + 1)) {
            for mut f in list {
                f.findings.push(Violation::CheckpointPastTip { key: f.key.clone(), covered, tip });
                settle(r, f.findings);
            }
        }
        for (&covered, list) in &mut self.found {
            let span = holding(spans, covered).expect("the log holds every sequence up to its tip");
            for f in list {
                if span.last != covered {
                    f.findings.push(Violation::CheckpointInsideSlot {
                        key: f.key.clone(),
                        covered,
                        slot_first: span.first,
                        slot_last: span.last,
                    });
                }
                if f.checkpoint.previous_hash != span.hash {
                    f.findings.push(Violation::CheckpointPreviousHash {
                        key: f.key.clone(),
                        expected: span.hash,
                        found: f.checkpoint.previous_hash,
                    });
                }
                f.anchor = Some(span.hash);
            }
        }
    }

    /// Judges the checkpoints covering the log through `covered`, if any, against `model`
    /// after the member at `covered`. The model's state is derived only where a checkpoint
    /// is. A model that lags the log (it could not replay a member, already a violation)
    /// judges nothing.
    pub fn judge_at(&mut self, model: &ModelWorld, covered: u64, r: &mut CheckReport) {
        if model.sequence() != covered || !self.found.contains_key(&covered) {
            return;
        }
        let list = self.found.remove(&covered).expect("present");
        let anchor = list[0].anchor.expect("anchored before the replay");
        let expected = ModelCheckpoint::of(model, self.world_id, anchor);
        for mut f in list {
            self.judge(&f.key, &f.checkpoint, &expected, &mut f.findings);
            settle(r, f.findings);
        }
    }

    /// Checkpoints the replay never reached (it stopped on an earlier violation) count
    /// with what was found without the model.
    pub fn finish(self, r: &mut CheckReport) {
        for f in self.found.into_values().flatten() {
            settle(r, f.findings);
        }
    }

    fn judge(&mut self, key: &str, c: &Checkpoint, m: &ModelCheckpoint, out: &mut Vec<Violation>) {
        if c.document_count != m.document_count {
            out.push(Violation::CheckpointDocumentCount {
                key: key.to_string(),
                found: c.document_count,
                model: m.document_count,
            });
        }
        let name = c.root.expect("a full checkpoint names a root");
        let root_key = self.keys.root_object(&name);
        let root = match self.objects.get(root_key.as_str()) {
            None => return out.push(unreadable(key, root_key, Unreadable::Missing)),
            Some(o) => match Root::decode_named(&o.bytes, &name) {
                Ok(root) => root,
                Err(error) => return out.push(unreadable(key, root_key, Unreadable::Undecodable(error))),
            },
        };
        let repeated = [
            (CheckpointField::WorldId, root.world_id == c.world_id),
            (CheckpointField::NextSequence, root.next_sequence == c.next_sequence),
            (CheckpointField::PreviousHash, root.previous_hash == c.previous_hash),
            (CheckpointField::DocumentCount, root.document_count == c.document_count),
        ];
        for (field, same) in repeated {
            if !same {
                out.push(Violation::CheckpointRootDisagrees { key: key.to_string(), field });
            }
        }
        let policy = policy_to_model(&root.policy);
        if policy != m.policy {
            out.push(Violation::CheckpointPolicy {
                key: key.to_string(),
                found: Box::new(policy),
                model: Box::new(m.policy.clone()),
            });
        }
        self.judge_documents(key, &root, m, out);
        self.judge_receipts(key, &root, m, out);
        self.judge_bodies(key, m, out);
    }

    /// Every body of every version the checkpoint holds is a blob (bodies are never
    /// collected, so one stored at its create is stored at the end).
    fn judge_bodies(&mut self, key: &str, m: &ModelCheckpoint, out: &mut Vec<Violation>) {
        for d in &m.documents {
            for v in &d.versions {
                let hash = Hash32(v.body_hash);
                if self.stored_bodies.contains(&hash) {
                    continue;
                }
                let body = self.keys.body(&hash);
                if self.objects.contains_key(body.as_str()) {
                    self.stored_bodies.insert(hash);
                } else {
                    out.push(Violation::CheckpointBodyNotStored {
                        checkpoint: key.to_string(),
                        path: d.path.clone(),
                        version: v.version,
                        body,
                    });
                    return; // one is enough to name the checkpoint
                }
            }
        }
    }

    /// The layout is the rule's, every path sits in its shard, and the entries and
    /// retained versions are the model's.
    fn judge_documents(&mut self, key: &str, root: &Root, m: &ModelCheckpoint, out: &mut Vec<Violation>) {
        if root.shard_bits != m.shard_bits || root.shards.len() as u64 != 1u64 << m.shard_bits {
            out.push(Violation::CheckpointLayout {
                key: key.to_string(),
                shard_bits: root.shard_bits,
                shards: root.shards.len(),
                expected: m.shard_bits,
            });
        }
        // Paths are placed by the root's own layout, so one wrong count is one finding.
        let bits = root.shard_bits.min(SHARD_BITS_MAX);
        let mut shards = Vec::with_capacity(root.shards.len());
        // Positions whose shard could not be read: their documents are not reported missing.
        let mut unread = Vec::new();
        for (position, name) in root.shards.iter().enumerate() {
            let position = position as u32;
            let shard_key = self.keys.shard(name);
            let shard = match load(&mut self.shards, &self.objects, &shard_key, name, Shard::decode_named) {
                Ok(shard) => shard,
                Err(problem) => {
                    out.push(unreadable(key, shard_key, problem));
                    unread.push(position);
                    continue;
                }
            };
            if shard.shard_bits != root.shard_bits || shard.index != position {
                out.push(Violation::CheckpointShardMisplaced {
                    key: key.to_string(),
                    position,
                    shard_bits: shard.shard_bits,
                    index: shard.index,
                });
            }
            if let Some(pair) = shard.entries.windows(2).find(|p| p[0].entry.path >= p[1].entry.path) {
                out.push(Violation::CheckpointShardNotSorted {
                    key: key.to_string(),
                    position,
                    path: pair[1].entry.path.to_string(),
                });
            }
            for e in &shard.entries {
                let expected = shard_of(e.entry.path.as_str(), bits);
                if expected != position {
                    out.push(Violation::CheckpointPathInWrongShard {
                        key: key.to_string(),
                        path: e.entry.path.to_string(),
                        position,
                        expected,
                    });
                }
            }
            shards.push(shard);
        }
        // The merge rule, from the references alone, as a step decides it.
        let (deltas_max, per_mille) =
            (self.merge_rule.deltas_max, self.merge_rule.delta_entries_per_mille_max);
        let entries: u64 = root.deltas.iter().map(|d| u64::from(d.entries)).sum();
        let entries_max = (root.document_count * per_mille / 1_000).max(DELTA_ENTRIES_MAX as u64);
        if root.deltas.len() > deltas_max || entries > entries_max {
            out.push(Violation::CheckpointLayers {
                key: key.to_string(),
                deltas: root.deltas.len(),
                entries,
                deltas_max,
                entries_max,
            });
        }
        // The deltas, oldest first: each entry overrides the shard's and any older delta's.
        let mut deltas = Vec::with_capacity(root.deltas.len());
        for (position, reference) in root.deltas.iter().enumerate() {
            let delta_key = self.keys.delta(&reference.block);
            match load(&mut self.deltas, &self.objects, &delta_key, &reference.block, Delta::decode_named) {
                Ok(delta) => {
                    if delta.entries.len() != reference.entries as usize {
                        out.push(Violation::CheckpointDeltaEntries {
                            key: key.to_string(),
                            position,
                            named: reference.entries,
                            found: delta.entries.len(),
                        });
                    }
                    deltas.push(delta);
                }
                Err(problem) => out.push(unreadable(key, delta_key, problem)),
            }
        }
        // What the checkpoint holds, one entry a path: a path's last entry in layer
        // order (shards, then the deltas oldest first) counts. Sorted stably by path and
        // walked beside the model's documents (in path order too), not a map of them all.
        let mut held: Vec<&ShardEntry> =
            shards.iter().flat_map(|s| &s.entries).chain(deltas.iter().flat_map(|d| &d.entries)).collect();
        held.sort_by(|a, b| a.entry.path.as_str().cmp(b.entry.path.as_str()));
        held.dedup_by(|later, earlier| {
            let same = later.entry.path == earlier.entry.path;
            if same {
                *earlier = *later;
            }
            same
        });
        let mut held = held.into_iter().peekable();
        let mut extra = Vec::new();
        for d in &m.documents {
            let path = d.path.as_str();
            while let Some(e) = held.next_if(|e| e.entry.path.as_str() < path) {
                extra.push(e);
            }
            match held.next_if(|e| e.entry.path.as_str() == path) {
                None if unread.contains(&shard_of(&d.path, bits)) => {}
                None => out.push(Violation::CheckpointDocumentMissing {
                    key: key.to_string(),
                    path: d.path.clone(),
                }),
                Some(e) if self.clean.holds(e, d) => {}
                Some(e) => {
                    let before = out.len();
                    self.judge_document(key, e, d, out);
                    if out.len() == before {
                        self.clean.note(e, d);
                    }
                }
            }
        }
        extra.extend(held);
        for path in extra.into_iter().map(|e| e.entry.path.as_str()) {
            out.push(Violation::CheckpointDocumentExtra { key: key.to_string(), path: path.to_string() });
        }
    }

    fn judge_document(
        &mut self,
        key: &str,
        e: &ShardEntry,
        d: &CheckpointDocument,
        out: &mut Vec<Violation>,
    ) {
        let path = &d.path;
        if entry_to_model(&e.entry) != d.document {
            out.push(Violation::CheckpointEntryDiffers {
                key: key.to_string(),
                path: path.clone(),
                found: Box::new(e.entry.clone()),
                model: Box::new(d.document.clone()),
            });
        }
        // One reference per window of the model's retained versions (SPEC 10.6).
        let first_version = d.document.first_version;
        let first_window = history_window(first_version);
        let expected = history_window(d.document.version) - first_window + 1;
        if e.history.len() as u64 != expected {
            out.push(Violation::CheckpointHistoryRefs {
                key: key.to_string(),
                path: path.clone(),
                expected,
                found: e.history.len(),
            });
        }
        let mut records: BTreeMap<u64, VersionRecord> = BTreeMap::new();
        for (position, reference) in e.history.iter().enumerate() {
            let window = first_window + position as u64;
            // The first block may start before `first_version`: it was written before
            // retention pruned its older records.
            let placed = if position == 0 {
                reference.first_version >= 1
                    && history_window(reference.first_version) == window
                    && reference.first_version <= first_version
            } else {
                reference.first_version == window_first_version(window)
            };
            if !placed {
                out.push(Violation::CheckpointHistoryRefMisplaced {
                    key: key.to_string(),
                    path: path.clone(),
                    position,
                    first_version: reference.first_version,
                });
            }
            let block_key = self.keys.history(&reference.block);
            let block = match load(
                &mut self.histories,
                &self.objects,
                &block_key,
                &reference.block,
                HistoryBlock::decode_named,
            ) {
                Ok(block) => block,
                Err(problem) => {
                    out.push(unreadable(key, block_key, problem));
                    continue;
                }
            };
            if block.path.as_str() != path {
                out.push(Violation::CheckpointHistoryPath {
                    key: key.to_string(),
                    path: path.clone(),
                    found: block.path.clone(),
                });
            }
            let start = block.first_version().expect("a decoded block holds a record");
            if start != reference.first_version {
                out.push(Violation::CheckpointHistoryBlockStart {
                    key: key.to_string(),
                    path: path.clone(),
                    position,
                    named: reference.first_version,
                    found: start,
                });
            }
            // Records below `first_version` were pruned: readers ignore them.
            for record in block.records.iter().filter(|v| v.version >= first_version) {
                records.insert(record.version, record.clone());
            }
        }
        for model in &d.versions {
            match records.remove(&model.version) {
                None => out.push(Violation::CheckpointVersionMissing {
                    key: key.to_string(),
                    path: path.clone(),
                    version: model.version,
                }),
                Some(found) if version_to_model(&found) != *model => {
                    out.push(Violation::CheckpointVersionDiffers {
                        key: key.to_string(),
                        path: path.clone(),
                        version: model.version,
                        found: Box::new(found),
                        model: Box::new(model.clone()),
                    })
                }
                Some(_) => {}
            }
        }
        for version in records.into_keys() {
            out.push(Violation::CheckpointVersionExtra { key: key.to_string(), path: path.clone(), version });
        }
    }

    /// The window starts where the rule says, the blocks are cut at fixed sequences and
    /// hold exactly the runs they are named for, and the receipts are the model's.
    fn judge_receipts(&mut self, key: &str, root: &Root, m: &ModelCheckpoint, out: &mut Vec<Violation>) {
        if root.receipts_from_sequence != m.receipts_from_sequence {
            out.push(Violation::CheckpointReceiptWindow {
                key: key.to_string(),
                expected: m.receipts_from_sequence,
                found: root.receipts_from_sequence,
            });
        }
        // Contiguous from the root's own start to the covered sequence, cut at block starts.
        let runs = receipt_runs(root.receipts_from_sequence, m.covered());
        let named: Vec<(u64, u64)> =
            root.receipts.iter().map(|r| (r.first_sequence, r.last_sequence)).collect();
        if let Some(position) = (0..runs.len().max(named.len())).find(|&i| runs.get(i) != named.get(i)) {
            out.push(Violation::CheckpointReceiptBlockCut {
                key: key.to_string(),
                position,
                found: named.get(position).copied(),
                expected: runs.get(position).copied(),
            });
        }
        let mut blocks = Vec::with_capacity(root.receipts.len());
        for (position, reference) in root.receipts.iter().enumerate() {
            let block_key = self.keys.receipts(&reference.block);
            let block = match load(
                &mut self.receipt_blocks,
                &self.objects,
                &block_key,
                &reference.block,
                ReceiptBlock::decode_named,
            ) {
                Ok(block) => block,
                Err(problem) => {
                    out.push(unreadable(key, block_key, problem));
                    continue;
                }
            };
            let run = (reference.first_sequence, reference.last_sequence);
            let count = reference.last_sequence.saturating_sub(reference.first_sequence) + 1;
            if block.sequences() != Some(run) || block.receipts.len() as u64 != count {
                out.push(Violation::CheckpointReceiptBlockRun {
                    key: key.to_string(),
                    position,
                    first_sequence: reference.first_sequence,
                    last_sequence: reference.last_sequence,
                    found: block.sequences(),
                    receipts: block.receipts.len(),
                });
            }
            blocks.push(block);
        }
        // Indexed by offset in the model's window; anything outside it is extra.
        let mut held: Vec<Option<&StoredReceipt>> = vec![None; m.receipts.len()];
        for stored in blocks.iter().flat_map(|b| &b.receipts) {
            let sequence = stored.receipt.sequence;
            if m.request_digest(sequence).is_some_and(|digest| stored.request_digest.0 != digest) {
                out.push(Violation::CheckpointRequestDigest { key: key.to_string(), sequence });
            }
            let slot = sequence
                .checked_sub(m.receipts_from_sequence)
                .and_then(|offset| held.get_mut(usize::try_from(offset).ok()?));
            match slot {
                Some(slot) => *slot = Some(stored),
                None => out.push(Violation::CheckpointReceiptExtra { key: key.to_string(), sequence }),
            }
        }
        for (model, found) in m.receipts.iter().zip(held) {
            let sequence = model.sequence;
            match found {
                None => out.push(Violation::CheckpointReceiptMissing { key: key.to_string(), sequence }),
                Some(stored) if receipt_to_model(&stored.receipt) != *model => {
                    out.push(Violation::CheckpointReceiptDiffers {
                        key: key.to_string(),
                        sequence,
                        found: Box::new(stored.receipt.clone()),
                        model: Box::new(model.clone()),
                    })
                }
                Some(_) => {}
            }
        }
    }
}

fn policy_to_model(p: &Policy) -> ModelPolicy {
    ModelPolicy {
        version: p.version,
        body: ModelPolicyBody {
            retention_versions: p.rules.retention_versions,
            body_bytes_max: p.rules.body_bytes_max,
            read_only_prefixes: p.rules.read_only_prefixes.iter().map(|x| x.to_string()).collect(),
        },
    }
}

fn entry_to_model(e: &IndexEntry) -> ModelDocument {
    ModelDocument {
        version: e.version,
        first_version: e.first_version,
        archived: e.archived,
        body_hash: e.body_hash.0,
        body_len: e.body_len,
        modified_sequence: e.modified_sequence,
        modified_us: e.modified_us,
        catalog: e.catalog.as_deref().map(str::to_string),
    }
}

fn version_to_model(v: &VersionRecord) -> ModelVersion {
    ModelVersion {
        version: v.version,
        sequence: v.sequence,
        op_id: v.op_id,
        body_hash: v.body_hash.0,
        body_len: v.body_len,
        kind: match v.kind {
            VersionKind::Publish => ReceiptKind::Published,
            VersionKind::Append => ReceiptKind::Appended,
        },
    }
}
