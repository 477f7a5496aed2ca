//! `slotlog-dsim`: the production driver under madsim's deterministic runtime. Each
//! replica is a madsim node running a real `World` over the simulated GCS (one store node
//! shared by all); writers on every node send writes and record what they were told;
//! `driver-crash` kills and restarts nodes. The same checker as the discrete-event
//! simulation judges the run, and a seed replays it exactly.
//!
//! Build and run it with `just madsim driver-race 1` (it needs `--cfg madsim`).

#[cfg(not(madsim))]
fn main() {
    eprintln!("slotlog-dsim runs the driver under madsim: build it with RUSTFLAGS=\"--cfg madsim\" (`just madsim SCENARIO SEED`)");
    std::process::exit(2);
}

#[cfg(madsim)]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: slotlog-dsim driver-race|driver-crash --seed N [--json]";
    let scenario = args.get(1).cloned().unwrap_or_else(|| {
        eprintln!("{usage}");
        std::process::exit(2)
    });
    if scenario != "driver-race" && scenario != "driver-crash" {
        eprintln!("unknown scenario {scenario:?}\n{usage}");
        std::process::exit(2);
    }
    let seed = args
        .iter()
        .position(|a| a == "--seed")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let json = args.iter().any(|a| a == "--json");
    let runtime = madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
    let report = runtime.block_on(dsim::run(scenario.clone(), seed));
    if json {
        println!("{}", report.json());
    } else {
        print!("{}", report.text());
    }
    std::process::exit(if report.violations.is_empty() { 0 } else { 1 });
}

#[cfg(madsim)]
mod dsim {
    use bytes::Bytes;
    use slotlog::{Error, World, WorldConfig};
    use slotlog_dsim::SimBlobs;
    use slotlog_kernel::format::{Keys, Marker};
    use slotlog_kernel::reply::WriteError;
    use slotlog_kernel::time::Instant;
    use slotlog_model::{ClientOp, History, Outcome, StoredObject};
    use slotlog_sim::gcs::{GcsConfig, ProfileKind, SimGcs};
    use slotlog_sim::{Arrivals, Generator, Mix, Workload};
    use std::collections::BTreeSet;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    const REPLICAS: usize = 3;
    const WRITERS_PER_REPLICA: usize = 16;
    const DURATION: Duration = Duration::from_secs(10);
    /// After the writers stop: time for every write and every late create to land.
    const SETTLE: Duration = Duration::from_secs(20);
    const PREFIX: &str = "worlds/dsim";

    struct Shared {
        base: tokio::time::Instant,
        history: Mutex<History>,
        generator: Mutex<Generator>,
        worlds: Mutex<Vec<Option<World>>>,
        /// History indices of writes in flight on each replica.
        in_flight: Mutex<Vec<BTreeSet<usize>>>,
        stop: AtomicBool,
    }

    impl Shared {
        fn now(&self) -> Instant {
            Instant::from_micros(self.base.elapsed().as_micros() as u64)
        }
    }

    pub struct Report {
        scenario: String,
        seed: u64,
        offered: u64,
        acked: u64,
        /// Refused by a precondition (the contended mix expects versions).
        rejected: u64,
        refused: u64,
        uncertain: u64,
        crashed: u64,
        kills: u64,
        lost: u64,
        slots: u64,
        pub violations: Vec<String>,
        trace_hash: String,
    }

    impl Report {
        pub fn json(&self) -> String {
            let violations: Vec<String> = self.violations.iter().map(|v| format!("{v:?}")).collect();
            format!(
                "{{\"scenario\":\"{}\",\"seed\":{},\"replicas\":{REPLICAS},\"offered\":{},\"acked\":{},\"rejected\":{},\"refused\":{},\"uncertain\":{},\"crashed\":{},\"kills\":{},\"lost\":{},\"slots\":{},\"violations\":[{}],\"trace_hash\":\"{}\",\"repro\":\"just madsim {} {}\"}}",
                self.scenario, self.seed, self.offered, self.acked, self.rejected, self.refused, self.uncertain,
                self.crashed, self.kills, self.lost, self.slots, violations.join(","), self.trace_hash, self.scenario, self.seed
            )
        }

        pub fn text(&self) -> String {
            let mut s = format!(
                "scenario {} seed {} (madsim, {REPLICAS} replicas of the real driver)\n  writes   offered {}  acked {}  rejected {}  refused {}  uncertain {}  crashed {}  lost {}  ({} slots, {} kills)\n  trace    {}\n",
                self.scenario, self.seed, self.offered, self.acked, self.rejected, self.refused, self.uncertain, self.crashed, self.lost,
                self.slots, self.kills, self.trace_hash
            );
            if self.violations.is_empty() {
                s += "  checker  passed\n";
            } else {
                for v in &self.violations {
                    s += &format!("  violation: {v}\n");
                }
                s += &format!("  replay with: just madsim {} {}\n", self.scenario, self.seed);
            }
            s
        }
    }

    /// One replica node: open the world, pass hints to peers, run the writers.
    async fn replica(r: usize, blobs: Arc<SimBlobs>, shared: Arc<Shared>) {
        let world = loop {
            // A replica each, as separate processes would run: the nodes race for slots.
            let mut config = WorldConfig::default();
            config.share_replica = false;
            match World::open_on(blobs.clone(), PREFIX, config.clone()).await {
                Ok(w) => break w,
                Err(e) => panic!("replica {r} could not open: {e}"),
            }
        };
        let peers = shared.clone();
        world.on_commit(move |sequence| {
            for (i, w) in peers.worlds.lock().expect("worlds").iter().enumerate() {
                if let (true, Some(w)) = (i != r, w) {
                    w.follow(sequence);
                }
            }
        });
        shared.worlds.lock().expect("worlds")[r] = Some(world.clone());
        for _ in 0..WRITERS_PER_REPLICA {
            let (world, shared) = (world.clone(), shared.clone());
            tokio::spawn(async move {
                while !shared.stop.load(Ordering::Acquire) {
                    let write = shared.generator.lock().expect("generator").next_write();
                    let index = {
                        let mut h = shared.history.lock().expect("history");
                        h.ops.push(ClientOp {
                            replica: r,
                            op_id: write.op_id,
                            mutation: write.mutation.clone(),
                            invoked_at: shared.now(),
                            outcome: Outcome::Unanswered,
                        });
                        h.ops.len() - 1
                    };
                    shared.in_flight.lock().expect("in flight")[r].insert(index);
                    let result = match world.write(write.clone()).await {
                        Ok(ok) => Ok(ok),
                        Err(Error::Write(e)) => Err(e),
                        Err(Error::Busy) => Err(WriteError::Busy { queued: 0 }),
                        Err(other) => panic!("replica {r}: a write failed outside the kernel: {other}"),
                    };
                    shared.in_flight.lock().expect("in flight")[r].remove(&index);
                    shared.generator.lock().expect("generator").observe(&write, &result);
                    shared.history.lock().expect("history").ops[index].outcome =
                        Outcome::Answered { at: shared.now(), result };
                }
            });
        }
        std::future::pending::<()>().await;
    }

    pub async fn run(scenario: String, seed: u64) -> Report {
        let crash = scenario == "driver-crash";
        let base = tokio::time::Instant::now();
        let gcs_config =
            if crash { GcsConfig::of(ProfileKind::Gcs) } else { GcsConfig::of(ProfileKind::GcsShaped) };
        let gcs = Arc::new(Mutex::new(SimGcs::new(gcs_config, seed)));
        let blobs = Arc::new(SimBlobs::new(gcs.clone(), base));
        let workload =
            Workload::new(Arrivals::Closed { writers_per_replica: WRITERS_PER_REPLICA }, Mix::contended());
        let shared = Arc::new(Shared {
            base,
            history: Mutex::new(History::default()),
            generator: Mutex::new(Generator::new(workload, seed)),
            worlds: Mutex::new(vec![None; REPLICAS]),
            in_flight: Mutex::new(vec![BTreeSet::new(); REPLICAS]),
            stop: AtomicBool::new(false),
        });
        let handle = madsim::runtime::Handle::current();
        let mut nodes = Vec::new();
        for r in 0..REPLICAS {
            let (blobs, shared) = (Arc::new(blobs.share()), shared.clone());
            let node = handle
                .create_node()
                .name(format!("replica-{r}"))
                .init(move || replica(r, blobs.clone(), shared.clone()))
                .build();
            nodes.push(node.id());
        }
        let mut kills = 0;
        let mut chaos = slotlog_sim_rng(seed);
        let end = base + DURATION;
        while tokio::time::Instant::now() < end {
            if !crash {
                tokio::time::sleep_until(end).await;
                break;
            }
            tokio::time::sleep(Duration::from_millis(500 + chaos() % 2_500)).await;
            let r = (chaos() % REPLICAS as u64) as usize;
            handle.kill(nodes[r]);
            kills += 1;
            shared.worlds.lock().expect("worlds")[r] = None;
            let lost: Vec<usize> =
                std::mem::take(&mut shared.in_flight.lock().expect("in flight")[r]).into_iter().collect();
            {
                let mut h = shared.history.lock().expect("history");
                for i in lost {
                    h.ops[i].outcome = Outcome::Crashed;
                }
            }
            tokio::time::sleep(Duration::from_millis(200 + chaos() % 1_500)).await;
            handle.restart(nodes[r]);
        }
        shared.stop.store(true, Ordering::Release);
        tokio::time::sleep(SETTLE).await;

        let history = shared.history.lock().expect("history").clone();
        let keys = Keys::new(PREFIX);
        let objects: Vec<StoredObject> = gcs
            .lock()
            .expect("store")
            .objects()
            .filter(|(k, _, _)| k.starts_with(keys.root()))
            .map(|(key, bytes, meta)| StoredObject {
                key: key.to_string(),
                bytes: bytes.clone(),
                created_at: Instant::from_micros(meta.created_at_us),
            })
            .collect();
        let world_id = objects
            .iter()
            .find(|o| o.key == keys.marker())
            .and_then(|o| Marker::decode(&o.bytes).ok())
            .map(|m| m.world_id)
            .expect("a world was made");
        let check =
            slotlog_model::check(&history, &objects, &keys, world_id, slotlog_model::CheckOptions::default());
        let mut trace = blake3::Hasher::new();
        for op in &history.ops {
            trace.update(format!("{:?}|{:?}|{:?}", op.op_id, op.invoked_at, op.outcome).as_bytes());
        }
        trace.update(&gcs.lock().expect("store").digest());
        let count =
            |f: &dyn Fn(&Outcome) -> bool| history.ops.iter().filter(|o| f(&o.outcome)).count() as u64;
        let mut violations: Vec<String> = check.violations.iter().map(ToString::to_string).collect();
        let unanswered = count(&|o| *o == Outcome::Unanswered);
        if unanswered > 0 {
            violations.push(format!("{unanswered} writes were never answered"));
        }
        Report {
            scenario,
            seed,
            offered: history.ops.len() as u64,
            acked: count(&|o| matches!(o, Outcome::Answered { result: Ok(_), .. })),
            rejected: count(&|o| {
                matches!(o, Outcome::Answered { result: Err(WriteError::Rejected { .. }), .. })
            }),
            refused: count(&|o| matches!(o, Outcome::Answered { result: Err(WriteError::Busy { .. }), .. })),
            uncertain: count(&|o| {
                matches!(o, Outcome::Answered { result: Err(WriteError::Uncertain { .. }), .. })
            }),
            crashed: count(&|o| *o == Outcome::Crashed),
            kills,
            lost: check.lost,
            slots: check.slots,
            violations,
            trace_hash: Bytes::copy_from_slice(trace.finalize().as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        }
    }

    /// A small seeded stream for the chaos schedule (splitmix64).
    fn slotlog_sim_rng(seed: u64) -> impl FnMut() -> u64 {
        let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
        move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
    }
}
