//! Cross-crate tests live in tests/tests/cross/ (one binary). This library holds what they share: the backend
//! conformance suite and the simulated GCS behind object_store's trait.

pub mod conformance;
pub mod sim_store;
