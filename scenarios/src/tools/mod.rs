//! Tools that work on a real world in a real store (the `writer`, `verify` and `inspect`
//! commands, and `bench cold-start`), as against the simulation.

pub mod bench_cold_start;
pub mod inspect;
pub mod verify;
pub mod writer;

use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};
use slotlog::store_url::{open_store, StoreOptions};
use slotlog_kernel::format::{Checkpoint, Keys, Marker};
use slotlog_kernel::hash::Hash32;
use std::sync::Arc;

/// The store and the world's key prefix inside it, from `--store URL --prefix P`.
pub fn store(
    url: &str,
    prefix: &str,
) -> Result<(Arc<dyn ObjectStore>, slotlog::object_store_blobs::Backend, String), String> {
    let (store, backend, base) = open_store(url, &StoreOptions::from_env()).map_err(|e| format!("{e:?}"))?;
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
    use futures_util::TryStreamExt;
    let root = (!prefix.is_empty()).then(|| StorePath::from(prefix));
    let mut metas: Vec<_> = store.list(root.as_ref()).try_collect().await.map_err(|e| e.to_string())?;
    metas.sort_by(|a, b| a.location.as_ref().cmp(b.location.as_ref()));
    let mut out = Vec::with_capacity(metas.len());
    for m in metas {
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

/// What is wrong with the world's checkpoints, if anything: checkpoint zero must sit at its
/// key with exactly the bytes the marker gives it (SPEC 10), and no later checkpoint is
/// written yet.
pub fn checkpoint_problem(
    keys: &Keys,
    marker: &[u8],
    objects: &[(String, bytes::Bytes, u64)],
) -> Option<String> {
    let zero_key = keys.checkpoint(1);
    if let Some((key, _, _)) =
        objects.iter().find(|(k, _, _)| k.starts_with(&keys.checkpoints_prefix()) && *k != zero_key)
    {
        return Some(format!("{key} is not checkpoint zero, the only checkpoint this build writes"));
    }
    let Some((_, bytes, _)) = objects.iter().find(|(k, _, _)| *k == zero_key) else {
        return Some("no checkpoint zero".into());
    };
    let world_id = Marker::decode(marker).ok()?.world_id;
    let expected = Checkpoint::zero(world_id, Hash32::of(marker)).encode();
    if bytes[..] == expected[..] {
        return None;
    }
    Some(match Checkpoint::decode(bytes) {
        Err(e) => format!("checkpoint zero does not decode: {e:?}"),
        Ok(c) => format!("checkpoint zero is not this world's and marker's: {c:?}"),
    })
}
