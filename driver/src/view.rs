//! `View`: several reads that all see one state of the world (the record: "a view pins
//! its snapshot at its first read"). The first read is served like any read, fresh
//! enough for its kind; every later one answers from the state the first answered from,
//! whatever commits meanwhile. A view is let go when dropped.
//!
//! A view lives at most the kernel's `view_age_max` (at most the checkpoint grace, so it
//! never needs what collection deletes), and no longer than its replica: past either, a
//! read answers `ReadError::ViewExpired` (kind `Resync`): open a new view. Views are
//! bounded per world (`Config::views_max`, `ViewsExhausted`) and, for embedders that
//! name their callers, per caller ([`World::view_for`], `Error::Views`).

use crate::error::Error;
use crate::read_request;
use crate::runtime::Command;
use crate::world::World;
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::ViewId;
use slotlog_kernel::{Read, ReadOk, Reply, Request};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Views held per caller, for [`World::view_for`]: taken and given back by handles on
/// any thread (the loom tests below explore their interleavings).
#[derive(Default)]
pub(crate) struct Callers {
    held: crate::sync::Mutex<HashMap<String, usize>>,
}

impl Callers {
    /// Counts one more view of `caller`, unless it holds `max` already.
    fn take(&self, caller: &str, max: usize) -> Result<(), usize> {
        let mut held = self.held.lock().expect("never poisoned: no panic holds it");
        let n = held.entry(caller.to_string()).or_default();
        if *n >= max {
            return Err(*n);
        }
        *n += 1;
        Ok(())
    }

    fn give_back(&self, caller: &str) {
        let mut held = self.held.lock().expect("never poisoned: no panic holds it");
        if let Some(n) = held.get_mut(caller) {
            *n -= 1;
            if *n == 0 {
                held.remove(caller);
            }
        }
    }
}

/// Reads that all see one state: the one its first read answered from.
pub struct View {
    world: World,
    id: ViewId,
    /// The sequence the first read answered at, once one has.
    pinned: Mutex<Option<u64>>,
    /// The caller it counts against, for [`World::view_for`].
    caller: Option<(String, Arc<Callers>)>,
}

impl View {
    pub(crate) fn new(world: World, id: ViewId, caller: Option<(String, Arc<Callers>)>) -> View {
        View { world, id, pinned: Mutex::new(None), caller }
    }

    /// Counts a view of `caller` against `max`, or says how many it holds.
    pub(crate) fn for_caller(callers: &Arc<Callers>, caller: &str, max: usize) -> Result<(), Error> {
        callers.take(caller, max).map_err(|views| Error::Views { caller: caller.to_string(), views })
    }

    /// The sequence this view's reads answer at, once its first read has answered.
    pub fn pinned_at(&self) -> Option<u64> {
        *self.pinned.lock().expect("never poisoned: no panic holds it")
    }

    /// Answers `read` from the view's state (the first read pins it).
    pub async fn read(&self, read: Read) -> Result<ReadOk, Error> {
        let pinned = self.pinned_at();
        let request = Request::ViewRead { view: self.id, pinned, read };
        let span = tracing::info_span!("view_read", view = self.id.0, pinned);
        let _guard = span.enter();
        match self.world.request(request).await? {
            Reply::Read(Ok(ok)) => {
                self.pinned.lock().expect("never poisoned: no panic holds it").get_or_insert(ok.at_sequence);
                Ok(ok)
            }
            Reply::Read(Err(e)) => Err(Error::Read(e)),
            Reply::Write(_) => unreachable!("a read is answered as a read"),
        }
    }

    /// A document's current version (or `version` while retained) and its body, as of the
    /// view's state.
    pub async fn fetch(&self, path: &str, version: Option<u64>) -> Result<ReadOk, Error> {
        self.read(read_request::fetch(path, version)).await
    }

    /// A document's retained versions, as of the view's state.
    pub async fn versions(&self, path: &str) -> Result<ReadOk, Error> {
        self.read(read_request::versions(path)).await
    }

    /// Documents whose path starts with `prefix`, after `start_after`, as of the view.
    pub async fn lookup(&self, prefix: &str, start_after: Option<&str>, limit: u32) -> Result<ReadOk, Error> {
        self.read(read_request::lookup(prefix, start_after, limit)).await
    }

    /// A directory's children in name order, after `start_after`, as of the view: paging
    /// a directory through one view sees it whole and once, however it changes meanwhile.
    pub async fn list(
        &self,
        directory: &str,
        start_after: Option<&str>,
        limit: u32,
    ) -> Result<ReadOk, Error> {
        self.read(read_request::list(directory, start_after, limit)).await
    }

    /// Documents whose current body has `hash`, in path order, after `start_after`, as of
    /// the view.
    pub async fn hash_lookup(
        &self,
        hash: Hash32,
        start_after: Option<&str>,
        limit: u32,
    ) -> Result<ReadOk, Error> {
        self.read(read_request::hash_lookup(hash, start_after, limit)).await
    }

    /// Documents whose current body matches `query`, after `start_after`, as of the view:
    /// body mode only from an index covering the view's state (see [`World::search`]).
    ///
    /// [`World::search`]: crate::World::search
    pub async fn search(&self, query: &str, start_after: Option<&str>, limit: u32) -> Result<ReadOk, Error> {
        self.read(read_request::search(query, start_after, limit)).await
    }

    /// Whether some document lies under `path`, as of the view.
    pub async fn is_directory(&self, path: &str) -> Result<bool, Error> {
        Ok(read_request::directory_answer(self.read(read_request::is_directory(path)).await?.answer))
    }
}

impl Drop for View {
    fn drop(&mut self) {
        // A full queue, or a world gone: the pin ages out (or went with its replica).
        let _ = self.world.commands().try_send(Command::ViewRelease(self.id));
        if let Some((caller, callers)) = &self.caller {
            callers.give_back(caller);
        }
    }
}

impl std::fmt::Debug for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("View").field("id", &self.id.0).field("pinned_at", &self.pinned_at()).finish()
    }
}

/// `just loom`: the per-caller bound, taken and given back by handles on several threads.
#[cfg(all(test, slotlog_loom))]
mod loom_tests {
    use super::Callers;
    use loom::sync::Arc;

    /// Two handles of one caller take a view at once with one left under the bound:
    /// exactly one gets it, whatever the interleaving; a third thread giving a view back
    /// meanwhile never lets the count go below zero or stay above the bound, and once
    /// every view is given back the caller holds nothing.
    #[test]
    fn the_bound_holds_under_concurrent_takes_and_every_view_given_back_frees_it() {
        loom::model(|| {
            let callers = Arc::new(Callers::default());
            callers.take("alice", 2).expect("the first of two");
            let take = |c: Arc<Callers>| loom::thread::spawn(move || c.take("alice", 2).is_ok());
            let (a, b) = (take(callers.clone()), take(callers.clone()));
            let giver = {
                let c = callers.clone();
                loom::thread::spawn(move || c.give_back("alice"))
            };
            let (a, b) = (a.join().expect("a"), b.join().expect("b"));
            giver.join().expect("the giver");
            let held = *callers.held.lock().expect("unpoisoned").get("alice").unwrap_or(&0);
            // The giver may have run before both takes (both succeed) or after (one does):
            // one held at the start, plus each take that succeeded, less the give-back.
            assert!(a || b, "one view was left under the bound");
            assert_eq!(held, usize::from(a) + usize::from(b), "every take counted once, the give-back once");
            assert!(held <= 2, "never above the bound");
            for _ in 0..held {
                callers.give_back("alice");
            }
            assert!(callers.held.lock().expect("unpoisoned").is_empty(), "nothing held once all are back");
        });
    }
}
