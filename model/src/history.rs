//! What clients saw: every write a run issued, when, and how it was answered; and what
//! the bucket did to every name. The harness records both; the checker judges them
//! against the log.

use bytes::Bytes;
use slotlog_kernel::effect::{Read, WatchEnd};
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::OperationId;
use slotlog_kernel::reply::{ReadError, ReadOk, WriteError, WriteOk};
use slotlog_kernel::time::Instant;
use slotlog_kernel::world::{Mutation, Receipt};
use std::collections::BTreeMap;

/// How a write came out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The replica answered.
    Answered {
        /// True time the answer reached the client.
        at: Instant,
        /// The answer.
        result: Result<WriteOk, WriteError>,
    },
    /// The replica crashed before answering: the write may or may not be in the log.
    Crashed,
    /// Written into the log before the run started (a seeded world).
    Preloaded,
    /// No answer by the end of the run, from a replica that did not crash.
    Unanswered,
}

/// One write a client issued, and how it came out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientOp {
    /// Index of the replica the write was sent to.
    pub replica: usize,
    /// The write's operation id.
    pub op_id: OperationId,
    /// What the write asks for.
    pub mutation: Mutation,
    /// True time the request reached the replica.
    pub invoked_at: Instant,
    /// How it came out.
    pub outcome: Outcome,
}

impl ClientOp {
    /// True time the write was answered, if it was.
    pub fn answered_at(&self) -> Option<Instant> {
        match &self.outcome {
            Outcome::Answered { at, .. } => Some(*at),
            _ => None,
        }
    }
}

/// How a read came out. (A record of a run, kept whole: the answer is not boxed.)
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadOutcome {
    /// The replica answered.
    Answered {
        /// True time the answer reached the client.
        at: Instant,
        /// The answer.
        result: Result<ReadOk, ReadError>,
    },
    /// The replica crashed before answering.
    Crashed,
    /// No answer by the end of the run, from a replica that did not crash.
    Unanswered,
}

/// One read a client issued, and how it came out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadOp {
    /// Index of the replica the read was sent to.
    pub replica: usize,
    /// What was read.
    pub read: Read,
    /// True time the request reached the replica.
    pub invoked_at: Instant,
    /// How it came out.
    pub outcome: ReadOutcome,
    /// The view it read, if any: every read of one view must answer at one state.
    pub view: Option<usize>,
}

/// How a watch session ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionEnd {
    /// Still open when the run ended, or closed by its subscriber.
    Open,
    /// The replica ended it, for the reason given.
    Ended(WatchEnd),
    /// The replica crashed with the session open.
    Crashed,
}

/// One subscription: from a cursor, the events it received in order, and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchSession {
    /// Index of the replica it subscribed to.
    pub replica: usize,
    /// The sequence it subscribed after: its first event is the receipt of `cursor + 1`.
    pub cursor: u64,
    /// True time the subscription reached the replica.
    pub started_at: Instant,
    /// The receipts it received, in order.
    pub events: Vec<Receipt>,
    /// True time each of `events` reached the subscriber, one per event (the watch
    /// delivery rule reads them).
    pub delivered_at: Vec<Instant>,
    /// True time its subscriber closed it (`SessionEnd::Open`); None if it was open when
    /// the run ended, or the replica ended it.
    pub closed_at: Option<Instant>,
    /// How it ended.
    pub end: SessionEnd,
}

/// Everything a run's clients issued and saw, for the checker.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// Every write, in issue order.
    pub ops: Vec<ClientOp>,
    /// Every read, in issue order.
    pub reads: Vec<ReadOp>,
    /// Every watch session, in subscribe order.
    pub watches: Vec<WatchSession>,
    /// True time the run ended (sessions still open were open until then); None when the
    /// embedder does not say, and the watch delivery rule judges no missing event.
    pub ended_at: Option<Instant>,
    /// Every create, rewrite and delete the store carried out, by name; `None` when the
    /// embedder does not record them (the name rules then judge nothing).
    pub names: Option<NameHistory>,
}

/// One object of the world as the bucket held it at the end of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredObject {
    /// Object name in the bucket.
    pub key: String,
    /// The bytes it held at the end.
    pub bytes: Bytes,
    /// Store-side creation time, on the run's true clock.
    pub created_at: Instant,
}

/// What the bucket did to one name at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NameChange {
    /// A create of an absent name.
    Created,
    /// A write over the bytes of a present name.
    Rewritten,
    /// A delete of a present name.
    Deleted,
}

/// One mutation of one name, as the store carried it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NameEvent {
    /// Store time, on the run's true clock.
    pub at: Instant,
    /// What the store did.
    pub change: NameChange,
    /// BLAKE3 of the bytes the name holds after the change, for a name the history
    /// hashes (see [`NameHistory::keeping_bytes_under`]); `None` after a delete and for
    /// names it does not hash.
    pub bytes_hash: Option<Hash32>,
    /// Bytes the name holds after the change (0 after a delete).
    pub size: u64,
    /// The change left the name holding the very bytes it held before (compared byte for
    /// byte with them): a rewrite that changed nothing.
    pub kept_bytes: bool,
}

/// The full history of every name in the bucket: each create, rewrite and delete, in the
/// order the store applied them, with running totals of what the bucket held. The
/// harness records it where operations land; the checker judges it (forks, and that it
/// accounts for the bucket at the end) and later rules ask it what a name held when.
#[derive(Clone, Debug, Default)]
pub struct NameHistory {
    by_name: BTreeMap<String, NameLog>,
    /// Objects and bytes present now, and the most objects present at any instant.
    objects_now: u64,
    bytes_now: u64,
    objects_max: u64,
    bytes_max: u64,
    /// Mutations that did not fit what the name held (a create of a present name, a
    /// rewrite or delete of an absent one, time running back): a store or harness bug.
    incoherent: Vec<(String, NameEvent)>,
    /// Names under these prefixes keep their bytes, by hash: what a collected slot or
    /// checkpoint held stays known to the checker after the bucket lets it go. Only
    /// these names are hashed (none empty: all are).
    keep_bytes_under: Vec<String>,
    bytes: BTreeMap<Hash32, Bytes>,
}

/// One name's events, and the bytes it holds after the last of them (the store's own
/// `Bytes`, shared, not copied), so the end of a run is compared byte for byte without
/// hashing every object again.
#[derive(Clone, Debug, Default)]
struct NameLog {
    events: Vec<NameEvent>,
    held: Option<Bytes>,
}

impl NameHistory {
    /// A history that keeps the bytes of names under `prefixes`, and hashes only those
    /// names: every rule that reads a name's hash reads one it keeps (slots for forks and
    /// the chain, checkpoints and roots for what they reach), and the other names (bodies
    /// written out, segment parts) were hashed for nothing, 1.4% of a `single` run.
    /// [`NameHistory::default`] keeps nothing and hashes every name.
    pub fn keeping_bytes_under(prefixes: Vec<String>) -> NameHistory {
        NameHistory { keep_bytes_under: prefixes, ..NameHistory::default() }
    }

    /// The bytes a kept name held, by their hash.
    pub fn bytes_of(&self, hash: &Hash32) -> Option<&Bytes> {
        self.bytes.get(hash)
    }

    /// Records that the store changed `key` at `at`; `bytes` is what it holds after
    /// (`None` for a delete).
    pub fn record(&mut self, at: Instant, key: &str, change: NameChange, bytes: Option<&[u8]>) {
        self.record_held(at, key, change, bytes.map(Bytes::copy_from_slice).as_ref());
    }

    /// [`NameHistory::record`] with the store's own `Bytes`, kept (not copied) as what the
    /// name holds.
    pub fn record_held(&mut self, at: Instant, key: &str, change: NameChange, bytes: Option<&Bytes>) {
        let keeps = self.keep_bytes_under.iter().any(|p| key.starts_with(p.as_str()));
        let hashes = keeps || self.keep_bytes_under.is_empty();
        let log = match self.by_name.get_mut(key) {
            Some(log) => log,
            None => self.by_name.entry(key.to_owned()).or_default(),
        };
        let kept_bytes = match (bytes, &log.held) {
            (Some(after), Some(before)) => after == before,
            _ => false,
        };
        let event = NameEvent {
            at,
            change,
            bytes_hash: bytes.filter(|_| hashes).map(|b| Hash32::of(b)),
            size: bytes.map_or(0, |b| b.len() as u64),
            kept_bytes,
        };
        if let (Some(b), Some(h)) = (bytes, event.bytes_hash) {
            if keeps {
                self.bytes.entry(h).or_insert_with(|| b.clone());
            }
        }
        log.held = bytes.cloned();
        let events = &mut log.events;
        let before = events.last().copied();
        let present = before.is_some_and(|e| e.change != NameChange::Deleted);
        let coherent = match change {
            NameChange::Created => !present,
            NameChange::Rewritten | NameChange::Deleted => present,
        } && before.is_none_or(|e| e.at <= at);
        if !coherent {
            self.incoherent.push((key.to_owned(), event));
        }
        let size_before = if present { before.map_or(0, |e| e.size) } else { 0 };
        match change {
            NameChange::Created => self.objects_now += 1,
            NameChange::Rewritten => {}
            NameChange::Deleted => self.objects_now = self.objects_now.saturating_sub(u64::from(present)),
        }
        self.bytes_now = self.bytes_now.saturating_sub(size_before) + event.size;
        self.objects_max = self.objects_max.max(self.objects_now);
        self.bytes_max = self.bytes_max.max(self.bytes_now);
        events.push(event);
    }

    /// Every name ever mutated, in key order, with its events in order.
    pub fn names(&self) -> impl Iterator<Item = (&str, &[NameEvent])> + '_ {
        self.by_name.iter().map(|(k, v)| (k.as_str(), v.events.as_slice()))
    }

    /// Every name ever mutated, in key order, with its events in order and the bytes it
    /// holds after the last of them (`None` once deleted).
    pub fn names_held(&self) -> impl Iterator<Item = (&str, &[NameEvent], Option<&Bytes>)> + '_ {
        self.by_name.iter().map(|(k, v)| (k.as_str(), v.events.as_slice(), v.held.as_ref()))
    }

    /// One name's events in order (empty if it was never written).
    pub fn events(&self, key: &str) -> &[NameEvent] {
        self.by_name.get(key).map_or(&[], |log| log.events.as_slice())
    }

    /// The event that made what `key` held at `at` (inclusive), if it held anything.
    pub fn held_at(&self, key: &str, at: Instant) -> Option<&NameEvent> {
        let events = self.events(key);
        let i = events.partition_point(|e| e.at <= at);
        events[..i].last().filter(|e| e.change != NameChange::Deleted)
    }

    /// Objects the bucket holds now.
    pub fn objects_now(&self) -> u64 {
        self.objects_now
    }

    /// Bytes the bucket holds now.
    pub fn bytes_now(&self) -> u64 {
        self.bytes_now
    }

    /// The most objects the bucket held at any instant.
    pub fn objects_max(&self) -> u64 {
        self.objects_max
    }

    /// The most bytes the bucket held at any instant.
    pub fn bytes_max(&self) -> u64 {
        self.bytes_max
    }

    /// Mutations that did not fit the name's history (see the field).
    pub fn incoherent(&self) -> &[(String, NameEvent)] {
        &self.incoherent
    }
}
