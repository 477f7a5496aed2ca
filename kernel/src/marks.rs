//! Coverage marks: a count of each rare branch a replica took, named in the protocol's
//! words (FoundationDB's code probes, TigerBeetle's coverage marks). A simulation proves
//! only the paths it drives; the marks say which ones it drove. Counting changes nothing
//! the replica does: a mark is an add to a counter the replica owns, never read by the
//! kernel itself, so the effects and the trace are the same with or without anyone
//! looking at them.
//!
//! Every timer's expiry and every branch that settles an uncertain outcome has a mark.
//! The harness reads them through [`crate::Replica::marks`] and sums them across
//! incarnations and replicas; which marks a sweep must reach is the harness's list, not
//! the kernel's.

/// Declares the marks once: the enum, its names, and the list of all of them.
macro_rules! marks {
    ($($(#[doc = $doc:literal])+ $variant:ident = $name:literal,)+) => {
        /// A rare branch of the protocol (see the module docs).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Mark {
            $($(#[doc = $doc])+ $variant,)+
        }

        impl Mark {
            /// Every mark, in declaration order (the order reports list them in).
            pub const ALL: &'static [Mark] = &[$(Mark::$variant,)+];

            /// The mark's name in reports: snake case, the protocol's words.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Mark::$variant => $name,)+
                }
            }
        }
    };
}

marks! {
    // Turns (SPEC 7, docs/TURNS.md).

    /// A hint inside the slot this store was creating owed a peer a turn: the peer lost
    /// that very name to the create still in flight.
    TurnOwedWhileCreating = "turn_owed_while_creating",
    /// A win began a hold: the store's next create waits for the peer it owes a turn.
    HoldBegun = "hold_begun",
    /// A hold ended by its own clock: no peer slot arrived within `hold` (the peer went
    /// quiet, crashed, or lost the race again), so the held batch is created as built.
    HoldExpiredByClock = "hold_expired_by_clock",
    /// A hold ended because a peer's slot arrived: the held batches are rebuilt on it.
    HoldAnsweredByPeer = "hold_answered_by_peer",
    /// A turn was owed at a win but no hold began: a peer's slot had already answered the
    /// hint, or the hint was older than a hold.
    HoldSkipped = "hold_skipped",
    /// A win began a blind hold: the store sees its peers' slots but no hints for them,
    /// and has made a streak of its own slots (docs/TURNS.md, "Without hints").
    BlindHoldBegun = "blind_hold_begun",
    /// A store gave the next name to a peer whose turn it was by the newest slots'
    /// writers (docs/TURNS.md, "Rotation").
    RotationGaveWay = "rotation_gave_way",
    /// A loser lost two names in a row with no hint saying the world is further on, and
    /// lists past its tip before it rebuilds (a peer pipelines faster than one read a
    /// loss).
    CatchUpAfterLosses = "catch_up_after_losses",

    // The head's slot create (SPEC 7).

    /// A slot create was answered by an error that may have applied (a timeout, a 5xx):
    /// the slot's name is read to settle it.
    CreateAmbiguous = "create_ambiguous",
    /// The read after an ambiguous create found nothing: the identical bytes are created
    /// again.
    CreateAmbiguousSettledAbsent = "create_ambiguous_settled_absent",
    /// The read after an ambiguous create found this store's own slot: it landed, and its
    /// members are answered.
    CreateAmbiguousSettledOurs = "create_ambiguous_settled_ours",
    /// The read after an ambiguous create found a peer's slot: installed, and every batch
    /// rebuilt on it.
    CreateAmbiguousSettledTheirs = "create_ambiguous_settled_theirs",
    /// A create found its name taken by this store's own slot (an earlier attempt or a
    /// hedged twin landed first): committed, not lost.
    CreateTakenWasOurs = "create_taken_was_ours",
    /// A create found its name taken below the tip and older than the index of recent
    /// slots: read to learn whose it is.
    CreateTakenOlderThanIndex = "create_taken_older_than_index",
    /// A slot's writes were just answered and the open batch waited one input before
    /// sealing, so the writers answered could join it.
    SealDeferred = "seal_deferred",
    /// A create answered without the store's time (S3): a metadata read of the new slot
    /// learns it before any member is answered.
    CreateUntimedStat = "create_untimed_stat",
    /// That metadata read found the slot gone or replaced: its members are answered
    /// `Uncertain` and the replica fails closed.
    CreatedSlotGone = "created_slot_gone",
    /// The post-create check (SPEC 10.15): a slot landed too long after its base, so its
    /// members are answered `Uncertain` and the replica fails closed to reopen.
    StalledCreateRefused = "stalled_create_refused",
    /// A head with answers only (no member applied) found the tip moved past its base:
    /// its writes are judged again on the new tip.
    AnswersOnlyRebuilt = "answers_only_rebuilt",
    /// The replica failed closed while its head's create was unsettled: its members are
    /// answered `Uncertain`, not failed.
    AbortHeadUncertain = "abort_head_uncertain",

    // Catch-up (SPEC 7).

    /// A loser behind the hints (or losing again to unhinted slots) listed the log past
    /// its tip before rebuilding.
    CatchUpListed = "catch_up_listed",
    /// A catch-up listing stopped at its limit and listed on after its last name.
    CatchUpPaged = "catch_up_paged",
    /// A catch-up listing skipped a name while listing a later one: the name is read
    /// directly.
    CatchUpGapRead = "catch_up_gap_read",
    /// That direct read found nothing: the log is listed once more from the name.
    CatchUpGapRelisted = "catch_up_gap_relisted",

    // Write deadlines and admission.

    /// A write's deadline passed while it was still queued: answered `Expired`.
    WriteExpiredQueued = "write_expired_queued",
    /// A write's deadline passed while its batch might still commit: answered
    /// `Uncertain`.
    WriteUncertainAtDeadline = "write_uncertain_at_deadline",
    /// A write was refused at once: the queue was full.
    WriteRefusedBusy = "write_refused_busy",

    // The read path's probe (SPEC 8).

    /// One probe's answer served two or more reads that had waited on it.
    ProbeShared = "probe_shared",
    /// A probe found a slot at the name the committer is creating and left it to the
    /// committer's own create.
    ProbeParked = "probe_parked",
    /// A probe found the next slot and installed it.
    ProbeFollowedSlot = "probe_followed_slot",
    /// The next name was absent while a hint said the world was past it: the log was
    /// listed from there to tell a race from a collected tip.
    ProbeTipListed = "probe_tip_listed",
    /// That listing found nothing past the tip: the hint cannot be met and is forgotten.
    ProbeHintUnmet = "probe_hint_unmet",
    /// That listing found a later slot and not the next: collection passed this replica's
    /// tip, and it fails closed to reopen (SPEC 10.15).
    ProbeBelowCollection = "probe_below_collection",
    /// A probe call failed on a 429, 5xx or timeout and was retried inside its flight.
    ProbeRetried = "probe_retried",
    /// A probe flight failed: the reads waiting on it were answered `Unavailable`.
    ProbeFlightFailed = "probe_flight_failed",
    /// A read's deadline passed before it could be answered.
    ReadDeadline = "read_deadline",
    /// A read waited for a history block its answer lives in.
    ReadAwaitsHistory = "read_awaits_history",
    /// A fetch waited for its body to be read from the bucket.
    ReadAwaitsBody = "read_awaits_body",
    /// A read-only replica opened a world whose genesis stopped before checkpoint zero,
    /// from the marker's genesis, without making it.
    OpenReadOnlyWithoutZero = "open_read_only_without_zero",
    /// A view's read answered from its pin after slots installed past it.
    ViewReadBehindTip = "view_read_behind_tip",
    /// A view's read found its pin too old, or not held: answered `ViewExpired`.
    ViewExpired = "view_expired",
    /// A view's read found its pin evicted to keep the images within
    /// `view_images_max`: answered `ViewEvicted`.
    ViewEvicted = "view_evicted",

    // Body search (SPEC 8.6).

    /// A search answered in body mode, from an index covering its state.
    SearchBodyAnswer = "search_body_answer",
    /// A search found no index covering its state within the wait: answered in catalog
    /// mode.
    SearchCatalogAnswer = "search_catalog_answer",
    /// A catalog answer held a document its catalog record matched and its path alone
    /// did not.
    SearchCatalogRecordMatched = "search_catalog_record_matched",
    /// A search waited for the index to cover its state, and it did in time.
    SearchWaitedForIndex = "search_waited_for_index",
    /// A view's search answered in body mode from a pin behind the tip.
    SearchBodyBehindTip = "search_body_behind_tip",
    /// More installs queued for the index than it takes one by one: they collapsed into
    /// one comparison with the served state.
    SearchInstallsCollapsed = "search_installs_collapsed",
    /// The index went unused past the idle age and was dropped.
    SearchIndexIdle = "search_index_idle",
    /// The index grew past `search_bytes_max` and was dropped.
    SearchIndexOverBudget = "search_index_over_budget",
    /// A build read a body segment part and took its verified bodies (SPEC 10.17).
    SearchSegmentRead = "search_segment_read",
    /// A segment part read for the index carried its bodies' words, and the build took
    /// them rather than tokenizing its bodies (SPEC 10.17, schema 2).
    SearchSegmentWordsTaken = "search_segment_words_taken",

    // The change feed (SPEC 9).

    /// A watch asked for before the world was open waited for the open.
    WatchEarly = "watch_early",
    /// A subscriber fell behind the ring (or started behind it) and reads its backlog
    /// from slots.
    FeedBehindRing = "feed_behind_ring",
    /// A subscriber's cursor was older than any slot the feed may read: told to resync.
    FeedResync = "feed_resync",
    /// Slots before the checkpoint the replica opened from were read and verified along
    /// the chain for a subscriber.
    FeedVerifiedBeforeCheckpoint = "feed_verified_before_checkpoint",
    /// A slot before that checkpoint, read for a page, was found collected: the pages on
    /// it end in a resync.
    FeedBeforeSlotCollected = "feed_before_slot_collected",

    // Opening (cold start).

    /// The marker was absent and the prefix empty: this opening made the world.
    OpenGenesis = "open_genesis",
    /// A genesis raced: objects without a marker, or a marker create that failed; the
    /// marker is read once more.
    OpenGenesisRace = "open_genesis_race",
    /// Checkpoint zero's create failed (taken by a racing opener, or ambiguous): read
    /// back.
    OpenCheckpointZeroRace = "open_checkpoint_zero_race",
    /// A checkpoint the listing gave was gone when read and none was skipped: the
    /// listing starts over.
    OpenCheckpointRelisted = "open_checkpoint_relisted",
    /// The opening loaded a full checkpoint (not checkpoint zero).
    OpenLoadedCheckpoint = "open_loaded_checkpoint",
    /// A checkpoint could not be loaded: the opening fell back to the next older one.
    OpenFallbackCheckpoint = "open_fallback_checkpoint",
    /// Replay needed a name no listing gave while a later one was listed: read directly.
    OpenReplayGap = "open_replay_gap",

    // The compactor (SPEC 10.11, 10.14, 10.15).

    /// A run went on to its next bounded step.
    RunStepContinued = "run_step_continued",
    /// A checkpoint came due by the bytes of the bodies the slots since the newest one
    /// carry, before their count or the interval.
    CheckpointDueCarried = "checkpoint_due_carried",
    /// A look found a newer checkpoint than this replica's: it adopts it instead of
    /// stepping (the defer rule).
    CheckpointAdopted = "checkpoint_adopted",
    /// An adoption was given up: the checkpoint or an object it names could not be read
    /// or did not fit.
    AdoptionAbandoned = "adoption_abandoned",
    /// A backstop found the newest checkpoint old enough and stepped.
    BackstopStepped = "backstop_stepped",
    /// A backstop's look found the newest checkpoint young enough and did not step.
    BackstopDeferred = "backstop_deferred",
    /// A checkpoint object create failed (taken or ambiguous): a metadata read settles
    /// whether it is stored.
    ObjectCreateUnsettled = "object_create_unsettled",
    /// That read found it absent: the identical bytes are created again.
    ObjectCreateSettledAbsent = "object_create_settled_absent",
    /// A stored object a run would use was old and rewritten with a new stamp first.
    FreshenRewrite = "freshen_rewrite",
    /// A freshen found the object changed since its metadata read: read again.
    FreshenRaced = "freshen_raced",
    /// A checkpoint name was found holding identical bytes (a racer's, or ours twice).
    CheckpointIdenticalRace = "checkpoint_identical_race",
    /// A checkpoint name was found holding a fold of the same log over other layers (a
    /// racer stepped from another checkpoint, SPEC 10.16): the run ends, a look adopts it.
    CheckpointOtherLayers = "checkpoint_other_layers",
    /// A checkpoint create that failed was found never to have landed: created again.
    CheckpointCreateSettledAbsent = "checkpoint_create_settled_absent",
    /// A checkpoint found taken by identical bytes was old and freshened.
    CheckpointFreshened = "checkpoint_freshened",
    /// A run's last look found a checkpoint after its base: it ends without its create.
    RunSuperseded = "run_superseded",
    /// A run reached its create past the run bound: it ends without it.
    RunOverdue = "run_overdue",
    /// A run's checkpoint name held bytes that do not decode: it ends and passes over it.
    RunOnDamaged = "run_on_damaged",
    /// A checkpoint of ours landed later than the grace after its look: withdrawn.
    CheckpointWithdrawn = "checkpoint_withdrawn",

    /// A body segment's part 0 was created: the label's segment of this window is whole
    /// (SPEC 10.17).
    SegmentWritten = "segment_written",
    /// A segment writer took bodies from the label's earlier segment instead of blobs.
    SegmentCarried = "segment_carried",
    /// A segment writer took carried bodies' words from the part it found them in
    /// instead of tokenizing them again.
    SegmentWordsCarried = "segment_words_carried",

    // The collector (SPEC 10.15).

    /// A drop deleted checkpoint objects no kept checkpoint needs.
    CheckpointDropped = "checkpoint_dropped",
    /// A drop deleted slots the oldest kept checkpoint covers.
    SlotCollected = "slot_collected",
    /// A drop deleted a body segment part a newer whole window of its label superseded,
    /// or of a layout no kept checkpoint has (SPEC 10.17).
    SegmentPartCollected = "segment_part_collected",
    /// A delete was refused because the object's generation changed since the listing
    /// (a freshen or a new write won): the generation fence at work.
    DeleteFenced = "delete_fenced",
    /// A delete found the object already gone (a peer's drop took it).
    DeleteAlreadyGone = "delete_already_gone",
    /// A drop was given up: a kept checkpoint or its root could not be read.
    DropAbandoned = "drop_abandoned",
    /// The backend cannot condition a delete: collection turned itself off.
    CollectionOff = "collection_off",

    // Calls and the replica.

    /// A call unanswered past the hedge time was sent a second time.
    CallHedged = "call_hedged",
    /// A hedged call's first send failed transiently: the twin's answer is awaited.
    HedgeTwinAwaited = "hedge_twin_awaited",
    /// A replica whose snapshot went unconfirmed past the reload age failed closed to be
    /// reopened (the reload rule).
    ReloadUnconfirmed = "reload_unconfirmed",
}

/// How many marks there are.
pub const MARKS: usize = Mark::ALL.len();

// Issue 14 asks for at least 25 marks; fewer would mean rare branches went unnamed.
const _: () = assert!(MARKS >= 25);

/// Counts of each mark one replica hit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marks {
    counts: [u64; MARKS],
}

impl Default for Marks {
    fn default() -> Marks {
        Marks { counts: [0; MARKS] }
    }
}

impl Marks {
    /// The branch named by `mark` ran.
    pub fn hit(&mut self, mark: Mark) {
        self.counts[mark as usize] += 1;
    }

    /// How often the branch named by `mark` ran.
    pub fn count(&self, mark: Mark) -> u64 {
        self.counts[mark as usize]
    }

    /// Adds another replica's (or incarnation's) counts.
    pub fn add(&mut self, other: &Marks) {
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts.iter()) {
            *mine += theirs;
        }
    }

    /// Every mark with its count, zeros included, in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = (Mark, u64)> + '_ {
        Mark::ALL.iter().map(|m| (*m, self.count(*m)))
    }
}

impl Mark {
    /// The mark named `name` in reports.
    pub fn from_name(name: &str) -> Option<Mark> {
        Mark::ALL.iter().copied().find(|m| m.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mark_has_its_own_snake_case_name_and_its_index_in_all() {
        let mut names: Vec<&str> = Mark::ALL.iter().map(|m| m.name()).collect();
        for (i, m) in Mark::ALL.iter().enumerate() {
            assert_eq!(*m as usize, i, "{m:?} is listed at its index");
            assert_eq!(Mark::from_name(m.name()), Some(*m));
            assert!(m.name().chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{}", m.name());
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), MARKS, "no two marks share a name");
    }

    #[test]
    fn marks_count_each_hit_and_add_across_replicas() {
        let mut a = Marks::default();
        a.hit(Mark::FeedResync);
        a.hit(Mark::FeedResync);
        let mut b = Marks::default();
        b.hit(Mark::HoldBegun);
        a.add(&b);
        assert_eq!((a.count(Mark::FeedResync), a.count(Mark::HoldBegun)), (2, 1));
        assert_eq!(a.count(Mark::DeleteFenced), 0);
        assert_eq!(a.iter().map(|(_, n)| n).sum::<u64>(), 3);
    }
}
