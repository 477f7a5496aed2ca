//! The deterministic multi-replica harness: a discrete-event loop over virtual time that
//! drives many kernels against one simulated GCS, with clients, crashes and restarts.
//!
//! One seed decides everything: the store's latencies and faults, the workload, the
//! crashes, the replicas' own seeds, and the order of events that fall on the same
//! microsecond (ties are broken by a draw, not by insertion order). The same
//! (configuration, seed, code) gives the same trace hash on every machine.

use crate::gcs::{GcsConfig, PlannedReply, SimGcs, StoreStats};
use crate::rng::SimRng;
use crate::workload::{Arrivals, Generator, Workload};
use bytes::Bytes;
use slotlog_kernel::blob::{BlobOp, BlobResult};
use slotlog_kernel::format::{encode_body, Keys, Marker, Slot, SLOT_MEMBERS_MAX};
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::{BlobOpId, RequestId, StoreId, WorldId};
use slotlog_kernel::reply::{FailReason, Reply};
use slotlog_kernel::time::Instant;
use slotlog_kernel::world::{evaluate, validate, Evaluation, WorldState, Write};
use slotlog_kernel::{CommitterStats, Config, Effect, Identity, Input, Replica, Request};
use slotlog_model::{ClientOp, History, Outcome, StoredObject};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// Random crashes: each live replica (while another stays up) crashes at this mean
/// interval across the cluster, and comes back after a pause.
#[derive(Clone, Debug, PartialEq)]
pub struct Crashes {
    pub mean_interval_ms: u64,
    pub down_ms_min: u64,
    pub down_ms_max: u64,
}

#[derive(Clone, Debug)]
pub struct ClusterConfig {
    pub seed: u64,
    pub replicas: usize,
    pub gcs: GcsConfig,
    pub kernel: Config,
    pub workload: Workload,
    /// Clients send writes for this long.
    pub duration_ms: u64,
    /// Documents written into the log before the run.
    pub preload_documents: usize,
    pub crashes: Option<Crashes>,
    /// Each replica's clock runs ahead of true time by up to this much.
    pub clock_skew_ms_max: u64,
    /// After the clients stop, how long the run may take to settle every write.
    pub settle_ms_max: u64,
    pub prefix: String,
}

impl ClusterConfig {
    pub fn new(seed: u64, replicas: usize, gcs: GcsConfig, workload: Workload) -> ClusterConfig {
        ClusterConfig {
            seed,
            replicas,
            gcs,
            kernel: Config::default(),
            workload,
            duration_ms: 10_000,
            preload_documents: 0,
            crashes: None,
            clock_skew_ms_max: 0,
            settle_ms_max: 60_000,
            prefix: "worlds/sim".to_string(),
        }
    }
}

/// What one replica did over the run, all incarnations together.
#[derive(Clone, Debug, Default)]
pub struct ReplicaReport {
    pub stats: CommitterStats,
    pub crashes: u32,
    pub failed: Option<FailReason>,
}

pub struct RunResult {
    pub history: History,
    pub objects: Vec<StoredObject>,
    pub keys: Keys,
    pub world_id: WorldId,
    /// When the clients stopped, and when the run settled.
    pub workload_end: Instant,
    pub end: Instant,
    pub trace_hash: Hash32,
    pub replicas: Vec<ReplicaReport>,
    pub store: StoreStats,
    /// Writes still unsettled when the settle time ran out.
    pub unsettled: usize,
}

#[derive(Clone, Debug)]
enum Event {
    /// A client sends a write: an open-loop arrival, or a closed-loop writer's next.
    Arrival {
        writer: Option<usize>,
    },
    Apply {
        ticket: u64,
    },
    Reply {
        ticket: u64,
    },
    Wake {
        node: usize,
        incarnation: u32,
    },
    Crash,
    Restart {
        node: usize,
    },
}

struct Ticket {
    node: usize,
    incarnation: u32,
    id: BlobOpId,
    op: BlobOp,
    planned: PlannedReply,
    result: Option<BlobResult>,
    /// The apply is still to come.
    applying: bool,
    /// The reply is still to come.
    replying: bool,
}

struct Node {
    replica: Option<Replica>,
    incarnation: u32,
    /// The replica's clock minus true time.
    skew_us: u64,
    /// True time of the wake-up scheduled for the replica, if any.
    wake_at: Option<Instant>,
    /// Writes sent to this incarnation and not yet answered: request to history index.
    requests: BTreeMap<RequestId, usize>,
    report: ReplicaReport,
    /// Stats of earlier incarnations.
    stats_before: CommitterStats,
}

struct Cluster<'a> {
    config: &'a ClusterConfig,
    keys: Keys,
    world_id: WorldId,
    now: Instant,
    queue: BinaryHeap<Reverse<(Instant, u64, u64)>>,
    events: BTreeMap<u64, Event>,
    next_serial: u64,
    tiebreak: SimRng,
    chaos: SimRng,
    gcs: SimGcs,
    tickets: BTreeMap<u64, Ticket>,
    next_ticket: u64,
    nodes: Vec<Node>,
    generator: Generator,
    history: History,
    writes: Vec<Write>,
    /// Request of each closed-loop writer's write in flight, by writer.
    writer_node: Vec<usize>,
    request_writer: BTreeMap<RequestId, usize>,
    next_request: u64,
    trace: blake3::Hasher,
    workload_end: Instant,
}

pub fn run(config: &ClusterConfig) -> RunResult {
    assert!(config.replicas > 0, "a cluster needs a replica");
    let keys = Keys::new(&config.prefix);
    let mut seeds = SimRng::derive(config.seed, "slotlog-sim cluster");
    let mut world_bytes = [0u8; 16];
    world_bytes[..8].copy_from_slice(&seeds.next_u64().to_le_bytes());
    world_bytes[8..].copy_from_slice(&seeds.next_u64().to_le_bytes());
    let mut c = Cluster {
        config,
        keys,
        world_id: WorldId(world_bytes),
        now: Instant::ZERO,
        queue: BinaryHeap::new(),
        events: BTreeMap::new(),
        next_serial: 0,
        tiebreak: SimRng::derive(config.seed, "slotlog-sim ties"),
        chaos: SimRng::derive(config.seed, "slotlog-sim chaos"),
        gcs: SimGcs::new(config.gcs, config.seed),
        tickets: BTreeMap::new(),
        next_ticket: 0,
        nodes: Vec::new(),
        generator: Generator::new(config.workload.clone(), config.seed),
        history: History::default(),
        writes: Vec::new(),
        writer_node: Vec::new(),
        request_writer: BTreeMap::new(),
        next_request: 0,
        trace: blake3::Hasher::new(),
        workload_end: Instant::from_millis(config.duration_ms),
    };
    c.preload();
    for n in 0..config.replicas {
        let skew_us =
            if config.clock_skew_ms_max == 0 { 0 } else { c.chaos.below(config.clock_skew_ms_max * 1_000) };
        c.nodes.push(Node {
            replica: None,
            incarnation: 0,
            skew_us,
            wake_at: None,
            requests: BTreeMap::new(),
            report: ReplicaReport::default(),
            stats_before: CommitterStats::default(),
        });
        c.start_node(n);
    }
    match config.workload.arrivals {
        Arrivals::Open { .. } => c.schedule(Instant::ZERO, Event::Arrival { writer: None }),
        Arrivals::Closed { writers_per_replica } => {
            for n in 0..config.replicas {
                for _ in 0..writers_per_replica {
                    let w = c.writer_node.len();
                    c.writer_node.push(n);
                    c.schedule(Instant::ZERO, Event::Arrival { writer: Some(w) });
                }
            }
        }
    }
    if let Some(cr) = &config.crashes {
        let first = Instant::ZERO + ms(c.chaos.exponential(cr.mean_interval_ms as f64));
        c.schedule(first, Event::Crash);
    }
    let deadline = c.workload_end + core::time::Duration::from_millis(config.settle_ms_max);
    while let Some(Reverse((at, _, serial))) = c.queue.pop() {
        if at > deadline {
            break;
        }
        let event = c.events.remove(&serial).expect("every queued serial has an event");
        if c.is_stale(&event, at) {
            continue;
        }
        c.now = at;
        c.step(event);
    }
    c.finish()
}

fn ms(v: f64) -> core::time::Duration {
    core::time::Duration::from_micros((v * 1_000.0) as u64)
}

impl Cluster<'_> {
    fn schedule(&mut self, at: Instant, event: Event) {
        self.next_serial += 1;
        let tie = self.tiebreak.next_u64();
        self.queue.push(Reverse((at, tie, self.next_serial)));
        self.events.insert(self.next_serial, event);
    }

    fn trace(&mut self, parts: &[u64], text: &str) {
        self.trace.update(&self.now.as_micros().to_le_bytes());
        for p in parts {
            self.trace.update(&p.to_le_bytes());
        }
        self.trace.update(text.as_bytes());
    }

    fn kernel_now(&self, node: usize) -> Instant {
        Instant::from_micros(self.now.as_micros() + self.nodes[node].skew_us)
    }

    /// Writes the preloaded documents straight into the bucket: a marker and full slots,
    /// built with the kernel's own rules.
    fn preload(&mut self) {
        let count = self.config.preload_documents;
        let writes = self.generator.preload(count);
        let marker = Marker { world_id: self.world_id, created_by: StoreId(0) };
        let marker_bytes = Bytes::from(marker.encode());
        let mut world = WorldState::genesis(self.world_id, Hash32::of(&marker_bytes));
        self.put(self.keys.marker(), marker_bytes);
        for chunk in writes.chunks(SLOT_MEMBERS_MAX) {
            let mut members = Vec::new();
            let mut overlay = slotlog_kernel::world::Overlay::new(world.next_sequence() - 1);
            for (w, body) in chunk {
                let valid = validate(&w.mutation).expect("preloaded writes are valid");
                let layers = [&overlay];
                let view = slotlog_kernel::world::Layered::new(&world, &layers);
                let Evaluation::Applied { member, .. } = evaluate(&view, w.op_id, &valid, &|_| None) else {
                    panic!("a preloaded write applies");
                };
                overlay.apply(&member);
                members.push(member);
                self.put(self.keys.body(&Hash32::of(body)), Bytes::from(encode_body(body)));
            }
            let slot = Slot {
                world_id: self.world_id,
                first_sequence: world.next_sequence(),
                store_id: StoreId(0),
                prev_hash: world.tip_hash(),
                members,
            };
            let bytes = Bytes::from(slot.encode());
            world.apply_slot(&slot, Hash32::of(&bytes)).expect("the preload chains");
            self.put(self.keys.slot(slot.first_sequence), bytes);
        }
        for (w, _) in writes {
            self.history.ops.push(ClientOp {
                replica: usize::MAX,
                op_id: w.op_id,
                mutation: w.mutation,
                invoked_at: Instant::ZERO,
                outcome: Outcome::Preloaded,
            });
        }
    }

    fn put(&mut self, key: String, bytes: Bytes) {
        let result = self.gcs.apply(Instant::ZERO, &BlobOp::Create { key, bytes });
        assert!(result.is_ok(), "preload into an empty bucket");
    }

    fn start_node(&mut self, n: usize) {
        let incarnation = self.nodes[n].incarnation;
        let identity = Identity {
            world_id: self.world_id,
            store_id: StoreId(((n as u64) << 32) | u64::from(incarnation)),
            prefix: self.config.prefix.clone(),
            rng_seed: self.chaos.next_u64(),
        };
        let now = self.kernel_now(n);
        let replica = Replica::new(self.config.kernel.clone(), identity, now).expect("a valid kernel config");
        self.nodes[n].replica = Some(replica);
        self.trace(&[1, n as u64, u64::from(incarnation)], "start");
        self.drain(n);
    }

    /// A wake-up superseded by a later schedule, or meant for a replica that crashed.
    fn is_stale(&self, event: &Event, at: Instant) -> bool {
        match event {
            Event::Wake { node, incarnation } => {
                let n = &self.nodes[*node];
                n.incarnation != *incarnation || n.wake_at != Some(at)
            }
            _ => false,
        }
    }

    fn step(&mut self, event: Event) {
        match event {
            Event::Arrival { writer } => self.arrival(writer),
            Event::Apply { ticket } => {
                let t = self.tickets.get_mut(&ticket).expect("ticket");
                let result = self.gcs.apply(self.now, &t.op);
                t.applying = false;
                if t.planned == PlannedReply::Applied {
                    t.result = Some(result.clone());
                }
                let done = !t.replying;
                self.trace(&[2, ticket], &format!("{result:?}"));
                if done {
                    self.tickets.remove(&ticket);
                }
            }
            Event::Reply { ticket } => {
                let t = self.tickets.get_mut(&ticket).expect("ticket");
                t.replying = false;
                let result = match t.planned {
                    PlannedReply::Applied => t.result.take().expect("applied before its reply"),
                    PlannedReply::Fault(e) => Err(e),
                };
                let (node, incarnation, id) = (t.node, t.incarnation, t.id);
                if !t.applying {
                    self.tickets.remove(&ticket);
                }
                self.trace(&[3, ticket, node as u64], "");
                if self.nodes[node].incarnation == incarnation {
                    let now = self.kernel_now(node);
                    if let Some(r) = self.nodes[node].replica.as_mut() {
                        r.handle(now, Input::BlobDone { id, result });
                        self.drain(node);
                    }
                }
            }
            Event::Wake { node, .. } => {
                self.nodes[node].wake_at = None;
                let now = self.kernel_now(node);
                if let Some(r) = self.nodes[node].replica.as_mut() {
                    r.handle_timeout(now);
                    self.drain(node);
                }
            }
            Event::Crash => self.crash(),
            Event::Restart { node } => {
                self.trace(&[6, node as u64], "restart");
                self.start_node(node);
                let writers: Vec<usize> =
                    (0..self.writer_node.len()).filter(|&w| self.writer_node[w] == node).collect();
                for w in writers {
                    if !self.request_writer.values().any(|&x| x == w) && self.now < self.workload_end {
                        self.schedule(self.now, Event::Arrival { writer: Some(w) });
                    }
                }
            }
        }
    }

    fn arrival(&mut self, writer: Option<usize>) {
        if self.now >= self.workload_end {
            return;
        }
        let node = match writer {
            Some(w) => self.writer_node[w],
            None => {
                if let Arrivals::Open { rate_per_s } = self.config.workload.arrivals {
                    let gap = self.chaos.exponential(1_000.0 / rate_per_s);
                    self.schedule(self.now + ms(gap), Event::Arrival { writer: None });
                }
                let live: Vec<usize> =
                    (0..self.nodes.len()).filter(|&n| self.nodes[n].replica.is_some()).collect();
                if live.is_empty() {
                    return;
                }
                live[self.chaos.below(live.len() as u64) as usize]
            }
        };
        if self.nodes[node].replica.is_none() {
            return; // a writer on a crashed replica resumes at its restart
        }
        let write = self.generator.next_write();
        self.next_request += 1;
        let request = RequestId(self.next_request);
        let index = self.history.ops.len();
        self.history.ops.push(ClientOp {
            replica: node,
            op_id: write.op_id,
            mutation: write.mutation.clone(),
            invoked_at: self.now,
            outcome: Outcome::Unanswered,
        });
        self.writes.push(write.clone());
        self.nodes[node].requests.insert(request, index);
        if let Some(w) = writer {
            self.request_writer.insert(request, w);
        }
        self.trace(&[4, node as u64, write.op_id.as_u128() as u64], "");
        let now = self.kernel_now(node);
        let replica = self.nodes[node].replica.as_mut().expect("live");
        replica.handle(now, Input::Request { id: request, request: Request::Write(write) });
        self.drain(node);
    }

    fn crash(&mut self) {
        let Some(cr) = self.config.crashes.clone() else { return };
        if self.now >= self.workload_end {
            return;
        }
        let next = self.now + ms(self.chaos.exponential(cr.mean_interval_ms as f64));
        self.schedule(next, Event::Crash);
        let live: Vec<usize> = (0..self.nodes.len()).filter(|&n| self.nodes[n].replica.is_some()).collect();
        if live.len() < 2 {
            return;
        }
        let node = live[self.chaos.below(live.len() as u64) as usize];
        self.trace(&[5, node as u64], "crash");
        let n = &mut self.nodes[node];
        let replica = n.replica.take().expect("live");
        add_stats(&mut n.stats_before, &replica.stats());
        n.incarnation += 1;
        n.wake_at = None;
        n.report.crashes += 1;
        for (request, index) in std::mem::take(&mut n.requests) {
            self.history.ops[index].outcome = Outcome::Crashed;
            self.generator.forget(&self.writes[index - self.preloaded()].op_id);
            self.request_writer.remove(&request);
        }
        let down = cr.down_ms_min + self.chaos.below(cr.down_ms_max - cr.down_ms_min + 1);
        self.schedule(self.now + core::time::Duration::from_millis(down), Event::Restart { node });
    }

    fn preloaded(&self) -> usize {
        self.config.preload_documents
    }

    /// Carries out every effect the replica emitted, then schedules its wake-up.
    fn drain(&mut self, node: usize) {
        loop {
            let Some(effect) = self.nodes[node].replica.as_mut().and_then(|r| r.poll_effect()) else { break };
            match effect {
                Effect::Blob { id, op } => self.submit(node, id, op),
                Effect::Reply { id, reply } => self.answer(node, id, reply),
                Effect::Committed { sequence } => self.trace(&[7, node as u64, sequence], ""),
                Effect::Failed(reason) => {
                    self.trace(&[8, node as u64], &format!("{reason:?}"));
                    self.nodes[node].report.failed = Some(reason);
                }
            }
        }
        // A wake-up whose time no longer matches `wake_at` is stale and does nothing.
        let n = &self.nodes[node];
        let at = n
            .replica
            .as_ref()
            .and_then(|r| r.poll_timeout())
            .map(|t| Instant::from_micros(t.as_micros().saturating_sub(n.skew_us)).max(self.now));
        if at != n.wake_at {
            let incarnation = n.incarnation;
            self.nodes[node].wake_at = at;
            if let Some(at) = at {
                self.schedule(at, Event::Wake { node, incarnation });
            }
        }
    }

    fn submit(&mut self, node: usize, id: BlobOpId, op: BlobOp) {
        let plan = self.gcs.submit(self.now, &op);
        self.next_ticket += 1;
        let ticket = self.next_ticket;
        self.trace(&[9, ticket, node as u64, op.upload_len() as u64], op.key());
        self.tickets.insert(
            ticket,
            Ticket {
                node,
                incarnation: self.nodes[node].incarnation,
                id,
                op,
                planned: plan.reply,
                result: None,
                applying: plan.apply_at.is_some(),
                replying: true,
            },
        );
        if let Some(at) = plan.apply_at {
            self.schedule(at, Event::Apply { ticket });
        }
        self.schedule(plan.reply_at, Event::Reply { ticket });
    }

    fn answer(&mut self, node: usize, request: RequestId, reply: Reply) {
        let Some(index) = self.nodes[node].requests.remove(&request) else {
            panic!("replica {node} answered {request:?}, which it was not asked or answered twice");
        };
        let Reply::Write(result) = reply;
        self.trace(&[10, node as u64, request.0], &format!("{result:?}"));
        let write = &self.writes[index - self.preloaded()];
        self.generator.observe(write, &result);
        self.history.ops[index].outcome = Outcome::Answered { at: self.now, result };
        if let Some(w) = self.request_writer.remove(&request) {
            self.schedule(self.now, Event::Arrival { writer: Some(w) });
        }
    }

    fn finish(mut self) -> RunResult {
        let unsettled = self.nodes.iter().map(|n| n.requests.len()).sum();
        let mut replicas = Vec::new();
        for n in &mut self.nodes {
            let mut stats = n.stats_before.clone();
            if let Some(r) = &n.replica {
                add_stats(&mut stats, &r.stats());
            }
            n.report.stats = stats;
            replicas.push(n.report.clone());
        }
        let root = self.keys.root().to_string();
        let objects = self
            .gcs
            .objects()
            .filter(|(k, _, _)| k.starts_with(&root))
            .map(|(key, bytes, meta)| StoredObject {
                key: key.to_string(),
                bytes: bytes.clone(),
                created_at: Instant::from_micros(meta.created_at_us),
            })
            .collect();
        RunResult {
            history: self.history,
            objects,
            keys: self.keys,
            world_id: self.world_id,
            workload_end: self.workload_end,
            end: self.now,
            trace_hash: Hash32(*self.trace.finalize().as_bytes()),
            replicas,
            store: *self.gcs.stats(),
            unsettled,
        }
    }
}

fn add_stats(into: &mut CommitterStats, s: &CommitterStats) {
    into.slots_won += s.slots_won;
    into.slots_lost += s.slots_lost;
    into.creates_ambiguous += s.creates_ambiguous;
    into.members_committed += s.members_committed;
    into.refused_busy += s.refused_busy;
    into.expired += s.expired;
    into.uncertain += s.uncertain;
    into.requeued += s.requeued;
    into.body_reads += s.body_reads;
    into.calls_hedged += s.calls_hedged;
}
