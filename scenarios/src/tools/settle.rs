//! A listing is a hint, not a proof (SPEC 7): a local directory is walked while writers
//! create names in it, so a listing can hold slot N+1 without slot N, or a checkpoint
//! without the slots it covers. Before `inspect` and `verify` judge a world, every gap the
//! chain scan stops at is settled: the missing name is read directly; found, the scan goes
//! on; absent, the log is listed once more from it; still absent behind a present
//! successor, the gap is a real break and stays reported. The log is also read on past
//! its listed tip while a listed checkpoint covers more, and every body a slot names that
//! the listing did not hold is read directly. Slot 1, when not listed, is read directly
//! too before the log is taken for collected (`log_scan`).

use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};
use slotlog_kernel::format::{ChainProblem, Keys};
use slotlog_kernel::hash::Hash32;
use std::sync::Arc;

use super::log_scan::{scan_log, LogScan};

/// One object as the tools hold it: key, bytes, size.
pub type Object = (String, Bytes, u64);

/// Names read directly to settle gaps, at most: a bound, not a budget any world reaches.
const SETTLE_READS_MAX: usize = 1_000_000;

/// Settles every gap in `objects` (in key order) as the module docs say, adding what the
/// direct reads and re-lists find; returns the scan of the settled log.
pub async fn settle_log(
    store: &Arc<dyn ObjectStore>,
    keys: &Keys,
    marker: &[u8],
    objects: &mut Vec<Object>,
    content: super::Content<'_>,
) -> Result<LogScan, String> {
    let newest_checkpoint =
        objects.iter().filter_map(|(k, _, _)| keys.parse_checkpoint(k)).max().unwrap_or(1);
    let first = keys.slot(1);
    if !objects.iter().any(|(k, _, _)| *k == first) {
        read_into(store, &first, objects).await?;
    }
    for _ in 0..SETTLE_READS_MAX {
        let scan = scan_log(keys, marker, objects, content);
        let wanted = match &scan.chain.problem {
            Some(ChainProblem::Gap { expected, .. }) => *expected,
            // The log listed ends before a listed checkpoint does: read on past its tip.
            None if scan.chain.tip + 1 < newest_checkpoint => scan.chain.tip + 1,
            _ => return Ok(scan),
        };
        let key = keys.slot(wanted);
        if read_into(store, &key, objects).await? {
            continue;
        }
        // Absent: list once more from the name; still absent, the scan's verdict stands.
        let after = (wanted > 1).then(|| keys.slot(wanted - 1));
        let relisted = relist(store, &keys.log_prefix(), after.as_deref()).await?;
        if !relisted.contains(&key) {
            return Ok(scan);
        }
        for k in relisted {
            if !objects.iter().any(|(o, _, _)| *o == k) {
                read_into(store, &k, objects).await?;
            }
        }
    }
    Err(format!("more than {SETTLE_READS_MAX} names missing from the listings"))
}

/// Reads every body the scanned slots name that the listing did not hold.
pub async fn settle_bodies(
    store: &Arc<dyn ObjectStore>,
    keys: &Keys,
    scan: &LogScan,
    objects: &mut Vec<Object>,
) -> Result<(), String> {
    let mut missing = Vec::new();
    for (slot, _) in scan.slots() {
        let carried: Vec<Hash32> = slot.bodies_by_hash().map(|(h, _)| h).collect();
        let versions = slot.members.iter().filter_map(|m| m.version.as_ref());
        // A body its slot carries needs no blob (SPEC 5.7).
        for hash in versions.map(|v| v.body_hash).filter(|h| !carried.contains(h)) {
            let key = keys.body(&hash);
            if objects.binary_search_by(|(k, _, _)| k.as_str().cmp(&key)).is_err() {
                missing.push(key);
            }
        }
    }
    missing.sort();
    missing.dedup();
    for key in missing {
        read_into(store, &key, objects).await?;
    }
    Ok(())
}

/// Reads `key` directly and adds it in key order; false when it is absent.
async fn read_into(
    store: &Arc<dyn ObjectStore>,
    key: &str,
    objects: &mut Vec<Object>,
) -> Result<bool, String> {
    let path = StorePath::parse(key).map_err(|e| e.to_string())?;
    let got = match store.get(&path).await {
        Ok(got) => got,
        Err(object_store::Error::NotFound { .. }) => return Ok(false),
        Err(e) => return Err(format!("{key}: {e}")),
    };
    let bytes = got.bytes().await.map_err(|e| format!("{key}: {e}"))?;
    let size = bytes.len() as u64;
    match objects.binary_search_by(|(k, _, _)| k.as_str().cmp(key)) {
        Ok(i) => objects[i] = (key.to_string(), bytes, size),
        Err(i) => objects.insert(i, (key.to_string(), bytes, size)),
    }
    Ok(true)
}

/// The keys under `prefix` (a directory's, ending in `/`) strictly after `after`, sorted.
async fn relist(
    store: &Arc<dyn ObjectStore>,
    prefix: &str,
    after: Option<&str>,
) -> Result<Vec<String>, String> {
    let directory = StorePath::parse(prefix.trim_end_matches('/')).map_err(|e| e.to_string())?;
    let metas: Vec<_> = match after {
        Some(after) => {
            let offset = StorePath::parse(after).map_err(|e| e.to_string())?;
            store.list_with_offset(Some(&directory), &offset).try_collect().await
        }
        None => store.list(Some(&directory)).try_collect().await,
    }
    .map_err(|e| e.to_string())?;
    let mut keys: Vec<String> = metas
        .into_iter()
        .map(|m| m.location.to_string())
        .filter(|k| k.starts_with(prefix) && after.is_none_or(|a| k.as_str() > a))
        .collect();
    keys.sort();
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use futures_util::stream::{BoxStream, StreamExt};
    use object_store::{
        CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, PutMultipartOptions,
        PutOptions, PutPayload, PutResult, Result,
    };
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A store whose listings leave `hidden` out, the first `times` times they reach it:
    /// a local directory walked while a writer made that name.
    #[derive(Debug)]
    struct Hiding {
        inner: Arc<dyn ObjectStore>,
        hidden: String,
        times: Arc<AtomicU32>,
    }

    impl std::fmt::Display for Hiding {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "Hiding({})", self.inner)
        }
    }

    impl Hiding {
        fn hide(
            &self,
            listed: BoxStream<'static, Result<ObjectMeta>>,
        ) -> BoxStream<'static, Result<ObjectMeta>> {
            let (hidden, times) = (self.hidden.clone(), self.times.clone());
            listed
                .filter(move |m| {
                    let left_out = matches!(m, Ok(m) if m.location.as_ref() == hidden)
                        && times
                            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                            .is_ok();
                    std::future::ready(!left_out)
                })
                .boxed()
        }
    }

    #[async_trait]
    impl ObjectStore for Hiding {
        async fn put_opts(
            &self,
            location: &StorePath,
            payload: PutPayload,
            opts: PutOptions,
        ) -> Result<PutResult> {
            self.inner.put_opts(location, payload, opts).await
        }
        async fn put_multipart_opts(
            &self,
            location: &StorePath,
            opts: PutMultipartOptions,
        ) -> Result<Box<dyn MultipartUpload>> {
            self.inner.put_multipart_opts(location, opts).await
        }
        async fn get_opts(&self, location: &StorePath, options: GetOptions) -> Result<GetResult> {
            self.inner.get_opts(location, options).await
        }
        fn delete_stream(
            &self,
            locations: BoxStream<'static, Result<StorePath>>,
        ) -> BoxStream<'static, Result<StorePath>> {
            self.inner.delete_stream(locations)
        }
        fn list(&self, prefix: Option<&StorePath>) -> BoxStream<'static, Result<ObjectMeta>> {
            self.hide(self.inner.list(prefix))
        }
        fn list_with_offset(
            &self,
            prefix: Option<&StorePath>,
            offset: &StorePath,
        ) -> BoxStream<'static, Result<ObjectMeta>> {
            self.hide(self.inner.list_with_offset(prefix, offset))
        }
        async fn list_with_delimiter(&self, prefix: Option<&StorePath>) -> Result<ListResult> {
            self.inner.list_with_delimiter(prefix).await
        }
        async fn copy_opts(&self, from: &StorePath, to: &StorePath, options: CopyOptions) -> Result<()> {
            self.inner.copy_opts(from, to, options).await
        }
    }

    /// A world written for a moment by one writer into a fresh local directory.
    async fn written_world(name: &str) -> (String, Keys, Arc<dyn ObjectStore>) {
        let dir = std::env::temp_dir().join(format!("slotlog-settle-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let url = format!("file://{}", dir.display());
        let log = dir.with_extension("log");
        let args = super::super::writer::WriterArgs {
            url: url.clone(),
            prefix: "w".into(),
            log: log.to_string_lossy().into_owned(),
            duration_s: 1.0,
            writers: 1,
            paths: 10,
            listen: None,
            peers: Vec::new(),
            checkpoint_slots: None,
            health: None,
        };
        assert_eq!(super::super::writer::run(args).await, Ok(true));
        let (store, _, prefix) = super::super::store(&url, "w", false).expect("the directory");
        (prefix.clone(), Keys::new(&prefix), store)
    }

    async fn settled(
        store: &Arc<dyn ObjectStore>,
        prefix: &str,
        keys: &Keys,
    ) -> slotlog_kernel::format::ChainScan {
        let mut objects = super::super::read_all(store, prefix).await.expect("read");
        let marker = objects.iter().find(|(k, _, _)| *k == keys.marker()).expect("a marker").1.clone();
        settle_log(store, keys, &marker, &mut objects, super::super::Content::Held)
            .await
            .expect("settled")
            .chain
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slot_left_out_of_the_listing_is_read_directly_and_the_chain_is_whole() {
        let (prefix, keys, store) = written_world("hidden").await;
        let whole = settled(&store, &prefix, &keys).await;
        assert_eq!(whole.problem, None);
        assert!(whole.slots.len() >= 3, "the writer committed a few slots: {}", whole.slots.len());
        let middle = keys.slot(whole.slots[1].0.first_sequence);
        let hiding: Arc<dyn ObjectStore> = Arc::new(Hiding {
            inner: store.clone(),
            hidden: middle.clone(),
            times: Arc::new(AtomicU32::new(1)),
        });
        let listed = super::super::read_all(&hiding, &prefix).await.expect("read");
        assert!(!listed.iter().any(|(k, _, _)| *k == middle), "the listing left {middle} out");
        let scan = settled(&hiding, &prefix, &keys).await;
        assert_eq!(scan.problem, None, "no break reported");
        assert_eq!((scan.tip, scan.slots.len()), (whole.tip, whole.slots.len()));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slot_absent_from_a_read_and_a_relist_behind_a_present_successor_is_a_break() {
        let (prefix, keys, store) = written_world("gone").await;
        let whole = settled(&store, &prefix, &keys).await;
        let second = whole.slots[1].0.first_sequence;
        let third = whole.slots[2].0.first_sequence;
        store.delete(&StorePath::parse(keys.slot(second)).expect("a path")).await.expect("deleted");
        let scan = settled(&store, &prefix, &keys).await;
        assert_eq!(scan.problem, Some(ChainProblem::Gap { expected: second, found: third }));
    }
}
