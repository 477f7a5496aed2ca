//! The driver loop: the one task that owns a world's kernel replica. Commands from
//! `World` handles, blob completions, and the kernel's own timer come in; the kernel's
//! effects go out (blob calls spawned as tasks, replies to waiting callers, commit hints
//! to the hook, changes to watchers). Written once; tokio or madsim runs it.

use crate::blobs::{Blobs, CallFailure};
use crate::budget::{CallKey, RetryBudget};
use crate::error::{Error, StoreError, StoreErrorKind};
use crate::hints::{Hints, HintsPlan};
use crate::metrics;
use crate::reload::{is_reload, Reloads, WorldStats};
use slotlog_kernel::blob::{BlobError, BlobOp, BlobOutcome};
use slotlog_kernel::ids::{BlobOpId, OperationId, RequestId, StoreId, WorldId};
use slotlog_kernel::search::{prepare_part, PreparedPart};
use slotlog_kernel::time::Instant as KernelInstant;
use slotlog_kernel::world::Receipt;
use slotlog_kernel::{
    Config, Effect, FailReason, Identity, Input, ReadError, Replica, Reply, Request, WatchEnd, WriteError,
};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};
use tracing::Instrument;

/// What a `World` handle asks of the loop.
///
/// A request and a watch name the handle that sent it (`HandleId`): handles in one
/// process may share this loop (docs/OPERATIONS.md, "Handles in one process"), and a
/// handle's close waits for its own writes and ends its own watches only.
pub(crate) enum Command {
    Request {
        request: Request,
        reply: oneshot::Sender<Reply>,
        handle: HandleId,
    },
    Watch {
        cursor: u64,
        credit: u32,
        sink: mpsc::Sender<WatchItem>,
        handle: HandleId,
    },
    WatchCredit {
        id: RequestId,
        events: u32,
    },
    Unwatch {
        id: RequestId,
    },
    Follow(u64),
    ViewRelease(slotlog_kernel::ViewId),
    Stats(oneshot::Sender<WorldStats>),
    Health(oneshot::Sender<crate::health::Health>),
    Telemetry(oneshot::Sender<crate::telemetry::Telemetry>),
    /// One handle of several closes: its watches end, its writes drain, the loop runs on.
    Release {
        handle: HandleId,
        done: oneshot::Sender<()>,
    },
    /// The last handle closes: every watch ends, every write drains, then the loop stops.
    Close(oneshot::Sender<()>),
}

/// A handle on the loop, unique in the process: what a request, a watch and a release name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct HandleId(pub u64);

/// A watcher's sink, and the handle that started it.
type Watcher = (HandleId, mpsc::Sender<WatchItem>);

/// What a watcher receives.
pub(crate) enum WatchItem {
    Started(RequestId),
    Changes(Vec<Receipt>),
    Ended(WatchEnd),
}

/// The sequence the world is known committed through, for the commit hooks: each hook
/// runs on a task of its own and reads the newest value when it is ready, so a slow hook
/// skips sequences instead of stalling the loop, and holds no memory for them.
pub(crate) type Committed = watch::Sender<u64>;

/// Set once, when the loop stops (a store failure, reloads past their limit): what every
/// handle answers after.
pub(crate) type Stopped = Arc<OnceLock<Error>>;

/// A caller waiting for its reply, and for a write its operation id and the first
/// sequence it could commit at (the next one when it was handed in: the replica builds
/// only on its own state, which only moves forward).
/// A close waiting for the writes already taken to be answered: every write for the last
/// handle's close (`handle` None), the closing handle's own for a release.
struct Closing {
    handle: Option<HandleId>,
    done: oneshot::Sender<()>,
    /// The drain's bound: the kernel's request deadline and one call's timeout, by which
    /// the kernel answers every write itself.
    by: tokio::time::Instant,
}

struct Waiting {
    handle: HandleId,
    reply: oneshot::Sender<Reply>,
    op_id: Option<(OperationId, u64)>,
    /// For a read, whether it is exact, and when it was handed in: telemetry times it.
    read: Option<(bool, KernelInstant)>,
}

/// A finished blob call: the incarnation of the replica that sent it, its id, the call as
/// the retry budget knows it, its result.
type Done = (u32, BlobOpId, CallKey, Result<BlobOutcome, CallFailure>, Option<PreparedPart>);

pub(crate) struct Loop {
    pub replica: Replica,
    pub blobs: Arc<dyn Blobs>,
    pub call_timeout: Duration,
    /// How long an opening may go without a store call answered before it gives up.
    pub open_deadline: Duration,
    pub budget: RetryBudget,
    pub commands: mpsc::Receiver<Command>,
    /// This loop's own command queue, held weakly (the loop ends when every handle is
    /// gone): where hints from other handles and peers arrive.
    pub own: mpsc::WeakSender<Command>,
    pub opened: Option<oneshot::Sender<Result<WorldId, Error>>>,
    pub committed: Committed,
    pub stopped: Stopped,
    pub base: tokio::time::Instant,
    /// What a reload builds a new replica from: the configuration, and the identity (the
    /// world's id once open; each replica gets a store id of its own).
    pub kernel: Config,
    pub identity: Identity,
    pub reloads: Reloads,
    /// Counters of the replicas replaced so far.
    pub past: WorldStats,
    /// Replicas replaced so far: a call's answer goes only to the replica that sent it
    /// (a new replica numbers its calls from the start again).
    pub incarnation: u32,
    /// How hints will be carried once the world is open (its id is known then)...
    pub hints_plan: Option<HintsPlan>,
    /// ...and how they are.
    pub hints: Option<Hints>,
    /// Samples of slow writes, warnings and errors, bounded (`telemetry`).
    pub telemetry: crate::telemetry::Samples,
    /// Recent store failures and the compactor's last problem (`health`).
    pub health: crate::health::HealthLog,
}

/// What the driver does with a failed call.
enum Verdict {
    /// Hand the kernel this result: it retries or settles.
    Kernel(BlobError),
    /// Stop the world: no retry will pass, or the call used up its retry budget.
    Stop(StoreError),
}

impl Loop {
    fn now(&self) -> KernelInstant {
        KernelInstant::from_micros(self.base.elapsed().as_micros() as u64)
    }

    /// Judge a failed call: permanent failures and exhausted budgets stop the world,
    /// the rest go to the kernel.
    fn judge(&mut self, call: &CallKey, failure: CallFailure, last: &mut Option<StoreError>) -> Verdict {
        let error = |kind, attempts| StoreError {
            kind,
            op: call.op,
            key: call.key.clone(),
            status: failure.status,
            message: failure.message.clone(),
            attempts,
        };
        let at = self.base.elapsed();
        let status = failure.status;
        if let Some(kind) = failure.permanent {
            let told = crate::health::store_failure(call.op, &call.key, &kind, status);
            self.health.store_failed(at, told.clone());
            self.telemetry.error(at, told);
            return Verdict::Stop(error(kind, 1));
        }
        if !failure.error.is_transient() {
            self.budget.answered(call);
            return Verdict::Kernel(failure.error);
        }
        let told = crate::health::store_failure(call.op, &call.key, &failure.error, status);
        self.health.store_failed(at, told.clone());
        self.telemetry.warning(at, told);
        let (attempts, over) = self.budget.failed(call);
        let transient = error(StoreErrorKind::Transient(failure.error), attempts);
        *last = Some(transient.clone());
        if over {
            Verdict::Stop(transient)
        } else {
            Verdict::Kernel(failure.error)
        }
    }

    /// The counters of every replica so far, the running one's included.
    fn stats(&self) -> WorldStats {
        let mut stats = self.past.clone();
        let r = &self.replica;
        stats.add_replica(&r.stats(), r.compactor_stats(), r.collector_stats());
        stats.views = r.view_stats();
        stats.search = r.search_stats().clone();
        stats.search_index_bytes = r.search_index_bytes();
        if let Some(plan) = &self.hints_plan {
            stats.hints = plan.counters.snapshot();
        }
        if let Some(hints) = &self.hints {
            stats.hints = hints.counters().snapshot();
        }
        stats.telemetry = self.telemetry.stats.clone();
        stats
    }

    /// The world's health now.
    fn health(&self) -> crate::health::Health {
        let facts = crate::health::LoopFacts {
            now: self.base.elapsed(),
            world_id: self.identity.world_id,
            opening: self.opened.is_some(),
            committed_through: *self.committed.borrow(),
            commands_waiting: self.commands.len(),
            reloads: self.past.reloads,
            log: &self.health,
        };
        crate::health::report(&self.replica.health(self.now()), facts)
    }

    /// Replaces the failed replica with a new one that opens from the newest checkpoint.
    /// Whatever the old one left unanswered is answered here: a write `Uncertain` (its
    /// receipt settles it; it is never retried or taken for committed), a read and a
    /// watch with the failure. Calls of the old replica still in flight finish unheard:
    /// their ids are not the new replica's.
    fn reopen(
        &mut self,
        reason: &FailReason,
        in_a_row: u32,
        waiting: &mut BTreeMap<RequestId, Waiting>,
        watches: &mut BTreeMap<RequestId, Watcher>,
    ) {
        for (_, w) in std::mem::take(waiting) {
            let reply = match w.op_id {
                Some((op_id, since)) => Reply::Write(Err(WriteError::Uncertain { op_id, since })),
                None => Reply::Read(Err(ReadError::Failed(reason.clone()))),
            };
            let _ = w.reply.send(reply);
        }
        for (_, (_, w)) in std::mem::take(watches) {
            let _ = w.try_send(WatchItem::Ended(WatchEnd::Failed(reason.clone())));
        }
        let r = &self.replica;
        self.past.add_replica(&r.stats(), r.compactor_stats(), r.collector_stats());
        let identity = Identity {
            store_id: StoreId(crate::world::random_u64()),
            rng_seed: crate::world::random_u64(),
            receipt_key: crate::world::random_receipt_key(),
            ..self.identity.clone()
        };
        let store_id = identity.store_id;
        self.replica = Replica::new(self.kernel.clone(), identity, self.now()).expect("validated at open");
        self.incarnation += 1;
        tracing::warn!(%reason, in_a_row, reloads = self.past.reloads, ?store_id, "reloading from the newest checkpoint");
        self.telemetry
            .warning(self.base.elapsed(), format!("reloading from the newest checkpoint: {reason}"));
    }

    pub async fn run(mut self) {
        let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Done>();
        // Segment parts the index reads are tokenized on the blocking pool, one per core
        // at most, so an index build uses every core while this loop stays free.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let tokenizers = Arc::new(tokio::sync::Semaphore::new(cores));
        let mut waiting: BTreeMap<RequestId, Waiting> = BTreeMap::new();
        let mut watches: BTreeMap<RequestId, Watcher> = BTreeMap::new();
        let mut next_request = 0u64;
        let mut failed: Option<FailReason> = None;
        // A failure the reload rule answers by reopening, seen in this round of effects.
        let mut reload: Option<FailReason> = None;
        // The last transient failure: what an open deadline reports.
        let mut last_failure: Option<StoreError> = None;
        // Moved on by every call answered while opening: an opening that keeps reading
        // (a large world replaying) is never cut short, one that hears nothing is.
        let mut open_by = self.base + self.open_deadline;
        // Set by `close()`: the last handle's (the loop runs on until every write it took is
        // answered, then stops) and the releases of handles closing while others stay open
        // (each waits for its own writes; the loop runs on).
        let mut closing: Vec<Closing> = Vec::new();
        // The replica's commit totals at the last look: metrics report what changed.
        let mut totals_seen = (0, 0, 0);
        // Writes answered in this drain of effects, to name their phases.
        let mut answered = crate::telemetry::Answered::new();
        // A wake-up due at once that the loop already yielded for, and the commands it
        // then takes before that wake-up (see below).
        let mut yielded_for: Option<tokio::time::Instant> = None;
        let mut commands_first = 0usize;
        loop {
            // Carry out every effect, then sleep until the next input or wake-up.
            while let Some(effect) = self.replica.poll_effect() {
                match effect {
                    Effect::Blob { id, op } => {
                        let blobs = self.blobs.clone();
                        let done = done_tx.clone();
                        let timeout = self.call_timeout;
                        let kind = op_kind(&op);
                        let span = tracing::debug_span!("blob", kind, key = op.key());
                        let call = call_key(&op);
                        let incarnation = self.incarnation;
                        let part = self.replica.search_part(id);
                        let tokenizers = tokenizers.clone();
                        tokio::spawn(
                            async move {
                                let sent = tokio::time::Instant::now();
                                let result = match tokio::time::timeout(timeout, blobs.execute_explained(op))
                                    .await
                                {
                                    Ok(r) => r,
                                    Err(_) => Err(CallFailure {
                                        message: format!("no answer within the call timeout ({timeout:?})"),
                                        ..CallFailure::from(BlobError::Timeout)
                                    }),
                                };
                                tracing::debug!(?result, "done");
                                metrics::blob_call(kind, &result, sent.elapsed());
                                let prepared = match (part, &result) {
                                    (Some(name), Ok(BlobOutcome::Got { bytes, .. })) => {
                                        let bytes = bytes.clone();
                                        let _slot = tokenizers.acquire_owned().await;
                                        tokio::task::spawn_blocking(move || prepare_part(&bytes, &name))
                                            .await
                                            .ok()
                                    }
                                    _ => None,
                                };
                                let _ = done.send((incarnation, id, call, result, prepared));
                            }
                            .instrument(span),
                        );
                    }
                    Effect::Reply { id, reply } => {
                        metrics::write_answered(&reply);
                        if matches!(&reply, Reply::Write(Ok(_)) | Reply::Read(Ok(_))) {
                            self.reloads.progress();
                        }
                        if let Some(w) = waiting.remove(&id) {
                            if let Some((op_id, _)) = w.op_id {
                                answered.insert(id, op_id);
                            }
                            if let Some((exact, queued)) = w.read {
                                self.telemetry.read_answered(exact, queued, self.now());
                            }
                            let _ = w.reply.send(reply);
                        }
                    }
                    Effect::Committed { sequence } => {
                        self.reloads.progress();
                        // Every hint, not only a newer one: a loser's names the slot it
                        // lost to, which may be older than what this replica holds.
                        if let Some(hints) = &self.hints {
                            hints.pass(sequence);
                        }
                        self.committed.send_if_modified(|through| {
                            let newer = sequence > *through;
                            if newer {
                                *through = sequence;
                                metrics::committed_through(sequence);
                            }
                            newer
                        });
                    }
                    Effect::Failed(reason) if self.opened.is_none() && is_reload(&reason) => {
                        tracing::warn!(%reason, "the replica asks to be reopened");
                        reload = Some(reason);
                    }
                    Effect::Failed(reason) => {
                        tracing::error!(?reason, "the world failed closed");
                        self.telemetry
                            .error(self.base.elapsed(), format!("the world failed closed: {reason}"));
                        failed = Some(reason);
                    }
                    Effect::Warning(warning) => {
                        tracing::warn!(%warning, "worked around");
                        let at = self.base.elapsed();
                        self.health.compactor_problem(at, warning.to_string());
                        self.telemetry.warning(at, warning.to_string());
                    }
                    Effect::Changes { id, events } => {
                        let alive = watches
                            .get(&id)
                            .is_some_and(|(_, w)| w.try_send(WatchItem::Changes(events)).is_ok());
                        if !alive {
                            watches.remove(&id);
                            self.replica.handle(self.now(), Input::Unwatch { id });
                        }
                    }
                    Effect::WatchEnded { id, end } => {
                        if let Some((_, w)) = watches.remove(&id) {
                            let _ = w.try_send(WatchItem::Ended(end));
                        }
                    }
                }
            }
            while let Some(phases) = self.replica.poll_write_phases() {
                if let Some(op_id) = answered.get(&phases.request) {
                    self.telemetry.write_answered(*op_id, &phases);
                }
            }
            answered.clear();
            let totals = self.replica.commit_totals();
            if totals != totals_seen {
                metrics::slots(totals.0 - totals_seen.0, totals.1 - totals_seen.1, totals.2 - totals_seen.2);
                totals_seen = totals;
            }
            metrics::queue_depth(self.replica.queued());
            if let Some(reason) = reload.take() {
                match self.reloads.reload(&reason, &mut self.past) {
                    Ok(in_a_row) => {
                        self.reopen(&reason, in_a_row, &mut waiting, &mut watches);
                        totals_seen = (0, 0, 0);
                        continue;
                    }
                    Err(reloads) => {
                        let error = Error::Reloads { reloads, last: reason };
                        tracing::error!(%error, "the world stops");
                        let _ = self.stopped.set(error);
                        break;
                    }
                }
            }
            if self.opened.is_some() {
                if let Some(world_id) = self.replica.world().map(|w| w.world_id()) {
                    // A reload reopens this world and no other.
                    self.identity.world_id = Some(world_id);
                    if let Some(plan) = self.hints_plan.take() {
                        self.hints = Some(plan.start(world_id, self.own.clone()));
                    }
                    let _ = self.opened.take().expect("checked").send(Ok(world_id));
                } else if let Some(reason) = &failed {
                    let _ = self.opened.take().expect("checked").send(Err(Error::Failed(reason.clone())));
                    return;
                }
            }
            let mut stop = false;
            for c in std::mem::take(&mut closing) {
                let its = |w: &Waiting| w.op_id.is_some() && c.handle.is_none_or(|h| h == w.handle);
                let drained = !waiting.values().any(its);
                if !drained && tokio::time::Instant::now() < c.by {
                    closing.push(c);
                    continue;
                }
                // Past the drain's bound (a write the kernel has not answered within its
                // own deadline): each is answered `Uncertain` with its operation id, never
                // dropped, so its receipt settles it.
                let late: Vec<RequestId> =
                    waiting.iter().filter(|(_, w)| its(w)).map(|(id, _)| *id).collect();
                for id in late {
                    let w = waiting.remove(&id).expect("listed");
                    if let Some((op_id, since)) = w.op_id {
                        let _ = w.reply.send(Reply::Write(Err(WriteError::Uncertain { op_id, since })));
                    }
                }
                tracing::debug!(drained, handle = ?c.handle, "writes drained");
                stop |= c.handle.is_none();
                let _ = c.done.send(());
            }
            if stop {
                // The last handle closed: answer any release still draining too.
                for c in closing.drain(..) {
                    let _ = c.done.send(());
                }
                break;
            }
            let mut wake =
                self.replica.poll_timeout().map(|t| self.base + Duration::from_micros(t.as_micros()));
            // A wake-up due at once follows writes just answered (the kernel defers its
            // next seal to the next input, `Config::seal_after_answers`): let the callers
            // answered run first, once, while they keep sending (callers on the other
            // workers too), and take what they sent before waking the replica, so their
            // next writes ride the next slot.
            if wake.is_some_and(|w| w <= tokio::time::Instant::now()) && yielded_for != wake {
                yielded_for = wake;
                for _ in 0..YIELDS_FOR_ANSWERED_MAX {
                    let before = self.commands.len();
                    tokio::task::yield_now().await;
                    if self.commands.len() == before {
                        break;
                    }
                }
                commands_first = self.commands.len();
            }
            if commands_first > 0 {
                wake = None;
            }
            for c in &closing {
                wake = Some(wake.map_or(c.by, |w| w.min(c.by)));
            }
            let sleep = async {
                match wake {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            let opening = self.opened.is_some();
            let open_deadline = async {
                match opening {
                    true => tokio::time::sleep_until(open_by).await,
                    false => std::future::pending().await,
                }
            };
            tokio::select! {
                command = self.commands.recv() => {
                    let Some(command) = command else { break };
                    commands_first = commands_first.saturating_sub(1);
                    let now = self.now();
                    match command {
                        Command::Request { request, reply, handle } => {
                            next_request += 1;
                            let id = RequestId(next_request);
                            let since = self.replica.world().map_or(1, |w| w.next_sequence());
                            let op_id = match &request {
                                Request::Write(w) => Some((w.op_id, since)),
                                _ => None,
                            };
                            let read = match &request {
                                Request::Read(r) => Some((r.is_exact(), now)),
                                _ => None,
                            };
                            waiting.insert(id, Waiting { handle, reply, op_id, read });
                            self.replica.handle(now, Input::Request { id, request });
                        }
                        Command::Watch { cursor, credit, sink, handle } => {
                            next_request += 1;
                            let id = RequestId(next_request);
                            if sink.try_send(WatchItem::Started(id)).is_ok() {
                                watches.insert(id, (handle, sink));
                                self.replica.handle(now, Input::Request { id, request: Request::Watch { cursor, credit } });
                            }
                        }
                        Command::WatchCredit { id, events } => self.replica.handle(now, Input::WatchCredit { id, events }),
                        Command::Unwatch { id } => {
                            watches.remove(&id);
                            self.replica.handle(now, Input::Unwatch { id });
                        }
                        Command::Follow(sequence) => self.replica.handle(now, Input::Follow { sequence }),
                        Command::ViewRelease(view) => self.replica.handle(now, Input::ViewRelease { view }),
                        Command::Stats(tx) => {
                            let _ = tx.send(self.stats());
                        }
                        Command::Health(tx) => {
                            let _ = tx.send(self.health());
                        }
                        Command::Telemetry(tx) => {
                            let _ = tx.send(self.telemetry.take());
                        }
                        Command::Close(done) => {
                            // Watches end now; writes already taken drain (above).
                            for (id, _) in std::mem::take(&mut watches) {
                                self.replica.handle(now, Input::Unwatch { id });
                            }
                            let drain = self.kernel.request_deadline + self.call_timeout;
                            let by = tokio::time::Instant::now() + drain;
                            closing.push(Closing { handle: None, done, by });
                        }
                        Command::Release { handle, done } => {
                            // The handle's watches end now (their sinks drop: `Closed`);
                            // its writes already taken drain (above).
                            let its: Vec<RequestId> =
                                watches.iter().filter(|(_, (h, _))| *h == handle).map(|(id, _)| *id).collect();
                            for id in its {
                                watches.remove(&id);
                                self.replica.handle(now, Input::Unwatch { id });
                            }
                            let drain = self.kernel.request_deadline + self.call_timeout;
                            let by = tokio::time::Instant::now() + drain;
                            closing.push(Closing { handle: Some(handle), done, by });
                        }
                    }
                }
                Some((incarnation, id, call, result, prepared)) = done_rx.recv() => {
                    if incarnation != self.incarnation {
                        // A call of a replica since replaced: nobody is waiting for it.
                        continue;
                    }
                    // The store answered (a result, or one of the contract's outcomes).
                    let answered = result.as_ref().map_or_else(|f| !f.error.is_transient(), |_| true);
                    if answered {
                        open_by = tokio::time::Instant::now() + self.open_deadline;
                    }
                    let result = match result {
                        Ok(outcome) => {
                            self.budget.answered(&call);
                            Ok(outcome)
                        }
                        Err(failure) => match self.judge(&call, failure, &mut last_failure) {
                            Verdict::Kernel(error) => Err(error),
                            Verdict::Stop(error) => {
                                tracing::error!(%error, "the store failed a call for good: the world stops");
                                let _ = self.stopped.set(Error::Store(error.clone()));
                                if let Some(opened) = self.opened.take() {
                                    let _ = opened.send(Err(Error::Store(error)));
                                }
                                break;
                            }
                        },
                    };
                    let now = self.now();
                    let input = match (prepared, result) {
                        (Some(part), result @ Ok(_)) => Input::BlobDonePrepared { id, result, part },
                        (_, result) => Input::BlobDone { id, result },
                    };
                    self.replica.handle(now, input);
                }
                _ = sleep => {
                    let now = self.now();
                    self.replica.handle_timeout(now);
                }
                _ = open_deadline => {
                    let error = Error::OpenDeadline { deadline: self.open_deadline, last_error: last_failure.take() };
                    tracing::error!(%error, "open gave up");
                    let _ = self.opened.take().expect("checked").send(Err(error));
                    return;
                }
            }
        }
        // Closing or stopped: callers still waiting see their reply channel drop
        // (`Error::Closed`, or `Error::Store` once `stopped` is set), watchers see their
        // stream end. Calls in flight finish on their own.
        tracing::debug!(waiting = waiting.len(), watches = watches.len(), "closed");
    }
}

/// Turns of the runtime the driver loop gives the callers a slot just answered before it
/// wakes the replica to seal the next batch: it stops early once a turn brings no
/// command. A bound, so a flood of writes cannot hold the seal.
const YIELDS_FOR_ANSWERED_MAX: usize = 8;

/// The call as the kernel reissues it: the retry budget's key.
fn call_key(op: &BlobOp) -> CallKey {
    let start_after = match op {
        BlobOp::List { start_after, .. } => start_after.clone(),
        _ => None,
    };
    CallKey { op: op_kind(op), key: op.key().to_string(), start_after }
}

fn op_kind(op: &BlobOp) -> &'static str {
    use slotlog_kernel::BlobOp::*;
    match op {
        Create { .. } => "create",
        Get { .. } => "get",
        Stat { .. } => "stat",
        List { .. } => "list",
        Rewrite { .. } => "rewrite",
        Delete { .. } => "delete",
    }
}
