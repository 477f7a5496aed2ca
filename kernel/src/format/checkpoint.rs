//! Checkpoint objects (SPEC 10.1 to 10.3): the named entry to a world's state as of a
//! sequence, created if absent at `checkpoints/<next sequence>`. A checkpoint is derived,
//! never committed: its bytes are a function of the log up to it, so racing writers write
//! identical bytes.
//!
//! Two forms, told apart by the frame's schema. Schema 1 is checkpoint zero, the empty
//! world at sequence 1 that genesis writes after the marker; its bytes are those every
//! world already holds, and a reader admits schema 1 only in that form. Schema 2 is a full
//! checkpoint: it names its root by content hash and ends with a freshen stamp.

use super::frame::{decode_payload, decode_raw_schema, encode_raw_schema, DecodeError, Kind, SCHEMA};
use super::rule::{CheckpointRule, ShapeRule};
use super::stamp::{self, FIRST_WRITE_STAMP};
use crate::hash::Hash32;
use crate::ids::WorldId;
use serde::{Deserialize, Serialize};

/// Checkpoint zero's schema (the frame's schema 1, as every other kind).
pub const SCHEMA_ZERO: u16 = SCHEMA;
/// A full checkpoint's schema.
pub const SCHEMA_FULL: u16 = 2;

/// A checkpoint object: the entry to a world's state as of `next_sequence - 1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The world it belongs to.
    pub world_id: WorldId,
    /// The first sequence the checkpoint does not cover: replay continues at the slot
    /// named by it. 1 for checkpoint zero.
    pub next_sequence: u64,
    /// The hash the slot at `next_sequence` must name as its `prev_hash`: the marker's
    /// for checkpoint zero, else the hash of the slot holding `next_sequence - 1`.
    pub previous_hash: Hash32,
    /// Documents in the world as of the checkpoint (the root repeats it).
    pub document_count: u64,
    /// The content hash of the root (`roots/<hash>`); None for checkpoint zero, which has
    /// no root.
    pub root: Option<Hash32>,
    /// The freshen stamp (SPEC 10.9); always 0 for checkpoint zero, which is never
    /// freshened.
    pub stamp: u64,
}

/// Schema 1's payload: checkpoint zero's bytes, as genesis has always written them.
#[derive(Serialize, Deserialize)]
struct ZeroPayload {
    world_id: WorldId,
    next_sequence: u64,
    previous_hash: Hash32,
    document_count: u64,
    /// Always empty: full checkpoints name shards through their root.
    shards: Vec<Hash32>,
}

/// Schema 2's payload.
#[derive(Serialize, Deserialize)]
struct FullPayload {
    world_id: WorldId,
    next_sequence: u64,
    previous_hash: Hash32,
    document_count: u64,
    root: Hash32,
    stamp: u64,
}

impl Checkpoint {
    /// Checkpoint zero of the world whose marker object hashes to `marker_hash`. Nothing
    /// else goes in, so every replica that writes it writes the same bytes.
    pub fn zero(world_id: WorldId, marker_hash: Hash32) -> Checkpoint {
        Checkpoint {
            world_id,
            next_sequence: 1,
            previous_hash: marker_hash,
            document_count: 0,
            root: None,
            stamp: FIRST_WRITE_STAMP,
        }
    }

    /// A full checkpoint as its first write stores it (stamp 0).
    pub fn full(
        world_id: WorldId,
        next_sequence: u64,
        previous_hash: Hash32,
        document_count: u64,
        root: Hash32,
    ) -> Checkpoint {
        Checkpoint {
            world_id,
            next_sequence,
            previous_hash,
            document_count,
            root: Some(root),
            stamp: FIRST_WRITE_STAMP,
        }
    }

    /// Whether this is a checkpoint zero (of any world and marker).
    pub fn is_zero(&self) -> bool {
        self.root.is_none()
    }

    /// The schema this checkpoint is written in.
    pub fn schema(&self) -> u16 {
        if self.is_zero() {
            SCHEMA_ZERO
        } else {
            SCHEMA_FULL
        }
    }

    /// The same checkpoint with another freshen stamp. Checkpoint zero has no stamp.
    pub fn with_stamp(mut self, stamp: u64) -> Checkpoint {
        assert!(!self.is_zero() || stamp == FIRST_WRITE_STAMP, "checkpoint zero is never freshened");
        self.stamp = stamp;
        self
    }

    /// BLAKE3 of the object as its first write stores it (stamp 0).
    pub fn content_hash(&self) -> Hash32 {
        stamp::content_hash(Kind::Checkpoint, self.schema(), &self.encode(), self.stamp)
    }

    /// The object's bytes.
    pub fn encode(&self) -> Vec<u8> {
        invariant_eq!(self.shape_problem(), None);
        let payload = match self.root {
            None => {
                assert_eq!(self.stamp, FIRST_WRITE_STAMP, "checkpoint zero is never freshened");
                postcard::to_allocvec(&ZeroPayload {
                    world_id: self.world_id,
                    next_sequence: self.next_sequence,
                    previous_hash: self.previous_hash,
                    document_count: self.document_count,
                    shards: Vec::new(),
                })
            }
            Some(root) => postcard::to_allocvec(&FullPayload {
                world_id: self.world_id,
                next_sequence: self.next_sequence,
                previous_hash: self.previous_hash,
                document_count: self.document_count,
                root,
                stamp: self.stamp,
            }),
        };
        let payload = payload.expect("postcard encodes a checkpoint");
        encode_raw_schema(Kind::Checkpoint, self.schema(), &payload)
    }

    /// Decodes either schema and checks the checkpoint's own shape (not whether it fits a
    /// world, nor its root).
    pub fn decode(bytes: &[u8]) -> Result<Checkpoint, DecodeError> {
        let (schema, payload) = decode_raw_schema(Kind::Checkpoint, &[SCHEMA_ZERO, SCHEMA_FULL], bytes)?;
        let checkpoint = if schema == SCHEMA_ZERO {
            let zero: ZeroPayload = decode_payload(payload)?;
            zero_problem(&zero).map_or(Ok(()), |rule| Err(DecodeError::Shape(rule.into())))?;
            Checkpoint::zero(zero.world_id, zero.previous_hash)
        } else {
            let full: FullPayload = decode_payload(payload)?;
            Checkpoint {
                world_id: full.world_id,
                next_sequence: full.next_sequence,
                previous_hash: full.previous_hash,
                document_count: full.document_count,
                root: Some(full.root),
                stamp: full.stamp,
            }
        };
        match checkpoint.shape_problem() {
            Some(rule) => Err(DecodeError::Shape(ShapeRule::Checkpoint(rule))),
            None => Ok(checkpoint),
        }
    }

    fn shape_problem(&self) -> Option<CheckpointRule> {
        match self.root {
            None => zero_problem(&ZeroPayload {
                world_id: self.world_id,
                next_sequence: self.next_sequence,
                previous_hash: self.previous_hash,
                document_count: self.document_count,
                shards: Vec::new(),
            }),
            Some(_) if self.next_sequence <= 1 => {
                Some(CheckpointRule::FullCoversNoSlot { next_sequence: self.next_sequence })
            }
            Some(_) => None,
        }
    }
}

/// Schema 1 admits checkpoint zero and nothing else.
fn zero_problem(zero: &ZeroPayload) -> Option<CheckpointRule> {
    if zero.next_sequence != 1 {
        return Some(CheckpointRule::ZeroNotAtFirstSequence { next_sequence: zero.next_sequence });
    }
    if zero.document_count != 0 {
        return Some(CheckpointRule::ZeroWithDocuments { document_count: zero.document_count });
    }
    if !zero.shards.is_empty() {
        return Some(CheckpointRule::ZeroWithShards { shards: zero.shards.len() });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::frame::encode_value;

    fn full() -> Checkpoint {
        Checkpoint::full(WorldId([1; 16]), 1_025, Hash32::of(b"slot 1024"), 10, Hash32::of(b"root"))
    }

    fn refused(rule: CheckpointRule) -> Result<Checkpoint, DecodeError> {
        Err(DecodeError::Shape(ShapeRule::Checkpoint(rule)))
    }

    /// Schema 1 bytes for any field values, bypassing the encoder's shape assertions.
    fn schema_1(next_sequence: u64, document_count: u64, shards: Vec<Hash32>) -> Vec<u8> {
        let payload = ZeroPayload {
            world_id: WorldId([1; 16]),
            next_sequence,
            previous_hash: Hash32::ZERO,
            document_count,
            shards,
        };
        encode_value(Kind::Checkpoint, &payload)
    }

    #[test]
    fn checkpoint_zero_is_a_function_of_the_world_and_the_marker() {
        let a = Checkpoint::zero(WorldId([1; 16]), Hash32::of(b"marker"));
        assert_eq!(a.encode(), Checkpoint::zero(WorldId([1; 16]), Hash32::of(b"marker")).encode());
        assert_ne!(a.encode(), Checkpoint::zero(WorldId([2; 16]), Hash32::of(b"marker")).encode());
        assert_ne!(a.encode(), Checkpoint::zero(WorldId([1; 16]), Hash32::of(b"other")).encode());
        assert!(a.is_zero());
        assert_eq!(a.schema(), 1);
        assert_eq!(a.content_hash(), Hash32::of(&a.encode()));
    }

    #[test]
    fn schema_1_is_only_checkpoint_zero_at_the_first_sequence() {
        let rule = CheckpointRule::ZeroNotAtFirstSequence { next_sequence: 0 };
        assert_eq!(Checkpoint::decode(&schema_1(0, 0, vec![])), refused(rule));
        let rule = CheckpointRule::ZeroNotAtFirstSequence { next_sequence: 9 };
        assert_eq!(Checkpoint::decode(&schema_1(9, 0, vec![])), refused(rule));
    }

    #[test]
    fn schema_1_is_only_checkpoint_zero_without_documents() {
        let rule = CheckpointRule::ZeroWithDocuments { document_count: 3 };
        assert_eq!(Checkpoint::decode(&schema_1(1, 3, vec![])), refused(rule));
    }

    #[test]
    fn schema_1_is_only_checkpoint_zero_without_shards() {
        let rule = CheckpointRule::ZeroWithShards { shards: 1 };
        assert_eq!(Checkpoint::decode(&schema_1(1, 0, vec![Hash32::ZERO])), refused(rule));
    }

    #[test]
    fn a_full_checkpoint_covers_at_least_one_slot() {
        for next_sequence in [0, 1] {
            let bad = Checkpoint { next_sequence, ..full() };
            let payload = FullPayload {
                world_id: bad.world_id,
                next_sequence,
                previous_hash: bad.previous_hash,
                document_count: bad.document_count,
                root: Hash32::ZERO,
                stamp: 0,
            };
            let bytes = encode_raw_schema(
                Kind::Checkpoint,
                SCHEMA_FULL,
                &postcard::to_allocvec(&payload).expect("encodes"),
            );
            assert_eq!(
                Checkpoint::decode(&bytes),
                refused(CheckpointRule::FullCoversNoSlot { next_sequence })
            );
        }
    }

    #[test]
    fn a_full_checkpoint_is_schema_2_and_round_trips() {
        let c = full();
        let bytes = c.encode();
        assert_eq!(u16::from_le_bytes([bytes[5], bytes[6]]), SCHEMA_FULL);
        assert_eq!(Checkpoint::decode(&bytes), Ok(c.clone()));
        assert!(!c.is_zero());
    }

    #[test]
    fn a_stamp_changes_the_bytes_but_not_the_content_hash() {
        let first = full();
        let fresh = full().with_stamp(7);
        assert_ne!(first.encode(), fresh.encode());
        assert_eq!(first.content_hash(), Hash32::of(&first.encode()));
        assert_eq!(fresh.content_hash(), first.content_hash());
        assert_eq!(Checkpoint::decode(&fresh.encode()), Ok(fresh.clone()));
        assert_ne!(full().with_stamp(8).encode(), fresh.encode());
    }

    #[test]
    #[should_panic(expected = "checkpoint zero is never freshened")]
    fn checkpoint_zero_has_no_stamp() {
        let _ = Checkpoint::zero(WorldId([1; 16]), Hash32::ZERO).with_stamp(1);
    }

    #[test]
    fn a_third_schema_is_refused() {
        let mut bytes = full().encode();
        bytes[5] = 3;
        assert_eq!(
            Checkpoint::decode(&bytes),
            Err(DecodeError::UnknownSchema { kind: Kind::Checkpoint, schema: 3 })
        );
    }
}
