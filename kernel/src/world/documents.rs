//! A world's documents, found two ways: by path through a hash map, and in path order
//! through a B-tree. Applying a member, checking it and evaluating a write look a path up
//! (its document, each ancestor for topology); a B-tree search compared the path with a
//! dozen keys, about 900 instructions, 10% of a simulated run. Listings, descendants and
//! checkpoints walk in path order. Documents are never removed, so each sits in a slab
//! both maps point into.

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
        let mut by_path = HashTable::with_capacity(documents.len());
        let mut order = Vec::with_capacity(documents.len());
        let mut slab = Vec::with_capacity(documents.len());
        for (i, (path, doc)) in documents.into_iter().enumerate() {
            let hash = key.hash_bytes(path.as_str().as_bytes());
            by_path.insert_unique(hash, (hash, i), |e| e.0);
            order.push((path, i));
            slab.push(doc);
        }
        // Sorted and without duplicates, so collecting is a bulk build.
        Documents { slab, order: order.into_iter().collect(), by_path, key }
    }

    /// The same documents, hashed under `key`.
    pub fn rekeyed(self, key: ReceiptKey) -> Documents {
        let mut by_path = HashTable::with_capacity(self.slab.len());
        for (i, doc) in self.slab.iter().enumerate() {
            let hash = key.hash_bytes(doc.entry.path.as_str().as_bytes());
            by_path.insert_unique(hash, (hash, i), |e| e.0);
        }
        Documents { by_path, key, ..self }
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

    /// Adds the document at `path`, where there is none.
    pub fn insert_new(&mut self, path: Path, doc: Document) {
        debug_assert!(self.find(path.as_str()).is_none(), "a new document's path holds none");
        debug_assert_eq!(doc.entry.path, path, "a document is found by its entry's path");
        let i = self.slab.len();
        let hash = self.key.hash_bytes(path.as_str().as_bytes());
        self.by_path.insert_unique(hash, (hash, i), |e| e.0);
        self.order.insert(path, i);
        self.slab.push(doc);
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

    /// The path that sorts last.
    pub fn last_path(&self) -> Option<&Path> {
        self.order.last_key_value().map(|(p, _)| p)
    }

    /// Documents held.
    pub fn len(&self) -> usize {
        self.slab.len()
    }
}
