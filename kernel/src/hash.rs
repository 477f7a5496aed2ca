//! BLAKE3 content hashes: document bodies are addressed by them and slots chain by them.

use core::fmt;
use serde::{Deserialize, Serialize};

/// A BLAKE3 hash (32 bytes).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Hash32(pub [u8; 32]);

/// The 32 bytes as the derived form reads them, taken at once by the object reader.
impl<'de> Deserialize<'de> for Hash32 {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Hash32, D::Error> {
        crate::format::canonical::fixed_bytes(deserializer).map(Hash32)
    }
}

/// Byte order (the order of the hex names), compared as four big-endian words: the same
/// order as the bytes' own, without a `memcmp` call per comparison (hashes key the
/// body index, the body cache and the body states).
impl Ord for Hash32 {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.words().cmp(&other.words())
    }
}

impl PartialOrd for Hash32 {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Hash32 {
    /// All zero bytes: stands for no hash (say, a request digest a checkpoint did not record).
    pub const ZERO: Hash32 = Hash32([0; 32]);

    /// The bytes as four big-endian words, which order as the bytes do.
    fn words(&self) -> [u64; 4] {
        let word = |i: usize| u64::from_be_bytes(self.0[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        [word(0), word(1), word(2), word(3)]
    }

    /// BLAKE3 of `bytes`.
    pub fn of(bytes: &[u8]) -> Hash32 {
        Hash32(*blake3::hash(bytes).as_bytes())
    }

    /// The 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        let mut s = String::with_capacity(64);
        self.push_hex(&mut s);
        s
    }

    /// Appends the 64 lowercase hex digits of [`Hash32::to_hex`] to `out` (object keys are
    /// built this way, without a `String` of their own for the digits).
    pub fn push_hex(&self, out: &mut String) {
        out.push_str(hex_of(&self.0, &mut [0u8; 64]));
    }

    /// Parses exactly 64 lowercase hex digits.
    pub fn from_hex(s: &str) -> Option<Hash32> {
        let bytes = s.as_bytes();
        if bytes.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, pair) in bytes.chunks(2).enumerate() {
            let hi = lower_hex_digit(pair[0])?;
            let lo = lower_hex_digit(pair[1])?;
            out[i] = hi << 4 | lo;
        }
        Some(Hash32(out))
    }
}

/// Lowercase hex digits by value.
pub(crate) const HEX_DIGITS: [u8; 16] = *b"0123456789abcdef";

/// The lowercase hex digits of as many of `bytes` as fill `digits` (two a byte), written
/// at once into it: no `write!` a byte, no `String` of their own.
pub(crate) fn hex_of<'d>(bytes: &[u8], digits: &'d mut [u8]) -> &'d str {
    for (pair, b) in digits.chunks_exact_mut(2).zip(bytes) {
        pair[0] = HEX_DIGITS[usize::from(b >> 4)];
        pair[1] = HEX_DIGITS[usize::from(b & 15)];
    }
    core::str::from_utf8(digits).expect("hex digits are ASCII")
}

fn lower_hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

impl fmt::Display for Hash32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Hash32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The first 12 hex digits, as `&self.to_hex()[..12]`, without building all 64.
        write!(f, "Hash32({})", hex_of(&self.0, &mut [0u8; 12]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_order_as_their_bytes_do() {
        let mut hashes: Vec<Hash32> = (0u8..40).map(|i| Hash32::of(&[i])).collect();
        hashes.push(Hash32::ZERO);
        hashes.push(Hash32([0xff; 32]));
        let mut edge = [0u8; 32];
        edge[31] = 1;
        hashes.push(Hash32(edge));
        edge[8] = 1;
        hashes.push(Hash32(edge));
        for a in &hashes {
            for b in &hashes {
                assert_eq!(a.cmp(b), a.0.cmp(&b.0), "{a:?} against {b:?}");
            }
        }
    }

    #[test]
    fn debug_shows_the_first_twelve_hex_digits() {
        let h = Hash32::of(b"hello");
        assert_eq!(format!("{h:?}"), format!("Hash32({})", &h.to_hex()[..12]));
    }

    #[test]
    fn hex_round_trips_and_refuses_uppercase() {
        let h = Hash32::of(b"hello");
        assert_eq!(Hash32::from_hex(&h.to_hex()), Some(h));
        assert_eq!(Hash32::from_hex(&h.to_hex().to_uppercase()), None);
        assert_eq!(Hash32::from_hex("ab"), None);
    }
}
