//! `slotlog search`: a body search of a world in a store, from a read-only replica (it
//! creates, rewrites and deletes nothing). It asks until an index covering the state
//! answers from bodies, or until `--wait-s` passes; then it prints the catalog answer
//! and says so.

use slotlog::object_store_blobs::ObjectStoreBlobs;
use slotlog::{Answer, ReadOk, SearchMatch, World, WorldConfig};
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

pub struct Args {
    pub url: String,
    pub prefix: String,
    pub query: String,
    pub start_after: Option<String>,
    pub limit: u32,
    /// How long to keep asking for a body answer while the index is built.
    pub wait_s: f64,
}

/// Ok(true) once answered and printed, from bodies or (said so) from the catalog.
pub async fn run(args: Args) -> Result<bool, String> {
    let answer = search(&args).await?;
    let Answer::Search { entries, matched, more } = &answer.answer else {
        return Err(format!("a search answered {:?}", answer.answer));
    };
    let how = match matched {
        SearchMatch::Body => "bodies",
        _ => "the catalog only (paths and catalog records; no index covered the state in time)",
    };
    println!("{} documents at sequence {}, from {how}", entries.len(), answer.at_sequence);
    for e in entries {
        // A document's modified time (0 before slots carried one: unknown) and its record.
        let modified = match e.modified_us {
            0 => "-".to_string(),
            us => humantime::format_rfc3339_micros(UNIX_EPOCH + Duration::from_micros(us)).to_string(),
        };
        let record = e.catalog.as_deref().map(|r| format!("\t{r:?}")).unwrap_or_default();
        println!("{}\tv{}\t{} bytes\t{modified}{record}", e.path.as_str(), e.version, e.body_len);
    }
    if let (true, Some(last)) = (*more, entries.last()) {
        println!("more: --start-after {}", last.path.as_str());
    }
    Ok(true)
}

/// The answer: the first from bodies, or the last within the wait.
pub async fn search(args: &Args) -> Result<ReadOk, String> {
    if !(args.wait_s.is_finite() && args.wait_s >= 0.0 && args.wait_s <= 86_400.0) {
        return Err(format!("--wait-s {} is not between 0 and a day", args.wait_s));
    }
    let (store, backend, prefix) = super::store(&args.url, &args.prefix, false)?;
    let blobs = Arc::new(ObjectStoreBlobs::new(store, backend));
    let mut config = WorldConfig::default();
    config.kernel.read_only = true;
    let world = World::open_on(blobs, &prefix, config).await.map_err(|e| e.to_string())?;
    let started = Instant::now();
    let answer = loop {
        let ok = world
            .search(&args.query, args.start_after.as_deref(), args.limit)
            .await
            .map_err(|e| e.to_string())?;
        let body = matches!(ok.answer, Answer::Search { matched: SearchMatch::Body, .. });
        if body || started.elapsed().as_secs_f64() >= args.wait_s {
            break ok;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    world.close().await;
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_search_of_a_written_world_answers_from_bodies_and_a_missing_world_is_an_error() {
        let dir = std::env::temp_dir().join(format!("slotlog-search-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let url = format!("file://{}", dir.display());
        let writer = super::super::writer::WriterArgs {
            url: url.clone(),
            prefix: "w".into(),
            log: dir.with_extension("log").to_string_lossy().into_owned(),
            duration_s: 0.5,
            writers: 2,
            paths: 10,
            listen: None,
            peers: Vec::new(),
            checkpoint_slots: None,
            health: None,
        };
        assert_eq!(super::super::writer::run(writer).await, Ok(true));
        let args = |query: &str, prefix: &str| Args {
            url: url.clone(),
            prefix: prefix.into(),
            query: query.into(),
            start_after: None,
            limit: 1_000,
            wait_s: 30.0,
        };
        // Every body the writer writes is "<op id> wrote this".
        let ok = search(&args("WROTE \"this\"", "w")).await.expect("answered");
        let Answer::Search { entries, matched, more } = ok.answer else { panic!("a search") };
        let paths: Vec<&str> = entries.iter().map(|e| e.path.as_str()).collect();
        let expected: Vec<String> = (0..10).map(|n| format!("/docs/{n:05}.md")).collect();
        assert_eq!(
            (paths, matched, more),
            (expected.iter().map(String::as_str).collect(), SearchMatch::Body, false)
        );
        let none = search(&args("\"this wrote\"", "w")).await.expect("answered");
        assert!(
            matches!(none.answer, Answer::Search { ref entries, .. } if entries.is_empty()),
            "in order only"
        );
        assert!(search(&args("x", "absent")).await.is_err(), "no world there");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
