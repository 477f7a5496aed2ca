//! One document as a replica holds it (SPEC 10.5): its index entry, references to the
//! history blocks of the newest checkpoint it adopted, and the version records committed
//! after them. Versions older than those records live in the bucket only, so memory grows
//! with the versions written since the newest checkpoint, not with every version ever
//! written.

use super::entry::{IndexEntry, VersionRecord};
use crate::format::{history_window, HistoryRef};
use std::collections::VecDeque;

/// One document as a replica holds it: its entry and where each retained version's record is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    /// Its index entry.
    pub entry: IndexEntry,
    /// Blocks holding the retained versions from `entry.first_version` through
    /// [`Document::stored_through`], one per 256-version window, in version order. The first
    /// may still hold versions retention has since pruned.
    stored: Box<[HistoryRef]>,
    /// Retained versions after the stored ones, oldest first.
    recent: Recent,
}

/// The records held after the stored blocks, boxed, and nothing while there are none: a
/// document opened from a checkpoint holds none, and an empty `VecDeque` inline cost 24
/// bytes more per document, twice over while the index is built (issue 11).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[allow(clippy::box_collection)] // Boxed on purpose: one pointer inline, not the deque's four words.
struct Recent(Option<Box<VecDeque<VersionRecord>>>);

impl Recent {
    fn of(records: VecDeque<VersionRecord>) -> Recent {
        Recent((!records.is_empty()).then(|| Box::new(records)))
    }

    fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |r| r.len())
    }

    fn records(&self) -> &VecDeque<VersionRecord> {
        static NONE: VecDeque<VersionRecord> = VecDeque::new();
        self.0.as_deref().unwrap_or(&NONE)
    }

    fn iter(&self) -> std::collections::vec_deque::Iter<'_, VersionRecord> {
        self.records().iter()
    }

    fn front(&self) -> Option<&VersionRecord> {
        self.0.as_ref().and_then(|r| r.front())
    }

    fn push_back(&mut self, record: VersionRecord) {
        self.0.get_or_insert_with(Box::default).push_back(record);
    }

    /// Drops the oldest record, and the box with the last one, so that `None` is the only
    /// empty form and equality stays structural.
    fn pop_front(&mut self) {
        if let Some(r) = &mut self.0 {
            r.pop_front();
            if r.is_empty() {
                self.0 = None;
            }
        }
    }
}

/// Where one retained version's record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionAt<'a> {
    /// In memory: this record.
    Held(&'a VersionRecord),
    /// In this history block; its record must be read from the bucket.
    Stored(HistoryRef),
}

/// Why a document's parts do not fit together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DocumentProblem;

impl Document {
    /// A document whose every retained version is held in memory.
    pub fn held(
        entry: IndexEntry,
        versions: impl IntoIterator<Item = VersionRecord>,
    ) -> Result<Document, DocumentProblem> {
        Document::new(entry, Box::new([]), Recent::of(versions.into_iter().collect()))
    }

    /// A document from a checkpoint's shard entry: its blocks, nothing held.
    pub fn stored(entry: IndexEntry, stored: Vec<HistoryRef>) -> Result<Document, DocumentProblem> {
        Document::new(entry, stored.into(), Recent::default())
    }

    fn new(
        entry: IndexEntry,
        stored: Box<[HistoryRef]>,
        recent: Recent,
    ) -> Result<Document, DocumentProblem> {
        let doc = Document { entry, stored, recent };
        if doc.fits() {
            Ok(doc)
        } else {
            Err(DocumentProblem)
        }
    }

    /// Whether the parts cover exactly the retained versions: held records are consecutive
    /// and end at the current version; stored blocks cover one window each, every window
    /// from that of the first retained version to that of the last stored one.
    fn fits(&self) -> bool {
        let e = &self.entry;
        if e.first_version == 0 || e.first_version > e.version {
            return false;
        }
        let held_from = self.stored_through() + 1;
        if !self.recent.iter().map(|v| v.version).eq(held_from..=e.version) || held_from < e.first_version {
            return false;
        }
        if held_from == e.first_version {
            return self.stored.is_empty();
        }
        let first_window = history_window(e.first_version);
        let windows = history_window(held_from - 1) - first_window + 1;
        self.stored.len() as u64 == windows
            && self.stored.iter().enumerate().all(|(i, r)| {
                let window = first_window + i as u64;
                history_window(r.first_version.max(1)) == window
                    && (i == 0 && r.first_version <= e.first_version
                        || r.first_version == crate::format::history_window_start(window))
            })
    }

    /// The newest version the stored blocks hold (below the first retained version when
    /// they hold none).
    pub fn stored_through(&self) -> u64 {
        self.entry.version - self.recent.len() as u64
    }

    /// The history block references, one per window from the first retained version's.
    pub fn stored_blocks(&self) -> &[HistoryRef] {
        &self.stored
    }

    /// The retained versions held in memory, oldest first.
    pub fn held_versions(&self) -> impl ExactSizeIterator<Item = &VersionRecord> {
        self.recent.iter()
    }

    /// Where retained version `version` is; None when it is not retained.
    pub fn version(&self, version: u64) -> Option<VersionAt<'_>> {
        let e = &self.entry;
        if version < e.first_version || version > e.version {
            return None;
        }
        let through = self.stored_through();
        if version > through {
            return Some(VersionAt::Held(&self.recent.records()[(version - through - 1) as usize]));
        }
        let i = history_window(version) - history_window(e.first_version);
        Some(VersionAt::Stored(self.stored[i as usize]))
    }

    /// A member changed the entry and perhaps added a version; retention may have pruned.
    pub(crate) fn apply(&mut self, entry: IndexEntry, version: Option<VersionRecord>) {
        self.entry = entry;
        if let Some(v) = version {
            self.recent.push_back(v);
        }
        self.trim();
        invariant!(self.fits());
    }

    /// Forgets what retention pruned: held records and whole blocks below the first version.
    fn trim(&mut self) {
        let first = self.entry.first_version;
        while self.recent.front().is_some_and(|v| v.version < first) {
            self.recent.pop_front();
        }
        let through = self.stored_through();
        if through < first {
            self.stored = Box::new([]);
            return;
        }
        let keep_from =
            self.stored.partition_point(|r| history_window(r.first_version.max(1)) < history_window(first));
        if keep_from > 0 {
            self.stored = self.stored[keep_from..].into();
        }
    }

    /// The checkpoint through version `through` stored these blocks: they replace the held
    /// records up to it. `blocks` cover the document's retained versions at that checkpoint.
    pub(crate) fn adopt(&mut self, blocks: &[HistoryRef], through: u64) {
        if through < self.entry.first_version || through <= self.stored_through() {
            return;
        }
        self.stored = blocks.into();
        while self.recent.front().is_some_and(|v| v.version <= through) {
            self.recent.pop_front();
        }
        self.trim();
        invariant!(self.fits(), "adopted blocks must cover the retained versions to {through}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::history_window_start;
    use crate::hash::Hash32;
    use crate::ids::OperationId;
    use crate::world::{Path, VersionKind};

    fn record(version: u64) -> VersionRecord {
        VersionRecord {
            version,
            sequence: version,
            op_id: OperationId([version as u8; 16]),
            body_hash: Hash32::ZERO,
            body_len: 1,
            kind: VersionKind::Publish,
        }
    }

    fn entry(first_version: u64, version: u64) -> IndexEntry {
        IndexEntry {
            path: Path::parse("/a").expect("path"),
            version,
            first_version,
            archived: false,
            body_hash: Hash32::ZERO,
            body_len: 1,
            modified_sequence: version,
            modified_us: 0,
            catalog: None,
        }
    }

    fn block(first_version: u64) -> HistoryRef {
        HistoryRef { first_version, block: Hash32::of(&first_version.to_le_bytes()) }
    }

    #[test]
    fn a_document_holding_no_records_costs_one_pointer_for_them() {
        // The entry, the boxed slice of blocks (pointer and length), and one pointer.
        assert_eq!(
            std::mem::size_of::<Document>(),
            std::mem::size_of::<IndexEntry>() + 3 * std::mem::size_of::<usize>()
        );
    }

    #[test]
    fn a_document_left_with_no_records_equals_one_built_with_none() {
        let mut adopted = Document::held(entry(1, 2), (1..=2).map(record)).expect("held");
        adopted.adopt(&[block(1)], 2);
        let stored = Document::stored(entry(1, 2), vec![block(1)]).expect("stored");
        assert_eq!(adopted.held_versions().len(), 0);
        assert_eq!(adopted, stored);
    }

    #[test]
    fn held_versions_must_run_from_the_first_to_the_current() {
        assert!(Document::held(entry(1, 3), (1..=3).map(record)).is_ok());
        assert!(Document::held(entry(1, 3), (2..=3).map(record)).is_err());
        assert!(Document::held(entry(2, 3), (1..=3).map(record)).is_err());
    }

    #[test]
    fn stored_blocks_cover_one_window_each_from_the_first_version() {
        let w1 = history_window_start(1);
        assert!(Document::stored(entry(5, w1 + 3), vec![block(5), block(w1)]).is_ok());
        assert!(Document::stored(entry(5, w1 + 3), vec![block(5)]).is_err());
        assert!(Document::stored(entry(5, w1 + 3), vec![block(6), block(w1)]).is_err());
        assert!(
            Document::stored(entry(5, 9), vec![block(3)]).is_ok(),
            "a first block may hold pruned versions"
        );
    }

    #[test]
    fn a_version_is_held_or_names_the_block_of_its_window() {
        let w1 = history_window_start(1);
        let mut doc = Document::stored(entry(5, w1 + 3), vec![block(5), block(w1)]).expect("fits");
        doc.apply(entry(5, w1 + 4), Some(record(w1 + 4)));
        assert_eq!(doc.version(4), None);
        assert_eq!(doc.version(6), Some(VersionAt::Stored(block(5))));
        assert_eq!(doc.version(w1 + 3), Some(VersionAt::Stored(block(w1))));
        assert_eq!(doc.version(w1 + 4), Some(VersionAt::Held(&record(w1 + 4))));
    }

    #[test]
    fn pruning_past_a_window_forgets_its_block() {
        let w1 = history_window_start(1);
        let mut doc = Document::stored(entry(5, w1 + 3), vec![block(5), block(w1)]).expect("fits");
        doc.apply(entry(w1 + 1, w1 + 4), Some(record(w1 + 4)));
        assert_eq!(doc.stored_blocks(), &[block(w1)]);
        doc.apply(entry(w1 + 5, w1 + 5), Some(record(w1 + 5)));
        assert!(doc.stored_blocks().is_empty());
        assert_eq!(doc.held_versions().count(), 1);
    }

    #[test]
    fn adopting_a_checkpoint_drops_the_held_records_it_stores() {
        let mut doc = Document::held(entry(1, 3), (1..=3).map(record)).expect("fits");
        doc.apply(entry(1, 4), Some(record(4)));
        doc.adopt(&[block(1)], 3);
        assert_eq!(doc.stored_through(), 3);
        assert_eq!(doc.held_versions().map(|v| v.version).collect::<Vec<_>>(), vec![4]);
        doc.adopt(&[block(1)], 2);
        assert_eq!(doc.stored_through(), 3, "an older checkpoint is not adopted");
    }
}
