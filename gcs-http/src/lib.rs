//! The simulated GCS served over HTTP: the object state the simulation uses
//! ([`slotlog_sim::gcs::Objects`]: generations, preconditions, GCS's one mutation per name
//! per second) behind the subset of GCS's XML API that object_store 0.14's GCS client and
//! slotlog's conditional delete speak, so a real HTTP client meets GCS's rules.
//!
//! Owns only the translation between HTTP and [`BlobOp`]s, and the faults switched on over
//! HTTP. It does not change what the simulation's objects do: every answer about an object
//! is [`Objects::apply`]'s.
//!
//! # The API
//!
//! | request | meaning |
//! |---|---|
//! | `PUT /{bucket}/{object}` with `x-goog-if-generation-match: 0` | create if absent |
//! | `PUT` with `x-goog-if-generation-match: N` | rewrite at generation `N` |
//! | `PUT` without it | overwrite (a stat and a conditional write under one lock) |
//! | `GET` / `HEAD /{bucket}/{object}` (`?generation=N`, `Range`, `If-Match`, `If-None-Match`) | read |
//! | `DELETE /{bucket}/{object}` with `x-goog-if-generation-match: N` (or `?ifGenerationMatch=N`) | conditional delete; without: unconditional |
//! | `GET /{bucket}?list-type=2&prefix=&start-after=&continuation-token=&max-keys=&delimiter=` | listing, key order, `start-after` exclusive, at most 1,000 a page |
//! | `GET` / `POST /_faults` | the [`Faults`] in force, as JSON; `POST` replaces them |
//! | `GET /_stats` | [`Stats`] as JSON |
//!
//! As on GCS: the object's `ETag` is a hash of its bytes (GCS's is an MD5), not its
//! generation; the generation is the `x-goog-generation` header and the listing's
//! `<Generation>`. A failed precondition is 412 (a create of a taken name too), a name
//! written less than a second ago 429, a missing object 404 `NoSuchKey`, another bucket
//! 404 `NoSuchBucket`. Multipart uploads and copies answer 501: slotlog uses neither.

#![warn(missing_docs)]

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use slotlog_kernel::blob::{BlobError, BlobOp, BlobOutcome, Generation, ObjectMeta};
use slotlog_kernel::time::Instant;
use slotlog_sim::gcs::objects::{content_token, LIST_LIMIT_MAX};
use slotlog_sim::gcs::{Objects, StoreRules};
use tokio::net::TcpListener;

/// Faults injected into object requests (never into `/_faults` or `/_stats`). Rates are
/// probabilities per request in `[0, 1]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Faults {
    /// Answer 503 without doing anything.
    pub status_5xx_rate: f64,
    /// Answer 429 without doing anything.
    pub status_429_rate: f64,
    /// A create that succeeded is answered 503 anyway: the ambiguous create, which a client
    /// that retries meets again as a taken name.
    pub create_applied_then_5xx_rate: f64,
    /// Every object request waits this long before it is handled.
    pub latency_ms: u64,
}

impl Faults {
    fn validate(&self) -> Result<(), String> {
        for (name, rate) in [
            ("status_5xx_rate", self.status_5xx_rate),
            ("status_429_rate", self.status_429_rate),
            ("create_applied_then_5xx_rate", self.create_applied_then_5xx_rate),
        ] {
            if !(0.0..=1.0).contains(&rate) {
                return Err(format!("{name} must be within [0, 1], not {rate}"));
            }
        }
        if self.latency_ms > LATENCY_MS_MAX {
            return Err(format!("latency_ms must be at most {LATENCY_MS_MAX}"));
        }
        Ok(())
    }
}

/// A bound on the injected latency, so a typo cannot hang a test run.
pub const LATENCY_MS_MAX: u64 = 60_000;

/// What the server has done, for tests that must see a fault happen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Object requests handled (faulted or not).
    pub requests: u64,
    /// Creates that applied.
    pub creates: u64,
    /// Injected 503s that did nothing.
    pub faults_5xx: u64,
    /// Injected 429s.
    pub faults_429: u64,
    /// Creates that applied and were answered 503.
    pub creates_applied_then_5xx: u64,
    /// Conditional deletes that applied.
    pub deletes: u64,
}

/// How the server starts.
#[derive(Clone, Debug)]
pub struct Config {
    /// The one bucket it serves.
    pub bucket: String,
    /// Seeds the fault draws.
    pub seed: u64,
    /// GCS's per-name mutation interval; `None` turns the limit off.
    pub name_update_interval: Option<std::time::Duration>,
    /// Faults from the start.
    pub faults: Faults,
}

impl Config {
    /// One bucket under GCS's rules, no faults.
    pub fn new(bucket: impl Into<String>) -> Config {
        Config {
            bucket: bucket.into(),
            seed: 1,
            name_update_interval: StoreRules::gcs().name_update_interval,
            faults: Faults::default(),
        }
    }
}

struct State {
    objects: Objects,
    faults: Faults,
    rng: u64,
    stats: Stats,
    /// Store time never goes backwards, whatever the wall clock does.
    now_us_last: u64,
}

impl State {
    /// splitmix64: a uniform draw in [0, 1).
    fn draw(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    fn now(&mut self) -> Instant {
        let wall_us = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64);
        self.now_us_last = self.now_us_last.max(wall_us);
        Instant::from_micros(self.now_us_last)
    }

    fn apply(&mut self, op: &BlobOp) -> Result<BlobOutcome, BlobError> {
        let now = self.now();
        self.objects.apply(now, op)
    }
}

/// The server's shared state; clone it freely.
#[derive(Clone)]
pub struct Server {
    bucket: Arc<str>,
    state: Arc<Mutex<State>>,
}

type Answer = Response<Full<Bytes>>;

impl Server {
    /// A server with an empty bucket.
    pub fn new(config: Config) -> Result<Server, String> {
        config.faults.validate()?;
        if config.name_update_interval.is_some_and(|i| i.as_micros() == 0) {
            return Err("a per-name interval must be at least 1 µs (None turns it off)".into());
        }
        let rules = StoreRules { name_update_interval: config.name_update_interval, ..StoreRules::gcs() };
        Ok(Server {
            bucket: config.bucket.into(),
            state: Arc::new(Mutex::new(State {
                objects: Objects::with_rules(rules),
                faults: config.faults,
                rng: config.seed,
                stats: Stats::default(),
                now_us_last: 0,
            })),
        })
    }

    /// Replace the faults in force.
    pub fn set_faults(&self, faults: Faults) -> Result<(), String> {
        faults.validate()?;
        self.lock().faults = faults;
        Ok(())
    }

    /// What the server has done so far.
    pub fn stats(&self) -> Stats {
        self.lock().stats
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic inside the lock is a bug in this file; the state is still consistent
        // (every change is one `Objects::apply`).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Serve connections from `listener` until the task is dropped.
    pub async fn serve(self, listener: TcpListener) -> std::io::Result<()> {
        loop {
            let (stream, _) = listener.accept().await?;
            let server = self.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let server = server.clone();
                    async move { Ok::<_, Infallible>(server.handle(request).await) }
                });
                // A client that hangs up mid-request is its own business.
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    }

    /// Bind a free loopback port and serve on it in a task; answers the address.
    pub async fn spawn(self) -> std::io::Result<SocketAddr> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        tokio::spawn(self.serve(listener));
        Ok(address)
    }

    async fn handle(&self, request: Request<Incoming>) -> Answer {
        let (parts, body) = request.into_parts();
        let body = match body.collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) => return error(StatusCode::BAD_REQUEST, "IncompleteBody", &e.to_string()),
        };
        let path = parts.uri.path().to_string();
        let query = parse_query(parts.uri.query().unwrap_or(""));
        match path.as_str() {
            "/_faults" => return self.faults_endpoint(&parts.method, &body),
            "/_stats" => return json(StatusCode::OK, &self.stats()),
            _ => {}
        }
        let latency_ms = self.lock().faults.latency_ms;
        if latency_ms > 0 {
            tokio::time::sleep(Duration::from_millis(latency_ms)).await;
        }
        let Some(rest) = path.strip_prefix('/') else {
            return error(StatusCode::BAD_REQUEST, "InvalidURI", "no path");
        };
        let (bucket, object) = match rest.split_once('/') {
            Some((bucket, object)) => (bucket, object),
            None => (rest, ""),
        };
        if percent_decode(bucket).as_deref() != Some(&*self.bucket) {
            return error(StatusCode::NOT_FOUND, "NoSuchBucket", "The specified bucket does not exist.");
        }
        let mut state = self.lock();
        state.stats.requests += 1;
        let faults = state.faults;
        if faults.status_429_rate > 0.0 && state.draw() < faults.status_429_rate {
            state.stats.faults_429 += 1;
            return error(StatusCode::TOO_MANY_REQUESTS, "SlowDown", "injected 429");
        }
        if faults.status_5xx_rate > 0.0 && state.draw() < faults.status_5xx_rate {
            state.stats.faults_5xx += 1;
            return error(StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable", "injected 503");
        }
        if object.is_empty() {
            return match parts.method {
                Method::GET => self.list(&mut state, &query),
                _ => error(StatusCode::NOT_IMPLEMENTED, "NotImplemented", "bucket operations"),
            };
        }
        let Some(key) = percent_decode(object) else {
            return error(StatusCode::BAD_REQUEST, "InvalidURI", "the object name is not UTF-8");
        };
        match parts.method {
            Method::PUT => put(&mut state, &key, &parts.headers, &query, body),
            Method::GET => get(&mut state, &key, &parts.headers, &query, false),
            Method::HEAD => get(&mut state, &key, &parts.headers, &query, true),
            Method::DELETE => delete(&mut state, &key, &parts.headers, &query),
            _ => error(StatusCode::NOT_IMPLEMENTED, "NotImplemented", "this method"),
        }
    }

    fn faults_endpoint(&self, method: &Method, body: &Bytes) -> Answer {
        match *method {
            Method::GET => json(StatusCode::OK, &self.lock().faults),
            Method::POST | Method::PUT => {
                let faults: Faults = match serde_json::from_slice(body) {
                    Ok(f) => f,
                    Err(e) => return error(StatusCode::BAD_REQUEST, "InvalidArgument", &e.to_string()),
                };
                match self.set_faults(faults) {
                    Ok(()) => json(StatusCode::OK, &faults),
                    Err(e) => error(StatusCode::BAD_REQUEST, "InvalidArgument", &e),
                }
            }
            _ => error(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", "GET or POST"),
        }
    }

    fn list(&self, state: &mut State, query: &[(String, String)]) -> Answer {
        let param = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        if param("list-type") != Some("2") {
            return error(StatusCode::NOT_IMPLEMENTED, "NotImplemented", "only list-type=2 listings");
        }
        let prefix = param("prefix").unwrap_or("").to_string();
        let limit = match param("max-keys").map(str::parse::<u32>) {
            None => LIST_LIMIT_MAX,
            Some(Ok(n)) => n.clamp(1, LIST_LIMIT_MAX),
            Some(Err(_)) => return error(StatusCode::BAD_REQUEST, "InvalidArgument", "max-keys"),
        };
        // The continuation token is the last key of the previous page.
        let start_after = param("continuation-token").or(param("start-after")).map(str::to_string);
        let delimiter = param("delimiter").filter(|d| !d.is_empty()).map(str::to_string);
        let op = BlobOp::List { prefix: prefix.clone(), start_after, limit };
        let (entries, more) = match state.apply(&op) {
            Ok(BlobOutcome::Listed { entries, more }) => (entries, more),
            Ok(other) => unreachable!("a list answered {other:?}"),
            Err(e) => return blob_error(e, "list"),
        };
        let mut xml = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
             <ListBucketResult xmlns=\"http://doc.s3.amazonaws.com/2006-03-01\">",
        );
        xml += &format!("<Name>{}</Name><Prefix>{}</Prefix>", escape(&self.bucket), escape(&prefix));
        xml += &format!("<KeyCount>{}</KeyCount><MaxKeys>{limit}</MaxKeys>", entries.len());
        xml += &format!("<IsTruncated>{more}</IsTruncated>");
        if let (true, Some(last)) = (more, entries.last()) {
            xml += &format!("<NextContinuationToken>{}</NextContinuationToken>", escape(&last.key));
        }
        // With a delimiter, keys with it past the prefix fold into common prefixes (within
        // this page: a page may repeat a prefix the last one had, which a client merges).
        let mut common = BTreeSet::new();
        for meta in &entries {
            if let Some(d) = &delimiter {
                if let Some(at) = meta.key[prefix.len()..].find(d.as_str()) {
                    common.insert(meta.key[..prefix.len() + at + d.len()].to_string());
                    continue;
                }
            }
            let etag =
                state.objects.get(&meta.key).map(|(bytes, _)| content_token(bytes).0).unwrap_or_default();
            xml += &format!(
                "<Contents><Key>{}</Key><Generation>{}</Generation><MetaGeneration>1</MetaGeneration>\
                 <LastModified>{}</LastModified><ETag>{}</ETag><Size>{}</Size></Contents>",
                escape(&meta.key),
                escape(&meta.generation.0),
                rfc3339(meta.created_at_us),
                escape(&etag),
                meta.size
            );
        }
        for p in common {
            xml += &format!("<CommonPrefixes><Prefix>{}</Prefix></CommonPrefixes>", escape(&p));
        }
        xml += "</ListBucketResult>";
        respond(StatusCode::OK, &[("content-type", "application/xml".into())], Bytes::from(xml))
    }
}

fn put(state: &mut State, key: &str, headers: &HeaderMap, query: &[(String, String)], body: Bytes) -> Answer {
    if query.iter().any(|(k, _)| matches!(k.as_str(), "uploads" | "uploadId" | "partNumber")) {
        return error(StatusCode::NOT_IMPLEMENTED, "NotImplemented", "multipart uploads");
    }
    if headers.contains_key("x-goog-copy-source") {
        return error(StatusCode::NOT_IMPLEMENTED, "NotImplemented", "copies");
    }
    let op = match generation_match(headers, query) {
        Err(answer) => return *answer,
        Ok(Some(0)) => BlobOp::Create { key: key.to_string(), bytes: body.clone() },
        Ok(Some(g)) => BlobOp::Rewrite { key: key.to_string(), bytes: body.clone(), if_generation: g.into() },
        // Unconditional: a stat and a conditional write under the one lock, so atomic.
        Ok(None) => match state.objects.get(key) {
            None => BlobOp::Create { key: key.to_string(), bytes: body.clone() },
            Some((_, meta)) => {
                BlobOp::Rewrite { key: key.to_string(), bytes: body.clone(), if_generation: meta.generation }
            }
        },
    };
    let created = matches!(op, BlobOp::Create { .. });
    match state.apply(&op) {
        Ok(BlobOutcome::Created(w)) | Ok(BlobOutcome::Rewritten(w)) => {
            if created {
                state.stats.creates += 1;
                let rate = state.faults.create_applied_then_5xx_rate;
                if rate > 0.0 && state.draw() < rate {
                    state.stats.creates_applied_then_5xx += 1;
                    return error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "ServiceUnavailable",
                        "injected: applied, then 503",
                    );
                }
            }
            let headers = [("etag", content_token(&body).0), ("x-goog-generation", w.generation.0)];
            respond(StatusCode::OK, &headers, Bytes::new())
        }
        Ok(other) => unreachable!("a write answered {other:?}"),
        // GCS answers a create of a taken name, and a rewrite of a missing one, with 412.
        Err(BlobError::AlreadyExists) | Err(BlobError::NotFound) => error(
            StatusCode::PRECONDITION_FAILED,
            "PreconditionFailed",
            "At least one of the pre-conditions you specified did not hold.",
        ),
        Err(e) => blob_error(e, key),
    }
}

fn get(state: &mut State, key: &str, headers: &HeaderMap, query: &[(String, String)], head: bool) -> Answer {
    let (meta, bytes) = match state.apply(&BlobOp::Get { key: key.to_string() }) {
        Ok(BlobOutcome::Got { meta, bytes }) => (meta, bytes),
        Ok(other) => unreachable!("a get answered {other:?}"),
        Err(e) => return blob_error(e, key),
    };
    // The model keeps no old generations: only the current one can be read by number.
    if let Some((_, g)) = query.iter().find(|(k, _)| k == "generation") {
        if *g != meta.generation.0 {
            return error(StatusCode::NOT_FOUND, "NoSuchKey", "no such generation");
        }
    }
    let etag = content_token(&bytes).0;
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if header("if-match").is_some_and(|m| m != "*" && m != etag) {
        return error(StatusCode::PRECONDITION_FAILED, "PreconditionFailed", "If-Match");
    }
    if header("if-none-match").is_some_and(|m| m == "*" || m == etag) {
        return respond(StatusCode::NOT_MODIFIED, &[("etag", etag)], Bytes::new());
    }
    let mut answer_headers = object_headers(&meta, etag);
    let (status, body) = match header("range").map(|r| byte_range(r, bytes.len())) {
        None => (StatusCode::OK, bytes.clone()),
        Some(Some((start, end))) => {
            answer_headers.push(("content-range", format!("bytes {start}-{}/{}", end - 1, bytes.len())));
            (StatusCode::PARTIAL_CONTENT, bytes.slice(start..end))
        }
        Some(None) => return error(StatusCode::RANGE_NOT_SATISFIABLE, "InvalidRange", "range"),
    };
    answer_headers.push(("content-length", body.len().to_string()));
    let mut answer = respond(status, &answer_headers, if head { Bytes::new() } else { body });
    if head {
        // A HEAD's Content-Length is the object's, though no body follows.
        answer.headers_mut().insert("content-length", HeaderValue::from(meta.size));
    }
    answer
}

fn delete(state: &mut State, key: &str, headers: &HeaderMap, query: &[(String, String)]) -> Answer {
    let generation = match generation_match(headers, query) {
        Err(answer) => return *answer,
        Ok(Some(g)) => Generation::from(g),
        Ok(None) => match state.objects.get(key) {
            Some((_, meta)) => meta.generation,
            None => return blob_error(BlobError::NotFound, key),
        },
    };
    match state.apply(&BlobOp::Delete { key: key.to_string(), if_generation: generation }) {
        Ok(BlobOutcome::Deleted) => {
            state.stats.deletes += 1;
            respond(StatusCode::NO_CONTENT, &[], Bytes::new())
        }
        Ok(other) => unreachable!("a delete answered {other:?}"),
        Err(e) => blob_error(e, key),
    }
}

/// `x-goog-if-generation-match` (XML API) or `ifGenerationMatch` (JSON API's query).
fn generation_match(headers: &HeaderMap, query: &[(String, String)]) -> Result<Option<u64>, Box<Answer>> {
    let value = headers
        .get("x-goog-if-generation-match")
        .map(|v| v.to_str().unwrap_or("").to_string())
        .or_else(|| query.iter().find(|(k, _)| k == "ifGenerationMatch").map(|(_, v)| v.clone()));
    match value {
        None => Ok(None),
        Some(v) => v.trim().parse().map(Some).map_err(|_| {
            Box::new(error(StatusCode::BAD_REQUEST, "InvalidArgument", &format!("not a generation: {v:?}")))
        }),
    }
}

fn object_headers(meta: &ObjectMeta, etag: String) -> Vec<(&'static str, String)> {
    vec![
        ("etag", etag),
        ("x-goog-generation", meta.generation.0.clone()),
        ("x-goog-metageneration", "1".into()),
        ("x-goog-stored-content-length", meta.size.to_string()),
        ("last-modified", http_date(meta.created_at_us)),
        ("content-type", "application/octet-stream".into()),
        ("accept-ranges", "bytes".into()),
    ]
}

/// `bytes=a-b`, `bytes=a-` or `bytes=-n` as a half-open range within `len`; None when
/// unsatisfiable or not one of those.
fn byte_range(header: &str, len: usize) -> Option<(usize, usize)> {
    let spec = header.strip_prefix("bytes=")?;
    let (a, b) = spec.split_once('-')?;
    let (start, end) = match (a.trim(), b.trim()) {
        ("", n) => {
            let n: usize = n.parse().ok()?;
            (len.saturating_sub(n), len)
        }
        (a, "") => (a.parse().ok()?, len),
        (a, b) => (a.parse().ok()?, b.parse::<usize>().ok()?.saturating_add(1).min(len)),
    };
    (start < end && start < len).then_some((start, end))
}

/// A kernel kind as GCS's XML API answers it.
fn blob_error(e: BlobError, what: &str) -> Answer {
    match e {
        BlobError::NotFound => error(StatusCode::NOT_FOUND, "NoSuchKey", "The specified key does not exist."),
        BlobError::PreconditionFailed | BlobError::AlreadyExists => error(
            StatusCode::PRECONDITION_FAILED,
            "PreconditionFailed",
            "At least one of the pre-conditions you specified did not hold.",
        ),
        BlobError::Throttled => error(
            StatusCode::TOO_MANY_REQUESTS,
            "SlowDown",
            &format!("The object {what} exceeded the rate limit for object mutation operations."),
        ),
        other => error(StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable", &format!("{other:?}")),
    }
}

fn error(status: StatusCode, code: &str, message: &str) -> Answer {
    let body = format!(
        "<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code><Message>{}</Message></Error>",
        escape(message)
    );
    respond(status, &[("content-type", "application/xml".into())], Bytes::from(body))
}

fn json<T: Serialize>(status: StatusCode, value: &T) -> Answer {
    let body = serde_json::to_vec(value).expect("plain structs serialize");
    respond(status, &[("content-type", "application/json".into())], Bytes::from(body))
}

fn respond(status: StatusCode, headers: &[(&'static str, String)], body: Bytes) -> Answer {
    let mut answer = Response::new(Full::new(body));
    *answer.status_mut() = status;
    for (name, value) in headers {
        if let Ok(value) = HeaderValue::from_str(value) {
            answer.headers_mut().insert(*name, value);
        }
    }
    answer
}

fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |s: &str| percent_decode(&s.replace('+', " ")).unwrap_or_default();
            (decode(k), decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> Option<String> {
    percent_encoding::percent_decode_str(s).decode_utf8().ok().map(|c| c.into_owned())
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

fn date(us: u64) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_micros(us as i64).unwrap_or_default()
}

fn http_date(us: u64) -> String {
    date(us).format("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

fn rfc3339(us: u64) -> String {
    date(us).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_half_open_within_the_object() {
        assert_eq!(byte_range("bytes=0-3", 10), Some((0, 4)));
        assert_eq!(byte_range("bytes=4-", 10), Some((4, 10)));
        assert_eq!(byte_range("bytes=-3", 10), Some((7, 10)));
        assert_eq!(byte_range("bytes=8-100", 10), Some((8, 10)));
        assert_eq!(byte_range("bytes=10-", 10), None);
        assert_eq!(byte_range("items=0-1", 10), None);
    }

    #[test]
    fn faults_outside_their_range_are_refused() {
        let server = Server::new(Config::new("b")).unwrap();
        assert!(server.set_faults(Faults { status_5xx_rate: 1.5, ..Faults::default() }).is_err());
        assert!(server.set_faults(Faults { latency_ms: LATENCY_MS_MAX + 1, ..Faults::default() }).is_err());
        assert!(server.set_faults(Faults { status_429_rate: 0.5, ..Faults::default() }).is_ok());
    }

    #[test]
    fn the_query_is_percent_decoded() {
        let q = parse_query("prefix=a%2Fb&start-after=a/b/c&list-type=2&empty");
        assert_eq!(q[0], ("prefix".into(), "a/b".into()));
        assert_eq!(q[1].1, "a/b/c");
        assert_eq!(q[3], ("empty".into(), String::new()));
    }
}
