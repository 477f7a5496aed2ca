//! [`World::builder`]: opening a world named step by step, each setting checked when the
//! world opens.

use crate::error::Error;
use crate::object_store_blobs::Backend;
use crate::world::{World, WorldConfig};
use std::sync::Arc;

/// A world to open: `World::builder(store).prefix("worlds/w").config(c).open().await`.
/// Nothing is sent to the store until [`WorldBuilder::open`].
#[must_use = "a builder opens nothing until `open` is awaited"]
pub struct WorldBuilder {
    store: Arc<dyn object_store::ObjectStore>,
    backend: Option<Backend>,
    prefix: String,
    config: WorldConfig,
}

impl World {
    /// Starts a [`WorldBuilder`] on `store`: the whole store as the world's prefix, the
    /// default configuration, and the backend told from the store (as [`World::open`]).
    pub fn builder(store: Arc<dyn object_store::ObjectStore>) -> WorldBuilder {
        WorldBuilder { store, backend: None, prefix: String::new(), config: WorldConfig::default() }
    }
}

impl WorldBuilder {
    /// The key prefix the world lives under (no leading or trailing `/`; checked at open).
    pub fn prefix(mut self, prefix: impl Into<String>) -> WorldBuilder {
        self.prefix = prefix.into();
        self
    }

    /// The world's configuration (checked at open: out of range is `Error::Config`).
    pub fn config(mut self, config: WorldConfig) -> WorldBuilder {
        self.config = config;
        self
    }

    /// Takes the store as this backend instead of telling it from the store, as
    /// [`World::open_with`] does: the caller vouches that object_store does not retry
    /// inside a create.
    pub fn backend(mut self, backend: Backend) -> WorldBuilder {
        self.backend = Some(backend);
        self
    }

    /// Opens the world, or creates it if the prefix is empty: [`World::open`] says what
    /// it refuses and when it gives up.
    pub async fn open(self) -> Result<World, Error> {
        match self.backend {
            Some(backend) => World::open_with(self.store, backend, &self.prefix, self.config).await,
            None => World::open(self.store, &self.prefix, self.config).await,
        }
    }
}
