//! The simulated GCS behind `object_store`'s `ObjectStore` trait, so that the production
//! adapter (`slotlog::ObjectStoreBlobs`) and object_store's own integration suite can run
//! against the very model the simulation uses.
//!
//! Owns only the translation. Every call locks the store, moves a virtual clock forward by
//! a fixed step, submits the equivalent [`BlobOp`]s to [`SimGcs`] and applies them at once
//! (there is no latency to wait for: the facade answers immediately). The simulation
//! crates do not depend on object_store; this crate does.
//!
//! * Generation and ETag: an object's ETag is its generation in quotes (`"7"`); no
//!   `version` is reported (the model keeps no old generations, so a versioned read could
//!   not be answered). Conditional updates and the [`ConditionalDelete`] hook parse the
//!   number back out of the ETag.
//! * The clock steps one second per call by default, so GCS's one-update-per-second rule
//!   ([`slotlog_sim::gcs::objects::NAME_UPDATE_INTERVAL`]) never refuses a caller that
//!   is not racing; [`SimStore::with_step_us`] makes it bite.
//! * Unconditional writes and deletes (`PutMode::Overwrite`, `delete`, copies), which the
//!   model does not have, are a read of the current generation and a conditional write,
//!   under the one lock, so they are atomic.
//! * Faults ([`SimStore::with_config`]): a planned 429 or 5xx is an error whether or not it
//!   applied; a planned timeout is an `HttpError` of kind `Timeout`, and the operation
//!   applies if the plan says it does (at once, not late).
//! * Not supported: attributes (`NotImplemented`), versioned reads (`NotFound` unless the
//!   version is the current generation).

use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures_util::stream::{self, BoxStream, StreamExt};
use object_store::client::{HttpError, HttpErrorKind};
use object_store::list::{PaginatedListOptions, PaginatedListResult, PaginatedListStore};
use object_store::path::Path;
use object_store::{
    CopyMode, CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result, UploadPart,
};
use slotlog::object_store_blobs::{ConditionalDelete, CustomBackend, GenerationToken};
use slotlog::{Backend, BlobFuture};
use slotlog_kernel::blob::{self, BlobError, BlobOp, BlobOutcome, BlobResult, Generation};
use slotlog_kernel::time::Instant;
use slotlog_sim::gcs::objects::LIST_LIMIT_MAX;
use slotlog_sim::gcs::{GcsConfig, PlannedReply, ProfileKind, SimGcs, StoreStats};

const STORE: &str = "SimGcs";
/// One second: see the module docs.
pub const STEP_US_DEFAULT: u64 = 1_000_000;
/// A listing pages through the model at most this many times (a bound, not a limit any
/// test reaches: 1,000 pages of 1,000).
const LIST_PAGES_MAX: usize = 1_000;

struct State {
    gcs: SimGcs,
    clock_us: u64,
    step_us: u64,
}

impl State {
    /// Submit `op` at the next instant and apply it at once if the plan says it applies.
    fn run(&mut self, op: &BlobOp) -> BlobResult {
        self.clock_us += self.step_us;
        let now = Instant::from_micros(self.clock_us);
        let plan = self.gcs.submit(now, op);
        let applied = plan.apply_at.map(|_| self.gcs.apply(now, op));
        match (plan.reply, applied) {
            (PlannedReply::Applied, Some(result)) => result,
            (PlannedReply::Applied, None) => unreachable!("an applied reply has an apply instant"),
            (PlannedReply::Fault(error), _) => Err(error),
        }
    }

    fn current(&mut self, key: &str) -> std::result::Result<Option<blob::ObjectMeta>, BlobError> {
        match self.run(&BlobOp::Stat { key: key.to_string() }) {
            Ok(BlobOutcome::Stat(meta)) => Ok(Some(meta)),
            Err(BlobError::NotFound) => Ok(None),
            Err(e) => Err(e),
            Ok(other) => unreachable!("stat answered {other:?}"),
        }
    }

    /// Create, or replace whatever is there (the model's writes are all conditional).
    fn overwrite(&mut self, key: &str, bytes: Bytes) -> BlobResult {
        match self.current(key)? {
            None => self.run(&BlobOp::Create { key: key.to_string(), bytes }),
            Some(meta) => {
                self.run(&BlobOp::Rewrite { key: key.to_string(), bytes, if_generation: meta.generation })
            }
        }
    }

    /// Every key under the string prefix, strictly after `start_after`, paging the model.
    fn list_all(
        &mut self,
        prefix: &str,
        start_after: Option<String>,
    ) -> std::result::Result<Vec<blob::ObjectMeta>, BlobError> {
        let mut entries = Vec::new();
        let mut after = start_after;
        for _ in 0..LIST_PAGES_MAX {
            let op = BlobOp::List {
                prefix: prefix.to_string(),
                start_after: after.clone(),
                limit: LIST_LIMIT_MAX,
            };
            match self.run(&op)? {
                BlobOutcome::Listed { entries: page, more } => {
                    after = page.last().map(|m| m.key.clone()).or(after);
                    entries.extend(page);
                    if !more {
                        return Ok(entries);
                    }
                }
                other => unreachable!("list answered {other:?}"),
            }
        }
        panic!("listing {prefix:?} took more than {LIST_PAGES_MAX} pages");
    }
}

/// The simulated GCS as an `ObjectStore`.
#[derive(Clone)]
pub struct SimStore {
    state: Arc<Mutex<State>>,
}

impl fmt::Debug for SimStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SimStore")
    }
}

impl fmt::Display for SimStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SimStore")
    }
}

impl SimStore {
    /// The fast profile, no faults, no envelope.
    pub fn new(seed: u64) -> SimStore {
        SimStore::with_config(GcsConfig::of(ProfileKind::Fast), seed)
    }

    pub fn with_config(config: GcsConfig, seed: u64) -> SimStore {
        let state = State { gcs: SimGcs::new(config, seed), clock_us: 0, step_us: STEP_US_DEFAULT };
        SimStore { state: Arc::new(Mutex::new(state)) }
    }

    /// The virtual clock's step per call, microseconds (at least 1).
    pub fn with_step_us(self, step_us: u64) -> SimStore {
        assert!(step_us > 0, "the clock must move");
        self.state.lock().unwrap().step_us = step_us;
        self
    }

    pub fn stats(&self) -> StoreStats {
        *self.state.lock().unwrap().gcs.stats()
    }

    /// How `slotlog::ObjectStoreBlobs` should treat this store: ETag generations, sorted
    /// listings, and the model's own conditional delete.
    pub fn backend(&self) -> Backend {
        Backend::Custom(CustomBackend {
            name: "sim-gcs",
            token: GenerationToken::ETag,
            lists_sorted: true,
            conditional_delete: Some(Arc::new(self.clone())),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("a test panicked holding the store")
    }
}

fn e_tag(generation: &Generation) -> String {
    format!("\"{}\"", generation.0)
}

/// The generation an ETag (or a bare number) names.
fn generation_of(token: &str) -> Option<Generation> {
    let number: u64 = token.trim_matches('"').parse().ok()?;
    Some(Generation::from(number))
}

fn to_meta(meta: &blob::ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        location: Path::parse(&meta.key).expect("keys are written through paths"),
        last_modified: timestamp(meta.created_at_us),
        size: meta.size,
        e_tag: Some(e_tag(&meta.generation)),
        version: None,
    }
}

fn timestamp(us: u64) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(us as i64).expect("virtual time fits")
}

/// The answer as GCS gives it over HTTP through the driver's `DatedConnector`: the
/// response's `Date`, the second the write landed in.
fn put_result(meta: &blob::Written) -> PutResult {
    let mut extensions = object_store::Extensions::default();
    if let Some(time) = meta.time {
        extensions.insert(slotlog::AnsweredAt(blob::WriteTime::date_of(time.reached_us()).reached_us()));
    }
    PutResult { e_tag: Some(e_tag(&meta.generation)), version: None, extensions }
}

/// The model's error as object_store reports the equivalent HTTP failure.
fn to_error(error: BlobError, path: &str) -> object_store::Error {
    let path = path.to_string();
    let source = |text: &str| -> Box<dyn std::error::Error + Send + Sync> { text.to_string().into() };
    match error {
        BlobError::NotFound => object_store::Error::NotFound { path, source: source("no such object") },
        BlobError::AlreadyExists => {
            object_store::Error::AlreadyExists { path, source: source("generation match 0 failed") }
        }
        BlobError::PreconditionFailed => {
            object_store::Error::Precondition { path, source: source("generation mismatch") }
        }
        // The wording object_store uses for a refused request, which the adapter reads.
        BlobError::Throttled => object_store::Error::Generic {
            store: STORE,
            source: source("Server returned non-2xx status code: 429 Too Many Requests: rate limit"),
        },
        BlobError::Unavailable => object_store::Error::Generic {
            store: STORE,
            source: source("Server returned non-2xx status code: 503 Service Unavailable: backend error"),
        },
        BlobError::Timeout => object_store::Error::Generic {
            store: STORE,
            source: Box::new(HttpError::new(
                HttpErrorKind::Timeout,
                std::io::Error::new(std::io::ErrorKind::TimedOut, "simulated client timeout"),
            )),
        },
        BlobError::Unsupported => {
            object_store::Error::NotSupported { source: source("not supported by the model") }
        }
        // A kind added to the kernel's contract later: what object_store says of the unknown.
        other => object_store::Error::Generic { store: STORE, source: source(&other.to_string()) },
    }
}

fn written(result: BlobResult, path: &str) -> Result<PutResult> {
    match result {
        Ok(BlobOutcome::Created(meta) | BlobOutcome::Rewritten(meta)) => Ok(put_result(&meta)),
        Ok(other) => unreachable!("a write answered {other:?}"),
        Err(e) => Err(to_error(e, path)),
    }
}

/// The string prefix of everything strictly under `prefix` (object_store lists by path
/// segment: `a` lists `a/...`, never `ab`).
fn child_prefix(prefix: Option<&Path>) -> String {
    match prefix.map(|p| p.as_ref()).filter(|p| !p.is_empty()) {
        Some(p) => format!("{p}/"),
        None => String::new(),
    }
}

#[async_trait]
impl ObjectStore for SimStore {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        if !opts.attributes.is_empty() {
            return Err(object_store::Error::NotImplemented {
                operation: "`put_opts` with attributes".into(),
                implementer: self.to_string(),
            });
        }
        let key = location.as_ref();
        let bytes = Bytes::from(payload);
        let mut state = self.lock();
        let result = match opts.mode {
            PutMode::Create => state.run(&BlobOp::Create { key: key.to_string(), bytes }),
            PutMode::Overwrite => state.overwrite(key, bytes),
            PutMode::Update(version) => {
                let token =
                    version.version.or(version.e_tag).ok_or_else(|| object_store::Error::Generic {
                        store: STORE,
                        source: "an update needs an ETag or a version".into(),
                    })?;
                let Some(if_generation) = generation_of(&token) else {
                    return Err(to_error(BlobError::PreconditionFailed, key));
                };
                match state.run(&BlobOp::Rewrite { key: key.to_string(), bytes, if_generation }) {
                    // object_store reports an update of a missing object as a precondition.
                    Err(BlobError::NotFound) => Err(BlobError::PreconditionFailed),
                    other => other,
                }
            }
        };
        written(result, key)
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        if !opts.attributes.is_empty() {
            return Err(object_store::Error::NotImplemented {
                operation: "multipart upload with attributes".into(),
                implementer: self.to_string(),
            });
        }
        Ok(Box::new(Upload { store: self.clone(), location: location.clone(), parts: Vec::new() }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let key = location.as_ref();
        // `head` is a metadata read (GCS's and the model's own kind), not a download.
        let op = if options.head {
            BlobOp::Stat { key: key.to_string() }
        } else {
            BlobOp::Get { key: key.to_string() }
        };
        let (meta, bytes) = match self.lock().run(&op) {
            Ok(BlobOutcome::Got { meta, bytes }) => (meta, bytes),
            Ok(BlobOutcome::Stat(meta)) => (meta, Bytes::new()),
            Ok(other) => unreachable!("get answered {other:?}"),
            Err(e) => return Err(to_error(e, key)),
        };
        if let Some(version) = &options.version {
            if generation_of(version).as_ref() != Some(&meta.generation) {
                return Err(to_error(BlobError::NotFound, key));
            }
        }
        let meta = to_meta(&meta);
        options.check_preconditions(&meta)?;
        let range: Range<u64> = match &options.range {
            Some(range) => range
                .as_range(meta.size)
                .map_err(|e| object_store::Error::Generic { store: STORE, source: Box::new(e) })?,
            None => 0..meta.size,
        };
        let data = if options.head { bytes } else { bytes.slice(range.start as usize..range.end as usize) };
        Ok(GetResult {
            payload: GetResultPayload::Stream(stream::once(async move { Ok(data) }).boxed()),
            meta,
            range,
            attributes: Default::default(),
            extensions: Default::default(),
        })
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        let store = self.clone();
        locations
            .map(move |location| {
                let location = location?;
                let key = location.as_ref();
                let mut state = store.lock();
                let result = match state.current(key) {
                    Ok(Some(meta)) => {
                        state.run(&BlobOp::Delete { key: key.to_string(), if_generation: meta.generation })
                    }
                    Ok(None) => Err(BlobError::NotFound),
                    Err(e) => Err(e),
                };
                match result {
                    Ok(_) => Ok(location),
                    Err(e) => Err(to_error(e, key)),
                }
            })
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let listed = self.lock().list_all(&child_prefix(prefix), None);
        listing_stream(listed)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        // The model's start_after is exclusive: the offset itself is never listed.
        let listed = self.lock().list_all(&child_prefix(prefix), Some(offset.to_string()));
        listing_stream(listed)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let base = child_prefix(prefix);
        let listed = self.lock().list_all(&base, None).map_err(|e| to_error(e, &base))?;
        Ok(group_by_delimiter(&base, listed, "/"))
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        let mut state = self.lock();
        let bytes = match state.run(&BlobOp::Get { key: from.to_string() }) {
            Ok(BlobOutcome::Got { bytes, .. }) => bytes,
            Ok(other) => unreachable!("get answered {other:?}"),
            Err(e) => return Err(to_error(e, from.as_ref())),
        };
        let result = match options.mode {
            CopyMode::Overwrite => state.overwrite(to.as_ref(), bytes),
            CopyMode::Create => state.run(&BlobOp::Create { key: to.to_string(), bytes }),
        };
        written(result, to.as_ref()).map(|_| ())
    }
}

fn listing_stream(
    listed: std::result::Result<Vec<blob::ObjectMeta>, BlobError>,
) -> BoxStream<'static, Result<ObjectMeta>> {
    match listed {
        Ok(entries) => stream::iter(entries.iter().map(to_meta).map(Ok).collect::<Vec<_>>()).boxed(),
        Err(e) => stream::once(async move { Err(to_error(e, "")) }).boxed(),
    }
}

/// Objects directly under `base`, and the common prefixes of the rest.
fn group_by_delimiter(base: &str, listed: Vec<blob::ObjectMeta>, delimiter: &str) -> ListResult {
    let mut objects = Vec::new();
    let mut common_prefixes: Vec<Path> = Vec::new();
    for meta in listed {
        let rest = &meta.key[base.len()..];
        match rest.find(delimiter) {
            Some(at) => {
                let dir = Path::parse(&meta.key[..base.len() + at]).expect("a prefix of a path");
                if common_prefixes.last() != Some(&dir) {
                    common_prefixes.push(dir);
                }
            }
            None => objects.push(to_meta(&meta)),
        }
    }
    ListResult { common_prefixes, objects, extensions: Default::default() }
}

#[async_trait]
impl PaginatedListStore for SimStore {
    /// The model's own paging: the page token is the last key of the page. With a
    /// delimiter the whole listing is grouped in one page.
    async fn list_paginated(
        &self,
        prefix: Option<&str>,
        opts: PaginatedListOptions,
    ) -> Result<PaginatedListResult> {
        let prefix = prefix.unwrap_or("");
        let mut state = self.lock();
        let after = match (opts.page_token, opts.offset) {
            (Some(token), Some(offset)) => Some(token.max(offset)),
            (token, offset) => token.or(offset),
        };
        if let Some(delimiter) = &opts.delimiter {
            let listed = state.list_all(prefix, after).map_err(|e| to_error(e, prefix))?;
            return Ok(PaginatedListResult {
                result: group_by_delimiter(prefix, listed, delimiter),
                page_token: None,
            });
        }
        let limit = opts.max_keys.map_or(LIST_LIMIT_MAX, |m| (m as u32).clamp(1, LIST_LIMIT_MAX));
        let op = BlobOp::List { prefix: prefix.to_string(), start_after: after, limit };
        match state.run(&op) {
            Ok(BlobOutcome::Listed { entries, more }) => {
                let page_token = if more { entries.last().map(|m| m.key.clone()) } else { None };
                let objects = entries.iter().map(to_meta).collect();
                Ok(PaginatedListResult {
                    result: ListResult {
                        common_prefixes: Vec::new(),
                        objects,
                        extensions: Default::default(),
                    },
                    page_token,
                })
            }
            Ok(other) => unreachable!("list answered {other:?}"),
            Err(e) => Err(to_error(e, prefix)),
        }
    }
}

/// A multipart upload: parts are held here and written whole on completion, so nothing
/// is visible before it (as on GCS).
struct Upload {
    store: SimStore,
    location: Path,
    parts: Vec<PutPayload>,
}

impl fmt::Debug for Upload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upload").field("location", &self.location).field("parts", &self.parts.len()).finish()
    }
}

#[async_trait]
impl MultipartUpload for Upload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        self.parts.push(data);
        Box::pin(async { Ok(()) })
    }

    async fn complete(&mut self) -> Result<PutResult> {
        let mut buf = Vec::with_capacity(self.parts.iter().map(|p| p.content_length()).sum());
        for part in self.parts.drain(..) {
            for chunk in part.iter() {
                buf.extend_from_slice(chunk);
            }
        }
        let key = self.location.as_ref();
        let result = self.store.lock().overwrite(key, Bytes::from(buf));
        written(result, key)
    }

    async fn abort(&mut self) -> Result<()> {
        self.parts.clear();
        Ok(())
    }
}

impl ConditionalDelete for SimStore {
    fn delete_if_generation(&self, key: String, generation: Generation) -> BlobFuture {
        let store = self.clone();
        Box::pin(async move {
            let Some(if_generation) = generation_of(&generation.0) else {
                return Err(BlobError::PreconditionFailed);
            };
            store.lock().run(&BlobOp::Delete { key, if_generation })
        })
    }
}
