//! Bodies (SPEC 6, 5.7): the bodies this replica holds in memory, the blob creates a batch
//! waits on before its slot may be created, and the reads of bodies the committer (an
//! append's base) or the read path (a fetch) need. It owns every body call; it never
//! decides what a write or a read does with a body.
//!
//! A body is a blob, or carried in the slot of a version that has it, or both (a
//! checkpoint writes carried bodies out as blobs before it names them). A read tries the
//! slot first when the replica knows which slot holds the version, the blob first
//! otherwise, and the other one second; only when neither has it is the body missing.

use crate::blob::{BlobError, BlobOp, BlobOutcome, BlobResult};
use crate::body_cache::BodyCache;
use crate::format::{decode_body, encode_body, Keys, Slot, SLOT_MEMBERS_MAX};
use crate::hash::Hash32;
use crate::io::{Call, Io, Purpose};
use crate::reply::FailReason;
use crate::snapshot::RecentSlots;
use crate::time::Instant;
use bytes::Bytes;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The calls the body owner makes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum BodyCall {
    /// Create the blob of this body if absent.
    Create { hash: Hash32 },
    /// Read the blob of this body; when it is absent, find the slot holding sequence
    /// `then_slot` (a version with this body) and read the body there.
    Get { hash: Hash32, then_slot: Option<u64> },
    /// List the slot names around sequence `at` for the one holding it.
    FindSlot { hash: Hash32, at: u64 },
    /// Read the slot at `first` (it holds sequence `at`) for the body it carries; when it
    /// carries none, read the blob if `then_blob`.
    FromSlot { hash: Hash32, first: u64, at: u64, then_blob: bool },
}

/// A slot read for a body looks for its name again at most this many times when a
/// listing missed it (a listing may leave out names, SPEC 2).
const FIND_SLOT_ATTEMPTS_MAX: u32 = 4;

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
    /// Bodies being read, by any of their calls.
    fetching: BTreeSet<Hash32>,
    /// Bodies up to this long are looked for in their slot first: this replica's own
    /// inline limit, taken as the world's (a guess only orders the two reads).
    inline_bytes_max: u64,
}

impl Bodies {
    pub fn new(keys: Keys, cache_bytes_max: usize, inline_bytes_max: usize) -> Bodies {
        Bodies {
            keys,
            cache: BodyCache::new(cache_bytes_max),
            states: BTreeMap::new(),
            stored_order: VecDeque::new(),
            fetching: BTreeSet::new(),
            inline_bytes_max: inline_bytes_max as u64,
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

    /// Reads a body from the bucket unless a read of it is already on its way. `at` is
    /// the sequence and body length of a version with this body, so that its slot may be
    /// read for it: first when the slot is among the newest, carries bodies and the body
    /// is small enough to be carried, after the blob otherwise (a slot of a writer that
    /// carried none, a preloaded world's 256 members, was read and decoded for nothing
    /// before each of its bodies' blobs). True when this call sent the read.
    pub fn fetch(
        &mut self,
        now: Instant,
        hash: Hash32,
        at: Option<(u64, u64)>,
        recent: &RecentSlots,
        io: &mut Io,
    ) -> bool {
        if !self.fetching.insert(hash) {
            return false;
        }
        let Some((at, len)) = at else {
            self.read_blob(now, hash, None, io);
            return true;
        };
        let carried_in = recent.holding(at).filter(|s| s.carries_bodies).map(|s| s.first);
        match carried_in.filter(|_| len <= self.inline_bytes_max) {
            Some(first) => self.read_slot(now, hash, first, at, true, 0, io),
            None => self.read_blob(now, hash, Some(at), io),
        }
        true
    }

    fn read_blob(&mut self, now: Instant, hash: Hash32, then_slot: Option<u64>, io: &mut Io) {
        let op = BlobOp::Get { key: self.keys.body(&hash) };
        io.issue(now, Purpose::Body(BodyCall::Get { hash, then_slot }), op, 0);
    }

    #[allow(clippy::too_many_arguments)]
    fn read_slot(
        &mut self,
        now: Instant,
        hash: Hash32,
        first: u64,
        at: u64,
        then_blob: bool,
        attempt: u32,
        io: &mut Io,
    ) {
        let op = BlobOp::Get { key: self.keys.slot(first) };
        io.issue(now, Purpose::Body(BodyCall::FromSlot { hash, first, at, then_blob }), op, attempt);
    }

    /// Lists the slot names from the earliest that could hold `at` (a slot holds at most
    /// `SLOT_MEMBERS_MAX` members).
    fn find_slot(&mut self, now: Instant, hash: Hash32, at: u64, attempt: u32, io: &mut Io) {
        let from = at.saturating_sub(SLOT_MEMBERS_MAX as u64);
        let op = BlobOp::List {
            prefix: self.keys.log_prefix(),
            start_after: (from > 0).then(|| self.keys.slot(from)),
            limit: SLOT_MEMBERS_MAX as u32,
        };
        io.issue(now, Purpose::Body(BodyCall::FindSlot { hash, at }), op, attempt);
    }

    fn read(&mut self, hash: Hash32, body: Bytes) -> BodyEvent {
        self.fetching.remove(&hash);
        self.cache.insert(hash, body.clone());
        BodyEvent::Read(hash, body)
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
            (BodyCall::Get { hash, .. }, Ok(BlobOutcome::Got { bytes, .. })) => {
                let body = decode_body(&bytes, &hash)
                    .map_err(|error| FailReason::Decode { key: self.keys.body(&hash), error })?;
                Ok(Some(self.read(hash, Bytes::from(body))))
            }
            (BodyCall::Get { hash, then_slot: Some(at) }, Err(BlobError::NotFound)) => {
                self.find_slot(now, hash, at, 0, io);
                Ok(None)
            }
            (BodyCall::Get { hash, then_slot: None }, Err(BlobError::NotFound)) => {
                Err(FailReason::BodyMissing { hash })
            }
            (BodyCall::FindSlot { hash, at }, Ok(BlobOutcome::Listed { entries, .. })) => {
                let first =
                    entries.iter().filter_map(|e| self.keys.parse_slot(&e.key)).filter(|f| *f <= at).max();
                match first {
                    Some(first) => self.read_slot(now, hash, first, at, false, call.attempt, io),
                    None => self.find_again(now, hash, at, call.attempt, io)?,
                }
                Ok(None)
            }
            (BodyCall::FromSlot { hash, first, at, then_blob }, Ok(BlobOutcome::Got { bytes, .. })) => {
                let (slot, carried) = Slot::decode_at_hashed(first, &bytes)
                    .map_err(|error| FailReason::Decode { key: self.keys.slot(first), error })?;
                // The slot's other carried bodies are as verified as the one wanted (decode
                // matched each to a member): cache them too, so reading a sibling costs no
                // blob miss, listing and slot read again.
                let mut wanted = None;
                for (carried, body) in carried.into_iter().zip(&slot.bodies) {
                    match carried == hash {
                        true => wanted = Some(body.clone()),
                        false => self.cache.insert(carried, body.clone()),
                    }
                }
                if let Some(body) = wanted {
                    return Ok(Some(self.read(hash, body)));
                }
                if slot.last_sequence() < at {
                    // A listing that missed the slot holding `at` named an earlier one.
                    self.find_again(now, hash, at, call.attempt, io)?;
                } else if then_blob {
                    self.read_blob(now, hash, None, io);
                } else {
                    return Err(FailReason::BodyMissing { hash });
                }
                Ok(None)
            }
            (BodyCall::FromSlot { hash, then_blob: true, .. }, Err(BlobError::NotFound)) => {
                self.read_blob(now, hash, None, io);
                Ok(None)
            }
            (BodyCall::FromSlot { hash, then_blob: false, .. }, Err(BlobError::NotFound)) => {
                Err(FailReason::BodyMissing { hash })
            }
            _ => {
                io.retry_later(now, call);
                Ok(None)
            }
        }
    }

    /// The slot holding `at` was not where a listing said: list again, a bounded number of
    /// times, then the body is missing.
    fn find_again(
        &mut self,
        now: Instant,
        hash: Hash32,
        at: u64,
        attempt: u32,
        io: &mut Io,
    ) -> Result<(), FailReason> {
        if attempt + 1 >= FIND_SLOT_ATTEMPTS_MAX {
            return Err(FailReason::BodyMissing { hash });
        }
        self.find_slot(now, hash, at, attempt + 1, io);
        Ok(())
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
