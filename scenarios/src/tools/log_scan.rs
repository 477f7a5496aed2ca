//! The log as `inspect` and `verify` judge it: from the marker while slot 1 is there, or,
//! once collection deleted the oldest slots (SPEC 10.15), from the oldest checkpoint the
//! retained log continues whole to its tip (a checkpoint whose drop was fenced may linger
//! below it, its slots gone; failing every one, the one the log goes furthest from). A slot that does not chain onto its predecessor is named: a
//! *forked slot* (its recorded previous-slot hash is not the hash of the slot before it),
//! such as a create by a writer that stalled past collection and landed in a freed name.
//!
//! Pure: works on the objects already read (`settle` reads what a listing missed).

use slotlog_kernel::format::{chain, scan_chain, ChainProblem, ChainScan, Checkpoint, Keys, Marker, Slot};
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::WorldId;
use slotlog_kernel::world::WorldState;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::settle::Object;
use super::{load_checkpoint, Content};

/// The checkpoint a collected log is judged from: the oldest whose sequence the retained
/// log reaches.
pub struct Anchor {
    pub key: String,
    pub next_sequence: u64,
    /// The world the checkpoint holds (None when it does not load: `problem` says why).
    pub world: Option<WorldState>,
    pub problem: Option<String>,
}

/// How a slot fails to chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ForkKind {
    /// Its previous-slot hash is not the hash of the slot before it, `predecessor`.
    NotChained { predecessor: String },
    /// It sits below the oldest checkpoint the retained log continues (`anchor`), in a
    /// name collection freed, and does not chain into that checkpoint.
    BelowCollection { anchor: String },
}

/// A slot object that does not chain onto its predecessor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fork {
    pub key: String,
    pub kind: ForkKind,
}

impl fmt::Display for Fork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ForkKind::NotChained { predecessor } => write!(
                f,
                "{} is a forked slot: not chained, its previous-slot hash is not the hash of {predecessor}",
                self.key
            ),
            ForkKind::BelowCollection { anchor } => write!(
                f,
                "{} is a forked slot: below collection, it does not chain into {anchor}, the oldest \
                 checkpoint the retained log continues (a create that landed in a collected name)",
                self.key
            ),
        }
    }
}

/// The log, judged.
pub struct LogScan {
    /// The verified chain: from the marker, or from the anchor's sequence on.
    pub chain: ChainScan,
    /// Set when the log was collected: the checkpoint the chain starts from.
    pub anchor: Option<Anchor>,
    /// Slots below the anchor still there (a drop stopped part way), chained into it.
    pub below: Vec<(Slot, Hash32)>,
    pub forks: Vec<Fork>,
}

impl LogScan {
    /// The chain is whole and nothing forked.
    pub fn is_whole(&self) -> bool {
        self.chain.problem.is_none() && self.forks.is_empty() && self.anchor_problem().is_none()
    }

    pub fn anchor_problem(&self) -> Option<&str> {
        self.anchor.as_ref().and_then(|a| a.problem.as_deref())
    }

    /// Slots read, the chain's and those below the anchor.
    pub fn slots(&self) -> impl Iterator<Item = &(Slot, Hash32)> {
        self.below.iter().chain(self.chain.slots.iter())
    }
}

/// Judges the log in `objects` (key order).
pub fn scan_log(keys: &Keys, marker: &[u8], objects: &[Object], content: Content<'_>) -> LogScan {
    let log: Vec<(&str, &[u8])> = objects
        .iter()
        .filter(|(k, _, _)| k.starts_with(&keys.log_prefix()))
        .map(|(k, b, _)| (k.as_str(), &b[..]))
        .collect();
    let world_id = Marker::decode(marker).ok().map(|m| m.world_id);
    let collected = !log.iter().any(|(k, _)| keys.parse_slot(k) == Some(1));
    let anchor = match collected {
        true => choose_anchor(keys, world_id, objects, &log),
        false => None,
    };
    let Some((key, checkpoint, chain)) = anchor else {
        let chain = scan_chain(keys, marker, log);
        let forks = break_fork(keys, &chain).into_iter().collect();
        return LogScan { chain, anchor: None, below: Vec::new(), forks };
    };
    let next_sequence = checkpoint.next_sequence;
    let previous_hash = checkpoint.previous_hash;
    let (world, problem) = match load_checkpoint(&key, checkpoint, keys, objects, content) {
        Ok(world) => (Some(world), None),
        Err(e) => (
            None,
            Some(format!("{key}, the oldest checkpoint the retained log continues, does not load: {e}")),
        ),
    };
    let mut scan = LogScan {
        chain,
        anchor: Some(Anchor { key: key.clone(), next_sequence, world, problem }),
        below: Vec::new(),
        forks: Vec::new(),
    };
    scan.forks.extend(break_fork(keys, &scan.chain));
    scan.below = chained_below(keys, next_sequence, previous_hash, &log);
    let below: BTreeSet<u64> = scan.below.iter().map(|(s, _)| s.first_sequence).collect();
    for (k, _) in &log {
        let Some(sequence) = keys.parse_slot(k) else { continue };
        if sequence < next_sequence && !below.contains(&sequence) {
            scan.forks
                .push(Fork { key: k.to_string(), kind: ForkKind::BelowCollection { anchor: key.clone() } });
        }
    }
    scan
}

/// A break in the chain is a forked slot: name it.
fn break_fork(keys: &Keys, chain: &ChainScan) -> Option<Fork> {
    let Some(ChainProblem::Break { sequence }) = chain.problem else { return None };
    let predecessor = chain.slots.last().map_or_else(
        || format!("the slot before it (sequence {})", sequence - 1),
        |(s, _)| keys.slot(s.first_sequence),
    );
    Some(Fork { key: keys.slot(sequence), kind: ForkKind::NotChained { predecessor } })
}

/// The oldest full checkpoint from which the log chains whole to its listed end; failing
/// every one, the one it chains furthest from (the oldest of those): with its chain.
fn choose_anchor(
    keys: &Keys,
    world_id: Option<WorldId>,
    objects: &[Object],
    log: &[(&str, &[u8])],
) -> Option<(String, Checkpoint, ChainScan)> {
    let mut best: Option<(String, Checkpoint, ChainScan)> = None;
    // Objects are in key order, and checkpoint keys sort by sequence.
    for (key, bytes, _) in objects.iter().filter(|o| keys.parse_checkpoint(&o.0).is_some_and(|s| s > 1)) {
        let Ok(checkpoint) = Checkpoint::decode(bytes) else { continue };
        let chain = continue_chain(keys, world_id, checkpoint.next_sequence, checkpoint.previous_hash, log);
        if chain.problem.is_none() {
            return Some((key.clone(), checkpoint, chain));
        }
        if best.as_ref().is_none_or(|(_, _, b)| chain.tip > b.tip) {
            best = Some((key.clone(), checkpoint, chain));
        }
    }
    best
}

/// The chain from a checkpoint: the slots from `next_sequence` on, each naming the hash
/// of the one before (the first, the checkpoint's `previous_hash`).
fn continue_chain(
    keys: &Keys,
    world_id: Option<WorldId>,
    next_sequence: u64,
    previous_hash: Hash32,
    log: &[(&str, &[u8])],
) -> ChainScan {
    let scan = ChainScan { world_id, slots: Vec::new(), tip: next_sequence - 1, problem: None };
    let after = log.iter().filter(|(k, _)| keys.parse_slot(k).is_some_and(|s| s >= next_sequence));
    chain::continue_chain(keys, scan, previous_hash, after.map(|(k, b)| (*k, *b)))
}

/// The slots below the anchor that chain into it, walked back from it: the slot before
/// the anchor must hash to its `previous_hash`, the one before that to that slot's, and so
/// on while they are there. Oldest first.
fn chained_below(
    keys: &Keys,
    next_sequence: u64,
    previous_hash: Hash32,
    log: &[(&str, &[u8])],
) -> Vec<(Slot, Hash32)> {
    let by_sequence: BTreeMap<u64, &[u8]> =
        log.iter().filter_map(|(k, b)| keys.parse_slot(k).map(|s| (s, *b))).collect();
    let mut below = Vec::new();
    let mut expected = previous_hash;
    // Walk back slot by slot: a slot may hold several sequences, so find the one ending
    // right before what is already chained.
    let mut end = next_sequence - 1;
    while end > 0 {
        let Some((_, bytes)) = by_sequence.range(..=end).next_back() else { break };
        let Ok(slot) = Slot::decode(bytes) else { break };
        if slot.last_sequence() != end || Hash32::of(bytes) != expected {
            break;
        }
        expected = slot.prev_hash;
        end = slot.first_sequence - 1;
        below.push((slot, Hash32::of(bytes)));
    }
    below.reverse();
    below
}

#[cfg(test)]
mod tests;
