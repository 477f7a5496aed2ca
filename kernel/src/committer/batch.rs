//! Batches: taking members from the queue, judging each in queue order against the state
//! the batch builds on (the confirmed state plus every batch ahead of it), encoding the
//! slot, and answering members once their slot is confirmed.

use super::{reply, Committer, Pending, WritePhases};
use crate::bodies::Bodies;
use crate::format::{column_item_bytes_max, Slot};
use crate::hash::Hash32;
use crate::ids::RequestId;
use crate::io::Io;
use crate::reply::{WriteError, WriteOk};
use crate::snapshot::Snapshot;
use crate::time::Instant;
use crate::world::document::VersionAt;
use crate::world::{
    evaluate, Evaluation, Layered, Overlay, Receipt, Rejection, SlotMember, StateView, ValidMutation,
};
use bytes::Bytes;
use rustc_hash::FxHashSet;
use std::collections::{BTreeSet, VecDeque};

/// A slot's bytes besides its members and bodies: frame, ids, hashes and varints.
const SLOT_OVERHEAD_BYTES: usize = 128;
/// A carried body's length prefix, at most.
const BODY_LENGTH_BYTES: usize = 4;

/// How a member came out when its batch was built.
#[derive(Clone, Debug)]
pub(super) enum Judged {
    Member,
    Unchanged { version: u64 },
    Duplicate(Receipt),
    Rejected(Rejection),
}

#[derive(Clone, Debug)]
pub(super) struct Built {
    pub pending: Pending,
    pub judged: Judged,
    /// The last sequence of the state it was judged against.
    pub at_sequence: u64,
    /// When it was judged.
    pub built_at: Instant,
}

#[derive(Clone, Debug)]
pub(super) struct Encoded {
    pub slot: Slot,
    pub bytes: Bytes,
    pub hash: Hash32,
}

#[derive(Debug)]
pub(super) struct Batch {
    pub base_sequence: u64,
    /// Judged members, in queue order.
    pub built: Vec<Built>,
    /// Taken from the queue, not yet judged: the front waits for a body.
    pub unbuilt: VecDeque<Pending>,
    pub overlay: Overlay,
    /// Members applied, until the seal moves them into the slot ([`Batch::has_members`]).
    pub members: Vec<SlotMember>,
    /// The slot, once built, when any member applied.
    pub slot: Option<Encoded>,
    /// Bodies this batch's slot names that are not yet stored.
    pub bodies_waiting: BTreeSet<Hash32>,
    /// New bodies the slot carries (SPEC 5.7), each once, in member order.
    pub carried: Vec<(Hash32, Bytes)>,
    /// The hashes of `carried`: each member asks whether its body is among them, and a
    /// scan made a full batch (256 members) a quadratic number of comparisons.
    carried_hashes: FxHashSet<Hash32>,
    /// The slot's payload so far: members and carried bodies, encoded.
    pub payload_bytes: usize,
    /// Its slot is encoded: it takes no more members.
    pub sealed: bool,
    /// A member did not fit in its bytes: it takes no more.
    pub full: bool,
    /// When this batch's first slot create was sent.
    pub first_create_at: Option<Instant>,
    /// When its slot was known to have landed.
    pub created_at: Option<Instant>,
    /// The newest store time this replica had seen when it was sent: a store time no
    /// later than the send, whatever the replica's own clock did meanwhile.
    pub sent_store_us: Option<u64>,
}

impl Batch {
    fn new(base_sequence: u64, unbuilt: VecDeque<Pending>) -> Batch {
        Batch {
            base_sequence,
            built: Vec::new(),
            unbuilt,
            overlay: Overlay::new(base_sequence),
            members: Vec::new(),
            slot: None,
            bodies_waiting: BTreeSet::new(),
            carried: Vec::new(),
            carried_hashes: FxHashSet::default(),
            payload_bytes: 0,
            sealed: false,
            full: false,
            first_create_at: None,
            created_at: None,
            sent_store_us: None,
        }
    }

    pub fn is_built(&self) -> bool {
        self.unbuilt.is_empty()
    }

    /// Whether any member applied: held until the seal, in the slot after it.
    pub fn has_members(&self) -> bool {
        self.slot.is_some() || !self.members.is_empty()
    }

    fn tip_hash_after(&self, before: Hash32) -> Hash32 {
        self.slot.as_ref().map_or(before, |e| e.hash)
    }

    pub fn latest_arrival(&self) -> Instant {
        self.built
            .iter()
            .filter(|b| !b.pending.answered)
            .map(|b| b.pending.arrived)
            .max()
            .unwrap_or(Instant::ZERO)
    }
}

impl Committer {
    /// Takes queued writes into batches: the last batch, while it is not sealed and has
    /// room, takes them (so a write waits for the slot in flight, not for a batch staged
    /// before it arrived), and new batches are staged behind full ones up to the depth.
    pub(super) fn fill_pipeline(&mut self, now: Instant, sn: &Snapshot, bodies: &mut Bodies, io: &mut Io) {
        if self.catch_up.is_some() {
            return; // batches built now would be stale once the catch-up installs
        }
        let depth_max = 1 + self.config.batches_ahead_max;
        while !self.queue.is_empty() {
            let Some(last) = self.pipeline.back() else {
                let take = self.config.batch_members_max.min(self.queue.len());
                let taken: VecDeque<Pending> = self.queue.drain(..take).collect();
                self.pipeline.push_back(Batch::new(sn.world.sequence(), taken));
                self.build_last(now, sn, bodies, io);
                continue;
            };
            if !last.is_built() {
                return; // it waits for a body; what is queued waits behind it
            }
            // The head does not grow: it goes as soon as its bodies are stored, and
            // writes that arrive meanwhile must not keep adding bodies for it to wait on.
            // Only while its seal is deferred (the writers a slot just answered may join
            // it, `next_input`) does an unsealed head take writes.
            let room = self.config.batch_members_max.saturating_sub(last.built.len());
            let open = self.pipeline.len() > 1 || self.seal_deferred_at.is_some();
            if open && !last.sealed && !last.full && room > 0 {
                // Whatever is queued, up to the most: batches grow with the queue, never
                // by a timer.
                let take = room.min(self.queue.len());
                let taken: Vec<Pending> = self.queue.drain(..take).collect();
                self.pipeline.back_mut().expect("last").unbuilt.extend(taken);
                self.build_last(now, sn, bodies, io);
                continue;
            }
            if self.pipeline.len() >= depth_max {
                return;
            }
            let base_sequence = last.overlay.sequence();
            self.seal_last(sn);
            let take = self.config.batch_members_max.min(self.queue.len());
            let taken: VecDeque<Pending> = self.queue.drain(..take).collect();
            self.pipeline.push_back(Batch::new(base_sequence, taken));
            self.build_last(now, sn, bodies, io);
        }
    }

    /// Encodes the last batch's slot: from here on it takes no more members, and a batch
    /// behind it may name its hash.
    pub(super) fn seal_last(&mut self, sn: &Snapshot) {
        let world = &sn.world;
        let batches = self.pipeline.make_contiguous();
        let Some((batch, ahead)) = batches.split_last_mut() else { return };
        if batch.sealed {
            return;
        }
        invariant!(batch.is_built(), "a batch is sealed once built");
        batch.sealed = true;
        if batch.members.is_empty() {
            return;
        }
        let prev_hash = ahead.iter().fold(world.tip_hash(), |h, b| b.tip_hash_after(h));
        // Moved, not copied: a sealed batch takes no more members, and from here on the
        // slot's are the batch's.
        let mut slot = Slot {
            world_id: world.world_id(),
            first_sequence: batch.base_sequence + 1,
            store_id: self.store_id,
            prev_hash,
            members: std::mem::take(&mut batch.members),
            bodies: batch.carried.iter().map(|(_, b)| b.clone()).collect(),
        };
        if self.config.defects().carry_bodies_reversed {
            slot.bodies.reverse();
        }
        let bytes = Bytes::from(slot.encode());
        invariant!(
            bytes.len() <= self.config.slot_bytes_max.max(SLOT_OVERHEAD_BYTES + batch.payload_bytes),
            "a slot within its most bytes, or one member alone"
        );
        let hash = Hash32::of(&bytes);
        invariant_eq!(slot.last_sequence(), batch.overlay.sequence());
        batch.slot = Some(Encoded { slot, bytes, hash });
    }

    /// Judges the last batch's members in order until one needs a body not at hand, or
    /// one would take the slot past its most bytes (it and those after it go back to the
    /// front of the queue, and the batch is full).
    fn build_last(&mut self, now: Instant, sn: &Snapshot, bodies: &mut Bodies, io: &mut Io) {
        let world = &sn.world;
        // The batches before the last are its layers; the last is built.
        let batches = self.pipeline.make_contiguous();
        let (ahead, last) = batches.split_at_mut(batches.len() - 1);
        let batch = &mut last[0];
        invariant!(!batch.sealed, "a sealed batch takes no members");
        while let Some(mut p) = batch.unbuilt.pop_front() {
            // Sized for the last layer too: collected to the length of those ahead, the
            // push grew it again, for every member.
            let mut layers: Vec<&Overlay> = Vec::with_capacity(ahead.len() + 1);
            layers.extend(ahead.iter().map(|b| &b.overlay));
            layers.push(&batch.overlay);
            let view = Layered::new(world, &layers);
            if let ValidMutation::Append { path, .. } = &p.mutation {
                if let Some(needed) = view.entry_of(path).map(|e| e.body_hash) {
                    if p.read.as_ref().is_none_or(|(h, _)| *h != needed) {
                        // A body a batch ahead carries is in no bucket yet: take it from there.
                        let carried = ahead.iter().chain([&*batch]).flat_map(|b| &b.carried);
                        let found = carried.clone().find(|(h, _)| *h == needed).map(|(_, b)| b.clone());
                        if let Some(bytes) = found.or_else(|| bodies.get(&needed)) {
                            p.read = Some((needed, bytes));
                        }
                    }
                }
            }
            let read = p.read.clone();
            let body_of = move |h: &Hash32| read.as_ref().filter(|(rh, _)| rh == h).map(|(_, b)| b.clone());
            let at_sequence = view.sequence();
            // A lower bound on the store's clock, so the slot it lands in was created after.
            let mut store_us = io.store_clock.now_us(now).unwrap_or(0);
            if self.config.defects().modified_time_ahead {
                store_us += 60_000_000;
            }
            let evaluation = evaluate(&view, p.op_id, &p.mutation, store_us, &body_of);
            drop(layers);
            let judged = match evaluation {
                Evaluation::NeedsBody(hash) => {
                    let at = held_version_at(world, &p.mutation, hash);
                    if bodies.fetch(now, hash, at, &sn.recent, io) {
                        self.stats.body_reads += 1;
                    }
                    batch.unbuilt.push_front(p);
                    return;
                }
                Evaluation::Applied { member, body } => {
                    let member_bytes = postcard::experimental::serialized_size(&member).unwrap_or(0)
                        + member.entry.as_ref().map_or(0, column_item_bytes_max);
                    let new_body = body.map(|body| {
                        let hash = member.version.as_ref().expect("a new body makes a version").body_hash;
                        (hash, body)
                    });
                    // Carried in this member's slot even when stored elsewhere: a reader
                    // finds a small body in the slot of its version (SPEC 5.7).
                    let small = new_body.as_ref().filter(|(h, b)| {
                        b.len() <= self.config.body_inline_bytes_max && !batch.carried_hashes.contains(h)
                    });
                    let carried_bytes = small.map_or(0, |(_, b)| b.len() + BODY_LENGTH_BYTES);
                    let bytes = batch.payload_bytes + member_bytes + carried_bytes;
                    let too_long = SLOT_OVERHEAD_BYTES + bytes > self.config.slot_bytes_max;
                    if too_long && batch.has_members() {
                        batch.full = true;
                        batch.unbuilt.push_front(p);
                        for q in batch.unbuilt.drain(..).rev() {
                            self.queue.push_front(q);
                        }
                        return;
                    }
                    // One member alone past the most carries nothing.
                    let carry = small.is_some() && !too_long;
                    if let Some((hash, body)) = new_body {
                        bodies.remember(hash, body.clone());
                        if carry {
                            batch.payload_bytes += carried_bytes;
                            batch.carried_hashes.insert(hash);
                            batch.carried.push((hash, body));
                        } else if body.len() > self.config.body_inline_bytes_max || too_long {
                            let stored = world.paths_with_body(&hash).next().is_some();
                            if !stored && bodies.store(now, hash, body, io) {
                                batch.bodies_waiting.insert(hash);
                            }
                        }
                    }
                    batch.payload_bytes += member_bytes;
                    batch.overlay.apply(&member);
                    batch.members.push(member);
                    Judged::Member
                }
                Evaluation::Unchanged { version } => Judged::Unchanged { version },
                Evaluation::Duplicate(r) => Judged::Duplicate(r),
                Evaluation::Rejected(r) => Judged::Rejected(r),
            };
            batch.built.push(Built { pending: p, judged, at_sequence, built_at: now });
        }
    }

    /// A body is in the bucket: no batch waits on it any more.
    pub fn on_body_stored(&mut self, hash: &Hash32) {
        for b in &mut self.pipeline {
            b.bodies_waiting.remove(hash);
        }
    }

    /// A body read from the bucket (verified against its hash): the last batch may wait
    /// on it. A stale read is harmless, since a build uses a read only when its hash is
    /// the one it needs.
    pub fn on_body_read(
        &mut self,
        now: Instant,
        sn: &Snapshot,
        hash: Hash32,
        body: Bytes,
        bodies: &mut Bodies,
        io: &mut Io,
    ) {
        let waiting = self.pipeline.back_mut().and_then(|b| b.unbuilt.front_mut());
        if let Some(p) = waiting {
            p.read = Some((hash, body));
            self.build_last(now, sn, bodies, io);
        }
    }
}

/// Answers every member of a batch that has not been answered, and keeps when each
/// passed its phases.
pub(super) fn answer_batch(
    now: Instant,
    batch: &mut Batch,
    deadlines: &mut BTreeSet<(Instant, RequestId)>,
    io: &mut Io,
) {
    let mut slot_index = 0;
    for b in &mut batch.built {
        let outcome = match &b.judged {
            Judged::Member => {
                let enc = batch.slot.as_ref().expect("members make a slot");
                let receipt = enc.slot.members[slot_index].receipt.clone();
                slot_index += 1;
                Ok(WriteOk::Committed(receipt))
            }
            Judged::Unchanged { version } => {
                Ok(WriteOk::Unchanged { version: *version, at_sequence: b.at_sequence })
            }
            Judged::Duplicate(r) => Ok(WriteOk::Duplicate { receipt: r.clone(), at_sequence: b.at_sequence }),
            Judged::Rejected(r) => {
                Err(WriteError::Rejected { rejection: r.clone(), at_sequence: b.at_sequence })
            }
        };
        if !b.pending.answered {
            b.pending.answered = true;
            deadlines.remove(&(b.pending.deadline, b.pending.request));
            reply(io, b.pending.request, outcome);
            let member = matches!(b.judged, Judged::Member);
            io.keep_phases(WritePhases {
                request: b.pending.request,
                queued: b.pending.arrived,
                built: b.built_at,
                sent: batch.first_create_at.filter(|_| member),
                created: batch.created_at.filter(|_| member),
                confirmed: now,
            });
        }
    }
}

/// The sequence and body length of the append's base version when its record is held,
/// so the body may be found in its slot.
fn held_version_at(
    world: &crate::world::WorldState,
    mutation: &ValidMutation,
    hash: Hash32,
) -> Option<(u64, u64)> {
    let ValidMutation::Append { path, .. } = mutation else { return None };
    let d = world.document(path)?;
    match d.version(d.entry.version)? {
        VersionAt::Held(r) if r.body_hash == hash => Some((r.sequence, r.body_len)),
        _ => None,
    }
}
