//! slotlog through its public crate, as an embedder holds it: `World` handles on one
//! world, each write a `publish` to a new path, acknowledged once its slot is confirmed.

use crate::load::{value, Writer};
use object_store::ObjectStore;
use slotlog::{Backend, Error, Expected, Peers, World, WorldConfig, WriteError};
use std::sync::Arc;

/// How the handles are opened.
#[derive(Clone, Debug)]
pub struct Tune {
    /// Commit hints between the handles: the crate's own in-process sharing
    /// (`Peers::ThisProcess`), or none at all (`hints_in_process` off, peers unknown:
    /// the kernel's blind turns alone).
    pub hints: bool,
    /// Handles commit through one replica (the crate's default), or a replica each.
    pub share_replica: bool,
    /// Overrides the kernel's `batches_ahead_max` when set.
    pub batches_ahead: Option<usize>,
}

/// Opens `handles` handles on one new world under `prefix`, one after another (the
/// first creates it), as an embedder does: handles on one world in one process commit
/// through one replica (docs/OPERATIONS.md, "Handles in one process"), or with
/// `share_replica` off each through its own, sharing commit hints with no wiring.
pub async fn open(
    store: Arc<dyn ObjectStore>,
    handles: usize,
    tune: &Tune,
) -> Result<Vec<World>, slotlog::Error> {
    let mut config = WorldConfig::default();
    config.share_replica = tune.share_replica;
    if let Some(ahead) = tune.batches_ahead {
        config.kernel.batches_ahead_max = ahead;
    }
    if tune.hints {
        config.peers = Peers::ThisProcess;
    } else {
        config.hints_in_process = false;
    }
    let mut worlds = Vec::with_capacity(handles);
    for _ in 0..handles {
        // The store is a ThrottledStore over InMemory: an in-memory store as far as
        // slotlog is concerned (sorted listings, ETags), which `detect_backend` cannot
        // tell through the wrapper.
        let world = World::open_with(store.clone(), Backend::Memory, "worlds/bench", config.clone()).await?;
        worlds.push(world);
    }
    Ok(worlds)
}

/// One writer on one handle: `/w<writer>/<seq>`, a 256-byte body, no precondition.
pub struct SlotlogWriter {
    pub world: World,
    pub writer: usize,
    pub value_bytes: usize,
}

impl Writer for SlotlogWriter {
    async fn write(&mut self, seq: u64) -> Result<(), String> {
        let path = format!("/w{}/{}", self.writer, seq);
        let body = value(self.writer, seq, self.value_bytes);
        match self.world.publish(&path, body, Expected::Any).await {
            Ok(_) => Ok(()),
            Err(error) => Err(label(&error)),
        }
    }
}

fn label(error: &Error) -> String {
    match error {
        Error::Write(WriteError::Busy { .. }) => "busy".into(),
        Error::Write(WriteError::Expired { .. }) => "expired".into(),
        Error::Write(WriteError::Uncertain { .. }) => "uncertain".into(),
        Error::Write(WriteError::Rejected { .. }) => "rejected".into(),
        Error::Busy => "command-queue-full".into(),
        other => {
            let text = format!("{other:?}");
            text.chars().take_while(|c| c.is_alphanumeric() || *c == '(').collect()
        }
    }
}
