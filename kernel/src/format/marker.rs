//! The world marker (SPEC 4): written once at genesis, never on the commit path. Its hash
//! anchors the chain: the first slot names it as its predecessor.

use super::frame::{decode_value, encode_value, DecodeError, Kind};
use crate::ids::{StoreId, WorldId};
use serde::{Deserialize, Serialize};

/// The world marker: names the world under its prefix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    /// The world's id.
    pub world_id: WorldId,
    /// The store that created the world.
    pub created_by: StoreId,
}

impl Marker {
    /// The object's bytes.
    pub fn encode(&self) -> Vec<u8> {
        encode_value(Kind::Marker, self)
    }

    /// Decodes a marker.
    pub fn decode(bytes: &[u8]) -> Result<Marker, DecodeError> {
        decode_value(Kind::Marker, bytes)
    }
}
