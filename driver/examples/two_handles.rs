//! Two handles on one world in one process, writing at once. With `Peers::ThisProcess`
//! they hand each other their commit hints with no wiring: each learns of the other's
//! slots as they land, so neither waits out a lost race (docs/TURNS.md). Across
//! processes, `Peers::Udp` carries the same hints (docs/OPERATIONS.md, "Commit hints").
//!
//! cargo run --example two_handles

use futures_util::future::join_all;
use object_store::memory::InMemory;
use slotlog::{Expected, Peers, World, WorldConfig};
use std::sync::Arc;

/// Writes each handle makes, all in flight at once.
const WRITES_PER_HANDLE: usize = 200;

#[real_tokio::main(crate = "real_tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = Arc::new(InMemory::new());
    let mut config = WorldConfig::default();
    // Two replicas racing, as two processes would: without this the handles share one.
    config.share_replica = false;
    // Only these handles write the world: they share hints, and no blind probe is made.
    config.peers = Peers::ThisProcess;
    let open = || World::builder(store.clone()).prefix("worlds/pair").config(config.clone()).open();
    let (a, b) = (open().await?, open().await?);

    let writes = |world: &World, name: &'static str| {
        let world = world.clone();
        async move {
            let all = (0..WRITES_PER_HANDLE).map(|i| {
                let world = world.clone();
                async move {
                    world.publish(&format!("/{name}/{i}.md"), format!("{name} {i}"), Expected::Any).await
                }
            });
            join_all(all).await.into_iter().filter(|r| r.is_ok()).count()
        }
    };
    let (a_ok, b_ok) = futures_util::join!(writes(&a, "a"), writes(&b, "b"));
    println!("committed: a {a_ok} of {WRITES_PER_HANDLE}, b {b_ok} of {WRITES_PER_HANDLE}");

    // Each handle's replica: the slots it won, and how many of its turns a hint began.
    for (name, world) in [("a", &a), ("b", &b)] {
        let stats = world.stats().await?;
        println!("{name}: slots won {}, members committed {}", stats.slots_won, stats.members_committed);
    }
    a.close().await;
    b.close().await;
    Ok(())
}
