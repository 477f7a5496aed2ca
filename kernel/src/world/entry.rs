//! What a committed member records: the receipt, the index entry, the version record and
//! the prune range (SPEC 1.3 and 1.5). These are written into slots byte for byte.

use super::path::Path;
use super::policy::PolicyRules;
use crate::hash::Hash32;
use crate::ids::OperationId;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReceiptKind {
    Published,
    Appended,
    Archived,
    Unarchived,
    PolicySet,
}

/// Proof that an operation committed, and where.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Receipt {
    pub op_id: OperationId,
    pub sequence: u64,
    pub kind: ReceiptKind,
    /// None for `PolicySet`.
    pub path: Option<Path>,
    /// The document's version after the member, or the policy version for `PolicySet`.
    pub version: u64,
}

/// A document's current state, as the index holds it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IndexEntry {
    pub path: Path,
    pub version: u64,
    /// The oldest retained version.
    pub first_version: u64,
    pub archived: bool,
    pub body_hash: Hash32,
    pub body_len: u64,
    /// The sequence of the last member that changed this entry.
    pub modified_sequence: u64,
}

/// Whether a version came from a whole-body publish or an append.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum VersionKind {
    Publish,
    Append,
}

/// One retained version of a document.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VersionRecord {
    pub version: u64,
    pub sequence: u64,
    pub op_id: OperationId,
    pub body_hash: Hash32,
    pub body_len: u64,
    pub kind: VersionKind,
}

/// Versions `first ..= last` of a document, pruned by retention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PruneRange {
    pub first: u64,
    pub last: u64,
}

/// A rule of one member's own consistency, independent of any state (SPEC 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum MemberRule {
    #[error("policy member names a document")]
    PolicyNamesDocument,
    #[error("policy member prunes")]
    PolicyPrunes,
    #[error("policy member without rules")]
    PolicyWithoutRules,
    #[error("policy member with rules not normalized")]
    PolicyRulesNotNormalized,
    #[error("policy member at version 0")]
    PolicyAtVersionZero,
    #[error("document member without entry")]
    DocumentWithoutEntry,
    #[error("receipt path differs from entry path")]
    ReceiptPathNotEntryPath,
    #[error("entry does not match receipt")]
    EntryNotReceipt,
    #[error("entry versions out of order")]
    EntryVersionsOutOfOrder,
    #[error("document member carries rules")]
    DocumentCarriesRules,
    #[error("version kind does not match receipt kind")]
    VersionKindNotReceiptKind,
    #[error("version record does not match entry")]
    VersionRecordNotEntry,
    #[error("archive flip prunes")]
    ArchiveFlipPrunes,
    #[error("archive flag does not match receipt")]
    ArchiveFlagNotReceipt,
    #[error("version record presence does not match kind")]
    VersionRecordPresenceNotKind,
    #[error("prune range does not end below first version")]
    PruneNotBelowFirstVersion,
}

/// One committed change, exactly as a slot carries it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SlotMember {
    pub receipt: Receipt,
    /// The document's new index entry (None for `PolicySet`).
    pub entry: Option<IndexEntry>,
    /// The new version record (publish and append only).
    pub version: Option<VersionRecord>,
    pub prune: Option<PruneRange>,
    /// The new rules (`PolicySet` only).
    pub policy: Option<PolicyRules>,
}

impl SlotMember {
    pub fn op_id(&self) -> OperationId {
        self.receipt.op_id
    }

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
