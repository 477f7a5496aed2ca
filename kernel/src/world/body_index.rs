//! The body index: which documents' current body has a given hash, in path order (the
//! hash lookup read, and the committer's "is this body already stored"). Almost every
//! hash is held by one document, so one path is kept inline and a set only for a hash
//! several documents share: a document costs one map entry, not a map entry and a set
//! node of its own (about 300 bytes a document at a million).

use super::path::Path;
use crate::hash::Hash32;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug, Default)]
pub(crate) struct BodyIndex {
    by_hash: BTreeMap<Hash32, Holders>,
}

/// The documents whose current body has one hash. The set is boxed so that a holder is
/// no larger than the path it holds: the index is built in place over the (hash, path)
/// pairs, with no second vector beside them (issue 11).
#[derive(Clone, Debug)]
enum Holders {
    One(Path),
    /// At least two. Boxed on purpose: inline, the set would make every holder larger.
    #[allow(clippy::box_collection)]
    Many(Box<BTreeSet<Path>>),
}

impl BodyIndex {
    /// The index of these (body hash, path) pairs, in any order, built in one pass.
    pub fn build(mut pairs: Vec<(Hash32, Path)>) -> BodyIndex {
        pairs.sort_unstable();
        // A holder is the size of a path, so this reuses the pairs' buffer.
        let mut grouped: Vec<(Hash32, Holders)> =
            pairs.into_iter().map(|(hash, path)| (hash, Holders::One(path))).collect();
        grouped.dedup_by(|later, kept| {
            if later.0 != kept.0 {
                return false;
            }
            if let Holders::One(path) = std::mem::replace(&mut later.1, Holders::Many(Box::default())) {
                kept.1.insert(path);
            }
            true
        });
        BodyIndex { by_hash: grouped.into_iter().collect() }
    }

    /// Every hash some document's current body has, in order.
    pub fn hashes(&self) -> impl Iterator<Item = &Hash32> {
        self.by_hash.keys()
    }

    pub fn insert(&mut self, hash: Hash32, path: Path) {
        match self.by_hash.entry(hash) {
            Entry::Vacant(v) => {
                v.insert(Holders::One(path));
            }
            Entry::Occupied(mut o) => o.get_mut().insert(path),
        }
    }

    pub fn remove(&mut self, hash: &Hash32, path: &Path) {
        let Some(holders) = self.by_hash.get_mut(hash) else { return };
        if holders.remove(path) {
            self.by_hash.remove(hash);
        }
    }

    /// The documents whose current body has this hash, in path order.
    pub fn paths(&self, hash: &Hash32) -> impl Iterator<Item = &Path> {
        let (one, many) = match self.by_hash.get(hash) {
            Some(Holders::One(path)) => (Some(path), None),
            Some(Holders::Many(set)) => (None, Some(&**set)),
            None => (None, None),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }

    /// The same, after `start_after` only: a seek into the hash's documents, so a page
    /// deep into a hash held by many costs its own length.
    pub fn paths_after<'a>(
        &'a self,
        hash: &Hash32,
        start_after: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Path> {
        use std::ops::Bound::{Excluded, Unbounded};
        let from = start_after.map_or(Unbounded, Excluded);
        let after = move |p: &&Path| start_after.is_none_or(|a| p.as_str() > a);
        let (one, many) = match self.by_hash.get(hash) {
            Some(Holders::One(path)) => (Some(path).filter(after), None),
            Some(Holders::Many(set)) => (None, Some(set.range::<str, _>((from, Unbounded)))),
            None => (None, None),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }
}

impl Holders {
    fn insert(&mut self, path: Path) {
        match self {
            Holders::One(held) if *held == path => {}
            Holders::One(_) => {
                let Holders::One(held) = std::mem::replace(self, Holders::Many(Box::default())) else {
                    unreachable!("matched One")
                };
                *self = Holders::Many(Box::new(BTreeSet::from([held, path])));
            }
            Holders::Many(set) => {
                set.insert(path);
            }
        }
    }

    /// Removes `path`; true when no document is left.
    fn remove(&mut self, path: &Path) -> bool {
        let Holders::Many(set) = self else {
            return matches!(self, Holders::One(held) if held == path);
        };
        set.remove(path);
        if set.len() == 1 {
            let last = set.pop_first().expect("one left");
            *self = Holders::One(last);
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Path {
        Path::parse(s).expect("path")
    }

    fn paths(index: &BodyIndex, hash: u8) -> Vec<&str> {
        index.paths(&Hash32([hash; 32])).map(Path::as_str).collect()
    }

    #[test]
    fn a_hash_lists_its_documents_in_path_order() {
        let mut index = BodyIndex::build(vec![
            (Hash32([1; 32]), p("/c")),
            (Hash32([2; 32]), p("/b")),
            (Hash32([1; 32]), p("/a")),
        ]);
        assert_eq!(paths(&index, 1), vec!["/a", "/c"]);
        assert_eq!(paths(&index, 2), vec!["/b"]);
        assert!(paths(&index, 3).is_empty());
        let after = |a| index.paths_after(&Hash32([1; 32]), a).map(Path::as_str).collect::<Vec<_>>();
        assert_eq!(after(Some("/a")), vec!["/c"]);
        assert_eq!(after(Some("/b")), vec!["/c"]);
        assert!(after(Some("/c")).is_empty());
        assert!(index.paths_after(&Hash32([2; 32]), Some("/b")).next().is_none());
        index.insert(Hash32([2; 32]), p("/a"));
        index.insert(Hash32([2; 32]), p("/b"));
        assert_eq!(paths(&index, 2), vec!["/a", "/b"]);
    }

    #[test]
    fn a_holder_is_the_size_of_a_path() {
        assert_eq!(std::mem::size_of::<Holders>(), std::mem::size_of::<Path>());
    }

    #[test]
    fn a_hash_several_documents_share_is_built_as_one_set() {
        let index = BodyIndex::build(vec![
            (Hash32([1; 32]), p("/c")),
            (Hash32([1; 32]), p("/a")),
            (Hash32([2; 32]), p("/d")),
            (Hash32([1; 32]), p("/b")),
        ]);
        assert_eq!(paths(&index, 1), vec!["/a", "/b", "/c"]);
        assert_eq!(paths(&index, 2), vec!["/d"]);
        assert_eq!(index.by_hash.len(), 2);
    }

    #[test]
    fn removing_the_last_document_of_a_hash_forgets_the_hash() {
        let mut index = BodyIndex::default();
        index.insert(Hash32([1; 32]), p("/a"));
        index.insert(Hash32([1; 32]), p("/b"));
        index.remove(&Hash32([1; 32]), &p("/a"));
        assert_eq!(paths(&index, 1), vec!["/b"]);
        index.remove(&Hash32([1; 32]), &p("/x"));
        assert_eq!(paths(&index, 1), vec!["/b"], "removing a path the hash lacks changes nothing");
        index.remove(&Hash32([1; 32]), &p("/b"));
        assert!(index.by_hash.is_empty());
    }
}
