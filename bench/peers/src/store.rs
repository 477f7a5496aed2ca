//! The one store every system writes through: `ThrottledStore(InMemory)` with a latency
//! shape, wrapped in a counter of calls by kind so a row can say what a write cost. A
//! write answers with its `Date`, as S3, GCS and Azure do over HTTP and as slotlog's
//! driver keeps it there (`slotlog::AnsweredAt`, SPEC 10.15): the in-memory store's clock
//! is this machine's, so the second the put returned is the store's own. The other
//! systems ignore it.

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::{BoxStream, StreamExt};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::throttle::{ThrottleConfig, ThrottledStore};
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMode,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};
use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A latency shape: what each call waits before it reaches the in-memory store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Shape {
    /// Puts 40 ms (every put: create-if-absent, conditional and plain); reads and
    /// listings free.
    Put40,
    /// GCS-shaped: puts 40 ms, gets and heads 25 ms, listings 30 ms.
    Gcs,
}

impl Shape {
    pub fn name(self) -> &'static str {
        match self {
            Shape::Put40 => "put40",
            Shape::Gcs => "gcs",
        }
    }

    pub fn put_ms(self) -> u64 {
        40
    }

    pub fn get_ms(self) -> u64 {
        match self {
            Shape::Put40 => 0,
            Shape::Gcs => 25,
        }
    }

    pub fn list_ms(self) -> u64 {
        match self {
            Shape::Put40 => 0,
            Shape::Gcs => 30,
        }
    }

    pub fn throttle(self) -> ThrottleConfig {
        ThrottleConfig {
            wait_put_per_call: Duration::from_millis(self.put_ms()),
            wait_get_per_call: Duration::from_millis(self.get_ms()),
            wait_list_per_call: Duration::from_millis(self.list_ms()),
            wait_list_with_delimiter_per_call: Duration::from_millis(self.list_ms()),
            ..ThrottleConfig::default()
        }
    }
}

/// A fresh throttled in-memory store for one run, behind the call counter.
pub fn fresh(shape: Shape) -> (Arc<dyn ObjectStore>, Arc<Calls>) {
    let calls = Arc::new(Calls::default());
    let store =
        Counting { inner: ThrottledStore::new(InMemory::new(), shape.throttle()), calls: calls.clone() };
    (Arc::new(store), calls)
}

/// Store calls by kind, counted as they are sent.
#[derive(Default, Debug)]
pub struct Calls {
    pub create: AtomicU64,
    pub update: AtomicU64,
    pub put: AtomicU64,
    pub get: AtomicU64,
    pub head: AtomicU64,
    pub list: AtomicU64,
    pub delete: AtomicU64,
}

/// A copy of [`Calls`] at one moment.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct CallCounts {
    pub create: u64,
    pub update: u64,
    pub put: u64,
    pub get: u64,
    pub head: u64,
    pub list: u64,
    pub delete: u64,
}

impl Calls {
    pub fn snapshot(&self) -> CallCounts {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        CallCounts {
            create: load(&self.create),
            update: load(&self.update),
            put: load(&self.put),
            get: load(&self.get),
            head: load(&self.head),
            list: load(&self.list),
            delete: load(&self.delete),
        }
    }
}

impl CallCounts {
    /// The calls made between `earlier` and `self`.
    pub fn since(self, earlier: CallCounts) -> CallCounts {
        CallCounts {
            create: self.create - earlier.create,
            update: self.update - earlier.update,
            put: self.put - earlier.put,
            get: self.get - earlier.get,
            head: self.head - earlier.head,
            list: self.list - earlier.list,
            delete: self.delete - earlier.delete,
        }
    }
}

/// The HTTP `Date` of an answer sent now: the second, in microseconds.
fn answered_now() -> slotlog::AnsweredAt {
    let us = SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_micros() as u64;
    slotlog::AnsweredAt(us - us % 1_000_000)
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

#[derive(Debug)]
struct Counting<T> {
    inner: T,
    calls: Arc<Calls>,
}

impl<T: fmt::Display> fmt::Display for Counting<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Counting({})", self.inner)
    }
}

#[async_trait]
impl<T: ObjectStore> ObjectStore for Counting<T> {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        bump(match opts.mode {
            PutMode::Create => &self.calls.create,
            PutMode::Update(_) => &self.calls.update,
            PutMode::Overwrite => &self.calls.put,
        });
        let mut put = self.inner.put_opts(location, payload, opts).await?;
        put.extensions.insert(answered_now());
        Ok(put)
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        bump(&self.calls.put);
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        bump(if options.head { &self.calls.head } else { &self.calls.get });
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        bump(&self.calls.get);
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        let calls = self.calls.clone();
        let counted = locations.inspect(move |_| bump(&calls.delete)).boxed();
        self.inner.delete_stream(counted)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        bump(&self.calls.list);
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        bump(&self.calls.list);
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        bump(&self.calls.list);
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        bump(&self.calls.put);
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        bump(&self.calls.put);
        self.inner.rename_opts(from, to, options).await
    }
}
