//! slotlog-scenarios: named, seeded scenarios over the simulated cluster, their reports,
//! and sweeps over many seeds. The `slotlog` binary is a thin command line over this.

pub mod coverage;
pub mod plot;
pub mod plot_bench;
pub mod report;
pub mod scenario;
pub mod shrink;
pub mod sweep;
pub mod tools;
pub mod trace;

pub use report::Report;
pub use scenario::{run_scenario, run_scenario_traced, Overrides, Scenario, SCENARIOS};
