//! A world on S3 (or any S3-compatible server): the store from a URL, with credentials and
//! region from the environment as the AWS SDKs take them, and slotlog's own settings on
//! top (object_store's retries off, conditional puts on).
//!
//! cargo run --example s3 --features s3 -- s3://BUCKET/worlds/demo
//!
//! Against a local server (moto, MinIO), name its endpoint:
//! SLOTLOG_S3_ENDPOINT=http://127.0.0.1:5000 AWS_ACCESS_KEY_ID=test \
//! AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 cargo run --example s3 -- s3://b/w
//!
//! A store that cannot be reached, refuses the credentials or has no such bucket ends the
//! open with an error naming the cause (`Error::kind` tells them apart), within the
//! open deadline (`WorldConfig::open_deadline`).

use slotlog::{open_store, Answer, Expected, StoreOptions, World, WorldConfig};

#[real_tokio::main(crate = "real_tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args().nth(1).unwrap_or_else(|| "s3://slotlog-example/worlds/demo".into());
    // The store, what kind of store it is (so conditional deletes can be sent), and the
    // prefix inside it the world lives under, all from the URL and the environment.
    let (store, backend, prefix) = open_store(&url, &StoreOptions::from_env())?;
    let world =
        World::builder(store).backend(backend).prefix(prefix).config(WorldConfig::default()).open().await?;

    let receipt = world.publish("/hello.md", "hello from S3", Expected::Any).await?;
    println!("committed: {receipt:?}");
    let doc = world.fetch("/hello.md", None).await?;
    if let Answer::Document { entry, body, .. } = &doc.answer {
        println!("{} v{}: {:?}", entry.path, entry.version, String::from_utf8_lossy(body));
    }
    world.close().await;
    Ok(())
}
