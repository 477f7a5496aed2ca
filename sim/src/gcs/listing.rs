//! Listings that are not snapshots (issue 13). A local directory is walked while writers
//! create names in it, in no particular order: a listing may hold slot N+1 without slot N,
//! and its entries may come unsorted. GCS and S3 list consistently, but a kernel must not
//! depend on it, so every fault profile turns this on.
//!
//! The model: a listing is a walk that visits each name at some instant while it is in
//! flight, and a walk takes time (up to [`Listings::walk_max`] on top of the call's
//! latency). Every object created before the listing was sent is listed (what the kernel's
//! freshness rests on: a listing sent at t shows every slot created before t); each object
//! created while it was in flight (after it was sent, before the store answered) is left
//! out at [`Listings::in_flight_miss_rate`], independently, so a re-list finds it. A page
//! comes shuffled at [`Listings::unsorted_rate`]. Deletes are not modelled (a deleted name
//! is never listed).
//!
//! Deterministic: its own random stream, drawn only for listings, in apply order.

use core::time::Duration;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use slotlog_kernel::blob::ObjectMeta;
use slotlog_kernel::time::Instant;

use crate::rng::SimRng;
use crate::time::micros;

/// How listings stray from snapshots.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Listings {
    /// Each object created while a listing is in flight is left out at this rate.
    pub in_flight_miss_rate: f64,
    /// A page is shuffled at this rate (1.0: a local directory's walk).
    pub unsorted_rate: f64,
    /// A walk adds a uniform draw in [0, this] to the listing's latency: the longer the
    /// walk, the more names are made during it.
    pub walk_max: Duration,
}

impl Default for Listings {
    fn default() -> Self {
        Self::snapshots()
    }
}

impl Listings {
    /// Every listing a snapshot in key order (GCS and S3 as documented).
    pub fn snapshots() -> Self {
        Listings { in_flight_miss_rate: 0.0, unsorted_rate: 0.0, walk_max: Duration::ZERO }
    }

    /// The default GCS profile: now and then a page strays (assumed: rare enough not to
    /// change the record's rates, often enough that every sweep meets one).
    pub fn rare() -> Self {
        Listings { in_flight_miss_rate: 0.1, unsorted_rate: 0.05, walk_max: Duration::from_millis(50) }
    }

    /// The fault profiles: a local directory under writers (half of what is made during a
    /// walk of up to 300 ms is missed, every page unsorted).
    pub fn local() -> Self {
        Listings { in_flight_miss_rate: 0.5, unsorted_rate: 1.0, walk_max: Duration::from_millis(300) }
    }

    /// Whether every listing is a snapshot: sorted, whole, taken at one instant.
    pub fn is_snapshot(&self) -> bool {
        self.in_flight_miss_rate == 0.0 && self.unsorted_rate == 0.0 && self.walk_max.is_zero()
    }

    pub(crate) fn validate(&self) {
        for rate in [self.in_flight_miss_rate, self.unsorted_rate] {
            assert!((0.0..=1.0).contains(&rate), "listing rate {rate} outside [0, 1]");
        }
    }
}

/// What the store remembers to make listings stray: when each listing in flight was sent,
/// and the objects created since the oldest of them was.
#[derive(Clone, Debug, Default)]
pub(crate) struct Walks {
    /// Listings in flight: when each was sent, by the instant it applies.
    sent: BTreeMap<Instant, Vec<u64>>,
    /// Creates since the oldest listing in flight was sent, oldest first: (time, key).
    created: VecDeque<(u64, String)>,
}

impl Walks {
    /// How much longer this listing's walk makes it.
    pub fn walk_us(config: &Listings, rng: &mut SimRng) -> u64 {
        let max_us = micros(config.walk_max);
        if max_us == 0 {
            return 0;
        }
        rng.below(max_us + 1)
    }

    /// A listing sent at `sent` applies at `apply_at`.
    pub fn sent(&mut self, sent: Instant, apply_at: Instant) {
        self.sent.entry(apply_at).or_default().push(sent.as_micros());
    }

    /// An object was created at `at_us`: remembered while some listing in flight may walk
    /// past it.
    pub fn created(&mut self, at_us: u64, key: &str) {
        if !self.sent.is_empty() {
            self.created.push_back((at_us, key.to_owned()));
        }
    }

    /// The page a listing applying at `at` answers, from the snapshot `entries`; returns
    /// how many entries it left out and whether it shuffled the page.
    pub fn page(
        &mut self,
        config: &Listings,
        rng: &mut SimRng,
        at: Instant,
        entries: &mut Vec<ObjectMeta>,
    ) -> (u64, bool) {
        let listed = entries.len();
        // Listings that never applied (the embedder dropped them) are forgotten.
        let applying = self.sent.split_off(&at);
        self.sent = applying;
        let sent_us = match self.sent.get_mut(&at) {
            Some(times) => {
                // Two listings applying at one instant: the later sent is answered first
                // (fewer objects in its window), so neither misses what predates it.
                let i = (0..times.len()).max_by_key(|&i| times[i]).expect("non-empty");
                let sent_us = times.swap_remove(i);
                if times.is_empty() {
                    self.sent.remove(&at);
                }
                Some(sent_us)
            }
            None => None,
        };
        if let Some(sent_us) = sent_us {
            let in_flight: BTreeSet<&str> =
                self.created.iter().filter(|(t, _)| *t > sent_us).map(|(_, k)| k.as_str()).collect();
            if !in_flight.is_empty() && config.in_flight_miss_rate > 0.0 {
                entries.retain(|e| {
                    !(in_flight.contains(e.key.as_str()) && rng.chance(config.in_flight_miss_rate))
                });
            }
        }
        let missed = (listed - entries.len()) as u64;
        let unsorted = config.unsorted_rate > 0.0 && rng.chance(config.unsorted_rate);
        if unsorted {
            for i in (1..entries.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                entries.swap(i, j);
            }
        }
        self.forget_old();
        (missed, unsorted)
    }

    /// Creates older than every listing in flight can no longer be missed.
    fn forget_old(&mut self) {
        let oldest_us = self.sent.values().flatten().copied().min();
        while self.created.front().is_some_and(|(t, _)| oldest_us.is_none_or(|o| *t <= o)) {
            self.created.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{GcsConfig, ProfileKind, SimGcs};
    use super::*;
    use bytes::Bytes;
    use slotlog_kernel::blob::{BlobOp, BlobOutcome};

    fn keys_of(result: slotlog_kernel::blob::BlobResult) -> Vec<String> {
        match result {
            Ok(BlobOutcome::Listed { entries, .. }) => entries.into_iter().map(|e| e.key).collect(),
            other => panic!("expected a listing, got {other:?}"),
        }
    }

    fn create(gcs: &mut SimGcs, at_ms: u64, key: &str) {
        let op = BlobOp::Create { key: key.into(), bytes: Bytes::from_static(b"x") };
        assert!(gcs.apply(Instant::from_millis(at_ms), &op).is_ok());
    }

    fn store(listings: Listings, seed: u64) -> SimGcs {
        SimGcs::new(GcsConfig { listings, ..GcsConfig::of(ProfileKind::Fast) }, seed)
    }

    fn list_op() -> BlobOp {
        BlobOp::List { prefix: "log/".into(), start_after: None, limit: 100 }
    }

    /// Lists at 1 s: objects made before the listing was sent, and during its flight.
    fn list_during_creates(gcs: &mut SimGcs) -> Vec<String> {
        for i in 0..10 {
            create(gcs, 100 + i, &format!("log/{i:02}"));
        }
        let plan = gcs.submit(Instant::from_millis(1_000), &list_op());
        let apply_at = plan.apply_at.expect("applies");
        // Ten more land while the listing is in flight, just before it applies.
        for i in 10..20 {
            let at = Instant::from_micros(apply_at.as_micros() - 20 + i);
            let op = BlobOp::Create { key: format!("log/{i:02}"), bytes: Bytes::from_static(b"x") };
            assert!(gcs.apply(at, &op).is_ok());
        }
        keys_of(gcs.apply(apply_at, &list_op()))
    }

    #[test]
    fn a_snapshot_lists_everything_in_key_order() {
        let mut gcs = store(Listings::snapshots(), 1);
        let listed = list_during_creates(&mut gcs);
        let expected: Vec<String> = (0..20).map(|i| format!("log/{i:02}")).collect();
        assert_eq!(listed, expected);
    }

    #[test]
    fn a_walk_lists_what_predates_it_and_misses_some_made_during_it_which_a_relist_finds() {
        let mut gcs =
            store(Listings { in_flight_miss_rate: 0.5, unsorted_rate: 0.0, walk_max: Duration::ZERO }, 3);
        let listed = list_during_creates(&mut gcs);
        let before: Vec<String> = (0..10).map(|i| format!("log/{i:02}")).collect();
        assert_eq!(listed[..10], before[..], "everything made before it was sent is listed");
        assert!(listed.len() < 20, "some made during its flight are missed: {listed:?}");
        assert!(listed.len() > 10, "and some are not: {listed:?}");
        // A listing sent after they were made lists them all.
        let plan = gcs.submit(Instant::from_millis(2_000), &list_op());
        let again = keys_of(gcs.apply(plan.apply_at.expect("applies"), &list_op()));
        assert_eq!(again.len(), 20);
    }

    #[test]
    fn an_unsorted_page_holds_the_same_entries_in_another_order() {
        let mut gcs =
            store(Listings { in_flight_miss_rate: 0.0, unsorted_rate: 1.0, walk_max: Duration::ZERO }, 5);
        let listed = list_during_creates(&mut gcs);
        let mut sorted = listed.clone();
        sorted.sort();
        assert_ne!(listed, sorted, "shuffled");
        assert_eq!(sorted, (0..20).map(|i| format!("log/{i:02}")).collect::<Vec<_>>());
    }

    #[test]
    fn the_same_seed_strays_the_same_way() {
        let config = Listings::local();
        let a = list_during_creates(&mut store(config, 9));
        let b = list_during_creates(&mut store(config, 9));
        assert_eq!(a, b);
    }
}
