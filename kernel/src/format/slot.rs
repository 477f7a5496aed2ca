//! Slots (SPEC 5): one batch of members, created if absent at `log/<first sequence>`.
//! A slot is never rewritten. Its hash is BLAKE3 of its whole object bytes, and the next
//! slot names it as `prev_hash`, so the log is a verifiable chain.
//!
//! Two schemas (SPEC 5.7). Schema 1 holds the members alone: every new body is a blob.
//! Schema 2 also carries small new bodies, so one create commits a batch and its bodies;
//! a slot that carries none is written in schema 1, so each slot has one byte form.
//! Schemas 3 and 4 are 1 and 2 with the entries' catalog column after them (SPEC 5.8),
//! written when an entry has a modified time or a catalog record.

use super::catalog;
use super::frame::{decode_payload, decode_raw_schema, encode_written, DecodeError, Kind, NameRule};
use super::rule::ShapeRule;
use super::slot_writer::SlotPayload;
use crate::hash::Hash32;
use crate::hash_many::hashes_of;
use crate::ids::{StoreId, WorldId};
use crate::world::entry::SlotMember;
use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;

/// No slot may hold more members than this, whatever a committer is configured to.
pub const SLOT_MEMBERS_MAX: usize = 256;

/// A slot carries no body longer than this (64 KiB): the most a committer may be
/// configured to inline, so one large body cannot make every slot after it slow.
pub const INLINE_BODY_BYTES_MAX: usize = 64 * 1024;

/// Schema of a slot whose new bodies are all blobs.
pub const SCHEMA_MEMBERS: u16 = 1;
/// Schema of a slot that carries bodies.
pub const SCHEMA_WITH_BODIES: u16 = 2;
/// Schema 1 with a catalog column (SPEC 5.8).
pub const SCHEMA_MEMBERS_CATALOGED: u16 = 3;
/// Schema 2 with a catalog column (SPEC 5.8).
pub const SCHEMA_WITH_BODIES_CATALOGED: u16 = 4;

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
    /// New bodies the slot carries instead of blobs (schema 2), each once, in the order
    /// of the first member whose new version it is.
    pub bodies: Vec<Bytes>,
}

/// A slot's payload in any of its schemas: `bodies` and `catalog` are `()`, which takes
/// no bytes, in a schema without them.
#[derive(Serialize, Deserialize)]
struct Payload<M, B, C> {
    world_id: WorldId,
    first_sequence: u64,
    store_id: StoreId,
    prev_hash: Hash32,
    members: M,
    bodies: B,
    catalog: C,
}

impl<B, C> Payload<Vec<SlotMember>, B, C> {
    /// The slot it holds, with no bodies, and the bodies and column apart.
    fn split(self) -> (Slot, B, C) {
        let slot = Slot {
            world_id: self.world_id,
            first_sequence: self.first_sequence,
            store_id: self.store_id,
            prev_hash: self.prev_hash,
            members: self.members,
            bodies: Vec::new(),
        };
        (slot, self.bodies, self.catalog)
    }
}

/// A carried body, borrowed from the slot's bytes: a postcard byte string, the form
/// [`Bytes`] takes, so re-encoding it for the canonical check gives the same bytes.
struct Carried<'a>(&'a [u8]);

impl Serialize for Carried<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Carried<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <&'a [u8]>::deserialize(deserializer).map(Carried)
    }
}

impl Slot {
    /// The last member's sequence.
    pub fn last_sequence(&self) -> u64 {
        self.first_sequence + self.members.len() as u64 - 1
    }

    /// The schema the slot is written in.
    pub fn schema(&self) -> u16 {
        let cataloged = self.column().is_some();
        match (self.bodies.is_empty(), cataloged) {
            (true, false) => SCHEMA_MEMBERS,
            (false, false) => SCHEMA_WITH_BODIES,
            (true, true) => SCHEMA_MEMBERS_CATALOGED,
            (false, true) => SCHEMA_WITH_BODIES_CATALOGED,
        }
    }

    /// The members' catalog column, None when no entry has a time or a record.
    fn column(&self) -> Option<catalog::Column<'_>> {
        catalog::column_of(self.members.iter().filter_map(|m| m.entry.as_ref()))
    }

    #[cfg(test)]
    fn payload<B, C>(&self, bodies: B, catalog: C) -> Payload<&[SlotMember], B, C> {
        Payload {
            world_id: self.world_id,
            first_sequence: self.first_sequence,
            store_id: self.store_id,
            prev_hash: self.prev_hash,
            members: &self.members,
            bodies,
            catalog,
        }
    }

    /// The object's bytes.
    pub fn encode(&self) -> Vec<u8> {
        // Not the carried bodies' order, which costs a hash of every body (a tenth of a
        // simulated run): every reader's decode checks it, the simulation's checker on
        // every slot, so a committer that built it wrong fails the run all the same.
        invariant_eq!(self.members_problem(), None);
        self.encode_any_shape()
    }

    /// The bytes of a slot of any shape, for tests that make broken ones.
    #[cfg(test)]
    pub(crate) fn encode_unchecked(&self) -> Vec<u8> {
        self.encode_any_shape()
    }

    fn encode_any_shape(&self) -> Vec<u8> {
        let column = self.column();
        let payload = SlotPayload {
            world_id: &self.world_id.0,
            first_sequence: self.first_sequence,
            store_id: self.store_id.0,
            prev_hash: &self.prev_hash,
            members: &self.members,
            bodies: (!self.bodies.is_empty()).then_some(&self.bodies[..]),
            column: column.as_deref(),
        };
        let schema = match (payload.bodies.is_some(), payload.column.is_some()) {
            (false, false) => SCHEMA_MEMBERS,
            (true, false) => SCHEMA_WITH_BODIES,
            (false, true) => SCHEMA_MEMBERS_CATALOGED,
            (true, true) => SCHEMA_WITH_BODIES_CATALOGED,
        };
        encode_written(Kind::Slot, schema, payload.bytes_max(), |out| payload.write(out))
    }

    /// The bytes of [`Slot::encode_any_shape`] as postcard writes the slot's serde form:
    /// the reference the slot writer's tests hold it to.
    #[cfg(test)]
    pub(crate) fn encode_reference(&self) -> Vec<u8> {
        let bodies = &self.bodies[..];
        match (bodies.is_empty(), self.column()) {
            (true, None) => {
                super::frame::encode_value_schema(Kind::Slot, SCHEMA_MEMBERS, &self.payload((), ()))
            }
            (false, None) => {
                super::frame::encode_value_schema(Kind::Slot, SCHEMA_WITH_BODIES, &self.payload(bodies, ()))
            }
            (true, Some(c)) => {
                super::frame::encode_value_schema(Kind::Slot, SCHEMA_MEMBERS_CATALOGED, &self.payload((), c))
            }
            (false, Some(c)) => super::frame::encode_value_schema(
                Kind::Slot,
                SCHEMA_WITH_BODIES_CATALOGED,
                &self.payload(bodies, c),
            ),
        }
    }

    /// The carried body that hashes to `hash`, if the slot carries it (checked at decode).
    pub fn body(&self, hash: &Hash32) -> Option<&Bytes> {
        self.bodies.iter().find(|b| Hash32::of(b) == *hash)
    }

    /// The carried bodies with their hashes.
    pub fn bodies_by_hash(&self) -> impl Iterator<Item = (Hash32, &Bytes)> {
        self.bodies.iter().map(|b| (Hash32::of(b), b))
    }

    /// Decodes and checks the slot's own shape (not its place in a chain).
    pub fn decode(bytes: &[u8]) -> Result<Slot, DecodeError> {
        Slot::decode_hashed(bytes).map(|(slot, _)| slot)
    }

    /// [`Slot::decode`], with the hash of each carried body, in `bodies` order: decoding
    /// computes them to check the bodies, so a reader that wants them need not again.
    pub fn decode_hashed(bytes: &[u8]) -> Result<(Slot, Vec<Hash32>), DecodeError> {
        let (mut slot, carried) = Slot::decode_unplaced(bytes)?;
        slot.bodies = carried.into_iter().map(Bytes::copy_from_slice).collect();
        match slot.carried_hashes() {
            Err(rule) => Err(DecodeError::Shape(rule)),
            Ok(hashes) => Ok((slot, hashes)),
        }
    }

    /// Decodes and checks the slot's shape but for where its carried bodies belong, which
    /// costs a hash of each: the slot comes back without them (`bodies` empty) and they
    /// come back as slices of `bytes`, in order, each at most [`INLINE_BODY_BYTES_MAX`]. For a
    /// reader that judges their places itself by their bytes (the simulation's checker,
    /// against the bodies its model made); every other reader takes [`Slot::decode`].
    pub fn decode_unplaced(bytes: &[u8]) -> Result<(Slot, Vec<&[u8]>), DecodeError> {
        let schemas =
            [SCHEMA_MEMBERS, SCHEMA_WITH_BODIES, SCHEMA_MEMBERS_CATALOGED, SCHEMA_WITH_BODIES_CATALOGED];
        let (schema, payload) = decode_raw_schema(Kind::Slot, &schemas, bytes)?;
        type Members = Vec<SlotMember>;
        let (mut slot, carried, column) = match schema {
            SCHEMA_MEMBERS => {
                let (slot, (), ()) = decode_payload::<Payload<Members, (), ()>>(payload)?.split();
                (slot, Vec::new(), None)
            }
            SCHEMA_WITH_BODIES => {
                let (slot, carried, ()) =
                    decode_payload::<Payload<Members, Vec<Carried>, ()>>(payload)?.split();
                (slot, carried, None)
            }
            SCHEMA_MEMBERS_CATALOGED => {
                let p = decode_payload::<Payload<Members, (), catalog::ColumnOwned>>(payload)?;
                let (slot, (), column) = p.split();
                (slot, Vec::new(), Some(column))
            }
            _ => {
                let p = decode_payload::<Payload<Members, Vec<Carried>, catalog::ColumnOwned>>(payload)?;
                let (slot, carried, column) = p.split();
                (slot, carried, Some(column))
            }
        };
        if carried.is_empty() && (schema == SCHEMA_WITH_BODIES || schema == SCHEMA_WITH_BODIES_CATALOGED) {
            // The schema without bodies is this slot's one byte form.
            return Err(DecodeError::NotCanonical);
        }
        if let Some(column) = column {
            catalog::fill(slot.members.iter_mut().filter_map(|m| m.entry.as_mut()), column)?;
        }
        let carried: Vec<&[u8]> = carried.into_iter().map(|b| b.0).collect();
        if let Some(rule) = slot.members_problem() {
            return Err(DecodeError::Shape(rule));
        }
        if carried.iter().any(|b| b.len() > INLINE_BODY_BYTES_MAX) {
            return Err(DecodeError::Shape(ShapeRule::InlineBodyTooLong));
        }
        Ok((slot, carried))
    }

    /// Decodes the bytes found at the slot name `log/<sequence>`: the one way every reader
    /// takes a slot from the bucket. The bytes do not repeat their key (SPEC 2), so a slot
    /// that starts at another sequence is refused here rather than trusted under the name.
    pub fn decode_at(sequence: u64, bytes: &[u8]) -> Result<Slot, DecodeError> {
        Slot::decode_at_hashed(sequence, bytes).map(|(slot, _)| slot)
    }

    /// [`Slot::decode_at`] with the carried bodies' hashes ([`Slot::decode_hashed`]).
    pub fn decode_at_hashed(sequence: u64, bytes: &[u8]) -> Result<(Slot, Vec<Hash32>), DecodeError> {
        let (slot, hashes) = Slot::decode_hashed(bytes)?;
        if slot.first_sequence != sequence {
            let first_sequence = slot.first_sequence;
            return Err(DecodeError::Misnamed(NameRule::SlotUnderAnotherName { first_sequence }));
        }
        Ok((slot, hashes))
    }

    /// The shape rules but the carried bodies'.
    fn members_problem(&self) -> Option<ShapeRule> {
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

    /// Carried bodies: each a member's new body, once, in the order of their first member
    /// (their lengths checked at decode). Their hashes, in order, when they are.
    fn carried_hashes(&self) -> Result<Vec<Hash32>, ShapeRule> {
        if self.bodies.is_empty() {
            return Ok(Vec::new());
        }
        let mut first_member: BTreeMap<Hash32, usize> = BTreeMap::new();
        for (i, m) in self.members.iter().enumerate() {
            if let Some(v) = &m.version {
                first_member.entry(v.body_hash).or_insert(i);
            }
        }
        // Hashed together, across SIMD lanes: a slot's bodies are most often a chunk or
        // two each (hashed one by one they were 7% of `run crash --seed 1`).
        let bodies: Vec<&[u8]> = self.bodies.iter().map(|b| b.as_ref()).collect();
        let hashes = hashes_of(&bodies);
        let mut last: Option<usize> = None;
        for hash in &hashes {
            match first_member.get(hash) {
                Some(&i) if last.is_none_or(|l| l < i) => last = Some(i),
                _ => return Err(ShapeRule::InlineBodyOutOfPlace),
            }
        }
        Ok(hashes)
    }
}

/// A slot's hash: BLAKE3 of its whole object bytes, which the next slot names as `prev_hash`.
pub fn slot_hash(bytes: &[u8]) -> Hash32 {
    Hash32::of(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::frame::encode_value_schema;
    use crate::format::roundtrip_tests::publishes;

    /// `publishes(3)` with its members' bodies set to these.
    fn carrying(bodies: &[&'static [u8]]) -> Slot {
        let mut slot = publishes(3);
        for (m, b) in slot.members.iter_mut().zip(bodies) {
            let hash = Hash32::of(b);
            m.version.as_mut().expect("a publish").body_hash = hash;
            m.version.as_mut().expect("a publish").body_len = b.len() as u64;
            m.entry.as_mut().expect("a publish").body_hash = hash;
            m.entry.as_mut().expect("a publish").body_len = b.len() as u64;
        }
        slot
    }

    #[test]
    fn a_slot_carrying_bodies_round_trips_in_schema_2_and_finds_them_by_hash() {
        let mut slot = carrying(&[b"one", b"two", b"one"]);
        slot.bodies = vec![Bytes::from_static(b"one"), Bytes::from_static(b"two")];
        let bytes = slot.encode();
        let back = Slot::decode(&bytes).expect("decodes");
        assert_eq!((back.schema(), &back), (SCHEMA_WITH_BODIES, &slot));
        assert_eq!(back.body(&Hash32::of(b"two")).map(|b| &b[..]), Some(&b"two"[..]));
        assert_eq!(back.body(&Hash32::of(b"three")), None);
    }

    #[test]
    fn a_slot_without_bodies_is_schema_1_and_schema_2_without_bodies_is_refused() {
        let slot = carrying(&[b"one", b"two", b"three"]);
        let bytes = slot.encode();
        assert_eq!(bytes[5..7], SCHEMA_MEMBERS.to_le_bytes());
        let forced = encode_value_schema(Kind::Slot, SCHEMA_WITH_BODIES, &slot);
        assert_eq!(Slot::decode(&forced), Err(DecodeError::NotCanonical));
    }

    #[test]
    fn carried_bodies_must_be_members_new_bodies_once_in_member_order() {
        let refused = |bodies: Vec<&'static [u8]>| {
            let mut slot = carrying(&[b"one", b"two", b"three"]);
            slot.bodies = bodies.into_iter().map(Bytes::from_static).collect();
            Slot::decode(&encode_value_schema(Kind::Slot, SCHEMA_WITH_BODIES, &slot))
        };
        let out_of_place = Err(DecodeError::Shape(ShapeRule::InlineBodyOutOfPlace));
        assert_eq!(refused(vec![b"four"]), out_of_place, "no member's body");
        assert_eq!(refused(vec![b"two", b"one"]), out_of_place, "out of member order");
        assert_eq!(refused(vec![b"one", b"one"]), out_of_place, "twice");
        assert!(refused(vec![b"one", b"three"]).is_ok(), "a subset in order is fine");
    }

    #[test]
    fn an_unplaced_decode_hands_back_carried_bodies_as_slices_and_leaves_their_places_to_the_reader() {
        let mut slot = carrying(&[b"one", b"two", b"three"]);
        slot.bodies =
            vec![Bytes::from_static(b"two"), Bytes::from_static(b"one"), Bytes::from_static(b"four")];
        let bytes = encode_value_schema(Kind::Slot, SCHEMA_WITH_BODIES, &slot);
        assert_eq!(Slot::decode(&bytes), Err(DecodeError::Shape(ShapeRule::InlineBodyOutOfPlace)));
        let (members, carried) = Slot::decode_unplaced(&bytes).expect("its shape but the places holds");
        assert_eq!(carried, vec![&b"two"[..], b"one", b"four"]);
        assert!(carried.iter().all(|b| bytes.as_ptr_range().contains(&b.as_ptr())), "slices of the bytes");
        assert_eq!(members, Slot { bodies: Vec::new(), ..slot });
    }

    #[test]
    fn an_unplaced_decode_refuses_what_decode_refuses_but_the_places() {
        let slot = carrying(&[b"one", b"two", b"three"]);
        let forced = encode_value_schema(Kind::Slot, SCHEMA_WITH_BODIES, &slot);
        assert_eq!(Slot::decode_unplaced(&forced), Err(DecodeError::NotCanonical), "schema 2 without bodies");
        let long: &'static [u8] = Box::leak(vec![7u8; INLINE_BODY_BYTES_MAX + 1].into_boxed_slice());
        let mut slot = carrying(&[long, b"two", b"three"]);
        slot.bodies = vec![Bytes::from_static(long)];
        let bytes = encode_value_schema(Kind::Slot, SCHEMA_WITH_BODIES, &slot);
        assert_eq!(Slot::decode_unplaced(&bytes), Err(DecodeError::Shape(ShapeRule::InlineBodyTooLong)));
        let mut empty = carrying(&[b"one"]);
        empty.members.clear();
        let bytes = empty.encode_unchecked();
        assert_eq!(Slot::decode_unplaced(&bytes), Err(DecodeError::Shape(ShapeRule::SlotEmpty)));
    }

    #[test]
    fn a_carried_body_longer_than_the_most_is_refused() {
        let long: &'static [u8] = Box::leak(vec![7u8; INLINE_BODY_BYTES_MAX + 1].into_boxed_slice());
        let mut slot = carrying(&[long, b"two", b"three"]);
        slot.bodies = vec![Bytes::from_static(long)];
        let bytes = encode_value_schema(Kind::Slot, SCHEMA_WITH_BODIES, &slot);
        assert_eq!(Slot::decode(&bytes), Err(DecodeError::Shape(ShapeRule::InlineBodyTooLong)));
    }
}
