//! The segment writer (SPEC 10.17): after this replica's own checkpoint landed, the body
//! segment of each shard the step rewrote, at most once per 10-minute window. Bodies come
//! from the label's newest whole segment where it holds them, else from blobs, within a
//! budget of blob reads per checkpoint. Optional work: it starts only after the checkpoint
//! create succeeded, and any failure is counted and the label dropped, never retried into
//! a checkpoint's way.

use super::calls::{CompactCall, SegmentCall};
use crate::blob::{BlobError, BlobOp, BlobOutcome, BlobResult};
use crate::format::{
    decode_body, newest_whole_window, window_holds, Keys, SegmentBody, SegmentName, SegmentPart,
};
use crate::hash::Hash32;
use crate::io::{Io, Purpose};
use crate::marks::Mark;
use crate::search::{CarriedBodies, CarriedWords};
use crate::time::Instant;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Blob reads one checkpoint's segments may make: the record's 4,096 per checkpoint.
pub const SEGMENT_BLOB_READS_PER_CHECKPOINT_MAX: u32 = 4_096;

/// Keys one listing page of a label asks for.
const SEGMENT_LIST_PAGE: u32 = 1_000;

/// Labels queued for writing at most: a checkpoint of the largest layout rewrites 65,536
/// shards; past this the rest wait for the next checkpoint.
const SEGMENT_LABELS_QUEUED_MAX: usize = 65_536;

/// One label to write: its layout's bits, its index, and the body hashes of its live
/// documents at the checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LabelBodies {
    pub bits: u8,
    pub label: u32,
    pub bodies: BTreeSet<Hash32>,
}

/// Where the label in hand is.
#[derive(Debug)]
enum Phase {
    /// Listing the label's prefix.
    Listing {
        names: Vec<SegmentName>,
    },
    /// Reading the parts of the newest whole window, then the blobs it lacked.
    Reading {
        window: u64,
        to_read: VecDeque<u32>,
        listed: Vec<SegmentName>,
    },
    Blobs {
        to_read: VecDeque<Hash32>,
        in_flight: usize,
    },
    /// Creating the parts, highest first, part 0 last.
    Creating {
        parts: Vec<SegmentPart>,
    },
}

/// The label in hand.
#[derive(Debug)]
struct Writing {
    target: LabelBodies,
    window: u64,
    found: BTreeMap<Hash32, Vec<u8>>,
    /// The found bodies whose words came with the part they were found in.
    carried: CarriedBodies,
    phase: Phase,
}

/// Counters a report reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SegmentStats {
    /// Segments whose part 0 this replica created.
    pub written: u64,
    /// Labels left as they were: their segment of the current window is already whole.
    pub already_in_window: u64,
    /// Bodies taken from a label's earlier segment rather than read from blobs.
    pub bodies_carried: u64,
    /// Bodies read from blobs.
    pub bodies_read: u64,
    /// Labels dropped on a failed call, a damaged part, or the blob-read budget.
    pub dropped: u64,
}

impl SegmentStats {
    /// Adds another incarnation's counters.
    pub fn add(&mut self, other: &SegmentStats) {
        let SegmentStats { written, already_in_window, bodies_carried, bodies_read, dropped } = other;
        self.written += written;
        self.already_in_window += already_in_window;
        self.bodies_carried += bodies_carried;
        self.bodies_read += bodies_read;
        self.dropped += dropped;
    }
}

#[derive(Debug, Default)]
pub(crate) struct SegmentWriter {
    queue: VecDeque<(LabelBodies, u64)>,
    writing: Option<Writing>,
    /// Blob reads left for the labels of the checkpoint queued last.
    blob_reads_left: u32,
    reads_in_flight_max: usize,
    /// The `segment_words_shifted` defect: each body given the next body's words.
    words_shifted: bool,
    pub stats: SegmentStats,
}

fn purpose(what: SegmentCall) -> Purpose {
    Purpose::Compact(CompactCall::Segment(what))
}

impl SegmentWriter {
    pub fn new(reads_in_flight_max: usize) -> SegmentWriter {
        SegmentWriter { reads_in_flight_max: reads_in_flight_max.max(1), ..SegmentWriter::default() }
    }

    /// With the `segment_words_shifted` defect on.
    pub fn with_words_shifted(self, words_shifted: bool) -> SegmentWriter {
        SegmentWriter { words_shifted, ..self }
    }

    /// A checkpoint of ours landed in `window`: queue the labels it rewrote. Labels still
    /// queued from an earlier checkpoint are replaced by the newer ones of the same label.
    pub fn checkpoint_landed(&mut self, labels: Vec<LabelBodies>, window: u64) {
        self.blob_reads_left = SEGMENT_BLOB_READS_PER_CHECKPOINT_MAX;
        for target in labels {
            self.queue.retain(|(t, _)| (t.bits, t.label) != (target.bits, target.label));
            if self.queue.len() < SEGMENT_LABELS_QUEUED_MAX {
                self.queue.push_back((target, window));
            }
        }
    }

    /// Starts the next label when none is in hand.
    pub fn pump(&mut self, now: Instant, keys: &Keys, io: &mut Io) {
        if self.writing.is_some() {
            return;
        }
        let Some((target, window)) = self.queue.pop_front() else { return };
        let prefix = keys.segment_label_prefix(target.bits, target.label);
        io.issue(
            now,
            purpose(SegmentCall::List),
            BlobOp::List { prefix, start_after: None, limit: SEGMENT_LIST_PAGE },
            0,
        );
        self.writing = Some(Writing {
            target,
            window,
            found: BTreeMap::new(),
            carried: CarriedBodies::default(),
            phase: Phase::Listing { names: vec![] },
        });
    }

    fn drop_label(&mut self) {
        self.stats.dropped += 1;
        self.writing = None;
    }

    pub fn on_done(&mut self, now: Instant, what: SegmentCall, result: BlobResult, keys: &Keys, io: &mut Io) {
        let Some(w) = self.writing.as_mut() else { return };
        match (what, result) {
            (SegmentCall::List, Ok(BlobOutcome::Listed { entries, more })) => {
                let Phase::Listing { names } = &mut w.phase else { return };
                names.extend(entries.iter().filter_map(|e| keys.parse_segment(&e.key)));
                if more {
                    let start_after = entries.last().map(|e| e.key.clone());
                    let prefix = keys.segment_label_prefix(w.target.bits, w.target.label);
                    let op = BlobOp::List { prefix, start_after, limit: SEGMENT_LIST_PAGE };
                    io.issue(now, purpose(SegmentCall::List), op, 0);
                    return;
                }
                let names = std::mem::take(names);
                match newest_whole_window(&names) {
                    Some(newest) if newest >= w.window => {
                        self.stats.already_in_window += 1;
                        self.writing = None;
                    }
                    Some(newest) => {
                        let listed: Vec<SegmentName> =
                            names.into_iter().filter(|n| n.window == newest).collect();
                        let part0 = SegmentName {
                            bits: w.target.bits,
                            label: w.target.label,
                            window: newest,
                            part: 0,
                        };
                        io.issue(
                            now,
                            purpose(SegmentCall::Part { part: 0 }),
                            BlobOp::Get { key: keys.segment(&part0) },
                            0,
                        );
                        w.phase = Phase::Reading { window: newest, to_read: VecDeque::new(), listed };
                    }
                    None => self.start_blobs(now, keys, io),
                }
            }
            (SegmentCall::Part { part }, Ok(BlobOutcome::Got { bytes, .. })) => {
                let Phase::Reading { window, to_read, listed } = &mut w.phase else { return };
                let name = SegmentName { bits: w.target.bits, label: w.target.label, window: *window, part };
                let Ok(read) = SegmentPart::decode_named(&bytes, &name) else {
                    // A damaged part: its bodies come from blobs.
                    return self.next_part_or_blobs(now, keys, io);
                };
                if part == 0 && window_holds(listed, *window, read.parts) {
                    to_read.extend(1..read.parts);
                }
                let words = read.words.and_then(CarriedWords::open);
                for (i, b) in read.bodies.into_iter().enumerate() {
                    // A body that does not hash to its hash is dropped, never trusted: it
                    // costs a blob read.
                    let wanted = w.target.bodies.contains(&b.hash) && !w.found.contains_key(&b.hash);
                    if wanted && Hash32::of(&b.body) == b.hash {
                        if let Some(words) = &words {
                            w.carried.insert(b.hash, (words.clone(), i as u32));
                        }
                        w.found.insert(b.hash, b.body);
                        self.stats.bodies_carried += 1;
                    }
                }
                self.next_part_or_blobs(now, keys, io);
            }
            (SegmentCall::Part { .. }, Err(_)) => self.next_part_or_blobs(now, keys, io),
            (SegmentCall::Blob { hash }, Ok(BlobOutcome::Got { bytes, .. })) => {
                let Phase::Blobs { in_flight, .. } = &mut w.phase else { return };
                *in_flight -= 1;
                match decode_body(&bytes, &hash) {
                    Ok(body) => {
                        w.found.insert(hash, body);
                        self.stats.bodies_read += 1;
                        self.more_blobs(now, keys, io);
                    }
                    Err(_) => self.drop_label(),
                }
            }
            (SegmentCall::Blob { .. }, Err(_)) => self.drop_label(),
            (SegmentCall::Create { part }, Ok(_) | Err(BlobError::AlreadyExists)) => {
                // A racer's part serves as well: every body is verified on read.
                if part == 0 {
                    self.stats.written += 1;
                    io.marks.hit(Mark::SegmentWritten);
                    self.writing = None;
                } else {
                    self.next_create(now, keys, io);
                }
            }
            (SegmentCall::List | SegmentCall::Create { .. }, _) => self.drop_label(),
            (SegmentCall::Part { .. } | SegmentCall::Blob { .. }, Ok(_)) => self.drop_label(),
        }
        self.pump(now, keys, io);
    }

    fn next_part_or_blobs(&mut self, now: Instant, keys: &Keys, io: &mut Io) {
        let w = self.writing.as_mut().expect("a label in hand");
        let Phase::Reading { window, to_read, .. } = &mut w.phase else { return };
        match to_read.pop_front() {
            Some(part) => {
                let name = SegmentName { bits: w.target.bits, label: w.target.label, window: *window, part };
                io.issue(
                    now,
                    purpose(SegmentCall::Part { part }),
                    BlobOp::Get { key: keys.segment(&name) },
                    0,
                );
            }
            None => {
                if !w.found.is_empty() {
                    io.marks.hit(Mark::SegmentCarried);
                }
                self.start_blobs(now, keys, io)
            }
        }
    }

    fn start_blobs(&mut self, now: Instant, keys: &Keys, io: &mut Io) {
        let w = self.writing.as_mut().expect("a label in hand");
        let missing: VecDeque<Hash32> =
            w.target.bodies.iter().filter(|h| !w.found.contains_key(h)).copied().collect();
        if missing.len() > self.blob_reads_left as usize {
            return self.drop_label();
        }
        self.blob_reads_left -= missing.len() as u32;
        w.phase = Phase::Blobs { to_read: missing, in_flight: 0 };
        self.more_blobs(now, keys, io);
    }

    fn more_blobs(&mut self, now: Instant, keys: &Keys, io: &mut Io) {
        let w = self.writing.as_mut().expect("a label in hand");
        let Phase::Blobs { to_read, in_flight } = &mut w.phase else { return };
        while *in_flight < self.reads_in_flight_max {
            let Some(hash) = to_read.pop_front() else { break };
            *in_flight += 1;
            io.issue(now, purpose(SegmentCall::Blob { hash }), BlobOp::Get { key: keys.body(&hash) }, 0);
        }
        if *in_flight > 0 {
            return;
        }
        let bodies = std::mem::take(&mut w.found).into_iter().map(|(hash, body)| SegmentBody { hash, body });
        let carried = std::mem::take(&mut w.carried);
        if !carried.is_empty() {
            io.marks.hit(Mark::SegmentWordsCarried);
        }
        match crate::search::segment_parts_reusing(bodies, &carried) {
            Some(mut parts) => {
                if self.words_shifted {
                    for part in &mut parts {
                        let mut shifted = part.bodies.clone();
                        let by = 1.min(shifted.len());
                        shifted.rotate_left(by);
                        part.words = Some(crate::search::words_of(&shifted));
                    }
                }
                w.phase = Phase::Creating { parts };
                self.next_create(now, keys, io);
            }
            None => self.drop_label(),
        }
    }

    /// Creates the highest part not yet created; part 0 comes last.
    fn next_create(&mut self, now: Instant, keys: &Keys, io: &mut Io) {
        let w = self.writing.as_mut().expect("a label in hand");
        let Phase::Creating { parts } = &mut w.phase else { return };
        let part = parts.pop().expect("part 0 ends the creates");
        let name =
            SegmentName { bits: w.target.bits, label: w.target.label, window: w.window, part: part.part };
        let op = BlobOp::Create { key: keys.segment(&name), bytes: part.encode().into() };
        io.issue(now, purpose(SegmentCall::Create { part: part.part }), op, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::{Generation, ObjectMeta, Written};
    use crate::effect::Effect;
    use crate::format::verified_bodies;
    use crate::format::{encode_body, SEGMENT_WINDOW_MS};
    use crate::io::RetryPolicy;
    use bytes::Bytes;
    use core::time::Duration;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    /// A bucket of whole objects, answering every call at once, in the order sent; it
    /// records the order of creates.
    #[derive(Default)]
    struct Bucket {
        objects: BTreeMap<String, Bytes>,
        creates: Vec<String>,
        gets: Vec<String>,
    }

    fn io() -> Io {
        Io::new(
            ChaCha8Rng::seed_from_u64(1),
            RetryPolicy {
                base: Duration::from_millis(20),
                cap: Duration::from_secs(1),
                hedge_after: Duration::ZERO,
            },
        )
    }

    fn meta(key: &str, bytes: &Bytes) -> ObjectMeta {
        ObjectMeta {
            key: key.to_string(),
            generation: Generation("1".into()),
            created_at_us: 0,
            size: bytes.len() as u64,
        }
    }

    impl Bucket {
        fn answer(&mut self, op: &BlobOp) -> BlobResult {
            match op {
                BlobOp::Get { key } => {
                    self.gets.push(key.clone());
                    let bytes = self.objects.get(key).cloned().ok_or(BlobError::NotFound)?;
                    Ok(BlobOutcome::Got { meta: meta(key, &bytes), bytes })
                }
                BlobOp::Create { key, bytes } => {
                    if self.objects.contains_key(key) {
                        return Err(BlobError::AlreadyExists);
                    }
                    self.creates.push(key.clone());
                    self.objects.insert(key.clone(), bytes.clone());
                    let w = Written {
                        key: key.clone(),
                        generation: Generation("1".into()),
                        time: Some(crate::blob::WriteTime::Created(0)),
                        size: bytes.len() as u64,
                    };
                    Ok(BlobOutcome::Created(w))
                }
                BlobOp::List { prefix, start_after, limit } => {
                    let entries: Vec<ObjectMeta> = self
                        .objects
                        .iter()
                        .filter(|(k, _)| {
                            k.starts_with(prefix.as_str()) && start_after.as_ref().is_none_or(|s| *k > s)
                        })
                        .take(*limit as usize)
                        .map(|(k, b)| meta(k, b))
                        .collect();
                    Ok(BlobOutcome::Listed { more: false, entries })
                }
                other => panic!("the writer does not {other:?}"),
            }
        }

        /// Runs the writer until it sends nothing more.
        fn drive(&mut self, writer: &mut SegmentWriter, keys: &Keys, io: &mut Io) {
            writer.pump(Instant::ZERO, keys, io);
            while let Some(effect) = io.effects.pop_front() {
                let Effect::Blob { id, op } = effect else { continue };
                let result = self.answer(&op);
                let (call, result) = io.complete(id, result).expect("a call of ours");
                let Purpose::Compact(CompactCall::Segment(what)) = call.purpose else {
                    panic!("not a segment call")
                };
                writer.on_done(Instant::ZERO, what, result, keys, io);
            }
        }

        fn put_bodies(&mut self, keys: &Keys, bodies: &[&[u8]]) -> BTreeSet<Hash32> {
            bodies
                .iter()
                .map(|b| {
                    let h = Hash32::of(b);
                    self.objects.insert(keys.body(&h), Bytes::from(encode_body(b)));
                    h
                })
                .collect()
        }
    }

    #[test]
    fn a_label_is_written_from_blobs_with_part_zero_last() {
        let keys = Keys::new("w");
        let mut bucket = Bucket::default();
        let big = vec![7u8; 1_500_000];
        let bodies = bucket.put_bodies(&keys, &[b"one", b"two", &big, &[8u8; 1_500_000]]);
        let mut writer = SegmentWriter::new(4);
        let mut io = io();
        writer.checkpoint_landed(vec![LabelBodies { bits: 1, label: 1, bodies: bodies.clone() }], 3);
        bucket.drive(&mut writer, &keys, &mut io);
        let parts: Vec<SegmentName> = bucket.creates.iter().filter_map(|k| keys.parse_segment(k)).collect();
        assert_eq!(parts.len(), 2, "3 MB of bodies take two parts");
        assert_eq!(
            parts.last().map(|n| (n.part, n.window, n.label)),
            Some((0, 3, 1)),
            "part 0 is created last"
        );
        assert_eq!(writer.stats.written, 1);
        assert_eq!(writer.stats.bodies_read, 4);
        assert_eq!(io.marks.count(Mark::SegmentWritten), 1);
        let mut read = BTreeSet::new();
        for n in &parts {
            let (_, got) = verified_bodies(&bucket.objects[&keys.segment(n)], n).expect("decodes");
            read.extend(got.into_iter().map(|b| b.hash));
        }
        assert_eq!(read, bodies);
    }

    #[test]
    fn a_later_window_carries_unchanged_bodies_and_reads_only_the_changed_ones() {
        let keys = Keys::new("w");
        let mut bucket = Bucket::default();
        let first = bucket.put_bodies(&keys, &[b"a", b"b", b"c"]);
        let mut writer = SegmentWriter::new(4);
        let mut io = io();
        writer.checkpoint_landed(vec![LabelBodies { bits: 0, label: 0, bodies: first.clone() }], 1);
        bucket.drive(&mut writer, &keys, &mut io);
        let changed = bucket.put_bodies(&keys, &[b"d"]);
        let mut second: BTreeSet<Hash32> = first.iter().copied().skip(1).collect();
        second.extend(&changed);
        bucket.gets.clear();
        writer.checkpoint_landed(vec![LabelBodies { bits: 0, label: 0, bodies: second.clone() }], 2);
        bucket.drive(&mut writer, &keys, &mut io);
        let body_gets: Vec<&String> =
            bucket.gets.iter().filter(|k| k.starts_with(&keys.blobs_prefix())).collect();
        assert_eq!(
            body_gets,
            vec![&keys.body(changed.iter().next().expect("one"))],
            "only the changed body from its blob"
        );
        assert_eq!(writer.stats.bodies_carried, 2);
        assert_eq!(io.marks.count(Mark::SegmentCarried), 1);
        let name = SegmentName { bits: 0, label: 0, window: 2, part: 0 };
        let (_, got) = verified_bodies(&bucket.objects[&keys.segment(&name)], &name).expect("decodes");
        assert_eq!(got.into_iter().map(|b| b.hash).collect::<BTreeSet<_>>(), second);
    }

    #[test]
    fn a_later_window_takes_carried_bodies_words_and_writes_what_tokenizing_would() {
        let keys = Keys::new("w");
        let mut bucket = Bucket::default();
        let kept: [&[u8]; 3] =
            [b"Red fox, red DOG", "Caf\u{e9} \u{3a3}\u{391}\u{3a3} fox".as_bytes(), b"dog\xff\xfefox 42"];
        let first = bucket.put_bodies(&keys, &kept);
        let mut writer = SegmentWriter::new(4);
        let mut io = io();
        writer.checkpoint_landed(vec![LabelBodies { bits: 0, label: 0, bodies: first.clone() }], 1);
        bucket.drive(&mut writer, &keys, &mut io);
        assert_eq!(io.marks.count(Mark::SegmentWordsCarried), 0, "nothing to carry from");
        let added: [&[u8]; 1] = [b"a new fox, caf\xc3\xa9"];
        let mut second = first.clone();
        second.extend(bucket.put_bodies(&keys, &added));
        writer.checkpoint_landed(vec![LabelBodies { bits: 0, label: 0, bodies: second }], 2);
        bucket.drive(&mut writer, &keys, &mut io);
        assert_eq!(io.marks.count(Mark::SegmentWordsCarried), 1);
        let name = SegmentName { bits: 0, label: 0, window: 2, part: 0 };
        let tokenized = crate::search::segment_parts(
            kept.iter().chain(&added).map(|b| SegmentBody { hash: Hash32::of(b), body: b.to_vec() }),
        )
        .expect("fits");
        assert_eq!(bucket.objects[&keys.segment(&name)], Bytes::from(tokenized[0].encode()));
    }

    #[test]
    fn a_label_is_written_at_most_once_per_window() {
        let keys = Keys::new("w");
        let mut bucket = Bucket::default();
        let bodies = bucket.put_bodies(&keys, &[b"a"]);
        let mut writer = SegmentWriter::new(4);
        let mut io = io();
        for _ in 0..2 {
            writer.checkpoint_landed(vec![LabelBodies { bits: 0, label: 0, bodies: bodies.clone() }], 5);
            bucket.drive(&mut writer, &keys, &mut io);
        }
        assert_eq!((writer.stats.written, writer.stats.already_in_window), (1, 1));
        assert_eq!(bucket.creates.iter().filter(|k| keys.parse_segment(k).is_some()).count(), 1);
        assert_eq!(crate::format::segment_window(5 * SEGMENT_WINDOW_MS), 5);
    }

    #[test]
    fn a_missing_blob_drops_the_label_and_writes_no_part() {
        let keys = Keys::new("w");
        let mut bucket = Bucket::default();
        let mut bodies = bucket.put_bodies(&keys, &[b"a"]);
        bodies.insert(Hash32::of(b"never stored"));
        let mut writer = SegmentWriter::new(4);
        let mut io = io();
        writer.checkpoint_landed(vec![LabelBodies { bits: 0, label: 0, bodies }], 1);
        bucket.drive(&mut writer, &keys, &mut io);
        assert_eq!((writer.stats.written, writer.stats.dropped), (0, 1));
        assert!(bucket.creates.iter().all(|k| keys.parse_segment(k).is_none()));
    }

    #[test]
    fn blob_reads_past_the_budget_drop_the_label() {
        let keys = Keys::new("w");
        let mut writer = SegmentWriter::new(4);
        let mut io = io();
        let bodies: BTreeSet<Hash32> =
            (0..=SEGMENT_BLOB_READS_PER_CHECKPOINT_MAX).map(|i| Hash32::of(&i.to_le_bytes())).collect();
        let mut bucket = Bucket::default();
        writer.checkpoint_landed(vec![LabelBodies { bits: 0, label: 0, bodies }], 1);
        bucket.drive(&mut writer, &keys, &mut io);
        assert_eq!(writer.stats.dropped, 1);
        assert!(bucket.gets.iter().all(|k| !k.starts_with(&keys.blobs_prefix())), "no read past the budget");
    }
}
