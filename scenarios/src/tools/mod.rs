//! Tools that work on a real world in a real store (the `writer`, `verify` and `inspect`
//! commands, and `bench cold-start`), as against the simulation.

pub mod bench_checkpoint_step;
pub mod bench_cold_start;
pub mod bench_search;
pub mod inspect;
pub mod log_scan;
pub mod search;
pub mod settle;
#[cfg(test)]
mod test_store;
pub mod verify;
pub mod writer;

use bytes::Bytes;
use futures_util::stream::{self, BoxStream, Stream, StreamExt};
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};
use slotlog::store_url::{open_store, StoreOptions};
use slotlog_kernel::checkpoint;
use slotlog_kernel::format::slot::slot_hash;
use slotlog_kernel::format::{Checkpoint, Keys, Marker, Slot};
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::world::{StateView, WorldState};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Slot reads in flight at once while a tool summarises the log or replays it from the
/// store: enough to hide a store's latency behind one another, few enough that the slot
/// bytes held at once are a few slots' worth, however long the log.
pub const SLOT_READS_IN_FLIGHT_MAX: usize = 4;

/// The store and the world's key prefix inside it, from `--store URL --prefix P`.
/// `create_dir`: a `file://` directory that does not exist is made (the writer), or is an
/// error and nothing is made (the tools that only read).
pub fn store(
    url: &str,
    prefix: &str,
    create_dir: bool,
) -> Result<(Arc<dyn ObjectStore>, slotlog::object_store_blobs::Backend, String), String> {
    let mut options = StoreOptions::from_env();
    options.create_dir = create_dir;
    let (store, backend, base) = open_store(url, &options).map_err(|e| e.to_string())?;
    let prefix = [base.as_str(), prefix.trim_matches('/')]
        .iter()
        .filter(|s| !s.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join("/");
    Ok((store, backend, prefix))
}

/// Every object under `prefix`, in key order, with its bytes.
pub async fn read_all(
    store: &Arc<dyn ObjectStore>,
    prefix: &str,
) -> Result<Vec<(String, bytes::Bytes, u64)>, String> {
    read_listed(store, prefix, |_| true).await
}

/// Every object under `prefix`, in key order, with its listed size; its bytes only when
/// `read` says they are needed (the others are held with none: nothing is read for them).
pub async fn read_listed(
    store: &Arc<dyn ObjectStore>,
    prefix: &str,
    read: impl Fn(&str) -> bool,
) -> Result<Vec<(String, bytes::Bytes, u64)>, String> {
    use futures_util::TryStreamExt;
    let root = (!prefix.is_empty()).then(|| StorePath::from(prefix));
    let mut metas: Vec<_> = store.list(root.as_ref()).try_collect().await.map_err(|e| e.to_string())?;
    metas.sort_by(|a, b| a.location.as_ref().cmp(b.location.as_ref()));
    let mut out = Vec::with_capacity(metas.len());
    for m in metas {
        if !read(m.location.as_ref()) {
            out.push((m.location.to_string(), bytes::Bytes::new(), m.size));
            continue;
        }
        let bytes = store
            .get(&m.location)
            .await
            .map_err(|e| e.to_string())?
            .bytes()
            .await
            .map_err(|e| e.to_string())?;
        out.push((m.location.to_string(), bytes, m.size));
    }
    Ok(out)
}

/// The keys under `log/` among `objects` (key order), with their sizes: the log as a
/// listing that read every object holds it.
pub fn listed_log(keys: &Keys, objects: &[settle::Object]) -> Vec<(String, u64)> {
    let log = keys.log_prefix();
    objects.iter().filter(|(k, _, _)| k.starts_with(&log)).map(|(k, _, size)| (k.clone(), *size)).collect()
}

/// Where the tools take the bytes of slots and of a checkpoint's content objects (its
/// root, shards, deltas, history and receipt blocks) from.
#[derive(Clone, Copy)]
pub enum Content<'a> {
    /// Among the objects already read (every object read with the listing, as the tests
    /// that judge a log from its bytes do; a slot the listing missed is added to them when
    /// it is read).
    Held,
    /// From the store when they are needed (`inspect`, `verify`): slots a few at a time
    /// ([`SLOT_READS_IN_FLIGHT_MAX`]) each time the log is walked, and a checkpoint's
    /// content when that checkpoint is loaded. A world's checkpoints and retained log are
    /// most of its bytes, so neither is held whole.
    Store(&'a Arc<dyn ObjectStore>),
}

/// Reads `items` (a key and what goes with it) from the store in order, at most
/// [`SLOT_READS_IN_FLIGHT_MAX`] at once, each in a task of its own that hands back only
/// what `keep` makes of the bytes: the bytes are let go in the task, so the reads hold at
/// most that many objects' bytes at once however many there are. An absent key is an
/// error: the items were listed, or judged, a moment before.
pub fn read_each<'a, E, T, F>(
    store: &Arc<dyn ObjectStore>,
    items: impl IntoIterator<Item = (String, E)> + 'a,
    keep: F,
) -> impl Stream<Item = Result<T, String>> + 'a
where
    E: Send + 'static,
    T: Send + 'static,
    F: Fn(&str, Bytes, E) -> Result<T, String> + Send + Sync + 'static,
{
    let (store, keep) = (store.clone(), Arc::new(keep));
    stream::iter(items)
        .map(move |(key, with)| {
            let (store, keep) = (store.clone(), keep.clone());
            tokio::spawn(async move {
                let path = StorePath::parse(&key).map_err(|e| format!("{key}: {e}"))?;
                let got = store.get(&path).await.map_err(|e| format!("{key}: {e}"))?;
                let bytes = got.bytes().await.map_err(|e| format!("{key}: {e}"))?;
                keep(&key, bytes, with)
            })
        })
        .buffered(SLOT_READS_IN_FLIGHT_MAX)
        .map(|joined| joined.map_err(|e| format!("a slot read's task: {e}"))?)
}

/// The chain's slots (not those below its anchor), decoded, with their hashes, in
/// sequence order, each as it is asked for: taken from the objects held, or read back from
/// the store a few at a time. A slot read back must be the bytes the chain was judged
/// from (its hash): objects are never rewritten, so other bytes are the store's fault.
fn chain_slots<'a>(
    scan: &'a log_scan::LogScan,
    objects: &'a [settle::Object],
    content: Content<'a>,
) -> BoxStream<'a, Result<(Slot, Hash32), String>> {
    // A chained slot decoded when it was judged: its link is there.
    let judged = scan.chain_slots().filter_map(|s| s.link().ok().map(|l| (s.key.clone(), l.hash)));
    match content {
        Content::Held => stream::iter(judged.map(|(key, hash)| {
            let i = objects
                .binary_search_by(|(k, _, _)| k.cmp(&key))
                .map_err(|_| format!("{key} is not held"))?;
            Slot::decode(&objects[i].1).map(|slot| (slot, hash)).map_err(|e| format!("{key}: {e}"))
        }))
        .boxed(),
        Content::Store(store) => read_each(store, judged, |key, bytes, hash| {
            if slot_hash(&bytes) != hash {
                return Err(format!("{key} read back other bytes than the chain was judged from"));
            }
            Slot::decode(&bytes).map(|slot| (slot, hash)).map_err(|e| format!("{key}: {e}"))
        })
        .boxed(),
    }
}

/// Loads checkpoint `key` (already decoded) from its content objects.
pub fn load_checkpoint(
    key: &str,
    checkpoint: Checkpoint,
    keys: &Keys,
    objects: &[settle::Object],
    content: Content<'_>,
) -> Result<WorldState, String> {
    let failed = std::cell::RefCell::new(None);
    let get = |k: &str| match content {
        Content::Held => {
            objects.binary_search_by(|(o, _, _)| o.as_str().cmp(k)).ok().map(|i| objects[i].1.clone())
        }
        Content::Store(store) => read_now(store, k).unwrap_or_else(|e| {
            failed.borrow_mut().get_or_insert(e);
            None
        }),
    };
    let loaded = checkpoint::load(key, checkpoint, keys, &get);
    match failed.into_inner() {
        Some(e) => Err(format!("reading {e}")),
        None => loaded.map_err(|e| e.to_string()),
    }
}

/// One object's bytes, read from the store from synchronous code (the kernel's loader
/// asks for objects one at a time); None when it is absent. Needs a multi-thread runtime.
fn read_now(store: &Arc<dyn ObjectStore>, key: &str) -> Result<Option<bytes::Bytes>, String> {
    let path = StorePath::parse(key).map_err(|e| format!("{key}: {e}"))?;
    tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(async {
            match store.get(&path).await {
                Ok(got) => got.bytes().await.map(Some).map_err(|e| format!("{key}: {e}")),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(format!("{key}: {e}")),
            }
        })
    })
}

/// What is wrong with the world's checkpoints, one line each (none: all verified).
/// Checkpoint zero must be the marker's, byte for byte; every full checkpoint must sit at
/// a slot boundary of the chain, name that slot's hash, load whole (root, shards, history
/// and receipt blocks), and hold exactly the world the chain's slots make up to it. In a
/// collected log the chain starts from its anchor checkpoint's world; a checkpoint below
/// the anchor (its drop fenced) has no slots left to be judged against and is skipped.
///
/// The chain is replayed once, its slots taken one at a time in sequence order (read back
/// from the store, with `Content::Store`) and let go once applied, so what is held is the
/// replayed world, a few slots, and the one checkpoint being compared. The anchor's world
/// is replayed in place: it is taken out of `log` (a world is the most the tools hold; it
/// is not copied). An error is a slot that could not be read back.
pub async fn checkpoint_problems(
    keys: &Keys,
    marker: &[u8],
    objects: &[(String, bytes::Bytes, u64)],
    log: &mut log_scan::LogScan,
    content: Content<'_>,
) -> Result<Vec<String>, String> {
    let mut problems = Vec::new();
    let zero_key = keys.checkpoint(1);
    match objects.iter().find(|(k, _, _)| *k == zero_key) {
        None => problems.push("no checkpoint zero".to_string()),
        Some((_, bytes, _)) => {
            let Ok(world_id) = Marker::decode(marker).map(|m| m.world_id) else { return Ok(problems) };
            if bytes[..] != Checkpoint::zero(world_id, Hash32::of(marker)).encode()[..] {
                problems.push(match Checkpoint::decode(bytes) {
                    Err(e) => format!("checkpoint zero does not decode: {e}"),
                    Ok(c) => format!("checkpoint zero is not this world's and marker's: {c:?}"),
                });
            }
        }
    }
    let by_key: BTreeMap<&str, &bytes::Bytes> = objects.iter().map(|(k, b, _)| (k.as_str(), b)).collect();
    let full: Vec<(u64, &str)> = objects
        .iter()
        .filter_map(|(k, _, _)| keys.parse_checkpoint(k).filter(|s| *s > 1).map(|s| (s, k.as_str())))
        .collect();
    // Replay the chain once, stopping at each checkpoint's sequence to compare.
    let Some(world_id) = log.chain.world_id else { return Ok(problems) };
    let (mut world, from) = match &mut log.anchor {
        None => (WorldState::genesis(world_id, Hash32::of(marker)), 1),
        Some(anchor) => match anchor.world.take() {
            Some(world) => (world, anchor.next_sequence + 1),
            None => return Ok(problems),
        },
    };
    let mut slots = chain_slots(log, objects, content);
    for (next_sequence, key) in full.into_iter().filter(|(s, _)| *s >= from) {
        while world.sequence() + 1 < next_sequence {
            let Some(next) = slots.next().await else { break };
            let (slot, hash) = next?;
            if let Err(e) = world.apply_slot(&slot, hash) {
                problems.push(format!("the chain does not apply at sequence {}: {e}", slot.first_sequence));
                return Ok(problems);
            }
        }
        if world.sequence() + 1 != next_sequence {
            problems.push(format!(
                "{key} covers through {}, not a slot boundary of the chain",
                next_sequence - 1
            ));
            continue;
        }
        let checkpoint = match Checkpoint::decode(&by_key[key][..]) {
            Ok(c) => c,
            Err(e) => {
                problems.push(format!("{key} does not decode: {e}"));
                continue;
            }
        };
        if checkpoint.previous_hash != world.tip_hash() || checkpoint.world_id != world_id {
            problems.push(format!("{key} does not name the chain's slot at {}", next_sequence - 1));
            continue;
        }
        match load_checkpoint(key, checkpoint, keys, objects, content) {
            Err(e) => problems.push(format!("{key} does not load: {e}")),
            Ok(loaded) => {
                if let Some(what) = world_differs(&world, &loaded) {
                    problems.push(format!("{key} differs from the chain's world: {what}"));
                }
            }
        }
    }
    Ok(problems)
}

/// The first thing two worlds at the same sequence disagree on.
fn world_differs(a: &WorldState, b: &WorldState) -> Option<&'static str> {
    if (a.sequence(), a.tip_hash()) != (b.sequence(), b.tip_hash()) {
        return Some("sequence or tip");
    }
    if a.policy() != b.policy() {
        return Some("policy");
    }
    if !a.documents().eq(b.documents()) {
        return Some("documents");
    }
    if !a.receipts_since(1).eq(b.receipts_since(1)) {
        return Some("receipts");
    }
    None
}
