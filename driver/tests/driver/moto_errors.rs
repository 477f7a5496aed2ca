//! One test per permanent store failure a user meets first, against a real S3 server:
//! moto, under `scripts/with-moto.sh` (skipped, saying so, without it).
//!
//! moto's shared server accepts any credentials, so the bad-credentials test starts a
//! second moto of its own with authentication on (`INITIAL_NO_AUTH_ACTION_COUNT=0`), which
//! answers an unknown key as S3 does: 403 `InvalidAccessKeyId` (and a known key as its
//! policy says: `read_only.rs` runs a read-only replica on one). Not covered here, since
//! moto will not produce them:
//! `Rejected` (a wrong region; moto serves every region), `Unsupported` (moto does
//! conditional puts); `driver/tests/driver/bounded_open.rs` covers those against a loopback server
//! that answers with the status.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::ObjectStore;
use slotlog::{open_store, Error, ErrorKind, PrefixRule, StoreErrorKind, StoreOptions, World, WorldConfig};

/// moto's endpoint and bucket, or None (and a SKIPPED line) outside `scripts/with-moto.sh`.
pub(crate) fn moto(test: &str) -> Option<(String, String)> {
    match (std::env::var("SLOTLOG_S3_ENDPOINT"), std::env::var("SLOTLOG_S3_BUCKET")) {
        (Ok(endpoint), Ok(bucket)) => Some((endpoint, bucket)),
        _ => {
            eprintln!("SKIPPED {test}: SLOTLOG_S3_ENDPOINT is not set (run under scripts/with-moto.sh)");
            None
        }
    }
}

fn run_id() -> String {
    format!("{:x}", slotlog::new_op_id().0[0] as u64 * 1_000_003 + std::process::id() as u64)
}

#[real_tokio::test(flavor = "multi_thread")]
async fn moto_a_missing_bucket_is_refused_at_once_as_not_found() {
    let Some(_) = moto("moto_a_missing_bucket_is_refused_at_once_as_not_found") else { return };
    let url = format!("s3://slotlog-no-such-bucket-{}/w", run_id());
    let (store, backend, prefix) = open_store(&url, &StoreOptions::from_env()).unwrap();
    let started = Instant::now();
    let error =
        World::open_with(store, backend, &prefix, WorldConfig::default()).await.err().expect("refused");
    assert!(started.elapsed() < Duration::from_secs(5), "not at once: {:?}", started.elapsed());
    assert_eq!(error.kind(), ErrorKind::NotFound, "{error}");
    let Error::Store(e) = &error else { panic!("not a store error: {error:?}") };
    assert_eq!((e.kind, e.status, e.attempts), (StoreErrorKind::BucketNotFound, Some(404), 1), "{error}");
    assert!(e.message.contains("NoSuchBucket"), "the store's own words: {error}");
}

#[real_tokio::test(flavor = "multi_thread")]
async fn moto_a_prefix_that_breaks_a_rule_is_refused_and_nothing_is_written() {
    let Some((_, bucket)) = moto("moto_a_prefix_that_breaks_a_rule_is_refused_and_nothing_is_written") else {
        return;
    };
    let base = format!("prefix-{}", run_id());
    // As a user writes them in the URL (the URL parser itself resolves `.` and `..`
    // segments, so those are passed as an embedder passes a prefix).
    let cases = [
        (format!("s3://{bucket}/{base}/a//b"), None, PrefixRule::NoEmptySegment),
        (format!("s3://{bucket}/{base}/a%23b"), None, PrefixRule::NoHash),
        (format!("s3://{bucket}/{base}/a%0Ab"), None, PrefixRule::NoControlCharacter),
        (format!("s3://{bucket}"), Some(format!("{base}/a/../b")), PrefixRule::NoDotSegment),
        (format!("s3://{bucket}"), Some(format!("/{base}")), PrefixRule::NoLeadingSlash),
    ];
    for (url, given, rule) in cases {
        let (store, backend, prefix) = open_store(&url, &StoreOptions::from_env()).unwrap();
        let prefix = given.unwrap_or(prefix);
        let error = World::open_with(store.clone(), backend, &prefix, WorldConfig::default())
            .await
            .err()
            .expect("refused");
        assert_eq!(error.kind(), ErrorKind::Configuration, "{error}");
        match &error {
            Error::Prefix(e) => assert_eq!(e.rule, rule, "{url}: {error}"),
            other => panic!("{url}: not a prefix error: {other:?}"),
        }
        let under = object_store::path::Path::from(base.as_str());
        let written = futures_util::StreamExt::collect::<Vec<_>>(store.list(Some(&under))).await;
        assert!(written.is_empty(), "{url} wrote {written:?}");
    }
}

/// A moto server of this test's own, with authentication on, ended when dropped.
pub(crate) struct AuthMoto {
    child: Child,
    pub(crate) endpoint: String,
}

impl Drop for AuthMoto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Authentication is on after the first `no_auth_actions` requests (the setup's).
pub(crate) fn start_auth_moto(no_auth_actions: u32) -> AuthMoto {
    let python = std::env::var("SLOTLOG_MOTO_PYTHON").expect("scripts/moto.sh exports SLOTLOG_MOTO_PYTHON");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/moto_serialized.py");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(python)
        .args([script, "127.0.0.1", &port.to_string()])
        // Every request past the setup's is checked against moto's IAM: an unknown key is
        // refused as S3 refuses it, a known one as its policy says.
        .env("INITIAL_NO_AUTH_ACTION_COUNT", no_auth_actions.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("moto starts");
    let moto = AuthMoto { child, endpoint: format!("http://127.0.0.1:{port}") };
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < Duration::from_secs(60), "moto did not listen on {port}");
        std::thread::sleep(Duration::from_millis(100));
    }
    moto
}

#[real_tokio::test(flavor = "multi_thread")]
async fn moto_bad_credentials_are_refused_at_once_as_unauthenticated() {
    let Some(_) = moto("moto_bad_credentials_are_refused_at_once_as_unauthenticated") else { return };
    let server = start_auth_moto(0);
    let mut options = StoreOptions::default();
    options.s3_endpoint = Some(server.endpoint.clone());
    options.s3_access_key_id = Some("AKIAWRONGWRONGWRONG0".into());
    options.s3_secret_access_key = Some("not-the-secret".into());
    options.allow_http = true;
    let (store, backend, prefix) = open_store("s3://slotlog-test/w", &options).unwrap();
    let started = Instant::now();
    let error =
        World::open_with(store, backend, &prefix, WorldConfig::default()).await.err().expect("refused");
    assert!(started.elapsed() < Duration::from_secs(5), "not at once: {:?}", started.elapsed());
    assert_eq!(error.kind(), ErrorKind::Permission, "{error}");
    let Error::Store(e) = &error else { panic!("not a store error: {error:?}") };
    assert_eq!((e.kind, e.status, e.attempts), (StoreErrorKind::Unauthenticated, Some(403), 1), "{error}");
    assert!(e.message.contains("InvalidAccessKeyId"), "the store's own words: {error}");
}

#[real_tokio::test(flavor = "multi_thread")]
async fn moto_a_world_opens_through_a_store_built_from_the_environment() {
    let Some((_, bucket)) = moto("moto_a_world_opens_through_a_store_built_from_the_environment") else {
        return;
    };
    let url = format!("s3://{bucket}/env-{}", run_id());
    let (store, backend, prefix) = open_store(&url, &StoreOptions::from_env()).unwrap();
    assert_eq!(backend.kind(), "s3");
    let store: Arc<dyn ObjectStore> = store;
    let world = World::open_with(store, backend, &prefix, WorldConfig::default()).await.expect("opens");
    world.publish("/a.md", "hello", slotlog::Expected::Any).await.expect("commits");
    // moto's answers carry a `Date`: the slot's landing is judged without reading it back.
    let stats = world.stats().await.expect("stats");
    assert_eq!((stats.slots_won, stats.slot_stats_after_create), (1, 0), "{stats:?}");
    world.close().await;
}
