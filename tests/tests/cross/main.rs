//! The cross-crate tests, one module per concern, in one binary: each binary of its own
//! compiled and linked object_store, the simulator and the scenarios again (about 40 s of a
//! fresh build). In nextest they read `slotlog-tests::cross conformance::...`.

mod collect_moto;
mod conformance;
mod defects;
mod gcs_http;
mod scenarios;
mod sim_store_integration;
mod world_against_model;
