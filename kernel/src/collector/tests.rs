//! The collector against an in-memory bucket: what a drop keeps, what it deletes, and the
//! generation fence.

use super::*;
use crate::blob::Generation;
use crate::effect::Effect;
use crate::format::{Checkpoint, DOCUMENTS_PER_SHARD_TARGET};
use crate::ids::WorldId;
use crate::io::RetryPolicy;
use crate::testkit::{keys, MemStore};
use crate::world::policy::{Policy, PolicyRules};
use bytes::Bytes;
use core::time::Duration;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::collections::BTreeMap;

const MINUTE_US: u64 = 60_000_000;
const HOUR_US: u64 = 60 * MINUTE_US;

struct Bench {
    store: MemStore,
    collector: Collector,
    io: Io,
    now: Instant,
    /// Each checkpoint's layout, as `checkpoint` wrote it.
    bits: BTreeMap<u64, u8>,
}

impl Bench {
    fn new() -> Bench {
        let config = Config::default();
        let io = Io::new(
            ChaCha8Rng::seed_from_u64(1),
            RetryPolicy {
                base: Duration::from_millis(20),
                cap: Duration::from_secs(1),
                hedge_after: Duration::ZERO,
            },
        );
        Bench {
            store: MemStore::default(),
            collector: Collector::new(&config, keys()),
            io,
            now: Instant::ZERO,
            bits: BTreeMap::new(),
        }
    }

    /// Writes the checkpoint at `next_sequence` using `shards`, at store time `at_us`:
    /// its shards, root and checkpoint object (a shard already stored is left as it is).
    fn checkpoint(&mut self, next_sequence: u64, shards: &[u8], at_us: u64) -> BTreeSet<Hash32> {
        let at = Instant::from_micros(at_us);
        let mut names = BTreeSet::new();
        let mut shard_names = Vec::new();
        for &s in shards {
            let name = Hash32::of(&[s]);
            if self.store.bytes(&keys().shard(&name)).is_none() {
                self.store.put(at, keys().shard(&name), Bytes::from(vec![s]));
            }
            shard_names.push(name);
            names.insert(name);
        }
        // One shard, or two (a world just over one shard's documents).
        let (document_count, shard_bits) = match shards.len() {
            1 => (0, 0),
            2 => (DOCUMENTS_PER_SHARD_TARGET + 1, 1),
            n => panic!("{n} shards"),
        };
        let root = Root {
            world_id: WorldId([1; 16]),
            next_sequence,
            previous_hash: Hash32::ZERO,
            document_count,
            policy: Policy { version: 0, rules: PolicyRules::default() },
            shard_bits,
            shards: shard_names,
            deltas: vec![],
            receipts_from_sequence: next_sequence,
            receipts: vec![],
            stamp: 0,
        };
        self.bits.insert(next_sequence, shard_bits);
        let root_bytes = root.encode();
        let root_name = Hash32::of(&root_bytes);
        self.store.put(at, keys().root_object(&root_name), Bytes::from(root_bytes));
        names.insert(root_name);
        let checkpoint =
            Checkpoint::full(WorldId([1; 16]), next_sequence, Hash32::ZERO, document_count, root_name);
        self.store.put(at, keys().checkpoint(next_sequence), Bytes::from(checkpoint.encode()));
        names
    }

    fn slot(&mut self, first: u64, at_us: u64) {
        self.store.put(Instant::from_micros(at_us), keys().slot(first), Bytes::from(vec![first as u8]));
    }

    /// Runs a drop begun at store time `start_us` after writing `next_sequence` to its end,
    /// carrying out every call at once.
    fn drop_at(&mut self, start_us: u64, next_sequence: u64, names: BTreeSet<Hash32>) {
        self.now = Instant::from_micros(start_us);
        let shard_bits = self.bits[&next_sequence];
        self.collector.start(start_us, Written { next_sequence, shard_bits, names });
        self.collector.pump(self.now, &mut self.io);
        while let Some(effect) = self.io.effects.pop_front() {
            let Effect::Blob { id, op } = effect else { panic!("only calls") };
            let result = self.store.apply(self.now, &op);
            self.answer(id, result);
        }
        assert!(!self.collector.is_running(), "the drop ran to its end");
    }

    fn answer(&mut self, id: crate::ids::BlobOpId, result: BlobResult) {
        let Some((call, result)) = self.io.complete(id, result) else { return };
        let Purpose::Collect(what) = call.purpose.clone() else { panic!("a collector call") };
        self.collector.on_done(self.now, what, call, result, &mut self.io);
    }

    /// Stores one body segment part at store time `at_us`; its key.
    fn segment(&mut self, bits: u8, window: u64, part: u32, at_us: u64) -> String {
        let key = keys().segment(&SegmentName { bits, label: 0, window, part });
        self.store.put(Instant::from_micros(at_us), key.clone(), Bytes::from(vec![part as u8]));
        key
    }

    /// Carries out calls until none is left, rewriting `doomed` (a freshen) just before
    /// its delete is carried out; whether that delete was asked for.
    fn run_rewriting_before_its_delete(&mut self, doomed: &str) -> bool {
        let mut asked = false;
        while let Some(effect) = self.io.effects.pop_front() {
            let Effect::Blob { id, op } = effect else { panic!("only calls") };
            if matches!(&op, BlobOp::Delete { key, .. } if key == doomed) {
                let (bytes, g, _) = self.store.objects[doomed].clone();
                let rewrite =
                    BlobOp::Rewrite { key: doomed.to_owned(), bytes, if_generation: Generation::from(g) };
                assert!(self.store.apply(self.now, &rewrite).is_ok());
                asked = true;
            }
            let result = self.store.apply(self.now, &op);
            self.answer(id, result);
        }
        asked
    }

    fn has(&self, key: &str) -> bool {
        self.store.bytes(key).is_some()
    }
}

fn shard(s: u8) -> String {
    keys().shard(&Hash32::of(&[s]))
}

#[test]
fn the_newest_three_are_kept_and_older_ones_past_the_grace_are_dropped_with_what_only_they_use() {
    let mut b = Bench::new();
    b.checkpoint(10, &[1, 2], 0);
    b.checkpoint(20, &[2, 3], HOUR_US);
    b.checkpoint(30, &[3, 4], 2 * HOUR_US);
    b.checkpoint(40, &[4, 5], 3 * HOUR_US);
    let names = b.checkpoint(50, &[5, 6], 4 * HOUR_US);
    b.drop_at(4 * HOUR_US + MINUTE_US, 50, names);
    assert!(!b.has(&keys().checkpoint(10)) && !b.has(&keys().checkpoint(20)));
    for kept in [30, 40, 50] {
        assert!(b.has(&keys().checkpoint(kept)), "checkpoint {kept} kept");
    }
    assert!(!b.has(&shard(1)) && !b.has(&shard(2)), "used only by dropped checkpoints");
    for s in 3..=6 {
        assert!(b.has(&shard(s)), "shard {s} is used by a kept checkpoint");
    }
    let st = &b.collector.stats;
    assert_eq!((st.deleted_checkpoints, st.deleted_shards, st.deleted_roots), (2, 2, 2));
    assert_eq!(st.drops_finished, 1);
}

#[test]
fn a_checkpoint_whose_successor_is_younger_than_the_grace_is_kept() {
    let mut b = Bench::new();
    b.checkpoint(10, &[1], 0);
    b.checkpoint(20, &[2], HOUR_US);
    b.checkpoint(30, &[3], 2 * HOUR_US);
    b.checkpoint(40, &[4], 3 * HOUR_US);
    // 50 is five minutes old at the drop: 40 is kept beside the newest three.
    let names = b.checkpoint(50, &[5], 3 * HOUR_US + 55 * MINUTE_US);
    b.checkpoint(60, &[6], 3 * HOUR_US + 57 * MINUTE_US);
    b.checkpoint(70, &[7], 3 * HOUR_US + 58 * MINUTE_US);
    b.drop_at(4 * HOUR_US, 50, names);
    assert!(b.has(&keys().checkpoint(40)) && b.has(&shard(4)));
    assert!(!b.has(&keys().checkpoint(30)) && !b.has(&shard(3)));
}

#[test]
fn an_unused_shard_younger_than_the_grace_stays() {
    let mut b = Bench::new();
    b.checkpoint(10, &[1], 0);
    b.checkpoint(20, &[2], HOUR_US);
    b.checkpoint(30, &[3], 2 * HOUR_US);
    let names = b.checkpoint(40, &[4], 3 * HOUR_US);
    // Left by a run that has not written its checkpoint yet.
    let orphan = Hash32::of(&[9]);
    b.store.put(
        Instant::from_micros(3 * HOUR_US - 10 * MINUTE_US),
        keys().shard(&orphan),
        Bytes::from_static(&[9]),
    );
    b.drop_at(3 * HOUR_US, 40, names);
    assert!(b.has(&keys().shard(&orphan)), "10 minutes old: inside the grace");
    assert!(!b.has(&shard(1)));
}

#[test]
fn a_shard_freshened_after_the_listing_survives_its_delete() {
    let mut b = Bench::new();
    b.checkpoint(10, &[1], 0);
    b.checkpoint(20, &[2], HOUR_US);
    b.checkpoint(30, &[3], 2 * HOUR_US);
    let names = b.checkpoint(40, &[4], 3 * HOUR_US);
    b.now = Instant::from_micros(3 * HOUR_US);
    b.collector.start(3 * HOUR_US, Written { next_sequence: 40, shard_bits: 0, names });
    b.collector.pump(b.now, &mut b.io);
    // Carry out calls until the shard's delete is asked for, then freshen the shard first.
    let fenced = b.run_rewriting_before_its_delete(&shard(1));
    assert!(fenced, "the drop asked to delete shard 1");
    assert!(b.has(&shard(1)), "the delete at the listed generation failed");
    assert_eq!(b.collector.stats.fenced_deletes, 1);
    assert_eq!(b.io.marks.count(crate::marks::Mark::DeleteFenced), 1);
}

#[test]
fn slots_covered_by_the_oldest_kept_checkpoint_go_once_past_the_retention_oldest_first() {
    let mut b = Bench::new();
    for first in 1..8 {
        b.slot(first, first * HOUR_US);
    }
    b.checkpoint(5, &[1], 5 * HOUR_US);
    b.checkpoint(6, &[2], 6 * HOUR_US);
    let names = b.checkpoint(7, &[3], 7 * HOUR_US);
    // At 27 h, slots 1 to 3 are over 24 hours old; 4 is covered but younger.
    b.drop_at(27 * HOUR_US + MINUTE_US, 7, names);
    for first in 1..=3 {
        assert!(!b.has(&keys().slot(first)), "slot {first} collected");
    }
    for first in 4..8 {
        assert!(b.has(&keys().slot(first)), "slot {first} retained");
    }
    assert_eq!(b.collector.stats.deleted_slots, 3);
}

#[test]
fn slots_the_oldest_kept_checkpoint_does_not_cover_stay_however_old() {
    let mut b = Bench::new();
    for first in 1..6 {
        b.slot(first, first * HOUR_US);
    }
    let names = b.checkpoint(3, &[1], 6 * HOUR_US);
    b.drop_at(100 * HOUR_US, 3, names);
    assert!(!b.has(&keys().slot(1)) && !b.has(&keys().slot(2)));
    for first in 3..6 {
        assert!(b.has(&keys().slot(first)), "slot {first} is after the checkpoint");
    }
}

#[test]
fn checkpoint_zero_is_never_dropped() {
    let mut b = Bench::new();
    let zero = Checkpoint::zero(WorldId([1; 16]), Hash32::ZERO);
    b.store.put(Instant::ZERO, keys().checkpoint(1), Bytes::from(zero.encode()));
    b.checkpoint(10, &[1], HOUR_US);
    b.checkpoint(20, &[2], 2 * HOUR_US);
    b.checkpoint(30, &[3], 3 * HOUR_US);
    let names = b.checkpoint(40, &[4], 4 * HOUR_US);
    b.drop_at(5 * HOUR_US, 40, names);
    assert!(b.has(&keys().checkpoint(1)));
    assert!(!b.has(&keys().checkpoint(10)));
}

#[test]
fn a_backend_without_conditional_deletes_turns_collection_off() {
    let mut b = Bench::new();
    b.checkpoint(10, &[1], 0);
    b.checkpoint(20, &[2], HOUR_US);
    b.checkpoint(30, &[3], 2 * HOUR_US);
    let names = b.checkpoint(40, &[4], 3 * HOUR_US);
    b.now = Instant::from_micros(4 * HOUR_US);
    b.collector.start(4 * HOUR_US, Written { next_sequence: 40, shard_bits: 0, names: names.clone() });
    b.collector.pump(b.now, &mut b.io);
    while let Some(effect) = b.io.effects.pop_front() {
        let Effect::Blob { id, op } = effect else { panic!("only calls") };
        let result = match op {
            BlobOp::Delete { .. } => Err(BlobError::Unsupported),
            other => b.store.apply(b.now, &other),
        };
        b.answer(id, result);
    }
    assert!(b.collector.stats.off);
    assert!(b.has(&shard(1)), "nothing deleted");
    b.collector.start(5 * HOUR_US, Written { next_sequence: 40, shard_bits: 0, names });
    assert!(!b.collector.is_running(), "no drop once off");
}

#[test]
fn a_kept_checkpoint_that_cannot_be_read_abandons_the_drop_before_any_delete() {
    let mut b = Bench::new();
    b.checkpoint(10, &[1], 0);
    b.checkpoint(20, &[2], HOUR_US);
    b.checkpoint(30, &[3], 2 * HOUR_US);
    let names = b.checkpoint(40, &[4], 3 * HOUR_US);
    b.store.objects.remove(&keys().checkpoint(30));
    b.store.put(Instant::from_micros(2 * HOUR_US), keys().checkpoint(30), Bytes::from_static(b"damaged"));
    b.drop_at(4 * HOUR_US, 40, names);
    assert_eq!(b.collector.stats.drops_abandoned, 1);
    assert_eq!(b.collector.stats.deleted(), 0);
    assert!(b.has(&shard(1)));
}

#[test]
fn a_segment_window_a_newer_whole_window_superseded_goes_once_past_the_grace() {
    let mut b = Bench::new();
    let names = b.checkpoint(40, &[4], 0);
    let superseded = [b.segment(0, 1, 0, 0), b.segment(0, 1, 1, 0)];
    let newest = [b.segment(0, 2, 0, HOUR_US), b.segment(0, 2, 1, HOUR_US)];
    b.drop_at(3 * HOUR_US, 40, names);
    assert!(superseded.iter().all(|k| !b.has(k)), "window 1 is superseded and old");
    assert!(newest.iter().all(|k| b.has(k)), "the newest whole window stays, however old");
    assert_eq!(b.collector.stats.deleted_segments, 2);
    assert_eq!(b.io.marks.count(crate::marks::Mark::SegmentPartCollected), 2);
}

#[test]
fn a_superseded_segment_window_younger_than_the_grace_stays() {
    let mut b = Bench::new();
    let names = b.checkpoint(40, &[4], 0);
    let superseded = b.segment(0, 1, 0, 3 * HOUR_US - 10 * MINUTE_US);
    b.segment(0, 2, 0, 3 * HOUR_US - 5 * MINUTE_US);
    b.drop_at(3 * HOUR_US, 40, names);
    assert!(b.has(&superseded), "10 minutes old: inside the grace");
    assert_eq!(b.collector.stats.deleted_segments, 0);
}

#[test]
fn segment_parts_of_a_layout_no_kept_checkpoint_has_go_whatever_their_window() {
    let mut b = Bench::new();
    let names = b.checkpoint(40, &[4], 0);
    // The kept checkpoint has one shard (bits 0): labels of bits 1 belong to no kept layout.
    let other = [b.segment(1, 7, 0, 0), b.segment(1, 7, 1, 0)];
    let young = b.segment(1, 8, 1, 3 * HOUR_US - MINUTE_US);
    let ours = b.segment(0, 7, 0, 0);
    b.drop_at(3 * HOUR_US, 40, names);
    assert!(other.iter().all(|k| !b.has(k)), "another layout's newest whole window goes too");
    assert!(b.has(&young), "inside the grace");
    assert!(b.has(&ours), "the kept layout's newest whole window");
    assert_eq!(b.collector.stats.deleted_segments, 2);
}

#[test]
fn a_newer_segment_window_without_part_zero_does_not_supersede_the_whole_one() {
    let mut b = Bench::new();
    let names = b.checkpoint(40, &[4], 0);
    let older = b.segment(0, 1, 0, 0);
    let whole = [b.segment(0, 2, 0, 0), b.segment(0, 2, 1, 0)];
    // A writer that has not yet created part 0 (it is created last), or never will.
    let partial = b.segment(0, 3, 1, 0);
    b.drop_at(3 * HOUR_US, 40, names);
    assert!(!b.has(&older), "superseded by window 2");
    assert!(whole.iter().all(|k| b.has(k)), "window 2 is still the newest whole one");
    assert!(b.has(&partial), "newer than the newest whole window");
}

#[test]
fn a_label_without_a_whole_segment_window_keeps_every_part() {
    let mut b = Bench::new();
    let names = b.checkpoint(40, &[4], 0);
    let parts = [b.segment(0, 1, 1, 0), b.segment(0, 2, 1, 0)];
    b.drop_at(3 * HOUR_US, 40, names);
    assert!(parts.iter().all(|k| b.has(k)));
}

#[test]
fn a_key_under_segments_that_names_no_part_stays() {
    let mut b = Bench::new();
    let names = b.checkpoint(40, &[4], 0);
    b.segment(0, 1, 0, 0);
    b.segment(0, 2, 0, 0);
    let strays = [
        format!("{}00-00000000/000000000000000A/0000", keys().segments_prefix()),
        format!("{}00-00000000/0000000000000001/0000/x", keys().segments_prefix()),
        format!("{}notes", keys().segments_prefix()),
    ];
    for k in &strays {
        b.store.put(Instant::ZERO, k.clone(), Bytes::from_static(b"stray"));
    }
    b.drop_at(3 * HOUR_US, 40, names);
    assert!(strays.iter().all(|k| b.has(k)), "not a segment part: not ours");
    assert_eq!(b.collector.stats.deleted_segments, 1, "window 1 still went");
}

#[test]
fn segment_labels_are_judged_whole_across_listing_pages() {
    let mut b = Bench::new();
    let config = Config { list_page_max: 1, ..Config::default() };
    b.collector = Collector::new(&config, keys());
    let names = b.checkpoint(40, &[4], 0);
    let key = |bits, label, window, part| keys().segment(&SegmentName { bits, label, window, part });
    for (label, window, part) in [(0, 1, 0), (0, 2, 0), (0, 2, 1), (1, 1, 0), (1, 1, 1), (1, 3, 1)] {
        b.store.put(Instant::ZERO, key(0, label, window, part), Bytes::from_static(b"part"));
    }
    b.drop_at(3 * HOUR_US, 40, names);
    assert!(!b.has(&key(0, 0, 1, 0)), "label 0's window 1 is superseded by window 2");
    for (label, window, part) in [(0, 2, 0), (0, 2, 1), (1, 1, 0), (1, 1, 1), (1, 3, 1)] {
        assert!(b.has(&key(0, label, window, part)), "label {label} window {window} part {part}");
    }
    assert_eq!(b.collector.stats.deleted_segments, 1);
}

#[test]
fn a_segment_part_rewritten_after_the_listing_survives_its_delete() {
    let mut b = Bench::new();
    let names = b.checkpoint(40, &[4], 0);
    let superseded = b.segment(0, 1, 0, 0);
    b.segment(0, 2, 0, 0);
    b.now = Instant::from_micros(3 * HOUR_US);
    b.collector.start(3 * HOUR_US, Written { next_sequence: 40, shard_bits: 0, names });
    b.collector.pump(b.now, &mut b.io);
    let fenced = b.run_rewriting_before_its_delete(&superseded);
    assert!(fenced, "the drop asked to delete the superseded part");
    assert!(b.has(&superseded), "the delete at the listed generation failed");
    let st = &b.collector.stats;
    assert_eq!((st.fenced_deletes, st.deleted_segments), (1, 0));
}
