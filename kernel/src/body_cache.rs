//! Recent document bodies by hash, so an append to a hot document reads no blob.
//! Bounded by bytes; the least recently used body goes first.

use crate::hash::Hash32;
use bytes::Bytes;
use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;
use std::collections::VecDeque;

/// Superseded uses the age order may hold beyond twice the bodies before it drops them.
const SUPERSEDED_USES_SLACK: usize = 16;

pub(crate) struct BodyCache {
    bytes_max: usize,
    bytes: usize,
    tick: u64,
    /// Looked up, never walked: a hash map (the keys are BLAKE3 hashes, so no caller can
    /// choose them to collide). Each body with the tick of its last use.
    by_hash: FxHashMap<Hash32, (Bytes, u64)>,
    /// Uses as `(tick, hash)`, oldest first. A use is current when its tick is the one
    /// `by_hash` holds for the body; one a later use superseded stays until it reaches the
    /// front, where it is skipped. The ticks only grow, so a deque keeps them in order
    /// (a B-tree of ticks cost every body written an insert and a removal: 1% of `run
    /// single`), and the least recently used body is the first current use.
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

    /// Notes a use of `hash` at the current tick (its earlier use, if any, superseded).
    fn used(&mut self, hash: Hash32) {
        self.by_age.push_back((self.tick, hash));
        // Superseded uses are dropped when they pass the bodies held: a body used again
        // and again, never evicted, leaves a use behind each time.
        if self.by_age.len() > 2 * self.by_hash.len() + SUPERSEDED_USES_SLACK {
            let by_hash = &self.by_hash;
            self.by_age.retain(|(tick, hash)| by_hash.get(hash).is_some_and(|(_, t)| t == tick));
        }
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
            let (tick, oldest) = self.by_age.pop_front().expect("bytes counted means current uses held");
            if let Entry::Occupied(held) = self.by_hash.entry(oldest) {
                if held.get().1 == tick {
                    self.bytes -= held.remove().0.len();
                }
            }
        }
        invariant!(self.bytes <= self.bytes_max);
        invariant!(self.by_hash.len() <= self.by_age.len());
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

    /// Against a list in order of use, most recent last: the same bodies held after each
    /// insert or use, with bodies used again and again while others come and go.
    #[test]
    fn the_cache_holds_what_a_list_in_order_of_use_holds() {
        let (bound, mut state) = (64usize, 7u64);
        let mut c = BodyCache::new(bound);
        let mut reference: Vec<(Hash32, Bytes)> = Vec::new();
        for step in 0..5_000u32 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let pick = (state >> 33) as u32;
            // A few hot bodies, many cold ones, lengths 1 to 24.
            let id = if pick.is_multiple_of(3) { pick % 4 } else { pick % 200 };
            let body = Bytes::from(vec![id as u8; 1 + (id as usize * 7) % 24]);
            let hash = Hash32::of(&body);
            if step % 5 == 4 {
                let got = c.get(&hash);
                let at = reference.iter().position(|(h, _)| *h == hash);
                assert_eq!(got.is_some(), at.is_some(), "step {step}");
                if let Some(at) = at {
                    let used = reference.remove(at);
                    reference.push(used);
                }
            } else {
                c.insert(hash, body.clone());
                reference.retain(|(h, _)| *h != hash);
                reference.push((hash, body));
                while reference.iter().map(|(_, b)| b.len()).sum::<usize>() > bound {
                    reference.remove(0);
                }
            }
            let mut held: Vec<Hash32> = c.by_hash.keys().copied().collect();
            let mut expected: Vec<Hash32> = reference.iter().map(|(h, _)| *h).collect();
            held.sort();
            expected.sort();
            assert_eq!(held, expected, "step {step}");
            assert!(
                c.by_age.len() <= 2 * c.by_hash.len() + SUPERSEDED_USES_SLACK + 1,
                "superseded uses are dropped"
            );
        }
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
