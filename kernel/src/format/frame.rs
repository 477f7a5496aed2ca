//! The frame around every object (SPEC 3): magic, kind, schema, length, payload, CRC32C.

use super::rule::ShapeRule;
use crate::hash::Hash32;
use serde::{de::DeserializeOwned, Serialize};

/// First four bytes of every slotlog object.
pub const MAGIC: [u8; 4] = *b"slog";
/// The only schema any kind has today.
pub const SCHEMA: u16 = 1;
/// magic 4 + kind 1 + schema 2 + length 4.
pub const HEADER_LEN: usize = 11;
pub const TRAILER_LEN: usize = 4;

/// What an object is. The byte values are part of the format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    Marker = 1,
    Slot = 2,
    Body = 3,
    Checkpoint = 4,
    Root = 5,
    Shard = 6,
    History = 7,
    Receipts = 8,
}

impl Kind {
    fn from_byte(b: u8) -> Option<Kind> {
        match b {
            1 => Some(Kind::Marker),
            2 => Some(Kind::Slot),
            3 => Some(Kind::Body),
            4 => Some(Kind::Checkpoint),
            5 => Some(Kind::Root),
            6 => Some(Kind::Shard),
            7 => Some(Kind::History),
            8 => Some(Kind::Receipts),
            _ => None,
        }
    }
}

impl core::fmt::Display for Kind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Kind::Marker => "marker",
            Kind::Slot => "slot",
            Kind::Body => "body",
            Kind::Checkpoint => "checkpoint",
            Kind::Root => "root",
            Kind::Shard => "shard",
            Kind::History => "history block",
            Kind::Receipts => "receipt block",
        })
    }
}

/// Why bytes are not the object the caller expected. A reader fails closed on any of them.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Not a slotlog object at all (too short, or no magic).
    #[error("not a slotlog object")]
    Foreign,
    #[error("unknown object kind {0}")]
    UnknownKind(u8),
    #[error("expected a {expected} object, found a {found}")]
    WrongKind { expected: Kind, found: Kind },
    /// A slotlog object of a schema this build cannot read.
    #[error("{kind} of unknown schema {schema}")]
    UnknownSchema { kind: Kind, schema: u16 },
    /// The declared payload length disagrees with the object's size.
    #[error("payload of {declared} bytes declared, {actual} present")]
    Length { declared: u64, actual: u64 },
    #[error("checksum {stored:08x} stored, {computed:08x} computed")]
    Checksum { stored: u32, computed: u32 },
    /// The payload does not decode as the kind's structure.
    #[error("payload does not decode")]
    Malformed,
    /// The payload decodes but leaves bytes over.
    #[error("{bytes} bytes after the payload")]
    Trailing { bytes: usize },
    /// The payload decodes, but not from the one byte form its value encodes to.
    #[error("payload not in its canonical form")]
    NotCanonical,
    /// The payload decodes but breaks a shape rule of its kind.
    #[error("{0}")]
    Shape(ShapeRule),
    /// The object decodes but is not the one its key names.
    #[error(transparent)]
    Misnamed(NameRule),
}

/// An object that decodes but is not the one its key names: what [`DecodeError::Misnamed`]
/// names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum NameRule {
    #[error("body does not hash to its name")]
    BodyNotItsHash,
    #[error("slot under another name (it starts at sequence {first_sequence})")]
    SlotUnderAnotherName { first_sequence: u64 },
    /// A slot read again is not the one the replica installed under that name.
    #[error("slot differs from the one installed")]
    SlotNotTheInstalledOne,
    /// A slot read from before the checkpoint a replica opened from is not the one the
    /// chain names there: its hash is not the `prev_hash` of the slot after it (the
    /// checkpoint's `previous_hash` for the newest), or it does not end where that slot
    /// begins.
    #[error("slot is not the one the chain names under its name")]
    SlotNotInTheChain,
    /// A content-addressed object read under `name` whose content hash is `found`.
    #[error("{kind} read as {name} has content hash {found}")]
    NotItsName { kind: Kind, name: Hash32, found: Hash32 },
}

pub fn encode_raw(kind: Kind, payload: &[u8]) -> Vec<u8> {
    encode_raw_schema(kind, SCHEMA, payload)
}

/// A frame of a kind that has more than one schema (only checkpoints today).
pub fn encode_raw_schema(kind: Kind, schema: u16, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).expect("payload longer than 4 GiB");
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len() + TRAILER_LEN);
    out.extend_from_slice(&MAGIC);
    out.push(kind as u8);
    out.extend_from_slice(&schema.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(payload);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Checks the frame and returns the payload.
pub fn decode_raw(expected: Kind, bytes: &[u8]) -> Result<&[u8], DecodeError> {
    decode_raw_schema(expected, &[SCHEMA], bytes).map(|(_, payload)| payload)
}

/// Checks the frame, admitting any of `schemas`, and returns the schema and the payload.
pub fn decode_raw_schema<'a>(
    expected: Kind,
    schemas: &[u16],
    bytes: &'a [u8],
) -> Result<(u16, &'a [u8]), DecodeError> {
    if bytes.len() < HEADER_LEN + TRAILER_LEN || bytes[..4] != MAGIC {
        return Err(DecodeError::Foreign);
    }
    let kind = Kind::from_byte(bytes[4]).ok_or(DecodeError::UnknownKind(bytes[4]))?;
    if kind != expected {
        return Err(DecodeError::WrongKind { expected, found: kind });
    }
    let schema = u16::from_le_bytes([bytes[5], bytes[6]]);
    if !schemas.contains(&schema) {
        return Err(DecodeError::UnknownSchema { kind, schema });
    }
    let declared = u32::from_le_bytes([bytes[7], bytes[8], bytes[9], bytes[10]]) as u64;
    let actual = (bytes.len() - HEADER_LEN - TRAILER_LEN) as u64;
    if declared != actual {
        return Err(DecodeError::Length { declared, actual });
    }
    let body_end = bytes.len() - TRAILER_LEN;
    let stored = u32::from_le_bytes(bytes[body_end..].try_into().expect("4 bytes"));
    let computed = crc32c::crc32c(&bytes[..body_end]);
    if stored != computed {
        return Err(DecodeError::Checksum { stored, computed });
    }
    Ok((schema, &bytes[HEADER_LEN..body_end]))
}

pub fn encode_value<T: Serialize>(kind: Kind, value: &T) -> Vec<u8> {
    let payload = postcard::to_allocvec(value).expect("postcard encodes every slotlog type");
    encode_raw(kind, &payload)
}

pub fn decode_value<T: DeserializeOwned + Serialize>(kind: Kind, bytes: &[u8]) -> Result<T, DecodeError> {
    decode_payload(decode_raw(kind, bytes)?)
}

/// Postcard, the whole payload, and only its one canonical byte form.
pub fn decode_payload<T: DeserializeOwned + Serialize>(payload: &[u8]) -> Result<T, DecodeError> {
    let (value, rest) = postcard::take_from_bytes::<T>(payload).map_err(|_| DecodeError::Malformed)?;
    if !rest.is_empty() {
        return Err(DecodeError::Trailing { bytes: rest.len() });
    }
    // One value, one byte form: postcard reads an overlong varint, so re-encode and compare.
    if postcard::to_allocvec(&value).map_err(|_| DecodeError::Malformed)? != payload {
        return Err(DecodeError::NotCanonical);
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_round_trips() {
        let bytes = encode_raw(Kind::Body, b"abc");
        assert_eq!(decode_raw(Kind::Body, &bytes), Ok(&b"abc"[..]));
    }

    #[test]
    fn foreign_bytes_are_refused() {
        assert_eq!(decode_raw(Kind::Slot, b"{\"head\":1}"), Err(DecodeError::Foreign));
        assert_eq!(decode_raw(Kind::Slot, b""), Err(DecodeError::Foreign));
    }

    #[test]
    fn an_unknown_schema_is_refused_before_the_payload_is_read() {
        let mut bytes = encode_raw(Kind::Slot, b"x");
        bytes[5] = 2;
        assert_eq!(
            decode_raw(Kind::Slot, &bytes),
            Err(DecodeError::UnknownSchema { kind: Kind::Slot, schema: 2 })
        );
    }

    #[test]
    fn a_wrong_kind_and_an_unknown_kind_are_refused() {
        let mut bytes = encode_raw(Kind::Marker, b"x");
        assert_eq!(
            decode_raw(Kind::Slot, &bytes),
            Err(DecodeError::WrongKind { expected: Kind::Slot, found: Kind::Marker })
        );
        bytes[4] = 9;
        assert_eq!(decode_raw(Kind::Slot, &bytes), Err(DecodeError::UnknownKind(9)));
    }

    #[test]
    fn a_flipped_bit_fails_the_checksum() {
        let mut bytes = encode_raw(Kind::Body, b"abcdef");
        bytes[HEADER_LEN + 2] ^= 1;
        assert!(matches!(decode_raw(Kind::Body, &bytes), Err(DecodeError::Checksum { .. })));
    }

    #[test]
    fn a_truncated_frame_fails_on_length() {
        let bytes = encode_raw(Kind::Body, b"abcdef");
        let cut = &bytes[..bytes.len() - 1];
        assert!(matches!(decode_raw(Kind::Body, cut), Err(DecodeError::Length { .. })));
    }
}
