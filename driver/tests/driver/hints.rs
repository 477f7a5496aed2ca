//! Commit hints come with the crate (issue 11; docs/OPERATIONS.md, "Commit hints"):
//! handles on one world in one process share them with no wiring, and peer processes
//! exchange them over UDP, each packet naming its world, so one of another world is
//! refused. Without any hints, writers degrade but do not starve.

use object_store::memory::InMemory;
use object_store::throttle::{ThrottleConfig, ThrottledStore};
use object_store::ObjectStore;
use slotlog::{
    encode_hint, encode_signed_hint, Error, ErrorKind, Expected, HintKey, HintStats, PeerHints, Peers, World,
    WorldConfig, WorldId, WriteError, WriteOk,
};
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn config(peers: Peers) -> WorldConfig {
    let mut config = WorldConfig::default();
    config.peers = peers;
    config
}

/// Every handle here opens a replica of its own (`share_replica` off), as handles in
/// separate processes would: hints pass between replicas.
async fn open(store: &Arc<dyn ObjectStore>, prefix: &str, mut config: WorldConfig) -> World {
    config.share_replica = false;
    World::builder(store.clone()).prefix(prefix).config(config).open().await.unwrap()
}

/// The handle's hint counters once `done` holds of them (polled every 10 ms, up to 10 s),
/// or as they are then.
async fn hints_when(world: &World, done: impl Fn(&HintStats) -> bool) -> HintStats {
    for _ in 0..1_000 {
        let hints = world.stats().await.unwrap().hints;
        if done(&hints) {
            return hints;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    world.stats().await.unwrap().hints
}

/// A loopback address free a moment ago (the port is picked by the system).
fn free_loopback() -> SocketAddr {
    UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap().local_addr().unwrap()
}

async fn write_some(world: &World, n: usize, tag: &str) {
    for i in 0..n {
        world.publish(&format!("/{tag}/{i}.md"), "x", Expected::Any).await.unwrap();
    }
}

// In process.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handles_on_one_world_in_one_process_share_hints_with_no_wiring() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let a = open(&store, "w", config(Peers::ThisProcess)).await;
    let b = open(&store, "w", config(Peers::ThisProcess)).await;
    assert_eq!(a.world_id(), b.world_id());
    write_some(&a, 5, "a").await;
    let shared = a.stats().await.unwrap().hints.shared_in_process;
    assert!(shared >= 5, "each of a's commits went to b: {shared}");
    // b reads a's writes at once (an exact read probes anyway; the hint made b follow).
    assert!(b.fetch("/a/4.md", None).await.is_ok());
    write_some(&b, 3, "b").await;
    assert!(b.stats().await.unwrap().hints.shared_in_process >= 3);
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handles_on_other_prefixes_or_stores_share_nothing() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let other_store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let a = open(&store, "w", WorldConfig::default()).await;
    let other_prefix = open(&store, "v", WorldConfig::default()).await;
    // The same world id on another memory store: another store all the same.
    let mut forced = WorldConfig::default();
    forced.world_id = Some(a.world_id());
    let other = open(&other_store, "w", forced).await;
    assert_eq!(other.world_id(), a.world_id());
    write_some(&a, 3, "a").await;
    let hints = a.stats().await.unwrap().hints;
    assert_eq!((hints.shared_in_process, hints.dropped), (0, 0), "{hints:?}");
    for w in [a, other_prefix, other] {
        w.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_handle_leaves_the_registry_and_none_is_kept_open_by_it() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let a = open(&store, "w", WorldConfig::default()).await;
    let b = open(&store, "w", WorldConfig::default()).await;
    b.close().await;
    // A handle dropped without close ends its loop too: the registry holds no handle.
    drop(open(&store, "w", WorldConfig::default()).await);
    tokio::time::sleep(Duration::from_millis(50)).await;
    write_some(&a, 3, "a").await;
    let hints = a.stats().await.unwrap().hints;
    assert_eq!((hints.shared_in_process, hints.dropped), (0, 0), "{hints:?}");
    a.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharing_in_process_can_be_turned_off_for_comparison_runs() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let mut off = config(Peers::ThisProcess);
    off.hints_in_process = false;
    let a = open(&store, "w", off.clone()).await;
    let b = open(&store, "w", off).await;
    write_some(&a, 3, "a").await;
    assert_eq!(a.stats().await.unwrap().hints.shared_in_process, 0);
    a.close().await;
    b.close().await;
}

/// Three handles on one world over a store whose puts take 10 ms, each with closed-loop
/// writers: returns each handle's committed writes and the writes answered `Uncertain`
/// or `Expired`.
async fn three_handles_race(config: WorldConfig) -> (Vec<u64>, u64, slotlog::WorldStats) {
    let throttle =
        ThrottleConfig { wait_put_per_call: Duration::from_millis(10), ..ThrottleConfig::default() };
    let store: Arc<dyn ObjectStore> = Arc::new(ThrottledStore::new(InMemory::new(), throttle));
    let mut worlds = Vec::new();
    for _ in 0..3 {
        worlds.push(open(&store, "w", config.clone()).await);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let failed = Arc::new(AtomicU64::new(0));
    let mut counts = Vec::new();
    let mut tasks = Vec::new();
    for (h, world) in worlds.iter().enumerate() {
        let committed = Arc::new(AtomicU64::new(0));
        counts.push(committed.clone());
        for w in 0..16 {
            let (world, stop, failed, committed) =
                (world.clone(), stop.clone(), failed.clone(), committed.clone());
            tasks.push(tokio::spawn(async move {
                let mut i = 0;
                while !stop.load(Ordering::Acquire) {
                    i += 1;
                    match world.publish(&format!("/h{h}/w{w}/{i}.md"), "x", Expected::Any).await {
                        Ok(WriteOk::Committed(_)) => {
                            committed.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(Error::Write(WriteError::Uncertain { .. } | WriteError::Expired { .. })) => {
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                        other => panic!("{other:?}"),
                    }
                }
            }));
        }
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Release);
    for t in tasks {
        t.await.unwrap();
    }
    let mut stats = slotlog::WorldStats::default();
    for w in &worlds {
        let s = w.stats().await.unwrap();
        stats.holds += s.holds;
        stats.blind_holds += s.blind_holds;
        stats.slots_lost += s.slots_lost;
        w.close().await;
    }
    (counts.iter().map(|c| c.load(Ordering::Relaxed)).collect(), failed.load(Ordering::Relaxed), stats)
}

/// What the issue measured by hand: three handles on one world, hints wired. Now there
/// is nothing to wire, and every handle takes turns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_handles_on_one_world_take_turns_through_shared_hints() {
    let (counts, failed, stats) = three_handles_race(config(Peers::ThisProcess)).await;
    let total: u64 = counts.iter().sum();
    assert_eq!(failed, 0, "{counts:?}");
    for c in &counts {
        assert!(*c as f64 >= 0.3 * total as f64 / 3.0, "a fair share each: {counts:?}");
    }
    assert!(stats.holds > stats.blind_holds, "turns owed through hints were given: {stats:?}");
}

/// Issue 11: without hints, one handle took 85 to 97% of the writes and the others'
/// expired. With every hint gone (no sharing, no peers), blind turns keep every handle
/// writing: none starves, no write expires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_any_hints_three_handles_degrade_but_none_starves() {
    let mut none = config(Peers::Unknown);
    none.hints_in_process = false;
    let (counts, failed, _) = three_handles_race(none.clone()).await;
    let total: u64 = counts.iter().sum();
    assert_eq!(failed, 0, "{counts:?}");
    for c in &counts {
        assert!(*c as f64 >= 0.3 * total as f64 / 3.0, "a fair share each: {counts:?}");
    }
    // A winner that seals at once (no wait for the writers it answered) wins streaks:
    // blind turns are what keep the others writing then.
    none.kernel.seal_after_answers = false;
    let (counts, failed, stats) = three_handles_race(none).await;
    let total: u64 = counts.iter().sum();
    assert_eq!(failed, 0, "{counts:?}");
    for c in &counts {
        assert!(*c as f64 >= 0.3 * total as f64 / 3.0, "a fair share each, sealing at once: {counts:?}");
    }
    assert!(stats.blind_holds > 0, "{stats:?}");
}

// Blind probes follow what the handle knows of its peers.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_handle_probes_only_while_its_peers_are_unknown() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let unknown = open(&store, "u", config(Peers::Unknown)).await;
    write_some(&unknown, 20, "u").await;
    assert!(unknown.stats().await.unwrap().blind_holds > 0, "probed at 8 and 16 slots alone");
    let known = open(&store, "k", config(Peers::ThisProcess)).await;
    write_some(&known, 20, "k").await;
    assert_eq!(known.stats().await.unwrap().holds, 0, "a lone handle never waits");
    unknown.close().await;
    known.close().await;
}

// Between processes: UDP.

fn udp(listen: SocketAddr, peers: Vec<SocketAddr>) -> WorldConfig {
    // In-process sharing off: only UDP can carry the hints here.
    let mut config = config(Peers::Udp(PeerHints::new(listen, peers)));
    config.hints_in_process = false;
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_over_udp_hear_each_others_hints() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let (at_a, at_b) = (free_loopback(), free_loopback());
    let a = open(&store, "w", udp(at_a, vec![at_b])).await;
    let b = open(&store, "w", udp(at_b, vec![at_a])).await;
    write_some(&a, 5, "a").await;
    let sent = hints_when(&a, |h| h.sent >= 5).await;
    assert!(sent.sent >= 5, "{sent:?}");
    let heard = hints_when(&b, |h| h.received >= 5).await;
    assert!(heard.received >= 5, "b heard a's hints: {heard:?}");
    assert_eq!(b.stats().await.unwrap().hints.refused, 0);
    a.close().await;
    b.close().await;
}

fn keyed(listen: SocketAddr, peers: Vec<SocketAddr>, key: [u8; 32]) -> WorldConfig {
    let mut config = config(Peers::Udp(PeerHints::new(listen, peers).with_key(HintKey::new(key))));
    config.hints_in_process = false;
    config
}

/// With a hint key (docs/SECURITY.md): peers sharing it hear each other; a packet signed
/// with another key, an unsigned one and a replay are dropped, counted in `World::stats`,
/// and never followed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyed_peers_hear_each_other_and_forged_or_replayed_packets_are_dropped_and_counted() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let (at_a, at_b) = (free_loopback(), free_loopback());
    let a = open(&store, "w", keyed(at_a, vec![at_b], [3; 32])).await;
    let b = open(&store, "w", keyed(at_b, vec![at_a], [3; 32])).await;
    write_some(&a, 3, "a").await;
    let heard = hints_when(&b, |h| h.received >= 3).await;
    assert_eq!((heard.forged, heard.replayed, heard.foreign_world), (0, 0, 0), "{heard:?}");
    let sender = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let world = b.world_id();
    sender.send_to(&encode_signed_hint(world, 1_000, 9, 1, &HintKey::new([4; 32])), at_b).unwrap();
    sender.send_to(&encode_hint(world, 1_000), at_b).unwrap();
    let good = encode_signed_hint(world, 1, 9, 1, &HintKey::new([3; 32]));
    sender.send_to(&good, at_b).unwrap();
    sender.send_to(&good, at_b).unwrap();
    let hints = hints_when(&b, |h| h.forged + h.replayed >= 3).await;
    assert_eq!((hints.forged, hints.replayed), (2, 1), "{hints:?}");
    assert_eq!(hints.received, heard.received + 1, "only the good one was followed: {hints:?}");
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_packet_of_another_world_is_dropped_and_one_that_is_no_hint_at_all_refused() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let at = free_loopback();
    let world = open(&store, "w", udp(at, vec![])).await;
    let sender = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let mut other = world.world_id();
    other.0[0] ^= 1;
    sender.send_to(&encode_hint(other, 7), at).unwrap();
    sender.send_to(b"commit 7", at).unwrap(); // the writer tool's old text format
    let mut long = encode_hint(world.world_id(), 7).to_vec();
    long.push(0);
    sender.send_to(&long, at).unwrap();
    let hints = hints_when(&world, |h| h.refused + h.foreign_world >= 3).await;
    assert_eq!((hints.refused, hints.foreign_world, hints.received), (2, 1, 0), "{hints:?}");
    // A packet of this world is followed.
    sender.send_to(&encode_hint(world.world_id(), 0), at).unwrap();
    let hints = hints_when(&world, |h| h.received >= 1).await;
    assert_eq!((hints.refused, hints.foreign_world, hints.received), (2, 1, 1), "{hints:?}");
    world.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_hints_that_cannot_be_had_refuse_the_open_before_any_store_call() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let taken = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let at = taken.local_addr().unwrap();
    let mut no_queue = PeerHints::new(free_loopback(), vec![]);
    no_queue.queue_max = 0;
    let cases = [
        PeerHints::new(at, vec![]),
        no_queue,
        PeerHints::new(free_loopback(), vec![at; slotlog::hints::PEERS_MAX + 1]),
    ];
    for peer_hints in cases {
        let config = config(Peers::Udp(peer_hints.clone()));
        let error = World::builder(store.clone()).prefix("w").config(config).open().await.err().unwrap();
        assert!(matches!(error, Error::PeerHints { .. }), "{peer_hints:?}: {error}");
        assert_eq!(error.kind(), ErrorKind::Configuration);
    }
    let listed = store.list_with_delimiter(None).await.unwrap();
    assert!(listed.objects.is_empty() && listed.common_prefixes.is_empty(), "nothing was written");
}

#[test]
fn a_hint_packet_is_magic_world_and_sequence_and_nothing_else() {
    let world = WorldId([7; 16]);
    let packet = encode_hint(world, 0x0102_0304_0506_0708);
    assert_eq!(packet.len(), slotlog::hints::HINT_PACKET_BYTES);
    assert_eq!(&packet[..4], b"slh1");
    assert_eq!(&packet[4..20], &[7; 16]);
    assert_eq!(&packet[20..], &[1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(slotlog::decode_hint(&packet), Some((world, 0x0102_0304_0506_0708)));
    assert_eq!(slotlog::decode_hint(&packet[..27]), None);
    let mut wrong = packet;
    wrong[0] = b'x';
    assert_eq!(slotlog::decode_hint(&wrong), None);
}
