//! Tokenizing apart from the index: a segment part's (or one body's) words, found, folded
//! and numbered among that part's own distinct words. A pure function of the bytes, so an
//! embedder may run it on another thread (the driver does, on a bounded blocking pool)
//! and hand the result in with the part's completion; the simulation runs it inline.
//! The index then meets each of a part's distinct words once, not each word of each body.
//!
//! The words are exactly the tokenizer's (`query::words`): only their numbering is new.
//! A part a writer stored with its words (schema 2) is not tokenized again: its words are
//! taken as they are, the same numbering the writer's tokenizing gave.

use super::query::{is_word_char, TOKENIZER};
#[cfg(test)]
use super::varint::varints;
use super::varint::{push_varint, put_short_varint, put_varint, VARINT_MAX};
use crate::format::segment::SEGMENT_SHORT_WORD_NUMBERS_MAX;
use crate::format::{SegmentBody, SegmentName, SegmentPart, SegmentWords};
use crate::hash::Hash32;
use crate::hash_many::hashes_of;
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

/// The words of some bodies, each body's as ids into the part's own distinct words.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prepared {
    /// The distinct folded words in order of first occurrence, end to end.
    text: String,
    /// By local word id: its end in `text` (it starts where the one before ends).
    ends: Vec<u32>,
    /// By local word id: its hash (see [`word_hash`]), taken here so the index's lookups
    /// of a part's words need not hash them again on the replica's thread.
    hashes: Vec<u64>,
    /// Every body's words as local word ids, each a LEB128 varint, body after body: what
    /// the index keeps of a body for phrases, encoded here (off the replica's thread) in
    /// the part's own numbering, which the index translates through one table a part.
    varints: Vec<u8>,
    bodies: Vec<PreparedBody>,
    /// By local word, its holders: the bodies (indices in `bodies`, ascending) holding
    /// it, word after word. The index puts a part's bodies in a word's posting together,
    /// so a posting's memory is met once a part, not once a body (its cache misses were
    /// most of an insert's time at a million bodies).
    holders: Vec<u32>,
    /// By local word: the end of its holders in `holders`.
    holder_ends: Vec<u32>,
    /// Whether the words came with the part, not from tokenizing its bodies.
    words_taken: bool,
}

/// One body of a [`Prepared`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PreparedBody {
    /// The body's hash, verified against its bytes.
    pub hash: Hash32,
    /// Its bytes' length.
    pub len: usize,
    /// Its words' end among the part's words, counted in words (they start where the
    /// body before ends).
    words_end: u32,
    /// Its words' end in [`Prepared::varints`].
    varints_end: u32,
    /// How many distinct words it holds.
    pub distinct: u32,
}

/// A segment part read for the index, tokenized by [`prepare_part`]: handed back with the
/// read's completion ([`crate::Input::BlobDonePrepared`]) so the replica's thread does
/// not tokenize it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreparedPart {
    pub(crate) name: SegmentName,
    /// None: the part does not decode under its name.
    pub(crate) prepared: Option<Prepared>,
}

/// Decodes the part read under `name`, keeps the bodies that hash to their hash (one that
/// does not is dropped, never trusted: it costs a blob read), and takes their words: the
/// ones the part carries when this tokenizer found them, they are well formed and every
/// body verified; else it tokenizes the verified bodies.
pub fn prepare_part(bytes: &[u8], name: &SegmentName) -> PreparedPart {
    let prepared = SegmentPart::decode_named(bytes, name).ok().map(|part| {
        let bodies: Vec<&[u8]> = part.bodies.iter().map(|b| b.body.as_slice()).collect();
        let verified: Vec<bool> =
            hashes_of(&bodies).iter().zip(&part.bodies).map(|(h, b)| *h == b.hash).collect();
        let carried = part.words.filter(|w| w.tokenizer == TOKENIZER && verified.iter().all(|v| *v));
        match carried.and_then(|words| Preparer::from_words(&part.bodies, words)) {
            Some(prepared) => prepared,
            None => {
                let mut p = Preparer::default();
                for (b, _) in part.bodies.iter().zip(&verified).filter(|(_, v)| **v) {
                    p.body(b.hash, &b.body);
                }
                p.finish()
            }
        }
    });
    PreparedPart { name: *name, prepared }
}

/// The parts of one label's segment, as `SegmentPart::split` makes them, each carrying its
/// bodies' words: what a writer of segments creates (the compactor, and the search
/// benchmark's world as the compactor would write it).
pub fn segment_parts(bodies: impl IntoIterator<Item = SegmentBody>) -> Option<Vec<SegmentPart>> {
    segment_parts_reusing(bodies, &HashMap::default())
}

/// [`segment_parts`], taking the words of a body in `carried` from the earlier part that
/// carried them instead of tokenizing it again: the same parts, byte for byte, as long as
/// those words are the tokenizer's (the trust SPEC 10.17 gives a part's words).
pub(crate) fn segment_parts_reusing(
    bodies: impl IntoIterator<Item = SegmentBody>,
    carried: &CarriedBodies,
) -> Option<Vec<SegmentPart>> {
    let mut parts = SegmentPart::split(bodies)?;
    for part in &mut parts {
        part.words = Some(words_reusing(&part.bodies, carried));
    }
    Some(parts)
}

/// The words of `bodies`, in their order, as a part carries them.
pub(crate) fn words_of(bodies: &[SegmentBody]) -> SegmentWords {
    words_reusing(bodies, &HashMap::default())
}

/// By body hash: the part that carried the body's words, and the body's place in it.
pub(crate) type CarriedBodies = HashMap<Hash32, (Arc<CarriedWords>, u32)>;

/// The words a segment part carries, opened for a later segment of the same label: the
/// bodies it keeps take their words from here, so only its new bodies are tokenized (on
/// bodies of random bytes, tokenizing was a quarter of a `collect` run).
#[derive(Debug)]
pub(crate) struct CarriedWords {
    text: String,
    /// By word number: its end in `text`.
    ends: Vec<u32>,
    numbers: Vec<u32>,
    /// By body: where its words start in `numbers`, and one more entry for the end.
    starts: Vec<u32>,
}

impl CarriedWords {
    /// The words of a decoded part (their shape checked on decode), when this tokenizer
    /// found them.
    pub(crate) fn open(words: SegmentWords) -> Option<Arc<CarriedWords>> {
        if words.tokenizer != TOKENIZER {
            return None;
        }
        let numbers = words.numbers().collect();
        let ends =
            words.lens.iter().scan(0, |end, len| Some(core::mem::replace(end, *end + len) + len)).collect();
        let starts = core::iter::once(0)
            .chain(
                words.counts.iter().scan(0, |end, count| Some(core::mem::replace(end, *end + count) + count)),
            )
            .collect();
        Some(Arc::new(CarriedWords { text: words.text, ends, numbers, starts }))
    }

    fn word(&self, number: u32) -> &[u8] {
        let start = if number == 0 { 0 } else { self.ends[number as usize - 1] as usize };
        &self.text.as_bytes()[start..self.ends[number as usize] as usize]
    }

    fn body(&self, i: u32) -> &[u32] {
        &self.numbers[self.starts[i as usize] as usize..self.starts[i as usize + 1] as usize]
    }
}

/// The words of `bodies`, each taken from `carried` where it is there, else tokenized.
fn words_reusing(bodies: &[SegmentBody], carried: &CarriedBodies) -> SegmentWords {
    let mut p = Preparer::default();
    // The carried part in hand, and its word numbers' local ids (`u32::MAX`: not met yet):
    // a part's and a segment's bodies are both in hash order, so it changes rarely.
    let mut from: Option<(Arc<CarriedWords>, Vec<u32>)> = None;
    for b in bodies {
        let Some((words, i)) = carried.get(&b.hash) else {
            p.body(b.hash, &b.body);
            continue;
        };
        if !from.as_ref().is_some_and(|(held, _)| Arc::ptr_eq(held, words)) {
            from = Some((words.clone(), vec![u32::MAX; words.ends.len()]));
        }
        let (words, ids) = from.as_mut().expect("the carried part in hand");
        let distinct_start = p.distinct.len();
        for &number in words.body(*i) {
            let id = match ids[number as usize] {
                u32::MAX => {
                    let word = words.word(number);
                    let id = p.word_id(hash_of(word), word);
                    ids[number as usize] = id;
                    id
                }
                id => id,
            };
            p.push_word(id);
        }
        p.end_body(b.hash, b.body.len(), distinct_start);
    }
    let (out, numbers) = (p.out, p.words);
    let lens = out.ends.iter().scan(0, |start, &end| Some(end - core::mem::replace(start, end))).collect();
    let counts = out
        .bodies
        .iter()
        .scan(0, |start, b| Some(b.words_end - core::mem::replace(start, b.words_end)))
        .collect();
    SegmentWords::new(TOKENIZER, out.text, lens, counts, &numbers)
}

/// One body, tokenized (its hash as given).
pub(crate) fn prepare_body(hash: Hash32, body: &[u8]) -> Prepared {
    let mut p = Preparer::default();
    p.body(hash, body);
    p.finish()
}

/// Some bodies, tokenized together (their hashes as given).
#[cfg(test)]
pub(crate) fn prepare_many<'a>(bodies: impl IntoIterator<Item = (Hash32, &'a [u8])>) -> Prepared {
    let mut p = Preparer::default();
    for (hash, body) in bodies {
        p.body(hash, body);
    }
    p.finish()
}

impl Prepared {
    pub(crate) fn bodies(&self) -> &[PreparedBody] {
        &self.bodies
    }

    /// Body `i`'s words as local word ids, each a LEB128 varint, in order.
    pub(crate) fn body_varints(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.bodies[i - 1].varints_end as usize };
        &self.varints[start..self.bodies[i].varints_end as usize]
    }

    /// Body `i`'s words as local word ids, in order.
    #[cfg(test)]
    pub(crate) fn body_words(&self, i: usize) -> Vec<u32> {
        varints(self.body_varints(i)).collect()
    }

    /// The hash of the word with local id `id`: [`word_hash`] of it.
    pub(crate) fn word_hash(&self, id: u32) -> u64 {
        finish_hash(self.hashes[id as usize])
    }

    /// The folded word with local id `id`.
    pub(crate) fn word(&self, id: u32) -> &str {
        let start = if id == 0 { 0 } else { self.ends[id as usize - 1] as usize };
        &self.text[start..self.ends[id as usize] as usize]
    }

    /// The bodies (indices) holding local word `id`, ascending.
    pub(crate) fn holders(&self, id: u32) -> &[u32] {
        let start = if id == 0 { 0 } else { self.holder_ends[id as usize - 1] as usize };
        &self.holders[start..self.holder_ends[id as usize] as usize]
    }

    /// Whether the words came with the segment part rather than from tokenizing it.
    pub(crate) fn words_taken(&self) -> bool {
        self.words_taken
    }

    /// How many distinct words the bodies hold.
    pub(crate) fn word_count(&self) -> usize {
        self.ends.len()
    }
}

/// Builds a [`Prepared`]: the distinct words in an open-addressing table probed with a
/// hash computed while the word is scanned (a general map would hash the word again, and
/// its lookups and compares were a quarter of a build's time at a million bodies).
#[derive(Default)]
struct Preparer {
    out: Prepared,
    /// Every body's words as local word ids, body after body.
    words: Vec<u32>,
    /// Local word id + 1 by slot, 0 when empty; a power of two long, at most half full.
    slots: Vec<u32>,
    /// A word folded, as bytes: pushing a byte is a copy where pushing a `char` encodes
    /// it (a third of folding a word with a capital).
    folded: Vec<u8>,
    /// By local word id: the number of the last body that met it (from 1), and how many
    /// bodies hold it.
    met_by: Vec<u32>,
    counts: Vec<u32>,
    /// Every body's distinct words, body after body.
    distinct: Vec<u32>,
}

/// FxHash's multiplier: a word's hash takes its folded bytes one at a time.
const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

fn hash_step(h: u64, byte: u8) -> u64 {
    (h.rotate_left(5) ^ u64::from(byte)).wrapping_mul(SEED)
}

fn hash_of(word: &[u8]) -> u64 {
    word.iter().fold(0, |h, b| hash_step(h, *b))
}

/// A folded word's hash for a hash table: [`hash_of`] with its well-mixed high bits
/// brought down, as `rustc_hash` finishes (a table takes its bucket from the low bits).
/// Not keyed: the index's word map is as open to chosen words as it was with FxHash.
pub(crate) fn word_hash(word: &[u8]) -> u64 {
    finish_hash(hash_of(word))
}

fn finish_hash(h: u64) -> u64 {
    h.rotate_left(26)
}

impl Preparer {
    /// The [`Prepared`] of a part's `bodies` from the words it carries (their shape
    /// checked on decode), or None when a word is listed twice: then the part is
    /// tokenized, never trusted to number words the index would post twice.
    fn from_words(bodies: &[SegmentBody], words: SegmentWords) -> Option<Prepared> {
        let mut p = Preparer::default();
        // The words' count is known: every table sized once, the slots never rehashed.
        let count = words.lens.len();
        p.slots = vec![0; (2 * count).next_power_of_two().max(1 << 10)];
        p.out.text.reserve(words.text.len());
        p.out.ends.reserve(count);
        p.out.hashes.reserve(count);
        p.met_by.reserve(count);
        p.counts.reserve(count);
        let mut start = 0;
        for &len in &words.lens {
            let word = &words.text.as_bytes()[start..start + len as usize];
            start += len as usize;
            let next = p.out.ends.len() as u32;
            if p.word_id(hash_of(word), word) != next {
                return None;
            }
        }
        // One pass over the numbers: each body's distinct words noted, and its words
        // encoded as the index keeps them. Both without a branch on the word (whether a
        // body met it before, how long its varint is): those mispredicted often enough to
        // be most of the pass's time. The numbers are read in place, at their width.
        let (mut varints, end) = if words.lens.len() <= SEGMENT_SHORT_WORD_NUMBERS_MAX {
            p.take_numbers::<2>(bodies, &words)
        } else {
            p.take_numbers::<4>(bodies, &words)
        };
        varints.truncate(end);
        p.out.varints = varints;
        p.out.words_taken = true;
        Some(p.finish())
    }

    /// [`Preparer::from_words`]'s pass over the numbers of `words`, each `W` bytes: the
    /// bodies ended, their distinct words noted, and their words as varints (the bytes,
    /// and where they end). Every slice is taken once, outside the loop: the pass is a
    /// part's every word, and reloading the buffers for each was much of its time.
    fn take_numbers<const W: usize>(
        &mut self,
        bodies: &[SegmentBody],
        words: &SegmentWords,
    ) -> (Vec<u8>, usize) {
        let total = words.words.len() / W;
        // A number below 2^16 takes at most three varint bytes; a wider one five.
        let most = if W == 2 { 3 } else { VARINT_MAX };
        let mut varints = vec![0u8; most * total + VARINT_MAX];
        let mut distinct = vec![0u32; total];
        let (met_by, counts) = (&mut self.met_by[..], &mut self.counts[..]);
        let (mut at, mut end, mut found) = (0usize, 0usize, 0usize);
        for (i, (b, &count)) in bodies.iter().zip(&words.counts).enumerate() {
            let body = i as u32 + 1;
            let distinct_start = found;
            for number in words.words[W * at..W * (at + count as usize)].chunks_exact(W) {
                let id = if W == 2 {
                    u32::from(u16::from_le_bytes([number[0], number[1]]))
                } else {
                    u32::from_le_bytes([number[0], number[1], number[2], number[3]])
                };
                let first = met_by[id as usize] != body;
                met_by[id as usize] = body;
                counts[id as usize] += u32::from(first);
                distinct[found] = id;
                found += usize::from(first);
                end = if W == 2 {
                    put_short_varint(&mut varints, end, id)
                } else {
                    put_varint(&mut varints, end, id)
                };
            }
            at += count as usize;
            let words_end = at as u32;
            let varints_end = end as u32;
            let distinct = (found - distinct_start) as u32;
            self.out.bodies.push(PreparedBody {
                hash: b.hash,
                len: b.body.len(),
                words_end,
                varints_end,
                distinct,
            });
        }
        distinct.truncate(found);
        self.distinct = distinct;
        (varints, end)
    }

    fn body(&mut self, hash: Hash32, body: &[u8]) {
        let distinct_start = self.distinct.len();
        if body.is_ascii() {
            self.ascii_body(body);
        } else {
            self.utf8_body(body);
        }
        self.end_body(hash, body.len(), distinct_start);
    }

    /// Ends the body being prepared, whose distinct words begin at `distinct_start`.
    fn end_body(&mut self, hash: Hash32, len: usize, distinct_start: usize) {
        self.end_body_at(hash, len, self.words.len() as u32, distinct_start);
    }

    /// Ends a body whose words end at `words_end`.
    fn end_body_at(&mut self, hash: Hash32, len: usize, words_end: u32, distinct_start: usize) {
        let distinct = (self.distinct.len() - distinct_start) as u32;
        let varints_end = self.out.varints.len() as u32;
        self.out.bodies.push(PreparedBody { hash, len, words_end, varints_end, distinct });
    }

    /// The next word of the body being prepared; the first time the body meets it, it is
    /// noted among the body's distinct words.
    fn push_word(&mut self, id: u32) {
        self.words.push(id);
        let body = self.out.bodies.len() as u32 + 1;
        if self.met_by[id as usize] != body {
            self.met_by[id as usize] = body;
            self.counts[id as usize] += 1;
            self.distinct.push(id);
        }
    }

    /// The common case, byte by byte: for ASCII, `char::is_alphanumeric` is
    /// `u8::is_ascii_alphanumeric` and the lowercase mapping is the ASCII one, so a word is
    /// a slice of the body, folded into a buffer only when it holds a capital, and hashed
    /// folded as it is scanned.
    fn ascii_body(&mut self, body: &[u8]) {
        let mut at = 0;
        loop {
            while at < body.len() && ASCII_CLASS[body[at] as usize] == SEPARATOR {
                at += 1;
            }
            if at == body.len() {
                return;
            }
            let start = at;
            let mut capital = false;
            let mut h = 0;
            while at < body.len() {
                let class = ASCII_CLASS[body[at] as usize];
                if class == SEPARATOR {
                    break;
                }
                capital |= class == CAPITAL;
                h = hash_step(h, body[at].to_ascii_lowercase());
                at += 1;
            }
            let id = self.folded_word_id(h, &body[start..at], capital, false);
            self.push_word(id);
        }
    }

    /// A body that is not all ASCII, byte by byte as [`Preparer::ascii_body`] with each
    /// character beyond ASCII decoded in place: the words of `utf8_chunks` and
    /// `raw_words`, whose iterators were most of tokenizing a body of random bytes. A byte
    /// that starts no valid character reads as U+FFFD, which is no word's: it ends a
    /// word (the bytes of an invalid sequence after its first are continuation bytes,
    /// which start no character either, so each ends a word alone as the sequence does).
    fn utf8_body(&mut self, body: &[u8]) {
        let mut at = 0;
        while at < body.len() {
            let start = at;
            let (mut capital, mut wide, mut h) = (false, false, 0);
            while at < body.len() {
                let b = body[at];
                if b < 0x80 {
                    let class = ASCII_CLASS[b as usize];
                    if class == SEPARATOR {
                        break;
                    }
                    capital |= class == CAPITAL;
                    h = hash_step(h, b.to_ascii_lowercase());
                    at += 1;
                } else {
                    match char_at(body, at) {
                        Some((c, len)) if is_word_char(c) => {
                            wide = true;
                            at += len;
                        }
                        _ => break,
                    }
                }
            }
            if at == start {
                // Not a word's byte: a separator, a byte of a character that is not
                // alphanumeric (its continuation bytes start no character), or invalid.
                at += 1;
                continue;
            }
            let id = self.folded_word_id(h, &body[start..at], capital, wide);
            self.push_word(id);
        }
    }

    /// The local id of `word` folded to lower case, `h` the hash of its ASCII lowercase:
    /// taken as it is without a `capital`, folded into the reused buffer with one, and by
    /// Unicode's rules (and hashed again) when it is `wide`, holding a character beyond
    /// ASCII.
    fn folded_word_id(&mut self, h: u64, word: &[u8], capital: bool, wide: bool) -> u32 {
        if !capital && !wide {
            return self.word_id(h, word);
        }
        let mut folded = core::mem::take(&mut self.folded);
        folded.clear();
        let h = if wide {
            fold_wide(core::str::from_utf8(word).expect("whole characters"), &mut folded);
            hash_of(&folded)
        } else {
            folded.extend(word.iter().map(u8::to_ascii_lowercase));
            h
        };
        let id = self.word_id(h, &folded);
        self.folded = folded;
        id
    }

    /// The local id of folded `word`, whose hash is `h`; a new one for a word not met.
    fn word_id(&mut self, h: u64, word: &[u8]) -> u32 {
        if self.slots.is_empty() {
            self.slots = vec![0; 1 << 10];
        }
        let mask = self.slots.len() - 1;
        let mut at = (h >> 32) as usize & mask;
        loop {
            match self.slots[at] {
                0 => break,
                slot => {
                    let id = slot - 1;
                    if self.out.hashes[id as usize] == h && self.out.word(id).as_bytes() == word {
                        return id;
                    }
                }
            }
            at = (at + 1) & mask;
        }
        let id = self.out.ends.len() as u32;
        // The tokenizer's words are valid UTF-8: slices of a str split at characters, or
        // their folds.
        self.out.text.push_str(core::str::from_utf8(word).expect("a word is UTF-8"));
        self.out.ends.push(self.out.text.len() as u32);
        self.out.hashes.push(h);
        self.met_by.push(0);
        self.counts.push(0);
        self.slots[at] = id + 1;
        if 2 * self.out.ends.len() > self.slots.len() {
            self.grow();
        }
        id
    }

    fn grow(&mut self) {
        let mut slots = vec![0u32; 2 * self.slots.len()];
        let mask = slots.len() - 1;
        for (id, h) in self.out.hashes.iter().enumerate() {
            let mut at = (h >> 32) as usize & mask;
            while slots[at] != 0 {
                at = (at + 1) & mask;
            }
            slots[at] = id as u32 + 1;
        }
        self.slots = slots;
    }

    /// Lists each word's holders, from the bodies' distinct words (a counting sort), and
    /// encodes tokenized bodies' words (taken words were encoded as they were read).
    fn finish(mut self) -> Prepared {
        let out = &mut self.out;
        if !out.words_taken {
            let mut start = 0;
            for body in &mut out.bodies {
                for &id in &self.words[start..body.words_end as usize] {
                    push_varint(&mut out.varints, id);
                }
                start = body.words_end as usize;
                body.varints_end = out.varints.len() as u32;
            }
        }
        let mut at = 0;
        // `counts` becomes each word's next free place in `holders`.
        for c in self.counts.iter_mut() {
            let n = *c;
            *c = at;
            at += n;
            out.holder_ends.push(at);
        }
        out.holders = vec![0; at as usize];
        let mut distinct = self.distinct.iter();
        for (i, body) in out.bodies.iter().enumerate() {
            for &w in distinct.by_ref().take(body.distinct as usize) {
                out.holders[self.counts[w as usize] as usize] = i as u32;
                self.counts[w as usize] += 1;
            }
        }
        self.out
    }
}

/// [`fold_into`](super::query::fold_into)'s fold of a word that is not all ASCII, as bytes: each character
/// lowercased (an ASCII one as ASCII lowercases it, which `char::to_lowercase` agrees
/// with), without the `String`'s encoding of each ASCII `char`.
fn fold_wide(word: &str, out: &mut Vec<u8>) {
    for c in word.chars() {
        if c.is_ascii() {
            out.push((c as u8).to_ascii_lowercase());
        } else {
            for lower in c.to_lowercase() {
                out.extend_from_slice(lower.encode_utf8(&mut [0; 4]).as_bytes());
            }
        }
    }
}

/// The character beginning at `bytes[at]` and its length in bytes, when a valid UTF-8
/// one does (no overlong form, no surrogate, at most U+10FFFF: `str`'s rules); `at` is
/// not ASCII.
fn char_at(bytes: &[u8], at: usize) -> Option<(char, usize)> {
    let lead = bytes[at];
    let (len, least, bits) = match lead {
        0xC2..=0xDF => (2, 0x80, lead & 0x1F),
        0xE0..=0xEF => (3, 0x800, lead & 0x0F),
        0xF0..=0xF4 => (4, 0x1_0000, lead & 0x07),
        _ => return None,
    };
    let rest = bytes.get(at + 1..at + len)?;
    let mut code = u32::from(bits);
    for &b in rest {
        if b & 0xC0 != 0x80 {
            return None;
        }
        code = code << 6 | u32::from(b & 0x3F);
    }
    if code < least {
        return None;
    }
    char::from_u32(code).map(|c| (c, len))
}

const SEPARATOR: u8 = 0;
const CAPITAL: u8 = 2;

/// By byte: a separator, a lowercase letter or digit (1), or a capital.
const ASCII_CLASS: [u8; 256] = {
    let mut class = [SEPARATOR; 256];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        if c.is_ascii_uppercase() {
            class[b] = CAPITAL;
        } else if c.is_ascii_alphanumeric() {
            class[b] = 1;
        }
        b += 1;
    }
    class
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::query::body_words;

    fn words_of(p: &Prepared, i: usize) -> Vec<String> {
        p.body_words(i).iter().map(|id| p.word(*id).to_string()).collect()
    }

    #[test]
    fn words_reused_from_carrying_parts_are_the_words_tokenizing_finds() {
        let bodies: Vec<SegmentBody> = [
            &b"Red fox, red DOG"[..],
            "Caf\u{e9} \u{3a3}\u{391}\u{3a3} fox \u{6771}\u{4eac}".as_bytes(),
            b"dog\xff\xfefox 42 red",
            b"",
            b"fox fox FOX",
        ]
        .iter()
        .map(|b| segment_body(b))
        .collect();
        // Two earlier parts carry bodies 0 to 2 and 2 to 4 (body 2 twice, its first
        // carrier wins); body 3 is new.
        let mut carried = CarriedBodies::default();
        for held in [&bodies[..3], &bodies[2..]] {
            let words = CarriedWords::open(super::words_of(held)).expect("this tokenizer's");
            for (i, b) in held.iter().enumerate().filter(|(_, b)| b.body != b"") {
                carried.entry(b.hash).or_insert((words.clone(), i as u32));
            }
        }
        assert_eq!(words_reusing(&bodies, &carried), super::words_of(&bodies));
        let mut reversed = bodies.clone();
        reversed.reverse();
        assert_eq!(words_reusing(&reversed, &carried), super::words_of(&reversed));
        let foreign = SegmentWords { tokenizer: TOKENIZER + 1, ..super::words_of(&bodies) };
        assert!(CarriedWords::open(foreign).is_none(), "another tokenizer's words are not carried");
    }

    #[test]
    fn a_part_numbers_each_distinct_word_once_across_its_bodies() {
        let mut p = Preparer::default();
        p.body(Hash32::of(b"a"), b"Red dog, red DOG");
        p.body(Hash32::of(b"b"), "dog caf\u{e9} Red".as_bytes());
        let p = p.finish();
        assert_eq!(p.word_count(), 3);
        assert_eq!(words_of(&p, 0), ["red", "dog", "red", "dog"]);
        assert_eq!(words_of(&p, 1), ["dog", "café", "red"]);
        assert_eq!(p.body_words(1), [1, 2, 0]);
        assert_eq!((p.bodies()[0].distinct, p.bodies()[1].distinct), (2, 3));
        assert_eq!((p.holders(0), p.holders(1), p.holders(2)), (&[0, 1][..], &[0, 1][..], &[1][..]));
    }

    #[test]
    fn the_table_grows_past_its_first_size_and_keeps_every_word() {
        let text: String = (0..5_000).map(|i| format!("w{i} ")).collect();
        let twice = format!("{text}{text}");
        let p = prepare_body(Hash32::of(twice.as_bytes()), twice.as_bytes());
        assert_eq!(p.word_count(), 5_000);
        assert_eq!(words_of(&p, 0), body_words(twice.as_bytes()));
    }

    fn segment_body(text: &[u8]) -> SegmentBody {
        SegmentBody { hash: Hash32::of(text), body: text.to_vec() }
    }

    fn name() -> SegmentName {
        SegmentName { bits: 1, label: 0, window: 3, part: 0 }
    }

    /// The part's preparation, and whether it took the part's words.
    fn prepared(part: &SegmentPart) -> (Prepared, bool) {
        let mut p = prepare_part(&part.encode(), &name()).prepared.expect("decodes");
        let taken = core::mem::take(&mut p.words_taken);
        (p, taken)
    }

    fn worded(bodies: &[&[u8]]) -> SegmentPart {
        let mut parts = segment_parts(bodies.iter().map(|b| segment_body(b))).expect("fits");
        assert_eq!(parts.len(), 1);
        parts.remove(0)
    }

    #[test]
    fn a_part_s_words_are_taken_as_tokenizing_its_bodies_would_number_them() {
        let part = worded(&[b"Red dog, red DOG", "dog caf\u{e9} Red".as_bytes(), b""]);
        let mut plain = part.clone();
        plain.words = None;
        let (from_words, taken) = prepared(&part);
        assert!(taken);
        assert_eq!(prepared(&plain), (from_words, false));
    }

    #[test]
    fn words_of_another_tokenizer_a_word_listed_twice_or_a_forged_body_are_not_taken() {
        let part = worded(&[b"alpha beta", b"beta gamma"]);
        let (tokenized, _) = prepared(&SegmentPart { words: None, ..part.clone() });

        let mut other = part.clone();
        other.words.as_mut().expect("words").tokenizer = TOKENIZER + 1;
        assert_eq!(prepared(&other), (tokenized.clone(), false));

        // "alpha" twice: well formed (the shape rules do not compare words), not taken.
        let mut twice = part.clone();
        let w = twice.words.as_mut().expect("words");
        w.text = "alphabetaalpha".into();
        w.lens = vec![5, 4, 5];
        assert_eq!(SegmentPart::decode(&twice.encode()).as_ref(), Ok(&twice));
        assert_eq!(prepared(&twice), (tokenized, false));

        // A body that does not hash to its hash: the others are tokenized, its words unused.
        let mut forged = part.clone();
        forged.bodies[0].body = b"alpha omega".to_vec();
        let (p, taken) = prepared(&forged);
        assert!(!taken);
        assert_eq!(p.bodies().len(), 1);
        assert_eq!(p.bodies()[0].hash, part.bodies[1].hash);
    }

    /// Characters of one to four bytes, letters and not, with and without a lowercase
    /// (U+212A, the Kelvin sign, lowercases to ASCII `k`; U+0130 to two characters), and
    /// sequences `str` refuses: cut short, overlong, a surrogate, past U+10FFFF, a lone
    /// continuation byte.
    const UTF8_PIECES: &[&[u8]] = &[
        b"a",
        b"Z",
        b"7",
        b" ",
        b",",
        "\u{e9}".as_bytes(),
        "\u{c9}".as_bytes(),
        "\u{3a3}".as_bytes(),
        "\u{212a}".as_bytes(),
        "\u{130}".as_bytes(),
        "\u{6771}".as_bytes(),
        "\u{2014}".as_bytes(),
        "\u{a0}".as_bytes(),
        "\u{1d400}".as_bytes(),
        "\u{1f600}".as_bytes(),
        "\u{10ffff}".as_bytes(),
        &[0xE6, 0x9D],
        &[0xF0, 0x9D, 0x90],
        &[0xC3],
        &[0xC0, 0xAF],
        &[0xE0, 0x80, 0xAF],
        &[0xF0, 0x80, 0x80, 0xAF],
        &[0xED, 0xA0, 0x80],
        &[0xF4, 0x90, 0x80, 0x80],
        &[0xF5],
        &[0x80],
        &[0xBF],
        &[0xFF],
    ];

    #[test]
    fn bytes_beyond_ascii_prepare_to_the_tokenizer_s_words() {
        for piece in UTF8_PIECES {
            for body in [piece.to_vec(), [b"x", *piece, b"y"].concat(), [*piece, b"Q", piece].concat()] {
                let p = prepare_body(Hash32::of(&body), &body);
                assert_eq!(words_of(&p, 0), body_words(&body), "{body:x?}");
            }
        }
    }

    proptest::proptest! {
        /// Any bodies prepare to the same words from their part's words as by tokenizing.
        #[test]
        fn a_worded_part_prepares_as_its_bodies_tokenized(
            bodies in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..48), 0..5),
        ) {
            let refs: Vec<&[u8]> = bodies.iter().map(Vec::as_slice).collect();
            let part = worded(&refs);
            let (from_words, taken) = prepared(&part);
            proptest::prop_assert!(taken);
            proptest::prop_assert_eq!(prepared(&SegmentPart { words: None, ..part }), (from_words, false));
        }

        /// Any bytes, ASCII or not, prepare to the tokenizer's words; also bytes made of
        /// characters, pieces of characters and forms `str` refuses.
        #[test]
        fn a_prepared_body_holds_the_tokenizer_s_words(
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
            ascii in proptest::collection::vec(0u8..0x80, 0..64),
            pieces in proptest::collection::vec(proptest::sample::select(UTF8_PIECES), 0..24),
        ) {
            let utf8: Vec<u8> = pieces.concat();
            for b in [&body, &ascii, &utf8] {
                let p = prepare_body(Hash32::of(b), b);
                proptest::prop_assert_eq!(words_of(&p, 0), body_words(b));
            }
        }
    }
}
