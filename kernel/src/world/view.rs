//! Reading a state that may not be committed yet. A batch is built against the tip plus
//! the batches staged before it plus its own earlier members: the confirmed
//! [`WorldState`](super::state::WorldState) under a stack of [`Overlay`]s.

use super::entry::{IndexEntry, Receipt, ReceiptKind, SlotMember};
use super::path::Path;
use super::policy::{Policy, PolicyRules};
use crate::format::StoredReceipt;
use crate::hash::Hash32;
use crate::ids::OperationId;
use rustc_hash::FxHashMap;
use std::cell::OnceCell;
use std::collections::BTreeMap;

/// What evaluating a mutation needs to read.
pub trait StateView {
    /// The index entry at the normalized `path`, if a document is there.
    fn entry(&self, path: &str) -> Option<&IndexEntry>;
    /// [`StateView::entry`] at a path already made: maps keyed by [`Path`] compare it with
    /// their keys eight bytes at a time, where a `&str` goes through a `memcmp` call each.
    fn entry_of(&self, path: &Path) -> Option<&IndexEntry> {
        self.entry(path.as_str())
    }
    /// The descendant of `path` that sorts first in byte order.
    fn first_descendant(&self, path: &Path) -> Option<&Path>;
    /// The policy in force.
    fn policy(&self) -> &Policy;
    /// The receipt of an operation id committed within the receipt window, with the
    /// digest of its request (`Hash32::ZERO` when a checkpoint did not record one).
    fn committed(&self, op_id: &OperationId) -> Option<&StoredReceipt>;
    /// The receipt of an operation id committed within the receipt window.
    fn receipt(&self, op_id: &OperationId) -> Option<&Receipt> {
        self.committed(op_id).map(|c| &c.receipt)
    }
    /// The last sequence the view includes.
    fn sequence(&self) -> u64;
}

/// The document that stops `path` from being created (SPEC 1.1): the ancestor, else the
/// first descendant.
pub fn topology_block<'a>(view: &'a impl StateView, path: &Path) -> Option<&'a Path> {
    for ancestor in path.ancestors() {
        if let Some(e) = view.entry(ancestor) {
            return Some(&e.path);
        }
    }
    view.first_descendant(path)
}

/// The changes of uncommitted members, on top of some base.
#[derive(Clone, Debug, Default)]
pub struct Overlay {
    entries: BTreeMap<Path, IndexEntry>,
    policy: Option<Policy>,
    receipts: BTreeMap<OperationId, PendingReceipt>,
    /// The last sequence this overlay includes (its base's when empty).
    sequence: u64,
}

/// An uncommitted member's receipt. Its request digest is made only when a duplicate of
/// the operation id asks for it: most receipts are only checked for presence.
#[derive(Clone, Debug)]
struct PendingReceipt {
    receipt: Receipt,
    /// What the digest reads of the member besides the receipt.
    body_hash: Option<Hash32>,
    /// A publish's catalog record (only a publish's is digested).
    catalog: Option<Box<str>>,
    rules: Option<PolicyRules>,
    stored: OnceCell<StoredReceipt>,
}

impl PendingReceipt {
    fn of(m: &SlotMember) -> PendingReceipt {
        PendingReceipt {
            receipt: m.receipt.clone(),
            body_hash: m.entry.as_ref().map(|e| e.body_hash),
            catalog: (m.receipt.kind == ReceiptKind::Published)
                .then(|| m.entry.as_ref().and_then(|e| e.catalog.clone()))
                .flatten(),
            rules: m.policy.clone(),
            stored: OnceCell::new(),
        }
    }

    fn stored(&self) -> &StoredReceipt {
        self.stored.get_or_init(|| StoredReceipt {
            receipt: self.receipt.clone(),
            request_digest: super::request_digest::of_member_parts(
                &self.receipt,
                self.body_hash.as_ref(),
                self.catalog.as_deref(),
                self.rules.as_ref(),
            ),
        })
    }
}

impl Overlay {
    /// An empty overlay on a base whose last sequence is `base_sequence`.
    pub fn new(base_sequence: u64) -> Overlay {
        Overlay { sequence: base_sequence, ..Overlay::default() }
    }

    /// Adds the next member's changes.
    pub fn apply(&mut self, m: &SlotMember) {
        invariant_eq!(m.sequence(), self.sequence + 1);
        self.sequence = m.sequence();
        self.receipts.insert(m.op_id(), PendingReceipt::of(m));
        if let Some(rules) = &m.policy {
            self.policy = Some(Policy { version: m.receipt.version, rules: rules.clone() });
        }
        if let Some(e) = &m.entry {
            self.entries.insert(e.path.clone(), e.clone());
        }
    }

    /// The last sequence this overlay includes (its base's when empty).
    pub fn sequence(&self) -> u64 {
        self.sequence
    }
}

/// A base state under overlays; later overlays shadow earlier ones.
pub struct Layered<'a, B: StateView> {
    base: &'a B,
    layers: &'a [&'a Overlay],
}

impl<'a, B: StateView> Layered<'a, B> {
    /// `base` under `layers`, oldest first.
    pub fn new(base: &'a B, layers: &'a [&'a Overlay]) -> Self {
        invariant!(layers.windows(2).all(|w| w[0].sequence <= w[1].sequence));
        Layered { base, layers }
    }
}

impl<B: StateView> StateView for Layered<'_, B> {
    fn entry(&self, path: &str) -> Option<&IndexEntry> {
        self.layers.iter().rev().find_map(|l| l.entries.get(path)).or_else(|| self.base.entry(path))
    }

    fn entry_of(&self, path: &Path) -> Option<&IndexEntry> {
        self.layers.iter().rev().find_map(|l| l.entries.get(path)).or_else(|| self.base.entry_of(path))
    }

    fn first_descendant(&self, path: &Path) -> Option<&Path> {
        let lo = path.descendant_start();
        let in_layers = self.layers.iter().filter_map(|l| {
            l.entries
                .range::<str, _>((std::ops::Bound::Included(lo.as_str()), std::ops::Bound::Unbounded))
                .next()
                .map(|(p, _)| p)
                .filter(|p| p.as_str().starts_with(lo.as_str()))
        });
        in_layers.chain(self.base.first_descendant(path)).min()
    }

    fn policy(&self) -> &Policy {
        self.layers.iter().rev().find_map(|l| l.policy.as_ref()).unwrap_or_else(|| self.base.policy())
    }

    fn committed(&self, op_id: &OperationId) -> Option<&StoredReceipt> {
        let pending = self.layers.iter().rev().find_map(|l| l.receipts.get(op_id));
        pending.map(PendingReceipt::stored).or_else(|| self.base.committed(op_id))
    }

    fn receipt(&self, op_id: &OperationId) -> Option<&Receipt> {
        let pending = self.layers.iter().rev().find_map(|l| l.receipts.get(op_id));
        pending.map(|p| &p.receipt).or_else(|| self.base.receipt(op_id))
    }

    fn sequence(&self) -> u64 {
        self.layers.last().map_or(self.base.sequence(), |l| l.sequence)
    }
}

/// Whether two paths are equal, judged by their last eight bytes first: each member of a
/// slot is looked up among the members before it (a full batch holds 256), and paths of
/// one length mostly differ near their end (numbered names), where a `memcmp` call
/// starts from the front.
#[inline]
fn same_path(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    if a.len() >= 8 && a[a.len() - 8..] != b[b.len() - 8..] {
        return false;
    }
    a == b
}

/// A base state under the first members of one slot, borrowed from the slot: what
/// applying a slot checks each member against. The [`Overlay`] it replaces there cloned
/// every member's path, entry and receipt into maps of its own; a slot has a few members
/// (at most the batch's limit), so a scan of them costs less than those copies.
pub(crate) struct SlotPrefix<'a, B: StateView> {
    base: &'a B,
    members: &'a [SlotMember],
    /// How many of `members` the view includes.
    len: usize,
    /// The policy the last included policy member set, if any.
    policy: Option<Policy>,
    /// Each member's stored receipt, made only when asked for (applying asks for none).
    stored: OnceCell<Vec<OnceCell<StoredReceipt>>>,
    /// For a slot of more than [`SLOT_PREFIX_SCAN_MAX`] members, the newest included
    /// member writing each path: each member is looked up among those before it, so a
    /// scan made a full batch (256 members) cost a quadratic number of comparisons.
    by_path: Option<FxHashMap<&'a str, usize>>,
}

/// Slots of at most this many members are scanned, not indexed: most slots hold a few.
const SLOT_PREFIX_SCAN_MAX: usize = 16;

impl<'a, B: StateView> SlotPrefix<'a, B> {
    /// `base` under none of `members` yet.
    pub fn new(base: &'a B, members: &'a [SlotMember]) -> Self {
        let by_path = (members.len() > SLOT_PREFIX_SCAN_MAX).then(FxHashMap::default);
        SlotPrefix { base, members, len: 0, policy: None, stored: OnceCell::new(), by_path }
    }

    /// Includes the next member.
    pub fn advance(&mut self) {
        let m = &self.members[self.len];
        invariant_eq!(m.sequence(), self.sequence() + 1);
        if let Some(rules) = &m.policy {
            self.policy = Some(Policy { version: m.receipt.version, rules: rules.clone() });
        }
        if let (Some(by_path), Some(e)) = (&mut self.by_path, &m.entry) {
            by_path.insert(e.path.as_str(), self.len);
        }
        self.len += 1;
    }

    /// The newest included member's entry at `path`, if one writes it.
    fn included_entry(&self, path: &str) -> Option<&'a IndexEntry> {
        if let Some(by_path) = &self.by_path {
            return by_path.get(path).and_then(|&i| self.members[i].entry.as_ref());
        }
        self.included()
            .iter()
            .rev()
            .find_map(|m| m.entry.as_ref().filter(|e| same_path(e.path.as_str(), path)))
    }

    fn included(&self) -> &'a [SlotMember] {
        &self.members[..self.len]
    }
}

impl<B: StateView> StateView for SlotPrefix<'_, B> {
    fn entry(&self, path: &str) -> Option<&IndexEntry> {
        self.included_entry(path).or_else(|| self.base.entry(path))
    }

    fn entry_of(&self, path: &Path) -> Option<&IndexEntry> {
        self.included_entry(path.as_str()).or_else(|| self.base.entry_of(path))
    }

    fn first_descendant(&self, path: &Path) -> Option<&Path> {
        let mine = (self.included().iter())
            .filter_map(|m| m.entry.as_ref().map(|e| &e.path))
            .filter(|p| p.is_descendant_of(path));
        mine.chain(self.base.first_descendant(path)).min()
    }

    fn policy(&self) -> &Policy {
        self.policy.as_ref().unwrap_or_else(|| self.base.policy())
    }

    fn committed(&self, op_id: &OperationId) -> Option<&StoredReceipt> {
        let Some(i) = self.included().iter().rposition(|m| m.op_id() == *op_id) else {
            return self.base.committed(op_id);
        };
        let cells = self.stored.get_or_init(|| self.members.iter().map(|_| OnceCell::new()).collect());
        Some(cells[i].get_or_init(|| super::request_digest::stored_receipt(&self.members[i])))
    }

    fn receipt(&self, op_id: &OperationId) -> Option<&Receipt> {
        let mine = self.included().iter().rev().find(|m| m.op_id() == *op_id).map(|m| &m.receipt);
        mine.or_else(|| self.base.receipt(op_id))
    }

    fn sequence(&self) -> u64 {
        self.base.sequence() + self.len as u64
    }
}
