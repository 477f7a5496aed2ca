//! `slotlog bench search`: how long a replica that just opened a large world takes to
//! answer a body search from bodies, how much memory its index holds, and how fast it
//! answers once built (issue 20).
//!
//! The parent builds a world of word bodies in a local directory as `bench cold-start`
//! does (the marker, checkpoint zero, slots of 256 creates with their body blobs, the
//! full checkpoint `fold` makes), then the body segment of every shard label, as a
//! compactor writing that checkpoint would (SPEC 10.17; `--no-segments` leaves them out,
//! so the index reads one blob per body). A separate process (the hidden `search-open`) opens it
//! with the production driver, searches at once and every 100 ms until an answer comes
//! from bodies, then runs a fixed query set; so its memory is the opening's and the
//! index's alone.

use super::bench_checkpoint_step::create;
use super::bench_cold_start::{
    commit_slot, local_blobs, op_id, path_of, report_of_child, Sink, WorldDir, BUILD_CREATES_IN_FLIGHT_MAX,
    MIB,
};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use slotlog::{Answer, SearchMatch, World, WorldConfig};
use slotlog_kernel::checkpoint::fold;
use slotlog_kernel::format::{
    segment_window, shard_of, Checkpoint, Keys, Marker, SegmentBody, SegmentName, SLOT_MEMBERS_MAX,
};
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::{StoreId, WorldId};
use slotlog_kernel::world::{Expected, Mutation, Path as DocPath, WorldState};
use slotlog_kernel::CompactionRole;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The world's prefix inside the directory.
const PREFIX: &str = "worlds/search";
/// Distinct words bodies are drawn from.
const VOCABULARY: u64 = 4_096;
/// Queries in the timed set.
const QUERIES: usize = 200;

pub struct Args {
    pub docs: u64,
    pub dir: Option<PathBuf>,
    pub keep: bool,
    /// Write no body segments.
    pub no_segments: bool,
}

/// Word `rank` of the vocabulary: rank 0 is the commonest.
fn word(rank: u64) -> String {
    const SYLLABLES: [&str; 16] =
        ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ba", "de", "fo", "gu", "he", "ji", "pe", "zu"];
    let mut w = String::new();
    let mut n = rank + 16;
    while n > 0 {
        w.push_str(SYLLABLES[(n % 16) as usize]);
        n /= 16;
    }
    w
}

/// A deterministic number in [0, 1) from `seed`.
fn unit(seed: u64) -> f64 {
    let h = Hash32::of(&seed.to_le_bytes());
    u64::from_le_bytes(h.0[..8].try_into().expect("8 bytes")) as f64 / (u64::MAX as f64 + 1.0)
}

/// A rank drawn with a Zipf-like skew (log-uniform): rank r about as likely as 1/(r+1).
fn skewed_rank(seed: u64) -> u64 {
    ((VOCABULARY as f64).powf(unit(seed)) as u64).saturating_sub(1).min(VOCABULARY - 1)
}

/// Document `i`'s body: 200 to 2,000 bytes of skewed words, deterministic.
pub fn body_of(i: u64) -> Bytes {
    let len = 200 + (unit(i ^ 0x5eed) * 1_801.0) as usize;
    let mut text = String::with_capacity(len + 16);
    let mut n = 0u64;
    while text.len() < len {
        text.push_str(&word(skewed_rank(i.wrapping_mul(1_000_003).wrapping_add(n))));
        text.push(' ');
        n += 1;
    }
    text.truncate(len);
    Bytes::from(text)
}

/// The timed queries: rare and common words, two-word ANDs, and phrases taken from
/// bodies (so they match).
fn queries(docs: u64) -> Vec<String> {
    (0..QUERIES as u64)
        .map(|q| match q % 4 {
            0 => word(VOCABULARY - 1 - q),
            1 => word(q % 8),
            2 => format!("{} {}", word(q % 32), word(100 + q)),
            _ => {
                let body = body_of((q * 7_919) % docs);
                let text = String::from_utf8_lossy(&body);
                let words: Vec<&str> = text.split(' ').collect();
                format!("\"{} {}\"", words[1], words[2])
            }
        })
        .collect()
}

/// What the searching process measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SearchReport {
    /// From `World::open`'s call until it returned.
    pub open_s: f64,
    /// From the first search until a search answered from bodies.
    pub first_body_answer_s: f64,
    /// Searches answered from the catalog before that.
    pub catalog_answers_before: u64,
    /// VmRSS right after the open, and after the first body answer, MiB.
    pub rss_open_mb: f64,
    pub rss_indexed_mb: f64,
    /// The difference: what the index and its reads cost the process, MiB.
    pub resident_mb: f64,
    /// The index's own count of its bytes, MiB.
    pub index_mb: f64,
    pub bodies_indexed: u64,
    /// The timed query set, one at a time with limit 20: latency and hits.
    pub queries: usize,
    pub query_p50_ms: f64,
    pub query_p99_ms: f64,
    pub query_max_ms: f64,
    pub hits_mean: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub docs: u64,
    pub body_mb: f64,
    pub build_s: f64,
    pub checkpoint_s: f64,
    /// Segment parts written (0 with `--no-segments`) and how long they took.
    pub segment_parts: u64,
    pub segments_s: f64,
    #[serde(flatten)]
    pub search: SearchReport,
}

/// Builds the world, searches it from a child process, and reports.
pub fn run(args: &Args) -> (Result<Report, String>, Option<WorldDir>) {
    if args.docs == 0 {
        return (Err("--docs must be at least 1".into()), None);
    }
    let dir = match WorldDir::prepare(args.dir.as_deref(), args.keep, "search") {
        Ok(dir) => dir,
        Err(e) => return (Err(e), None),
    };
    (run_in(args, &dir.path), Some(dir))
}

fn run_in(args: &Args, dir: &Path) -> Result<Report, String> {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    let built = runtime.block_on(build(args.docs, dir, !args.no_segments))?;
    drop(runtime);
    eprintln!("searching from a separate process");
    let docs = args.docs.to_string();
    let search = report_of_child(&[
        "search-open".as_ref(),
        "--docs".as_ref(),
        docs.as_ref(),
        "--dir".as_ref(),
        dir.as_os_str(),
    ])?;
    let Built { body_mb, build_s, checkpoint_s, segment_parts, segments_s } = built;
    Ok(Report { docs: args.docs, body_mb, build_s, checkpoint_s, segment_parts, segments_s, search })
}

struct Built {
    body_mb: f64,
    build_s: f64,
    checkpoint_s: f64,
    segment_parts: u64,
    segments_s: f64,
}

async fn build(docs: u64, dir: &Path, segments: bool) -> Result<Built, String> {
    let keys = Keys::new(PREFIX);
    let blobs = local_blobs(dir)?;
    let mut sink = Sink::new(blobs.clone(), BUILD_CREATES_IN_FLIGHT_MAX);
    let world_id = WorldId(*b"bench search 001");
    let marker = Bytes::from(Marker::new(world_id, StoreId(1)).encode());
    let marker_hash = Hash32::of(&marker);
    sink.create(keys.marker(), marker).await?;
    sink.create(keys.checkpoint(1), Bytes::from(Checkpoint::zero(world_id, marker_hash).encode())).await?;
    let mut world = WorldState::genesis(world_id, marker_hash);
    eprintln!("building {docs} documents of words");
    let started = Instant::now();
    let mut body_bytes = 0u64;
    let mut doc = 0u64;
    while doc < docs {
        let end = (doc + SLOT_MEMBERS_MAX as u64).min(docs);
        let writes = (doc..end)
            .map(|i| {
                let body = body_of(i);
                body_bytes += body.len() as u64;
                (
                    op_id(i + 1),
                    Mutation::Publish { path: path_of(i), body, catalog: None, expected: Expected::Absent },
                )
            })
            .collect();
        commit_slot(&mut world, &keys, &mut sink, writes).await?;
        doc = end;
    }
    sink.drain().await?;
    let build_s = started.elapsed().as_secs_f64();
    eprintln!("folding and writing the checkpoint at sequence {}", world.sequence());
    let started = Instant::now();
    let folded = fold(&world, &|_| None).expect("a world built in memory holds every version");
    create(&blobs, &keys, &folded, &BTreeSet::new(), true).await?;
    let checkpoint_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let segment_parts =
        if segments { write_segments(docs, folded.root.shard_bits, &keys, &mut sink).await? } else { 0 };
    let segments_s = started.elapsed().as_secs_f64();
    Ok(Built { body_mb: body_bytes as f64 / MIB, build_s, checkpoint_s, segment_parts, segments_s })
}

/// Writes the segments of the kept world in `dir` again, in the current window, for its
/// checkpoint's layout (4,096 labels at a million documents, as `build` writes them).
pub async fn rewrite_segments(dir: &Path, docs: u64) -> Result<u64, String> {
    let blobs = local_blobs(dir)?;
    let mut sink = Sink::new(blobs, BUILD_CREATES_IN_FLIGHT_MAX);
    let bits = slotlog_kernel::format::shard_bits_for(docs);
    write_segments(docs, bits, &Keys::new(PREFIX), &mut sink).await
}

/// The segment of every label of a `bits` layout, in the current window: every part but
/// part 0 first, then the part 0s, so a listed part 0 names a whole segment.
async fn write_segments(docs: u64, bits: u8, keys: &Keys, sink: &mut Sink) -> Result<u64, String> {
    eprintln!("writing the body segments of {} labels", 1u64 << bits);
    let mut by_label: Vec<Vec<u64>> = vec![Vec::new(); 1 << bits];
    for i in 0..docs {
        let path = DocPath::parse(&path_of(i)).map_err(|e| format!("{e:?}"))?;
        by_label[shard_of(&path, bits) as usize].push(i);
    }
    let now_ms =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_err(|e| e.to_string())?;
    let window = segment_window(now_ms.as_millis() as u64);
    let mut firsts = Vec::new();
    let mut written = 0;
    for (label, members) in by_label.into_iter().enumerate() {
        let bodies = members.into_iter().map(|i| {
            let body = body_of(i).to_vec();
            SegmentBody { hash: Hash32::of(&body), body }
        });
        let parts = slotlog_kernel::search::segment_parts(bodies)
            .ok_or("a label's bodies past the parts a segment holds")?;
        for part in parts {
            let name = SegmentName { bits, label: label as u32, window, part: part.part };
            let bytes = Bytes::from(part.encode());
            written += 1;
            if part.part == 0 {
                firsts.push((keys.segment(&name), bytes));
            } else {
                sink.create(keys.segment(&name), bytes).await?;
            }
        }
    }
    sink.drain().await?;
    for (key, bytes) in firsts {
        sink.create(key, bytes).await?;
    }
    sink.drain().await?;
    Ok(written)
}

/// The child: open the world in `dir`, search until bodies answer, then time the set.
pub async fn search_open(dir: &Path, docs: u64) -> Result<SearchReport, String> {
    let blobs = local_blobs(dir)?;
    let mut config = WorldConfig::default();
    config.kernel.compaction = CompactionRole::Off;
    let start = Instant::now();
    let world = World::open_on(blobs, PREFIX, config).await.map_err(|e| e.to_string())?;
    let mut report = SearchReport { open_s: start.elapsed().as_secs_f64(), ..SearchReport::default() };
    report.rss_open_mb = rss_mb();
    let first = Instant::now();
    loop {
        let ok = world.search(&word(0), None, 20).await.map_err(|e| e.to_string())?;
        if matches!(ok.answer, Answer::Search { matched: SearchMatch::Body, .. }) {
            break;
        }
        // Asked again at once: a search itself waits (`search_wait`, a second) for an
        // index covering its state and answers the moment one does, as a user's would.
        // A pause here would add up to its length to the figure.
        report.catalog_answers_before += 1;
    }
    report.first_body_answer_s = first.elapsed().as_secs_f64();
    report.rss_indexed_mb = rss_mb();
    report.resident_mb = report.rss_indexed_mb - report.rss_open_mb;
    let stats = world.stats().await.map_err(|e| e.to_string())?;
    report.index_mb = stats.search_index_bytes as f64 / MIB;
    report.bodies_indexed = stats.search.bodies_indexed;
    let mut latencies = hdrhistogram::Histogram::<u64>::new(3).expect("a histogram");
    let mut hits = 0usize;
    let set = queries(docs);
    for q in &set {
        let t = Instant::now();
        let ok = world.search(q, None, 20).await.map_err(|e| e.to_string())?;
        latencies.record(t.elapsed().as_micros() as u64).expect("in range");
        match ok.answer {
            Answer::Search { entries, matched: SearchMatch::Body, .. } => hits += entries.len(),
            other => return Err(format!("{q:?} answered {other:?} once the index was built")),
        }
    }
    report.queries = set.len();
    report.query_p50_ms = latencies.value_at_quantile(0.5) as f64 / 1_000.0;
    report.query_p99_ms = latencies.value_at_quantile(0.99) as f64 / 1_000.0;
    report.query_max_ms = latencies.max() as f64 / 1_000.0;
    report.hits_mean = hits as f64 / set.len() as f64;
    world.close().await;
    Ok(report)
}

fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    kib as f64 / 1024.0
}

impl Report {
    pub fn text(&self) -> String {
        let s = &self.search;
        format!(
            "search: {} documents, {:.1} MiB of bodies (build {:.1} s, checkpoint {:.1} s, {} segment parts {:.1} s)\n\
             \x20 open               {:.2} s, RSS {:.0} MiB\n\
             \x20 first body answer  {:.2} s after the first search ({} catalog answers before)\n\
             \x20 resident           {:.0} MiB more (index counts {:.0} MiB, {} bodies)\n\
             \x20 queries            {} at p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms, {:.1} hits each\n",
            self.docs,
            self.body_mb,
            self.build_s,
            self.checkpoint_s,
            self.segment_parts,
            self.segments_s,
            s.open_s,
            s.rss_open_mb,
            s.first_body_answer_s,
            s.catalog_answers_before,
            s.resident_mb,
            s.index_mb,
            s.bodies_indexed,
            s.queries,
            s.query_p50_ms,
            s.query_p99_ms,
            s.query_max_ms,
            s.hits_mean,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_deterministic_words_of_the_lengths_asked() {
        for i in [0, 1, 77, 123_456] {
            let b = body_of(i);
            assert_eq!(b, body_of(i));
            assert!((200..=2_000).contains(&b.len()), "{}", b.len());
            assert!(b.iter().all(|c| c.is_ascii_lowercase() || *c == b' '));
        }
        assert_ne!(body_of(1), body_of(2));
        // Skewed: the commonest word is in most bodies, a rare one in few.
        let with = |w: &str| {
            (0..200).filter(|i| String::from_utf8_lossy(&body_of(*i)).split(' ').any(|x| x == w)).count()
        };
        assert!(with(&word(0)) > 150 && with(&word(VOCABULARY - 1)) < 20);
        assert_eq!(queries(1_000).len(), QUERIES);
    }
}
