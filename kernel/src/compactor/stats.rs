//! The compactor's counters, as reports read them.

/// Counters a report reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactorStats {
    /// Runs started: each folds the served snapshot, in one step or several.
    pub runs: u64,
    /// Steps folded (SPEC 10.11): each a checkpoint at its own sequence, of at most
    /// `checkpoint_step_docs_max` changed documents.
    pub steps: u64,
    /// Steps that wrote every shard anew (SPEC 10.16, the merge rule); the rest wrote
    /// deltas.
    pub merged_steps: u64,
    /// Checkpoint names found taken by a fold of the same log over other layers (a racer
    /// that stepped from another checkpoint, SPEC 10.16): the run ends, the next look
    /// adopts it.
    pub other_layers_races: u64,
    /// Checkpoint objects this replica's own create made.
    pub written: u64,
    /// Checkpoint names found taken by identical bytes (a racer's, or ours landed twice).
    pub identical_races: u64,
    /// Checkpoint objects created.
    pub objects_created: u64,
    /// Checkpoint objects found already stored.
    pub objects_found: u64,
    /// Objects a run skipped because the checkpoint before it already had them.
    pub objects_reused: u64,
    /// Bodies slots carried that steps wrote out as blobs before their checkpoints.
    pub bodies_written_out: u64,
    /// Opens that loaded a full checkpoint (not checkpoint zero).
    pub loaded_at_open: u64,
    /// Checkpoints an opening could not load and fell back from (each also a
    /// `Warning::CheckpointSkipped`): the count stands in for a coverage mark.
    pub skipped_at_open: u64,
    /// Looks for a newer checkpoint before stepping.
    pub looks: u64,
    /// Peers' checkpoints adopted.
    pub adopted: u64,
    /// Adoptions given up: the checkpoint could not be read whole or did not fit.
    pub adoptions_abandoned: u64,
    /// Stored objects a run found old and rewrote with a new stamp before using them.
    pub freshened: u64,
    /// Runs that reached their checkpoint create later than `checkpoint_run_max` after
    /// their look, on this replica's clock or the store's, and so ended without it.
    pub runs_overdue: u64,
    /// Runs that found a checkpoint after their base when they came to write theirs, and
    /// so ended without it (the next look adopts it).
    pub runs_superseded: u64,
    /// Runs whose checkpoint name held bytes that do not decode (damaged at rest): the
    /// run ends with a warning, and looks pass over that name (SPEC 10.14).
    pub runs_on_damaged: u64,
    /// Checkpoints this replica created that landed more than the grace after their run's
    /// look on the store's clock (a writer stalled between its last look and the create
    /// landing), and so were deleted again by it (SPEC 10.15, "A checkpoint that lands
    /// late").
    pub checkpoints_withdrawn: u64,
    /// The body segment writer's counters (SPEC 10.17).
    pub segments: super::SegmentStats,
}

impl CompactorStats {
    /// Adds another incarnation's counters (every field, so a new one is not forgotten).
    pub fn add(&mut self, other: &CompactorStats) {
        let CompactorStats {
            runs,
            steps,
            merged_steps,
            other_layers_races,
            written,
            identical_races,
            objects_created,
            objects_found,
            objects_reused,
            bodies_written_out,
            loaded_at_open,
            skipped_at_open,
            looks,
            adopted,
            adoptions_abandoned,
            freshened,
            runs_overdue,
            runs_superseded,
            runs_on_damaged,
            checkpoints_withdrawn,
            segments,
        } = other;
        self.runs += runs;
        self.steps += steps;
        self.merged_steps += merged_steps;
        self.other_layers_races += other_layers_races;
        self.written += written;
        self.identical_races += identical_races;
        self.objects_created += objects_created;
        self.objects_found += objects_found;
        self.objects_reused += objects_reused;
        self.bodies_written_out += bodies_written_out;
        self.loaded_at_open += loaded_at_open;
        self.skipped_at_open += skipped_at_open;
        self.looks += looks;
        self.adopted += adopted;
        self.adoptions_abandoned += adoptions_abandoned;
        self.freshened += freshened;
        self.runs_overdue += runs_overdue;
        self.runs_superseded += runs_superseded;
        self.runs_on_damaged += runs_on_damaged;
        self.checkpoints_withdrawn += checkpoints_withdrawn;
        self.segments.add(segments);
    }
}
