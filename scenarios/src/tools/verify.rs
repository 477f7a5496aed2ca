//! `slotlog verify`: read a world back from its store and check what writers were told:
//! every acknowledged operation id is in exactly one slot at the sequence it was told,
//! the chain is whole, checkpoint zero is the marker's, every full checkpoint holds the
//! world the chain makes up to it, and every acknowledged version reads back with its body
//! hash. In a collected log (SPEC 10.15) an operation whose slot was collected is checked
//! against the receipts of the checkpoint the retained log continues from (`log_scan`),
//! and its body while its version is still the document's current one there. Every forked
//! slot is named.
//!
//! Streams the world as `inspect` does, holding at once what one step needs, never every
//! slot's or body's bytes:
//! - the listing keeps the marker and checkpoint records (read) and the slots' names;
//! - the log is judged from summaries, every slot read once a few at a time
//!   (`SLOT_READS_IN_FLIGHT_MAX`) and let go (`settle`, `log_scan`); from the same read
//!   each slot is kept only as where each operation sits (its sequence, version and body
//!   hash) and the hashes of the bodies it carries, and of those only the slots that make
//!   the world are judged;
//! - a body not carried in a slot is read from its blob, a few at a time, only for an
//!   acknowledged version that needs it, checked with `decode_body` and let go;
//! - the checkpoints are judged by replaying the chain, its slots read back as they are
//!   applied (`checkpoint_problems`).
//!
//! What it holds is the acknowledged lines, one placement an operation, the world of the
//! checkpoint a collected log continues from, and a few objects.

use futures_util::stream::{self, StreamExt, TryStreamExt};
use object_store::ObjectStore;
use slotlog_kernel::format::{decode_body, Keys, Slot};
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::world::WorldState;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::inspect::{list, Listing};
use super::log_scan::LogScan;
use super::settle::{settle_log, Settled};
use super::{Content, SLOT_READS_IN_FLIGHT_MAX};

/// One line a writer logged: `acked <op id hex> <sequence> <version> <body hash hex> <path>`.
#[derive(Debug)]
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
/// world's whole key prefix in it. Every failure's cause goes to stderr, the counts line
/// to stdout.
pub async fn verify_store(
    store: &Arc<dyn ObjectStore>,
    url: &str,
    prefix: &str,
    logs: &[String],
) -> Result<bool, String> {
    let mut acked = Vec::new();
    for path in logs {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        acked.extend(parse_log(&text));
    }
    let (ok, line) = judge(store, url, prefix, &acked, &mut |cause| eprintln!("{cause}")).await?;
    println!("{line}");
    Ok(ok)
}

/// Judges the world against the acknowledged lines `acked`: each failure's cause is said
/// to `cause` as it is found; returns whether the world verified, and the counts line.
pub async fn judge(
    store: &Arc<dyn ObjectStore>,
    url: &str,
    prefix: &str,
    acked: &[Acked],
    cause: &mut (dyn FnMut(String) + Send),
) -> Result<(bool, String), String> {
    let keys = Keys::new(prefix);
    let Listing { mut objects, log, .. } = list(store, prefix, &keys).await?;
    let marker = objects
        .iter()
        .find(|(k, _, _)| *k == keys.marker())
        .map(|(_, b, _)| b.clone())
        .ok_or_else(|| format!("no world at {url} prefix {prefix:?}: it has no marker"))?;
    // A listing is a hint: settle its gaps before judging the chain (`settle`).
    let content = Content::Store(store);
    let Settled { mut scan, gathered } =
        settle_log(store, &keys, &marker, &mut objects, log, content, slot_placements).await?;
    let Placements { in_log, carried } = placements(&scan, gathered)?;
    let anchor =
        scan.anchor.as_ref().and_then(|a| a.world.as_ref().map(|w| (a.next_sequence, Collected::of(w))));
    let place = |a: &Acked| place_of(a, &in_log, anchor.as_ref());
    // The bodies to read: of the versions placed where they were told, with the hash they
    // were told, that no slot carries.
    let stored: BTreeSet<Hash32> = acked
        .iter()
        .filter_map(|a| match place(a) {
            Placed::In { found, judge_body: true, .. } => told(a, found[0]).filter(|h| !carried.contains(h)),
            _ => None,
        })
        .collect();
    let stored = read_bodies(store, &keys, stored).await?;
    let (mut lost, mut twice, mut misplaced, mut bad_bodies, mut collected) = (0u64, 0u64, 0u64, 0u64, 0u64);
    // Collected operations past the anchor's receipt window: nothing left to judge them by.
    let mut past_window = 0u64;
    for a in acked {
        // Its slot, or, collected, the receipt the anchor checkpoint holds; the body is
        // judged unless its version is no longer current there.
        let (found, judge_body) = match place(a) {
            Placed::PastWindow => {
                past_window += 1;
                continue;
            }
            Placed::Lost => {
                lost += 1;
                cause(format!("lost: {} acknowledged at sequence {} ({})", a.op_id, a.sequence, a.path));
                continue;
            }
            Placed::In { found, judge_body, collected: was_collected } => {
                collected += u64::from(was_collected);
                (found, judge_body)
            }
        };
        if found.len() > 1 {
            twice += 1;
            cause(format!("twice: {} is in {} slots", a.op_id, found.len()));
        }
        let (sequence, version) = found[0];
        if sequence != a.sequence || version.map(|v| v.0) != Some(a.version) {
            misplaced += 1;
            cause(format!(
                "misplaced: {} told sequence {} version {}, the log has {sequence} {version:?}",
                a.op_id, a.sequence, a.version
            ));
            continue;
        }
        let body_ok = !judge_body
            || told(a, found[0]).is_some_and(|h| carried.contains(&h) || stored.get(&h) == Some(&true));
        if !body_ok {
            bad_bodies += 1;
            cause(format!("bad body: {} version {} of {}", a.op_id, a.version, a.path));
        }
    }
    drop(anchor);
    let chain_ok = scan.is_whole();
    if let Some(p) = &scan.chain.problem {
        cause(format!("chain broken after sequence {}: {p}", scan.chain.tip));
    }
    if let Some(p) = scan.anchor_problem() {
        cause(format!("chain broken: {p}"));
    }
    for fork in &scan.forks {
        cause(format!("fork: {fork}"));
    }
    let checkpoints = super::checkpoint_problems(&keys, &marker, &objects, &mut scan, content).await?;
    for p in &checkpoints {
        cause(format!("checkpoint: {p}"));
    }
    let full = objects.iter().filter(|(k, _, _)| keys.parse_checkpoint(k).is_some_and(|s| s > 1)).count();
    let collected_below = scan.anchor.as_ref().map_or(0, |a| a.next_sequence);
    let line = format!(
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
    let ok =
        chain_ok && checkpoints.is_empty() && lost == 0 && twice == 0 && misplaced == 0 && bad_bodies == 0;
    Ok((ok, line))
}

/// What `verify` keeps of the slots that make the world (`LogScan::slots`).
#[derive(Default)]
struct Placements {
    /// Where each operation sits, by its id: one placement a slot that holds it.
    in_log: BTreeMap<String, Vec<Placement>>,
    /// The bodies slots carry, checked against their hashes when the slots decoded.
    carried: BTreeSet<Hash32>,
}

/// What `verify` keeps of one slot object: its members' placements, by operation id,
/// and the hashes of the bodies it carries (checked against them when it decoded); or why
/// it does not decode.
type SlotPlacements = Result<(Vec<(String, Placement)>, Vec<Hash32>), String>;

fn slot_placements(key: &str, bytes: &[u8]) -> SlotPlacements {
    let slot = Slot::decode(bytes).map_err(|e| format!("{key}: {e}"))?;
    let members = slot
        .members
        .iter()
        .map(|m| {
            (m.op_id().to_string(), (m.sequence(), m.version.as_ref().map(|v| (v.version, v.body_hash))))
        })
        .collect();
    Ok((members, slot.bodies_by_hash().map(|(h, _)| h).collect()))
}

/// The placements of the slots that make the world (`LogScan::slots`), from what settling
/// gathered of every slot it read; the rest (forks, objects that are no slot) let go.
fn placements(scan: &LogScan, mut gathered: BTreeMap<String, SlotPlacements>) -> Result<Placements, String> {
    let mut kept = Placements::default();
    for s in scan.slots() {
        let slot = gathered.remove(&s.key).ok_or_else(|| format!("{}: judged but never read", s.key))?;
        let (members, carried) = slot?;
        for (op_id, placement) in members {
            kept.in_log.entry(op_id).or_default().push(placement);
        }
        kept.carried.extend(carried);
    }
    Ok(kept)
}

/// Reads the body blobs of `hashes`, a few at a time, each checked with `decode_body` and
/// let go: whether each read back whole (an absent blob does not).
async fn read_bodies(
    store: &Arc<dyn ObjectStore>,
    keys: &Keys,
    hashes: BTreeSet<Hash32>,
) -> Result<BTreeMap<Hash32, bool>, String> {
    stream::iter(hashes)
        .map(|hash| async move {
            let bytes = super::settle::read(store, &keys.body(&hash)).await?;
            Ok::<_, String>((hash, bytes.is_some_and(|b| decode_body(&b, &hash).is_ok())))
        })
        .buffered(SLOT_READS_IN_FLIGHT_MAX)
        .try_collect()
        .await
}

/// How an acknowledged operation stands in the world.
enum Placed<'a> {
    /// Collected, below the anchor's receipt window: nothing is left to judge it by.
    PastWindow,
    /// In no slot, and in no receipt of the anchor.
    Lost,
    /// In the slots `found` (or, collected, the anchor's receipt); its body is judged
    /// unless its version is no longer current at the anchor.
    In { found: std::borrow::Cow<'a, [Placement]>, judge_body: bool, collected: bool },
}

/// Where `a` stands: in the slots (`in_log`), or, collected, in the receipts of the
/// anchor checkpoint (its next sequence, and what its world says).
fn place_of<'a>(
    a: &Acked,
    in_log: &'a BTreeMap<String, Vec<Placement>>,
    anchor: Option<&(u64, Collected<'_>)>,
) -> Placed<'a> {
    if let Some(found) = in_log.get(&a.op_id) {
        return Placed::In { found: found.as_slice().into(), judge_body: true, collected: false };
    }
    if anchor.is_some_and(|(_, c)| a.sequence < c.receipts_from) {
        return Placed::PastWindow;
    }
    match anchor.filter(|(from, _)| a.sequence < *from).and_then(|(_, c)| c.placed(a)) {
        Some((placement, current)) => {
            Placed::In { found: vec![placement].into(), judge_body: current, collected: true }
        }
        None => Placed::Lost,
    }
}

/// The body hash `placement` gives `a`, when it is where `a` was told (its sequence and
/// version) with the hash it was told.
fn told(a: &Acked, placement: Placement) -> Option<Hash32> {
    let (sequence, version) = placement;
    let (version, hash) = version?;
    (sequence == a.sequence && version == a.version && hash.to_hex() == a.body_hash).then_some(hash)
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

#[cfg(test)]
mod tests {
    use super::super::read_all;
    use super::super::settle::Object;
    use super::super::test_store::{written_world, Counting, Hooked, Tally};
    use super::*;

    /// A world a writer made, collected as a drop leaves it (SPEC 10.15): the slots below
    /// its second full checkpoint gone. With it, as `verify` is given it: its store and
    /// prefix, the acknowledged lines, and the objects left, read whole.
    struct Collected {
        url: String,
        dir: std::path::PathBuf,
        store: Arc<dyn ObjectStore>,
        prefix: String,
        keys: Keys,
        acked: Vec<Acked>,
        /// The sequence the retained log continues from.
        kept: u64,
        objects: Vec<Object>,
    }

    async fn collected(name: &str, duration_s: f64) -> Collected {
        let (url, prefix, log) = written_world(name, duration_s).await;
        let (store, _, prefix) = super::super::store(&url, &prefix, false).expect("the directory");
        let acked = parse_log(&std::fs::read_to_string(&log).expect("the writers' log"));
        assert!(!acked.is_empty(), "the writers were told of writes");
        let keys = Keys::new(&prefix);
        let dir = std::path::PathBuf::from(url.trim_start_matches("file://"));
        let objects = read_all(&store, &prefix).await.expect("read");
        let full: Vec<u64> =
            objects.iter().filter_map(|(k, _, _)| keys.parse_checkpoint(k)).filter(|s| *s > 1).collect();
        assert!(full.len() >= 2, "checkpoints every 8 slots: {full:?}");
        let kept = full[1];
        for (key, _, _) in objects.iter().filter(|(k, _, _)| keys.parse_slot(k).is_some_and(|s| s < kept)) {
            std::fs::remove_file(dir.join(key)).expect("collected");
        }
        let objects = read_all(&store, &prefix).await.expect("read");
        Collected { url, dir, store, prefix, keys, acked, kept, objects }
    }

    impl Collected {
        /// `judge`, through `store`, with the causes it says.
        async fn judged(
            &self,
            store: &Arc<dyn ObjectStore>,
        ) -> (Result<(bool, String), String>, Vec<String>) {
            let mut causes = Vec::new();
            let verdict = judge(store, &self.url, &self.prefix, &self.acked, &mut |c| causes.push(c)).await;
            (verdict, causes)
        }

        /// The bytes of each object under `prefix`.
        fn sizes(&self, prefix: &str) -> Vec<u64> {
            self.objects
                .iter()
                .filter(|(k, _, _)| k.starts_with(prefix))
                .map(|(_, b, _)| b.len() as u64)
                .collect()
        }

        /// The acknowledged writes whose slots were collected and whose versions are still
        /// current at the checkpoint the log continues from: their bodies are read from
        /// their blobs to be judged. (Every write the writers made was acknowledged.)
        fn current_collected(&self) -> Vec<&Acked> {
            let mut current: BTreeMap<&str, &Acked> = BTreeMap::new();
            for a in self.acked.iter().filter(|a| a.sequence < self.kept) {
                let newest = current.entry(a.path.as_str()).or_insert(a);
                if a.sequence > newest.sequence {
                    *newest = a;
                }
            }
            current.into_values().collect()
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn verify_holds_a_few_slots_or_bodies_at_once_not_the_log_and_its_bodies() {
        let world = collected("verify-bound", 3.0).await;
        let (log_prefix, blobs_prefix) = (world.keys.log_prefix(), world.keys.blobs_prefix());
        let (slots, bodies) = (world.sizes(&log_prefix), world.sizes(&blobs_prefix));
        let bytes: u64 = slots.iter().chain(&bodies).sum();
        assert!(!world.current_collected().is_empty(), "some body is judged from its blob");

        let (slot_tally, body_tally) = (Arc::new(Tally::default()), Arc::new(Tally::default()));
        let counting =
            Hooked::store(&world.store, Counting { prefixes: vec![log_prefix], tally: slot_tally.clone() });
        let counting =
            Hooked::store(&counting, Counting { prefixes: vec![blobs_prefix], tally: body_tally.clone() });
        let (verdict, causes) = world.judged(&counting).await;
        let (ok, line) = verdict.expect("judged");
        assert!(ok && causes.is_empty(), "the world verifies: {line} {causes:#?}");
        for part in [format!("acked={} ", world.acked.len()), " chain=ok ".into(), " lost=0".into()] {
            assert!(line.contains(&part), "{part:?} in {line}");
        }
        assert!(
            !line.contains(" collected_acked=0 "),
            "writes judged from the checkpoint's receipts: {line}"
        );
        let reads = slot_tally.reads();
        // Once to judge the chain and place the operations, once more to replay the checkpoints.
        assert!(
            (slots.len() as u64..=2 * slots.len() as u64).contains(&reads),
            "{reads} reads of {} slots: each read once to judge and place, once to replay",
            slots.len()
        );
        assert!(body_tally.reads() > 0, "bodies read from their blobs");
        let window = |sizes: &[u64]| SLOT_READS_IN_FLIGHT_MAX as u64 * sizes.iter().max().expect("objects");
        let (slots_held, bodies_held) = (slot_tally.held_max(), body_tally.held_max());
        assert!(slots_held <= window(&slots), "{slots_held} slot bytes held at once");
        assert!(bodies_held <= window(&bodies), "{bodies_held} body bytes held at once");
        assert!(
            (slots_held + bodies_held) * 10 < bytes,
            "{slots_held} slot and {bodies_held} body bytes held at once is not far below the {bytes} of {} slots and {} bodies",
            slots.len(),
            bodies.len()
        );
        assert_eq!(
            world.judged(&world.store).await,
            (Ok((true, line)), causes),
            "the same verdict, read through the counting store or not"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_body_blob_damaged_or_gone_is_a_bad_body_of_the_write_told_it() {
        let world = collected("verify-bodies", 1.0).await;
        let held = |key: &String| world.objects.binary_search_by(|(k, _, _)| k.cmp(key)).is_ok();
        let blob = |a: &Acked| world.keys.body(&Hash32::from_hex(&a.body_hash).expect("a hash in hex"));
        let judged: Vec<&Acked> = world.current_collected().into_iter().filter(|a| held(&blob(a))).collect();
        let [damaged, gone, ..] = judged[..] else {
            panic!("two bodies judged from their blobs: {judged:?}")
        };
        let file = world.dir.join(blob(damaged));
        let mut bytes = std::fs::read(&file).expect("a body's file");
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x40;
        std::fs::write(&file, bytes).expect("damaged");
        std::fs::remove_file(world.dir.join(blob(gone))).expect("gone");
        let (verdict, causes) = world.judged(&world.store).await;
        let (ok, line) = verdict.expect("judged: a body gone is a bad body, not a failure to read");
        assert!(!ok, "{line}");
        assert!(line.contains(" bad_bodies=2 "), "{line}");
        for a in [damaged, gone] {
            let cause = format!("bad body: {} version {} of {}", a.op_id, a.version, a.path);
            assert!(causes.contains(&cause), "{cause:?} in {causes:#?}");
        }
    }
}
