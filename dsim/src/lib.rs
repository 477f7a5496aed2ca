//! The slotlog driver under madsim's deterministic runtime: the simulated GCS as a blob
//! backend ([`SimBlobs`]) and the `slotlog-dsim` harness that runs real `World` handles
//! over it (`just madsim driver-race 1`).
//!
//! Kept apart from the `slotlog` crate, so that crate stands on the kernel and
//! object_store alone: the simulation reaches the driver only through its public
//! [`slotlog::Blobs`] trait, as any embedder's backend would.

#![warn(missing_docs)]

mod sim_blobs;

pub use sim_blobs::SimBlobs;
