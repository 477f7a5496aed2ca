//! Commit hints between the replicas of one world (docs/OPERATIONS.md, "Commit hints").
//!
//! A replica's kernel says, through `Effect::Committed`, every sequence it learns the world
//! is committed through: its own slots and the slots it lost to. Peers fed those as
//! `Input::Follow` take turns (docs/TURNS.md) and read each other's writes at once. This
//! module carries them, with no wiring in one process and over UDP between processes:
//!
//! * In process: every `World` handle joins a process-wide registry under its world's
//!   key (the store as it names itself, the prefix, the world id) and hands each hint
//!   to every other handle under that key. Nothing to configure.
//! * Between processes: [`PeerHints`] names a UDP address to listen on and the peers to
//!   send to. A packet names its world: one of another world (or no packet of ours at
//!   all) is refused. Outgoing hints wait in a queue of at most `queue_max`; past it a
//!   hint is dropped, which costs only latency.
//!
//! Every hint goes into the receiving handle's command queue with `try_send`: a full
//! queue drops the hint instead of waiting. A hint is never needed for correctness.

use crate::runtime::Command;
use crate::sync::{AtomicU64, Ordering};
use slotlog_kernel::ids::WorldId;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Who else writes this world, as far as this handle knows: what decides whether its
/// kernel probes blindly for peers it cannot hear (`Config::blind_probe_slots`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Peers {
    /// Other processes may write this world and no hint reaches them. Handles in this
    /// process share hints; the kernel also probes (about log2 of a streak's length
    /// holds of a few create round trips), so writers that opened together in several
    /// processes never starve. The default: it is the safe one.
    #[default]
    Unknown,
    /// Only handles in this process write this world: they share hints with no wiring,
    /// and no probe is made. A lone handle never waits.
    ThisProcess,
    /// Peer processes exchange hints with this one over UDP. No probe is made: a hint
    /// lost on the way is made up for by the evidence of peers' slots (docs/TURNS.md,
    /// "Without hints").
    Udp(PeerHints),
}

impl Peers {
    /// Whether hints reach every writer of the world (no blind probes needed).
    pub(crate) fn carried(&self) -> bool {
        !matches!(self, Peers::Unknown)
    }
}

/// The most peers one [`PeerHints`] sends to: each hint is one packet a peer.
pub const PEERS_MAX: usize = 256;
/// Hints waiting to go out to peers, by default, before new ones are dropped: about four
/// seconds of slots at the fastest rate measured (250 slots a second, `fast2`).
pub const PEER_HINTS_QUEUE_MAX: usize = 1_024;
/// Bytes of one hint packet: [`HINT_MAGIC`], the world id (16 bytes), the sequence (8
/// bytes, big-endian).
pub const HINT_PACKET_BYTES: usize = 28;
/// The first four bytes of every hint packet: its format, version 1.
pub const HINT_MAGIC: [u8; 4] = *b"slh1";

/// Commit hints over UDP between processes writing one world.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PeerHints {
    /// Where this process hears its peers' hints (`0.0.0.0:7070`; port 0 picks one).
    pub listen: SocketAddr,
    /// Where its own hints go: every peer's `listen` address (at most [`PEERS_MAX`]).
    pub peers: Vec<SocketAddr>,
    /// Hints waiting to be sent beyond which new ones are dropped (at least 1).
    pub queue_max: usize,
}

impl PeerHints {
    /// Listen on `listen`, send to `peers`, with the default queue.
    pub fn new(listen: SocketAddr, peers: Vec<SocketAddr>) -> PeerHints {
        PeerHints { listen, peers, queue_max: PEER_HINTS_QUEUE_MAX }
    }
}

/// What the hints of a handle did, over its life.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HintStats {
    /// Hints handed to other handles on this world in this process.
    pub shared_in_process: u64,
    /// Hint packets sent to peers (one a peer a hint).
    pub sent: u64,
    /// Hints heard from peers and passed to this world.
    pub received: u64,
    /// Packets heard and refused: another world's, or not a hint packet.
    pub refused: u64,
    /// Hints dropped because a queue was full (the peer queue, or a handle's commands),
    /// or a packet could not be sent.
    pub dropped: u64,
}

/// The counters behind [`HintStats`], shared by the loop and the UDP tasks.
#[derive(Debug, Default)]
pub(crate) struct HintCounters {
    shared_in_process: AtomicU64,
    sent: AtomicU64,
    received: AtomicU64,
    refused: AtomicU64,
    dropped: AtomicU64,
}

impl HintCounters {
    pub fn snapshot(&self) -> HintStats {
        HintStats {
            shared_in_process: self.shared_in_process.load(Ordering::Relaxed),
            sent: self.sent.load(Ordering::Relaxed),
            received: self.received.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
        }
    }

    fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// A hint packet for `world` saying it is committed through `sequence`.
pub fn encode_hint(world: WorldId, sequence: u64) -> [u8; HINT_PACKET_BYTES] {
    let mut packet = [0u8; HINT_PACKET_BYTES];
    packet[..4].copy_from_slice(&HINT_MAGIC);
    packet[4..20].copy_from_slice(&world.0);
    packet[20..].copy_from_slice(&sequence.to_be_bytes());
    packet
}

/// The world and sequence of a hint packet; None for anything else.
pub fn decode_hint(packet: &[u8]) -> Option<(WorldId, u64)> {
    if packet.len() != HINT_PACKET_BYTES || packet[..4] != HINT_MAGIC {
        return None;
    }
    let world = WorldId(packet[4..20].try_into().expect("16 bytes"));
    let sequence = u64::from_be_bytes(packet[20..].try_into().expect("8 bytes"));
    Some((world, sequence))
}

/// A world as the in-process registry keys it: handles under one key share hints.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct WorldKey {
    /// The store as its `Blobs` names itself (`Blobs::identity`).
    pub store: String,
    pub prefix: String,
    pub world: WorldId,
}

struct Member {
    id: u64,
    commands: mpsc::WeakSender<Command>,
    counters: Arc<HintCounters>,
}

/// Every open handle by its world: one entry a handle, gone when its loop ends.
static REGISTRY: Mutex<BTreeMap<WorldKey, Vec<Member>>> = Mutex::new(BTreeMap::new());
// std's even under loom: a process-wide static outlives any one model run.
static NEXT_MEMBER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A handle's place in the registry; leaving it (drop) takes the handle out.
pub(crate) struct Registered {
    key: WorldKey,
    id: u64,
}

impl Registered {
    /// Joins `key` with the handle's own command queue (held weakly: the registry never
    /// keeps a closed world alive).
    pub fn join(
        key: WorldKey,
        commands: mpsc::WeakSender<Command>,
        counters: Arc<HintCounters>,
    ) -> Registered {
        let id = NEXT_MEMBER.fetch_add(1, Ordering::Relaxed);
        let mut registry = REGISTRY.lock().expect("the hint registry");
        registry.entry(key.clone()).or_default().push(Member { id, commands, counters });
        Registered { key, id }
    }

    /// Hands `sequence` to every other handle on this world in this process.
    fn pass(&self, sequence: u64) {
        let registry = REGISTRY.lock().expect("the hint registry");
        let Some(members) = registry.get(&self.key) else { return };
        let Some(me) = members.iter().find(|m| m.id == self.id) else { return };
        for other in members.iter().filter(|m| m.id != self.id) {
            let passed =
                other.commands.upgrade().is_some_and(|c| c.try_send(Command::Follow(sequence)).is_ok());
            HintCounters::add(if passed { &me.counters.shared_in_process } else { &me.counters.dropped });
        }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut registry = REGISTRY.lock().expect("the hint registry");
        if let Some(members) = registry.get_mut(&self.key) {
            members.retain(|m| m.id != self.id);
            if members.is_empty() {
                registry.remove(&self.key);
            }
        }
    }
}

/// Where a handle's hints go once it is open: its registry place and its UDP queue.
pub(crate) struct Hints {
    counters: Arc<HintCounters>,
    registered: Option<Registered>,
    #[cfg(not(madsim))]
    udp: Option<udp::Udp>,
}

impl Hints {
    pub fn counters(&self) -> &HintCounters {
        &self.counters
    }

    /// Carries `sequence` to every peer it can: in process, and over UDP.
    pub fn pass(&self, sequence: u64) {
        if let Some(r) = &self.registered {
            r.pass(sequence);
        }
        #[cfg(not(madsim))]
        if let Some(udp) = &self.udp {
            udp.pass(sequence);
        }
    }
}

/// What a loop needs to start its hints once the world is open.
pub(crate) struct HintsPlan {
    /// Shares hints in process (off only for comparison runs).
    pub in_process: bool,
    /// The store's identity, for the registry key.
    pub store: String,
    pub prefix: String,
    /// The socket bound at open, when peers are configured.
    #[cfg(not(madsim))]
    pub udp: Option<(tokio::net::UdpSocket, PeerHints)>,
    pub counters: Arc<HintCounters>,
}

impl HintsPlan {
    /// Starts carrying hints for `world`, whose loop takes commands on `commands`.
    pub fn start(self, world: WorldId, commands: mpsc::WeakSender<Command>) -> Hints {
        let registered = self.in_process.then(|| {
            let key = WorldKey { store: self.store.clone(), prefix: self.prefix.clone(), world };
            Registered::join(key, commands.clone(), self.counters.clone())
        });
        #[cfg(not(madsim))]
        let udp = self
            .udp
            .map(|(socket, config)| udp::Udp::start(socket, &config, world, commands, self.counters.clone()));
        Hints {
            counters: self.counters,
            registered,
            #[cfg(not(madsim))]
            udp,
        }
    }
}

/// Checks a [`PeerHints`] and binds its socket (before anything is sent to the store).
#[cfg(not(madsim))]
pub(crate) async fn bind(config: &PeerHints) -> Result<tokio::net::UdpSocket, crate::error::Error> {
    let refuse = |reason: String| crate::error::Error::PeerHints { listen: config.listen, reason };
    if config.peers.len() > PEERS_MAX {
        return Err(refuse(format!("{} peers, at most {PEERS_MAX}", config.peers.len())));
    }
    if config.queue_max == 0 {
        return Err(refuse("queue_max is 0".to_string()));
    }
    tokio::net::UdpSocket::bind(config.listen).await.map_err(|e| refuse(format!("cannot listen: {e}")))
}

#[cfg(not(madsim))]
mod udp {
    use super::{decode_hint, encode_hint, HintCounters, PeerHints, HINT_PACKET_BYTES};
    use crate::runtime::Command;
    use slotlog_kernel::ids::WorldId;
    use std::net::SocketAddr;
    use std::sync::Arc;
    use tokio::net::UdpSocket;
    use tokio::sync::{mpsc, oneshot};

    /// A handle's UDP hints: the queue its hints wait in, and the receiver's stop.
    pub(crate) struct Udp {
        out: mpsc::Sender<u64>,
        counters: Arc<HintCounters>,
        /// Dropped with the loop: the receiving task ends.
        _stop: oneshot::Sender<()>,
    }

    impl Udp {
        pub fn start(
            socket: UdpSocket,
            config: &PeerHints,
            world: WorldId,
            commands: mpsc::WeakSender<Command>,
            counters: Arc<HintCounters>,
        ) -> Udp {
            let socket = Arc::new(socket);
            let (out, queue) = mpsc::channel(config.queue_max);
            let (stop, stopped) = oneshot::channel();
            tokio::spawn(send(socket.clone(), queue, config.peers.clone(), world, counters.clone()));
            tokio::spawn(receive(socket, stopped, world, commands, counters.clone()));
            Udp { out, counters, _stop: stop }
        }

        /// Queues `sequence` for the peers; a full queue drops it.
        pub fn pass(&self, sequence: u64) {
            if self.out.try_send(sequence).is_err() {
                HintCounters::add(&self.counters.dropped);
            }
        }
    }

    /// Sends each queued hint to every peer; ends when the loop drops the queue.
    async fn send(
        socket: Arc<UdpSocket>,
        mut queue: mpsc::Receiver<u64>,
        peers: Vec<SocketAddr>,
        world: WorldId,
        counters: Arc<HintCounters>,
    ) {
        while let Some(sequence) = queue.recv().await {
            let packet = encode_hint(world, sequence);
            for peer in &peers {
                let sent = socket.send_to(&packet, peer).await.is_ok();
                HintCounters::add(if sent { &counters.sent } else { &counters.dropped });
            }
        }
    }

    /// Hands every hint of this world heard on the socket to the loop; refuses the rest.
    /// Ends when the loop ends.
    async fn receive(
        socket: Arc<UdpSocket>,
        mut stopped: oneshot::Receiver<()>,
        world: WorldId,
        commands: mpsc::WeakSender<Command>,
        counters: Arc<HintCounters>,
    ) {
        // One byte more than a packet: a longer datagram is not ours, not a truncated one.
        let mut buf = [0u8; HINT_PACKET_BYTES + 1];
        loop {
            let n = tokio::select! {
                _ = &mut stopped => return,
                received = socket.recv_from(&mut buf) => match received {
                    Ok((n, _from)) => n,
                    // An ICMP error for an earlier send (a peer not listening yet) and the
                    // like: the socket still works. A pause keeps a socket that fails
                    // every time from spinning a core.
                    Err(_) => {
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                        continue;
                    }
                },
            };
            match decode_hint(&buf[..n]) {
                Some((w, sequence)) if w == world => {
                    let Some(commands) = commands.upgrade() else { return };
                    let passed = commands.try_send(Command::Follow(sequence)).is_ok();
                    HintCounters::add(if passed { &counters.received } else { &counters.dropped });
                }
                _ => HintCounters::add(&counters.refused),
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_peer_queue_drops_hints_past_queue_max_and_counts_them() {
            let (out, _queue) = mpsc::channel(2);
            let (stop, _stopped) = oneshot::channel();
            let counters = Arc::new(HintCounters::default());
            let udp = Udp { out, counters: counters.clone(), _stop: stop };
            for sequence in 1..=5 {
                udp.pass(sequence);
            }
            assert_eq!(counters.snapshot().dropped, 3, "two wait, the rest are dropped");
        }
    }
}

/// `just loom`: the counters [`World::stats`](crate::World::stats) snapshots while the
/// loop, the UDP tasks and other handles add to them.
#[cfg(all(test, slotlog_loom))]
mod loom_tests {
    use super::{HintCounters, HintStats};
    use loom::sync::Arc;

    fn counts(s: &HintStats) -> [u64; 5] {
        [s.shared_in_process, s.sent, s.received, s.refused, s.dropped]
    }

    /// Each counter stands alone (Relaxed is enough): a snapshot taken while others count
    /// never sees a count that did not happen, a later one never sees fewer, and once the
    /// counting threads are joined every count is there.
    #[test]
    fn a_snapshot_sees_no_count_that_did_not_happen_none_go_back_and_none_is_lost() {
        loom::model(|| {
            let counters = Arc::new(HintCounters::default());
            let udp = {
                let c = counters.clone();
                loom::thread::spawn(move || {
                    HintCounters::add(&c.sent);
                    HintCounters::add(&c.dropped);
                })
            };
            let peer = {
                let c = counters.clone();
                loom::thread::spawn(move || {
                    HintCounters::add(&c.sent);
                    HintCounters::add(&c.received);
                })
            };
            let during = counts(&counters.snapshot());
            let later = counts(&counters.snapshot());
            let most = [0, 2, 1, 0, 1];
            for i in 0..5 {
                assert!(during[i] <= most[i], "counter {i}: {during:?}");
                assert!(later[i] >= during[i], "counter {i} went back: {during:?} then {later:?}");
            }
            udp.join().expect("the udp thread");
            peer.join().expect("the peer thread");
            assert_eq!(counts(&counters.snapshot()), most);
        });
    }
}
