//! The rules of SPEC 1.4: what one mutation does to a state. Pure: the caller supplies the
//! view and, for appends, the current body.

use super::entry::{
    IndexEntry, PruneRange, Receipt, ReceiptKind, SlotMember, VersionKind, VersionRecord,
    CATALOG_RECORD_BYTES_MAX,
};
use super::mutation::{Expected, Mutation};
use super::path::Path;
use super::policy::{Policy, PolicyRules};
use super::verdict::{Invalid, Rejection};
use super::view::{topology_block, StateView};
use crate::hash::Hash32;
use crate::ids::OperationId;
use bytes::Bytes;

/// A mutation whose input has been checked: paths normalized, the policy normalized.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValidMutation {
    /// Replace a document's body (creating the document when absent).
    Publish {
        /// The normalized path.
        path: Path,
        /// The new body.
        body: Bytes,
        /// BLAKE3 of the new body.
        body_hash: Hash32,
        /// The new catalog record; None for none (an empty one is none).
        catalog: Option<Box<str>>,
        /// The precondition on the document's version.
        expected: Expected,
    },
    /// Add bytes to the end of the current body (creating the document when absent).
    Append {
        /// The normalized path.
        path: Path,
        /// The bytes to add.
        bytes: Bytes,
        /// The precondition on the document's version.
        expected: Expected,
    },
    /// Archive or unarchive an existing document.
    SetArchived {
        /// The normalized path.
        path: Path,
        /// True to archive, false to unarchive.
        archived: bool,
        /// The precondition on the document's version.
        expected: Expected,
    },
    /// Replace the world's policy.
    SetPolicy {
        /// The normalized policy.
        rules: PolicyRules,
        /// The precondition on the policy version.
        expected: Expected,
    },
}

impl ValidMutation {
    /// The document's path (None for `SetPolicy`).
    pub fn path(&self) -> Option<&Path> {
        match self {
            ValidMutation::Publish { path, .. }
            | ValidMutation::Append { path, .. }
            | ValidMutation::SetArchived { path, .. } => Some(path),
            ValidMutation::SetPolicy { .. } => None,
        }
    }

    /// Bytes the mutation carries from the client.
    pub fn payload_len(&self) -> usize {
        match self {
            ValidMutation::Publish { body, .. } => body.len(),
            ValidMutation::Append { bytes, .. } => bytes.len(),
            _ => 0,
        }
    }
}

/// SPEC 1.4 check 1 (and 1 for `set_policy`): input validity, whatever the state.
pub fn validate(m: &Mutation) -> Result<ValidMutation, Invalid> {
    Ok(match m {
        Mutation::Publish { path, body, catalog, expected } => ValidMutation::Publish {
            path: Path::parse(path).map_err(Invalid::Path)?,
            body_hash: Hash32::of(body),
            body: body.clone(),
            catalog: valid_catalog(catalog.as_deref())?,
            expected: *expected,
        },
        Mutation::Append { path, bytes, expected } => ValidMutation::Append {
            path: Path::parse(path).map_err(Invalid::Path)?,
            bytes: bytes.clone(),
            expected: *expected,
        },
        Mutation::SetArchived { path, archived, expected } => ValidMutation::SetArchived {
            path: Path::parse(path).map_err(Invalid::Path)?,
            archived: *archived,
            expected: *expected,
        },
        Mutation::SetPolicy { policy, expected } => ValidMutation::SetPolicy {
            rules: PolicyRules::from_body(policy).map_err(Invalid::Policy)?,
            expected: *expected,
        },
    })
}

/// A publish's catalog record as the entry holds it: none when absent or empty.
fn valid_catalog(record: Option<&str>) -> Result<Option<Box<str>>, Invalid> {
    match record {
        None | Some("") => Ok(None),
        Some(r) if r.len() > CATALOG_RECORD_BYTES_MAX => {
            Err(Invalid::CatalogRecordTooLong { len: r.len(), max: CATALOG_RECORD_BYTES_MAX })
        }
        Some(r) => Ok(Some(r.into())),
    }
}

/// How a mutation comes out against one state. Short-lived (built and consumed in one
/// step), so the large `Applied` variant is not boxed.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evaluation {
    /// A member for the next slot, with the new body when it made one.
    Applied {
        /// The member.
        member: SlotMember,
        /// The new body, for a publish or append.
        body: Option<Bytes>,
    },
    /// A success that changes nothing.
    Unchanged {
        /// The document's version, or the policy version for `SetPolicy`.
        version: u64,
    },
    /// The operation id is already committed: the receipt of the member that committed it.
    Duplicate(Receipt),
    /// A precondition failed against the state.
    Rejected(Rejection),
    /// An append needs the current body with this hash; evaluate again once it is known.
    NeedsBody(Hash32),
}

/// Judges `m` against `view`. `body_of` returns a body by hash when the caller holds it.
/// `store_us` is a lower bound on the store's clock now (0 when none is known): a member
/// that changes a document records it, or the entry's previous time if that is later, as
/// the entry's modified time.
pub fn evaluate(
    view: &impl StateView,
    op_id: OperationId,
    m: &ValidMutation,
    store_us: u64,
    body_of: &dyn Fn(&Hash32) -> Option<Bytes>,
) -> Evaluation {
    // SPEC 1.4 check 2: a committed operation id is a duplicate when sent again with the
    // same content, and refused when reused with other content (SPEC 10.13). A receipt
    // whose digest a checkpoint did not record is taken for the same content.
    if let Some(c) = view.committed(&op_id) {
        let recorded = c.request_digest != Hash32::ZERO;
        if recorded && c.request_digest != super::request_digest::of_request(m) {
            return Evaluation::Rejected(Rejection::OperationIdReused { sequence: c.receipt.sequence });
        }
        return Evaluation::Duplicate(c.receipt.clone());
    }
    let sequence = view.sequence() + 1;
    let policy = view.policy();
    let ValidMutation::SetPolicy { rules, expected } = m else {
        return evaluate_document(view, op_id, m, sequence, store_us, body_of);
    };
    // The policy always exists: `Version(0)` holds at genesis, `Absent` only until the
    // first set, and a conflict names no version while none was set (SPEC 1.4).
    let holds = match expected {
        Expected::Any => true,
        Expected::Absent => policy.version == 0,
        Expected::Version(n) => policy.version == *n,
    };
    if !holds {
        let current = (policy.version > 0).then_some(policy.version);
        return Evaluation::Rejected(Rejection::Conflict { current });
    }
    if *rules == policy.rules {
        return Evaluation::Unchanged { version: policy.version };
    }
    let version = policy.version + 1;
    Evaluation::Applied {
        member: SlotMember {
            receipt: Receipt { op_id, sequence, kind: ReceiptKind::PolicySet, path: None, version },
            entry: None,
            version: None,
            prune: None,
            policy: Some(rules.clone()),
        },
        body: None,
    }
}

fn evaluate_document(
    view: &impl StateView,
    op_id: OperationId,
    m: &ValidMutation,
    sequence: u64,
    store_us: u64,
    body_of: &dyn Fn(&Hash32) -> Option<Bytes>,
) -> Evaluation {
    let path = m.path().expect("document mutation");
    let policy: &Policy = view.policy();
    if let Some(prefix) = policy.rules.read_only_prefix_of(path) {
        return Evaluation::Rejected(Rejection::ReadOnly { prefix: prefix.clone() });
    }
    let current = view.entry_of(path);
    // Never before the entry's previous time, so a document's times only move forward
    // whichever replica's clock wrote them (SPEC 1.3).
    let modified_us = current.map_or(store_us, |e| e.modified_us.max(store_us));
    let expected = match m {
        ValidMutation::Publish { expected, .. }
        | ValidMutation::Append { expected, .. }
        | ValidMutation::SetArchived { expected, .. } => *expected,
        ValidMutation::SetPolicy { .. } => unreachable!("handled by evaluate"),
    };
    if let Err(current) = check_expected(expected, current.map(|e| e.version)) {
        return Evaluation::Rejected(Rejection::Conflict { current });
    }
    if let ValidMutation::SetArchived { archived, .. } = m {
        return set_archived(op_id, sequence, modified_us, path, current, *archived);
    }
    if current.is_some_and(|e| e.archived) {
        return Evaluation::Rejected(Rejection::Archived);
    }
    if current.is_none() {
        if let Some(blocking) = topology_block(view, path) {
            return Evaluation::Rejected(Rejection::Topology { blocking: blocking.clone() });
        }
    }
    let max = policy.rules.body_bytes_max;
    let new_len = match m {
        ValidMutation::Append { bytes, .. } => current.map_or(0, |e| e.body_len) + bytes.len() as u64,
        _ => m.payload_len() as u64,
    };
    if new_len > max {
        return Evaluation::Rejected(Rejection::TooLarge { size: new_len, max });
    }
    let (body, body_hash, kind, catalog) = match new_body(m, current, body_of) {
        NewBody::Made(body, hash, kind, catalog) => (body, hash, kind, catalog),
        NewBody::Unchanged { version } => return Evaluation::Unchanged { version },
        NewBody::NeedsBody(hash) => return Evaluation::NeedsBody(hash),
    };
    let version = current.map_or(1, |e| e.version + 1);
    let first = current.map_or(1, |e| e.first_version);
    let retention = u64::from(policy.rules.retention_versions);
    let (prune, first_version) = if version - first + 1 > retention {
        let last = version - retention;
        (Some(PruneRange { first, last }), last + 1)
    } else {
        (None, first)
    };
    let receipt_kind = match kind {
        VersionKind::Publish => ReceiptKind::Published,
        VersionKind::Append => ReceiptKind::Appended,
    };
    let body_len = body.len() as u64;
    Evaluation::Applied {
        member: SlotMember {
            receipt: Receipt { op_id, sequence, kind: receipt_kind, path: Some(path.clone()), version },
            entry: Some(IndexEntry {
                path: path.clone(),
                version,
                first_version,
                archived: false,
                body_hash,
                body_len,
                modified_sequence: sequence,
                modified_us,
                catalog,
            }),
            version: Some(VersionRecord { version, sequence, op_id, body_hash, body_len, kind }),
            prune,
            policy: None,
        },
        body: Some(body),
    }
}

/// An archive flip: unchanged when the document is already so.
fn set_archived(
    op_id: OperationId,
    sequence: u64,
    modified_us: u64,
    path: &Path,
    current: Option<&IndexEntry>,
    archived: bool,
) -> Evaluation {
    let Some(entry) = current else {
        return Evaluation::Rejected(Rejection::NotFound);
    };
    if entry.archived == archived {
        return Evaluation::Unchanged { version: entry.version };
    }
    let kind = if archived { ReceiptKind::Archived } else { ReceiptKind::Unarchived };
    Evaluation::Applied {
        member: SlotMember {
            receipt: Receipt { op_id, sequence, kind, path: Some(path.clone()), version: entry.version },
            entry: Some(IndexEntry { archived, modified_sequence: sequence, modified_us, ..entry.clone() }),
            version: None,
            prune: None,
            policy: None,
        },
        body: None,
    }
}

/// The body a publish or append makes, or the evaluation that stands instead.
enum NewBody {
    /// The body, its hash, its kind and the catalog record beside it.
    Made(Bytes, Hash32, VersionKind, Option<Box<str>>),
    Unchanged {
        version: u64,
    },
    /// An append must read the current body first.
    NeedsBody(Hash32),
}

/// The body a publish or append makes, with its hash and kind.
fn new_body(
    m: &ValidMutation,
    current: Option<&IndexEntry>,
    body_of: &dyn Fn(&Hash32) -> Option<Bytes>,
) -> NewBody {
    match m {
        ValidMutation::Publish { body, body_hash, catalog, .. } => {
            if let Some(e) = current.filter(|e| e.body_hash == *body_hash && e.catalog == *catalog) {
                return NewBody::Unchanged { version: e.version };
            }
            NewBody::Made(body.clone(), *body_hash, VersionKind::Publish, catalog.clone())
        }
        ValidMutation::Append { bytes, .. } => {
            let body = match current {
                None => bytes.clone(),
                Some(e) if bytes.is_empty() => return NewBody::Unchanged { version: e.version },
                Some(e) => {
                    let Some(base) = body_of(&e.body_hash) else {
                        return NewBody::NeedsBody(e.body_hash);
                    };
                    invariant_eq!(base.len() as u64, e.body_len);
                    let mut joined = Vec::with_capacity(base.len() + bytes.len());
                    joined.extend_from_slice(&base);
                    joined.extend_from_slice(bytes);
                    Bytes::from(joined)
                }
            };
            let hash = Hash32::of(&body);
            NewBody::Made(body, hash, VersionKind::Append, current.and_then(|e| e.catalog.clone()))
        }
        _ => unreachable!("archive flips and policy sets make no body"),
    }
}

/// Ok when `expected` holds for a thing at `current` (None: absent); Err with `current`.
fn check_expected(expected: Expected, current: Option<u64>) -> Result<(), Option<u64>> {
    let holds = match expected {
        Expected::Any => true,
        Expected::Absent => current.is_none(),
        Expected::Version(n) => current == Some(n),
    };
    if holds {
        Ok(())
    } else {
        Err(current)
    }
}
