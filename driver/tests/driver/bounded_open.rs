//! `World::open` returns within its deadline, and a store's refusal that no retry passes
//! reaches the caller at once, typed, in the store's own words: against a closed port,
//! a loopback server answering 401, 403 or a missing bucket, a prefix that breaks a rule,
//! and a store that turns on a world already open.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use object_store::memory::InMemory;
use slotlog::object_store_blobs::{Backend, ObjectStoreBlobs};
use slotlog::{
    open_store, BlobFuture, Blobs, CallFailure, Error, Expected, ExplainedFuture, PrefixRule, StoreError,
    StoreErrorKind, StoreOptions, World, WorldConfig,
};
use slotlog_kernel::blob::{BlobError, BlobOp};

/// A port nothing listens on: bound, read, and let go.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Answers every request with `status` and `body`, for as long as the test runs.
fn answer_every_request(status: &'static str, body: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            read_request(&mut stream);
            let response = format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes());
        }
    });
    port
}

/// Reads the request head and the body it announces.
fn read_request(stream: &mut TcpStream) {
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:").and_then(|v| v.trim().parse::<usize>().ok()))
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    let _ = stream.read_exact(&mut body);
}

fn s3_at(port: u16) -> Arc<ObjectStoreBlobs> {
    let mut options = StoreOptions::default();
    options.s3_endpoint = Some(format!("http://127.0.0.1:{port}"));
    options.s3_access_key_id = Some("key".into());
    options.s3_secret_access_key = Some("secret".into());
    options.allow_http = true;
    options.request_timeout = Some(Duration::from_secs(1));
    let (store, backend, _) = open_store("s3://bucket", &options).unwrap();
    Arc::new(ObjectStoreBlobs::new(store, backend))
}

fn open_deadline(deadline: Duration) -> WorldConfig {
    let mut config = WorldConfig::default();
    config.open_deadline = deadline;
    config
}

fn short_deadline() -> WorldConfig {
    open_deadline(Duration::from_secs(2))
}

async fn open_err(blobs: Arc<dyn Blobs>, prefix: &str, config: WorldConfig) -> Error {
    match World::open_on(blobs, prefix, config).await {
        Ok(_) => panic!("opened"),
        Err(e) => e,
    }
}

fn store_error(error: Error) -> StoreError {
    match error {
        Error::Store(e) => e,
        other => panic!("not a store error: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn open_against_a_closed_port_gives_up_at_the_open_deadline() {
    let error = open_err(s3_at(closed_port()), "w", short_deadline()).await;
    eprintln!("{error}");
    let Error::OpenDeadline { deadline, last_error: Some(last) } = error else {
        panic!("not an open deadline with a store failure: {error:?}")
    };
    assert_eq!(deadline, Duration::from_secs(2));
    assert_eq!(last.kind, StoreErrorKind::Transient(BlobError::Unavailable));
    assert_eq!((last.op, last.key.as_str()), ("get", "w/marker"));
    // The cause, in the transport's own words (Linux: "Connection refused (os error 111)").
    assert!(last.message.to_ascii_lowercase().contains("refused"), "{}", last.message);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_failing_past_its_retry_budget_stops_the_open() {
    let mut config = open_deadline(Duration::from_secs(60));
    config.call_retries_max = 2;
    let error = store_error(open_err(s3_at(closed_port()), "w", config).await);
    assert_eq!(error.kind, StoreErrorKind::Transient(BlobError::Unavailable));
    assert_eq!(error.attempts, 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn open_refused_with_403_is_permission_denied_at_once() {
    let port = answer_every_request(
        "403 Forbidden",
        "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>",
    );
    let error = store_error(open_err(s3_at(port), "w", short_deadline()).await);
    eprintln!("{error}");
    assert_eq!(error.kind, StoreErrorKind::PermissionDenied);
    assert_eq!(error.status, Some(403));
    assert!(error.message.contains("AccessDenied"), "the store's own words: {}", error.message);
    assert_eq!((error.op, error.key.as_str(), error.attempts), ("get", "w/marker", 1));
}

#[tokio::test(flavor = "multi_thread")]
async fn open_refused_with_401_is_unauthenticated() {
    let port = answer_every_request("401 Unauthorized", "<Error><Code>InvalidAccessKeyId</Code></Error>");
    let error = store_error(open_err(s3_at(port), "w", short_deadline()).await);
    assert_eq!(error.kind, StoreErrorKind::Unauthenticated);
    assert_eq!(error.status, Some(401));
}

#[tokio::test(flavor = "multi_thread")]
async fn open_on_a_missing_bucket_is_bucket_not_found() {
    let port = answer_every_request(
        "404 Not Found",
        "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message></Error>",
    );
    let error = store_error(open_err(s3_at(port), "w", short_deadline()).await);
    assert_eq!(error.kind, StoreErrorKind::BucketNotFound);
    assert_eq!(error.status, Some(404));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prefix_that_breaks_a_rule_is_refused_before_any_call() {
    // Nothing listens there: a call would fail, not answer with the rule.
    for (prefix, rule) in [
        ("/w", PrefixRule::NoLeadingSlash),
        ("w/", PrefixRule::NoTrailingSlash),
        ("a//b", PrefixRule::NoEmptySegment),
        ("a/../b", PrefixRule::NoDotSegment),
    ] {
        match open_err(s3_at(closed_port()), prefix, short_deadline()).await {
            Error::Prefix(e) => assert_eq!((e.prefix.as_str(), e.rule), (prefix, rule)),
            other => panic!("{prefix:?}: {other:?}"),
        }
    }
    let store = Arc::new(InMemory::new());
    let error = World::open(store, "/w", WorldConfig::default()).await.err().expect("refused");
    assert!(matches!(error, Error::Prefix(ref e) if e.rule == PrefixRule::NoLeadingSlash), "{error:?}");
    assert_eq!(error.to_string(), "invalid prefix \"/w\": it must not start with '/'");
}

/// A store that works until it is told to refuse every call as 403 does.
struct Revocable {
    inner: ObjectStoreBlobs,
    revoked: AtomicBool,
}

impl Blobs for Revocable {
    fn execute(&self, op: BlobOp) -> BlobFuture {
        self.inner.execute(op)
    }

    fn execute_explained(&self, op: BlobOp) -> ExplainedFuture {
        if self.revoked.load(Ordering::Acquire) {
            return Box::pin(async {
                Err(CallFailure {
                    error: BlobError::Unsupported,
                    permanent: Some(StoreErrorKind::PermissionDenied),
                    status: Some(403),
                    message: "AccessDenied: the key was revoked".into(),
                })
            });
        }
        self.inner.execute_explained(op)
    }

    fn kind(&self) -> &'static str {
        "revocable"
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_permanent_failure_after_open_reaches_the_write_and_every_later_call() {
    let blobs = Arc::new(Revocable {
        inner: ObjectStoreBlobs::new(Arc::new(InMemory::new()), Backend::Memory),
        revoked: AtomicBool::new(false),
    });
    let world = World::open_on(blobs.clone(), "w", WorldConfig::default()).await.unwrap();
    world.publish("/a.md", "one", Expected::Any).await.unwrap();
    blobs.revoked.store(true, Ordering::Release);
    let error = store_error(world.publish("/a.md", "two", Expected::Any).await.unwrap_err());
    assert_eq!(error.kind, StoreErrorKind::PermissionDenied);
    assert!(error.message.contains("revoked"));
    let later = store_error(world.fetch("/a.md", None).await.unwrap_err());
    assert_eq!(later, error);
}

/// A store that answers every call, after `delay`; or never, when `delay` is None.
struct Slow {
    inner: ObjectStoreBlobs,
    delay: Option<Duration>,
}

impl Blobs for Slow {
    fn execute(&self, op: BlobOp) -> BlobFuture {
        self.inner.execute(op)
    }

    fn execute_explained(&self, op: BlobOp) -> ExplainedFuture {
        let call = self.inner.execute_explained(op);
        let delay = self.delay;
        Box::pin(async move {
            match delay {
                Some(delay) => tokio::time::sleep(delay).await,
                None => std::future::pending().await,
            }
            call.await
        })
    }

    fn kind(&self) -> &'static str {
        "slow"
    }
}

fn slow(delay: Option<Duration>) -> Arc<Slow> {
    Arc::new(Slow { inner: ObjectStoreBlobs::new(Arc::new(InMemory::new()), Backend::Memory), delay })
}

#[tokio::test(flavor = "multi_thread")]
async fn an_opening_that_hears_nothing_gives_up_at_the_open_deadline() {
    let config = open_deadline(Duration::from_secs(1));
    let error = open_err(slow(None), "w", config).await;
    assert_eq!(error, Error::OpenDeadline { deadline: Duration::from_secs(1), last_error: None });
}

#[tokio::test(flavor = "multi_thread")]
async fn an_opening_that_keeps_hearing_answers_is_not_cut_short() {
    // Genesis takes several calls in a row (marker, listing, marker create, checkpoint
    // zero, log listing): together longer than the deadline, each well inside it.
    let config = open_deadline(Duration::from_millis(1_000));
    let started = tokio::time::Instant::now();
    let world = World::open_on(slow(Some(Duration::from_millis(300))), "w", config).await.unwrap();
    assert!(started.elapsed() > Duration::from_millis(1_000), "the opening was not longer than the deadline");
    world.close().await;
}
