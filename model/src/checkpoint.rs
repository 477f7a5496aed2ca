//! Full checkpoints as the model derives them (SPEC 10.4 to 10.8): what a checkpoint
//! covering the model's world at a sequence must hold, and the layout rules that place
//! that content in shards, history windows and receipt blocks.
//!
//! Written from the SPEC text, never by calling the kernel's folding or layout code, so
//! that a kernel bug cannot make the checker agree with it. The checker compares what it
//! finds in the bucket with this (`checker::checkpoints`).

use crate::document::{ModelDocument, ModelVersion};
use crate::policy::ModelPolicy;
use crate::verdict::ModelReceipt;
use crate::world::ModelWorld;
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::WorldId;

/// Documents one shard is sized for (SPEC 10.4, `DOCUMENTS_PER_SHARD_TARGET`).
pub const DOCUMENTS_PER_SHARD: u64 = 256;
/// Most shard bits a layout has (SPEC 10.4): past 65,536 shards, shards grow instead.
pub const SHARD_BITS_MAX: u8 = 16;
/// Versions in one history window, so most records in one history block (SPEC 10.4, 10.7).
pub const VERSIONS_PER_WINDOW: u64 = 256;
/// Sequences in one receipt block (SPEC 10.8). Blocks are cut at fixed sequences (1 to
/// 2,048, 2,049 to 4,096, ...) so that a block whose run is complete never changes.
pub const SEQUENCES_PER_RECEIPT_BLOCK: u64 = 2_048;
/// The receipt window (issue 9): a checkpoint keeps at least the receipts of the last
/// 262,144 sequences it covers, from the start of the block the oldest of them is in.
pub const RECEIPT_WINDOW_SEQUENCES: u64 = 262_144;

/// Shard bits for `document_count` documents (SPEC 10.4):
/// `ceil(log2(ceil(document_count / 256)))`, clamped to `0 ..= 16`.
pub fn shard_bits(document_count: u64) -> u8 {
    let shards_needed = document_count.div_ceil(DOCUMENTS_PER_SHARD);
    // ceil(log2(n)) is the fewest bits whose shard count reaches n.
    let mut bits = 0u8;
    while bits < SHARD_BITS_MAX && (1u64 << bits) < shards_needed {
        bits += 1;
    }
    bits
}

/// The shard of a normalized path (SPEC 10.4): the first four bytes of BLAKE3 of the path
/// read as a big-endian `u32`, shifted right by `32 - shard_bits` (0 for 0 bits).
pub fn shard_of(path: &str, shard_bits: u8) -> u32 {
    assert!(shard_bits <= SHARD_BITS_MAX, "shard bits {shard_bits} past the limit");
    if shard_bits == 0 {
        return 0;
    }
    let digest = blake3::hash(path.as_bytes());
    let d = digest.as_bytes();
    u32::from_be_bytes([d[0], d[1], d[2], d[3]]) >> (32 - u32::from(shard_bits))
}

/// The history window of `version` (SPEC 10.4): versions 1 to 256 are window 0.
pub fn history_window(version: u64) -> u64 {
    assert!(version >= 1, "versions start at 1");
    (version - 1) / VERSIONS_PER_WINDOW
}

/// The first version of history window `window`.
pub fn window_first_version(window: u64) -> u64 {
    window * VERSIONS_PER_WINDOW + 1
}

/// The first sequence of the receipt block `sequence` falls in.
pub fn receipt_block_first(sequence: u64) -> u64 {
    assert!(sequence >= 1, "sequences start at 1");
    (sequence - 1) / SEQUENCES_PER_RECEIPT_BLOCK * SEQUENCES_PER_RECEIPT_BLOCK + 1
}

/// The first sequence whose receipt a checkpoint covering through `sequence` holds:
/// `max(1, sequence + 1 - 262,144)`, rounded down to its block's first sequence.
pub fn receipts_from(sequence: u64) -> u64 {
    let oldest = (sequence + 1).saturating_sub(RECEIPT_WINDOW_SEQUENCES).max(1);
    receipt_block_first(oldest)
}

/// The runs of sequences the receipt blocks of `from ..= through` hold, cut at block
/// boundaries, in sequence order. Empty when `from > through`.
pub fn receipt_runs(from: u64, through: u64) -> Vec<(u64, u64)> {
    let mut runs = Vec::new();
    let mut first = from;
    while first <= through {
        let block_last = receipt_block_first(first) + SEQUENCES_PER_RECEIPT_BLOCK - 1;
        let last = block_last.min(through);
        runs.push((first, last));
        first = last + 1;
    }
    runs
}

/// One document as a checkpoint must hold it: its index entry and its retained versions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointDocument {
    /// Normalized path.
    pub path: String,
    /// Its index entry.
    pub document: ModelDocument,
    /// Versions `first_version ..= version`, oldest first.
    pub versions: Vec<ModelVersion>,
}

/// The content of the full checkpoint covering a world through a sequence, as the model
/// holds it, and the layout the rules give it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelCheckpoint {
    /// The world the checkpoint belongs to.
    pub world_id: WorldId,
    /// The sequence covered plus 1; also the sequence the checkpoint's key names.
    pub next_sequence: u64,
    /// The hash of the slot holding `next_sequence - 1` (from the log: the model has no slots).
    pub previous_hash: Hash32,
    /// Documents in the world.
    pub document_count: u64,
    /// The policy in force.
    pub policy: ModelPolicy,
    /// `shard_bits(document_count)`.
    pub shard_bits: u8,
    /// Every document, in path byte order.
    pub documents: Vec<CheckpointDocument>,
    /// `receipts_from(next_sequence - 1)`.
    pub receipts_from_sequence: u64,
    /// The receipt of every member from `receipts_from_sequence` through
    /// `next_sequence - 1`, in sequence order.
    pub receipts: Vec<ModelReceipt>,
    /// The digest of each of those receipts' requests (SPEC 10.13), in the same order.
    pub request_digests: Vec<[u8; 32]>,
}

impl ModelCheckpoint {
    /// The checkpoint covering `world` through its last sequence (at least 1: a full
    /// checkpoint covers at least one slot).
    pub fn of(world: &ModelWorld, world_id: WorldId, previous_hash: Hash32) -> ModelCheckpoint {
        let covered = world.sequence();
        assert!(covered >= 1, "a full checkpoint covers at least one member");
        let documents: Vec<CheckpointDocument> = world
            .documents()
            .map(|(path, document)| CheckpointDocument {
                path: path.to_string(),
                document,
                versions: world.versions(path),
            })
            .collect();
        let document_count = documents.len() as u64;
        let receipts_from_sequence = receipts_from(covered);
        let receipts = (receipts_from_sequence..=covered)
            .map(|s| world.receipt_at(s).expect("every applied sequence has a receipt"))
            .collect();
        let request_digests = (receipts_from_sequence..=covered)
            .map(|s| world.request_digest_at(s).expect("every applied sequence has a request"))
            .collect();
        ModelCheckpoint {
            world_id,
            next_sequence: covered + 1,
            previous_hash,
            document_count,
            policy: world.policy().clone(),
            shard_bits: shard_bits(document_count),
            documents,
            receipts_from_sequence,
            receipts,
            request_digests,
        }
    }

    /// The last sequence covered.
    pub fn covered(&self) -> u64 {
        self.next_sequence - 1
    }

    /// The document at the normalized `path`, if the checkpoint holds one.
    pub fn document(&self, path: &str) -> Option<&CheckpointDocument> {
        let i = self.documents.binary_search_by(|d| d.path.as_str().cmp(path)).ok()?;
        Some(&self.documents[i])
    }

    /// The receipt of the member at `sequence`, if it is in the window.
    pub fn receipt(&self, sequence: u64) -> Option<&ModelReceipt> {
        let offset = sequence.checked_sub(self.receipts_from_sequence)?;
        self.receipts.get(usize::try_from(offset).ok()?)
    }

    /// The request digest of the member at `sequence`, if it is in the window.
    pub fn request_digest(&self, sequence: u64) -> Option<[u8; 32]> {
        let offset = sequence.checked_sub(self.receipts_from_sequence)?;
        self.request_digests.get(usize::try_from(offset).ok()?).copied()
    }

    /// The runs of sequences the receipt blocks hold.
    pub fn receipt_runs(&self) -> Vec<(u64, u64)> {
        receipt_runs(self.receipts_from_sequence, self.covered())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{ReceiptKind, Verdict};
    use bytes::Bytes;
    use slotlog_kernel::format::{
        history_window as kernel_window, shard_bits_for, shard_of as kernel_shard_of,
    };
    use slotlog_kernel::ids::OperationId;
    use slotlog_kernel::world::mutation::{Expected, Mutation};
    use slotlog_kernel::world::Path;

    // The kernel's layout functions appear only here, as a second reading of SPEC 10.4
    // to agree with; the model never calls them.

    #[test]
    fn shard_bits_follow_the_rule_and_agree_with_the_kernel() {
        for (count, bits) in [(0, 0), (1, 0), (256, 0), (257, 1), (512, 1), (513, 2), (1_000_000, 12)] {
            assert_eq!(shard_bits(count), bits, "{count}");
        }
        assert_eq!(shard_bits(u64::MAX), SHARD_BITS_MAX);
        for count in (0..3_000_000u64).step_by(1_009).chain([(256 << 16) + 1, u64::MAX]) {
            assert_eq!(shard_bits(count), shard_bits_for(count), "{count}");
        }
    }

    #[test]
    fn the_shard_of_a_path_is_the_top_bits_of_its_hash_as_the_kernel_reads_them() {
        for i in 0..200 {
            let raw = format!("/d/{i}.md");
            let path = Path::parse(&raw).expect("valid");
            for bits in 0..=SHARD_BITS_MAX {
                assert_eq!(shard_of(&raw, bits), kernel_shard_of(&path, bits), "{raw} {bits}");
            }
        }
    }

    #[test]
    fn history_windows_are_256_versions_wide() {
        for (version, window) in [(1, 0), (256, 0), (257, 1), (512, 1), (513, 2)] {
            assert_eq!(history_window(version), window);
            assert_eq!(kernel_window(version), window);
        }
        assert_eq!(window_first_version(0), 1);
        assert_eq!(window_first_version(2), 513);
    }

    #[test]
    fn the_receipt_window_starts_at_the_block_of_the_oldest_of_the_last_262144_sequences() {
        assert_eq!(receipts_from(1), 1);
        assert_eq!(receipts_from(262_144), 1);
        // The oldest kept is 2, in block 1..=2048.
        assert_eq!(receipts_from(262_145), 1);
        assert_eq!(receipts_from(262_144 + 2_047), 1);
        // The oldest kept is 2,049, the first of block 2,049..=4,096: block 1 has left.
        assert_eq!(receipts_from(262_144 + 2_048), 2_049);
        assert_eq!(receipts_from(262_144 + 4_095), 2_049);
        assert_eq!(receipts_from(1_000_000), receipt_block_first(1_000_001 - 262_144));
        assert_eq!(receipt_block_first(4_097), 4_097);
        assert_eq!(receipt_block_first(4_096), 2_049);
    }

    #[test]
    fn receipt_runs_are_cut_at_fixed_block_boundaries() {
        assert_eq!(receipt_runs(1, 1), vec![(1, 1)]);
        assert_eq!(receipt_runs(1, 2_048), vec![(1, 2_048)]);
        assert_eq!(receipt_runs(1, 5_000), vec![(1, 2_048), (2_049, 4_096), (4_097, 5_000)]);
        assert_eq!(receipt_runs(2_049, 2_049), vec![(2_049, 2_049)]);
        assert_eq!(receipt_runs(3, 2), vec![]);
    }

    #[test]
    fn a_checkpoint_holds_the_worlds_documents_versions_policy_and_receipts() {
        let mut world = ModelWorld::new();
        let publish = |p: &str, b: &'static [u8]| Mutation::Publish {
            path: p.to_string(),
            body: Bytes::from_static(b),
            catalog: None,
            expected: Expected::Any,
        };
        for (i, m) in [publish("/b", b"1"), publish("/a", b"1"), publish("/b", b"2")].iter().enumerate() {
            let op = OperationId::from(i as u128 + 1);
            assert!(matches!(world.apply(op, m), Verdict::Applied(_)));
        }
        let anchor = Hash32::of(b"slot 1");
        let c = ModelCheckpoint::of(&world, WorldId([7; 16]), anchor);
        assert_eq!((c.next_sequence, c.covered(), c.previous_hash), (4, 3, anchor));
        assert_eq!((c.document_count, c.shard_bits), (2, 0));
        assert_eq!(c.policy, ModelPolicy::default());
        let paths: Vec<&str> = c.documents.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, vec!["/a", "/b"]);
        let b = c.document("/b").expect("held");
        assert_eq!(b.document.version, 2);
        assert_eq!(b.versions.iter().map(|v| v.sequence).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(c.receipts_from_sequence, 1);
        assert_eq!(c.receipts.iter().map(|r| r.sequence).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert_eq!(c.receipt(2).map(|r| r.kind), Some(ReceiptKind::Published));
        assert_eq!(c.receipt(4), None);
        assert_eq!(c.receipt_runs(), vec![(1, 3)]);
    }
}
