//! `slotlog inspect`: what a world in a store holds, verified: the chain from the marker,
//! and every checkpoint against the chain.
//!
//! Reads only what the verdict stands on, and holds at once only what one step of it
//! needs, so a world whose log and checkpoints hold gigabytes is inspected in the memory
//! of one world (two while a checkpoint's loaded world is compared with the chain's), a
//! few slots, and a summary of about two hundred bytes a slot:
//! - the listing is folded as it streams: the marker and checkpoint records are kept and
//!   read (they are small), the slots' names and sizes kept, and of everything else only
//!   its kind's count and bytes (bodies, and objects that are none of the world's, are
//!   never read);
//! - every slot is read once, a few at a time (`SLOT_READS_IN_FLIGHT_MAX`), summarised
//!   to what the chain needs of it and let go; the chain, the anchor, the forks and the
//!   gaps to settle are judged from the summaries (`log_scan`, `settle`);
//! - the checkpoints are judged by replaying the chain once, its slots read back in
//!   sequence order a few at a time and let go once applied; a checkpoint's root,
//!   shards, deltas, history and receipt blocks are read when that checkpoint is judged
//!   and let go after.

use super::settle::Object;
use super::Content;
use futures_util::TryStreamExt;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};
use slotlog_kernel::format::{Checkpoint, Keys};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What an object is, by its key under the world's root: the rows of the report.
fn kind_of(keys: &Keys, key: &str) -> &'static str {
    if key == keys.marker() {
        return "marker";
    }
    let kinds = [
        (keys.log_prefix(), "slots"),
        (keys.blobs_prefix(), "bodies"),
        (keys.checkpoints_prefix(), "checkpoints"),
        (keys.roots_prefix(), "roots"),
        (keys.shards_prefix(), "shards"),
        (keys.deltas_prefix(), "deltas"),
        (keys.history_prefix(), "history"),
        (keys.receipts_prefix(), "receipts"),
        (keys.segments_prefix(), "segments"),
    ];
    kinds.iter().find(|(prefix, _)| key.starts_with(prefix.as_str())).map_or("other", |(_, kind)| kind)
}

/// Objects and bytes of each kind.
type Counts = BTreeMap<&'static str, (u64, u64)>;

/// What inspecting keeps of the listing as it streams by.
#[derive(Default)]
pub struct Listing {
    /// The marker and the checkpoint records, in key order, read whole.
    pub objects: Vec<Object>,
    /// The slots' keys and listed sizes, in key order: they are read later, a few at a
    /// time, and summarised (`settle`).
    pub log: Vec<(String, u64)>,
    /// Objects and bytes of every kind but slots (counted once the log is settled).
    pub counts: Counts,
}

/// Lists the world's objects under `prefix`, keeping what [`Listing`] says, and reads the
/// marker and the checkpoint records.
pub async fn list(store: &Arc<dyn ObjectStore>, prefix: &str, keys: &Keys) -> Result<Listing, String> {
    let root = (!prefix.is_empty()).then(|| StorePath::from(prefix));
    let mut listed = store.list(root.as_ref());
    let mut listing = Listing::default();
    while let Some(meta) = listed.try_next().await.map_err(|e| e.to_string())? {
        let key = meta.location.to_string();
        let kind = kind_of(keys, &key);
        if kind == "slots" {
            listing.log.push((key, meta.size));
            continue;
        }
        let count = listing.counts.entry(kind).or_default();
        count.0 += 1;
        count.1 += meta.size;
        if matches!(kind, "marker" | "checkpoints") {
            listing.objects.push((key, bytes::Bytes::new(), meta.size));
        }
    }
    listing.objects.sort_by(|a, b| a.0.cmp(&b.0));
    listing.log.sort();
    for (key, bytes, _) in &mut listing.objects {
        let path = StorePath::parse(key.as_str()).map_err(|e| e.to_string())?;
        let got = store.get(&path).await.map_err(|e| e.to_string())?;
        *bytes = got.bytes().await.map_err(|e| e.to_string())?;
    }
    Ok(listing)
}

pub async fn run(url: &str, prefix: &str) -> Result<bool, String> {
    let (store, backend, prefix) = super::store(url, prefix, false)?;
    inspect_store(&store, url, backend.kind(), &prefix, &mut |line| println!("{line}")).await
}

/// `inspect` on a store already open (`url` and `kind` only name it in the report), each
/// line of the report said to `say` as it is found; `prefix` is the world's whole key
/// prefix in it.
pub async fn inspect_store(
    store: &Arc<dyn ObjectStore>,
    url: &str,
    kind: &str,
    prefix: &str,
    say: &mut (dyn FnMut(String) + Send),
) -> Result<bool, String> {
    let keys = Keys::new(prefix);
    let Listing { mut objects, log, mut counts } = list(store, prefix, &keys).await?;
    let marker = objects.iter().find(|(k, _, _)| *k == keys.marker()).map(|(_, b, _)| b.clone());
    let Some(marker) = marker else {
        let nothing = counts.is_empty() && log.is_empty();
        return Err(format!(
            "no world at {url} prefix {prefix:?}: no marker{}",
            if nothing { ", nothing under the prefix" } else { ", but other objects" }
        ));
    };
    // A listing is a hint: settle its gaps before judging the chain (`settle`).
    let content = Content::Store(store);
    let mut scan =
        super::settle::settle_log(store, &keys, &marker, &mut objects, log, content, |_, _| ()).await?.scan;
    if !scan.log.is_empty() {
        counts.insert("slots", (scan.log.len() as u64, scan.log.iter().map(|s| s.size).sum()));
    }
    say(format!("world at {url} prefix {prefix:?} ({kind} store)"));
    let members: u64 = scan.slots().map(|s| s.members()).sum();
    say(format!("  world id    {}", scan.chain.world_id.map_or("?".into(), |w| w.to_string())));
    say(format!(
        "  tip         sequence {} ({} slots, {} members)",
        scan.chain.tip,
        scan.slots().count(),
        members
    ));
    let from = match &scan.anchor {
        None => "the marker".to_string(),
        Some(a) => {
            say(format!(
                "  collected   slots below sequence {} (the log continues from {})",
                a.next_sequence, a.key
            ));
            a.key.clone()
        }
    };
    match (&scan.chain.problem, scan.anchor_problem()) {
        (None, None) => say(format!("  chain       verified from {from}")),
        (Some(p), _) => say(format!("  chain       BROKEN after sequence {}: {p}", scan.chain.tip)),
        (None, Some(p)) => say(format!("  chain       BROKEN: {p}")),
    }
    for fork in &scan.forks {
        say(format!("  fork        {fork}"));
    }
    for (key, bytes, _) in objects.iter().filter(|(k, _, _)| keys.parse_checkpoint(k).is_some()) {
        say(match Checkpoint::decode(bytes) {
            Ok(c) if c.is_zero() => format!("  checkpoint  {key}: checkpoint zero"),
            Ok(c) => format!(
                "  checkpoint  {key}: through sequence {}, {} documents, root {}",
                c.next_sequence - 1,
                c.document_count,
                c.root.map_or("-".into(), |r| r.to_hex())
            ),
            Err(e) => format!("  checkpoint  {key}: does not decode: {e}"),
        });
    }
    let whole = scan.is_whole();
    let checkpoints = super::checkpoint_problems(&keys, &marker, &objects, &mut scan, content).await?;
    match checkpoints.as_slice() {
        [] => say("  checkpoints verified against the chain".to_string()),
        problems => problems.iter().for_each(|p| say(format!("  checkpoints BAD: {p}"))),
    }
    for (kind, (n, bytes)) in &counts {
        say(format!("  {kind:<11} {n} objects, {bytes} bytes"));
    }
    Ok(whole && checkpoints.is_empty() && !counts.contains_key("other"))
}

#[cfg(test)]
mod tests {
    use super::super::test_store::{written_world, Counting, Hooked, Tally};
    use super::super::{checkpoint_problems, read_all, settle::settle_log, SLOT_READS_IN_FLIGHT_MAX};
    use super::*;
    use slotlog_kernel::format::scan_chain;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn inspect_keeps_of_its_listing_the_marker_and_checkpoint_records_read_and_the_slots_named() {
        let (url, prefix, _) = written_world("inspect-listing", 1.0).await;
        let (store, _, prefix) = super::super::store(&url, &prefix, false).expect("the directory");
        let keys = Keys::new(&prefix);
        let listing = list(&store, &prefix, &keys).await.expect("listed");
        for kind in ["bodies", "shards"] {
            let counted = listing.counts.get(kind).map_or(0, |(n, _)| *n);
            assert!(counted > 0, "the writer wrote {kind}: they are counted, not kept or read");
        }
        assert!(!listing.log.is_empty(), "the slots are named");
        for (key, size) in &listing.log {
            assert!(kind_of(&keys, key) == "slots" && *size > 0, "{key} is a slot, named with its size");
        }
        assert!(listing.objects.iter().any(|(k, _, _)| *k == keys.marker()), "the marker is kept");
        for (key, bytes, size) in &listing.objects {
            assert!(matches!(kind_of(&keys, key), "marker" | "checkpoints"), "{key} is counted, not kept");
            assert_eq!(bytes.len() as u64, *size, "{key} is read whole");
        }
        assert_eq!(run(&url, "w").await, Ok(true), "the world inspects whole");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_damaged_shard_read_when_its_checkpoint_is_judged_is_named() {
        let (url, prefix, _) = written_world("inspect-damaged", 1.0).await;
        let (store, _, prefix) = super::super::store(&url, &prefix, false).expect("the directory");
        let keys = Keys::new(&prefix);
        let listed = super::super::read_listed(&store, &prefix, |_| false).await.expect("listed");
        let shard =
            listed.iter().map(|(k, _, _)| k).find(|k| kind_of(&keys, k) == "shards").expect("a shard");
        let file = std::path::Path::new(url.trim_start_matches("file://")).join(shard);
        let mut bytes = std::fs::read(&file).expect("the shard's file");
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x40;
        std::fs::write(&file, bytes).expect("damaged");
        let Listing { mut objects, log, .. } = list(&store, &prefix, &keys).await.expect("listed");
        let marker = objects.iter().find(|(k, _, _)| *k == keys.marker()).expect("a marker").1.clone();
        let content = Content::Store(&store);
        let mut scan = settle_log(&store, &keys, &marker, &mut objects, log, content, |_, _| ())
            .await
            .expect("settled")
            .scan;
        let problems =
            checkpoint_problems(&keys, &marker, &objects, &mut scan, content).await.expect("judged");
        assert!(problems.iter().any(|p| p.contains(shard.as_str())), "{shard} named in {problems:?}");
        assert_eq!(run(&url, "w").await, Ok(false), "the world does not inspect whole");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn inspect_holds_a_few_slots_at_once_not_the_log_and_reports_as_a_scan_of_the_whole_log() {
        let (url, prefix, _) = written_world("inspect-bound", 3.0).await;
        let (store, _, prefix) = super::super::store(&url, &prefix, false).expect("the directory");
        let keys = Keys::new(&prefix);
        // The judgement as it was made before, every slot held: the kernel's scan of the
        // log's bytes.
        let objects = read_all(&store, &prefix).await.expect("read");
        let marker = objects.iter().find(|(k, _, _)| *k == keys.marker()).expect("a marker").1.clone();
        let log: Vec<(&str, &[u8])> = objects
            .iter()
            .filter(|(k, _, _)| kind_of(&keys, k) == "slots")
            .map(|(k, b, _)| (k.as_str(), &b[..]))
            .collect();
        let log_bytes: u64 = log.iter().map(|(_, b)| b.len() as u64).sum();
        let slot_bytes_max = log.iter().map(|(_, b)| b.len() as u64).max().expect("slots");
        let whole = scan_chain(&keys, &marker, log.iter().copied());
        assert_eq!(whole.problem, None, "the writer's log is whole");
        let members: usize = whole.slots.iter().map(|(s, _)| s.members.len()).sum();
        let tip =
            format!("  tip         sequence {} ({} slots, {members} members)", whole.tip, whole.slots.len());

        let tally = Arc::new(Tally::default());
        let counting =
            Hooked::store(&store, Counting { prefixes: vec![keys.log_prefix()], tally: tally.clone() });
        let mut said = Vec::new();
        let verdict = inspect_store(&counting, &url, "file", &prefix, &mut |line| said.push(line)).await;
        assert_eq!(verdict, Ok(true), "the world inspects whole: {said:#?}");
        for line in [
            tip.as_str(),
            "  chain       verified from the marker",
            "  checkpoints verified against the chain",
        ] {
            assert!(said.iter().any(|l| l == line), "{line:?} in {said:#?}");
        }
        let reads = tally.reads();
        assert!(
            reads > log.len() as u64,
            "every slot read to judge the chain, and again to replay it: {reads}"
        );
        let held_max = tally.held_max();
        let window = SLOT_READS_IN_FLIGHT_MAX as u64 * slot_bytes_max;
        assert!(held_max <= window, "{held_max} slot bytes held at once, more than {window}");
        assert!(
            held_max * 10 < log_bytes,
            "{held_max} slot bytes held at once is not far below the log's {log_bytes} in {} slots",
            log.len()
        );

        let mut direct = Vec::new();
        let verdict = inspect_store(&store, &url, "file", &prefix, &mut |line| direct.push(line)).await;
        assert_eq!(
            (verdict, direct),
            (Ok(true), said),
            "the same report, read through the counting store or not"
        );
    }
}
