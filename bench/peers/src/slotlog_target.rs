//! slotlog through its public crate, as an embedder holds it: `World` handles on one
//! world, each write a `publish` to a new path, acknowledged once its slot is confirmed.

use crate::load::{value, Writer};
use object_store::ObjectStore;
use slotlog::{Backend, Error, Expected, World, WorldConfig, WriteError};
use std::sync::Arc;

/// How the handles are opened.
#[derive(Clone, Debug)]
pub struct Tune {
    /// Commit hints passed between handles (`on_commit` into the others' `follow`).
    pub hints: bool,
    /// Overrides the kernel's `batches_ahead_max` when set.
    pub batches_ahead: Option<usize>,
}

/// Opens `handles` handles on one new world under `prefix`, one after another (the
/// first creates it). With `tune.hints`, each handle's commit hook feeds the others'
/// `follow`: the driver has no in-process hint sharing of its own yet, so this is the
/// wiring an embedder writes by hand today.
pub async fn open(
    store: Arc<dyn ObjectStore>,
    handles: usize,
    tune: &Tune,
) -> Result<Vec<World>, slotlog::Error> {
    let mut config = WorldConfig::default();
    if let Some(ahead) = tune.batches_ahead {
        config.kernel.batches_ahead_max = ahead;
    }
    let mut worlds = Vec::with_capacity(handles);
    for _ in 0..handles {
        // The store is a ThrottledStore over InMemory: an in-memory store as far as
        // slotlog is concerned (sorted listings, ETags), which `detect_backend` cannot
        // tell through the wrapper.
        let world = World::open_with(store.clone(), Backend::Memory, "worlds/bench", config.clone()).await?;
        worlds.push(world);
    }
    if tune.hints && handles > 1 {
        for (i, world) in worlds.iter().enumerate() {
            let others: Vec<World> =
                worlds.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, w)| w.clone()).collect();
            world.on_commit(move |sequence| {
                for other in &others {
                    other.follow(sequence);
                }
            });
        }
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
