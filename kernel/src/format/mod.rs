//! On-bucket formats (SPEC sections 2 to 6): keys, the frame every object is wrapped in,
//! the world marker, checkpoints, slots and body blobs. Encoding is deterministic: the same value gives
//! the same bytes on every machine, which is what lets a slot's hash chain the log.

pub mod body;
pub mod chain;
pub mod checkpoint;
pub mod frame;
pub mod key;
pub mod marker;
pub mod slot;

pub use body::{decode_body, encode_body};
pub use chain::{scan_chain, ChainProblem, ChainScan};
pub use checkpoint::Checkpoint;
pub use frame::{DecodeError, Kind, NameRule, ShapeRule};
pub use key::Keys;
pub use marker::Marker;
pub use slot::{Slot, SLOT_MEMBERS_MAX};

#[cfg(test)]
mod roundtrip_tests;
#[cfg(test)]
mod snapshot_tests;
