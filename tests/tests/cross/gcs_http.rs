//! The production adapter against the simulated GCS served over HTTP (`slotlog-gcs-http`,
//! started in this process on a loopback port): object_store's real GCS client and the
//! crate's hand-written conditional delete meet GCS's rules (generations, 412s, one
//! mutation per name per second) over the XML API.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::{BackoffConfig, ClientConfigKey, RetryConfig};
use slotlog::{gcs_store, new_op_id, Answer, BlobFuture, Blobs, ObjectStoreBlobs, World, WorldConfig};
use slotlog_gcs_http::{Config, Faults, Server};
use slotlog_kernel::blob::{BlobError, BlobOp, BlobOutcome, Generation};
use slotlog_kernel::world::{Expected, Mutation, Write};
use slotlog_kernel::WriteOk;
use slotlog_tests::conformance::{run_suite, Capabilities};

const BUCKET: &str = "slotlog-test";

/// A service account key that asks for no OAuth token (object_store's `disable_oauth`):
/// requests go unsigned to the base URL, as to an emulator.
fn key_json() -> String {
    r#"{"disable_oauth": true, "client_email": "", "private_key": "", "private_key_id": ""}"#.to_string()
}

fn builder(base_url: &str) -> GoogleCloudStorageBuilder {
    GoogleCloudStorageBuilder::new()
        .with_bucket_name(BUCKET)
        .with_base_url(base_url)
        .with_service_account_key(key_json())
        .with_config(GoogleConfigKey::Client(ClientConfigKey::AllowHttp), "true")
}

async fn serve(config: Config) -> (Server, String) {
    let server = Server::new(config).unwrap();
    let address = server.clone().spawn().await.unwrap();
    (server, format!("http://{address}"))
}

/// GCS allows one mutation of a name a second and answers faster ones 429, as the
/// simulation does; the kernel retries those with backoff. The suite calls the adapter
/// directly, so this does the kernel's part: a 429 is asked again after a pause.
struct RetryThrottled(ObjectStoreBlobs);

const THROTTLED_RETRIES_MAX: usize = 40;

impl Blobs for RetryThrottled {
    fn execute(&self, op: BlobOp) -> BlobFuture {
        let inner = self.0.clone();
        Box::pin(async move {
            for _ in 0..THROTTLED_RETRIES_MAX {
                match inner.execute(op.clone()).await {
                    Err(BlobError::Throttled) => tokio::time::sleep(Duration::from_millis(100)).await,
                    other => return other,
                }
            }
            Err(BlobError::Throttled)
        })
    }

    fn kind(&self) -> &'static str {
        self.0.kind()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gcs_over_http_passes_the_suite() {
    let (server, base) = serve(Config::new(BUCKET)).await;
    let (store, backend) = gcs_store(builder(&base)).unwrap();
    let caps = Capabilities::of(&backend);
    assert_eq!(caps, Capabilities::ALL);
    let blobs = Arc::new(RetryThrottled(ObjectStoreBlobs::new(store, backend)));
    run_suite(&format!("simulated gcs over http at {base}"), blobs, caps, "suite/").await.assert_passed();
    let stats = server.stats();
    println!("gcs-http: {stats:?}");
    assert!(stats.creates > 0 && stats.deletes > 0, "{stats:?}");
}

/// The generation a listing gives is the object's generation (not its ETag, which on GCS
/// is a hash of the bytes): a delete fenced on it succeeds, and one on a generation
/// overtaken by a rewrite of the same bytes is refused and keeps the object.
#[tokio::test(flavor = "multi_thread")]
async fn gcs_over_http_conditional_delete_is_fenced_on_the_listed_generation() {
    let (_server, base) = serve(Config { name_update_interval: None, ..Config::new(BUCKET) }).await;
    let (store, backend) = gcs_store(builder(&base)).unwrap();
    let blobs = ObjectStoreBlobs::new(store, backend);
    let key = "w/ckpt/shard".to_string();
    let bytes = Bytes::from_static(b"shard bytes");
    let Ok(BlobOutcome::Created(first)) =
        blobs.execute(BlobOp::Create { key: key.clone(), bytes: bytes.clone() }).await
    else {
        panic!("create");
    };
    let listed = blobs.execute(BlobOp::List { prefix: "w/".into(), start_after: None, limit: 10 }).await;
    let Ok(BlobOutcome::Listed { entries, .. }) = listed else { panic!("{listed:?}") };
    assert_eq!(entries[0].generation, first.generation, "a listing names the generation");
    assert!(first.generation.as_number().is_some(), "a GCS generation is a number: {:?}", first.generation);
    let rewrite = BlobOp::Rewrite {
        key: key.clone(),
        bytes: bytes.clone(),
        if_generation: entries[0].generation.clone(),
    };
    let Ok(BlobOutcome::Rewritten(second)) = blobs.execute(rewrite).await else { panic!("rewrite") };
    assert_ne!(second.generation, first.generation, "GCS generations change on every write");
    let stale = BlobOp::Delete { key: key.clone(), if_generation: entries[0].generation.clone() };
    assert_eq!(blobs.execute(stale).await, Err(BlobError::PreconditionFailed));
    assert!(matches!(blobs.execute(BlobOp::Get { key: key.clone() }).await, Ok(BlobOutcome::Got { .. })));
    let made_up = BlobOp::Delete { key: key.clone(), if_generation: Generation("\"abc\"".into()) };
    assert_eq!(blobs.execute(made_up).await, Err(BlobError::PreconditionFailed));
    let current = BlobOp::Delete { key: key.clone(), if_generation: second.generation };
    assert_eq!(blobs.execute(current).await, Ok(BlobOutcome::Deleted));
    assert_eq!(blobs.execute(BlobOp::Get { key }).await, Err(BlobError::NotFound));
}

/// A create that lands but is answered 503, retried by object_store itself (retries on for
/// this client, unlike the crate's own stores): the retry meets the taken name and
/// answers `AlreadyExists`; the kernel reads the slot, finds its own batch, and
/// acknowledges every write as committed, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_create_retried_by_object_store_into_already_exists_is_settled_as_ours() {
    let config = Config { name_update_interval: None, ..Config::new(BUCKET) };
    let (server, base) = serve(config).await;
    // The conditional delete's backend from the crate; the store with object_store's
    // retries on, which `gcs_store` would have turned off.
    let (_, backend) = gcs_store(builder(&base)).unwrap();
    let retrying = RetryConfig {
        max_retries: 3,
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(20),
            base: 2.0,
        },
        retry_timeout: Duration::from_secs(10),
    };
    let store = Arc::new(builder(&base).with_retry(retrying).build().unwrap());
    let world = World::open_with(store, backend, "retried", WorldConfig::default()).await.unwrap();
    server.set_faults(Faults { create_applied_then_5xx_rate: 1.0, ..Faults::default() }).unwrap();
    let mut receipts = Vec::new();
    for i in 0..5 {
        let mutation = Mutation::Publish {
            path: format!("/docs/{i}.md"),
            body: Bytes::from(format!("body {i}")),
            catalog: None,
            expected: Expected::Any,
        };
        let answer = world.write(Write { op_id: new_op_id(), mutation }).await;
        let Ok(WriteOk::Committed(receipt)) = answer else { panic!("write {i}: {answer:?}") };
        receipts.push(receipt);
    }
    server.set_faults(Faults::default()).unwrap();
    let stats = server.stats();
    println!("gcs-http: {stats:?}");
    assert!(stats.creates_applied_then_5xx >= 5, "every create landed and was answered 503: {stats:?}");
    for (i, receipt) in receipts.iter().enumerate() {
        match world.fetch(&format!("/docs/{i}.md"), None).await.unwrap().answer {
            Answer::Document { entry, body, .. } => {
                assert_eq!((entry.version, &body[..]), (receipt.version, format!("body {i}").as_bytes()));
            }
            other => panic!("write {i}: {other:?}"),
        }
    }
    let sequences: Vec<u64> = receipts.iter().map(|r| r.sequence).collect();
    assert!(sequences.windows(2).all(|w| w[0] < w[1]), "one slot each, in order: {sequences:?}");
    world.close().await;
}
