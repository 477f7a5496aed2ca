//! The receipt blocks of a fold (SPEC 10.8), and the blocks the folds before made. Blocks
//! are cut at fixed sequences, so every step writes the window's full blocks again with
//! the same receipts: encoding, sorting and hashing each of them anew was most of a fold
//! in a long world (`run collect --seed 2`). A block whose receipts are those of the
//! block made last time takes its bytes and name; the receipts are compared, never
//! assumed, so the bytes are the ones a fold from nothing makes.

use super::{Object, ObjectKind};
use crate::format::{receipt_block_of, ReceiptBlock, ReceiptBlockRef, StoredReceipt};
use crate::hash::Hash32;
use bytes::Bytes;
use std::collections::BTreeMap;

/// One block as a fold made it.
struct Made {
    /// Its receipts in the order the world gave them (sequence order), before the sort by
    /// operation id: what the next fold compares its own with.
    receipts: Vec<StoredReceipt>,
    reference: ReceiptBlockRef,
    bytes: Bytes,
}

/// The receipt blocks the last fold made, by block (`receipt_block_of`). Empty, a fold
/// makes every block; the result is the same either way.
#[derive(Default)]
pub struct ReceiptBlocks {
    made: BTreeMap<u64, Made>,
}

impl ReceiptBlocks {
    /// The blocks of `receipts` (the window's, in sequence order), in sequence order, each
    /// pushed onto `objects`. Blocks made before are taken again when their receipts are
    /// the same; the rest are made, and kept for the next fold in place of the old.
    pub fn fold<'r>(
        &mut self,
        receipts: impl Iterator<Item = &'r StoredReceipt>,
        objects: &mut Vec<Object>,
    ) -> Vec<ReceiptBlockRef> {
        let mut blocks: BTreeMap<u64, Vec<&StoredReceipt>> = BTreeMap::new();
        for stored in receipts {
            blocks.entry(receipt_block_of(stored.receipt.sequence)).or_default().push(stored);
        }
        // Blocks that left the window are not made again.
        self.made.retain(|block, _| blocks.contains_key(block));
        let mut refs = Vec::with_capacity(blocks.len());
        for (block, receipts) in blocks {
            let same = self.made.get(&block).is_some_and(|m| m.receipts.iter().eq(receipts.iter().copied()));
            if !same {
                self.made.insert(block, make(receipts.into_iter().cloned().collect()));
            }
            let made = &self.made[&block];
            refs.push(made.reference);
            let (name, bytes) = (made.reference.block, made.bytes.clone());
            objects.push(Object { kind: ObjectKind::Receipts, name, bytes });
        }
        refs
    }
}

/// A block of `receipts` (one block's, in sequence order), made from nothing.
fn make(receipts: Vec<StoredReceipt>) -> Made {
    let mut sorted = receipts.clone();
    sorted.sort_by_key(|r| r.receipt.op_id);
    let first_sequence = sorted.iter().map(|r| r.receipt.sequence).min().expect("non-empty");
    let last_sequence = sorted.iter().map(|r| r.receipt.sequence).max().expect("non-empty");
    let bytes = Bytes::from(ReceiptBlock { receipts: sorted, stamp: 0 }.encode());
    let block = Hash32::of(&bytes);
    Made { receipts, reference: ReceiptBlockRef { first_sequence, last_sequence, block }, bytes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::OperationId;
    use crate::world::entry::{Receipt, ReceiptKind};
    use crate::world::Path;

    /// The receipt of sequence `s`, its operation ids out of sequence order so the sort
    /// by operation id matters.
    fn receipt(s: u64) -> StoredReceipt {
        StoredReceipt {
            receipt: Receipt {
                op_id: OperationId::from(u128::from(s.wrapping_mul(0x9E37_79B9_7F4A_7C15))),
                sequence: s,
                kind: ReceiptKind::Published,
                path: Some(Path::parse(&format!("doc/{}", s % 7)).expect("a path")),
                version: s,
            },
            request_digest: Hash32::of(&(s + 1).to_le_bytes()),
        }
    }

    /// The blocks of `window`, made by `blocks`: their references and objects.
    fn fold(blocks: &mut ReceiptBlocks, window: &[StoredReceipt]) -> (Vec<ReceiptBlockRef>, Vec<Object>) {
        let mut objects = Vec::new();
        let refs = blocks.fold(window.iter(), &mut objects);
        (refs, objects)
    }

    fn same(a: &(Vec<ReceiptBlockRef>, Vec<Object>), b: &(Vec<ReceiptBlockRef>, Vec<Object>)) -> bool {
        let objects =
            |o: &Vec<Object>| o.iter().map(|o| (o.kind, o.name, o.bytes.clone())).collect::<Vec<_>>();
        a.0 == b.0 && objects(&a.1) == objects(&b.1)
    }

    #[test]
    fn a_growing_window_folds_as_from_nothing() {
        let mut kept = ReceiptBlocks::default();
        // Windows that grow past block ends, then slide: blocks are taken, grown and let go.
        for (from, through) in [(1, 5), (1, 2_048), (1, 2_050), (1, 5_000), (2_049, 5_001), (4_097, 6_200)] {
            let window: Vec<StoredReceipt> = (from..=through).map(receipt).collect();
            let reused = fold(&mut kept, &window);
            let fresh = fold(&mut ReceiptBlocks::default(), &window);
            assert!(same(&reused, &fresh), "window {from}..={through}");
            assert_eq!(reused.0.first().map(|r| r.first_sequence), Some(from));
            assert_eq!(reused.0.last().map(|r| r.last_sequence), Some(through));
        }
    }

    #[test]
    fn a_block_whose_receipts_changed_is_made_again() {
        let mut kept = ReceiptBlocks::default();
        let mut window: Vec<StoredReceipt> = (1..=100).map(receipt).collect();
        let before = fold(&mut kept, &window);
        // Same sequences, other content: compared, not assumed.
        window[40].request_digest = Hash32::of(b"another request");
        let after = fold(&mut kept, &window);
        assert_ne!(before.0, after.0);
        assert!(same(&after, &fold(&mut ReceiptBlocks::default(), &window)));
    }
}
