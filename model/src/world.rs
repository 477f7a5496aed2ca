//! The world (SPEC 1): documents by normalized path, the policy, and the committed
//! operation ids, changed one mutation at a time. Every check of SPEC 1.4 is one step of
//! `judge_*`, written in SPEC order so the two can be read side by side.

use crate::checkpoint::receipts_from;
use crate::document::{body_hash, Current, ModelDocument, ModelVersion, StoredDocument, StoredVersion};
use crate::path::{ancestors, normalize_path};
use crate::policy::{normalize_policy, ModelPolicy, ModelPolicyBody};
use crate::request::ModelRequest;
use crate::verdict::{ModelApplied, ModelInvalid, ModelReceipt, ModelRejection, ReceiptKind, Verdict};
use bytes::Bytes;
use rustc_hash::FxHashMap;
use slotlog_kernel::ids::OperationId;
use slotlog_kernel::world::mutation::{Expected, Mutation, PolicyBody};
use std::collections::hash_map::Entry;
use std::collections::BTreeMap;

/// The longest catalog record, in bytes (SPEC 1.3).
const CATALOG_RECORD_MAX: usize = 1_024;
use std::ops::Bound;

/// A world as a plain sequential state machine: the oracle the kernel is compared with.
#[derive(Clone, Debug, Default)]
pub struct ModelWorld {
    /// The last applied sequence; 0 at genesis.
    sequence: u64,
    /// Every document, in the order it was created (documents are never removed), found
    /// by `by_path` and walked in path order by `in_order`.
    documents: Vec<StoredDocument>,
    /// Each document's index by normalized path, looked up by hash: each member looks its
    /// path up several times (judging, applying, its modified time), and a search of an
    /// ordered map compared strings with a `memcmp` call each step (3% of a `single` run).
    by_path: FxHashMap<String, usize>,
    /// Each document's index by path in order: `String`'s order is byte order, which
    /// topology's "first descendant" and `documents()` are stated in.
    in_order: BTreeMap<String, usize>,
    policy: ModelPolicy,
    /// Every committed operation id, with the sequence of its newest commit (an id
    /// commits again once its receipt left the window, SPEC 10.13). Looked up, never
    /// walked: a hash map.
    committed: FxHashMap<OperationId, u64>,
    /// Each applied member's receipt and request, by sequence (index 0 is sequence 1), so
    /// a checkpoint's receipt window can be read in sequence order.
    by_sequence: Vec<(ModelReceipt, ModelRequest)>,
}

/// What a receipt read must answer (SPEC 10.13), as the model derives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelReceiptAnswer {
    /// Committed inside the window: this receipt.
    Committed(ModelReceipt),
    /// Not committed inside the window, and `since` is inside it: exactly not committed.
    Absent,
    /// Not committed inside the window, which starts after `since`: unknown.
    Expired {
        /// First sequence of the receipt window.
        window_from: u64,
    },
}

/// What an applied verdict changes, beyond what its `ModelApplied` already states.
enum Change {
    /// A publish or append: a new version with this body, and the catalog record after it.
    Write { body: Bytes, catalog: Option<String> },
    /// An archive flip to this flag.
    Archive { archived: bool },
    /// A new policy.
    Policy { body: ModelPolicyBody },
}

/// The two ways a mutation can make a new body.
enum WriteKind<'a> {
    /// The body, its hash when the caller took it already, and the raw catalog record.
    Publish(&'a Bytes, Option<[u8; 32]>, Option<&'a str>),
    Append(&'a Bytes),
}

impl ModelWorld {
    /// Genesis: no documents, the default policy at version 0, nothing committed.
    pub fn new() -> Self {
        Self::default()
    }

    /// Genesis, with room for `members` applied members: the checker knows how many
    /// writes a run issued, and tables grown by doubling copied (and first-touched) every
    /// smaller one on the way.
    pub fn with_capacity(members: usize) -> Self {
        ModelWorld {
            committed: FxHashMap::with_capacity_and_hasher(members, Default::default()),
            by_sequence: Vec::with_capacity(members),
            ..Self::default()
        }
    }

    /// The last applied sequence, 0 at genesis. The next applied member takes this + 1.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// Judge a mutation against the current state without changing anything.
    pub fn evaluate(&self, op_id: OperationId, m: &Mutation) -> Verdict {
        self.judge(op_id, m, None).0
    }

    /// Judge and, when the verdict is Applied, apply it (taking sequence()+1).
    pub fn apply(&mut self, op_id: OperationId, m: &Mutation) -> Verdict {
        self.apply_made(op_id, m, None).0
    }

    /// [`ModelWorld::apply`], with the new body an applied write made (a handle to the
    /// model's own bytes, not a copy), for the checker to judge carried bodies by.
    /// `published_hash` is [`body_hash`] of a publish's body when the caller took it
    /// already (the checker hashes every body of a run at once); `None` hashes it here.
    pub fn apply_made(
        &mut self,
        op_id: OperationId,
        m: &Mutation,
        published_hash: Option<[u8; 32]>,
    ) -> (Verdict, Option<Bytes>) {
        let (verdict, change) = self.judge(op_id, m, published_hash);
        let mut made = None;
        if let Verdict::Applied(applied) = &verdict {
            let change = change.expect("an applied verdict carries its change");
            if let Change::Write { body, .. } = &change {
                made = Some(body.clone());
            }
            self.commit(applied, change);
        }
        (verdict, made)
    }

    /// The document at a NORMALIZED path (no normalization is done here: a raw path
    /// simply finds nothing unless it is already normal).
    pub fn document(&self, path: &str) -> Option<ModelDocument> {
        self.stored(path).map(StoredDocument::snapshot)
    }

    /// The stored document at a normalized path.
    fn stored(&self, path: &str) -> Option<&StoredDocument> {
        self.by_path.get(path).map(|&i| &self.documents[i])
    }

    /// [`ModelWorld::stored`], to change.
    fn stored_mut(&mut self, path: &str) -> Option<&mut StoredDocument> {
        self.by_path.get(path).map(|&i| &mut self.documents[i])
    }

    /// Every document, in path byte order, so listings compare directly with the kernel's.
    pub fn documents(&self) -> impl Iterator<Item = (&str, ModelDocument)> + '_ {
        self.in_order.iter().map(|(path, &i)| (path.as_str(), self.documents[i].snapshot()))
    }

    /// Documents from path `start` on, in byte order.
    pub fn documents_from<'a>(&'a self, start: &str) -> impl Iterator<Item = (&'a str, ModelDocument)> + 'a {
        self.in_order
            .range::<str, _>((Bound::Included(start), Bound::Unbounded))
            .map(|(path, &i)| (path.as_str(), self.documents[i].snapshot()))
    }

    /// Every document in path byte order with its current body and catalog record,
    /// borrowed: what a judge that looks at every document (a search, a lookup by hash)
    /// reads, without the copy of each that [`ModelWorld::documents`] makes.
    pub fn currents(&self) -> impl Iterator<Item = (&str, Current<'_>)> + '_ {
        self.in_order.iter().map(|(path, &i)| {
            let d = &self.documents[i];
            let current = Current {
                body: d.current_body(),
                body_hash: d.current_hash(),
                catalog: d.catalog.as_deref(),
            };
            (path.as_str(), current)
        })
    }

    /// The paths of [`ModelWorld::documents_from`] alone, without a copy of each document.
    pub fn paths_from<'a>(&'a self, start: &str) -> impl Iterator<Item = &'a str> + 'a {
        self.in_order
            .range::<str, _>((Bound::Included(start), Bound::Unbounded))
            .map(|(path, _)| path.as_str())
    }

    /// The retained version records of a document, oldest first; empty when absent.
    pub fn versions(&self, path: &str) -> Vec<ModelVersion> {
        match self.stored(path) {
            None => Vec::new(),
            Some(doc) => doc.versions.iter().map(|v| v.record.clone()).collect(),
        }
    }

    /// The body of a retained version; None when the document is absent or the version
    /// was pruned (or never written). The current body is `body(path, doc.version)`.
    pub fn body(&self, path: &str, version: u64) -> Option<&[u8]> {
        let doc = self.stored(path)?;
        doc.versions.iter().find(|v| v.record.version == version).map(|v| &v.body[..])
    }

    /// The policy in force and its version.
    pub fn policy(&self) -> &ModelPolicy {
        &self.policy
    }

    /// The receipt of the member that committed this operation id, if any. Only applied
    /// members commit an operation id.
    pub fn receipt(&self, op_id: OperationId) -> Option<ModelReceipt> {
        self.receipt_at(*self.committed.get(&op_id)?)
    }

    /// The receipt of the member at `sequence`; None for 0 and past the last sequence.
    pub fn receipt_at(&self, sequence: u64) -> Option<ModelReceipt> {
        self.committed_at(sequence).map(|(r, _)| r.clone())
    }

    /// The digest of the request of the member at `sequence` (SPEC 10.13).
    pub fn request_digest_at(&self, sequence: u64) -> Option<[u8; 32]> {
        self.committed_at(sequence).map(|(_, q)| q.digest())
    }

    /// The first sequence whose receipt the world keeps now: the receipt window's start
    /// (SPEC 10.13, the model's own formula in `checkpoint::receipts_from`).
    pub fn receipt_window_from(&self) -> u64 {
        receipts_from(self.sequence)
    }

    /// What a receipt read of `op_id` must answer now, for a caller that says the
    /// operation could not have committed before `since` (None: since genesis).
    pub fn receipt_answer(&self, op_id: OperationId, since: Option<u64>) -> ModelReceiptAnswer {
        if let Some((receipt, _)) = self.committed_in_window(op_id) {
            return ModelReceiptAnswer::Committed(receipt.clone());
        }
        let window_from = self.receipt_window_from();
        if since.unwrap_or(1) >= window_from {
            ModelReceiptAnswer::Absent
        } else {
            ModelReceiptAnswer::Expired { window_from }
        }
    }

    fn committed_at(&self, sequence: u64) -> Option<&(ModelReceipt, ModelRequest)> {
        let index = usize::try_from(sequence.checked_sub(1)?).ok()?;
        self.by_sequence.get(index)
    }

    /// The operation id's commit, when it is inside the receipt window.
    fn committed_in_window(&self, op_id: OperationId) -> Option<&(ModelReceipt, ModelRequest)> {
        let sequence = *self.committed.get(&op_id)?;
        (sequence >= self.receipt_window_from()).then(|| self.committed_at(sequence)).flatten()
    }

    /// SPEC 1.4 check 2 with the reuse rule of SPEC 10.13: an operation id committed
    /// inside the window is a duplicate when its request has the same content, refused
    /// when it has other content. Outside the window the id is not known: None.
    fn judge_committed(
        &self,
        op_id: OperationId,
        request: &ModelRequest,
    ) -> Option<(Verdict, Option<Change>)> {
        let (receipt, committed) = self.committed_in_window(op_id)?;
        if committed == request {
            Some((Verdict::Duplicate(receipt.clone()), None))
        } else {
            Some(rejected(ModelRejection::OperationIdReused { sequence: receipt.sequence }))
        }
    }

    /// Records the modified time the log gave `path`'s last change, once the checker has
    /// judged it (SPEC 1.3), and gives back the time the document held (None when
    /// absent): one search where a read and a write took two. Applying a member leaves
    /// the time as it was, so after `apply_made` this is still the time before the member.
    pub fn replace_modified_time(&mut self, path: &str, modified_us: u64) -> Option<u64> {
        let doc = self.stored_mut(path)?;
        Some(std::mem::replace(&mut doc.modified_us, modified_us))
    }

    // ---------------------------------------------------------------- judging

    fn judge(
        &self,
        op_id: OperationId,
        m: &Mutation,
        published_hash: Option<[u8; 32]>,
    ) -> (Verdict, Option<Change>) {
        match m {
            Mutation::Publish { path, body, catalog, expected } => {
                let kind = WriteKind::Publish(body, published_hash, catalog.as_deref());
                self.judge_write(op_id, path, kind, *expected)
            }
            Mutation::Append { path, bytes, expected } => {
                self.judge_write(op_id, path, WriteKind::Append(bytes), *expected)
            }
            Mutation::SetArchived { path, archived, expected } => {
                self.judge_set_archived(op_id, path, *archived, *expected)
            }
            Mutation::SetPolicy { policy, expected } => self.judge_set_policy(op_id, policy, *expected),
        }
    }

    /// `publish` and `append`: SPEC 1.4 checks 1 to 10, skipping 5 (set_archived only).
    fn judge_write(
        &self,
        op_id: OperationId,
        raw_path: &str,
        kind: WriteKind<'_>,
        expected: Expected,
    ) -> (Verdict, Option<Change>) {
        // 1. Invalid path.
        let path = match normalize_path(raw_path) {
            Ok(p) => p,
            Err(problem) => return (Verdict::Invalid(ModelInvalid::Path(problem)), None),
        };
        // 1. A publish's record: at most 1,024 bytes; an empty one is none.
        let record = match kind {
            WriteKind::Publish(_, _, Some(r)) if r.len() > CATALOG_RECORD_MAX => {
                let invalid = ModelInvalid::CatalogRecordTooLong { len: r.len(), max: CATALOG_RECORD_MAX };
                return (Verdict::Invalid(invalid), None);
            }
            WriteKind::Publish(_, _, r) => r.filter(|r| !r.is_empty()).map(str::to_string),
            WriteKind::Append(_) => None,
        };
        // 2. Committed operation id. A published body is the new body: hashed once here.
        let published_hash = match &kind {
            WriteKind::Publish(body, hash, _) => Some(hash.unwrap_or_else(|| body_hash(body))),
            WriteKind::Append(_) => None,
        };
        let request = match published_hash {
            Some(body_hash) => {
                ModelRequest::Publish { path: path.clone(), body_hash, catalog: record.clone() }
            }
            None => ModelRequest::Append { path: path.clone() },
        };
        if let Some(judged) = self.judge_committed(op_id, &request) {
            return judged;
        }
        // 3. Read-only prefix.
        if let Some(prefix) = self.policy.body.read_only_prefix_of(&path) {
            return rejected(ModelRejection::ReadOnly { prefix: prefix.to_string() });
        }
        let doc = self.stored(&path);
        // 4. Expected version.
        if let Some(rejection) = document_conflict(expected, doc) {
            return rejected(rejection);
        }
        // 6. Archived document.
        if doc.is_some_and(|d| d.archived) {
            return rejected(ModelRejection::Archived);
        }
        // 7. Topology, when this write creates the document.
        if doc.is_none() {
            if let Some(blocking) = self.topology_blocker(&path) {
                return rejected(ModelRejection::Topology { blocking });
            }
        }
        // 8. Size of the new body.
        let (receipt_kind, new_body) = match kind {
            WriteKind::Publish(body, _, _) => (ReceiptKind::Published, body.clone()),
            WriteKind::Append(bytes) => match doc {
                None => (ReceiptKind::Appended, bytes.clone()),
                Some(d) => {
                    let mut joined = Vec::with_capacity(d.current_body().len() + bytes.len());
                    joined.extend_from_slice(d.current_body());
                    joined.extend_from_slice(bytes);
                    (ReceiptKind::Appended, Bytes::from(joined))
                }
            },
        };
        let size = new_body.len() as u64;
        let max = self.policy.body.body_bytes_max;
        if size > max {
            return rejected(ModelRejection::TooLarge { size, max });
        }
        // A publish sets the record; an append keeps the document's.
        let catalog = match receipt_kind {
            ReceiptKind::Published => record,
            _ => doc.and_then(|d| d.catalog.clone()),
        };
        // 9. Same body (and record) as now.
        if let Some(d) = doc {
            if *d.current_body() == new_body && d.catalog == catalog {
                return (Verdict::Unchanged { version: d.version }, None);
            }
        }
        // 10. Applied: a new version, with retention (SPEC 1.3) under the policy in force.
        let version = doc.map_or(1, |d| d.version + 1);
        let old_first = doc.map_or(1, |d| d.first_version);
        let retention = u64::from(self.policy.body.retention_versions);
        let (first_version, prune) = if version - old_first + 1 > retention {
            (version - retention + 1, Some((old_first, version - retention)))
        } else {
            (old_first, None)
        };
        let applied = ModelApplied {
            receipt: ModelReceipt {
                op_id,
                sequence: self.sequence + 1,
                kind: receipt_kind,
                path: Some(path),
                version,
            },
            archived: false,
            body_hash: Some(published_hash.unwrap_or_else(|| body_hash(&new_body))),
            body_len: size,
            first_version,
            catalog: catalog.clone(),
            prune,
            new_version: true,
            policy: None,
        };
        (Verdict::Applied(applied), Some(Change::Write { body: new_body, catalog }))
    }

    /// `set_archived`: SPEC 1.4 checks 1 to 5, 9 and 10 (6 to 8 concern writes only).
    fn judge_set_archived(
        &self,
        op_id: OperationId,
        raw_path: &str,
        archived: bool,
        expected: Expected,
    ) -> (Verdict, Option<Change>) {
        // 1. Invalid path.
        let path = match normalize_path(raw_path) {
            Ok(p) => p,
            Err(problem) => return (Verdict::Invalid(ModelInvalid::Path(problem)), None),
        };
        // 2. Committed operation id.
        let request = ModelRequest::Archive { path: path.clone(), archived };
        if let Some(judged) = self.judge_committed(op_id, &request) {
            return judged;
        }
        // 3. Read-only prefix.
        if let Some(prefix) = self.policy.body.read_only_prefix_of(&path) {
            return rejected(ModelRejection::ReadOnly { prefix: prefix.to_string() });
        }
        let doc = self.stored(&path);
        // 4. Expected version.
        if let Some(rejection) = document_conflict(expected, doc) {
            return rejected(rejection);
        }
        // 5. No document.
        let Some(doc) = doc else {
            return rejected(ModelRejection::NotFound);
        };
        // 9. Flag already as requested.
        if doc.archived == archived {
            return (Verdict::Unchanged { version: doc.version }, None);
        }
        // 10. Applied: the flag flips; version, first version and body stay.
        let current = doc.snapshot();
        let applied = ModelApplied {
            receipt: ModelReceipt {
                op_id,
                sequence: self.sequence + 1,
                kind: if archived { ReceiptKind::Archived } else { ReceiptKind::Unarchived },
                path: Some(path),
                version: doc.version,
            },
            archived,
            body_hash: Some(current.body_hash),
            body_len: current.body_len,
            first_version: doc.first_version,
            catalog: current.catalog.clone(),
            prune: None,
            new_version: false,
            policy: None,
        };
        (Verdict::Applied(applied), Some(Change::Archive { archived }))
    }

    /// `set_policy`: SPEC 1.4 policy checks 1 to 5. Read-only prefixes do not apply.
    fn judge_set_policy(
        &self,
        op_id: OperationId,
        policy: &PolicyBody,
        expected: Expected,
    ) -> (Verdict, Option<Change>) {
        // 1. Invalid policy.
        let body = match normalize_policy(policy) {
            Ok(b) => b,
            Err(problem) => return (Verdict::Invalid(ModelInvalid::Policy(problem)), None),
        };
        // 2. Committed operation id.
        let request = ModelRequest::Policy { body: body.clone() };
        if let Some(judged) = self.judge_committed(op_id, &request) {
            return judged;
        }
        // 3. Expected against the policy version V; "absent" means V = 0.
        // Unlike a document, `Version(0)` holds at V = 0: the policy always exists.
        let v = self.policy.version;
        let holds = match expected {
            Expected::Any => true,
            Expected::Absent => v == 0,
            Expected::Version(n) => v == n,
        };
        if !holds {
            let current = if v == 0 { None } else { Some(v) };
            return rejected(ModelRejection::Conflict { current });
        }
        // 4. Same policy as now.
        if body == self.policy.body {
            return (Verdict::Unchanged { version: v }, None);
        }
        // 5. Applied at V + 1.
        let applied = ModelApplied {
            receipt: ModelReceipt {
                op_id,
                sequence: self.sequence + 1,
                kind: ReceiptKind::PolicySet,
                path: None,
                version: v + 1,
            },
            archived: false,
            body_hash: None,
            body_len: 0,
            first_version: 0,
            catalog: None,
            prune: None,
            new_version: false,
            policy: Some(body.clone()),
        };
        (Verdict::Applied(applied), Some(Change::Policy { body }))
    }

    /// SPEC 1.1 topology for creating a document at `path` (not yet a document): the
    /// shortest ancestor that is a document, else the first descendant in byte order.
    fn topology_blocker(&self, path: &str) -> Option<String> {
        for ancestor in ancestors(path) {
            if self.by_path.contains_key(ancestor) {
                return Some(ancestor.to_string());
            }
        }
        // All descendants start with `path/`, and the strings with a given prefix form
        // one contiguous run in byte order, so the first key at or after `path/` is the
        // first descendant if there is any.
        let mut floor = String::with_capacity(path.len() + 1);
        floor.push_str(path);
        floor.push('/');
        // Past the last document (paths are often created in increasing order): none.
        if self.in_order.last_key_value().is_none_or(|(last, _)| last.as_str() < floor.as_str()) {
            return None;
        }
        self.in_order
            .range::<str, _>((Bound::Included(floor.as_str()), Bound::Unbounded))
            .next()
            .map(|(key, _)| key)
            .filter(|key| key.starts_with(&floor))
            .cloned()
    }

    // ---------------------------------------------------------------- applying

    /// Make an applied verdict true of the state.
    fn commit(&mut self, applied: &ModelApplied, change: Change) {
        let receipt = &applied.receipt;
        assert_eq!(receipt.sequence, self.sequence + 1, "sequences are contiguous");
        self.sequence = receipt.sequence;
        let previous = self.committed.insert(receipt.op_id, receipt.sequence);
        // An operation id commits again only once its first receipt left the window.
        let left = |s: u64| s < receipts_from(receipt.sequence - 1);
        assert!(previous.is_none_or(left), "an operation id commits once inside the window");
        let path = receipt.path.clone();
        let request = match (&change, receipt.kind) {
            (Change::Policy { body }, _) => ModelRequest::Policy { body: body.clone() },
            (Change::Archive { archived }, _) => {
                ModelRequest::Archive { path: path.expect("archive flips name a path"), archived: *archived }
            }
            (Change::Write { .. }, ReceiptKind::Appended) => {
                ModelRequest::Append { path: path.expect("writes name a path") }
            }
            (Change::Write { catalog, .. }, _) => ModelRequest::Publish {
                path: path.expect("writes name a path"),
                body_hash: applied.body_hash.expect("writes carry a body hash"),
                catalog: catalog.clone(),
            },
        };
        self.by_sequence.push((receipt.clone(), request));

        match change {
            Change::Policy { body } => {
                self.policy = ModelPolicy { version: receipt.version, body };
            }
            Change::Archive { archived } => {
                let path = receipt.path.as_ref().expect("archive flips name a path");
                let doc = self.stored_mut(path).expect("archive flips need a document");
                doc.archived = archived;
                doc.modified_sequence = receipt.sequence;
            }
            Change::Write { body, catalog } => {
                let path = receipt.path.clone().expect("writes name a path");
                let record = ModelVersion {
                    version: receipt.version,
                    sequence: receipt.sequence,
                    op_id: receipt.op_id,
                    body_hash: applied.body_hash.expect("writes carry a body hash"),
                    body_len: applied.body_len,
                    kind: receipt.kind,
                };
                let i = match self.by_path.entry(path) {
                    Entry::Occupied(o) => *o.get(),
                    Entry::Vacant(v) => {
                        let i = self.documents.len();
                        self.in_order.insert(v.key().clone(), i);
                        v.insert(i);
                        self.documents.push(StoredDocument {
                            version: 0,
                            first_version: 1,
                            archived: false,
                            modified_sequence: 0,
                            modified_us: 0,
                            catalog: None,
                            versions: Vec::new(),
                        });
                        i
                    }
                };
                let doc = &mut self.documents[i];
                doc.version = receipt.version;
                doc.first_version = applied.first_version;
                doc.archived = false;
                doc.modified_sequence = receipt.sequence;
                doc.catalog = catalog;
                doc.versions.push(StoredVersion { record, body });
                // Pruned versions (and their bodies) are dropped.
                let first = doc.first_version;
                doc.versions.retain(|v| v.record.version >= first);
            }
        }
    }
}

fn rejected(rejection: ModelRejection) -> (Verdict, Option<Change>) {
    (Verdict::Rejected(rejection), None)
}

/// SPEC 1.4 check 4 for a document: the conflict, if `expected` fails against `doc`.
/// `Version(n)` never holds for an absent document, not even `Version(0)`.
fn document_conflict(expected: Expected, doc: Option<&StoredDocument>) -> Option<ModelRejection> {
    let current = doc.map(|d| d.version);
    let holds = match expected {
        Expected::Any => true,
        Expected::Absent => current.is_none(),
        Expected::Version(n) => current == Some(n),
    };
    if holds {
        None
    } else {
        Some(ModelRejection::Conflict { current })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::PathProblem;
    use crate::policy::PolicyProblem;

    // ------------------------------------------------------------ helpers

    fn op(n: u128) -> OperationId {
        OperationId::from(n)
    }

    fn publish(path: &str, body: &[u8], expected: Expected) -> Mutation {
        Mutation::Publish {
            path: path.to_string(),
            body: Bytes::copy_from_slice(body),
            catalog: None,
            expected,
        }
    }

    fn append(path: &str, bytes: &[u8], expected: Expected) -> Mutation {
        Mutation::Append { path: path.to_string(), bytes: Bytes::copy_from_slice(bytes), expected }
    }

    fn set_archived(path: &str, archived: bool, expected: Expected) -> Mutation {
        Mutation::SetArchived { path: path.to_string(), archived, expected }
    }

    fn policy_body(retention: u32, max: u64, prefixes: &[&str]) -> PolicyBody {
        PolicyBody {
            retention_versions: retention,
            body_bytes_max: max,
            read_only_prefixes: prefixes.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn set_policy(retention: u32, max: u64, prefixes: &[&str], expected: Expected) -> Mutation {
        Mutation::SetPolicy { policy: policy_body(retention, max, prefixes), expected }
    }

    fn default_policy_with(prefixes: &[&str]) -> Mutation {
        set_policy(64, 4_194_304, prefixes, Expected::Any)
    }

    fn applied(v: Verdict) -> ModelApplied {
        match v {
            Verdict::Applied(a) => a,
            other => panic!("expected Applied, got {other:?}"),
        }
    }

    fn rejection(v: Verdict) -> ModelRejection {
        match v {
            Verdict::Rejected(r) => r,
            other => panic!("expected Rejected, got {other:?}"),
        }
    }

    /// A world counter for fresh op ids, so tests only name the ids they reuse.
    struct W {
        world: ModelWorld,
        next: u128,
    }

    impl W {
        fn new() -> Self {
            W { world: ModelWorld::new(), next: 1_000_000 }
        }
        fn apply(&mut self, m: Mutation) -> Verdict {
            self.next += 1;
            self.world.apply(op(self.next), &m)
        }
        fn ok(&mut self, m: Mutation) -> ModelApplied {
            applied(self.apply(m))
        }
    }

    const ALL_DOC_KINDS: [fn(&str, Expected) -> Mutation; 3] =
        [|p, e| publish(p, b"new", e), |p, e| append(p, b"new", e), |p, e| set_archived(p, true, e)];

    // ------------------------------------------------------------ catalog records

    fn cataloged(path: &str, body: &[u8], record: Option<&str>) -> Mutation {
        let catalog = record.map(str::to_string);
        Mutation::Publish {
            path: path.into(),
            body: Bytes::copy_from_slice(body),
            catalog,
            expected: Expected::Any,
        }
    }

    #[test]
    fn a_publish_sets_the_record_an_append_and_an_archive_flip_keep_it() {
        let mut w = W::new();
        assert_eq!(w.ok(cataloged("/a", b"one", Some("draft"))).catalog.as_deref(), Some("draft"));
        assert_eq!(w.ok(append("/a", b"+", Expected::Any)).catalog.as_deref(), Some("draft"));
        assert_eq!(w.ok(set_archived("/a", true, Expected::Any)).catalog.as_deref(), Some("draft"));
        assert_eq!(w.world.document("/a").unwrap().catalog.as_deref(), Some("draft"));
        w.ok(set_archived("/a", false, Expected::Any));
        assert_eq!(w.ok(cataloged("/a", b"two", Some(""))).catalog, None, "an empty record is none");
    }

    #[test]
    fn the_same_body_with_another_record_is_a_new_version() {
        let mut w = W::new();
        w.ok(cataloged("/a", b"one", Some("draft")));
        assert_eq!(w.apply(cataloged("/a", b"one", Some("draft"))), Verdict::Unchanged { version: 1 });
        assert_eq!(w.ok(cataloged("/a", b"one", None)).receipt.version, 2);
    }

    #[test]
    fn a_record_past_1024_bytes_is_invalid_after_the_path() {
        let mut w = W::new();
        let long = "x".repeat(1_025);
        let invalid = ModelInvalid::CatalogRecordTooLong { len: 1_025, max: 1_024 };
        assert_eq!(w.apply(cataloged("/a", b"one", Some(&long))), Verdict::Invalid(invalid));
        let bad_path = w.apply(cataloged("a/../b", b"one", Some(&long)));
        assert!(matches!(bad_path, Verdict::Invalid(ModelInvalid::Path(_))), "{bad_path:?}");
        assert!(matches!(w.apply(cataloged("/a", b"one", Some(&long[1..]))), Verdict::Applied(_)));
    }

    #[test]
    fn an_operation_id_reused_with_another_record_is_refused() {
        let mut w = ModelWorld::new();
        w.apply(op(1), &cataloged("/a", b"one", Some("draft")));
        assert!(matches!(w.apply(op(1), &cataloged("/a", b"one", Some("draft"))), Verdict::Duplicate(_)));
        let reused = Verdict::Rejected(ModelRejection::OperationIdReused { sequence: 1 });
        assert_eq!(w.apply(op(1), &cataloged("/a", b"one", Some("final"))), reused);
    }

    // ------------------------------------------------------------ genesis, sequences

    #[test]
    fn genesis_has_no_documents_and_the_default_policy_at_version_0() {
        let w = ModelWorld::new();
        assert_eq!(w.sequence(), 0);
        assert_eq!(w.documents().count(), 0);
        assert_eq!(w.policy().version, 0);
        assert_eq!(w.policy().body, ModelPolicyBody::default());
        assert_eq!(w.receipt(op(1)), None);
        assert_eq!(w.document("/a"), None);
        assert!(w.versions("/a").is_empty());
        assert_eq!(w.body("/a", 1), None);
    }

    #[test]
    fn sequences_start_at_1_and_only_applied_members_take_one() {
        let mut w = W::new();
        assert_eq!(w.ok(publish("/a", b"1", Expected::Any)).receipt.sequence, 1);
        // Unchanged, rejected and invalid take no sequence.
        assert_eq!(w.apply(publish("/a", b"1", Expected::Any)), Verdict::Unchanged { version: 1 });
        assert!(matches!(w.apply(publish("/a", b"2", Expected::Absent)), Verdict::Rejected(_)));
        assert!(matches!(w.apply(publish("", b"2", Expected::Any)), Verdict::Invalid(_)));
        assert_eq!(w.world.sequence(), 1);
        assert_eq!(w.ok(append("/b", b"x", Expected::Any)).receipt.sequence, 2);
        assert_eq!(w.ok(set_archived("/b", true, Expected::Any)).receipt.sequence, 3);
        assert_eq!(w.ok(default_policy_with(&["/z"])).receipt.sequence, 4);
        assert_eq!(w.world.sequence(), 4);
    }

    #[test]
    fn evaluate_changes_nothing_and_agrees_with_apply() {
        let mut w = ModelWorld::new();
        let m = publish("/a", b"body", Expected::Absent);
        let before = w.clone();
        let judged = w.evaluate(op(1), &m);
        assert_eq!(w.sequence(), 0);
        assert_eq!(w.document("/a"), None);
        assert_eq!(w.receipt(op(1)), None);
        assert_eq!(judged, before.evaluate(op(1), &m));
        let done = w.apply(op(1), &m);
        assert_eq!(judged, done);
        assert_eq!(w.sequence(), 1);
    }

    #[test]
    fn clones_are_independent() {
        let mut a = ModelWorld::new();
        a.apply(op(1), &publish("/a", b"1", Expected::Any));
        let b = a.clone();
        a.apply(op(2), &publish("/a", b"2", Expected::Any));
        assert_eq!(a.document("/a").unwrap().version, 2);
        assert_eq!(b.document("/a").unwrap().version, 1);
        assert_eq!(b.sequence(), 1);
    }

    // ------------------------------------------------------------ publish / append applied

    #[test]
    fn publish_creates_the_document_at_version_1() {
        let mut w = ModelWorld::new();
        let a = applied(w.apply(op(7), &publish("notes//a.md/", b"hello", Expected::Absent)));
        let hash: [u8; 32] = blake3::hash(b"hello").into();
        assert_eq!(
            a,
            ModelApplied {
                receipt: ModelReceipt {
                    op_id: op(7),
                    sequence: 1,
                    kind: ReceiptKind::Published,
                    path: Some("/notes/a.md".to_string()),
                    version: 1,
                },
                archived: false,
                body_hash: Some(hash),
                body_len: 5,
                first_version: 1,
                catalog: None,
                prune: None,
                new_version: true,
                policy: None,
            }
        );
        assert_eq!(
            w.document("/notes/a.md"),
            Some(ModelDocument {
                version: 1,
                first_version: 1,
                archived: false,
                body_hash: hash,
                body_len: 5,
                modified_sequence: 1,
                modified_us: 0,
                catalog: None,
            })
        );
        assert_eq!(w.body("/notes/a.md", 1), Some(&b"hello"[..]));
        assert_eq!(
            w.versions("/notes/a.md"),
            vec![ModelVersion {
                version: 1,
                sequence: 1,
                op_id: op(7),
                body_hash: hash,
                body_len: 5,
                kind: ReceiptKind::Published,
            }]
        );
    }

    #[test]
    fn publish_to_an_existing_document_adds_a_version() {
        let mut w = W::new();
        w.ok(publish("/a", b"one", Expected::Any));
        let a = w.ok(publish("/a", b"two!", Expected::Version(1)));
        assert_eq!(a.receipt.version, 2);
        assert_eq!(a.body_len, 4);
        assert_eq!(a.body_hash, Some(body_hash(b"two!")));
        let d = w.world.document("/a").unwrap();
        assert_eq!((d.version, d.first_version, d.body_len), (2, 1, 4));
        assert_eq!(w.world.body("/a", 1), Some(&b"one"[..]));
        assert_eq!(w.world.body("/a", 2), Some(&b"two!"[..]));
        assert_eq!(w.world.body("/a", 3), None);
    }

    #[test]
    fn publish_with_an_empty_body_creates_an_empty_document() {
        let mut w = W::new();
        let a = w.ok(publish("/a", b"", Expected::Absent));
        assert_eq!(a.body_len, 0);
        assert_eq!(a.body_hash, Some(body_hash(b"")));
        assert_eq!(w.world.body("/a", 1), Some(&b""[..]));
    }

    #[test]
    fn append_creates_the_document_from_the_bytes_when_absent() {
        let mut w = W::new();
        let a = w.ok(append("/log", b"abc", Expected::Absent));
        assert_eq!(a.receipt.kind, ReceiptKind::Appended);
        assert_eq!(a.receipt.version, 1);
        assert_eq!(a.body_len, 3);
        assert_eq!(w.world.body("/log", 1), Some(&b"abc"[..]));
        assert_eq!(w.world.versions("/log")[0].kind, ReceiptKind::Appended);
    }

    #[test]
    fn append_adds_the_bytes_after_the_current_body() {
        let mut w = W::new();
        w.ok(publish("/log", b"abc", Expected::Any));
        let a = w.ok(append("/log", b"def", Expected::Version(1)));
        assert_eq!(a.receipt.version, 2);
        assert_eq!(a.body_len, 6);
        assert_eq!(a.body_hash, Some(body_hash(b"abcdef")));
        assert_eq!(w.world.body("/log", 2), Some(&b"abcdef"[..]));
        assert_eq!(w.world.body("/log", 1), Some(&b"abc"[..]));
    }

    #[test]
    fn append_of_no_bytes_to_an_absent_document_creates_an_empty_one() {
        let mut w = W::new();
        let a = w.ok(append("/log", b"", Expected::Any));
        assert_eq!(a.receipt.version, 1);
        assert_eq!(a.body_len, 0);
    }

    #[test]
    fn publish_after_append_records_each_kind() {
        let mut w = W::new();
        w.ok(append("/a", b"x", Expected::Any));
        w.ok(publish("/a", b"y", Expected::Any));
        w.ok(append("/a", b"z", Expected::Any));
        let kinds: Vec<_> = w.world.versions("/a").iter().map(|v| v.kind).collect();
        assert_eq!(kinds, vec![ReceiptKind::Appended, ReceiptKind::Published, ReceiptKind::Appended]);
        assert_eq!(w.world.body("/a", 3), Some(&b"yz"[..]));
    }

    // ------------------------------------------------------------ 1. invalid path

    #[test]
    fn invalid_path_is_invalid_for_every_document_mutation() {
        let w = ModelWorld::new();
        for make in ALL_DOC_KINDS {
            assert_eq!(
                w.evaluate(op(1), &make("//", Expected::Any)),
                Verdict::Invalid(ModelInvalid::Path(PathProblem::Empty))
            );
            assert_eq!(
                w.evaluate(op(1), &make("/a/../b", Expected::Any)),
                Verdict::Invalid(ModelInvalid::Path(PathProblem::DotSegment))
            );
            assert_eq!(
                w.evaluate(op(1), &make("/a\u{0}", Expected::Any)),
                Verdict::Invalid(ModelInvalid::Path(PathProblem::ControlCharacter))
            );
            assert_eq!(
                w.evaluate(op(1), &make(&"s".repeat(256), Expected::Any)),
                Verdict::Invalid(ModelInvalid::Path(PathProblem::SegmentTooLong))
            );
            let long = "/seg".repeat(300);
            assert_eq!(
                w.evaluate(op(1), &make(&long, Expected::Any)),
                Verdict::Invalid(ModelInvalid::Path(PathProblem::TooLong))
            );
        }
    }

    #[test]
    fn checks_run_in_spec_order_invalid_path_before_duplicate() {
        let mut w = ModelWorld::new();
        applied(w.apply(op(1), &publish("/a", b"x", Expected::Any)));
        for make in ALL_DOC_KINDS {
            assert_eq!(
                w.apply(op(1), &make("/", Expected::Any)),
                Verdict::Invalid(ModelInvalid::Path(PathProblem::Empty))
            );
        }
        assert_eq!(w.sequence(), 1);
    }

    // ------------------------------------------------------------ 2. duplicate

    #[test]
    fn an_operation_id_resent_with_the_same_content_is_a_duplicate() {
        let mut w = ModelWorld::new();
        let first = applied(w.apply(op(1), &publish("/a", b"x", Expected::Any))).receipt;
        // The same content, under any precondition, answers with the first receipt.
        for expected in [Expected::Any, Expected::Absent, Expected::Version(9)] {
            assert_eq!(w.apply(op(1), &publish("/a", b"x", expected)), Verdict::Duplicate(first.clone()));
        }
        assert_eq!(w.sequence(), 1);
        assert_eq!(w.receipt(op(1)), Some(first));
    }

    #[test]
    fn an_operation_id_reused_with_other_content_is_refused() {
        let mut w = ModelWorld::new();
        let first = applied(w.apply(op(1), &publish("/a", b"x", Expected::Any))).receipt;
        let reused = Verdict::Rejected(ModelRejection::OperationIdReused { sequence: 1 });
        for m in [
            publish("/a", b"other", Expected::Any),
            publish("/b", b"x", Expected::Any),
            append("/a", b"y", Expected::Any),
            set_archived("/a", true, Expected::Any),
            default_policy_with(&["/q"]),
        ] {
            assert_eq!(w.apply(op(1), &m), reused);
        }
        assert_eq!(w.sequence(), 1);
        assert_eq!(w.document("/b"), None);
        assert!(!w.document("/a").unwrap().archived);
        assert_eq!(w.policy().version, 0);
        assert_eq!(w.receipt(op(1)), Some(first));
    }

    #[test]
    fn two_appends_to_one_path_under_one_operation_id_are_one_content() {
        // A member does not record an append's bytes (SPEC 10.13): the kernel cannot tell.
        let mut w = ModelWorld::new();
        let first = applied(w.apply(op(1), &append("/a", b"x", Expected::Any))).receipt;
        assert_eq!(w.evaluate(op(1), &append("/a", b"other", Expected::Any)), Verdict::Duplicate(first));
    }

    #[test]
    fn duplicate_receipt_stays_the_first_after_later_changes() {
        let mut w = ModelWorld::new();
        let first = applied(w.apply(op(1), &publish("/a", b"x", Expected::Any))).receipt;
        applied(w.apply(op(2), &publish("/a", b"y", Expected::Any)));
        applied(w.apply(op(3), &set_archived("/a", true, Expected::Any)));
        assert_eq!(w.evaluate(op(1), &publish("/a", b"x", Expected::Any)), Verdict::Duplicate(first));
        assert_eq!(w.receipt(op(2)).unwrap().version, 2);
        assert_eq!(w.receipt(op(3)).unwrap().kind, ReceiptKind::Archived);
    }

    #[test]
    fn rejected_unchanged_and_invalid_do_not_commit_the_op_id() {
        // SPEC reading: only an applied member commits its operation id, so an op id
        // whose first answer was not a commit can still apply later.
        let mut w = ModelWorld::new();
        applied(w.apply(op(1), &publish("/a", b"x", Expected::Any)));
        assert_eq!(w.apply(op(2), &publish("/a", b"x", Expected::Any)), Verdict::Unchanged { version: 1 });
        assert!(matches!(w.apply(op(3), &publish("/a", b"y", Expected::Absent)), Verdict::Rejected(_)));
        assert!(matches!(w.apply(op(4), &publish("/", b"y", Expected::Any)), Verdict::Invalid(_)));
        for n in 2..=4 {
            assert_eq!(w.receipt(op(n)), None);
        }
        assert_eq!(applied(w.apply(op(2), &publish("/a", b"y", Expected::Any))).receipt.sequence, 2);
        assert_eq!(applied(w.apply(op(3), &publish("/a", b"z", Expected::Version(2)))).receipt.sequence, 3);
    }

    #[test]
    fn checks_run_in_spec_order_duplicate_before_read_only() {
        let mut w = ModelWorld::new();
        let first = applied(w.apply(op(1), &publish("/ro/a", b"new", Expected::Any))).receipt;
        applied(w.apply(op(2), &default_policy_with(&["/ro"])));
        let [same, other @ ..] = ALL_DOC_KINDS;
        assert_eq!(w.evaluate(op(1), &same("/ro/a", Expected::Any)), Verdict::Duplicate(first));
        for make in other {
            let reused = Verdict::Rejected(ModelRejection::OperationIdReused { sequence: 1 });
            assert_eq!(w.evaluate(op(1), &make("/ro/a", Expected::Any)), reused);
        }
    }

    #[test]
    fn checks_run_in_spec_order_duplicate_before_conflict() {
        let mut w = ModelWorld::new();
        let first = applied(w.apply(op(1), &publish("/a", b"x", Expected::Any))).receipt;
        assert_eq!(w.evaluate(op(1), &publish("/a", b"x", Expected::Absent)), Verdict::Duplicate(first));
        assert_eq!(
            w.evaluate(op(1), &set_archived("/nope", true, Expected::Version(9))),
            Verdict::Rejected(ModelRejection::OperationIdReused { sequence: 1 })
        );
    }

    // ------------------------------------------------------------ receipt window

    /// A world whose first two receipt blocks (sequences 1 to 4,096) left the window:
    /// op 1 published `/a`, then archive flips of `/a` under ops 2 on.
    fn past_the_window() -> ModelWorld {
        let mut w = ModelWorld::new();
        applied(w.apply(op(1), &publish("/a", b"x", Expected::Any)));
        let through = crate::checkpoint::RECEIPT_WINDOW_SEQUENCES + 4_096;
        for n in 2..=through {
            applied(w.apply(op(u128::from(n)), &set_archived("/a", n.is_multiple_of(2), Expected::Any)));
        }
        assert_eq!(w.receipt_window_from(), 4_097);
        w
    }

    #[test]
    fn the_receipt_window_mirrors_spec_10_13() {
        let w = past_the_window();
        let window_from = 4_097;
        // Outside the window: unknown unless the caller's `since` is inside it.
        assert_eq!(w.receipt_answer(op(1), None), ModelReceiptAnswer::Expired { window_from });
        assert_eq!(w.receipt_answer(op(1), Some(4_096)), ModelReceiptAnswer::Expired { window_from });
        assert_eq!(w.receipt_answer(op(1), Some(window_from)), ModelReceiptAnswer::Absent);
        assert_eq!(w.receipt_answer(op(u128::MAX), Some(window_from)), ModelReceiptAnswer::Absent);
        // Inside: the receipt, whatever the caller's `since`.
        let inside = w.receipt(op(5_000)).expect("committed");
        assert_eq!(w.receipt_answer(op(5_000), None), ModelReceiptAnswer::Committed(inside));
        // An operation id outside the window is not known: it commits again.
        let mut w = w;
        let again = applied(w.apply(op(1), &publish("/b", b"y", Expected::Any))).receipt;
        assert_eq!(again.sequence, w.sequence());
        assert_eq!(w.receipt_answer(op(1), None), ModelReceiptAnswer::Committed(again));
        // Inside the window, other content under a known id is refused.
        let reused = Verdict::Rejected(ModelRejection::OperationIdReused { sequence: 5_000 });
        assert_eq!(w.evaluate(op(5_000), &publish("/c", b"z", Expected::Any)), reused);
    }

    // ------------------------------------------------------------ 3. read-only

    #[test]
    fn read_only_prefix_refuses_every_document_mutation() {
        let mut w = W::new();
        w.ok(publish("/ro/a", b"x", Expected::Any));
        w.ok(default_policy_with(&["/zz", "ro/"]));
        for make in ALL_DOC_KINDS {
            for path in ["/ro", "/ro/a", "ro//b/c"] {
                assert_eq!(
                    rejection(w.apply(make(path, Expected::Any))),
                    ModelRejection::ReadOnly { prefix: "/ro".to_string() }
                );
            }
        }
        assert_eq!(w.world.sequence(), 2);
    }

    #[test]
    fn read_only_prefix_matches_whole_segments_only() {
        let mut w = W::new();
        w.ok(default_policy_with(&["/ro"]));
        w.ok(publish("/rox", b"x", Expected::Any));
        w.ok(publish("/r/o", b"x", Expected::Any));
    }

    #[test]
    fn read_only_reports_the_first_prefix_in_normalized_order() {
        let mut w = W::new();
        w.ok(default_policy_with(&["/a/b", "/a"]));
        assert_eq!(
            rejection(w.apply(publish("/a/b/c", b"x", Expected::Any))),
            ModelRejection::ReadOnly { prefix: "/a".to_string() }
        );
    }

    #[test]
    fn read_only_never_refuses_set_policy() {
        let mut w = W::new();
        w.ok(default_policy_with(&["/a"]));
        assert!(matches!(
            w.apply(publish("/a/x", b"1", Expected::Any)),
            Verdict::Rejected(ModelRejection::ReadOnly { .. })
        ));
        let unlocked = w.ok(default_policy_with(&[]));
        assert_eq!(unlocked.receipt.version, 2);
        w.ok(publish("/a/x", b"1", Expected::Any));
    }

    #[test]
    fn checks_run_in_spec_order_read_only_before_conflict() {
        let mut w = W::new();
        w.ok(publish("/ro/a", b"x", Expected::Any));
        w.ok(default_policy_with(&["/ro"]));
        let ro = ModelRejection::ReadOnly { prefix: "/ro".to_string() };
        for make in ALL_DOC_KINDS {
            // Both an existing document with a failing precondition and an absent one.
            assert_eq!(rejection(w.apply(make("/ro/a", Expected::Absent))), ro);
            assert_eq!(rejection(w.apply(make("/ro/a", Expected::Version(5)))), ro);
            assert_eq!(rejection(w.apply(make("/ro/b", Expected::Version(1)))), ro);
        }
    }

    #[test]
    fn checks_run_in_spec_order_read_only_before_not_found_archived_and_topology() {
        let mut w = W::new();
        w.ok(publish("/ro/arch", b"x", Expected::Any));
        w.ok(set_archived("/ro/arch", true, Expected::Any));
        w.ok(publish("/ro/doc", b"x", Expected::Any));
        w.ok(default_policy_with(&["/ro"]));
        let ro = ModelRejection::ReadOnly { prefix: "/ro".to_string() };
        // NotFound (5)
        assert_eq!(rejection(w.apply(set_archived("/ro/none", true, Expected::Any))), ro);
        // Archived (6)
        assert_eq!(rejection(w.apply(publish("/ro/arch", b"y", Expected::Any))), ro);
        // Topology (7)
        assert_eq!(rejection(w.apply(append("/ro/doc/sub", b"y", Expected::Any))), ro);
        // TooLarge (8)
        let big = vec![0u8; 5_000_000];
        assert_eq!(rejection(w.apply(publish("/ro/new", &big, Expected::Any))), ro);
        // Unchanged (9)
        assert_eq!(rejection(w.apply(publish("/ro/doc", b"x", Expected::Any))), ro);
        assert_eq!(rejection(w.apply(set_archived("/ro/arch", true, Expected::Any))), ro);
    }

    // ------------------------------------------------------------ 4. expected version

    #[test]
    fn expected_absent_conflicts_when_the_document_exists() {
        let mut w = W::new();
        w.ok(publish("/a", b"x", Expected::Any));
        w.ok(publish("/a", b"y", Expected::Any));
        for make in ALL_DOC_KINDS {
            assert_eq!(
                rejection(w.apply(make("/a", Expected::Absent))),
                ModelRejection::Conflict { current: Some(2) }
            );
        }
    }

    #[test]
    fn expected_version_conflicts_when_the_document_is_absent() {
        let mut w = W::new();
        for make in ALL_DOC_KINDS {
            for n in [0, 1, 7] {
                assert_eq!(
                    rejection(w.apply(make("/a", Expected::Version(n)))),
                    ModelRejection::Conflict { current: None }
                );
            }
        }
    }

    #[test]
    fn expected_version_conflicts_when_the_version_differs() {
        let mut w = W::new();
        w.ok(publish("/a", b"x", Expected::Any));
        for make in ALL_DOC_KINDS {
            for n in [0, 2, 99] {
                assert_eq!(
                    rejection(w.apply(make("/a", Expected::Version(n)))),
                    ModelRejection::Conflict { current: Some(1) }
                );
            }
        }
    }

    #[test]
    fn expected_version_that_matches_passes() {
        let mut w = W::new();
        w.ok(publish("/a", b"x", Expected::Absent));
        w.ok(publish("/a", b"y", Expected::Version(1)));
        w.ok(append("/a", b"z", Expected::Version(2)));
        w.ok(set_archived("/a", true, Expected::Version(3)));
        w.ok(set_archived("/a", false, Expected::Version(3)));
    }

    #[test]
    fn expected_any_and_absent_pass_where_they_should() {
        let mut w = W::new();
        w.ok(publish("/a", b"x", Expected::Absent));
        w.ok(append("/b", b"x", Expected::Absent));
        w.ok(publish("/a", b"y", Expected::Any));
        w.ok(append("/b", b"y", Expected::Any));
        w.ok(set_archived("/a", true, Expected::Any));
    }

    #[test]
    fn conflict_reports_the_version_of_an_archived_document() {
        let mut w = W::new();
        w.ok(publish("/a", b"x", Expected::Any));
        w.ok(set_archived("/a", true, Expected::Any));
        assert_eq!(
            rejection(w.apply(set_archived("/a", false, Expected::Version(2)))),
            ModelRejection::Conflict { current: Some(1) }
        );
    }

    // ------------------------------------------------------------ 5. not found

    #[test]
    fn set_archived_on_an_absent_document_is_not_found() {
        let mut w = W::new();
        w.ok(publish("/a/b", b"x", Expected::Any));
        for archived in [true, false] {
            for path in ["/nope", "/a", "/a/b/c"] {
                assert_eq!(
                    rejection(w.apply(set_archived(path, archived, Expected::Any))),
                    ModelRejection::NotFound
                );
            }
        }
    }

    #[test]
    fn checks_run_in_spec_order_conflict_before_not_found() {
        let mut w = W::new();
        assert_eq!(
            rejection(w.apply(set_archived("/nope", true, Expected::Version(1)))),
            ModelRejection::Conflict { current: None }
        );
        // Absent holds for an absent document, so NotFound is next.
        assert_eq!(
            rejection(w.apply(set_archived("/nope", true, Expected::Absent))),
            ModelRejection::NotFound
        );
    }

    // ------------------------------------------------------------ 6. archived

    #[test]
    fn publish_and_append_to_an_archived_document_are_rejected() {
        let mut w = W::new();
        w.ok(publish("/a", b"x", Expected::Any));
        w.ok(set_archived("/a", true, Expected::Any));
        assert_eq!(rejection(w.apply(publish("/a", b"y", Expected::Any))), ModelRejection::Archived);
        assert_eq!(rejection(w.apply(append("/a", b"y", Expected::Version(1)))), ModelRejection::Archived);
        assert_eq!(w.world.document("/a").unwrap().version, 1);
    }

    #[test]
    fn checks_run_in_spec_order_conflict_before_archived() {
        let mut w = W::new();
        w.ok(publish("/a", b"x", Expected::Any));
        w.ok(set_archived("/a", true, Expected::Any));
        assert_eq!(
            rejection(w.apply(publish("/a", b"y", Expected::Absent))),
            ModelRejection::Conflict { current: Some(1) }
        );
        assert_eq!(
            rejection(w.apply(append("/a", b"y", Expected::Version(4)))),
            ModelRejection::Conflict { current: Some(1) }
        );
    }

    #[test]
    fn checks_run_in_spec_order_archived_before_too_large_and_unchanged() {
        let mut w = W::new();
        w.ok(publish("/a", b"x", Expected::Any));
        w.ok(set_archived("/a", true, Expected::Any));
        // The same body would be Unchanged (9); a huge one TooLarge (8).
        assert_eq!(rejection(w.apply(publish("/a", b"x", Expected::Any))), ModelRejection::Archived);
        assert_eq!(rejection(w.apply(append("/a", b"", Expected::Any))), ModelRejection::Archived);
        let big = vec![1u8; 4_194_305];
        assert_eq!(rejection(w.apply(publish("/a", &big, Expected::Any))), ModelRejection::Archived);
    }

    // ------------------------------------------------------------ 7. topology

    #[test]
    fn topology_reports_the_ancestor() {
        let mut w = W::new();
        w.ok(publish("/a/b", b"x", Expected::Any));
        for make in [ALL_DOC_KINDS[0], ALL_DOC_KINDS[1]] {
            for path in ["/a/b/c", "/a/b/c/d/e"] {
                assert_eq!(
                    rejection(w.apply(make(path, Expected::Any))),
                    ModelRejection::Topology { blocking: "/a/b".to_string() }
                );
            }
        }
    }

    #[test]
    fn topology_reports_the_first_descendant_in_byte_order() {
        let mut w = W::new();
        w.ok(publish("/a/m", b"x", Expected::Any));
        w.ok(publish("/a/B/deep", b"x", Expected::Any));
        w.ok(publish("/a/z", b"x", Expected::Any));
        // Also a sibling that sorts between `/a` and `/a/`: `/a-` (0x2D < 0x2F).
        w.ok(publish("/a-", b"x", Expected::Any));
        w.ok(publish("/a.", b"x", Expected::Any));
        for make in [ALL_DOC_KINDS[0], ALL_DOC_KINDS[1]] {
            assert_eq!(
                rejection(w.apply(make("/a", Expected::Any))),
                ModelRejection::Topology { blocking: "/a/B/deep".to_string() }
            );
        }
    }

    #[test]
    fn topology_does_not_block_siblings_or_segment_prefixes() {
        let mut w = W::new();
        w.ok(publish("/a/b", b"x", Expected::Any));
        w.ok(publish("/a/c", b"x", Expected::Any));
        w.ok(publish("/a/bb", b"x", Expected::Any));
        w.ok(publish("/ab", b"x", Expected::Any));
        w.ok(append("/a0/b", b"x", Expected::Any));
        w.ok(publish("/a/b0/c", b"x", Expected::Any));
        // `/a/b` and `/a/bb` are documents; `/a/b0/c` is not under either.
        assert_eq!(w.world.documents().count(), 6);
    }

    #[test]
    fn topology_counts_archived_documents() {
        let mut w = W::new();
        w.ok(publish("/a/b", b"x", Expected::Any));
        w.ok(set_archived("/a/b", true, Expected::Any));
        assert_eq!(
            rejection(w.apply(publish("/a", b"y", Expected::Any))),
            ModelRejection::Topology { blocking: "/a/b".to_string() }
        );
        assert_eq!(
            rejection(w.apply(publish("/a/b/c", b"y", Expected::Any))),
            ModelRejection::Topology { blocking: "/a/b".to_string() }
        );
    }

    #[test]
    fn topology_only_concerns_documents_being_created() {
        // Writes to an existing document never meet topology, whatever surrounds it.
        let mut w = W::new();
        w.ok(publish("/a/b", b"x", Expected::Any));
        w.ok(publish("/a/b", b"y", Expected::Any));
        w.ok(append("/a/b", b"z", Expected::Any));
    }

    #[test]
    fn checks_run_in_spec_order_conflict_before_topology() {
        let mut w = W::new();
        w.ok(publish("/a", b"x", Expected::Any));
        assert_eq!(
            rejection(w.apply(publish("/a/b", b"y", Expected::Version(1)))),
            ModelRejection::Conflict { current: None }
        );
    }

    #[test]
    fn checks_run_in_spec_order_topology_before_too_large() {
        let mut w = W::new();
        w.ok(publish("/a", b"x", Expected::Any));
        let big = vec![1u8; 4_194_305];
        assert_eq!(
            rejection(w.apply(publish("/a/b", &big, Expected::Any))),
            ModelRejection::Topology { blocking: "/a".to_string() }
        );
        assert_eq!(
            rejection(w.apply(append("/a/b", &big, Expected::Absent))),
            ModelRejection::Topology { blocking: "/a".to_string() }
        );
    }

    // ------------------------------------------------------------ 8. too large

    #[test]
    fn publish_over_body_max_is_too_large() {
        let mut w = W::new();
        w.ok(set_policy(64, 10, &[], Expected::Any));
        assert_eq!(
            rejection(w.apply(publish("/a", &[0; 11], Expected::Any))),
            ModelRejection::TooLarge { size: 11, max: 10 }
        );
        // Exactly the limit is fine.
        assert_eq!(w.ok(publish("/a", &[0; 10], Expected::Any)).body_len, 10);
    }

    #[test]
    fn default_body_max_is_4_mib() {
        let mut w = W::new();
        w.ok(publish("/ok", &vec![7u8; 4_194_304], Expected::Any));
        assert_eq!(
            rejection(w.apply(publish("/big", &vec![7u8; 4_194_305], Expected::Any))),
            ModelRejection::TooLarge { size: 4_194_305, max: 4_194_304 }
        );
    }

    #[test]
    fn body_max_of_zero_allows_only_empty_bodies() {
        let mut w = W::new();
        w.ok(set_policy(64, 0, &[], Expected::Any));
        w.ok(publish("/a", b"", Expected::Any));
        assert_eq!(
            rejection(w.apply(append("/a", b"x", Expected::Any))),
            ModelRejection::TooLarge { size: 1, max: 0 }
        );
    }

    #[test]
    fn append_too_large_counts_the_whole_new_body() {
        let mut w = W::new();
        w.ok(set_policy(64, 10, &[], Expected::Any));
        w.ok(publish("/a", &[1; 8], Expected::Any));
        assert_eq!(
            rejection(w.apply(append("/a", &[2; 3], Expected::Any))),
            ModelRejection::TooLarge { size: 11, max: 10 }
        );
        assert_eq!(
            rejection(w.apply(append("/new", &[2; 11], Expected::Any))),
            ModelRejection::TooLarge { size: 11, max: 10 }
        );
        assert_eq!(w.ok(append("/a", &[2; 2], Expected::Any)).body_len, 10);
    }

    #[test]
    fn checks_run_in_spec_order_too_large_before_unchanged() {
        // Lower the limit below an existing body, then republish the same body.
        let mut w = W::new();
        w.ok(publish("/a", &[1; 8], Expected::Any));
        w.ok(set_policy(64, 4, &[], Expected::Any));
        assert_eq!(
            rejection(w.apply(publish("/a", &[1; 8], Expected::Any))),
            ModelRejection::TooLarge { size: 8, max: 4 }
        );
        assert_eq!(
            rejection(w.apply(append("/a", b"", Expected::Any))),
            ModelRejection::TooLarge { size: 8, max: 4 }
        );
    }

    // ------------------------------------------------------------ 9. unchanged

    #[test]
    fn publish_with_equal_body_is_unchanged() {
        let mut w = W::new();
        w.ok(publish("/a", b"x", Expected::Any));
        w.ok(publish("/a", b"y", Expected::Any));
        assert_eq!(w.apply(publish("a/", b"y", Expected::Version(2))), Verdict::Unchanged { version: 2 });
        assert_eq!(w.world.sequence(), 2);
        assert_eq!(w.world.versions("/a").len(), 2);
        assert_eq!(w.world.document("/a").unwrap().modified_sequence, 2);
    }

    #[test]
    fn publish_equal_to_an_older_version_is_a_new_version() {
        let mut w = W::new();
        w.ok(publish("/a", b"x", Expected::Any));
        w.ok(publish("/a", b"y", Expected::Any));
        assert_eq!(w.ok(publish("/a", b"x", Expected::Any)).receipt.version, 3);
    }

    #[test]
    fn append_of_no_bytes_is_unchanged() {
        let mut w = W::new();
        w.ok(publish("/a", b"x", Expected::Any));
        assert_eq!(w.apply(append("/a", b"", Expected::Any)), Verdict::Unchanged { version: 1 });
        // Also for an empty document.
        w.ok(append("/e", b"", Expected::Any));
        assert_eq!(w.apply(append("/e", b"", Expected::Version(1))), Verdict::Unchanged { version: 1 });
        assert_eq!(w.apply(publish("/e", b"", Expected::Version(1))), Verdict::Unchanged { version: 1 });
        assert_eq!(w.world.sequence(), 2);
    }

    #[test]
    fn set_archived_to_the_current_flag_is_unchanged() {
        let mut w = W::new();
        w.ok(publish("/a", b"x", Expected::Any));
        w.ok(publish("/a", b"y", Expected::Any));
        assert_eq!(w.apply(set_archived("/a", false, Expected::Any)), Verdict::Unchanged { version: 2 });
        w.ok(set_archived("/a", true, Expected::Any));
        assert_eq!(
            w.apply(set_archived("/a", true, Expected::Version(2))),
            Verdict::Unchanged { version: 2 }
        );
        assert_eq!(w.world.sequence(), 3);
    }

    #[test]
    fn checks_run_in_spec_order_conflict_before_unchanged() {
        let mut w = W::new();
        w.ok(publish("/a", b"x", Expected::Any));
        assert_eq!(
            rejection(w.apply(publish("/a", b"x", Expected::Version(2)))),
            ModelRejection::Conflict { current: Some(1) }
        );
        assert_eq!(
            rejection(w.apply(set_archived("/a", false, Expected::Absent))),
            ModelRejection::Conflict { current: Some(1) }
        );
    }

    // ------------------------------------------------------------ 10. applied: set_archived

    #[test]
    fn set_archived_flips_the_flag_and_keeps_the_version() {
        let mut w = W::new();
        w.ok(publish("/a", b"x", Expected::Any));
        w.ok(publish("/a", b"yy", Expected::Any));
        let before = w.world.versions("/a");
        let a = w.ok(set_archived("/a", true, Expected::Version(2)));
        assert_eq!(a.receipt.kind, ReceiptKind::Archived);
        assert_eq!(a.receipt.version, 2);
        assert_eq!(a.receipt.sequence, 3);
        assert_eq!(a.receipt.path.as_deref(), Some("/a"));
        assert!(a.archived);
        assert_eq!(a.body_hash, Some(body_hash(b"yy")));
        assert_eq!(a.body_len, 2);
        assert_eq!(a.first_version, 1);
        assert_eq!(a.prune, None);
        assert!(!a.new_version);
        assert_eq!(a.policy, None);
        let d = w.world.document("/a").unwrap();
        assert!(d.archived);
        assert_eq!(d.version, 2);
        assert_eq!(d.modified_sequence, 3);
        assert_eq!(w.world.versions("/a"), before);

        let u = w.ok(set_archived("/a", false, Expected::Any));
        assert_eq!(u.receipt.kind, ReceiptKind::Unarchived);
        assert_eq!(u.receipt.version, 2);
        assert!(!u.archived);
        assert!(!w.world.document("/a").unwrap().archived);
        // Writable again.
        assert_eq!(w.ok(append("/a", b"z", Expected::Any)).receipt.version, 3);
    }

    // ------------------------------------------------------------ retention

    #[test]
    fn retention_prunes_from_first_version() {
        let mut w = W::new();
        w.ok(set_policy(3, 100, &[], Expected::Any));
        for (i, body) in [b"1", b"2", b"3"].iter().enumerate() {
            let a = w.ok(publish("/a", *body, Expected::Any));
            assert_eq!(a.receipt.version, i as u64 + 1);
            assert_eq!(a.prune, None);
            assert_eq!(a.first_version, 1);
        }
        let a = w.ok(publish("/a", b"4", Expected::Any));
        assert_eq!(a.prune, Some((1, 1)));
        assert_eq!(a.first_version, 2);
        let a = w.ok(append("/a", b"5", Expected::Any));
        assert_eq!(a.prune, Some((2, 2)));
        assert_eq!(a.first_version, 3);
        let kept: Vec<u64> = w.world.versions("/a").iter().map(|v| v.version).collect();
        assert_eq!(kept, vec![3, 4, 5]);
        assert_eq!(w.world.document("/a").unwrap().first_version, 3);
        assert_eq!(w.world.body("/a", 2), None);
        assert_eq!(w.world.body("/a", 3), Some(&b"3"[..]));
        assert_eq!(w.world.body("/a", 5), Some(&b"45"[..]));
    }

    #[test]
    fn retention_of_one_keeps_only_the_current_version() {
        let mut w = W::new();
        w.ok(set_policy(1, 100, &[], Expected::Any));
        assert_eq!(w.ok(publish("/a", b"1", Expected::Any)).prune, None);
        let a = w.ok(publish("/a", b"2", Expected::Any));
        assert_eq!((a.prune, a.first_version), (Some((1, 1)), 2));
        assert_eq!(w.world.versions("/a").len(), 1);
        assert_eq!(w.world.body("/a", 2), Some(&b"2"[..]));
    }

    #[test]
    fn lowering_retention_prunes_nothing_until_the_next_version() {
        let mut w = W::new();
        for body in [b"1", b"2", b"3", b"4", b"5"] {
            w.ok(publish("/a", body, Expected::Any));
        }
        w.ok(publish("/b", b"1", Expected::Any));
        w.ok(set_policy(2, 100, &[], Expected::Any));
        // Nothing pruned by the policy change itself.
        assert_eq!(w.world.versions("/a").len(), 5);
        assert_eq!(w.world.document("/a").unwrap().first_version, 1);
        // The next version prunes everything below the window, in one range.
        let a = w.ok(publish("/a", b"6", Expected::Any));
        assert_eq!(a.prune, Some((1, 4)));
        assert_eq!(a.first_version, 5);
        let kept: Vec<u64> = w.world.versions("/a").iter().map(|v| v.version).collect();
        assert_eq!(kept, vec![5, 6]);
        // A document under the limit prunes nothing.
        assert_eq!(w.ok(publish("/b", b"2", Expected::Any)).prune, None);
    }

    #[test]
    fn raising_retention_stops_pruning_until_the_window_fills() {
        let mut w = W::new();
        w.ok(set_policy(2, 100, &[], Expected::Any));
        for body in [b"1", b"2", b"3"] {
            w.ok(publish("/a", body, Expected::Any));
        }
        assert_eq!(w.world.document("/a").unwrap().first_version, 2);
        w.ok(set_policy(4, 100, &[], Expected::Any));
        assert_eq!(w.ok(publish("/a", b"4", Expected::Any)).prune, None);
        assert_eq!(w.ok(publish("/a", b"5", Expected::Any)).prune, None);
        let a = w.ok(publish("/a", b"6", Expected::Any));
        assert_eq!((a.prune, a.first_version), (Some((2, 2)), 3));
    }

    #[test]
    fn archive_flips_never_prune() {
        let mut w = W::new();
        for body in [b"1", b"2", b"3"] {
            w.ok(publish("/a", body, Expected::Any));
        }
        w.ok(set_policy(1, 100, &[], Expected::Any));
        let a = w.ok(set_archived("/a", true, Expected::Any));
        assert_eq!(a.prune, None);
        assert_eq!(a.first_version, 1);
        let u = w.ok(set_archived("/a", false, Expected::Any));
        assert_eq!(u.prune, None);
        assert_eq!(w.world.versions("/a").len(), 3);
        let p = w.ok(publish("/a", b"4", Expected::Any));
        assert_eq!((p.prune, p.first_version), (Some((1, 3)), 4));
    }

    // ------------------------------------------------------------ set_policy

    #[test]
    fn set_policy_applies_the_normalized_policy_at_the_next_version() {
        let mut w = ModelWorld::new();
        let m = set_policy(5, 1000, &["b/", "/a", "//a"], Expected::Absent);
        let a = applied(w.apply(op(9), &m));
        let normalized = ModelPolicyBody {
            retention_versions: 5,
            body_bytes_max: 1000,
            read_only_prefixes: vec!["/a".to_string(), "/b".to_string()],
        };
        assert_eq!(
            a,
            ModelApplied {
                receipt: ModelReceipt {
                    op_id: op(9),
                    sequence: 1,
                    kind: ReceiptKind::PolicySet,
                    path: None,
                    version: 1,
                },
                archived: false,
                body_hash: None,
                body_len: 0,
                first_version: 0,
                catalog: None,
                prune: None,
                new_version: false,
                policy: Some(normalized.clone()),
            }
        );
        assert_eq!(w.policy(), &ModelPolicy { version: 1, body: normalized });
        let b = applied(w.apply(op(10), &set_policy(6, 1000, &[], Expected::Version(1))));
        assert_eq!(b.receipt.version, 2);
        assert_eq!(w.policy().version, 2);
    }

    #[test]
    fn set_policy_with_an_invalid_policy_is_invalid() {
        let w = ModelWorld::new();
        let cases = [
            (set_policy(0, 1, &[], Expected::Any), PolicyProblem::Retention),
            (set_policy(1, 67_108_865, &[], Expected::Any), PolicyProblem::BodyMax),
            (set_policy(1, 1, &vec!["/a"; 65], Expected::Any), PolicyProblem::TooManyPrefixes),
            (
                set_policy(1, 1, &["/a", "/b/./c"], Expected::Any),
                PolicyProblem::Prefix(PathProblem::DotSegment),
            ),
        ];
        for (m, problem) in cases {
            assert_eq!(w.evaluate(op(1), &m), Verdict::Invalid(ModelInvalid::Policy(problem)));
        }
    }

    #[test]
    fn checks_run_in_spec_order_invalid_policy_before_duplicate() {
        let mut w = ModelWorld::new();
        applied(w.apply(op(1), &default_policy_with(&["/x"])));
        assert_eq!(
            w.apply(op(1), &set_policy(0, 1, &[], Expected::Any)),
            Verdict::Invalid(ModelInvalid::Policy(PolicyProblem::Retention))
        );
    }

    #[test]
    fn set_policy_duplicate_returns_the_first_receipt() {
        let mut w = ModelWorld::new();
        let first = applied(w.apply(op(1), &default_policy_with(&["/x"]))).receipt;
        // The same policy, even with a failing precondition (check 2 comes before 3).
        let mut same = default_policy_with(&["/x"]);
        if let Mutation::SetPolicy { expected, .. } = &mut same {
            *expected = Expected::Version(7);
        }
        assert_eq!(w.apply(op(1), &same), Verdict::Duplicate(first));
        // Another policy under the same id is refused, as is an id a document took.
        let reused = |sequence| Verdict::Rejected(ModelRejection::OperationIdReused { sequence });
        assert_eq!(w.apply(op(1), &set_policy(9, 9, &[], Expected::Version(7))), reused(1));
        applied(w.apply(op(2), &publish("/d", b"x", Expected::Any)));
        assert_eq!(w.apply(op(2), &set_policy(9, 9, &[], Expected::Any)), reused(2));
        assert_eq!(w.policy().version, 1);
    }

    #[test]
    fn set_policy_expected_is_judged_against_the_policy_version() {
        let mut w = ModelWorld::new();
        // V = 0: Version(n != 0) conflicts with no current version.
        assert_eq!(
            w.evaluate(op(1), &set_policy(9, 9, &[], Expected::Version(1))),
            Verdict::Rejected(ModelRejection::Conflict { current: None })
        );
        // V = 0: Absent and Version(0) both hold.
        assert!(matches!(w.evaluate(op(1), &set_policy(9, 9, &[], Expected::Absent)), Verdict::Applied(_)));
        assert!(matches!(
            w.evaluate(op(1), &set_policy(9, 9, &[], Expected::Version(0))),
            Verdict::Applied(_)
        ));
        applied(w.apply(op(1), &set_policy(9, 9, &[], Expected::Any)));
        // V = 1: Absent and Version(0) conflict with current 1; Version(1) holds.
        assert_eq!(
            w.evaluate(op(2), &set_policy(8, 9, &[], Expected::Absent)),
            Verdict::Rejected(ModelRejection::Conflict { current: Some(1) })
        );
        assert_eq!(
            w.evaluate(op(2), &set_policy(8, 9, &[], Expected::Version(0))),
            Verdict::Rejected(ModelRejection::Conflict { current: Some(1) })
        );
        assert!(matches!(
            w.evaluate(op(2), &set_policy(8, 9, &[], Expected::Version(1))),
            Verdict::Applied(_)
        ));
    }

    #[test]
    fn set_policy_equal_to_the_current_policy_is_unchanged() {
        let mut w = ModelWorld::new();
        // The default policy, stated by a client, at V = 0.
        assert_eq!(
            w.apply(op(1), &set_policy(64, 4_194_304, &[], Expected::Any)),
            Verdict::Unchanged { version: 0 }
        );
        applied(w.apply(op(2), &set_policy(3, 10, &["/b", "/a"], Expected::Any)));
        // Equal after normalization: other order, other spelling, duplicates.
        assert_eq!(
            w.apply(op(3), &set_policy(3, 10, &["a/", "//b", "/a"], Expected::Version(1))),
            Verdict::Unchanged { version: 1 }
        );
        assert_eq!(w.sequence(), 1);
        assert_eq!(w.receipt(op(1)), None);
        assert_eq!(w.receipt(op(3)), None);
    }

    #[test]
    fn checks_run_in_spec_order_conflict_before_unchanged_for_set_policy() {
        let w = ModelWorld::new();
        assert_eq!(
            w.evaluate(op(1), &set_policy(64, 4_194_304, &[], Expected::Version(3))),
            Verdict::Rejected(ModelRejection::Conflict { current: None })
        );
    }

    #[test]
    fn a_new_policy_governs_the_next_mutations() {
        let mut w = W::new();
        w.ok(set_policy(64, 2, &["/locked"], Expected::Any));
        assert_eq!(
            rejection(w.apply(publish("/a", b"abc", Expected::Any))),
            ModelRejection::TooLarge { size: 3, max: 2 }
        );
        assert!(matches!(
            rejection(w.apply(publish("/locked/x", b"a", Expected::Any))),
            ModelRejection::ReadOnly { .. }
        ));
        w.ok(publish("/a", b"ab", Expected::Any));
    }

    // ------------------------------------------------------------ reads

    #[test]
    fn document_lookup_takes_a_normalized_path() {
        let mut w = W::new();
        w.ok(publish("notes//a.md/", b"x", Expected::Any));
        assert!(w.world.document("/notes/a.md").is_some());
        assert!(w.world.document("notes//a.md/").is_none());
        // A raw spelling of the same path reaches the same document on write.
        assert_eq!(w.ok(publish("/notes/a.md/", b"y", Expected::Version(1))).receipt.version, 2);
    }

    #[test]
    fn documents_are_listed_in_path_byte_order() {
        let mut w = W::new();
        for p in ["/b", "/a/z", "/B", "/a-", "/a/b", "/é"] {
            w.ok(publish(p, p.as_bytes(), Expected::Any));
        }
        let listed: Vec<&str> = w.world.documents().map(|(p, _)| p).collect();
        assert_eq!(listed, vec!["/B", "/a-", "/a/b", "/a/z", "/b", "/é"]);
        for (p, d) in w.world.documents() {
            assert_eq!(Some(d), w.world.document(p));
        }
    }

    #[test]
    fn versions_record_sequence_op_id_hash_and_kind_oldest_first() {
        let mut w = ModelWorld::new();
        applied(w.apply(op(1), &publish("/a", b"x", Expected::Any)));
        applied(w.apply(op(2), &publish("/other", b"o", Expected::Any)));
        applied(w.apply(op(3), &append("/a", b"y", Expected::Any)));
        assert_eq!(
            w.versions("/a"),
            vec![
                ModelVersion {
                    version: 1,
                    sequence: 1,
                    op_id: op(1),
                    body_hash: body_hash(b"x"),
                    body_len: 1,
                    kind: ReceiptKind::Published,
                },
                ModelVersion {
                    version: 2,
                    sequence: 3,
                    op_id: op(3),
                    body_hash: body_hash(b"xy"),
                    body_len: 2,
                    kind: ReceiptKind::Appended,
                },
            ]
        );
    }

    #[test]
    fn modified_sequence_is_the_last_member_that_changed_the_document() {
        let mut w = W::new();
        w.ok(publish("/a", b"x", Expected::Any)); // 1
        w.ok(publish("/b", b"x", Expected::Any)); // 2
        assert_eq!(w.world.document("/a").unwrap().modified_sequence, 1);
        w.ok(append("/a", b"y", Expected::Any)); // 3
        assert_eq!(w.world.document("/a").unwrap().modified_sequence, 3);
        w.ok(set_archived("/a", true, Expected::Any)); // 4
        assert_eq!(w.world.document("/a").unwrap().modified_sequence, 4);
        w.ok(default_policy_with(&["/z"])); // 5: not a document change
        let _ = w.apply(set_archived("/a", true, Expected::Any)); // unchanged
        assert_eq!(w.world.document("/a").unwrap().modified_sequence, 4);
        assert_eq!(w.world.document("/b").unwrap().modified_sequence, 2);
    }

    #[test]
    fn receipts_are_kept_for_every_applied_member() {
        let mut w = ModelWorld::new();
        let r1 = applied(w.apply(op(1), &publish("/a", b"x", Expected::Any))).receipt;
        let r2 = applied(w.apply(op(2), &set_archived("/a", true, Expected::Any))).receipt;
        let r3 = applied(w.apply(op(3), &default_policy_with(&["/r"]))).receipt;
        assert_eq!(w.receipt(op(1)), Some(r1));
        assert_eq!(w.receipt(op(2)), Some(r2));
        assert_eq!(
            w.receipt(op(3)),
            Some(ModelReceipt {
                op_id: op(3),
                sequence: 3,
                kind: ReceiptKind::PolicySet,
                path: None,
                version: 1,
            })
        );
        assert_eq!(r3.version, 1);
        assert_eq!(w.receipt(op(4)), None);
    }
}
