//! The freshen stamp (SPEC 10.9). Roots, shards, receipt blocks and full checkpoints end
//! their payload with a `u64` stamp. A first write has stamp 0, so racing compactors write
//! identical bytes; a freshen rewrites the object in place with a greater stamp, so its
//! bytes (and with them an S3 ETag, the MD5 of the bytes) change while its content does not.
//!
//! The content hash, which names a root, shard or receipt block and which racing writers
//! compare, is BLAKE3 of the whole object as its first write stores it: the same object
//! with stamp 0. For an object never freshened that is simply the hash of its bytes.

use super::frame::{encode_raw_schema, Kind, HEADER_LEN, TRAILER_LEN};
use crate::hash::Hash32;

/// The stamp every first write carries.
pub const FIRST_WRITE_STAMP: u64 = 0;

/// Bytes of `value` as a postcard varint.
fn varint_len(value: u64) -> usize {
    let bits = u64::BITS - value.leading_zeros();
    (bits.max(1) as usize).div_ceil(7)
}

/// The content hash of `object`, a frame of `kind` and `schema` whose payload ends with
/// the varint `stamp`: the hash of the same frame with that varint replaced by stamp 0.
pub(super) fn content_hash(kind: Kind, schema: u16, object: &[u8], stamp: u64) -> Hash32 {
    if stamp == FIRST_WRITE_STAMP {
        return Hash32::of(object);
    }
    let payload = &object[HEADER_LEN..object.len() - TRAILER_LEN];
    let content = &payload[..payload.len() - varint_len(stamp)];
    let mut first_write = Vec::with_capacity(content.len() + 1);
    first_write.extend_from_slice(content);
    first_write.push(0);
    Hash32::of(&encode_raw_schema(kind, schema, &first_write))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_lengths_match_postcard() {
        for v in [0, 1, 127, 128, 16_383, 16_384, u32::MAX as u64, u64::MAX] {
            assert_eq!(varint_len(v), postcard::to_allocvec(&v).expect("encodes").len(), "{v}");
        }
    }
}
