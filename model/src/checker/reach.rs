//! Collection judged from the store's name history (SPEC 10.15, issue 10): nothing a
//! kept checkpoint or a retained slot reaches is ever missing. Kept is the spec's rule,
//! derived here from the store's own times: at any instant, the newest three full
//! checkpoints present, and any whose successor is younger than the grace. Checked at
//! every delete (of a kept checkpoint, of an object a kept checkpoint reaches, of a slot
//! the oldest kept checkpoint does not cover or younger than the retention, of any
//! content object, of a body segment part of its label's newest whole window in a kept
//! checkpoint's layout) and at every checkpoint create (everything it reaches is present).
//! Knows nothing of the collector's code.
//!
//! A checkpoint that *landed late* (created more than the grace after the slot holding the
//! sequence it covers) is the one exception: a run's look happens after that slot exists,
//! and a drop can take what a run names only if its create lands more than the grace after
//! that look (SPEC 10.15), so only such a checkpoint may reach a missing object, and its
//! writer deletes it at once, kept or not. One left in the bucket at the end is still
//! judged whole by the checkpoint rules (`CheckpointObjectMissing`).

use super::{CheckReport, Violation};
use crate::history::{NameChange, NameHistory};
use slotlog_kernel::format::{Checkpoint, Keys, Root, SegmentName};
use slotlog_kernel::time::Instant;
use std::collections::{BTreeMap, BTreeSet};

/// The ages the rules use: the world's configured grace and slot retention.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ages {
    pub grace_us: u64,
    pub slot_retention_us: u64,
}

pub(super) fn check(names: &NameHistory, keys: &Keys, ages: Ages, r: &mut CheckReport) {
    let content_prefixes = [keys.history_prefix(), keys.blobs_prefix()];
    let mut slots: Vec<(u64, Instant)> = names
        .names()
        .filter_map(|(k, events)| {
            let first = keys.parse_slot(k)?;
            let created = events.iter().find(|e| e.change == NameChange::Created)?;
            Some((first, created.at))
        })
        .collect();
    slots.sort_unstable();
    let mut segments: BTreeMap<(u8, u32), Vec<(SegmentName, &str)>> = BTreeMap::new();
    for (k, _) in names.names() {
        if let Some(n) = keys.parse_segment(k) {
            segments.entry((n.bits, n.label)).or_default().push((n, k));
        }
    }
    let judge = Judge { names, keys, ages, content_prefixes, slots, segments };
    let checkpoints: Vec<(u64, &str)> = names
        .names()
        .filter_map(|(k, _)| keys.parse_checkpoint(k).filter(|s| *s > 1).map(|s| (s, k)))
        .collect();
    for (key, events) in names.names() {
        for (i, e) in events.iter().enumerate() {
            let found = match e.change {
                // The freshen's premise (SPEC 10.15): a rewrite changes the stored bytes,
                // so a version token that is their hash moves too. Judged on every
                // freshen, since the race it fences (a drop's stale delete) is rare.
                NameChange::Rewritten if i > 0 && e.kept_bytes => {
                    Some(Violation::RewriteKeptBytes { key: key.to_owned(), at: e.at })
                }
                NameChange::Deleted => judge.delete(key, e.at, &checkpoints),
                NameChange::Created if keys.parse_checkpoint(key).is_some_and(|s| s > 1) => {
                    if judge.landed_late(key, e.at) {
                        r.checkpoints_landed_late += 1;
                        continue;
                    }
                    judge.reaches(key, e.at).err().map(|missing| Violation::CheckpointReachesMissing {
                        checkpoint: key.to_owned(),
                        missing,
                        at: e.at,
                    })
                }
                _ => None,
            };
            if let Some(v) = found {
                r.reachable_missing += 1;
                r.violation(v);
            }
        }
    }
}

struct Judge<'a> {
    names: &'a NameHistory,
    keys: &'a Keys,
    ages: Ages,
    /// Where content objects (history blocks, bodies) live: never collected.
    content_prefixes: [String; 2],
    /// Every slot name's first sequence and first creation, by first sequence.
    slots: Vec<(u64, Instant)>,
    /// Every body segment part name ever held, by bits and label.
    segments: BTreeMap<(u8, u32), Vec<(SegmentName, &'a str)>>,
}

impl Judge<'_> {
    /// The violation, if deleting `key` at `at` took something still needed.
    fn delete(&self, key: &str, at: Instant, checkpoints: &[(u64, &str)]) -> Option<Violation> {
        let keys = self.keys;
        let owned = || key.to_owned();
        if self.content_prefixes.iter().any(|p| key.starts_with(p.as_str())) {
            return Some(Violation::ContentDeleted { key: owned(), at });
        }
        let just_before = Instant::from_micros(at.as_micros().saturating_sub(1));
        let kept = self.kept(just_before, checkpoints);
        // A drop deletes only what was written more than the grace before it began, at
        // the generation it listed: a write since (a freshen) must fence the delete. On a
        // store whose version token is a hash of the bytes, only a freshen that changes
        // the bytes does (the collection-fences issue, part 1).
        if keys.parse_slot(key).is_none() {
            if let Some(written) = self.names.held_at(key, just_before).map(|e| e.at) {
                let young = written.as_micros() + self.ages.grace_us > at.as_micros();
                if young && !self.landed_late(key, written) {
                    return Some(Violation::YoungDeleted { key: owned(), written, at });
                }
            }
        }
        if let Some(part) = keys.parse_segment(key) {
            // A reader of a kept checkpoint's layout reads its label's newest whole window
            // (SPEC 10.17): only superseded windows and other layouts' parts may go.
            let newest = self.newest_whole_window(part.bits, part.label, just_before) == Some(part.window);
            let kept_layout = kept.iter().any(|(_, k)| self.shard_bits(k, just_before) == Some(part.bits));
            return (newest && kept_layout).then(|| Violation::NewestSegmentDeleted { key: owned(), at });
        }
        if let Some(sequence) = keys.parse_checkpoint(key) {
            // The create that began what the name holds (a freshen rewrites it later).
            let events = self.names.events(key).iter().take_while(|e| e.at <= just_before);
            let created = events.filter(|e| e.change == NameChange::Created).last().map_or(at, |e| e.at);
            let withdrawn = sequence > 1 && self.landed_late(key, created);
            let needed = sequence == 1 || (kept.iter().any(|(_, k)| *k == key) && !withdrawn);
            return needed.then(|| Violation::KeptCheckpointDeleted { key: owned(), at });
        }
        if let Some(first) = keys.parse_slot(key) {
            let created = self.names.held_at(key, just_before).map_or(at, |e| e.at);
            let young = created.as_micros() + self.ages.slot_retention_us > at.as_micros();
            let covered = kept.first().is_some_and(|(s, _)| first < *s);
            return (young || !covered).then(|| Violation::RetainedSlotDeleted { key: owned(), at });
        }
        for (_, checkpoint) in &kept {
            if let Ok(reached) = self.reaches(checkpoint, just_before) {
                if reached.iter().any(|k| k == key) {
                    let checkpoint = (*checkpoint).to_owned();
                    return Some(Violation::ReachableDeleted { key: owned(), checkpoint, at });
                }
            }
        }
        None
    }

    /// Whether checkpoint `key`, created at `at`, landed more than the grace after the
    /// slot holding the sequence it covers was first created.
    fn landed_late(&self, key: &str, at: Instant) -> bool {
        let Some(covered) = self.keys.parse_checkpoint(key).map(|s| s - 1) else { return false };
        let holding = self.slots.partition_point(|(first, _)| *first <= covered);
        let Some((_, slot_created)) = holding.checked_sub(1).map(|i| self.slots[i]) else { return false };
        at.as_micros() > slot_created.as_micros() + self.ages.grace_us
    }

    /// The newest window of a label whose parts present at `at` run from 0 to their
    /// highest with none missing.
    fn newest_whole_window(&self, bits: u8, label: u32, at: Instant) -> Option<u64> {
        let mut windows: BTreeMap<u64, BTreeSet<u32>> = BTreeMap::new();
        for (n, k) in self.segments.get(&(bits, label)).into_iter().flatten() {
            if self.names.held_at(k, at).is_some() {
                windows.entry(n.window).or_default().insert(n.part);
            }
        }
        let whole =
            |parts: &BTreeSet<u32>| parts.last().is_some_and(|&max| parts.len() as u64 == u64::from(max) + 1);
        windows.into_iter().rev().find(|(_, parts)| whole(parts)).map(|(w, _)| w)
    }

    /// The layout of checkpoint `key`'s root at `at`, if both are present and decode.
    fn shard_bits(&self, key: &str, at: Instant) -> Option<u8> {
        let bytes = |k: &str| self.names.held_at(k, at)?.bytes_hash.and_then(|h| self.names.bytes_of(&h));
        let root = Checkpoint::decode(bytes(key)?).ok()?.root?;
        Some(Root::decode(bytes(&self.keys.root_object(&root))?).ok()?.shard_bits)
    }

    /// The kept full checkpoints present at `at`, oldest first.
    fn kept<'k>(&self, at: Instant, checkpoints: &[(u64, &'k str)]) -> Vec<(u64, &'k str)> {
        let mut present: Vec<(u64, &str, Instant)> = checkpoints
            .iter()
            .filter_map(|(s, k)| self.names.held_at(k, at).map(|e| (*s, *k, e.at)))
            .collect();
        present.sort_by_key(|(s, _, _)| *s);
        let n = present.len();
        (0..n)
            .filter(|&i| {
                let newest_three = i + 3 >= n;
                let successor_young = present
                    .get(i + 1)
                    .is_some_and(|(_, _, t)| t.as_micros() + self.ages.grace_us > at.as_micros());
                newest_three || successor_young
            })
            .map(|i| (present[i].0, present[i].1))
            .collect()
    }

    /// The keys checkpoint `key` reaches at `at` (its root, the root's shards, deltas and
    /// receipt blocks), or the first of them missing then.
    fn reaches(&self, key: &str, at: Instant) -> Result<Vec<String>, String> {
        let held = |k: &str| {
            let event = self.names.held_at(k, at).ok_or_else(|| k.to_owned())?;
            let hash = event.bytes_hash.expect("a present name has bytes");
            Ok::<_, String>(self.names.bytes_of(&hash).cloned())
        };
        let Some(bytes) = held(key)? else { return Ok(vec![]) };
        let Some(root_name) = Checkpoint::decode(&bytes).ok().and_then(|c| c.root) else { return Ok(vec![]) };
        let root_key = self.keys.root_object(&root_name);
        let Some(root_bytes) = held(&root_key)? else { return Ok(vec![]) };
        let Ok(root) = Root::decode(&root_bytes) else { return Ok(vec![]) };
        let mut reached = vec![root_key];
        reached.extend(root.shards.iter().map(|s| self.keys.shard(s)));
        reached.extend(root.deltas.iter().map(|d| self.keys.delta(&d.block)));
        reached.extend(root.receipts.iter().map(|b| self.keys.receipts(&b.block)));
        if let Some(missing) = reached.iter().find(|k| self.names.held_at(k, at).is_none()) {
            return Err(missing.clone());
        }
        Ok(reached)
    }
}
