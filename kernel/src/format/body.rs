//! Content-addressed body blobs (SPEC 6): the frame around the raw body, under a key named
//! by the body's BLAKE3 hash. Created before the slot that names them; never rewritten.

use super::frame::{decode_raw, encode_raw, DecodeError, Kind, NameRule};
use crate::hash::Hash32;

/// The body blob holding `body`: the frame around the raw bytes (SPEC 6).
pub fn encode_body(body: &[u8]) -> Vec<u8> {
    encode_raw(Kind::Body, body)
}

/// Decodes a body blob and checks it hashes to `expected`.
pub fn decode_body(bytes: &[u8], expected: &Hash32) -> Result<Vec<u8>, DecodeError> {
    let body = decode_raw(Kind::Body, bytes)?;
    if Hash32::of(body) != *expected {
        return Err(DecodeError::Misnamed(NameRule::BodyNotItsHash));
    }
    Ok(body.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_under_another_hash_is_refused() {
        let bytes = encode_body(b"hello");
        assert_eq!(decode_body(&bytes, &Hash32::of(b"hello")).unwrap(), b"hello");
        assert_eq!(
            decode_body(&bytes, &Hash32::of(b"other")),
            Err(DecodeError::Misnamed(NameRule::BodyNotItsHash))
        );
    }
}
