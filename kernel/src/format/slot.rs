//! Slots (SPEC 5): one batch of members, created if absent at `log/<first sequence>`.
//! A slot is never rewritten. Its hash is BLAKE3 of its whole object bytes, and the next
//! slot names it as `prev_hash`, so the log is a verifiable chain.

use super::frame::{decode_value, encode_value, DecodeError, Kind, NameRule};
use super::rule::ShapeRule;
use crate::hash::Hash32;
use crate::ids::{StoreId, WorldId};
use crate::world::entry::SlotMember;
use serde::{Deserialize, Serialize};

/// No slot may hold more members than this, whatever a committer is configured to.
pub const SLOT_MEMBERS_MAX: usize = 256;

/// A slot: one batch of members, at `log/<first sequence>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    /// The world it belongs to.
    pub world_id: WorldId,
    /// The first member's sequence.
    pub first_sequence: u64,
    /// The store (replica incarnation) that wrote it.
    pub store_id: StoreId,
    /// Hash of the previous slot's object bytes; the marker's for the first slot.
    pub prev_hash: Hash32,
    /// The members, at consecutive sequences from `first_sequence`.
    pub members: Vec<SlotMember>,
}

impl Slot {
    /// The last member's sequence.
    pub fn last_sequence(&self) -> u64 {
        self.first_sequence + self.members.len() as u64 - 1
    }

    /// The object's bytes.
    pub fn encode(&self) -> Vec<u8> {
        debug_assert_eq!(self.shape_problem(), None);
        encode_value(Kind::Slot, self)
    }

    /// Decodes and checks the slot's own shape (not its place in a chain).
    pub fn decode(bytes: &[u8]) -> Result<Slot, DecodeError> {
        let slot: Slot = decode_value(Kind::Slot, bytes)?;
        match slot.shape_problem() {
            Some(rule) => Err(DecodeError::Shape(rule)),
            None => Ok(slot),
        }
    }

    /// Decodes the bytes found at the slot name `log/<sequence>`: the one way every reader
    /// takes a slot from the bucket. The bytes do not repeat their key (SPEC 2), so a slot
    /// that starts at another sequence is refused here rather than trusted under the name.
    pub fn decode_at(sequence: u64, bytes: &[u8]) -> Result<Slot, DecodeError> {
        let slot = Slot::decode(bytes)?;
        if slot.first_sequence != sequence {
            let first_sequence = slot.first_sequence;
            return Err(DecodeError::Misnamed(NameRule::SlotUnderAnotherName { first_sequence }));
        }
        Ok(slot)
    }

    fn shape_problem(&self) -> Option<ShapeRule> {
        if self.first_sequence == 0 {
            return Some(ShapeRule::SlotAtSequenceZero);
        }
        if self.members.is_empty() {
            return Some(ShapeRule::SlotEmpty);
        }
        if self.members.len() > SLOT_MEMBERS_MAX {
            return Some(ShapeRule::SlotTooManyMembers);
        }
        if self.first_sequence.checked_add(self.members.len() as u64).is_none() {
            return Some(ShapeRule::SlotSequencesOverflow);
        }
        for (i, m) in self.members.iter().enumerate() {
            if m.sequence() != self.first_sequence + i as u64 {
                return Some(ShapeRule::MembersNotContiguous);
            }
            if let Some(p) = m.shape_problem() {
                return Some(ShapeRule::Member(p));
            }
        }
        let mut ops: Vec<_> = self.members.iter().map(|m| m.op_id()).collect();
        ops.sort();
        if ops.windows(2).any(|w| w[0] == w[1]) {
            return Some(ShapeRule::OperationIdTwice);
        }
        None
    }
}

/// A slot's hash: BLAKE3 of its whole object bytes, which the next slot names as `prev_hash`.
pub fn slot_hash(bytes: &[u8]) -> Hash32 {
    Hash32::of(bytes)
}
