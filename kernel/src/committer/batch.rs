//! Batches: taking members from the queue, judging each in queue order against the state
//! the batch builds on (the confirmed state plus every batch ahead of it), encoding the
//! slot, and answering members once their slot is confirmed.

use super::{reply, Committer, Pending};
use crate::bodies::Bodies;
use crate::format::Slot;
use crate::hash::Hash32;
use crate::ids::RequestId;
use crate::io::Io;
use crate::reply::{WriteError, WriteOk};
use crate::snapshot::Snapshot;
use crate::time::Instant;
use crate::world::{
    evaluate, Evaluation, Layered, Overlay, Receipt, Rejection, SlotMember, StateView, ValidMutation,
};
use bytes::Bytes;
use std::collections::{BTreeSet, VecDeque};

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
    pub members: Vec<SlotMember>,
    /// The slot, once built, when any member applied.
    pub slot: Option<Encoded>,
    /// Bodies this batch's slot names that are not yet stored.
    pub bodies_waiting: BTreeSet<Hash32>,
    /// When this batch's first slot create was sent.
    pub first_create_at: Option<Instant>,
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
            first_create_at: None,
            sent_store_us: None,
        }
    }

    pub fn is_built(&self) -> bool {
        self.unbuilt.is_empty()
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
    pub(super) fn fill_pipeline(&mut self, now: Instant, sn: &Snapshot, bodies: &mut Bodies, io: &mut Io) {
        if self.catch_up.is_some() {
            return; // batches built now would be stale once the catch-up installs
        }
        let depth_max = 1 + self.config.batches_ahead_max;
        while self.pipeline.len() < depth_max && !self.queue.is_empty() {
            if self.pipeline.back().is_some_and(|last| !last.is_built()) {
                return;
            }
            let take = if self.queue.len() >= self.config.batch_members_deep_max {
                self.config.batch_members_deep_max
            } else {
                self.config.batch_members_max
            };
            let unbuilt: VecDeque<Pending> = self.queue.drain(..take.min(self.queue.len())).collect();
            let base_sequence =
                self.pipeline.back().map_or_else(|| sn.world.sequence(), |b| b.overlay.sequence());
            self.pipeline.push_back(Batch::new(base_sequence, unbuilt));
            self.build_last(now, sn, bodies, io);
        }
    }

    /// Judges the last batch's members in order until one needs a body not at hand.
    fn build_last(&mut self, now: Instant, sn: &Snapshot, bodies: &mut Bodies, io: &mut Io) {
        let world = &sn.world;
        // The batches before the last are its layers; the last is built.
        let batches = self.pipeline.make_contiguous();
        let (ahead, last) = batches.split_at_mut(batches.len() - 1);
        let batch = &mut last[0];
        while let Some(mut p) = batch.unbuilt.pop_front() {
            let mut layers: Vec<&Overlay> = ahead.iter().map(|b| &b.overlay).collect();
            layers.push(&batch.overlay);
            let view = Layered::new(world, &layers);
            if let ValidMutation::Append { path, .. } = &p.mutation {
                if let Some(needed) = view.entry(path.as_str()).map(|e| e.body_hash) {
                    if p.read.as_ref().is_none_or(|(h, _)| *h != needed) {
                        if let Some(bytes) = bodies.get(&needed) {
                            p.read = Some((needed, bytes));
                        }
                    }
                }
            }
            let read = p.read.clone();
            let body_of = move |h: &Hash32| read.as_ref().filter(|(rh, _)| rh == h).map(|(_, b)| b.clone());
            let at_sequence = view.sequence();
            let evaluation = evaluate(&view, p.op_id, &p.mutation, &body_of);
            drop(layers);
            let judged = match evaluation {
                Evaluation::NeedsBody(hash) => {
                    if bodies.fetch(now, hash, io) {
                        self.stats.body_reads += 1;
                    }
                    batch.unbuilt.push_front(p);
                    return;
                }
                Evaluation::Applied { member, body } => {
                    if let Some(body) = body {
                        let hash = member.version.as_ref().expect("a new body makes a version").body_hash;
                        bodies.remember(hash, body.clone());
                        let stored = world.paths_with_body(&hash).next().is_some();
                        if !stored && bodies.store(now, hash, body, io) {
                            batch.bodies_waiting.insert(hash);
                        }
                    }
                    batch.overlay.apply(&member);
                    batch.members.push(member);
                    Judged::Member
                }
                Evaluation::Unchanged { version } => Judged::Unchanged { version },
                Evaluation::Duplicate(r) => Judged::Duplicate(r),
                Evaluation::Rejected(r) => Judged::Rejected(r),
            };
            batch.built.push(Built { pending: p, judged, at_sequence });
        }
        if !batch.members.is_empty() {
            let prev_hash = ahead.iter().fold(world.tip_hash(), |h, b| b.tip_hash_after(h));
            let slot = Slot {
                world_id: world.world_id(),
                first_sequence: batch.base_sequence + 1,
                store_id: self.store_id,
                prev_hash,
                members: batch.members.clone(),
            };
            let bytes = Bytes::from(slot.encode());
            let hash = Hash32::of(&bytes);
            debug_assert_eq!(slot.last_sequence(), batch.overlay.sequence());
            batch.slot = Some(Encoded { slot, bytes, hash });
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

/// Answers every member of a batch that has not been answered.
pub(super) fn answer_batch(batch: &mut Batch, deadlines: &mut BTreeSet<(Instant, RequestId)>, io: &mut Io) {
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
        }
    }
}
