//! Body segments (SPEC 10.17): a cache, in the bucket, of the bodies of one shard label's
//! live documents, so a reader that needs many bodies reads a few parts instead of one
//! blob per body. Keyed by shard label and a 10-minute window of the store clock, at
//! `segments/<bits>-<label>/<window>/<part>`. Nothing names a segment: checkpoint bytes
//! stay a function of the log, and a missing or damaged part costs only blob reads.
//!
//! A part holds (body hash, body) pairs. A reader keeps only the bodies that hash to
//! their hash, so a racer's part, or a part of another writer's count, serves as well.
//! Since schema 2 a part also carries its bodies' words, found by the writer's tokenizer,
//! so a reader building a search index reads them instead of tokenizing every body.

use super::frame::{
    decode_payload, decode_raw_schema, encode_value_schema, DecodeError, Kind, NameRule, SCHEMA,
};
use super::key::SegmentName;
use super::rule::{SegmentRule, ShapeRule};
use crate::hash::Hash32;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The width of a segment window, in store-clock milliseconds: a label's segment is
/// written at most once per window (the record's "segment windows" amendment).
pub const SEGMENT_WINDOW_MS: u64 = 10 * 60 * 1_000;

/// Body bytes one part holds at most: the record's 2 MiB per part, half the 4 MiB object
/// cap its store kept. A body longer than this is never carried; it stays a blob read.
pub const SEGMENT_PART_BODY_BYTES_MAX: u64 = 2 * 1024 * 1024;

/// Parts one segment may name: 8 GiB of bodies for one label, far past a 200 KB shard's
/// documents; it bounds what a reader must accept.
pub const SEGMENT_PARTS_MAX: u32 = 4_096;

/// The window a store-clock time falls in.
pub fn segment_window(now_ms: u64) -> u64 {
    now_ms / SEGMENT_WINDOW_MS
}

/// One cached body: its BLAKE3 hash (the index entry's `body_hash`) and its bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentBody {
    /// BLAKE3 of `body`, as a body blob is named (SPEC 6).
    pub hash: Hash32,
    /// The raw body. Postcard writes a byte string and a sequence of bytes alike (its
    /// length, then the bytes), so this reads the bytes at once, not one by one.
    #[serde(with = "serde_bytes")]
    pub body: Vec<u8>,
}

/// One part of a segment. Every part names its number and the segment's count; part 0 is
/// created last, so its presence says every part of its writer's count was created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentPart {
    /// This part's number, below `parts`.
    pub part: u32,
    /// Parts in the segment, 1 to `SEGMENT_PARTS_MAX`.
    pub parts: u32,
    /// Strictly ascending by hash; body bytes at most `SEGMENT_PART_BODY_BYTES_MAX`.
    pub bodies: Vec<SegmentBody>,
    /// The bodies' words (schema 2), or None (schema 1: a reader tokenizes the bodies).
    pub words: Option<SegmentWords>,
}

/// Schema of a segment part that carries its bodies' words.
pub const SCHEMA_WORDED: u16 = 2;

/// The words of a part's bodies, as a tokenizer found them: each distinct word once, and
/// each body's words, in order, as numbers into them. Nothing here is checked against the
/// bodies on read: the words are trusted as far as the part is (the frame's CRC binds them
/// to the bodies, and their writer found them in those bodies).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentWords {
    /// The tokenizer that found them (`search::TOKENIZER`); a reader with another one
    /// tokenizes the bodies instead.
    pub tokenizer: u32,
    /// The distinct words end to end, numbered in order of first occurrence.
    pub text: String,
    /// By word number: its length in bytes (at least 1, ending on a character boundary).
    pub lens: Vec<u32>,
    /// By body, in the part's order: how many words it holds.
    pub counts: Vec<u32>,
    /// Every body's words as word numbers, body after body: each two bytes little-endian
    /// when there are at most 65,536 distinct words (every part of up to 2 MiB of text in
    /// practice), else four. A byte string of fixed-width numbers, so a reader decodes and
    /// checks a part's hundreds of thousands of them at memory speed (postcard's
    /// sequence of varints cost a tenth of an index build's CPU to decode and check).
    /// [`SegmentWords::numbers`] reads them.
    #[serde(with = "serde_bytes")]
    pub words: Vec<u8>,
}

/// Distinct words up to which a part's word numbers take two bytes each.
pub const SEGMENT_SHORT_WORD_NUMBERS_MAX: usize = 1 << 16;

impl SegmentWords {
    /// Words with `numbers` written as the part carries them.
    pub fn new(
        tokenizer: u32,
        text: String,
        lens: Vec<u32>,
        counts: Vec<u32>,
        numbers: &[u32],
    ) -> SegmentWords {
        let mut words = SegmentWords { tokenizer, text, lens, counts, words: Vec::new() };
        let width = words.width();
        // Little-endian: a two-byte number is the low two bytes of the four. Pushed a
        // number at a time into room made once (a byte-wise collect was a fifth of
        // writing a segment's words).
        let mut bytes = Vec::with_capacity(numbers.len() * width);
        for n in numbers {
            bytes.extend_from_slice(&n.to_le_bytes()[..width]);
        }
        words.words = bytes;
        words
    }

    /// Bytes one word number takes.
    fn width(&self) -> usize {
        if self.lens.len() <= SEGMENT_SHORT_WORD_NUMBERS_MAX {
            2
        } else {
            4
        }
    }

    /// The word numbers, in order.
    pub fn numbers(&self) -> impl Iterator<Item = u32> + '_ {
        let (short, long) =
            if self.width() == 2 { (&self.words[..], &[][..]) } else { (&[][..], &self.words[..]) };
        let short = short.chunks_exact(2).map(|c| u32::from(u16::from_le_bytes([c[0], c[1]])));
        let long = long.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        short.chain(long)
    }
}

/// A part's payload in either schema: `words` is `()`, no bytes, in schema 1.
#[derive(Serialize, Deserialize)]
struct Payload<B, W> {
    part: u32,
    parts: u32,
    bodies: B,
    words: W,
}

impl SegmentPart {
    /// The object's bytes: schema 2 when the part carries words, else schema 1.
    pub fn encode(&self) -> Vec<u8> {
        invariant_eq!(self.shape_problem(), None);
        self.encode_unchecked()
    }

    /// The bytes of a part whatever its shape (tests write misshapen ones with it).
    pub(crate) fn encode_unchecked(&self) -> Vec<u8> {
        let (part, parts, bodies) = (self.part, self.parts, &self.bodies);
        match &self.words {
            None => encode_value_schema(Kind::Segment, SCHEMA, &Payload { part, parts, bodies, words: () }),
            Some(words) => {
                encode_value_schema(Kind::Segment, SCHEMA_WORDED, &Payload { part, parts, bodies, words })
            }
        }
    }

    /// Decodes and checks the part's shape (not its bodies' hashes, nor its words against
    /// them).
    pub fn decode(bytes: &[u8]) -> Result<SegmentPart, DecodeError> {
        let (schema, payload) = decode_raw_schema(Kind::Segment, &[SCHEMA, SCHEMA_WORDED], bytes)?;
        let part = if schema == SCHEMA {
            let p: Payload<Vec<SegmentBody>, ()> = decode_payload(payload)?;
            SegmentPart { part: p.part, parts: p.parts, bodies: p.bodies, words: None }
        } else {
            let p: Payload<Vec<SegmentBody>, SegmentWords> = decode_payload(payload)?;
            SegmentPart { part: p.part, parts: p.parts, bodies: p.bodies, words: Some(p.words) }
        };
        match part.shape_problem() {
            Some(rule) => Err(DecodeError::Shape(ShapeRule::Segment(rule))),
            None => Ok(part),
        }
    }

    /// Decodes the part read under `name` and checks it is that part.
    pub fn decode_named(bytes: &[u8], name: &SegmentName) -> Result<SegmentPart, DecodeError> {
        let part = SegmentPart::decode(bytes)?;
        if part.part != name.part {
            return Err(DecodeError::Misnamed(NameRule::SegmentPartUnderAnotherName { part: part.part }));
        }
        Ok(part)
    }

    /// Splits `bodies` (any order, duplicates allowed) into the parts of one segment, by
    /// hash order, each holding at most `SEGMENT_PART_BODY_BYTES_MAX` body bytes. A body
    /// longer than that is left out. Always at least one part (an empty label's segment
    /// is one empty part 0), and None past `SEGMENT_PARTS_MAX` parts. The parts carry no
    /// words: `search::segment_parts` splits and adds them.
    pub fn split(bodies: impl IntoIterator<Item = SegmentBody>) -> Option<Vec<SegmentPart>> {
        let by_hash: BTreeMap<Hash32, Vec<u8>> = bodies
            .into_iter()
            .filter(|b| b.body.len() as u64 <= SEGMENT_PART_BODY_BYTES_MAX)
            .map(|b| (b.hash, b.body))
            .collect();
        let mut groups: Vec<Vec<SegmentBody>> = vec![Vec::new()];
        let mut bytes = 0u64;
        for (hash, body) in by_hash {
            let len = body.len() as u64;
            if bytes + len > SEGMENT_PART_BODY_BYTES_MAX {
                groups.push(Vec::new());
                bytes = 0;
            }
            bytes += len;
            groups.last_mut().expect("one group at least").push(SegmentBody { hash, body });
        }
        let parts = u32::try_from(groups.len()).ok().filter(|&n| n <= SEGMENT_PARTS_MAX)?;
        Some(
            groups
                .into_iter()
                .enumerate()
                .map(|(i, bodies)| SegmentPart { part: i as u32, parts, bodies, words: None })
                .collect(),
        )
    }

    fn shape_problem(&self) -> Option<SegmentRule> {
        if self.parts == 0 || self.parts > SEGMENT_PARTS_MAX {
            return Some(SegmentRule::PartCount { parts: self.parts });
        }
        if self.part >= self.parts {
            return Some(SegmentRule::PartPastCount { part: self.part, parts: self.parts });
        }
        if let Some(i) = self.bodies.windows(2).position(|w| w[0].hash >= w[1].hash) {
            return Some(SegmentRule::BodiesNotSorted { position: i + 1 });
        }
        let bytes: u64 = self.bodies.iter().map(|b| b.body.len() as u64).sum();
        if bytes > SEGMENT_PART_BODY_BYTES_MAX {
            return Some(SegmentRule::TooLarge { bytes });
        }
        self.words.as_ref().and_then(|w| w.shape_problem(self.bodies.len()))
    }
}

impl SegmentWords {
    /// The first rule the words break, for a part of `bodies` bodies.
    fn shape_problem(&self, bodies: usize) -> Option<SegmentRule> {
        if self.counts.len() != bodies {
            return Some(SegmentRule::WordCountsPerBody { counts: self.counts.len(), bodies });
        }
        if !self.words.len().is_multiple_of(self.width()) {
            return Some(SegmentRule::WordBytes { bytes: self.words.len() as u64 });
        }
        // Numbered in order of first occurrence: each number is one met before or the
        // next new one, and every word is met. One list of words has one form.
        let (mut next, mut listed) = (0u32, 0u64);
        for w in self.numbers() {
            if w > next {
                return Some(SegmentRule::WordNumbering { position: listed });
            }
            next += u32::from(w == next);
            listed += 1;
        }
        let counted: u64 = self.counts.iter().map(|&c| u64::from(c)).sum();
        if counted != listed {
            return Some(SegmentRule::WordsCounted { counted, words: listed });
        }
        let mut end = 0usize;
        for (word, &len) in self.lens.iter().enumerate() {
            end = end.saturating_add(len as usize);
            if len == 0 || end > self.text.len() || !self.text.is_char_boundary(end) {
                return Some(SegmentRule::WordText { word: word as u32 });
            }
        }
        if end != self.text.len() {
            return Some(SegmentRule::WordText { word: self.lens.len() as u32 });
        }
        if next as usize != self.lens.len() {
            return Some(SegmentRule::WordNumbering { position: listed });
        }
        None
    }
}

/// The bodies of the part read under `name` that hash to their hash, and the count the
/// part names. A body that does not is dropped, never trusted: it costs a blob read.
pub fn verified_bodies(bytes: &[u8], name: &SegmentName) -> Result<(u32, Vec<SegmentBody>), DecodeError> {
    let part = SegmentPart::decode_named(bytes, name)?;
    let parts = part.parts;
    let bodies = part.bodies.into_iter().filter(|b| Hash32::of(&b.body) == b.hash).collect();
    Ok((parts, bodies))
}

/// From the parsed listing of one label, the newest window whose part 0 is listed with
/// every part from 1 up to the highest listed without a gap: part 0 is created last, so
/// a listed part 0 says its writer's parts were all created. The caller then reads part 0
/// and checks with [`window_holds`] that the count it names is listed.
pub fn newest_whole_window(names: &[SegmentName]) -> Option<u64> {
    let mut parts_by_window: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
    for n in names {
        parts_by_window.entry(n.window).or_default().push(n.part);
    }
    parts_by_window.into_iter().rev().find_map(|(window, mut parts)| {
        parts.sort_unstable();
        parts.dedup();
        let contiguous = parts.iter().enumerate().all(|(i, &p)| p == i as u32);
        (contiguous && parts.first() == Some(&0)).then_some(window)
    })
}

/// Whether the listing holds parts 0 to `parts - 1` of `window`.
pub fn window_holds(names: &[SegmentName], window: u64, parts: u32) -> bool {
    (0..parts).all(|p| names.iter().any(|n| n.window == window && n.part == p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(s: &str) -> SegmentBody {
        SegmentBody { hash: Hash32::of(s.as_bytes()), body: s.as_bytes().to_vec() }
    }

    fn name(window: u64, part: u32) -> SegmentName {
        SegmentName { bits: 2, label: 1, window, part }
    }

    #[test]
    fn a_split_orders_bodies_by_hash_and_numbers_every_part() {
        let parts = SegmentPart::split([body("b"), body("a"), body("a")]).expect("fits");
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].parts, 1);
        assert_eq!(parts[0].bodies.len(), 2, "a duplicate body is held once");
        assert!(parts[0].bodies[0].hash < parts[0].bodies[1].hash);
        assert_eq!(SegmentPart::decode(&parts[0].encode()), Ok(parts[0].clone()));
    }

    #[test]
    fn a_split_keeps_every_part_within_its_byte_bound() {
        let big = |c: u8| {
            let b = vec![c; 900 * 1024];
            SegmentBody { hash: Hash32::of(&b), body: b }
        };
        let too_long = vec![9u8; SEGMENT_PART_BODY_BYTES_MAX as usize + 1];
        let parts = SegmentPart::split([
            big(1),
            big(2),
            big(3),
            SegmentBody { hash: Hash32::of(&too_long), body: too_long },
        ])
        .expect("fits");
        assert_eq!(parts.len(), 2, "three 900 KiB bodies take two parts; the over-long one none");
        for (i, p) in parts.iter().enumerate() {
            assert_eq!(p.part, i as u32);
            assert_eq!(p.parts, 2);
            assert!(p.bodies.iter().map(|b| b.body.len() as u64).sum::<u64>() <= SEGMENT_PART_BODY_BYTES_MAX);
        }
    }

    #[test]
    fn an_empty_label_has_one_empty_part() {
        let parts = SegmentPart::split([]).expect("fits");
        assert_eq!(parts, vec![SegmentPart { part: 0, parts: 1, bodies: vec![], words: None }]);
    }

    #[test]
    fn a_body_that_does_not_hash_to_its_hash_is_dropped_on_read() {
        let mut forged = body("forged");
        forged.body = b"other".to_vec();
        let mut bodies = vec![body("kept"), forged];
        bodies.sort_by_key(|b| b.hash);
        let part = SegmentPart { part: 0, parts: 1, bodies, words: None };
        let (parts, read) = verified_bodies(&part.encode(), &name(5, 0)).expect("decodes");
        assert_eq!(parts, 1);
        assert_eq!(read, vec![body("kept")]);
    }

    #[test]
    fn a_part_under_another_number_is_refused() {
        let part = SegmentPart { part: 0, parts: 2, bodies: vec![], words: None };
        assert_eq!(
            verified_bodies(&part.encode(), &name(5, 1)),
            Err(DecodeError::Misnamed(NameRule::SegmentPartUnderAnotherName { part: 0 }))
        );
    }

    #[test]
    fn a_part_past_its_count_and_unsorted_bodies_are_refused() {
        let past = SegmentPart { part: 2, parts: 2, bodies: vec![], words: None }.encode_unchecked();
        assert_eq!(
            SegmentPart::decode(&past),
            Err(DecodeError::Shape(ShapeRule::Segment(SegmentRule::PartPastCount { part: 2, parts: 2 })))
        );
        let mut bodies = vec![body("x"), body("y")];
        bodies.sort_by_key(|b| core::cmp::Reverse(b.hash));
        let unsorted = SegmentPart { part: 0, parts: 1, bodies, words: None }.encode_unchecked();
        assert_eq!(
            SegmentPart::decode(&unsorted),
            Err(DecodeError::Shape(ShapeRule::Segment(SegmentRule::BodiesNotSorted { position: 1 })))
        );
        let none = SegmentPart { part: 0, parts: 0, bodies: vec![], words: None }.encode_unchecked();
        assert_eq!(
            SegmentPart::decode(&none),
            Err(DecodeError::Shape(ShapeRule::Segment(SegmentRule::PartCount { parts: 0 })))
        );
    }

    #[test]
    fn words_that_do_not_fit_their_part_are_refused() {
        let words = |lens: Vec<u32>, counts: Vec<u32>, numbers: Vec<u32>| {
            SegmentWords::new(1, "abcdé".into(), lens, counts, &numbers)
        };
        let part =
            |w: SegmentWords| SegmentPart { part: 0, parts: 1, bodies: vec![body("x")], words: Some(w) };
        let refused = |w: SegmentWords| match SegmentPart::decode(&part(w).encode_unchecked()) {
            Err(DecodeError::Shape(ShapeRule::Segment(rule))) => Some(rule),
            _ => None,
        };
        let ok = words(vec![2, 4], vec![3], vec![0, 1, 0]);
        assert_eq!(SegmentPart::decode(&part(ok.clone()).encode()), Ok(part(ok)));
        assert_eq!(
            refused(words(vec![2, 4], vec![3, 0], vec![0, 1, 0])),
            Some(SegmentRule::WordCountsPerBody { counts: 2, bodies: 1 })
        );
        assert_eq!(
            refused(words(vec![2, 4], vec![2], vec![0, 1, 0])),
            Some(SegmentRule::WordsCounted { counted: 2, words: 3 })
        );
        assert_eq!(
            refused(words(vec![2, 0, 4], vec![3], vec![0, 1, 0])),
            Some(SegmentRule::WordText { word: 1 })
        );
        // "é" is two bytes: a word ending inside it, past the text, short of its end.
        assert_eq!(
            refused(words(vec![2, 3], vec![3], vec![0, 1, 0])),
            Some(SegmentRule::WordText { word: 1 })
        );
        assert_eq!(
            refused(words(vec![2, 5], vec![3], vec![0, 1, 0])),
            Some(SegmentRule::WordText { word: 1 })
        );
        assert_eq!(refused(words(vec![2], vec![3], vec![0, 0, 0])), Some(SegmentRule::WordText { word: 1 }));
        assert_eq!(
            refused(words(vec![2, 4], vec![3], vec![1, 0, 0])),
            Some(SegmentRule::WordNumbering { position: 0 })
        );
        assert_eq!(
            refused(words(vec![2, 4], vec![3], vec![0, 0, 0])),
            Some(SegmentRule::WordNumbering { position: 3 })
        );
        // Word numbers as bytes: two a number here, so an odd count is cut short.
        let raw = |bytes: Vec<u8>| SegmentWords { words: bytes, ..words(vec![2, 4], vec![3], vec![]) };
        assert_eq!(refused(raw(vec![0, 0, 1, 0, 0])), Some(SegmentRule::WordBytes { bytes: 5 }));
        assert_eq!(raw(vec![0, 0, 1, 0, 0, 0]).numbers().collect::<Vec<_>>(), [0, 1, 0]);
    }

    #[test]
    fn word_numbers_take_four_bytes_past_65536_distinct_words() {
        let lens = vec![1; SEGMENT_SHORT_WORD_NUMBERS_MAX];
        assert_eq!(SegmentWords::new(1, String::new(), lens.clone(), vec![1], &[7]).words, [7, 0]);
        let mut more = lens;
        more.push(1);
        let w = SegmentWords::new(1, String::new(), more, vec![1], &[70_000]);
        assert_eq!(w.words, 70_000u32.to_le_bytes());
        assert_eq!(w.numbers().collect::<Vec<_>>(), [70_000]);
    }

    #[test]
    fn a_part_without_words_is_schema_1_and_one_with_them_schema_2() {
        let plain = SegmentPart { part: 0, parts: 1, bodies: vec![body("x")], words: None };
        let w = SegmentWords::new(1, "x".into(), vec![1], vec![1], &[0]);
        let worded = SegmentPart { words: Some(w), ..plain.clone() };
        for (part, schema) in [(&plain, SCHEMA), (&worded, SCHEMA_WORDED)] {
            let bytes = part.encode();
            assert_eq!(u16::from_le_bytes([bytes[5], bytes[6]]), schema);
            assert_eq!(SegmentPart::decode(&bytes).as_ref(), Ok(part));
        }
    }

    #[test]
    fn the_newest_whole_window_needs_part_zero_and_no_gap() {
        // Window 7: parts 1 and 2 without part 0 (a write cut short). Window 6: 0 and 2,
        // a gap. Window 5: whole.
        let names = [name(7, 1), name(7, 2), name(6, 0), name(6, 2), name(5, 1), name(5, 0), name(4, 0)];
        assert_eq!(newest_whole_window(&names), Some(5));
        assert!(window_holds(&names, 5, 2));
        assert!(!window_holds(&names, 5, 3));
        assert_eq!(newest_whole_window(&[name(3, 1)]), None);
        assert_eq!(newest_whole_window(&[]), None);
    }

    #[test]
    fn windows_are_ten_minutes_of_the_store_clock() {
        assert_eq!(segment_window(0), 0);
        assert_eq!(segment_window(SEGMENT_WINDOW_MS - 1), 0);
        assert_eq!(segment_window(SEGMENT_WINDOW_MS), 1);
    }
}
