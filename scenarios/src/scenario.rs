//! The named scenarios. Each is a function of (overrides, seed) to a cluster
//! configuration; `run_scenario` runs it, checks it, and reports.

use crate::report::Report;
use slotlog_kernel::Defects;
use slotlog_sim::gcs::{Faults, GcsConfig, ProfileKind};
use slotlog_sim::{Arrivals, ClusterConfig, Crashes, Mix, Workload};

/// What a run may change from a scenario's defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides {
    pub replicas: Option<usize>,
    pub duration_s: Option<f64>,
    pub profile: Option<ProfileKind>,
    pub batch_max: Option<usize>,
    pub ahead: Option<usize>,
    pub rate: Option<f64>,
    pub writers: Option<usize>,
    /// Deliberate kernel defects; only tests set these, and no flag does.
    pub defects: Defects,
}

impl Overrides {
    /// The flags that reproduce these overrides on the command line.
    pub fn flags(&self) -> String {
        let mut s = String::new();
        if let Some(v) = self.replicas {
            s += &format!(" --replicas {v}");
        }
        if let Some(v) = self.duration_s {
            s += &format!(" --duration-s {v}");
        }
        if let Some(v) = self.profile {
            s += &format!(" --profile {v}");
        }
        if let Some(v) = self.batch_max {
            s += &format!(" --batch-max {v}");
        }
        if let Some(v) = self.ahead {
            s += &format!(" --ahead {v}");
        }
        if let Some(v) = self.rate {
            s += &format!(" --rate {v}");
        }
        if let Some(v) = self.writers {
            s += &format!(" --writers {v}");
        }
        s
    }
}

pub struct Scenario {
    pub name: &'static str,
    pub about: &'static str,
    build: fn(u64) -> ClusterConfig,
}

pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "single",
        about: "one store, gcs profile, open loop 250 writes/s for 60 s on a 2,000-document world",
        build: single,
    },
    Scenario {
        name: "saturate",
        about: "one store, gcs profile, closed loop of 256 writers (honours --batch-max and --ahead)",
        build: saturate,
    },
    Scenario {
        name: "race",
        about: "R stores (default 3), gcs-shaped, 2,000-document seed, 30% creates 70% blind updates, 64 writers per store",
        build: race,
    },
    Scenario {
        name: "faults",
        about: "3 stores, gcs profile with every fault at high rates: 429, 5xx, timeouts, late creates, spikes",
        build: faults,
    },
    Scenario {
        name: "crash",
        about: "3 stores, gcs profile, random crashes and restarts, skewed clocks",
        build: crash,
    },
    Scenario {
        name: "conflicts",
        about: "many writers on a few documents: expected versions, appends, archive and policy flips, parent/child races",
        build: conflicts,
    },
];

impl Scenario {
    pub fn find(name: &str) -> Option<&'static Scenario> {
        SCENARIOS.iter().find(|s| s.name == name)
    }

    /// The cluster this scenario runs for `seed` with `o` applied.
    pub fn config(&self, seed: u64, o: &Overrides) -> ClusterConfig {
        let mut c = (self.build)(seed);
        if let Some(r) = o.replicas {
            c.replicas = r;
        }
        if let Some(d) = o.duration_s {
            c.duration_ms = (d * 1_000.0) as u64;
        }
        if let Some(p) = o.profile {
            c.gcs = GcsConfig { faults: c.gcs.faults, ..GcsConfig::of(p) };
        }
        if let Some(b) = o.batch_max {
            c.kernel.batch_members_max = b;
            c.kernel.batch_members_deep_max = b;
        }
        if let Some(a) = o.ahead {
            c.kernel.batches_ahead_max = a;
        }
        match &mut c.workload.arrivals {
            Arrivals::Open { rate_per_s } => {
                if let Some(r) = o.rate {
                    *rate_per_s = r;
                }
            }
            Arrivals::Closed { writers_per_replica } => {
                if let Some(w) = o.writers {
                    *writers_per_replica = w;
                }
            }
        }
        c.kernel.defects = o.defects;
        c
    }
}

/// Runs one scenario and judges it.
pub fn run_scenario(scenario: &Scenario, seed: u64, o: &Overrides) -> Report {
    let config = scenario.config(seed, o);
    let started = std::time::Instant::now();
    let result = slotlog_sim::run(&config);
    let check = slotlog_model::check(&result.history, &result.objects, &result.keys, result.world_id);
    let wall_s = started.elapsed().as_secs_f64();
    let repro = format!("slotlog run {} --seed {seed}{}", scenario.name, o.flags());
    Report::new(scenario.name, seed, &config, &result, &check, wall_s, repro)
}

fn single(seed: u64) -> ClusterConfig {
    let workload = Workload::new(Arrivals::Open { rate_per_s: 250.0 }, Mix::creates_and_blind_updates());
    let mut c = ClusterConfig::new(seed, 1, GcsConfig::of(ProfileKind::Gcs), workload);
    c.duration_ms = 60_000;
    c.preload_documents = 2_000;
    c
}

fn saturate(seed: u64) -> ClusterConfig {
    let workload =
        Workload::new(Arrivals::Closed { writers_per_replica: 256 }, Mix::creates_and_blind_updates());
    let mut c = ClusterConfig::new(seed, 1, GcsConfig::of(ProfileKind::Gcs), workload);
    c.duration_ms = 30_000;
    c.preload_documents = 2_000;
    c
}

fn race(seed: u64) -> ClusterConfig {
    let workload =
        Workload::new(Arrivals::Closed { writers_per_replica: 64 }, Mix::creates_and_blind_updates());
    let mut c = ClusterConfig::new(seed, 3, GcsConfig::of(ProfileKind::GcsShaped), workload);
    c.duration_ms = 20_000;
    c.preload_documents = 2_000;
    c
}

fn faults(seed: u64) -> ClusterConfig {
    let mix = Mix {
        create: 20,
        blind_update: 40,
        expected_update: 15,
        append: 15,
        archive_flip: 5,
        republish: 5,
        ..Mix::default()
    };
    let workload = Workload::new(Arrivals::Open { rate_per_s: 120.0 }, mix);
    let gcs = GcsConfig::of(ProfileKind::Gcs).with_faults(Faults::high());
    let mut c = ClusterConfig::new(seed, 3, gcs, workload);
    c.duration_ms = 20_000;
    c.preload_documents = 200;
    c
}

fn crash(seed: u64) -> ClusterConfig {
    let workload = Workload::new(
        Arrivals::Open { rate_per_s: 150.0 },
        Mix { create: 30, blind_update: 50, expected_update: 10, append: 10, ..Mix::default() },
    );
    let mut c = ClusterConfig::new(seed, 3, GcsConfig::of(ProfileKind::Gcs), workload);
    c.duration_ms = 20_000;
    c.preload_documents = 200;
    c.crashes = Some(Crashes { mean_interval_ms: 2_000, down_ms_min: 200, down_ms_max: 3_000 });
    c.clock_skew_ms_max = 100;
    c
}

fn conflicts(seed: u64) -> ClusterConfig {
    let mut workload = Workload::new(Arrivals::Closed { writers_per_replica: 8 }, Mix::contended());
    workload.hot_paths = Some(6);
    workload.parent_child_pairs = 4;
    workload.body_bytes_min = 16;
    workload.body_bytes_max = 256;
    let mut c = ClusterConfig::new(seed, 3, GcsConfig::of(ProfileKind::Gcs), workload);
    c.duration_ms = 15_000;
    c
}
