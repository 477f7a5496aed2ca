//! One run's report: what was offered and answered, latency, throughput against the
//! bound, per-replica share, store calls, the checker's verdict and the trace hash.

use hdrhistogram::Histogram;
use serde::Serialize;
use slotlog_kernel::reply::WriteError;
use slotlog_kernel::time::Instant;
use slotlog_kernel::world::Mutation;
use slotlog_model::{CheckReport, Outcome};
use slotlog_sim::{ClusterConfig, RunResult};
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Clone, Debug, Default, Serialize)]
pub struct Latency {
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

/// How admission answered (docs/OPERATIONS.md, "Admission"): `Busy` at once for ordinary
/// writes past what the queue can drain, control work (`set_policy`, archive flips) never
/// refused while its reserve has room.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Admission {
    /// Writes answered `Busy`.
    pub busy: u64,
    /// Of those, refused by the pace rule (the queue would not drain in time), as the
    /// replicas counted them.
    pub busy_by_pace: u64,
    /// Control writes the clients sent, and how many were admitted (answered anything but
    /// `Busy`).
    pub control_offered: u64,
    pub control_admitted: u64,
    /// Writes answered by a timeout: `Expired` in the queue or `Uncertain` in a slot.
    pub timeouts: u64,
}

/// What the run's followers saw of the writers' slots.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Follower {
    /// From a slot's landing in the store to a follower holding it, ms, over every
    /// follower and every slot created after it opened (the record's gate: p99 166 ms).
    pub apply_lag_ms: Latency,
    /// Slots the lag was sampled over.
    pub slots_sampled: u64,
}

impl Follower {
    fn of(result: &RunResult) -> Option<Follower> {
        let samples: Vec<u64> = result.replicas.iter().flat_map(|r| r.apply_lag_us.iter().copied()).collect();
        if samples.is_empty() {
            return None;
        }
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("histogram bounds");
        for us in &samples {
            h.saturating_record((*us).max(1));
        }
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1_000.0;
        Some(Follower {
            apply_lag_ms: Latency {
                p50: ms(0.5),
                p99: ms(0.99),
                p999: ms(0.999),
                max: h.max() as f64 / 1_000.0,
            },
            slots_sampled: samples.len() as u64,
        })
    }
}

/// How long the run paused or stalled replica `node` in all, in whole µs: time a bound
/// on the replica's own waits does not count.
fn stopped_us(config: &ClusterConfig, node: usize) -> u64 {
    let pauses = config.pause.iter().filter(|p| p.node == node).map(|p| p.length);
    let stalls = config.stalls.iter().filter(|s| s.node == node).map(|s| s.length);
    let stopped: Duration = pauses.chain(stalls).sum();
    u64::try_from(stopped.as_micros()).expect("a run's pauses fit in u64 µs")
}

/// How long an ambiguous slot create may wait for a definitive answer on its name (the
/// coverage issue's rule). The kernel reads the name at once and retries a failed read
/// with backoff capped at 1 s: 30 s is many failed reads in a row. Measured over CI's
/// sweep: at most a few hundred ms (`per_replica[].ambiguous_open_ms_max`).
pub const AMBIGUITY_BOUND_MS: u64 = 30_000;

#[derive(Clone, Debug, Default, Serialize)]
pub struct PerReplica {
    pub replica: usize,
    pub acked: u64,
    pub slots_won: u64,
    pub slots_lost: u64,
    pub crashes: u32,
    pub holds: u64,
    /// Of `holds`, blind ones: begun after a streak with no hint heard (docs/TURNS.md).
    pub blind_holds: u64,
    /// Of `holds`, rotation waits: a peer's turn by the newest slots' writers.
    pub rotation_waits: u64,
    /// The longest it held writes without answering one on its merits, ms (the
    /// starvation rule's measure; sampled once a virtual second).
    pub starved_ms_max: u64,
    /// Holds a peer's slot ended (the rest ran their full time).
    pub holds_answered: u64,
    pub hold_ms_total: u64,
    /// Median time from a lost create to this replica's next create.
    pub recovery_ms_p50: f64,
    /// The longest a slot create answered ambiguously waited for a definitive answer on
    /// its name (the harness's record, `ReplicaReport::ambiguous_open_us_max`).
    pub ambiguous_open_ms_max: f64,
    pub failed: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Store {
    pub creates: u64,
    pub gets: u64,
    pub stats: u64,
    /// Of `stats`, those that learned a new slot's creation time before its members were
    /// answered, because the store's write answers carry none (the s3 profile).
    pub stats_after_create: u64,
    pub lists: u64,
    pub rewrites: u64,
    pub deletes: u64,
    pub throttled: u64,
    /// Of `throttled`, a name mutated twice within the profile's per-name interval.
    pub name_throttled: u64,
    /// S3's 409s: creates refused because a delete of their name raced them.
    pub conflicts: u64,
    pub unavailable: u64,
    pub timeouts: u64,
    pub late_creates: u64,
    /// Listing entries the store left out (made while their listing was in flight), and
    /// pages it handed out unsorted.
    pub list_entries_missed: u64,
    pub list_pages_unsorted: u64,
    /// How version tokens were made: generation or content.
    pub etag: String,
    /// Objects and bytes under the world's prefix at the end, and the most objects the
    /// bucket held at any instant (from the checker's name history).
    pub objects_end: u64,
    pub bytes_end: u64,
    pub objects_max: Option<u64>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Reads {
    /// Exact and catalog reads answered, as the checker judged them.
    pub exact: u64,
    pub catalog: u64,
    /// How far the oldest catalog answer trailed the tip at its read's start.
    pub catalog_lag_ms_max: f64,
    /// Exact reads that missed a write acknowledged before they began (must be 0).
    pub stale_exact: u64,
    /// Metadata reads of the next slot name, and slots probes and hints installed.
    pub probes: u64,
    pub slots_followed: u64,
    pub deadlines: u64,
    /// Reads answered `Unavailable` because the tip check they waited on failed.
    pub unavailable: u64,
}

/// Views (`World::view`): reads pinned to the state their view's first read answered from.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Views {
    /// Views pinned, answered `ViewExpired`, evicted for `view_images_max`, refused for
    /// `views_max`, and released.
    pub pinned: u64,
    pub expired: u64,
    pub evicted: u64,
    pub refused: u64,
    pub released: u64,
    /// Reads of views the checker judged, and of them those answered from a pin behind
    /// a write acknowledged before they began.
    pub reads: u64,
    pub reads_behind_tip: u64,
    /// The most documents one replica held as they were at its pins.
    pub images_held_max: usize,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Watch {
    pub sessions: u64,
    pub events_delivered: u64,
    pub resumes_ring: u64,
    pub resumes_slots: u64,
    pub resyncs: u64,
    pub slot_reads: u64,
    /// Slots before a cold start's checkpoint, read and verified for watchers resuming
    /// before it.
    pub slots_verified_before_checkpoint: u64,
    /// Backstop polls the replicas ran for their watchers (no hint, write or read taught
    /// them the tip for `watch_poll`).
    pub polls: u64,
    /// The longest from a slot's creation (or a watch's start) to an event's delivery, and
    /// the bound the checker held it to: only in runs that judge watch delivery.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_delivery_lag_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery_bound_ms: Option<u64>,
}

/// Checkpoints the run's replicas wrote and the checker judged.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Checkpoints {
    /// Full checkpoint objects in the bucket at the end.
    pub in_bucket: u64,
    /// Checkpoint objects a replica's own create made, and those made by replicas that
    /// take writes.
    pub written: u64,
    pub by_writers: u64,
    /// Looks for a newer checkpoint before a step, and peers' checkpoints adopted
    /// instead of stepping (SPEC 10.14).
    pub looks: u64,
    pub adopted: u64,
    /// Adoptions given up because the checkpoint or an object it names could not be read
    /// or did not fit (a damaged one among them).
    pub adoptions_abandoned: u64,
    /// Runs that found their checkpoint's name holding damaged bytes and ended, passing
    /// over it (SPEC 10.14).
    pub runs_on_damaged: u64,
    /// Runs of the compactor: each folds the served snapshot in one step or several.
    pub runs: u64,
    /// Steps folded (SPEC 10.11): each a checkpoint at its own sequence of at most
    /// `checkpoint_step_docs_max` changed documents; a run over a backlog takes several.
    pub steps: u64,
    /// Of those, steps that wrote every shard anew (SPEC 10.16); the rest wrote deltas.
    pub merged_steps: u64,
    /// Checkpoint names found taken by a fold of the same log over other layers.
    pub other_layers_races: u64,
    /// Checkpoint names found taken by identical content.
    pub identical_races: u64,
    /// Runs that ended without their checkpoint create: past the run bound (on the
    /// replica's clock or the store's), or superseded by a checkpoint after their base.
    pub runs_overdue: u64,
    pub runs_superseded: u64,
    /// Checkpoints their writer created and deleted again, having landed more than the
    /// grace after the run's look (SPEC 10.15, "A checkpoint that lands late").
    pub checkpoints_withdrawn: u64,
    pub objects_created: u64,
    /// Objects a checkpoint named without creating them, the one before it having made them.
    pub objects_reused: u64,
    /// Bodies slots carried that steps wrote out as blobs before their checkpoints.
    pub bodies_written_out: u64,
    /// Opens that loaded a full checkpoint, and checkpoints an opening could not load and
    /// fell back from.
    pub loaded_at_open: u64,
    pub skipped_at_open: u64,
    /// Cold starts that found the newest full checkpoint damaged (`--damage-at-open`),
    /// those of them that skipped it and opened from an older full checkpoint, damage put
    /// back after its replica opened, and damage a write or delete replaced first.
    pub damaged_at_open: u64,
    pub damaged_opened_from_older: u64,
    pub damage_repaired: u64,
    pub damage_replaced: u64,
    /// Full checkpoints the checker compared with the model, and those that differed
    /// (must be 0).
    pub judged: u64,
    pub model_mismatches: u64,
    /// Commit latency p99 of writes whose wait overlapped a checkpoint being written by
    /// any replica, and of the others (amendments issue: "compactor bursts"). None when
    /// no write fell on that side.
    pub commit_p99_during_steps_ms: Option<f64>,
    pub commit_p99_outside_ms: Option<f64>,
}

/// What collection deleted and what fenced it (SPEC 10.15).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Collection {
    /// Drops begun, finished, and given up.
    pub drops: u64,
    pub drops_finished: u64,
    pub drops_abandoned: u64,
    pub deleted: Deleted,
    /// Stored objects a checkpoint run found old and rewrote with a new stamp first.
    pub rewrites: u64,
    /// Deletes refused because the generation had changed since the listing.
    pub fenced_deletes: u64,
    pub bytes_reclaimed: u64,
    /// Anything a kept checkpoint or retained slot reaches found missing (must be 0).
    pub reachable_missing: u64,
    /// Checkpoints created more than the grace after the slot they cover, which the
    /// checker leaves to their writer's withdrawal.
    pub checkpoints_landed_late: u64,
    /// Replicas that turned collection off (their backend cannot condition a delete).
    pub off: u64,
    /// Slot creates that landed too long after their base, refused before any member
    /// was acknowledged (the post-create check), and the forks they left, caught.
    pub stalled_creates_refused: u64,
    pub forks_refused: u64,
    /// Replicas reopened from the newest checkpoint after going unconfirmed past the
    /// reload age (SPEC 10.15).
    pub reloads: u64,
}

/// Objects deleted, by kind.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Deleted {
    pub checkpoint: u64,
    pub root: u64,
    pub shard: u64,
    pub receipts: u64,
    /// Body segment parts (SPEC 10.17).
    pub segment: u64,
    pub slot: u64,
}

/// Version records the largest replica held (sampled each virtual second).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Memory {
    pub resident_version_records_max: u64,
    pub resident_version_records_120s: Option<u64>,
    pub resident_version_records_end: u64,
    /// The compactor ledger's size (SPEC 10.11): the most slots and documents any replica
    /// held since its newest checkpoint, and at the end.
    pub ledger_slots_max: u64,
    pub ledger_documents_max: u64,
    pub ledger_slots_end: u64,
    pub ledger_documents_end: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub scenario: String,
    pub seed: u64,
    pub profile: String,
    pub replicas: usize,
    pub batch_max: usize,
    pub ahead: usize,
    pub virtual_s: f64,
    /// Wall time of the whole run: building the cluster, simulating, and checking.
    pub wall_s: f64,
    /// `virtual_s / wall_s`: the simulation's speed (issue 13 asks 300 of `single`).
    pub virtual_s_per_wall_s: f64,
    /// Writes clients sent.
    pub offered: u64,
    /// Answered with success: committed, unchanged or duplicate.
    pub acked: u64,
    /// Answered with a precondition failure (a correct answer, not a fault).
    pub rejected: u64,
    /// Refused at once because the queue was full.
    pub refused: u64,
    /// Deadline passed with the outcome unknown.
    pub uncertain: u64,
    /// Deadline passed before the write was ever sent: not applied.
    pub expired: u64,
    /// Lost with a crashed replica before any answer.
    pub crashed: u64,
    /// Acknowledged commits missing from the log.
    pub lost: u64,
    /// Slot names that held two different sets of bytes (must be 0).
    pub forks: u64,
    pub violations: Vec<String>,
    /// The rule each of `violations` broke, in the same order: a checker rule's name
    /// (`model::checker::Rule`), or `Assertion`, `FailedClosed`, `Unanswered`.
    pub rules: Vec<String>,
    pub violations_total: usize,
    /// Successful answers per second of workload time.
    pub throughput_wps: f64,
    /// The smallest writing replica's acknowledged writes over a fair share (total over
    /// writing replicas): 1 is perfectly even.
    pub share_min: f64,
    pub latency_ms: Latency,
    pub admission: Admission,
    /// Present when the run has followers that applied slots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub follower: Option<Follower>,
    /// Slots in the log, and the average members per slot the run's writers made.
    pub slots: u64,
    pub members_per_slot: f64,
    /// Slots won per second: the log's serial create rate.
    pub slots_per_s: f64,
    pub per_replica: Vec<PerReplica>,
    pub reads: Reads,
    pub views: Views,
    /// Body search, over every replica: answers by mode, index builds, bodies indexed.
    pub search: slotlog_kernel::search::SearchStats,
    pub watch: Watch,
    pub checkpoints: Checkpoints,
    pub collection: Collection,
    pub memory: Memory,
    pub store: Store,
    /// Each kernel mark (a rare branch, `slotlog_kernel::Mark`) with how often the run's
    /// replicas took it, all incarnations together; zeros included.
    pub coverage: BTreeMap<String, u64>,
    pub trace_hash: String,
    pub repro: String,
    /// Acknowledged writes and their latency, one entry a virtual second (`run --plot`).
    #[serde(skip)]
    pub timeline: Vec<Second>,
}

/// One virtual second of a run: the writes answered with success in it, and the latency
/// of those writes (from the client's send to the answer).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Second {
    pub at_s: u64,
    pub acked: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// Per virtual second from `(second, latency in us)` of each acknowledged write; seconds
/// without one are left out.
fn timeline(mut acked: Vec<(u64, u64)>) -> Vec<Second> {
    acked.sort_unstable();
    acked
        .chunk_by(|a, b| a.0 == b.0)
        .map(|second| {
            // Sorted by second, then latency: the quantiles index straight in.
            let at = |q: f64| second[((second.len() - 1) as f64 * q).round() as usize].1 as f64 / 1_000.0;
            Second { at_s: second[0].0, acked: second.len() as u64, p50_ms: at(0.5), p99_ms: at(0.99) }
        })
        .collect()
}

/// Virtual seconds simulated per wall second (0 when no wall time was measured).
fn speed(virtual_s: f64, wall_s: f64) -> f64 {
    if wall_s > 0.0 {
        virtual_s / wall_s
    } else {
        0.0
    }
}

fn median_ms(samples_us: &std::collections::VecDeque<u64>) -> f64 {
    if samples_us.is_empty() {
        return 0.0;
    }
    let mut v: Vec<u64> = samples_us.iter().copied().collect();
    v.sort_unstable();
    v[v.len() / 2] as f64 / 1_000.0
}

impl Report {
    /// The report of a run an assertion stopped: no counts, one violation that says why.
    pub fn stopped(
        scenario: &str,
        seed: u64,
        config: &ClusterConfig,
        message: String,
        wall_s: f64,
        repro: String,
    ) -> Report {
        Report {
            scenario: scenario.to_string(),
            seed,
            profile: config.gcs.profile.kind.to_string(),
            replicas: config.replicas + config.followers,
            batch_max: config.kernel.batch_members_max,
            ahead: config.kernel.batches_ahead_max,
            wall_s,
            violations: vec![format!("the run stopped on an assertion: {message}")],
            rules: vec!["Assertion".to_string()],
            violations_total: 1,
            store: Store { etag: config.gcs.rules.tokens.to_string(), ..Store::default() },
            repro,
            ..Report::default()
        }
    }

    pub fn new(
        scenario: &str,
        seed: u64,
        config: &ClusterConfig,
        result: &RunResult,
        check: &CheckReport,
        wall_s: f64,
        repro: String,
    ) -> Report {
        // A latency past an hour (a client of a paused replica) counts as an hour.
        let histogram = || Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("histogram bounds");
        let mut latency = histogram();
        let (mut during_steps, mut outside_steps) = (histogram(), histogram());
        let steps = Spans::merged(&result.checkpoint_spans);
        let (mut offered, mut acked, mut rejected, mut refused, mut uncertain, mut expired, mut crashed) =
            (0, 0, 0, 0, 0, 0, 0);
        let mut refused_busy = 0u64;
        let mut acked_by = vec![0u64; config.replicas + config.followers];
        let mut acked_in_window = 0u64;
        let mut acked_at = Vec::new();
        let (mut control_offered, mut control_refused) = (0u64, 0u64);
        for op in &result.history.ops {
            if op.outcome == Outcome::Preloaded {
                continue;
            }
            offered += 1;
            if matches!(op.mutation, Mutation::SetPolicy { .. } | Mutation::SetArchived { .. }) {
                control_offered += 1;
                control_refused += u64::from(matches!(
                    op.outcome,
                    Outcome::Answered { result: Err(WriteError::Busy { .. }), .. }
                ));
            }
            match &op.outcome {
                Outcome::Answered { at, result: r } => match r {
                    Ok(_) => {
                        acked += 1;
                        acked_by[op.replica] += 1;
                        if *at <= result.workload_end {
                            acked_in_window += 1;
                        }
                        let us = at.saturating_since(op.invoked_at).as_micros() as u64;
                        latency.saturating_record(us.max(1));
                        acked_at.push((at.as_micros() / 1_000_000, us));
                        let side = if steps.overlaps(op.invoked_at, *at) {
                            &mut during_steps
                        } else {
                            &mut outside_steps
                        };
                        side.saturating_record(us.max(1));
                    }
                    Err(WriteError::Rejected { .. }) => rejected += 1,
                    Err(WriteError::Busy { .. }) => {
                        refused += 1;
                        refused_busy += 1;
                    }
                    Err(WriteError::Uncertain { .. }) => uncertain += 1,
                    Err(WriteError::Expired { .. }) => expired += 1,
                    // Invalid, failed closed, and any answer the kernel adds later.
                    Err(_) => refused += 1,
                },
                Outcome::Crashed => crashed += 1,
                Outcome::Unanswered | Outcome::Preloaded => {}
            }
        }
        let ms = |q: f64| latency.value_at_quantile(q) as f64 / 1_000.0;
        let window_s = (result.workload_end - result.workload_start).as_micros() as f64 / 1e6;
        let slots_won: u64 = result.replicas.iter().map(|r| r.stats.slots_won).sum();
        let members: u64 = result.replicas.iter().map(|r| r.stats.members_committed).sum();
        let mut violations: Vec<String> = check.violations.iter().map(ToString::to_string).collect();
        let mut rules: Vec<String> = check.violations.iter().map(|v| format!("{:?}", v.rule())).collect();
        for (i, r) in result.replicas.iter().enumerate() {
            if let Some(f) = &r.failed {
                violations.push(format!("replica {i} failed closed: {f:?}"));
                rules.push("FailedClosed".to_string());
            }
        }
        // The hold bound (TURNS.md 4): a hold ends at the first wake-up after `hold`, and
        // the simulator wakes a replica when it asks unless the run paused or stalled it.
        for (i, r) in result.replicas.iter().enumerate() {
            let stopped_us = stopped_us(config, i);
            if r.stats.hold_overrun_us_max > stopped_us {
                violations.push(format!(
                    "replica {i} held a create {} us past the hold ({} ms); it was stopped for {} us",
                    r.stats.hold_overrun_us_max,
                    config.kernel.hold.as_millis(),
                    stopped_us
                ));
                rules.push("HoldBound".to_string());
            }
        }
        // The admission bound: with a healthy store and no replica stopped, a write is
        // answered by the world, or refused at once with `Busy`, never by its deadline.
        let healthy = config.gcs.faults == slotlog_sim::gcs::Faults::none()
            && config.crashes.is_none()
            && config.pause.is_none()
            && config.gone.is_none()
            && config.stalls.is_empty();
        if healthy && expired + uncertain > 0 {
            violations.push(format!(
                "{expired} writes expired and {uncertain} were answered uncertain with a healthy store and \
                 every replica running: admission should have refused them with Busy"
            ));
            rules.push("AdmissionBound".to_string());
        }
        // The ambiguity bound: a slot create answered by an error that may have applied
        // is settled (a definitive answer on its name) within AMBIGUITY_BOUND_MS, besides
        // the time the harness stopped the replica. Judged from the calls the harness
        // carried, not from anything the kernel reports.
        for (i, r) in result.replicas.iter().enumerate() {
            let bound_us = AMBIGUITY_BOUND_MS * 1_000 + stopped_us(config, i);
            if r.ambiguous_open_us_max > bound_us {
                violations.push(format!(
                    "replica {i} left an ambiguous slot create unsettled for {} us (bound {bound_us} us)",
                    r.ambiguous_open_us_max
                ));
                rules.push("AmbiguityBound".to_string());
            }
        }
        if let Some(stop) = &result.not_live {
            violations.push(format!("the run was stopped as not live: {stop}"));
            rules.push(stop.rule().to_string());
        }
        if result.unsettled > 0 {
            violations.push(format!(
                "{} writes were still unanswered when the settle time ran out",
                result.unsettled
            ));
            rules.push("Unanswered".to_string());
        }
        Report {
            scenario: scenario.to_string(),
            seed,
            profile: config.gcs.profile.kind.to_string(),
            replicas: config.replicas + config.followers,
            batch_max: config.kernel.batch_members_max,
            ahead: config.kernel.batches_ahead_max,
            virtual_s: result.end.as_micros() as f64 / 1e6,
            wall_s,
            virtual_s_per_wall_s: speed(result.end.as_micros() as f64 / 1e6, wall_s),
            offered,
            acked,
            rejected,
            refused,
            uncertain,
            expired,
            crashed,
            lost: check.lost,
            forks: check.forks,
            violations_total: check.violations_total + violations.len() - check.violations.len(),
            violations,
            rules,
            throughput_wps: acked_in_window as f64 / window_s,
            share_min: {
                let writers = &acked_by[..config.replicas];
                let fair = writers.iter().sum::<u64>() as f64 / writers.len() as f64;
                if fair == 0.0 {
                    0.0
                } else {
                    *writers.iter().min().expect("a writer") as f64 / fair
                }
            },
            latency_ms: Latency {
                p50: ms(0.5),
                p99: ms(0.99),
                p999: ms(0.999),
                max: latency.max() as f64 / 1_000.0,
            },
            admission: Admission {
                busy: refused_busy,
                busy_by_pace: result.replicas.iter().map(|r| r.stats.refused_pace).sum(),
                control_offered,
                control_admitted: control_offered - control_refused,
                timeouts: expired + uncertain,
            },
            follower: Follower::of(result),
            slots: check.slots,
            members_per_slot: if slots_won == 0 { 0.0 } else { members as f64 / slots_won as f64 },
            slots_per_s: slots_won as f64 / window_s,
            per_replica: result
                .replicas
                .iter()
                .enumerate()
                .map(|(i, r)| PerReplica {
                    replica: i,
                    acked: acked_by[i],
                    slots_won: r.stats.slots_won,
                    slots_lost: r.stats.slots_lost,
                    crashes: r.crashes,
                    holds: r.stats.holds,
                    blind_holds: r.stats.blind_holds,
                    rotation_waits: r.stats.rotation_waits,
                    starved_ms_max: r.starved_ms_max,
                    holds_answered: r.stats.holds_answered,
                    hold_ms_total: r.stats.hold_ms_total,
                    recovery_ms_p50: median_ms(&r.stats.recoveries_us),
                    ambiguous_open_ms_max: r.ambiguous_open_us_max as f64 / 1_000.0,
                    failed: r.failed.as_ref().map(|f| format!("{f:?}")),
                })
                .collect(),
            reads: Reads {
                exact: check.reads_exact,
                catalog: check.reads_catalog,
                catalog_lag_ms_max: check.catalog_lag_ms_max,
                stale_exact: check.stale_exact,
                probes: result.replicas.iter().map(|r| r.reads.probes).sum(),
                slots_followed: result.replicas.iter().map(|r| r.reads.slots_followed).sum(),
                deadlines: result.replicas.iter().map(|r| r.reads.deadlines).sum(),
                unavailable: result.replicas.iter().map(|r| r.reads.unavailable).sum(),
            },
            views: Views {
                pinned: result.replicas.iter().map(|r| r.views.pinned).sum(),
                expired: result.replicas.iter().map(|r| r.views.expired).sum(),
                evicted: result.replicas.iter().map(|r| r.views.evicted).sum(),
                refused: result.replicas.iter().map(|r| r.views.refused).sum(),
                released: result.replicas.iter().map(|r| r.views.released).sum(),
                reads: check.reads_view,
                reads_behind_tip: check.reads_view_behind,
                images_held_max: result.replicas.iter().map(|r| r.views.images_held).max().unwrap_or(0),
            },
            search: result.replicas.iter().fold(Default::default(), |mut all, r| {
                all.add(&r.search);
                all
            }),
            watch: Watch {
                sessions: check.watch_sessions,
                events_delivered: result.replicas.iter().map(|r| r.feed.events_delivered).sum(),
                resumes_ring: result.replicas.iter().map(|r| r.feed.resumes_ring).sum(),
                resumes_slots: result.replicas.iter().map(|r| r.feed.resumes_slots).sum(),
                resyncs: result.replicas.iter().map(|r| r.feed.resyncs).sum(),
                slot_reads: result.replicas.iter().map(|r| r.feed.slot_reads).sum(),
                slots_verified_before_checkpoint: result
                    .replicas
                    .iter()
                    .map(|r| r.feed.slots_verified_before_checkpoint)
                    .sum(),
                polls: result.replicas.iter().map(|r| r.feed.polls).sum(),
                max_delivery_lag_ms: check.watch_delivery_lag_ms_max,
                delivery_bound_ms: config
                    .watchers
                    .as_ref()
                    .and_then(|w| w.delivery_slack)
                    .map(|slack| (config.kernel.watch_poll + slack).as_millis() as u64),
            },
            checkpoints: Checkpoints {
                in_bucket: result
                    .objects
                    .iter()
                    .filter(|o| result.keys.parse_checkpoint(&o.key).is_some_and(|s| s > 1))
                    .count() as u64,
                written: result.replicas.iter().map(|r| r.compactor.written).sum(),
                by_writers: result.replicas.iter().filter(|r| !r.follower).map(|r| r.compactor.written).sum(),
                looks: result.replicas.iter().map(|r| r.compactor.looks).sum(),
                adopted: result.replicas.iter().map(|r| r.compactor.adopted).sum(),
                adoptions_abandoned: result.replicas.iter().map(|r| r.compactor.adoptions_abandoned).sum(),
                runs_on_damaged: result.replicas.iter().map(|r| r.compactor.runs_on_damaged).sum(),
                runs: result.replicas.iter().map(|r| r.compactor.runs).sum(),
                steps: result.replicas.iter().map(|r| r.compactor.steps).sum(),
                merged_steps: result.replicas.iter().map(|r| r.compactor.merged_steps).sum(),
                other_layers_races: result.replicas.iter().map(|r| r.compactor.other_layers_races).sum(),
                identical_races: result.replicas.iter().map(|r| r.compactor.identical_races).sum(),
                runs_overdue: result.replicas.iter().map(|r| r.compactor.runs_overdue).sum(),
                runs_superseded: result.replicas.iter().map(|r| r.compactor.runs_superseded).sum(),
                checkpoints_withdrawn: result
                    .replicas
                    .iter()
                    .map(|r| r.compactor.checkpoints_withdrawn)
                    .sum(),
                objects_created: result.replicas.iter().map(|r| r.compactor.objects_created).sum(),
                objects_reused: result.replicas.iter().map(|r| r.compactor.objects_reused).sum(),
                bodies_written_out: result.replicas.iter().map(|r| r.compactor.bodies_written_out).sum(),
                loaded_at_open: result.replicas.iter().map(|r| r.compactor.loaded_at_open).sum(),
                skipped_at_open: result.replicas.iter().map(|r| r.compactor.skipped_at_open).sum(),
                damaged_at_open: u64::from(result.damage.damaged),
                damaged_opened_from_older: u64::from(result.damage.opened_from_older),
                damage_repaired: u64::from(result.damage.repaired),
                damage_replaced: u64::from(result.damage.replaced),
                judged: check.checkpoints_judged,
                model_mismatches: check.checkpoint_mismatches,
                commit_p99_during_steps_ms: p99_ms(&during_steps),
                commit_p99_outside_ms: p99_ms(&outside_steps),
            },
            collection: {
                let mut all = slotlog_kernel::CollectorStats::default();
                let mut rewrites = 0;
                for r in &result.replicas {
                    all.add(&r.collector);
                    rewrites += r.compactor.freshened;
                }
                Collection {
                    drops: all.drops,
                    drops_finished: all.drops_finished,
                    drops_abandoned: all.drops_abandoned,
                    deleted: Deleted {
                        checkpoint: all.deleted_checkpoints,
                        root: all.deleted_roots,
                        shard: all.deleted_shards,
                        receipts: all.deleted_receipts,
                        segment: all.deleted_segments,
                        slot: all.deleted_slots,
                    },
                    rewrites,
                    fenced_deletes: all.fenced_deletes,
                    bytes_reclaimed: all.bytes_reclaimed,
                    reachable_missing: check.reachable_missing,
                    checkpoints_landed_late: check.checkpoints_landed_late,
                    off: result.replicas.iter().filter(|r| r.collector.off).count() as u64,
                    stalled_creates_refused: result
                        .replicas
                        .iter()
                        .map(|r| r.stats.stalled_creates_refused)
                        .sum(),
                    forks_refused: check.forks_refused,
                    reloads: result.replicas.iter().map(|r| u64::from(r.reloads)).sum(),
                }
            },
            memory: Memory {
                resident_version_records_max: result.memory.resident_version_records_max,
                resident_version_records_120s: result.memory.resident_version_records_120s,
                resident_version_records_end: result.memory.resident_version_records_end,
                ledger_slots_max: result.memory.ledger_slots_max,
                ledger_documents_max: result.memory.ledger_documents_max,
                ledger_slots_end: result.memory.ledger_slots_end,
                ledger_documents_end: result.memory.ledger_documents_end,
            },
            store: Store {
                creates: result.store.creates,
                gets: result.store.gets,
                stats: result.store.stats,
                stats_after_create: result.replicas.iter().map(|r| r.stats.slot_stats_after_create).sum(),
                lists: result.store.lists,
                rewrites: result.store.rewrites,
                deletes: result.store.deletes,
                throttled: result.store.throttled,
                name_throttled: result.store.name_throttled,
                conflicts: result.store.conflicts,
                unavailable: result.store.unavailable,
                timeouts: result.store.timeouts,
                late_creates: result.store.late_creates,
                list_entries_missed: result.store.list_entries_missed,
                list_pages_unsorted: result.store.list_pages_unsorted,
                etag: config.gcs.rules.tokens.to_string(),
                objects_end: check.store_objects_end,
                bytes_end: check.store_bytes_end,
                objects_max: check.store_objects_max,
            },
            coverage: {
                let mut marks = slotlog_kernel::Marks::default();
                for r in &result.replicas {
                    marks.add(&r.marks);
                }
                crate::coverage::counts(&marks)
            },
            trace_hash: result.trace_hash.to_hex(),
            repro,
            timeline: timeline(acked_at),
        }
    }

    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    /// The readable report.
    pub fn text(&self) -> String {
        let mut s = String::new();
        s += &format!(
            "scenario {} seed {} ({} profile, {} replicas, batch {}, {} ahead)\n",
            self.scenario, self.seed, self.profile, self.replicas, self.batch_max, self.ahead
        );
        s += &format!(
            "  virtual {:.1} s in {:.2} s wall ({:.0} virtual s a wall s)\n",
            self.virtual_s, self.wall_s, self.virtual_s_per_wall_s
        );
        s += &format!(
            "  writes   offered {}  acked {}  rejected {}  refused {}  uncertain {}  expired {}  crashed {}  lost {}\n",
            self.offered, self.acked, self.rejected, self.refused, self.uncertain, self.expired, self.crashed, self.lost
        );
        s += &format!(
            "  rate     {:.1} writes/s  ({} slots, {:.1} slots/s in series, {:.1} members a slot)\n",
            self.throughput_wps, self.slots, self.slots_per_s, self.members_per_slot
        );
        s += &format!(
            "  latency  p50 {:.1} ms  p99 {:.1} ms  p999 {:.1} ms  max {:.1} ms\n",
            self.latency_ms.p50, self.latency_ms.p99, self.latency_ms.p999, self.latency_ms.max
        );
        if let Some(f) = &self.follower {
            s += &format!(
                "  follower apply lag  p50 {:.1} ms  p99 {:.1} ms  max {:.1} ms  ({} slots)\n",
                f.apply_lag_ms.p50, f.apply_lag_ms.p99, f.apply_lag_ms.max, f.slots_sampled
            );
        }
        if self.per_replica.len() > 1 {
            s += &format!("  share    smallest writing replica {:.2} of a fair share\n", self.share_min);
        }
        for r in &self.per_replica {
            s += &format!(
                "  replica {}  acked {}  slots won {}  lost {}  holds {} ({} blind, {} rotation, {} ms)  recovery p50 {:.0} ms  crashes {}\n",
                r.replica,
                r.acked,
                r.slots_won,
                r.slots_lost,
                r.holds,
                r.blind_holds,
                r.rotation_waits,
                r.hold_ms_total,
                r.recovery_ms_p50,
                r.crashes
            );
        }
        let rd = &self.reads;
        if rd.exact + rd.catalog > 0 {
            s += &format!(
                "  reads    exact {}  catalog {}  catalog lag max {:.0} ms  stale exact {}  probes {}  slots followed {}\n",
                rd.exact, rd.catalog, rd.catalog_lag_ms_max, rd.stale_exact, rd.probes, rd.slots_followed
            );
        }
        let v = &self.views;
        if v.pinned > 0 {
            s += &format!(
                "  views    pinned {}  reads {} ({} behind the tip)  expired {}  evicted {}  refused {}  released {}  images held max {}\n",
                v.pinned, v.reads, v.reads_behind_tip, v.expired, v.evicted, v.refused, v.released, v.images_held_max
            );
        }
        let q = &self.search;
        if q.body_answers + q.catalog_answers > 0 {
            s += &format!(
                "  search   body {}  catalog {}  builds {}  bodies indexed {} (blobs {}, from {} segment parts {})  dropped idle {} over budget {}\n",
                q.body_answers,
                q.catalog_answers,
                q.builds,
                q.bodies_indexed,
                q.bodies_fetched,
                q.segment_parts_read,
                q.bodies_from_segments,
                q.idle_drops,
                q.over_budget_drops
            );
        }
        let w = &self.watch;
        if w.sessions > 0 {
            s += &format!(
                "  watch    sessions {}  events {}  resumes: ring {} slots {}  resyncs {}  slots verified before a checkpoint {}\n",
                w.sessions,
                w.events_delivered,
                w.resumes_ring,
                w.resumes_slots,
                w.resyncs,
                w.slots_verified_before_checkpoint
            );
            if let (Some(lag), Some(bound)) = (w.max_delivery_lag_ms, w.delivery_bound_ms) {
                s += &format!(
                    "  watch    polls {}  delivery lag max {lag:.0} ms (bound {bound} ms)\n",
                    w.polls
                );
            }
        }
        let c = &self.checkpoints;
        if c.runs + c.in_bucket > 0 {
            s += &format!(
                "  checkpoints  in bucket {} (judged {}, mismatches {})  written {} ({} by writers)  runs {} steps {} ({} merged)  looks {} adopted {}  identical races {}  objects created {} reused {}  loaded at open {} (skipped {})\n",
                c.in_bucket, c.judged, c.model_mismatches, c.written, c.by_writers, c.runs, c.steps, c.merged_steps, c.looks, c.adopted, c.identical_races, c.objects_created, c.objects_reused, c.loaded_at_open, c.skipped_at_open
            );
            if c.damaged_at_open > 0 {
                s += &format!(
                    "               damaged at open {} (opened from an older full checkpoint {}, repaired {}, replaced {})  adoptions abandoned {}\n",
                    c.damaged_at_open, c.damaged_opened_from_older, c.damage_repaired, c.damage_replaced, c.adoptions_abandoned
                );
            }
            let p99 = |v: Option<f64>| v.map_or("-".to_string(), |ms| format!("{ms:.1} ms"));
            s += &format!(
                "               commit p99 while a checkpoint is written {}  otherwise {}\n",
                p99(c.commit_p99_during_steps_ms),
                p99(c.commit_p99_outside_ms)
            );
        }
        let st = &self.store;
        s += &format!(
            "  store    creates {}  gets {}  stats {}  lists {} (entries missed {}, pages unsorted {})  throttled {}  unavailable {}  timeouts {} (late creates {})\n",
            st.creates,
            st.gets,
            st.stats,
            st.lists,
            st.list_entries_missed,
            st.list_pages_unsorted,
            st.throttled,
            st.unavailable,
            st.timeouts,
            st.late_creates
        );
        s += &format!(
            "           rewrites {}  deletes {}  conflicts {}  etag {}  objects {} ({} bytes) at the end, {} at most  forks {}\n",
            st.rewrites,
            st.deletes,
            st.conflicts,
            st.etag,
            st.objects_end,
            st.bytes_end,
            st.objects_max.map_or("-".to_string(), |n| n.to_string()),
            self.forks
        );
        let hit = self.coverage.values().filter(|n| **n > 0).count();
        s += &format!("  coverage {} of {} marks hit\n", hit, self.coverage.len());
        s += &format!("  trace    {}\n", self.trace_hash);
        if self.passed() {
            s += "  checker  passed\n";
        } else {
            s += &format!("  checker  {} violations:\n", self.violations_total);
            for v in &self.violations {
                s += &format!("    - {v}\n");
            }
            s += &format!("  replay with: {}\n", self.repro);
        }
        s
    }
}

fn p99_ms(h: &Histogram<u64>) -> Option<f64> {
    (!h.is_empty()).then(|| h.value_at_quantile(0.99) as f64 / 1_000.0)
}

/// Disjoint spans of virtual time, in order.
struct Spans(Vec<(Instant, Instant)>);

impl Spans {
    fn merged(spans: &[(Instant, Instant)]) -> Spans {
        let mut sorted = spans.to_vec();
        sorted.sort();
        let mut out: Vec<(Instant, Instant)> = Vec::new();
        for (from, to) in sorted {
            match out.last_mut() {
                Some(last) if from <= last.1 => last.1 = last.1.max(to),
                _ => out.push((from, to)),
            }
        }
        Spans(out)
    }

    /// Whether `[from, to]` meets any span.
    fn overlaps(&self, from: Instant, to: Instant) -> bool {
        let i = self.0.partition_point(|s| s.1 < from);
        self.0.get(i).is_some_and(|s| s.0 <= to)
    }
}

#[cfg(test)]
mod timeline_tests {
    use super::*;

    #[test]
    fn a_timeline_groups_writes_by_second_with_their_quantiles() {
        let mut acked: Vec<(u64, u64)> = (1..=100).map(|ms| (3, ms * 1_000)).collect();
        acked.push((1, 7_000));
        let t = timeline(acked);
        assert_eq!(t.len(), 2, "seconds without a write are left out");
        assert_eq!(t[0], Second { at_s: 1, acked: 1, p50_ms: 7.0, p99_ms: 7.0 });
        assert_eq!((t[1].at_s, t[1].acked), (3, 100));
        assert_eq!((t[1].p50_ms, t[1].p99_ms), (51.0, 99.0));
    }
}
