//! The driver loop: the one task that owns a world's kernel replica. Commands from
//! `World` handles, blob completions, and the kernel's own timer come in; the kernel's
//! effects go out (blob calls spawned as tasks, replies to waiting callers, commit hints
//! to the hook, changes to watchers). Written once; tokio or madsim runs it.

use crate::blobs::Blobs;
use slotlog_kernel::blob::BlobResult;
use slotlog_kernel::ids::{BlobOpId, RequestId};
use slotlog_kernel::time::Instant as KernelInstant;
use slotlog_kernel::world::Receipt;
use slotlog_kernel::{Effect, FailReason, Input, Replica, Reply, Request, WatchEnd};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tracing::Instrument;

/// What a `World` handle asks of the loop.
pub(crate) enum Command {
    Request { request: Request, reply: oneshot::Sender<Reply> },
    Watch { cursor: u64, credit: u32, sink: mpsc::Sender<WatchItem> },
    WatchCredit { id: RequestId, events: u32 },
    Unwatch { id: RequestId },
    Follow(u64),
    Close(oneshot::Sender<()>),
}

/// What a watcher receives.
pub(crate) enum WatchItem {
    Started(RequestId),
    Changes(Vec<Receipt>),
    Ended(WatchEnd),
}

pub(crate) type CommitHook = Arc<RwLock<Option<Box<dyn Fn(u64) + Send + Sync>>>>;

pub(crate) struct Loop {
    pub replica: Replica,
    pub blobs: Arc<dyn Blobs>,
    pub call_timeout: Duration,
    pub commands: mpsc::Receiver<Command>,
    pub opened: Option<oneshot::Sender<Result<(), FailReason>>>,
    pub hook: CommitHook,
    pub base: tokio::time::Instant,
}

impl Loop {
    fn now(&self) -> KernelInstant {
        KernelInstant::from_micros(self.base.elapsed().as_micros() as u64)
    }

    pub async fn run(mut self) {
        let (done_tx, mut done_rx) = mpsc::unbounded_channel::<(BlobOpId, BlobResult)>();
        let mut waiting: BTreeMap<RequestId, oneshot::Sender<Reply>> = BTreeMap::new();
        let mut watches: BTreeMap<RequestId, mpsc::Sender<WatchItem>> = BTreeMap::new();
        let mut next_request = 0u64;
        let mut failed: Option<FailReason> = None;
        loop {
            // Carry out every effect, then sleep until the next input or wake-up.
            while let Some(effect) = self.replica.poll_effect() {
                match effect {
                    Effect::Blob { id, op } => {
                        let blobs = self.blobs.clone();
                        let done = done_tx.clone();
                        let timeout = self.call_timeout;
                        let span = tracing::debug_span!("blob", kind = op_kind(&op), key = op.key());
                        tokio::spawn(
                            async move {
                                let result = match tokio::time::timeout(timeout, blobs.execute(op)).await {
                                    Ok(r) => r,
                                    Err(_) => Err(slotlog_kernel::BlobError::Timeout),
                                };
                                tracing::debug!(?result, "done");
                                let _ = done.send((id, result));
                            }
                            .instrument(span),
                        );
                    }
                    Effect::Reply { id, reply } => {
                        if let Some(tx) = waiting.remove(&id) {
                            let _ = tx.send(reply);
                        }
                    }
                    Effect::Committed { sequence } => {
                        if let Some(hook) = self.hook.read().expect("hook lock").as_ref() {
                            hook(sequence);
                        }
                    }
                    Effect::Failed(reason) => {
                        tracing::error!(?reason, "the world failed closed");
                        failed = Some(reason);
                    }
                    Effect::Warning(warning) => tracing::warn!(%warning, "worked around"),
                    Effect::Changes { id, events } => {
                        let alive =
                            watches.get(&id).is_some_and(|w| w.try_send(WatchItem::Changes(events)).is_ok());
                        if !alive {
                            watches.remove(&id);
                            self.replica.handle(self.now(), Input::Unwatch { id });
                        }
                    }
                    Effect::WatchEnded { id, end } => {
                        if let Some(w) = watches.remove(&id) {
                            let _ = w.try_send(WatchItem::Ended(end));
                        }
                    }
                }
            }
            if self.opened.is_some() {
                if self.replica.is_open() {
                    let _ = self.opened.take().expect("checked").send(Ok(()));
                } else if let Some(reason) = &failed {
                    let _ = self.opened.take().expect("checked").send(Err(reason.clone()));
                    return;
                }
            }
            let wake = self.replica.poll_timeout().map(|t| self.base + Duration::from_micros(t.as_micros()));
            let sleep = async {
                match wake {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                command = self.commands.recv() => {
                    let Some(command) = command else { break };
                    let now = self.now();
                    match command {
                        Command::Request { request, reply } => {
                            next_request += 1;
                            let id = RequestId(next_request);
                            waiting.insert(id, reply);
                            self.replica.handle(now, Input::Request { id, request });
                        }
                        Command::Watch { cursor, credit, sink } => {
                            next_request += 1;
                            let id = RequestId(next_request);
                            if sink.try_send(WatchItem::Started(id)).is_ok() {
                                watches.insert(id, sink);
                                self.replica.handle(now, Input::Request { id, request: Request::Watch { cursor, credit } });
                            }
                        }
                        Command::WatchCredit { id, events } => self.replica.handle(now, Input::WatchCredit { id, events }),
                        Command::Unwatch { id } => {
                            watches.remove(&id);
                            self.replica.handle(now, Input::Unwatch { id });
                        }
                        Command::Follow(sequence) => self.replica.handle(now, Input::Follow { sequence }),
                        Command::Close(done) => {
                            let _ = done.send(());
                            break;
                        }
                    }
                }
                Some((id, result)) = done_rx.recv() => {
                    let now = self.now();
                    self.replica.handle(now, Input::BlobDone { id, result });
                }
                _ = sleep => {
                    let now = self.now();
                    self.replica.handle_timeout(now);
                }
            }
        }
        // Closing: callers still waiting see their reply channel drop (`Error::Closed`),
        // watchers see their stream end. Calls in flight finish on their own.
        tracing::debug!(waiting = waiting.len(), watches = watches.len(), "closed");
    }
}

fn op_kind(op: &slotlog_kernel::BlobOp) -> &'static str {
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
