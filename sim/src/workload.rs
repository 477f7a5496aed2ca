//! What simulated clients ask for: arrivals (open or closed loop) and a mix of mutations
//! drawn against what the clients have learned of the world from their answers.

use crate::rng::SimRng;
use crate::time::micros;
use bytes::Bytes;
use core::time::Duration;
use rustc_hash::FxHashMap;
use slotlog_kernel::ids::OperationId;
use slotlog_kernel::reply::{WriteError, WriteOk};
use slotlog_kernel::time::Instant;
use slotlog_kernel::world::{Expected, Mutation, PolicyBody, Rejection, Write};
use std::collections::VecDeque;

/// How requests arrive.
#[derive(Clone, Debug, PartialEq)]
pub enum Arrivals {
    /// Poisson arrivals at this total rate, each to a replica drawn evenly among the live.
    Open {
        /// Writes a second, all replicas together.
        rate_per_s: f64,
    },
    /// This many writers per replica, each sending its next write when the last is answered.
    Closed {
        /// Writers on each replica.
        writers_per_replica: usize,
    },
}

/// Relative weights of each kind of write.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mix {
    /// Publish to a new path.
    pub create: u32,
    /// Publish a new body to a known path, no precondition.
    pub blind_update: u32,
    /// Publish to a known path expecting the version last seen.
    pub expected_update: u32,
    /// Append to a known path.
    pub append: u32,
    /// Archive or unarchive a known path.
    pub archive_flip: u32,
    /// Change retention or the read-only prefixes.
    pub policy_flip: u32,
    /// Create a parent or a child of a small set of path pairs (`/pc/k.md`, `/pc/k.md/c.md`).
    pub parent_child: u32,
    /// Publish the body last seen again (an unchanged write when nobody wrote since).
    pub republish: u32,
}

impl Mix {
    /// The record's model: 30% creates, 70% blind updates.
    pub fn creates_and_blind_updates() -> Mix {
        Mix { create: 30, blind_update: 70, ..Mix::default() }
    }

    /// Every kind of write, for contention on a few documents.
    pub fn contended() -> Mix {
        Mix {
            create: 8,
            blind_update: 12,
            expected_update: 26,
            append: 18,
            archive_flip: 8,
            policy_flip: 4,
            parent_child: 14,
            republish: 10,
        }
    }

    fn total(&self) -> u32 {
        self.create
            + self.blind_update
            + self.expected_update
            + self.append
            + self.archive_flip
            + self.policy_flip
            + self.parent_child
            + self.republish
    }
}

/// Reads sent at random to every replica, followers included.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadLoad {
    /// Poisson rates, per second in total: fetch, versions and receipt reads...
    pub exact_per_s: f64,
    /// ...and lookup, list and hash lookup reads.
    pub catalog_per_s: f64,
    /// Whether exact reads go to followers too (else to writing replicas only).
    pub exact_on_followers: bool,
}

/// Views: clients that pin one state and read it several times (`World::view`).
#[derive(Clone, Debug, PartialEq)]
pub struct ViewLoad {
    /// Poisson rate of new views, per second in total.
    pub per_s: f64,
    /// Reads one view makes: between 1 and this many, drawn uniformly.
    pub reads_max: u64,
    /// The longest wait between one read's answer and the next read, drawn uniformly.
    pub gap_max: Duration,
}

/// Watchers: subscribers that connect, take events, disconnect and resume from cursors.
#[derive(Clone, Debug, PartialEq)]
pub struct WatchLoad {
    /// Watchers per replica (followers included).
    pub per_node: usize,
    /// Mean length of one connection, and the longest pause before the next.
    pub session_mean: Duration,
    /// See `session_mean`.
    pub pause_max: Duration,
    /// Events a watcher takes at a time, and how long it takes to consume them (a slow
    /// watcher gives credit back late).
    pub credit: u32,
    /// See `credit`.
    pub consume_max: Duration,
    /// How often a resume asks for an older cursor than it last saw (past the ring, or
    /// past the newest slots), and how far back at most.
    pub old_cursor_rate: f64,
    /// See `old_cursor_rate`.
    pub old_cursor_back_max: u64,
    /// Watchers connect only to the replicas that take no writes (a watch-only follower),
    /// `per_node` for each of them.
    pub followers_only: bool,
    /// When set, the checker holds every watch to the watch delivery rule: each event
    /// within the kernel's `watch_poll` plus this slack of its slot's creation. The slack
    /// covers the probe's own calls (a stat and a read per slot found) and delivery.
    pub delivery_slack: Option<Duration>,
}

/// What the clients write, and when.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// How writes arrive.
    pub arrivals: Arrivals,
    /// The kinds of writes, by weight.
    pub mix: Mix,
    /// Body sizes, uniform in this inclusive range.
    pub body_bytes_min: u32,
    /// See `body_bytes_min`.
    pub body_bytes_max: u32,
    /// When set, creates draw from this many paths only (so they collide), and updates go
    /// to the known documents among them.
    pub hot_paths: Option<u32>,
    /// Parent/child pairs the `parent_child` writes race over.
    pub parent_child_pairs: u32,
    /// When set, open-loop writes and reads arrive only in bursts, with idle time between
    /// (which the simulator skips, so hours cost little).
    pub bursts: Option<Bursts>,
    /// Bodies are words of a small vocabulary (for body search), not random bytes.
    pub word_bodies: bool,
    /// The share of catalog reads (and of a view's reads) that are body searches.
    pub search_share: f64,
}

/// Bursts of arrivals: `on` of load, then `off` of none, from time zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bursts {
    /// How long each burst of load lasts.
    pub on: Duration,
    /// How long the quiet after it lasts.
    pub off: Duration,
}

impl Bursts {
    /// None while a burst is on at `now`; else when the next one starts.
    pub fn next_start(&self, now: Instant) -> Option<Instant> {
        let (on_us, period_us) = (micros(self.on), micros(self.on + self.off));
        let now_us = now.as_micros();
        let into_us = now_us % period_us;
        (into_us >= on_us).then(|| Instant::from_micros(now_us - into_us + period_us))
    }
}

impl Workload {
    /// Writes arriving as `arrivals` says, of the kinds `mix` weighs, with the default
    /// body sizes and no hot paths or bursts.
    pub fn new(arrivals: Arrivals, mix: Mix) -> Workload {
        Workload {
            arrivals,
            mix,
            body_bytes_min: 256,
            body_bytes_max: 2_048,
            hot_paths: None,
            parent_child_pairs: 8,
            bursts: None,
            word_bodies: false,
            search_share: 0.0,
        }
    }
}

/// What clients believe of one document: the last version they heard of.
#[derive(Clone, Debug)]
struct Known {
    version: u64,
    archived: bool,
    /// The body of that version, by its recipe (nonce, length).
    body: Option<(u64, u32)>,
}

/// Draws writes and learns from their answers. One per run, shared by all clients, so
/// that clients on different replicas aim at the same documents.
pub struct Generator {
    workload: Workload,
    rng: SimRng,
    next_op: u64,
    next_doc: u64,
    next_nonce: u64,
    /// Paths some answer showed exist, with what was last heard of them. Looked up,
    /// never walked (`known_order` keeps the order picks draw from): a hash map.
    known: FxHashMap<String, Known>,
    known_order: Vec<String>,
    policy_version: u64,
    read_only: bool,
    /// Body recipes of publishes not yet answered, so an answer can teach the body too.
    recipes: FxHashMap<OperationId, (u64, u32)>,
    /// Writes answered `Uncertain`, with the first sequence each could commit at: receipt
    /// reads settle them the way a caller would (SPEC 10.13). The newest are kept.
    uncertain: VecDeque<(OperationId, u64)>,
}

/// Uncertain writes a generator remembers to settle.
const UNCERTAIN_REMEMBERED_MAX: usize = 64;

/// Op ids of generated writes are counted from here; preloaded ones from 1.
const GENERATED_OP_BASE: u128 = 1 << 64;

impl Generator {
    /// The writes of `workload`, drawn from `seed`.
    pub fn new(workload: Workload, seed: u64) -> Generator {
        Generator {
            workload,
            rng: SimRng::derive(seed, "slotlog-sim workload"),
            next_op: 0,
            next_doc: 0,
            next_nonce: 1,
            known: FxHashMap::default(),
            known_order: Vec::new(),
            policy_version: 0,
            read_only: false,
            recipes: FxHashMap::default(),
            uncertain: VecDeque::new(),
        }
    }

    /// The body a recipe stands for: deterministic bytes, cheap to make again. SplitMix64
    /// from the nonce: bodies need only differ, and a blake3 XOF (or ChaCha8) over them
    /// was 7% of a `single` run.
    pub fn body(&self, nonce: u64, len: u32) -> Bytes {
        let mut out = vec![0u8; len as usize];
        let mut state = nonce.wrapping_mul(GOLDEN_GAMMA);
        // Each word is assigned as an array: `copy_from_slice` went through a stack copy
        // and the overlap check `debug-assertions` keep in release builds, 28
        // instructions a word (4% of `single`).
        let mut chunks = out.chunks_exact_mut(8);
        for chunk in &mut chunks {
            state = state.wrapping_add(GOLDEN_GAMMA);
            let word: &mut [u8; 8] = chunk.try_into().expect("chunks of eight bytes");
            *word = splitmix64_mix(state).to_le_bytes();
        }
        let tail = chunks.into_remainder();
        state = state.wrapping_add(GOLDEN_GAMMA);
        tail.copy_from_slice(&splitmix64_mix(state).to_le_bytes()[..tail.len()]);
        if self.workload.word_bodies {
            out = words_of(&out);
        }
        Bytes::from(out)
    }

    fn fresh_body(&mut self) -> (u64, u32, Bytes) {
        let nonce = self.next_nonce;
        self.next_nonce += 1;
        let span = u64::from(self.workload.body_bytes_max - self.workload.body_bytes_min) + 1;
        let len = self.workload.body_bytes_min + self.rng.below(span) as u32;
        (nonce, len, self.body(nonce, len))
    }

    /// Documents written before the run, so updates have something to aim at.
    pub fn preload(&mut self, count: usize) -> Vec<(Write, Bytes)> {
        (0..count)
            .map(|i| {
                let path = format!("/seed/{i:06}.md");
                let (nonce, len, body) = self.fresh_body();
                self.learn(&path, 1, Some(false), Some((nonce, len)));
                let op_id = OperationId::from(i as u128 + 1);
                let m =
                    Mutation::Publish { path, body: body.clone(), catalog: None, expected: Expected::Any };
                (Write { op_id, mutation: m }, body)
            })
            .collect()
    }

    /// A read of what clients know: exact reads of known paths and recent operation ids,
    /// catalog reads of prefixes, directories and known bodies.
    pub fn next_read(&mut self, exact: bool) -> slotlog_kernel::Read {
        use slotlog_kernel::Read;
        if self.known_order.is_empty() {
            return Read::List { directory: "/".into(), start_after: None, limit: 50 };
        }
        // No draw unless searches are configured, so other runs keep their traces.
        if !exact && self.workload.search_share > 0.0 && self.rng.chance(self.workload.search_share) {
            return self.next_search();
        }
        let path = self.known_path();
        let kind = self.rng.below(3);
        if exact {
            match kind {
                0 => {
                    let k = &self.known[&path];
                    let version =
                        (k.version > 1 && self.rng.chance(0.3)).then(|| 1 + self.rng.below(k.version));
                    Read::Fetch { path, version }
                }
                // One in five asks whether the document's directory is one, at the tip.
                1 if path.len().is_multiple_of(5) => Read::IsDirectory {
                    path: path.rfind('/').map_or("/".into(), |i| path[..i.max(1)].to_string()),
                },
                1 => Read::Versions { path },
                // Settle an uncertain write with its `since`, as a caller does; no random
                // draw while none is waiting, so runs without one keep their trace.
                _ if !self.uncertain.is_empty() && self.rng.chance(0.5) => {
                    let (op_id, since) = self.uncertain[self.rng.below(self.uncertain.len() as u64) as usize];
                    Read::Receipt { op_id, since: Some(since) }
                }
                _ => {
                    let back = 1 + self.rng.below(self.next_op.clamp(1, 200));
                    let n = self.next_op.saturating_sub(back) + 1;
                    Read::Receipt { op_id: OperationId::from(GENERATED_OP_BASE + u128::from(n)), since: None }
                }
            }
        } else {
            match kind {
                0 => {
                    let cut = path.len().saturating_sub(1 + self.rng.below(6) as usize).max(1);
                    let prefix = path[..cut].to_string();
                    // Every other lookup pages on after a known path, as a caller reading
                    // page after page does. Chosen from the path, not drawn, so a run's
                    // writes and timing stay as they were.
                    let start_after = (cut % 2 == 1).then(|| path.clone());
                    Read::Lookup { prefix, start_after, limit: 20 }
                }
                1 => {
                    let directory = match path.rfind('/') {
                        Some(0) | None => "/".to_string(),
                        Some(i) => path[..i].to_string(),
                    };
                    // Every other listing pages on after a known document (a cursor as the
                    // previous page's `next` would be), chosen from the path, not drawn.
                    let start_after = path.len().is_multiple_of(2).then(|| path.clone());
                    Read::List { directory, start_after, limit: 50 }
                }
                _ => match self.known[&path].body {
                    Some((nonce, len)) => {
                        let hash = slotlog_kernel::Hash32::of(&self.body(nonce, len));
                        // Every other one after a prefix of a path holding it.
                        let start_after =
                            path.len().is_multiple_of(2).then(|| path[..path.len() / 2].to_string());
                        Read::HashLookup { hash, start_after, limit: 20 }
                    }
                    None => Read::List { directory: "/".into(), start_after: None, limit: 50 },
                },
            }
        }
    }

    /// A body search: one to three words of the vocabulary, a two-word phrase, a word of
    /// the paths (which the catalog matches too), or a record's tag and a word (a tag the
    /// catalog alone can match); paged on after a known path at times.
    fn next_search(&mut self) -> slotlog_kernel::Read {
        let word = |g: &mut Generator| VOCABULARY[g.rng.below(VOCABULARY.len() as u64) as usize];
        let query = match self.rng.below(7) {
            0 => format!("\"{} {}\"", word(self), word(self)),
            1 => "seed".to_string(),
            6 => {
                let tag = RECORD_TAGS[self.rng.below(RECORD_TAGS.len() as u64) as usize];
                format!("{tag} {}", word(self))
            }
            2 => format!("{} {}", word(self), word(self)),
            3 => format!("{} {} {}", word(self), word(self), word(self)),
            _ => word(self).to_uppercase(),
        };
        let start_after = self.rng.chance(0.3).then(|| self.known_path());
        slotlog_kernel::Read::Search { query, start_after, limit: 1 + self.rng.below(40) as u32 }
    }

    /// A read of a view: either class, of what clients know. No receipt read: a view's
    /// receipts are answered from the served window (see `views.rs`), which the model's
    /// window at the pin need not match.
    pub fn next_view_read(&mut self) -> slotlog_kernel::Read {
        let exact = self.rng.chance(0.5);
        match self.next_read(exact) {
            slotlog_kernel::Read::Receipt { .. } => {
                let path = self.known_path();
                slotlog_kernel::Read::Versions { path }
            }
            read => read,
        }
    }

    /// The next write a client sends, with a fresh operation id.
    pub fn next_write(&mut self) -> Write {
        self.next_op += 1;
        let op_id = OperationId::from(GENERATED_OP_BASE + u128::from(self.next_op));
        let (mutation, recipe) = self.next_mutation();
        if let Some(recipe) = recipe {
            self.recipes.insert(op_id, recipe);
        }
        Write { op_id, mutation }
    }

    /// A mutation, and the recipe of the body it publishes.
    fn next_mutation(&mut self) -> (Mutation, Option<(u64, u32)>) {
        let mix = self.workload.mix.clone();
        let mut pick = self.rng.below(u64::from(mix.total().max(1))) as u32;
        let mut take = |w: u32| {
            if pick < w {
                true
            } else {
                pick -= w;
                false
            }
        };
        let have_known = !self.known_order.is_empty();
        if take(mix.create) || !have_known {
            return self.create();
        }
        if take(mix.blind_update) {
            let path = self.known_path();
            let (nonce, len, body) = self.fresh_body();
            let catalog = self.catalog_record();
            return (Mutation::Publish { path, body, catalog, expected: Expected::Any }, Some((nonce, len)));
        }
        if take(mix.expected_update) {
            let path = self.known_path();
            let version = self.known[&path].version;
            let (nonce, len, body) = self.fresh_body();
            let catalog = self.catalog_record();
            let m = Mutation::Publish { path, body, catalog, expected: Expected::Version(version) };
            return (m, Some((nonce, len)));
        }
        if take(mix.append) {
            let path = self.known_path();
            let (_, len, bytes) = self.fresh_body();
            let bytes = bytes.slice(..(len as usize).min(64));
            return (Mutation::Append { path, bytes, expected: Expected::Any }, None);
        }
        if take(mix.archive_flip) {
            let path = self.known_path();
            let k = &self.known[&path];
            let archived = !k.archived;
            let expected = if self.rng.chance(0.5) { Expected::Version(k.version) } else { Expected::Any };
            return (Mutation::SetArchived { path, archived, expected }, None);
        }
        if take(mix.policy_flip) {
            return (self.policy_flip(), None);
        }
        if take(mix.parent_child) {
            let k = self.rng.below(u64::from(self.workload.parent_child_pairs.max(1)));
            let path = if self.rng.chance(0.5) { format!("/pc/{k}.md") } else { format!("/pc/{k}.md/c.md") };
            let (nonce, len, body) = self.fresh_body();
            return (
                Mutation::Publish { path, body, catalog: None, expected: Expected::Absent },
                Some((nonce, len)),
            );
        }
        // Republish what was last seen: unchanged unless someone wrote since.
        let path = self.known_path();
        match self.known[&path].body {
            Some((nonce, len)) => {
                let m = Mutation::Publish {
                    path,
                    body: self.body(nonce, len),
                    catalog: None,
                    expected: Expected::Any,
                };
                (m, Some((nonce, len)))
            }
            None => self.create(),
        }
    }

    fn create(&mut self) -> (Mutation, Option<(u64, u32)>) {
        let path = match self.workload.hot_paths {
            Some(n) => {
                let k = self.rng.below(u64::from(n.max(1)));
                if self.read_only && self.rng.chance(0.2) {
                    format!("/ro/{k}.md")
                } else {
                    format!("/hot/{k}.md")
                }
            }
            None => {
                self.next_doc += 1;
                format!("/docs/{:08}.md", self.next_doc)
            }
        };
        let (nonce, len, body) = self.fresh_body();
        let expected = if self.workload.hot_paths.is_some() && self.rng.chance(0.5) {
            Expected::Absent
        } else {
            Expected::Any
        };
        let catalog = self.catalog_record();
        (Mutation::Publish { path, body, catalog, expected }, Some((nonce, len)))
    }

    /// A publish's catalog record, with word bodies only (the search workload): half the
    /// time a tag and a word of the vocabulary, a tag no body holds, so a search for it
    /// finds documents only in catalog mode.
    fn catalog_record(&mut self) -> Option<String> {
        if !self.workload.word_bodies || !self.rng.chance(0.5) {
            return None;
        }
        let tag = RECORD_TAGS[self.rng.below(RECORD_TAGS.len() as u64) as usize];
        let word = VOCABULARY[self.rng.below(VOCABULARY.len() as u64) as usize];
        Some(format!("{tag}: {word}"))
    }

    fn policy_flip(&mut self) -> Mutation {
        self.read_only = !self.read_only;
        let retention_versions = 2 + self.rng.below(6) as u32;
        let read_only_prefixes = if self.read_only { vec!["/ro".to_string()] } else { Vec::new() };
        let expected =
            if self.rng.chance(0.5) { Expected::Version(self.policy_version) } else { Expected::Any };
        Mutation::SetPolicy {
            policy: PolicyBody { retention_versions, body_bytes_max: 1 << 20, read_only_prefixes },
            expected,
        }
    }

    fn known_path(&mut self) -> String {
        let i = self.rng.below(self.known_order.len() as u64) as usize;
        self.known_order[i].clone()
    }

    /// Records what an answer showed; `archived` None when it did not show the flag.
    fn learn(&mut self, path: &str, version: u64, archived: Option<bool>, body: Option<(u64, u32)>) {
        match self.known.get_mut(path) {
            Some(k) => {
                if version < k.version {
                    return;
                }
                if version > k.version || body.is_some() {
                    k.body = body;
                }
                k.version = version;
                if let Some(a) = archived {
                    k.archived = a;
                }
            }
            None => {
                let known = Known { version, archived: archived.unwrap_or(false), body };
                self.known.insert(path.to_string(), known);
                self.known_order.push(path.to_string());
            }
        }
    }

    /// Learn from an answer to a write this generator made.
    pub fn observe(&mut self, w: &Write, result: &Result<WriteOk, WriteError>) {
        let m = &w.mutation;
        let recipe = self.recipes.remove(&w.op_id);
        if let Err(WriteError::Uncertain { op_id, since }) = result {
            if self.uncertain.len() == UNCERTAIN_REMEMBERED_MAX {
                self.uncertain.pop_front();
            }
            self.uncertain.push_back((*op_id, *since));
        }
        let Some(path) = m.raw_path() else {
            match result {
                Ok(WriteOk::Committed(r)) => self.policy_version = self.policy_version.max(r.version),
                Err(WriteError::Rejected { rejection: Rejection::Conflict { current }, .. }) => {
                    self.policy_version = current.unwrap_or(0);
                }
                _ => {}
            }
            return;
        };
        let version = match result {
            Ok(WriteOk::Committed(r)) => r.version,
            Ok(WriteOk::Unchanged { version, .. }) => *version,
            Err(WriteError::Rejected { rejection: Rejection::Conflict { current: Some(v) }, .. }) => {
                return self.learn(path, *v, None, None);
            }
            Err(WriteError::Rejected { rejection: Rejection::Archived, .. }) => {
                if let Some(k) = self.known.get_mut(path) {
                    k.archived = true;
                }
                return;
            }
            _ => return,
        };
        // After a write succeeds the document holds what it asked for.
        let (archived, body) = match m {
            Mutation::SetArchived { archived, .. } => (*archived, self.known.get(path).and_then(|k| k.body)),
            Mutation::Append { .. } => (false, None),
            _ => (false, recipe),
        };
        self.learn(path, version, Some(archived), body);
    }

    /// A write that will never be answered (its replica crashed).
    pub fn forget(&mut self, op_id: &OperationId) {
        self.recipes.remove(op_id);
    }
}

/// The words word bodies are made of: some share a prefix, so a search for one is not a
/// search for another, and one carries a character that lowercases outside ASCII.
const VOCABULARY: [&str; 24] = [
    "alder", "birch", "cedar", "cedars", "elm", "fir", "hazel", "holly", "larch", "lime", "maple", "oak",
    "pine", "rowan", "spruce", "yew", "ash", "beech", "willow", "poplar", "aspen", "olive", "Ørn", "teak",
];

/// The tags catalog records carry: words no body holds.
const RECORD_TAGS: [&str; 4] = ["draft", "final", "review", "Élan"];

/// SplitMix64's increment (2^64 / the golden ratio).
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function: one word of a body from the generator's state.
#[inline(always)]
fn splitmix64_mix(state: u64) -> u64 {
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Random bytes as text of the vocabulary's words, the same length: each word chosen by a
/// byte, capitalized by another, separated by a space or punctuation.
fn words_of(random: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(random.len() + 16);
    for pair in random.chunks(2) {
        if out.len() >= random.len() {
            break;
        }
        let w = VOCABULARY[pair[0] as usize % VOCABULARY.len()];
        if pair.get(1).is_some_and(|b| b & 1 == 1) {
            out.extend(w.to_uppercase().bytes());
        } else {
            out.extend(w.bytes());
        }
        out.push(if pair.get(1).is_some_and(|b| b & 6 == 0) { b',' } else { b' ' });
    }
    // Cut to the length asked for, at a character boundary (a cut word is a word too).
    let mut len = random.len().min(out.len());
    while std::str::from_utf8(&out[..len]).is_err() {
        len -= 1;
    }
    out.truncate(len);
    out.resize(random.len(), b' ');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_burst_is_due_while_one_is_on_and_the_next_starts_a_period_after_the_last() {
        let bursts = Bursts { on: Duration::from_secs(10), off: Duration::from_secs(20) };
        let at = Instant::from_micros;
        assert_eq!(bursts.next_start(at(0)), None);
        assert_eq!(bursts.next_start(at(9_999_999)), None);
        assert_eq!(bursts.next_start(at(10_000_000)), Some(at(30_000_000)));
        assert_eq!(bursts.next_start(at(29_999_999)), Some(at(30_000_000)));
        assert_eq!(bursts.next_start(at(30_000_000)), None);
        assert_eq!(bursts.next_start(at(70_000_001)), Some(at(90_000_000)));
    }
}
