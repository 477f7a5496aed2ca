//! Quickstart: open a world in a local directory through the builder, write, read, watch
//! the change feed as a `Stream`, read the world's counters, close it, and reopen it.
//!
//! cargo run --example quickstart            (uses a fresh temporary directory)
//! cargo run --example quickstart -- DIR     (keeps the world in DIR)

use futures_util::StreamExt;
use object_store::local::LocalFileSystem;
use slotlog::{Answer, Expected, World, WorldConfig};
use std::sync::Arc;

#[real_tokio::main(crate = "real_tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let temp;
    let dir = match std::env::args().nth(1) {
        Some(d) => std::path::PathBuf::from(d),
        None => {
            temp = tempfile::tempdir()?;
            temp.path().to_path_buf()
        }
    };
    std::fs::create_dir_all(&dir)?;
    let store = Arc::new(LocalFileSystem::new_with_prefix(&dir)?);

    // Open (here: create) the world, and commit a few writes.
    let world = World::builder(store.clone())
        .prefix("worlds/quickstart")
        .config(WorldConfig::default())
        .open()
        .await?;
    let first = world.publish("/notes/hello.md", "hello, world", Expected::Absent).await?;
    println!("published: {first:?}");
    world.append("/notes/hello.md", "\nand more", Expected::Any).await?;
    world.publish("/notes/todo.md", "- try slotlog", Expected::Any).await?;

    // A precondition that fails says why, with the data.
    let conflict = world.publish("/notes/hello.md", "stale", Expected::Version(1)).await;
    println!("stale expected version: {conflict:?}");

    // Exact read: sees every write acknowledged before it began.
    let doc = world.fetch("/notes/hello.md", None).await?;
    if let Answer::Document { entry, body, .. } = &doc.answer {
        println!("{} v{}: {:?}", entry.path, entry.version, String::from_utf8_lossy(body));
    }
    // Catalog read: may trail another replica by at most a second.
    let listing = world.list("/notes", None, 100).await?;
    println!("list /notes at sequence {}: {:?}", listing.at_sequence, listing.answer);

    // The change feed, from the beginning, as a Stream (dropping it ends the watch).
    let changes: Vec<_> = world.watch(0).await?.take(3).collect().await;
    for change in changes {
        let change = change?;
        println!("change {}: {:?} {:?} v{}", change.sequence, change.kind, change.path, change.version);
    }

    // What this handle's replica did, then close: every write was answered above, so
    // nothing is in flight.
    let stats = world.stats().await?;
    println!("slots won {}, members committed {}", stats.slots_won, stats.members_committed);
    world.close().await;

    // Reopen: the world is read back from the bucket, chain verified.
    let again = World::open(store, "worlds/quickstart", WorldConfig::default()).await?;
    let versions = again.versions("/notes/hello.md").await?;
    println!("reopened at sequence {}: {:?}", versions.at_sequence, versions.answer);
    again.close().await;
    if std::env::args().nth(1).is_some() {
        println!("world kept in {}", dir.display());
    }
    Ok(())
}
