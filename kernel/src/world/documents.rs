//! A world's documents, found two ways: by path through a hash map, and in path order
//! through a B-tree. Applying a member, checking it and evaluating a write look a path up
//! (its document, each ancestor for topology); a B-tree search compared the path with a
//! dozen keys, about 900 instructions, 10% of a simulated run. Listings, descendants and
//! checkpoints walk in path order. Documents are never removed, so each sits in a slab
//! the maps point into.

use super::document::Document;
use super::path::Path;
use super::receipt_key::ReceiptKey;
use hashbrown::HashTable;
use std::collections::BTreeMap;

/// The documents of a world, by path and in path order.
#[derive(Clone, Debug)]
pub(crate) struct Documents {
    /// Every document, in the order it was created.
    slab: Vec<Document>,
    /// Path order, for walks.
    order: BTreeMap<Path, usize>,
    /// Point lookups: each document's slab index with its path's hash, kept so that
    /// growing the table hashes nothing again. Paths are the clients', so hashed under a
    /// secret key (HashDoS, as the receipt window's operation ids).
    by_path: HashTable<(u64, usize)>,
    /// Every proper ancestor of a document's path, as `(hash, slab index of a document
    /// under it, length)`: a path none of whose descendants exists (nearly every path
    /// created) is known without a search of the order, a range search of about 1,500
    /// instructions for each document created.
    ancestors: HashTable<(u64, usize, usize)>,
    key: ReceiptKey,
}

impl Default for Documents {
    fn default() -> Documents {
        Documents::from_sorted(Vec::new(), ReceiptKey::default())
    }
}

impl Documents {
    /// `documents` each under its own path, in strictly ascending path order (checked by
    /// the caller), hashed under `key`.
    pub fn from_sorted(documents: Vec<(Path, Document)>, key: ReceiptKey) -> Documents {
        let mut order = Vec::with_capacity(documents.len());
        let mut slab = Vec::with_capacity(documents.len());
        for (i, (path, doc)) in documents.into_iter().enumerate() {
            order.push((path, i));
            slab.push(doc);
        }
        // Sorted and without duplicates, so collecting is a bulk build.
        let order = order.into_iter().collect();
        Documents { slab, order, by_path: HashTable::new(), ancestors: HashTable::new(), key }.hashed()
    }

    /// The same documents, hashed under `key`.
    pub fn rekeyed(self, key: ReceiptKey) -> Documents {
        Documents { key, ..self }.hashed()
    }

    /// These documents with both tables built afresh under `self.key`.
    fn hashed(mut self) -> Documents {
        self.by_path = HashTable::with_capacity(self.slab.len());
        self.ancestors = HashTable::new();
        for i in 0..self.slab.len() {
            self.index(i);
        }
        self
    }

    /// Enters the document at slab index `i` in both tables.
    fn index(&mut self, i: usize) {
        let path = &self.slab[i].entry.path;
        let hash = self.key.hash_bytes(path.as_str().as_bytes());
        self.by_path.insert_unique(hash, (hash, i), |e| e.0);
        for ancestor in path.ancestors() {
            let hash = self.key.hash_bytes(ancestor.as_bytes());
            if !holds_ancestor(&self.ancestors, &self.slab, hash, ancestor) {
                self.ancestors.insert_unique(hash, (hash, i, ancestor.len()), |e| e.0);
            }
        }
    }

    /// Whether some document lies below `path`.
    pub fn has_descendants(&self, path: &str) -> bool {
        let hash = self.key.hash_bytes(path.as_bytes());
        holds_ancestor(&self.ancestors, &self.slab, hash, path)
    }

    /// The slab index of the document at `path`.
    #[inline]
    fn find(&self, path: &str) -> Option<usize> {
        let hash = self.key.hash_bytes(path.as_bytes());
        let slab = &self.slab;
        self.by_path.find(hash, |&(h, i)| h == hash && slab[i].entry.path.as_str() == path).map(|&(_, i)| i)
    }

    /// The document at `path`, if there is one.
    #[inline]
    pub fn get(&self, path: &str) -> Option<&Document> {
        self.find(path).map(|i| &self.slab[i])
    }

    /// The document at `path`, to change.
    pub fn get_mut(&mut self, path: &str) -> Option<&mut Document> {
        self.find(path).map(|i| &mut self.slab[i])
    }

    /// Adds a document at a path that holds none (the caller found none there).
    pub fn insert_new(&mut self, doc: Document) {
        let i = self.slab.len();
        self.order.insert(doc.entry.path.clone(), i);
        self.slab.push(doc);
        self.index(i);
    }

    /// Every document, in path order.
    pub fn iter(&self) -> impl Iterator<Item = (&Path, &Document)> {
        self.order.iter().map(|(p, &i)| (p, &self.slab[i]))
    }

    /// Every document, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &Document> {
        self.slab.iter()
    }

    /// Documents from `start` on, in path order.
    pub fn from(&self, start: &str) -> impl Iterator<Item = (&Path, &Document)> {
        let range =
            self.order.range::<str, _>((std::ops::Bound::Included(start), std::ops::Bound::Unbounded));
        range.map(|(p, &i)| (p, &self.slab[i]))
    }

    /// Documents held.
    pub fn len(&self) -> usize {
        self.slab.len()
    }
}

/// Whether `ancestors` holds `path` (whose hash is `hash`): an entry names a document of
/// `slab` whose path begins with it.
fn holds_ancestor(
    ancestors: &HashTable<(u64, usize, usize)>,
    slab: &[Document],
    hash: u64,
    path: &str,
) -> bool {
    let held = |&(h, j, len): &(u64, usize, usize)| {
        h == hash && len == path.len() && slab[j].entry.path.as_str().as_bytes()[..len] == *path.as_bytes()
    };
    ancestors.find(hash, held).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::Hash32;
    use crate::ids::OperationId;
    use crate::world::{IndexEntry, VersionKind, VersionRecord};

    fn document(path: &Path) -> Document {
        let entry = IndexEntry {
            path: path.clone(),
            version: 1,
            first_version: 1,
            archived: false,
            body_hash: Hash32::ZERO,
            body_len: 1,
            modified_sequence: 1,
            modified_us: 0,
            catalog: None,
        };
        let record = VersionRecord {
            version: 1,
            sequence: 1,
            op_id: OperationId([1; 16]),
            body_hash: Hash32::ZERO,
            body_len: 1,
            kind: VersionKind::Publish,
        };
        Document::held(entry, [record]).expect("a document at version 1")
    }

    /// Against an ordered map of the same paths: point lookups, walks from any start,
    /// and whether a path has descendants, for documents added one by one, built sorted
    /// and rekeyed.
    #[test]
    fn documents_answer_as_an_ordered_map_does() {
        let raw = [
            "/b/2.md",
            "/a",
            "/a.md",
            "/a/b/c",
            "/docs/00000002.md",
            "/docs/00000001.md",
            "/pc/7.md/c.md",
            "/pc/7.mdx",
            "/é",
            "/ab",
            "/z/y/x/w",
        ];
        let paths: Vec<Path> = raw.iter().map(|r| Path::parse(r).expect("path")).collect();
        let mut docs = Documents::from_sorted(Vec::new(), ReceiptKey::from_seed(1));
        let mut reference: BTreeMap<Path, ()> = BTreeMap::new();
        let probes =
            ["/", "/a", "/a/b", "/a/b/c", "/a.m", "/docs", "/pc", "/pc/7.md", "/pc/7", "/z/y", "/q", "/é"];
        let check = |docs: &Documents, reference: &BTreeMap<Path, ()>| {
            for probe in probes.iter().chain(&raw) {
                assert_eq!(
                    docs.get(probe).map(|d| d.entry.path.clone()),
                    reference.get_key_value(*probe).map(|(p, _)| p.clone()),
                    "{probe}"
                );
                let under = format!("{probe}/");
                let below = reference.keys().any(|p| p.as_str().starts_with(&under));
                if *probe != "/" {
                    assert_eq!(docs.has_descendants(probe), below, "{probe}");
                }
                let walked: Vec<&str> = docs.from(probe).map(|(p, _)| p.as_str()).collect();
                let expected: Vec<&str> = reference
                    .range::<str, _>((std::ops::Bound::Included(*probe), std::ops::Bound::Unbounded))
                    .map(|(p, _)| p.as_str())
                    .collect();
                assert_eq!(walked, expected, "{probe}");
            }
            assert!(docs.iter().map(|(p, d)| (p, &d.entry.path)).all(|(p, e)| p == e));
            assert!(docs.iter().map(|(p, _)| p).eq(reference.keys()));
            assert_eq!(docs.len(), reference.len());
        };
        for path in &paths {
            docs.insert_new(document(path));
            reference.insert(path.clone(), ());
            check(&docs, &reference);
        }
        let sorted: Vec<(Path, Document)> = reference.keys().map(|p| (p.clone(), document(p))).collect();
        check(&Documents::from_sorted(sorted, ReceiptKey::from_seed(2)), &reference);
        check(&docs.rekeyed(ReceiptKey::from_seed(3)), &reference);
    }
}
