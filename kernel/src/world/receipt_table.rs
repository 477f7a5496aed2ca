//! The receipt window as a state holds it (SPEC 10.13): each receipt of the window with
//! the digest of its request, in sequence order, and found by operation id through a
//! keyed hash table. The receipts sit in one deque in sequence order (the window's
//! sequences are consecutive, so a sequence is an index); the table holds each id's hash
//! and sequence only. A `HashMap` from id to receipt moved every receipt and hashed every
//! id again each time it grew, and a second deque kept the order.

use super::receipt_key::ReceiptKey;
use crate::format::StoredReceipt;
use crate::ids::OperationId;
use hashbrown::HashTable;
use std::collections::VecDeque;

/// The receipts of a window, in sequence order and by operation id.
#[derive(Clone, Debug)]
pub(crate) struct ReceiptTable {
    /// Receipts of consecutive sequences, oldest first.
    order: VecDeque<StoredReceipt>,
    /// `(hash of the id, sequence)` for each id held: the newest receipt of the id. The
    /// ids are the clients', so hashed under a secret key (HashDoS).
    by_id: HashTable<(u64, u64)>,
    key: ReceiptKey,
}

impl ReceiptTable {
    /// An empty window hashed under `key`.
    pub fn new(key: ReceiptKey) -> ReceiptTable {
        ReceiptTable { order: VecDeque::new(), by_id: HashTable::new(), key }
    }

    /// `receipts` of consecutive sequences, in sequence order (checked by the caller),
    /// hashed under `key`. Of one operation id twice, the newer is found.
    pub fn from_sorted(receipts: Vec<StoredReceipt>, key: ReceiptKey) -> ReceiptTable {
        let mut table = ReceiptTable::new(key);
        table.order.reserve(receipts.len());
        for r in receipts {
            table.push(r);
        }
        table
    }

    /// The same receipts, hashed under `key`.
    pub fn rekeyed(self, key: ReceiptKey) -> ReceiptTable {
        ReceiptTable::from_sorted(self.order.into(), key)
    }

    /// The key ids are hashed under.
    pub fn key(&self) -> ReceiptKey {
        self.key
    }

    fn hash(&self, op_id: &OperationId) -> u64 {
        self.key.hash_bytes(&op_id.0)
    }

    /// The receipt of the sequence `sequence`, if the window holds it.
    fn at(&self, sequence: u64) -> Option<&StoredReceipt> {
        let first = self.order.front()?.receipt.sequence;
        self.order.get(usize::try_from(sequence.checked_sub(first)?).ok()?)
    }

    /// The newest receipt of `op_id` the window holds.
    pub fn get(&self, op_id: &OperationId) -> Option<&StoredReceipt> {
        let hash = self.hash(op_id);
        let found = self
            .by_id
            .find(hash, |&(h, s)| h == hash && self.at(s).is_some_and(|r| r.receipt.op_id == *op_id));
        found.and_then(|&(_, s)| self.at(s))
    }

    /// Adds the receipt of the next sequence.
    pub fn push(&mut self, stored: StoredReceipt) {
        invariant!(self.order.back().is_none_or(|b| b.receipt.sequence + 1 == stored.receipt.sequence));
        let op_id = stored.receipt.op_id;
        let sequence = stored.receipt.sequence;
        let hash = self.hash(&op_id);
        self.order.push_back(stored);
        let (order, by_id) = (&self.order, &mut self.by_id);
        let first = order.front().expect("just pushed").receipt.sequence;
        let id_at = |s: u64| order.get((s - first) as usize).map(|r| r.receipt.op_id);
        match by_id.find_mut(hash, |&(h, s)| h == hash && id_at(s) == Some(op_id)) {
            Some(entry) => entry.1 = sequence,
            None => {
                by_id.insert_unique(hash, (hash, sequence), |e| e.0);
            }
        }
    }

    /// Drops the receipts of sequences below `from`.
    pub fn drop_before(&mut self, from: u64) {
        while let Some(r) = self.order.front().filter(|r| r.receipt.sequence < from) {
            let (op_id, sequence) = (r.receipt.op_id, r.receipt.sequence);
            let hash = self.hash(&op_id);
            // The id's entry names this sequence unless a newer receipt of the id is held.
            if let Ok(entry) = self.by_id.find_entry(hash, |&(h, s)| h == hash && s == sequence) {
                entry.remove();
            }
            self.order.pop_front();
        }
    }

    /// The receipts from sequence `from` on, in sequence order.
    pub fn since(&self, from: u64) -> impl Iterator<Item = &StoredReceipt> {
        let start = self.order.partition_point(|r| r.receipt.sequence < from);
        self.order.range(start..)
    }

    /// Receipts held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::Hash32;
    use crate::world::{Receipt, ReceiptKind};

    fn stored(sequence: u64, id: u128) -> StoredReceipt {
        let receipt = Receipt {
            op_id: OperationId::from(id),
            sequence,
            kind: ReceiptKind::Published,
            path: None,
            version: 1,
        };
        StoredReceipt { receipt, request_digest: Hash32([sequence as u8; 32]) }
    }

    /// Against a plain map and deque: lookups by id, the newer of an id twice, the order
    /// from any sequence, and ids leaving with their sequences.
    #[test]
    fn the_table_answers_as_a_map_and_a_deque_do() {
        let mut table = ReceiptTable::new(ReceiptKey::from_seed(3));
        let mut reference: std::collections::HashMap<OperationId, StoredReceipt> = Default::default();
        let mut order: VecDeque<StoredReceipt> = VecDeque::new();
        for sequence in 1..=400u64 {
            // Every seventh id repeats an earlier one.
            let id = if sequence % 7 == 0 { u128::from(sequence / 2) } else { u128::from(sequence) };
            let r = stored(sequence, id);
            table.push(r.clone());
            reference.insert(r.receipt.op_id, r.clone());
            order.push_back(r);
            if sequence % 50 == 0 {
                let from = sequence.saturating_sub(120);
                table.drop_before(from);
                while let Some(front) = order.front().filter(|f| f.receipt.sequence < from) {
                    let front = front.clone();
                    order.pop_front();
                    if reference.get(&front.receipt.op_id) == Some(&front) {
                        reference.remove(&front.receipt.op_id);
                    }
                }
            }
            for probe in 1..=sequence + 2 {
                let id = OperationId::from(u128::from(probe));
                assert_eq!(table.get(&id), reference.get(&id), "id {probe} after {sequence}");
            }
            assert_eq!(table.len(), order.len());
            let from = sequence.saturating_sub(30);
            assert!(table.since(from).eq(order.iter().filter(|r| r.receipt.sequence >= from)));
        }
        let rekeyed = table.clone().rekeyed(ReceiptKey::from_seed(4));
        for probe in 1..=402u128 {
            let id = OperationId::from(probe);
            assert_eq!(rekeyed.get(&id), table.get(&id));
        }
    }
}
