//! The frame around every object (SPEC 3): magic, kind, schema, length, payload, CRC32C.

use super::canonical::{self, Read};
use super::rule::ShapeRule;
use crate::hash::Hash32;
use serde::{de::DeserializeOwned, Deserialize, Serialize};

/// First four bytes of every slotlog object.
pub const MAGIC: [u8; 4] = *b"slog";
/// The only schema any kind has today.
pub const SCHEMA: u16 = 1;
/// magic 4 + kind 1 + schema 2 + length 4.
pub const HEADER_LEN: usize = 11;
/// The CRC32C after the payload.
pub const TRAILER_LEN: usize = 4;

/// What an object is. The byte values are part of the format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// The world marker (SPEC 4).
    Marker = 1,
    /// A slot (SPEC 5).
    Slot = 2,
    /// A body blob (SPEC 6).
    Body = 3,
    /// A checkpoint (SPEC 10.1).
    Checkpoint = 4,
    /// A root (SPEC 10.5).
    Root = 5,
    /// A shard (SPEC 10.6).
    Shard = 6,
    /// A history block (SPEC 10.7).
    History = 7,
    /// A receipt block (SPEC 10.8).
    Receipts = 8,
    /// A delta (SPEC 10.16).
    Delta = 9,
    /// A body segment part (SPEC 10.17).
    Segment = 10,
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
            9 => Some(Kind::Delta),
            10 => Some(Kind::Segment),
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
            Kind::Delta => "delta",
            Kind::Segment => "segment part",
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
    /// The kind byte names no kind.
    #[error("unknown object kind {0}")]
    UnknownKind(u8),
    /// An object of another kind than the one expected.
    #[error("expected a {expected} object, found a {found}")]
    WrongKind {
        /// The kind the caller expected.
        expected: Kind,
        /// The kind the frame names.
        found: Kind,
    },
    /// A slotlog object of a schema this build cannot read.
    #[error("{kind} of unknown schema {schema}")]
    UnknownSchema {
        /// The object's kind.
        kind: Kind,
        /// The schema the frame names.
        schema: u16,
    },
    /// The declared payload length disagrees with the object's size.
    #[error("payload of {declared} bytes declared, {actual} present")]
    Length {
        /// Payload length the header declares, in bytes.
        declared: u64,
        /// Payload bytes present.
        actual: u64,
    },
    /// The CRC32C trailer does not match the bytes.
    #[error("checksum {stored:08x} stored, {computed:08x} computed")]
    Checksum {
        /// The CRC32C the trailer holds.
        stored: u32,
        /// The CRC32C of the bytes.
        computed: u32,
    },
    /// The payload does not decode as the kind's structure.
    #[error("payload does not decode")]
    Malformed,
    /// The payload decodes but leaves bytes over.
    #[error("{bytes} bytes after the payload")]
    Trailing {
        /// Bytes left over.
        bytes: usize,
    },
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
    /// A body blob whose body does not hash to its name.
    #[error("body does not hash to its name")]
    BodyNotItsHash,
    /// A slot read at `log/<sequence>` that starts at another sequence.
    #[error("slot under another name (it starts at sequence {first_sequence})")]
    SlotUnderAnotherName {
        /// The sequence the slot starts at.
        first_sequence: u64,
    },
    /// A slot read again is not the one the replica installed under that name.
    #[error("slot differs from the one installed")]
    SlotNotTheInstalledOne,
    /// A slot read from before the checkpoint a replica opened from is not the one the
    /// chain names there: its hash is not the `prev_hash` of the slot after it (the
    /// checkpoint's `previous_hash` for the newest), or it does not end where that slot
    /// begins.
    #[error("slot is not the one the chain names under its name")]
    SlotNotInTheChain,
    /// A segment part read under another part number than the one it names.
    #[error("segment part {part} under another part's name")]
    SegmentPartUnderAnotherName {
        /// The part number it names.
        part: u32,
    },
    /// A content-addressed object read under `name` whose content hash is `found`.
    #[error("{kind} read as {name} has content hash {found}")]
    NotItsName {
        /// The object's kind.
        kind: Kind,
        /// The hash its name gives.
        name: Hash32,
        /// The content hash of its bytes.
        found: Hash32,
    },
}

/// The frame around `payload` for an object of `kind`, at schema 1.
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

/// The same bytes as `encode_raw(kind, &postcard::to_allocvec(value))`, with the payload
/// encoded in place behind the header (one buffer, no copy of the payload).
pub fn encode_value<T: Serialize>(kind: Kind, value: &T) -> Vec<u8> {
    encode_value_schema(kind, SCHEMA, value)
}

/// [`encode_value`] at another schema than 1, for a kind that has more than one.
pub fn encode_value_schema<T: Serialize>(kind: Kind, schema: u16, value: &T) -> Vec<u8> {
    // Sized first (a walk that copies nothing) so a slot carrying bodies is written into
    // one buffer of its exact length, not grown and copied as it fills.
    let payload_len = postcard::serialize_with_flavor(value, postcard::ser_flavors::Size::default())
        .expect("postcard encodes every slotlog type");
    encode_written(kind, schema, payload_len, |out| {
        *out = postcard::serialize_with_flavor(value, Appended(std::mem::take(out)))
            .expect("postcard encodes every slotlog type");
    })
}

/// A frame whose payload `write` appends to the buffer it is handed (behind the header),
/// for a kind with a writer of its own; `payload_bytes_max` is reserved for it up front.
pub(crate) fn encode_written(
    kind: Kind,
    schema: u16,
    payload_bytes_max: usize,
    write: impl FnOnce(&mut Vec<u8>),
) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload_bytes_max + TRAILER_LEN);
    out.extend_from_slice(&MAGIC);
    out.push(kind as u8);
    out.extend_from_slice(&schema.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    write(&mut out);
    let len = u32::try_from(out.len() - HEADER_LEN).expect("payload longer than 4 GiB");
    out[HEADER_LEN - 4..HEADER_LEN].copy_from_slice(&len.to_le_bytes());
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// A postcard output that appends to a `Vec`. Postcard hands most values over as a few
/// bytes at a time (varints, tags), so short pieces are pushed byte by byte rather than
/// through a `memcpy` call each.
struct Appended(Vec<u8>);

/// Pieces up to this long are pushed byte by byte.
const PIECE_PUSHED_BYTES_MAX: usize = 16;

impl postcard::ser_flavors::Flavor for Appended {
    type Output = Vec<u8>;

    #[inline]
    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        if data.len() <= PIECE_PUSHED_BYTES_MAX {
            self.0.reserve(data.len());
            for &b in data {
                self.0.push(b);
            }
        } else {
            self.0.extend_from_slice(data);
        }
        Ok(())
    }

    #[inline]
    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.0.push(data);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<Vec<u8>> {
        Ok(self.0)
    }
}

/// Checks the frame and decodes the payload as the canonical postcard form of `T`.
pub fn decode_value<T: DeserializeOwned + Serialize>(kind: Kind, bytes: &[u8]) -> Result<T, DecodeError> {
    decode_payload(decode_raw(kind, bytes)?)
}

/// Postcard, the whole payload, and only its one canonical byte form. `T` may borrow from
/// the payload. Read by the strict reader (`format::canonical`), which finds
/// a payload not in its one form as it reads, with no re-encode (`Serialize` is for the
/// tests, which hold it to the re-encoding reference).
pub fn decode_payload<'a, T: Deserialize<'a> + Serialize>(payload: &'a [u8]) -> Result<T, DecodeError> {
    #[cfg(test)]
    if reference::ON.with(|on| on.get()) {
        return decode_payload_reference(payload);
    }
    match canonical::read(payload) {
        Read::Refused => Err(DecodeError::Malformed),
        Read::Trailing(bytes) => Err(DecodeError::Trailing { bytes }),
        Read::Overlong => Err(DecodeError::NotCanonical),
        Read::Canonical(value) => Ok(value),
    }
}

/// The tests' switch to the reference reader.
#[cfg(test)]
pub(crate) mod reference {
    use std::cell::Cell;

    thread_local! {
        pub(super) static ON: Cell<bool> = const { Cell::new(false) };
    }

    /// Runs `f` with every payload on this thread decoded by
    /// [`decode_payload_reference`](super::decode_payload_reference).
    pub(crate) fn with<R>(f: impl FnOnce() -> R) -> R {
        ON.with(|on| on.set(true));
        let out = f();
        ON.with(|on| on.set(false));
        out
    }
}

/// What [`decode_payload`] did before the strict reader, kept as the reference its tests
/// hold it to: postcard, then a re-encode compared with the payload.
#[cfg(test)]
pub(crate) fn decode_payload_reference<'a, T: Deserialize<'a> + Serialize>(
    payload: &'a [u8],
) -> Result<T, DecodeError> {
    let (value, rest) = postcard::take_from_bytes::<T>(payload).map_err(|_| DecodeError::Malformed)?;
    if !rest.is_empty() {
        return Err(DecodeError::Trailing { bytes: rest.len() });
    }
    // One value, one byte form: postcard reads an overlong varint, so re-encode and compare
    // (byte by byte as the encoding is made, stopping at the first difference).
    let mut serializer = postcard::Serializer { output: SameAs { expected: payload, at: 0, differs: false } };
    let outcome = value.serialize(&mut serializer);
    let same = serializer.output;
    match outcome {
        Err(_) if same.differs => Err(DecodeError::NotCanonical),
        Err(_) => Err(DecodeError::Malformed),
        Ok(()) if same.at != payload.len() => Err(DecodeError::NotCanonical),
        Ok(()) => Ok(value),
    }
}

/// A postcard output that writes nothing and only compares with `expected`: the reference
/// canonical check re-encodes a decoded value this way.
#[cfg(test)]
struct SameAs<'a> {
    expected: &'a [u8],
    at: usize,
    differs: bool,
}

#[cfg(test)]
impl postcard::ser_flavors::Flavor for SameAs<'_> {
    type Output = bool;

    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        let end = self.at + data.len();
        if self.expected.get(self.at..end) != Some(data) {
            self.differs = true;
            return Err(postcard::Error::SerializeBufferFull);
        }
        self.at = end;
        Ok(())
    }

    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        if self.expected.get(self.at) != Some(&data) {
            self.differs = true;
            return Err(postcard::Error::SerializeBufferFull);
        }
        self.at += 1;
        Ok(())
    }

    fn finalize(self) -> postcard::Result<bool> {
        Ok(self.at == self.expected.len())
    }
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
        bytes[4] = 11;
        assert_eq!(decode_raw(Kind::Slot, &bytes), Err(DecodeError::UnknownKind(11)));
    }

    #[test]
    fn a_flipped_bit_fails_the_checksum() {
        let mut bytes = encode_raw(Kind::Body, b"abcdef");
        bytes[HEADER_LEN + 2] ^= 1;
        assert!(matches!(decode_raw(Kind::Body, &bytes), Err(DecodeError::Checksum { .. })));
    }

    #[test]
    fn a_value_encodes_as_its_postcard_payload_in_a_frame() {
        let value = (7u64, u64::MAX, String::from("/docs/a.md"), vec![1u8; 40], Some(300u32));
        let payload = postcard::to_allocvec(&value).expect("encodes");
        assert_eq!(encode_value(Kind::Slot, &value), encode_raw(Kind::Slot, &payload));
        assert_eq!(
            decode_value::<(u64, u64, String, Vec<u8>, Option<u32>)>(
                Kind::Slot,
                &encode_value(Kind::Slot, &value)
            ),
            Ok(value)
        );
    }

    #[test]
    fn a_payload_not_in_its_canonical_form_is_refused() {
        // 5 as an overlong two-byte varint, then as the one byte postcard writes.
        assert_eq!(decode_payload::<u64>(&[0x85, 0x00]), Err(DecodeError::NotCanonical));
        assert_eq!(decode_payload::<u64>(&[0x05]), Ok(5));
        assert_eq!(decode_payload::<u64>(&[0x05, 0x00]), Err(DecodeError::Trailing { bytes: 1 }));
    }

    #[test]
    fn a_truncated_frame_fails_on_length() {
        let bytes = encode_raw(Kind::Body, b"abcdef");
        let cut = &bytes[..bytes.len() - 1];
        assert!(matches!(decode_raw(Kind::Body, cut), Err(DecodeError::Length { .. })));
    }
}
