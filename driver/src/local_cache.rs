//! A verified local cache of a world's immutable content objects (issue 19): bodies,
//! history and receipt blocks, checkpoint roots, shards and deltas, kept on local disk so
//! that a restart does not download them all again. Off by default
//! ([`WorldConfig::local_cache`](crate::WorldConfig::local_cache)).
//!
//! Only content objects are cached: each is named by the hash of what it holds and never
//! rewritten, so a cached copy is always the right bytes for its name. Slots, the marker
//! and checkpoint objects (which a freshen rewrites and collection deletes) always go to
//! the store, and so do every write, listing and metadata read. A content object that
//! collection has deleted may still be served from the cache to a reader of a checkpoint
//! dropped meanwhile: the bytes it gets are the ones the name promised, as if it had read
//! a moment earlier.
//!
//! Every file is verified on read: it holds a blake3 hash of the key, the object's
//! metadata and its bytes, and one that does not match (a torn write, a flipped bit, a
//! file of another world) is removed and counted, and the call goes to the store. The
//! cache is bounded in bytes: past `bytes_max` the least recently used files go. Files
//! are written to a temporary name and renamed, so a crash leaves no half file under a
//! cached name. One directory serves one world's prefix at a time; a second process on
//! the same directory is not coordinated with (each bounds what it knows of).

use crate::blobs::{BlobFuture, Blobs, ExplainedFuture};
use slotlog_kernel::blob::{BlobOp, BlobOutcome, Generation, ObjectMeta};
use slotlog_kernel::format::Keys;
use slotlog_kernel::hash::Hash32;
use std::collections::{BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Where the cache lives and how large it may grow.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LocalCache {
    /// A directory of the cache's own (made if absent).
    pub dir: PathBuf,
    /// The most bytes of cached objects kept; the least recently used go first.
    pub bytes_max: u64,
}

impl LocalCache {
    /// A cache in `dir` of at most `bytes_max` bytes.
    pub fn new(dir: impl Into<PathBuf>, bytes_max: u64) -> LocalCache {
        LocalCache { dir: dir.into(), bytes_max }
    }
}

/// What a cache did since it was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheStats {
    /// Reads of content objects answered from the cache.
    pub hits: u64,
    /// Reads of content objects that went to the store.
    pub misses: u64,
    /// Objects written into the cache.
    pub stored: u64,
    /// Files that failed verification and were removed.
    pub corrupt: u64,
    /// Files removed to stay within `bytes_max`.
    pub evicted: u64,
    /// Bytes held now.
    pub bytes: u64,
    /// Files held now.
    pub files: u64,
}

/// The first bytes of every cache file: its format, version 1.
const FILE_MAGIC: &[u8; 8] = b"SLCACHE1";

/// A [`Blobs`] that answers reads of content objects from a local cache first.
pub struct CachedBlobs {
    inner: Arc<dyn Blobs>,
    content_prefixes: Vec<String>,
    dir: PathBuf,
    bytes_max: u64,
    index: Arc<Mutex<Index>>,
    counters: Arc<Counters>,
}

#[derive(Default)]
struct Counters {
    hits: AtomicU64,
    misses: AtomicU64,
    stored: AtomicU64,
    corrupt: AtomicU64,
    evicted: AtomicU64,
}

/// Which files the cache holds, their sizes, and the order they were last used in.
#[derive(Default)]
struct Index {
    files: HashMap<String, (u64, u64)>,
    by_use: BTreeSet<(u64, String)>,
    bytes: u64,
    clock: u64,
}

impl Index {
    fn touch(&mut self, name: &str) -> bool {
        let Some((size, used)) = self.files.get(name).copied() else { return false };
        self.clock += 1;
        self.by_use.remove(&(used, name.to_string()));
        self.by_use.insert((self.clock, name.to_string()));
        self.files.insert(name.to_string(), (size, self.clock));
        true
    }

    fn insert(&mut self, name: String, size: u64) {
        self.remove(&name);
        self.clock += 1;
        self.by_use.insert((self.clock, name.clone()));
        self.files.insert(name, (size, self.clock));
        self.bytes += size;
    }

    fn remove(&mut self, name: &str) -> bool {
        let Some((size, used)) = self.files.remove(name) else { return false };
        self.by_use.remove(&(used, name.to_string()));
        self.bytes -= size;
        true
    }

    /// The least recently used files to remove so that `bytes_max` holds.
    fn over(&mut self, bytes_max: u64) -> Vec<String> {
        let mut out = Vec::new();
        while self.bytes > bytes_max {
            let Some((_, name)) = self.by_use.first().cloned() else { break };
            self.remove(&name);
            out.push(name);
        }
        out
    }
}

impl CachedBlobs {
    /// Wraps `inner` for the world under `prefix`, with the cache `cache` describes. Reads
    /// what the directory already holds (sizes only; each file is verified when read).
    pub fn open(inner: Arc<dyn Blobs>, prefix: &str, cache: &LocalCache) -> io::Result<CachedBlobs> {
        std::fs::create_dir_all(&cache.dir)?;
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&cache.dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let meta = entry.metadata()?;
            if !meta.is_file() {
                continue;
            }
            if name.contains('.') {
                // A temporary file a crash left behind.
                let _ = std::fs::remove_file(entry.path());
                continue;
            }
            found.push((meta.modified().ok(), name, meta.len()));
        }
        // Oldest first, so the least recently written go first.
        found.sort();
        let mut index = Index::default();
        for (_, name, size) in found {
            index.insert(name, size);
        }
        let keys = Keys::new(prefix);
        let content_prefixes = vec![
            keys.blobs_prefix(),
            keys.history_prefix(),
            keys.receipts_prefix(),
            keys.roots_prefix(),
            keys.shards_prefix(),
            keys.deltas_prefix(),
        ];
        let cached = CachedBlobs {
            inner,
            content_prefixes,
            dir: cache.dir.clone(),
            bytes_max: cache.bytes_max,
            index: Arc::new(Mutex::new(index)),
            counters: Arc::new(Counters::default()),
        };
        cached.evict();
        Ok(cached)
    }

    /// What the cache did since it was opened, and what it holds.
    pub fn stats(&self) -> CacheStats {
        let index = self.index.lock().expect("the cache index");
        let c = &self.counters;
        CacheStats {
            hits: c.hits.load(Ordering::Relaxed),
            misses: c.misses.load(Ordering::Relaxed),
            stored: c.stored.load(Ordering::Relaxed),
            corrupt: c.corrupt.load(Ordering::Relaxed),
            evicted: c.evicted.load(Ordering::Relaxed),
            bytes: index.bytes,
            files: index.files.len() as u64,
        }
    }

    fn is_content(&self, key: &str) -> bool {
        self.content_prefixes.iter().any(|p| key.starts_with(p.as_str()))
    }

    fn evict(&self) {
        let gone = self.index.lock().expect("the cache index").over(self.bytes_max);
        for name in gone {
            let _ = std::fs::remove_file(self.dir.join(&name));
            self.counters.evicted.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Answers a read of a content object: from the cache when it holds a verified copy,
    /// else from the store, keeping what the store returned.
    fn cached_get(&self, key: String) -> ExplainedFuture {
        let name = Hash32::of(key.as_bytes()).to_hex();
        let path = self.dir.join(&name);
        let held = self.index.lock().expect("the cache index").touch(&name);
        let inner = self.inner.clone();
        let (index, counters, dir, bytes_max) =
            (self.index.clone(), self.counters.clone(), self.dir.clone(), self.bytes_max);
        Box::pin(async move {
            if held {
                let read_key = key.clone();
                let read_path = path.clone();
                let found = tokio::task::spawn_blocking(move || read_file(&read_path, &read_key)).await;
                match found {
                    Ok(Some(outcome)) => {
                        counters.hits.fetch_add(1, Ordering::Relaxed);
                        return Ok(outcome);
                    }
                    _ => {
                        counters.corrupt.fetch_add(1, Ordering::Relaxed);
                        index.lock().expect("the cache index").remove(&name);
                        let _ = std::fs::remove_file(&path);
                    }
                }
            }
            counters.misses.fetch_add(1, Ordering::Relaxed);
            let answer = inner.execute_explained(BlobOp::Get { key: key.clone() }).await;
            if let Ok(BlobOutcome::Got { meta, bytes }) = &answer {
                let file = encode_file(&key, meta, bytes);
                let size = file.len() as u64;
                if size <= bytes_max {
                    let write_path = path.clone();
                    let wrote = tokio::task::spawn_blocking(move || write_file(&write_path, &file)).await;
                    if matches!(wrote, Ok(Ok(()))) {
                        counters.stored.fetch_add(1, Ordering::Relaxed);
                        let gone = {
                            let mut index = index.lock().expect("the cache index");
                            index.insert(name, size);
                            index.over(bytes_max)
                        };
                        for name in gone {
                            let _ = std::fs::remove_file(dir.join(&name));
                            counters.evicted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
            answer
        })
    }
}

impl Blobs for CachedBlobs {
    fn execute(&self, op: BlobOp) -> BlobFuture {
        let call = self.execute_explained(op);
        Box::pin(async move { call.await.map_err(|f| f.error) })
    }

    fn execute_explained(&self, op: BlobOp) -> ExplainedFuture {
        match op {
            BlobOp::Get { key } if self.is_content(&key) => self.cached_get(key),
            op => self.inner.execute_explained(op),
        }
    }

    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn identity(&self) -> Option<String> {
        self.inner.identity()
    }
}

/// A cache file: the magic, then the blake3 hash of everything after it, then the key,
/// the generation, the creation time and the bytes, each length-prefixed.
fn encode_file(key: &str, meta: &ObjectMeta, bytes: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(bytes.len() + key.len() + 64);
    for part in [key.as_bytes(), meta.generation.0.as_bytes()] {
        body.extend_from_slice(&(part.len() as u32).to_le_bytes());
        body.extend_from_slice(part);
    }
    body.extend_from_slice(&meta.created_at_us.to_le_bytes());
    body.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    body.extend_from_slice(bytes);
    let mut file = Vec::with_capacity(body.len() + 40);
    file.extend_from_slice(FILE_MAGIC);
    file.extend_from_slice(&Hash32::of(&body).0);
    file.extend_from_slice(&body);
    file
}

/// The object a cache file holds, if it verifies and holds `key`.
fn decode_file(file: &[u8], key: &str) -> Option<BlobOutcome> {
    let rest = file.strip_prefix(FILE_MAGIC.as_slice())?;
    let (hash, body) = rest.split_at_checked(32)?;
    if Hash32::of(body).0 != hash {
        return None;
    }
    let mut at = body;
    let mut part = || -> Option<&[u8]> {
        let (len, rest) = at.split_at_checked(4)?;
        let len = u32::from_le_bytes(len.try_into().ok()?) as usize;
        let (part, rest) = rest.split_at_checked(len)?;
        at = rest;
        Some(part)
    };
    let stored_key = part()?;
    let generation = String::from_utf8(part()?.to_vec()).ok()?;
    if stored_key != key.as_bytes() {
        return None;
    }
    let (created, rest) = at.split_at_checked(8)?;
    let (len, bytes) = rest.split_at_checked(8)?;
    if u64::from_le_bytes(len.try_into().ok()?) != bytes.len() as u64 {
        return None;
    }
    let meta = ObjectMeta {
        key: key.to_string(),
        generation: Generation(generation),
        created_at_us: u64::from_le_bytes(created.try_into().ok()?),
        size: bytes.len() as u64,
    };
    Some(BlobOutcome::Got { meta, bytes: bytes::Bytes::copy_from_slice(bytes) })
}

fn read_file(path: &Path, key: &str) -> Option<BlobOutcome> {
    decode_file(&std::fs::read(path).ok()?, key)
}

fn write_file(path: &Path, file: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", crate::world::random_u64()));
    std::fs::write(&tmp, file)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use slotlog_kernel::blob::BlobError;
    use std::collections::BTreeMap;
    use std::sync::atomic::AtomicUsize;

    const PREFIX: &str = "worlds/w";

    /// A store in memory that counts the reads it answers.
    #[derive(Default)]
    struct Counted {
        objects: Mutex<BTreeMap<String, bytes::Bytes>>,
        gets: AtomicUsize,
    }

    impl Blobs for Counted {
        fn execute(&self, op: BlobOp) -> BlobFuture {
            let answer = match op {
                BlobOp::Get { key } => {
                    self.gets.fetch_add(1, Ordering::Relaxed);
                    match self.objects.lock().unwrap().get(&key) {
                        Some(bytes) => Ok(BlobOutcome::Got {
                            meta: ObjectMeta {
                                key: key.clone(),
                                generation: Generation::from(7),
                                created_at_us: 42,
                                size: bytes.len() as u64,
                            },
                            bytes: bytes.clone(),
                        }),
                        None => Err(BlobError::NotFound),
                    }
                }
                _ => Err(BlobError::Unsupported),
            };
            Box::pin(async move { answer })
        }

        fn kind(&self) -> &'static str {
            "memory"
        }
    }

    fn store(objects: &[(&str, &[u8])]) -> Arc<Counted> {
        let s = Counted::default();
        for (k, v) in objects {
            s.objects.lock().unwrap().insert(k.to_string(), bytes::Bytes::copy_from_slice(v));
        }
        Arc::new(s)
    }

    fn body_key(n: u8) -> String {
        Keys::new(PREFIX).body(&Hash32::of(&[n]))
    }

    fn get(cache: &CachedBlobs, key: &str) -> Result<BlobOutcome, BlobError> {
        let rt = real_tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(cache.execute(BlobOp::Get { key: key.to_string() }))
    }

    fn bytes_of(outcome: Result<BlobOutcome, BlobError>) -> Vec<u8> {
        match outcome {
            Ok(BlobOutcome::Got { bytes, .. }) => bytes.to_vec(),
            other => panic!("not a read: {other:?}"),
        }
    }

    #[test]
    fn a_content_object_read_twice_goes_to_the_store_once_with_its_metadata_kept() {
        let dir = tempfile::tempdir().unwrap();
        let key = body_key(1);
        let inner = store(&[(&key, b"hello")]);
        let cache = CachedBlobs::open(inner.clone(), PREFIX, &LocalCache::new(dir.path(), 1 << 20)).unwrap();
        let first = get(&cache, &key).unwrap();
        let second = get(&cache, &key).unwrap();
        assert_eq!(first, second, "bytes, generation and creation time come back as the store gave them");
        assert_eq!(inner.gets.load(Ordering::Relaxed), 1);
        let s = cache.stats();
        assert_eq!((s.hits, s.misses, s.stored, s.files), (1, 1, 1, 1));
    }

    #[test]
    fn a_restart_finds_what_the_cache_kept() {
        let dir = tempfile::tempdir().unwrap();
        let key = body_key(2);
        let inner = store(&[(&key, b"kept")]);
        let cache = LocalCache::new(dir.path(), 1 << 20);
        bytes_of(get(&CachedBlobs::open(inner.clone(), PREFIX, &cache).unwrap(), &key));
        let again = CachedBlobs::open(inner.clone(), PREFIX, &cache).unwrap();
        assert_eq!(bytes_of(get(&again, &key)), b"kept");
        assert_eq!(inner.gets.load(Ordering::Relaxed), 1, "the second process read it from disk");
        assert_eq!(again.stats().hits, 1);
    }

    #[test]
    fn a_damaged_or_misplaced_file_is_removed_and_the_store_answers() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (body_key(3), body_key(4));
        let inner = store(&[(&a, b"aaaa"), (&b, b"bbbb")]);
        let config = LocalCache::new(dir.path(), 1 << 20);
        let cache = CachedBlobs::open(inner.clone(), PREFIX, &config).unwrap();
        bytes_of(get(&cache, &a));
        bytes_of(get(&cache, &b));
        let file_of = |k: &str| dir.path().join(Hash32::of(k.as_bytes()).to_hex());
        // A flipped bit in a's file.
        let mut damaged = std::fs::read(file_of(&a)).unwrap();
        *damaged.last_mut().unwrap() ^= 1;
        std::fs::write(file_of(&a), damaged).unwrap();
        let cache = CachedBlobs::open(inner.clone(), PREFIX, &config).unwrap();
        assert_eq!(bytes_of(get(&cache, &a)), b"aaaa");
        // a's file, whole and verified again, under b's name.
        std::fs::copy(file_of(&a), file_of(&b)).unwrap();
        assert_eq!(bytes_of(get(&cache, &b)), b"bbbb", "a's file does not answer for b");
        assert_eq!(cache.stats().corrupt, 2);
        assert_eq!(inner.gets.load(Ordering::Relaxed), 4);
        assert_eq!(bytes_of(get(&cache, &a)), b"aaaa");
        assert_eq!(inner.gets.load(Ordering::Relaxed), 4, "the store's answer was cached again");
    }

    #[test]
    fn slots_checkpoints_and_the_marker_always_go_to_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let keys = Keys::new(PREFIX);
        let names = [keys.slot(1), keys.checkpoint(1), keys.marker()];
        let objects: Vec<(&str, &[u8])> = names.iter().map(|k| (k.as_str(), b"x".as_slice())).collect();
        let inner = store(&objects);
        let cache = CachedBlobs::open(inner.clone(), PREFIX, &LocalCache::new(dir.path(), 1 << 20)).unwrap();
        for k in &names {
            bytes_of(get(&cache, k));
            bytes_of(get(&cache, k));
        }
        assert_eq!(inner.gets.load(Ordering::Relaxed), 6);
        assert_eq!(cache.stats().files, 0);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn the_cache_stays_within_its_bytes_and_keeps_the_most_recently_used() {
        let dir = tempfile::tempdir().unwrap();
        let keys: Vec<String> = (10..20).map(body_key).collect();
        let objects: Vec<(&str, &[u8])> =
            keys.iter().map(|k| (k.as_str(), [7u8; 1_000].as_slice())).collect();
        let inner = store(&objects);
        // Room for three files of about 1,100 bytes each.
        let cache = CachedBlobs::open(inner.clone(), PREFIX, &LocalCache::new(dir.path(), 3_500)).unwrap();
        for k in &keys {
            bytes_of(get(&cache, k));
            bytes_of(get(&cache, &keys[0])); // used after every other read
        }
        let s = cache.stats();
        assert!(s.bytes <= 3_500, "{s:?}");
        assert_eq!(s.files, 3);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
        let before = inner.gets.load(Ordering::Relaxed);
        bytes_of(get(&cache, &keys[0]));
        bytes_of(get(&cache, &keys[9]));
        assert_eq!(inner.gets.load(Ordering::Relaxed), before, "the most recently used are held");
        assert!(s.evicted >= 7);
        // An object larger than the whole cache is answered, not kept.
        let big = body_key(99);
        let inner = store(&[(&big, [1u8; 10_000].as_slice())]);
        let cache = CachedBlobs::open(inner, PREFIX, &LocalCache::new(dir.path(), 3_500)).unwrap();
        assert_eq!(bytes_of(get(&cache, &big)).len(), 10_000);
        assert_eq!(cache.stats().stored, 0);
    }
}
