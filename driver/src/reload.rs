//! The reload (SPEC 10.15, the reload rule): a replica that fails closed asking to be
//! reopened (`Unconfirmed`, `CreateBelowCollection`, `BelowCollection`) is replaced by a
//! new one that opens from the newest checkpoint, as the simulator's harness does. Owns
//! when a reload may happen (the limit on reloads in a row without progress) and the
//! counters that survive a reload; the driver loop (`runtime`) does the replacing.

use slotlog_kernel::{CollectorStats, CommitterStats, CompactorStats, FailReason};

/// Counters of a `World` over every replica it ran (a reload starts a new one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorldStats {
    /// Times the replica was replaced by one opened from the newest checkpoint, in all
    /// and by the reason the old one gave.
    pub reloads: u64,
    /// Reloads of a replica unconfirmed past the reload age.
    pub reloads_unconfirmed: u64,
    /// Reloads after a slot create landed below collection (a fork refused).
    pub reloads_create_below_collection: u64,
    /// Reloads of a replica whose tip a drop had collected past.
    pub reloads_below_collection: u64,
    /// Slots this world's replicas created, and the members in them.
    pub slots_won: u64,
    /// Members in the slots this world's replicas created.
    pub members_committed: u64,
    /// Slot creates refused by the post-create check (their members answered `Uncertain`).
    pub stalled_creates_refused: u64,
    /// Metadata reads of a slot just created, whose create's answer carried no store time
    /// (SPEC 10.15): one round trip more per slot. Zero on S3, GCS and Azure through
    /// `open_store`, whose answers' `Date` the driver keeps (`DatedConnector`).
    pub slot_stats_after_create: u64,
    /// Slot names this world's replicas found taken by a peer's slot.
    pub slots_lost: u64,
    /// Turns given to peers: holds begun (docs/TURNS.md).
    pub holds: u64,
    /// Of those, blind holds: begun with no hint heard for a peer's slots.
    pub blind_holds: u64,
    /// Of those, rotation waits: a peer's turn by the newest slots' writers.
    pub rotation_waits: u64,
    /// Writes refused with `Busy` (docs/OPERATIONS.md, "Admission")...
    pub refused_busy: u64,
    /// ...of them by the pace rule (the queue would not have drained in time).
    pub refused_pace: u64,
    /// Control writes (`set_policy`, archive flips) admitted ahead of ordinary ones.
    pub control_admitted: u64,
    /// What this handle's commit hints did (docs/OPERATIONS.md, "Commit hints").
    pub hints: crate::hints::HintStats,
    /// What the compactors did: checkpoints written, adopted, objects created.
    pub compactor: CompactorStats,
    /// What the collectors did: drops, deletes, freshens.
    pub collector: CollectorStats,
    /// The current replica's views: pinned, expired, refused, and what pins hold now.
    pub views: slotlog_kernel::ViewStats,
    /// The current replica's body search: answers by mode, index builds, bodies indexed.
    pub search: slotlog_kernel::search::SearchStats,
    /// Bytes the current replica's search index holds, as counted (0 when it has none).
    pub search_index_bytes: usize,
    /// Writes timed, slow writes, samples dropped (docs/OPERATIONS.md, "Telemetry").
    pub telemetry: crate::telemetry::TelemetryStats,
    /// Handles open on this world's replica now, the asking one included: more than one
    /// when handles in this process share it (`WorldConfig::share_replica`), and then
    /// every other counter here is the shared replica's (docs/OPERATIONS.md, "Handles in
    /// one process").
    pub handles: u64,
}

impl WorldStats {
    /// Adds one replica's counters.
    pub(crate) fn add_replica(
        &mut self,
        committer: &CommitterStats,
        compactor: &CompactorStats,
        collector: &CollectorStats,
    ) {
        self.slots_won += committer.slots_won;
        self.members_committed += committer.members_committed;
        self.stalled_creates_refused += committer.stalled_creates_refused;
        self.slot_stats_after_create += committer.slot_stats_after_create;
        self.slots_lost += committer.slots_lost;
        self.holds += committer.holds;
        self.blind_holds += committer.blind_holds;
        self.rotation_waits += committer.rotation_waits;
        self.refused_busy += committer.refused_busy;
        self.refused_pace += committer.refused_pace;
        self.control_admitted += committer.control_admitted;
        self.compactor.add(compactor);
        self.collector.add(collector);
    }
}

/// Whether the kernel asks to be reopened for this failure (the reload rule), rather
/// than having found something in the bucket it cannot trust.
pub fn is_reload(reason: &FailReason) -> bool {
    reason.is_reload()
}

/// Reloads in a row without progress, against their limit.
pub(crate) struct Reloads {
    max: u32,
    in_a_row: u32,
    /// The replica running now committed a slot or answered a request well.
    progressed: bool,
}

impl Reloads {
    pub fn new(max: u32) -> Reloads {
        Reloads { max, in_a_row: 0, progressed: false }
    }

    /// The running replica did something a caller or a peer can see.
    pub fn progress(&mut self) {
        self.progressed = true;
    }

    /// The replica failed with `reason`, a reload reason: Ok(reloads in a row) when it may
    /// be reopened, Err(the same count) once that is past the limit. `Unconfirmed` never
    /// counts against the limit: it takes `reload_after` of the replica's own clock
    /// since it opened (its open confirms the snapshot), so it cannot come in a quick loop.
    pub fn reload(&mut self, reason: &FailReason, stats: &mut WorldStats) -> Result<u32, u32> {
        if self.progressed || matches!(reason, FailReason::Unconfirmed { .. }) {
            self.in_a_row = 0;
        }
        self.progressed = false;
        self.in_a_row += 1;
        if self.in_a_row > self.max {
            return Err(self.in_a_row - 1);
        }
        stats.reloads += 1;
        match reason {
            FailReason::Unconfirmed { .. } => stats.reloads_unconfirmed += 1,
            FailReason::CreateBelowCollection { .. } | FailReason::CreatedSlotGone { .. } => {
                stats.reloads_create_below_collection += 1
            }
            FailReason::BelowCollection { .. } => stats.reloads_below_collection += 1,
            _ => {}
        }
        Ok(self.in_a_row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn below() -> FailReason {
        FailReason::CreateBelowCollection { key: "w/log/0000000000000002".into(), base_us: 0, landed_us: 1 }
    }

    #[test]
    fn only_the_reload_rules_reasons_reload() {
        assert!(is_reload(&FailReason::Unconfirmed { unconfirmed_ms: 1 }));
        assert!(is_reload(&below()));
        assert!(is_reload(&FailReason::BelowCollection { next: 2, found: 3 }));
        assert!(!is_reload(&FailReason::ForeignWorld));
        assert!(!is_reload(&FailReason::SlotVanished { sequence: 2 }));
    }

    #[test]
    fn reloads_without_progress_stop_past_the_limit() {
        let (mut reloads, mut stats) = (Reloads::new(2), WorldStats::default());
        assert_eq!(reloads.reload(&below(), &mut stats), Ok(1));
        assert_eq!(reloads.reload(&below(), &mut stats), Ok(2));
        assert_eq!(reloads.reload(&below(), &mut stats), Err(2));
        assert_eq!((stats.reloads, stats.reloads_create_below_collection), (2, 2));
    }

    #[test]
    fn progress_between_reloads_starts_the_count_again() {
        let (mut reloads, mut stats) = (Reloads::new(1), WorldStats::default());
        assert_eq!(reloads.reload(&below(), &mut stats), Ok(1));
        reloads.progress();
        assert_eq!(reloads.reload(&below(), &mut stats), Ok(1));
        assert_eq!(stats.reloads, 2);
    }

    #[test]
    fn an_unconfirmed_replica_never_counts_against_the_limit() {
        let (mut reloads, mut stats) = (Reloads::new(1), WorldStats::default());
        let unconfirmed = FailReason::Unconfirmed { unconfirmed_ms: 43_200_001 };
        for _ in 0..3 {
            assert_eq!(reloads.reload(&unconfirmed, &mut stats), Ok(1));
        }
        assert_eq!(stats.reloads_unconfirmed, 3);
    }
}
