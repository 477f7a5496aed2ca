//! The log as `inspect` and `verify` judge it: from the marker while slot 1 is there, or,
//! once collection deleted the oldest slots (SPEC 10.15), from the oldest checkpoint the
//! retained log continues whole to its tip (a checkpoint whose drop was fenced may linger
//! below it, its slots gone; failing every one, the one the log goes furthest from). A slot that does not chain onto its predecessor is named: a
//! *forked slot* (its recorded previous-slot hash is not the hash of the slot before it),
//! such as a create by a writer that stalled past collection and landed in a freed name.
//!
//! Judged from summaries, not from the slots: each slot object is read once, summarised
//! to its key, size and [`SlotLink`] (what the chain needs of it) and let go, so judging
//! a log holds about two hundred bytes a slot, never its bytes. The anchor's choice, the
//! forks, the slots chained below the anchor and the gaps to settle are all found from
//! the summaries; only the checkpoints' replay (`checkpoint_problems`) reads slots again.
//!
//! Pure, but for loading the anchor's checkpoint: works on the summaries and checkpoint
//! records already read (`settle` reads the slots, and what a listing missed).

use slotlog_kernel::format::{ChainProblem, ChainWalk, Checkpoint, DecodeError, Keys, Marker, SlotLink};
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::WorldId;
use slotlog_kernel::world::WorldState;
use std::collections::BTreeSet;
use std::fmt;

use super::settle::Object;
use super::{load_checkpoint, Content};

/// One object under `log/` as the log is judged from it: read once, summarised, let go.
#[derive(Clone, Debug)]
pub struct SlotSummary {
    pub key: String,
    /// Its size in bytes.
    pub size: u64,
    /// What the chain needs of it, or why it does not decode as a slot.
    pub decoded: Result<SlotLink, DecodeError>,
}

impl SlotSummary {
    pub fn of(key: &str, bytes: &[u8], size: u64) -> SlotSummary {
        SlotSummary { key: key.to_string(), size, decoded: SlotLink::decode(bytes) }
    }

    /// Its link, as the chain walk takes it.
    pub fn link(&self) -> Result<SlotLink, &DecodeError> {
        self.decoded.as_ref().copied()
    }

    /// The members it holds (none when it does not decode).
    pub fn members(&self) -> u64 {
        self.decoded.as_ref().map_or(0, |l| l.members())
    }
}

/// The checkpoint a collected log is judged from: the oldest whose sequence the retained
/// log reaches.
pub struct Anchor {
    pub key: String,
    pub next_sequence: u64,
    /// Its record, as read with the listing.
    pub checkpoint: Checkpoint,
    /// The world the checkpoint holds (None when it does not load: `problem` says why;
    /// and once the checkpoints' replay took it, `checkpoint_problems`).
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

/// The verified chain, as positions in the judged log: from the marker, or from the
/// anchor's sequence on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chain {
    /// The world the marker names (None when the marker does not decode).
    pub world_id: Option<WorldId>,
    /// The slots that continue the chain, in order: positions in [`LogScan::log`].
    pub slots: Vec<usize>,
    /// The last sequence of the verified chain (from an anchor: the anchor's, before any).
    pub tip: u64,
    /// None when every slot verified.
    pub problem: Option<ChainProblem>,
}

/// The log, judged.
pub struct LogScan {
    /// Every object under `log/`, in key order, summarised.
    pub log: Vec<SlotSummary>,
    pub chain: Chain,
    /// Set when the log was collected: the checkpoint the chain starts from.
    pub anchor: Option<Anchor>,
    /// Slots below the anchor still there (a drop stopped part way), chained into it:
    /// positions in `log`, oldest first.
    pub below: Vec<usize>,
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

    /// The slots that make the world, those below the anchor and the chain's, in order.
    pub fn slots(&self) -> impl Iterator<Item = &SlotSummary> {
        self.below.iter().chain(self.chain.slots.iter()).map(|&i| &self.log[i])
    }

    /// The chain's slots, in order.
    pub fn chain_slots(&self) -> impl Iterator<Item = &SlotSummary> {
        self.chain.slots.iter().map(|&i| &self.log[i])
    }

    /// Loads the anchor's checkpoint (once the log is settled: its content may be read
    /// from the store); a checkpoint that does not load is the anchor's problem.
    pub fn load_anchor(&mut self, keys: &Keys, objects: &[Object], content: Content<'_>) {
        let Some(anchor) = &mut self.anchor else { return };
        match load_checkpoint(&anchor.key, anchor.checkpoint.clone(), keys, objects, content) {
            Ok(world) => anchor.world = Some(world),
            Err(e) => {
                anchor.problem = Some(format!(
                    "{}, the oldest checkpoint the retained log continues, does not load: {e}",
                    anchor.key
                ))
            }
        }
    }
}

/// Judges the log `log` (summaries, in key order) against the marker and the checkpoint
/// records in `objects` (key order), and loads the anchor's checkpoint when there is one.
pub fn scan_log(
    keys: &Keys,
    marker: &[u8],
    objects: &[Object],
    log: Vec<SlotSummary>,
    content: Content<'_>,
) -> LogScan {
    let mut scan = judge_log(keys, marker, objects, log);
    scan.load_anchor(keys, objects, content);
    scan
}

/// [`scan_log`] without loading the anchor's checkpoint: the anchor's world is None.
pub fn judge_log(keys: &Keys, marker: &[u8], objects: &[Object], log: Vec<SlotSummary>) -> LogScan {
    let world_id = Marker::decode(marker).ok().map(|m| m.world_id);
    let collected = !log.iter().any(|s| keys.parse_slot(&s.key) == Some(1));
    let anchor = match collected {
        true => choose_anchor(keys, world_id, objects, &log),
        false => None,
    };
    let Some((key, checkpoint, chain)) = anchor else {
        let chain = from_marker(keys, marker, &log);
        let forks = break_fork(keys, &log, &chain).into_iter().collect();
        return LogScan { log, chain, anchor: None, below: Vec::new(), forks };
    };
    let next_sequence = checkpoint.next_sequence;
    let previous_hash = checkpoint.previous_hash;
    let mut forks: Vec<Fork> = break_fork(keys, &log, &chain).into_iter().collect();
    let below = chained_below(keys, next_sequence, previous_hash, &log);
    let below_sequences: BTreeSet<u64> =
        below.iter().filter_map(|&i| log[i].link().ok()).map(|l| l.first_sequence).collect();
    for s in &log {
        let Some(sequence) = keys.parse_slot(&s.key) else { continue };
        if sequence < next_sequence && !below_sequences.contains(&sequence) {
            forks.push(Fork { key: s.key.clone(), kind: ForkKind::BelowCollection { anchor: key.clone() } });
        }
    }
    let anchor = Anchor { key, next_sequence, checkpoint, world: None, problem: None };
    LogScan { log, chain, anchor: Some(anchor), below, forks }
}

/// The chain from the marker: every object under `log/` in key order, while each
/// continues it.
fn from_marker(keys: &Keys, marker: &[u8], log: &[SlotSummary]) -> Chain {
    let mut chain = Chain { world_id: None, slots: Vec::new(), tip: 0, problem: None };
    match Marker::decode(marker) {
        Ok(m) => chain.world_id = Some(m.world_id),
        Err(e) => {
            chain.problem = Some(ChainProblem::Marker(e));
            return chain;
        }
    }
    let mut walk = ChainWalk { world_id: chain.world_id, tip: 0, prev: Hash32::of(marker) };
    for (i, s) in log.iter().enumerate() {
        if let Err(problem) = walk.next(keys, &s.key, s.link()) {
            chain.problem = Some(problem);
            break;
        }
        chain.tip = walk.tip;
        chain.slots.push(i);
    }
    chain
}

/// A break in the chain is a forked slot: name it.
fn break_fork(keys: &Keys, log: &[SlotSummary], chain: &Chain) -> Option<Fork> {
    let Some(ChainProblem::Break { sequence }) = chain.problem else { return None };
    let last = chain.slots.last().and_then(|&i| log[i].link().ok());
    let predecessor = last.map_or_else(
        || format!("the slot before it (sequence {})", sequence - 1),
        |l| keys.slot(l.first_sequence),
    );
    Some(Fork { key: keys.slot(sequence), kind: ForkKind::NotChained { predecessor } })
}

/// The oldest full checkpoint from which the log chains whole to its listed end; failing
/// every one, the one it chains furthest from (the oldest of those): with its chain.
fn choose_anchor(
    keys: &Keys,
    world_id: Option<WorldId>,
    objects: &[Object],
    log: &[SlotSummary],
) -> Option<(String, Checkpoint, Chain)> {
    let runs = Runs::of(keys, world_id, log);
    let mut best: Option<(String, Checkpoint, Chain)> = None;
    // Objects are in key order, and checkpoint keys sort by sequence.
    for (key, bytes, _) in objects.iter().filter(|o| keys.parse_checkpoint(&o.0).is_some_and(|s| s > 1)) {
        let Ok(checkpoint) = Checkpoint::decode(bytes) else { continue };
        let chain = runs.chain_from(keys, checkpoint.next_sequence, checkpoint.previous_hash, log);
        if chain.problem.is_none() {
            return Some((key.clone(), checkpoint, chain));
        }
        if best.as_ref().is_none_or(|(_, _, b)| chain.tip > b.tip) {
            best = Some((key.clone(), checkpoint, chain));
        }
    }
    best
}

/// The slot names of the log in sequence order, cut into runs where a slot does not chain
/// onto the one before it. A chain from a checkpoint takes the slots from its sequence on
/// while each continues it: past its first slot, that is the rest of the first slot's run
/// (the walk after a slot is the same whatever it started from). Found once, so choosing
/// among a log's checkpoints walks it once, not once a checkpoint.
struct Runs {
    /// Positions in the log of the objects named as slots (the chain from a checkpoint
    /// passes over the others).
    named: Vec<usize>,
    /// Positions in `named` of the slots that do not chain onto the slot before them.
    breaks: Vec<usize>,
    world_id: Option<WorldId>,
}

impl Runs {
    fn of(keys: &Keys, world_id: Option<WorldId>, log: &[SlotSummary]) -> Runs {
        let named: Vec<usize> = (0..log.len()).filter(|&i| keys.parse_slot(&log[i].key).is_some()).collect();
        let breaks = (1..named.len())
            .filter(|&j| {
                let (before, slot) = (&log[named[j - 1]], &log[named[j]]);
                let Ok(before) = before.link() else { return true };
                let mut walk = ChainWalk { world_id, tip: before.last_sequence, prev: before.hash };
                walk.next(keys, &slot.key, slot.link()).is_err()
            })
            .collect();
        Runs { named, breaks, world_id }
    }

    /// The chain from a checkpoint: the slots from `next_sequence` on, each naming the hash
    /// of the one before (the first, the checkpoint's `previous_hash`).
    fn chain_from(
        &self,
        keys: &Keys,
        next_sequence: u64,
        previous_hash: Hash32,
        log: &[SlotSummary],
    ) -> Chain {
        let mut walk = ChainWalk { world_id: self.world_id, tip: next_sequence - 1, prev: previous_hash };
        let mut chain = Chain { world_id: self.world_id, slots: Vec::new(), tip: walk.tip, problem: None };
        let start = self.named.partition_point(|&i| keys.parse_slot(&log[i].key) < Some(next_sequence));
        let Some(&first) = self.named.get(start) else { return chain };
        if let Err(problem) = walk.next(keys, &log[first].key, log[first].link()) {
            chain.problem = Some(problem);
            return chain;
        }
        let end = self.breaks.get(self.breaks.partition_point(|&b| b <= start)).copied();
        let end = end.unwrap_or(self.named.len());
        chain.slots = self.named[start..end].to_vec();
        let Ok(last) = log[self.named[end - 1]].link() else { return chain };
        chain.tip = last.last_sequence;
        if let Some(&stop) = self.named.get(end) {
            // Where the run ends the walk stands after its last slot, whatever it started from.
            walk = ChainWalk { world_id: self.world_id, tip: last.last_sequence, prev: last.hash };
            chain.problem = walk.next(keys, &log[stop].key, log[stop].link()).err();
        }
        chain
    }
}

/// The slots below the anchor that chain into it, walked back from it: the slot before
/// the anchor must hash to its `previous_hash`, the one before that to that slot's, and so
/// on while they are there. Oldest first, as positions in the log.
fn chained_below(keys: &Keys, next_sequence: u64, previous_hash: Hash32, log: &[SlotSummary]) -> Vec<usize> {
    let mut below = Vec::new();
    let mut expected = previous_hash;
    // Walk back slot by slot: a slot may hold several sequences, so find the one ending
    // right before what is already chained: the slot name at or before `end`.
    let mut end = next_sequence - 1;
    while end > 0 {
        let at_most = keys.slot(end);
        let upto = log.partition_point(|s| s.key <= at_most);
        let Some(i) = (0..upto).rev().find(|&i| keys.parse_slot(&log[i].key).is_some()) else { break };
        let Ok(link) = log[i].link() else { break };
        if link.last_sequence != end || link.hash != expected {
            break;
        }
        expected = link.prev_hash;
        end = link.first_sequence - 1;
        below.push(i);
    }
    below.reverse();
    below
}

#[cfg(test)]
mod tests;
