//! The blob contract the kernel speaks. An embedder maps these operations onto a real
//! object store (or the simulated GCS) and feeds each result back with its [`BlobOpId`].
//!
//! [`BlobOpId`]: crate::ids::BlobOpId

use bytes::Bytes;

/// One operation on the object store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlobOp {
    /// Create `key` only if it is absent (GCS `ifGenerationMatch=0`, S3 `If-None-Match: *`).
    Create {
        /// The object's name.
        key: String,
        /// Its bytes.
        bytes: Bytes,
    },
    /// Read an object whole.
    Get {
        /// The object's name.
        key: String,
    },
    /// Read an object's metadata only.
    Stat {
        /// The object's name.
        key: String,
    },
    /// Keys under `prefix` strictly after `start_after`, in byte order, at most `limit`.
    List {
        /// Keys start with this.
        prefix: String,
        /// Keys strictly after this one (None: from the first).
        start_after: Option<String>,
        /// The most keys to return.
        limit: u32,
    },
    /// Replace an object only if its current generation is `if_generation` (the freshen).
    Rewrite {
        /// The object's name.
        key: String,
        /// The new bytes.
        bytes: Bytes,
        /// The generation the object must still have.
        if_generation: Generation,
    },
    /// Delete an object only if its current generation is `if_generation`.
    Delete {
        /// The object's name.
        key: String,
        /// The generation the object must still have.
        if_generation: Generation,
    },
}

impl BlobOp {
    /// Whether the call changes the store (a create, rewrite or delete): what a
    /// read-only replica never sends.
    pub fn changes_store(&self) -> bool {
        matches!(self, BlobOp::Create { .. } | BlobOp::Rewrite { .. } | BlobOp::Delete { .. })
    }

    /// The key the operation addresses (the prefix for a listing).
    pub fn key(&self) -> &str {
        match self {
            BlobOp::Create { key, .. }
            | BlobOp::Get { key }
            | BlobOp::Stat { key }
            | BlobOp::Rewrite { key, .. }
            | BlobOp::Delete { key, .. } => key,
            BlobOp::List { prefix, .. } => prefix,
        }
    }

    /// Bytes the operation uploads.
    pub fn upload_len(&self) -> usize {
        match self {
            BlobOp::Create { bytes, .. } | BlobOp::Rewrite { bytes, .. } => bytes.len(),
            _ => 0,
        }
    }
}

/// The store's token for one write of one name: a GCS generation, an S3 ETag. Opaque to
/// the kernel, which only hands it back to condition a rewrite or delete.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Generation(pub String);

impl From<u64> for Generation {
    fn from(n: u64) -> Self {
        Generation(n.to_string())
    }
}

impl Generation {
    /// The number, for stores whose generations are numbers (GCS, the simulation).
    pub fn as_number(&self) -> Option<u64> {
        self.0.parse().ok()
    }
}

/// What the store says of one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectMeta {
    /// The object's name.
    pub key: String,
    /// Changes on every write of the name; the fence for conditional rewrites and deletes.
    pub generation: Generation,
    /// Store-side time this generation was written, microseconds on the store's clock.
    pub created_at_us: u64,
    /// Length of the object, in bytes.
    pub size: u64,
}

/// What the store says of a write it has just made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// The object's name.
    pub key: String,
    /// The generation the write made.
    pub generation: Generation,
    /// What the answer tells of the store's clock, when it tells anything (SPEC 10.15).
    /// A backend must not fill it from its own clock.
    pub time: Option<WriteTime>,
    /// Length of the written bytes.
    pub size: u64,
}

impl From<ObjectMeta> for Written {
    /// The write of a store whose answer carries the object's creation time.
    fn from(meta: ObjectMeta) -> Written {
        let ObjectMeta { key, generation, created_at_us, size } = meta;
        Written { key, generation, time: Some(WriteTime::Created(created_at_us)), size }
    }
}

/// The resolution of an HTTP `Date` header: whole seconds.
pub const DATE_RESOLUTION_US: u64 = 1_000_000;

/// The store time a write's answer carries, in microseconds on the store's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteTime {
    /// The object's creation time: GCS's JSON API answers a create with it.
    Created(u64),
    /// The store's clock when it answered, truncated to the second: an HTTP response's
    /// `Date` header, which S3, GCS's XML API and Azure all send. The object was created
    /// before the answer, so before the second after this one.
    Answered(u64),
}

impl WriteTime {
    /// What an HTTP answer sent at store time `us` says in its `Date`: that whole second.
    pub fn date_of(us: u64) -> WriteTime {
        WriteTime::Answered(us - us % DATE_RESOLUTION_US)
    }

    /// The latest the object may have been created: what a check that it did not land
    /// late must judge.
    pub fn created_by_us(self) -> u64 {
        match self {
            WriteTime::Created(us) => us,
            WriteTime::Answered(us) => us.saturating_add(DATE_RESOLUTION_US),
        }
    }

    /// A time the store's clock had reached by its answer: what teaches the store clock,
    /// and what the next slot's base may take (SPEC 10.15).
    pub fn reached_us(self) -> u64 {
        match self {
            WriteTime::Created(us) | WriteTime::Answered(us) => us,
        }
    }
}

/// A successful result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlobOutcome {
    /// A `Create` made the object.
    Created(Written),
    /// A `Get` read the object.
    Got {
        /// Its metadata.
        meta: ObjectMeta,
        /// Its bytes, whole.
        bytes: Bytes,
    },
    /// A `Stat` found the object.
    Stat(ObjectMeta),
    /// Entries in key order; `more` when the limit cut the listing short.
    Listed {
        /// The objects listed.
        entries: Vec<ObjectMeta>,
        /// True when the limit cut the listing short.
        more: bool,
    },
    /// A `Rewrite` replaced the object.
    Rewritten(Written),
    /// A `Delete` removed the object.
    Deleted,
}

/// A failed result. Only [`BlobError::Timeout`] leaves the outcome unknown; the kernel
/// also treats [`BlobError::Unavailable`] on a slot create as possibly applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum BlobError {
    /// A create found the name taken.
    #[error("the name is taken")]
    AlreadyExists,
    /// A conditional rewrite or delete found another generation.
    #[error("another generation holds the name")]
    PreconditionFailed,
    /// The name holds no object (a `Get`, `Stat`, `Rewrite` or `Delete`).
    #[error("no object by that name")]
    NotFound,
    /// 429: the store refused for rate; nothing happened.
    #[error("throttled")]
    Throttled,
    /// 5xx.
    #[error("the store is unavailable")]
    Unavailable,
    /// The caller stopped waiting: the operation may or may not have happened, and may
    /// still happen later.
    #[error("timed out; the outcome is unknown")]
    Timeout,
    /// The backend cannot do this operation at all (a conditional delete on a store
    /// without one). Nothing happened.
    #[error("the backend cannot do this")]
    Unsupported,
}

/// What the store answered for one [`BlobOp`].
pub type BlobResult = Result<BlobOutcome, BlobError>;

impl BlobError {
    /// Worth retrying the same call after a backoff.
    pub fn is_transient(self) -> bool {
        matches!(self, BlobError::Throttled | BlobError::Unavailable | BlobError::Timeout)
    }
}
