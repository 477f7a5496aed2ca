//! What a committed member records: the receipt, the index entry, the version record and
//! the prune range (SPEC 1.3 and 1.5). These are written into slots byte for byte.

use super::path::Path;
use super::policy::PolicyRules;
use crate::hash::Hash32;
use crate::ids::OperationId;
use serde::{Deserialize, Serialize};

/// What a member did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReceiptKind {
    /// A publish: a new current body.
    Published,
    /// An append: bytes added to the current body, as a new version.
    Appended,
    /// An archive: the document now refuses writes.
    Archived,
    /// An unarchive: the document accepts writes again.
    Unarchived,
    /// A `set_policy`: a new policy version.
    PolicySet,
}

/// Proof that an operation committed, and where.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Receipt {
    /// The operation id the member committed.
    pub op_id: OperationId,
    /// The member's sequence.
    pub sequence: u64,
    /// What the member did.
    pub kind: ReceiptKind,
    /// None for `PolicySet`.
    pub path: Option<Path>,
    /// The document's version after the member, or the policy version for `PolicySet`.
    pub version: u64,
}

impl ReceiptKind {
    /// The kind as one lowercase word (`published`, `policy-set`).
    pub fn as_str(self) -> &'static str {
        match self {
            ReceiptKind::Published => "published",
            ReceiptKind::Appended => "appended",
            ReceiptKind::Archived => "archived",
            ReceiptKind::Unarchived => "unarchived",
            ReceiptKind::PolicySet => "policy-set",
        }
    }
}

/// `published /a/b v2 at 17 op:…`: one line a person reads, and what the simulator's
/// trace records of each answer (a derived `Debug` there cost 3% of a run).
impl core::fmt::Display for Receipt {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.kind.as_str())?;
        if let Some(path) = &self.path {
            f.write_str(" ")?;
            f.write_str(path.as_str())?;
        }
        write!(f, " v{} at {} {:?}", self.version, self.sequence, self.op_id)
    }
}

/// A document's current state, as the index holds it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IndexEntry {
    /// The document's path.
    pub path: Path,
    /// The current version (1 for the first body).
    pub version: u64,
    /// The oldest retained version.
    pub first_version: u64,
    /// Whether the document is archived and refuses writes.
    pub archived: bool,
    /// BLAKE3 of the current body.
    pub body_hash: Hash32,
    /// Length of the current body, in bytes.
    pub body_len: u64,
    /// The sequence of the last member that changed this entry.
    pub modified_sequence: u64,
    /// When the last member that changed this entry was built, on the store's clock, in
    /// microseconds since the Unix epoch: a lower bound on its slot's creation time, and
    /// never before the entry's previous time (SPEC 1.3). 0 in entries written before
    /// slots carried it.
    ///
    /// Neither this nor `catalog` is in the entry's serde form: slots, shards and deltas
    /// carry both in a column after their entries (SPEC 5.8), so objects written before
    /// keep their bytes.
    #[serde(skip)]
    pub modified_us: u64,
    /// The catalog record: the client's metadata for the document, set by each publish, at
    /// most [`CATALOG_RECORD_BYTES_MAX`] bytes, never empty (SPEC 1.3). Searched with the
    /// path in catalog mode (SPEC 8.6).
    #[serde(skip)]
    pub catalog: Option<Box<str>>,
}

/// The longest catalog record, in bytes of UTF-8.
pub const CATALOG_RECORD_BYTES_MAX: usize = 1_024;

/// Whether a version came from a whole-body publish or an append.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum VersionKind {
    /// A publish: a whole new body.
    Publish,
    /// An append: the previous body with bytes added.
    Append,
}

/// One retained version of a document.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VersionRecord {
    /// The version number.
    pub version: u64,
    /// The sequence of the member that wrote it.
    pub sequence: u64,
    /// Operation id of the member that wrote it.
    pub op_id: OperationId,
    /// BLAKE3 of the version's body.
    pub body_hash: Hash32,
    /// Length of the version's body, in bytes.
    pub body_len: u64,
    /// Publish or append.
    pub kind: VersionKind,
}

/// Versions `first ..= last` of a document, pruned by retention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PruneRange {
    /// The first version pruned.
    pub first: u64,
    /// The last version pruned.
    pub last: u64,
}

/// A rule of one member's own consistency, independent of any state (SPEC 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum MemberRule {
    /// A policy member with a path, an index entry or a version record.
    #[error("policy member names a document")]
    PolicyNamesDocument,
    /// A policy member with a prune range.
    #[error("policy member prunes")]
    PolicyPrunes,
    /// A policy member without its rules.
    #[error("policy member without rules")]
    PolicyWithoutRules,
    /// A policy member whose rules are not in the form `set_policy` normalizes to.
    #[error("policy member with rules not normalized")]
    PolicyRulesNotNormalized,
    /// A policy member at policy version 0.
    #[error("policy member at version 0")]
    PolicyAtVersionZero,
    /// A document member without an index entry.
    #[error("document member without entry")]
    DocumentWithoutEntry,
    /// A document member whose receipt and entry name different paths.
    #[error("receipt path differs from entry path")]
    ReceiptPathNotEntryPath,
    /// An entry whose version or modified sequence is not the receipt's.
    #[error("entry does not match receipt")]
    EntryNotReceipt,
    /// An entry at version 0, first version 0, or a first version after the current one.
    #[error("entry versions out of order")]
    EntryVersionsOutOfOrder,
    /// A document member with policy rules.
    #[error("document member carries rules")]
    DocumentCarriesRules,
    /// A version record of another kind than the receipt (publish for `Appended`, or the reverse).
    #[error("version kind does not match receipt kind")]
    VersionKindNotReceiptKind,
    /// A version record that is not the receipt's and the entry's (version, sequence, operation id, body), or a write that leaves the document archived.
    #[error("version record does not match entry")]
    VersionRecordNotEntry,
    /// An archive flip with a prune range.
    #[error("archive flip prunes")]
    ArchiveFlipPrunes,
    /// An archive flip whose entry's flag is not the receipt's kind.
    #[error("archive flag does not match receipt")]
    ArchiveFlagNotReceipt,
    /// A publish or append without a version record, or an archive flip with one.
    #[error("version record presence does not match kind")]
    VersionRecordPresenceNotKind,
    /// A prune range that is empty or does not end right below the entry's first version.
    #[error("prune range does not end below first version")]
    PruneNotBelowFirstVersion,
}

/// One committed change, exactly as a slot carries it. Read in its derived form by
/// `format::member_reader`, which shares the entry's path with the receipt's.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct SlotMember {
    /// The receipt the member answers with.
    pub receipt: Receipt,
    /// The document's new index entry (None for `PolicySet`).
    pub entry: Option<IndexEntry>,
    /// The new version record (publish and append only).
    pub version: Option<VersionRecord>,
    /// Versions this write pruned by retention (SPEC 1.3), if any.
    pub prune: Option<PruneRange>,
    /// The new rules (`PolicySet` only).
    pub policy: Option<PolicyRules>,
}

impl SlotMember {
    /// The member's operation id.
    pub fn op_id(&self) -> OperationId {
        self.receipt.op_id
    }

    /// The member's sequence.
    pub fn sequence(&self) -> u64 {
        self.receipt.sequence
    }

    /// Internal consistency of one member, independent of any state.
    pub fn shape_problem(&self) -> Option<MemberRule> {
        let r = &self.receipt;
        match r.kind {
            ReceiptKind::PolicySet => {
                if r.path.is_some() || self.entry.is_some() || self.version.is_some() {
                    return Some(MemberRule::PolicyNamesDocument);
                }
                if self.prune.is_some() {
                    return Some(MemberRule::PolicyPrunes);
                }
                match &self.policy {
                    None => return Some(MemberRule::PolicyWithoutRules),
                    Some(rules) if !rules.is_normalized() => {
                        return Some(MemberRule::PolicyRulesNotNormalized)
                    }
                    Some(_) => {}
                }
                if r.version == 0 {
                    return Some(MemberRule::PolicyAtVersionZero);
                }
            }
            kind => {
                let Some(entry) = &self.entry else {
                    return Some(MemberRule::DocumentWithoutEntry);
                };
                if r.path.as_ref() != Some(&entry.path) {
                    return Some(MemberRule::ReceiptPathNotEntryPath);
                }
                if entry.version != r.version || entry.modified_sequence != r.sequence {
                    return Some(MemberRule::EntryNotReceipt);
                }
                if entry.version == 0 || entry.first_version == 0 || entry.first_version > entry.version {
                    return Some(MemberRule::EntryVersionsOutOfOrder);
                }
                if self.policy.is_some() {
                    return Some(MemberRule::DocumentCarriesRules);
                }
                let versioned = matches!(kind, ReceiptKind::Published | ReceiptKind::Appended);
                match (&self.version, versioned) {
                    (Some(v), true) => {
                        let kind_matches = match v.kind {
                            VersionKind::Publish => kind == ReceiptKind::Published,
                            VersionKind::Append => kind == ReceiptKind::Appended,
                        };
                        if !kind_matches {
                            return Some(MemberRule::VersionKindNotReceiptKind);
                        }
                        if v.version != r.version
                            || v.sequence != r.sequence
                            || v.op_id != r.op_id
                            || v.body_hash != entry.body_hash
                            || v.body_len != entry.body_len
                            || entry.archived
                        {
                            return Some(MemberRule::VersionRecordNotEntry);
                        }
                    }
                    (None, false) => {
                        if self.prune.is_some() {
                            return Some(MemberRule::ArchiveFlipPrunes);
                        }
                        if entry.archived != (kind == ReceiptKind::Archived) {
                            return Some(MemberRule::ArchiveFlagNotReceipt);
                        }
                    }
                    _ => return Some(MemberRule::VersionRecordPresenceNotKind),
                }
                if let Some(p) = self.prune {
                    if p.first > p.last || p.last.checked_add(1) != Some(entry.first_version) {
                        return Some(MemberRule::PruneNotBelowFirstVersion);
                    }
                }
            }
        }
        None
    }
}
