//! A replica of one world: the one entry point of the kernel.

use crate::committer::{Committer, CommitterStats};
use crate::config::{Config, ConfigError};
use crate::effect::{Effect, Input, Request};
use crate::format::Keys;
use crate::ids::{StoreId, WorldId};
use crate::io::{Io, Purpose, RetryPolicy};
use crate::open::{Opening, Progress};
use crate::reply::{Reply, WriteError};
use crate::time::Instant;
use crate::world::{validate, WorldState};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// Who this replica is and which world it serves.
#[derive(Clone, Debug)]
pub struct Identity {
    pub world_id: WorldId,
    pub store_id: StoreId,
    /// Key prefix of the world in the bucket.
    pub prefix: String,
    /// Seeds the replica's RNG (backoff jitter). Same seed, same inputs: same outputs.
    pub rng_seed: u64,
}

/// One replica. Feed it inputs with `now`; after each, drain [`Replica::poll_effect`] until
/// it returns None and schedule a wake-up at [`Replica::poll_timeout`].
pub struct Replica {
    io: Io,
    opening: Option<Opening>,
    committer: Committer,
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
        let opening =
            Opening::start(&config, keys.clone(), identity.world_id, identity.store_id, now, &mut io);
        Ok(Replica { io, opening: Some(opening), committer: Committer::new(config, keys, identity.store_id) })
    }

    pub fn handle(&mut self, now: Instant, input: Input) {
        match input {
            Input::Request { id, request: Request::Write(w) } => match validate(&w.mutation) {
                Err(invalid) => self
                    .io
                    .effects
                    .push_back(Effect::Reply { id, reply: Reply::Write(Err(WriteError::Invalid(invalid))) }),
                Ok(valid) => self.committer.submit(now, id, w.op_id, valid, &mut self.io),
            },
            Input::BlobDone { id, result } => {
                let Some((call, result)) = self.io.complete(id, result) else { return };
                let opening_call = matches!(
                    call.purpose,
                    Purpose::MarkerGet | Purpose::MarkerCreate | Purpose::LogList | Purpose::ReplayGet { .. }
                );
                if !opening_call {
                    self.committer.on_done(now, call, result, &mut self.io);
                    return;
                }
                let Some(opening) = self.opening.as_mut() else { return };
                match opening.on_done(now, call, result, &mut self.io) {
                    Progress::Working => {}
                    Progress::Open(world, current_since) => {
                        self.opening = None;
                        self.committer.open(world, current_since, now, &mut self.io);
                    }
                    Progress::Failed(reason) => {
                        self.opening = None;
                        self.committer.fail(reason, &mut self.io);
                    }
                }
            }
        }
    }

    /// Call at (or after) the instant [`Replica::poll_timeout`] named.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.io.reissue_due(now);
        self.committer.expire(now, &mut self.io);
        self.committer.pump(now, &mut self.io);
    }

    pub fn poll_effect(&mut self) -> Option<Effect> {
        self.io.effects.pop_front()
    }

    /// The next instant the replica needs [`Replica::handle_timeout`].
    pub fn poll_timeout(&self) -> Option<Instant> {
        match (self.io.next_retry(), self.committer.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The confirmed state, once open.
    pub fn world(&self) -> Option<&WorldState> {
        self.committer.world()
    }

    pub fn is_open(&self) -> bool {
        self.committer.world().is_some()
    }

    pub fn is_failed(&self) -> bool {
        self.committer.is_failed()
    }

    pub fn stats(&self) -> CommitterStats {
        CommitterStats { calls_hedged: self.io.hedges_sent, ..self.committer.stats.clone() }
    }

    pub fn queued(&self) -> usize {
        self.committer.queued()
    }

    /// Blob calls in flight.
    pub fn calls_in_flight(&self) -> usize {
        self.io.in_flight_len()
    }
}
