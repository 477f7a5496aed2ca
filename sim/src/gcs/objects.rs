//! The bucket's contents and what one operation does to them.
//!
//! Owns the objects, the generation counter and the one-update-per-second rule. Knows
//! nothing of latency or faults: [`Objects::apply`] is the store computing a result at
//! the instant the operation lands.

use std::collections::BTreeMap;
use std::ops::Bound;

use bytes::Bytes;
use slotlog_kernel::blob::{BlobError, BlobOp, BlobOutcome, BlobResult, Generation, ObjectMeta};
use slotlog_kernel::time::Instant;

/// GCS allows one write per second to one object name; faster rewrites or deletes get a
/// 429 (GCS docs, "Quotas and limits": "one write per second to the same object name").
pub const NAME_UPDATE_INTERVAL_US: u64 = 1_000_000;
/// GCS returns at most 1,000 items per listing page (`maxResults` default and cap).
pub const LIST_LIMIT_MAX: u32 = 1_000;

#[derive(Clone, Debug, PartialEq, Eq)]
struct Object {
    bytes: Bytes,
    generation: u64,
    /// Store time of the write that made this generation; also the name's last write,
    /// since only a present object can be rewritten or deleted.
    created_at_us: u64,
}

impl Object {
    fn meta(&self, key: &str) -> ObjectMeta {
        ObjectMeta {
            key: key.to_owned(),
            generation: self.generation.into(),
            created_at_us: self.created_at_us,
            size: self.bytes.len() as u64,
        }
    }
}

/// Every object in the bucket, in key order.
#[derive(Clone, Debug, Default)]
pub struct Objects {
    by_key: BTreeMap<String, Object>,
    /// The last generation handed out; strictly increasing across all names.
    generation_last: u64,
}

impl Objects {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.by_key.len()
    }

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

    fn next_generation(&mut self) -> u64 {
        self.generation_last += 1;
        self.generation_last
    }

    /// Carry out `op` at store time `at`.
    pub fn apply(&mut self, at: Instant, op: &BlobOp) -> BlobResult {
        let at_us = at.as_micros();
        match op {
            BlobOp::Create { key, bytes } => {
                if self.by_key.contains_key(key) {
                    return Err(BlobError::AlreadyExists);
                }
                let object =
                    Object { bytes: bytes.clone(), generation: self.next_generation(), created_at_us: at_us };
                let meta = object.meta(key);
                self.by_key.insert(key.clone(), object);
                Ok(BlobOutcome::Created(meta))
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
                let generation = self.next_generation();
                let o = self.by_key.get_mut(key).expect("checked present");
                o.bytes = bytes.clone();
                o.generation = generation;
                o.created_at_us = at_us;
                Ok(BlobOutcome::Rewritten(o.meta(key)))
            }
            BlobOp::Delete { key, if_generation } => {
                self.check_update(at_us, key, if_generation)?;
                self.by_key.remove(key);
                Ok(BlobOutcome::Deleted)
            }
        }
    }

    /// A conditional update's checks, in the order the store answers them: absent, then
    /// the precondition (a mismatch is not a write, so it is not rate limited), then the
    /// per-name rate.
    fn check_update(&self, at_us: u64, key: &str, if_generation: &Generation) -> Result<(), BlobError> {
        let o = self.by_key.get(key).ok_or(BlobError::NotFound)?;
        if if_generation.as_number() != Some(o.generation) {
            return Err(BlobError::PreconditionFailed);
        }
        if at_us < o.created_at_us.saturating_add(NAME_UPDATE_INTERVAL_US) {
            return Err(BlobError::Throttled);
        }
        Ok(())
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
            Ok(BlobOutcome::Created(m)) => m,
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
        assert_eq!(a2.created_at_us, 2_000_000);
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
        // A re-create after a delete is not throttled.
        objects.apply(at_ms(2_001), &create("n", "v3")).unwrap();
    }
}
