//! `slotlog bench checkpoint-step`: what one compactor step uploads (issue 11). It builds
//! a world of N documents with a full checkpoint on local disk (as `bench cold-start`
//! does), changes M documents spread over it, and folds one step over that checkpoint
//! twice: as the compactor does (deltas while the merge rule allows, SPEC 10.16), and as
//! a merge that writes every shard anew (the step before deltas, `checkpoint_deltas_max`
//! 0). Each is timed from the fold to the last create, reading the history blocks the
//! fold needs from the disk as the compactor reads them from its bucket; only objects the
//! base checkpoint does not already hold are created, as the compactor skips them. Then a
//! separate process opens the world from the delta step's checkpoint (a cold start over
//! shards and deltas) and, for comparison, the same world before the step.
//!
//! Owns nothing the kernel uses: it only writes objects the kernel's own code makes.

use super::bench_cold_start::{
    body_of, commit_slot, level, local_blobs, op_id, open_in_child, path_of, OpenReport, Sink, WorldDir,
    BUILD_CREATES_IN_FLIGHT_MAX, PREFIX,
};
use bytes::Bytes;
use serde::Serialize;
use slotlog::blobs::Blobs;
use slotlog::object_store_blobs::ObjectStoreBlobs;
use slotlog_kernel::checkpoint::{fold, fold_over, FoldError, Folded, Layers, MergeRule, ObjectKind};
use slotlog_kernel::format::{Checkpoint, HistoryBlock, Keys, Marker, SLOT_MEMBERS_MAX};
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::{StoreId, WorldId};
use slotlog_kernel::world::{Expected, Mutation, WorldState};
use slotlog_kernel::{BlobOp, BlobOutcome, Config};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

pub struct Args {
    pub docs: u64,
    pub changed: u64,
    /// Build here (must be absent or empty); None: a fresh directory under the temp dir.
    pub dir: Option<PathBuf>,
    /// Keep the directory afterwards.
    pub keep: bool,
    /// Skip the two openings (a cold start over the step's deltas, and before the step).
    pub no_open: bool,
}

/// One step, as measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Step {
    /// Bytes of the objects the step created (its checkpoint object included), ÷ 1e6.
    pub uploaded_mb: f64,
    pub objects_created: u64,
    /// From the fold's start to the last create stored, history block reads included.
    pub step_s: f64,
    pub fold_s: f64,
    /// Stored history blocks the fold read: windows that gained a version.
    pub history_blocks_read: u64,
    /// Objects created by kind: count and bytes.
    pub created: BTreeMap<String, (u64, u64)>,
    /// Deltas the step's root names, and their entries in all.
    pub deltas: usize,
    pub delta_entries: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub docs: u64,
    pub changed: u64,
    pub shards: usize,
    /// Building the world and writing its full checkpoint (not timed as a step).
    pub build_s: f64,
    /// The full checkpoint every step folds over, ÷ 1e6.
    pub full_checkpoint_mb: f64,
    /// The step as the compactor takes it (deltas), and the same step as a merge.
    pub step: Step,
    pub merge: Step,
    /// A cold start from the step's checkpoint (shards and deltas), and from the full
    /// checkpoint before the step (replaying the slots of the changes).
    pub open_after_step: Option<OpenReport>,
    pub open_before_step: Option<OpenReport>,
}

/// Builds the world, measures both steps and the openings, and reports.
pub fn run(args: &Args) -> (Result<Report, String>, Option<WorldDir>) {
    if args.docs == 0 || args.changed == 0 || args.changed > args.docs {
        return (Err("need 1 <= --changed <= --docs".into()), None);
    }
    let dir = match WorldDir::prepare(args.dir.as_deref(), args.keep, "checkpoint-step") {
        Ok(dir) => dir,
        Err(e) => return (Err(e), None),
    };
    (run_in(args, &dir.path), Some(dir))
}

fn run_in(args: &Args, dir: &Path) -> Result<Report, String> {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(measure(args, dir))
}

async fn measure(args: &Args, dir: &Path) -> Result<Report, String> {
    let keys = Keys::new(PREFIX);
    let blobs = local_blobs(dir)?;
    let mut sink = Sink::new(blobs.clone(), BUILD_CREATES_IN_FLIGHT_MAX);
    let started = Instant::now();
    let world_id = WorldId(*b"bench ckpt step!");
    let marker = Bytes::from(Marker::new(world_id, StoreId(1)).encode());
    let marker_hash = Hash32::of(&marker);
    sink.create(keys.marker(), marker).await?;
    sink.create(keys.checkpoint(1), Bytes::from(Checkpoint::zero(world_id, marker_hash).encode())).await?;
    let mut world = WorldState::genesis(world_id, marker_hash);
    eprintln!("building {} documents", args.docs);
    let mut next_op = 0u64;
    let mut doc = 0u64;
    while doc < args.docs {
        let end = (doc + SLOT_MEMBERS_MAX as u64).min(args.docs);
        let writes = (doc..end)
            .map(|i| {
                next_op += 1;
                let mutation = Mutation::Publish {
                    path: path_of(i),
                    body: body_of(i, 0),
                    catalog: None,
                    expected: Expected::Absent,
                };
                (op_id(next_op), mutation)
            })
            .collect();
        commit_slot(&mut world, &keys, &mut sink, writes).await?;
        doc = end;
    }
    sink.drain().await?;
    eprintln!("writing the full checkpoint at sequence {}", world.sequence());
    let full = fold(&world, &|_| None).expect("a world built in memory holds every version");
    for (path, blocks, through) in &full.adopt {
        world.adopt_history(path, blocks, *through);
    }
    let stored: BTreeSet<Hash32> = full.objects.iter().map(|o| o.name).collect();
    let layers = Layers::of(&full.root);
    let (_, full_bytes) = create(&blobs, &keys, &full, &BTreeSet::new(), true).await?;
    let build_s = started.elapsed().as_secs_f64();
    drop(full);

    eprintln!("changing {} documents spread over the world", args.changed);
    let mut k = 0u64;
    while k < args.changed {
        let end = (k + SLOT_MEMBERS_MAX as u64).min(args.changed);
        let writes = (k..end)
            .map(|j| {
                next_op += 1;
                // A permutation of the documents while `docs` is prime to the multiplier.
                let i = j.wrapping_mul(2_654_435_761) % args.docs;
                let mutation = Mutation::Publish {
                    path: path_of(i),
                    body: body_of(i, 1),
                    catalog: None,
                    expected: Expected::Any,
                };
                (op_id(next_op), mutation)
            })
            .collect();
        commit_slot(&mut world, &keys, &mut sink, writes).await?;
        k = end;
    }
    sink.drain().await?;
    let open_before_step = if args.no_open {
        None
    } else {
        eprintln!("opening the world before the step");
        Some(open_in_child(dir, None)?)
    };

    let rule = MergeRule::of(&Config::default());
    let mut blocks: BTreeMap<Hash32, HistoryBlock> = BTreeMap::new();
    eprintln!("the step over the full checkpoint, as the compactor takes it");
    let step = run_step(&blobs, &keys, &world, (&layers, rule), &stored, &mut blocks, true).await?;
    eprintln!("the same step as a merge (every shard anew)");
    let no_deltas = MergeRule { deltas_max: 0, ..rule };
    let mut merge_blocks = BTreeMap::new();
    let merge =
        run_step(&blobs, &keys, &world, (&layers, no_deltas), &stored, &mut merge_blocks, false).await?;
    let open_after_step = if args.no_open {
        None
    } else {
        eprintln!("opening the world from the step's checkpoint");
        Some(open_in_child(dir, None)?)
    };
    Ok(Report {
        docs: args.docs,
        changed: args.changed,
        shards: layers.shards.len(),
        build_s,
        full_checkpoint_mb: full_bytes as f64 / 1e6,
        step,
        merge,
        open_after_step,
        open_before_step,
    })
}

/// One step over `base`: folds (reading the stored blocks it needs from the disk), then
/// creates what `stored` lacks, the checkpoint object last when `with_checkpoint`.
async fn run_step(
    blobs: &Arc<ObjectStoreBlobs>,
    keys: &Keys,
    world: &WorldState,
    base: (&Layers, MergeRule),
    stored: &BTreeSet<Hash32>,
    blocks: &mut BTreeMap<Hash32, HistoryBlock>,
    with_checkpoint: bool,
) -> Result<Step, String> {
    let started = Instant::now();
    let mut fold_s = 0.0;
    let mut history_blocks_read = 0;
    let folded = loop {
        let fold_started = Instant::now();
        let folded = fold_over(world, Some(base), &|h| blocks.get(h));
        fold_s += fold_started.elapsed().as_secs_f64();
        match folded {
            Ok(folded) => break folded,
            Err(FoldError::NeedBlocks(needed)) => {
                history_blocks_read += needed.len() as u64;
                read_blocks(blobs, keys, needed, blocks).await?;
            }
            Err(FoldError::Disagrees(p)) => return Err(format!("a stored block disagrees: {p:?}")),
        }
    };
    let (created, bytes) = create(blobs, keys, &folded, stored, with_checkpoint).await?;
    let mut by_kind: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for o in folded.objects.iter().filter(|o| !stored.contains(&o.name)) {
        let e = by_kind.entry(format!("{:?}", o.kind).to_lowercase()).or_default();
        e.0 += 1;
        e.1 += o.bytes.len() as u64;
    }
    let checkpoint_bytes = folded.checkpoint.encode().len() as u64;
    let e = by_kind.entry("checkpoint".into()).or_default();
    e.0 += 1;
    e.1 += checkpoint_bytes;
    Ok(Step {
        uploaded_mb: (bytes + if with_checkpoint { 0 } else { checkpoint_bytes }) as f64 / 1e6,
        objects_created: created + u64::from(!with_checkpoint),
        step_s: started.elapsed().as_secs_f64(),
        fold_s,
        history_blocks_read,
        created: by_kind,
        deltas: folded.root.deltas.len(),
        delta_entries: folded.root.delta_entries(),
    })
}

/// Reads and decodes stored history blocks, as many in flight as the compactor allows.
async fn read_blocks(
    blobs: &Arc<ObjectStoreBlobs>,
    keys: &Keys,
    needed: Vec<Hash32>,
    blocks: &mut BTreeMap<Hash32, HistoryBlock>,
) -> Result<(), String> {
    let in_flight_max = Config::default().checkpoint_reads_in_flight_max;
    let mut tasks = tokio::task::JoinSet::new();
    let mut needed = needed.into_iter();
    loop {
        while tasks.len() < in_flight_max {
            let Some(name) = needed.next() else { break };
            let (blobs, key) = (blobs.clone(), keys.history(&name));
            tasks.spawn(async move { (name, blobs.execute(BlobOp::Get { key }).await) });
        }
        let Some(done) = tasks.join_next().await else { return Ok(()) };
        let (name, result) = done.map_err(|e| e.to_string())?;
        let Ok(BlobOutcome::Got { bytes, .. }) = result else {
            return Err(format!("read {name}: {result:?}"));
        };
        let block = HistoryBlock::decode_named(&bytes, &name).map_err(|e| e.to_string())?;
        blocks.insert(name, block);
    }
}

/// Creates the fold's objects `stored` lacks, each level once the one it names is stored,
/// then (if asked) the checkpoint object. Returns the objects created and their bytes.
pub(crate) async fn create(
    blobs: &Arc<ObjectStoreBlobs>,
    keys: &Keys,
    folded: &Folded,
    stored: &BTreeSet<Hash32>,
    with_checkpoint: bool,
) -> Result<(u64, u64), String> {
    let mut sink = Sink::new(blobs.clone(), Config::default().checkpoint_creates_in_flight_max);
    let (mut count, mut bytes) = (0u64, 0u64);
    let mut stage = ObjectKind::History;
    for object in folded.objects.iter().filter(|o| !stored.contains(&o.name)) {
        if level(object.kind) != level(stage) {
            sink.drain().await?;
            stage = object.kind;
        }
        count += 1;
        bytes += object.bytes.len() as u64;
        sink.create(object.key(keys), object.bytes.clone()).await?;
    }
    sink.drain().await?;
    if with_checkpoint {
        let checkpoint = Bytes::from(folded.checkpoint.encode());
        count += 1;
        bytes += checkpoint.len() as u64;
        sink.create(keys.checkpoint(folded.checkpoint.next_sequence), checkpoint).await?;
        sink.drain().await?;
    }
    Ok((count, bytes))
}

impl Report {
    pub fn text(&self) -> String {
        let row = |name: &str, s: &Step| {
            format!(
                "  {name:<6} uploaded {:>8.2} MB in {:>6} objects, {:>6.2} s (fold {:.2} s, {} blocks read), {} deltas of {} entries\n",
                s.uploaded_mb, s.objects_created, s.step_s, s.fold_s, s.history_blocks_read, s.deltas, s.delta_entries
            )
        };
        let mut out = format!(
            "checkpoint step: {} documents ({} shards), {} changed; full checkpoint {:.1} MB, built in {:.1} s\n",
            self.docs, self.shards, self.changed, self.full_checkpoint_mb, self.build_s
        );
        out.push_str(&row("step", &self.step));
        out.push_str(&row("merge", &self.merge));
        for (name, open) in [("before", &self.open_before_step), ("after", &self.open_after_step)] {
            if let Some(o) = open {
                out.push_str(&format!(
                    "  open {name:<6} {:.2} s, peak RSS {:.0} MiB, CPU {:.2} s\n",
                    o.open_s, o.peak_rss_mb, o.cpu_s
                ));
            }
        }
        out
    }
}
