//! Roots (SPEC 10.5): a full checkpoint's world as of a sequence, content-addressed at
//! `roots/<content hash>`. A root names everything else a checkpoint holds: the policy,
//! the shard layout and each shard's content hash, and the receipt blocks of its window.

use super::frame::{decode_value, encode_value, DecodeError, Kind, NameRule, SCHEMA};
use super::layout::{shard_bits_for, shard_count};
use super::receipts::{ReceiptBlockRef, RECEIPTS_PER_BLOCK_MAX};
use super::rule::{RootRule, ShapeRule};
use super::stamp;
use crate::hash::Hash32;
use crate::ids::WorldId;
use crate::world::policy::Policy;
use serde::{Deserialize, Serialize};

/// A root: a full checkpoint's world as of `next_sequence - 1`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    /// The world it belongs to.
    pub world_id: WorldId,
    /// The first sequence the root does not cover (at least 2).
    pub next_sequence: u64,
    /// The hash of the slot holding `next_sequence - 1`: the chain anchor replay continues from.
    pub previous_hash: Hash32,
    /// Documents in the world as of the root.
    pub document_count: u64,
    /// The policy in force, with its version.
    pub policy: Policy,
    /// The layout: `1 << shard_bits` shards, `shard_bits = shard_bits_for(document_count)`.
    pub shard_bits: u8,
    /// Content hashes of the shards (`shards/<hash>`), in shard index order.
    pub shards: Vec<Hash32>,
    /// The first sequence whose receipt the root holds; receipts of earlier members have
    /// left the window. `next_sequence` when the window is empty.
    pub receipts_from_sequence: u64,
    /// Receipt blocks covering `receipts_from_sequence ..= next_sequence - 1`, contiguous,
    /// in sequence order.
    pub receipts: Vec<ReceiptBlockRef>,
    /// The freshen stamp (SPEC 10.9), the last field.
    pub stamp: u64,
}

impl Root {
    /// The object's bytes.
    pub fn encode(&self) -> Vec<u8> {
        debug_assert_eq!(self.shape_problem(), None);
        encode_value(Kind::Root, self)
    }

    /// Decodes and checks the root's own shape (not its shards or receipt blocks).
    pub fn decode(bytes: &[u8]) -> Result<Root, DecodeError> {
        let root: Root = decode_value(Kind::Root, bytes)?;
        match root.shape_problem() {
            Some(rule) => Err(DecodeError::Shape(ShapeRule::Root(rule))),
            None => Ok(root),
        }
    }

    /// Decodes the object read at `roots/<name>` and checks it is that root.
    pub fn decode_named(bytes: &[u8], name: &Hash32) -> Result<Root, DecodeError> {
        let root = Root::decode(bytes)?;
        let found = stamp::content_hash(Kind::Root, SCHEMA, bytes, root.stamp);
        if found != *name {
            return Err(DecodeError::Misnamed(NameRule::NotItsName { kind: Kind::Root, name: *name, found }));
        }
        Ok(root)
    }

    /// The same root with another freshen stamp.
    pub fn with_stamp(mut self, stamp: u64) -> Root {
        self.stamp = stamp;
        self
    }

    /// BLAKE3 of the object as its first write stores it (stamp 0): its name.
    pub fn content_hash(&self) -> Hash32 {
        stamp::content_hash(Kind::Root, SCHEMA, &self.encode(), self.stamp)
    }

    fn shape_problem(&self) -> Option<RootRule> {
        if self.next_sequence <= 1 {
            return Some(RootRule::CoversNoSlot { next_sequence: self.next_sequence });
        }
        let expected = shard_bits_for(self.document_count);
        if self.shard_bits != expected {
            return Some(RootRule::LayoutNotForCount {
                document_count: self.document_count,
                shard_bits: self.shard_bits,
                expected,
            });
        }
        if self.shards.len() != shard_count(self.shard_bits) as usize {
            return Some(RootRule::ShardCount { shard_bits: self.shard_bits, found: self.shards.len() });
        }
        if !self.policy.rules.is_normalized() {
            return Some(RootRule::PolicyNotNormalized);
        }
        self.receipt_problem()
    }

    fn receipt_problem(&self) -> Option<RootRule> {
        let from = self.receipts_from_sequence;
        if from == 0 || from > self.next_sequence {
            return Some(RootRule::ReceiptWindowOutside {
                receipts_from_sequence: from,
                next_sequence: self.next_sequence,
            });
        }
        let mut expected = from;
        for (position, r) in self.receipts.iter().enumerate() {
            if r.first_sequence != expected {
                return Some(RootRule::ReceiptRefsNotContiguous {
                    position,
                    expected,
                    found: r.first_sequence,
                });
            }
            let fits = r.last_sequence >= r.first_sequence
                && r.last_sequence - r.first_sequence < RECEIPTS_PER_BLOCK_MAX as u64;
            if !fits {
                return Some(RootRule::ReceiptRefSize {
                    position,
                    first_sequence: r.first_sequence,
                    last_sequence: r.last_sequence,
                });
            }
            if r.last_sequence >= self.next_sequence {
                return Some(RootRule::ReceiptRefsEnd {
                    expected: self.next_sequence - 1,
                    found: r.last_sequence,
                });
            }
            expected = r.last_sequence + 1;
        }
        // `expected` is one past the last sequence held (`from` when none is).
        if expected != self.next_sequence {
            return Some(RootRule::ReceiptRefsEnd { expected: self.next_sequence - 1, found: expected - 1 });
        }
        None
    }
}
