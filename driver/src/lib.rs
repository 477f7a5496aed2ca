//! slotlog: many replicas writing one world of versioned documents through nothing but
//! an object store, with no database and no leader.
//!
//! A [`World`] is one replica of one world. It runs the pure `slotlog-kernel` state
//! machine on a driver loop over a blob backend: any `object_store` store (S3, GCS, Azure,
//! a local directory, memory), or any [`Blobs`] of your own (the simulated GCS of
//! `slotlog-dsim` is one). Open the same world from many handles and processes and they
//! commit together. Handles on one world in one process opened with an equal
//! configuration commit through one replica, so their writes ride the same slots
//! ([`WorldConfig::share_replica`]); replicas in one process (that option off) hand each
//! other their commit hints with no wiring, so they take turns and read each other's
//! writes at once; between
//! processes, name the peers in [`WorldConfig::peers`]
//! ([`Peers::Udp`]), or carry [`World::on_commit`] sequences to the others'
//! [`World::follow`] yourself. Without hints writers still never starve, slower
//! (docs/TURNS.md, "Without hints").
//!
//! ```no_run
//! # async fn demo() -> Result<(), slotlog::Error> {
//! use std::sync::Arc;
//! let store = Arc::new(object_store::memory::InMemory::new());
//! let world = slotlog::World::open(store, "worlds/demo", slotlog::WorldConfig::default()).await?;
//! world.publish("/notes/a.md", "hello", slotlog::Expected::Any).await?;
//! let doc = world.fetch("/notes/a.md", None).await?;
//! # Ok(()) }
//! ```
//!
//! A cloud store comes from a URL (credentials from the environment, as object_store's
//! `from_env()` reads them) or from a builder of your own, finished with slotlog's
//! required settings (object_store's retries off, conditional puts on):
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use slotlog::{open_store, s3_store, StoreOptions, World, WorldConfig};
//! let (store, backend, prefix) = open_store("s3://my-bucket/worlds/a", &StoreOptions::from_env())?;
//! let world = World::open_with(store, backend, &prefix, WorldConfig::default()).await?;
//! # world.close().await;
//! let builder = object_store::aws::AmazonS3Builder::from_env().with_bucket_name("my-bucket");
//! let (store, backend) = s3_store(builder)?;
//! let world = World::open_with(store, backend, "worlds/a", WorldConfig::default()).await?;
//! # Ok(()) }
//! ```
//!
//! # Features
//!
//! One feature a backend, all four on by default; an embedder that needs one store takes
//! `default-features = false` and its feature, and builds no other store's client:
//!
//! | feature | store URLs | what it builds in |
//! |---|---|---|
//! | `s3` | `s3://`, `s3a://` | object_store's S3 client, [`s3_store`], the conditional delete (`If-Match`) |
//! | `gcs` | `gs://` | object_store's GCS client, [`gcs_store`], the conditional delete and the generation-keeping listing |
//! | `azure` | `az://`, `azure://`, `adl://`, `abfs[s]://`, `https://*.blob.core.windows.net` | object_store's Azure client, [`azure_store`], the conditional delete |
//! | `fs` | `file:///abs/dir` | object_store's local directory store |
//! | `tls` | | with a cloud backend: object_store's own TLS stack (rustls on aws-lc-rs) instead of rustls on ring; HTTPS works without it |
//!
//! Each backend turns on `object-store`: the `ObjectStore` trait, [`World::open`] over any
//! store, the in-memory store (`memory://`) and the URL grammar. A URL of a backend left
//! out is [`StoreUrlError::BackendNotBuilt`] ("this build has no s3 backend: enable the
//! `s3` feature"); [`Backend`] keeps its variants in every build (features only add), but
//! no value of a left-out one can be made. With no feature at all the crate is the driver
//! over a [`Blobs`] of your own.
//!
//! # Opening, and when the store says no
//!
//! [`World::open`] never hangs on a store that does not answer: it returns open, or with
//! a typed [`Error`], and gives up when [`WorldConfig::open_deadline`] (30 s by default)
//! passes with no store call answered (a large world that keeps reading is never cut
//! short):
//!
//! * [`Error::UncheckedStore`]: [`World::open`] was handed a cloud store built elsewhere,
//!   whose retries could hide a landed create; nothing was sent.
//! * [`Error::Prefix`]: the prefix breaks a [`PrefixRule`] (a leading or trailing `/`,
//!   an empty, `.` or `..` segment, a control character, `#`). Checked before any call.
//! * [`Error::Store`] with a permanent [`StoreErrorKind`]: the store refused a call in a
//!   way no retry passes (`Unauthenticated` for 401, `PermissionDenied` for 403,
//!   `BucketNotFound`, `Unsupported` for an operation it cannot do, `InvalidPath`,
//!   `Rejected` for another 4xx such as a wrong region). Returned at once, with the
//!   store's own message and HTTP status.
//! * [`Error::Store`] with kind `Transient`: timeouts, 5xx, 429 and failed connections are
//!   retried with backoff, but one call failing more than
//!   [`WorldConfig::call_retries_max`] times in a row stops the world.
//! * [`Error::OpenDeadline`]: no call answered for the deadline (a black-holed endpoint,
//!   or a closed port before the retry budget runs out); it carries the last store
//!   failure seen, if any.
//!
//! The same store failures reach a world already open: it stops, and the call waiting
//! and every later call answer `Error::Store` (a write waiting then may still commit if
//! its slot create was sent; its receipt settles it after the next open).
//!
//! # Reloading
//!
//! A replica that may be behind collection fails closed asking to be reopened (SPEC 10.15,
//! the reload rule): its snapshot went unconfirmed for 12 hours, its slot create landed
//! more than 12 hours after its base on the store's clock, or its tip probe found the next
//! slot collected. The `World` then reopens it from the newest checkpoint by itself
//! (logged at `warn`, counted in [`World::stats`]); what the failure answered stays
//! answered (a write whose slot create was sent is `Uncertain`: its receipt settles it).
//! Reloads in a row with nothing committed or answered between them stop the world past
//! [`WorldConfig::reloads_without_progress_max`], with [`Error::Reloads`].
//!
//! # Settling an uncertain write
//!
//! A write answered `WriteError::Uncertain { op_id, since }` may still commit, at `since`
//! or later, and is never retried by the world. Ask [`World::receipt_since`] with that
//! `since`; its `Answer::Receipt` is one of three (SPEC 10.13):
//!
//! * `ReceiptAnswer::Committed(receipt)`: it committed; this is its receipt.
//! * `ReceiptAnswer::Absent`: it did not commit, exactly: the receipt window (the newest
//!   262,144 sequences, about 17 minutes at 250 writes/s) covers `since`. Once no slot
//!   holding it can still land (after the world reopened, or the create's answer came
//!   back), send it again with the same operation id.
//! * `ReceiptAnswer::Expired { window_from }`: the window starts after `since`, so its
//!   receipt may be gone: unknown. Never take it for absent; read the document instead.
//!
//! An operation id names one request: sent again with the same content while its receipt
//! is in the window, it is answered `Duplicate` with the first receipt; with other
//! content it is refused, `Rejection::OperationIdReused`.

//!
//! # Observing it
//!
//! [`World::health`] says whether the world is serving, degraded or failed closed and how
//! fresh its snapshot is; [`World::telemetry`] hands back samples of slow writes (each
//! write's phases: queued, built, sent, created, confirmed), warnings and errors, from a
//! bounded queue that drops before it could stall the loop.
//! [`World::stats`] returns the world's counters; every store call runs in a `tracing`
//! span naming its kind and key; and the driver reports through the `metrics` facade
//! (store calls by kind and outcome with their times, writes by result, the sequence
//! committed through: the table is in `driver/src/metrics.rs`), recorded once the
//! embedder installs a recorder. Commit hooks ([`World::on_commit`]) run on tasks of
//! their own and never stall the driver loop.

// Every public item says what it is: CI denies warnings, so a new undocumented item
// stops the build (issue 12).
#![warn(missing_docs)]

pub mod blobs;
pub(crate) mod budget;
#[cfg(feature = "object-store")]
pub mod builder;
pub mod error;
pub mod health;
pub mod hints;
pub mod local_cache;
pub(crate) mod metrics;
#[cfg(feature = "object-store")]
pub mod object_store_blobs;
pub(crate) mod read_request;
pub mod reload;
pub(crate) mod replicas;
pub(crate) mod runtime;
#[cfg(feature = "object-store")]
pub mod store_date;
#[cfg(feature = "object-store")]
pub mod store_url;
pub(crate) mod sync;
pub mod telemetry;
pub mod view;
pub mod watch;
pub mod world;

pub use blobs::{BlobFuture, Blobs, CallFailure, ExplainedFuture};
#[cfg(feature = "object-store")]
pub use builder::WorldBuilder;
pub use error::{
    validate_prefix, Error, ErrorKind, PrefixError, PrefixRule, StoreError, StoreErrorKind, UncheckedStore,
};
pub use health::{Health, HealthState};
pub use hints::{
    decode_hint, encode_hint, encode_signed_hint, judge_packet, Heard, HintKey, HintStats, PeerHints, Peers,
};
pub use local_cache::{CacheStats, CachedBlobs, LocalCache};
#[cfg(feature = "object-store")]
pub use object_store_blobs::{detect_backend, Backend, ObjectStoreBlobs};
pub use reload::WorldStats;
pub use slotlog_kernel::ids::WorldId;
pub use slotlog_kernel::search::{query::QueryProblem, SearchMatch};
#[cfg(feature = "object-store")]
pub use store_date::AnsweredAt;
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub use store_date::DatedConnector;
// Everything a caller names in a `World` call or its answer, so an embedder needs no
// second dependency on the kernel crate.
pub use slotlog_kernel::world::{
    Expected, IndexEntry, Mutation, Path, PolicyBody, Receipt, ReceiptAnswer, ReceiptKind, Rejection,
    VersionKind, VersionRecord, Write,
};
pub use slotlog_kernel::{
    Answer, ConfigError, FailReason, Hash32, OperationId, Read, ReadError, ReadOk, WatchEnd, WriteError,
    WriteOk,
};
#[cfg(feature = "azure")]
pub use store_url::azure_store;
#[cfg(feature = "gcs")]
pub use store_url::gcs_store;
#[cfg(feature = "s3")]
pub use store_url::s3_store;
#[cfg(feature = "object-store")]
pub use store_url::{open_store, parse_store_url, StoreLocation, StoreOptions, StoreUrlError};
pub use telemetry::{Sample, SampleKind, Telemetry, TelemetryStats, WriteTimings};
pub use view::View;
pub use watch::Watch;
pub use world::{new_op_id, World, WorldConfig};
