//! A listing is a hint, not a proof (SPEC 7): a local directory is walked while writers
//! create names in it, so a listing can hold slot N+1 without slot N, or a checkpoint
//! without the slots it covers. Before `inspect` and `verify` judge a world, every gap the
//! chain scan stops at is settled: the missing name is read directly; found, the scan goes
//! on; absent, the log is listed once more from it; still absent behind a present
//! successor, the gap is a real break and stays reported. The log is also read on past
//! its listed tip while a listed checkpoint covers more. Slot 1, when not listed, is read
//! directly too before the log is taken for collected (`log_scan`). (`verify` reads the
//! body blobs it judges directly, never from a listing.)
//!
//! Owns the reading of the log for judgement: every listed slot is read once (from the
//! objects held, or from the store a few at a time) and summarised (`log_scan`), and
//! every slot a settling read finds is summarised the same way; with `Content::Held` its
//! bytes join the objects held too. A caller that needs more of each slot than the chain
//! does (`verify`: where each operation sits) gathers it from the same read (`Gather`).

use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};
use slotlog_kernel::format::{ChainProblem, Keys};
use std::collections::BTreeMap;
use std::sync::Arc;

use super::log_scan::{judge_log, LogScan, SlotSummary};
use super::Content;

/// One object as the tools hold it: key, bytes, size.
pub type Object = (String, Bytes, u64);

/// Names read directly to settle gaps, at most: a bound, not a budget any world reaches.
const SETTLE_READS_MAX: usize = 1_000_000;

/// What a caller keeps of each slot object besides its summary, taken from the bytes the
/// summary was made from, so the log is read once for both.
pub type Gather<G> = fn(&str, &[u8]) -> G;

/// What settling found: the judged log, and what `Gather` kept of every object under
/// `log/` it summarised, by key (the slots that make the world among them).
pub struct Settled<G> {
    pub scan: LogScan,
    pub gathered: BTreeMap<String, G>,
}

/// Settles every gap in the log `listed` (the keys under `log/` the listing held, with
/// their sizes, in key order) as the module docs say, against the marker and the
/// checkpoint records in `objects` (key order); returns the judgement of the settled log,
/// its anchor's checkpoint loaded, and what `gather` kept of every slot object read.
pub async fn settle_log<G: Send + 'static>(
    store: &Arc<dyn ObjectStore>,
    keys: &Keys,
    marker: &[u8],
    objects: &mut Vec<Object>,
    listed: Vec<(String, u64)>,
    content: Content<'_>,
    gather: Gather<G>,
) -> Result<Settled<G>, String> {
    let newest_checkpoint =
        objects.iter().filter_map(|(k, _, _)| keys.parse_checkpoint(k)).max().unwrap_or(1);
    let mut gathered = BTreeMap::new();
    let mut log = summarise(objects, listed, content, gather, &mut gathered).await?;
    let first = keys.slot(1);
    if !log.iter().any(|s| s.key == first) {
        let found = read_slot(store, &first, objects, content, gather, &mut gathered).await?;
        add(&mut log, found);
    }
    for _ in 0..SETTLE_READS_MAX {
        let mut scan = judge_log(keys, marker, objects, log);
        let wanted = match &scan.chain.problem {
            Some(ChainProblem::Gap { expected, .. }) => *expected,
            // The log listed ends before a listed checkpoint does: read on past its tip.
            None if scan.chain.tip + 1 < newest_checkpoint => scan.chain.tip + 1,
            _ => {
                scan.load_anchor(keys, objects, content);
                return Ok(Settled { scan, gathered });
            }
        };
        let key = keys.slot(wanted);
        let mut found: Vec<SlotSummary> =
            read_slot(store, &key, objects, content, gather, &mut gathered).await?.into_iter().collect();
        if found.is_empty() {
            // Absent: list once more from the name; still absent, the scan's verdict stands.
            let after = (wanted > 1).then(|| keys.slot(wanted - 1));
            let relisted = relist(store, &keys.log_prefix(), after.as_deref()).await?;
            if !relisted.contains(&key) {
                scan.load_anchor(keys, objects, content);
                return Ok(Settled { scan, gathered });
            }
            let known = |k: &String| scan.log.binary_search_by(|s| s.key.cmp(k)).is_ok();
            for k in relisted.iter().filter(|k| !known(k)) {
                found.extend(read_slot(store, k, objects, content, gather, &mut gathered).await?);
            }
        }
        log = scan.log;
        add(&mut log, found);
    }
    Err(format!("more than {SETTLE_READS_MAX} names missing from the listings"))
}

/// The listed slots, summarised in key order (what `gather` keeps of each into
/// `gathered`): from the bytes held, or read from the store a few at a time, each let go
/// once summarised.
async fn summarise<G: Send + 'static>(
    objects: &[Object],
    listed: Vec<(String, u64)>,
    content: Content<'_>,
    gather: Gather<G>,
    gathered: &mut BTreeMap<String, G>,
) -> Result<Vec<SlotSummary>, String> {
    let kept: Vec<(SlotSummary, G)> = match content {
        Content::Held => listed
            .into_iter()
            .map(|(key, size)| match objects.binary_search_by(|(k, _, _)| k.cmp(&key)) {
                Ok(i) => Ok((SlotSummary::of(&key, &objects[i].1, size), gather(&key, &objects[i].1))),
                Err(_) => Err(format!("{key} is listed but not held")),
            })
            .collect::<Result<_, String>>()?,
        Content::Store(store) => {
            super::read_each(store, listed, move |key, bytes, size| {
                Ok((SlotSummary::of(key, &bytes, size), gather(key, &bytes)))
            })
            .try_collect()
            .await?
        }
    };
    Ok(kept
        .into_iter()
        .map(|(summary, g)| {
            gathered.insert(summary.key.clone(), g);
            summary
        })
        .collect())
}

/// Adds summaries to `log`, in key order.
fn add(log: &mut Vec<SlotSummary>, found: impl IntoIterator<Item = SlotSummary>) {
    for s in found {
        match log.binary_search_by(|o| o.key.cmp(&s.key)) {
            Ok(i) => log[i] = s,
            Err(i) => log.insert(i, s),
        }
    }
}

/// Reads slot `key` directly, summarised (what `gather` keeps of it into `gathered`; its
/// bytes kept among the objects held, with `Content::Held`); None when it is absent.
async fn read_slot<G>(
    store: &Arc<dyn ObjectStore>,
    key: &str,
    objects: &mut Vec<Object>,
    content: Content<'_>,
    gather: Gather<G>,
    gathered: &mut BTreeMap<String, G>,
) -> Result<Option<SlotSummary>, String> {
    let Some(bytes) = read(store, key).await? else { return Ok(None) };
    let summary = SlotSummary::of(key, &bytes, bytes.len() as u64);
    gathered.insert(key.to_string(), gather(key, &bytes));
    if let Content::Held = content {
        hold(objects, key, bytes);
    }
    Ok(Some(summary))
}

/// Reads `key` directly; None when it is absent.
pub(super) async fn read(store: &Arc<dyn ObjectStore>, key: &str) -> Result<Option<Bytes>, String> {
    let path = StorePath::parse(key).map_err(|e| e.to_string())?;
    let got = match store.get(&path).await {
        Ok(got) => got,
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(format!("{key}: {e}")),
    };
    got.bytes().await.map(Some).map_err(|e| format!("{key}: {e}"))
}

/// Adds `key` to the objects held, in key order.
fn hold(objects: &mut Vec<Object>, key: &str, bytes: Bytes) {
    let size = bytes.len() as u64;
    match objects.binary_search_by(|(k, _, _)| k.as_str().cmp(key)) {
        Ok(i) => objects[i] = (key.to_string(), bytes, size),
        Err(i) => objects.insert(i, (key.to_string(), bytes, size)),
    }
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
    use super::super::test_store::{Hooked, Hooks};
    use super::*;
    use futures_util::stream::{BoxStream, StreamExt};
    use object_store::{ObjectMeta, Result};
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Listings that leave `hidden` out, the first `times` times they reach it: a local
    /// directory walked while a writer made that name.
    #[derive(Debug)]
    struct Hiding {
        hidden: String,
        times: Arc<AtomicU32>,
    }

    impl Hooks for Hiding {
        fn listed(
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

    /// The log settled, its objects read with the listing (as `verify` reads them).
    async fn settled(store: &Arc<dyn ObjectStore>, prefix: &str, keys: &Keys) -> LogScan {
        let mut objects = super::super::read_all(store, prefix).await.expect("read");
        let marker = objects.iter().find(|(k, _, _)| *k == keys.marker()).expect("a marker").1.clone();
        let listed = super::super::listed_log(keys, &objects);
        settle_log(store, keys, &marker, &mut objects, listed, Content::Held, |_, _| ())
            .await
            .expect("settled")
            .scan
    }

    /// The first sequences of the chain's slots.
    fn chain_sequences(scan: &LogScan) -> Vec<u64> {
        scan.chain_slots().map(|s| s.link().expect("a chained slot decodes").first_sequence).collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slot_left_out_of_the_listing_is_read_directly_and_the_chain_is_whole() {
        let (prefix, keys, store) = written_world("hidden").await;
        let whole = settled(&store, &prefix, &keys).await;
        assert_eq!(whole.chain.problem, None);
        let sequences = chain_sequences(&whole);
        assert!(sequences.len() >= 3, "the writer committed a few slots: {}", sequences.len());
        let middle = keys.slot(sequences[1]);
        let hiding =
            Hooked::store(&store, Hiding { hidden: middle.clone(), times: Arc::new(AtomicU32::new(1)) });
        let listed = super::super::read_all(&hiding, &prefix).await.expect("read");
        assert!(!listed.iter().any(|(k, _, _)| *k == middle), "the listing left {middle} out");
        let scan = settled(&hiding, &prefix, &keys).await;
        assert_eq!(scan.chain.problem, None, "no break reported");
        assert_eq!((scan.chain.tip, chain_sequences(&scan)), (whole.chain.tip, sequences));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slot_absent_from_a_read_and_a_relist_behind_a_present_successor_is_a_break() {
        let (prefix, keys, store) = written_world("gone").await;
        let whole = settled(&store, &prefix, &keys).await;
        let (second, third) = (chain_sequences(&whole)[1], chain_sequences(&whole)[2]);
        store.delete(&StorePath::parse(keys.slot(second)).expect("a path")).await.expect("deleted");
        let scan = settled(&store, &prefix, &keys).await;
        assert_eq!(scan.chain.problem, Some(ChainProblem::Gap { expected: second, found: third }));
    }
}
