//! Checkpoints (SPEC 10): the root of a world's state as of a sequence, created if absent
//! at `checkpoints/<next sequence>`. A checkpoint is derived, never committed: its bytes
//! are a function of the log up to it, so racing writers write identical bytes.
//!
//! Only checkpoint zero exists today: the empty root at sequence 1 that genesis writes
//! after the marker. It names the marker's hash as the predecessor of slot 1 and holds no
//! shards. Full checkpoints fill `document_count` and `shards` in a later milestone.

use super::frame::{decode_value, encode_value, DecodeError, Kind, ShapeRule};
use crate::hash::Hash32;
use crate::ids::WorldId;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub world_id: WorldId,
    /// The first sequence the checkpoint does not cover: replay continues at the slot
    /// named by it. 1 for checkpoint zero.
    pub next_sequence: u64,
    /// The hash the slot at `next_sequence` must name as its `prev_hash`: the marker's
    /// for checkpoint zero, else the hash of the slot holding `next_sequence - 1`.
    pub previous_hash: Hash32,
    /// Documents in the world as of the checkpoint.
    pub document_count: u64,
    /// Content hashes of the shard objects holding those documents, in shard order.
    pub shards: Vec<Hash32>,
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
            shards: Vec::new(),
        }
    }

    /// Whether this is a checkpoint zero (of any world and marker).
    pub fn is_zero(&self) -> bool {
        self.next_sequence == 1 && self.document_count == 0 && self.shards.is_empty()
    }

    pub fn encode(&self) -> Vec<u8> {
        debug_assert_eq!(self.shape_problem(), None);
        encode_value(Kind::Checkpoint, self)
    }

    /// Decodes and checks the checkpoint's own shape (not whether it fits a world).
    pub fn decode(bytes: &[u8]) -> Result<Checkpoint, DecodeError> {
        let checkpoint: Checkpoint = decode_value(Kind::Checkpoint, bytes)?;
        match checkpoint.shape_problem() {
            Some(rule) => Err(DecodeError::Shape(rule)),
            None => Ok(checkpoint),
        }
    }

    fn shape_problem(&self) -> Option<ShapeRule> {
        if self.next_sequence == 0 {
            return Some(ShapeRule::CheckpointAtSequenceZero);
        }
        if self.next_sequence == 1 && self.document_count > 0 {
            return Some(ShapeRule::DocumentsBeforeFirstSlot);
        }
        if self.document_count > 0 && self.shards.is_empty() {
            return Some(ShapeRule::DocumentsWithoutShards);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_zero_is_a_function_of_the_world_and_the_marker() {
        let a = Checkpoint::zero(WorldId([1; 16]), Hash32::of(b"marker"));
        assert_eq!(a.encode(), Checkpoint::zero(WorldId([1; 16]), Hash32::of(b"marker")).encode());
        assert_ne!(a.encode(), Checkpoint::zero(WorldId([2; 16]), Hash32::of(b"marker")).encode());
        assert_ne!(a.encode(), Checkpoint::zero(WorldId([1; 16]), Hash32::of(b"other")).encode());
        assert!(a.is_zero());
    }

    #[test]
    fn a_checkpoint_breaking_a_shape_rule_is_refused() {
        let zero = Checkpoint::zero(WorldId([1; 16]), Hash32::ZERO);
        let cases = [
            (Checkpoint { next_sequence: 0, ..zero.clone() }, ShapeRule::CheckpointAtSequenceZero),
            (Checkpoint { document_count: 3, ..zero.clone() }, ShapeRule::DocumentsBeforeFirstSlot),
            (
                Checkpoint { next_sequence: 9, document_count: 3, ..zero.clone() },
                ShapeRule::DocumentsWithoutShards,
            ),
        ];
        for (checkpoint, rule) in cases {
            let bytes = encode_value(Kind::Checkpoint, &checkpoint);
            assert_eq!(Checkpoint::decode(&bytes), Err(DecodeError::Shape(rule)));
        }
    }

    #[test]
    fn a_checkpoint_with_shards_decodes_for_a_later_reader() {
        let later = Checkpoint {
            world_id: WorldId([1; 16]),
            next_sequence: 1_025,
            previous_hash: Hash32::of(b"slot 1024"),
            document_count: 10,
            shards: vec![Hash32::of(b"shard 0"), Hash32::of(b"shard 1")],
        };
        assert_eq!(Checkpoint::decode(&later.encode()), Ok(later.clone()));
        assert!(!later.is_zero());
    }
}
