//! The key of the receipt window's hash map. Operation ids are the client's: under an
//! unkeyed hash a client could pick ids that collide and slow every writer's receipt
//! lookups (HashDoS). The window hashes them with SipHash-1-3, std's own `HashMap` hash,
//! under a 128-bit key the embedder gives: the kernel takes no randomness itself.

use core::fmt;
use core::hash::BuildHasher;
use siphasher::sip::SipHasher13;

/// The receipt window's SipHash key. The production driver draws it from the system's
/// random source at each open; the simulation derives it from the run's seed. The window
/// is only looked up, never walked, so the key changes no answer, no byte and no trace.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiptKey {
    k0: u64,
    k1: u64,
}

impl ReceiptKey {
    /// The key `(k0, k1)`: 128 bits the embedder keeps secret.
    pub const fn new(k0: u64, k1: u64) -> ReceiptKey {
        ReceiptKey { k0, k1 }
    }

    /// A key spread from one 64-bit seed (SplitMix64's two next outputs), for an
    /// embedder that derives everything from a run's seed: as secret as the seed is.
    pub fn from_seed(seed: u64) -> ReceiptKey {
        let mut state = seed;
        let mut next = || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        ReceiptKey { k0: next(), k1: next() }
    }

    /// SipHash-1-3 of `bytes` under this key, in one pass (a key's `Hash` impl writes in
    /// pieces, and a `str` a terminator after).
    #[inline]
    pub(crate) fn hash_bytes(&self, bytes: &[u8]) -> u64 {
        SipHasher13::new_with_keys(self.k0, self.k1).hash(bytes)
    }
}

/// Never prints the key: a log line must not hand it to whoever reads the logs.
impl fmt::Debug for ReceiptKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ReceiptKey(..)")
    }
}

impl BuildHasher for ReceiptKey {
    type Hasher = SipHasher13;

    fn build_hasher(&self) -> SipHasher13 {
        SipHasher13::new_with_keys(self.k0, self.k1)
    }
}

#[cfg(test)]
mod tests {
    use super::ReceiptKey;
    use crate::config::Config;
    use crate::ids::OperationId;
    use crate::testkit::{Harness, MemStore};
    use core::hash::BuildHasher;

    #[test]
    fn the_hash_is_the_keys() {
        let op = OperationId::from(42);
        let (a, b) = (ReceiptKey::from_seed(1), ReceiptKey::from_seed(2));
        assert_eq!(a, ReceiptKey::from_seed(1), "a seed gives one key");
        assert_ne!(a, b);
        assert_eq!(a.hash_one(op), a.hash_one(op));
        assert_ne!(a.hash_one(op), b.hash_one(op), "another key, another hash of one id");
        assert_ne!(ReceiptKey::new(1, 2).hash_one(op), ReceiptKey::new(2, 1).hash_one(op));
        assert_eq!(format!("{a:?}"), "ReceiptKey(..)", "the key is not printed");
    }

    /// The replica's window takes the key its identity carries, and a replica fed the
    /// same inputs under another key answers the same: writes, a retried id answered
    /// from the window, and a conflicting reuse of an id.
    #[test]
    fn the_window_takes_the_embedders_key_and_answers_alike() {
        let answers = |key: ReceiptKey| {
            let mut h = Harness::with_receipt_key(Config::default(), MemStore::default(), 1, key);
            h.run();
            assert_eq!(h.replica.world().map(|w| w.receipt_key()), Some(key));
            let mut ids = Vec::new();
            for op in 1..=40u128 {
                ids.push(h.publish(op, &format!("/k/{}.md", op % 7), &format!("body {op}")));
                h.run();
            }
            ids.push(h.publish(5, "/k/5.md", "body 5"));
            ids.push(h.publish(6, "/k/6.md", "another body"));
            h.run();
            ids.iter().map(|id| format!("{:?}", h.reply(*id))).collect::<Vec<_>>()
        };
        let one = answers(ReceiptKey::from_seed(1));
        assert_eq!(one, answers(ReceiptKey::new(u64::MAX, 3)));
        assert!(one.iter().all(|a| a.starts_with("Some(")), "every write answered");
    }
}
