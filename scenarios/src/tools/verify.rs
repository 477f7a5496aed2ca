//! `slotlog verify`: read a world back from its store and check what writers were told:
//! every acknowledged operation id is in exactly one slot at the sequence it was told,
//! the chain is whole, checkpoint zero is the marker's, every full checkpoint holds the
//! world the chain makes up to it, and every acknowledged version reads back with its body
//! hash.

use slotlog_kernel::format::{decode_body, Keys};
use slotlog_kernel::hash::Hash32;
use std::collections::BTreeMap;

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
    let keys = Keys::new(&prefix);
    let mut objects = super::read_all(&store, &prefix).await?;
    let marker = objects
        .iter()
        .find(|(k, _, _)| *k == keys.marker())
        .map(|(_, b, _)| b.clone())
        .ok_or_else(|| format!("no world at {url} prefix {prefix:?}: it has no marker"))?;
    // A listing is a hint: settle its gaps, and read the bodies it missed (`settle`).
    let scan = super::settle::settle_log(&store, &keys, &marker, &mut objects).await?;
    super::settle::settle_bodies(&store, &keys, &scan, &mut objects).await?;
    let by_key: BTreeMap<&str, &bytes::Bytes> = objects.iter().map(|(k, b, _)| (k.as_str(), b)).collect();
    let mut in_log: BTreeMap<String, Vec<Placement>> = BTreeMap::new();
    for (slot, _) in &scan.slots {
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
    let (mut lost, mut twice, mut misplaced, mut bad_bodies) = (0u64, 0u64, 0u64, 0u64);
    for a in &acked {
        let Some(found) = in_log.get(&a.op_id) else {
            lost += 1;
            eprintln!("lost: {} acknowledged at sequence {} ({})", a.op_id, a.sequence, a.path);
            continue;
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
        let body_ok = hash.to_hex() == a.body_hash
            && by_key.get(keys.body(&hash).as_str()).is_some_and(|b| decode_body(b, &hash).is_ok());
        if !body_ok {
            bad_bodies += 1;
            eprintln!("bad body: {} version {} of {}", a.op_id, a.version, a.path);
        }
    }
    let chain_ok = scan.problem.is_none();
    if let Some(p) = &scan.problem {
        eprintln!("chain broken after sequence {}: {p:?}", scan.tip);
    }
    let checkpoints = super::checkpoint_problems(&keys, &marker, &objects, &scan);
    for p in &checkpoints {
        eprintln!("checkpoint: {p}");
    }
    let full = objects.iter().filter(|(k, _, _)| keys.parse_checkpoint(k).is_some_and(|s| s > 1)).count();
    println!(
        "acked={} slots={} tip={} chain={} checkpoints={} ({}) twice={twice} misplaced={misplaced} bad_bodies={bad_bodies} lost={lost}",
        acked.len(),
        scan.slots.len(),
        scan.tip,
        if chain_ok { "ok" } else { "broken" },
        full + 1,
        if checkpoints.is_empty() { "verified" } else { "BAD" },
    );
    Ok(chain_ok && checkpoints.is_empty() && lost == 0 && twice == 0 && misplaced == 0 && bad_bodies == 0)
}
