use super::*;
use crate::tools::writer::{run as write, WriterArgs};
use slotlog_kernel::format::Slot;

/// A world one writer wrote for a few seconds into a fresh local directory, checkpointing
/// every few slots; its objects read back, in key order.
async fn written(name: &str) -> (Keys, Vec<Object>) {
    let dir = std::env::temp_dir().join(format!("slotlog-log-scan-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let url = format!("file://{}", dir.display());
    let args = WriterArgs {
        url: url.clone(),
        prefix: "w".into(),
        log: dir.with_extension("log").to_string_lossy().into_owned(),
        duration_s: 3.0,
        writers: 1,
        paths: 10,
        listen: None,
        peers: Vec::new(),
        checkpoint_slots: Some(4),
        health: None,
    };
    assert_eq!(write(args).await, Ok(true));
    let (store, _, prefix) = super::super::store(&url, "w", false).expect("the directory");
    let objects = super::super::read_all(&store, &prefix).await.expect("read");
    (Keys::new(&prefix), objects)
}

/// The log in `objects` judged from the bytes held (every object read with the listing).
fn judged(keys: &Keys, objects: &[Object]) -> LogScan {
    let log = super::super::listed_log(keys, objects)
        .into_iter()
        .map(|(key, size)| {
            let bytes = &objects.iter().find(|(k, _, _)| *k == key).expect("held").1;
            SlotSummary::of(&key, bytes, size)
        })
        .collect();
    scan_log(keys, &marker(keys, objects), objects, log, Content::Held)
}

fn marker(keys: &Keys, objects: &[Object]) -> bytes::Bytes {
    objects.iter().find(|(k, _, _)| *k == keys.marker()).expect("a marker").1.clone()
}

/// The full checkpoints' sequences, oldest first.
fn checkpoints(keys: &Keys, objects: &[Object]) -> Vec<u64> {
    objects.iter().filter_map(|(k, _, _)| keys.parse_checkpoint(k)).filter(|s| *s > 1).collect()
}

/// What a drop leaves: the slots below `below` gone, and the checkpoints in `dropped`.
fn collect(keys: &Keys, objects: &mut Vec<Object>, below: u64, dropped: &[u64]) {
    objects.retain(|(k, _, _)| {
        let slot_gone = keys.parse_slot(k).is_some_and(|s| s < below);
        let checkpoint_gone = keys.parse_checkpoint(k).is_some_and(|s| dropped.contains(&s));
        !slot_gone && !checkpoint_gone
    });
}

fn slot_at(keys: &Keys, objects: &[Object], index: usize) -> (String, Slot) {
    let (key, bytes, _) =
        objects.iter().filter(|(k, _, _)| keys.parse_slot(k).is_some()).nth(index).expect("a slot");
    (key.clone(), Slot::decode(bytes).expect("decodes"))
}

fn put(objects: &mut Vec<Object>, key: &str, bytes: Vec<u8>) {
    let object = (key.to_string(), bytes::Bytes::from(bytes), 0);
    match objects.binary_search_by(|(k, _, _)| k.as_str().cmp(key)) {
        Ok(i) => objects[i] = object,
        Err(i) => objects.insert(i, object),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_log_is_judged_from_the_marker() {
    let (keys, objects) = written("whole").await;
    let scan = judged(&keys, &objects);
    assert!(scan.anchor.is_none());
    assert!(scan.is_whole(), "{:?} {:?}", scan.chain.problem, scan.forks);
    assert!(scan.chain.slots.len() >= 8, "a few slots: {}", scan.chain.slots.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collected_log_is_judged_from_the_oldest_checkpoint_it_continues() {
    let (keys, mut objects) = written("collected").await;
    let full = checkpoints(&keys, &objects);
    // A lingering checkpoint and the one the retained log continues from.
    assert!(full.len() >= 2, "checkpoints every 4 slots: {full:?}");
    let (lingering, kept) = (full[0], full[1]);
    // The first checkpoint's delete was fenced: it lingers, its slots gone.
    collect(&keys, &mut objects, kept, &[]);
    let mut scan = judged(&keys, &objects);
    let anchor = scan.anchor.as_ref().expect("collected");
    assert_eq!(anchor.key, keys.checkpoint(kept), "not the lingering {}", keys.checkpoint(lingering));
    assert!(scan.is_whole(), "{:?} {:?} {:?}", scan.chain.problem, scan.forks, scan.anchor_problem());
    let marker = marker(&keys, &objects);
    let problems =
        super::super::checkpoint_problems(&keys, &marker, &objects, &mut scan, Content::Held).await;
    assert_eq!(problems, Ok(Vec::<String>::new()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_that_does_not_chain_onto_its_predecessor_is_named_a_fork() {
    let (keys, mut objects) = written("fork").await;
    let (before, _) = slot_at(&keys, &objects, 2);
    let (key, mut slot) = slot_at(&keys, &objects, 3);
    slot.prev_hash = Hash32::of(b"another history");
    put(&mut objects, &key, slot.encode());
    let scan = judged(&keys, &objects);
    assert!(!scan.is_whole());
    let fork = Fork { key: key.clone(), kind: ForkKind::NotChained { predecessor: before.clone() } };
    assert_eq!(scan.forks, vec![fork.clone()]);
    let said = fork.to_string();
    assert!(said.contains(&key) && said.contains("forked slot") && said.contains("not chained"), "{said}");
    assert!(said.contains(&before), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_created_in_a_collected_name_is_named_a_fork_below_collection() {
    let (keys, mut objects) = written("stalled").await;
    let full = checkpoints(&keys, &objects);
    let kept = full[1];
    // A writer stalled at its create of a name collection later freed: its slot lands
    // there, built on the slot before it, which is gone.
    let (key, _) = slot_at(&keys, &objects, 2);
    let stalled = objects.iter().find(|(k, _, _)| *k == key).expect("the slot").1.clone();
    assert!(keys.parse_slot(&key).expect("a slot") < kept);
    collect(&keys, &mut objects, kept, &full[..1]);
    put(&mut objects, &key, stalled.to_vec());
    let scan = judged(&keys, &objects);
    let anchor = keys.checkpoint(kept);
    assert_eq!(scan.anchor.as_ref().map(|a| a.key.clone()), Some(anchor.clone()));
    assert_eq!(scan.chain.problem, None, "the retained log itself is whole");
    assert_eq!(scan.forks, vec![Fork { key: key.clone(), kind: ForkKind::BelowCollection { anchor } }]);
    assert!(!scan.is_whole());
    let said = scan.forks[0].to_string();
    assert!(
        said.contains(&key) && said.contains("forked slot") && said.contains("below collection"),
        "{said}"
    );
}

#[test]
fn a_slot_summary_holds_none_of_the_slots_bytes() {
    // What judging a log holds a slot, whatever the slot holds: its summary, and its key.
    let summary_bytes = std::mem::size_of::<SlotSummary>();
    assert!(summary_bytes <= 160, "a slot summary is {summary_bytes} bytes");
}
