//! A store for tests that passes every call through to another, but for what a test
//! changes of it ([`Hooks`]: what a read hands back, or what a listing holds), and the
//! counting of the bytes a tool holds at once that the bound tests make with it.

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::{BoxStream, StreamExt};
use object_store::path::Path as StorePath;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What a test changes of a store; each default passes the call through unchanged.
#[async_trait]
pub trait Hooks: std::fmt::Debug + Send + Sync + 'static {
    /// A read (or a head, with `options.head`) of `location`.
    async fn get_opts(
        &self,
        inner: &Arc<dyn ObjectStore>,
        location: &StorePath,
        options: GetOptions,
    ) -> Result<GetResult> {
        inner.get_opts(location, options).await
    }

    /// What a listing (from the start, or from an offset) hands back.
    fn listed(
        &self,
        listed: BoxStream<'static, Result<ObjectMeta>>,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        listed
    }
}

/// `inner`, changed by `hooks`.
#[derive(Debug)]
pub struct Hooked<H> {
    pub inner: Arc<dyn ObjectStore>,
    pub hooks: H,
}

impl<H: Hooks> Hooked<H> {
    /// `inner` changed by `hooks`, as the tools take a store.
    pub fn store(inner: &Arc<dyn ObjectStore>, hooks: H) -> Arc<dyn ObjectStore> {
        Arc::new(Hooked { inner: inner.clone(), hooks })
    }
}

impl<H: Hooks> std::fmt::Display for Hooked<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}({})", self.hooks, self.inner)
    }
}

#[async_trait]
impl<H: Hooks> ObjectStore for Hooked<H> {
    async fn put_opts(
        &self,
        location: &StorePath,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }
    async fn put_multipart_opts(
        &self,
        location: &StorePath,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }
    async fn get_opts(&self, location: &StorePath, options: GetOptions) -> Result<GetResult> {
        self.hooks.get_opts(&self.inner, location, options).await
    }
    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<StorePath>>,
    ) -> BoxStream<'static, Result<StorePath>> {
        self.inner.delete_stream(locations)
    }
    fn list(&self, prefix: Option<&StorePath>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.hooks.listed(self.inner.list(prefix))
    }
    fn list_with_offset(
        &self,
        prefix: Option<&StorePath>,
        offset: &StorePath,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.hooks.listed(self.inner.list_with_offset(prefix, offset))
    }
    async fn list_with_delimiter(&self, prefix: Option<&StorePath>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }
    async fn copy_opts(&self, from: &StorePath, to: &StorePath, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

/// Bytes handed out and not yet let go, the most there were at once, and the reads.
#[derive(Debug, Default)]
pub struct Tally {
    pub held_bytes: AtomicU64,
    pub held_bytes_max: AtomicU64,
    pub reads: AtomicU64,
}

impl Tally {
    pub fn held_max(&self) -> u64 {
        self.held_bytes_max.load(Ordering::SeqCst)
    }

    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::SeqCst)
    }
}

/// One object's bytes as [`Counting`] hands them out: counted in when made, and out when
/// the last holder lets them go.
struct Counted {
    bytes: Bytes,
    tally: Arc<Tally>,
}

impl Counted {
    fn hand_out(bytes: Bytes, tally: &Arc<Tally>) -> Bytes {
        let len = bytes.len() as u64;
        let held = tally.held_bytes.fetch_add(len, Ordering::SeqCst) + len;
        tally.held_bytes_max.fetch_max(held, Ordering::SeqCst);
        tally.reads.fetch_add(1, Ordering::SeqCst);
        Bytes::from_owner(Counted { bytes, tally: tally.clone() })
    }
}

impl AsRef<[u8]> for Counted {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.tally.held_bytes.fetch_sub(self.bytes.len() as u64, Ordering::SeqCst);
    }
}

/// Counts the bytes of the objects under `prefixes` that callers hold at once (`Tally`).
#[derive(Debug)]
pub struct Counting {
    pub prefixes: Vec<String>,
    pub tally: Arc<Tally>,
}

#[async_trait]
impl Hooks for Counting {
    async fn get_opts(
        &self,
        inner: &Arc<dyn ObjectStore>,
        location: &StorePath,
        options: GetOptions,
    ) -> Result<GetResult> {
        let head = options.head;
        let got = inner.get_opts(location, options).await?;
        if head || !self.prefixes.iter().any(|p| location.as_ref().starts_with(p.as_str())) {
            return Ok(got);
        }
        let (meta, range) = (got.meta.clone(), got.range.clone());
        let (attributes, extensions) = (got.attributes.clone(), got.extensions.clone());
        let counted = Counted::hand_out(got.bytes().await?, &self.tally);
        let payload = GetResultPayload::Stream(futures_util::stream::once(async { Ok(counted) }).boxed());
        Ok(GetResult { payload, meta, range, attributes, extensions })
    }
}

/// A world with bodies of their own (documents too large to ride in their slots), written
/// for `duration_s` by two writers into a fresh local directory named after `name`: its
/// store URL, its prefix there, and the writers' log of acknowledged writes.
pub async fn written_world(name: &str, duration_s: f64) -> (String, String, String) {
    let dir = std::env::temp_dir().join(format!("slotlog-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let url = format!("file://{}", dir.display());
    let log = dir.with_extension("log").to_string_lossy().into_owned();
    let _ = std::fs::remove_file(&log);
    let args = super::writer::WriterArgs {
        url: url.clone(),
        prefix: "w".into(),
        log: log.clone(),
        duration_s,
        writers: 2,
        paths: 10,
        listen: None,
        peers: Vec::new(),
        checkpoint_slots: Some(8),
        health: None,
    };
    assert_eq!(super::writer::run(args).await, Ok(true));
    (url, "w".to_string(), log)
}
