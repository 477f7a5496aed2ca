//! The checker: after every run it reads the whole log and the clients' history and
//! reports every breach of the guarantees (docs/SIMULATION.md, "The checker"). It trusts
//! nothing the replicas computed: checkpoint zero is rebuilt here from SPEC 10 and compared
//! byte for byte, every full checkpoint is compared with the model's state at the sequence
//! it covers, the chain is verified from the marker, every member is replayed through the
//! reference model, and every answer is judged against the model at the state it names.

#[cfg(test)]
mod carried_tests;
mod checkpoints;
#[cfg(test)]
mod checkpoints_tests;
#[cfg(test)]
mod member_tests;
mod names;
#[cfg(test)]
mod names_tests;
mod reach;
#[cfg(test)]
mod reach_tests;
mod reads;
#[cfg(test)]
mod reads_tests;
mod violation;
mod watches;
#[cfg(test)]
mod watches_tests;

pub use violation::{CheckpointField, MemberDiff, Rule, Violation};

use crate::history::{ClientOp, History, NameChange, Outcome, ReadOutcome, StoredObject};
use crate::{
    ModelInvalid, ModelPolicyBody, ModelReceipt, ModelRejection, ModelWorld, PathProblem, PolicyProblem,
    ReceiptKind, Verdict,
};
use bytes::Bytes;
use core::time::Duration;
use rustc_hash::FxHashMap;
use slotlog_kernel::format::{Checkpoint, Keys, Marker, MergeRule, Slot};
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::hash_many::hashes_of;
use slotlog_kernel::ids::{OperationId, WorldId};
use slotlog_kernel::reply::{WriteError, WriteOk};
use slotlog_kernel::time::Instant;
use slotlog_kernel::world::{self as kw, Mutation, SlotMember, VersionKind, WorldState};
use std::collections::BTreeSet;

/// A duration in whole microseconds, the unit the store's times are judged in (saturating).
pub(super) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Violations past this many are counted, not listed.
const VIOLATIONS_LISTED_MAX: usize = 50;

#[derive(Clone, Debug, Default)]
/// What the checker found in one run: the violations, and counts of what it judged.
pub struct CheckReport {
    /// The first violations found, up to a limit; `violations_total` counts them all.
    pub violations: Vec<Violation>,
    /// Every violation found, listed or not.
    pub violations_total: usize,
    /// Slots in the log.
    pub slots: u64,
    /// Members committed across all slots.
    pub members: u64,
    /// The log's tip: the last sequence of the last slot (0 for an empty log).
    pub tip_sequence: u64,
    /// Acknowledged commits missing from the log.
    pub lost: u64,
    /// Writes answered `Uncertain` that the log holds.
    pub uncertain_committed: u64,
    /// Writes answered `Uncertain` that the log does not hold.
    pub uncertain_absent: u64,
    /// Writes whose replica crashed before answering, and which the log holds.
    pub crashed_committed: u64,
    /// Writes whose replica crashed before answering, and which the log does not hold.
    pub crashed_absent: u64,
    /// Answers that were not commits (rejected, unchanged, duplicate) judged at a state.
    pub answers_judged: u64,
    /// Exact reads judged.
    pub reads_exact: u64,
    /// Catalog reads judged.
    pub reads_catalog: u64,
    /// Reads of views judged (of the exact and catalog reads above), and of them those
    /// answered from a pin behind the tip at the read's start.
    pub reads_view: u64,
    /// See `reads_view`.
    pub reads_view_behind: u64,
    /// Exact reads whose state missed a write acknowledged before the read began.
    pub stale_exact: u64,
    /// How far a catalog read's state trailed the tip at the read's start.
    pub catalog_lag_ms_max: f64,
    /// Watch sessions judged.
    pub watch_sessions: u64,
    /// Receipts delivered across all watch sessions.
    pub watch_events: u64,
    /// Watch sessions that ended in a resync.
    pub watch_resyncs: u64,
    /// The longest from a slot's creation (or a watch's start) to an event's delivery, in
    /// any watch; None unless the run set a watch delivery bound.
    pub watch_delivery_lag_ms_max: Option<f64>,
    /// Full checkpoints judged (every object under `checkpoints/` but checkpoint zero).
    pub checkpoints_judged: u64,
    /// Full checkpoints with at least one violation.
    pub checkpoint_mismatches: u64,
    /// Slot names that held two different sets of bytes over the run (must be 0).
    pub forks: u64,
    /// Forks whose members were never acknowledged: a stale create its writer caught.
    pub forks_refused: u64,
    /// Deletes of what a kept checkpoint or retained slot reached, and checkpoints created
    /// reaching a missing object (must be 0).
    pub reachable_missing: u64,
    /// Checkpoints created more than the grace after the slot they cover: their writer
    /// withdraws them (SPEC 10.15), so they are not held to reach only present objects.
    pub checkpoints_landed_late: u64,
    /// Objects under the world's prefix at the end.
    pub store_objects_end: u64,
    /// Bytes under the world's prefix at the end.
    pub store_bytes_end: u64,
    /// The most objects the bucket held at any instant (`None`: no name history).
    pub store_objects_max: Option<u64>,
}

/// The bounds the run's replicas were configured with, which some rules depend on.
#[derive(Clone, Copy, Debug)]
pub struct CheckOptions {
    /// How much older than its start a catalog read's state may be.
    pub catalog_staleness: Duration,
    /// A watch may resync only when its cursor is further back than this many slots.
    pub recent_slots_max: usize,
    /// The world's checkpoint grace (SPEC 10.15).
    pub checkpoint_grace: Duration,
    /// The world's slot retention (SPEC 10.15).
    pub slot_retention: Duration,
    /// The watch delivery rule: every event reaches every watch within this long of its
    /// slot's creation (or of the watch's start). None judges nothing; a run sets it from
    /// its replicas' poll interval plus a slack it states.
    pub watch_delivery_bound: Option<Duration>,
    /// The kernel's `view_age_max`: a view answers `ViewExpired` only past it.
    pub view_age_max: Duration,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            catalog_staleness: Duration::from_secs(1),
            recent_slots_max: 16_384,
            checkpoint_grace: Duration::from_secs(15 * 60),
            slot_retention: Duration::from_secs(24 * 3_600),
            watch_delivery_bound: None,
            view_age_max: Duration::from_secs(15 * 60),
        }
    }
}

impl CheckReport {
    fn violation(&mut self, v: Violation) {
        self.violations_total += 1;
        if self.violations.len() < VIOLATIONS_LISTED_MAX {
            self.violations.push(v);
        }
    }

    /// Whether the run broke no rule.
    pub fn passed(&self) -> bool {
        self.violations_total == 0
    }
}

struct SlotSpan {
    first: u64,
    last: u64,
    created_at: Instant,
    /// BLAKE3 of the slot's object bytes.
    hash: Hash32,
}

/// The slot holding `sequence`.
fn holding(spans: &[SlotSpan], sequence: u64) -> Option<&SlotSpan> {
    let i = spans.partition_point(|s| s.last < sequence);
    spans.get(i).filter(|s| s.first <= sequence)
}

/// When the state through `at` was the tip: from the creation of the slot holding `at`
/// (the start of time for 0) until the creation of the slot holding `at + 1`.
fn tip_interval(spans: &[SlotSpan], at: u64) -> (Instant, Instant) {
    let from =
        if at == 0 { Instant::ZERO } else { holding(spans, at).map_or(Instant::MAX, |s| s.created_at) };
    let until = holding(spans, at + 1).map_or(Instant::MAX, |s| s.created_at);
    (from, until)
}

/// Checkpoint zero as SPEC 10 lays it out, built from the text, not by the kernel's encoder:
/// the frame (magic, kind 4, schema 1, length, CRC32C) around world id, next sequence 1,
/// the marker's hash, no documents and no shards.
fn checkpoint_zero_bytes(world_id: WorldId, marker_hash: &Hash32) -> Vec<u8> {
    let mut payload = world_id.0.to_vec();
    payload.push(1); // next_sequence: varint 1
    payload.extend_from_slice(&marker_hash.0);
    payload.push(0); // document_count: varint 0
    payload.push(0); // shards: length 0
    let mut out = b"slog".to_vec();
    out.push(4);
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&u32::try_from(payload.len()).expect("small").to_le_bytes());
    out.extend_from_slice(&payload);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// A world with a marker has checkpoint zero, of this world, anchored on that marker.
/// Other checkpoints are full ones, judged by `checkpoints`.
fn check_checkpoint_zero(
    r: &mut CheckReport,
    objects: &[StoredObject],
    keys: &Keys,
    world_id: WorldId,
    marker: &[u8],
) {
    let marker_hash = Hash32::of(marker);
    let zero_key = keys.checkpoint(1);
    let Some(obj) = objects.iter().find(|o| o.key == zero_key) else {
        r.violation(Violation::CheckpointZeroMissing);
        return;
    };
    match Checkpoint::decode(&obj.bytes) {
        Ok(c) => {
            if c.world_id != world_id {
                r.violation(Violation::CheckpointZeroForeignWorld { found: c.world_id });
            }
            if c.next_sequence != 1 {
                r.violation(Violation::CheckpointZeroNextSequence { next_sequence: c.next_sequence });
            }
            if c.previous_hash != marker_hash {
                r.violation(Violation::CheckpointZeroNotTheMarker);
            }
            if c.document_count != 0 || c.root.is_some() {
                r.violation(Violation::CheckpointZeroNotEmpty { documents: c.document_count, root: c.root });
            }
        }
        Err(error) => r.violation(Violation::CheckpointZeroUndecodable { error }),
    }
    if obj.bytes[..] != checkpoint_zero_bytes(world_id, &marker_hash)[..] {
        r.violation(Violation::CheckpointZeroBytes);
    }
}

/// Every slot the run created, as first created, in key order: those collection deleted
/// as well as those in the bucket (a name created again with other bytes is a fork, which
/// the name rules report). Without a name history, the bucket's alone. From the history,
/// each comes with the hash it recorded of the bytes (the key they are kept under), so
/// the chain is not hashed twice.
fn log_objects(
    history: &History,
    objects: &[StoredObject],
    keys: &Keys,
) -> Vec<(StoredObject, Option<Hash32>)> {
    let prefix = keys.log_prefix();
    let in_bucket =
        || objects.iter().filter(|o| o.key.starts_with(&prefix)).map(|o| (o.clone(), None)).collect();
    let Some(names) = &history.names else { return in_bucket() };
    let mut log = Vec::new();
    for (key, events) in names.names().filter(|(k, _)| k.starts_with(&prefix)) {
        let first = events.iter().find(|e| e.change == NameChange::Created);
        let Some((hash, bytes)) =
            first.and_then(|e| e.bytes_hash).and_then(|h| Some((h, names.bytes_of(&h)?)))
        else {
            // A history that does not keep slot bytes judges the bucket's log.
            return in_bucket();
        };
        let created_at = first.expect("found").at;
        log.push((StoredObject { key: key.to_owned(), bytes: bytes.clone(), created_at }, Some(hash)));
    }
    log
}

/// Checks a run: `objects` is every object under the world's prefix.
pub fn check(
    history: &History,
    objects: &[StoredObject],
    keys: &Keys,
    world_id: WorldId,
    options: CheckOptions,
) -> CheckReport {
    let mut r = CheckReport {
        store_objects_end: objects.len() as u64,
        store_bytes_end: objects.iter().map(|o| o.bytes.len() as u64).sum(),
        ..CheckReport::default()
    };
    if let Some(names) = &history.names {
        let acked = history
            .ops
            .iter()
            .filter(|op| matches!(op.outcome, Outcome::Answered { result: Ok(WriteOk::Committed(_)), .. }))
            .map(|op| op.op_id)
            .collect();
        names::check(names, objects, keys, &acked, &mut r);
        let ages = reach::Ages {
            grace_us: micros(options.checkpoint_grace),
            slot_retention_us: micros(options.slot_retention),
        };
        reach::check(names, keys, ages, &mut r);
    }
    let log = log_objects(history, objects, keys);
    let marker_key = keys.marker();
    let Some(marker_obj) = objects.iter().find(|o| o.key == marker_key) else {
        if history.ops.iter().any(|op| matches!(op.outcome, Outcome::Answered { result: Ok(_), .. })) {
            r.violation(Violation::NoMarker);
        }
        return r;
    };
    // Checkpoints are judged by the world's merge rule, which its marker fixes.
    let merge_rule = match Marker::decode(&marker_obj.bytes) {
        Ok(m) if m.world_id == world_id => m.merge_rule,
        Ok(m) => {
            r.violation(Violation::MarkerForeignWorld);
            m.merge_rule
        }
        Err(error) => {
            r.violation(Violation::MarkerUndecodable { error });
            MergeRule::DEFAULT
        }
    };
    check_checkpoint_zero(&mut r, objects, keys, world_id, &marker_obj.bytes);
    let mut checkpoints = checkpoints::Judge::collect(objects, keys, world_id, merge_rule, &mut r);

    // 1. The chain: contiguous, every slot naming its predecessor, from the marker.
    let mut prev_hash = Hash32::of(&marker_obj.bytes);
    let mut next = 1u64;
    // Each slot with its creation and its carried bodies, still in the log's bytes: their
    // places are judged against the model's bodies in the replay (3).
    let mut slots: Vec<(Slot, Instant, Vec<&[u8]>)> = Vec::new();
    let mut slot_hashes: Vec<Hash32> = Vec::new();
    // The auditor answers no read or write, so it keeps only what applying judges.
    let mut auditor = WorldState::genesis(world_id, prev_hash).auditing();
    let log_prefix = keys.log_prefix();
    for (o, recorded_hash) in log.iter().filter(|(o, _)| o.key.starts_with(&log_prefix)) {
        let Some(sequence) = keys.parse_slot(&o.key) else {
            r.violation(Violation::NotASlotName { key: o.key.clone() });
            continue;
        };
        let (slot, carried) = match Slot::decode_unplaced(&o.bytes) {
            Ok(s) => s,
            Err(error) => {
                r.violation(Violation::SlotUndecodable { sequence, error });
                break;
            }
        };
        if slot.first_sequence != sequence {
            r.violation(Violation::SlotMisnamed { sequence, first_sequence: slot.first_sequence });
            break;
        }
        if sequence != next {
            r.violation(Violation::ChainGap { expected: next, found: sequence });
            break;
        }
        if slot.prev_hash != prev_hash {
            r.violation(Violation::ChainBreak { sequence });
            break;
        }
        if slot.world_id != world_id {
            r.violation(Violation::SlotForeignWorld { sequence });
            break;
        }
        if let Some((_, t, _)) = slots.last() {
            if o.created_at < *t {
                r.violation(Violation::SlotCreatedEarly { sequence });
            }
        }
        let slot_hash = recorded_hash.unwrap_or_else(|| Hash32::of(&o.bytes));
        if let Err(error) = auditor.apply_slot(&slot, slot_hash) {
            r.violation(Violation::KernelCannotApply { sequence, error });
            break;
        }
        prev_hash = slot_hash;
        next = slot.last_sequence() + 1;
        slots.push((slot, o.created_at, carried));
        slot_hashes.push(prev_hash);
    }
    r.slots = slots.len() as u64;
    r.tip_sequence = next - 1;
    let spans: Vec<SlotSpan> = slots
        .iter()
        .zip(&slot_hashes)
        .map(|((s, t, _), hash)| SlotSpan {
            first: s.first_sequence,
            last: s.last_sequence(),
            created_at: *t,
            hash: *hash,
        })
        .collect();
    checkpoints.anchor(&spans, r.tip_sequence, &mut r);

    // 2. Index what clients issued. These indexes are looked up once or twice a member
    // and never walked, so hash maps: as B-trees they were 3% of a run's instructions.
    let mut by_op: FxHashMap<OperationId, Vec<usize>> = FxHashMap::default();
    for (i, op) in history.ops.iter().enumerate() {
        by_op.entry(op.op_id).or_default().push(i);
    }
    // Answers judged at a state, by the sequence they name.
    let mut judged_at: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
    for (i, op) in history.ops.iter().enumerate() {
        if let Some(at) = judged_sequence(op) {
            if at > r.tip_sequence {
                r.violation(Violation::WriteAnsweredPastTip { op_id: op.op_id, at });
            } else {
                judged_at.entry(at).or_default().push(i);
            }
        }
        if let Outcome::Answered { result: Err(WriteError::Invalid(inv)), .. } = &op.outcome {
            match ModelWorld::new().evaluate(op.op_id, &op.mutation) {
                Verdict::Invalid(m) if m == invalid_to_model(inv) => {}
                model => r.violation(Violation::InvalidDisagrees { op_id: op.op_id, invalid: *inv, model }),
            }
        }
        if op.outcome == Outcome::Unanswered {
            r.violation(Violation::WriteUnanswered { op_id: op.op_id, replica: op.replica });
        }
    }

    let mut reads_at: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
    for (i, op) in history.reads.iter().enumerate() {
        match &op.outcome {
            ReadOutcome::Answered { result: Ok(ok), .. } => {
                if ok.at_sequence > r.tip_sequence {
                    r.violation(Violation::ReadAnsweredPastTip { read: i, at: ok.at_sequence });
                } else {
                    reads_at.entry(ok.at_sequence).or_default().push(i);
                }
            }
            ReadOutcome::Answered { result: Err(e), .. } => reads::judge_error(i, op, e, &mut r),
            ReadOutcome::Unanswered => {
                r.violation(Violation::ReadUnanswered { read: i, replica: op.replica })
            }
            ReadOutcome::Crashed => {}
        }
    }
    let read_judge = reads::Judge::new(history, &spans, options);
    read_judge.judge_view_expiries(&mut r);

    // 3. Replay the log through the model, judging each answer at the state it names.
    let mut model = ModelWorld::with_capacity(history.ops.len());
    let published = published_hashes(&history.ops);
    let mut committed: FxHashMap<OperationId, u64> =
        FxHashMap::with_capacity_and_hasher(history.ops.len(), Default::default());
    let judge_at = |model: &ModelWorld, at: u64, r: &mut CheckReport| {
        for &i in reads_at.get(&at).into_iter().flatten() {
            read_judge.judge(model, i, at, r);
        }
        for &i in judged_at.get(&at).into_iter().flatten() {
            let op = &history.ops[i];
            r.answers_judged += 1;
            judge_answer(model, op, r);
            if !judged_in_time(&spans, at, op) {
                r.violation(Violation::JudgedOutOfTime { op_id: op.op_id, at });
            }
        }
    };
    judge_at(&model, 0, &mut r);
    for (slot, created_at, carried) in &slots {
        // The new body the model made for each member, when it applied one, in order.
        let mut made: Vec<Option<(Hash32, Bytes)>> = Vec::with_capacity(slot.members.len());
        for m in &slot.members {
            r.members += 1;
            let op_id = m.op_id();
            let Some(indices) = by_op.get(&op_id) else {
                // The model cannot replay a member without its request; later members on
                // the same path will differ too, but this is the finding.
                r.violation(Violation::UnissuedMember { sequence: slot.first_sequence, op_id });
                made.push(None);
                judge_at(&model, m.sequence(), &mut r);
                continue;
            };
            let op = &history.ops[indices[0]];
            match model.apply_made(op_id, &op.mutation, published[indices[0]]) {
                (Verdict::Applied(applied), body) => {
                    if let Some(diff) = member_differs(m, &applied) {
                        r.violation(Violation::MemberDiffers { sequence: m.sequence(), op_id, diff });
                    }
                    // The modified time is the one value of a member the model cannot
                    // derive: the log's is judged against the store's creation of the slot
                    // and the document's previous time, then held by the model, so every
                    // read and checkpoint after must give the log's.
                    if let Some(e) = &m.entry {
                        // The log's time goes in, and the document's time before the
                        // member (the log's, judged here before) comes out: applying
                        // leaves it as it was (0 for a new document).
                        let previous_us =
                            model.replace_modified_time(e.path.as_str(), e.modified_us).unwrap_or(0);
                        let created_us = created_at.as_micros();
                        if e.modified_us > created_us || e.modified_us < previous_us {
                            r.violation(Violation::ModifiedTimeOutOfBounds {
                                sequence: m.sequence(),
                                path: e.path.to_string(),
                                modified_us: e.modified_us,
                                previous_us,
                                created_us,
                            });
                        }
                    }
                    made.push(applied.body_hash.map(Hash32).zip(body));
                }
                (model, _) => {
                    made.push(None);
                    r.violation(Violation::MemberNotApplied { sequence: m.sequence(), op_id, model });
                }
            }
            // An operation id commits again only once its receipt left the window the
            // member was built against (SPEC 10.13): the kernel can no longer know it.
            let window_from = crate::checkpoint::receipts_from(m.sequence() - 1);
            if committed.insert(op_id, m.sequence()).is_some_and(|first| first >= window_from) {
                r.violation(Violation::CommittedTwice { op_id });
            }
            for &i in indices {
                judge_commit(&history.ops[i], m, *created_at, &mut r);
            }
            judge_at(&model, m.sequence(), &mut r);
            checkpoints.judge_at(&model, m.sequence(), &mut r);
        }
        if let Some(body) = carried_out_of_place(&made, carried) {
            r.violation(Violation::CarriedBodyOutOfPlace { sequence: slot.first_sequence, body });
        }
    }
    checkpoints.finish(&mut r);

    // 4. Every acknowledged write is in the log; every unknown outcome is settled.
    for op in &history.ops {
        let in_log = committed.contains_key(&op.op_id);
        match &op.outcome {
            Outcome::Answered { result: Ok(WriteOk::Committed(receipt)), .. } if !in_log => {
                r.lost += 1;
                r.violation(Violation::LostWrite { op_id: op.op_id, sequence: receipt.sequence });
            }
            Outcome::Answered { result: Err(WriteError::Uncertain { .. }), .. } => {
                if in_log {
                    r.uncertain_committed += 1;
                } else {
                    r.uncertain_absent += 1;
                }
            }
            Outcome::Crashed => {
                if in_log {
                    r.crashed_committed += 1;
                } else {
                    r.crashed_absent += 1;
                }
            }
            Outcome::Preloaded if !in_log => {
                r.violation(Violation::PreloadedMissing { op_id: op.op_id });
            }
            _ => {}
        }
    }

    // 5. Commit order respects real time: a write acknowledged before another began has
    //    the smaller sequence.
    let mut acked: Vec<(u64, Instant, Instant)> = history
        .ops
        .iter()
        .filter_map(|op| match &op.outcome {
            Outcome::Answered { at, result: Ok(WriteOk::Committed(rc)) } => {
                Some((rc.sequence, op.invoked_at, *at))
            }
            _ => None,
        })
        .collect();
    acked.sort();
    let mut earliest_answer_after = Instant::MAX;
    for &(sequence, invoked, answered) in acked.iter().rev() {
        if earliest_answer_after < invoked {
            r.violation(Violation::RealTimeOrder { sequence });
            break;
        }
        earliest_answer_after = earliest_answer_after.min(answered);
    }

    // 6. The kernel's replay of the log holds what the model holds.
    compare_states(&auditor, &model, &mut r);

    // 7. Every watcher received the log's changes in order, none missing, none twice.
    let receipts: Vec<&kw::Receipt> =
        slots.iter().flat_map(|(s, _, _)| s.members.iter().map(|m| &m.receipt)).collect();
    watches::check(history, &receipts, &spans, options, &mut r);
    r
}

/// The sequence a non-commit answer names.
fn judged_sequence(op: &ClientOp) -> Option<u64> {
    match &op.outcome {
        Outcome::Answered { result, .. } => match result {
            Ok(WriteOk::Unchanged { at_sequence, .. }) | Ok(WriteOk::Duplicate { at_sequence, .. }) => {
                Some(*at_sequence)
            }
            Err(WriteError::Rejected { at_sequence, .. }) => Some(*at_sequence),
            _ => None,
        },
        _ => None,
    }
}

/// A member inside a slot is placed at that slot's creation; a state is the tip over
/// `tip_interval`. The answer stands if that interval meets the request's time in flight.
fn judged_in_time(spans: &[SlotSpan], at: u64, op: &ClientOp) -> bool {
    let Some(answered) = op.answered_at() else { return false };
    let (from, until) = tip_interval(spans, at);
    from <= answered && until >= op.invoked_at
}

fn judge_answer(model: &ModelWorld, op: &ClientOp, r: &mut CheckReport) {
    let Outcome::Answered { result, .. } = &op.outcome else { return };
    let verdict = model.evaluate(op.op_id, &op.mutation);
    let agrees = match (result, &verdict) {
        (Ok(WriteOk::Unchanged { version, .. }), Verdict::Unchanged { version: v }) => version == v,
        (Ok(WriteOk::Duplicate { receipt, .. }), Verdict::Duplicate(mr)) => receipt_to_model(receipt) == *mr,
        (Err(WriteError::Rejected { rejection, .. }), Verdict::Rejected(mr)) => {
            rejection_to_model(rejection) == *mr
        }
        _ => false,
    };
    if !agrees {
        r.violation(Violation::AnswerDisagrees {
            op_id: op.op_id,
            answer: Box::new(result.clone()),
            model: verdict,
        });
    }
}

fn judge_commit(op: &ClientOp, m: &SlotMember, created_at: Instant, r: &mut CheckReport) {
    match &op.outcome {
        Outcome::Answered { at, result } => match result {
            Ok(WriteOk::Committed(receipt)) => {
                if *receipt != m.receipt {
                    r.violation(Violation::ReceiptDiffers {
                        op_id: op.op_id,
                        acknowledged: Box::new(receipt.clone()),
                        logged: Box::new(m.receipt.clone()),
                    });
                }
                if created_at < op.invoked_at || created_at > *at {
                    r.violation(Violation::CommitOutOfFlight { op_id: op.op_id });
                }
            }
            // A retry of a committed operation id answers with the first receipt.
            Ok(WriteOk::Duplicate { receipt, .. }) => {
                if *receipt != m.receipt {
                    r.violation(Violation::DuplicateReceiptDiffers {
                        op_id: op.op_id,
                        answered: Box::new(receipt.clone()),
                        logged: Box::new(m.receipt.clone()),
                    });
                }
            }
            Err(WriteError::Uncertain { .. }) => {}
            other => r.violation(Violation::RefusedYetCommitted {
                op_id: op.op_id,
                answer: Box::new(other.clone()),
                sequence: m.sequence(),
            }),
        },
        Outcome::Crashed | Outcome::Preloaded | Outcome::Unanswered => {}
    }
}

/// The first of a slot's carried bodies that is not where SPEC 5.7 puts it: each must be
/// the new body of a member, the first member with that body, once, in member order. The
/// decoder judges this by hashing every carried body; the checker by bytes, against the
/// bodies the model made for the members (`made`, in member order, None where it made
/// none), so no body is hashed twice by the checker's side and nothing the kernel computed
/// is taken on trust.
fn carried_out_of_place(made: &[Option<(Hash32, Bytes)>], carried: &[&[u8]]) -> Option<usize> {
    if carried.is_empty() {
        return None;
    }
    // The members a body may belong to: the first with each body the model made. Their
    // bodies differ (their hashes do), so at most one can match a carried body.
    let mut hashes = BTreeSet::new();
    let firsts: Vec<&[u8]> =
        made.iter().flatten().filter(|(hash, _)| hashes.insert(*hash)).map(|(_, body)| &body[..]).collect();
    let mut next = 0;
    for (i, body) in carried.iter().enumerate() {
        match firsts[next..].iter().position(|b| b == body) {
            Some(at) => next += at + 1,
            None => return Some(i),
        }
    }
    None
}

fn member_differs(m: &SlotMember, a: &crate::ModelApplied) -> Option<MemberDiff> {
    if receipt_to_model(&m.receipt) != a.receipt {
        return Some(MemberDiff::Receipt {
            kernel: Box::new(m.receipt.clone()),
            model: Box::new(a.receipt.clone()),
        });
    }
    match &m.entry {
        Some(e)
            if e.archived != a.archived
                || Some(e.body_hash.0) != a.body_hash
                || e.body_len != a.body_len
                || e.first_version != a.first_version
                || e.catalog.as_deref() != a.catalog.as_deref() =>
        {
            return Some(MemberDiff::Entry { kernel: Box::new(e.clone()), model: Box::new(a.clone()) });
        }
        Some(_) => {}
        None if a.receipt.kind != ReceiptKind::PolicySet => return Some(MemberDiff::NoEntry),
        None => {}
    }
    // The version record is the model's own, field by field: its version, sequence and
    // operation from the receipt the model derived, its body from the body after the
    // member, its kind from the mutation (not only present where the kernel says so).
    match (&m.version, a.new_version) {
        (None, false) => {}
        (Some(v), true) => {
            let kind = match a.receipt.kind {
                ReceiptKind::Published => Some(VersionKind::Publish),
                ReceiptKind::Appended => Some(VersionKind::Append),
                _ => None,
            };
            if Some(v.kind) != kind
                || v.version != a.receipt.version
                || v.sequence != a.receipt.sequence
                || v.op_id != a.receipt.op_id
                || Some(v.body_hash.0) != a.body_hash
                || v.body_len != a.body_len
            {
                return Some(MemberDiff::VersionRecord {
                    kernel: Box::new(v.clone()),
                    model: Box::new(a.clone()),
                });
            }
        }
        _ => return Some(MemberDiff::VersionRecordPresence),
    }
    if m.prune.map(|p| (p.first, p.last)) != a.prune {
        return Some(MemberDiff::Prune { kernel: m.prune, model: a.prune });
    }
    let policy = m.policy.as_ref().map(|p| ModelPolicyBody {
        retention_versions: p.retention_versions,
        body_bytes_max: p.body_bytes_max,
        read_only_prefixes: p.read_only_prefixes.iter().map(|x| x.to_string()).collect(),
    });
    if policy != a.policy {
        return Some(MemberDiff::Policy { kernel: policy, model: a.policy.clone() });
    }
    None
}

/// The model's hash of each issued publish's body, by the index of its op (`None` for
/// other mutations), all taken at once: a body is most often one or two 1 KiB chunks,
/// whose blocks hashed one body at a time run through one SIMD lane; across bodies they
/// fill the lanes (`hash_many`, held to `blake3::hash` by its tests). The kernel hashes
/// each body with `blake3::hash` alone, so a fault in either shows as a member differing.
fn published_hashes(ops: &[ClientOp]) -> Vec<Option<[u8; 32]>> {
    fn body(op: &ClientOp) -> Option<&Bytes> {
        match &op.mutation {
            Mutation::Publish { body, .. } => Some(body),
            _ => None,
        }
    }
    let bodies: Vec<&[u8]> = ops.iter().filter_map(body).map(|b| &b[..]).collect();
    let mut hashes = hashes_of(&bodies).into_iter();
    ops.iter().map(|op| body(op).and_then(|_| hashes.next()).map(|h| h.0)).collect()
}

fn compare_states(kernel: &WorldState, model: &ModelWorld, r: &mut CheckReport) {
    let model_docs: BTreeSet<String> = model.documents().map(|(p, _)| p.to_string()).collect();
    if model_docs.len() != kernel.document_count() {
        r.violation(Violation::DocumentCount { kernel: kernel.document_count(), model: model_docs.len() });
    }
    for (path, doc) in kernel.documents() {
        let Some(md) = model.document(path.as_str()) else {
            r.violation(Violation::DocumentNotInModel { path: path.clone() });
            continue;
        };
        let e = &doc.entry;
        if e.version != md.version
            || e.first_version != md.first_version
            || e.archived != md.archived
            || e.body_hash.0 != md.body_hash
            || e.modified_sequence != md.modified_sequence
            || e.modified_us != md.modified_us
            || e.catalog.as_deref() != md.catalog.as_deref()
        {
            r.violation(Violation::DocumentDiffers {
                path: path.clone(),
                kernel: Box::new(e.clone()),
                model: Box::new(md.clone()),
            });
        }
        // Versions up to the stored ones are in the checkpoint's history blocks (judged
        // with the checkpoints); the kernel holds those after them.
        let through = doc.stored_through();
        let kv: Vec<u64> = doc.held_versions().map(|v| v.version).collect();
        let mv: Vec<u64> =
            model.versions(path.as_str()).iter().map(|v| v.version).filter(|v| *v > through).collect();
        if kv != mv {
            r.violation(Violation::RetainedVersionsDiffer { path: path.clone(), kernel: kv, model: mv });
        }
    }
}

/// The kernel's receipt in the model's terms, for comparison.
pub fn receipt_to_model(r: &kw::Receipt) -> ModelReceipt {
    ModelReceipt {
        op_id: r.op_id,
        sequence: r.sequence,
        kind: match r.kind {
            kw::ReceiptKind::Published => ReceiptKind::Published,
            kw::ReceiptKind::Appended => ReceiptKind::Appended,
            kw::ReceiptKind::Archived => ReceiptKind::Archived,
            kw::ReceiptKind::Unarchived => ReceiptKind::Unarchived,
            kw::ReceiptKind::PolicySet => ReceiptKind::PolicySet,
        },
        path: r.path.as_ref().map(|p| p.to_string()),
        version: r.version,
    }
}

/// The kernel's rejection in the model's terms, for comparison.
pub fn rejection_to_model(r: &kw::Rejection) -> ModelRejection {
    match r {
        kw::Rejection::Conflict { current } => ModelRejection::Conflict { current: *current },
        kw::Rejection::Topology { blocking } => ModelRejection::Topology { blocking: blocking.to_string() },
        kw::Rejection::ReadOnly { prefix } => ModelRejection::ReadOnly { prefix: prefix.to_string() },
        kw::Rejection::TooLarge { size, max } => ModelRejection::TooLarge { size: *size, max: *max },
        kw::Rejection::Archived => ModelRejection::Archived,
        kw::Rejection::NotFound => ModelRejection::NotFound,
        kw::Rejection::OperationIdReused { sequence } => {
            ModelRejection::OperationIdReused { sequence: *sequence }
        }
    }
}

pub(super) fn path_problem_to_model(p: &kw::PathProblem) -> PathProblem {
    match p {
        kw::PathProblem::Empty => PathProblem::Empty,
        kw::PathProblem::DotSegment => PathProblem::DotSegment,
        kw::PathProblem::ControlCharacter => PathProblem::ControlCharacter,
        kw::PathProblem::SegmentTooLong => PathProblem::SegmentTooLong,
        kw::PathProblem::TooLong => PathProblem::TooLong,
    }
}

/// The kernel's `Invalid` reason in the model's terms, for comparison.
pub fn invalid_to_model(i: &kw::Invalid) -> ModelInvalid {
    match i {
        kw::Invalid::Path(p) => ModelInvalid::Path(path_problem_to_model(p)),
        kw::Invalid::Policy(p) => ModelInvalid::Policy(match p {
            kw::PolicyProblem::Retention => PolicyProblem::Retention,
            kw::PolicyProblem::BodyMax => PolicyProblem::BodyMax,
            kw::PolicyProblem::TooManyPrefixes => PolicyProblem::TooManyPrefixes,
            kw::PolicyProblem::Prefix(pp) => PolicyProblem::Prefix(path_problem_to_model(pp)),
        }),
        kw::Invalid::CatalogRecordTooLong { len, max } => {
            ModelInvalid::CatalogRecordTooLong { len: *len, max: *max }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use slotlog_kernel::format::DecodeError;
    use slotlog_kernel::ids::StoreId;

    const WORLD: WorldId = WorldId([3; 16]);

    fn object(key: String, bytes: Vec<u8>) -> StoredObject {
        StoredObject { key, bytes: Bytes::from(bytes), created_at: Instant::ZERO }
    }

    /// A world of a marker and `checkpoint` (or none) at checkpoint zero's key.
    fn violations_with(checkpoint: Option<Vec<u8>>) -> Vec<Violation> {
        let keys = Keys::new("w");
        let marker = Marker::new(WORLD, StoreId(1)).encode();
        let mut objects = vec![object(keys.marker(), marker)];
        if let Some(bytes) = checkpoint {
            objects.push(object(keys.checkpoint(1), bytes));
        }
        check(&History::default(), &objects, &keys, WORLD, CheckOptions::default()).violations
    }

    fn marker_hash() -> Hash32 {
        Hash32::of(&Marker::new(WORLD, StoreId(1)).encode())
    }

    #[test]
    fn the_models_checkpoint_zero_is_the_kernels() {
        let hash = marker_hash();
        assert_eq!(checkpoint_zero_bytes(WORLD, &hash), Checkpoint::zero(WORLD, hash).encode());
    }

    #[test]
    fn a_world_with_its_checkpoint_zero_passes() {
        assert_eq!(violations_with(Some(Checkpoint::zero(WORLD, marker_hash()).encode())), vec![]);
    }

    #[test]
    fn a_marker_without_checkpoint_zero_is_a_violation() {
        let found = violations_with(None);
        assert_eq!(found, vec![Violation::CheckpointZeroMissing]);
        assert_eq!(found[0].rule(), Rule::CheckpointMismatch);
        assert_eq!(found[0].to_string(), "the world has a marker but no checkpoint zero");
    }

    #[test]
    fn checkpoint_zero_of_another_marker_or_world_is_a_violation() {
        let other_marker = Checkpoint::zero(WORLD, Hash32::of(b"another marker")).encode();
        assert!(violations_with(Some(other_marker)).contains(&Violation::CheckpointZeroNotTheMarker));
        let other = WorldId([4; 16]);
        let other_world = Checkpoint::zero(other, marker_hash()).encode();
        assert!(violations_with(Some(other_world))
            .contains(&Violation::CheckpointZeroForeignWorld { found: other }));
        let garbage = violations_with(Some(b"not a checkpoint".to_vec()));
        let undecodable = Violation::CheckpointZeroUndecodable { error: DecodeError::Foreign };
        assert!(garbage.contains(&undecodable), "{garbage:?}");
        assert!(garbage.iter().all(|v| v.rule() == Rule::CheckpointMismatch));
        assert_eq!(undecodable.to_string(), "checkpoint zero does not decode: not a slotlog object");
    }
}
