//! The backend conformance suite: the behaviour of the kernel's blob contract
//! (`slotlog_kernel::blob`) that every backend must show, written against `Arc<dyn Blobs>`
//! and nothing else.
//!
//! Each rule is one async function over a fresh key prefix, so rules run concurrently on
//! one store (and on a shared bucket) without seeing each other. [`run_suite`] runs them all
//! and reports each as passed, unsupported (only where the backend's [`Capabilities`] say
//! so) or failed, with the failure's message. A backend that is allowed to lack an
//! operation must still answer it with `Unsupported`, never with a wrong success.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::join_all;
use slotlog::Blobs;
use slotlog_kernel::blob::{BlobError, BlobOp, BlobOutcome, BlobResult, Generation, ObjectMeta, Written};

/// Writers racing for one name in the create race.
pub const RACE_WRITERS: usize = 16;
/// Names raced for, one after another.
pub const RACE_NAMES: usize = 8;
/// The big-object round trip.
pub const BIG_OBJECT_BYTES: usize = 8 << 20;

/// What a backend says it cannot do. The suite then requires `Unsupported` for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    pub conditional_rewrite: bool,
    pub conditional_delete: bool,
    /// A create's answer carries a store time (SPEC 10.15): the HTTP stores', through the
    /// driver's `DatedConnector`.
    pub dated_writes: bool,
}

impl Capabilities {
    pub const ALL: Capabilities =
        Capabilities { conditional_rewrite: true, conditional_delete: true, dated_writes: true };

    /// What the production adapter says of its backend.
    pub fn of(backend: &slotlog::Backend) -> Capabilities {
        use slotlog::Backend;
        Capabilities {
            conditional_rewrite: !matches!(backend, Backend::Local),
            conditional_delete: backend.supports_conditional_delete(),
            dated_writes: matches!(backend, Backend::S3(_) | Backend::Gcs(_) | Backend::Azure(_)),
        }
    }
}

/// How one rule came out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Passed,
    /// Answered `Unsupported`, as the backend's capabilities allow; the reason says which.
    Unsupported(&'static str),
    Failed(String),
}

/// A rule's name, its verdict and any note it made (the race's winner counts).
#[derive(Clone, Debug)]
pub struct Outcome {
    pub rule: &'static str,
    pub verdict: Verdict,
}

/// Every rule's outcome on one backend.
#[derive(Clone, Debug)]
pub struct Report {
    pub backend: String,
    pub outcomes: Vec<Outcome>,
}

impl Report {
    pub fn failures(&self) -> Vec<&Outcome> {
        self.outcomes.iter().filter(|o| matches!(o.verdict, Verdict::Failed(_))).collect()
    }

    /// Panics, listing every failed rule, unless all passed or were allowed to be
    /// unsupported.
    pub fn assert_passed(&self) {
        println!("{self}");
        let failures = self.failures();
        assert!(failures.is_empty(), "{} failed {} rule(s): {failures:#?}", self.backend, failures.len());
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "conformance on {}:", self.backend)?;
        for o in &self.outcomes {
            match &o.verdict {
                Verdict::Passed => writeln!(f, "  pass         {}", o.rule)?,
                Verdict::Unsupported(why) => writeln!(f, "  unsupported  {} ({why})", o.rule)?,
                Verdict::Failed(why) => writeln!(f, "  FAIL         {}: {why}", o.rule)?,
            }
        }
        Ok(())
    }
}

type RuleResult = Result<Verdict, String>;

/// Fail the rule with a message unless `cond`.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

/// Run every rule against `blobs` under `root` (a prefix no one else writes; empty or
/// ending in `/`).
pub async fn run_suite(name: &str, blobs: Arc<dyn Blobs>, caps: Capabilities, root: &str) -> Report {
    type Rule =
        fn(Arc<dyn Blobs>, Capabilities, String) -> futures_util::future::BoxFuture<'static, RuleResult>;
    let rules: [(&'static str, Rule); 10] = [
        ("create_race_has_exactly_one_winner", |b, c, r| {
            Box::pin(create_race_has_exactly_one_winner(b, c, r))
        }),
        ("ambiguous_create_is_settled_by_reading_it_back", |b, c, r| {
            Box::pin(ambiguous_create_is_settled_by_reading_it_back(b, c, r))
        }),
        ("list_is_in_key_order_strictly_after_start_after_in_pages", |b, c, r| {
            Box::pin(list_is_in_key_order_strictly_after_start_after_in_pages(b, c, r))
        }),
        ("list_prefix_is_a_string_prefix_not_a_directory", |b, c, r| {
            Box::pin(list_prefix_is_a_string_prefix_not_a_directory(b, c, r))
        }),
        ("rewrite_succeeds_only_at_the_current_generation", |b, c, r| {
            Box::pin(rewrite_succeeds_only_at_the_current_generation(b, c, r))
        }),
        ("delete_succeeds_only_at_the_current_generation", |b, c, r| {
            Box::pin(delete_succeeds_only_at_the_current_generation(b, c, r))
        }),
        ("a_freshened_object_survives_a_delete_at_its_listed_version", |b, c, r| {
            Box::pin(a_freshened_object_survives_a_delete_at_its_listed_version(b, c, r))
        }),
        ("big_objects_round_trip", |b, c, r| Box::pin(big_objects_round_trip(b, c, r))),
        ("absent_keys_are_not_found", |b, c, r| Box::pin(absent_keys_are_not_found(b, c, r))),
        ("stat_and_get_agree_with_the_create", |b, c, r| {
            Box::pin(stat_and_get_agree_with_the_create(b, c, r))
        }),
    ];
    let runs = rules.iter().map(|(rule, run)| {
        let task = tokio::spawn(run(blobs.clone(), caps, format!("{root}{rule}/")));
        async move {
            let verdict = match task.await {
                Ok(Ok(verdict)) => verdict,
                Ok(Err(message)) => Verdict::Failed(message),
                Err(join) => Verdict::Failed(format!("panicked: {join}")),
            };
            Outcome { rule, verdict }
        }
    });
    Report { backend: name.to_string(), outcomes: join_all(runs).await }
}

fn create(key: &str, bytes: impl Into<Bytes>) -> BlobOp {
    BlobOp::Create { key: key.to_string(), bytes: bytes.into() }
}

async fn created(blobs: &Arc<dyn Blobs>, key: &str, bytes: impl Into<Bytes>) -> Result<Written, String> {
    match blobs.execute(create(key, bytes)).await {
        Ok(BlobOutcome::Created(meta)) => Ok(meta),
        other => Err(format!("create {key}: {other:?}")),
    }
}

async fn got(blobs: &Arc<dyn Blobs>, key: &str) -> Result<(ObjectMeta, Bytes), BlobError> {
    match blobs.execute(BlobOp::Get { key: key.to_string() }).await? {
        BlobOutcome::Got { meta, bytes } => Ok((meta, bytes)),
        other => panic!("get {key} answered {other:?}"),
    }
}

async fn listed(
    blobs: &Arc<dyn Blobs>,
    prefix: &str,
    start_after: Option<&str>,
    limit: u32,
) -> Result<(Vec<String>, bool), String> {
    let op = BlobOp::List { prefix: prefix.to_string(), start_after: start_after.map(str::to_string), limit };
    match blobs.execute(op).await {
        Ok(BlobOutcome::Listed { entries, more }) => Ok((entries.into_iter().map(|m| m.key).collect(), more)),
        other => Err(format!("list {prefix} after {start_after:?}: {other:?}")),
    }
}

/// Many concurrent creates of one name: exactly one is `Created`, every other
/// `AlreadyExists`, and the name holds the winner's bytes. Repeated over several names.
/// Two winners would be a store that breaks create-if-absent (moto checks without a lock):
/// reported as such.
pub async fn create_race_has_exactly_one_winner(
    blobs: Arc<dyn Blobs>,
    _caps: Capabilities,
    root: String,
) -> RuleResult {
    let mut double_winners = Vec::new();
    for name in 0..RACE_NAMES {
        let key = format!("{root}log/{name:016x}");
        let racers = (0..RACE_WRITERS).map(|writer| {
            let blobs = blobs.clone();
            let op = create(&key, format!("writer {writer}"));
            tokio::spawn(async move { (writer, blobs.execute(op).await) })
        });
        let results: Vec<(usize, BlobResult)> =
            join_all(racers).await.into_iter().map(|r| r.expect("racer")).collect();
        let winners: Vec<&(usize, BlobResult)> = results.iter().filter(|(_, r)| r.is_ok()).collect();
        for (writer, result) in &results {
            ensure!(
                matches!(result, Ok(BlobOutcome::Created(_)) | Err(BlobError::AlreadyExists)),
                "{key}: writer {writer} answered {result:?}"
            );
        }
        if winners.len() > 1 {
            double_winners.push(format!("{key}: {} winners", winners.len()));
            continue;
        }
        ensure!(winners.len() == 1, "{key}: no winner among {RACE_WRITERS}");
        let (winner, Ok(BlobOutcome::Created(meta))) = winners[0] else { unreachable!() };
        let (read, bytes) = got(&blobs, &key).await.map_err(|e| format!("get {key}: {e:?}"))?;
        ensure!(bytes == format!("writer {winner}"), "{key} holds {bytes:?}, the winner was writer {winner}");
        ensure!(read.generation == meta.generation, "{key}: read {read:?}, created {meta:?}");
    }
    ensure!(
        double_winners.is_empty(),
        "CREATE-IF-ABSENT BROKEN: more than one create of one name succeeded: {double_winners:?}"
    );
    Ok(Verdict::Passed)
}

/// After a create whose answer was lost, reading the name settles it: the bytes are ours,
/// the generation is the one the create made, and sending the identical create again
/// answers `AlreadyExists` (so a retry can never make a second copy).
pub async fn ambiguous_create_is_settled_by_reading_it_back(
    blobs: Arc<dyn Blobs>,
    _caps: Capabilities,
    root: String,
) -> RuleResult {
    let key = format!("{root}log/0000000000000001");
    let bytes = Bytes::from_static(b"batch of members 1..16");
    let meta = created(&blobs, &key, bytes.clone()).await?;
    let (read, read_bytes) = got(&blobs, &key).await.map_err(|e| format!("get: {e:?}"))?;
    ensure!(read_bytes == bytes, "read back {read_bytes:?}");
    ensure!(
        read.generation == meta.generation,
        "generation {:?} then {:?}",
        meta.generation,
        read.generation
    );
    let again = blobs.execute(create(&key, bytes.clone())).await;
    ensure!(again == Err(BlobError::AlreadyExists), "identical create again: {again:?}");
    let (_, still) = got(&blobs, &key).await.map_err(|e| format!("get: {e:?}"))?;
    ensure!(still == bytes, "the retry changed the bytes: {still:?}");
    Ok(Verdict::Passed)
}

/// Keys come back in byte order, strictly after `start_after` (present or not), at most
/// `limit` a page, `more` exactly when the limit cut the page short; `limit` 0 means the
/// store's page (all of these).
pub async fn list_is_in_key_order_strictly_after_start_after_in_pages(
    blobs: Arc<dyn Blobs>,
    _caps: Capabilities,
    root: String,
) -> RuleResult {
    let prefix = format!("{root}log/");
    // Names whose byte order is not their creation order or their length order.
    let mut names: Vec<String> = (0..23u64).map(|i| format!("{:016x}", i * 7919 % 101)).collect();
    names.extend(["0001".into(), "00010".into(), "0002".into(), "A".into(), "a".into(), "z-last".into()]);
    let mut expected: Vec<String> = names.iter().map(|n| format!("{prefix}{n}")).collect();
    for key in &expected {
        created(&blobs, key, Bytes::from_static(b"x")).await?;
    }
    expected.sort();
    expected.dedup();

    let (all, more) = listed(&blobs, &prefix, None, 0).await?;
    ensure!(all == expected, "limit 0: {all:?}");
    ensure!(!more, "limit 0 said more");

    // Pages of 7: concatenated they are the whole listing; only the last says no more.
    let mut pages = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let (page, more) = listed(&blobs, &prefix, after.as_deref(), 7).await?;
        ensure!(page.len() <= 7, "a page of {} for limit 7", page.len());
        ensure!(
            more == (page.len() == 7 && pages.len() + page.len() < expected.len()),
            "more={more} on page {page:?}"
        );
        pages.extend(page.iter().cloned());
        if !more {
            break;
        }
        after = page.last().cloned();
        ensure!(pages.len() <= expected.len(), "paging does not end");
    }
    ensure!(pages == expected, "paged {pages:?}");

    // start_after an existing key excludes it; one between keys starts at the next.
    let (page, _) = listed(&blobs, &prefix, Some(&expected[4]), 3).await?;
    ensure!(page == expected[5..8], "after {}: {page:?}", expected[4]);
    // `!` sorts before every character the names use, so this falls between [9] and [10].
    let between = format!("{}!", expected[9]);
    let (page, _) = listed(&blobs, &prefix, Some(&between), 2).await?;
    ensure!(page == expected[10..12], "after {between}: {page:?}");
    // A limit that fits the rest exactly says no more.
    let rest = expected.len() - 20;
    let (page, more) = listed(&blobs, &prefix, Some(&expected[19]), rest as u32).await?;
    ensure!(page == expected[20..] && !more, "exact fit: {page:?} more={more}");
    // After the last key, and after the whole prefix: nothing.
    let (page, more) = listed(&blobs, &prefix, expected.last().map(String::as_str), 5).await?;
    ensure!(page.is_empty() && !more, "after the last: {page:?}");
    let beyond = format!("{root}log0");
    let (page, more) = listed(&blobs, &prefix, Some(&beyond), 5).await?;
    ensure!(page.is_empty() && !more, "after the prefix: {page:?}");
    // start_after before the prefix lists from its start.
    let (page, _) = listed(&blobs, &prefix, Some(&root), 2).await?;
    ensure!(page == expected[..2], "after a key before the prefix: {page:?}");
    Ok(Verdict::Passed)
}

/// A listing's prefix is a string prefix: `log/` lists only under `log/`; `log` also lists
/// `log0` and `logz/...`; neither lists `lo`; and `lo` lists them all.
pub async fn list_prefix_is_a_string_prefix_not_a_directory(
    blobs: Arc<dyn Blobs>,
    _caps: Capabilities,
    root: String,
) -> RuleResult {
    let keys = ["lo", "log/1", "log/2/deeper", "log0", "logz/1", "lp"];
    for key in keys {
        created(&blobs, &format!("{root}{key}"), Bytes::from_static(b"x")).await?;
    }
    let under = |names: &[&str]| names.iter().map(|n| format!("{root}{n}")).collect::<Vec<_>>();
    for (prefix, want) in [
        ("log/", under(&["log/1", "log/2/deeper"])),
        ("log", under(&["log/1", "log/2/deeper", "log0", "logz/1"])),
        ("lo", under(&["lo", "log/1", "log/2/deeper", "log0", "logz/1"])),
        ("log/2", under(&["log/2/deeper"])),
        ("", under(&keys)),
        ("nothing", vec![]),
    ] {
        let (got, more) = listed(&blobs, &format!("{root}{prefix}"), None, 0).await?;
        ensure!(got == want && !more, "prefix {prefix:?}: {got:?}");
    }
    // An offset inside a shorter prefix's range but outside the longer one's.
    let (got, _) = listed(&blobs, &format!("{root}log"), Some(&format!("{root}log/2/deeper")), 0).await?;
    ensure!(got == under(&["log0", "logz/1"]), "prefix log after log/2/deeper: {got:?}");
    Ok(Verdict::Passed)
}

/// A rewrite at the current generation replaces the bytes and moves the generation; at
/// any other it is `PreconditionFailed` and changes nothing; of an absent key, `NotFound`.
pub async fn rewrite_succeeds_only_at_the_current_generation(
    blobs: Arc<dyn Blobs>,
    caps: Capabilities,
    root: String,
) -> RuleResult {
    let key = format!("{root}ckpt/0000000000000010/root");
    let first = created(&blobs, &key, Bytes::from_static(b"version one")).await?;
    let rewrite = |bytes: &'static [u8], g: &Generation| BlobOp::Rewrite {
        key: key.clone(),
        bytes: Bytes::from_static(bytes),
        if_generation: g.clone(),
    };
    let result = blobs.execute(rewrite(b"version two", &first.generation)).await;
    if !caps.conditional_rewrite {
        ensure!(
            result == Err(BlobError::Unsupported),
            "a backend without conditional rewrite answered {result:?}"
        );
        let (_, bytes) = got(&blobs, &key).await.map_err(|e| format!("{e:?}"))?;
        ensure!(bytes == "version one", "an unsupported rewrite changed the bytes");
        return Ok(Verdict::Unsupported("no conditional put (PutMode::Update) on this backend"));
    }
    let Ok(BlobOutcome::Rewritten(second)) = result else {
        return Err(format!("rewrite at the current generation: {result:?}"));
    };
    ensure!(second.generation != first.generation, "the generation did not move: {second:?}");
    let (meta, bytes) = got(&blobs, &key).await.map_err(|e| format!("{e:?}"))?;
    ensure!(
        bytes == "version two" && meta.generation == second.generation,
        "after rewrite: {meta:?} {bytes:?}"
    );

    let stale = blobs.execute(rewrite(b"version three", &first.generation)).await;
    ensure!(stale == Err(BlobError::PreconditionFailed), "rewrite at a stale generation: {stale:?}");
    let wrong = blobs.execute(rewrite(b"version three", &Generation("\"not-a-generation\"".into()))).await;
    ensure!(wrong == Err(BlobError::PreconditionFailed), "rewrite at a made-up generation: {wrong:?}");
    let (_, bytes) = got(&blobs, &key).await.map_err(|e| format!("{e:?}"))?;
    ensure!(bytes == "version two", "a failed rewrite changed the bytes: {bytes:?}");

    let absent = BlobOp::Rewrite {
        key: format!("{root}ckpt/absent"),
        bytes: Bytes::from_static(b"x"),
        if_generation: second.generation.clone(),
    };
    let result = blobs.execute(absent).await;
    ensure!(result == Err(BlobError::NotFound), "rewrite of an absent key: {result:?}");
    Ok(Verdict::Passed)
}

/// A delete at the current generation removes the object; at any other it is
/// `PreconditionFailed` and the object stays; of an absent key, `NotFound`.
pub async fn delete_succeeds_only_at_the_current_generation(
    blobs: Arc<dyn Blobs>,
    caps: Capabilities,
    root: String,
) -> RuleResult {
    let key = format!("{root}ckpt/0000000000000020/shard-0");
    let meta = created(&blobs, &key, Bytes::from_static(b"shard")).await?;
    let delete = |g: &Generation| BlobOp::Delete { key: key.clone(), if_generation: g.clone() };
    let wrong = Generation("\"not-a-generation\"".into());
    let result = blobs.execute(delete(&wrong)).await;
    if !caps.conditional_delete {
        ensure!(
            result == Err(BlobError::Unsupported),
            "a backend without conditional delete answered {result:?}"
        );
        let right = blobs.execute(delete(&meta.generation)).await;
        ensure!(right == Err(BlobError::Unsupported), "even at the right generation: {right:?}");
        got(&blobs, &key).await.map_err(|e| format!("an unsupported delete removed the object: {e:?}"))?;
        return Ok(Verdict::Unsupported("object_store has no conditional delete for this backend"));
    }
    ensure!(result == Err(BlobError::PreconditionFailed), "delete at a made-up generation: {result:?}");
    if caps.conditional_rewrite {
        // A generation that was current once but no longer is.
        let Ok(BlobOutcome::Rewritten(newer)) = blobs
            .execute(BlobOp::Rewrite {
                key: key.clone(),
                bytes: Bytes::from_static(b"shard v2"),
                if_generation: meta.generation.clone(),
            })
            .await
        else {
            return Err("rewrite before the stale delete failed".into());
        };
        let stale = blobs.execute(delete(&meta.generation)).await;
        ensure!(stale == Err(BlobError::PreconditionFailed), "delete at a stale generation: {stale:?}");
        got(&blobs, &key).await.map_err(|e| format!("a failed delete removed the object: {e:?}"))?;
        let result = blobs.execute(delete(&newer.generation)).await;
        ensure!(result == Ok(BlobOutcome::Deleted), "delete at the current generation: {result:?}");
    } else {
        let result = blobs.execute(delete(&meta.generation)).await;
        ensure!(result == Ok(BlobOutcome::Deleted), "delete at the current generation: {result:?}");
    }
    let gone = got(&blobs, &key).await;
    ensure!(gone == Err(BlobError::NotFound), "after delete, get answered {gone:?}");
    let again = blobs.execute(delete(&meta.generation)).await;
    ensure!(again == Err(BlobError::NotFound), "delete of an absent key: {again:?}");
    Ok(Verdict::Passed)
}

/// An 8 MiB object goes in and comes back byte for byte, with its size in every meta.
/// The collection fence end to end (SPEC 10.15): a drop lists a root, a compactor
/// freshens it (the kernel's own restamp: other bytes, the same content), and the drop's
/// delete at the version it listed is refused, leaving the object. On S3 the version is
/// the ETag, the MD5 of the bytes: the fence holds only because the stamp changes them.
pub async fn a_freshened_object_survives_a_delete_at_its_listed_version(
    blobs: Arc<dyn Blobs>,
    caps: Capabilities,
    root: String,
) -> RuleResult {
    use slotlog_kernel::checkpoint::{restamp, ObjectKind};
    use slotlog_kernel::format::Root;
    use slotlog_kernel::ids::WorldId;
    use slotlog_kernel::world::policy::{Policy, PolicyRules};
    if !(caps.conditional_delete && caps.conditional_rewrite) {
        return Ok(Verdict::Unsupported("no conditional rewrite and delete on this backend"));
    }
    let first_write = Root {
        world_id: WorldId([7; 16]),
        next_sequence: 9,
        previous_hash: slotlog_kernel::hash::Hash32::ZERO,
        document_count: 0,
        policy: Policy { version: 0, rules: PolicyRules::default() },
        shard_bits: 0,
        shards: vec![slotlog_kernel::hash::Hash32::of(b"shard")],
        deltas: vec![],
        receipts_from_sequence: 9,
        receipts: vec![],
        stamp: 0,
    }
    .encode();
    let key = format!("{root}roots/r");
    created(&blobs, &key, Bytes::from(first_write.clone())).await?;
    let listed =
        blobs.execute(BlobOp::List { prefix: format!("{root}roots/"), start_after: None, limit: 10 }).await;
    let Ok(BlobOutcome::Listed { entries, .. }) = listed else { return Err(format!("list: {listed:?}")) };
    let listed = entries.into_iter().find(|e| e.key == key).ok_or("the root is not listed")?;
    let fresh = restamp(ObjectKind::Root, &first_write, 1_700_000_000_000_000).ok_or("restamp")?;
    ensure!(fresh[..] != first_write[..], "a freshen changes the bytes");
    let rewrite =
        BlobOp::Rewrite { key: key.clone(), bytes: fresh.clone(), if_generation: listed.generation.clone() };
    let rewritten = blobs.execute(rewrite).await;
    ensure!(
        matches!(rewritten, Ok(BlobOutcome::Rewritten(_))),
        "freshen at the listed version: {rewritten:?}"
    );
    let delete = blobs.execute(BlobOp::Delete { key: key.clone(), if_generation: listed.generation }).await;
    ensure!(
        delete == Err(BlobError::PreconditionFailed),
        "delete at the listed version after a freshen: {delete:?}"
    );
    let (_, bytes) = got(&blobs, &key).await.map_err(|e| format!("the freshened root is gone: {e:?}"))?;
    ensure!(bytes == fresh, "the root holds the freshened bytes");
    Ok(Verdict::Passed)
}

pub async fn big_objects_round_trip(blobs: Arc<dyn Blobs>, _caps: Capabilities, root: String) -> RuleResult {
    let key = format!("{root}blobs/big");
    // A pattern that no offset error could reproduce.
    let bytes: Bytes = (0..BIG_OBJECT_BYTES as u64)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect::<Vec<u8>>()
        .into();
    let meta = created(&blobs, &key, bytes.clone()).await?;
    ensure!(meta.size == BIG_OBJECT_BYTES as u64, "created size {}", meta.size);
    let (read, back) = got(&blobs, &key).await.map_err(|e| format!("{e:?}"))?;
    ensure!(read.size == BIG_OBJECT_BYTES as u64, "read size {}", read.size);
    ensure!(back == bytes, "the bytes differ (read {} bytes)", back.len());
    match blobs.execute(BlobOp::Stat { key: key.clone() }).await {
        Ok(BlobOutcome::Stat(stat)) => {
            ensure!(stat.size == BIG_OBJECT_BYTES as u64, "stat size {}", stat.size)
        }
        other => return Err(format!("stat: {other:?}")),
    }
    Ok(Verdict::Passed)
}

/// Reading, stating or listing what is not there.
pub async fn absent_keys_are_not_found(
    blobs: Arc<dyn Blobs>,
    _caps: Capabilities,
    root: String,
) -> RuleResult {
    let key = format!("{root}log/00000000000000ff");
    let get = blobs.execute(BlobOp::Get { key: key.clone() }).await;
    ensure!(get == Err(BlobError::NotFound), "get: {get:?}");
    let stat = blobs.execute(BlobOp::Stat { key: key.clone() }).await;
    ensure!(stat == Err(BlobError::NotFound), "stat: {stat:?}");
    let (keys, more) = listed(&blobs, &format!("{root}log/"), None, 10).await?;
    ensure!(keys.is_empty() && !more, "listing an empty prefix: {keys:?}");
    // A name that is a prefix of an existing key is not an object.
    created(&blobs, &format!("{root}dir/child"), Bytes::from_static(b"x")).await?;
    let dir = blobs.execute(BlobOp::Stat { key: format!("{root}dir") }).await;
    ensure!(dir == Err(BlobError::NotFound), "stat of a 'directory': {dir:?}");
    Ok(Verdict::Passed)
}

/// Stat and get describe the object as the create did: key as passed, generation, size,
/// a store time, and an empty object is an object. A create answered with a store time
/// (where the backend dates its writes) bounds the creation time the stat reports: a
/// check that the write did not land late judges that bound (SPEC 10.15).
pub async fn stat_and_get_agree_with_the_create(
    blobs: Arc<dyn Blobs>,
    caps: Capabilities,
    root: String,
) -> RuleResult {
    for (name, bytes) in [("marker", Bytes::from_static(b"world marker")), ("empty", Bytes::new())] {
        let key = format!("{root}{name}");
        let meta = created(&blobs, &key, bytes.clone()).await?;
        ensure!(meta.key == key && meta.size == bytes.len() as u64, "created {meta:?}");
        let Ok(BlobOutcome::Stat(stat)) = blobs.execute(BlobOp::Stat { key: key.clone() }).await else {
            return Err(format!("stat {key}"));
        };
        let (read, back) = got(&blobs, &key).await.map_err(|e| format!("{e:?}"))?;
        ensure!(back == bytes, "{key}: read {back:?}");
        ensure!(stat == read, "{key}: stat {stat:?} get {read:?}");
        ensure!(
            stat.key == key && stat.generation == meta.generation && stat.size == meta.size,
            "{key}: stat {stat:?} create {meta:?}"
        );
        ensure!(meta.time.is_some() || !caps.dated_writes, "{key}: the create's answer has no time");
        if let Some(time) = meta.time {
            ensure!(
                time.created_by_us() >= stat.created_at_us,
                "{key}: the create's answer ({time:?}) says it landed before the store's {}",
                stat.created_at_us
            );
        }
        let (listed_keys, _) = listed(&blobs, &key, None, 0).await?;
        ensure!(listed_keys == [key.clone()], "{key} lists as {listed_keys:?}");
    }
    Ok(Verdict::Passed)
}
