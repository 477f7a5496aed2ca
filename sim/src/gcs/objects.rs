//! The bucket's contents and what one operation does to them.
//!
//! Owns the objects, the version tokens and the store's rules ([`StoreRules`]): the
//! per-name mutation limit, how a token is made, and S3's create-racing-delete conflict.
//! Knows nothing of latency or faults: [`Objects::apply`] is the store computing a
//! result at the instant the operation lands.
//!
//! The rules, in the order the store answers them:
//!
//! * Create: the name is taken: `AlreadyExists` (not a write, never limited). Under S3's
//!   rule, a delete of the name that succeeded while this create was in progress:
//!   `Unavailable` (S3's 409 `ConditionalRequestConflict`, which the driver maps so). The
//!   name was mutated less than the interval ago (a delete counts): `Throttled` (429).
//! * Rewrite, delete: the name is absent: `NotFound` (404, on GCS and S3 alike, even
//!   conditioned); the token differs: `PreconditionFailed` (412, not a write, never
//!   limited); the name was mutated less than the interval ago: `Throttled`.
//! * Every successful create and rewrite gets a new token: a generation, strictly
//!   increasing across the bucket ([`VersionTokens::Generation`], GCS), or a hash of the
//!   bytes ([`VersionTokens::Content`], S3's ETag), which an identical rewrite keeps.

use std::collections::BTreeMap;
use std::ops::Bound;

use bytes::Bytes;
use core::fmt;
use core::str::FromStr;
use core::time::Duration;
use slotlog_kernel::blob::{
    BlobError, BlobOp, BlobOutcome, BlobResult, Generation, ObjectMeta, WriteTime, Written,
};
use slotlog_kernel::time::Instant;

use crate::time::micros;

/// GCS allows one write per second to one object name; faster rewrites or deletes get a
/// 429 (GCS docs, "Quotas and limits": "one write per second to the same object name").
pub const NAME_UPDATE_INTERVAL: Duration = Duration::from_secs(1);
/// GCS returns at most 1,000 items per listing page (`maxResults` default and cap).
pub const LIST_LIMIT_MAX: u32 = 1_000;
/// S3 answers 409 to a conditional create when a delete of the same name succeeded while
/// the create was in progress (S3 docs, "conditional writes": "a delete request ...
/// succeeded before the conditional write operation completed"). The store does not see
/// when a request began, so it treats a create landing this soon after a delete of its
/// name as in progress then (assumed: 50 ms, about one create's time at the store).
pub const S3_CREATE_DELETE_RACE: Duration = Duration::from_millis(50);
/// A content token is this many bytes of the BLAKE3 of the object's bytes, in hex and
/// quoted, the shape of an S3 ETag (an MD5, 16 bytes).
const CONTENT_TOKEN_BYTES: usize = 16;

/// How the store makes an object's version token (`ObjectMeta::generation`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum VersionTokens {
    /// A number that changes on every write of any name (GCS generations, Azure ETags).
    #[default]
    Generation,
    /// A hash of the bytes (S3's ETag, moto's too): rewriting the same bytes keeps the
    /// token, so a delete conditioned on the token listed before the rewrite still
    /// succeeds (issue 17).
    Content,
}

impl VersionTokens {
    /// Every mode, in the order `--etag` lists them.
    pub const ALL: [VersionTokens; 2] = [VersionTokens::Generation, VersionTokens::Content];

    /// The mode's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            VersionTokens::Generation => "generation",
            VersionTokens::Content => "content",
        }
    }
}

impl fmt::Display for VersionTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A token mode that is not one of [`VersionTokens::ALL`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownVersionTokens {
    /// The name given.
    pub name: String,
}

impl fmt::Display for UnknownVersionTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown etag mode {:?} (expected content or generation)", self.name)
    }
}

impl std::error::Error for UnknownVersionTokens {}

impl FromStr for VersionTokens {
    type Err = UnknownVersionTokens;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        VersionTokens::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownVersionTokens { name: s.to_owned() })
    }
}

/// The store semantics a profile sets (see the module docs for the order of the checks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreRules {
    /// A create, rewrite or delete of a name mutated less than this long ago gets a 429;
    /// `None`: no per-name limit (S3 documents none).
    pub name_update_interval: Option<Duration>,
    /// What an object's version token is.
    pub tokens: VersionTokens,
    /// S3's 409: a create landing within this long after a delete of its name is refused
    /// `Unavailable` and does not happen; `None` on GCS, which has no such conflict.
    pub create_delete_race: Option<Duration>,
    /// What store time a create or rewrite answers with.
    pub write_times: WriteTimes,
}

/// The store time a write's answer carries (SPEC 10.15, "Where `landed` comes from").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteTimes {
    /// The object's creation time, as GCS's JSON API answers.
    Created,
    /// The whole second the store's clock showed when it answered: the HTTP `Date` the
    /// driver takes from an S3 PUT's response (and from GCS's and Azure's).
    Date,
    /// None: a store whose answer says nothing of its clock (a local directory, a store
    /// of the embedder's own), after which the writer reads the object's metadata.
    Untimed,
}

impl StoreRules {
    /// GCS: one mutation per name per second, generations, no create/delete conflict.
    pub fn gcs() -> Self {
        StoreRules {
            name_update_interval: Some(NAME_UPDATE_INTERVAL),
            tokens: VersionTokens::Generation,
            create_delete_race: None,
            write_times: WriteTimes::Created,
        }
    }

    /// S3: no per-name limit, ETags that hash the content, 409 on a create racing a
    /// delete, writes answered with the response's `Date` only.
    pub fn s3() -> Self {
        StoreRules {
            name_update_interval: None,
            tokens: VersionTokens::Content,
            create_delete_race: Some(S3_CREATE_DELETE_RACE),
            write_times: WriteTimes::Date,
        }
    }

    /// The same rules with writes answered with `write_times`.
    pub fn with_write_times(self, write_times: WriteTimes) -> Self {
        StoreRules { write_times, ..self }
    }

    /// The same rules with version tokens `tokens`.
    pub fn with_tokens(self, tokens: VersionTokens) -> Self {
        StoreRules { tokens, ..self }
    }

    pub(crate) fn validate(&self) {
        // Virtual time is whole µs: a window under 1 µs would be none.
        assert!(
            self.name_update_interval.is_none_or(|i| micros(i) > 0),
            "a per-name interval must be positive"
        );
        assert!(self.create_delete_race.is_none_or(|w| micros(w) > 0), "a race window must be positive");
    }
}

impl Default for StoreRules {
    fn default() -> Self {
        Self::gcs()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Object {
    bytes: Bytes,
    /// The token conditional rewrites and deletes must name.
    version: Generation,
    /// Store time of the write that made this version; also the name's last mutation,
    /// since only a present object can be rewritten or deleted.
    created_at_us: u64,
}

impl Object {
    fn meta(&self, key: &str) -> ObjectMeta {
        ObjectMeta {
            key: key.to_owned(),
            generation: self.version.clone(),
            created_at_us: self.created_at_us,
            size: self.bytes.len() as u64,
        }
    }

    /// The answer to the write that made this version, with its time as `rules` say.
    fn written(&self, key: &str, rules: StoreRules) -> Written {
        let mut written = Written::from(self.meta(key));
        written.time = match rules.write_times {
            WriteTimes::Created => written.time,
            WriteTimes::Date => Some(WriteTime::date_of(self.created_at_us)),
            WriteTimes::Untimed => None,
        };
        written
    }
}

/// Every object in the bucket, in key order.
#[derive(Clone, Debug, Default)]
pub struct Objects {
    rules: StoreRules,
    by_key: BTreeMap<String, Object>,
    /// When each absent name was last deleted: a create counts against the per-name
    /// limit and races deletes. Only names deleted within the longer of the two windows
    /// matter; older entries are dropped as the map is pruned.
    deleted_at_us: BTreeMap<String, u64>,
    /// The latest delete, for pruning `deleted_at_us`.
    deleted_latest_us: u64,
    /// Prune `deleted_at_us` when it reaches this many entries (0: not yet set).
    deleted_prune_at: usize,
    /// The last generation handed out; strictly increasing across all names.
    generation_last: u64,
}

impl Objects {
    /// A bucket with GCS's rules.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty bucket under `rules`.
    pub fn with_rules(rules: StoreRules) -> Self {
        rules.validate();
        Objects { rules, ..Self::default() }
    }

    /// The bucket's rules.
    pub fn rules(&self) -> &StoreRules {
        &self.rules
    }

    /// Objects in the bucket.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Whether the bucket holds nothing.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// One object's bytes and metadata.
    pub fn get(&self, key: &str) -> Option<(&Bytes, ObjectMeta)> {
        self.by_key.get(key).map(|o| (&o.bytes, o.meta(key)))
    }

    /// The object's size now, zero when absent (a peek for download-time estimates).
    pub fn size_of(&self, key: &str) -> u64 {
        self.by_key.get(key).map_or(0, |o| o.bytes.len() as u64)
    }

    /// Every object in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Bytes, ObjectMeta)> + '_ {
        self.by_key.iter().map(|(k, o)| (k.as_str(), &o.bytes, o.meta(k)))
    }

    /// The objects whose keys start with `prefix`, in key order: key, bytes and creation
    /// time, without building each one's metadata.
    pub fn under<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, &'a Bytes, u64)> + 'a {
        self.by_key
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(move |(k, _)| k.starts_with(prefix))
            .map(|(k, o)| (k.as_str(), &o.bytes, o.created_at_us))
    }

    /// Changes the bytes `key` holds without an operation: what rot at rest does, or
    /// undoing it. No write happened, so the version, the creation time and the size
    /// stay (`bytes` must be as long as what it replaces). False when `key` is absent.
    pub fn replace_at_rest(&mut self, key: &str, bytes: Bytes) -> bool {
        let Some(o) = self.by_key.get_mut(key) else { return false };
        assert_eq!(o.bytes.len(), bytes.len(), "a change at rest keeps the size");
        o.bytes = bytes;
        true
    }

    /// The token for a new write of `bytes`.
    fn next_version(&mut self, bytes: &Bytes) -> Generation {
        self.generation_last += 1;
        match self.rules.tokens {
            VersionTokens::Generation => self.generation_last.into(),
            VersionTokens::Content => content_token(bytes),
        }
    }

    /// Carry out `op` at store time `at`.
    pub fn apply(&mut self, at: Instant, op: &BlobOp) -> BlobResult {
        let at_us = at.as_micros();
        match op {
            BlobOp::Create { key, bytes } => {
                if self.by_key.contains_key(key) {
                    return Err(BlobError::AlreadyExists);
                }
                if let Some(&deleted_us) = self.deleted_at_us.get(key) {
                    let since_us = at_us.saturating_sub(deleted_us);
                    if self.rules.create_delete_race.is_some_and(|w| since_us < micros(w)) {
                        return Err(BlobError::Unavailable);
                    }
                    if self.rules.name_update_interval.is_some_and(|i| since_us < micros(i)) {
                        return Err(BlobError::Throttled);
                    }
                    self.deleted_at_us.remove(key);
                }
                let object =
                    Object { bytes: bytes.clone(), version: self.next_version(bytes), created_at_us: at_us };
                let written = object.written(key, self.rules);
                self.by_key.insert(key.clone(), object);
                Ok(BlobOutcome::Created(written))
            }
            BlobOp::Get { key } => {
                let o = self.by_key.get(key).ok_or(BlobError::NotFound)?;
                Ok(BlobOutcome::Got { meta: o.meta(key), bytes: o.bytes.clone() })
            }
            BlobOp::Stat { key } => {
                let o = self.by_key.get(key).ok_or(BlobError::NotFound)?;
                Ok(BlobOutcome::Stat(o.meta(key)))
            }
            BlobOp::List { prefix, start_after, limit } => {
                Ok(self.list(prefix, start_after.as_deref(), *limit))
            }
            BlobOp::Rewrite { key, bytes, if_generation } => {
                self.check_update(at_us, key, if_generation)?;
                let version = self.next_version(bytes);
                let o = self.by_key.get_mut(key).expect("checked present");
                o.bytes = bytes.clone();
                o.version = version;
                o.created_at_us = at_us;
                Ok(BlobOutcome::Rewritten(o.written(key, self.rules)))
            }
            BlobOp::Delete { key, if_generation } => {
                self.check_update(at_us, key, if_generation)?;
                self.by_key.remove(key);
                self.remember_delete(key, at_us);
                Ok(BlobOutcome::Deleted)
            }
        }
    }

    /// A conditional update's checks, in the order the store answers them: absent, then
    /// the precondition (a mismatch is not a write, so it is not rate limited), then the
    /// per-name rate.
    fn check_update(&self, at_us: u64, key: &str, if_generation: &Generation) -> Result<(), BlobError> {
        let o = self.by_key.get(key).ok_or(BlobError::NotFound)?;
        let matches = match self.rules.tokens {
            // A number compares as a number (the adapter's quoted ETag parses back).
            VersionTokens::Generation => {
                if_generation.as_number().is_some_and(|g| o.version.as_number() == Some(g))
            }
            VersionTokens::Content => *if_generation == o.version,
        };
        if !matches {
            return Err(BlobError::PreconditionFailed);
        }
        if self.rules.name_update_interval.is_some_and(|i| at_us < o.created_at_us.saturating_add(micros(i)))
        {
            return Err(BlobError::Throttled);
        }
        Ok(())
    }

    /// Remembers a delete for the create rules, and forgets deletes too old to matter.
    fn remember_delete(&mut self, key: &str, at_us: u64) {
        let window_us = self
            .rules
            .name_update_interval
            .map_or(0, micros)
            .max(self.rules.create_delete_race.map_or(0, micros));
        if window_us == 0 {
            return;
        }
        self.deleted_at_us.insert(key.to_owned(), at_us);
        self.deleted_latest_us = self.deleted_latest_us.max(at_us);
        // Prune when the map has doubled since the last prune: amortised constant time.
        if self.deleted_at_us.len() >= self.deleted_prune_at.max(DELETED_REMEMBERED_PRUNE_AT) {
            let horizon = self.deleted_latest_us.saturating_sub(window_us);
            self.deleted_at_us.retain(|_, t| *t >= horizon);
            self.deleted_prune_at = 2 * self.deleted_at_us.len();
        }
    }

    fn list(&self, prefix: &str, start_after: Option<&str>, limit: u32) -> BlobOutcome {
        let limit = if limit == 0 { LIST_LIMIT_MAX } else { limit.min(LIST_LIMIT_MAX) } as usize;
        // Keys with one prefix are contiguous in byte order: start at the later of the
        // prefix and `start_after`, stop at the first key outside the prefix.
        let lower = match start_after {
            Some(after) if after >= prefix => Bound::Excluded(after),
            _ => Bound::Included(prefix),
        };
        let mut matches =
            self.by_key.range::<str, _>((lower, Bound::Unbounded)).take_while(|(k, _)| k.starts_with(prefix));
        let entries: Vec<ObjectMeta> = matches.by_ref().take(limit).map(|(k, o)| o.meta(k)).collect();
        let more = matches.next().is_some();
        BlobOutcome::Listed { entries, more }
    }
}

/// Deleted names remembered before the first prune of those past every window.
const DELETED_REMEMBERED_PRUNE_AT: usize = 4_096;

/// S3's ETag shape over the bytes: the same bytes, the same token, under any name.
pub fn content_token(bytes: &[u8]) -> Generation {
    let hash = blake3::hash(bytes);
    let mut hex = String::with_capacity(2 + 2 * CONTENT_TOKEN_BYTES);
    hex.push('"');
    for b in &hash.as_bytes()[..CONTENT_TOKEN_BYTES] {
        hex.push_str(&format!("{b:02x}"));
    }
    hex.push('"');
    Generation(hex)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(key: &str, body: &str) -> BlobOp {
        BlobOp::Create { key: key.into(), bytes: Bytes::copy_from_slice(body.as_bytes()) }
    }

    fn at_ms(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    fn created(r: BlobResult) -> ObjectMeta {
        match r {
            Ok(BlobOutcome::Created(w)) => timed(w),
            other => panic!("expected Created, got {other:?}"),
        }
    }

    fn list(objects: &mut Objects, prefix: &str, after: Option<&str>, limit: u32) -> (Vec<String>, bool) {
        let op = BlobOp::List { prefix: prefix.into(), start_after: after.map(str::to_owned), limit };
        match objects.apply(at_ms(0), &op) {
            Ok(BlobOutcome::Listed { entries, more }) => (entries.into_iter().map(|m| m.key).collect(), more),
            other => panic!("expected Listed, got {other:?}"),
        }
    }

    #[test]
    fn create_if_absent_has_one_winner() {
        let mut objects = Objects::new();
        let results: Vec<BlobResult> =
            (0..10).map(|i| objects.apply(at_ms(i), &create("slot/7", &format!("writer {i}")))).collect();
        let winners = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(winners, 1);
        assert!(results[1..].iter().all(|r| *r == Err(BlobError::AlreadyExists)));
        let (bytes, meta) = objects.get("slot/7").unwrap();
        assert_eq!(&bytes[..], b"writer 0");
        assert_eq!(meta.created_at_us, 0);
        assert_eq!(meta.size, 8);
    }

    #[test]
    fn generations_strictly_increase_across_names() {
        let mut objects = Objects::new();
        let a = created(objects.apply(at_ms(0), &create("a", "1")));
        let b = created(objects.apply(at_ms(1), &create("b", "1")));
        let rw = BlobOp::Rewrite {
            key: "a".into(),
            bytes: Bytes::from_static(b"2"),
            if_generation: a.generation.clone(),
        };
        let Ok(BlobOutcome::Rewritten(a2)) = objects.apply(at_ms(2_000), &rw) else {
            panic!("rewrite failed");
        };
        assert!(a.generation.as_number().unwrap() < b.generation.as_number().unwrap());
        assert!(b.generation.as_number().unwrap() < a2.generation.as_number().unwrap());
        assert_eq!(a2.time, Some(WriteTime::Created(2_000_000)));
    }

    #[test]
    fn reads_of_an_absent_object_are_not_found() {
        let mut objects = Objects::new();
        let get = BlobOp::Get { key: "x".into() };
        let stat = BlobOp::Stat { key: "x".into() };
        assert_eq!(objects.apply(at_ms(0), &get), Err(BlobError::NotFound));
        assert_eq!(objects.apply(at_ms(0), &stat), Err(BlobError::NotFound));
        objects.apply(at_ms(1), &create("x", "hello")).unwrap();
        let Ok(BlobOutcome::Got { meta, bytes }) = objects.apply(at_ms(2), &get) else {
            panic!("get failed");
        };
        assert_eq!(&bytes[..], b"hello");
        assert_eq!(objects.apply(at_ms(2), &stat), Ok(BlobOutcome::Stat(meta)));
    }

    #[test]
    fn list_is_in_byte_order_after_start_after_exclusively_with_limit_and_more() {
        let mut objects = Objects::new();
        for key in ["log/0003", "log/0001", "log/0002", "log/00010", "logz", "a", "log0", "log/"] {
            objects.apply(at_ms(0), &create(key, "")).unwrap();
        }
        // Byte order, prefix only.
        let (keys, more) = list(&mut objects, "log/", None, 0);
        assert_eq!(keys, ["log/", "log/0001", "log/00010", "log/0002", "log/0003"]);
        assert!(!more);
        // start_after is exclusive, whether or not it names an object.
        let (keys, _) = list(&mut objects, "log/", Some("log/0001"), 0);
        assert_eq!(keys, ["log/00010", "log/0002", "log/0003"]);
        let (keys, _) = list(&mut objects, "log/", Some("log/00015"), 0);
        assert_eq!(keys, ["log/0002", "log/0003"]);
        // start_after before the prefix starts at the prefix; after it, lists nothing.
        let (keys, _) = list(&mut objects, "log/", Some("a"), 0);
        assert_eq!(keys.len(), 5);
        let (keys, more) = list(&mut objects, "log/", Some("log0"), 0);
        assert!(keys.is_empty() && !more);
        // limit cuts short and says so; an exact fit says no more.
        let (keys, more) = list(&mut objects, "log/", Some("log/"), 2);
        assert_eq!(keys, ["log/0001", "log/00010"]);
        assert!(more);
        let (keys, more) = list(&mut objects, "log/", Some("log/00010"), 2);
        assert_eq!(keys, ["log/0002", "log/0003"]);
        assert!(!more);
    }

    #[test]
    fn list_limit_zero_means_a_thousand_and_caps_there() {
        let mut objects = Objects::new();
        for i in 0..1_005 {
            objects.apply(at_ms(0), &create(&format!("k/{i:05}"), "")).unwrap();
        }
        for limit in [0, 1_000, 5_000] {
            let (keys, more) = list(&mut objects, "k/", None, limit);
            assert_eq!(keys.len(), 1_000);
            assert!(more);
        }
    }

    #[test]
    fn conditional_rewrite_and_delete_check_presence_then_generation() {
        let mut objects = Objects::new();
        let rw = |g: u64| BlobOp::Rewrite {
            key: "m".into(),
            bytes: Bytes::from_static(b"new"),
            if_generation: g.into(),
        };
        let del = |g: u64| BlobOp::Delete { key: "m".into(), if_generation: g.into() };
        assert_eq!(objects.apply(at_ms(0), &rw(1)), Err(BlobError::NotFound));
        assert_eq!(objects.apply(at_ms(0), &del(1)), Err(BlobError::NotFound));
        let g1 = created(objects.apply(at_ms(0), &create("m", "old"))).generation.as_number().unwrap();
        let later = at_ms(5_000);
        assert_eq!(objects.apply(later, &rw(g1 + 1)), Err(BlobError::PreconditionFailed));
        assert_eq!(objects.apply(later, &del(g1 + 1)), Err(BlobError::PreconditionFailed));
        assert_eq!(&objects.get("m").unwrap().0[..], b"old");
        let Ok(BlobOutcome::Rewritten(m2)) = objects.apply(later, &rw(g1)) else {
            panic!("rewrite at the right generation failed");
        };
        assert_eq!(&objects.get("m").unwrap().0[..], b"new");
        let much_later = at_ms(10_000);
        assert_eq!(objects.apply(much_later, &del(g1)), Err(BlobError::PreconditionFailed));
        assert_eq!(
            objects.apply(much_later, &del(m2.generation.as_number().unwrap())),
            Ok(BlobOutcome::Deleted)
        );
        assert!(objects.get("m").is_none());
        assert_eq!(
            objects.apply(much_later, &del(m2.generation.as_number().unwrap())),
            Err(BlobError::NotFound)
        );
    }

    #[test]
    fn one_update_per_second_per_object_name() {
        let mut objects = Objects::new();
        let g1 = created(objects.apply(at_ms(0), &create("n", "v1"))).generation.as_number().unwrap();
        let rw = |g: u64| BlobOp::Rewrite {
            key: "n".into(),
            bytes: Bytes::from_static(b"v2"),
            if_generation: g.into(),
        };
        // A create counts as a write: a rewrite within the second is refused, unchanged.
        assert_eq!(objects.apply(at_ms(999), &rw(g1)), Err(BlobError::Throttled));
        assert_eq!(objects.get("n").unwrap().1.generation.as_number().unwrap(), g1);
        // Another name is not affected.
        objects.apply(at_ms(999), &create("other", "")).unwrap();
        // At exactly one second it is allowed.
        let Ok(BlobOutcome::Rewritten(m2)) = objects.apply(at_ms(1_000), &rw(g1)) else {
            panic!("rewrite after a second failed");
        };
        // The rewrite restarts the second, for deletes too.
        let del = BlobOp::Delete { key: "n".into(), if_generation: m2.generation.clone() };
        assert_eq!(objects.apply(at_ms(1_500), &del), Err(BlobError::Throttled));
        assert!(objects.get("n").is_some());
        assert_eq!(objects.apply(at_ms(2_000), &del), Ok(BlobOutcome::Deleted));
        // A re-create is a mutation too: not within the second after the delete.
        assert_eq!(objects.apply(at_ms(2_001), &create("n", "v3")), Err(BlobError::Throttled));
        objects.apply(at_ms(3_000), &create("n", "v3")).unwrap();
    }

    fn rewrite(key: &str, body: &str, token: &Generation) -> BlobOp {
        BlobOp::Rewrite {
            key: key.into(),
            bytes: Bytes::copy_from_slice(body.as_bytes()),
            if_generation: token.clone(),
        }
    }

    fn delete(key: &str, token: &Generation) -> BlobOp {
        BlobOp::Delete { key: key.into(), if_generation: token.clone() }
    }

    fn rewritten(r: BlobResult) -> ObjectMeta {
        match r {
            Ok(BlobOutcome::Rewritten(w)) => timed(w),
            other => panic!("expected Rewritten, got {other:?}"),
        }
    }

    /// A write's answer as metadata.
    fn timed(w: Written) -> ObjectMeta {
        // S3 answers a write with only a date; those tests read only the token.
        let created_at_us = w.time.map(WriteTime::reached_us).unwrap_or_default();
        ObjectMeta { key: w.key, generation: w.generation, created_at_us, size: w.size }
    }

    fn listed(objects: &mut Objects, prefix: &str) -> Vec<ObjectMeta> {
        let op = BlobOp::List { prefix: prefix.into(), start_after: None, limit: 0 };
        match objects.apply(at_ms(0), &op) {
            Ok(BlobOutcome::Listed { entries, .. }) => entries,
            other => panic!("expected Listed, got {other:?}"),
        }
    }

    #[test]
    fn a_generation_changes_on_every_write_even_of_the_same_bytes() {
        let mut objects = Objects::with_rules(StoreRules::gcs());
        let first = created(objects.apply(at_ms(0), &create("shard", "same")));
        let second = rewritten(objects.apply(at_ms(1_000), &rewrite("shard", "same", &first.generation)));
        assert_ne!(first.generation, second.generation);
        // The freshen fences the delete a collector conditioned on the listing before it.
        assert_eq!(
            objects.apply(at_ms(3_000), &delete("shard", &first.generation)),
            Err(BlobError::PreconditionFailed)
        );
        assert!(objects.get("shard").is_some());
        assert_eq!(
            objects.apply(at_ms(3_000), &delete("shard", &second.generation)),
            Ok(BlobOutcome::Deleted)
        );
    }

    #[test]
    fn a_content_token_is_kept_by_an_identical_rewrite_and_changed_by_other_bytes() {
        let mut objects = Objects::with_rules(StoreRules::gcs().with_tokens(VersionTokens::Content));
        let first = created(objects.apply(at_ms(0), &create("shard", "same")));
        assert_eq!(first.generation, content_token(b"same"));
        assert_eq!(first.generation.as_number(), None);
        // Another name with the same bytes has the same token (an ETag is the content's).
        assert_eq!(created(objects.apply(at_ms(0), &create("other", "same"))).generation, first.generation);
        let again = rewritten(objects.apply(at_ms(1_000), &rewrite("shard", "same", &first.generation)));
        assert_eq!(again.generation, first.generation);
        assert_eq!(again.created_at_us, 1_000_000, "the rewrite is still a write: a new creation time");
        let changed = rewritten(objects.apply(at_ms(2_000), &rewrite("shard", "new", &again.generation)));
        assert_ne!(changed.generation, first.generation);
        assert_eq!(
            objects.apply(at_ms(3_000), &rewrite("shard", "x", &first.generation)),
            Err(BlobError::PreconditionFailed)
        );
        // A freshen that keeps the bytes does not fence a delete listed before it.
        let back = rewritten(objects.apply(at_ms(4_000), &rewrite("shard", "same", &changed.generation)));
        assert_eq!(back.generation, first.generation);
        assert_eq!(
            objects.apply(at_ms(5_000), &delete("shard", &first.generation)),
            Ok(BlobOutcome::Deleted)
        );
    }

    #[test]
    fn listings_report_each_objects_token_and_creation_time() {
        for tokens in VersionTokens::ALL {
            let mut objects = Objects::with_rules(StoreRules::gcs().with_tokens(tokens));
            let a = created(objects.apply(at_ms(7), &create("p/a", "1")));
            objects.apply(at_ms(8), &create("p/b", "22")).unwrap();
            let b = rewritten(
                objects
                    .apply(at_ms(2_000), &rewrite("p/b", "333", &objects.get("p/b").unwrap().1.generation)),
            );
            let entries = listed(&mut objects, "p/");
            assert_eq!(entries, vec![a.clone(), b.clone()], "{tokens}");
            assert_eq!(
                (entries[0].created_at_us, entries[1].created_at_us, entries[1].size),
                (7_000, 2_000_000, 3)
            );
            assert_eq!(
                objects.apply(at_ms(9), &BlobOp::Stat { key: "p/b".into() }),
                Ok(BlobOutcome::Stat(b))
            );
        }
    }

    #[test]
    fn a_create_into_a_name_deleted_within_the_second_is_throttled() {
        let mut objects = Objects::with_rules(StoreRules::gcs());
        let g = created(objects.apply(at_ms(0), &create("n", "v1"))).generation;
        assert_eq!(objects.apply(at_ms(1_000), &delete("n", &g)), Ok(BlobOutcome::Deleted));
        // Create, rewrite and delete all count: the delete restarts the second.
        assert_eq!(objects.apply(at_ms(1_999), &create("n", "v2")), Err(BlobError::Throttled));
        assert!(objects.get("n").is_none());
        created(objects.apply(at_ms(2_000), &create("n", "v2")));
        // A create of a present name is refused as taken, which is not a write.
        assert_eq!(objects.apply(at_ms(2_001), &create("n", "v3")), Err(BlobError::AlreadyExists));
    }

    #[test]
    fn without_a_per_name_interval_updates_are_never_throttled() {
        let rules = StoreRules { name_update_interval: None, ..StoreRules::gcs() };
        let mut objects = Objects::with_rules(rules);
        let g = created(objects.apply(at_ms(0), &create("n", "v1"))).generation;
        let g = rewritten(objects.apply(at_ms(1), &rewrite("n", "v2", &g))).generation;
        assert_eq!(objects.apply(at_ms(2), &delete("n", &g)), Ok(BlobOutcome::Deleted));
        created(objects.apply(at_ms(3), &create("n", "v3")));
    }

    #[test]
    fn a_write_answers_with_its_time_its_date_or_nothing_as_the_rules_say() {
        let answer = |write_times| {
            let mut objects = Objects::with_rules(StoreRules::gcs().with_write_times(write_times));
            let op = BlobOp::Create { key: "k".into(), bytes: Bytes::from_static(b"x") };
            match objects.apply(Instant::from_micros(7_654_321), &op) {
                Ok(BlobOutcome::Created(w)) => w.time,
                other => panic!("expected Created, got {other:?}"),
            }
        };
        assert_eq!(answer(WriteTimes::Created), Some(WriteTime::Created(7_654_321)));
        assert_eq!(answer(WriteTimes::Date), Some(WriteTime::Answered(7_000_000)), "whole seconds");
        assert_eq!(answer(WriteTimes::Untimed), None);
        assert_eq!(StoreRules::s3().write_times, WriteTimes::Date, "the driver takes S3's Date");
    }

    #[test]
    fn s3_refuses_a_create_racing_a_delete_of_its_name_with_a_conflict() {
        let mut objects = Objects::with_rules(StoreRules::s3());
        let g = created(objects.apply(at_ms(0), &create("shard", "bytes"))).generation;
        assert_eq!(objects.apply(at_ms(10), &delete("shard", &g)), Ok(BlobOutcome::Deleted));
        let window_ms = S3_CREATE_DELETE_RACE.as_millis() as u64;
        // In progress when the delete succeeded: 409, which the driver maps to
        // Unavailable, and the create did not happen.
        assert_eq!(
            objects.apply(at_ms(10 + window_ms - 1), &create("shard", "bytes")),
            Err(BlobError::Unavailable)
        );
        assert!(objects.get("shard").is_none());
        // Other names are not affected; after the window the create goes through.
        created(objects.apply(at_ms(11), &create("shard2", "bytes")));
        created(objects.apply(at_ms(10 + window_ms), &create("shard", "bytes")));
    }

    #[test]
    fn s3_answers_a_conditional_delete_of_a_missing_object_not_found() {
        let mut objects = Objects::with_rules(StoreRules::s3());
        let token = content_token(b"gone");
        assert_eq!(objects.apply(at_ms(0), &delete("never", &token)), Err(BlobError::NotFound));
        created(objects.apply(at_ms(0), &create("gone", "gone")));
        assert_eq!(objects.apply(at_ms(1), &delete("gone", &token)), Ok(BlobOutcome::Deleted));
        assert_eq!(objects.apply(at_ms(2), &delete("gone", &token)), Err(BlobError::NotFound));
        assert_eq!(objects.apply(at_ms(2), &rewrite("gone", "x", &token)), Err(BlobError::NotFound));
    }

    #[test]
    fn remembered_deletes_are_pruned_past_every_window() {
        let mut objects = Objects::with_rules(StoreRules::gcs());
        for i in 0..10_000u64 {
            let key = format!("k/{i}");
            let g = created(objects.apply(at_ms(i * 10), &create(&key, "x"))).generation;
            assert_eq!(objects.apply(at_ms(i * 10 + 1_000), &delete(&key, &g)), Ok(BlobOutcome::Deleted));
        }
        // 10,000 names deleted, a hundred of them within the last second.
        assert!(objects.deleted_at_us.len() < DELETED_REMEMBERED_PRUNE_AT, "{}", objects.deleted_at_us.len());
        assert_eq!(objects.apply(at_ms(99_990 + 1_500), &create("k/9999", "y")), Err(BlobError::Throttled));
    }
}
