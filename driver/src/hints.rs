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
//!   hint is dropped, which costs only latency. With a [`HintKey`] every packet is
//!   signed (docs/SECURITY.md): a forged, replayed or foreign-world packet is dropped
//!   and counted, and never reaches the kernel, so it never holds a create.
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
/// Bytes of one signed hint packet: [`SIGNED_HINT_MAGIC`], the world id (16 bytes), the
/// sequence, the sender (a random id a handle draws when it starts) and the sender's
/// packet counter (8 bytes each, big-endian), then the keyed hash of all before it (32).
pub const SIGNED_HINT_PACKET_BYTES: usize = 76;
/// The first four bytes of every signed hint packet (a [`HintKey`] is set).
pub const SIGNED_HINT_MAGIC: [u8; 4] = *b"slh2";
/// Bytes of a signed packet the keyed hash covers: everything before the hash.
const SIGNED_BYTES: usize = SIGNED_HINT_PACKET_BYTES - 32;
/// Senders whose newest counter a receiver remembers (for replays). Only a packet whose
/// hash checks adds one, so only a holder of the key can fill it; past it the sender
/// heard from longest ago is forgotten. Each handle of each peer process is one sender
/// (a restarted handle draws a new id): four times [`PEERS_MAX`] is many restarts.
pub const SENDERS_MAX: usize = 4 * PEERS_MAX;

/// The 32-byte secret that signs hint packets between processes (blake3 in keyed mode).
/// Every process of one world needs the same key. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct HintKey([u8; 32]);

impl HintKey {
    /// A key from its 32 bytes (from a secret store, or `getrandom` once, shared).
    pub fn new(bytes: [u8; 32]) -> HintKey {
        HintKey(bytes)
    }

    fn mac(&self, signed: &[u8]) -> blake3::Hash {
        blake3::keyed_hash(&self.0, signed)
    }
}

impl std::fmt::Debug for HintKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HintKey(<redacted>)")
    }
}

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
    /// Signs every packet and refuses every unsigned, forged or replayed one
    /// (docs/SECURITY.md). None (the default): packets are neither signed nor checked
    /// beyond their world id, and anyone who can reach `listen` can cost holds.
    pub key: Option<HintKey>,
}

impl PeerHints {
    /// Listen on `listen`, send to `peers`, with the default queue and no key.
    pub fn new(listen: SocketAddr, peers: Vec<SocketAddr>) -> PeerHints {
        PeerHints { listen, peers, queue_max: PEER_HINTS_QUEUE_MAX, key: None }
    }

    /// The same, signing and checking every packet with `key`.
    pub fn with_key(mut self, key: HintKey) -> PeerHints {
        self.key = Some(key);
        self
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
    /// Packets heard and refused: not a hint packet, or not of the format this handle
    /// takes (a signed one without a key).
    pub refused: u64,
    /// Packets heard naming another world (signed or not), dropped.
    pub foreign_world: u64,
    /// Packets of this world heard with a key set whose keyed hash does not check, or
    /// that are not signed at all: dropped.
    pub forged: u64,
    /// Signed packets whose hash checks but whose counter is not above the highest heard
    /// from that sender (a replay, or one overtaken on the way): dropped.
    pub replayed: u64,
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
    foreign_world: AtomicU64,
    forged: AtomicU64,
    replayed: AtomicU64,
    dropped: AtomicU64,
}

impl HintCounters {
    pub fn snapshot(&self) -> HintStats {
        HintStats {
            shared_in_process: self.shared_in_process.load(Ordering::Relaxed),
            sent: self.sent.load(Ordering::Relaxed),
            received: self.received.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            foreign_world: self.foreign_world.load(Ordering::Relaxed),
            forged: self.forged.load(Ordering::Relaxed),
            replayed: self.replayed.load(Ordering::Relaxed),
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

/// A signed hint packet for `world` committed through `sequence`: packet `counter` of
/// `sender`, signed with `key`.
pub fn encode_signed_hint(
    world: WorldId,
    sequence: u64,
    sender: u64,
    counter: u64,
    key: &HintKey,
) -> [u8; SIGNED_HINT_PACKET_BYTES] {
    let mut packet = [0u8; SIGNED_HINT_PACKET_BYTES];
    packet[..4].copy_from_slice(&SIGNED_HINT_MAGIC);
    packet[4..20].copy_from_slice(&world.0);
    packet[20..28].copy_from_slice(&sequence.to_be_bytes());
    packet[28..36].copy_from_slice(&sender.to_be_bytes());
    packet[36..44].copy_from_slice(&counter.to_be_bytes());
    let mac = key.mac(&packet[..SIGNED_BYTES]);
    packet[SIGNED_BYTES..].copy_from_slice(mac.as_bytes());
    packet
}

/// What a heard packet is, to a handle of one world with or without a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Heard {
    /// A hint of this world: unsigned (no key), or signed with a hash that checks.
    Hint {
        /// The sequence the sender says the world is committed through.
        sequence: u64,
        /// A signed packet's sender and counter, for the replay check.
        signer: Option<(u64, u64)>,
    },
    /// Not a hint packet, or a signed one to a handle without a key.
    NotAHint,
    /// A hint packet naming another world.
    ForeignWorld,
    /// A packet of this world that is unsigned, or whose hash does not check, while a
    /// key is set.
    Forged,
}

/// Judges a packet heard by a handle of `world` that signs with `key`, if any.
pub fn judge_packet(packet: &[u8], world: WorldId, key: Option<&HintKey>) -> Heard {
    if let Some((w, sequence)) = decode_hint(packet) {
        return match (w == world, key) {
            (false, _) => Heard::ForeignWorld,
            (true, Some(_)) => Heard::Forged,
            (true, None) => Heard::Hint { sequence, signer: None },
        };
    }
    if packet.len() != SIGNED_HINT_PACKET_BYTES || packet[..4] != SIGNED_HINT_MAGIC {
        return Heard::NotAHint;
    }
    let Some(key) = key else { return Heard::NotAHint };
    let field = |at: usize| u64::from_be_bytes(packet[at..at + 8].try_into().expect("8 bytes"));
    if packet[4..20] != world.0 {
        return Heard::ForeignWorld;
    }
    let mac: [u8; 32] = packet[SIGNED_BYTES..].try_into().expect("32 bytes");
    // blake3::Hash compares in constant time.
    if key.mac(&packet[..SIGNED_BYTES]) != blake3::Hash::from(mac) {
        return Heard::Forged;
    }
    Heard::Hint { sequence: field(20), signer: Some((field(28), field(36))) }
}

/// The highest counter heard from each signing sender: a packet at or below it is a
/// replay. At most [`SENDERS_MAX`] senders; past it the one heard from longest ago goes.
#[cfg(not(madsim))]
#[derive(Debug, Default)]
pub(crate) struct Senders {
    /// Sender, to its highest counter and when (in packets taken) it was last heard.
    highest: BTreeMap<u64, (u64, u64)>,
    taken: u64,
}

#[cfg(not(madsim))]
impl Senders {
    /// Whether packet `counter` of `sender` is new (and remembers it), or a replay.
    pub fn take(&mut self, sender: u64, counter: u64) -> bool {
        if self.highest.get(&sender).is_some_and(|&(highest, _)| counter <= highest) {
            return false;
        }
        if !self.highest.contains_key(&sender) && self.highest.len() >= SENDERS_MAX {
            let oldest = self.highest.iter().min_by_key(|(_, &(_, at))| at).map(|(&s, _)| s);
            if let Some(oldest) = oldest {
                self.highest.remove(&oldest);
            }
        }
        self.taken += 1;
        self.highest.insert(sender, (counter, self.taken));
        true
    }
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
    use super::{
        encode_hint, encode_signed_hint, judge_packet, Heard, HintCounters, HintKey, PeerHints, Senders,
        SIGNED_HINT_PACKET_BYTES,
    };
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
            let key = config.key.clone();
            let sender = crate::world::random_u64();
            tokio::spawn(send(
                socket.clone(),
                queue,
                config.peers.clone(),
                world,
                sender,
                key.clone(),
                counters.clone(),
            ));
            tokio::spawn(receive(socket, stopped, world, key, commands, counters.clone()));
            Udp { out, counters, _stop: stop }
        }

        /// Queues `sequence` for the peers; a full queue drops it.
        pub fn pass(&self, sequence: u64) {
            if self.out.try_send(sequence).is_err() {
                HintCounters::add(&self.counters.dropped);
            }
        }
    }

    /// Sends each queued hint to every peer, signed as `sender` when a key is set; ends
    /// when the loop drops the queue.
    async fn send(
        socket: Arc<UdpSocket>,
        mut queue: mpsc::Receiver<u64>,
        peers: Vec<SocketAddr>,
        world: WorldId,
        sender: u64,
        key: Option<HintKey>,
        counters: Arc<HintCounters>,
    ) {
        let mut counter = 0u64;
        while let Some(sequence) = queue.recv().await {
            counter += 1;
            let signed;
            let unsigned;
            let packet: &[u8] = match &key {
                Some(key) => {
                    signed = encode_signed_hint(world, sequence, sender, counter, key);
                    &signed
                }
                None => {
                    unsigned = encode_hint(world, sequence);
                    &unsigned
                }
            };
            for peer in &peers {
                let sent = socket.send_to(packet, peer).await.is_ok();
                HintCounters::add(if sent { &counters.sent } else { &counters.dropped });
            }
        }
    }

    /// Hands every hint of this world heard on the socket to the loop (with a key, only
    /// signed ones whose hash checks, each sender's counters rising); drops and counts the
    /// rest. Ends when the loop ends.
    async fn receive(
        socket: Arc<UdpSocket>,
        mut stopped: oneshot::Receiver<()>,
        world: WorldId,
        key: Option<HintKey>,
        commands: mpsc::WeakSender<Command>,
        counters: Arc<HintCounters>,
    ) {
        let mut senders = Senders::default();
        // One byte more than the longest packet: a longer datagram is not ours, not a
        // truncated one.
        let mut buf = [0u8; SIGNED_HINT_PACKET_BYTES + 1];
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
            let sequence = match judge_packet(&buf[..n], world, key.as_ref()) {
                Heard::Hint { sequence, signer: None } => sequence,
                Heard::Hint { sequence, signer: Some((sender, counter)) } => {
                    if !senders.take(sender, counter) {
                        HintCounters::add(&counters.replayed);
                        continue;
                    }
                    sequence
                }
                Heard::NotAHint => {
                    HintCounters::add(&counters.refused);
                    continue;
                }
                Heard::ForeignWorld => {
                    HintCounters::add(&counters.foreign_world);
                    continue;
                }
                Heard::Forged => {
                    HintCounters::add(&counters.forged);
                    continue;
                }
            };
            let Some(commands) = commands.upgrade() else { return };
            let passed = commands.try_send(Command::Follow(sequence)).is_ok();
            HintCounters::add(if passed { &counters.received } else { &counters.dropped });
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::hints::{encode_hint, encode_signed_hint, HintKey, PeerHints};

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

        const WORLD: WorldId = WorldId([7; 16]);
        const OTHER_WORLD: WorldId = WorldId([8; 16]);

        /// A receiving handle on a real socket, and a raw socket to send it packets.
        async fn receiver(
            key: Option<HintKey>,
        ) -> (Udp, mpsc::Receiver<Command>, UdpSocket, Arc<HintCounters>) {
            let socket = UdpSocket::bind("127.0.0.1:0").await.expect("bind the receiver");
            let listen = socket.local_addr().expect("its address");
            let mut config = PeerHints::new(listen, Vec::new());
            config.key = key;
            let (commands, heard) = mpsc::channel(16);
            let counters = Arc::new(HintCounters::default());
            let udp = Udp::start(socket, &config, WORLD, commands.downgrade(), counters.clone());
            // The loop's own sender: the receiving task upgrades its weak one.
            std::mem::forget(commands);
            let from = UdpSocket::bind("127.0.0.1:0").await.expect("bind the sender");
            from.connect(listen).await.expect("connect");
            (udp, heard, from, counters)
        }

        /// Sends `packets`, then an unsigned marker packet the receiver refuses, and waits
        /// until that one is counted: every packet before it was judged (one socket, in
        /// order, on loopback).
        async fn deliver(from: &UdpSocket, counters: &HintCounters, packets: &[&[u8]]) {
            let refused_before = counters.snapshot().refused;
            for p in packets {
                from.send(p).await.expect("send");
            }
            from.send(b"not a hint").await.expect("send the marker");
            for _ in 0..500 {
                if counters.snapshot().refused > refused_before {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            panic!("the receiver judged nothing: {:?}", counters.snapshot());
        }

        fn followed(heard: &mut mpsc::Receiver<Command>) -> Vec<u64> {
            let mut sequences = Vec::new();
            while let Ok(command) = heard.try_recv() {
                if let Command::Follow(s) = command {
                    sequences.push(s);
                }
            }
            sequences
        }

        fn key() -> HintKey {
            HintKey::new([42; 32])
        }

        #[tokio::test]
        async fn a_signed_hint_whose_hash_checks_reaches_the_kernel() {
            let (_udp, mut heard, from, counters) = receiver(Some(key())).await;
            deliver(&from, &counters, &[&encode_signed_hint(WORLD, 12, 5, 1, &key())]).await;
            assert_eq!(followed(&mut heard), vec![12]);
            assert_eq!(counters.snapshot().received, 1);
        }

        #[tokio::test]
        async fn a_forged_hint_is_dropped_and_counted() {
            let (_udp, mut heard, from, counters) = receiver(Some(key())).await;
            let wrong_key = encode_signed_hint(WORLD, 12, 5, 1, &HintKey::new([1; 32]));
            let mut altered = encode_signed_hint(WORLD, 12, 5, 1, &key());
            altered[27] ^= 1; // the sequence, after signing
            let unsigned = encode_hint(WORLD, 12);
            deliver(&from, &counters, &[&wrong_key, &altered, &unsigned]).await;
            assert_eq!(followed(&mut heard), Vec::<u64>::new());
            let stats = counters.snapshot();
            assert_eq!((stats.forged, stats.received), (3, 0), "{stats:?}");
        }

        #[tokio::test]
        async fn a_replayed_hint_is_dropped_and_counted() {
            let (_udp, mut heard, from, counters) = receiver(Some(key())).await;
            let first = encode_signed_hint(WORLD, 12, 5, 1, &key());
            let second = encode_signed_hint(WORLD, 13, 5, 2, &key());
            let other_sender = encode_signed_hint(WORLD, 14, 6, 1, &key());
            deliver(&from, &counters, &[&first, &second, &first, &second, &other_sender]).await;
            assert_eq!(followed(&mut heard), vec![12, 13, 14]);
            let stats = counters.snapshot();
            assert_eq!((stats.replayed, stats.received), (2, 3), "{stats:?}");
        }

        #[tokio::test]
        async fn a_foreign_world_hint_is_dropped_and_counted() {
            let (_udp, mut heard, from, counters) = receiver(Some(key())).await;
            let signed = encode_signed_hint(OTHER_WORLD, 12, 5, 1, &key());
            let unsigned = encode_hint(OTHER_WORLD, 12);
            deliver(&from, &counters, &[&signed, &unsigned]).await;
            assert_eq!(followed(&mut heard), Vec::<u64>::new());
            let stats = counters.snapshot();
            assert_eq!((stats.foreign_world, stats.received), (2, 0), "{stats:?}");
        }

        #[tokio::test]
        async fn without_a_key_unsigned_hints_pass_and_signed_ones_are_refused() {
            let (_udp, mut heard, from, counters) = receiver(None).await;
            let signed = encode_signed_hint(WORLD, 12, 5, 1, &key());
            deliver(&from, &counters, &[&encode_hint(WORLD, 11), &signed, &encode_hint(OTHER_WORLD, 3)])
                .await;
            assert_eq!(followed(&mut heard), vec![11]);
            let stats = counters.snapshot();
            assert_eq!((stats.received, stats.refused, stats.foreign_world), (1, 2, 1), "{stats:?}");
        }

        #[tokio::test]
        async fn two_keyed_handles_hear_each_other() {
            let (a_socket, b_socket) = (
                UdpSocket::bind("127.0.0.1:0").await.expect("bind a"),
                UdpSocket::bind("127.0.0.1:0").await.expect("bind b"),
            );
            let b_addr = b_socket.local_addr().expect("b's address");
            let a_config =
                PeerHints::new(a_socket.local_addr().expect("a's address"), vec![b_addr]).with_key(key());
            let b_config = PeerHints::new(b_addr, Vec::new()).with_key(key());
            let (a_commands, _a_heard) = mpsc::channel(16);
            let (b_commands, mut b_heard) = mpsc::channel(16);
            let (a_counters, b_counters) =
                (Arc::new(HintCounters::default()), Arc::new(HintCounters::default()));
            let a = Udp::start(a_socket, &a_config, WORLD, a_commands.downgrade(), a_counters.clone());
            let _b = Udp::start(b_socket, &b_config, WORLD, b_commands.downgrade(), b_counters.clone());
            a.pass(3);
            a.pass(4);
            for _ in 0..500 {
                if b_counters.snapshot().received == 2 {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            assert_eq!(followed(&mut b_heard), vec![3, 4]);
            let stats = b_counters.snapshot();
            assert_eq!((stats.forged, stats.replayed), (0, 0), "{stats:?}");
        }

        #[test]
        fn a_hint_key_never_shows_in_debug() {
            let config = PeerHints::new("127.0.0.1:1".parse().expect("an address"), Vec::new())
                .with_key(HintKey::new([0xab; 32]));
            let shown = format!("{config:?}");
            assert!(shown.contains("HintKey(<redacted>)"), "{shown}");
            assert!(!shown.contains("171") && !shown.to_lowercase().contains("abab"), "{shown}");
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
