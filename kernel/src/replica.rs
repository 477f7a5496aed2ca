//! A replica of one world: the one entry point of the kernel. It routes each input to
//! the part that owns it (opening, committer, read path, change feed) and then lets each
//! make the progress it can without the bucket.

use crate::blob::{BlobError, BlobOutcome, BlobResult};
use crate::committer::{Committer, CommitterStats};
use crate::config::{Config, ConfigError};
use crate::effect::{Effect, Input, Request, WatchEnd};
use crate::feed::{Feed, FeedStats};
use crate::format::{decode_body, Keys};
use crate::ids::{RequestId, StoreId, WorldId};
use crate::io::{Call, Io, Purpose, RetryPolicy};
use crate::open::{Opening, Progress};
use crate::reads::{ReadStats, Reads};
use crate::reply::{FailReason, Reply, WriteError};
use crate::snapshot::Snapshot;
use crate::time::Instant;
use crate::world::{validate, WorldState};
use bytes::Bytes;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// Who this replica is and which world it serves.
#[derive(Clone, Debug)]
pub struct Identity {
    /// The world this replica serves; None adopts the marker's (and at genesis takes an
    /// id drawn from `rng_seed`).
    pub world_id: Option<WorldId>,
    pub store_id: StoreId,
    /// Key prefix of the world in the bucket.
    pub prefix: String,
    /// Seeds the replica's RNG (backoff jitter). Same seed, same inputs: same outputs.
    pub rng_seed: u64,
}

/// One replica. Feed it inputs with `now`; after each, drain [`Replica::poll_effect`] until
/// it returns None and schedule a wake-up at [`Replica::poll_timeout`].
pub struct Replica {
    keys: Keys,
    io: Io,
    opening: Option<Opening>,
    snapshot: Option<Snapshot>,
    committer: Committer,
    reads: Reads,
    feed: Feed,
    /// Watches asked for while the world was still opening.
    early_watches: Vec<(RequestId, u64, u32)>,
    watches_max: usize,
    failed: Option<FailReason>,
}

impl Replica {
    /// Starts opening the world: the first effects read its marker.
    pub fn new(config: Config, identity: Identity, now: Instant) -> Result<Replica, ConfigError> {
        config.validate()?;
        let keys = Keys::new(&identity.prefix);
        let mut io = Io::new(
            ChaCha8Rng::seed_from_u64(identity.rng_seed),
            RetryPolicy {
                base_ms: config.retry_base_ms,
                cap_ms: config.retry_cap_ms,
                hedge_after_ms: config.hedge_after_ms,
            },
        );
        // The id a genesis would take, drawn from the seeded RNG.
        let genesis_world_id = {
            use rand_core::Rng;
            let mut id = [0u8; 16];
            io.rng.fill_bytes(&mut id);
            WorldId(id)
        };
        let opening = Opening::start(
            &config,
            keys.clone(),
            identity.world_id,
            genesis_world_id,
            identity.store_id,
            now,
            &mut io,
        );
        Ok(Replica {
            reads: Reads::new(&config, keys.clone()),
            feed: Feed::new(&config, keys.clone()),
            watches_max: config.watches_max,
            committer: Committer::new(config, keys.clone(), identity.store_id),
            keys,
            io,
            opening: Some(opening),
            snapshot: None,
            early_watches: Vec::new(),
            failed: None,
        })
    }

    pub fn handle(&mut self, now: Instant, input: Input) {
        match input {
            Input::Request { id, request } => self.request(now, id, request),
            Input::BlobDone { id, result } => {
                if let Some((call, result)) = self.io.complete(id, result) {
                    self.blob_done(now, call, result);
                }
            }
            Input::Follow { sequence } => {
                if let Some(sn) = self.snapshot.as_mut() {
                    self.committer.on_hint(now, sn, sequence);
                    sn.hinted = sn.hinted.max(sequence);
                }
            }
            Input::WatchCredit { id, events } => match self.early_watches.iter_mut().find(|w| w.0 == id) {
                Some(w) => w.2 = w.2.saturating_add(events),
                None => self.feed.credit(id, events),
            },
            Input::Unwatch { id } => {
                self.early_watches.retain(|w| w.0 != id);
                self.feed.unwatch(id);
            }
        }
        self.settle(now);
    }

    /// Call at (or after) the instant [`Replica::poll_timeout`] named.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.io.reissue_due(now);
        self.committer.expire(now, &mut self.io);
        self.reads.expire(now, &mut self.io);
        self.settle(now);
    }

    pub fn poll_effect(&mut self) -> Option<Effect> {
        self.io.effects.pop_front()
    }

    /// The next instant the replica needs [`Replica::handle_timeout`].
    pub fn poll_timeout(&self) -> Option<Instant> {
        [self.io.next_retry(), self.committer.next_deadline(), self.reads.next_deadline()]
            .into_iter()
            .flatten()
            .min()
    }

    fn request(&mut self, now: Instant, id: RequestId, request: Request) {
        match request {
            Request::Write(w) => match validate(&w.mutation) {
                Err(invalid) => {
                    let reply = Reply::Write(Err(WriteError::Invalid(invalid)));
                    self.io.effects.push_back(Effect::Reply { id, reply });
                }
                Ok(valid) => self.committer.submit(now, id, w.op_id, valid, &mut self.io),
            },
            Request::Read(read) => self.reads.submit(now, id, &read, &mut self.io),
            Request::Watch { cursor, credit } => {
                if let Some(reason) = &self.failed {
                    let end = WatchEnd::Failed(reason.clone());
                    self.io.effects.push_back(Effect::WatchEnded { id, end });
                } else if let Some(sn) = &self.snapshot {
                    self.feed.watch(id, cursor, credit, sn, &mut self.io);
                } else if self.early_watches.len() < self.watches_max {
                    self.early_watches.push((id, cursor, credit));
                } else {
                    let end = WatchEnd::Busy { watches: self.early_watches.len() };
                    self.io.effects.push_back(Effect::WatchEnded { id, end });
                }
            }
        }
    }

    fn blob_done(&mut self, now: Instant, call: Call, result: BlobResult) {
        if self.failed.is_some() {
            return;
        }
        let failure = match call.purpose.clone() {
            Purpose::MarkerGet
            | Purpose::GenesisList
            | Purpose::MarkerCreate
            | Purpose::CheckpointList
            | Purpose::CheckpointCreate
            | Purpose::CheckpointGet
            | Purpose::LogList
            | Purpose::ReplayGet { .. } => {
                let Some(opening) = self.opening.as_mut() else { return };
                match opening.on_done(now, call, result, &mut self.io) {
                    Progress::Working => None,
                    Progress::Open(sn) => {
                        self.opening = None;
                        for (id, cursor, credit) in std::mem::take(&mut self.early_watches) {
                            self.feed.watch(id, cursor, credit, &sn, &mut self.io);
                        }
                        self.snapshot = Some(*sn);
                        None
                    }
                    Progress::Failed(reason) => Some(reason),
                }
            }
            Purpose::BodyGet { hash } => match result {
                Ok(BlobOutcome::Got { bytes, .. }) => match decode_body(&bytes, &hash) {
                    Ok(body) => {
                        let body = Bytes::from(body);
                        if let Some(sn) = &self.snapshot {
                            self.committer.on_body(now, sn, hash, body.clone(), &mut self.io);
                        }
                        self.reads.on_body(&hash, &body, &mut self.io);
                        None
                    }
                    Err(error) => Some(FailReason::Decode { key: self.keys.body(&hash), error }),
                },
                Err(BlobError::NotFound) => Some(FailReason::BodyMissing { hash }),
                _ => {
                    self.io.retry_later(now, call);
                    None
                }
            },
            Purpose::BodyCreate { .. }
            | Purpose::SlotCreate { .. }
            | Purpose::SlotGet { .. }
            | Purpose::CatchUpList
            | Purpose::CatchUpGet { .. } => {
                let sn = self.snapshot.as_mut().expect("the committer calls only once open");
                self.committer.on_done(now, sn, call, result, &mut self.io);
                None
            }
            Purpose::TipStat { .. } | Purpose::ProbeGet { .. } => {
                let sn = self.snapshot.as_mut().expect("probes only once open");
                self.reads.on_done(now, sn, self.committer.creating(), call, result, &mut self.io).err()
            }
            Purpose::FeedGet { .. } => self.feed.on_done(now, call, result, &mut self.io).err(),
        };
        if let Some(reason) = failure {
            self.fail(reason);
        }
    }

    /// Lets every part make the progress it can without the bucket.
    fn settle(&mut self, now: Instant) {
        if self.committer.is_failed() && self.failed.is_none() {
            let reason = self.committer.failure().expect("failed").clone();
            self.fail(reason);
        }
        if self.failed.is_some() {
            return;
        }
        let Some(sn) = self.snapshot.as_mut() else { return };
        self.committer.pump(now, sn, &mut self.io);
        let needs_tip = self.committer.needs_tip_since(sn).is_some();
        let committer = &self.committer;
        self.reads.serve(now, sn, committer.creating(), needs_tip, &|h| committer.body(h), &mut self.io);
        self.feed.absorb(sn);
        self.feed.deliver(now, sn, &mut self.io);
        if self.committer.is_failed() {
            let reason = self.committer.failure().expect("failed").clone();
            self.fail(reason);
        }
    }

    fn fail(&mut self, reason: FailReason) {
        if self.failed.is_some() {
            return;
        }
        self.opening = None;
        self.committer.fail(reason.clone(), &mut self.io);
        self.reads.fail(reason.clone(), &mut self.io);
        self.feed.fail(&reason, &mut self.io);
        for (id, _, _) in std::mem::take(&mut self.early_watches) {
            self.io.effects.push_back(Effect::WatchEnded { id, end: WatchEnd::Failed(reason.clone()) });
        }
        self.failed = Some(reason);
    }

    /// The confirmed state, once open.
    pub fn world(&self) -> Option<&WorldState> {
        self.snapshot.as_ref().map(|s| &s.world)
    }

    pub fn is_open(&self) -> bool {
        self.snapshot.is_some()
    }

    pub fn is_failed(&self) -> bool {
        self.failed.is_some()
    }

    pub fn stats(&self) -> CommitterStats {
        CommitterStats { calls_hedged: self.io.hedges_sent, ..self.committer.stats.clone() }
    }

    pub fn read_stats(&self) -> &ReadStats {
        &self.reads.stats
    }

    pub fn feed_stats(&self) -> &FeedStats {
        &self.feed.stats
    }

    pub fn queued(&self) -> usize {
        self.committer.queued()
    }

    /// Blob calls in flight.
    pub fn calls_in_flight(&self) -> usize {
        self.io.in_flight_len()
    }
}
