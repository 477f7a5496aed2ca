//! The world as a replica holds it: every document's entry and retained version records,
//! the policy, the committed receipts, and the tip of the chain. Changed only by applying
//! slots in order, so two replicas that applied the same log hold the same state.

use super::body_index::BodyIndex;
use super::document::Document;
use super::documents::Documents;
use super::entry::{IndexEntry, Receipt, SlotMember};
use super::path::Path;
use super::policy::Policy;
use super::receipt_key::ReceiptKey;
use super::receipt_table::ReceiptTable;
use super::receipt_window::{self, receipts_from, ReceiptAnswer};
use super::request_digest;
use super::view::StateView;
use crate::format::{Slot, StoredReceipt};
use crate::hash::Hash32;
use crate::ids::{OperationId, WorldId};

/// Why a slot cannot be applied on this state. Any of these means the log is not the one
/// this replica holds, or two implementations disagree; the replica fails closed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// The slot names another world.
    #[error("slot of another world {found}")]
    ForeignWorld {
        /// The world it names.
        found: WorldId,
    },
    /// The slot does not start at the next sequence.
    #[error("slot at {found} where {expected} is next")]
    Gap {
        /// The next sequence.
        expected: u64,
        /// The slot's first sequence.
        found: u64,
    },
    /// The slot does not name this state's tip as its predecessor.
    #[error("slot {sequence} does not name the tip as its predecessor")]
    ChainBreak {
        /// The slot's first sequence.
        sequence: u64,
    },
    /// A member does not follow from the state (named rule).
    #[error("member {sequence}: {rule}")]
    Inconsistent {
        /// The member's sequence.
        sequence: u64,
        /// The rule it breaks.
        rule: ApplyRule,
    },
}

/// A rule a member must keep to follow from the state it is applied to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum ApplyRule {
    /// The member's sequence is not the one after the state's.
    #[error("member out of sequence")]
    MemberOutOfSequence,
    /// The member's operation id is already committed.
    #[error("operation id committed twice")]
    OperationIdCommittedTwice,
    /// A policy member's version is not the policy version plus 1.
    #[error("policy version does not follow")]
    PolicyVersionNotNext,
    /// A member creating a document does not start it at version 1.
    #[error("a new document does not start at version 1")]
    NewDocumentNotAtVersionOne,
    /// A member creates a document that nests with another.
    #[error("a new document breaks topology")]
    NewDocumentBreaksTopology,
    /// An archive flip on a path with no document.
    #[error("an archive flip on an absent document")]
    ArchiveFlipOnAbsentDocument,
    /// A write's version is not the current one plus 1.
    #[error("a version does not follow the current one")]
    VersionNotNext,
    /// A write to an archived document.
    #[error("a write to an archived document")]
    WriteToArchivedDocument,
    /// A prune range that does not start at the document's first retained version.
    #[error("prune does not start at the first version")]
    PruneNotFromFirstVersion,
    /// The new first version is not the one after the prune (or, without one, the old).
    #[error("first version does not follow the prune")]
    FirstVersionNotAfterPrune,
    /// An archive flip that changes more than the flag, or leaves the flag as it was.
    #[error("an archive flip changes more than the flag")]
    ArchiveFlipChangesMore,
}

/// Why a checkpoint's content is not a world.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RestoreProblem {
    /// The document appears twice, or changed after the checkpoint's sequence.
    Document {
        /// The document's path.
        path: Path,
    },
    /// The receipts are not exactly one per sequence of the window.
    Receipts,
}

/// A world as a replica holds it: documents, policy, the receipt window, and the tip.
#[derive(Clone, Debug)]
pub struct WorldState {
    world_id: WorldId,
    documents: Documents,
    policy: Policy,
    /// Each receipt of the window with the digest of its request (SPEC 10.13), in
    /// sequence order and found by id through a hash table (a B-tree of 17,000 random ids
    /// cost 2% of a simulated run in inserts alone). Keyed (`ReceiptKey`): the ids are the
    /// clients'.
    receipts: ReceiptTable,
    /// Current body hash to the documents that hold it.
    bodies: BodyIndex,
    /// Version records held in memory over every document, kept as documents change so
    /// that a memory sample need not walk them all.
    held_records: usize,
    sequence: u64,
    tip_hash: Hash32,
    slots_applied: u64,
    /// A state that only judges a log (see [`WorldState::auditing`]).
    auditing: bool,
}

impl WorldState {
    /// The state at genesis; `marker_hash` anchors the chain.
    pub fn genesis(world_id: WorldId, marker_hash: Hash32) -> WorldState {
        WorldState {
            world_id,
            documents: Documents::default(),
            policy: Policy::default(),
            receipts: ReceiptTable::new(ReceiptKey::default()),
            bodies: BodyIndex::default(),
            held_records: 0,
            sequence: 0,
            tip_hash: marker_hash,
            slots_applied: 0,
            auditing: false,
        }
    }

    /// This state replaying a log only to judge it (the checker's auditor): it answers
    /// no read and no write, so it keeps what only those read. Each receipt holds
    /// `Hash32::ZERO` (no digest recorded, as from a checkpoint that did not record one),
    /// not a BLAKE3 of its member's request, and no body index is kept (which documents
    /// hold a body): together 3% of a simulated run.
    pub fn auditing(mut self) -> WorldState {
        self.auditing = true;
        self
    }

    /// This state with its receipt window hashed under `key` (genesis and restore leave
    /// the default key: the embedder's comes with the replica's identity, at open).
    pub fn with_receipt_key(mut self, key: ReceiptKey) -> WorldState {
        self.receipts = self.receipts.rekeyed(key);
        self.documents = self.documents.rekeyed(key);
        self
    }

    /// The key the receipt window hashes operation ids under.
    pub fn receipt_key(&self) -> ReceiptKey {
        self.receipts.key()
    }

    /// The state a checkpoint holds: the world through `sequence`, whose slot hashes to
    /// `tip_hash`, with the receipts of its window. `documents` come each under its own
    /// path, in strictly ascending path order, so every map is built in one pass.
    pub fn restore(
        world_id: WorldId,
        sequence: u64,
        tip_hash: Hash32,
        policy: Policy,
        documents: Vec<(Path, Document)>,
        receipts_from_sequence: u64,
        receipts: Vec<StoredReceipt>,
    ) -> Result<WorldState, RestoreProblem> {
        let mut state = WorldState::genesis(world_id, tip_hash);
        state.sequence = sequence;
        state.policy = policy;
        for (i, (path, doc)) in documents.iter().enumerate() {
            let after_the_one_before = i == 0 || documents[i - 1].0 < *path;
            if doc.entry.path != *path || doc.entry.modified_sequence > sequence || !after_the_one_before {
                return Err(RestoreProblem::Document { path: path.clone() });
            }
        }
        state.documents = Documents::from_sorted(documents, state.receipt_key());
        state.held_records = state.documents.values().map(|d| d.held_versions().len()).sum();
        let bodies = state.documents.values().map(|d| (d.entry.body_hash, d.entry.path.clone())).collect();
        state.bodies = BodyIndex::build(bodies);
        let mut receipts = receipts;
        receipts.sort_unstable_by_key(|r| r.receipt.sequence);
        let expected = receipts_from_sequence..=sequence;
        if !receipts.iter().map(|r| r.receipt.sequence).eq(expected)
            || receipts_from_sequence != receipts_from(sequence)
        {
            return Err(RestoreProblem::Receipts);
        }
        // Of one operation id twice, the newer is found.
        state.receipts = ReceiptTable::from_sorted(receipts, state.receipt_key());
        Ok(state)
    }

    /// The world's id.
    pub fn world_id(&self) -> WorldId {
        self.world_id
    }

    /// Hash of the newest slot applied (the marker's at genesis).
    pub fn tip_hash(&self) -> Hash32 {
        self.tip_hash
    }

    /// The last sequence applied (0 at genesis).
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// The first sequence of the next slot: its name.
    pub fn next_sequence(&self) -> u64 {
        self.sequence + 1
    }

    /// Slots applied to this state since it was built (at genesis or from a checkpoint).
    pub fn slots_applied(&self) -> u64 {
        self.slots_applied
    }

    /// The document at `path`, if there is one.
    pub fn document(&self, path: &Path) -> Option<&Document> {
        self.documents.get(path.as_str())
    }

    /// Every document, in path order.
    pub fn documents(&self) -> impl Iterator<Item = (&Path, &Document)> {
        self.documents.iter()
    }

    /// Documents from `start` on, in path order.
    pub fn documents_from(&self, start: &str) -> impl Iterator<Item = (&Path, &Document)> {
        self.documents.from(start)
    }

    /// The receipt of an operation id committed within the receipt window.
    pub fn receipt(&self, op_id: &OperationId) -> Option<&Receipt> {
        self.receipts.get(op_id).map(|c| &c.receipt)
    }

    /// A receipt read's answer (SPEC 10.13): committed, absent (exactly: not committed
    /// from `since` on), or expired (the window no longer covers `since`).
    pub fn receipt_answer(&self, op_id: &OperationId, since: Option<u64>) -> ReceiptAnswer {
        receipt_window::answer(self.receipt(op_id), self.sequence, since)
    }

    /// The receipts the window holds from `from` on, in sequence order, with their
    /// request digests.
    pub fn receipts_since(&self, from: u64) -> impl Iterator<Item = &StoredReceipt> {
        self.receipts.since(from)
    }

    /// The first sequence whose receipt this state holds (SPEC 10.13, the receipt window).
    pub fn receipts_from_sequence(&self) -> u64 {
        receipts_from(self.sequence)
    }

    /// A checkpoint through version `through` of `path` stored its retained versions in
    /// `blocks`: the document holds those instead of the records (SPEC 10.5).
    pub fn adopt_history(&mut self, path: &Path, blocks: &[crate::format::HistoryRef], through: u64) {
        if let Some(doc) = self.documents.get_mut(path.as_str()) {
            let before = doc.held_versions().len();
            doc.adopt(blocks, through);
            self.held_records = self.held_records - before + doc.held_versions().len();
        }
    }

    /// Version records held in memory, over every document.
    pub fn held_version_records(&self) -> usize {
        self.held_records
    }

    /// Documents in the world.
    pub fn document_count(&self) -> usize {
        self.documents.len()
    }

    /// Documents whose current body has this hash, in path order.
    pub fn paths_with_body(&self, hash: &Hash32) -> impl Iterator<Item = &Path> {
        invariant!(!self.auditing, "an auditing state keeps no body index");
        self.bodies.paths(hash)
    }

    /// Every distinct hash of a document's current body.
    pub fn body_hashes(&self) -> impl Iterator<Item = &Hash32> {
        invariant!(!self.auditing, "an auditing state keeps no body index");
        self.bodies.hashes()
    }

    /// The same, after `start_after` only, found by a seek.
    pub fn paths_with_body_after<'a>(
        &'a self,
        hash: &Hash32,
        start_after: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Path> {
        invariant!(!self.auditing, "an auditing state keeps no body index");
        self.bodies.paths_after(hash, start_after)
    }

    /// Verifies `slot` continues this state's chain and applies every member.
    pub fn apply_slot(&mut self, slot: &Slot, slot_hash: Hash32) -> Result<(), ApplyError> {
        self.check_chain(slot)?;
        self.check_members(slot)?;
        self.apply_members(slot, slot_hash);
        Ok(())
    }

    /// Applies a slot this replica's committer built on this very state (it names the
    /// tip, checked here): its members were judged against this state plus the members
    /// before them when the batch was built, by the rules the check would run again. At
    /// 256 members that check was a third of confirming a slot (a topology search per new
    /// document, a scan of the members before each), on the one thread every write waits
    /// for.
    ///
    /// Who still judges an own slot member by member: the kernel's tests (the committer's
    /// tests build thousands of own slots, each judged here), and in every simulated run the
    /// checker's auditor, which applies every slot of the log with [`WorldState::apply_slot`]
    /// and fails the run on a member that does not follow (`KernelCannotApply`). Judging
    /// it here too under debug assertions was that check twice (1.1% of `run single`).
    pub(crate) fn apply_own_slot(&mut self, slot: &Slot, slot_hash: Hash32) -> Result<(), ApplyError> {
        self.check_chain(slot)?;
        if cfg!(test) {
            self.check_members(slot)?;
        }
        self.apply_members(slot, slot_hash);
        Ok(())
    }

    /// The slot names this world, the next sequence and this state's tip.
    fn check_chain(&self, slot: &Slot) -> Result<(), ApplyError> {
        if slot.world_id != self.world_id {
            return Err(ApplyError::ForeignWorld { found: slot.world_id });
        }
        if slot.first_sequence != self.next_sequence() {
            return Err(ApplyError::Gap { expected: self.next_sequence(), found: slot.first_sequence });
        }
        if slot.prev_hash != self.tip_hash {
            return Err(ApplyError::ChainBreak { sequence: slot.first_sequence });
        }
        Ok(())
    }

    /// Every member follows from the state plus the members before it.
    fn check_members(&self, slot: &Slot) -> Result<(), ApplyError> {
        // Check every member before changing anything, so a refused slot leaves no trace.
        // A lone member is checked against the state itself; later members of a slot
        // against the state plus the members before them.
        if let [m] = slot.members.as_slice() {
            if let Some(rule) = member_problem(self, m) {
                return Err(ApplyError::Inconsistent { sequence: m.sequence(), rule });
            }
        } else {
            let mut view = super::view::SlotPrefix::new(self, &slot.members);
            for m in &slot.members {
                if let Some(rule) = member_problem(&view, m) {
                    return Err(ApplyError::Inconsistent { sequence: m.sequence(), rule });
                }
                view.advance();
            }
        }
        Ok(())
    }

    fn apply_members(&mut self, slot: &Slot, slot_hash: Hash32) {
        for m in &slot.members {
            self.apply_member(m);
        }
        self.tip_hash = slot_hash;
        self.slots_applied += 1;
        invariant_eq!(self.sequence, slot.last_sequence());
    }

    fn apply_member(&mut self, m: &SlotMember) {
        invariant_eq!(m.sequence(), self.sequence + 1);
        self.sequence = m.sequence();
        let stored = if !self.auditing {
            request_digest::stored_receipt(m)
        } else {
            StoredReceipt { receipt: m.receipt.clone(), request_digest: Hash32::ZERO }
        };
        self.receipts.push(stored);
        self.receipts.drop_before(receipts_from(self.sequence));
        if let Some(rules) = &m.policy {
            self.policy = Policy { version: m.receipt.version, rules: rules.clone() };
        }
        let Some(entry) = &m.entry else { return };
        let old_hash = match self.documents.get_mut(entry.path.as_str()) {
            Some(doc) => {
                let old_hash = doc.entry.body_hash;
                let before = doc.held_versions().len();
                doc.apply(entry.clone(), m.version.clone());
                self.held_records = self.held_records - before + doc.held_versions().len();
                Some(old_hash)
            }
            None => {
                let doc = Document::held(entry.clone(), m.version.clone())
                    .expect("a checked member starts a document at version 1");
                self.held_records += doc.held_versions().len();
                self.documents.insert_new(doc);
                None
            }
        };
        if self.auditing || old_hash == Some(entry.body_hash) {
            return;
        }
        if let Some(old_hash) = old_hash {
            self.bodies.remove(&old_hash, &entry.path);
        }
        self.bodies.insert(entry.body_hash, entry.path.clone());
    }
}

/// Whether a member follows from the state it is applied to. The committer builds members
/// that pass by construction; a peer's member that fails means the log diverged.
fn member_problem(view: &impl StateView, m: &SlotMember) -> Option<ApplyRule> {
    if m.sequence() != view.sequence() + 1 {
        return Some(ApplyRule::MemberOutOfSequence);
    }
    if view.receipt(&m.op_id()).is_some() {
        return Some(ApplyRule::OperationIdCommittedTwice);
    }
    if let Some(_rules) = &m.policy {
        if m.receipt.version != view.policy().version + 1 {
            return Some(ApplyRule::PolicyVersionNotNext);
        }
        return None;
    }
    let entry = m.entry.as_ref()?;
    match (view.entry_of(&entry.path), &m.version) {
        (None, Some(v)) => {
            if v.version != 1 || entry.first_version != 1 {
                return Some(ApplyRule::NewDocumentNotAtVersionOne);
            }
            if super::view::topology_block(view, &entry.path).is_some() {
                return Some(ApplyRule::NewDocumentBreaksTopology);
            }
        }
        (None, None) => return Some(ApplyRule::ArchiveFlipOnAbsentDocument),
        (Some(old), Some(v)) => {
            if v.version != old.version + 1 {
                return Some(ApplyRule::VersionNotNext);
            }
            if old.archived {
                return Some(ApplyRule::WriteToArchivedDocument);
            }
            let expected_first = match m.prune {
                Some(p) if p.first != old.first_version => return Some(ApplyRule::PruneNotFromFirstVersion),
                Some(p) => p.last + 1,
                None => old.first_version,
            };
            if entry.first_version != expected_first {
                return Some(ApplyRule::FirstVersionNotAfterPrune);
            }
        }
        (Some(old), None) => {
            if entry.version != old.version
                || entry.body_hash != old.body_hash
                || entry.first_version != old.first_version
                || entry.archived == old.archived
            {
                return Some(ApplyRule::ArchiveFlipChangesMore);
            }
        }
    }
    None
}

impl StateView for WorldState {
    fn entry(&self, path: &str) -> Option<&IndexEntry> {
        self.documents.get(path).map(|d| &d.entry)
    }

    fn entry_of(&self, path: &Path) -> Option<&IndexEntry> {
        self.documents.get(path.as_str()).map(|d| &d.entry)
    }

    fn first_descendant(&self, path: &Path) -> Option<&Path> {
        // Nearly every path created has no descendant: known by a hash lookup, without a
        // search of the order.
        if !self.documents.has_descendants(path.as_str()) {
            return None;
        }
        let lo = path.descendant_start();
        self.documents
            .from(lo.as_str())
            .next()
            .map(|(p, _)| p)
            .filter(|p| p.as_str().starts_with(lo.as_str()))
    }

    fn policy(&self) -> &Policy {
        &self.policy
    }

    fn committed(&self, op_id: &OperationId) -> Option<&StoredReceipt> {
        self.receipts.get(op_id)
    }

    fn sequence(&self) -> u64 {
        WorldState::sequence(self)
    }
}
