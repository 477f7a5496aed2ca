//! Judging reads: every answer must be the model's answer at the state it names, and
//! that state must have been the tip while the read was in flight (exact reads) or
//! within the staleness bound before it began (catalog reads).

use super::{micros, receipt_to_model, tip_interval, CheckOptions, CheckReport, SlotSpan, Violation};
use crate::history::{History, Outcome, ReadOp, ReadOutcome};
use crate::{normalize_path, ModelDocument, ModelReceiptAnswer, ModelVersion, ModelWorld, ReceiptKind};
use slotlog_kernel::reply::{Answer, ReadError, WriteOk};
use slotlog_kernel::search::SearchMatch;
use slotlog_kernel::time::Instant;
use slotlog_kernel::world::ReceiptAnswer;
use slotlog_kernel::world::{IndexEntry, VersionKind, VersionRecord};
use slotlog_kernel::Read;
use std::collections::BTreeMap;

pub(super) struct Judge<'a> {
    history: &'a History,
    spans: &'a [SlotSpan],
    staleness_us: u64,
    view_age_max_us: u64,
    /// Acknowledged commits by answer time, with the largest sequence acknowledged so far.
    acked: Vec<(Instant, u64)>,
    /// Each view's pin, by view.
    views: BTreeMap<usize, ViewPin>,
}

/// What a view's reads say of its pin. A view's reads are sequential, so history order is
/// time order. The pin is made by the first read the replica answers from a state, which
/// may be one whose answer never reached the client (a body read past the deadline): so
/// the pinned state must be fresh enough for some read of the view up to the first
/// answered one, the loosest of their bounds.
struct ViewPin {
    /// The view's first read.
    first: usize,
    /// Its first read answered with a state, and that state.
    pinning: Option<(usize, u64)>,
    /// The earliest instant the pinned state may have been the tip at.
    earliest: Instant,
}

impl<'a> Judge<'a> {
    pub fn new(history: &'a History, spans: &'a [SlotSpan], options: CheckOptions) -> Judge<'a> {
        let mut acked: Vec<(Instant, u64)> = history
            .ops
            .iter()
            .filter_map(|op| match &op.outcome {
                Outcome::Answered { at, result: Ok(WriteOk::Committed(r)) } => Some((*at, r.sequence)),
                _ => None,
            })
            .collect();
        acked.sort();
        let mut max = 0;
        for a in &mut acked {
            max = max.max(a.1);
            a.1 = max;
        }
        let staleness_us = micros(options.catalog_staleness);
        let mut views: BTreeMap<usize, ViewPin> = BTreeMap::new();
        for (i, op) in history.reads.iter().enumerate() {
            let Some(view) = op.view else { continue };
            let pin =
                views.entry(view).or_insert(ViewPin { first: i, pinning: None, earliest: Instant::MAX });
            if pin.pinning.is_some() {
                continue;
            }
            pin.earliest = pin.earliest.min(earliest(op, staleness_us));
            if let ReadOutcome::Answered { result: Ok(ok), .. } = &op.outcome {
                pin.pinning = Some((i, ok.at_sequence));
            }
        }
        let view_age_max_us = micros(options.view_age_max);
        Judge { history, spans, staleness_us, view_age_max_us, acked, views }
    }

    /// Rule `ViewSnapshot`: a view answers `ViewExpired` only once older than the age.
    pub fn judge_view_expiries(&self, r: &mut CheckReport) {
        for (i, op) in self.history.reads.iter().enumerate() {
            let ReadOutcome::Answered { at, result: Err(ReadError::ViewExpired) } = &op.outcome else {
                continue;
            };
            let Some(view) = op.view else {
                r.violation(Violation::ViewExpiredEarly {
                    read: i,
                    view: usize::MAX,
                    age_ms: 0,
                    age_max_ms: 0,
                });
                continue;
            };
            let first = self.history.reads[self.views[&view].first].invoked_at;
            let age_us = at.saturating_since(first).as_micros() as u64;
            if age_us < self.view_age_max_us {
                let (age_ms, age_max_ms) = (age_us / 1_000, self.view_age_max_us / 1_000);
                r.violation(Violation::ViewExpiredEarly { read: i, view, age_ms, age_max_ms });
            }
        }
    }

    /// The largest sequence acknowledged strictly before `t`.
    fn acked_before(&self, t: Instant) -> u64 {
        let i = self.acked.partition_point(|(at, _)| *at < t);
        if i == 0 {
            0
        } else {
            self.acked[i - 1].1
        }
    }

    /// Judges read `i`, answered at sequence `at`, against the model at that state.
    pub fn judge(&self, model: &ModelWorld, i: usize, at: u64, r: &mut CheckReport) {
        let op = &self.history.reads[i];
        let ReadOutcome::Answered { at: answered, result: Ok(ok) } = &op.outcome else { return };
        let exact = op.read.is_exact();
        let (from, until) = tip_interval(self.spans, at);
        let mut earliest = earliest(op, self.staleness_us);
        let mut answered = *answered;
        // A later read of a view: judged against its pin, and left out of the lag figures.
        let mut later = false;
        if let Some(view) = op.view {
            r.reads_view += 1;
            let pin = &self.views[&view];
            let (pinning, pinned) = pin.pinning.expect("a view with an answer has a pinning one");
            if pinning != i {
                later = true;
                if at != pinned {
                    r.violation(Violation::ViewMoved { read: i, view, at, pinned });
                }
                if self.acked_before(op.invoked_at) > at {
                    r.reads_view_behind += 1;
                }
                // Fresh enough for the read that pinned it, not for this one.
                let ReadOutcome::Answered { at: pinned_answered, .. } = &self.history.reads[pinning].outcome
                else {
                    unreachable!("the pinning read was answered")
                };
                answered = *pinned_answered;
            }
            earliest = pin.earliest;
        }
        let lag = op.invoked_at.saturating_since(until);
        let lag_ms = lag.as_secs_f64() * 1_000.0;
        if exact {
            r.reads_exact += 1;
            if !later && self.acked_before(op.invoked_at) > at {
                r.stale_exact += 1;
            }
        } else {
            r.reads_catalog += 1;
            if !later {
                r.catalog_lag_ms_max = r.catalog_lag_ms_max.max(lag_ms);
            }
        }
        if from > answered || until < earliest {
            let (read, replica, lag_us) = (i, op.replica, lag.as_micros() as u64);
            r.violation(if exact {
                Violation::ExactReadStale { read, replica, at, lag_us }
            } else {
                Violation::CatalogReadStale { read, replica, at, lag_us }
            });
        }
        if let Some(v) = receipt_absence(model, i, &op.read, &ok.answer, at) {
            return r.violation(v);
        }
        if !answer_agrees(model, &op.read, &ok.answer) {
            r.violation(Violation::ReadDiffers {
                read: i,
                request: op.read.clone(),
                at,
                answer: Box::new(ok.answer.clone()),
            });
        }
    }
}

pub(super) fn judge_error(i: usize, op: &ReadOp, e: &ReadError, r: &mut CheckReport) {
    if let (ReadError::InvalidQuery(_), Read::Search { query, .. }) = (e, &op.read) {
        // The bounds are the SPEC's numbers; within them, a query with a word is valid.
        let parts = crate::search::query_parts(query);
        let in_bounds = query.len() <= 1_024 && parts.as_ref().is_some_and(|p| p.len() <= 16);
        if in_bounds {
            r.violation(Violation::SearchRefusalDisagrees { read: i, query: query.clone() });
        }
        return;
    }
    let ReadError::InvalidPath(problem) = e else { return };
    let raw = match &op.read {
        Read::Fetch { path, .. } | Read::Versions { path } => path,
        Read::List { directory, .. } => directory,
        Read::IsDirectory { path } => path,
        other => return r.violation(Violation::ReadRefusedWithoutPath { read: i, request: other.clone() }),
    };
    if normalize_path(raw).err() != Some(super::path_problem_to_model(problem)) {
        r.violation(Violation::ReadRefusalDisagrees { read: i, problem: *problem, raw: raw.clone() });
    }
}

/// The earliest instant a read's state may have been the tip at: its start for an exact
/// read, the staleness bound before it for a catalog read.
fn earliest(op: &ReadOp, staleness_us: u64) -> Instant {
    if op.read.is_exact() {
        op.invoked_at
    } else {
        Instant::from_micros(op.invoked_at.as_micros().saturating_sub(staleness_us))
    }
}

/// Rule `ReceiptAbsence` (SPEC 10.13): a receipt read answered "absent" where the model
/// holds the operation's receipt, or where the window no longer covers the read's `since`
/// (the answer must be `Expired`). Found apart from other wrong answers: this one makes a
/// caller settling an `Uncertain` write write it twice.
pub(super) fn receipt_absence(
    model: &ModelWorld,
    read: usize,
    request: &Read,
    answer: &Answer,
    at: u64,
) -> Option<Violation> {
    let (Read::Receipt { op_id, since }, Answer::Receipt(ReceiptAnswer::Absent)) = (request, answer) else {
        return None;
    };
    let expected = model.receipt_answer(*op_id, *since);
    (expected != ModelReceiptAnswer::Absent).then(|| Violation::ReceiptAbsentNotExact {
        read,
        request: request.clone(),
        at,
        model: expected,
    })
}

fn receipt_answer_to_model(a: &ReceiptAnswer) -> ModelReceiptAnswer {
    match a {
        ReceiptAnswer::Committed(r) => ModelReceiptAnswer::Committed(receipt_to_model(r)),
        ReceiptAnswer::Absent => ModelReceiptAnswer::Absent,
        ReceiptAnswer::Expired { window_from } => ModelReceiptAnswer::Expired { window_from: *window_from },
    }
}

/// SPEC 8: a listing returns at most 1,000 entries, and a limit of 0 or past that asks
/// for the most. The model's own number: were the kernel's to drift, answers would differ.
const LISTING_ENTRIES_MAX: u32 = 1_000;

fn limit(l: u32) -> usize {
    if l == 0 || l > LISTING_ENTRIES_MAX {
        LISTING_ENTRIES_MAX as usize
    } else {
        l as usize
    }
}

fn entry_matches(e: &IndexEntry, path: &str, d: &ModelDocument) -> bool {
    e.path.as_str() == path
        && e.version == d.version
        && e.first_version == d.first_version
        && e.archived == d.archived
        && e.body_hash.0 == d.body_hash
        && e.body_len == d.body_len
        && e.modified_sequence == d.modified_sequence
        && e.modified_us == d.modified_us
        && e.catalog.as_deref() == d.catalog.as_deref()
}

fn version_matches(v: &VersionRecord, m: &ModelVersion) -> bool {
    let kind = match v.kind {
        VersionKind::Publish => ReceiptKind::Published,
        VersionKind::Append => ReceiptKind::Appended,
    };
    v.version == m.version
        && v.sequence == m.sequence
        && v.op_id == m.op_id
        && v.body_hash.0 == m.body_hash
        && v.body_len == m.body_len
        && kind == m.kind
}

/// Entries in order against the model's documents at these paths.
fn entries_match(entries: &[IndexEntry], model: &ModelWorld, paths: &[String]) -> bool {
    entries.len() == paths.len()
        && entries.iter().zip(paths).all(|(e, p)| model.document(p).is_some_and(|d| entry_matches(e, p, &d)))
}

/// Whether `answer` is the model's answer to `read`; true when the model cannot normalize
/// the read's path, as it then has no answer to compare.
fn answer_agrees(model: &ModelWorld, read: &Read, answer: &Answer) -> bool {
    let agrees = match read {
        Read::Fetch { path, version } => {
            let Ok(path) = normalize_path(path) else { return true };
            match (model.document(&path), answer) {
                (None, Answer::NotFound) => true,
                (Some(d), a) => {
                    let v = version.unwrap_or(d.version);
                    if v < d.first_version || v > d.version {
                        *a == Answer::VersionNotRetained {
                            first_version: d.first_version,
                            current: d.version,
                        }
                    } else {
                        let record = model.versions(&path).into_iter().find(|m| m.version == v);
                        match (a, record, model.body(&path, v)) {
                            (Answer::Document { entry, version, body }, Some(m), Some(b)) => {
                                entry_matches(entry, &path, &d)
                                    && version_matches(version, &m)
                                    && body[..] == *b
                            }
                            _ => false,
                        }
                    }
                }
                _ => false,
            }
        }
        Read::Versions { path } => {
            let Ok(path) = normalize_path(path) else { return true };
            match (model.document(&path), answer) {
                (None, Answer::NotFound) => true,
                (Some(d), Answer::Versions { entry, versions }) => {
                    let mv = model.versions(&path);
                    entry_matches(entry, &path, &d)
                        && versions.len() == mv.len()
                        && versions.iter().zip(&mv).all(|(v, m)| version_matches(v, m))
                }
                _ => false,
            }
        }
        Read::Receipt { op_id, since } => match answer {
            Answer::Receipt(r) => receipt_answer_to_model(r) == model.receipt_answer(*op_id, *since),
            _ => false,
        },
        Read::Lookup { prefix, start_after, limit: l } => {
            let from = match start_after {
                Some(a) if a.as_str() >= prefix.as_str() => format!("{a}\0"),
                _ => prefix.clone(),
            };
            let paths: Vec<String> = model
                .documents_from(&from)
                .map(|(p, _)| p.to_string())
                .take_while(|p| p.starts_with(prefix.as_str()))
                .take(limit(*l) + 1)
                .collect();
            match answer {
                Answer::Lookup { entries, more } => {
                    let n = paths.len().min(limit(*l));
                    *more == (paths.len() > n) && entries_match(entries, model, &paths[..n])
                }
                _ => false,
            }
        }
        Read::List { directory, start_after, limit: l } => {
            let base = if directory.split('/').all(str::is_empty) {
                String::new()
            } else {
                let Ok(base) = normalize_path(directory) else { return true };
                base
            };
            let prefix = format!("{base}/");
            // Children by name: a document's is its path, a subdirectory's its path and a
            // `/`; those named after the cursor, the page's and one more. A subdirectory's
            // documents sit together in path order, each after its name, so the paths
            // give the children in order, and every child after the cursor comes from a
            // path at or after it: the walk starts there (from the directory's start, it
            // made a string of every document of a large directory for each page, a tenth
            // of a `views` run).
            let page_and_one = limit(*l) + 1;
            let from = start_after.as_deref().filter(|a| *a > prefix.as_str()).unwrap_or(&prefix);
            let mut children: Vec<String> = Vec::new();
            for p in model.paths_from(from) {
                if children.len() == page_and_one {
                    break;
                }
                let Some(rest) = p.strip_prefix(prefix.as_str()) else { break };
                let name: std::borrow::Cow<'_, str> = match rest.find('/') {
                    None => p.into(),
                    Some(i) => format!("{prefix}{}/", &rest[..i]).into(),
                };
                if start_after.as_deref().is_some_and(|a| *name <= *a)
                    || children.last().is_some_and(|c| *c == *name)
                {
                    continue;
                }
                assert!(children.last().is_none_or(|c| c.as_str() < &*name), "children come in order");
                children.push(name.into_owned());
            }
            let n = children.len().min(limit(*l));
            let docs: Vec<String> = children[..n].iter().filter(|c| !c.ends_with('/')).cloned().collect();
            let dirs: Vec<&str> = children[..n].iter().filter_map(|c| c.strip_suffix('/')).collect();
            let next = (children.len() > n).then(|| children[n - 1].clone());
            match answer {
                Answer::Listing { documents, directories, more, next: got_next } => {
                    *more == (children.len() > n)
                        && *got_next == next
                        && entries_match(documents, model, &docs)
                        && directories.iter().map(|d| d.as_str()).eq(dirs.iter().copied())
                }
                _ => false,
            }
        }
        Read::IsDirectory { path } => {
            let under = if path.split('/').all(str::is_empty) {
                None
            } else {
                let Ok(p) = normalize_path(path) else { return true };
                Some(format!("{p}/"))
            };
            let is =
                under.is_none_or(|u| model.documents_from(&u).next().is_some_and(|(p, _)| p.starts_with(&u)));
            matches!(answer, Answer::IsDirectory(got) if *got == is)
        }
        Read::Search { query, start_after, limit: l } => {
            let Answer::Search { entries, matched, more } = answer else { return false };
            // A query the model finds no word in has no answer to compare.
            let Some(parts) = crate::search::query_parts(query) else { return false };
            let paths: Vec<String> = model
                .currents()
                .filter(|(p, d)| match matched {
                    SearchMatch::Body => {
                        crate::search::holds(&crate::search::body_words_cached(*d.body_hash, d.body), &parts)
                    }
                    SearchMatch::Catalog => crate::search::catalog_holds(p, d.catalog, &parts),
                })
                .map(|(p, _)| p.to_string())
                .filter(|p| start_after.as_deref().is_none_or(|a| p.as_str() > a))
                .collect();
            let n = paths.len().min(limit(*l));
            *more == (paths.len() > n) && entries_match(entries, model, &paths[..n])
        }
        Read::HashLookup { hash, start_after, limit: l } => {
            let paths: Vec<String> = model
                .currents()
                .filter(|(_, d)| *d.body_hash == hash.0)
                .map(|(p, _)| p.to_string())
                .filter(|p| start_after.as_deref().is_none_or(|a| p.as_str() > a))
                .collect();
            let n = paths.len().min(limit(*l));
            match answer {
                Answer::Paths { paths: got, more } => {
                    *more == (paths.len() > n)
                        && got.iter().map(|p| p.as_str()).eq(paths[..n].iter().map(String::as_str))
                }
                _ => false,
            }
        }
    };
    agrees
}
