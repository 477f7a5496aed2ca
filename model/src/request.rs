//! What the model keeps of a committed request for the reuse rule (SPEC 10.13): the
//! content a slot member records of it. An operation id sent again inside the receipt
//! window with the same content is a duplicate; with other content it is refused. A member
//! does not record an append's bytes, so two appends to one path are the same content.
//!
//! The digest is written from the SPEC's preimage, never by calling the kernel, so that
//! the checker can judge the digests a checkpoint stores.

use crate::policy::ModelPolicyBody;

/// The preimage's prefix (SPEC 10.13).
const DOMAIN: &[u8] = b"slotlog request digest 1";

/// A request's content as a committed member records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelRequest {
    /// A publish: the path and the BLAKE3 of the new body.
    Publish {
        /// Normalized path.
        path: String,
        /// BLAKE3 of the new body.
        body_hash: [u8; 32],
        /// The catalog record it sets (None for none).
        catalog: Option<String>,
    },
    /// An append to the path (its bytes are not part of the content).
    Append {
        /// Normalized path.
        path: String,
    },
    /// An archive (`archived` true) or unarchive of the path.
    Archive {
        /// Normalized path.
        path: String,
        /// True to archive, false to unarchive.
        archived: bool,
    },
    /// A `set_policy` with this normalized policy.
    Policy {
        /// The policy, normalized.
        body: ModelPolicyBody,
    },
}

impl ModelRequest {
    /// BLAKE3 of the SPEC 10.13 preimage: the domain, a kind byte (1 publish, 2 append,
    /// 3 archive, 4 unarchive, 5 policy), then the fields (a publish's catalog record only
    /// when it has one), each string as its length
    /// (`u32`, little-endian) and bytes, integers little-endian.
    pub fn digest(&self) -> [u8; 32] {
        let mut preimage = DOMAIN.to_vec();
        let string = |out: &mut Vec<u8>, s: &str| {
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        };
        match self {
            ModelRequest::Publish { path, body_hash, catalog } => {
                preimage.push(1);
                string(&mut preimage, path);
                preimage.extend_from_slice(body_hash);
                if let Some(record) = catalog {
                    string(&mut preimage, record);
                }
            }
            ModelRequest::Append { path } => {
                preimage.push(2);
                string(&mut preimage, path);
            }
            ModelRequest::Archive { path, archived } => {
                preimage.push(if *archived { 3 } else { 4 });
                string(&mut preimage, path);
            }
            ModelRequest::Policy { body } => {
                preimage.push(5);
                preimage.extend_from_slice(&body.retention_versions.to_le_bytes());
                preimage.extend_from_slice(&body.body_bytes_max.to_le_bytes());
                preimage.extend_from_slice(&(body.read_only_prefixes.len() as u32).to_le_bytes());
                for prefix in &body.read_only_prefixes {
                    string(&mut preimage, prefix);
                }
            }
        }
        *blake3::hash(&preimage).as_bytes()
    }
}
