//! Roots (SPEC 10.5): a full checkpoint's world as of a sequence, content-addressed at
//! `roots/<content hash>`. A root names everything else a checkpoint holds: the policy,
//! the shard layout and each shard's content hash, the deltas over the shards (SPEC
//! 10.16), and the receipt blocks of its window.
//!
//! Two schemas, as for checkpoints: schema 1 names no delta and is the bytes every root
//! written before deltas has; schema 2 adds the ordered list of deltas after the shards.
//! A root with no delta is always written in schema 1, so each root has one byte form.

use super::delta::{DeltaRef, DELTAS_PER_ROOT_MAX, DELTA_ENTRIES_MAX};
use super::frame::{
    decode_payload, decode_raw_schema, encode_value_schema, DecodeError, Kind, NameRule, SCHEMA,
};
use super::layout::{shard_bits_for, shard_count};
use super::receipts::{ReceiptBlockRef, RECEIPTS_PER_BLOCK_MAX};
use super::rule::{RootRule, ShapeRule};
use super::stamp;
use crate::hash::Hash32;
use crate::ids::WorldId;
use crate::world::policy::Policy;
use serde::{Deserialize, Serialize};

/// A root without deltas: schema 1.
pub const SCHEMA_SHARDS: u16 = SCHEMA;
/// A root with deltas: schema 2.
pub const SCHEMA_DELTAS: u16 = 2;

/// A root: a full checkpoint's world as of `next_sequence - 1`.
#[derive(Clone, Debug, PartialEq, Eq)]
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
    /// Deltas over the shards, oldest first: a later one's entry for a path overrides an
    /// earlier one's and the shard's. Empty in schema 1.
    pub deltas: Vec<DeltaRef>,
    /// The first sequence whose receipt the root holds; receipts of earlier members have
    /// left the window. `next_sequence` when the window is empty.
    pub receipts_from_sequence: u64,
    /// Receipt blocks covering `receipts_from_sequence ..= next_sequence - 1`, contiguous,
    /// in sequence order.
    pub receipts: Vec<ReceiptBlockRef>,
    /// The freshen stamp (SPEC 10.9), the last field.
    pub stamp: u64,
}

/// Schema 1's payload, borrowed to encode and owned to decode.
#[derive(Serialize, Deserialize)]
struct ShardsPayload<P, S, R> {
    world_id: WorldId,
    next_sequence: u64,
    previous_hash: Hash32,
    document_count: u64,
    policy: P,
    shard_bits: u8,
    shards: S,
    receipts_from_sequence: u64,
    receipts: R,
    stamp: u64,
}

/// Schema 2's payload: schema 1's with the deltas after the shards.
#[derive(Serialize, Deserialize)]
struct DeltasPayload<P, S, D, R> {
    world_id: WorldId,
    next_sequence: u64,
    previous_hash: Hash32,
    document_count: u64,
    policy: P,
    shard_bits: u8,
    shards: S,
    deltas: D,
    receipts_from_sequence: u64,
    receipts: R,
    stamp: u64,
}

impl Root {
    /// The schema this root is written in: 2 exactly when it names a delta.
    pub fn schema(&self) -> u16 {
        if self.deltas.is_empty() {
            SCHEMA_SHARDS
        } else {
            SCHEMA_DELTAS
        }
    }

    /// The object's bytes.
    pub fn encode(&self) -> Vec<u8> {
        invariant_eq!(self.shape_problem(self.schema()), None);
        self.encode_unchecked()
    }

    /// The bytes without the check of the shape rules: for tests that make broken roots.
    pub(crate) fn encode_unchecked(&self) -> Vec<u8> {
        self.encode_in(self.schema())
    }

    /// The bytes in `schema`, whatever the deltas: for tests of the schema rule.
    pub(crate) fn encode_in(&self, schema: u16) -> Vec<u8> {
        let r = self;
        if schema == SCHEMA_SHARDS {
            let payload = ShardsPayload {
                world_id: r.world_id,
                next_sequence: r.next_sequence,
                previous_hash: r.previous_hash,
                document_count: r.document_count,
                policy: &r.policy,
                shard_bits: r.shard_bits,
                shards: &r.shards,
                receipts_from_sequence: r.receipts_from_sequence,
                receipts: &r.receipts,
                stamp: r.stamp,
            };
            return encode_value_schema(Kind::Root, SCHEMA_SHARDS, &payload);
        }
        let payload = DeltasPayload {
            world_id: r.world_id,
            next_sequence: r.next_sequence,
            previous_hash: r.previous_hash,
            document_count: r.document_count,
            policy: &r.policy,
            shard_bits: r.shard_bits,
            shards: &r.shards,
            deltas: &r.deltas,
            receipts_from_sequence: r.receipts_from_sequence,
            receipts: &r.receipts,
            stamp: r.stamp,
        };
        encode_value_schema(Kind::Root, SCHEMA_DELTAS, &payload)
    }

    /// Decodes and checks the root's own shape (not its shards, deltas or receipt blocks).
    pub fn decode(bytes: &[u8]) -> Result<Root, DecodeError> {
        let (schema, payload) = decode_raw_schema(Kind::Root, &[SCHEMA_SHARDS, SCHEMA_DELTAS], bytes)?;
        let root = if schema == SCHEMA_SHARDS {
            let p: ShardsPayload<Policy, Vec<Hash32>, Vec<ReceiptBlockRef>> = decode_payload(payload)?;
            Root {
                world_id: p.world_id,
                next_sequence: p.next_sequence,
                previous_hash: p.previous_hash,
                document_count: p.document_count,
                policy: p.policy,
                shard_bits: p.shard_bits,
                shards: p.shards,
                deltas: Vec::new(),
                receipts_from_sequence: p.receipts_from_sequence,
                receipts: p.receipts,
                stamp: p.stamp,
            }
        } else {
            let p: DeltasPayload<Policy, Vec<Hash32>, Vec<DeltaRef>, Vec<ReceiptBlockRef>> =
                decode_payload(payload)?;
            Root {
                world_id: p.world_id,
                next_sequence: p.next_sequence,
                previous_hash: p.previous_hash,
                document_count: p.document_count,
                policy: p.policy,
                shard_bits: p.shard_bits,
                shards: p.shards,
                deltas: p.deltas,
                receipts_from_sequence: p.receipts_from_sequence,
                receipts: p.receipts,
                stamp: p.stamp,
            }
        };
        match root.shape_problem(schema) {
            Some(rule) => Err(DecodeError::Shape(ShapeRule::Root(rule))),
            None => Ok(root),
        }
    }

    /// Decodes the object read at `roots/<name>` and checks it is that root.
    pub fn decode_named(bytes: &[u8], name: &Hash32) -> Result<Root, DecodeError> {
        let root = Root::decode(bytes)?;
        let found = stamp::content_hash(Kind::Root, root.schema(), bytes, root.stamp);
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
        stamp::content_hash(Kind::Root, self.schema(), &self.encode(), self.stamp)
    }

    /// Entries the deltas hold in all, as their references say.
    pub fn delta_entries(&self) -> u64 {
        self.deltas.iter().map(|d| u64::from(d.entries)).sum()
    }

    fn shape_problem(&self, schema: u16) -> Option<RootRule> {
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
        self.delta_problem(schema).or_else(|| self.receipt_problem())
    }

    fn delta_problem(&self, schema: u16) -> Option<RootRule> {
        if schema == SCHEMA_DELTAS && self.deltas.is_empty() {
            return Some(RootRule::NoDeltas);
        }
        if self.deltas.len() > DELTAS_PER_ROOT_MAX {
            return Some(RootRule::TooManyDeltas { count: self.deltas.len() });
        }
        let oversized = |d: &DeltaRef| d.entries == 0 || d.entries as usize > DELTA_ENTRIES_MAX;
        let position = self.deltas.iter().position(oversized)?;
        Some(RootRule::DeltaRefSize { position, entries: self.deltas[position].entries })
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
