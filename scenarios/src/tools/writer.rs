//! `slotlog writer`: one process writing a world in a real store, logging every write it
//! was told is committed, so `verify` can check none was lost. Several writers on one
//! world pass commit hints to each other over UDP on loopback.

use bytes::Bytes;
use slotlog::object_store_blobs::ObjectStoreBlobs;
use slotlog::{new_op_id, Error, World, WorldConfig};
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::world::{Expected, Mutation, Write};
use slotlog_kernel::{WriteError, WriteOk};
use std::io::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct WriterArgs {
    pub url: String,
    pub prefix: String,
    pub log: String,
    pub duration_s: f64,
    pub writers: usize,
    /// Paths the writers pick among (fewer: more contention on documents).
    pub paths: u32,
    /// UDP port to hear peers' hints on, and the peers' ports.
    pub listen: Option<u16>,
    pub peers: Vec<u16>,
    /// Checkpoint after this many slots (the kernel's default when None).
    pub checkpoint_slots: Option<u64>,
}

pub async fn run(args: WriterArgs) -> Result<(), String> {
    let (store, backend, prefix) = super::store(&args.url, &args.prefix)?;
    let blobs = Arc::new(ObjectStoreBlobs::new(store, backend));
    let mut config = WorldConfig::default();
    if let Some(slots) = args.checkpoint_slots {
        // A short test run: a checkpoint due should not wait out the default 10 s jitter.
        config.kernel.checkpoint_slots = slots;
        config.kernel.checkpoint_jitter_ms = 1_000;
    }
    let world = World::open_on(blobs, &prefix, config).await.map_err(|e| e.to_string())?;
    let log = Arc::new(Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&args.log)
            .map_err(|e| format!("{}: {e}", args.log))?,
    ));
    if let Some(port) = args.listen {
        let socket = Arc::new(std::net::UdpSocket::bind(("127.0.0.1", port)).map_err(|e| e.to_string())?);
        let peers = args.peers.clone();
        let send = socket.try_clone().map_err(|e| e.to_string())?;
        world.on_commit(move |sequence| {
            for p in &peers {
                let _ = send.send_to(format!("commit {sequence}").as_bytes(), ("127.0.0.1", *p));
            }
        });
        let follower = world.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 64];
            while let Ok(n) = socket.recv(&mut buf) {
                let text = String::from_utf8_lossy(&buf[..n]);
                if let Some(seq) = text.strip_prefix("commit ").and_then(|s| s.trim().parse().ok()) {
                    follower.follow(seq);
                }
            }
        });
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(args.duration_s);
    let mut tasks = Vec::new();
    for _ in 0..args.writers {
        let (world, log, paths) = (world.clone(), log.clone(), args.paths.max(1));
        tasks.push(tokio::spawn(async move {
            while tokio::time::Instant::now() < deadline {
                let op_id = new_op_id();
                let n = u32::from_le_bytes(op_id.0[..4].try_into().expect("4 bytes")) % paths;
                let path = format!("/docs/{n:05}.md");
                let body = Bytes::from(format!("{op_id} wrote this"));
                let hash = Hash32::of(&body);
                let write = Write {
                    op_id,
                    mutation: Mutation::Publish { path: path.clone(), body, expected: Expected::Any },
                };
                let line = match world.write(write).await {
                    Ok(WriteOk::Committed(r)) => {
                        format!("acked {op_id} {} {} {} {path}\n", r.sequence, r.version, hash.to_hex())
                    }
                    Err(Error::Write(WriteError::Uncertain { .. })) => format!("uncertain {op_id}\n"),
                    Ok(_) => continue,
                    Err(e) => {
                        eprintln!("write failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                log.lock().expect("log").write_all(line.as_bytes()).expect("append to the log");
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    world.close().await;
    Ok(())
}
