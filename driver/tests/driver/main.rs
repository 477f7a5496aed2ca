//! The driver's integration tests, one module per concern, in one binary: each binary of
//! its own compiled and linked object_store, reqwest and tokio again (about 40 s of a
//! fresh build). In nextest they read `slotlog::driver bounded_open::...`.
#![cfg(all(feature = "s3", feature = "gcs", feature = "azure", feature = "fs", not(madsim)))]

mod backend_errors;
mod bounded_open;
mod builder_stream;
mod commit_hooks;
mod credentials;
mod health;
mod hints;
mod local_cache;
mod metrics_facade;
mod moto_errors;
mod read_only;
mod reload;
mod search;
mod shared_replica;
mod store_url_hostile;
mod views;
