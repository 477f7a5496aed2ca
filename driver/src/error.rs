//! The errors a `World` call can give. Every one says what happened to the call.
//!
//! Each message is whole on its own: an [`Error`] wrapping a kernel error or a
//! [`StoreError`] prints that error's message in its own, and [`std::error::Error::source`]
//! goes on from there (the decode error under a failure, say), so a reporter that walks
//! the chain never prints a line twice. [`Error::kind`] sorts every error into the
//! [`ErrorKind`] a caller branches on.

use slotlog_kernel::{BlobError, ConfigError, FailReason, ReadError, WatchEnd, WriteError};
use std::fmt;
use std::time::Duration;

/// What a `World` call answers when it cannot answer what was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The write did not commit, or may not have (`WriteError::Uncertain`).
    Write(WriteError),
    /// The read was not answered (its deadline passed, or the world cannot answer it).
    Read(ReadError),
    /// A watch ended (a resync, too many watches, a failed world).
    Watch(WatchEnd),
    /// The world failed closed: it found something in the bucket it cannot trust.
    Failed(FailReason),
    /// The configuration is out of range.
    Config(ConfigError),
    /// The world was closed; nothing more is done through this handle.
    Closed,
    /// The world's command queue is full; nothing was sent.
    Busy,
    /// The store refused a call in a way no retry will pass (credentials, a missing
    /// bucket, an operation it cannot do), or one call kept failing past
    /// `WorldConfig::call_retries_max`. The world stopped: this call and every later one
    /// answer this error. A write waiting when it stopped may still commit if its slot
    /// create was already sent; its receipt, read after the next open, settles it.
    Store(StoreError),
    /// `World::open` went `WorldConfig::open_deadline` (`deadline`) without a store call
    /// answered. Nothing was opened; `last_error` is the last store failure the opening
    /// met, if any (what it was waiting out).
    OpenDeadline {
        /// The deadline that passed.
        deadline: Duration,
        /// The last store failure the opening met.
        last_error: Option<StoreError>,
    },
    /// The prefix breaks a rule; nothing was sent to the store.
    Prefix(PrefixError),
    /// `World::open` was handed a cloud store it cannot check; nothing was sent.
    UncheckedStore(UncheckedStore),
    /// The replica failed closed asking to be reopened (`last`, one of the reload rule's
    /// reasons, SPEC 10.15) more than `WorldConfig::reloads_without_progress_max` times in
    /// a row without committing or answering anything in between (`reloads` in that run).
    /// The world stopped: this call and every later one answer this error. Writes waiting
    /// were answered before it (`Uncertain` for any whose slot create was sent); open the
    /// world again once the store's clock or the peer that caused it is looked at.
    Reloads {
        /// Reopens in a row without progress.
        reloads: u32,
        /// The reason the last one gave.
        last: FailReason,
    },
    /// `WorldConfig::peers` names UDP hints that cannot be had: the address cannot be
    /// listened on, or the settings are out of range. Nothing was sent to the store.
    PeerHints {
        /// The address asked to listen on.
        listen: std::net::SocketAddr,
        /// Why not.
        reason: String,
    },
    /// `WorldConfig::local_cache` names a directory that cannot be made or read. Nothing
    /// was sent to the store.
    LocalCache {
        /// The cache's directory.
        dir: std::path::PathBuf,
        /// What the file system said.
        reason: String,
    },
    /// `World::view_for`: the caller holds `WorldConfig::views_per_caller_max` views
    /// already; nothing was pinned. Drop one first.
    Views {
        /// The caller, as the embedder named it.
        caller: String,
        /// Views it holds.
        views: usize,
    },
}

/// What kind of error an [`Error`] is: what a caller branches on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request itself is wrong (a path, a body over the policy's limit); sending it
    /// again changes nothing.
    InvalidInput,
    /// A write's precondition failed (its expected version, an archived document, a
    /// read-only prefix): nothing applied. Read the document and decide again.
    Conflict,
    /// The world's or the store's configuration is wrong: a setting out of range, a
    /// prefix, a store slotlog cannot use as built, a request the store refuses as made
    /// (a wrong region), an operation it cannot do. Fix the configuration.
    Configuration,
    /// The store refused the credentials (401) or what they may do (403).
    Permission,
    /// The bucket or container does not exist, or (a read-only replica) no world is under
    /// the prefix.
    NotFound,
    /// Worth trying again later: a queue was full, a deadline passed with nothing
    /// applied, the store kept failing or did not answer.
    Unavailable,
    /// A write may or may not have committed: its receipt settles it.
    Uncertain,
    /// A watch's cursor, or a view, is too old: read the world again from its tip (watch
    /// again from there, or open a new view).
    Resync,
    /// The bucket holds something the world cannot trust (an object that does not
    /// decode, a chain that does not continue): the replica failed closed and stays so.
    Corruption,
    /// The handle was closed.
    Closed,
}

impl ErrorKind {
    /// Sending the same call again (after a backoff) may succeed.
    pub fn is_retryable(self) -> bool {
        matches!(self, ErrorKind::Unavailable)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorKind::InvalidInput => "invalid input",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Configuration => "configuration",
            ErrorKind::Permission => "permission",
            ErrorKind::NotFound => "not found",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Uncertain => "uncertain",
            ErrorKind::Resync => "resync",
            ErrorKind::Corruption => "corruption",
            ErrorKind::Closed => "closed",
        })
    }
}

impl Error {
    /// What kind of error this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Write(e) => match e {
                WriteError::Invalid(_) => ErrorKind::InvalidInput,
                WriteError::Rejected { .. } => ErrorKind::Conflict,
                WriteError::Busy { .. } | WriteError::Expired { .. } => ErrorKind::Unavailable,
                WriteError::Uncertain { .. } => ErrorKind::Uncertain,
                WriteError::Failed(_) => ErrorKind::Corruption,
                WriteError::ReadOnlyReplica => ErrorKind::Configuration,
                _ => ErrorKind::Unavailable,
            },
            Error::Read(e) => match e {
                ReadError::InvalidPath(_) | ReadError::InvalidQuery(_) => ErrorKind::InvalidInput,
                ReadError::Busy { .. } | ReadError::Deadline | ReadError::Unavailable { .. } => {
                    ErrorKind::Unavailable
                }
                ReadError::Failed(_) => ErrorKind::Corruption,
                ReadError::ViewExpired | ReadError::ViewEvicted => ErrorKind::Resync,
                _ => ErrorKind::Unavailable,
            },
            Error::Watch(e) => match e {
                WatchEnd::Resync { .. } => ErrorKind::Resync,
                WatchEnd::Busy { .. } => ErrorKind::Unavailable,
                WatchEnd::Failed(_) => ErrorKind::Corruption,
                _ => ErrorKind::Unavailable,
            },
            Error::Failed(FailReason::NoWorld { .. }) => ErrorKind::NotFound,
            Error::Failed(_) => ErrorKind::Corruption,
            Error::Config(_)
            | Error::Prefix(_)
            | Error::UncheckedStore(_)
            | Error::PeerHints { .. }
            | Error::LocalCache { .. } => ErrorKind::Configuration,
            Error::Closed => ErrorKind::Closed,
            Error::Busy | Error::OpenDeadline { .. } | Error::Reloads { .. } | Error::Views { .. } => {
                ErrorKind::Unavailable
            }
            Error::Store(e) => e.kind.error_kind(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Write(e) => write!(f, "write: {e}"),
            Error::Read(e) => write!(f, "read: {e}"),
            Error::Watch(e) => write!(f, "watch ended: {e}"),
            Error::Failed(r) => write!(f, "the world failed closed: {r}"),
            Error::Config(e) => write!(f, "configuration: {e}"),
            Error::Closed => f.write_str("the world is closed"),
            Error::Busy => f.write_str("the world's command queue is full"),
            Error::Store(e) => write!(f, "the world stopped: {e}"),
            Error::OpenDeadline { deadline, last_error } => {
                write!(f, "the world did not open: no store call answered for {deadline:?}")?;
                match last_error {
                    Some(e) => write!(f, "; last store failure: {e}"),
                    None => f.write_str(" (calls went unanswered: a silent endpoint?)"),
                }
            }
            Error::Prefix(e) => write!(f, "{e}"),
            Error::UncheckedStore(e) => write!(f, "{e}"),
            Error::Reloads { reloads, last } => write!(
                f,
                "the world stopped after {reloads} reloads in a row with no progress between them; last: {last}"
            ),
            Error::PeerHints { listen, reason } => write!(f, "peer hints on {listen}: {reason}"),
            Error::LocalCache { dir, reason } => write!(f, "the local cache at {}: {reason}", dir.display()),
            Error::Views { caller, views } => write!(f, "{caller} holds {views} views already"),
        }
    }
}

impl std::error::Error for Error {
    /// The cause under the message: the wrapped error's own source (its message is already
    /// in this one's), e.g. the decode error under a failure.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Write(e) => e.source(),
            Error::Read(e) => e.source(),
            Error::Watch(e) => e.source(),
            Error::Failed(r) | Error::Reloads { last: r, .. } => r.source(),
            Error::Store(e) => e.source(),
            Error::OpenDeadline { last_error: Some(e), .. } => e.source(),
            Error::Config(_)
            | Error::Closed
            | Error::Busy
            | Error::OpenDeadline { last_error: None, .. }
            | Error::Prefix(_)
            | Error::UncheckedStore(_)
            | Error::PeerHints { .. }
            | Error::LocalCache { .. }
            | Error::Views { .. } => None,
        }
    }
}

/// A cloud store handed to `World::open` whose settings slotlog cannot see through
/// `dyn ObjectStore`: whether object_store retries inside a create (a retried create that
/// had landed answers `AlreadyExists` for our own slot) and where to send conditional
/// deletes. Build it with [`s3_store`](crate::store_url::s3_store) /
/// [`gcs_store`](crate::store_url::gcs_store) (or `open_store`) and open it with
/// `World::open_with`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UncheckedStore {
    /// The store as it describes itself (`AmazonS3(bucket)`).
    pub store: String,
    /// `s3`, `gcs`, `azure`.
    pub backend: &'static str,
}

impl fmt::Display for UncheckedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is a {} store built outside slotlog: its object_store retries could hide a landed create and \
             its conditional deletes need its endpoint; build it with slotlog::store_url::{} (or open_store) \
             and open it with World::open_with",
            self.store,
            self.backend,
            match self.backend {
                "gcs" => "gcs_store",
                _ => "s3_store",
            }
        )
    }
}

impl std::error::Error for UncheckedStore {}

/// A store failure that ended a call for good, in the store's own words.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreError {
    /// What kind of failure it was, which says whether a retry can pass it.
    pub kind: StoreErrorKind,
    /// The blob operation that met it: `create`, `get`, `stat`, `list`, `rewrite`, `delete`.
    pub op: &'static str,
    /// The key it addressed (a listing's prefix).
    pub key: String,
    /// The HTTP status the store answered with, when it answered with one.
    pub status: Option<u16>,
    /// The store's own message (object_store's error with every cause, the response body
    /// when the store sent one), or the adapter's when the store was never asked.
    pub message: String,
    /// Failures of this call in a row, its hedged twin's included: 1 for a permanent
    /// failure, the retry budget plus one when transient failures used it up.
    pub attempts: u32,
}

impl StoreError {
    /// A failure of `op` on `key`, one attempt, with the store's `status` if it gave one
    /// and its `message`.
    pub fn new(
        kind: StoreErrorKind,
        op: &'static str,
        key: impl Into<String>,
        status: Option<u16>,
        message: impl Into<String>,
        attempts: u32,
    ) -> StoreError {
        StoreError { kind, op, key: key.into(), status, message: message.into(), attempts }
    }

    /// No retry will pass: the store must be fixed (credentials, bucket, configuration).
    pub fn is_permanent(&self) -> bool {
        self.kind.is_permanent()
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} of {:?}: {}", self.op, self.key, self.kind)?;
        if !self.kind.is_permanent() {
            write!(f, ", {} times in a row", self.attempts)?;
        }
        if let Some(status) = self.status {
            write!(f, " (HTTP {status})")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// The store's message is already in the text: it has no further source.
impl std::error::Error for StoreError {}

/// What kind of failure a [`StoreError`] is. All but `Transient` are permanent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// 403, object_store's `PermissionDenied`: the credentials may not do this.
    PermissionDenied,
    /// 401, object_store's `Unauthenticated`: the credentials are missing, wrong or expired.
    Unauthenticated,
    /// The bucket (or Azure container) does not exist: S3 and GCS `NoSuchBucket`, Azure
    /// `ContainerNotFound`.
    BucketNotFound,
    /// The store cannot do the operation at all: object_store's `NotSupported` and
    /// `NotImplemented`, HTTP 501 and 405 (a create if absent on a store without
    /// conditional puts, say). A rewrite or delete the backend cannot do is not this: the
    /// kernel's contract answers those `Unsupported` and goes on.
    Unsupported,
    /// The key is not a path the store takes as it is.
    InvalidPath,
    /// Another 4xx or a redirect: the store refused the request as made (a wrong region,
    /// a bad bucket name); sending it again changes nothing.
    Rejected,
    /// Worth retrying (a timeout, a 5xx, a 429, a failed connection), but this call kept
    /// failing past the retry budget; the kernel's kind of the last failure.
    Transient(BlobError),
}

impl StoreErrorKind {
    /// No retry will pass.
    pub fn is_permanent(self) -> bool {
        !matches!(self, StoreErrorKind::Transient(_))
    }

    /// The [`ErrorKind`] of an [`Error::Store`] of this kind.
    pub fn error_kind(self) -> ErrorKind {
        match self {
            StoreErrorKind::PermissionDenied | StoreErrorKind::Unauthenticated => ErrorKind::Permission,
            StoreErrorKind::BucketNotFound => ErrorKind::NotFound,
            StoreErrorKind::Unsupported | StoreErrorKind::InvalidPath | StoreErrorKind::Rejected => {
                ErrorKind::Configuration
            }
            StoreErrorKind::Transient(_) => ErrorKind::Unavailable,
        }
    }
}

impl fmt::Display for StoreErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreErrorKind::PermissionDenied => f.write_str("permission denied"),
            StoreErrorKind::Unauthenticated => f.write_str("not authenticated"),
            StoreErrorKind::BucketNotFound => f.write_str("the bucket does not exist"),
            StoreErrorKind::Unsupported => f.write_str("the store cannot do this operation"),
            StoreErrorKind::InvalidPath => f.write_str("not a valid object path"),
            StoreErrorKind::Rejected => f.write_str("the store rejected the request"),
            StoreErrorKind::Transient(e) => write!(f, "{e}"),
        }
    }
}

/// A prefix that breaks one of [`PrefixRule`]'s rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrefixError {
    /// The prefix as given.
    pub prefix: String,
    /// The rule it breaks.
    pub rule: PrefixRule,
}

impl fmt::Display for PrefixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid prefix {:?}: {}", self.prefix, self.rule)
    }
}

impl std::error::Error for PrefixError {}

/// The rules a world's prefix obeys. Every key of a world is `{prefix}/{name}` and must be
/// an object path exactly as written: object_store drops a leading or trailing `/` and
/// empty segments (so two prefixes would alias one world) and refuses `.` and `..`
/// segments and control characters; its local store hides names with `#`. Empty is
/// allowed: the world is the whole store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PrefixRule {
    /// `/w`: object_store would strip the `/`.
    NoLeadingSlash,
    /// `w/`: object_store would strip the `/`.
    NoTrailingSlash,
    /// `a//b`: object_store would drop the empty segment.
    NoEmptySegment,
    /// `a/../b`, `a/./b`: object stores and object_store refuse them.
    NoDotSegment,
    /// A control character (below 0x20, or 0x7f): object_store refuses it.
    NoControlCharacter,
    /// `#`: object_store's local store treats `name#n` as a temporary file and hides it,
    /// so a world there would be invisible to listings.
    NoHash,
}

impl fmt::Display for PrefixRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PrefixRule::NoLeadingSlash => "it must not start with '/'",
            PrefixRule::NoTrailingSlash => "it must not end with '/'",
            PrefixRule::NoEmptySegment => "it must not hold an empty segment ('//')",
            PrefixRule::NoDotSegment => "it must not hold a '.' or '..' segment",
            PrefixRule::NoControlCharacter => "it must not hold a control character",
            PrefixRule::NoHash => "it must not hold '#' (object_store's local store hides such names)",
        })
    }
}

/// Checks `prefix` against every [`PrefixRule`]; the first rule broken is the error.
pub fn validate_prefix(prefix: &str) -> Result<(), PrefixError> {
    let broken = |rule| Err(PrefixError { prefix: prefix.to_string(), rule });
    if prefix.is_empty() {
        return Ok(());
    }
    if prefix.starts_with('/') {
        return broken(PrefixRule::NoLeadingSlash);
    }
    if prefix.ends_with('/') {
        return broken(PrefixRule::NoTrailingSlash);
    }
    if prefix.chars().any(|c| c.is_control()) {
        return broken(PrefixRule::NoControlCharacter);
    }
    if prefix.contains('#') {
        return broken(PrefixRule::NoHash);
    }
    for segment in prefix.split('/') {
        if segment.is_empty() {
            return broken(PrefixRule::NoEmptySegment);
        }
        if segment == "." || segment == ".." {
            return broken(PrefixRule::NoDotSegment);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule_broken(prefix: &str) -> Option<PrefixRule> {
        validate_prefix(prefix).err().map(|e| e.rule)
    }

    #[test]
    fn prefix_may_be_empty_or_plain_segments() {
        for ok in ["", "w", "worlds/a", "worlds/a-b_c.d/e", "x/.hidden", "a..b/c"] {
            assert_eq!(rule_broken(ok), None, "{ok:?}");
        }
    }

    #[test]
    fn prefix_no_leading_slash() {
        assert_eq!(rule_broken("/w"), Some(PrefixRule::NoLeadingSlash));
        assert_eq!(rule_broken("/"), Some(PrefixRule::NoLeadingSlash));
    }

    #[test]
    fn prefix_no_trailing_slash() {
        assert_eq!(rule_broken("w/"), Some(PrefixRule::NoTrailingSlash));
        assert_eq!(rule_broken("worlds/a/"), Some(PrefixRule::NoTrailingSlash));
    }

    #[test]
    fn prefix_no_empty_segment() {
        assert_eq!(rule_broken("a//b"), Some(PrefixRule::NoEmptySegment));
    }

    #[test]
    fn prefix_no_dot_segment() {
        assert_eq!(rule_broken("a/../b"), Some(PrefixRule::NoDotSegment));
        assert_eq!(rule_broken(".."), Some(PrefixRule::NoDotSegment));
        assert_eq!(rule_broken("a/./b"), Some(PrefixRule::NoDotSegment));
        assert_eq!(rule_broken("a/.."), Some(PrefixRule::NoDotSegment));
    }

    #[test]
    fn prefix_no_control_character() {
        assert_eq!(rule_broken("a\nb"), Some(PrefixRule::NoControlCharacter));
        assert_eq!(rule_broken("a\u{7f}"), Some(PrefixRule::NoControlCharacter));
    }

    #[test]
    fn prefix_no_hash() {
        assert_eq!(rule_broken("worlds/a#1"), Some(PrefixRule::NoHash));
    }

    #[test]
    fn a_prefix_error_names_the_prefix_and_the_rule() {
        let e = validate_prefix("/w").unwrap_err();
        assert_eq!(e.to_string(), "invalid prefix \"/w\": it must not start with '/'");
    }

    #[test]
    fn a_store_error_says_what_call_met_what_with_the_stores_words() {
        let e = StoreError {
            kind: StoreErrorKind::PermissionDenied,
            op: "get",
            key: "w/marker".into(),
            status: Some(403),
            message: "<Code>AccessDenied</Code>".into(),
            attempts: 1,
        };
        assert!(e.is_permanent());
        assert_eq!(
            e.to_string(),
            "get of \"w/marker\": permission denied (HTTP 403): <Code>AccessDenied</Code>"
        );
        let t = StoreError { kind: StoreErrorKind::Transient(BlobError::Unavailable), attempts: 21, ..e };
        assert!(!t.is_permanent());
        assert!(
            t.to_string()
                .starts_with("get of \"w/marker\": the store is unavailable, 21 times in a row (HTTP 403)"),
            "{t}"
        );
    }
}
