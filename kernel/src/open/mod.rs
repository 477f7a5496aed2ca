//! Opening a world: read the marker (or create it at genesis), then find the newest
//! checkpoint (or create checkpoint zero) and load it (`load`), then list the log from the
//! checkpoint's next sequence and apply every slot in order (`replay`, where a gap in a
//! listing is settled by reading the missing name). A checkpoint that cannot be
//! loaded (missing, damaged, or any object it names missing or damaged) costs only
//! replay: the opening falls back to the next older one, with a warning, and fails closed
//! when none loads, or when the one it fell back to cannot be replayed up to where the
//! skipped ones stood because collection took the slots between (`ReplayGone`).

mod load;
mod replay;
#[cfg(test)]
mod replay_tests;

use crate::blob::{BlobError, BlobOp, BlobOutcome, BlobResult};
use crate::checkpoint::{MergeRule, ObjectKind};
use crate::config::Config;
use crate::format::{Checkpoint, DecodeError, Keys, Marker};
use crate::hash::Hash32;
use crate::ids::{StoreId, WorldId};
use crate::io::{Call, Io, Purpose};
use crate::marks::Mark;
use crate::replica::Identity;
use crate::reply::{CheckpointProblem, FailReason, SkippedCheckpoint};
use crate::snapshot::Snapshot;
use crate::time::Instant;
use crate::world::{ApplyError, ReceiptKey, WorldState};
use bytes::Bytes;
use load::Load;
use replay::Replay;
use std::collections::BTreeSet;

pub(crate) struct Opening {
    keys: Keys,
    /// The world expected (None: adopt the marker's), and the id a genesis would take.
    world_id: Option<WorldId>,
    genesis_world_id: WorldId,
    store_id: StoreId,
    /// The receipt window's key: the world this opening hands over hashes ids under it.
    receipt_key: ReceiptKey,
    /// A listing found objects while the marker was absent: read the marker once more.
    marker_recheck: bool,
    /// The world id and marker hash, once the marker is read or created.
    anchor: Option<(WorldId, Hash32)>,
    /// The merge rule a world this opening creates takes (the configuration's).
    genesis_rule: MergeRule,
    /// The world's merge rule, from its marker once read or created (SPEC 4).
    pub merge_rule: MergeRule,
    /// The last key the checkpoint listing returned: the newest checkpoint so far.
    checkpoint_after: Option<String>,
    /// Checkpoint names listed and not yet tried, oldest first: the newest is tried first,
    /// and each older one if the one after it cannot be loaded.
    checkpoints_untried: Vec<String>,
    load: Option<Load>,
    /// The full checkpoint the world was opened from (None for checkpoint zero).
    pub loaded: Option<Loaded>,
    /// The store's creation time of the checkpoint last read: once open, the one the
    /// world opened at (None when this opening made checkpoint zero itself).
    pub checkpoint_created_us: Option<u64>,
    /// Checkpoints skipped because they could not be loaded, with the reason.
    pub skipped: Vec<(String, FailReason)>,
    replay_gets_max: usize,
    list_page_max: u32,
    recent_slots_max: usize,
    /// A read-only replica's: it makes no world and no checkpoint zero.
    read_only: bool,
    /// The bounds of the views the opened snapshot pins.
    views: (usize, core::time::Duration, usize),
    world: Option<Snapshot>,
    /// The log past the checkpoint, once the checkpoint is known.
    replay: Option<Replay>,
}

/// The full checkpoint an opening loaded.
pub(crate) struct Loaded {
    pub next_sequence: u64,
    /// The hash of the slot holding `next_sequence - 1`: where the chain before it is
    /// anchored.
    pub previous_hash: Hash32,
    /// Every object name the checkpoint uses.
    pub names: BTreeSet<Hash32>,
    /// Its root's shards and deltas.
    pub layers: Option<crate::checkpoint::Layers>,
}

/// The calls an opening makes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum OpenCall {
    MarkerGet,
    /// No marker: is anything else under the prefix? (A world is only made in an empty one.)
    GenesisList,
    MarkerCreate,
    /// List `checkpoints/` for the newest (paged, so the last key seen is the newest).
    CheckpointList,
    /// Create checkpoint zero if absent.
    CheckpointCreate,
    /// Read a checkpoint: the newest listed, or checkpoint zero after a create that found
    /// the name taken or may have applied.
    CheckpointGet,
    /// Read one object a full checkpoint uses.
    CheckpointObject {
        kind: ObjectKind,
        name: Hash32,
    },
    LogList,
    ReplayGet {
        sequence: u64,
    },
    /// Read a name replay needs that no listing gave, while a later name was listed.
    GapGet {
        sequence: u64,
    },
    /// That read found nothing: list once more from the name before confirming a break.
    GapList {
        sequence: u64,
    },
}

/// What a completion did to the opening.
pub(crate) enum Progress {
    Working,
    /// The world is open at this snapshot.
    Open(Box<Snapshot>),
    Failed(FailReason),
}

impl Opening {
    pub fn start(
        config: &Config,
        keys: Keys,
        identity: &Identity,
        genesis_world_id: WorldId,
        now: Instant,
        io: &mut Io,
    ) -> Opening {
        io.issue(now, Purpose::Open(OpenCall::MarkerGet), BlobOp::Get { key: keys.marker() }, 0);
        Opening {
            keys,
            world_id: identity.world_id,
            genesis_world_id,
            store_id: identity.store_id,
            receipt_key: identity.receipt_key,
            marker_recheck: false,
            anchor: None,
            genesis_rule: MergeRule::of(config),
            merge_rule: MergeRule::DEFAULT,
            checkpoint_after: None,
            checkpoints_untried: Vec::new(),
            load: None,
            loaded: None,
            checkpoint_created_us: None,
            skipped: Vec::new(),
            replay_gets_max: config.replay_gets_max,
            list_page_max: config.list_page_max,
            recent_slots_max: config.recent_slots_max,
            views: (config.views_max, config.view_age_max, config.view_images_max),
            read_only: config.read_only,
            world: None,
            replay: None,
        }
    }

    pub fn on_done(
        &mut self,
        now: Instant,
        what: OpenCall,
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) -> Progress {
        let done = match what {
            OpenCall::MarkerGet | OpenCall::GenesisList | OpenCall::MarkerCreate => {
                self.on_marker_call(now, what, call, result, io)
            }
            OpenCall::CheckpointList
            | OpenCall::CheckpointCreate
            | OpenCall::CheckpointGet
            | OpenCall::CheckpointObject { .. } => self.on_checkpoint_call(now, what, call, result, io),
            OpenCall::LogList
            | OpenCall::ReplayGet { .. }
            | OpenCall::GapGet { .. }
            | OpenCall::GapList { .. } => {
                let (Some(replay), Some(sn)) = (self.replay.as_mut(), self.world.as_mut()) else {
                    return Progress::Working;
                };
                let replayed = replay.on_done(now, what, (call, result), sn, io);
                replayed.map_err(|reason| self.unbridged(reason))
            }
        };
        match done {
            Ok(()) => self.finished(),
            Err(reason) => Progress::Failed(reason),
        }
    }

    /// Read the marker, or make it at genesis in an empty prefix.
    fn on_marker_call(
        &mut self,
        now: Instant,
        what: OpenCall,
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        let get_marker = |keys: &Keys| BlobOp::Get { key: keys.marker() };
        match (what, result) {
            (OpenCall::MarkerGet, Ok(BlobOutcome::Got { bytes, .. })) => {
                let marker = Marker::decode(&bytes).map_err(|e| decode_failure(self.keys.marker(), e))?;
                if self.world_id.is_some_and(|w| w != marker.world_id) {
                    return Err(FailReason::ForeignWorld);
                }
                self.genesis(&marker, Hash32::of(&bytes), now);
                // A genesis may have stopped before checkpoint zero: look, and make it if not.
                self.list_checkpoints(now, io);
            }
            (OpenCall::MarkerGet, Err(BlobError::NotFound)) if self.marker_recheck => {
                // Objects under the prefix, still no marker: not ours to make a world in.
                return Err(FailReason::ForeignObjects { key: self.keys.root().to_string() });
            }
            (OpenCall::MarkerGet, Err(BlobError::NotFound)) if self.read_only => {
                return Err(FailReason::NoWorld { key: self.keys.marker() });
            }
            (OpenCall::MarkerGet, Err(BlobError::NotFound)) => {
                let op = BlobOp::List { prefix: self.keys.root().to_string(), start_after: None, limit: 1 };
                io.issue(now, Purpose::Open(OpenCall::GenesisList), op, 0);
            }
            (OpenCall::GenesisList, Ok(BlobOutcome::Listed { entries, .. })) if !entries.is_empty() => {
                // A racing genesis may have made the marker since: look once more.
                io.marks.hit(Mark::OpenGenesisRace);
                self.marker_recheck = true;
                io.issue(now, Purpose::Open(OpenCall::MarkerGet), get_marker(&self.keys), 0);
            }
            (OpenCall::GenesisList, Ok(BlobOutcome::Listed { .. })) => {
                io.marks.hit(Mark::OpenGenesis);
                let world_id = self.world_id.unwrap_or(self.genesis_world_id);
                let marker = Marker { world_id, created_by: self.store_id, merge_rule: self.genesis_rule };
                let op = BlobOp::Create { key: self.keys.marker(), bytes: Bytes::from(marker.encode()) };
                io.issue(now, Purpose::Open(OpenCall::MarkerCreate), op, 0);
            }
            // A store that answers a create without its time (S3): read the marker back,
            // so the store's clock is known before the first slot, whose post-create check
            // (SPEC 10.15) needs a store time to judge its landing against.
            (OpenCall::MarkerCreate, Ok(BlobOutcome::Created(written))) if written.time.is_none() => {
                io.issue(now, Purpose::Open(OpenCall::MarkerGet), get_marker(&self.keys), 0);
            }
            (OpenCall::MarkerCreate, Ok(_)) => {
                let BlobOp::Create { bytes, .. } = &call.op else { unreachable!("a create") };
                let marker = Marker::decode(bytes).expect("our own marker decodes");
                self.genesis(&marker, Hash32::of(bytes), now);
                // Our marker is new, so no checkpoint can predate it: no listing needed.
                self.create_checkpoint_zero(now, io);
            }
            // Taken by a racing genesis, or ours landed despite the error: read what is there.
            (OpenCall::MarkerCreate, Err(e)) if e != BlobError::Throttled => {
                io.marks.hit(Mark::OpenGenesisRace);
                io.issue(now, Purpose::Open(OpenCall::MarkerGet), get_marker(&self.keys), 0);
            }
            _ => io.retry_later(now, call),
        }
        Ok(())
    }

    /// Find the newest checkpoint, or make checkpoint zero, and check it.
    fn on_checkpoint_call(
        &mut self,
        now: Instant,
        what: OpenCall,
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        match (what, result) {
            (OpenCall::CheckpointList, Ok(BlobOutcome::Listed { entries, more })) => {
                if let Some(e) = entries.iter().find(|e| self.keys.parse_checkpoint(&e.key).is_none()) {
                    return Err(decode_failure(e.key.clone(), DecodeError::Foreign));
                }
                if let Some(last) = entries.last() {
                    self.checkpoint_after = Some(last.key.clone());
                }
                self.checkpoints_untried.extend(entries.into_iter().map(|e| e.key));
                match (self.checkpoints_untried.is_empty(), more) {
                    (_, true) => self.list_checkpoints(now, io),
                    (true, false) => self.create_checkpoint_zero(now, io),
                    (false, false) => self.try_newest(now, io),
                }
            }
            (OpenCall::CheckpointCreate, Ok(_)) => {
                self.checkpoint_created_us = None;
                self.list_next(now, io)
            }
            // Taken by a racing opener, or ours landed despite the error: it must be ours.
            (OpenCall::CheckpointCreate, Err(e)) if e != BlobError::Throttled => {
                io.marks.hit(Mark::OpenCheckpointZeroRace);
                let key = call.op.key().to_string();
                io.issue(now, Purpose::Open(OpenCall::CheckpointGet), BlobOp::Get { key }, 0);
            }
            (OpenCall::CheckpointGet, Ok(BlobOutcome::Got { bytes, meta })) => {
                let key = call.op.key().to_string();
                self.checkpoint_created_us = Some(meta.created_at_us);
                match self.check_checkpoint(&key, &bytes) {
                    Ok(None) => self.list_next(now, io),
                    Ok(Some(full)) => {
                        self.load = Some(Load::start(key, full, self.replay_gets_max, &self.keys, now, io));
                    }
                    Err(reason) => self.fall_back(key, reason, now, io)?,
                }
            }
            // A listed checkpoint gone, with an older one to try: fall back to it.
            (OpenCall::CheckpointGet, Err(BlobError::NotFound))
                if !self.checkpoints_untried.is_empty() || !self.skipped.is_empty() =>
            {
                let key = call.op.key().to_string();
                let problem = CheckpointProblem::ObjectMissing { key: key.clone() };
                self.fall_back(key.clone(), FailReason::CheckpointMismatch { key, problem }, now, io)?;
            }
            // An ambiguous create that never landed (or the only listed checkpoint gone):
            // start over. Once anything was skipped this never runs, so it cannot loop.
            (OpenCall::CheckpointGet, Err(BlobError::NotFound)) => {
                io.marks.hit(Mark::OpenCheckpointRelisted);
                self.checkpoint_after = None;
                self.checkpoints_untried.clear();
                self.list_checkpoints(now, io);
            }
            (OpenCall::CheckpointObject { kind, name }, result) => {
                let Some(load) = self.load.as_mut() else { return Ok(()) };
                match load.on_done(&self.keys, now, (kind, name), call, result, io) {
                    Ok(None) => {}
                    Ok(Some(world)) => {
                        io.marks.hit(Mark::OpenLoadedCheckpoint);
                        let load = self.load.take().expect("loading");
                        let next_sequence = load.next_sequence();
                        let previous_hash = load.previous_hash();
                        let world = world.with_receipt_key(self.receipt_key);
                        self.world = Some(Snapshot::new(world, self.recent_slots_max, self.views, now));
                        let (names, layers) = (load.names, load.layers);
                        self.loaded = Some(Loaded { next_sequence, previous_hash, names, layers });
                        self.list_next(now, io);
                    }
                    Err(reason) => {
                        let key = self.load.take().expect("loading").key;
                        self.fall_back(key, reason, now, io)?;
                    }
                }
            }
            _ => io.retry_later(now, call),
        }
        Ok(())
    }

    /// The world's marker, read or made, and its hash: the anchor, the merge rule, and
    /// the world before its first slot.
    fn genesis(&mut self, marker: &Marker, marker_hash: Hash32, now: Instant) {
        let world_id = marker.world_id;
        self.anchor = Some((world_id, marker_hash));
        self.merge_rule = marker.merge_rule;
        let world = WorldState::genesis(world_id, marker_hash).with_receipt_key(self.receipt_key);
        self.world = Some(Snapshot::new(world, self.recent_slots_max, self.views, now));
    }

    fn list_checkpoints(&mut self, now: Instant, io: &mut Io) {
        let op = BlobOp::List {
            prefix: self.keys.checkpoints_prefix(),
            start_after: self.checkpoint_after.clone(),
            limit: self.list_page_max,
        };
        io.issue(now, Purpose::Open(OpenCall::CheckpointList), op, 0);
    }

    /// Checkpoint zero is a function of the marker alone, so every opener that makes it
    /// sends the same bytes and any one of their creates is as good as ours.
    fn create_checkpoint_zero(&mut self, now: Instant, io: &mut Io) {
        if self.read_only {
            // A genesis stopped before checkpoint zero: its world is the marker's genesis,
            // which this opening already holds. Read on without making it.
            io.marks.hit(Mark::OpenReadOnlyWithoutZero);
            return self.list_next(now, io);
        }
        let (world_id, marker_hash) = self.anchor.expect("the marker before its checkpoint");
        let bytes = Bytes::from(Checkpoint::zero(world_id, marker_hash).encode());
        let op = BlobOp::Create { key: self.keys.checkpoint(1), bytes };
        io.issue(now, Purpose::Open(OpenCall::CheckpointCreate), op, 0);
    }

    /// Checks the checkpoint read at `key` against the world: this world's checkpoint zero
    /// byte for byte (Ok(None)), or a full checkpoint of this world under its own name,
    /// to load (Ok(Some)); otherwise the reason it cannot be used.
    fn check_checkpoint(&self, key: &str, bytes: &[u8]) -> Result<Option<Checkpoint>, FailReason> {
        let (world_id, marker_hash) = self.anchor.expect("the marker before its checkpoint");
        let checkpoint = Checkpoint::decode(bytes).map_err(|e| decode_failure(key.to_string(), e))?;
        let mismatch = |problem| Err(FailReason::CheckpointMismatch { key: key.to_string(), problem });
        if checkpoint.world_id != world_id {
            return mismatch(CheckpointProblem::ForeignWorld { found: checkpoint.world_id });
        }
        if self.keys.parse_checkpoint(key) != Some(checkpoint.next_sequence) {
            return mismatch(CheckpointProblem::Misnamed { next_sequence: checkpoint.next_sequence });
        }
        if !checkpoint.is_zero() {
            return Ok(Some(checkpoint));
        }
        if checkpoint.previous_hash != marker_hash {
            return mismatch(CheckpointProblem::NotTheMarker { found: checkpoint.previous_hash });
        }
        // Every field matched and decoding admits one byte form, so these are our bytes.
        invariant_eq!(bytes, &Checkpoint::zero(world_id, marker_hash).encode()[..]);
        Ok(None)
    }

    /// Reads the newest checkpoint not yet tried.
    fn try_newest(&mut self, now: Instant, io: &mut Io) {
        let key = self.checkpoints_untried.pop().expect("a checkpoint to try");
        io.issue(now, Purpose::Open(OpenCall::CheckpointGet), BlobOp::Get { key }, 0);
    }

    /// The checkpoint at `key` cannot be loaded: try the next older one, or fail closed
    /// with `reason` when none is left.
    fn fall_back(
        &mut self,
        key: String,
        reason: FailReason,
        now: Instant,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        if self.checkpoints_untried.is_empty() {
            return Err(reason);
        }
        io.marks.hit(Mark::OpenFallbackCheckpoint);
        self.skipped.push((key, reason));
        self.try_newest(now, io);
        Ok(())
    }

    /// Starts replaying the log past the checkpoint the world stands at.
    fn list_next(&mut self, now: Instant, io: &mut Io) {
        let after = self.loaded.as_ref().map(|l| self.keys.slot(l.next_sequence - 1));
        let limits = (self.replay_gets_max, self.list_page_max);
        self.replay = Some(Replay::start(self.keys.clone(), after, limits, now, io));
    }

    fn finished(&mut self) -> Progress {
        let (Some(replay), Some(sn)) = (self.replay.as_ref(), self.world.as_ref()) else {
            return Progress::Working;
        };
        if !replay.is_done() {
            return Progress::Working;
        }
        if let Err(reason) = replay.leftover(sn) {
            return Progress::Failed(self.unbridged(reason));
        }
        // A skipped checkpoint's name says the world reached it: a log that ends short of
        // it lost the slots between to collection.
        let next = sn.world.next_sequence();
        if self.vouched_next_sequence().is_some_and(|vouched| next < vouched) {
            return Progress::Failed(self.replay_gone(next));
        }
        let last_list_at = replay.last_list_at;
        let mut sn = self.world.take().expect("checked");
        sn.current_since = Some(last_list_at);
        Progress::Open(Box::new(sn))
    }
}

impl Opening {
    /// The greatest next sequence a skipped checkpoint's name vouches for: slots up to
    /// the one before it existed when that checkpoint was written.
    fn vouched_next_sequence(&self) -> Option<u64> {
        self.skipped.iter().filter_map(|(key, _)| self.keys.parse_checkpoint(key)).max()
    }

    /// A replay failure after a fallback: a gap below where a skipped checkpoint stood is
    /// collection's doing, so the reason names the checkpoints and the slot. Any other
    /// failure keeps its own reason.
    fn unbridged(&self, reason: FailReason) -> FailReason {
        match reason {
            FailReason::Apply(ApplyError::Gap { expected, .. })
                if self.vouched_next_sequence().is_some_and(|vouched| expected < vouched) =>
            {
                self.replay_gone(expected)
            }
            reason => reason,
        }
    }

    fn replay_gone(&self, missing: u64) -> FailReason {
        let fell_back_to = self.loaded.as_ref().map_or(1, |l| l.next_sequence);
        let skipped = self
            .skipped
            .iter()
            .map(|(key, reason)| SkippedCheckpoint { key: key.clone(), reason: reason.clone() });
        FailReason::ReplayGone {
            skipped: skipped.collect(),
            fell_back_to: self.keys.checkpoint(fell_back_to),
            missing: self.keys.slot(missing),
        }
    }
}

fn decode_failure(key: String, error: DecodeError) -> FailReason {
    FailReason::Decode { key, error }
}
