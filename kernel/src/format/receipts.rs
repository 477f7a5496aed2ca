//! Receipt blocks (SPEC 10.8): the receipts of one contiguous run of sequences, sorted by
//! operation id, content-addressed at `receipts/<content hash>`. A root names the blocks of
//! its receipt window; blocks that leave every kept root's window are collected with the
//! roots, so they carry a freshen stamp like shards.

use super::frame::{decode_value, encode_value, DecodeError, Kind, NameRule, SCHEMA};
use super::rule::{ReceiptBlockRule, ShapeRule};
use super::stamp;
use crate::hash::Hash32;
use crate::world::entry::{Receipt, ReceiptKind};
use serde::{Deserialize, Serialize};

/// Receipts in one block. About 100 bytes each with its digest, so a full block is about
/// 200 KB, the size a shard is meant to have. Every member has one receipt, so a block
/// covers at most this many sequences.
pub const RECEIPTS_PER_BLOCK_MAX: usize = 2_048;

/// One committed operation's receipt as a checkpoint keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredReceipt {
    /// The receipt.
    pub receipt: Receipt,
    /// A digest of the request the operation id committed, so that the id reused with
    /// other content can be refused. Its preimage is defined by the change that checks it.
    pub request_digest: Hash32,
}

/// A receipt block: the receipts of one contiguous run of sequences.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptBlock {
    /// Strictly ascending by operation id; their sequences form one contiguous run.
    pub receipts: Vec<StoredReceipt>,
    /// The freshen stamp (SPEC 10.9), the last field.
    pub stamp: u64,
}

/// A root's reference to a receipt block: the run of sequences it holds and its hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptBlockRef {
    /// First sequence the block holds.
    pub first_sequence: u64,
    /// Last sequence the block holds.
    pub last_sequence: u64,
    /// The block's content hash (`receipts/<hash>`).
    pub block: Hash32,
}

impl ReceiptBlock {
    /// The run of sequences the block holds (its least and greatest receipt sequence).
    pub fn sequences(&self) -> Option<(u64, u64)> {
        let first = self.receipts.iter().map(|r| r.receipt.sequence).min()?;
        let last = self.receipts.iter().map(|r| r.receipt.sequence).max()?;
        Some((first, last))
    }

    /// The object's bytes.
    pub fn encode(&self) -> Vec<u8> {
        invariant_eq!(self.shape_problem(), None);
        encode_value(Kind::Receipts, self)
    }

    /// Decodes a receipt block and checks its shape (not its name).
    pub fn decode(bytes: &[u8]) -> Result<ReceiptBlock, DecodeError> {
        let block: ReceiptBlock = decode_value(Kind::Receipts, bytes)?;
        match block.shape_problem() {
            Some(rule) => Err(DecodeError::Shape(ShapeRule::Receipts(rule))),
            None => Ok(block),
        }
    }

    /// Decodes the object read at `receipts/<name>` and checks it is that block.
    pub fn decode_named(bytes: &[u8], name: &Hash32) -> Result<ReceiptBlock, DecodeError> {
        let block = ReceiptBlock::decode(bytes)?;
        let found = stamp::content_hash(Kind::Receipts, SCHEMA, bytes, block.stamp);
        if found != *name {
            return Err(DecodeError::Misnamed(NameRule::NotItsName {
                kind: Kind::Receipts,
                name: *name,
                found,
            }));
        }
        Ok(block)
    }

    /// The same block with freshen stamp `stamp` (SPEC 10.9).
    pub fn with_stamp(mut self, stamp: u64) -> ReceiptBlock {
        self.stamp = stamp;
        self
    }

    /// BLAKE3 of the object as its first write stores it (stamp 0): its name.
    pub fn content_hash(&self) -> Hash32 {
        stamp::content_hash(Kind::Receipts, SCHEMA, &self.encode(), self.stamp)
    }

    fn shape_problem(&self) -> Option<ReceiptBlockRule> {
        if self.receipts.is_empty() {
            return Some(ReceiptBlockRule::Empty);
        }
        if self.receipts.len() > RECEIPTS_PER_BLOCK_MAX {
            return Some(ReceiptBlockRule::TooManyReceipts { count: self.receipts.len() });
        }
        for (position, pair) in self.receipts.windows(2).enumerate() {
            if pair[0].receipt.op_id >= pair[1].receipt.op_id {
                return Some(ReceiptBlockRule::NotSortedByOperation { position: position + 1 });
            }
        }
        for (position, r) in self.receipts.iter().enumerate() {
            let policy = r.receipt.kind == ReceiptKind::PolicySet;
            if policy == r.receipt.path.is_some() {
                return Some(ReceiptBlockRule::PathDoesNotMatchKind { position });
            }
        }
        let mut sequences: Vec<u64> = self.receipts.iter().map(|r| r.receipt.sequence).collect();
        sequences.sort_unstable();
        for pair in sequences.windows(2) {
            if pair[0].checked_add(1) != Some(pair[1]) {
                return Some(ReceiptBlockRule::SequencesNotContiguous { after: pair[0], found: pair[1] });
            }
        }
        None
    }
}
