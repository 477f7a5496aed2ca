//! Documents and their retained versions (SPEC 1.3): the public snapshots the model
//! answers with, and the stored form that also keeps every retained body in memory.

use crate::verdict::ReceiptKind;
use bytes::Bytes;
use slotlog_kernel::ids::OperationId;

/// A document as it stands: what a read of the document's metadata returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelDocument {
    /// The current version (1 for the first body).
    pub version: u64,
    /// The oldest retained version.
    pub first_version: u64,
    /// Whether the document is archived and refuses writes.
    pub archived: bool,
    /// BLAKE3 of the current body.
    pub body_hash: [u8; 32],
    /// Length of the current body, in bytes.
    pub body_len: u64,
    /// The sequence of the last member that changed the document (publish, append or an
    /// archive flip).
    pub modified_sequence: u64,
    /// The modified time the log gave the document's last change (SPEC 1.3): the one
    /// value the model cannot derive, recorded by the checker once judged
    /// ([`crate::ModelWorld::replace_modified_time`]); 0 until then.
    pub modified_us: u64,
    /// The catalog record the last publish set (SPEC 1.3).
    pub catalog: Option<String>,
}

/// A document's current body and catalog record, borrowed from the model.
#[derive(Clone, Copy, Debug)]
pub struct Current<'a> {
    /// The current body.
    pub body: &'a Bytes,
    /// BLAKE3 of the current body.
    pub body_hash: &'a [u8; 32],
    /// The catalog record the last publish set.
    pub catalog: Option<&'a str>,
}

/// One retained version record (SPEC 1.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelVersion {
    /// The version number (1 for the first body).
    pub version: u64,
    /// The sequence of the member that wrote it.
    pub sequence: u64,
    /// Operation id of the member that wrote it.
    pub op_id: OperationId,
    /// BLAKE3 of the version's body.
    pub body_hash: [u8; 32],
    /// Length of the version's body, in bytes.
    pub body_len: u64,
    /// `Published` or `Appended`.
    pub kind: ReceiptKind,
}

/// BLAKE3 of a body: the hash every version record and document carries.
pub fn body_hash(body: &[u8]) -> [u8; 32] {
    blake3::hash(body).into()
}

/// A retained version together with its body.
#[derive(Clone, Debug)]
pub(crate) struct StoredVersion {
    pub record: ModelVersion,
    pub body: Bytes,
}

/// A document in the model's state. The current body is the body of the newest retained
/// version: retention is at least 1, so the current version is always retained.
#[derive(Clone, Debug)]
pub(crate) struct StoredDocument {
    pub version: u64,
    pub first_version: u64,
    pub archived: bool,
    pub modified_sequence: u64,
    pub modified_us: u64,
    pub catalog: Option<String>,
    /// Retained versions, oldest first, versions `first_version ..= version`.
    pub versions: Vec<StoredVersion>,
}

impl StoredDocument {
    fn current(&self) -> &StoredVersion {
        let last = self.versions.last().expect("a document always retains its current version");
        assert_eq!(last.record.version, self.version);
        last
    }

    pub fn current_body(&self) -> &Bytes {
        &self.current().body
    }

    pub fn current_hash(&self) -> &[u8; 32] {
        &self.current().record.body_hash
    }

    pub fn snapshot(&self) -> ModelDocument {
        let current = &self.current().record;
        ModelDocument {
            version: self.version,
            first_version: self.first_version,
            archived: self.archived,
            body_hash: current.body_hash,
            body_len: current.body_len,
            modified_sequence: self.modified_sequence,
            modified_us: self.modified_us,
            catalog: self.catalog.clone(),
        }
    }
}
