//! `slotlog inspect`: what a world in a store holds, verified: the chain from the marker,
//! and every checkpoint against the chain.
//!
//! Reads only what the verdict stands on, and holds at once only what one step of it
//! needs: the marker, the slots and the checkpoint records are read with the listing; a
//! checkpoint's root, shards, deltas, history and receipt blocks are read when that
//! checkpoint is judged and let go after, so a world whose checkpoints hold gigabytes is
//! inspected in the memory of its log and one checkpoint. Bodies, and objects that are
//! none of the world's, are counted from the listing (its sizes) and never read.

use super::Content;
use slotlog_kernel::format::{Checkpoint, Keys};

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

/// Whether inspecting reads an object with the listing: the marker, slots and checkpoint
/// records. A checkpoint's content is read when the checkpoint is judged; the rest is
/// only counted.
pub fn reads(keys: &Keys, key: &str) -> bool {
    matches!(kind_of(keys, key), "marker" | "slots" | "checkpoints")
}

pub async fn run(url: &str, prefix: &str) -> Result<bool, String> {
    let (store, backend, prefix) = super::store(url, prefix, false)?;
    let keys = Keys::new(&prefix);
    let mut objects = super::read_listed(&store, &prefix, |key| reads(&keys, key)).await?;
    // A listing is a hint: settle its gaps before judging the chain (`settle`).
    let marker = objects.iter().find(|(k, _, _)| *k == keys.marker()).map(|(_, b, _)| b.clone());
    let scan = match &marker {
        Some(marker) => Some(
            super::settle::settle_log(&store, &keys, marker, &mut objects, Content::Store(&store)).await?,
        ),
        None => None,
    };
    let mut counts: std::collections::BTreeMap<&str, (u64, u64)> = Default::default();
    for (key, _, size) in &objects {
        let c = counts.entry(kind_of(&keys, key)).or_default();
        c.0 += 1;
        c.1 += size;
    }
    let (Some(marker), Some(scan)) = (marker, scan) else {
        return Err(format!(
            "no world at {url} prefix {prefix:?}: no marker{}",
            if objects.is_empty() { ", nothing under the prefix" } else { ", but other objects" }
        ));
    };
    println!("world at {url} prefix {prefix:?} ({} store)", backend.kind());
    let members: usize = scan.slots().map(|(s, _)| s.members.len()).sum();
    println!("  world id    {}", scan.chain.world_id.map_or("?".into(), |w| w.to_string()));
    println!(
        "  tip         sequence {} ({} slots, {} members)",
        scan.chain.tip,
        scan.slots().count(),
        members
    );
    let from = match &scan.anchor {
        None => "the marker".to_string(),
        Some(a) => {
            println!(
                "  collected   slots below sequence {} (the log continues from {})",
                a.next_sequence, a.key
            );
            a.key.clone()
        }
    };
    match (&scan.chain.problem, scan.anchor_problem()) {
        (None, None) => println!("  chain       verified from {from}"),
        (Some(p), _) => println!("  chain       BROKEN after sequence {}: {p}", scan.chain.tip),
        (None, Some(p)) => println!("  chain       BROKEN: {p}"),
    }
    for fork in &scan.forks {
        println!("  fork        {fork}");
    }
    for (key, bytes, _) in objects.iter().filter(|(k, _, _)| keys.parse_checkpoint(k).is_some()) {
        match Checkpoint::decode(bytes) {
            Ok(c) if c.is_zero() => println!("  checkpoint  {key}: checkpoint zero"),
            Ok(c) => println!(
                "  checkpoint  {key}: through sequence {}, {} documents, root {}",
                c.next_sequence - 1,
                c.document_count,
                c.root.map_or("-".into(), |r| r.to_hex())
            ),
            Err(e) => println!("  checkpoint  {key}: does not decode: {e}"),
        }
    }
    let checkpoints = super::checkpoint_problems(&keys, &marker, &objects, &scan, Content::Store(&store));
    match checkpoints.as_slice() {
        [] => println!("  checkpoints verified against the chain"),
        problems => problems.iter().for_each(|p| println!("  checkpoints BAD: {p}")),
    }
    for (kind, (n, bytes)) in &counts {
        println!("  {kind:<11} {n} objects, {bytes} bytes");
    }
    Ok(scan.is_whole() && checkpoints.is_empty() && !counts.contains_key("other"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A world with bodies of their own (documents too large to ride in their slots).
    async fn written_world() -> (String, String) {
        let dir = std::env::temp_dir().join(format!("slotlog-inspect-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let url = format!("file://{}", dir.display());
        let args = super::super::writer::WriterArgs {
            url: url.clone(),
            prefix: "w".into(),
            log: dir.with_extension("log").to_string_lossy().into_owned(),
            duration_s: 1.0,
            writers: 2,
            paths: 10,
            listen: None,
            peers: Vec::new(),
            checkpoint_slots: Some(8),
            health: None,
        };
        assert_eq!(super::super::writer::run(args).await, Ok(true));
        (url, "w".to_string())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn inspect_reads_its_log_with_the_listing_and_no_body_or_checkpoint_content() {
        let (url, prefix) = written_world().await;
        let (store, _, prefix) = super::super::store(&url, &prefix, false).expect("the directory");
        let keys = Keys::new(&prefix);
        let objects =
            super::super::read_listed(&store, &prefix, |key| reads(&keys, key)).await.expect("read");
        for kind in ["bodies", "shards"] {
            let n = objects.iter().filter(|(k, _, _)| kind_of(&keys, k) == kind).count();
            assert!(n > 0, "the writer wrote {kind}: they are counted, not read with the listing");
        }
        for (key, bytes, size) in &objects {
            match reads(&keys, key) {
                true => assert_eq!(bytes.len() as u64, *size, "{key} is read whole"),
                false => assert!(bytes.is_empty() && *size > 0, "{key} is counted, not read"),
            }
        }
        assert_eq!(run(&url, "w").await, Ok(true), "the world inspects whole");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_damaged_shard_read_when_its_checkpoint_is_judged_is_named() {
        let (url, prefix) = written_world().await;
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
        let mut objects =
            super::super::read_listed(&store, &prefix, |key| reads(&keys, key)).await.expect("read");
        let marker = objects.iter().find(|(k, _, _)| *k == keys.marker()).expect("a marker").1.clone();
        let content = Content::Store(&store);
        let scan = super::super::settle::settle_log(&store, &keys, &marker, &mut objects, content)
            .await
            .expect("settled");
        let problems = super::super::checkpoint_problems(&keys, &marker, &objects, &scan, content);
        assert!(problems.iter().any(|p| p.contains(shard.as_str())), "{shard} named in {problems:?}");
        assert_eq!(run(&url, "w").await, Ok(false), "the world does not inspect whole");
    }
}
