//! Handles on one world in one process share one replica (docs/OPERATIONS.md, "Handles in
//! one process"): a process-wide registry of the open replicas, keyed as the hints
//! registry keys a world (the store as it names itself, the prefix) with the world id the
//! configuration names, and held weakly, so a replica ends when its last handle goes.
//!
//! Writes of every handle on a shared replica ride the same slots: the log is serial over
//! the world, so separate replicas in one process would each carry only their own
//! handle's writers in their turn. A handle joins only a replica opened with a
//! configuration equal in everything the replica runs by ([`same_replica`]); a read-only
//! handle, or one with `WorldConfig::share_replica` off, opens a replica of its own.
//!
//! This module owns the registry and the rule of who may join; the handles' per-handle
//! state (closed, views per caller, watches) stays in `world`.

use crate::runtime::{Command, Stopped};
use crate::world::WorldConfig;
use slotlog_kernel::ids::WorldId;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::{mpsc, watch};

/// What every handle on one replica holds: the loop's command queue and what the loop
/// publishes. The loop ends when the last of these (and the last watch) is dropped.
pub(crate) struct Shared {
    pub commands: mpsc::Sender<Command>,
    /// The sequence the world is known committed through; each commit hook watches it.
    pub committed: watch::Receiver<u64>,
    /// Set when the driver loop stopped on a store failure.
    pub stopped: Stopped,
    pub world_id: WorldId,
    /// The next view's id: unique over every handle on the replica and every replica the
    /// loop runs (the kernel keys pins by it).
    pub next_view: AtomicU64,
    /// Handles open on the replica (not closed, not dropped). 0 once the last one closed:
    /// then nobody may join, and the closing handle stops the loop.
    pub open: Mutex<usize>,
    /// The configuration the replica was opened with, for [`same_replica`].
    pub config: WorldConfig,
}

impl Shared {
    /// Counts one more handle, unless the replica is closing or stopped.
    pub fn join(&self) -> bool {
        let mut open = self.open.lock().expect("never poisoned: no panic holds it");
        if *open == 0 || self.stopped.get().is_some() {
            return false;
        }
        *open += 1;
        true
    }

    /// Counts one handle fewer; true when it was the last open one.
    pub fn leave(&self) -> bool {
        let mut open = self.open.lock().expect("never poisoned: no panic holds it");
        *open = open.checked_sub(1).expect("a handle leaves once");
        *open == 0
    }

    /// Handles open on the replica now.
    pub fn handles(&self) -> usize {
        *self.open.lock().expect("never poisoned: no panic holds it")
    }
}

/// Where a replica may be shared: the store as its `Blobs` names itself, the prefix, and
/// the world the configuration names (None: whatever world the prefix holds).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ReplicaKey {
    pub store: String,
    pub prefix: String,
    pub world: Option<WorldId>,
}

/// The replicas open under one key (one a configuration), behind an async lock held
/// while one opens, so two handles opened at once on one world share one replica.
pub(crate) type Slot = Arc<tokio::sync::Mutex<Vec<Weak<Shared>>>>;

static REGISTRY: Mutex<BTreeMap<ReplicaKey, Slot>> = Mutex::new(BTreeMap::new());

/// The slot of `key`, made if none; slots left with no live replica are let go.
pub(crate) fn slot(key: &ReplicaKey) -> Slot {
    let mut registry = REGISTRY.lock().expect("never poisoned: no panic holds it");
    registry.retain(|k, slot| {
        k == key || slot.try_lock().map_or(true, |replicas| replicas.iter().any(|r| r.strong_count() > 0))
    });
    registry.entry(key.clone()).or_default().clone()
}

/// A live replica in `replicas` opened with a configuration `config` may share, counted
/// one handle more; the dead ones are let go.
pub(crate) fn join(replicas: &mut Vec<Weak<Shared>>, config: &WorldConfig) -> Option<Arc<Shared>> {
    replicas.retain(|r| r.strong_count() > 0);
    replicas
        .iter()
        .filter_map(Weak::upgrade)
        .find(|shared| same_replica(&shared.config, config) && shared.join())
}

/// Whether two configurations run a replica alike: equal in every field but those a
/// handle keeps for itself (`watch_buffer_events`, `views_per_caller_max`). A field added
/// later keeps handles apart unless it is cleared here too.
pub(crate) fn same_replica(a: &WorldConfig, b: &WorldConfig) -> bool {
    let replica_s =
        |c: &WorldConfig| WorldConfig { watch_buffer_events: 0, views_per_caller_max: 0, ..c.clone() };
    replica_s(a) == replica_s(b)
}

/// Whether a handle opened with `config` may share a replica at all.
pub(crate) fn shares(config: &WorldConfig) -> bool {
    config.share_replica && !config.kernel.read_only
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_handle_fields_do_not_keep_handles_apart() {
        let a = WorldConfig::default();
        let mut b = WorldConfig::default();
        b.watch_buffer_events += 1;
        b.views_per_caller_max += 1;
        assert!(same_replica(&a, &b));
    }

    #[test]
    fn a_different_limit_keeps_handles_apart() {
        let a = WorldConfig::default();
        let mut b = WorldConfig::default();
        b.kernel.request_deadline += std::time::Duration::from_secs(1);
        assert!(!same_replica(&a, &b));
        let mut c = WorldConfig::default();
        c.call_retries_max += 1;
        assert!(!same_replica(&a, &c));
    }

    #[test]
    fn a_read_only_handle_or_the_opt_out_never_shares() {
        let mut read_only = WorldConfig::default();
        read_only.kernel.read_only = true;
        assert!(!shares(&read_only));
        let own = WorldConfig { share_replica: false, ..WorldConfig::default() };
        assert!(!shares(&own));
        assert!(shares(&WorldConfig::default()));
    }
}
