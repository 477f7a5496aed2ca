//! slotlog-sim: the simulated GCS ([`gcs`]) and the deterministic multi-replica harness
//! ([`cluster`]) that drives kernels against it with seeded workloads ([`workload`]),
//! crashes and restarts. Pure and single-threaded: a run is a function of its seed.

// Every public item says what it is; CI denies warnings (issue 12).
#![warn(missing_docs)]

pub(crate) mod ambiguity;
pub mod cluster;
pub mod gcs;
pub mod liveness;
pub(crate) mod math;
pub mod pause;
pub(crate) mod rng;
pub(crate) mod time;
pub(crate) mod trace_text;
pub mod workload;

pub use cluster::{
    run, run_traced, ClusterConfig, Crashes, DamageCounts, DamagedObject, Hints, ReplicaReport, RunResult,
    TraceEvent,
};
pub use liveness::{LivenessBudget, NotLive};
pub use pause::{Gone, Pause, Stall, StallAt};
pub use workload::{Arrivals, Bursts, Generator, Mix, ReadLoad, ViewLoad, WatchLoad, Workload};
