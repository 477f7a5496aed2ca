//! Recent document bodies by hash, so an append to a hot document reads no blob.
//! Bounded by bytes; the least recently used body goes first.

use crate::hash::Hash32;
use bytes::Bytes;
use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;
use std::collections::BTreeMap;

pub(crate) struct BodyCache {
    bytes_max: usize,
    bytes: usize,
    tick: u64,
    /// Looked up, never walked: a hash map (the keys are BLAKE3 hashes, so no caller can
    /// choose them to collide).
    by_hash: FxHashMap<Hash32, (Bytes, u64)>,
    by_age: BTreeMap<u64, Hash32>,
}

impl BodyCache {
    pub fn new(bytes_max: usize) -> BodyCache {
        BodyCache { bytes_max, bytes: 0, tick: 0, by_hash: FxHashMap::default(), by_age: BTreeMap::new() }
    }

    /// Looks a body up and counts it as used (what `insert` does to a body it holds).
    #[cfg(test)]
    pub fn get(&mut self, hash: &Hash32) -> Option<Bytes> {
        let (body, age) = self.by_hash.get_mut(hash)?;
        self.by_age.remove(age);
        self.tick += 1;
        *age = self.tick;
        self.by_age.insert(self.tick, *hash);
        Some(body.clone())
    }

    /// Looks a body up without counting it as used.
    pub fn peek(&self, hash: &Hash32) -> Option<Bytes> {
        self.by_hash.get(hash).map(|(b, _)| b.clone())
    }

    /// Keeps `body` unless it alone is over the bound.
    pub fn insert(&mut self, hash: Hash32, body: Bytes) {
        if body.len() > self.bytes_max {
            return;
        }
        self.tick += 1;
        // One search: a body held already counts as used, as `get` would count it.
        match self.by_hash.entry(hash) {
            Entry::Occupied(mut held) => {
                self.by_age.remove(&core::mem::replace(&mut held.get_mut().1, self.tick));
            }
            Entry::Vacant(v) => {
                self.bytes += body.len();
                v.insert((body, self.tick));
            }
        }
        self.by_age.insert(self.tick, hash);
        while self.bytes > self.bytes_max {
            let (_, oldest) = self.by_age.pop_first().expect("bytes counted means entries held");
            let (b, _) = self.by_hash.remove(&oldest).expect("indexes agree");
            self.bytes -= b.len();
        }
        debug_assert!(self.bytes <= self.bytes_max);
        debug_assert_eq!(self.by_hash.len(), self.by_age.len());
    }

    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_holds_no_more_than_its_byte_bound() {
        let mut c = BodyCache::new(10);
        for i in 0..10u8 {
            let body = Bytes::from(vec![i; 4]);
            c.insert(Hash32::of(&body), body);
            assert!(c.bytes() <= 10);
        }
        let last = Bytes::from(vec![9u8; 4]);
        assert_eq!(c.get(&Hash32::of(&last)), Some(last));
        let first = Bytes::from(vec![0u8; 4]);
        assert_eq!(c.get(&Hash32::of(&first)), None);
    }

    #[test]
    fn the_least_recently_used_body_goes_first() {
        let mut c = BodyCache::new(8);
        let a = Bytes::from_static(b"aaaa");
        let b = Bytes::from_static(b"bbbb");
        c.insert(Hash32::of(&a), a.clone());
        c.insert(Hash32::of(&b), b.clone());
        c.get(&Hash32::of(&a));
        let d = Bytes::from_static(b"dddd");
        c.insert(Hash32::of(&d), d);
        assert!(c.get(&Hash32::of(&a)).is_some());
        assert!(c.get(&Hash32::of(&b)).is_none());
    }

    #[test]
    fn a_body_over_the_bound_is_not_kept() {
        let mut c = BodyCache::new(3);
        let big = Bytes::from_static(b"toolong");
        c.insert(Hash32::of(&big), big.clone());
        assert_eq!(c.get(&Hash32::of(&big)), None);
        assert_eq!(c.bytes(), 0);
    }
}
