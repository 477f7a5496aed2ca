//! Collection against a real S3 API (issue 10, SPEC 10.15): a world written through moto's
//! S3 server checkpoints, the store's clock moves a day on (moto's test-only clock control,
//! scripts/moto_serialized.py), and a replica's drop really deletes old shards, roots,
//! checkpoints and slots with conditional deletes (`If-Match` on the listed ETag). Then
//! `slotlog verify`'s own function reads the collected world back: the chain from the
//! oldest kept checkpoint, every checkpoint, and every acknowledged write at its place;
//! and a fresh replica reads every document at its last acknowledged version.
//!
//! Runs against a moto of its own (its clock is moved, so it is not the shared server):
//! under `scripts/with-moto.sh`, which exports `SLOTLOG_MOTO_PYTHON`; skipped without it.

use std::io::{Read, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::StreamExt;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};
use slotlog::{
    new_op_id, open_store, Answer, Error, Expected, ReceiptAnswer, StoreOptions, World, WorldConfig,
    WorldStats,
};
use slotlog_kernel::format::Keys;
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::world::{Mutation, Write};
use slotlog_kernel::{WriteError, WriteOk};

const BUCKET: &str = "slotlog-collect";
/// Past the slot retention (24 h) and so past the grace (15 min) and the reload age (12 h).
const ADVANCE_S: u64 = 25 * 3_600;
const PATHS: usize = 6;

/// A moto server of this test's own, ended when dropped.
struct Moto {
    child: Child,
    port: u16,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Moto {
    fn start(python: &str) -> Moto {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/moto_serialized.py");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(python)
            .args([script, "127.0.0.1", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto starts");
        let moto = Moto { child, port };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(60), "moto did not listen on {port}");
            std::thread::sleep(Duration::from_millis(100));
        }
        moto
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// One plain HTTP request (moto checks no signature by default); its status line.
    fn request(&self, method: &str, path: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("moto");
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(head.as_bytes()).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response.lines().next().unwrap_or_default().to_string()
    }

    /// Moves the time moto stamps on what it stores `seconds` ahead.
    fn advance_clock(&self, seconds: u64) {
        let status = self.request("POST", &format!("/_slotlog/clock?advance_s={seconds}"));
        assert!(status.contains(" 200 "), "the clock control answered {status}");
    }
}

/// What one committed write left, as `slotlog writer` logs it.
struct Acked {
    op_id: String,
    sequence: u64,
    version: u64,
    body: String,
    path: String,
}

impl Acked {
    fn line(&self) -> String {
        let hash = Hash32::of(self.body.as_bytes()).to_hex();
        format!("acked {} {} {} {hash} {}\n", self.op_id, self.sequence, self.version, self.path)
    }
}

/// Checkpoints every 4 slots, with no jitter: a few in seconds. Everything else (the
/// grace, the slot retention, the reload age) stays the record's.
fn config() -> WorldConfig {
    let mut config = WorldConfig::default();
    config.kernel.checkpoint_slots = 4;
    config.kernel.checkpoint_jitter = Duration::ZERO;
    assert_eq!(config.kernel.validate(), Ok(()));
    config
}

/// Writes `count` publishes one after another, round the paths. A write answered
/// `Uncertain` (a create the post-create check refused, once the store's clock jumped) is
/// settled by its receipt after the world reloads: committed, it counts as written.
async fn write(world: &World, from: usize, count: usize, acked: &mut Vec<Acked>) {
    for i in from..from + count {
        let path = format!("/docs/{}.md", i % PATHS);
        let body = format!("body {i} of {path}");
        let op_id = new_op_id();
        let mutation = Mutation::Publish {
            path: path.clone(),
            body: body.clone().into(),
            catalog: None,
            expected: Expected::Any,
        };
        let receipt = match world.write(Write { op_id, mutation }).await {
            Ok(WriteOk::Committed(receipt)) => receipt,
            Err(Error::Write(WriteError::Uncertain { since, .. })) => match settle(world, op_id, since).await
            {
                Some(receipt) => receipt,
                None => continue,
            },
            other => panic!("write {i}: {other:?}"),
        };
        let (sequence, version) = (receipt.sequence, receipt.version);
        acked.push(Acked { op_id: op_id.to_string(), sequence, version, body, path });
    }
}

/// The receipt of an `Uncertain` write, read since the first sequence it could commit
/// at, so that "absent" is exact; an expired answer would leave it unknown.
async fn settle(
    world: &World,
    op_id: slotlog_kernel::ids::OperationId,
    since: u64,
) -> Option<slotlog_kernel::world::Receipt> {
    for _ in 0..100 {
        match world.receipt_since(op_id, since).await {
            Ok(ok) => match ok.answer {
                Answer::Receipt(ReceiptAnswer::Committed(receipt)) => return Some(receipt),
                Answer::Receipt(ReceiptAnswer::Absent) => return None,
                other => panic!("a receipt read since {since} answered {other:?}"),
            },
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    panic!("the receipt of {op_id} never read");
}

async fn keys_under(store: &Arc<dyn ObjectStore>, prefix: &str) -> Vec<String> {
    let under = StorePath::from(prefix);
    let listed: Vec<_> = store.list(Some(&under)).collect().await;
    let mut keys: Vec<String> = listed.into_iter().map(|m| m.expect("listed").location.to_string()).collect();
    keys.sort();
    keys
}

/// Waits until `store` lists at least `count` full checkpoints under `keys`.
async fn checkpoints_at_least(store: &Arc<dyn ObjectStore>, keys: &Keys, count: usize) -> Vec<u64> {
    let started = Instant::now();
    loop {
        let listed = keys_under(store, keys.checkpoints_prefix().trim_end_matches('/')).await;
        let full: Vec<u64> =
            listed.iter().filter_map(|k| keys.parse_checkpoint(k)).filter(|s| *s > 1).collect();
        if full.len() >= count {
            return full;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "only {full:?} checkpoints written");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn stats_until(world: &World, what: &str, done: impl Fn(&WorldStats) -> bool) -> WorldStats {
    let started = Instant::now();
    loop {
        let stats = world.stats().await.expect("stats");
        if done(&stats) {
            return stats;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{what}: {stats:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moto_collection_deletes_conditionally_and_the_world_verifies_whole() {
    let Ok(python) = std::env::var("SLOTLOG_MOTO_PYTHON") else {
        eprintln!("SKIPPED moto_collection_deletes_conditionally_and_the_world_verifies_whole: SLOTLOG_MOTO_PYTHON not set (run under scripts/with-moto.sh)");
        return;
    };
    let moto = Moto::start(&python);
    let status = moto.request("PUT", &format!("/{BUCKET}"));
    assert!(status.contains(" 200 "), "bucket create answered {status}");
    let mut options = StoreOptions::from_env();
    options.s3_endpoint = Some(moto.endpoint());
    options.allow_http = true;
    let run = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    let url = format!("s3://{BUCKET}/collect-{run:x}");
    let (store, backend, prefix) = open_store(&url, &options).unwrap();
    let keys = Keys::new(&prefix);
    let mut acked = Vec::new();

    // A day's writing: slots, and checkpoints every 4 of them.
    let world = World::open_with(store.clone(), backend.clone(), &prefix, config()).await.unwrap();
    write(&world, 0, 32, &mut acked).await;
    let before = checkpoints_at_least(&store, &keys, 5).await;
    world.close().await;
    let slots_before = keys_under(&store, keys.log_prefix().trim_end_matches('/')).await;

    // A day later on the store's clock. A replica learns the store's time from what it
    // reads: this one from the old objects only, then (reopened) from its own new slots.
    moto.advance_clock(ADVANCE_S);
    let world = World::open_with(store.clone(), backend.clone(), &prefix, config()).await.unwrap();
    write(&world, 32, 4, &mut acked).await;
    world.close().await;
    let world = World::open_with(store.clone(), backend.clone(), &prefix, config()).await.unwrap();
    write(&world, 36, 8, &mut acked).await;
    let done = |s: &WorldStats| s.collector.drops_finished > 0 && s.collector.deleted_slots > 0;
    let stats = stats_until(&world, "a drop that deletes slots finishes", done).await;
    let c = &stats.collector;
    eprintln!("collected: {c:?}; reloads {}", stats.reloads);
    // S3 conditions deletes (If-Match): collection stays on and never deletes blindly.
    assert!(!c.off, "{c:?}");
    // Shards and deltas outlive these drops: steps write deltas over the same shards until
    // the merge rule (SPEC 10.16), so the dropped roots' layers are still named.
    assert!(c.deleted_checkpoints > 0 && c.deleted_roots > 0 && c.deleted_receipts > 0, "{c:?}");
    assert!(c.deleted_slots > 0 && c.bytes_reclaimed > 0, "{c:?}");
    world.close().await;

    // The deletes happened in the bucket: the oldest slots and checkpoints are gone.
    let slots_after = keys_under(&store, keys.log_prefix().trim_end_matches('/')).await;
    let gone: Vec<&String> = slots_before.iter().filter(|k| !slots_after.contains(k)).collect();
    assert_eq!(gone.len() as u64, c.deleted_slots, "slots gone from the bucket, slots deleted");
    // Gone oldest first, with no hole: the retained log starts right after the last one.
    let retained_from = keys.parse_slot(&slots_after[0]).expect("a slot");
    assert!(gone.iter().all(|k| keys.parse_slot(k).is_some_and(|s| s < retained_from)), "{gone:?}");
    let first = keys.slot(1);
    assert!(gone.contains(&&first), "{first} was collected");
    let head = store.head(&StorePath::parse(&first).unwrap()).await;
    assert!(matches!(head, Err(object_store::Error::NotFound { .. })), "{first}: {head:?}");
    let after = checkpoints_at_least(&store, &keys, 1).await;
    assert!(before.iter().any(|s| !after.contains(s)), "a checkpoint was dropped: {before:?} -> {after:?}");

    // `slotlog verify`'s check of the collected world: nothing lost.
    let log = std::env::temp_dir().join(format!("slotlog-collect-{run:x}.log"));
    std::fs::write(&log, acked.iter().map(Acked::line).collect::<String>()).unwrap();
    let logs = [log.to_string_lossy().into_owned()];
    let verified = slotlog_scenarios::tools::verify::verify_store(&store, &url, &prefix, &logs).await;
    assert_eq!(verified, Ok(true), "verify of the collected world");

    // A fresh replica reads every document at its last acknowledged version.
    let world = World::open_with(store.clone(), backend.clone(), &prefix, config()).await.unwrap();
    for i in 0..PATHS {
        let path = format!("/docs/{i}.md");
        let last = acked.iter().rev().find(|a| a.path == path).expect("written");
        match world.fetch(&path, None).await.unwrap().answer {
            Answer::Document { entry, body, .. } => {
                assert_eq!((entry.version, &body[..]), (last.version, last.body.as_bytes()), "{path}");
            }
            other => panic!("{path}: {other:?}"),
        }
    }
    world.close().await;
    let _ = std::fs::remove_file(&log);
}
