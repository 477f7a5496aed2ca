//! `slotlog bench cold-start`: how long a replica takes to open a large world from its
//! full checkpoint, and how much memory it needs to do it (issue 9).
//!
//! The parent builds a world in a local directory the way a real one looks: the marker
//! and checkpoint zero as genesis writes them, slots of 256 creates with their bodies, the
//! full checkpoint `fold` makes, then slots of updates after it. A separate process (the
//! hidden `cold-start-open`) then opens it with the production driver, so its peak RSS is
//! the opening's alone, not the builder's.
//!
//! Owns nothing the kernel uses: it only writes objects the kernel's own code makes.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use slotlog::blobs::{BlobFuture, Blobs};
use slotlog::object_store_blobs::{Backend, ObjectStoreBlobs};
use slotlog::store_url::{open_store, StoreOptions};
use slotlog::{LocalCache, World, WorldConfig};
use slotlog_kernel::checkpoint::{fold, ObjectKind};
use slotlog_kernel::format::{encode_body, Checkpoint, Keys, Marker, Slot, SLOT_MEMBERS_MAX};
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::{OperationId, StoreId, WorldId};
use slotlog_kernel::world::{
    evaluate, validate, Evaluation, Expected, Layered, Mutation, Overlay, WorldState,
};
use slotlog_kernel::{BlobError, BlobOp, CompactionRole, Config};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::task::JoinSet;

/// The world's prefix inside the directory (as `writer` and `inspect` take it).
pub const PREFIX: &str = "worlds/bench";
/// Members in each slot after the checkpoint: "a few updates".
const UPDATES_PER_SLOT: u64 = 4;
/// Creates in flight while building the world (not timed): enough to keep the blocking
/// pool busy on local disk.
pub(crate) const BUILD_CREATES_IN_FLIGHT_MAX: usize = 64;

pub struct Args {
    pub docs: u64,
    pub slots_after: u64,
    /// Build here (must be absent or empty); None: a fresh directory under the temp dir.
    pub dir: Option<PathBuf>,
    /// Keep the directory afterwards (a temp dir is removed otherwise).
    pub keep: bool,
    /// Open twice through a local cache (`WorldConfig::local_cache`) in the world's
    /// directory: once with it empty, which fills it, then again with it warm.
    pub cache: bool,
}

/// What the opening process measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct OpenReport {
    /// From the call to `World::open` until it returned with the world open.
    pub open_s: f64,
    /// VmHWM after the open, MiB.
    pub peak_rss_mb: f64,
    /// VmRSS after the open: what the open world keeps, MiB.
    pub rss_after_mb: f64,
    /// User plus system CPU of the whole process during the open.
    pub cpu_s: f64,
    /// Blob calls the open made, by the key's kind: how many, and when the first started
    /// and the last ended, in seconds from the call.
    pub calls: BTreeMap<String, CallSpan>,
    /// With a local cache: what it held on disk after the open, MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_mb: Option<f64>,
}

/// The bench's cache is bounded well above any world it builds: it measures a warm cache,
/// not eviction.
const CACHE_BYTES_MAX: u64 = 64 << 30;

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum())
        .unwrap_or(0)
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CallSpan {
    pub count: u64,
    pub bytes: u64,
    pub first_start_s: f64,
    pub last_end_s: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub docs: u64,
    pub slots_after: u64,
    /// Building the slots before the checkpoint (evaluate, encode, create bodies and slots).
    pub build_s: f64,
    /// `fold` plus creating every checkpoint object on local disk.
    pub checkpoint_s: f64,
    pub fold_s: f64,
    /// Installing that checkpoint's blocks into the world that folded it: the work of an
    /// adoption whose every shard changed, the worst case, one step that commits wait
    /// for (SPEC 10.14).
    pub adopt_install_s: f64,
    /// Bytes of every checkpoint object (history, receipts, shards, root, checkpoint), MiB.
    pub checkpoint_mb: f64,
    pub shards: u64,
    pub history_blocks: u64,
    pub receipt_blocks: u64,
    /// Slots before the checkpoint, and bodies written in all.
    pub slots_before: u64,
    pub bodies: u64,
    pub open: OpenReport,
    /// With `--cache`: the second open, its local cache filled by the first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_warm: Option<OpenReport>,
}

pub(crate) const MIB: f64 = 1024.0 * 1024.0;

/// The directory a world is built in; a temporary one is removed on drop (which takes
/// minutes at a million documents, so callers print their report first).
pub struct WorldDir {
    pub path: PathBuf,
    pub(crate) remove: bool,
}

impl WorldDir {
    /// The directory a bench builds in: `dir` (absent or empty), or a fresh one under the
    /// temp dir named after `bench`, removed when dropped unless `keep`.
    pub(crate) fn prepare(dir: Option<&Path>, keep: bool, bench: &str) -> Result<WorldDir, String> {
        let (path, temporary) = match dir {
            Some(d) => (d.to_path_buf(), false),
            None => {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                let name = format!("slotlog-bench-{bench}-{}-{nanos}", std::process::id());
                (std::env::temp_dir().join(name), true)
            }
        };
        if std::fs::read_dir(&path).is_ok_and(|mut entries| entries.next().is_some()) {
            return Err(format!("{} is not empty", path.display()));
        }
        std::fs::create_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(WorldDir { path, remove: temporary && !keep })
    }
}

impl Drop for WorldDir {
    fn drop(&mut self) {
        if self.remove {
            eprintln!("removing {}", self.path.display());
            let _ = std::fs::remove_dir_all(&self.path);
        } else {
            eprintln!("world kept in {}", self.path.display());
        }
    }
}

/// Builds the world, opens it in a child process, and reports.
pub fn run(args: &Args) -> (Result<Report, String>, Option<WorldDir>) {
    if args.docs == 0 {
        return (Err("--docs must be at least 1: a full checkpoint covers at least one slot".into()), None);
    }
    let dir = match WorldDir::prepare(args.dir.as_deref(), args.keep, "cold-start") {
        Ok(dir) => dir,
        Err(e) => return (Err(e), None),
    };
    (run_in(args, &dir.path), Some(dir))
}

fn run_in(args: &Args, dir: &Path) -> Result<Report, String> {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    let mut report = runtime.block_on(build(args, dir))?;
    drop(runtime);
    // The builder's memory is gone with it only in another process: open there.
    eprintln!("opening in a separate process");
    let cache = args.cache.then(|| dir.join(CACHE_DIR));
    report.open = open_in_child(dir, cache.as_deref())?;
    if let Some(cache) = &cache {
        eprintln!("opening again, with the local cache the first open filled");
        report.open_warm = Some(open_in_child(dir, Some(cache))?);
    }
    Ok(report)
}

/// The local cache's directory inside the world's, beside (not under) the world's prefix.
const CACHE_DIR: &str = "local-cache";

/// Runs the opening half (`cold-start-open`) in a process of its own and reads its report.
pub(crate) fn open_in_child(dir: &Path, cache: Option<&Path>) -> Result<OpenReport, String> {
    let mut args: Vec<&std::ffi::OsStr> = vec!["cold-start-open".as_ref(), "--dir".as_ref(), dir.as_os_str()];
    if let Some(cache) = cache {
        args.extend(["--cache-dir".as_ref(), cache.as_os_str()]);
    }
    report_of_child(&args)
}

/// Runs `slotlog bench ARGS` in a process of its own (so its memory is its own, not the
/// builder's) and reads the JSON report it prints.
pub(crate) fn report_of_child<T: serde::de::DeserializeOwned>(
    args: &[&std::ffi::OsStr],
) -> Result<T, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = std::process::Command::new(exe)
        .arg("bench")
        .args(args)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("the process {args:?} failed: {}", out.status));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("the report of {args:?}: {e}"))
}

pub(crate) fn local_blobs(dir: &Path) -> Result<Arc<ObjectStoreBlobs>, String> {
    let url = url_of(dir)?;
    // No fsync: the directory is scratch, and a bucket's create latency, not a local
    // disk's flush, is what a real compactor pays.
    let mut options = StoreOptions::default();
    options.fsync = false;
    let (store, backend, _) = open_store(&url, &options).map_err(|e| e.to_string())?;
    assert!(matches!(backend, Backend::Local));
    Ok(Arc::new(ObjectStoreBlobs::new(store, backend)))
}

fn url_of(dir: &Path) -> Result<String, String> {
    let dir = std::fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(format!("file://{}", dir.display()))
}

/// Creates with a bound on how many are in flight. A content object whose name is taken
/// already holds these bytes, so `AlreadyExists` is done.
pub(crate) struct Sink {
    blobs: Arc<ObjectStoreBlobs>,
    tasks: JoinSet<Result<(), String>>,
    in_flight_max: usize,
}

impl Sink {
    pub(crate) fn new(blobs: Arc<ObjectStoreBlobs>, in_flight_max: usize) -> Sink {
        Sink { blobs, tasks: JoinSet::new(), in_flight_max }
    }

    pub(crate) async fn create(&mut self, key: String, bytes: Bytes) -> Result<(), String> {
        while self.tasks.len() >= self.in_flight_max {
            self.join_one().await?;
        }
        let blobs = self.blobs.clone();
        self.tasks.spawn(async move {
            match blobs.execute(BlobOp::Create { key: key.clone(), bytes }).await {
                Ok(_) | Err(BlobError::AlreadyExists) => Ok(()),
                Err(e) => Err(format!("create {key}: {e}")),
            }
        });
        Ok(())
    }

    async fn join_one(&mut self) -> Result<(), String> {
        match self.tasks.join_next().await {
            Some(r) => r.map_err(|e| e.to_string())?,
            None => Ok(()),
        }
    }

    pub(crate) async fn drain(&mut self) -> Result<(), String> {
        while !self.tasks.is_empty() {
            self.join_one().await?;
        }
        Ok(())
    }
}

/// Operation ids only need to be unique within the world.
pub(crate) fn op_id(n: u64) -> OperationId {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&n.to_le_bytes());
    bytes[8..].copy_from_slice(b"bench-op");
    OperationId(bytes)
}

/// Document `i`'s path: a thousand documents a directory, as a real tree might hold them.
pub(crate) fn path_of(i: u64) -> String {
    format!("/bench/d{:05}/doc{i:08}.md", i / 1_000)
}

/// A body of 100 to 300 bytes, unique to its document and revision.
pub(crate) fn body_of(i: u64, revision: u64) -> Bytes {
    let len = 100 + ((i * 7_919 + revision * 104_729) % 201) as usize;
    let mut text = format!("document {i} revision {revision} ");
    while text.len() < len {
        text.push_str("lorem ipsum dolor sit amet ");
    }
    text.truncate(len);
    Bytes::from(text)
}

/// Evaluates `writes` against `world` as a committer would, writes their bodies, and
/// creates and applies the slot they make.
pub(crate) async fn commit_slot(
    world: &mut WorldState,
    keys: &Keys,
    sink: &mut Sink,
    writes: Vec<(OperationId, Mutation)>,
) -> Result<(), String> {
    let mut overlay = Overlay::new(world.sequence());
    let mut members = Vec::with_capacity(writes.len());
    for (op_id, mutation) in writes {
        let valid = validate(&mutation).map_err(|e| format!("{e:?}"))?;
        let layers = [&overlay];
        let view = Layered::new(&*world, &layers);
        let Evaluation::Applied { member, body } = evaluate(&view, op_id, &valid, 0, &|_| None) else {
            return Err(format!("a bench write did not apply: {mutation:?}"));
        };
        overlay.apply(&member);
        if let (Some(body), Some(v)) = (body, &member.version) {
            sink.create(keys.body(&v.body_hash), Bytes::from(encode_body(&body))).await?;
        }
        members.push(member);
    }
    let slot = Slot {
        world_id: world.world_id(),
        first_sequence: world.next_sequence(),
        store_id: StoreId(1),
        prev_hash: world.tip_hash(),
        members,
        bodies: Vec::new(),
    };
    let bytes = Bytes::from(slot.encode());
    world.apply_slot(&slot, Hash32::of(&bytes)).map_err(|e| e.to_string())?;
    sink.create(keys.slot(slot.first_sequence), bytes).await
}

async fn build(args: &Args, dir: &Path) -> Result<Report, String> {
    let keys = Keys::new(PREFIX);
    let blobs = local_blobs(dir)?;
    let mut sink = Sink::new(blobs.clone(), BUILD_CREATES_IN_FLIGHT_MAX);
    // Genesis, byte for byte as an opener makes it: the marker, then checkpoint zero.
    let world_id = WorldId(*b"bench cold start");
    let marker = Bytes::from(Marker::new(world_id, StoreId(1)).encode());
    let marker_hash = Hash32::of(&marker);
    sink.create(keys.marker(), marker).await?;
    sink.create(keys.checkpoint(1), Bytes::from(Checkpoint::zero(world_id, marker_hash).encode())).await?;
    let mut world = WorldState::genesis(world_id, marker_hash);

    eprintln!("building {} documents", args.docs);
    let started = Instant::now();
    let mut next_op = 0u64;
    let mut doc = 0u64;
    while doc < args.docs {
        let end = (doc + SLOT_MEMBERS_MAX as u64).min(args.docs);
        let writes = (doc..end)
            .map(|i| {
                next_op += 1;
                let mutation = Mutation::Publish {
                    path: path_of(i),
                    body: body_of(i, 0),
                    catalog: None,
                    expected: Expected::Absent,
                };
                (op_id(next_op), mutation)
            })
            .collect();
        commit_slot(&mut world, &keys, &mut sink, writes).await?;
        doc = end;
    }
    sink.drain().await?;
    let build_s = started.elapsed().as_secs_f64();
    let slots_before = world.slots_applied();

    eprintln!("folding and writing the checkpoint at sequence {}", world.sequence());
    let started = Instant::now();
    let folded = fold(&world, &|_| None).expect("a world built in memory holds every version");
    let fold_s = started.elapsed().as_secs_f64();
    let install_started = Instant::now();
    for (path, blocks, through) in &folded.adopt {
        world.adopt_history(path, blocks, *through);
    }
    let adopt_install_s = install_started.elapsed().as_secs_f64();
    // As many in flight as the compactor allows itself; each kind once the kinds it names
    // are stored, the checkpoint object last (SPEC 10).
    let mut sink_checkpoint = Sink::new(blobs.clone(), Config::default().checkpoint_creates_in_flight_max);
    let mut bytes_total = 0u64;
    let mut count: BTreeMap<ObjectKind, u64> = BTreeMap::new();
    let mut stage = ObjectKind::History;
    for object in &folded.objects {
        if level(object.kind) != level(stage) {
            sink_checkpoint.drain().await?;
            stage = object.kind;
        }
        bytes_total += object.bytes.len() as u64;
        *count.entry(object.kind).or_default() += 1;
        sink_checkpoint.create(object.key(&keys), object.bytes.clone()).await?;
    }
    sink_checkpoint.drain().await?;
    let checkpoint_bytes = Bytes::from(folded.checkpoint.encode());
    bytes_total += checkpoint_bytes.len() as u64;
    sink_checkpoint.create(keys.checkpoint(folded.checkpoint.next_sequence), checkpoint_bytes).await?;
    sink_checkpoint.drain().await?;
    let checkpoint_s = started.elapsed().as_secs_f64();
    drop(folded);

    eprintln!("writing {} slots after the checkpoint", args.slots_after);
    let mut revision = 0u64;
    for s in 0..args.slots_after {
        let writes = (0..UPDATES_PER_SLOT.min(args.docs))
            .map(|j| {
                next_op += 1;
                revision += 1;
                // Spread over the world; distinct within a slot while docs >= 4.
                let i = (s * UPDATES_PER_SLOT + j).wrapping_mul(2_654_435_761) % args.docs;
                let mutation = Mutation::Publish {
                    path: path_of(i),
                    body: body_of(i, revision),
                    catalog: None,
                    expected: Expected::Any,
                };
                (op_id(next_op), mutation)
            })
            .collect();
        commit_slot(&mut world, &keys, &mut sink, writes).await?;
    }
    sink.drain().await?;
    let bodies = args.docs + revision;
    Ok(Report {
        docs: args.docs,
        slots_after: args.slots_after,
        build_s,
        checkpoint_s,
        fold_s,
        adopt_install_s,
        checkpoint_mb: bytes_total as f64 / MIB,
        shards: count.get(&ObjectKind::Shard).copied().unwrap_or(0),
        history_blocks: count.get(&ObjectKind::History).copied().unwrap_or(0),
        receipt_blocks: count.get(&ObjectKind::Receipts).copied().unwrap_or(0),
        slots_before,
        bodies,
        open: OpenReport::default(),
        open_warm: None,
    })
}

/// History and receipt blocks name nothing, shards and deltas name history blocks, the
/// root names shards, deltas and receipt blocks: a level is created once the one below it is stored.
pub(crate) fn level(kind: ObjectKind) -> u8 {
    match kind {
        ObjectKind::History | ObjectKind::Receipts | ObjectKind::Body => 0,
        ObjectKind::Shard | ObjectKind::Delta => 1,
        ObjectKind::Root => 2,
    }
}

/// Counts and times every blob call the opening makes, by the kind of key.
struct Timed {
    inner: Arc<ObjectStoreBlobs>,
    start: Instant,
    spans: Arc<Mutex<BTreeMap<String, CallSpan>>>,
}

fn call_kind(op: &BlobOp) -> String {
    let key = op.key().strip_prefix(PREFIX).unwrap_or(op.key()).trim_start_matches('/');
    let area = key.split('/').next().unwrap_or(key);
    let verb = match op {
        BlobOp::List { .. } => "list",
        BlobOp::Get { .. } => "get",
        BlobOp::Create { .. } => "create",
        _ => "other",
    };
    format!("{verb} {area}")
}

impl Blobs for Timed {
    fn execute(&self, op: BlobOp) -> BlobFuture {
        let kind = call_kind(&op);
        let (start, spans) = (self.start, self.spans.clone());
        let first_start_s = start.elapsed().as_secs_f64();
        let call = self.inner.execute(op);
        Box::pin(async move {
            let result = call.await;
            let bytes = match &result {
                Ok(slotlog_kernel::BlobOutcome::Got { bytes, .. }) => bytes.len() as u64,
                _ => 0,
            };
            let mut spans = spans.lock().expect("spans");
            let span = spans.entry(kind).or_insert(CallSpan { first_start_s, ..CallSpan::default() });
            span.count += 1;
            span.bytes += bytes;
            span.first_start_s = span.first_start_s.min(first_start_s);
            span.last_end_s = start.elapsed().as_secs_f64();
            result
        })
    }

    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
}

/// The child: open the world in `dir` and report. Compaction off, no requests: the
/// opening only reads. With `cache`, through a local cache there; the calls counted are
/// those that reached the store.
pub async fn open(dir: &Path, cache: Option<&Path>) -> Result<OpenReport, String> {
    let blobs = local_blobs(dir)?;
    let mut config = WorldConfig::default();
    config.kernel.compaction = CompactionRole::Off;
    config.local_cache = cache.map(|c| LocalCache::new(c, CACHE_BYTES_MAX));
    let cpu_before = cpu_s();
    let start = Instant::now();
    let spans = Arc::new(Mutex::new(BTreeMap::new()));
    let timed = Arc::new(Timed { inner: blobs, start, spans: spans.clone() });
    let world = World::open_on(timed, PREFIX, config).await.map_err(|e| e.to_string())?;
    let open_s = start.elapsed().as_secs_f64();
    let cpu_s = cpu_s() - cpu_before;
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| e.to_string())?;
    let report = OpenReport {
        open_s,
        peak_rss_mb: status_kib(&status, "VmHWM:") as f64 / 1024.0,
        rss_after_mb: status_kib(&status, "VmRSS:") as f64 / 1024.0,
        cpu_s,
        calls: spans.lock().expect("spans").clone(),
        cache_mb: cache.map(|c| dir_bytes(c) as f64 / MIB),
    };
    world.close().await;
    Ok(report)
}

fn status_kib(status: &str, field: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The process's user plus system CPU seconds (/proc/self/stat fields 14 and 15, in the
/// kernel's 100 Hz clock ticks).
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    (ticks(11) + ticks(12)) as f64 / 100.0
}

impl Report {
    pub fn text(&self) -> String {
        let mut out = format!(
            "cold start: {} documents, {} slots after the checkpoint\n\
             \x20 build      {:.1} s ({} slots, {} bodies)\n\
             \x20 checkpoint {:.1} s (fold {:.1} s), {:.1} MiB: {} shards, {} history blocks, {} receipt blocks\n\
             \x20 adoption   {:.3} s to install it, every shard changed\n\
             \x20 open       {:.2} s, peak RSS {:.0} MiB (after open {:.0} MiB), CPU {:.2} s\n",
            self.docs,
            self.slots_after,
            self.build_s,
            self.slots_before,
            self.bodies,
            self.checkpoint_s,
            self.fold_s,
            self.checkpoint_mb,
            self.shards,
            self.history_blocks,
            self.receipt_blocks,
            self.adopt_install_s,
            self.open.open_s,
            self.open.peak_rss_mb,
            self.open.rss_after_mb,
            self.open.cpu_s,
        );
        let calls = |out: &mut String, open: &OpenReport| {
            for (kind, s) in &open.calls {
                out.push_str(&format!(
                    "    {kind:<18} {:>9} calls {:>9.1} MiB  {:>7.2} s .. {:>7.2} s\n",
                    s.count,
                    s.bytes as f64 / MIB,
                    s.first_start_s,
                    s.last_end_s
                ));
            }
        };
        calls(&mut out, &self.open);
        if let Some(warm) = &self.open_warm {
            out.push_str(&format!(
                "  warm open  {:.2} s, peak RSS {:.0} MiB, CPU {:.2} s, local cache {:.1} MiB; calls that reached the store:\n",
                warm.open_s,
                warm.peak_rss_mb,
                warm.cpu_s,
                warm.cache_mb.unwrap_or(0.0),
            ));
            calls(&mut out, warm);
        }
        out
    }
}
