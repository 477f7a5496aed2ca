//! Reading a world's log from its objects, outside any replica: decode the marker and
//! every slot in name order and check the chain (SPEC 5.5). Tools (`verify`, `inspect`)
//! use it; it stops at the first slot that breaks the chain and says why.

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
    mut prev: Hash32,
    log: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> ChainScan {
    for (key, bytes) in log {
        let Some(name) = keys.parse_slot(key) else {
            scan.problem = Some(ChainProblem::NotASlotName { key: key.to_string() });
            break;
        };
        let slot = match Slot::decode(bytes) {
            Ok(s) => s,
            Err(error) => {
                scan.problem = Some(ChainProblem::Decode { key: key.to_string(), error });
                break;
            }
        };
        let problem = if slot.first_sequence != name {
            Some(ChainProblem::Misnamed { key: key.to_string(), first_sequence: slot.first_sequence })
        } else if name != scan.tip + 1 {
            Some(ChainProblem::Gap { expected: scan.tip + 1, found: name })
        } else if slot.prev_hash != prev {
            Some(ChainProblem::Break { sequence: name })
        } else if Some(slot.world_id) != scan.world_id {
            Some(ChainProblem::ForeignWorld { sequence: name })
        } else {
            None
        };
        if problem.is_some() {
            scan.problem = problem;
            break;
        }
        prev = Hash32::of(bytes);
        scan.tip = slot.last_sequence();
        scan.slots.push((slot, prev));
    }
    scan
}
