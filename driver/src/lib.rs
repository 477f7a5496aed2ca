//! slotlog: many replicas writing one world of versioned documents through nothing but
//! an object store, with no database and no leader.
//!
//! A [`World`] is one replica of one world. It runs the pure `slotlog-kernel` state
//! machine on a driver loop over a blob backend: any `object_store` store (S3, GCS, a
//! local directory, memory), or the simulated GCS. Open the same world from many
//! processes and they commit together; pass each one's [`World::on_commit`] sequences to
//! the others' [`World::follow`] so they take turns and read each other's writes fast.
//!
//! ```no_run
//! # async fn demo() -> Result<(), slotlog::Error> {
//! use std::sync::Arc;
//! let store = Arc::new(object_store::memory::InMemory::new());
//! let world = slotlog::World::open(store, "worlds/demo", slotlog::WorldConfig::default()).await?;
//! world.publish("/notes/a.md", "hello", slotlog::Expected::Any).await?;
//! let doc = world.fetch("/notes/a.md", None).await?;
//! # Ok(()) }
//! ```

pub mod blobs;
pub mod error;
#[cfg(feature = "object-store")]
pub mod object_store_blobs;
pub(crate) mod runtime;
#[cfg(feature = "sim")]
pub mod sim_blobs;
#[cfg(feature = "object-store")]
pub mod store_url;
pub mod watch;
pub mod world;

pub use blobs::{BlobFuture, Blobs};
pub use error::Error;
#[cfg(feature = "object-store")]
pub use object_store_blobs::{Backend, ObjectStoreBlobs};
pub use slotlog_kernel::world::{Expected, PolicyBody};
pub use slotlog_kernel::{Answer, Read, ReadOk, WriteOk};
#[cfg(feature = "object-store")]
pub use store_url::{open_store, StoreOptions, StoreUrlError};
pub use watch::Watch;
pub use world::{new_op_id, World, WorldConfig};
