//! The full checkpoint rule (`Rule::CheckpointMismatch`): buckets built by hand with the
//! format types, a log of a few slots and checkpoint objects derived here (with the
//! kernel's layout functions, a second reading of SPEC 10.4 the checker does not share).

use super::{check, CheckOptions, CheckReport, Rule, Violation};
use crate::history::{ClientOp, History, Outcome, StoredObject};
use crate::{ModelApplied, ModelReceipt, ModelWorld, ReceiptKind, Verdict};
use bytes::Bytes;
use slotlog_kernel::format::{
    encode_body, history_window, receipt_block_of, shard_bits_for, shard_count, shard_of, Checkpoint,
    DecodeError, Delta, DeltaRef, HistoryBlock, HistoryRef, Keys, Marker, MergeRule, NameRule, ReceiptBlock,
    ReceiptBlockRef, Root, Shard, ShardEntry, Slot, StoredReceipt,
};
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::{OperationId, StoreId, WorldId};
use slotlog_kernel::time::Instant;
use slotlog_kernel::world::mutation::{Expected, Mutation, PolicyBody};
use slotlog_kernel::world::{
    self as kw, IndexEntry, Path, Policy, PolicyRules, PruneRange, SlotMember, VersionKind, VersionRecord,
};

const WORLD: WorldId = WorldId([5; 16]);

fn path(p: &str) -> Path {
    Path::parse(p).expect("a valid path")
}

fn publish(p: &str, body: &str) -> Mutation {
    Mutation::Publish {
        path: p.to_string(),
        body: Bytes::from(body.to_string()),
        catalog: None,
        expected: Expected::Any,
    }
}

fn append(p: &str, bytes: &str) -> Mutation {
    Mutation::Append { path: p.to_string(), bytes: Bytes::from(bytes.to_string()), expected: Expected::Any }
}

fn archive(p: &str) -> Mutation {
    Mutation::SetArchived { path: p.to_string(), archived: true, expected: Expected::Any }
}

fn set_policy(retention_versions: u32, read_only: &str) -> Mutation {
    let policy = PolicyBody {
        retention_versions,
        body_bytes_max: 1_000,
        read_only_prefixes: vec![read_only.to_string()],
    };
    Mutation::SetPolicy { policy, expected: Expected::Any }
}

fn kind_to_kernel(k: ReceiptKind) -> kw::ReceiptKind {
    match k {
        ReceiptKind::Published => kw::ReceiptKind::Published,
        ReceiptKind::Appended => kw::ReceiptKind::Appended,
        ReceiptKind::Archived => kw::ReceiptKind::Archived,
        ReceiptKind::Unarchived => kw::ReceiptKind::Unarchived,
        ReceiptKind::PolicySet => kw::ReceiptKind::PolicySet,
    }
}

fn receipt_to_kernel(r: &ModelReceipt) -> kw::Receipt {
    kw::Receipt {
        op_id: r.op_id,
        sequence: r.sequence,
        kind: kind_to_kernel(r.kind),
        path: r.path.as_deref().map(path),
        version: r.version,
    }
}

/// The slot member the model's applied verdict stands for.
fn member(a: &ModelApplied) -> SlotMember {
    let r = &a.receipt;
    let entry = r.path.as_deref().map(|p| IndexEntry {
        path: path(p),
        version: r.version,
        first_version: a.first_version,
        archived: a.archived,
        body_hash: Hash32(a.body_hash.expect("a document member has a body")),
        body_len: a.body_len,
        modified_sequence: r.sequence,
        modified_us: 0,
        catalog: a.catalog.as_deref().map(Into::into),
    });
    let version = a.new_version.then(|| VersionRecord {
        version: r.version,
        sequence: r.sequence,
        op_id: r.op_id,
        body_hash: Hash32(a.body_hash.expect("a write has a body")),
        body_len: a.body_len,
        kind: if r.kind == ReceiptKind::Published { VersionKind::Publish } else { VersionKind::Append },
    });
    let policy = a.policy.as_ref().map(|p| PolicyRules {
        retention_versions: p.retention_versions,
        body_bytes_max: p.body_bytes_max,
        read_only_prefixes: p.read_only_prefixes.iter().map(|x| path(x)).collect(),
    });
    SlotMember {
        receipt: receipt_to_kernel(r),
        entry,
        version,
        prune: a.prune.map(|(first, last)| PruneRange { first, last }),
        policy,
    }
}

/// One document of a checkpoint before it is encoded: its entry and its history blocks.
struct DocParts {
    entry: IndexEntry,
    blocks: Vec<HistoryBlock>,
}

struct ShardParts {
    shard_bits: u8,
    index: u32,
    docs: Vec<DocParts>,
    stamp: u64,
}

/// A full checkpoint before it is encoded, so a test can change one thing in it.
struct Parts {
    next_sequence: u64,
    previous_hash: Hash32,
    document_count: u64,
    policy: Policy,
    shard_bits: u8,
    shards: Vec<ShardParts>,
    receipts_from: u64,
    receipt_runs: Vec<(u64, u64)>,
    receipt_blocks: Vec<ReceiptBlock>,
    /// Deltas over the shards, oldest first, each restating these documents' entries.
    deltas: Vec<Vec<&'static str>>,
}

impl Parts {
    /// The checkpoint of `model` as a correct compactor writes it.
    fn of(model: &ModelWorld, previous_hash: Hash32) -> Parts {
        let covered = model.sequence();
        let document_count = model.documents().count() as u64;
        let shard_bits = shard_bits_for(document_count);
        let mut shards: Vec<ShardParts> = (0..shard_count(shard_bits))
            .map(|index| ShardParts { shard_bits, index, docs: Vec::new(), stamp: 0 })
            .collect();
        // Documents come in path order, so each shard's are sorted.
        for (p, d) in model.documents() {
            let entry = IndexEntry {
                path: path(p),
                version: d.version,
                first_version: d.first_version,
                archived: d.archived,
                body_hash: Hash32(d.body_hash),
                body_len: d.body_len,
                modified_sequence: d.modified_sequence,
                modified_us: 0,
                catalog: d.catalog.as_deref().map(Into::into),
            };
            let mut blocks: Vec<HistoryBlock> = Vec::new();
            for v in model.versions(p) {
                let record = VersionRecord {
                    version: v.version,
                    sequence: v.sequence,
                    op_id: v.op_id,
                    body_hash: Hash32(v.body_hash),
                    body_len: v.body_len,
                    kind: if v.kind == ReceiptKind::Published {
                        VersionKind::Publish
                    } else {
                        VersionKind::Append
                    },
                };
                match blocks.last_mut() {
                    Some(b) if history_window(b.records[0].version) == history_window(v.version) => {
                        b.records.push(record)
                    }
                    _ => blocks.push(HistoryBlock { path: path(p), records: vec![record] }),
                }
            }
            shards[shard_of(&entry.path, shard_bits) as usize].docs.push(DocParts { entry, blocks });
        }
        // These worlds are far smaller than the receipt window: it starts at 1.
        assert!(covered < 262_144);
        let mut receipt_runs: Vec<(u64, u64)> = Vec::new();
        for s in 1..=covered {
            match receipt_runs.last_mut() {
                Some(run) if receipt_block_of(run.0) == receipt_block_of(s) => run.1 = s,
                _ => receipt_runs.push((s, s)),
            }
        }
        let receipt_blocks = receipt_runs
            .iter()
            .map(|&(first, last)| {
                let mut receipts: Vec<StoredReceipt> = (first..=last)
                    .map(|s| StoredReceipt {
                        receipt: receipt_to_kernel(&model.receipt_at(s).expect("applied")),
                        request_digest: Hash32(model.request_digest_at(s).expect("applied")),
                    })
                    .collect();
                receipts.sort_by_key(|r| r.receipt.op_id);
                ReceiptBlock { receipts, stamp: 0 }
            })
            .collect();
        let policy = model.policy();
        Parts {
            next_sequence: covered + 1,
            previous_hash,
            document_count,
            policy: Policy {
                version: policy.version,
                rules: PolicyRules {
                    retention_versions: policy.body.retention_versions,
                    body_bytes_max: policy.body.body_bytes_max,
                    read_only_prefixes: policy.body.read_only_prefixes.iter().map(|x| path(x)).collect(),
                },
            },
            shard_bits,
            shards,
            receipts_from: 1,
            receipt_runs,
            receipt_blocks,
            deltas: Vec::new(),
        }
    }

    fn doc(&mut self, p: &str) -> &mut DocParts {
        self.shards
            .iter_mut()
            .flat_map(|s| s.docs.iter_mut())
            .find(|d| d.entry.path.as_str() == p)
            .expect("the checkpoint holds the document")
    }

    /// Encodes every object bottom up and stores it; returns the root.
    fn store(&self, b: &mut Bucket) -> Root {
        let keys = b.keys.clone();
        let mut shard_hashes = Vec::new();
        let mut by_path: std::collections::BTreeMap<String, ShardEntry> = Default::default();
        for sp in &self.shards {
            let entries = sp
                .docs
                .iter()
                .map(|d| {
                    let history = d
                        .blocks
                        .iter()
                        .map(|block| {
                            let bytes = block.encode();
                            let hash = Hash32::of(&bytes);
                            b.put(keys.history(&hash), bytes);
                            HistoryRef { first_version: block.records[0].version, block: hash }
                        })
                        .collect();
                    ShardEntry { entry: d.entry.clone(), history }
                })
                .collect();
            let entries: Vec<ShardEntry> = entries;
            for e in &entries {
                by_path.insert(e.entry.path.to_string(), e.clone());
            }
            let shard = Shard { shard_bits: sp.shard_bits, index: sp.index, entries, stamp: 0 };
            let hash = shard.content_hash();
            b.put(keys.shard(&hash), shard.with_stamp(sp.stamp).encode());
            shard_hashes.push(hash);
        }
        let receipts = self
            .receipt_runs
            .iter()
            .zip(&self.receipt_blocks)
            .map(|(&(first_sequence, last_sequence), block)| {
                let hash = block.content_hash();
                b.put(keys.receipts(&hash), block.encode());
                ReceiptBlockRef { first_sequence, last_sequence, block: hash }
            })
            .collect();
        let root = Root {
            world_id: WORLD,
            next_sequence: self.next_sequence,
            previous_hash: self.previous_hash,
            document_count: self.document_count,
            policy: self.policy.clone(),
            shard_bits: self.shard_bits,
            shards: shard_hashes,
            deltas: self
                .deltas
                .iter()
                .map(|paths| {
                    let entries: Vec<ShardEntry> = paths.iter().map(|p| by_path[*p].clone()).collect();
                    let delta = Delta { entries, stamp: 0 };
                    let block = delta.content_hash();
                    b.put(keys.delta(&block), delta.encode());
                    DeltaRef { entries: paths.len() as u32, block }
                })
                .collect(),
            receipts_from_sequence: self.receipts_from,
            receipts,
            stamp: 0,
        };
        let hash = root.content_hash();
        b.put(keys.root_object(&hash), root.encode());
        let checkpoint =
            Checkpoint::full(WORLD, self.next_sequence, self.previous_hash, self.document_count, hash);
        b.put(keys.checkpoint(self.next_sequence), checkpoint.encode());
        root
    }
}

/// A world's bucket and history, built slot by slot through the model.
struct Bucket {
    keys: Keys,
    model: ModelWorld,
    /// The model after each sequence (index 0 is genesis).
    states: Vec<ModelWorld>,
    history: History,
    objects: Vec<StoredObject>,
    /// Each slot's first and last sequence and hash.
    slots: Vec<(u64, u64, Hash32)>,
    marker_hash: Hash32,
}

impl Bucket {
    fn new() -> Bucket {
        Bucket::ruled(MergeRule::DEFAULT)
    }

    /// A bucket whose marker fixes `merge_rule`.
    fn ruled(merge_rule: MergeRule) -> Bucket {
        let keys = Keys::new("w");
        let marker = Marker { world_id: WORLD, created_by: StoreId(1), merge_rule }.encode();
        let marker_hash = Hash32::of(&marker);
        let mut b = Bucket {
            keys: keys.clone(),
            model: ModelWorld::new(),
            states: vec![ModelWorld::new()],
            history: History::default(),
            objects: Vec::new(),
            slots: Vec::new(),
            marker_hash,
        };
        b.put(keys.marker(), marker);
        b.put(keys.checkpoint(1), Checkpoint::zero(WORLD, marker_hash).encode());
        b
    }

    /// Creates an object, or leaves one already there (content objects are shared).
    fn put(&mut self, key: String, bytes: Vec<u8>) {
        if self.objects.iter().all(|o| o.key != key) {
            self.objects.push(StoredObject { key, bytes: Bytes::from(bytes), created_at: Instant::ZERO });
        }
    }

    fn replace(&mut self, key: &str, bytes: Vec<u8>) {
        let o = self.objects.iter_mut().find(|o| o.key == key).expect("stored");
        o.bytes = Bytes::from(bytes);
    }

    /// Commits `mutations` (each must apply) as the next slot.
    fn slot(&mut self, mutations: &[Mutation]) {
        let first_sequence = self.model.sequence() + 1;
        let mut members = Vec::new();
        for m in mutations {
            let op_id = OperationId::from(u128::from(self.model.sequence() + 1));
            let Verdict::Applied(applied) = self.model.apply(op_id, m) else {
                panic!("{m:?} does not apply")
            };
            if let (true, Some(path)) = (applied.new_version, &applied.receipt.path) {
                // Its body as a blob, as a writer stores it or a step writes it out.
                let body = self.model.body(path, applied.receipt.version).expect("retained").to_vec();
                let key = self.keys.body(&Hash32::of(&body));
                if !self.objects.iter().any(|o| o.key == key) {
                    self.put(key, encode_body(&body));
                }
            }
            members.push(member(&applied));
            self.states.push(self.model.clone());
            self.history.ops.push(ClientOp {
                replica: 0,
                op_id,
                mutation: m.clone(),
                invoked_at: Instant::ZERO,
                outcome: Outcome::Preloaded,
            });
        }
        let prev_hash = self.slots.last().map_or(self.marker_hash, |s| s.2);
        let slot = Slot {
            world_id: WORLD,
            first_sequence,
            store_id: StoreId(1),
            prev_hash,
            members,
            bodies: Vec::new(),
        };
        let bytes = slot.encode();
        let hash = Hash32::of(&bytes);
        self.slots.push((first_sequence, slot.last_sequence(), hash));
        self.put(self.keys.slot(first_sequence), bytes);
    }

    /// Takes the last slot and its writes out of the bucket and the history.
    fn drop_last_slot(&mut self) {
        let (first, _, _) = self.slots.pop().expect("a slot");
        let key = self.keys.slot(first);
        self.objects.retain(|o| o.key != key);
        self.history.ops.truncate(first as usize - 1);
    }

    /// The correct checkpoint covering through `covered`, anchored on the slot holding it.
    fn parts_at(&self, covered: u64) -> Parts {
        let slot = self.slots.iter().find(|s| s.0 <= covered && covered <= s.1).expect("in the log");
        Parts::of(&self.states[covered as usize], slot.2)
    }

    fn parts(&self) -> Parts {
        let covered = self.model.sequence();
        let slot = self.slots.last().expect("a slot");
        assert_eq!(slot.1, covered);
        Parts::of(&self.model, slot.2)
    }

    fn check(&self) -> CheckReport {
        // As a listing returns them: in key order.
        let mut objects = self.objects.clone();
        objects.sort_by(|a, b| a.key.cmp(&b.key));
        check(&self.history, &objects, &self.keys, WORLD, CheckOptions::default())
    }
}

/// Three slots: retention 3 makes `/a` prune version 1 at its fourth version; `/b` is
/// appended to and archived; a read-only prefix is set.
fn world() -> Bucket {
    world_ruled(MergeRule::DEFAULT)
}

/// [`world`] in a world whose marker fixes `merge_rule`.
fn world_ruled(merge_rule: MergeRule) -> Bucket {
    let mut b = Bucket::ruled(merge_rule);
    b.slot(&[publish("/a", "1"), publish("/b", "1"), set_policy(3, "/ro")]); // 1 to 3
    b.slot(&[publish("/a", "2"), publish("/a", "3"), append("/b", "x"), archive("/b")]); // 4 to 7
    b.slot(&[publish("/a", "4"), publish("/c", "c")]); // 8 and 9
    b
}

/// The violations of a run with one mismatching checkpoint, each of the checkpoint rule.
fn mismatch(b: &Bucket) -> Vec<Violation> {
    let r = b.check();
    assert_eq!(r.checkpoint_mismatches, 1, "{:?}", r.violations);
    assert!(r.violations.iter().all(|v| v.rule() == Rule::CheckpointMismatch), "{:?}", r.violations);
    r.violations
}

fn key(b: &Bucket, next_sequence: u64) -> String {
    b.keys.checkpoint(next_sequence)
}

#[test]
fn a_full_checkpoint_holding_the_models_state_passes() {
    let mut b = world();
    b.parts_at(7).store(&mut b);
    b.parts().store(&mut b);
    let r = b.check();
    assert_eq!(r.violations, vec![]);
    assert_eq!((r.checkpoints_judged, r.checkpoint_mismatches), (2, 0));
    assert_eq!(r.tip_sequence, 9);
}

#[test]
fn a_checkpoint_holding_a_version_whose_body_is_not_a_blob_breaks_the_reach_rule() {
    let mut b = world();
    b.parts().store(&mut b);
    let body = b.keys.body(&Hash32::of(b"c"));
    b.objects.retain(|o| o.key != body);
    let r = b.check();
    let expected =
        Violation::CheckpointBodyNotStored { checkpoint: key(&b, 10), path: "/c".into(), version: 1, body };
    assert_eq!(r.violations, vec![expected]);
    assert_eq!(r.violations[0].rule(), Rule::Reachable);
}

#[test]
fn a_freshened_shard_is_judged_by_its_content() {
    let mut b = world();
    let mut parts = b.parts();
    parts.shards[0].stamp = 1;
    parts.store(&mut b);
    let r = b.check();
    assert_eq!(r.violations, vec![]);
    assert_eq!((r.checkpoints_judged, r.checkpoint_mismatches), (1, 0));
}

#[test]
fn a_first_history_block_may_hold_versions_retention_pruned() {
    let mut b = world();
    let mut parts = b.parts();
    // Written at version 3, before version 4 pruned version 1.
    let pruned = b.parts_at(7).doc("/a").blocks[0].records[0].clone();
    assert_eq!(pruned.version, 1);
    parts.doc("/a").blocks[0].records.insert(0, pruned);
    parts.store(&mut b);
    assert_eq!(b.check().violations, vec![]);
}

#[test]
fn a_wrong_index_entry_is_a_checkpoint_mismatch() {
    let mut b = world();
    let mut parts = b.parts();
    parts.doc("/b").entry.archived = false;
    parts.store(&mut b);
    let found = mismatch(&b);
    assert!(
        matches!(
            found.as_slice(),
            [Violation::CheckpointEntryDiffers { key: k, path, .. }] if *k == key(&b, 10) && path == "/b"
        ),
        "{found:?}"
    );
}

#[test]
fn a_missing_version_record_is_a_checkpoint_mismatch() {
    let mut b = world();
    let mut parts = b.parts();
    parts.doc("/a").blocks[0].records.pop();
    parts.store(&mut b);
    let expected = Violation::CheckpointVersionMissing { key: key(&b, 10), path: "/a".into(), version: 4 };
    assert_eq!(mismatch(&b), vec![expected]);
}

#[test]
fn an_extra_version_record_is_a_checkpoint_mismatch() {
    let mut b = world();
    let mut parts = b.parts();
    let mut extra = parts.doc("/a").blocks[0].records.last().expect("a record").clone();
    extra.version = 5;
    parts.doc("/a").blocks[0].records.push(extra);
    parts.store(&mut b);
    let expected = Violation::CheckpointVersionExtra { key: key(&b, 10), path: "/a".into(), version: 5 };
    assert_eq!(mismatch(&b), vec![expected]);
}

#[test]
fn a_wrong_policy_is_a_checkpoint_mismatch() {
    let mut b = world();
    let mut parts = b.parts();
    parts.policy.rules.retention_versions = 4;
    parts.store(&mut b);
    let found = mismatch(&b);
    assert!(
        matches!(found.as_slice(), [Violation::CheckpointPolicy { found, .. }]
        if found.body.retention_versions == 4),
        "{found:?}"
    );
}

#[test]
fn a_missing_receipt_is_a_checkpoint_mismatch() {
    let mut b = world();
    let mut parts = b.parts();
    parts.receipt_blocks[0].receipts.retain(|r| r.receipt.sequence != 9);
    parts.store(&mut b);
    let found = mismatch(&b);
    assert!(
        found.contains(&Violation::CheckpointReceiptMissing { key: key(&b, 10), sequence: 9 }),
        "{found:?}"
    );
    assert!(found
        .iter()
        .any(|v| matches!(v, Violation::CheckpointReceiptBlockRun { found: Some((1, 8)), .. })));
}

#[test]
fn a_request_digest_other_than_its_requests_is_a_checkpoint_mismatch() {
    for digest in [Hash32::of(b"request"), Hash32::ZERO] {
        let mut b = world();
        let mut parts = b.parts();
        let r = parts.receipt_blocks[0].receipts.iter_mut().find(|r| r.receipt.sequence == 2).expect("held");
        r.request_digest = digest;
        parts.store(&mut b);
        assert_eq!(mismatch(&b), vec![Violation::CheckpointRequestDigest { key: key(&b, 10), sequence: 2 }]);
    }
}

#[test]
fn the_kernels_request_digests_are_the_models() {
    // The model's preimage is its own (SPEC 10.13); the kernel's must agree with it.
    let b = world();
    let log = b.keys.log_prefix();
    let slots: Vec<Slot> = b
        .objects
        .iter()
        .filter(|o| o.key.starts_with(&log))
        .map(|o| Slot::decode(&o.bytes).expect("a slot"))
        .collect();
    let members: Vec<&SlotMember> = slots.iter().flat_map(|s| &s.members).collect();
    assert_eq!(members.len() as u64, b.model.sequence());
    for m in members {
        let kernel = slotlog_kernel::world::request_digest::of_member(m);
        assert_eq!(Some(kernel.0), b.model.request_digest_at(m.sequence()), "member {}", m.sequence());
    }
}

#[test]
fn a_shard_under_another_name_is_a_checkpoint_mismatch() {
    let mut b = world();
    let root = b.parts().store(&mut b);
    let shard_key = b.keys.shard(&root.shards[0]);
    let other = Shard { shard_bits: 0, index: 0, entries: Vec::new(), stamp: 0 };
    b.replace(&shard_key, other.encode());
    let found = mismatch(&b);
    assert!(
        matches!(
            found.as_slice(),
            [Violation::CheckpointObjectUndecodable {
                object,
                error: DecodeError::Misnamed(NameRule::NotItsName { .. }),
                ..
            }] if *object == shard_key
        ),
        "{found:?}"
    );
}

#[test]
fn a_path_in_the_wrong_shard_is_a_checkpoint_mismatch() {
    // 257 documents take one shard bit: two shards.
    let mut b = Bucket::new();
    let first: Vec<Mutation> = (0..256).map(|i| publish(&format!("/d/{i}"), "x")).collect();
    b.slot(&first);
    b.slot(&[publish("/d/256", "x")]);
    b.parts().store(&mut b);
    assert_eq!(b.check().violations, vec![]);

    let mut b2 = Bucket::new();
    b2.slot(&first);
    b2.slot(&[publish("/d/256", "x")]);
    let mut parts = b2.parts();
    assert_eq!(parts.shards.len(), 2);
    // Each shard is whole and names its own index, but stands at the other's position.
    parts.shards.swap(0, 1);
    parts.store(&mut b2);
    let found = mismatch(&b2);
    assert!(
        found
            .iter()
            .any(|v| matches!(v, Violation::CheckpointPathInWrongShard { position: 0, expected: 1, .. })),
        "{found:?}"
    );
    assert!(found.contains(&Violation::CheckpointShardMisplaced {
        key: key(&b2, 258),
        position: 0,
        shard_bits: 1,
        index: 1,
    }));
}

#[test]
fn a_checkpoint_not_anchored_on_its_slot_is_a_checkpoint_mismatch() {
    let mut b = world();
    let mut parts = b.parts();
    parts.previous_hash = Hash32::of(b"another slot");
    parts.store(&mut b);
    let expected = Violation::CheckpointPreviousHash {
        key: key(&b, 10),
        expected: b.slots[2].2,
        found: Hash32::of(b"another slot"),
    };
    assert_eq!(mismatch(&b), vec![expected]);
}

#[test]
fn a_checkpoint_inside_a_slot_is_a_checkpoint_mismatch() {
    let mut b = world();
    // Sequence 5 is inside slot 4 to 7.
    b.parts_at(5).store(&mut b);
    let expected =
        Violation::CheckpointInsideSlot { key: key(&b, 6), covered: 5, slot_first: 4, slot_last: 7 };
    assert_eq!(mismatch(&b), vec![expected]);
}

#[test]
fn a_checkpoint_past_the_tip_is_a_checkpoint_mismatch() {
    let mut b = world();
    b.parts().store(&mut b);
    b.drop_last_slot();
    let r = b.check();
    assert_eq!(r.tip_sequence, 7);
    assert_eq!(r.violations, vec![Violation::CheckpointPastTip { key: key(&b, 10), covered: 9, tip: 7 }]);
    assert_eq!((r.checkpoints_judged, r.checkpoint_mismatches), (1, 1));
}

#[test]
fn a_missing_document_is_a_checkpoint_mismatch() {
    let mut b = world();
    let mut parts = b.parts();
    parts.shards[0].docs.retain(|d| d.entry.path.as_str() != "/c");
    parts.store(&mut b);
    let expected = Violation::CheckpointDocumentMissing { key: key(&b, 10), path: "/c".into() };
    assert_eq!(mismatch(&b), vec![expected]);
}

#[test]
fn an_undecodable_checkpoint_is_a_checkpoint_mismatch() {
    let mut b = world();
    b.put(b.keys.checkpoint(10), b"not a checkpoint".to_vec());
    let found = mismatch(&b);
    assert_eq!(
        found,
        vec![Violation::CheckpointUndecodable { key: key(&b, 10), error: DecodeError::Foreign }]
    );
}

#[test]
fn deltas_past_the_worlds_merge_rule_are_a_checkpoint_mismatch() {
    // The same two deltas in a world whose marker allows one, and in one that allows 32.
    let layered = |merge_rule| {
        let mut b = world_ruled(merge_rule);
        let mut parts = b.parts();
        parts.deltas = vec![vec!["/a"], vec!["/a", "/c"]];
        assert_eq!(parts.store(&mut b).deltas.len(), 2);
        b.check()
    };
    let r = layered(MergeRule { deltas_max: 1, ..MergeRule::DEFAULT });
    assert_eq!(r.checkpoint_mismatches, 1, "{:?}", r.violations);
    assert!(
        matches!(
            &r.violations[..],
            [Violation::CheckpointLayers { deltas: 2, entries: 3, deltas_max: 1, .. }]
        ),
        "{:?}",
        r.violations
    );
    assert!(r.violations.iter().all(|v| v.rule() == Rule::CheckpointMismatch));
    // Within the rule: their entries restate the shards', so all is well.
    assert_eq!(layered(MergeRule::DEFAULT).violations, vec![]);
}

#[test]
fn a_document_judged_clean_before_is_judged_again_once_its_entry_differs() {
    // `/b` is the same at 7 and 9: clean in the first checkpoint, wrong in the second.
    let mut b = world();
    b.parts_at(7).store(&mut b);
    let mut parts = b.parts();
    parts.doc("/b").entry.archived = false;
    parts.store(&mut b);
    let found = mismatch(&b);
    assert!(
        matches!(
            found.as_slice(),
            [Violation::CheckpointEntryDiffers { key: k, path, .. }] if *k == key(&b, 10) && path == "/b"
        ),
        "{found:?}"
    );
}

#[test]
fn a_document_judged_clean_before_is_judged_again_once_its_history_differs() {
    let mut b = world();
    b.parts_at(7).store(&mut b);
    let mut parts = b.parts();
    parts.doc("/b").blocks[0].records.pop();
    parts.store(&mut b);
    let expected = Violation::CheckpointVersionMissing { key: key(&b, 10), path: "/b".into(), version: 2 };
    assert_eq!(mismatch(&b), vec![expected]);
}

#[test]
fn a_body_found_stored_for_one_checkpoint_is_stored_for_the_next() {
    // `/b`'s bodies are named by both checkpoints; `/c`'s only by the second, and missing.
    let mut b = world();
    b.parts_at(7).store(&mut b);
    b.parts().store(&mut b);
    let body = b.keys.body(&Hash32::of(b"c"));
    b.objects.retain(|o| o.key != body);
    let r = b.check();
    let expected =
        Violation::CheckpointBodyNotStored { checkpoint: key(&b, 10), path: "/c".into(), version: 1, body };
    assert_eq!(r.violations, vec![expected]);
    assert_eq!(r.checkpoints_judged, 2);
}
