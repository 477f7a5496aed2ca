//! Answers read from a snapshot: a document's current or retained version, its retained
//! versions, a directory's listing. Pure functions of the world and the history-block
//! cache; when a record is not in hand they say which blocks hold it.

use crate::hash::Hash32;
use crate::history::History;
use crate::reply::{Answer, CheckpointProblem};
use crate::views::ReadWorld;
use crate::world::{IndexEntry, Path, VersionAt, VersionRecord};

/// Why a read has no record in hand.
pub(crate) enum Found {
    /// The answer is not a document (absent, or the version not retained).
    Answer(Box<Answer>),
    /// The record is in this history block, not cached.
    InBlock(Hash32),
    /// Records are in these history blocks (the first given apart), not cached.
    InBlocks(Hash32, Vec<Hash32>),
    /// A cached block does not hold what the document's reference promised.
    Broken(Hash32, CheckpointProblem),
}

pub(crate) fn fetch(
    world: &dyn ReadWorld,
    path: &Path,
    version: Option<u64>,
    history: &History,
) -> Result<(IndexEntry, VersionRecord), Found> {
    let doc = world.document(path).ok_or(Found::Answer(Box::new(Answer::NotFound)))?;
    let e = &doc.entry;
    let v = version.unwrap_or(e.version);
    let not_retained = || {
        Found::Answer(Box::new(Answer::VersionNotRetained {
            first_version: e.first_version,
            current: e.version,
        }))
    };
    let record = match doc.version(v).ok_or_else(not_retained)? {
        VersionAt::Held(record) => record.clone(),
        VersionAt::Stored(r) => stored_record(history, r.block, path, v)?.ok_or(Found::InBlock(r.block))?,
    };
    invariant_eq!(record.version, v);
    Ok((e.clone(), record))
}

/// Version `v` of `path` from its history block, if the block is cached. A cached block
/// was verified against its name; one that does not hold what its reference promised
/// means a checkpoint was written wrong.
pub(crate) fn stored_record(
    history: &History,
    block: Hash32,
    path: &Path,
    v: u64,
) -> Result<Option<VersionRecord>, Found> {
    let Some(b) = history.get(&block) else { return Ok(None) };
    match b.record(v).filter(|_| b.path == *path) {
        Some(record) => Ok(Some(record.clone())),
        None => Err(Found::Broken(block, CheckpointProblem::HistoryDisagrees { path: path.clone() })),
    }
}

/// Every retained version of a document, or the history blocks not yet cached.
pub(crate) fn retained_versions(
    doc: &crate::world::Document,
    history: &History,
) -> Result<Vec<VersionRecord>, Found> {
    let e = &doc.entry;
    let missing: Vec<Hash32> =
        doc.stored_blocks().iter().map(|r| r.block).filter(|b| history.get(b).is_none()).collect();
    if let Some(&first) = missing.first() {
        return Err(Found::InBlocks(first, missing));
    }
    // One pass over the blocks: each is cached, so this is memory only.
    let retained = e.first_version..=doc.stored_through();
    let mut versions = Vec::new();
    for r in doc.stored_blocks() {
        let block = history.get(&r.block).expect("every block is cached");
        let broken = || Found::Broken(r.block, CheckpointProblem::HistoryDisagrees { path: e.path.clone() });
        if block.path != e.path {
            return Err(broken());
        }
        versions.extend(block.records.iter().filter(|v| retained.contains(&v.version)).cloned());
    }
    if !versions.iter().map(|v| v.version).eq(retained) {
        let first = doc.stored_blocks()[0].block;
        return Err(Found::Broken(first, CheckpointProblem::HistoryDisagrees { path: e.path.clone() }));
    }
    versions.extend(doc.held_versions().cloned());
    Ok(versions)
}

/// The documents and subdirectories directly in `directory` (None: the root) whose names
/// sort after `start_after` (a subdirectory's name is its path and a `/`), skipping each
/// subdirectory's contents with one range seek. Children come in name order, which is the
/// order of their first paths.
pub(crate) fn list(
    world: &dyn ReadWorld,
    directory: Option<&Path>,
    start_after: Option<&str>,
    limit: usize,
) -> Answer {
    let base = directory.map_or(String::new(), |d| d.as_str().to_string());
    let prefix = format!("{base}/");
    let (mut documents, mut directories) = (Vec::new(), Vec::new());
    let mut from = match start_after {
        Some(a) if a > prefix.as_str() => format!("{a}\0"),
        _ => prefix.clone(),
    };
    let (mut more, mut last) = (false, None);
    loop {
        let Some((path, doc)) = world.documents_from(&from).next() else { break };
        let Some(rest) = path.as_str().strip_prefix(prefix.as_str()) else { break };
        let (name, skip_to) = match rest.find('/') {
            None => (path.as_str().to_string(), format!("{}\0", path.as_str())),
            Some(i) => {
                let sub = format!("{prefix}{}", &rest[..i]);
                (format!("{sub}/"), format!("{sub}0"))
            }
        };
        from = skip_to;
        // A subdirectory whose name the cursor passes, though a path inside it does not.
        if start_after.is_some_and(|a| name.as_str() <= a) {
            continue;
        }
        if documents.len() + directories.len() == limit {
            more = true;
            break;
        }
        match name.strip_suffix('/') {
            None => documents.push(doc.entry.clone()),
            Some(sub) => directories.push(Path::parse(sub).expect("a prefix of a normalized path")),
        }
        last = Some(name);
    }
    Answer::Listing { documents, directories, more, next: if more { last } else { None } }
}
