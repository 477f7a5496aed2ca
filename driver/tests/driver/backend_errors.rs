//! The adapter's error mapping and conditional-delete requests, checked against object_store's
//! real HTTP client and error chains: a scripted HTTP server on loopback answers each
//! request with a chosen status (or not at all), and records what it was sent.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use bytes::Bytes;
use object_store::gcp::GcpCredential;
use object_store::memory::InMemory;
use object_store::{ClientOptions, StaticCredentialProvider};
use slotlog::object_store_blobs::{Backend, GcsBackend, ObjectStoreBlobs};
use slotlog::{open_store, Blobs, StoreOptions};
use slotlog_kernel::blob::{BlobError, BlobOp, BlobOutcome, Generation};

/// What the scripted server does with one connection.
#[derive(Clone)]
enum Answer {
    Status(u16, &'static str),
    /// Read the request, then hold the connection open without a word.
    Silence,
    /// Read the request, then close the connection.
    Hangup,
}

struct Server {
    port: u16,
    /// Request heads (request line and headers), in arrival order.
    seen: Arc<Mutex<Vec<String>>>,
}

/// Serves `answers` in order, one connection each (the client is told not to reuse them).
fn serve(answers: Vec<Answer>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    thread::spawn(move || {
        for answer in answers {
            let Ok((mut stream, _)) = listener.accept() else { return };
            let head = read_head(&mut stream);
            log.lock().unwrap().push(head);
            match answer {
                Answer::Status(code, body) => {
                    let response = format!(
                        "HTTP/1.1 {code} Scripted\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(response.as_bytes());
                }
                Answer::Silence => {
                    thread::spawn(move || {
                        thread::sleep(Duration::from_secs(5));
                        drop(stream);
                    });
                }
                Answer::Hangup => drop(stream),
            }
        }
    });
    Server { port, seen }
}

/// The request head; a body the head announces is read and dropped.
fn read_head(stream: &mut TcpStream) -> String {
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => buf.push(byte[0]),
            _ => break,
        }
    }
    let head = String::from_utf8_lossy(&buf).to_string();
    let length = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
        })
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    let _ = stream.read_exact(&mut body);
    head
}

fn s3_blobs(port: u16) -> ObjectStoreBlobs {
    let mut options = StoreOptions::default();
    options.s3_endpoint = Some(format!("http://127.0.0.1:{port}"));
    options.s3_access_key_id = Some("key".into());
    options.s3_secret_access_key = Some("secret".into());
    options.allow_http = true;
    options.request_timeout = Some(Duration::from_millis(500));
    let (store, backend, _) = open_store("s3://bucket", &options).unwrap();
    ObjectStoreBlobs::new(store, backend)
}

fn create(key: &str) -> BlobOp {
    BlobOp::Create { key: key.into(), bytes: Bytes::from_static(b"slot bytes") }
}

#[tokio::test(flavor = "multi_thread")]
async fn s3_statuses_map_onto_the_kernels_kinds() {
    let cases = [
        (Answer::Status(429, ""), BlobError::Throttled),
        (Answer::Status(503, "<Error><Code>SlowDown</Code></Error>"), BlobError::Throttled),
        (Answer::Status(503, ""), BlobError::Unavailable),
        (Answer::Status(500, ""), BlobError::Unavailable),
        (Answer::Status(412, ""), BlobError::AlreadyExists),
        // S3's ConditionalRequestConflict: a concurrent conditional write; ours did not land.
        (
            Answer::Status(409, "<Error><Code>ConditionalRequestConflict</Code></Error>"),
            BlobError::Unavailable,
        ),
    ];
    for (answer, expected) in cases {
        let server = serve(vec![answer]);
        let result = s3_blobs(server.port).execute(create("w/log/0000000000000001")).await;
        assert_eq!(result, Err(expected));
        // Exactly one request: object_store's own retries are off.
        thread::sleep(Duration::from_millis(50));
        assert_eq!(server.seen.lock().unwrap().len(), 1);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_create_sent_and_unanswered_is_a_timeout_never_a_clean_failure() {
    for answer in [Answer::Silence, Answer::Hangup] {
        let server = serve(vec![answer]);
        let result = s3_blobs(server.port).execute(create("w/log/0000000000000002")).await;
        assert_eq!(result, Err(BlobError::Timeout));
        let seen = server.seen.lock().unwrap();
        assert!(seen[0].starts_with("PUT /bucket/w/log/0000000000000002"), "{seen:?}");
        assert!(seen[0].to_ascii_lowercase().contains("if-none-match: *"), "{seen:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_create_that_could_not_connect_is_unavailable() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let result = s3_blobs(port).execute(create("w/k")).await;
    assert_eq!(result, Err(BlobError::Unavailable));
}

#[tokio::test(flavor = "multi_thread")]
async fn s3_conditional_delete_is_a_signed_delete_with_if_match() {
    let server = serve(vec![
        Answer::Status(204, ""),
        Answer::Status(412, "<Error><Code>PreconditionFailed</Code></Error>"),
        Answer::Status(404, "<Error><Code>NoSuchKey</Code></Error>"),
    ]);
    let blobs = s3_blobs(server.port);
    let delete = || BlobOp::Delete { key: "w/ckpt/a b".into(), if_generation: Generation("\"abc\"".into()) };
    assert_eq!(blobs.execute(delete()).await, Ok(BlobOutcome::Deleted));
    assert_eq!(blobs.execute(delete()).await, Err(BlobError::PreconditionFailed));
    assert_eq!(blobs.execute(delete()).await, Err(BlobError::NotFound));
    let seen = server.seen.lock().unwrap();
    let head = seen[0].to_ascii_lowercase();
    assert!(head.starts_with("delete /bucket/w/ckpt/a%20b http/1.1"), "{head}");
    assert!(head.contains("if-match: \"abc\""), "{head}");
    assert!(head.contains("authorization: aws4-hmac-sha256 credential=key/"), "{head}");
    assert!(head.contains("signedheaders=") && head.contains("if-match"), "If-Match is signed: {head}");
}

fn gcs_blobs(port: u16) -> ObjectStoreBlobs {
    let credentials = Arc::new(StaticCredentialProvider::new(GcpCredential { bearer: "token".into() }));
    let options = ClientOptions::new().with_allow_http(true);
    let backend =
        GcsBackend::new(format!("http://127.0.0.1:{port}"), "bucket", credentials, &options).unwrap();
    // Only the delete goes to the backend's HTTP client; the store itself is not used.
    ObjectStoreBlobs::new(Arc::new(InMemory::new()), Backend::Gcs(backend))
}

#[tokio::test(flavor = "multi_thread")]
async fn gcs_conditional_delete_sends_if_generation_match() {
    let server = serve(vec![
        Answer::Status(204, ""),
        Answer::Status(412, ""),
        Answer::Status(404, ""),
        Answer::Status(429, ""),
        Answer::Status(503, ""),
    ]);
    let blobs = gcs_blobs(server.port);
    let delete =
        || BlobOp::Delete { key: "w/log/0000000000000001".into(), if_generation: Generation::from(7) };
    assert_eq!(blobs.execute(delete()).await, Ok(BlobOutcome::Deleted));
    assert_eq!(blobs.execute(delete()).await, Err(BlobError::PreconditionFailed));
    assert_eq!(blobs.execute(delete()).await, Err(BlobError::NotFound));
    assert_eq!(blobs.execute(delete()).await, Err(BlobError::Throttled));
    assert_eq!(blobs.execute(delete()).await, Err(BlobError::Unavailable));
    let head = server.seen.lock().unwrap()[0].to_ascii_lowercase();
    assert!(head.starts_with("delete /bucket/w%2flog%2f0000000000000001 http/1.1"), "{head}");
    assert!(head.contains("x-goog-if-generation-match: 7"), "{head}");
    assert!(head.contains("authorization: bearer token"), "{head}");
    // A generation that is not a number cannot match, and is not sent.
    let odd = BlobOp::Delete { key: "w/x".into(), if_generation: Generation("\"etag\"".into()) };
    assert_eq!(blobs.execute(odd).await, Err(BlobError::PreconditionFailed));
    assert_eq!(server.seen.lock().unwrap().len(), 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn memory_and_local_have_no_conditional_delete() {
    let blobs = ObjectStoreBlobs::new(Arc::new(InMemory::new()), Backend::Memory);
    let created = blobs.execute(create("w/a")).await.unwrap();
    let BlobOutcome::Created(meta) = created else { panic!("{created:?}") };
    let delete = BlobOp::Delete { key: "w/a".into(), if_generation: meta.generation };
    assert_eq!(blobs.execute(delete).await, Err(BlobError::Unsupported));
    assert!(!Backend::Local.supports_conditional_delete());
}
