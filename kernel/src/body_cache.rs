//! Recent document bodies by hash, so an append to a hot document reads no blob.
//! Bounded by bytes; the least recently used body goes first.

use crate::hash::Hash32;
use bytes::Bytes;
use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;
use std::collections::VecDeque;

/// Stale places the age order may hold beyond one a body before it drops them.
const STALE_PLACES_SLACK: usize = 16;

pub(crate) struct BodyCache {
    bytes_max: usize,
    bytes: usize,
    tick: u64,
    /// Looked up, never walked: a hash map (the keys are BLAKE3 hashes, so no caller can
    /// choose them to collide). Each body with the tick of its last use.
    by_hash: FxHashMap<Hash32, (Bytes, u64)>,
    /// Bodies in the order of their uses, oldest first. A body used again is pushed
    /// again and its older place goes stale (its tick is no longer the body's), skipped
    /// when reached: a B-tree by tick kept one place a body but cost a search a use (a
    /// percent of a `single` run).
    by_age: VecDeque<(u64, Hash32)>,
}

impl BodyCache {
    pub fn new(bytes_max: usize) -> BodyCache {
        BodyCache { bytes_max, bytes: 0, tick: 0, by_hash: FxHashMap::default(), by_age: VecDeque::new() }
    }

    /// Looks a body up and counts it as used (what `insert` does to a body it holds).
    #[cfg(test)]
    pub fn get(&mut self, hash: &Hash32) -> Option<Bytes> {
        let (body, age) = self.by_hash.get_mut(hash)?;
        self.tick += 1;
        *age = self.tick;
        let body = body.clone();
        self.used(*hash);
        Some(body)
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
            Entry::Occupied(mut held) => held.get_mut().1 = self.tick,
            Entry::Vacant(v) => {
                self.bytes += body.len();
                v.insert((body, self.tick));
            }
        }
        self.used(hash);
        while self.bytes > self.bytes_max {
            let (tick, oldest) = self.by_age.pop_front().expect("bytes counted means places held");
            if let Entry::Occupied(held) = self.by_hash.entry(oldest) {
                if held.get().1 == tick {
                    self.bytes -= held.remove().0.len();
                }
            }
        }
        debug_assert!(self.bytes <= self.bytes_max);
    }

    /// Places `hash`, just given the current tick, last in the age order; drops the
    /// stale places once they outnumber the live ones, so the order holds at most about
    /// twice as many places as bodies.
    fn used(&mut self, hash: Hash32) {
        self.by_age.push_back((self.tick, hash));
        if self.by_age.len() > 2 * self.by_hash.len() + STALE_PLACES_SLACK {
            let by_hash = &self.by_hash;
            self.by_age.retain(|(tick, hash)| by_hash.get(hash).is_some_and(|(_, t)| t == tick));
        }
        debug_assert!(self.by_hash.len() <= self.by_age.len());
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
    fn a_body_used_again_and_again_leaves_a_bounded_order() {
        let mut c = BodyCache::new(8);
        let a = Bytes::from_static(b"aaaa");
        let b = Bytes::from_static(b"bbbb");
        c.insert(Hash32::of(&a), a.clone());
        c.insert(Hash32::of(&b), b.clone());
        for _ in 0..1_000 {
            c.insert(Hash32::of(&a), a.clone());
            assert!(c.by_age.len() <= 2 * c.by_hash.len() + STALE_PLACES_SLACK + 1);
        }
        // `b` is the least recently used: a third body pushes it out, not `a`, past
        // every stale place of `a` ahead of it.
        let d = Bytes::from_static(b"dddd");
        c.insert(Hash32::of(&d), d.clone());
        assert_eq!(c.get(&Hash32::of(&b)), None);
        assert_eq!(c.get(&Hash32::of(&a)), Some(a));
        assert_eq!(c.get(&Hash32::of(&d)), Some(d));
        assert_eq!(c.bytes(), 8);
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
