//! BLAKE3 content hashes: document bodies are addressed by them and slots chain by them.

use core::fmt;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Hash32(pub [u8; 32]);

impl Hash32 {
    pub const ZERO: Hash32 = Hash32([0; 32]);

    pub fn of(bytes: &[u8]) -> Hash32 {
        Hash32(*blake3::hash(bytes).as_bytes())
    }

    pub fn to_hex(&self) -> String {
        let mut s = String::with_capacity(64);
        self.push_hex(&mut s);
        s
    }

    /// Appends the 64 lowercase hex digits of [`Hash32::to_hex`] to `out` (object keys are
    /// built this way, without a `String` of their own for the digits).
    pub fn push_hex(&self, out: &mut String) {
        let mut digits = [0u8; 64];
        for (pair, b) in digits.chunks_exact_mut(2).zip(self.0) {
            pair[0] = HEX_DIGITS[usize::from(b >> 4)];
            pair[1] = HEX_DIGITS[usize::from(b & 15)];
        }
        out.push_str(core::str::from_utf8(&digits).expect("hex digits are ASCII"));
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
        write!(f, "Hash32({})", &self.to_hex()[..12])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_refuses_uppercase() {
        let h = Hash32::of(b"hello");
        assert_eq!(Hash32::from_hex(&h.to_hex()), Some(h));
        assert_eq!(Hash32::from_hex(&h.to_hex().to_uppercase()), None);
        assert_eq!(Hash32::from_hex("ab"), None);
    }
}
