//! Opening a store from a URL: `memory://`, `file:///abs/dir`, `s3://bucket/prefix`,
//! `gs://bucket/prefix`.
//!
//! Owns the URL grammar, the options each scheme takes and the store builders' settings
//! slotlog depends on: object_store's own retries off (the kernel retries, and a retried
//! create could report our own landed create as `AlreadyExists`), conditional puts on,
//! path-style S3 requests to a custom endpoint. Hands back the store, the [`Backend`] that
//! describes it (so conditional deletes can be sent), and the prefix inside the store the
//! world lives under.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, S3ConditionalPut};
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::{ClientOptions, ObjectStore, RetryConfig};
use url::Url;

use crate::object_store_blobs::{install_crypto_provider, Backend, GcsBackend, S3Backend};

/// GCS's XML API, object_store's default.
pub const GCS_BASE_URL_DEFAULT: &str = "https://storage.googleapis.com";
/// The region an S3 store signs for when none is given (moto and MinIO accept it).
pub const S3_REGION_DEFAULT: &str = "us-east-1";

/// Options for [`open_store`]; each applies to the schemes named on it.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// s3: the server's base URL, for S3-compatible servers (`http://127.0.0.1:9000`).
    /// Requests are then path style (`{endpoint}/{bucket}/{key}`).
    pub s3_endpoint: Option<String>,
    /// s3: the region to sign for; [`S3_REGION_DEFAULT`] when absent.
    pub s3_region: Option<String>,
    /// s3: static credentials. Absent: object_store's own chain (web identity, container,
    /// instance metadata), which only AWS hosts answer.
    pub s3_access_key_id: Option<String>,
    pub s3_secret_access_key: Option<String>,
    pub s3_session_token: Option<String>,
    /// gs: the service account key file (JSON). Absent: application default credentials.
    pub gcs_service_account_path: Option<String>,
    /// gs: the XML API base URL; absent: the key file's `gcs_base_url`, else
    /// [`GCS_BASE_URL_DEFAULT`].
    pub gcs_base_url: Option<String>,
    /// s3, gs: allow `http://` endpoints (a loopback test server).
    pub allow_http: bool,
    /// s3, gs: the HTTP client's per-request timeout (object_store's default: 30 s). The
    /// driver's own call timeout usually fires first.
    pub request_timeout: Option<Duration>,
    /// file: fsync files and directories before a write returns (durable commits).
    pub fsync: bool,
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
        }
    }
}

impl StoreOptions {
    /// Options from the environment: `SLOTLOG_S3_ENDPOINT` (or `AWS_ENDPOINT_URL`),
    /// `AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
    /// `GOOGLE_SERVICE_ACCOUNT` (or `GOOGLE_APPLICATION_CREDENTIALS`),
    /// `SLOTLOG_GCS_BASE_URL`. `allow_http` is set when an endpoint is `http://`.
    pub fn from_env() -> StoreOptions {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let s3_endpoint = var("SLOTLOG_S3_ENDPOINT").or_else(|| var("AWS_ENDPOINT_URL"));
        let gcs_base_url = var("SLOTLOG_GCS_BASE_URL");
        let allow_http = [&s3_endpoint, &gcs_base_url]
            .iter()
            .any(|e| e.as_deref().is_some_and(|e| e.starts_with("http://")));
        StoreOptions {
            s3_endpoint,
            s3_region: var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION")),
            s3_access_key_id: var("AWS_ACCESS_KEY_ID"),
            s3_secret_access_key: var("AWS_SECRET_ACCESS_KEY"),
            s3_session_token: var("AWS_SESSION_TOKEN"),
            gcs_service_account_path: var("GOOGLE_SERVICE_ACCOUNT")
                .or_else(|| var("GOOGLE_APPLICATION_CREDENTIALS")),
            gcs_base_url,
            allow_http,
            ..StoreOptions::default()
        }
    }

    fn client_options(&self) -> ClientOptions {
        let mut options = ClientOptions::new().with_allow_http(self.allow_http);
        if let Some(timeout) = self.request_timeout {
            options = options.with_timeout(timeout);
        }
        options
    }
}

/// Why a URL could not be opened.
#[derive(Debug)]
pub enum StoreUrlError {
    /// Not a URL at all.
    InvalidUrl { url: String, error: url::ParseError },
    /// A scheme other than memory, file, s3, gs.
    UnsupportedScheme { scheme: String },
    /// `s3://` or `gs://` without a bucket.
    MissingBucket { url: String },
    /// `file://` with a host other than `localhost`, or a relative path.
    NotALocalPath { url: String },
    /// The directory of a `file://` URL could not be made.
    LocalDir { path: String, error: std::io::Error },
    /// An S3 URL needs both halves of a static key, or neither.
    PartialCredentials,
    /// The service account key file could not be read as JSON.
    ServiceAccount { path: String, error: String },
    /// object_store refused the configuration.
    Build { scheme: &'static str, error: object_store::Error },
}

impl fmt::Display for StoreUrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreUrlError::InvalidUrl { url, error } => write!(f, "not a store URL: {url}: {error}"),
            StoreUrlError::UnsupportedScheme { scheme } => {
                write!(f, "unsupported store scheme {scheme:?} (memory, file, s3, gs)")
            }
            StoreUrlError::MissingBucket { url } => write!(f, "no bucket in {url}"),
            StoreUrlError::NotALocalPath { url } => write!(f, "not an absolute local path: {url}"),
            StoreUrlError::LocalDir { path, error } => write!(f, "cannot make directory {path}: {error}"),
            StoreUrlError::PartialCredentials => {
                write!(f, "an S3 access key id and secret access key go together")
            }
            StoreUrlError::ServiceAccount { path, error } => {
                write!(f, "cannot read service account key {path}: {error}")
            }
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

/// Open the store `url` names. Returns the store, its [`Backend`] (hand both to
/// [`ObjectStoreBlobs::new`](crate::object_store_blobs::ObjectStoreBlobs::new)) and the
/// prefix inside the store (no leading or trailing `/`; empty for the whole store).
///
/// * `memory://` or `memory://any/prefix`: a new, empty in-memory store on every call.
/// * `file:///abs/dir`: the directory (made if missing) is the store; prefix empty.
/// * `s3://bucket/prefix`: options `s3_*`, `allow_http`, `request_timeout`.
/// * `gs://bucket/prefix`: options `gcs_*`, `allow_http`, `request_timeout`.
pub fn open_store(
    url: &str,
    options: &StoreOptions,
) -> Result<(Arc<dyn ObjectStore>, Backend, String), StoreUrlError> {
    let parsed =
        Url::parse(url).map_err(|error| StoreUrlError::InvalidUrl { url: url.to_string(), error })?;
    match parsed.scheme() {
        "memory" => {
            let prefix = join_prefix(parsed.host_str().unwrap_or(""), parsed.path());
            Ok((Arc::new(InMemory::new()), Backend::Memory, prefix))
        }
        "file" => open_local(url, &parsed, options),
        "s3" => {
            let (bucket, prefix) = bucket_and_prefix(url, &parsed)?;
            let (store, backend) = open_s3(&bucket, options)?;
            Ok((store, backend, prefix))
        }
        "gs" => {
            let (bucket, prefix) = bucket_and_prefix(url, &parsed)?;
            let (store, backend) = open_gcs(&bucket, options)?;
            Ok((store, backend, prefix))
        }
        other => Err(StoreUrlError::UnsupportedScheme { scheme: other.to_string() }),
    }
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

fn open_local(
    url: &str,
    parsed: &Url,
    options: &StoreOptions,
) -> Result<(Arc<dyn ObjectStore>, Backend, String), StoreUrlError> {
    let not_local = || StoreUrlError::NotALocalPath { url: url.to_string() };
    if !matches!(parsed.host_str(), None | Some("") | Some("localhost")) {
        return Err(not_local());
    }
    let dir = parsed.to_file_path().map_err(|_| not_local())?;
    std::fs::create_dir_all(&dir)
        .map_err(|error| StoreUrlError::LocalDir { path: dir.display().to_string(), error })?;
    let store = LocalFileSystem::new_with_prefix(&dir)
        .map_err(|error| StoreUrlError::Build { scheme: "file", error })?
        .with_fsync(options.fsync);
    Ok((Arc::new(store), Backend::Local, String::new()))
}

/// No retries inside object_store: see the module docs.
fn no_retries() -> RetryConfig {
    RetryConfig { max_retries: 0, ..RetryConfig::default() }
}

fn open_s3(bucket: &str, options: &StoreOptions) -> Result<(Arc<dyn ObjectStore>, Backend), StoreUrlError> {
    install_crypto_provider();
    let build = |error| StoreUrlError::Build { scheme: "s3", error };
    let region = options.s3_region.clone().unwrap_or_else(|| S3_REGION_DEFAULT.to_string());
    let client_options = options.client_options();
    let mut builder = AmazonS3Builder::new()
        .with_bucket_name(bucket)
        .with_region(&region)
        .with_conditional_put(S3ConditionalPut::ETagMatch)
        .with_virtual_hosted_style_request(false)
        .with_retry(no_retries())
        .with_client_options(client_options.clone());
    let bucket_endpoint = match &options.s3_endpoint {
        Some(endpoint) => {
            builder = builder.with_endpoint(endpoint);
            format!("{}/{}", endpoint.trim_end_matches('/'), bucket)
        }
        None => format!("https://s3.{region}.amazonaws.com/{bucket}"),
    };
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
    let s3 = builder.build().map_err(build)?;
    let backend =
        S3Backend::new(bucket_endpoint, region, s3.credentials().clone(), &client_options).map_err(build)?;
    Ok((Arc::new(s3), Backend::S3(backend)))
}

fn open_gcs(bucket: &str, options: &StoreOptions) -> Result<(Arc<dyn ObjectStore>, Backend), StoreUrlError> {
    install_crypto_provider();
    let build = |error| StoreUrlError::Build { scheme: "gs", error };
    let client_options = options.client_options();
    let mut builder = GoogleCloudStorageBuilder::new()
        .with_bucket_name(bucket)
        .with_retry(no_retries())
        .with_client_options(client_options.clone());
    let mut base_url = options.gcs_base_url.clone();
    if let Some(path) = &options.gcs_service_account_path {
        builder = builder.with_service_account_path(path);
        // object_store takes the key file's `gcs_base_url` too; the delete must go there.
        if base_url.is_none() {
            base_url = service_account_base_url(path)?;
        }
    }
    if let Some(base) = &options.gcs_base_url {
        builder = builder.with_base_url(base);
    }
    let gcs = builder.build().map_err(build)?;
    let base_url = base_url.unwrap_or_else(|| GCS_BASE_URL_DEFAULT.to_string());
    let backend =
        GcsBackend::new(base_url, bucket, gcs.credentials().clone(), &client_options).map_err(build)?;
    Ok((Arc::new(gcs), Backend::Gcs(backend)))
}

fn service_account_base_url(path: &str) -> Result<Option<String>, StoreUrlError> {
    let error = |error: String| StoreUrlError::ServiceAccount { path: path.to_string(), error };
    let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| error(e.to_string()))?;
    Ok(json.get("gcs_base_url").and_then(|v| v.as_str()).map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefix_of(url: &str) -> String {
        open_store(url, &StoreOptions::default()).map(|(_, _, p)| p).unwrap()
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
    fn s3_urls_need_a_bucket_and_whole_credentials() {
        let options = StoreOptions {
            s3_endpoint: Some("http://127.0.0.1:1".into()),
            s3_access_key_id: Some("k".into()),
            s3_secret_access_key: Some("s".into()),
            allow_http: true,
            ..StoreOptions::default()
        };
        let (_, backend, prefix) = open_store("s3://bucket/worlds/one/", &options).unwrap();
        assert_eq!(prefix, "worlds/one");
        let Backend::S3(s3) = backend else { panic!("not s3") };
        assert_eq!(s3.bucket_endpoint, "http://127.0.0.1:1/bucket");
        assert!(matches!(open_store("s3:///x", &options), Err(StoreUrlError::MissingBucket { .. })));
        let partial = StoreOptions { s3_secret_access_key: None, ..options };
        assert!(matches!(open_store("s3://b", &partial), Err(StoreUrlError::PartialCredentials)));
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
