//! `World`: the handle an application holds on one world. Every method sends one command
//! to the world's driver loop and awaits its answer; the handle is cheap to clone and may
//! be used from many tasks at once.

use crate::blobs::Blobs;
use crate::budget::RetryBudget;
use crate::error::{validate_prefix, Error};
use crate::health::Health;
use crate::hints::{HintCounters, HintsPlan, Peers};
use crate::read_request;
use crate::reload::{Reloads, WorldStats};
use crate::replicas::{ReplicaKey, Shared};
use crate::runtime::{Command, HandleId, Loop, Stopped};
use crate::telemetry::Telemetry;
use crate::view::{Callers, View};
use crate::watch::Watch;
use bytes::Bytes;
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::ViewId;
use slotlog_kernel::ids::{OperationId, StoreId, WorldId};
use slotlog_kernel::world::{Expected, Mutation, PolicyBody, Write};
use slotlog_kernel::{Config, Identity, Read, ReadOk, Replica, Reply, Request, WriteOk};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};

/// How a `World` runs. Start from [`WorldConfig::default`] and set the fields to change:
///
/// ```
/// let mut config = slotlog::WorldConfig::default();
/// config.open_deadline = std::time::Duration::from_secs(60);
/// config.kernel.request_deadline = std::time::Duration::from_secs(5);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct WorldConfig {
    /// The kernel's configuration: batching, staging, deadlines, turns, read bounds.
    pub kernel: Config,
    /// A bucket call unanswered this long is a `Timeout`, which the kernel settles by
    /// reading (the kernel also hedges slow calls well before this).
    pub call_timeout: Duration,
    /// `open` gives up with `Error::OpenDeadline` when this long passes with no store
    /// call answered (a black-holed endpoint, a store that never completes a request),
    /// instead of waiting for ever. Measured from the start and from each call answered,
    /// not as a total: a large world's cold start keeps answering calls for minutes on a
    /// bucket (a million documents open in about 50 s even on local disk, see
    /// docs/PERFORMANCE.md) and is never cut short. 30 s: three call timeouts, so a store
    /// that answers slowly but answers is not given up on.
    pub open_deadline: Duration,
    /// Transient failures (timeouts, 5xx, 429, failed connections) one call may meet in
    /// a row and still be retried; at the next one the world stops with
    /// `Error::Store` (kind `Transient`) instead of retrying for ever. 20 retries at the
    /// kernel's backoff (20 ms doubling to 1 s) is about 12 s of failures, past the 10 s
    /// request deadline, so callers waiting on the call have had their answer by then.
    /// Permanent failures (credentials, a missing bucket) are never retried.
    pub call_retries_max: u32,
    /// Commands waiting for the driver loop beyond which a call fails with `Busy`.
    pub command_queue_max: usize,
    /// Events a watcher may have unread before the world waits for it.
    pub watch_buffer_events: u32,
    /// The world to open; None opens whatever world the prefix holds, or makes a new one.
    pub world_id: Option<WorldId>,
    /// Reloads in a row, with nothing committed or answered between them, after which the
    /// world stops with `Error::Reloads` instead of reopening again. A replica that fails
    /// closed under the reload rule (SPEC 10.15: `Unconfirmed`, `CreateBelowCollection`,
    /// `BelowCollection`) is reopened from the newest checkpoint; one that fails that way
    /// again right after, over and over, meets something a reopen does not fix (a store
    /// clock that jumps, a peer writing below collection). 3: one reload and two more
    /// tries; `Unconfirmed` never counts (it takes 12 h of the replica's own clock).
    pub reloads_without_progress_max: u32,
    /// Who else writes this world (docs/OPERATIONS.md, "Commit hints"): unknown (the
    /// default: the kernel also probes blindly for writers it cannot hear), only handles
    /// in this process, or peer processes over UDP ([`Peers::Udp`]).
    pub peers: Peers,
    /// Replicas of this world in this process (same store, prefix and world id) hand each
    /// other their commit hints with no wiring (handles that share one replica need none:
    /// see `share_replica`). Off only for comparison runs.
    pub hints_in_process: bool,
    /// Handles on this world in this process (same store, prefix and `world_id`) opened
    /// with a configuration equal in everything the replica runs by (every field but
    /// `watch_buffer_events` and `views_per_caller_max`) commit through one replica, so
    /// their writes ride the same slots (docs/OPERATIONS.md, "Handles in one process").
    /// Each handle keeps its own close, watches and views. Off: this handle opens a
    /// replica of its own, as a handle in another process would (tests and comparison
    /// runs of racing replicas). A read-only handle never shares.
    pub share_replica: bool,
    /// A verified cache of the world's content objects on local disk, so a restart does
    /// not download them all again (`local_cache`). None (the default): no cache.
    pub local_cache: Option<crate::local_cache::LocalCache>,
    /// Views one caller of [`World::view_for`] may hold at once; past it, `Error::Views`.
    /// The world's own bound over every caller is `kernel.views_max`.
    pub views_per_caller_max: usize,
    /// A write slower than this from queued to confirmed, or a read from handed in to
    /// answered, is sampled in [`World::telemetry`] and logged at `warn`
    /// (docs/OPERATIONS.md, "Telemetry"). 1 s: ten times a store's create on a quiet day,
    /// well under the 10 s request deadline.
    pub slow_request_after: Duration,
    /// Samples [`World::telemetry`] holds at most until taken; the last quarter only for
    /// warnings and errors. Past it, new samples are dropped and counted.
    pub telemetry_samples_max: usize,
    /// Store calls failed within this long make [`World::health`] `Degraded`. 60 s: long
    /// enough to see a flapping store between two polls of a health check.
    pub degraded_window: Duration,
}

impl Default for WorldConfig {
    fn default() -> Self {
        WorldConfig {
            kernel: Config::default(),
            call_timeout: Duration::from_secs(10),
            open_deadline: Duration::from_secs(30),
            call_retries_max: 20,
            command_queue_max: 8_192,
            watch_buffer_events: 1_024,
            world_id: None,
            reloads_without_progress_max: 3,
            peers: Peers::Unknown,
            hints_in_process: true,
            share_replica: true,
            local_cache: None,
            views_per_caller_max: 64,
            slow_request_after: Duration::from_secs(1),
            telemetry_samples_max: crate::telemetry::TELEMETRY_SAMPLES_MAX,
            degraded_window: Duration::from_secs(60),
        }
    }
}

/// One handle: the replica it commits through (its own, or shared with other handles in
/// the process), and what it keeps for itself.
struct Inner {
    shared: Arc<Shared>,
    handle: HandleId,
    closed: AtomicBool,
    watch_buffer_events: u32,
    callers: Arc<Callers>,
    views_per_caller_max: usize,
}

impl Drop for Inner {
    /// A handle dropped unclosed leaves its replica's count: a handle closed later may
    /// then be the last and stop the loop. (Dropping every handle ends the loop too: its
    /// command queue closes.)
    fn drop(&mut self) {
        if !self.closed.load(Ordering::Acquire) {
            self.shared.leave();
        }
    }
}

/// Unique over the process: what a shared loop tells handles apart by.
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);

/// An open world. Clone it freely: clones share one handle (one close) and one driver loop.
#[derive(Clone)]
pub struct World {
    inner: Arc<Inner>,
}

/// A fresh operation id: 16 random bytes.
pub fn new_op_id() -> OperationId {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the system's random source");
    OperationId(bytes)
}

/// What stopped the world (`Error::Store`, `Error::Reloads`), else `Error::Closed`.
pub(crate) fn gone(stopped: &Stopped) -> Error {
    stopped.get().cloned().unwrap_or(Error::Closed)
}

/// The store as the registries key it: its `Blobs::identity`, else the backend's address.
fn store_identity(blobs: &Arc<dyn Blobs>) -> String {
    blobs.identity().unwrap_or_else(|| format!("blobs@{:p}", Arc::as_ptr(blobs).cast::<()>()))
}

pub(crate) fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the system's random source");
    u64::from_le_bytes(bytes)
}

/// A receipt window key from the system's random source: 128 bits no client can learn
/// from the binary or guess, drawn again at every open.
pub(crate) fn random_receipt_key() -> slotlog_kernel::world::ReceiptKey {
    slotlog_kernel::world::ReceiptKey::new(random_u64(), random_u64())
}

impl World {
    /// Opens the world under `prefix` in `store`, or creates one there (its marker and
    /// checkpoint zero) if the prefix is empty. Refuses, with a typed error, a prefix that
    /// holds objects but no marker, a marker or checkpoint it cannot read or load, or a log
    /// that does not verify (`Error::Failed`); a prefix that breaks a rule
    /// (`Error::Prefix`); a store that refuses for good or keeps failing one call
    /// (`Error::Store`); and gives up when `WorldConfig::open_deadline` passes with no
    /// store call answered (`Error::OpenDeadline`). See [`World::open_on`].
    ///
    /// The backend is told from the store's name ([`detect_backend`]): memory and a local
    /// directory as they are, an unknown store as `Backend::Other` (no conditional
    /// delete). An S3, GCS or Azure store is refused with `Error::UncheckedStore` before
    /// any call: slotlog cannot see through `dyn ObjectStore` whether object_store retries
    /// inside a create, and a create retried after it landed answers `AlreadyExists` for
    /// our own slot (the write would be reported lost while it committed). Build those with
    /// [`open_store`](crate::store_url::open_store) or finish your builder with
    /// [`s3_store`](crate::store_url::s3_store) / [`gcs_store`](crate::store_url::gcs_store),
    /// then call [`World::open_with`].
    ///
    /// [`detect_backend`]: crate::object_store_blobs::detect_backend
    #[cfg(feature = "object-store")]
    pub async fn open(
        store: Arc<dyn object_store::ObjectStore>,
        prefix: &str,
        config: WorldConfig,
    ) -> Result<World, Error> {
        let backend =
            crate::object_store_blobs::detect_backend(store.as_ref()).map_err(Error::UncheckedStore)?;
        World::open_with(store, backend, prefix, config).await
    }

    /// Opens the world under `prefix` in `store` as the `backend` given, with everything
    /// [`World::open`] says. The backend is trusted: the store must not retry inside
    /// object_store (a retried create that had landed answers `AlreadyExists` for our own
    /// slot). Stores from [`open_store`](crate::store_url::open_store),
    /// [`s3_store`](crate::store_url::s3_store) and [`gcs_store`](crate::store_url::gcs_store)
    /// have their retries off; a store built with object_store's default `RetryConfig`
    /// (10 retries) does not, and nothing here can tell.
    #[cfg(feature = "object-store")]
    pub async fn open_with(
        store: Arc<dyn object_store::ObjectStore>,
        backend: crate::object_store_blobs::Backend,
        prefix: &str,
        config: WorldConfig,
    ) -> Result<World, Error> {
        let blobs = crate::object_store_blobs::ObjectStoreBlobs::new(store, backend);
        World::open_on(Arc::new(blobs), prefix, config).await
    }

    /// Opens a world over any blob backend.
    ///
    /// Never hangs: returns open, or with one of these errors, and gives up when
    /// `config.open_deadline` passes with no store call answered:
    ///
    /// * `Error::Prefix`: the prefix breaks a [`PrefixRule`](crate::error::PrefixRule);
    ///   nothing was sent.
    /// * `Error::Store`: the store refused a call in a way no retry passes (401, 403, a
    ///   missing bucket, an operation it cannot do; the store's message and status are
    ///   in it), or one call failed transiently more than `config.call_retries_max`
    ///   times in a row.
    /// * `Error::OpenDeadline`: no store call answered for `config.open_deadline`; it
    ///   carries the last transient failure, if any (a refused connection, say).
    /// * `Error::Failed`: the bucket holds something the world cannot trust.
    ///
    /// A handle opened on a world another open handle in this process opened with an
    /// equal configuration (see [`WorldConfig::share_replica`]) joins that handle's
    /// replica instead of opening one: it sends nothing to the store.
    pub async fn open_on(blobs: Arc<dyn Blobs>, prefix: &str, config: WorldConfig) -> Result<World, Error> {
        validate_prefix(prefix).map_err(Error::Prefix)?;
        let store = store_identity(&blobs);
        let shared = if crate::replicas::shares(&config) {
            let key = ReplicaKey { store, prefix: prefix.to_string(), world: config.world_id };
            let slot = crate::replicas::slot(&key);
            let mut replicas = slot.lock().await;
            match crate::replicas::join(&mut replicas, &config) {
                Some(shared) => shared,
                None => {
                    let shared = Arc::new(World::open_replica(blobs, prefix, &config).await?);
                    replicas.push(Arc::downgrade(&shared));
                    shared
                }
            }
        } else {
            Arc::new(World::open_replica(blobs, prefix, &config).await?)
        };
        let inner = Inner {
            shared,
            handle: HandleId(NEXT_HANDLE.fetch_add(1, Ordering::Relaxed)),
            closed: AtomicBool::new(false),
            watch_buffer_events: config.watch_buffer_events,
            callers: Arc::default(),
            views_per_caller_max: config.views_per_caller_max,
        };
        Ok(World { inner: Arc::new(inner) })
    }

    /// Opens a replica of its own: its driver loop, counted with one handle.
    async fn open_replica(
        blobs: Arc<dyn Blobs>,
        prefix: &str,
        config: &WorldConfig,
    ) -> Result<Shared, Error> {
        let blobs: Arc<dyn Blobs> = match &config.local_cache {
            None => blobs,
            Some(cache) => Arc::new(
                crate::local_cache::CachedBlobs::open(blobs, prefix, cache)
                    .map_err(|e| Error::LocalCache { dir: cache.dir.clone(), reason: e.to_string() })?,
            ),
        };
        let mut kernel = config.kernel.clone();
        if config.peers.carried() {
            // Hints reach every writer: no blind probes (docs/TURNS.md, "Without hints").
            kernel.blind_probe_slots = 0;
        }
        #[cfg(not(madsim))]
        let udp = match &config.peers {
            Peers::Udp(peer_hints) => Some((crate::hints::bind(peer_hints).await?, peer_hints.clone())),
            _ => None,
        };
        #[cfg(madsim)]
        if let Peers::Udp(peer_hints) = &config.peers {
            let reason = "UDP hints are not simulated under madsim".to_string();
            return Err(Error::PeerHints { listen: peer_hints.listen, reason });
        }
        let hints = HintsPlan {
            in_process: config.hints_in_process,
            store: store_identity(&blobs),
            prefix: prefix.to_string(),
            #[cfg(not(madsim))]
            udp,
            counters: Arc::new(HintCounters::default()),
        };
        let identity = Identity {
            world_id: config.world_id,
            store_id: StoreId(random_u64()),
            prefix: prefix.to_string(),
            rng_seed: random_u64(),
            receipt_key: random_receipt_key(),
        };
        let base = tokio::time::Instant::now();
        let replica = Replica::new(kernel.clone(), identity.clone(), slotlog_kernel::Instant::ZERO)
            .map_err(Error::Config)?;
        let (commands, rx) = mpsc::channel(config.command_queue_max);
        let (opened_tx, opened_rx) = oneshot::channel();
        let (committed_tx, committed) = watch::channel(0);
        let stopped: Stopped = Arc::new(OnceLock::new());
        let run = Loop {
            replica,
            blobs,
            call_timeout: config.call_timeout,
            open_deadline: config.open_deadline,
            budget: RetryBudget::new(config.call_retries_max),
            commands: rx,
            own: commands.downgrade(),
            opened: Some(opened_tx),
            committed: committed_tx,
            stopped: stopped.clone(),
            base,
            kernel,
            identity,
            reloads: Reloads::new(config.reloads_without_progress_max),
            past: WorldStats::default(),
            incarnation: 0,
            hints_plan: Some(hints),
            hints: None,
            telemetry: crate::telemetry::Samples::new(
                config.telemetry_samples_max,
                config.slow_request_after,
            ),
            health: crate::health::HealthLog::new(config.degraded_window),
        };
        tokio::spawn(run.run());
        let world_id = match opened_rx.await {
            Ok(Ok(world_id)) => world_id,
            Ok(Err(error)) => return Err(error),
            Err(_) => return Err(Error::Closed),
        };
        Ok(Shared {
            commands,
            committed,
            stopped,
            world_id,
            next_view: AtomicU64::new(1),
            open: std::sync::Mutex::new(1),
            config: config.clone(),
        })
    }

    /// The id of the world this handle opened (written in its marker and every slot).
    pub fn world_id(&self) -> WorldId {
        self.inner.shared.world_id
    }

    /// What a call hears when the driver loop is gone: closed, or stopped by the store.
    fn gone(&self) -> Error {
        gone(&self.inner.shared.stopped)
    }

    pub(crate) fn commands(&self) -> &mpsc::Sender<Command> {
        &self.inner.shared.commands
    }

    pub(crate) async fn request(&self, request: Request) -> Result<Reply, Error> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if self.inner.shared.stopped.get().is_some() {
            return Err(self.gone());
        }
        let (reply, rx) = oneshot::channel();
        let handle = self.inner.handle;
        self.commands().try_send(Command::Request { request, reply, handle }).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => Error::Busy,
            mpsc::error::TrySendError::Closed(_) => self.gone(),
        })?;
        rx.await.map_err(|_| self.gone())
    }

    /// Commits one write named by its operation id (retrying a write with the same id is
    /// safe: a committed id answers with its first receipt).
    pub async fn write(&self, write: Write) -> Result<WriteOk, Error> {
        let span = tracing::info_span!("write", op_id = %write.op_id);
        let _guard = span.enter();
        match self.request(Request::Write(write)).await? {
            Reply::Write(result) => result.map_err(Error::Write),
            Reply::Read(_) => unreachable!("a write is answered as a write"),
        }
    }

    async fn mutate(&self, mutation: Mutation) -> Result<WriteOk, Error> {
        self.write(Write { op_id: new_op_id(), mutation }).await
    }

    /// Replaces a document's body (creating it when absent), leaving it no catalog record.
    pub async fn publish(
        &self,
        path: &str,
        body: impl Into<Bytes>,
        expected: Expected,
    ) -> Result<WriteOk, Error> {
        self.mutate(Mutation::Publish { path: path.to_string(), body: body.into(), catalog: None, expected })
            .await
    }

    /// Replaces a document's body and its catalog record (SPEC 1.3: at most 1,024 bytes,
    /// searched with the path while body search is unavailable; empty for none).
    pub async fn publish_with_record(
        &self,
        path: &str,
        body: impl Into<Bytes>,
        record: &str,
        expected: Expected,
    ) -> Result<WriteOk, Error> {
        let catalog = Some(record.to_string());
        self.mutate(Mutation::Publish { path: path.to_string(), body: body.into(), catalog, expected }).await
    }

    /// Adds bytes to the end of a document's body (creating it when absent).
    pub async fn append(
        &self,
        path: &str,
        bytes: impl Into<Bytes>,
        expected: Expected,
    ) -> Result<WriteOk, Error> {
        self.mutate(Mutation::Append { path: path.to_string(), bytes: bytes.into(), expected }).await
    }

    /// Archives or unarchives a document; an archived document refuses writes.
    pub async fn set_archived(
        &self,
        path: &str,
        archived: bool,
        expected: Expected,
    ) -> Result<WriteOk, Error> {
        self.mutate(Mutation::SetArchived { path: path.to_string(), archived, expected }).await
    }

    /// Replaces the world's policy (retention, body size limit, read-only prefixes).
    pub async fn set_policy(&self, policy: PolicyBody, expected: Expected) -> Result<WriteOk, Error> {
        self.mutate(Mutation::SetPolicy { policy, expected }).await
    }

    /// One read, answered from one snapshot.
    pub async fn read(&self, read: Read) -> Result<ReadOk, Error> {
        let span = tracing::info_span!("read", exact = read.is_exact());
        let _guard = span.enter();
        match self.request(Request::Read(read)).await? {
            Reply::Read(result) => result.map_err(Error::Read),
            Reply::Write(_) => unreachable!("a read is answered as a read"),
        }
    }

    /// A document's current version (or `version` while retained) and its body. Exact:
    /// sees every write acknowledged on any replica before it began.
    pub async fn fetch(&self, path: &str, version: Option<u64>) -> Result<ReadOk, Error> {
        self.read(read_request::fetch(path, version)).await
    }

    /// A document's retained version records. Exact.
    pub async fn versions(&self, path: &str) -> Result<ReadOk, Error> {
        self.read(read_request::versions(path)).await
    }

    /// The receipt of an operation id (`Answer::Receipt`): committed, absent (not
    /// committed, exactly) or `Expired` (committed or not, its receipt would have left the
    /// receipt window: unknown). Exact. Asks since genesis, so an operation older than the
    /// window is `Expired`; to settle an `Uncertain` write use [`World::receipt_since`].
    pub async fn receipt(&self, op_id: OperationId) -> Result<ReadOk, Error> {
        self.read(Read::Receipt { op_id, since: None }).await
    }

    /// The receipt of an operation id that could not have committed before `since`: the
    /// `since` of its `Uncertain` answer. "Absent" is then exact while the window covers
    /// `since` (SPEC 10.13), and the write may be sent again; `Expired` means unknown.
    pub async fn receipt_since(&self, op_id: OperationId, since: u64) -> Result<ReadOk, Error> {
        self.read(Read::Receipt { op_id, since: Some(since) }).await
    }

    /// Documents whose path starts with `prefix`. May trail another replica by a second.
    pub async fn lookup(&self, prefix: &str, start_after: Option<&str>, limit: u32) -> Result<ReadOk, Error> {
        self.read(read_request::lookup(prefix, start_after, limit)).await
    }

    /// The documents and subdirectories directly in a directory, in name order (a
    /// subdirectory's name ends with `/`), those named after `start_after`: pass the
    /// answer's `next` for the next page. May trail by a second.
    pub async fn list(
        &self,
        directory: &str,
        start_after: Option<&str>,
        limit: u32,
    ) -> Result<ReadOk, Error> {
        self.read(read_request::list(directory, start_after, limit)).await
    }

    /// Documents whose current body has this hash, in path order, after `start_after`.
    /// May trail by a second.
    pub async fn hash_lookup(
        &self,
        hash: Hash32,
        start_after: Option<&str>,
        limit: u32,
    ) -> Result<ReadOk, Error> {
        self.read(read_request::hash_lookup(hash, start_after, limit)).await
    }

    /// Documents whose current body matches `query` (words and quoted phrases, SPEC
    /// 8.6), in path order, after `start_after`. The answer's `matched` says whether it
    /// came from bodies (exact) or, with no index covering the state within a second,
    /// from paths only (`Catalog`: inconclusive about bodies). May trail by a second; a
    /// [`View`] pages one state.
    pub async fn search(&self, query: &str, start_after: Option<&str>, limit: u32) -> Result<ReadOk, Error> {
        self.read(read_request::search(query, start_after, limit)).await
    }

    /// Whether some document lies under `path`, at the tip: exact, unlike [`World::list`],
    /// so it sees every write acknowledged before it began.
    pub async fn is_directory(&self, path: &str) -> Result<bool, Error> {
        Ok(read_request::directory_answer(self.read(read_request::is_directory(path)).await?.answer))
    }

    /// A view: reads that all see the state its first read answered from (see
    /// [`View`]). Pins nothing until that read; dropping it lets the pin go.
    pub fn view(&self) -> View {
        View::new(self.clone(), self.next_view_id(), None)
    }

    /// A view counted against `caller`: at most `WorldConfig::views_per_caller_max` held
    /// at once (`Error::Views` past it), so one caller cannot take every pin of the world.
    pub fn view_for(&self, caller: &str) -> Result<View, Error> {
        View::for_caller(&self.inner.callers, caller, self.inner.views_per_caller_max)?;
        let held = (caller.to_string(), self.inner.callers.clone());
        Ok(View::new(self.clone(), self.next_view_id(), Some(held)))
    }

    fn next_view_id(&self) -> ViewId {
        ViewId(self.inner.shared.next_view.fetch_add(1, Ordering::Relaxed))
    }

    /// Every change after `cursor`, in order, exactly once (or a `Resync`).
    pub async fn watch(&self, cursor: u64) -> Result<Watch, Error> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let credit = self.inner.watch_buffer_events;
        let (sink, rx) = mpsc::channel(credit as usize + 2);
        let handle = self.inner.handle;
        self.commands()
            .send(Command::Watch { cursor, credit, sink, handle })
            .await
            .map_err(|_| self.gone())?;
        Watch::start(rx, self.commands().clone(), self.inner.shared.stopped.clone()).await
    }

    /// A peer replica says it committed through `sequence` (pass it what the peer's
    /// `on_commit` hook saw). Never blocks. Handles in this process, and peers named in
    /// `WorldConfig::peers`, need no such call: their hints arrive by themselves.
    pub fn follow(&self, sequence: u64) {
        let _ = self.commands().try_send(Command::Follow(sequence));
    }

    /// Adds a hook called with the sequence this replica learns the world is committed
    /// through (its own commits and the slots it lost to): pass it to the other replicas'
    /// `follow`. Several hooks may be added; each runs on a task of its own, never inside
    /// the driver loop, and is called with the newest sequence whenever it is ready for
    /// one: a slow hook skips sequences (each call's is newer than the last) and cannot
    /// stall commits. A hook that blocks holds a runtime worker while it does, so on a
    /// current-thread runtime it stalls everything else too: hand slow work to a channel.
    /// Hooks end when the world closes or stops. Call it within the runtime the world
    /// runs on (it spawns the hook's task).
    pub fn on_commit(&self, hook: impl Fn(u64) + Send + Sync + 'static) {
        let mut committed = self.inner.shared.committed.clone();
        committed.mark_unchanged();
        tokio::spawn(async move {
            while committed.changed().await.is_ok() {
                let through = *committed.borrow_and_update();
                hook(through);
            }
        });
    }

    /// The world's counters over every replica it ran: reloads, slots and members
    /// committed, checkpoints written, what collection deleted. On a replica shared with
    /// other handles ([`WorldConfig::share_replica`]) they are the replica's, every
    /// handle's writes counted, and `handles` says how many handles are on it.
    pub async fn stats(&self) -> Result<WorldStats, Error> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let (tx, rx) = oneshot::channel();
        self.commands().try_send(Command::Stats(tx)).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => Error::Busy,
            mpsc::error::TrySendError::Closed(_) => self.gone(),
        })?;
        let mut stats = rx.await.map_err(|_| self.gone())?;
        stats.handles = self.inner.shared.handles() as u64;
        Ok(stats)
    }

    /// The world's health apart from liveness: opening, serving, degraded, failed closed
    /// or closed, with how fresh the served snapshot is and what the background work and
    /// the store have been doing (docs/OPERATIONS.md, "Health"). Always answers, from the
    /// driver loop while it runs and from the handle once it is gone; never holds
    /// credentials.
    pub async fn health(&self) -> Health {
        let world_id = self.inner.shared.world_id;
        let stopped = &self.inner.shared.stopped;
        if self.inner.closed.load(Ordering::Acquire) {
            return Health::gone(None, world_id);
        }
        if let Some(stopped) = stopped.get() {
            return Health::gone(Some(stopped), world_id);
        }
        let (tx, rx) = oneshot::channel();
        match self.commands().try_send(Command::Health(tx)) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                return Health::busy(world_id, self.commands().max_capacity())
            }
            Err(mpsc::error::TrySendError::Closed(_)) => return Health::gone(stopped.get(), world_id),
        }
        rx.await.unwrap_or_else(|_| Health::gone(stopped.get(), world_id))
    }

    /// Takes the telemetry samples held since the last call (slow writes with their
    /// phases, warnings, errors), with the counters (docs/OPERATIONS.md, "Telemetry").
    /// The samples are the replica's: on a shared one, those taken here are gone for the
    /// other handles.
    pub async fn telemetry(&self) -> Result<Telemetry, Error> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let (tx, rx) = oneshot::channel();
        self.commands().try_send(Command::Telemetry(tx)).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => Error::Busy,
            mpsc::error::TrySendError::Closed(_) => self.gone(),
        })?;
        rx.await.map_err(|_| self.gone())
    }

    /// Refuses later calls with `Error::Closed`, ends the watches, then drains: every write
    /// already taken is answered before this returns, committed or refused as it would
    /// have been, or `Uncertain` with its operation id (its receipt from the next open
    /// settles it), never dropped. The drain is bounded by the request deadline and one
    /// call's timeout, within which the kernel answers every write itself. Then the
    /// world's background work stops. A second call returns at once.
    ///
    /// On a replica shared with other handles (see [`WorldConfig::share_replica`]) this
    /// handle's own watches end and its own writes drain; the others go on writing, and
    /// the replica stops when the last of them closes (or is dropped).
    pub async fn close(&self) {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let (done, rx) = oneshot::channel();
        let command = match self.inner.shared.leave() {
            true => Command::Close(done),
            false => Command::Release { handle: self.inner.handle, done },
        };
        if self.commands().send(command).await.is_ok() {
            let _ = rx.await;
        }
    }
}
