//! Tools that work on a real world in a real store (the `writer`, `verify` and `inspect`
//! commands), as against the simulation.

pub mod inspect;
pub mod verify;
pub mod writer;

use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};
use slotlog::store_url::{open_store, StoreOptions};
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
