//! `World::health` names each state a caller can meet (serving, degraded while the store
//! fails, failed closed, closed) and never repeats a store's message; `World::telemetry`
//! hands back a write's phases in order.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use object_store::memory::InMemory;
use slotlog::object_store_blobs::{Backend, ObjectStoreBlobs};
use slotlog::{
    BlobFuture, Blobs, CallFailure, Error, Expected, ExplainedFuture, HealthState, SampleKind,
    StoreErrorKind, World, WorldConfig,
};
use slotlog_kernel::blob::{BlobError, BlobOp};

const HEALTHY: u8 = 0;
/// Every call fails as a store that is down does (503): retried, never permanent.
const DOWN: u8 = 1;
/// Every call is refused as a revoked credential is (403): the world stops.
const REVOKED: u8 = 2;

/// A store whose health the test turns.
struct Turnable {
    inner: ObjectStoreBlobs,
    mode: AtomicU8,
}

impl Blobs for Turnable {
    fn execute(&self, op: BlobOp) -> BlobFuture {
        self.inner.execute(op)
    }

    fn execute_explained(&self, op: BlobOp) -> ExplainedFuture {
        let failure = match self.mode.load(Ordering::Acquire) {
            DOWN => CallFailure {
                error: BlobError::Unavailable,
                permanent: None,
                status: Some(503),
                message: "SlowDown".into(),
            },
            REVOKED => CallFailure {
                error: BlobError::Unsupported,
                permanent: Some(StoreErrorKind::PermissionDenied),
                status: Some(403),
                message: "AccessDenied for AKIASECRETKEYID".into(),
            },
            _ => return self.inner.execute_explained(op),
        };
        Box::pin(async move { Err(failure) })
    }

    fn kind(&self) -> &'static str {
        "turnable"
    }
}

fn turnable() -> Arc<Turnable> {
    let inner = ObjectStoreBlobs::new(Arc::new(InMemory::new()), Backend::Memory);
    Arc::new(Turnable { inner, mode: AtomicU8::new(HEALTHY) })
}

#[tokio::test(flavor = "multi_thread")]
async fn an_open_world_that_commits_is_serving() {
    let world = World::open_on(turnable(), "w", WorldConfig::default()).await.unwrap();
    world.publish("/a.md", "one", Expected::Any).await.unwrap();
    let health = world.health().await;
    assert_eq!(health.state, HealthState::Serving, "{health:?}");
    assert_eq!(health.reason, None);
    assert_eq!(health.world_id, Some(world.world_id()));
    assert_eq!(health.sequence, Some(1));
    assert_eq!(health.committed_through, 1);
    assert!(matches!(health.newest_slot, Some((1, 1, _))), "{health:?}");
    assert!(health.unconfirmed.is_some_and(|age| age < Duration::from_secs(10)), "{health:?}");
    assert_eq!((health.store_failures_recent, health.probe_failures_in_row), (0, 0));
    world.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_failing_calls_makes_the_world_degraded_until_the_window_passes() {
    let blobs = turnable();
    let mut config = WorldConfig::default();
    config.degraded_window = Duration::from_secs(1);
    config.kernel.request_deadline = Duration::from_secs(1);
    let world = World::open_on(blobs.clone(), "w", config).await.unwrap();
    world.publish("/a.md", "one", Expected::Any).await.unwrap();
    blobs.mode.store(DOWN, Ordering::Release);
    // An exact read probes the tip, and the probe meets the failing store.
    let _ = world.fetch("/a.md", None).await;
    let health = world.health().await;
    assert_eq!(health.state, HealthState::Degraded, "{health:?}");
    assert!(health.store_failures_recent > 0, "{health:?}");
    let (_, last) = health.store_last_error.clone().expect("the failure is told");
    assert!(last.contains("503") && !last.contains("SlowDown"), "no store message: {last}");
    blobs.mode.store(HEALTHY, Ordering::Release);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    world.fetch("/a.md", None).await.unwrap();
    let health = world.health().await;
    assert_eq!(health.state, HealthState::Serving, "{health:?}");
    world.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_that_refuses_for_good_fails_the_world_closed_without_its_message() {
    let blobs = turnable();
    let world = World::open_on(blobs.clone(), "w", WorldConfig::default()).await.unwrap();
    world.publish("/a.md", "one", Expected::Any).await.unwrap();
    blobs.mode.store(REVOKED, Ordering::Release);
    assert!(matches!(world.publish("/a.md", "two", Expected::Any).await, Err(Error::Store(_))));
    let health = world.health().await;
    assert_eq!(health.state, HealthState::FailedClosed, "{health:?}");
    let reason = health.reason.expect("why it stopped");
    assert!(reason.contains("403") && reason.contains("w/log/"), "{reason}");
    assert!(!reason.contains("AKIA"), "no credentials in a health report: {reason}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_closed_world_is_closed() {
    let world = World::open_on(turnable(), "w", WorldConfig::default()).await.unwrap();
    world.close().await;
    let health = world.health().await;
    assert_eq!(health.state, HealthState::Closed, "{health:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_writes_phases_come_back_in_order() {
    let mut config = WorldConfig::default();
    // Every write is slow by this bound: each is sampled with its phases.
    config.slow_request_after = Duration::ZERO;
    let world = World::open_on(turnable(), "w", config).await.unwrap();
    let op_id = slotlog::new_op_id();
    let mutation = slotlog::Mutation::Publish {
        path: "/a.md".into(),
        body: "one".into(),
        catalog: None,
        expected: Expected::Any,
    };
    world.write(slotlog::Write { op_id, mutation }).await.unwrap();
    let telemetry = world.telemetry().await.unwrap();
    let timings = telemetry
        .samples
        .iter()
        .find_map(|s| match &s.kind {
            SampleKind::SlowWrite(t) if t.op_id == op_id => Some(t.clone()),
            _ => None,
        })
        .expect("the write is sampled");
    let (sent, created) = (timings.sent.expect("a slot was sent"), timings.created.expect("and created"));
    assert!(timings.queued <= timings.built, "{timings:?}");
    assert!(timings.built <= sent, "{timings:?}");
    assert!(sent <= created, "{timings:?}");
    assert!(created <= timings.confirmed, "{timings:?}");
    assert_eq!(telemetry.stats.writes_timed, 1);
    assert_eq!(world.stats().await.unwrap().telemetry.slow_writes, 1);
    assert!(world.telemetry().await.unwrap().samples.is_empty(), "taken once");
    world.close().await;
}
