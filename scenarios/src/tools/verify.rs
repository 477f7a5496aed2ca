//! `slotlog verify`: read a world back from its store and check what writers were told:
//! every acknowledged operation id is in exactly one slot at the sequence it was told,
//! the chain is whole, checkpoint zero is the marker's, every full checkpoint holds the
//! world the chain makes up to it, and every acknowledged version reads back with its body
//! hash. In a collected log (SPEC 10.15) an operation whose slot was collected is checked
//! against the receipts of the checkpoint the retained log continues from (`log_scan`),
//! and its body while its version is still the document's current one there. Every forked
//! slot is named.

use slotlog_kernel::format::{decode_body, Keys, Slot};
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::world::WorldState;
use std::collections::{BTreeMap, BTreeSet};

use super::log_scan::LogScan;
use super::settle::Object;

/// One line a writer logged: `acked <op id hex> <sequence> <version> <body hash hex> <path>`.
pub struct Acked {
    pub op_id: String,
    pub sequence: u64,
    pub version: u64,
    pub body_hash: String,
    pub path: String,
}

pub fn parse_log(text: &str) -> Vec<Acked> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            if f.next()? != "acked" {
                return None;
            }
            Some(Acked {
                op_id: f.next()?.to_string(),
                sequence: f.next()?.parse().ok()?,
                version: f.next()?.parse().ok()?,
                body_hash: f.next()?.to_string(),
                path: f.next()?.to_string(),
            })
        })
        .collect()
}

/// Where the log put one operation: its sequence, and the version and body it made.
type Placement = (u64, Option<(u64, Hash32)>);

pub async fn run(url: &str, prefix: &str, logs: &[String]) -> Result<bool, String> {
    let (store, _, prefix) = super::store(url, prefix, false)?;
    verify_store(&store, url, &prefix, logs).await
}

/// `verify` on a store already open (`url` only names it in messages); `prefix` is the
/// world's whole key prefix in it.
pub async fn verify_store(
    store: &std::sync::Arc<dyn object_store::ObjectStore>,
    url: &str,
    prefix: &str,
    logs: &[String],
) -> Result<bool, String> {
    let (store, prefix) = (store.clone(), prefix.to_string());
    let keys = Keys::new(&prefix);
    let mut objects = super::read_all(&store, &prefix).await?;
    let marker = objects
        .iter()
        .find(|(k, _, _)| *k == keys.marker())
        .map(|(_, b, _)| b.clone())
        .ok_or_else(|| format!("no world at {url} prefix {prefix:?}: it has no marker"))?;
    // A listing is a hint: settle its gaps, and read the bodies it missed (`settle`).
    let listed = super::listed_log(&keys, &objects);
    let mut scan =
        super::settle::settle_log(&store, &keys, &marker, &mut objects, listed, super::Content::Held).await?;
    let slots = held_slots(&scan, &objects)?;
    super::settle::settle_bodies(&store, &keys, &slots, &mut objects).await?;
    let by_key: BTreeMap<&str, &bytes::Bytes> = objects.iter().map(|(k, b, _)| (k.as_str(), b)).collect();
    let mut in_log: BTreeMap<String, Vec<Placement>> = BTreeMap::new();
    // Bodies slots carry, checked against their hashes when the slots decoded.
    let carried: BTreeSet<Hash32> =
        slots.iter().flat_map(|slot| slot.bodies_by_hash().map(|(h, _)| h)).collect();
    for slot in &slots {
        for m in &slot.members {
            let version = m.version.as_ref().map(|v| (v.version, v.body_hash));
            in_log.entry(m.op_id().to_string()).or_default().push((m.sequence(), version));
        }
    }
    let mut acked = Vec::new();
    for path in logs {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        acked.extend(parse_log(&text));
    }
    let (mut lost, mut twice, mut misplaced, mut bad_bodies, mut collected) = (0u64, 0u64, 0u64, 0u64, 0u64);
    // Collected operations past the anchor's receipt window: nothing left to judge them by.
    let mut past_window = 0u64;
    let anchor =
        scan.anchor.as_ref().and_then(|a| a.world.as_ref().map(|w| (a.next_sequence, Collected::of(w))));
    for a in &acked {
        if anchor
            .as_ref()
            .is_some_and(|(_, c)| !in_log.contains_key(&a.op_id) && a.sequence < c.receipts_from)
        {
            past_window += 1;
            continue;
        }
        // Its slot, or, collected, the receipt the anchor checkpoint holds; the body is
        // judged unless its version is no longer current there.
        let (found, judge_body) = match in_log.get(&a.op_id) {
            Some(found) => (found.clone(), true),
            None => {
                match anchor.as_ref().filter(|(from, _)| a.sequence < *from).and_then(|(_, c)| c.placed(a)) {
                    Some((placement, current)) => {
                        collected += 1;
                        (vec![placement], current)
                    }
                    None => {
                        lost += 1;
                        eprintln!("lost: {} acknowledged at sequence {} ({})", a.op_id, a.sequence, a.path);
                        continue;
                    }
                }
            }
        };
        if found.len() > 1 {
            twice += 1;
            eprintln!("twice: {} is in {} slots", a.op_id, found.len());
        }
        let (sequence, version) = found[0];
        if sequence != a.sequence || version.map(|v| v.0) != Some(a.version) {
            misplaced += 1;
            eprintln!(
                "misplaced: {} told sequence {} version {}, the log has {sequence} {version:?}",
                a.op_id, a.sequence, a.version
            );
            continue;
        }
        let hash = version.expect("checked").1;
        let stored = || by_key.get(keys.body(&hash).as_str()).is_some_and(|b| decode_body(b, &hash).is_ok());
        let body_ok = !judge_body || hash.to_hex() == a.body_hash && (carried.contains(&hash) || stored());
        if !body_ok {
            bad_bodies += 1;
            eprintln!("bad body: {} version {} of {}", a.op_id, a.version, a.path);
        }
    }
    let chain_ok = scan.is_whole();
    if let Some(p) = &scan.chain.problem {
        eprintln!("chain broken after sequence {}: {p}", scan.chain.tip);
    }
    if let Some(p) = scan.anchor_problem() {
        eprintln!("chain broken: {p}");
    }
    for fork in &scan.forks {
        eprintln!("fork: {fork}");
    }
    let checkpoints =
        super::checkpoint_problems(&keys, &marker, &objects, &mut scan, super::Content::Held).await?;
    for p in &checkpoints {
        eprintln!("checkpoint: {p}");
    }
    let full = objects.iter().filter(|(k, _, _)| keys.parse_checkpoint(k).is_some_and(|s| s > 1)).count();
    let collected_below = scan.anchor.as_ref().map_or(0, |a| a.next_sequence);
    println!(
        "acked={} slots={} tip={} chain={} collected_below={collected_below} collected_acked={collected} \
         past_receipt_window={past_window} forks={} checkpoints={} ({}) twice={twice} misplaced={misplaced} bad_bodies={bad_bodies} lost={lost}",
        acked.len(),
        scan.slots().count(),
        scan.chain.tip,
        if chain_ok { "ok" } else { "broken" },
        scan.forks.len(),
        full + 1,
        if checkpoints.is_empty() { "verified" } else { "BAD" },
    );
    Ok(chain_ok && checkpoints.is_empty() && lost == 0 && twice == 0 && misplaced == 0 && bad_bodies == 0)
}

/// The slots that make the world (`LogScan::slots`), decoded from the bytes held: `verify`
/// reads every object with the listing, and holds its slots decoded as it judges them.
fn held_slots(scan: &LogScan, objects: &[Object]) -> Result<Vec<Slot>, String> {
    scan.slots()
        .map(|s| {
            let i = objects
                .binary_search_by(|(k, _, _)| k.cmp(&s.key))
                .map_err(|_| format!("{} is not held", s.key))?;
            Slot::decode(&objects[i].1).map_err(|e| format!("{}: {e}", s.key))
        })
        .collect()
}

/// What a checkpoint's world says of collected operations: its receipts by operation id,
/// and its documents' current entries by path.
struct Collected<'a> {
    receipts: BTreeMap<String, &'a slotlog_kernel::world::Receipt>,
    current: BTreeMap<&'a str, &'a slotlog_kernel::world::IndexEntry>,
    receipts_from: u64,
}

impl<'a> Collected<'a> {
    fn of(world: &'a WorldState) -> Collected<'a> {
        Collected {
            receipts: world.receipts_since(1).map(|r| (r.receipt.op_id.to_string(), &r.receipt)).collect(),
            current: world.documents().map(|(p, d)| (p.as_str(), &d.entry)).collect(),
            receipts_from: world.receipts_from_sequence(),
        }
    }

    /// Where the world puts a collected operation (its receipt's sequence and version,
    /// with the document's current body hash), and whether that version is still current
    /// there (only then is its body judged).
    fn placed(&self, a: &Acked) -> Option<(Placement, bool)> {
        let receipt = self.receipts.get(&a.op_id)?;
        let current = self.current.get(a.path.as_str()).filter(|e| e.version == receipt.version);
        let hash = current.map_or(Hash32::ZERO, |e| e.body_hash);
        Some(((receipt.sequence, Some((receipt.version, hash))), current.is_some()))
    }
}
