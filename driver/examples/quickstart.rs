//! Quickstart: open a world in a local directory, write, read, watch, and reopen it.
//!
//! cargo run --example quickstart            (uses a fresh temporary directory)
//! cargo run --example quickstart -- DIR     (keeps the world in DIR)

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
    let world = World::open(store.clone(), "worlds/quickstart", WorldConfig::default()).await?;
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
    let listing = world.list("/notes", 100).await?;
    println!("list /notes at sequence {}: {:?}", listing.at_sequence, listing.answer);

    // The change feed, from the beginning.
    let mut watch = world.watch(0).await?;
    for _ in 0..3 {
        let change = watch.next().await?;
        println!("change {}: {:?} {:?} v{}", change.sequence, change.kind, change.path, change.version);
    }
    drop(watch);
    world.close().await;

    // Reopen: the world is read back from the bucket, chain verified.
    let again = World::open(store, "worlds/quickstart", WorldConfig::default()).await?;
    let versions = again.versions("/notes/hello.md").await?;
    println!("reopened at sequence {}: {:?}", versions.at_sequence, versions.answer);
    again.close().await;
    println!("world kept in {}", dir.display());
    Ok(())
}
