//! Identifiers. Each is a newtype so one can never be passed where another is meant.

use crate::format::canonical::fixed_bytes;
use crate::hash::hex_of;
use core::fmt;
use serde::{Deserialize, Serialize};

/// Names one world; written into the marker and every slot, so a slot of another world
/// under the same prefix is refused.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct WorldId(pub [u8; 16]);

/// Names one running store (one replica incarnation). Recorded in every slot it writes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct StoreId(pub u64);

/// The client's name for one mutation. It settles an uncertain outcome later and makes a
/// retried mutation idempotent: a committed operation id answers with its first receipt.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct OperationId(pub [u8; 16]);

/// Byte order, compared as one big-endian `u128`: the same order as the bytes' own,
/// without a `memcmp` call per comparison (operation ids key the receipt window).
impl Ord for OperationId {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.as_u128().cmp(&other.as_u128())
    }
}

impl PartialOrd for OperationId {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The embedder's correlation id for one request; echoed on its reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub u64);

/// The embedder's name for one view (`Request::ViewRead`): reads naming it see one state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ViewId(pub u64);

/// The kernel's id for one blob operation it emitted; the completion carries it back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlobOpId(pub u64);

/// The 16 bytes as the derived form reads them, taken at once by the object reader.
impl<'de> Deserialize<'de> for WorldId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<WorldId, D::Error> {
        fixed_bytes(deserializer).map(WorldId)
    }
}

/// As [`WorldId`]'s.
impl<'de> Deserialize<'de> for OperationId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<OperationId, D::Error> {
        fixed_bytes(deserializer).map(OperationId)
    }
}

impl From<u128> for OperationId {
    fn from(v: u128) -> Self {
        OperationId(v.to_be_bytes())
    }
}

impl OperationId {
    /// The id as a number (its bytes, big-endian).
    pub fn as_u128(&self) -> u128 {
        u128::from_be_bytes(self.0)
    }
}

/// Ids are formatted into every trace line that names one, so their digits are written at
/// once ([`hex_of`]), not a `write!` a byte.
fn hex(f: &mut fmt::Formatter<'_>, bytes: &[u8; 16]) -> fmt::Result {
    f.write_str(hex_of(bytes, &mut [0u8; 32]))
}

impl fmt::Display for WorldId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        hex(f, &self.0)
    }
}
impl fmt::Debug for WorldId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WorldId({self})")
    }
}
impl fmt::Display for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        hex(f, &self.0)
    }
}
impl fmt::Debug for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "op:{self}")
    }
}
impl fmt::Display for StoreId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}
impl fmt::Debug for StoreId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "store:{self}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_print_as_lowercase_hex() {
        let mut bytes = [0u8; 16];
        bytes[0] = 0xab;
        bytes[15] = 0x0f;
        assert_eq!(OperationId(bytes).to_string(), format!("ab{}0f", "00".repeat(14)));
        assert_eq!(format!("{:?}", WorldId(bytes)), format!("WorldId(ab{}0f)", "00".repeat(14)));
    }

    #[test]
    fn operation_ids_order_as_their_bytes_do() {
        let mut ids: Vec<OperationId> = (0u8..16).map(|i| OperationId([i.wrapping_mul(37); 16])).collect();
        let mut edge = [0u8; 16];
        ids.push(OperationId(edge));
        edge[15] = 1;
        ids.push(OperationId(edge));
        edge[0] = 1;
        ids.push(OperationId(edge));
        ids.push(OperationId([0xff; 16]));
        for a in &ids {
            for b in &ids {
                assert_eq!(a.cmp(b), a.0.cmp(&b.0), "{a:?} against {b:?}");
            }
        }
    }
}
