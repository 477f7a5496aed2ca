//! Body blobs (SPEC 6): the bodies this replica holds in memory, the blob creates a batch
//! waits on before its slot may be created, and the reads of bodies the committer (an
//! append's base) or the read path (a fetch) need. It owns every body call; it never
//! decides what a write or a read does with a body.

use crate::blob::{BlobError, BlobOp, BlobResult};
use crate::body_cache::BodyCache;
use crate::format::{decode_body, encode_body, Keys};
use crate::hash::Hash32;
use crate::io::{Call, Io, Purpose};
use crate::reply::FailReason;
use crate::time::Instant;
use bytes::Bytes;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, VecDeque};

/// The calls the body owner makes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum BodyCall {
    /// Create the blob of this body if absent.
    Create { hash: Hash32 },
    /// Read the blob of this body.
    Get { hash: Hash32 },
}

/// What a completed body call means to the other owners.
pub(crate) enum BodyEvent {
    /// The blob is in the bucket: slots may name it.
    Stored(Hash32),
    /// The body arrived and hashes to its name.
    Read(Hash32, Bytes),
}

#[derive(Clone, Debug)]
enum BodyState {
    Creating(Bytes),
    Stored,
}

/// Stored bodies remembered so a batch does not create them again; past this many the
/// oldest is forgotten (a repeated create only costs one call that finds it taken).
const STORED_BODIES_REMEMBERED_MAX: usize = 4_096;

pub(crate) struct Bodies {
    keys: Keys,
    cache: BodyCache,
    /// Bodies being created, and the newest ones known stored.
    states: BTreeMap<Hash32, BodyState>,
    stored_order: VecDeque<Hash32>,
}

impl Bodies {
    pub fn new(keys: Keys, cache_bytes_max: usize) -> Bodies {
        Bodies {
            keys,
            cache: BodyCache::new(cache_bytes_max),
            states: BTreeMap::new(),
            stored_order: VecDeque::new(),
        }
    }

    /// A body from memory: the cache, or one being created.
    pub fn get(&self, hash: &Hash32) -> Option<Bytes> {
        self.cache.peek(hash).or_else(|| match self.states.get(hash) {
            Some(BodyState::Creating(b)) => Some(b.clone()),
            _ => None,
        })
    }

    /// Keeps a body this replica just saw (a write's new body) in the cache.
    pub fn remember(&mut self, hash: Hash32, body: Bytes) {
        self.cache.insert(hash, body);
    }

    /// Starts storing a body unless it is stored or on its way. True while it is not stored.
    pub fn store(&mut self, now: Instant, hash: Hash32, body: Bytes, io: &mut Io) -> bool {
        // One search of the states for both the look and the insert.
        match self.states.entry(hash) {
            Entry::Occupied(o) => matches!(o.get(), BodyState::Creating(_)),
            Entry::Vacant(v) => {
                let op =
                    BlobOp::Create { key: self.keys.body(&hash), bytes: Bytes::from(encode_body(&body)) };
                io.issue(now, Purpose::Body(BodyCall::Create { hash }), op, 0);
                v.insert(BodyState::Creating(body));
                true
            }
        }
    }

    /// Reads a body from the bucket unless a read of it is already on its way. True when
    /// this call sent the read.
    pub fn fetch(&mut self, now: Instant, hash: Hash32, io: &mut Io) -> bool {
        let purpose = Purpose::Body(BodyCall::Get { hash });
        if io.is_pending(&purpose) {
            return false;
        }
        io.issue(now, purpose, BlobOp::Get { key: self.keys.body(&hash) }, 0);
        true
    }

    /// A body call completed. An error is a reason to fail the replica closed.
    pub fn on_done(
        &mut self,
        now: Instant,
        what: BodyCall,
        call: Call,
        result: BlobResult,
        io: &mut Io,
    ) -> Result<Option<BodyEvent>, FailReason> {
        match (what, result) {
            (BodyCall::Create { hash }, Ok(_) | Err(BlobError::AlreadyExists)) => {
                self.mark_stored(hash);
                Ok(Some(BodyEvent::Stored(hash)))
            }
            (BodyCall::Get { hash }, Ok(crate::blob::BlobOutcome::Got { bytes, .. })) => {
                let body = decode_body(&bytes, &hash)
                    .map_err(|error| FailReason::Decode { key: self.keys.body(&hash), error })?;
                let body = Bytes::from(body);
                self.cache.insert(hash, body.clone());
                Ok(Some(BodyEvent::Read(hash, body)))
            }
            (BodyCall::Get { hash }, Err(BlobError::NotFound)) => Err(FailReason::BodyMissing { hash }),
            _ => {
                io.retry_later(now, call);
                Ok(None)
            }
        }
    }

    fn mark_stored(&mut self, hash: Hash32) {
        self.states.insert(hash, BodyState::Stored);
        self.stored_order.push_back(hash);
        while self.stored_order.len() > STORED_BODIES_REMEMBERED_MAX {
            let old = self.stored_order.pop_front().expect("non-empty");
            if matches!(self.states.get(&old), Some(BodyState::Stored)) {
                self.states.remove(&old);
            }
        }
    }
}
