//! A tiny harness for kernel tests: one replica over an in-memory store whose calls the
//! test can hold, answer with a fault, or let through, and a clock that jumps to the next
//! wake-up. Pure and deterministic, like the kernel.

use crate::blob::{BlobError, BlobOp, BlobOutcome, BlobResult, Generation, ObjectMeta, Written};
use crate::config::Config;
use crate::effect::{Effect, Input, Request};
use crate::format::{decode_body, encode_body, Keys, Slot};
use crate::hash::Hash32;
use crate::ids::{BlobOpId, OperationId, RequestId, StoreId, WorldId};
use crate::replica::{Identity, Replica};
use crate::reply::{FailReason, Reply, WriteError, WriteOk};
use crate::time::Instant;
use crate::world::{
    evaluate, validate, Evaluation, Expected, Layered, Mutation, Overlay, Receipt, WorldState, Write,
};
use bytes::Bytes;
use core::time::Duration;
use std::collections::{BTreeMap, VecDeque};

pub const WORLD: WorldId = WorldId([9; 16]);
/// The key prefix every harness replica serves.
pub const PREFIX: &str = "w";

/// The keys of the harness world.
pub fn keys() -> Keys {
    Keys::new(PREFIX)
}

/// Objects by key with generations and creation times, applied at once.
#[derive(Clone, Default)]
pub struct MemStore {
    pub objects: BTreeMap<String, (Bytes, u64, u64)>,
    generation: u64,
    /// Keys listings leave out, with how many more listings that reach them leave them
    /// out: a listing is not a snapshot (SPEC 7, "A listing is a hint").
    pub hidden: BTreeMap<String, u32>,
    /// Pages come in reverse key order, as a local directory's unsorted walk may.
    pub unsorted: bool,
    /// Creates and rewrites are answered without the store's time, as S3 answers a PUT.
    pub writes_untimed: bool,
}

impl MemStore {
    pub fn apply(&mut self, now: Instant, op: &BlobOp) -> BlobResult {
        let meta = |key: &str, g: u64, t: u64, size: usize| ObjectMeta {
            key: key.to_string(),
            generation: g.into(),
            created_at_us: t,
            size: size as u64,
        };
        match op {
            BlobOp::Create { key, bytes } => {
                if self.objects.contains_key(key) {
                    return Err(BlobError::AlreadyExists);
                }
                self.generation += 1;
                self.objects.insert(key.clone(), (bytes.clone(), self.generation, now.as_micros()));
                let mut written: Written = meta(key, self.generation, now.as_micros(), bytes.len()).into();
                if self.writes_untimed {
                    written.time = None;
                }
                Ok(BlobOutcome::Created(written))
            }
            BlobOp::Get { key } => match self.objects.get(key) {
                Some((b, g, t)) => {
                    Ok(BlobOutcome::Got { meta: meta(key, *g, *t, b.len()), bytes: b.clone() })
                }
                None => Err(BlobError::NotFound),
            },
            BlobOp::Stat { key } => match self.objects.get(key) {
                Some((b, g, t)) => Ok(BlobOutcome::Stat(meta(key, *g, *t, b.len()))),
                None => Err(BlobError::NotFound),
            },
            BlobOp::List { prefix, start_after, limit } => {
                let mut entries = Vec::new();
                let mut more = false;
                for (k, (b, g, t)) in self.objects.range(prefix.clone()..) {
                    if !k.starts_with(prefix.as_str()) {
                        break;
                    }
                    if start_after.as_ref().is_some_and(|s| k <= s) {
                        continue;
                    }
                    if entries.len() == *limit as usize {
                        more = true;
                        break;
                    }
                    if let Some(n) = self.hidden.get_mut(k).filter(|n| **n > 0) {
                        *n -= 1;
                        continue;
                    }
                    entries.push(meta(k, *g, *t, b.len()));
                }
                if self.unsorted {
                    entries.reverse();
                }
                Ok(BlobOutcome::Listed { entries, more })
            }
            BlobOp::Rewrite { key, bytes, if_generation } => match self.objects.get(key) {
                None => Err(BlobError::NotFound),
                Some((_, g, _)) if Generation::from(*g) != *if_generation => {
                    Err(BlobError::PreconditionFailed)
                }
                Some(_) => {
                    self.generation += 1;
                    self.objects.insert(key.clone(), (bytes.clone(), self.generation, now.as_micros()));
                    let mut written: Written =
                        meta(key, self.generation, now.as_micros(), bytes.len()).into();
                    if self.writes_untimed {
                        written.time = None;
                    }
                    Ok(BlobOutcome::Rewritten(written))
                }
            },
            BlobOp::Delete { key, if_generation } => match self.objects.get(key) {
                None => Err(BlobError::NotFound),
                Some((_, g, _)) if Generation::from(*g) != *if_generation => {
                    Err(BlobError::PreconditionFailed)
                }
                Some(_) => {
                    self.objects.remove(key);
                    Ok(BlobOutcome::Deleted)
                }
            },
        }
    }

    pub fn slot_keys(&self) -> Vec<String> {
        self.objects.keys().filter(|k| k.contains("/log/")).cloned().collect()
    }

    /// Writes an object as a peer would, without going through a replica.
    pub fn put(&mut self, now: Instant, key: String, bytes: Bytes) {
        let created = self.apply(now, &BlobOp::Create { key, bytes });
        assert!(created.is_ok(), "the name is free: {created:?}");
    }

    pub fn bytes(&self, key: &str) -> Option<Bytes> {
        self.objects.get(key).map(|(b, _, _)| b.clone())
    }
}

/// What the test does with a call when it is delivered.
pub enum Fate {
    /// Apply it and answer with the result.
    Deliver,
    /// Answer with this error without applying.
    Fail(BlobError),
    /// Apply it but answer `Timeout`.
    TimeoutApplied,
    /// Answer with this result without applying (say, one the test applied earlier with
    /// [`Harness::apply_early`]).
    Answer(BlobResult),
}

pub struct Harness {
    pub replica: Replica,
    pub store: MemStore,
    pub now: Instant,
    /// Calls emitted and not yet delivered, in order.
    pub calls: VecDeque<(BlobOpId, BlobOp)>,
    /// Every call ever emitted, in order.
    pub log: Vec<BlobOp>,
    pub replies: BTreeMap<RequestId, Result<WriteOk, WriteError>>,
    pub committed: Vec<u64>,
    pub read_replies: BTreeMap<RequestId, Result<crate::reply::ReadOk, crate::reply::ReadError>>,
    /// Events each watch received, in order.
    pub changes: BTreeMap<RequestId, Vec<crate::world::Receipt>>,
    /// The bytes (as the feed counts them) of every `Effect::Changes`, in order.
    pub change_batch_bytes: Vec<usize>,
    pub ended: BTreeMap<RequestId, crate::effect::WatchEnd>,
    /// Every `Effect::Failed` the replica emitted.
    pub failures: Vec<FailReason>,
    pub warnings: Vec<crate::effect::Warning>,
    /// Unless set, a replica that fails closed panics the test.
    pub failure_expected: bool,
    /// As the driver does: a segment part the index reads is tokenized outside the
    /// replica and handed in with its completion (`Input::BlobDonePrepared`).
    pub prepare_parts: bool,
    /// Completions handed in that way.
    pub parts_prepared: usize,
    next_request: u64,
}

impl Harness {
    pub fn new(config: Config) -> Harness {
        Harness::with_store(config, MemStore::default(), 1)
    }

    /// A replica over `store`. The compactor is off unless the config says
    /// `checkpoint_slots` below the default: tests of other owners jump the clock past the
    /// checkpoint interval and must not see checkpoints appear. Blind probes are off
    /// unless the config says a `blind_probe_slots` other than the default.
    pub fn with_store(config: Config, store: MemStore, store_id: u64) -> Harness {
        Harness::with_receipt_key(config, store, store_id, crate::world::ReceiptKey::from_seed(7))
    }

    /// [`Harness::with_store`], the replica's receipt window keyed by `receipt_key`.
    pub fn with_receipt_key(
        mut config: Config,
        store: MemStore,
        store_id: u64,
        receipt_key: crate::world::ReceiptKey,
    ) -> Harness {
        if config.checkpoint_slots >= Config::default().checkpoint_slots {
            config.compaction = crate::config::CompactionRole::Off;
        }
        // The harness passes peers' hints in (`Input::Follow`), as an embedder with a hint
        // transport does: blind probes are off unless a test asks for another streak.
        if config.blind_probe_slots == Config::default().blind_probe_slots {
            config.blind_probe_slots = 0;
        }
        let identity = Identity {
            world_id: Some(WORLD),
            store_id: StoreId(store_id),
            prefix: PREFIX.into(),
            rng_seed: 7,
            receipt_key,
        };
        let now = Instant::from_millis(1);
        let replica = Replica::new(config, identity, now).expect("valid config");
        let mut h = Harness {
            replica,
            store,
            now,
            calls: VecDeque::new(),
            log: Vec::new(),
            replies: BTreeMap::new(),
            committed: Vec::new(),
            read_replies: BTreeMap::new(),
            changes: BTreeMap::new(),
            change_batch_bytes: Vec::new(),
            ended: BTreeMap::new(),
            failures: Vec::new(),
            warnings: Vec::new(),
            failure_expected: false,
            prepare_parts: false,
            parts_prepared: 0,
            next_request: 0,
        };
        h.drain();
        h
    }

    /// Opens the world: delivers calls until the replica is open.
    pub fn opened(config: Config) -> Harness {
        let mut h = Harness::new(config);
        h.run();
        assert!(h.replica.is_open());
        h
    }

    pub fn drain(&mut self) {
        while let Some(e) = self.replica.poll_effect() {
            match e {
                Effect::Blob { id, op } => {
                    self.log.push(op.clone());
                    self.calls.push_back((id, op));
                }
                Effect::Reply { id, reply: Reply::Write(r) } => {
                    assert!(self.replies.insert(id, r).is_none(), "answered twice");
                }
                Effect::Reply { id, reply: Reply::Read(r) } => {
                    assert!(self.read_replies.insert(id, r).is_none(), "answered twice");
                }
                Effect::Changes { id, events } => {
                    self.change_batch_bytes.push(events.iter().map(crate::feed::event_bytes).sum());
                    self.changes.entry(id).or_default().extend(events);
                }
                Effect::WatchEnded { id, end } => {
                    assert!(self.ended.insert(id, end).is_none(), "ended twice");
                }
                Effect::Committed { sequence } => self.committed.push(sequence),
                Effect::Failed(reason) => {
                    assert!(self.failure_expected, "replica failed: {reason:?}");
                    self.failures.push(reason);
                }
                Effect::Warning(w) => self.warnings.push(w),
            }
        }
    }

    pub fn request(&mut self, request: Request) -> RequestId {
        self.next_request += 1;
        let id = RequestId(self.next_request);
        self.replica.handle(self.now, Input::Request { id, request });
        self.drain();
        id
    }

    pub fn input(&mut self, input: Input) {
        self.replica.handle(self.now, input);
        self.drain();
        self.wake_for_deferred_seal();
    }

    pub fn write(&mut self, op: u128, mutation: Mutation) -> RequestId {
        self.next_request += 1;
        let id = RequestId(self.next_request);
        let w = Write { op_id: OperationId::from(op), mutation };
        self.replica.handle(self.now, Input::Request { id, request: Request::Write(w) });
        self.drain();
        id
    }

    pub fn publish(&mut self, op: u128, path: &str, body: &str) -> RequestId {
        self.write(op, publish(path, body, Expected::Any))
    }

    pub fn append(&mut self, op: u128, path: &str, bytes: &str) -> RequestId {
        self.write(op, append(path, bytes))
    }

    /// Delivers the oldest call with its fate. Returns the op.
    pub fn deliver_with(&mut self, fate: Fate) -> BlobOp {
        let (id, op) = self.calls.pop_front().expect("a call to deliver");
        self.now = self.now + Duration::from_millis(1);
        let result = match fate {
            Fate::Deliver => self.store.apply(self.now, &op),
            Fate::Fail(e) => Err(e),
            Fate::TimeoutApplied => {
                let _ = self.store.apply(self.now, &op);
                Err(BlobError::Timeout)
            }
            Fate::Answer(result) => result,
        };
        let name = self.replica.search_part(id).filter(|_| self.prepare_parts);
        let input = match (name, result) {
            (Some(name), Ok(crate::blob::BlobOutcome::Got { meta, bytes })) => {
                let part = crate::search::prepare_part(&bytes, &name);
                self.parts_prepared += 1;
                Input::BlobDonePrepared {
                    id,
                    result: Ok(crate::blob::BlobOutcome::Got { meta, bytes }),
                    part,
                }
            }
            (_, result) => Input::BlobDone { id, result },
        };
        self.replica.handle(self.now, input);
        self.drain();
        self.wake_for_deferred_seal();
        op
    }

    /// As the driver does: a replica that answered a slot's writes and deferred its next
    /// seal (`Config::seal_after_answers`) is woken at once, with no new request between.
    fn wake_for_deferred_seal(&mut self) {
        if self.replica.seal_deferred() {
            self.replica.handle_timeout(self.now);
            self.drain();
        }
    }

    pub fn deliver(&mut self) -> BlobOp {
        self.deliver_with(Fate::Deliver)
    }

    /// Index of the first pending call that matches.
    pub fn find(&self, pred: impl Fn(&BlobOp) -> bool) -> Option<usize> {
        self.calls.iter().position(|(_, op)| pred(op))
    }

    /// Moves the first matching pending call to the front.
    pub fn bring_forward(&mut self, pred: impl Fn(&BlobOp) -> bool) -> bool {
        match self.find(pred) {
            Some(i) => {
                let c = self.calls.remove(i).expect("index");
                self.calls.push_front(c);
                true
            }
            None => false,
        }
    }

    /// Delivers calls (and fires due timers) until nothing is left to do.
    pub fn run(&mut self) {
        for _ in 0..100_000 {
            if !self.calls.is_empty() {
                self.deliver();
            } else if let Some(t) = self.replica.poll_timeout() {
                self.now = self.now.max(t);
                self.replica.handle_timeout(self.now);
                self.drain();
                if self.calls.is_empty() && self.replica.poll_timeout() == Some(t) {
                    break;
                }
            } else {
                return;
            }
        }
    }

    /// Jumps the clock to the next wake-up and fires it.
    pub fn fire_timer(&mut self) {
        let t = self.replica.poll_timeout().expect("a timer");
        self.now = self.now.max(t);
        self.replica.handle_timeout(self.now);
        self.drain();
    }

    pub fn reply(&self, id: RequestId) -> Option<&Result<WriteOk, WriteError>> {
        self.replies.get(&id)
    }

    /// The receipt of a committed write; panics on any other answer.
    pub fn receipt(&self, id: RequestId) -> &Receipt {
        match self.reply(id) {
            Some(Ok(WriteOk::Committed(r))) => r,
            other => panic!("expected {id:?} committed, got {other:?}"),
        }
    }

    /// Delivers every pending call that does not match `held`, and every call those
    /// emit, until only held calls are pending. Fires no timer.
    pub fn deliver_all_but(&mut self, held: impl Fn(&BlobOp) -> bool) {
        for _ in 0..100_000 {
            if !self.bring_forward(|op| !held(op)) {
                return;
            }
            self.deliver();
        }
        panic!("calls kept coming");
    }

    /// Delivers pending calls until one matching `until` is at the front (not delivered).
    pub fn deliver_until(&mut self, until: impl Fn(&BlobOp) -> bool) {
        for _ in 0..100_000 {
            if self.bring_forward(&until) {
                return;
            }
            assert!(!self.calls.is_empty(), "no matching call came");
            self.deliver();
        }
        panic!("calls kept coming");
    }

    /// Applies the first pending call matching `pred` to the store now but leaves it
    /// pending: its answer is held. Returns the result to answer it with later
    /// (`Fate::Answer`).
    pub fn apply_early(&mut self, pred: impl Fn(&BlobOp) -> bool) -> BlobResult {
        let i = self.find(pred).expect("a matching pending call");
        let op = self.calls[i].1.clone();
        self.store.apply(self.now, &op)
    }

    /// Sends a read; returns its request id.
    pub fn read(&mut self, read: crate::effect::Read) -> RequestId {
        self.request(Request::Read(read))
    }

    /// Subscribes to the change feed; returns the watch's id.
    pub fn watch(&mut self, cursor: u64, credit: u32) -> RequestId {
        self.request(Request::Watch { cursor, credit })
    }

    /// The answer of a read that succeeded; panics on any other state.
    pub fn read_ok(&self, id: RequestId) -> &crate::reply::ReadOk {
        match self.read_replies.get(&id) {
            Some(Ok(ok)) => ok,
            other => panic!("expected read {id:?} answered, got {other:?}"),
        }
    }

    /// How often the replica took the branch `mark` names (the coverage marks).
    pub fn marked(&self, mark: crate::marks::Mark) -> u64 {
        self.replica.marks().count(mark)
    }

    /// Moves the clock on without firing anything.
    pub fn advance_ms(&mut self, ms: u64) {
        self.now = self.now + Duration::from_millis(ms);
    }

    /// Moves the clock on by `d`.
    pub fn advance(&mut self, d: Duration) {
        self.now = self.now + d;
    }

    /// Delivers every pending call and every call those emit; fires no timer.
    pub fn settle(&mut self) {
        self.deliver_all_but(|_| false);
    }

    /// The ops pending delivery that match `pred`, in order.
    pub fn pending(&self, pred: impl Fn(&BlobOp) -> bool) -> Vec<BlobOp> {
        self.calls.iter().filter(|(_, op)| pred(op)).map(|(_, op)| op.clone()).collect()
    }

    /// Body blob creates this replica sent (a hedge or retry counts again).
    pub fn body_creates(&self) -> usize {
        self.log.iter().filter(|op| is_body_create(op)).count()
    }

    /// Every slot this replica sent a create for, decoded, in the order sent.
    pub fn slots_sent(&self) -> Vec<Slot> {
        self.log
            .iter()
            .filter_map(|op| match op {
                BlobOp::Create { key, bytes } if is_slot_key(key) => {
                    Some(Slot::decode(bytes).expect("a slot we sent decodes"))
                }
                _ => None,
            })
            .collect()
    }
}

/// `config` with every body a blob created before its slot (the record's way), for
/// tests of the blob path.
pub fn blob_bodies(config: Config) -> Config {
    Config { body_inline_bytes_max: 0, ..config }
}

/// A peer replica's writes, made straight into the store: each slot is built with the
/// kernel's own rules on the peer's copy of the world, its bodies stored before it.
pub struct Peer {
    pub world: WorldState,
    pub store_id: StoreId,
}

impl Peer {
    /// A peer that has seen exactly what `h` has confirmed.
    pub fn following(h: &Harness) -> Peer {
        Peer { world: h.replica.world().expect("open").clone(), store_id: StoreId(99) }
    }

    /// The peer's next slot holding `writes` (each must apply), not yet stored.
    pub fn build(&self, store: &MemStore, writes: &[(u128, Mutation)]) -> (Slot, Vec<Bytes>) {
        let mut overlay = Overlay::new(self.world.sequence());
        let mut members = Vec::new();
        let mut bodies = Vec::new();
        for (op, m) in writes {
            let valid = validate(m).expect("a valid peer write");
            let layers = [&overlay];
            let view = Layered::new(&self.world, &layers);
            let body_of = |h: &Hash32| {
                let stored = store.bytes(&keys().body(h))?;
                Some(Bytes::from(decode_body(&stored, h).expect("a stored body")))
            };
            match evaluate(&view, OperationId::from(*op), &valid, 0, &body_of) {
                Evaluation::Applied { member, body } => {
                    bodies.extend(body);
                    overlay.apply(&member);
                    members.push(member);
                }
                other => panic!("peer write {op} does not apply: {other:?}"),
            }
        }
        let slot = Slot {
            world_id: self.world.world_id(),
            first_sequence: self.world.next_sequence(),
            store_id: self.store_id,
            prev_hash: self.world.tip_hash(),
            members,
            bodies: Vec::new(),
        };
        (slot, bodies)
    }

    /// Stores `bodies` (when absent) and then `slot` under its name; returns the slot's
    /// bytes. The peer's world follows the slot when it continues the peer's chain.
    pub fn plant(&mut self, store: &mut MemStore, now: Instant, slot: &Slot, bodies: &[Bytes]) -> Bytes {
        for body in bodies {
            let key = keys().body(&Hash32::of(body));
            if store.bytes(&key).is_none() {
                store.put(now, key, Bytes::from(encode_body(body)));
            }
        }
        let bytes = Bytes::from(slot.encode());
        store.put(now, keys().slot(slot.first_sequence), bytes.clone());
        let _ = self.world.apply_slot(slot, Hash32::of(&bytes));
        bytes
    }

    /// Builds and stores the peer's next slot; returns its bytes.
    pub fn commit(&mut self, h: &mut Harness, writes: &[(u128, Mutation)]) -> Bytes {
        let (slot, bodies) = self.build(&h.store, writes);
        self.plant(&mut h.store, h.now, &slot, &bodies)
    }
}

pub fn publish(path: &str, body: &str, expected: Expected) -> Mutation {
    Mutation::Publish { path: path.into(), body: Bytes::from(body.to_string()), catalog: None, expected }
}

pub fn append(path: &str, bytes: &str) -> Mutation {
    Mutation::Append { path: path.into(), bytes: Bytes::from(bytes.to_string()), expected: Expected::Any }
}

fn is_slot_key(key: &str) -> bool {
    key.contains("/log/")
}

fn is_body_key(key: &str) -> bool {
    key.contains("/blobs/")
}

fn is_checkpoint_key(key: &str) -> bool {
    key.contains("/checkpoints/")
}

pub fn is_checkpoint_create(op: &BlobOp) -> bool {
    matches!(op, BlobOp::Create { key, .. } if is_checkpoint_key(key))
}

pub fn is_slot_create(op: &BlobOp) -> bool {
    matches!(op, BlobOp::Create { key, .. } if is_slot_key(key))
}

pub fn is_body_create(op: &BlobOp) -> bool {
    matches!(op, BlobOp::Create { key, .. } if is_body_key(key))
}

pub fn is_slot_get(op: &BlobOp) -> bool {
    matches!(op, BlobOp::Get { key } if is_slot_key(key))
}

pub fn is_body_get(op: &BlobOp) -> bool {
    matches!(op, BlobOp::Get { key } if is_body_key(key))
}

pub fn is_slot_stat(op: &BlobOp) -> bool {
    matches!(op, BlobOp::Stat { key } if is_slot_key(key))
}
