//! Opening a store from a URL: `memory://`, `file:///abs/dir`, `s3://bucket/prefix`
//! (or `s3a://`), `gs://bucket/prefix`, `az://container/prefix` (and object_store's other
//! Azure forms); and finishing an S3, GCS or Azure builder of the embedder's own
//! ([`s3_store`], [`gcs_store`], [`azure_store`]).
//!
//! Owns the URL grammar, the options each scheme takes and the store builders' settings
//! slotlog depends on. Cloud stores start from object_store's own `from_env()` (every
//! `AWS_*` / `GOOGLE_*` variable it knows: static keys, web identity (EKS IRSA), ECS task
//! and EKS pod identity credentials, instance metadata, regions, endpoints), then the
//! [`StoreOptions`] given (Azure: `AZURE_*`, `AZURITE_BLOB_STORAGE_URL`), then slotlog's
//! required settings on top, which nothing overrides: object_store's own retries off (the kernel retries, and a create retried
//! inside object_store after a 5xx could report our own landed create as
//! `AlreadyExists`), conditional puts on (S3 `If-Match` / `If-None-Match`). Hands back
//! the store, the [`Backend`] that describes it (so conditional deletes can be sent), and
//! the prefix inside the store the world lives under.
//!
//! Azure URLs: `az://container/prefix`, `azure://`, `adl://`, `abfs[s]://container/prefix`,
//! `abfs[s]://container@account.dfs.core.windows.net/prefix` and
//! `https://account.blob.core.windows.net/container/prefix` (object_store's forms; the
//! account comes from the URL or `AZURE_STORAGE_ACCOUNT_NAME`). Microsoft Fabric
//! (OneLake) endpoints are refused: slotlog has not been tried on them.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
use crate::store_date::DatedConnector;
#[cfg(feature = "s3")]
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey, S3ConditionalPut};
#[cfg(feature = "azure")]
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
#[cfg(feature = "gcs")]
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
#[cfg(feature = "fs")]
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
use object_store::{ClientConfigKey, ClientOptions, RetryConfig};
use object_store::{ObjectStore, ObjectStoreScheme};
use url::Url;

#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
use crate::object_store_blobs::install_crypto_provider;
#[cfg(feature = "azure")]
use crate::object_store_blobs::AzureBackend;
use crate::object_store_blobs::Backend;
#[cfg(feature = "gcs")]
use crate::object_store_blobs::GcsBackend;
#[cfg(feature = "s3")]
use crate::object_store_blobs::S3Backend;

/// GCS's XML API, object_store's default.
pub const GCS_BASE_URL_DEFAULT: &str = "https://storage.googleapis.com";
/// Azurite's blob endpoint when `AZURITE_BLOB_STORAGE_URL` is not set (object_store's
/// default).
pub const AZURITE_URL_DEFAULT: &str = "http://127.0.0.1:10000";
/// Azurite's development account, object_store's default in emulator mode.
pub const AZURITE_ACCOUNT: &str = "devstoreaccount1";

/// The region an S3 store signs for when none is given (object_store's default; moto and
/// MinIO accept it).
pub const S3_REGION_DEFAULT: &str = "us-east-1";

/// Options for [`open_store`]; each applies to the schemes named on it. A cloud store
/// starts from object_store's `from_env()`; a field set here overrides what the
/// environment says. Its `Debug` shows neither the secret key nor the session token.
#[derive(Clone)]
#[non_exhaustive]
pub struct StoreOptions {
    /// s3: the server's base URL, for S3-compatible servers (`http://127.0.0.1:9000`);
    /// overrides `AWS_ENDPOINT_URL`. Requests are path style (`{endpoint}/{bucket}/{key}`)
    /// unless `AWS_VIRTUAL_HOSTED_STYLE_REQUEST` says otherwise.
    pub s3_endpoint: Option<String>,
    /// s3: the region to sign for; overrides `AWS_REGION` / `AWS_DEFAULT_REGION`
    /// ([`S3_REGION_DEFAULT`] when neither is set).
    pub s3_region: Option<String>,
    /// s3: static credentials, overriding `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` /
    /// `AWS_SESSION_TOKEN`. Absent everywhere: object_store's chain (web identity, ECS
    /// task role, EKS pod identity, instance metadata).
    pub s3_access_key_id: Option<String>,
    /// s3: the secret half of the static key.
    pub s3_secret_access_key: Option<String>,
    /// s3: a session token for temporary credentials.
    pub s3_session_token: Option<String>,
    /// gs: the service account key file (JSON); overrides `GOOGLE_SERVICE_ACCOUNT`.
    /// Absent everywhere: application default credentials.
    pub gcs_service_account_path: Option<String>,
    /// gs: the XML API base URL; absent: `GOOGLE_BASE_URL`, else the key file's
    /// `gcs_base_url`, else [`GCS_BASE_URL_DEFAULT`].
    pub gcs_base_url: Option<String>,
    /// s3, gs: allow `http://` endpoints (a loopback test server). Also on when the S3
    /// endpoint in effect is `http://`.
    pub allow_http: bool,
    /// s3, gs: the HTTP client's per-request timeout (object_store's default: 30 s). The
    /// driver's own call timeout usually fires first.
    pub request_timeout: Option<Duration>,
    /// file: fsync files and directories before a write returns (durable commits).
    pub fsync: bool,
    /// file: make the directory when it is missing. Off for tools that only read
    /// (`inspect`, `verify`): a missing directory is then [`StoreUrlError::LocalDirMissing`]
    /// and nothing is created.
    pub create_dir: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            s3_endpoint: None,
            s3_region: None,
            s3_access_key_id: None,
            s3_secret_access_key: None,
            s3_session_token: None,
            gcs_service_account_path: None,
            gcs_base_url: None,
            allow_http: false,
            request_timeout: None,
            fsync: true,
            create_dir: true,
        }
    }
}

impl std::fmt::Debug for StoreOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redacted = |secret: &Option<String>| secret.as_ref().map(|_| "<redacted>");
        f.debug_struct("StoreOptions")
            .field("s3_endpoint", &self.s3_endpoint)
            .field("s3_region", &self.s3_region)
            .field("s3_access_key_id", &self.s3_access_key_id)
            .field("s3_secret_access_key", &redacted(&self.s3_secret_access_key))
            .field("s3_session_token", &redacted(&self.s3_session_token))
            .field("gcs_service_account_path", &self.gcs_service_account_path)
            .field("gcs_base_url", &self.gcs_base_url)
            .field("allow_http", &self.allow_http)
            .field("request_timeout", &self.request_timeout)
            .field("fsync", &self.fsync)
            .field("create_dir", &self.create_dir)
            .finish()
    }
}

impl StoreOptions {
    /// slotlog's own variables: `SLOTLOG_S3_ENDPOINT` (overrides `AWS_ENDPOINT_URL`) and
    /// `SLOTLOG_GCS_BASE_URL`; `allow_http` is set when either is `http://`. Everything
    /// else (`AWS_*`, `GOOGLE_*`) object_store reads itself when [`open_store`] builds the
    /// store, so the options need not carry it.
    pub fn from_env() -> StoreOptions {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let s3_endpoint = var("SLOTLOG_S3_ENDPOINT");
        let gcs_base_url = var("SLOTLOG_GCS_BASE_URL");
        let allow_http = [&s3_endpoint, &gcs_base_url]
            .iter()
            .any(|e| e.as_deref().is_some_and(|e| e.starts_with("http://")));
        StoreOptions { s3_endpoint, gcs_base_url, allow_http, ..StoreOptions::default() }
    }
}

/// Why a URL could not be opened, or a builder not finished.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreUrlError {
    /// Not a URL at all.
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// The URL parser's reason.
        error: url::ParseError,
    },
    /// A scheme neither this crate nor object_store knows.
    UnsupportedScheme {
        /// The scheme as given.
        scheme: String,
    },
    /// A store object_store knows but this build does not carry (`store`: Azure, a plain
    /// HTTP store).
    NotBuiltIn {
        /// The URL as given.
        url: String,
        /// The store it names.
        store: &'static str,
    },
    /// A store this build leaves out: the crate's feature for it (`feature`: `s3`, `gcs`,
    /// `azure`, `fs`) was off when it was built.
    BackendNotBuilt {
        /// The URL as given.
        url: String,
        /// The backend's short name (`s3`, `gcs`, `azure`, `file`).
        backend: &'static str,
        /// The feature that builds it in.
        feature: &'static str,
    },
    /// An `https://` URL of an S3 bucket (AWS, R2): write it as `s3://bucket/prefix` with
    /// `AWS_REGION` or `AWS_ENDPOINT_URL` set, so the requests and the conditional deletes
    /// go to the same place.
    S3HttpsUrl {
        /// The URL as given.
        url: String,
    },
    /// `s3://`, `gs://` or an Azure URL without a bucket (container), or a builder without
    /// one.
    MissingBucket {
        /// The URL as given.
        url: String,
    },
    /// `file://` with a host other than `localhost`, or a relative path.
    NotALocalPath {
        /// The URL as given.
        url: String,
    },
    /// The directory of a `file://` URL could not be made.
    LocalDir {
        /// The path in question.
        path: String,
        /// The file system's reason.
        error: std::io::Error,
    },
    /// The directory of a `file://` URL does not exist, and the options say not to make it.
    LocalDirMissing {
        /// The path in question.
        path: String,
    },
    /// An S3 store needs both halves of a static key, or neither.
    PartialCredentials,
    /// The service account key could not be read as JSON.
    ServiceAccount {
        /// The path in question.
        path: String,
        /// The reason the key could not be read.
        error: String,
    },
    /// A setting slotlog cannot honour (`what`): S3 Express One Zone, say.
    Unsupported {
        /// The setting.
        what: &'static str,
    },
    /// object_store refused the configuration.
    Build {
        /// The store being built.
        scheme: &'static str,
        /// object_store's reason.
        error: object_store::Error,
    },
}

impl fmt::Display for StoreUrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreUrlError::InvalidUrl { url, error } => write!(f, "not a store URL: {url:?}: {error}"),
            StoreUrlError::UnsupportedScheme { scheme } => {
                write!(f, "unsupported store scheme {scheme:?} (memory, file, s3, s3a, gs, az)")
            }
            StoreUrlError::NotBuiltIn { url, store } => {
                write!(f, "{url}: {store} is not built into slotlog (memory, file, s3, s3a, gs, az are)")
            }
            StoreUrlError::BackendNotBuilt { url, backend, feature } => {
                write!(f, "{url}: this build has no {backend} backend: enable the `{feature}` feature")
            }
            StoreUrlError::S3HttpsUrl { url } => write!(
                f,
                "{url}: write an S3 bucket as s3://bucket/prefix, with AWS_REGION or AWS_ENDPOINT_URL for where it is"
            ),
            StoreUrlError::MissingBucket { url } => write!(f, "no bucket in {url}"),
            StoreUrlError::NotALocalPath { url } => write!(f, "not an absolute local path: {url}"),
            StoreUrlError::LocalDir { path, error } => write!(f, "cannot make directory {path}: {error}"),
            StoreUrlError::LocalDirMissing { path } => write!(f, "no directory {path}"),
            StoreUrlError::PartialCredentials => {
                write!(f, "an S3 access key id and secret access key go together")
            }
            StoreUrlError::ServiceAccount { path, error } => {
                write!(f, "cannot read service account key {path}: {error}")
            }
            StoreUrlError::Unsupported { what } => write!(f, "slotlog does not support {what}"),
            StoreUrlError::Build { scheme, error } => write!(f, "cannot build the {scheme} store: {error}"),
        }
    }
}

impl std::error::Error for StoreUrlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreUrlError::InvalidUrl { error, .. } => Some(error),
            StoreUrlError::LocalDir { error, .. } => Some(error),
            StoreUrlError::Build { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Where a store URL points, read from the URL alone: nothing is built, made or looked
/// at. [`open_store`] opens it; [`parse_store_url`] gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreLocation {
    /// `memory://` or `memory://any/prefix`.
    Memory {
        /// The prefix inside the store: no leading or trailing `/`, empty for the whole store.
        prefix: String,
    },
    /// `file:///abs/dir` (host empty or `localhost`): an absolute directory.
    Local {
        /// The directory.
        dir: std::path::PathBuf,
    },
    /// `s3://bucket/prefix` or `s3a://bucket/prefix`.
    S3 {
        /// The bucket's name, never empty.
        bucket: String,
        /// The prefix inside the store: no leading or trailing `/`, empty for the whole store.
        prefix: String,
    },
    /// `gs://bucket/prefix`.
    Gcs {
        /// The bucket's name, never empty.
        bucket: String,
        /// The prefix inside the store: no leading or trailing `/`, empty for the whole store.
        prefix: String,
    },
    /// `az://container/prefix` and object_store's other Azure Blob Storage forms.
    Azure {
        /// The storage account, when the URL names one (else `AZURE_STORAGE_ACCOUNT_NAME`,
        /// or Azurite's in emulator mode).
        account: Option<String>,
        /// The container's name, never empty.
        container: String,
        /// The prefix inside the store: no leading or trailing `/`, empty for the whole store.
        prefix: String,
    },
}

/// Reads a store URL (the grammar [`open_store`] describes) without building the store.
/// Every prefix has no leading or trailing `/`; every bucket is non-empty; a local
/// directory is absolute. Anything else is a [`StoreUrlError`], never a panic.
pub fn parse_store_url(url: &str) -> Result<StoreLocation, StoreUrlError> {
    let parsed =
        Url::parse(url).map_err(|error| StoreUrlError::InvalidUrl { url: url.to_string(), error })?;
    match parsed.scheme() {
        // object_store's parser takes no host on memory URLs; ours carry the prefix there.
        "memory" => {
            Ok(StoreLocation::Memory { prefix: join_prefix(parsed.host_str().unwrap_or(""), parsed.path()) })
        }
        "file" => {
            let not_local = || StoreUrlError::NotALocalPath { url: url.to_string() };
            if !matches!(parsed.host_str(), None | Some("") | Some("localhost")) {
                return Err(not_local());
            }
            let dir = parsed.to_file_path().map_err(|_| not_local())?;
            Ok(StoreLocation::Local { dir })
        }
        "s3" | "s3a" => {
            let (bucket, prefix) = bucket_and_prefix(url, &parsed)?;
            Ok(StoreLocation::S3 { bucket, prefix })
        }
        "gs" => {
            let (bucket, prefix) = bucket_and_prefix(url, &parsed)?;
            Ok(StoreLocation::Gcs { bucket, prefix })
        }
        other => Err(match ObjectStoreScheme::parse(&parsed) {
            Ok((ObjectStoreScheme::MicrosoftAzure, path)) => {
                return azure_location(url, &parsed, path.as_ref())
            }
            Ok((ObjectStoreScheme::AmazonS3, _)) => StoreUrlError::S3HttpsUrl { url: url.to_string() },
            Ok((ObjectStoreScheme::Http, _)) => StoreUrlError::NotBuiltIn {
                url: url.to_string(),
                store: "a plain HTTP (WebDAV) store, which has no create-if-absent,",
            },
            _ => StoreUrlError::UnsupportedScheme { scheme: other.to_string() },
        }),
    }
}

/// Open the store `url` names. Returns the store, its [`Backend`] (hand both to
/// [`World::open_with`](crate::World::open_with)) and the prefix inside the store (no
/// leading or trailing `/`; empty for the whole store).
///
/// * `memory://` or `memory://any/prefix`: a new, empty in-memory store on every call.
/// * `file:///abs/dir`: the directory (made if missing, when `create_dir`) is the store;
///   prefix empty.
/// * `s3://bucket/prefix` or `s3a://bucket/prefix`: `AmazonS3Builder::from_env()`, then
///   options `s3_*`, `allow_http`, `request_timeout`, then [`s3_store`]'s settings.
/// * `gs://bucket/prefix`: `GoogleCloudStorageBuilder::from_env()`, then options
///   `gcs_*`, `allow_http`, `request_timeout`, then [`gcs_store`]'s settings.
///
/// * Azure (`az://container/prefix` and the other forms in the module docs):
///   `MicrosoftAzureBuilder::from_env()`, then options `allow_http`, `request_timeout`,
///   then [`azure_store`]'s settings.
///
/// Plain HTTP URLs are [`StoreUrlError::NotBuiltIn`]; an `https://` S3 or R2 URL is
/// [`StoreUrlError::S3HttpsUrl`].
#[cfg_attr(
    not(any(feature = "s3", feature = "gcs", feature = "azure", feature = "fs")),
    allow(unused_variables)
)]
pub fn open_store(
    url: &str,
    options: &StoreOptions,
) -> Result<(Arc<dyn ObjectStore>, Backend, String), StoreUrlError> {
    // A backend this build leaves out: say which feature builds it in.
    #[cfg(not(all(feature = "s3", feature = "gcs", feature = "azure", feature = "fs")))]
    let not_built =
        |backend, feature| StoreUrlError::BackendNotBuilt { url: url.to_string(), backend, feature };
    match parse_store_url(url)? {
        StoreLocation::Memory { prefix } => Ok((Arc::new(InMemory::new()), Backend::Memory, prefix)),
        #[cfg(feature = "fs")]
        StoreLocation::Local { dir } => open_local(&dir, options),
        #[cfg(feature = "s3")]
        StoreLocation::S3 { bucket, prefix } => {
            let (store, backend) = s3_store(s3_builder(&bucket, options)?)?;
            Ok((store, backend, prefix))
        }
        #[cfg(feature = "gcs")]
        StoreLocation::Gcs { bucket, prefix } => {
            let (store, backend) = gcs_store(gcs_builder(&bucket, options))?;
            Ok((store, backend, prefix))
        }
        #[cfg(feature = "azure")]
        StoreLocation::Azure { account, container, prefix } => {
            let (store, backend) = azure_store(azure_builder(account.as_deref(), &container, options))?;
            Ok((store, backend, prefix))
        }
        #[cfg(not(feature = "fs"))]
        StoreLocation::Local { .. } => Err(not_built("file", "fs")),
        #[cfg(not(feature = "s3"))]
        StoreLocation::S3 { .. } => Err(not_built("s3", "s3")),
        #[cfg(not(feature = "gcs"))]
        StoreLocation::Gcs { .. } => Err(not_built("gcs", "gcs")),
        #[cfg(not(feature = "azure"))]
        StoreLocation::Azure { .. } => Err(not_built("azure", "azure")),
    }
}

/// An Azure URL's account, container and prefix, as object_store's builder reads them
/// (`MicrosoftAzureBuilder::with_url`); `prefix` is object_store's path within the
/// container.
fn azure_location(url: &str, parsed: &Url, prefix: &str) -> Result<StoreLocation, StoreUrlError> {
    let missing = || StoreUrlError::MissingBucket { url: url.to_string() };
    let host = parsed.host_str().unwrap_or("");
    if host.ends_with("fabric.microsoft.com") {
        return Err(StoreUrlError::Unsupported { what: "Microsoft Fabric (OneLake) endpoints" });
    }
    // `account.blob.core.windows.net` or `account.dfs.core.windows.net`.
    let account_of = |host: &str| match host.split_once('.') {
        Some((account, "blob.core.windows.net" | "dfs.core.windows.net")) if !account.is_empty() => {
            Ok(account.to_string())
        }
        _ => Err(StoreUrlError::UnsupportedScheme { scheme: parsed.scheme().to_string() }),
    };
    let (account, container) = match parsed.scheme() {
        "https" => {
            let container = parsed.path_segments().and_then(|mut s| s.next()).unwrap_or("");
            (Some(account_of(host)?), container.to_string())
        }
        _ if !parsed.username().is_empty() => (Some(account_of(host)?), parsed.username().to_string()),
        _ => (None, host.to_string()),
    };
    if container.is_empty() || container.contains('.') {
        return Err(missing());
    }
    Ok(StoreLocation::Azure { account, container, prefix: prefix.trim_matches('/').to_string() })
}

fn join_prefix(host: &str, path: &str) -> String {
    let path = path.trim_matches('/');
    match (host.is_empty(), path.is_empty()) {
        (true, _) => path.to_string(),
        (false, true) => host.to_string(),
        (false, false) => format!("{host}/{path}"),
    }
}

fn bucket_and_prefix(url: &str, parsed: &Url) -> Result<(String, String), StoreUrlError> {
    let bucket = parsed
        .host_str()
        .filter(|b| !b.is_empty())
        .ok_or(StoreUrlError::MissingBucket { url: url.to_string() })?;
    let prefix = percent_encoding::percent_decode_str(parsed.path().trim_matches('/'))
        .decode_utf8_lossy()
        .into_owned();
    Ok((bucket.to_string(), prefix))
}

#[cfg(feature = "fs")]
fn open_local(
    dir: &std::path::Path,
    options: &StoreOptions,
) -> Result<(Arc<dyn ObjectStore>, Backend, String), StoreUrlError> {
    if options.create_dir {
        std::fs::create_dir_all(dir)
            .map_err(|error| StoreUrlError::LocalDir { path: dir.display().to_string(), error })?;
    } else if !dir.is_dir() {
        return Err(StoreUrlError::LocalDirMissing { path: dir.display().to_string() });
    }
    let store = LocalFileSystem::new_with_prefix(dir)
        .map_err(|error| StoreUrlError::Build { scheme: "file", error })?
        .with_fsync(options.fsync);
    Ok((Arc::new(store), Backend::Local, String::new()))
}

/// No retries inside object_store: see the module docs.
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
fn no_retries() -> RetryConfig {
    RetryConfig { max_retries: 0, ..RetryConfig::default() }
}

/// The client settings the conditional delete's own HTTP client copies from the store's
/// builder, so both reach the store the same way.
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
const CLIENT_KEYS: [ClientConfigKey; 11] = [
    ClientConfigKey::AllowHttp,
    ClientConfigKey::AllowInvalidCertificates,
    ClientConfigKey::NoSystemCertificates,
    ClientConfigKey::ConnectTimeout,
    ClientConfigKey::Timeout,
    ClientConfigKey::ProxyUrl,
    ClientConfigKey::ProxyCaCertificate,
    ClientConfigKey::ProxyExcludes,
    ClientConfigKey::Http1Only,
    ClientConfigKey::Http2Only,
    ClientConfigKey::UserAgent,
];

#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
fn client_options(get: impl Fn(&ClientConfigKey) -> Option<String>) -> ClientOptions {
    CLIENT_KEYS.iter().fold(ClientOptions::new(), |options, key| match get(key) {
        Some(value) => options.with_config(*key, value),
        None => options,
    })
}

/// `AmazonS3Builder::from_env()` for `bucket`, with the options on top.
#[cfg(feature = "s3")]
fn s3_builder(bucket: &str, options: &StoreOptions) -> Result<AmazonS3Builder, StoreUrlError> {
    let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
    if let Some(endpoint) = &options.s3_endpoint {
        builder = builder.with_endpoint(endpoint);
    }
    if let Some(region) = &options.s3_region {
        builder = builder.with_region(region);
    }
    match (&options.s3_access_key_id, &options.s3_secret_access_key) {
        (Some(id), Some(secret)) => {
            builder = builder.with_access_key_id(id).with_secret_access_key(secret);
            if let Some(token) = &options.s3_session_token {
                builder = builder.with_token(token);
            }
        }
        (None, None) => {}
        _ => return Err(StoreUrlError::PartialCredentials),
    }
    if options.allow_http {
        builder = builder.with_config(AmazonS3ConfigKey::Client(ClientConfigKey::AllowHttp), "true");
    }
    if let Some(timeout) = options.request_timeout {
        let value = format!("{}ms", timeout.as_millis());
        builder = builder.with_config(AmazonS3ConfigKey::Client(ClientConfigKey::Timeout), value);
    }
    Ok(builder)
}

/// Finishes an S3 builder the way slotlog needs it and describes it: object_store's
/// retries off, its HTTP client keeping each answer's `Date` ([`DatedConnector`], which
/// takes the place of a connector set on the builder), conditional puts by ETag, plain
/// HTTP allowed when the endpoint is
/// `http://`. Start from `AmazonS3Builder::from_env()` (or `new()`), set the bucket with
/// `with_bucket_name` (not `with_url`: its settings are applied only inside `build`, out
/// of sight of the conditional delete) and anything else you need; hand the result to
/// [`World::open_with`](crate::World::open_with).
#[cfg(feature = "s3")]
pub fn s3_store(builder: AmazonS3Builder) -> Result<(Arc<dyn ObjectStore>, Backend), StoreUrlError> {
    install_crypto_provider();
    let build = |error| StoreUrlError::Build { scheme: "s3", error };
    let get = |key: AmazonS3ConfigKey| builder.get_config_value(&key).filter(|v| !v.is_empty());
    let bucket = get(AmazonS3ConfigKey::Bucket).ok_or_else(|| StoreUrlError::MissingBucket {
        url: "the S3 builder (set it with with_bucket_name)".to_string(),
    })?;
    if get(AmazonS3ConfigKey::S3Express).is_some_and(|v| v == "true") {
        return Err(StoreUrlError::Unsupported { what: "S3 Express One Zone (AWS_S3_EXPRESS)" });
    }
    let id = get(AmazonS3ConfigKey::AccessKeyId);
    let secret = get(AmazonS3ConfigKey::SecretAccessKey);
    if id.is_some() != secret.is_some() {
        return Err(StoreUrlError::PartialCredentials);
    }
    let region = get(AmazonS3ConfigKey::Region).unwrap_or_else(|| S3_REGION_DEFAULT.to_string());
    // As object_store picks it: the S3-specific endpoint first.
    let endpoint = get(AmazonS3ConfigKey::S3Endpoint).or_else(|| get(AmazonS3ConfigKey::Endpoint));
    let virtual_hosted = get(AmazonS3ConfigKey::VirtualHostedStyleRequest).is_some_and(|v| v == "true");
    let bucket_endpoint = match (&endpoint, virtual_hosted) {
        (Some(endpoint), true) => endpoint.clone(),
        (Some(endpoint), false) => format!("{}/{}", endpoint.trim_end_matches('/'), bucket),
        (None, true) => format!("https://{bucket}.s3.{region}.amazonaws.com"),
        (None, false) => format!("https://s3.{region}.amazonaws.com/{bucket}"),
    };
    let mut builder = builder
        .with_region(&region)
        .with_conditional_put(S3ConditionalPut::ETagMatch)
        .with_retry(no_retries())
        .with_http_connector(DatedConnector::reqwest());
    if endpoint.as_deref().is_some_and(|e| e.starts_with("http://")) {
        builder = builder.with_config(AmazonS3ConfigKey::Client(ClientConfigKey::AllowHttp), "true");
    }
    let client_options = client_options(|key| builder.get_config_value(&AmazonS3ConfigKey::Client(*key)));
    let s3 = builder.build().map_err(build)?;
    let backend =
        S3Backend::new(bucket_endpoint, region, s3.credentials().clone(), &client_options).map_err(build)?;
    Ok((Arc::new(s3), Backend::S3(backend)))
}

/// `GoogleCloudStorageBuilder::from_env()` for `bucket`, with the options on top.
#[cfg(feature = "gcs")]
fn gcs_builder(bucket: &str, options: &StoreOptions) -> GoogleCloudStorageBuilder {
    let mut builder = GoogleCloudStorageBuilder::from_env().with_bucket_name(bucket);
    if let Some(path) = &options.gcs_service_account_path {
        builder = builder.with_service_account_path(path);
    }
    if let Some(base) = &options.gcs_base_url {
        builder = builder.with_base_url(base);
    }
    if options.allow_http {
        builder = builder.with_config(GoogleConfigKey::Client(ClientConfigKey::AllowHttp), "true");
    }
    if let Some(timeout) = options.request_timeout {
        let value = format!("{}ms", timeout.as_millis());
        builder = builder.with_config(GoogleConfigKey::Client(ClientConfigKey::Timeout), value);
    }
    builder
}

/// Finishes a GCS builder the way slotlog needs it and describes it: object_store's
/// retries off, its HTTP client keeping each answer's `Date` ([`DatedConnector`], which
/// takes the place of a connector set on the builder). Set the bucket with
/// `with_bucket_name`; the conditional delete goes to the builder's base URL, else the
/// service account key's `gcs_base_url`, else [`GCS_BASE_URL_DEFAULT`], as object_store's
/// own requests do.
#[cfg(feature = "gcs")]
pub fn gcs_store(
    builder: GoogleCloudStorageBuilder,
) -> Result<(Arc<dyn ObjectStore>, Backend), StoreUrlError> {
    install_crypto_provider();
    let build = |error| StoreUrlError::Build { scheme: "gs", error };
    let get = |key: GoogleConfigKey| builder.get_config_value(&key).filter(|v| !v.is_empty());
    let bucket = get(GoogleConfigKey::Bucket).ok_or_else(|| StoreUrlError::MissingBucket {
        url: "the GCS builder (set it with with_bucket_name)".to_string(),
    })?;
    // object_store takes the key's `gcs_base_url` too; the delete must go there.
    let base_url = match get(GoogleConfigKey::BaseUrl) {
        Some(base) => Some(base),
        None => match (get(GoogleConfigKey::ServiceAccount), get(GoogleConfigKey::ServiceAccountKey)) {
            (Some(path), _) => {
                let error = |error: String| StoreUrlError::ServiceAccount { path: path.clone(), error };
                let text = std::fs::read_to_string(&path).map_err(|e| error(e.to_string()))?;
                key_base_url(&text).map_err(error)?
            }
            (None, Some(key)) => key_base_url(&key).map_err(|error| StoreUrlError::ServiceAccount {
                path: "GOOGLE_SERVICE_ACCOUNT_KEY".into(),
                error,
            })?,
            (None, None) => None,
        },
    };
    let builder = builder.with_retry(no_retries()).with_http_connector(DatedConnector::reqwest());
    let client_options = client_options(|key| builder.get_config_value(&GoogleConfigKey::Client(*key)));
    let gcs = builder.build().map_err(build)?;
    let base_url = base_url.unwrap_or_else(|| GCS_BASE_URL_DEFAULT.to_string());
    let backend =
        GcsBackend::new(base_url, bucket, gcs.credentials().clone(), &client_options).map_err(build)?;
    Ok((Arc::new(gcs), Backend::Gcs(backend)))
}

/// `MicrosoftAzureBuilder::from_env()` for `container` (in `account`, when the URL named
/// one), with the options on top.
#[cfg(feature = "azure")]
fn azure_builder(account: Option<&str>, container: &str, options: &StoreOptions) -> MicrosoftAzureBuilder {
    let mut builder = MicrosoftAzureBuilder::from_env().with_container_name(container);
    if let Some(account) = account {
        builder = builder.with_account(account);
    }
    if options.allow_http {
        builder = builder.with_config(AzureConfigKey::Client(ClientConfigKey::AllowHttp), "true");
    }
    if let Some(timeout) = options.request_timeout {
        let value = format!("{}ms", timeout.as_millis());
        builder = builder.with_config(AzureConfigKey::Client(ClientConfigKey::Timeout), value);
    }
    builder
}

/// Finishes an Azure builder the way slotlog needs it and describes it: object_store's
/// retries off, its HTTP client keeping each answer's `Date` ([`DatedConnector`], which
/// takes the place of a connector set on the builder). Set the account and container
/// with `with_account` and `with_container_name` (not `with_url`: it is read only inside
/// `build`, out of sight of the conditional delete). In emulator mode
/// (`AZURE_STORAGE_USE_EMULATOR=true`) requests go to `AZURITE_BLOB_STORAGE_URL` (else
/// [`AZURITE_URL_DEFAULT`]) as Azurite's development account unless another is set;
/// otherwise to the builder's endpoint, else `https://{account}.blob.core.windows.net`.
#[cfg(feature = "azure")]
pub fn azure_store(builder: MicrosoftAzureBuilder) -> Result<(Arc<dyn ObjectStore>, Backend), StoreUrlError> {
    install_crypto_provider();
    let build = |error| StoreUrlError::Build { scheme: "az", error };
    let get = |key: AzureConfigKey| builder.get_config_value(&key).filter(|v| !v.is_empty());
    let flag =
        |key: AzureConfigKey| get(key).is_some_and(|v| matches!(v.as_str(), "true" | "1" | "yes" | "on"));
    let container = get(AzureConfigKey::ContainerName).ok_or_else(|| StoreUrlError::MissingBucket {
        url: "the Azure builder (set it with with_container_name)".to_string(),
    })?;
    if flag(AzureConfigKey::UseFabricEndpoint) {
        return Err(StoreUrlError::Unsupported { what: "Microsoft Fabric (OneLake) endpoints" });
    }
    let emulator = flag(AzureConfigKey::UseEmulator);
    let account = match get(AzureConfigKey::AccountName) {
        Some(account) => account,
        None if emulator => AZURITE_ACCOUNT.to_string(),
        // object_store's own reason (it refuses a store without an account).
        None => {
            return Err(match builder.build() {
                Err(error) => build(error),
                Ok(_) => StoreUrlError::Unsupported { what: "an Azure store without an account name" },
            })
        }
    };
    // As object_store builds its request URLs (`AzureConfig::path_url`).
    let container_url = if emulator {
        let base =
            std::env::var("AZURITE_BLOB_STORAGE_URL").unwrap_or_else(|_| AZURITE_URL_DEFAULT.to_string());
        format!("{}/{account}/{container}", base.trim_end_matches('/'))
    } else {
        let base = get(AzureConfigKey::Endpoint)
            .unwrap_or_else(|| format!("https://{account}.blob.core.windows.net"));
        format!("{}/{container}", base.trim_end_matches('/'))
    };
    let skip_signature = flag(AzureConfigKey::SkipSignature);
    let mut builder = builder.with_retry(no_retries()).with_http_connector(DatedConnector::reqwest());
    // object_store allows plain HTTP to the emulator on its own; the delete must too.
    if emulator || container_url.starts_with("http://") {
        builder = builder.with_config(AzureConfigKey::Client(ClientConfigKey::AllowHttp), "true");
    }
    let client_options = client_options(|key| builder.get_config_value(&AzureConfigKey::Client(*key)));
    let azure = builder.build().map_err(build)?;
    let backend = AzureBackend::new(
        container_url,
        account,
        azure.credentials().clone(),
        skip_signature,
        &client_options,
    )
    .map_err(build)?;
    Ok((Arc::new(azure), Backend::Azure(backend)))
}

/// A service account key's `gcs_base_url`, if it names one.
#[cfg(feature = "gcs")]
fn key_base_url(text: &str) -> Result<Option<String>, String> {
    let json: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    Ok(json.get("gcs_base_url").and_then(|v| v.as_str()).map(str::to_string))
}

// Every backend: the tests open stores of each kind.
#[cfg(all(test, feature = "s3", feature = "gcs", feature = "azure", feature = "fs"))]
mod tests {
    use super::*;

    fn prefix_of(url: &str) -> String {
        open_store(url, &StoreOptions::default()).map(|(_, _, p)| p).unwrap()
    }

    fn loopback_s3() -> StoreOptions {
        StoreOptions {
            s3_endpoint: Some("http://127.0.0.1:1".into()),
            s3_access_key_id: Some("k".into()),
            s3_secret_access_key: Some("s".into()),
            ..StoreOptions::default()
        }
    }

    #[test]
    fn memory_urls_carry_their_prefix() {
        assert_eq!(prefix_of("memory://"), "");
        assert_eq!(prefix_of("memory://worlds/demo/"), "worlds/demo");
        assert!(matches!(open_store("memory://", &StoreOptions::default()).unwrap().1, Backend::Memory));
    }

    #[test]
    fn file_urls_make_their_directory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b");
        let url = Url::from_file_path(&path).unwrap().to_string();
        let (_, backend, prefix) = open_store(&url, &StoreOptions::default()).unwrap();
        assert!(matches!(backend, Backend::Local));
        assert_eq!(prefix, "");
        assert!(path.is_dir());
        assert!(matches!(
            open_store("file://host/x", &StoreOptions::default()),
            Err(StoreUrlError::NotALocalPath { .. })
        ));
    }

    #[test]
    fn a_missing_directory_is_an_error_and_is_not_made_unless_asked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing");
        let url = Url::from_file_path(&path).unwrap().to_string();
        let options = StoreOptions { create_dir: false, ..StoreOptions::default() };
        let error = open_store(&url, &options).expect_err("refused");
        assert!(matches!(error, StoreUrlError::LocalDirMissing { .. }), "{error}");
        assert!(!path.exists());
    }

    #[test]
    fn s3_urls_need_a_bucket_and_whole_credentials() {
        let options = loopback_s3();
        let (_, backend, prefix) = open_store("s3://bucket/worlds/one/", &options).unwrap();
        assert_eq!(prefix, "worlds/one");
        let Backend::S3(s3) = backend else { panic!("not s3") };
        assert_eq!(s3.bucket_endpoint, "http://127.0.0.1:1/bucket");
        let (_, backend, prefix) = open_store("s3a://bucket/w", &options).unwrap();
        assert_eq!((backend.kind(), prefix.as_str()), ("s3", "w"));
        assert!(matches!(open_store("s3:///x", &options), Err(StoreUrlError::MissingBucket { .. })));
        let partial = StoreOptions { s3_secret_access_key: None, ..options };
        assert!(matches!(open_store("s3://b", &partial), Err(StoreUrlError::PartialCredentials)));
    }

    #[test]
    fn an_s3_builder_of_ones_own_is_finished_and_its_delete_goes_where_its_requests_go() {
        let builder = AmazonS3Builder::new()
            .with_bucket_name("b")
            .with_region("eu-west-1")
            .with_access_key_id("k")
            .with_secret_access_key("s");
        let (_, backend) = s3_store(builder.clone()).unwrap();
        let Backend::S3(s3) = backend else { panic!("not s3") };
        assert_eq!(
            (s3.bucket_endpoint.as_str(), s3.region.as_str()),
            ("https://s3.eu-west-1.amazonaws.com/b", "eu-west-1")
        );
        let (_, backend) = s3_store(builder.clone().with_virtual_hosted_style_request(true)).unwrap();
        let Backend::S3(s3) = backend else { panic!("not s3") };
        assert_eq!(s3.bucket_endpoint, "https://b.s3.eu-west-1.amazonaws.com");
        let (_, backend) = s3_store(builder.clone().with_endpoint("http://127.0.0.1:9000/")).unwrap();
        let Backend::S3(s3) = backend else { panic!("not s3") };
        assert_eq!(s3.bucket_endpoint, "http://127.0.0.1:9000/b");
        // The bucket must be on the builder itself: a URL is read only inside `build`.
        let by_url = AmazonS3Builder::new().with_url("s3://b/p");
        assert!(matches!(s3_store(by_url), Err(StoreUrlError::MissingBucket { .. })));
        let express = builder.with_config(AmazonS3ConfigKey::S3Express, "true");
        assert!(matches!(s3_store(express), Err(StoreUrlError::Unsupported { .. })));
    }

    #[test]
    fn a_gcs_builder_of_ones_own_is_finished_with_its_base_url() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key.json");
        std::fs::write(&key, r#"{"disable_oauth": true, "client_email": "", "private_key": "", "private_key_id": "", "gcs_base_url": "http://127.0.0.1:4443"}"#)
            .unwrap();
        let builder = GoogleCloudStorageBuilder::new()
            .with_bucket_name("b")
            .with_service_account_path(key.to_str().unwrap());
        let (_, backend) = gcs_store(builder).unwrap();
        let Backend::Gcs(gcs) = backend else { panic!("not gcs") };
        assert_eq!((gcs.base_url.as_str(), gcs.bucket.as_str()), ("http://127.0.0.1:4443", "b"));
    }

    #[test]
    fn azure_urls_name_account_container_and_prefix() {
        let azure = |account: Option<&str>, container: &str, prefix: &str| StoreLocation::Azure {
            account: account.map(str::to_string),
            container: container.to_string(),
            prefix: prefix.to_string(),
        };
        for (url, expected) in [
            ("az://container/worlds/one/", azure(None, "container", "worlds/one")),
            ("azure://c", azure(None, "c", "")),
            ("adl://c/p", azure(None, "c", "p")),
            ("abfs://c/p", azure(None, "c", "p")),
            ("abfss://c@account.dfs.core.windows.net/p/q", azure(Some("account"), "c", "p/q")),
            ("az://c@account.blob.core.windows.net/p", azure(Some("account"), "c", "p")),
            ("https://account.blob.core.windows.net/c/p", azure(Some("account"), "c", "p")),
            ("https://account.dfs.core.windows.net/c", azure(Some("account"), "c", "")),
        ] {
            assert_eq!(parse_store_url(url).unwrap(), expected, "{url}");
        }
        for url in ["https://account.blob.core.windows.net/", "https://account.blob.core.windows.net"] {
            assert!(matches!(parse_store_url(url), Err(StoreUrlError::MissingBucket { .. })), "{url}");
        }
        assert!(matches!(
            parse_store_url("https://account.blob.fabric.microsoft.com/w/p"),
            Err(StoreUrlError::Unsupported { .. })
        ));
    }

    #[test]
    fn an_azure_builder_of_ones_own_is_finished_and_its_delete_goes_where_its_requests_go() {
        let key = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
        let builder = MicrosoftAzureBuilder::new().with_container_name("c").with_access_key(key);
        let (_, backend) = azure_store(builder.clone().with_account("acct")).unwrap();
        let Backend::Azure(azure) = backend else { panic!("not azure") };
        assert_eq!(
            (azure.container_url.as_str(), azure.account.as_str()),
            ("https://acct.blob.core.windows.net/c", "acct")
        );
        let own_endpoint =
            builder.clone().with_account("acct").with_endpoint("http://127.0.0.1:9/acct/".into());
        let (_, backend) = azure_store(own_endpoint).unwrap();
        let Backend::Azure(azure) = backend else { panic!("not azure") };
        assert_eq!(azure.container_url, "http://127.0.0.1:9/acct/c");
        // No account and no emulator: object_store's own reason.
        assert!(matches!(azure_store(builder.clone()), Err(StoreUrlError::Build { scheme: "az", .. })));
        let url_only = MicrosoftAzureBuilder::new().with_url("az://c/p");
        assert!(matches!(azure_store(url_only), Err(StoreUrlError::MissingBucket { .. })));
    }

    #[test]
    fn https_urls_of_s3_are_refused_with_the_way_out() {
        for url in ["https://b.s3.us-east-1.amazonaws.com/p", "https://s3.us-east-1.amazonaws.com/b/p"] {
            let error = open_store(url, &StoreOptions::default()).expect_err("refused");
            assert!(matches!(error, StoreUrlError::S3HttpsUrl { .. }), "{url}: {error}");
            assert!(error.to_string().contains("s3://bucket/prefix"), "{error}");
        }
    }

    #[test]
    fn unknown_schemes_and_non_urls_are_refused() {
        assert!(matches!(
            open_store("ftp://x/y", &StoreOptions::default()),
            Err(StoreUrlError::UnsupportedScheme { .. })
        ));
        assert!(matches!(
            open_store("not a url", &StoreOptions::default()),
            Err(StoreUrlError::InvalidUrl { .. })
        ));
    }
}

// A build with a backend left out: `cargo test -p slotlog --lib --no-default-features
// --features fs` (or any one backend).
#[cfg(all(test, not(all(feature = "s3", feature = "gcs", feature = "azure", feature = "fs"))))]
mod left_out {
    use super::*;

    #[test]
    fn a_url_of_a_backend_left_out_names_the_feature_that_builds_it_in() {
        let built =
            [cfg!(feature = "s3"), cfg!(feature = "gcs"), cfg!(feature = "azure"), cfg!(feature = "fs")];
        let urls = [("s3://b/p", "s3", "s3"), ("gs://b/p", "gcs", "gcs"), ("az://c/p", "azure", "azure")];
        let urls = urls.into_iter().chain([("file:///nowhere/slotlog", "file", "fs")]);
        for ((url, backend, feature), built) in urls.zip(built) {
            // The URL still parses: only opening it needs the backend.
            assert!(parse_store_url(url).is_ok(), "{url}");
            if built {
                continue;
            }
            let Err(e) = open_store(url, &StoreOptions::default()) else { panic!("{url} opened") };
            assert!(
                matches!(e, StoreUrlError::BackendNotBuilt { backend: b, feature: f, .. } if b == backend && f == feature)
            );
            let said = format!("{url}: this build has no {backend} backend: enable the `{feature}` feature");
            assert_eq!(e.to_string(), said);
        }
        assert!(open_store("memory://p", &StoreOptions::default()).is_ok());
    }
}
