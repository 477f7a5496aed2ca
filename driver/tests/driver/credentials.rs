//! Credentials stay out of everything slotlog shows (docs/SECURITY.md, "Credentials"):
//! a world opened on an S3 URL whose access key, secret and session token are marker
//! strings, against a loopback server that refuses every request (and against moto under
//! `scripts/with-moto.sh`, where the world opens, writes and counts), never shows the
//! secret or the token in an error's `Display` or `Debug`, the options', store's or
//! stats' `Debug`, or any `tracing` event or span field at any level; the secret never
//! travels in a request either (SigV4 sends a signature made with it).

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::Duration;

use slotlog::object_store_blobs::ObjectStoreBlobs;
use slotlog::{open_store, StoreOptions, World, WorldConfig};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

const KEY_ID: &str = "AKIDMARKER7Q2Z";
const SECRET: &str = "SECRETMARKER-9f3c-never-shown";
const TOKEN: &str = "TOKENMARKER-5b1e-never-shown";

/// Every event's and span's fields, at every level, as text.
struct Capture {
    text: Arc<Mutex<String>>,
    next_span: AtomicU64,
}

struct Fields<'a>(&'a mut String);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, "{}={value:?} ", field.name());
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut text = self.text.lock().unwrap();
        let _ = write!(text, "span {} ", span.metadata().name());
        span.record(&mut Fields(&mut text));
        text.push('\n');
        Id::from_u64(self.next_span.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, values: &Record<'_>) {
        let mut text = self.text.lock().unwrap();
        values.record(&mut Fields(&mut text));
        text.push('\n');
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut text = self.text.lock().unwrap();
        let _ = write!(text, "{} {} ", event.metadata().level(), event.metadata().target());
        event.record(&mut Fields(&mut text));
        text.push('\n');
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// The process's tracing output from here on (one subscriber for the process: nextest
/// runs each test in its own).
fn captured() -> Arc<Mutex<String>> {
    static TEXT: OnceLock<Arc<Mutex<String>>> = OnceLock::new();
    TEXT.get_or_init(|| {
        let text = Arc::new(Mutex::new(String::new()));
        let capture = Capture { text: text.clone(), next_span: AtomicU64::new(0) };
        tracing::subscriber::set_global_default(capture).expect("the only tracing subscriber");
        text
    })
    .clone()
}

fn options(endpoint: &str) -> StoreOptions {
    let mut options = StoreOptions::default();
    options.s3_endpoint = Some(endpoint.to_string());
    options.s3_access_key_id = Some(KEY_ID.into());
    options.s3_secret_access_key = Some(SECRET.into());
    options.s3_session_token = Some(TOKEN.into());
    options.allow_http = true;
    options.request_timeout = Some(Duration::from_secs(2));
    options
}

/// Fails naming `what` if `shown` holds the secret or the session token.
fn assert_no_secret(what: &str, shown: &str) {
    assert!(!shown.contains(SECRET), "{what} shows the secret key:\n{shown}");
    assert!(!shown.contains(TOKEN), "{what} shows the session token:\n{shown}");
}

/// Answers every request 403 (a signature S3 does not accept); keeps each request head.
fn refuse_every_request() -> (u16, Arc<Mutex<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let heads = Arc::new(Mutex::new(String::new()));
    let kept = heads.clone();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                match stream.read(&mut byte) {
                    Ok(1) => head.push(byte[0]),
                    _ => break,
                }
            }
            kept.lock().unwrap().push_str(&String::from_utf8_lossy(&head));
            let body = "<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the signature you provided.</Message></Error>";
            let response = format!(
                "HTTP/1.1 403 Forbidden\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes());
        }
    });
    (port, heads)
}

#[tokio::test(flavor = "multi_thread")]
async fn credentials_never_show_in_errors_debug_or_tracing_when_the_store_refuses() {
    let trace = captured();
    let (port, heads) = refuse_every_request();
    let options = options(&format!("http://127.0.0.1:{port}"));
    let options_shown = format!("{options:?}");
    assert_no_secret("StoreOptions' Debug", &options_shown);
    assert!(options_shown.contains("<redacted>"), "{options_shown}");
    let (store, backend, prefix) = open_store("s3://bucket/w", &options).unwrap();
    assert_no_secret("the store's Debug", &format!("{store:?} {store} {backend:?}"));
    let blobs = Arc::new(ObjectStoreBlobs::new(store, backend));
    assert_no_secret("the blobs' Debug", &format!("{blobs:?}"));
    let mut config = WorldConfig::default();
    config.open_deadline = Duration::from_secs(5);
    let error = match World::open_on(blobs, &prefix, config).await {
        Ok(_) => panic!("opened against a server that refuses everything"),
        Err(e) => e,
    };
    assert!(format!("{error}").contains("SignatureDoesNotMatch"), "refused in the store's words: {error}");
    assert_no_secret("the error's Display", &format!("{error}"));
    assert_no_secret("the error's Debug", &format!("{error:?}"));
    let trace = trace.lock().unwrap().clone();
    assert!(trace.contains("w/marker"), "tracing saw the open's calls:\n{trace}");
    assert_no_secret("tracing", &trace);
    let heads = heads.lock().unwrap().clone();
    assert!(heads.contains(KEY_ID), "requests were signed with the marker key:\n{heads}");
    assert!(!heads.contains(SECRET), "a request carried the secret key:\n{heads}");
}

/// moto's endpoint and bucket, or None (and a SKIPPED line) outside `scripts/with-moto.sh`.
fn moto(test: &str) -> Option<(String, String)> {
    match (std::env::var("SLOTLOG_S3_ENDPOINT"), std::env::var("SLOTLOG_S3_BUCKET")) {
        (Ok(endpoint), Ok(bucket)) => Some((endpoint, bucket)),
        _ => {
            eprintln!("SKIPPED {test}: SLOTLOG_S3_ENDPOINT is not set (run under scripts/with-moto.sh)");
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn moto_credentials_never_show_in_stats_writes_errors_or_tracing_of_an_open_world() {
    let Some((endpoint, bucket)) =
        moto("moto_credentials_never_show_in_stats_writes_errors_or_tracing_of_an_open_world")
    else {
        return;
    };
    let trace = captured();
    let prefix =
        format!("credentials-{:x}", slotlog::new_op_id().0[0] as u64 ^ u64::from(std::process::id()));
    let (store, backend, prefix) =
        open_store(&format!("s3://{bucket}/{prefix}"), &options(&endpoint)).unwrap();
    let world =
        World::open_with(store, backend, &prefix, WorldConfig::default()).await.expect("open on moto");
    let written = world.publish("/a.md", &b"a"[..], slotlog::Expected::Any).await.expect("a write");
    assert_no_secret("a write's answer", &format!("{written:?}"));
    // A refused write: its error is shown too.
    let refused = world.publish("/a.md", &b"b"[..], slotlog::Expected::Absent).await;
    assert_no_secret("a refused write", &format!("{refused:?}"));
    let stats = world.stats().await.expect("stats");
    assert!(stats.slots_won >= 1, "{stats:?}");
    assert_no_secret("the stats' Debug", &format!("{stats:?}"));
    world.close().await;
    let trace = trace.lock().unwrap().clone();
    assert!(trace.contains(&prefix), "tracing saw the world's calls:\n{trace}");
    assert_no_secret("tracing", &trace);
}
