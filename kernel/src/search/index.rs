//! The content index: the words of every body it holds, by body hash. A body's words
//! depend only on its bytes, so an entry is right for every snapshot holding that body;
//! which documents hold it at a snapshot is the world's business (its body index).
//!
//! Each word has an id and a posting (the ids of the bodies holding it, compressed); each
//! body keeps its words in order, for phrases, as the varint word ids of the part it came
//! in (encoded with the part, off the replica's thread), and the part's table translates
//! them: an insert copies a body's words rather than translating each. A word no body
//! holds any more is forgotten and its id reused, as is a removed body's.

#[cfg(test)]
use super::prepare::prepare_body;
use super::prepare::{word_hash, Prepared};
use super::query::Query;
use super::varint::varints;
use crate::hash::Hash32;
use core::hash::BuildHasher;
use hashbrown::HashTable;
use roaring::RoaringBitmap;
use rustc_hash::FxBuildHasher;

struct Indexed {
    hash: Hash32,
    /// Its words in order as its part's word ids, each a LEB128 varint.
    words: Box<[u8]>,
    /// Its part's table: those ids' ids here.
    table: u32,
    /// Bytes this body costs the index (its words, posting entries and entries).
    cost: usize,
}

/// A part's word ids' ids in the index, shared by the bodies the part brought. An entry
/// is filled when a body holding the word is posted; one no held body uses may be stale
/// (its word forgotten and the id reused), and none reads it: a body reads only its words.
struct Table {
    ids: Box<[u32]>,
    /// Bodies held that use it.
    bodies: u32,
    /// Its part is still being inserted (see [`ContentIndex::end_part`]).
    open: bool,
}

#[derive(Default)]
pub(crate) struct ContentIndex {
    /// Each word's id, found by the word's hash (as the part's preparation took it, off
    /// the replica's thread: [`Prepared::word_hash`]) and its text, which only `words`
    /// holds.
    word_ids: HashTable<u32>,
    /// By word id: its hash, for the table to grow by.
    word_hashes: Vec<u64>,
    /// By word id: the word (None once forgotten) and the bodies holding it.
    words: Vec<(Option<Box<str>>, RoaringBitmap)>,
    free_word_ids: Vec<u32>,
    /// By word id: the container (body id >> 16) this index last put the word's bodies
    /// in, and at most how many bodies that container holds (see [`post`]).
    tails: Vec<(u32, u32)>,
    /// Each body's id, found by its hash, which only `bodies` holds: a map keyed by the
    /// hash held every hash twice (at a million bodies 77 MB of table; this one is 10).
    body_ids: HashTable<u32>,
    bodies: Vec<Option<Indexed>>,
    free_body_ids: Vec<u32>,
    /// By table id: a part's table (None once no body uses it and its part ended).
    tables: Vec<Option<Table>>,
    free_table_ids: Vec<u32>,
    bytes: usize,
    /// Words forgotten so far: a part's table begun before a forget may be stale.
    forgotten: u64,
}

/// A part being inserted: its table here, and its bodies inserted whose postings wait.
#[derive(Default)]
pub(crate) struct Translation {
    /// The part's table, and the index's count of forgotten words when it was begun.
    table: Option<(u32, u64)>,
    /// By body of the part: its id here while its postings wait, else `u32::MAX`.
    pending: Vec<u32>,
    any_pending: bool,
}

/// The most values a roaring array container holds; past it the container is a bitmap
/// (roaring's `ARRAY_LIMIT`, not exported).
const ARRAY_CONTAINER_MAX: u32 = 4_096;

/// Bytes a map entry and its bookkeeping cost, beyond the key's own bytes.
const ENTRY_OVERHEAD: usize = 48;

impl ContentIndex {
    pub fn contains(&self, hash: &Hash32) -> bool {
        self.body_id(hash).is_some()
    }

    pub fn is_empty(&self) -> bool {
        self.body_ids.is_empty()
    }

    #[cfg(test)]
    pub fn body_count(&self) -> usize {
        self.body_ids.len()
    }

    /// Bytes the index holds, as counted (an estimate within the allocator's slack).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Adds a body (its bytes hash to `hash`); adding one held is a no-op.
    #[cfg(test)]
    pub fn insert(&mut self, hash: Hash32, body: &[u8]) {
        let prepared = prepare_body(hash, body);
        let mut translation = Translation::default();
        self.insert_prepared(&prepared, 0, &mut translation);
        self.end_part(&prepared, &mut translation);
    }

    /// Adds body `i` of `part` (a no-op for one held), but for its postings:
    /// [`ContentIndex::post_pending`] puts it there, and must run before the index is
    /// read. `translation` is the part's: its table, shared by the part's bodies, whose
    /// words the index meets once per part rather than once per word of a body.
    pub fn insert_prepared(&mut self, part: &Prepared, i: usize, translation: &mut Translation) {
        let body = &part.bodies()[i];
        if self.contains(&body.hash) {
            return;
        }
        let table = match translation.table {
            Some((table, forgotten)) if forgotten == self.forgotten => table,
            // A word forgotten since the table was begun may have its id reused: the
            // part's bodies still to come take a new one.
            _ => {
                self.end_part(part, translation);
                let table = self.begin_table(part.word_count());
                translation.table = Some((table, self.forgotten));
                table
            }
        };
        if translation.pending.len() != part.bodies().len() {
            translation.pending = vec![u32::MAX; part.bodies().len()];
        }
        let id = self.free_body_ids.pop().unwrap_or(self.bodies.len() as u32);
        translation.pending[i] = id;
        translation.any_pending = true;
        let words: Box<[u8]> = part.body_varints(i).into();
        let cost = ENTRY_OVERHEAD + 32 + 4 * body.distinct as usize + words.len();
        self.tables[table as usize].as_mut().expect("a part's table is held").bodies += 1;
        let indexed = Indexed { hash: body.hash, words, table, cost };
        self.bytes += cost;
        if id as usize == self.bodies.len() {
            self.bodies.push(Some(indexed));
        } else {
            self.bodies[id as usize] = Some(indexed);
        }
        let bodies = &self.bodies;
        self.body_ids.insert_unique(table_hash(&body.hash), id, |i| table_hash(hash_at(bodies, *i)));
    }

    /// Puts the bodies of `part` inserted since the last call in their words' postings:
    /// word by word, so each posting's memory is met once. A word's id here is found the
    /// first time a body holding it is posted.
    pub fn post_pending(&mut self, part: &Prepared, translation: &mut Translation) {
        if !translation.any_pending {
            return;
        }
        let (table_id, _) = translation.table.expect("a body pending has its part's table");
        let pending = &translation.pending;
        for local in 0..part.word_count() as u32 {
            let holders = part.holders(local);
            // None: no body holding the word is pending.
            let Some(first) = holders.iter().position(|b| pending[*b as usize] != u32::MAX) else {
                continue;
            };
            let table = self.tables[table_id as usize].as_ref().expect("a part's table is held");
            let word_id = match table.ids[local as usize] {
                u32::MAX => {
                    let word_id = self.word_id(part.word_hash(local), part.word(local));
                    self.tables[table_id as usize].as_mut().expect("a part's table is held").ids
                        [local as usize] = word_id;
                    word_id
                }
                word_id => word_id,
            };
            // The posting and its tail once per word, not once per body.
            let posting = &mut self.words[word_id as usize].1;
            let tail = &mut self.tails[word_id as usize];
            let ids = holders[first..].iter().map(|b| pending[*b as usize]).filter(|id| *id != u32::MAX);
            post_run(posting, tail, ids);
        }
        translation.pending.fill(u32::MAX);
        translation.any_pending = false;
    }

    /// The part is inserted (or given up): its pending bodies are posted, and its table
    /// goes once no body uses it.
    pub fn end_part(&mut self, part: &Prepared, translation: &mut Translation) {
        self.post_pending(part, translation);
        if let Some((table, _)) = translation.table.take() {
            let t = self.tables[table as usize].as_mut().expect("a part's table is held");
            t.open = false;
            if t.bodies == 0 {
                self.free_table(table);
            }
        }
    }

    fn begin_table(&mut self, words: usize) -> u32 {
        let table = Table { ids: vec![u32::MAX; words].into(), bodies: 0, open: true };
        self.bytes += table_cost(words);
        match self.free_table_ids.pop() {
            Some(id) => {
                self.tables[id as usize] = Some(table);
                id
            }
            None => {
                self.tables.push(Some(table));
                (self.tables.len() - 1) as u32
            }
        }
    }

    fn free_table(&mut self, id: u32) {
        let table = self.tables[id as usize].take().expect("a part's table is held");
        self.bytes -= table_cost(table.ids.len());
        self.free_table_ids.push(id);
    }

    /// The id of `word`, whose hash is `hash`, if it is held.
    fn find_word(&self, hash: u64, word: &str) -> Option<u32> {
        let words = &self.words;
        self.word_ids.find(hash, |id| words[*id as usize].0.as_deref() == Some(word)).copied()
    }

    /// The id of `word`, whose hash is `hash`: a new one (its bytes counted) for a word
    /// not held.
    fn word_id(&mut self, hash: u64, word: &str) -> u32 {
        if let Some(id) = self.find_word(hash, word) {
            return id;
        }
        let word: Box<str> = word.into();
        self.bytes += word_cost(&word);
        let id = match self.free_word_ids.pop() {
            Some(id) => {
                self.words[id as usize] = (Some(word), RoaringBitmap::new());
                self.tails[id as usize] = (u32::MAX, 0);
                self.word_hashes[id as usize] = hash;
                id
            }
            None => {
                self.words.push((Some(word), RoaringBitmap::new()));
                self.tails.push((u32::MAX, 0));
                self.word_hashes.push(hash);
                (self.words.len() - 1) as u32
            }
        };
        let hashes = &self.word_hashes;
        self.word_ids.insert_unique(hash, id, |id| hashes[*id as usize]);
        id
    }

    /// Makes room for `bodies` more bodies at once (a build knows how many it will
    /// index): the tables do not hold an old copy beside a new one as they grow.
    pub fn reserve(&mut self, bodies: usize) {
        let held = &self.bodies;
        self.body_ids.reserve(bodies, |i| table_hash(hash_at(held, *i)));
        self.bodies.reserve(bodies);
    }

    /// Removes a body; its words no other body holds are forgotten.
    pub fn remove(&mut self, hash: &Hash32) {
        let bodies = &self.bodies;
        let Ok(entry) = self.body_ids.find_entry(table_hash(hash), |i| hash_at(bodies, *i) == hash) else {
            return;
        };
        let (id, _) = entry.remove();
        let indexed = self.bodies[id as usize].take().expect("an id names a body");
        let table = self.tables[indexed.table as usize].as_mut().expect("a body's table is held");
        for local in varints(&indexed.words) {
            let word_id = table.ids[local as usize];
            let (word, posting) = &mut self.words[word_id as usize];
            posting.remove(id);
            if posting.is_empty() {
                if let Some(word) = word.take() {
                    self.bytes -= word_cost(&word);
                    let hash = self.word_hashes[word_id as usize];
                    if let Ok(entry) = self.word_ids.find_entry(hash, |id| *id == word_id) {
                        entry.remove();
                    }
                    self.free_word_ids.push(word_id);
                    self.forgotten += 1;
                }
            }
        }
        table.bodies -= 1;
        if table.bodies == 0 && !table.open {
            self.free_table(indexed.table);
        }
        self.bytes -= indexed.cost;
        self.free_body_ids.push(id);
    }

    /// The bodies matching `query`: those holding every word, then, for phrases, those
    /// holding each phrase's words in order.
    #[cfg(test)]
    pub fn matching(&self, query: &Query) -> Vec<Hash32> {
        let Some(c) = self.candidates(query) else { return Vec::new() };
        c.ids.iter().filter(|id| self.holds(*id, &c)).filter_map(|id| self.hash_of(id).copied()).collect()
    }

    /// The bodies holding every word of `query` (None: a word no body holds), with its
    /// phrases as word ids, for [`ContentIndex::holds`] to check.
    pub fn candidates(&self, query: &Query) -> Option<Candidates> {
        let mut postings = Vec::new();
        for word in query.parts().iter().flatten() {
            postings.push(&self.words[self.find_word(word_hash(word.as_bytes()), word)? as usize].1);
        }
        // The rarest word first: its posting is the one cloned, and each intersection
        // after it is at most that small (a common word's posting is most of the index).
        postings.sort_by_key(|p| p.len());
        let mut postings = postings.into_iter();
        let mut ids = postings.next().cloned().unwrap_or_default();
        for posting in postings {
            ids &= posting;
        }
        let phrases = query
            .parts()
            .iter()
            .filter(|p| p.len() > 1)
            .map(|p| {
                p.iter().map(|w| self.find_word(word_hash(w.as_bytes()), w).expect("a word held")).collect()
            })
            .collect();
        Some(Candidates { ids, phrases })
    }

    /// Whether candidate body `id` holds the candidates' phrases.
    pub fn holds(&self, id: u32, c: &Candidates) -> bool {
        c.phrases.is_empty()
            || self.bodies[id as usize].as_ref().is_some_and(|b| {
                let table = &self.tables[b.table as usize].as_ref().expect("a body's table is held").ids;
                c.phrases.iter().all(|p| holds_phrase(&b.words, table, p))
            })
    }

    pub fn body_id(&self, hash: &Hash32) -> Option<u32> {
        self.body_ids.find(table_hash(hash), |i| hash_at(&self.bodies, *i) == hash).copied()
    }

    pub fn hash_of(&self, id: u32) -> Option<&Hash32> {
        self.bodies.get(id as usize)?.as_ref().map(|b| &b.hash)
    }
}

/// Puts body `id` in a word's `posting`, whose `tail` is the container (body id >> 16)
/// last put in and at most how many bodies it holds. Fresh body ids only grow, so most
/// often this is an append, and `try_push` appends to an array container without
/// searching it (a search of a posting was most of an insert's time at a million bodies,
/// its cache misses); but on a bitmap container (past 4,096 bodies) `try_push` first
/// scans for its maximum, where `insert` sets one bit. A container is a bitmap exactly
/// when it holds more than 4,096 (roaring converts at every insert and remove), so an
/// upper bound on the tail container's bodies below that says it is an array.
fn post(posting: &mut RoaringBitmap, tail: &mut (u32, u32), id: u32) {
    let container = id >> 16;
    if tail.0 != container {
        let first = container << 16;
        *tail = (container, posting.range_cardinality(first..=first | 0xffff) as u32);
    }
    // Removes only lower the true count, so `tail.1` stays an upper bound.
    if tail.1 >= ARRAY_CONTAINER_MAX || posting.try_push(id).is_err() {
        posting.insert(id);
    }
    tail.1 = tail.1.saturating_add(1);
}

/// Bytes a word costs the index: its text, and its entries in the word list and map.
fn word_cost(word: &str) -> usize {
    word.len() + 2 * ENTRY_OVERHEAD
}

/// Bytes a part's table of `words` ids costs.
fn table_cost(words: usize) -> usize {
    4 * words + ENTRY_OVERHEAD
}

/// Puts bodies `ids` (at least one, most often ascending and fresh) in a word's
/// `posting`, whose `tail` is as [`post`] keeps it. Into a bitmap container (a common
/// word's), a run goes as one `extend`: the container found once, each id a bit set,
/// where [`post`] would search the posting's containers for each.
fn post_run(posting: &mut RoaringBitmap, tail: &mut (u32, u32), mut ids: impl Iterator<Item = u32>) {
    let Some(first) = ids.next() else { return };
    let container = first >> 16;
    if tail.0 != container {
        let start = container << 16;
        *tail = (container, posting.range_cardinality(start..=start | 0xffff) as u32);
    }
    if tail.1 <= ARRAY_CONTAINER_MAX {
        post(posting, tail, first);
        ids.for_each(|id| post(posting, tail, id));
        return;
    }
    let (mut count, mut within) = (1u32, true);
    posting.extend(core::iter::once(first).chain(ids.inspect(|id| {
        count += 1;
        within &= *id >> 16 == container;
    })));
    // A run past its first container: the next post counts the tail's bodies again.
    *tail = if within { (container, tail.1.saturating_add(count)) } else { (u32::MAX, 0) };
}

/// A body hash's place in `body_ids`.
fn table_hash(hash: &Hash32) -> u64 {
    FxBuildHasher.hash_one(hash)
}

/// The hash of the body with id `id`, which the table holds.
fn hash_at(bodies: &[Option<Indexed>], id: u32) -> &Hash32 {
    &bodies[id as usize].as_ref().expect("the table holds ids of bodies held").hash
}

/// What a query needs of a body: its words (the ids of the bodies holding them all), and
/// its phrases as word ids.
pub(crate) struct Candidates {
    pub ids: RoaringBitmap,
    phrases: Vec<Vec<u32>>,
}

/// Whether the varint part word ids `words`, which `table` translates, hold `phrase` in
/// order, decoded in place: this runs for every candidate a phrase query passes, so it
/// allocates nothing.
fn holds_phrase(words: &[u8], table: &[u32], phrase: &[u32]) -> bool {
    let Some((&first, rest)) = phrase.split_first() else { return true };
    let mut at = 0;
    while at < words.len() {
        let mut ids = varints(&words[at..]).map(|local| table[local as usize]);
        let Some(id) = ids.next() else { return false };
        if id == first && rest.iter().all(|want| ids.next() == Some(*want)) {
            return true;
        }
        // On to the next varint: past this one's last byte (the one below 0x80).
        at += words[at..].iter().position(|b| *b < 0x80).map_or(words.len(), |end| end + 1);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::query::body_words;

    fn body(text: &str) -> (Hash32, Vec<u8>) {
        (Hash32::of(text.as_bytes()), text.as_bytes().to_vec())
    }

    fn matching(index: &ContentIndex, q: &str) -> Vec<Hash32> {
        let mut got = index.matching(&Query::parse(q).unwrap());
        got.sort();
        got
    }

    #[test]
    fn words_and_phrases_find_the_bodies_holding_them() {
        let mut index = ContentIndex::default();
        let (a, ab) = body("the big dog");
        let (b, bb) = body("a dog, big and red");
        index.insert(a, &ab);
        index.insert(b, &bb);
        let mut both = vec![a, b];
        both.sort();
        assert_eq!(matching(&index, "DOG big"), both);
        assert_eq!(matching(&index, "\"big dog\""), vec![a]);
        assert_eq!(matching(&index, "red"), vec![b]);
        assert!(matching(&index, "cat").is_empty());
    }

    #[test]
    fn removing_every_body_forgets_every_word_and_byte() {
        let mut index = ContentIndex::default();
        let bodies: Vec<_> =
            (0..300).map(|i| body(&format!("w{i} shared w{} x{}", i % 7, i * 131))).collect();
        for (h, b) in &bodies {
            index.insert(*h, b);
        }
        assert_eq!(index.body_count(), 300);
        assert_eq!(matching(&index, "shared").len(), 300);
        for (h, _) in &bodies[..150] {
            index.remove(h);
        }
        assert_eq!(matching(&index, "shared").len(), 150);
        for (h, _) in &bodies[150..] {
            index.remove(h);
        }
        assert_eq!(index.bytes(), 0);
        assert!(index.word_ids.is_empty());
        // Ids are reused: the tables do not grow on churn.
        for (h, b) in &bodies {
            index.insert(*h, b);
        }
        assert_eq!(index.bodies.len(), 300);
    }

    #[test]
    fn phrases_of_word_ids_of_several_bytes_match_only_in_order() {
        let mut index = ContentIndex::default();
        // 300 words first, so the phrase's words get ids past one varint byte (127).
        let (filler, fb) = body(&(0..300).map(|i| format!("f{i}")).collect::<Vec<_>>().join(" "));
        index.insert(filler, &fb);
        let (a, ab) = body("f299 late word f298 early");
        index.insert(a, &ab);
        let (b, bb) = body("word late f299");
        index.insert(b, &bb);
        assert!(index.find_word(word_hash(b"late"), "late").unwrap() > 127);
        assert_eq!(matching(&index, "\"f299 late word\""), vec![a]);
        assert_eq!(matching(&index, "\"late f299\""), vec![b]);
        let mut both = vec![filler, a];
        both.sort();
        assert_eq!(matching(&index, "\"f298\" f299"), both);
        assert!(matching(&index, "\"word f299\"").is_empty());
    }

    const WORDS: [&str; 6] = ["a", "b", "c", "dd", "Ée", "f1"];

    fn text(picks: &[u8]) -> String {
        picks.iter().map(|p| WORDS[*p as usize % WORDS.len()]).collect::<Vec<_>>().join(" ")
    }

    proptest::proptest! {
        /// Through any inserts and removes, the index finds exactly the bodies a plain
        /// scan of their words matches.
        #[test]
        fn the_index_agrees_with_a_scan_of_every_body(
            bodies in proptest::collection::vec(proptest::collection::vec(0u8..6, 0..12), 1..24),
            removed in proptest::collection::vec(proptest::bool::ANY, 24),
            queries in proptest::collection::vec((proptest::collection::vec(0u8..6, 1..4), proptest::bool::ANY), 1..8),
        ) {
            let mut index = ContentIndex::default();
            let mut held = std::collections::BTreeMap::new();
            for picks in &bodies {
                let (h, b) = body(&text(picks));
                index.insert(h, &b);
                held.insert(h, b);
            }
            for ((h, _), gone) in held.clone().iter().zip(&removed) {
                if *gone {
                    index.remove(h);
                    held.remove(h);
                }
            }
            for (picks, phrase) in &queries {
                let words = text(picks);
                let q = Query::parse(&if *phrase { format!("\"{words}\"") } else { words }).unwrap();
                let mut expected: Vec<Hash32> =
                    held.iter().filter(|(_, b)| q.matches(&body_words(b))).map(|(h, _)| *h).collect();
                expected.sort();
                let mut got = index.matching(&q);
                got.sort();
                proptest::prop_assert_eq!(got, expected);
            }
        }
    }

    /// A body's hash and bytes.
    type Body = (Hash32, Vec<u8>);

    fn expect_scan(
        index: &ContentIndex,
        held: &std::collections::BTreeMap<Hash32, Vec<u8>>,
        queries: &[(Vec<u8>, bool)],
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        for (picks, phrase) in queries {
            let words = text(picks);
            let q = Query::parse(&if *phrase { format!("\"{words}\"") } else { words }).unwrap();
            let expected: Vec<Hash32> =
                held.iter().filter(|(_, b)| q.matches(&body_words(b))).map(|(h, _)| *h).collect();
            let mut got = index.matching(&q);
            got.sort();
            proptest::prop_assert_eq!(got, expected);
        }
        Ok(())
    }

    proptest::proptest! {
        /// Parts inserted a few bodies a step, with bodies removed between steps (so words
        /// are forgotten and their ids reused while a part is half inserted, and the part
        /// goes on with a new table): the index finds exactly what a scan of the bodies held
        /// finds, and once every body is removed it holds no byte and no table.
        #[test]
        fn parts_inserted_in_steps_between_removes_agree_with_a_scan(
            parts in proptest::collection::vec(proptest::collection::vec(proptest::collection::vec(0u8..6, 0..8), 1..6), 1..5),
            steps in proptest::collection::vec((1usize..4, proptest::collection::vec(proptest::bool::ANY, 24)), 1..12),
            queries in proptest::collection::vec((proptest::collection::vec(0u8..6, 1..3), proptest::bool::ANY), 1..6),
        ) {
            let parts: Vec<(Prepared, Vec<Body>)> = parts
                .iter()
                .map(|texts| {
                    let bodies: Vec<_> = texts.iter().map(|picks| body(&text(picks))).collect();
                    let part = crate::search::prepare::prepare_many(bodies.iter().map(|(h, b)| (*h, b.as_slice())));
                    (part, bodies)
                })
                .collect();
            let mut index = ContentIndex::default();
            let mut held = std::collections::BTreeMap::new();
            let mut translation = Translation::default();
            let (mut part, mut next) = (0, 0);
            for (take, removes) in &steps {
                for ((h, _), gone) in held.clone().iter().zip(removes) {
                    if *gone {
                        index.remove(h);
                        held.remove(h);
                    }
                }
                for _ in 0..*take {
                    let Some((prepared, bodies)) = parts.get(part) else { break };
                    index.insert_prepared(prepared, next, &mut translation);
                    held.insert(bodies[next].0, bodies[next].1.clone());
                    next += 1;
                    if next == bodies.len() {
                        index.end_part(prepared, &mut translation);
                        (part, next) = (part + 1, 0);
                    }
                }
                if let Some((prepared, _)) = parts.get(part) {
                    index.post_pending(prepared, &mut translation);
                }
                expect_scan(&index, &held, &queries)?;
            }
            if let Some((prepared, _)) = parts.get(part) {
                index.end_part(prepared, &mut translation);
            }
            for h in held.keys() {
                index.remove(h);
            }
            proptest::prop_assert_eq!(index.bytes(), 0);
            proptest::prop_assert_eq!(index.tables.iter().flatten().count(), 0);
        }
    }

    #[test]
    fn an_indexed_body_holds_the_words_the_tokenizer_finds() {
        let text = "Σίσυφος ROLLS the Stone, straße 42 x\u{FFFD}y ÀB café";
        let mut index = ContentIndex::default();
        let (h, b) = body(text);
        index.insert(h, &b);
        assert_eq!(indexed_words(&index, &h), body_words(text.as_bytes()));
        let mut invalid = b"abc".to_vec();
        invalid.extend([0xff, b'D', b'e']);
        let h = Hash32::of(&invalid);
        index.insert(h, &invalid);
        assert_eq!(matching(&index, "de"), vec![h]);
    }

    /// A body's words as the index keeps them, translated through its part's table.
    fn indexed_words(index: &ContentIndex, hash: &Hash32) -> Vec<String> {
        let indexed = index.bodies[index.body_id(hash).unwrap() as usize].as_ref().unwrap();
        let table = &index.tables[indexed.table as usize].as_ref().unwrap().ids;
        varints(&indexed.words)
            .map(|local| index.words[table[local as usize] as usize].0.as_deref().unwrap().to_string())
            .collect()
    }

    proptest::proptest! {
        /// The ASCII path (bytes, folded only past a capital) finds the words the
        /// tokenizer finds, from any ASCII bytes.
        #[test]
        fn an_ascii_body_is_indexed_as_the_tokenizer_reads_it(
            body in proptest::collection::vec(0u8..0x80, 0..64),
        ) {
            let mut index = ContentIndex::default();
            let h = Hash32::of(&body);
            index.insert(h, &body);
            proptest::prop_assert_eq!(indexed_words(&index, &h), body_words(&body));
        }
    }

    #[test]
    fn a_reused_body_id_joins_the_postings_it_belongs_to() {
        let mut index = ContentIndex::default();
        let (a, ab) = body("red dog");
        let (b, bb) = body("red cat");
        let (c, cb) = body("red cat dog");
        index.insert(a, &ab);
        index.insert(b, &bb);
        index.remove(&a);
        // c takes a's id, below b's: every posting it joins already holds a larger id.
        index.insert(c, &cb);
        let mut both = vec![b, c];
        both.sort();
        assert_eq!(matching(&index, "red cat"), both);
        assert_eq!(matching(&index, "dog"), vec![c]);
        index.remove(&b);
        index.remove(&c);
        assert_eq!(index.bytes(), 0);
    }

    #[test]
    fn postings_past_an_array_container_and_across_containers_hold_every_body() {
        let mut index = ContentIndex::default();
        // Past 65,536 bodies (two containers), "all" past 4,096 in each (bitmaps).
        let bodies: Vec<_> = (0..70_000).map(|i| body(&format!("all n{} m{i}", i % 3))).collect();
        for (h, b) in &bodies {
            index.insert(*h, b);
        }
        assert_eq!(matching(&index, "all").len(), 70_000);
        // Free ids low in the first container, then reuse them out of order.
        for (h, _) in bodies.iter().step_by(7) {
            index.remove(h);
        }
        assert_eq!(matching(&index, "all").len(), 70_000 - 10_000);
        for (h, b) in bodies.iter().step_by(7) {
            index.insert(*h, b);
        }
        assert_eq!(matching(&index, "all").len(), 70_000);
        assert_eq!(matching(&index, "n1").len(), 70_000 / 3);
        assert_eq!(matching(&index, "m69999"), vec![bodies[69_999].0]);
    }

    #[test]
    fn a_part_inserted_over_several_steps_posts_each_body_once_its_step_ends() {
        let texts = ["red dog", "red cat", "blue dog", "red red fox"];
        let part =
            crate::search::prepare::prepare_many(texts.map(|t| (Hash32::of(t.as_bytes()), t.as_bytes())));
        let mut index = ContentIndex::default();
        // One body held already: the part's copy of it is passed over.
        let (held, hb) = body("blue dog");
        index.insert(held, &hb);
        let mut translation = Translation::default();
        index.insert_prepared(&part, 0, &mut translation);
        index.insert_prepared(&part, 2, &mut translation);
        index.post_pending(&part, &mut translation);
        assert_eq!(matching(&index, "dog").len(), 2);
        assert!(matching(&index, "cat").is_empty());
        index.insert_prepared(&part, 1, &mut translation);
        index.insert_prepared(&part, 3, &mut translation);
        index.post_pending(&part, &mut translation);
        assert_eq!(matching(&index, "red").len(), 3);
        assert_eq!(matching(&index, "\"red fox\""), vec![Hash32::of(b"red red fox")]);
        assert_eq!(matching(&index, "dog").len(), 2);
        index.end_part(&part, &mut translation);
        assert_eq!(index.tables.iter().flatten().count(), 2, "the held body's table and the part's");
        for t in texts {
            index.remove(&Hash32::of(t.as_bytes()));
        }
        assert_eq!(index.bytes(), 0);
        assert_eq!(index.tables.iter().flatten().count(), 0);
    }
}
