//! The request digest (SPEC 10.13): what a committed member records of the request that
//! made it, hashed, so that an operation id sent again with other content is refused
//! rather than answered with the first operation's receipt.
//!
//! A function of the member alone, so every replica (and every checkpoint) holds the same
//! digest for a receipt, and of the request alone, so a write is judged before it builds.
//! A member does not record an append's bytes (only the body they made), so two appends
//! to one path under one operation id have one digest: that reuse is not caught.

use super::entry::{Receipt, ReceiptKind, SlotMember};
use super::evaluate::ValidMutation;
use super::path::Path;
use super::policy::PolicyRules;
use crate::format::StoredReceipt;
use crate::hash::Hash32;

/// Prefix of every digest's preimage, naming what it is a digest of and its version.
const DOMAIN: &[u8] = b"slotlog request digest 1";

/// What a digest covers: the kind, the path, and the content a member records.
enum Content<'a> {
    Publish { path: &'a Path, body_hash: &'a Hash32, catalog: Option<&'a str> },
    Append { path: &'a Path },
    Archive { path: &'a Path, archived: bool },
    Policy { rules: &'a PolicyRules },
}

/// The digest of a request as it arrives (validated, so paths and rules are normal).
pub fn of_request(m: &ValidMutation) -> Hash32 {
    digest(&match m {
        ValidMutation::Publish { path, body_hash, catalog, .. } => {
            Content::Publish { path, body_hash, catalog: catalog.as_deref() }
        }
        ValidMutation::Append { path, .. } => Content::Append { path },
        ValidMutation::SetArchived { path, archived, .. } => Content::Archive { path, archived: *archived },
        ValidMutation::SetPolicy { rules, .. } => Content::Policy { rules },
    })
}

/// The digest of the request a committed member records. A member whose shape is not
/// one a write makes (refused by the slot decoder) has no digest: `Hash32::ZERO`.
pub fn of_member(m: &SlotMember) -> Hash32 {
    let entry = m.entry.as_ref();
    of_member_parts(
        &m.receipt,
        entry.map(|e| &e.body_hash),
        entry.and_then(|e| e.catalog.as_deref()),
        m.policy.as_ref(),
    )
}

/// [`of_member`] from the parts of a member it reads: the receipt, the entry's body hash
/// and catalog record, and the policy rules.
pub fn of_member_parts(
    receipt: &Receipt,
    body_hash: Option<&Hash32>,
    catalog: Option<&str>,
    policy: Option<&PolicyRules>,
) -> Hash32 {
    let content = match (receipt.kind, &receipt.path, body_hash, policy) {
        (ReceiptKind::Published, Some(path), Some(body_hash), _) => {
            Content::Publish { path, body_hash, catalog }
        }
        (ReceiptKind::Appended, Some(path), _, _) => Content::Append { path },
        (ReceiptKind::Archived, Some(path), _, _) => Content::Archive { path, archived: true },
        (ReceiptKind::Unarchived, Some(path), _, _) => Content::Archive { path, archived: false },
        (ReceiptKind::PolicySet, None, _, Some(rules)) => Content::Policy { rules },
        _ => return Hash32::ZERO,
    };
    digest(&content)
}

/// A committed member's receipt as the window and checkpoints keep it.
pub fn stored_receipt(m: &SlotMember) -> StoredReceipt {
    StoredReceipt { receipt: m.receipt.clone(), request_digest: of_member(m) }
}

/// BLAKE3 of the preimage SPEC 10.13 states: the domain, a kind byte, then the fields,
/// each length as a little-endian `u32` before its bytes, integers little-endian. The
/// preimage is gathered first and hashed in one call: a hasher fed field by field cost
/// four times as much (every member of every slot is digested on apply).
fn digest(content: &Content<'_>) -> Hash32 {
    let mut pre = Vec::with_capacity(DOMAIN.len() + 80);
    pre.extend_from_slice(DOMAIN);
    let field = |pre: &mut Vec<u8>, bytes: &[u8]| {
        pre.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        pre.extend_from_slice(bytes);
    };
    match content {
        Content::Publish { path, body_hash, catalog } => {
            pre.push(1);
            field(&mut pre, path.as_str().as_bytes());
            pre.extend_from_slice(&body_hash.0);
            // Only a record present adds to the preimage, so a publish without one keeps
            // the digest it had before records existed.
            if let Some(record) = catalog {
                field(&mut pre, record.as_bytes());
            }
        }
        Content::Append { path } => {
            pre.push(2);
            field(&mut pre, path.as_str().as_bytes());
        }
        Content::Archive { path, archived } => {
            pre.push(if *archived { 3 } else { 4 });
            field(&mut pre, path.as_str().as_bytes());
        }
        Content::Policy { rules } => {
            pre.push(5);
            pre.extend_from_slice(&rules.retention_versions.to_le_bytes());
            pre.extend_from_slice(&rules.body_bytes_max.to_le_bytes());
            pre.extend_from_slice(&(rules.read_only_prefixes.len() as u32).to_le_bytes());
            for prefix in &rules.read_only_prefixes {
                field(&mut pre, prefix.as_str().as_bytes());
            }
        }
    }
    Hash32::of(&pre)
}
