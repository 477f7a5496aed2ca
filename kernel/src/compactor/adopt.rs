//! Adopting a peer's checkpoint (SPEC 10.14): the documents of the shards and deltas
//! (SPEC 10.16) that changed since the newest checkpoint this replica knows take the
//! history block references the peer stored, and drop the version records those blocks hold. What a document serves
//! does not change, only where its older versions are read from, so adoption never waits
//! on a commit and a commit never waits on it.

use super::{adopt, AdoptCall, Compactor, Gather};
use crate::blob::{BlobError, BlobOp, BlobOutcome, BlobResult};
use crate::checkpoint::Layers;
use crate::config::CompactionRole;
use crate::effect::{Effect, Warning};
use crate::format::{Checkpoint, Delta, HistoryRef, Root, Shard};
use crate::hash::Hash32;
use crate::io::{Call, Io};
use crate::marks::{Mark, Marks};
use crate::reply::{CheckpointProblem, FailReason};
use crate::snapshot::Snapshot;
use crate::time::Instant;
use crate::world::Path;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Where an object an adoption reads sits in its root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Part {
    /// A shard, by its index in the layout.
    Shard(u32),
    /// A delta, by its position.
    Delta(usize),
}

/// A peer's checkpoint being read for adoption.
pub(super) struct Adoption {
    pub checkpoint: Checkpoint,
    pub root: Option<Root>,
    /// Shards and deltas still to ask for: a shard with its index in the layout, a delta
    /// with its position in the root.
    to_read: VecDeque<(Part, Hash32)>,
    /// Shards and deltas asked for and not yet arrived.
    reading: BTreeMap<Hash32, Part>,
    /// The entries of each delta read, by position: adopted after the shards', oldest
    /// first, so a document takes its newest entry's blocks.
    from_deltas: BTreeMap<usize, Vec<(Path, Vec<HistoryRef>, u64)>>,
    /// Every object name of the checkpoint this adoption learned: what the next fold
    /// need not create again.
    pub names: BTreeSet<Hash32>,
    /// Per document: the blocks, and the version the checkpoint stored them through.
    pub adopt: Vec<(Path, Vec<HistoryRef>, u64)>,
    /// Whether the checkpoint's chain anchor was checked against this replica's log.
    pub chain_checked: bool,
    /// The store's creation time of the checkpoint object, as its read said.
    pub created_us: u64,
}

impl Adoption {
    pub fn new(checkpoint: Checkpoint, created_us: u64) -> Adoption {
        Adoption {
            created_us,
            checkpoint,
            root: None,
            to_read: VecDeque::new(),
            reading: BTreeMap::new(),
            from_deltas: BTreeMap::new(),
            names: BTreeSet::new(),
            adopt: Vec::new(),
            chain_checked: false,
        }
    }

    pub fn root_name(&self) -> Hash32 {
        self.checkpoint.root.expect("only a full checkpoint is adopted")
    }

    /// The root arrived: it must be the checkpoint's, and its shards that are not among
    /// `known` (the objects of the newest checkpoint adopted or written) are read next.
    pub fn on_root(&mut self, root: Root, known: &BTreeSet<Hash32>) -> Result<(), CheckpointProblem> {
        crate::checkpoint::root_fits(&self.checkpoint, &root)?;
        self.names.insert(self.root_name());
        self.names.extend(root.receipts.iter().map(|r| r.block));
        for (index, name) in root.shards.iter().enumerate() {
            // Two empty shards of one layout differ by their index, so a name is one shard.
            if self.names.insert(*name) && !known.contains(name) {
                self.to_read.push_back((Part::Shard(index as u32), *name));
            }
        }
        for (position, d) in root.deltas.iter().enumerate() {
            if self.names.insert(d.block) && !known.contains(&d.block) {
                self.to_read.push_back((Part::Delta(position), d.block));
            }
        }
        self.root = Some(root);
        Ok(())
    }

    /// The next shard or delta to ask for, if any.
    pub fn next_read(&mut self) -> Option<(Part, Hash32)> {
        let (part, name) = self.to_read.pop_front()?;
        self.reading.insert(name, part);
        Some((part, name))
    }

    pub fn reads_in_flight(&self) -> usize {
        self.reading.len()
    }

    /// A shard arrived (verified against its name by the decoder): its documents adopt
    /// their blocks.
    pub fn on_shard(&mut self, name: Hash32, shard: Shard) -> Result<(), CheckpointProblem> {
        let root = self.root.as_ref().expect("shards are read after the root");
        let part = self.reading.remove(&name);
        if part != Some(Part::Shard(shard.index)) || shard.shard_bits != root.shard_bits {
            return Err(CheckpointProblem::ShardDisagrees { index: shard.index });
        }
        let adopt = self.entries(shard.entries)?;
        self.adopt.extend(adopt);
        Ok(())
    }

    /// A delta arrived (verified against its name): its documents adopt their blocks once
    /// the shards' have.
    pub fn on_delta(&mut self, name: Hash32, delta: Delta) -> Result<(), CheckpointProblem> {
        let root = self.root.as_ref().expect("deltas are read after the root");
        let Some(Part::Delta(position)) = self.reading.remove(&name) else {
            return Err(CheckpointProblem::DeltaDisagrees { position: 0 });
        };
        if root.deltas[position].entries as usize != delta.entries.len() {
            return Err(CheckpointProblem::DeltaDisagrees { position });
        }
        let adopt = self.entries(delta.entries)?;
        self.from_deltas.insert(position, adopt);
        Ok(())
    }

    fn entries(
        &mut self,
        entries: Vec<crate::format::ShardEntry>,
    ) -> Result<Vec<(Path, Vec<HistoryRef>, u64)>, CheckpointProblem> {
        let mut adopt = Vec::with_capacity(entries.len());
        for e in entries {
            if e.history.first().is_some_and(|r| r.first_version != e.entry.first_version) {
                return Err(CheckpointProblem::HistoryDisagrees { path: e.entry.path.clone() });
            }
            self.names.extend(e.history.iter().map(|r| r.block));
            adopt.push((e.entry.path, e.history, e.entry.version));
        }
        Ok(adopt)
    }

    /// What the documents adopt, shards first, then deltas oldest first.
    pub fn take_adopt(&mut self) -> Vec<(Path, Vec<HistoryRef>, u64)> {
        let mut adopt = std::mem::take(&mut self.adopt);
        for (_, entries) in std::mem::take(&mut self.from_deltas) {
            adopt.extend(entries);
        }
        adopt
    }

    /// Whether every object the adoption needs has arrived.
    pub fn is_complete(&self) -> bool {
        self.root.is_some() && self.to_read.is_empty() && self.reading.is_empty()
    }

    /// The last sequence the checkpoint covers: a replica adopts it only once its own tip
    /// has reached it, so every block it takes holds versions the replica has applied.
    pub fn sequence(&self) -> u64 {
        self.checkpoint.next_sequence - 1
    }
}

/// Looking for a newer checkpoint, and adopting one (SPEC 10.14).
impl Compactor {
    pub(super) fn list_checkpoints(&mut self, now: Instant, start_after: Option<String>, io: &mut Io) {
        let start_after = start_after.unwrap_or_else(|| self.keys.checkpoint(self.newest_next_sequence));
        let op = BlobOp::List {
            prefix: self.keys.checkpoints_prefix(),
            start_after: Some(start_after),
            limit: 64,
        };
        io.issue(now, adopt(AdoptCall::Look), op, 0);
    }

    /// A page of the checkpoints after the newest one known. The newest listed is adopted;
    /// with none newer, an eager store steps, and a backstop steps only once the newest it
    /// knows is older than `backstop_after`.
    pub(super) fn on_look(
        &mut self,
        now: Instant,
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        let Some(newest) = self.look else { return Ok(()) };
        let (entries, more) = match result {
            Ok(BlobOutcome::Listed { entries, more }) => (entries, more),
            _ => {
                io.retry_later(now, call);
                return Ok(());
            }
        };
        let usable = entries
            .iter()
            .filter_map(|e| self.keys.parse_checkpoint(&e.key))
            .filter(|s| !self.unusable.contains(s));
        let newest = usable.fold(newest, u64::max);
        self.look = Some(newest);
        if more {
            let last = entries.last().map(|e| e.key.clone());
            self.list_checkpoints(now, last, io);
            return Ok(());
        }
        self.look = None;
        if newest > self.newest_next_sequence {
            // A newer checkpoint than ours: adopt it, and the run ends (the defer rule).
            self.run_target = None;
            let op = BlobOp::Get { key: self.keys.checkpoint(newest) };
            io.issue(now, adopt(AdoptCall::Checkpoint { next_sequence: newest }), op, 0);
            self.fetching = Some(newest);
            return Ok(());
        }
        let step = match self.role {
            _ if self.continuing => true,
            CompactionRole::Eager => true,
            CompactionRole::Backstop => {
                self.newest_age(now, io.store_clock.now_us(now)) >= self.backstop_after
            }
            CompactionRole::Off => false,
        };
        if self.role == CompactionRole::Backstop && !self.continuing {
            io.marks.hit(if step { Mark::BackstopStepped } else { Mark::BackstopDeferred });
        }
        if step {
            if !self.continuing {
                self.stats.runs += 1;
                self.run_target = Some(self.look_tip);
            }
            self.gather = Some(Gather::default());
        } else {
            self.ended_without_step(now);
        }
        Ok(())
    }

    /// Gives up an adoption: the run ends as if nothing newer were listed, and the next
    /// look (a cadence later) tries again.
    fn abandon(&mut self, now: Instant, key: String, reason: FailReason, io: &mut Io) {
        self.stats.adoptions_abandoned += 1;
        io.marks.hit(Mark::AdoptionAbandoned);
        if let Some(next_sequence) = self.keys.parse_checkpoint(&key) {
            self.unusable.insert(next_sequence);
        }
        self.fetching = None;
        self.adoption = None;
        io.effects.push_back(Effect::Warning(Warning::CheckpointSkipped { key, reason }));
        self.ended_without_step(now);
    }

    /// Keeps the shard and delta reads of an adoption flowing, a bounded number at once.
    pub(super) fn read_for_adoption(&mut self, now: Instant, io: &mut Io) {
        let Some(adoption) = self.adoption.as_mut() else { return };
        while adoption.reads_in_flight() < self.reads_in_flight_max {
            let Some((part, name)) = adoption.next_read() else { break };
            let (key, what) = match part {
                Part::Shard(_) => (self.keys.shard(&name), AdoptCall::Shard { name }),
                Part::Delta(_) => (self.keys.delta(&name), AdoptCall::Delta { name }),
            };
            io.issue(now, adopt(what), BlobOp::Get { key }, 0);
        }
    }

    pub(super) fn on_adoption_read(
        &mut self,
        now: Instant,
        what: AdoptCall,
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) {
        let Some(next_sequence) =
            self.fetching.or(self.adoption.as_ref().map(|a| a.checkpoint.next_sequence))
        else {
            return;
        };
        let key = self.keys.checkpoint(next_sequence);
        let (bytes, created_us) = match result {
            Ok(BlobOutcome::Got { bytes, meta }) => (bytes, meta.created_at_us),
            Err(BlobError::NotFound) => {
                let missing = call.op.key().to_string();
                let reason = FailReason::CheckpointMismatch {
                    key: key.clone(),
                    problem: CheckpointProblem::ObjectMissing { key: missing },
                };
                return self.abandon(now, key, reason, io);
            }
            _ => return io.retry_later(now, call),
        };
        let object_key = call.op.key().to_string();
        let decode_failed = |error| FailReason::Decode { key: object_key.clone(), error };
        let mismatch = |problem| FailReason::CheckpointMismatch { key: key.clone(), problem };
        let fitted = match what {
            AdoptCall::Checkpoint { .. } => match Checkpoint::decode(&bytes) {
                Ok(c) if c.root.is_some() && c.next_sequence == next_sequence => {
                    self.fetching = None;
                    let adoption = Adoption::new(c, created_us);
                    let op = BlobOp::Get { key: self.keys.root_object(&adoption.root_name()) };
                    io.issue(now, adopt(AdoptCall::Root), op, 0);
                    self.adoption = Some(adoption);
                    Ok(())
                }
                Ok(_) => Err(mismatch(CheckpointProblem::RootDisagrees)),
                Err(error) => Err(decode_failed(error)),
            },
            AdoptCall::Root => {
                let adoption = self.adoption.as_mut().expect("a root is read for an adoption");
                match Root::decode_named(&bytes, &adoption.root_name()) {
                    Ok(root) => adoption.on_root(root, &self.stored).map_err(mismatch),
                    Err(error) => Err(decode_failed(error)),
                }
            }
            AdoptCall::Shard { name } => {
                let adoption = self.adoption.as_mut().expect("a shard is read for an adoption");
                match Shard::decode_named(&bytes, &name) {
                    Ok(shard) => adoption.on_shard(name, shard).map_err(mismatch),
                    Err(error) => Err(decode_failed(error)),
                }
            }
            AdoptCall::Delta { name } => {
                let adoption = self.adoption.as_mut().expect("a delta is read for an adoption");
                match Delta::decode_named(&bytes, &name) {
                    Ok(delta) => adoption.on_delta(name, delta).map_err(mismatch),
                    Err(error) => Err(decode_failed(error)),
                }
            }
            AdoptCall::Look => unreachable!("a look is answered by on_look"),
        };
        match fitted {
            Ok(()) => self.read_for_adoption(now, io),
            Err(reason) => self.abandon(now, key, reason, io),
        }
    }

    /// Once the tip has reached the sequence a peer's checkpoint covers, its chain anchor
    /// must be the hash of this replica's slot there, when the replica still knows that
    /// slot; older than the slots it keeps, the checkpoint is trusted as an opening
    /// trusts it, by the names its objects are verified against.
    pub(super) fn check_chain(&mut self, sn: &Snapshot) -> Result<(), FailReason> {
        let Some(a) = self.adoption.as_mut() else { return Ok(()) };
        let s = a.sequence();
        if a.chain_checked || s > sn.world.sequence() {
            return Ok(());
        }
        a.chain_checked = true;
        let anchor = a.checkpoint.previous_hash;
        let agrees = match sn.recent.holding(s) {
            Some(span) => span.last == s && span.hash == anchor,
            None if s == sn.world.sequence() => sn.world.tip_hash() == anchor,
            None => true,
        };
        if agrees {
            return Ok(());
        }
        let key = self.keys.checkpoint(a.checkpoint.next_sequence);
        Err(FailReason::CheckpointMismatch { key, problem: CheckpointProblem::Diverged })
    }

    /// A complete adoption is installed once its chain anchor is checked.
    pub(super) fn install_adoption(&mut self, now: Instant, sn: &mut Snapshot, marks: &mut Marks) {
        let ready = self.adoption.as_ref().is_some_and(|a| a.is_complete() && a.chain_checked);
        if !ready {
            return;
        }
        let mut adoption = self.adoption.take().expect("ready");
        let adopt = adoption.take_adopt();
        // A look lists only names after the newest checkpoint known, and no run or other
        // adoption overlaps this one, so what is installed is newer than what is served.
        assert!(
            adoption.checkpoint.next_sequence > self.newest_next_sequence,
            "an adoption older than the served snapshot's checkpoint"
        );
        for (path, blocks, through) in &adopt {
            sn.world.adopt_history(path, blocks, *through);
        }
        sn.ledger.rebase(&sn.world, adoption.sequence(), &adopt);
        self.layers = adoption.root.as_ref().map(Layers::of);
        self.stats.adopted += 1;
        marks.hit(Mark::CheckpointAdopted);
        self.newest_next_sequence = adoption.checkpoint.next_sequence;
        self.unusable.retain(|s| *s > adoption.checkpoint.next_sequence);
        self.slots_at_newest = sn.world.slots_applied();
        self.carried_at_look = 0;
        self.newest_at = now;
        self.newest_created_us = Some(adoption.created_us);
        self.stored = adoption.names;
    }
}
