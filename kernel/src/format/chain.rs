//! Reading a world's log from its objects, outside any replica: decode the marker and
//! every slot in name order and check the chain (SPEC 5.5); it stops at the first slot
//! that breaks the chain and says why.
//!
//! The rule is [`ChainWalk::next`], one slot object at a time, over what the chain needs
//! of a slot (its [`SlotLink`]), so a tool can judge a log too large to hold: `inspect`
//! and `verify` summarise each slot to its link as they read it and let its bytes go.
//! [`scan_chain`] walks slot bytes a caller already holds and keeps the decoded slots.

use super::slot::slot_hash;
use super::{DecodeError, Keys, Marker, Slot};
use crate::hash::Hash32;
use crate::ids::WorldId;

/// Why the chain stops where it does.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChainProblem {
    /// The marker does not decode.
    #[error("the marker does not decode")]
    Marker(#[source] DecodeError),
    /// An object under `log/` is not named as a slot.
    #[error("{key} is not a slot name")]
    NotASlotName {
        /// The object's name.
        key: String,
    },
    /// A slot does not decode.
    #[error("{key} does not decode")]
    Decode {
        /// The slot's name.
        key: String,
        /// Why it does not decode.
        #[source]
        error: DecodeError,
    },
    /// A slot whose first sequence is not its name's.
    #[error("{key} holds a slot starting at {first_sequence}")]
    Misnamed {
        /// The slot's name.
        key: String,
        /// The first sequence it holds.
        first_sequence: u64,
    },
    /// A slot other than the next one follows the chain.
    #[error("slot {found} where {expected} is next")]
    Gap {
        /// First sequence of the slot that should come next.
        expected: u64,
        /// First sequence of the slot that does.
        found: u64,
    },
    /// A slot does not name its predecessor's hash (the first slot: the marker's).
    #[error("slot {sequence} does not name its predecessor's hash")]
    Break {
        /// The slot's first sequence.
        sequence: u64,
    },
    /// A slot names another world than the marker.
    #[error("slot {sequence} names another world")]
    ForeignWorld {
        /// The slot's first sequence.
        sequence: u64,
    },
}

/// The verified prefix of a log.
#[derive(Clone, Debug)]
pub struct ChainScan {
    /// The world the marker names (None when the marker does not decode).
    pub world_id: Option<WorldId>,
    /// Slots that continue the chain, in order, with their hashes.
    pub slots: Vec<(Slot, Hash32)>,
    /// The last sequence of the verified chain (0 when empty).
    pub tip: u64,
    /// None when every slot verified.
    pub problem: Option<ChainProblem>,
}

/// What the chain needs of one slot object: where it sits, the hash it names before it,
/// and the hash of its own bytes. A slot's link is a hundred bytes whatever the slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotLink {
    /// The world the slot names.
    pub world_id: WorldId,
    /// Its first member's sequence.
    pub first_sequence: u64,
    /// Its last member's sequence.
    pub last_sequence: u64,
    /// The hash of the slot before it, as the slot records it.
    pub prev_hash: Hash32,
    /// The hash of the slot's object bytes, which the slot after it names.
    pub hash: Hash32,
}

impl SlotLink {
    /// The link of `slot`, whose object bytes hash to `hash`.
    pub fn of(slot: &Slot, hash: Hash32) -> SlotLink {
        SlotLink {
            world_id: slot.world_id,
            first_sequence: slot.first_sequence,
            last_sequence: slot.last_sequence(),
            prev_hash: slot.prev_hash,
            hash,
        }
    }

    /// Decodes slot object bytes to their link; the decoded slot is let go.
    pub fn decode(bytes: &[u8]) -> Result<SlotLink, DecodeError> {
        Slot::decode(bytes).map(|slot| SlotLink::of(&slot, slot_hash(bytes)))
    }

    /// The members the slot holds: one a sequence.
    pub fn members(&self) -> u64 {
        self.last_sequence - self.first_sequence + 1
    }
}

/// Where a walk along the chain stands: the next slot must start right after `tip`, name
/// `prev` as the hash before it, and belong to `world_id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainWalk {
    /// The world the marker names (None when it does not decode: no slot continues).
    pub world_id: Option<WorldId>,
    /// The last sequence of the verified chain (0 when empty).
    pub tip: u64,
    /// The hash the next slot must name: the marker's, a checkpoint's `previous_hash`, or
    /// the last verified slot's.
    pub prev: Hash32,
}

impl ChainWalk {
    /// Takes the next object under `log/` in key order, `key`, decoded to its link (or
    /// why it does not decode): Ok, the chain goes on through it; Err says why the chain
    /// stops before it, and the walk stays where it was.
    pub fn next(
        &mut self,
        keys: &Keys,
        key: &str,
        link: Result<SlotLink, &DecodeError>,
    ) -> Result<(), ChainProblem> {
        let Some(name) = keys.parse_slot(key) else {
            return Err(ChainProblem::NotASlotName { key: key.to_string() });
        };
        let link =
            link.map_err(|error| ChainProblem::Decode { key: key.to_string(), error: error.clone() })?;
        if link.first_sequence != name {
            return Err(ChainProblem::Misnamed { key: key.to_string(), first_sequence: link.first_sequence });
        }
        if name != self.tip + 1 {
            return Err(ChainProblem::Gap { expected: self.tip + 1, found: name });
        }
        if link.prev_hash != self.prev {
            return Err(ChainProblem::Break { sequence: name });
        }
        if Some(link.world_id) != self.world_id {
            return Err(ChainProblem::ForeignWorld { sequence: name });
        }
        self.tip = link.last_sequence;
        self.prev = link.hash;
        Ok(())
    }
}

/// Walks `log` (keys and bytes under `log/`, in key order) from `marker`.
pub fn scan_chain<'a>(
    keys: &Keys,
    marker: &[u8],
    log: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> ChainScan {
    let mut scan = ChainScan { world_id: None, slots: Vec::new(), tip: 0, problem: None };
    let marker_value = match Marker::decode(marker) {
        Ok(m) => m,
        Err(e) => {
            scan.problem = Some(ChainProblem::Marker(e));
            return scan;
        }
    };
    scan.world_id = Some(marker_value.world_id);
    continue_chain(keys, scan, Hash32::of(marker), log)
}

/// Walks on from `scan` (its world and tip, no problem yet), the next slot naming `prev`
/// as the hash before it: from the marker, or from a checkpoint's `previous_hash`.
pub fn continue_chain<'a>(
    keys: &Keys,
    mut scan: ChainScan,
    prev: Hash32,
    log: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> ChainScan {
    let mut walk = ChainWalk { world_id: scan.world_id, tip: scan.tip, prev };
    for (key, bytes) in log {
        let slot = Slot::decode(bytes);
        let link = slot.as_ref().map(|s| SlotLink::of(s, slot_hash(bytes)));
        match (walk.next(keys, key, link), slot) {
            (Ok(()), Ok(slot)) => {
                scan.tip = walk.tip;
                scan.slots.push((slot, walk.prev));
            }
            // A slot that does not decode never continues the chain: `next` said why.
            (problem, _) => {
                scan.problem = problem.err();
                break;
            }
        }
    }
    scan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::roundtrip_tests::publishes;
    use crate::format::snapshot_tests::marker;

    /// `members` publishes from `first`, naming `prev` before them: the slot and its bytes.
    fn slot_from(first: u64, members: usize, prev: Hash32) -> (Slot, Vec<u8>) {
        let mut slot = publishes(members);
        slot.first_sequence = first;
        slot.prev_hash = prev;
        for (i, m) in slot.members.iter_mut().enumerate() {
            let sequence = first + i as u64;
            m.receipt.sequence = sequence;
            m.entry.as_mut().expect("a publish").modified_sequence = sequence;
            m.version.as_mut().expect("a publish").sequence = sequence;
        }
        let bytes = slot.encode();
        (slot, bytes)
    }

    /// The same log walked as bytes (`scan_chain`) and as links (`ChainWalk`).
    fn both_ways(
        keys: &Keys,
        marker: &[u8],
        log: &[(String, Vec<u8>)],
    ) -> (ChainScan, ChainWalk, Option<ChainProblem>) {
        let scan = scan_chain(keys, marker, log.iter().map(|(k, b)| (k.as_str(), &b[..])));
        let world_id = Marker::decode(marker).ok().map(|m| m.world_id);
        let mut walk = ChainWalk { world_id, tip: 0, prev: Hash32::of(marker) };
        let problem = log.iter().find_map(|(key, bytes)| {
            let link = SlotLink::decode(bytes);
            walk.next(keys, key, link.as_ref().copied()).err()
        });
        (scan, walk, problem)
    }

    #[test]
    fn a_walk_over_links_judges_a_log_as_a_scan_of_its_bytes_does() {
        let keys = Keys::new("w");
        let marker = marker().encode();
        let (first, first_bytes) = slot_from(1, 2, Hash32::of(&marker));
        let (second, second_bytes) = slot_from(3, 3, Hash32::of(&first_bytes));
        let (_, forked) = slot_from(6, 1, Hash32::of(b"another history"));
        let mut log = vec![(keys.slot(1), first_bytes.clone()), (keys.slot(3), second_bytes.clone())];
        let (scan, walk, problem) = both_ways(&keys, &marker, &log);
        assert_eq!((scan.tip, &scan.problem), (5, &None));
        assert_eq!(scan.slots, vec![(first, Hash32::of(&first_bytes)), (second, Hash32::of(&second_bytes))]);
        assert_eq!((walk.tip, walk.prev, problem), (scan.tip, Hash32::of(&second_bytes), None));
        let link = SlotLink::decode(&second_bytes).expect("decodes");
        assert_eq!((link.first_sequence, link.last_sequence, link.members()), (3, 5, 3));
        log.push((keys.slot(6), forked));
        log.push((keys.slot(7), b"not a slot".to_vec()));
        let (scan, walk, problem) = both_ways(&keys, &marker, &log);
        assert_eq!(scan.problem, Some(ChainProblem::Break { sequence: 6 }));
        assert_eq!((walk.tip, problem), (scan.tip, scan.problem));
    }
}
