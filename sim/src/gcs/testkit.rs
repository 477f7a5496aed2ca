//! Test helpers: a tiny discrete-event driver and plan classification.

use std::collections::BTreeMap;

use bytes::Bytes;
use slotlog_kernel::blob::{BlobError, BlobOp, BlobResult};
use slotlog_kernel::time::Instant;

use super::{Plan, PlannedReply, SimGcs};

/// A create with a small (256-byte) body.
pub(crate) fn small_create(key: &str) -> BlobOp {
    BlobOp::Create { key: key.into(), bytes: Bytes::from(vec![7u8; 256]) }
}

/// What a plan promises, as the caller and the bucket would see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Shape {
    Applied,
    Throttled,
    Unavailable,
    TimeoutApplied,
    TimeoutLost,
    /// A timeout whose operation lands after the reply.
    LateCreate,
}

impl Shape {
    pub(crate) fn of(plan: &Plan, now: Instant) -> Shape {
        if let Some(apply) = plan.apply_at {
            assert!(apply > now, "an operation applies after it is issued");
        }
        match plan.reply {
            PlannedReply::Applied => {
                assert!(plan.apply_at.is_some_and(|a| a <= plan.reply_at));
                Shape::Applied
            }
            PlannedReply::Fault(BlobError::Throttled) => Shape::Throttled,
            PlannedReply::Fault(BlobError::Unavailable) => Shape::Unavailable,
            PlannedReply::Fault(BlobError::Timeout) => match plan.apply_at {
                None => Shape::TimeoutLost,
                Some(a) if a > plan.reply_at => Shape::LateCreate,
                Some(_) => Shape::TimeoutApplied,
            },
            PlannedReply::Fault(other) => panic!("a plan never faults with {other:?}"),
        }
    }
}

/// One operation's run through the driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    pub issued_at: Instant,
    pub plan: Plan,
    /// What `apply` returned, if the operation happened.
    pub applied: Option<BlobResult>,
}

impl Run {
    /// What the caller heard at `plan.reply_at`.
    pub(crate) fn delivered(&self) -> BlobResult {
        match self.plan.reply {
            PlannedReply::Applied => self.applied.clone().expect("applied before the reply"),
            PlannedReply::Fault(e) => Err(e),
        }
    }
}

/// Issue each `(at, op)` at its instant and apply every plan at its `apply_at`, all in
/// time order (ties: applies before submits, then in issue order).
pub(crate) fn drive(gcs: &mut SimGcs, ops: &[(Instant, BlobOp)]) -> Vec<Run> {
    #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    enum Event {
        Apply(usize),
        Submit(usize),
    }
    let mut queue: BTreeMap<(Instant, Event), ()> = BTreeMap::new();
    for (i, (at, _)) in ops.iter().enumerate() {
        queue.insert((*at, Event::Submit(i)), ());
    }
    let mut runs: Vec<Option<Run>> = vec![None; ops.len()];
    while let Some(((at, event), ())) = queue.pop_first() {
        match event {
            Event::Submit(i) => {
                let plan = gcs.submit(at, &ops[i].1);
                if let Some(apply_at) = plan.apply_at {
                    queue.insert((apply_at, Event::Apply(i)), ());
                }
                runs[i] = Some(Run { issued_at: at, plan, applied: None });
            }
            Event::Apply(i) => {
                let result = gcs.apply(at, &ops[i].1);
                runs[i].as_mut().expect("submitted").applied = Some(result);
            }
        }
    }
    runs.into_iter().map(|r| r.expect("every op ran")).collect()
}

/// The p50 and p99 of `xs`, in the units given.
pub(crate) fn p50_p99(mut xs: Vec<f64>) -> (f64, f64) {
    xs.sort_by(f64::total_cmp);
    (xs[xs.len() / 2], xs[xs.len() * 99 / 100])
}
