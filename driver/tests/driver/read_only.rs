//! A read-only replica (`kernel.read_only`) over credentials that may only read: it opens
//! a world a writer made, reads, views and watches it as the writer commits, answers
//! writes `ReadOnlyReplica`, and sends the store no create, rewrite or delete; over an
//! empty prefix it makes no world.

use object_store::memory::InMemory;
use object_store::ObjectStore;
use slotlog::object_store_blobs::{Backend, ObjectStoreBlobs};
use slotlog::{
    Answer, BlobFuture, Blobs, CallFailure, Error, ErrorKind, Expected, ExplainedFuture, FailReason,
    StoreErrorKind, World, WorldConfig, WriteError,
};
use slotlog_kernel::blob::{BlobError, BlobOp};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Read-only credentials: every create, rewrite or delete is refused as a 403, and counted.
struct ReadOnlyCredentials {
    inner: ObjectStoreBlobs,
    refused: AtomicU64,
}

impl Blobs for ReadOnlyCredentials {
    fn execute(&self, op: BlobOp) -> BlobFuture {
        self.inner.execute(op)
    }

    fn execute_explained(&self, op: BlobOp) -> ExplainedFuture {
        if op.changes_store() {
            self.refused.fetch_add(1, Ordering::AcqRel);
            return Box::pin(async {
                Err(CallFailure {
                    error: BlobError::Unsupported,
                    permanent: Some(StoreErrorKind::PermissionDenied),
                    status: Some(403),
                    message: "AccessDenied: the policy allows reads only".into(),
                })
            });
        }
        self.inner.execute_explained(op)
    }

    fn kind(&self) -> &'static str {
        "read-only"
    }

    fn identity(&self) -> Option<String> {
        self.inner.identity()
    }
}

fn read_only() -> WorldConfig {
    let mut config = WorldConfig::default();
    config.kernel.read_only = true;
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_replica_reads_views_and_watches_and_never_writes() {
    let store = Arc::new(InMemory::new());
    let writer = World::open_on(
        Arc::new(ObjectStoreBlobs::new(store.clone(), Backend::Memory)),
        "w",
        WorldConfig::default(),
    )
    .await
    .unwrap();
    writer.publish("/a.md", "one", Expected::Absent).await.unwrap();
    let blobs = Arc::new(ReadOnlyCredentials {
        inner: ObjectStoreBlobs::new(store, Backend::Memory),
        refused: AtomicU64::new(0),
    });
    let reader = World::open_on(blobs.clone(), "w", read_only()).await.unwrap();
    assert_eq!(reader.world_id(), writer.world_id());
    let mut watch = reader.watch(0).await.unwrap();
    let view = reader.view();
    let pinned = view.fetch("/a.md", None).await.unwrap().at_sequence;
    for i in 0..20 {
        writer.publish("/a.md", format!("v{i}"), Expected::Any).await.unwrap();
    }
    // Exact: sees the writer's acknowledged write; the view stays where it pinned.
    let Answer::Document { version, .. } = reader.fetch("/a.md", None).await.unwrap().answer else {
        panic!("a document")
    };
    assert_eq!(version.version, 21);
    assert_eq!(view.fetch("/a.md", None).await.unwrap().at_sequence, pinned);
    for sequence in 1..=21 {
        assert_eq!(watch.next().await.unwrap().sequence, sequence, "every change, in order");
    }
    let refused = reader.publish("/b.md", "x", Expected::Absent).await.unwrap_err();
    assert_eq!(refused, Error::Write(WriteError::ReadOnlyReplica));
    assert_eq!(refused.kind(), ErrorKind::Configuration);
    assert_eq!(blobs.refused.load(Ordering::Acquire), 0, "no create, rewrite or delete was sent");
    drop(view);
    reader.close().await;
    writer.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_replica_makes_no_world_in_an_empty_prefix() {
    let blobs = Arc::new(ReadOnlyCredentials {
        inner: ObjectStoreBlobs::new(Arc::new(InMemory::new()), Backend::Memory),
        refused: AtomicU64::new(0),
    });
    let error = World::open_on(blobs.clone(), "w", read_only()).await.err().expect("refused");
    assert!(matches!(error, Error::Failed(FailReason::NoWorld { .. })), "{error:?}");
    assert_eq!(error.kind(), ErrorKind::NotFound);
    assert_eq!(blobs.refused.load(Ordering::Acquire), 0);
}

/// A moto with authentication on, and its reader's and writer's keys.
fn moto_with_users(bucket: &str) -> (super::moto_errors::AuthMoto, [String; 4]) {
    // The setup's seven calls (a bucket, two users with a policy and a key each) go
    // unauthenticated; every later one is checked.
    let server = super::moto_errors::start_auth_moto(7);
    let python = std::env::var("SLOTLOG_MOTO_PYTHON").expect("scripts/moto.sh exports SLOTLOG_MOTO_PYTHON");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/moto_read_only_users.py");
    let out = std::process::Command::new(python).args([script, &server.endpoint, bucket]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect();
    (server, lines.try_into().expect("four lines"))
}

fn s3_options(endpoint: &str, (id, secret): (&str, &str)) -> slotlog::StoreOptions {
    let mut options = slotlog::StoreOptions::default();
    options.s3_endpoint = Some(endpoint.to_string());
    options.s3_access_key_id = Some(id.to_string());
    options.s3_secret_access_key = Some(secret.to_string());
    options.allow_http = true;
    options
}

#[real_tokio::test(flavor = "multi_thread")]
async fn moto_a_read_only_replica_works_with_credentials_that_may_only_read() {
    let test = "moto_a_read_only_replica_works_with_credentials_that_may_only_read";
    let Some(_) = super::moto_errors::moto(test) else { return };
    let (server, [reader_id, reader_secret, writer_id, writer_secret]) = moto_with_users("slotlog-read-only");
    let url = "s3://slotlog-read-only/w";
    let writer_options = s3_options(&server.endpoint, (&writer_id, &writer_secret));
    let (store, backend, prefix) = slotlog::open_store(url, &writer_options).unwrap();
    let writer = World::open_with(store, backend, &prefix, WorldConfig::default()).await.unwrap();
    for i in 0..5 {
        writer.publish(&format!("/d/{i}.md"), "x", Expected::Absent).await.unwrap();
    }
    let reader_options = s3_options(&server.endpoint, (&reader_id, &reader_secret));
    let (store, backend, prefix) = slotlog::open_store(url, &reader_options).unwrap();
    // The policy is enforced: these credentials cannot write.
    let denied = store.put_opts(&"w/probe".into(), "x".into(), Default::default()).await;
    assert!(denied.is_err(), "the reader's key wrote: {denied:?}");
    let reader = World::open_with(store, backend, &prefix, read_only()).await.unwrap();
    let Answer::Listing { documents, .. } = reader.list("/d", None, 0).await.unwrap().answer else {
        panic!("a listing")
    };
    assert_eq!(documents.len(), 5);
    writer.publish("/d/5.md", "x", Expected::Absent).await.unwrap();
    reader.follow(6);
    assert!(matches!(reader.fetch("/d/5.md", None).await.unwrap().answer, Answer::Document { .. }));
    let refused = reader.publish("/e.md", "x", Expected::Absent).await.unwrap_err();
    assert_eq!(refused, Error::Write(WriteError::ReadOnlyReplica));
    reader.close().await;
    writer.close().await;
}
