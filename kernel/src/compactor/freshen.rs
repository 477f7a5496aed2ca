//! The freshen (SPEC 10.15): an object a checkpoint run finds already stored is used as
//! it is while young; once older than the freshen age on the store's clock it is first
//! rewritten in place with a new stamp, at the generation its metadata read returned, so
//! a drop's delete at the generation it listed fails.

use super::{step, Compactor, StepCall};
use crate::blob::{BlobOp, ObjectMeta};
use crate::checkpoint::{restamp, ObjectKind};
use crate::hash::Hash32;
use crate::io::Io;
use crate::time::Instant;

impl Compactor {
    /// Whether a stored object is older than the freshen age on the store's clock (an
    /// unknown clock counts as old: a needless rewrite costs a call, a missed one data).
    pub(super) fn is_old(&self, meta: &ObjectMeta, store_now_us: Option<u64>) -> bool {
        store_now_us.is_none_or(|now_us| now_us.saturating_sub(meta.created_at_us) >= self.freshen_after_us)
    }

    /// An object of the run found stored: used as it is, or first freshened when old, so
    /// a drop's delete at the generation it listed fails.
    pub(super) fn judge_found(
        &mut self,
        now: Instant,
        kind: ObjectKind,
        name: Hash32,
        meta: &ObjectMeta,
        store_now_us: Option<u64>,
        io: &mut Io,
    ) {
        if !self.is_old(meta, store_now_us) {
            return self.object_stored(name, false);
        }
        let run = self.run.as_ref().expect("running");
        let first_write = run.in_flight.get(&name).expect("a found object is in flight");
        let stamp = if self.freshen_keeps_bytes { 0 } else { fresh_stamp(store_now_us) };
        let Some(bytes) = restamp(kind, first_write, stamp) else {
            return self.object_stored(name, false);
        };
        let op = BlobOp::Rewrite { key: meta.key.clone(), bytes, if_generation: meta.generation.clone() };
        io.issue(now, step(StepCall::Freshen { kind, name }), op, 0);
    }
}

/// A freshen's stamp: the store's clock, so each freshen writes other bytes than the one
/// before (an S3 ETag is the MD5 of the bytes) and never the first write's stamp, 0.
pub(super) fn fresh_stamp(store_now_us: Option<u64>) -> u64 {
    store_now_us.unwrap_or(1).max(1)
}
