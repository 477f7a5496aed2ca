//! The kernel's blob contract over any `object_store` store: S3, GCS, a local directory,
//! memory, or a store of the embedder's own.
//!
//! Owns the mapping of each [`BlobOp`] onto `object_store` calls, of every store answer
//! onto [`BlobOutcome`] / [`BlobError`], and the calls `object_store` lacks: the
//! conditional deletes of S3 (`DeleteObject` with `If-Match`), GCS
//! (`x-goog-if-generation-match`) and Azure (`Delete Blob` with `If-Match`), sent with
//! object_store's own HTTP client and signed with its own authorizers (SigV4, a GCS
//! bearer token, Azure Shared Key / SAS / bearer token). It does not retry: the kernel owns retries, and a
//! store built by [`crate::store_url::open_store`] has its own retries turned off, so a
//! create is never silently sent twice.
//!
//! # Mapping
//!
//! | kernel | object_store |
//! |---|---|
//! | `Create` | `put_opts`, `PutMode::Create` |
//! | `Get` | `get` (bytes and meta) |
//! | `Stat` | `head` |
//! | `List` | GCS: an XML API listing of our own; others: `list_with_offset` on the prefix's directory, filtered to the string prefix, strictly after `start_after`, sorted |
//! | `Rewrite` | `put_opts`, `PutMode::Update` with the version the generation encodes |
//! | `Delete` | S3 / GCS / Azure: a conditional `DELETE` of our own; memory, local: `Unsupported` |
//!
//! # Generation encoding
//!
//! A [`Generation`] is the one token the backend conditions writes on, verbatim:
//!
//! * GCS: the object generation (`x-goog-generation`, object_store's `version`), a decimal
//!   number, so [`Generation::as_number`] works as it does on the simulated GCS;
//! * S3, Azure, memory, local directory and [`Backend::Other`]: the ETag exactly as the
//!   store sends it, quotes included (`"9dd4e461268c8034f5c8564e155c67a6"`). S3 conditions
//!   `If-Match` on the ETag only, even in a versioned bucket, so the version id is not used.
//!   When the preferred token is missing the other one is used (a conditional write then
//!   fails as `PreconditionFailed`, never succeeds wrongly).
//!
//! Caveat, S3: an ETag of a single-part upload is the MD5 of the bytes, so rewriting an
//! object with identical bytes (the freshen) keeps its generation. A delete fenced on the
//! generation listed before such a rewrite still succeeds. GCS generations and Azure ETags
//! change on every write.
//!
//! # Listing
//!
//! GCS: object_store's GCS listing keeps each object's ETag (an MD5 on GCS) and drops its
//! `<Generation>`, so a generation listed through it could fence nothing: the collector's
//! deletes would all be refused, and a freshen at a listed version would send an ETag as
//! `x-goog-if-generation-match` (a 400). The adapter lists GCS itself (`GET
//! /{bucket}?list-type=2&prefix=&start-after=&max-keys=`, object_store's own request,
//! sent with its HTTP client and token) and reads `<Generation>`; an entry without one is
//! asked for with a `HEAD`.
//!
//! Other stores:
//! `object_store` lists by path segments and stores disagree on the offset: S3's
//! `start-after` is exclusive, GCS's JSON `startOffset` inclusive, LocalFileSystem lists
//! unsorted. The adapter lists the directory part of the prefix (up to its last `/`) from
//! `start_after`, keeps keys that start with the whole prefix and sort strictly after
//! `start_after`, and keeps the smallest `limit + 1` in a bounded heap, so the answer is
//! the same on every store: byte order, exclusive, `more` when cut short.
//!
//! # Errors
//!
//! Every failure comes back as a [`CallFailure`]: the kernel's kind, the HTTP status when
//! there was one, the store's own message (object_store's error with every cause, the
//! response body included), and whether it is permanent.
//!
//! Permanent, never handed to the kernel (the driver stops the world with
//! `Error::Store`; [`Blobs::execute`] answers `Unsupported`): a missing bucket or
//! container (`NoSuchBucket`, `ContainerNotFound`, checked first, since object_store
//! reports it as a missing object), 401 / `Unauthenticated`, 403 / `PermissionDenied`,
//! `NotSupported` / `NotImplemented` / 405 / 501 on a create or a read, `InvalidPath` or a
//! key that is not an exact path, and any other 4xx or a bare redirect (a wrong region,
//! a bad bucket name). A rewrite or delete the backend cannot do is the contract's
//! `Unsupported` instead: the kernel may meet a backend without them and goes on.
//!
//! The contract's kinds: `NotFound`, `AlreadyExists` (a create), `Precondition` and
//! `NotModified` map to the kernel's kinds; HTTP 429 (and S3's 503 `SlowDown`) is
//! `Throttled`; other 5xx and connection failures before the request was sent are
//! `Unavailable`; a timeout, a connection cut after sending, S3's 400 `RequestTimeout`, or
//! any failure the adapter cannot classify on a write is `Timeout`, since the write may
//! have happened. These three are transient: the kernel retries them with backoff, and the
//! driver bounds the retries of one call (`WorldConfig::call_retries_max`).

use std::collections::BinaryHeap;
use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
use std::sync::Once;

use bytes::Bytes;
use futures_util::StreamExt;
#[cfg(feature = "s3")]
use object_store::aws::{AwsAuthorizer, AwsCredentialProvider};
#[cfg(feature = "azure")]
use object_store::azure::{AzureAuthorizer, AzureCredentialProvider};
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequestBody, ReqwestConnector,
};
#[cfg(feature = "gcs")]
use object_store::gcp::GcpCredentialProvider;
use object_store::path::Path;
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
use object_store::ClientOptions;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, PutResult, UpdateVersion};
#[cfg(feature = "s3")]
use percent_encoding::AsciiSet;
#[cfg(any(feature = "s3", feature = "gcs"))]
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use slotlog_kernel::blob::{BlobError, BlobOp, BlobOutcome, Generation, ObjectMeta, WriteTime, Written};
use tracing::Instrument;

use crate::blobs::{BlobFuture, Blobs, CallFailure, ExplainedFuture};
use crate::error::{StoreErrorKind, UncheckedStore};
use crate::store_date::AnsweredAt;

/// A listing answers at most this many keys, whatever the limit asked (GCS's page cap,
/// and the simulated GCS's).
pub const LIST_LIMIT_MAX: u32 = 1_000;

/// S3 path encoding: everything but unreserved characters and `/` (object_store's own
/// `STRICT_PATH_ENCODE_SET`, which it does not export).
#[cfg(feature = "s3")]
const S3_PATH_ENCODE_SET: &AsciiSet =
    &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~').remove(b'/');

/// Which of an object's `e_tag` and `version` conditions writes on the backend, and so
/// which one a [`Generation`] carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenerationToken {
    /// The ETag (S3, memory, local directory).
    ETag,
    /// The version (GCS's object generation).
    Version,
}

/// A conditional delete for a store `object_store` cannot do one on: the embedder's own
/// call, or a test store's.
pub trait ConditionalDelete: Send + Sync + 'static {
    /// Delete `key` only if its current generation is `generation`. Answers `Deleted`,
    /// `NotFound`, `PreconditionFailed`, or a transient error.
    fn delete_if_generation(&self, key: String, generation: Generation) -> BlobFuture;
}

/// A store of the embedder's own: its name, its generation token, and its conditional
/// delete if it has one.
#[derive(Clone)]
pub struct CustomBackend {
    /// For logs and [`Blobs::kind`].
    pub name: &'static str,
    /// What its objects' versions are, for conditional rewrites and deletes.
    pub token: GenerationToken,
    /// Whether its listings come in key order (lets a listing stop at `limit + 1`).
    pub lists_sorted: bool,
    /// Its delete conditioned on a version; without one, a collector never deletes.
    pub conditional_delete: Option<Arc<dyn ConditionalDelete>>,
}

impl fmt::Debug for CustomBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CustomBackend")
            .field("name", &self.name)
            .field("token", &self.token)
            .field("lists_sorted", &self.lists_sorted)
            .field("conditional_delete", &self.conditional_delete.is_some())
            .finish()
    }
}

/// What store an [`ObjectStoreBlobs`] runs over: decides the generation token, whether
/// listings are sorted, and how (whether) a conditional delete is done.
#[derive(Clone, Debug)]
pub enum Backend {
    /// `object_store::memory::InMemory`. No conditional delete.
    Memory,
    /// `object_store::local::LocalFileSystem`. No conditional rewrite, no conditional
    /// delete; lists unsorted.
    Local,
    /// Amazon S3 or an S3-compatible server (the `s3` feature; without it no value of
    /// this variant can be made, but the variant stays, so features only add).
    S3(S3Backend),
    /// Google Cloud Storage, XML API, as object_store speaks it (the `gcs` feature).
    Gcs(GcsBackend),
    /// Azure Blob Storage, or Azurite (the `azure` feature).
    Azure(AzureBackend),
    /// A store this module knows nothing about: ETag token, no conditional delete.
    Other,
    /// A store described by the embedder.
    Custom(CustomBackend),
}

impl Backend {
    /// The short name [`Blobs::kind`] reports.
    pub fn kind(&self) -> &'static str {
        match self {
            Backend::Memory => "memory",
            Backend::Local => "file",
            Backend::S3(_) => "s3",
            Backend::Gcs(_) => "gcs",
            Backend::Azure(_) => "azure",
            Backend::Other => "other",
            Backend::Custom(c) => c.name,
        }
    }

    fn token(&self) -> GenerationToken {
        match self {
            Backend::Gcs(_) => GenerationToken::Version,
            Backend::Custom(c) => c.token,
            Backend::Memory | Backend::Local | Backend::S3(_) | Backend::Azure(_) | Backend::Other => {
                GenerationToken::ETag
            }
        }
    }

    fn lists_sorted(&self) -> bool {
        match self {
            Backend::Memory | Backend::S3(_) | Backend::Gcs(_) | Backend::Azure(_) => true,
            Backend::Custom(c) => c.lists_sorted,
            Backend::Local | Backend::Other => false,
        }
    }

    /// Whether [`BlobOp::Delete`] can be carried out (otherwise it answers `Unsupported`).
    pub fn supports_conditional_delete(&self) -> bool {
        match self {
            Backend::S3(_) | Backend::Gcs(_) | Backend::Azure(_) => true,
            Backend::Custom(c) => c.conditional_delete.is_some(),
            Backend::Memory | Backend::Local | Backend::Other => false,
        }
    }
}

/// The backend of a store `World::open` was handed, told by the store's own name
/// (`Display`): `InMemory` is [`Backend::Memory`], `LocalFileSystem(..)` is
/// [`Backend::Local`], anything else unknown is [`Backend::Other`]. A cloud store
/// (`AmazonS3(..)`, `GoogleCloudStorage(..)`, `MicrosoftAzure(..)`, or a wrapper that names
/// one) is refused: through `dyn ObjectStore` neither its retry setting (a create retried
/// inside object_store after it landed answers `AlreadyExists` for our own slot) nor its
/// endpoint for conditional deletes can be seen. Build those with
/// [`open_store`](crate::store_url::open_store), [`s3_store`](crate::store_url::s3_store),
/// [`gcs_store`](crate::store_url::gcs_store) or
/// [`azure_store`](crate::store_url::azure_store).
pub fn detect_backend(store: &dyn ObjectStore) -> Result<Backend, UncheckedStore> {
    let name = store.to_string();
    if name == "InMemory" {
        return Ok(Backend::Memory);
    }
    if name.starts_with("LocalFileSystem(") {
        return Ok(Backend::Local);
    }
    for (mark, backend) in [("AmazonS3(", "s3"), ("GoogleCloudStorage(", "gcs"), ("MicrosoftAzure(", "azure")]
    {
        if name.contains(mark) {
            return Err(UncheckedStore { store: name, backend });
        }
    }
    Ok(Backend::Other)
}

/// Where and as whom an S3 conditional delete is sent.
#[cfg(feature = "s3")]
#[derive(Clone)]
pub struct S3Backend {
    /// `{endpoint}/{bucket}` (path style) or `https://{bucket}.s3.{region}.amazonaws.com`.
    pub bucket_endpoint: String,
    /// The region requests are signed for.
    pub region: String,
    /// The store's own provider (`AmazonS3::credentials`).
    pub credentials: AwsCredentialProvider,
    client: HttpClient,
}

#[cfg(feature = "s3")]
impl fmt::Debug for S3Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Backend")
            .field("bucket_endpoint", &self.bucket_endpoint)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "s3")]
impl S3Backend {
    /// `client_options` should be the store's (same `allow_http`, timeouts).
    pub fn new(
        bucket_endpoint: impl Into<String>,
        region: impl Into<String>,
        credentials: AwsCredentialProvider,
        client_options: &ClientOptions,
    ) -> Result<S3Backend, object_store::Error> {
        install_crypto_provider();
        Ok(S3Backend {
            bucket_endpoint: bucket_endpoint.into().trim_end_matches('/').to_string(),
            region: region.into(),
            credentials,
            client: ReqwestConnector::default().connect(client_options)?,
        })
    }

    fn object_url(&self, key: &str) -> String {
        format!("{}/{}", self.bucket_endpoint, utf8_percent_encode(key, S3_PATH_ENCODE_SET))
    }

    async fn delete_if(&self, key: &str, generation: &Generation) -> Explained {
        let credential = self.credentials.get_credential().await.map_err(|e| {
            tracing::warn!(error = %e, "s3 credentials unavailable");
            failure(BlobError::Unavailable, e.to_string())
        })?;
        let mut request = http::Request::builder()
            .method(http::Method::DELETE)
            .uri(self.object_url(key))
            .header(http::header::IF_MATCH, generation.0.as_str())
            .body(HttpRequestBody::empty())
            .map_err(|e| {
                tracing::warn!(error = %e, "generation is not a valid If-Match value");
                failure(BlobError::PreconditionFailed, e.to_string())
            })?;
        AwsAuthorizer::new(&credential, "s3", &self.region).try_authorize(&mut request, None).map_err(
            |e| {
                tracing::error!(error = %e, "cannot sign the s3 delete");
                failure(BlobError::Unsupported, e.to_string())
            },
        )?;
        execute_delete(&self.client, request).await
    }
}

/// Where and as whom a GCS conditional delete is sent.
#[cfg(feature = "gcs")]
#[derive(Clone)]
pub struct GcsBackend {
    /// The XML API's base, `https://storage.googleapis.com` unless overridden.
    pub base_url: String,
    /// The bucket's name.
    pub bucket: String,
    /// The store's own provider (`GoogleCloudStorage::credentials`).
    pub credentials: GcpCredentialProvider,
    client: HttpClient,
}

#[cfg(feature = "gcs")]
impl fmt::Debug for GcsBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GcsBackend")
            .field("base_url", &self.base_url)
            .field("bucket", &self.bucket)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "gcs")]
impl GcsBackend {
    /// `client_options` should be the store's.
    pub fn new(
        base_url: impl Into<String>,
        bucket: impl Into<String>,
        credentials: GcpCredentialProvider,
        client_options: &ClientOptions,
    ) -> Result<GcsBackend, object_store::Error> {
        install_crypto_provider();
        Ok(GcsBackend {
            base_url: base_url.into().trim_end_matches('/').to_string(),
            bucket: bucket.into(),
            credentials,
            client: ReqwestConnector::default().connect(client_options)?,
        })
    }

    /// As object_store's GCS client builds it: bucket and name percent-encoded whole.
    fn object_url(&self, key: &str) -> String {
        format!(
            "{}/{}/{}",
            self.base_url,
            utf8_percent_encode(&self.bucket, NON_ALPHANUMERIC),
            utf8_percent_encode(key, NON_ALPHANUMERIC)
        )
    }

    fn bucket_url(&self) -> String {
        format!("{}/{}", self.base_url, utf8_percent_encode(&self.bucket, NON_ALPHANUMERIC))
    }

    /// One page of keys starting with `prefix`, strictly after `start_after`, in key order:
    /// at most `limit` entries and whether more follow. Entries without a generation come
    /// back with an empty one (the caller asks for it).
    async fn list(&self, prefix: &str, start_after: Option<&str>, limit: usize) -> Explained<GcsPage> {
        let credential = self.credentials.get_credential().await.map_err(|e| {
            tracing::warn!(error = %e, "gcs credentials unavailable");
            failure(BlobError::Unavailable, e.to_string())
        })?;
        // One more than asked says whether more follow, within GCS's page cap.
        let max_keys = (limit + 1).min(LIST_LIMIT_MAX as usize);
        let mut url = url::Url::parse(&self.bucket_url())
            .map_err(|e| failure(BlobError::Unsupported, e.to_string()))?;
        {
            let mut query = url.query_pairs_mut();
            query.append_pair("list-type", "2").append_pair("prefix", prefix);
            if let Some(after) = start_after {
                query.append_pair("start-after", after);
            }
            query.append_pair("max-keys", &max_keys.to_string());
        }
        let mut builder = http::Request::builder().method(http::Method::GET).uri(url.as_str());
        if !credential.bearer.is_empty() {
            builder = builder.header(http::header::AUTHORIZATION, format!("Bearer {}", credential.bearer));
        }
        let request = builder
            .body(HttpRequestBody::empty())
            .map_err(|e| failure(BlobError::Unsupported, e.to_string()))?;
        let response = self.client.execute(request).await.map_err(|e| map_http_error(&e, false))?;
        let status = response.status();
        let body = response.into_body().bytes().await.map_err(|e| map_http_error(&e, false))?;
        if !status.is_success() {
            let body = String::from_utf8_lossy(&body);
            let code = status.as_u16();
            let permanent = permanent_status(code, &body, Call::Read);
            let error = if permanent.is_some() { BlobError::Unsupported } else { map_status(code, &body) };
            return Err(CallFailure {
                error,
                permanent,
                status: Some(code),
                message: format!("{status}: {body}"),
            });
        }
        let listed: GcsListing = quick_xml::de::from_reader(&body[..]).map_err(|e| {
            tracing::warn!(error = %e, "gcs listing is not the XML expected");
            failure(BlobError::Unavailable, format!("gcs listing: {e}"))
        })?;
        let mut entries: Vec<ObjectMeta> = listed
            .contents
            .into_iter()
            // GCS's prefix is a string prefix and `start-after` exclusive; checked anyway.
            .filter(|c| c.key.starts_with(prefix) && start_after.is_none_or(|after| c.key.as_str() > after))
            .map(|c| ObjectMeta {
                generation: Generation(c.generation.unwrap_or_default()),
                created_at_us: chrono::DateTime::parse_from_rfc3339(&c.last_modified)
                    .ok()
                    .and_then(|t| u64::try_from(t.timestamp_micros()).ok())
                    .unwrap_or(0),
                size: c.size,
                key: c.key,
            })
            .collect();
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        let more = entries.len() > limit || listed.is_truncated;
        entries.truncate(limit);
        Ok(GcsPage { entries, more })
    }

    async fn delete_if(&self, key: &str, generation: &Generation) -> Explained {
        // GCS generations are numbers; anything else cannot match.
        let Some(number) = generation.as_number() else {
            return Err(failure(BlobError::PreconditionFailed, "a GCS generation is a number".into()));
        };
        let credential = self.credentials.get_credential().await.map_err(|e| {
            tracing::warn!(error = %e, "gcs credentials unavailable");
            failure(BlobError::Unavailable, e.to_string())
        })?;
        let mut builder = http::Request::builder()
            .method(http::Method::DELETE)
            .uri(self.object_url(key))
            .header("x-goog-if-generation-match", number.to_string());
        if !credential.bearer.is_empty() {
            builder = builder.header(http::header::AUTHORIZATION, format!("Bearer {}", credential.bearer));
        }
        let request = builder.body(HttpRequestBody::empty()).map_err(|e| {
            tracing::error!(error = %e, "cannot build the gcs delete");
            failure(BlobError::Unsupported, e.to_string())
        })?;
        execute_delete(&self.client, request).await
    }
}

/// A page of a GCS listing.
struct GcsPage {
    entries: Vec<ObjectMeta>,
    more: bool,
}

/// GCS's XML listing (`list-type=2`), the fields the adapter reads.
#[cfg(feature = "gcs")]
#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct GcsListing {
    #[serde(default)]
    contents: Vec<GcsListed>,
    #[serde(default)]
    is_truncated: bool,
}

#[cfg(feature = "gcs")]
#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct GcsListed {
    key: String,
    generation: Option<String>,
    last_modified: String,
    size: u64,
}

/// Where and as whom an Azure conditional delete is sent.
#[cfg(feature = "azure")]
#[derive(Clone)]
pub struct AzureBackend {
    /// `{account URL}/{container}`, or for Azurite `{emulator URL}/{account}/{container}`.
    pub container_url: String,
    /// The storage account requests are signed for.
    pub account: String,
    /// The store's own provider (`MicrosoftAzure::credentials`).
    pub credentials: AzureCredentialProvider,
    /// Send requests unsigned (`AZURE_SKIP_SIGNATURE`, a public or proxied container).
    pub skip_signature: bool,
    client: HttpClient,
}

#[cfg(feature = "azure")]
impl fmt::Debug for AzureBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AzureBackend")
            .field("container_url", &self.container_url)
            .field("account", &self.account)
            .field("skip_signature", &self.skip_signature)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "azure")]
impl AzureBackend {
    /// `client_options` should be the store's.
    pub fn new(
        container_url: impl Into<String>,
        account: impl Into<String>,
        credentials: AzureCredentialProvider,
        skip_signature: bool,
        client_options: &ClientOptions,
    ) -> Result<AzureBackend, object_store::Error> {
        install_crypto_provider();
        Ok(AzureBackend {
            container_url: container_url.into().trim_end_matches('/').to_string(),
            account: account.into(),
            credentials,
            skip_signature,
            client: ReqwestConnector::default().connect(client_options)?,
        })
    }

    /// As object_store's Azure client builds it: each path segment pushed onto the URL.
    fn object_url(&self, key: &str) -> Result<String, CallFailure> {
        let mut url = url::Url::parse(&self.container_url).map_err(|e| {
            tracing::error!(error = %e, url = self.container_url, "not a container URL");
            failure(BlobError::Unsupported, e.to_string())
        })?;
        url.path_segments_mut()
            .map_err(|()| {
                failure(BlobError::Unsupported, format!("{} cannot take a path", self.container_url))
            })?
            .pop_if_empty()
            .extend(key.split('/'));
        Ok(url.to_string())
    }

    async fn delete_if(&self, key: &str, generation: &Generation) -> Explained {
        let mut request = http::Request::builder()
            .method(http::Method::DELETE)
            .uri(self.object_url(key)?)
            .header(http::header::IF_MATCH, generation.0.as_str())
            .body(HttpRequestBody::empty())
            .map_err(|e| {
                tracing::warn!(error = %e, "generation is not a valid If-Match value");
                failure(BlobError::PreconditionFailed, e.to_string())
            })?;
        if !self.skip_signature {
            let credential = self.credentials.get_credential().await.map_err(|e| {
                tracing::warn!(error = %e, "azure credentials unavailable");
                failure(BlobError::Unavailable, e.to_string())
            })?;
            AzureAuthorizer::new(&credential, &self.account).try_authorize(&mut request).map_err(|e| {
                tracing::error!(error = %e, "cannot sign the azure delete");
                failure(BlobError::Unsupported, e.to_string())
            })?;
        }
        execute_delete(&self.client, request).await
    }
}

/// Stand-ins for the cloud backends this build leaves out. Each type exists whatever the
/// features, so [`Backend`] has the same variants in every build (a feature only adds),
/// but holds a value of an empty enum: no value of it can be made, and every arm that
/// would use one is unreachable by construction.
#[cfg(not(all(feature = "s3", feature = "gcs", feature = "azure")))]
mod absent {
    use super::{Explained, Generation};

    #[derive(Clone, Debug)]
    pub(super) enum Never {}

    macro_rules! absent_backend {
        ($name:ident, $feature:literal, $what:literal) => {
            #[doc = concat!("Where a conditional delete on ", $what, " would be sent: this build has no ")]
            #[doc = concat!($what, " backend (enable the `", $feature, "` feature), so no value of it exists.")]
            #[derive(Clone, Debug)]
            pub struct $name {
                never: Never,
            }

            impl $name {
                pub(super) async fn delete_if(&self, _key: &str, _generation: &Generation) -> Explained {
                    match self.never {}
                }
            }
        };
    }

    #[cfg(not(feature = "s3"))]
    absent_backend!(S3Backend, "s3", "S3");
    #[cfg(not(feature = "gcs"))]
    absent_backend!(GcsBackend, "gcs", "GCS");
    #[cfg(not(feature = "azure"))]
    absent_backend!(AzureBackend, "azure", "Azure");

    #[cfg(not(feature = "gcs"))]
    impl GcsBackend {
        pub(super) async fn list(
            &self,
            _prefix: &str,
            _start_after: Option<&str>,
            _limit: usize,
        ) -> Explained<super::GcsPage> {
            match self.never {}
        }
    }
}
#[cfg(not(feature = "azure"))]
pub use absent::AzureBackend;
#[cfg(not(feature = "gcs"))]
pub use absent::GcsBackend;
#[cfg(not(feature = "s3"))]
pub use absent::S3Backend;

/// Send one conditional delete and map its answer.
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
async fn execute_delete(client: &HttpClient, request: http::Request<HttpRequestBody>) -> Explained {
    let response = client.execute(request).await.map_err(|e| map_http_error(&e, true))?;
    let status = response.status();
    if status.is_success() {
        return Ok(BlobOutcome::Deleted);
    }
    let body = response.into_body().bytes().await.unwrap_or_default();
    let body = String::from_utf8_lossy(&body);
    let code = status.as_u16();
    let permanent = permanent_status(code, &body, Call::Delete);
    let error = match permanent {
        Some(_) => BlobError::Unsupported,
        None => map_status(code, &body),
    };
    tracing::debug!(status = code, ?error, ?permanent, "conditional delete refused");
    Err(CallFailure { error, permanent, status: Some(code), message: format!("{status}: {body}") })
}

/// Install rustls's ring provider as the process default, once. object_store's HTTP
/// client is reqwest built without a bundled provider (see driver/Cargo.toml); building
/// one before a provider is installed panics. Harmless when one is already installed.
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The kernel's blob contract over one `object_store` store.
#[derive(Clone, Debug)]
pub struct ObjectStoreBlobs {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: Arc<dyn ObjectStore>,
    backend: Backend,
}

impl ObjectStoreBlobs {
    /// Keys are the kernel's, used as object paths as they are: they must be valid
    /// `object_store` paths (no leading or trailing `/`, no empty, `.` or `..` segment, no
    /// control character); an operation on any other key answers `Unsupported`.
    pub fn new(store: Arc<dyn ObjectStore>, backend: Backend) -> ObjectStoreBlobs {
        ObjectStoreBlobs { inner: Arc::new(Inner { store, backend }) }
    }

    /// The backend the store was opened with.
    pub fn backend(&self) -> &Backend {
        &self.inner.backend
    }

    /// The object store itself.
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.inner.store
    }
}

impl Blobs for ObjectStoreBlobs {
    /// A cloud bucket or a local directory names itself (`AmazonS3(bucket)`,
    /// `LocalFileSystem(file:///dir)`), so handles on separately built stores share hints;
    /// a memory store, or one this module does not know (a wrapper, say), is only itself.
    fn identity(&self) -> Option<String> {
        let store = &self.inner.store;
        Some(match &self.inner.backend {
            Backend::Local | Backend::S3(_) | Backend::Gcs(_) | Backend::Azure(_) => {
                format!("{}:{store}", self.inner.backend.kind())
            }
            _ => format!("{}@{:p}", self.inner.backend.kind(), Arc::as_ptr(store).cast::<()>()),
        })
    }

    fn execute(&self, op: BlobOp) -> BlobFuture {
        let call = self.execute_explained(op);
        Box::pin(async move { call.await.map_err(|f| f.error) })
    }

    fn execute_explained(&self, op: BlobOp) -> ExplainedFuture {
        let inner = self.inner.clone();
        let span = tracing::debug_span!(
            "blob",
            backend = inner.backend.kind(),
            op = op_name(&op),
            key = %op.key(),
        );
        Box::pin(
            async move {
                let result = inner.execute(op).await;
                match &result {
                    Ok(_) => tracing::debug!("ok"),
                    Err(f) => tracing::debug!(error = ?f.error, permanent = ?f.permanent, status = ?f.status, "failed"),
                }
                result
            }
            .instrument(span),
        )
    }

    fn kind(&self) -> &'static str {
        self.inner.backend.kind()
    }
}

fn op_name(op: &BlobOp) -> &'static str {
    match op {
        BlobOp::Create { .. } => "create",
        BlobOp::Get { .. } => "get",
        BlobOp::Stat { .. } => "stat",
        BlobOp::List { .. } => "list",
        BlobOp::Rewrite { .. } => "rewrite",
        BlobOp::Delete { .. } => "delete",
    }
}

/// What kind of call failed: decides what an unclassified failure means, and whether a
/// store that cannot do it is a permanent failure (create, read) or the contract's
/// `Unsupported` (rewrite, delete: capabilities a backend may lack).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Create,
    Read,
    Rewrite,
    // Sent only by a cloud backend's conditional delete.
    #[cfg_attr(not(any(feature = "s3", feature = "gcs", feature = "azure")), allow(dead_code))]
    Delete,
}

impl Call {
    fn writes(self) -> bool {
        self != Call::Read
    }

    /// A capability the contract lets a backend lack.
    fn optional(self) -> bool {
        matches!(self, Call::Rewrite | Call::Delete)
    }
}

/// A call's result with the store's account of a failure.
type Explained<T = BlobOutcome> = Result<T, CallFailure>;

/// A failure with the adapter's own message, never permanent.
fn failure(error: BlobError, message: String) -> CallFailure {
    CallFailure { error, permanent: None, status: None, message }
}

impl Inner {
    async fn execute(&self, op: BlobOp) -> Explained {
        match op {
            BlobOp::Create { key, bytes } => self.create(&key, bytes).await,
            BlobOp::Get { key } => self.get(&key).await,
            BlobOp::Stat { key } => self.stat(&key).await.map(BlobOutcome::Stat),
            BlobOp::List { prefix, start_after, limit } => {
                self.list(&prefix, start_after.as_deref(), limit).await
            }
            BlobOp::Rewrite { key, bytes, if_generation } => self.rewrite(&key, bytes, &if_generation).await,
            BlobOp::Delete { key, if_generation } => self.delete(&key, &if_generation).await,
        }
    }

    async fn create(&self, key: &str, bytes: Bytes) -> Explained {
        let path = path_of(key)?;
        let size = bytes.len() as u64;
        let opts = PutOptions { mode: PutMode::Create, ..PutOptions::default() };
        match self.store.put_opts(&path, PutPayload::from(bytes), opts).await {
            Ok(put) => Ok(BlobOutcome::Created(self.written(key, put, size))),
            Err(e) => {
                let mut explained = explain(&e, Call::Create);
                // Azurite answers a create conflict with 409 (real Azure with 412); on S3 a
                // 409 is a concurrent conditional request that did not happen.
                if matches!(self.backend, Backend::Azure(_))
                    && matches!(e, object_store::Error::AlreadyExists { .. })
                {
                    explained.error = BlobError::AlreadyExists;
                }
                Err(explained)
            }
        }
    }

    async fn get(&self, key: &str) -> Explained {
        let path = path_of(key)?;
        let got = self.store.get(&path).await.map_err(|e| explain(&e, Call::Read))?;
        let meta = self.meta(key, &got.meta);
        let bytes = got.bytes().await.map_err(|e| explain(&e, Call::Read))?;
        Ok(BlobOutcome::Got { meta, bytes })
    }

    async fn stat(&self, key: &str) -> Explained<ObjectMeta> {
        let path = path_of(key)?;
        let head = self.store.head(&path).await.map_err(|e| explain(&e, Call::Read))?;
        Ok(self.meta(key, &head))
    }

    async fn list(&self, prefix: &str, start_after: Option<&str>, limit: u32) -> Explained {
        let limit = if limit == 0 { LIST_LIMIT_MAX } else { limit.min(LIST_LIMIT_MAX) } as usize;
        if let Backend::Gcs(gcs) = &self.backend {
            // Below the prefix, `start_after` bounds nothing.
            let start_after = start_after.filter(|after| *after >= prefix);
            let GcsPage { mut entries, more } = gcs.list(prefix, start_after, limit).await?;
            for entry in entries.iter_mut().filter(|e| e.generation.0.is_empty()) {
                tracing::debug!(key = entry.key, "listed without a generation: asking for it");
                *entry = self.stat(&entry.key).await?;
            }
            return Ok(BlobOutcome::Listed { entries, more });
        }
        // object_store lists whole path segments: list the directory the prefix is in and
        // keep the keys that start with the whole prefix.
        let directory = match prefix.rfind('/') {
            Some(i) => Some(Path::parse(&prefix[..i]).map_err(|_| invalid_key(prefix))?),
            None => None,
        };
        // Below the prefix, `start_after` bounds nothing.
        let start_after = start_after.filter(|after| *after >= prefix);
        // Only an exact path is a safe offset (a stripped `/` could move it past keys).
        let offset = start_after.and_then(|after| Path::parse(after).ok().filter(|p| p.as_ref() == after));
        let mut stream = match &offset {
            Some(offset) => self.store.list_with_offset(directory.as_ref(), offset),
            None => self.store.list(directory.as_ref()),
        };
        let sorted = self.backend.lists_sorted();
        // The smallest `limit + 1` keys seen, largest on top.
        let mut kept: BinaryHeap<HeapEntry> = BinaryHeap::with_capacity(limit + 1);
        while let Some(item) = stream.next().await {
            let meta = match item {
                Ok(meta) => meta,
                Err(e) => {
                    let explained = explain(&e, Call::Read);
                    // A directory that does not exist (local) lists nothing; a bucket
                    // that does not exist is another matter.
                    if explained.permanent.is_none() && matches!(e, object_store::Error::NotFound { .. }) {
                        break;
                    }
                    return Err(explained);
                }
            };
            let key = meta.location.as_ref();
            // Exclusive whatever the store's offset is (GCS JSON's is inclusive).
            if !key.starts_with(prefix) || start_after.is_some_and(|after| key <= after) {
                continue;
            }
            let entry = HeapEntry(self.meta(key, &meta));
            if kept.len() <= limit {
                kept.push(entry);
            } else if entry < *kept.peek().expect("heap holds limit + 1") {
                kept.pop();
                kept.push(entry);
            }
            if sorted && kept.len() > limit {
                break;
            }
        }
        let mut entries: Vec<ObjectMeta> = kept.into_sorted_vec().into_iter().map(|e| e.0).collect();
        let more = entries.len() > limit;
        entries.truncate(limit);
        Ok(BlobOutcome::Listed { entries, more })
    }

    async fn rewrite(&self, key: &str, bytes: Bytes, if_generation: &Generation) -> Explained {
        let path = path_of(key)?;
        // GCS generations are numbers; anything else cannot match (and GCS would answer
        // the header with a 400).
        if matches!(self.backend, Backend::Gcs(_)) && if_generation.as_number().is_none() {
            return match self.stat(key).await {
                Err(missing) if missing.error == BlobError::NotFound => Err(missing),
                _ => Err(failure(BlobError::PreconditionFailed, "a GCS generation is a number".into())),
            };
        }
        let size = bytes.len() as u64;
        let version = match self.backend.token() {
            GenerationToken::ETag => UpdateVersion { e_tag: Some(if_generation.0.clone()), version: None },
            GenerationToken::Version => UpdateVersion { e_tag: None, version: Some(if_generation.0.clone()) },
        };
        let opts = PutOptions { mode: PutMode::Update(version), ..PutOptions::default() };
        match self.store.put_opts(&path, PutPayload::from(bytes), opts).await {
            Ok(put) => Ok(BlobOutcome::Rewritten(self.written(key, put, size))),
            Err(e) => match explain(&e, Call::Rewrite) {
                // S3 and memory answer a missing object with a failed precondition: tell
                // the two apart, as the contract does.
                f if f.error == BlobError::PreconditionFailed => match self.stat(key).await {
                    Err(missing) if missing.error == BlobError::NotFound => Err(missing),
                    _ => Err(f),
                },
                other => Err(other),
            },
        }
    }

    async fn delete(&self, key: &str, if_generation: &Generation) -> Explained {
        match self.delete_once(key, if_generation).await {
            // Azurite (as HTTP says an If-Match on nothing should) answers a missing blob
            // with 412: tell the two apart, as the contract does.
            Err(f)
                if f.error == BlobError::PreconditionFailed && matches!(self.backend, Backend::Azure(_)) =>
            {
                match self.stat(key).await {
                    Err(missing) if missing.error == BlobError::NotFound => Err(missing),
                    _ => Err(f),
                }
            }
            other => other,
        }
    }

    async fn delete_once(&self, key: &str, if_generation: &Generation) -> Explained {
        path_of(key)?;
        match &self.backend {
            Backend::S3(s3) => s3.delete_if(key, if_generation).await,
            Backend::Gcs(gcs) => gcs.delete_if(key, if_generation).await,
            Backend::Azure(azure) => azure.delete_if(key, if_generation).await,
            Backend::Custom(CustomBackend { conditional_delete: Some(d), .. }) => d
                .delete_if_generation(key.to_string(), if_generation.clone())
                .await
                .map_err(CallFailure::from),
            Backend::Memory | Backend::Local | Backend::Other | Backend::Custom(_) => {
                tracing::warn!(backend = self.backend.kind(), "no conditional delete on this backend");
                let message = format!("no conditional delete on the {} backend", self.backend.kind());
                Err(failure(BlobError::Unsupported, message))
            }
        }
    }

    /// A write as the store answered it: with the answer's `Date` where the store's HTTP
    /// client kept it ([`AnsweredAt`]), else with no time (the kernel then reads the
    /// object's metadata when it needs one); never this machine's clock (SPEC 10.15).
    fn written(&self, key: &str, put: PutResult, size: u64) -> Written {
        let time = AnsweredAt::of(&put).map(WriteTime::Answered);
        Written { key: key.to_string(), generation: self.generation(put.e_tag, put.version), time, size }
    }

    fn generation(&self, e_tag: Option<String>, version: Option<String>) -> Generation {
        let (first, second) = match self.backend.token() {
            GenerationToken::ETag => (e_tag, version),
            GenerationToken::Version => (version, e_tag),
        };
        match first.or(second) {
            Some(token) => Generation(token),
            None => {
                tracing::warn!(backend = self.backend.kind(), "the store gave neither an ETag nor a version");
                Generation(String::new())
            }
        }
    }

    fn meta(&self, key: &str, meta: &object_store::ObjectMeta) -> ObjectMeta {
        ObjectMeta {
            key: key.to_string(),
            generation: self.generation(meta.e_tag.clone(), meta.version.clone()),
            created_at_us: u64::try_from(meta.last_modified.timestamp_micros()).unwrap_or(0),
            size: meta.size,
        }
    }
}

/// Listing entries ordered by key.
struct HeapEntry(ObjectMeta);

impl PartialEq for HeapEntry {
    fn eq(&self, other: &Self) -> bool {
        self.0.key == other.0.key
    }
}
impl Eq for HeapEntry {}
impl PartialOrd for HeapEntry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for HeapEntry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.key.cmp(&other.0.key)
    }
}

/// The key as an object path, only if it is one exactly (object_store would strip a
/// leading or trailing `/`, aliasing two keys).
fn path_of(key: &str) -> Explained<Path> {
    match Path::parse(key) {
        Ok(path) if path.as_ref() == key => Ok(path),
        _ => Err(invalid_key(key)),
    }
}

/// A key the store would not take as it is: permanent, since the kernel names its keys
/// from the prefix (which `World::open` checks) and would send the same one again.
fn invalid_key(key: &str) -> CallFailure {
    tracing::warn!(key, "not a valid object_store path");
    CallFailure {
        error: BlobError::Unsupported,
        permanent: Some(StoreErrorKind::InvalidPath),
        status: None,
        message: format!("{key:?} is not an object path as written"),
    }
}

/// Explain an object_store error for a call of kind `call`: the kernel's kind, whether no
/// retry will pass, the status, and the store's own message.
fn explain(e: &object_store::Error, call: Call) -> CallFailure {
    let mut message = full_message(e);
    if asked_instance_metadata(&message) {
        message.insert_str(
            0,
            "no credentials in the environment, and the instance metadata service did not answer: ",
        );
    }
    let status = chain_status(e);
    let permanent = permanent_kind(e, status, &message, call);
    let error = match permanent {
        // What `Blobs::execute` answers for it: nothing happened, and asking again will
        // not help. The driver itself never hands it to the kernel.
        Some(kind) => {
            tracing::error!(error = %e, ?kind, "the store refused the call for good");
            BlobError::Unsupported
        }
        None => map_store_error(e, call),
    };
    CallFailure { error, permanent, status, message }
}

/// The error and every cause its own text leaves out ("error sending request" hides
/// "Connection refused" in its sources).
fn full_message(e: &(dyn StdError + 'static)) -> String {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

/// object_store asks the instance metadata service (AWS IMDS, GCP's metadata server) for
/// credentials when none is configured; off a cloud host that is the failure.
fn asked_instance_metadata(message: &str) -> bool {
    ["169.254.169.254", "metadata.google.internal", "169.254.170.2"].iter().any(|host| message.contains(host))
}

/// S3's words for credentials it does not accept, which it answers with 403 (not 401):
/// an unknown key, a wrong secret, an expired or malformed session token.
fn credentials_refused(text: &str) -> bool {
    ["InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken"]
        .iter()
        .any(|code| text.contains(code))
}

/// The permanent failures: credentials, a missing bucket, an operation the store cannot
/// do, a path it will not take, and any other refusal of the request as made.
fn permanent_kind(
    e: &object_store::Error,
    status: Option<u16>,
    message: &str,
    call: Call,
) -> Option<StoreErrorKind> {
    use object_store::Error as E;
    // Before anything else: object_store reports a missing bucket as a missing object.
    if bucket_missing(message) {
        return Some(StoreErrorKind::BucketNotFound);
    }
    match e {
        E::PermissionDenied { .. } if credentials_refused(message) => Some(StoreErrorKind::Unauthenticated),
        E::PermissionDenied { .. } => Some(StoreErrorKind::PermissionDenied),
        E::Unauthenticated { .. } => Some(StoreErrorKind::Unauthenticated),
        E::NotSupported { .. } | E::NotImplemented { .. } | E::UnknownConfigurationKey { .. } => {
            (!call.optional()).then_some(StoreErrorKind::Unsupported)
        }
        E::InvalidPath { .. } => Some(StoreErrorKind::InvalidPath),
        // The typed outcomes the contract has kinds for.
        E::NotFound { .. } | E::AlreadyExists { .. } | E::Precondition { .. } | E::NotModified { .. } => None,
        // S3 answers a wrong region with a redirect object_store cannot follow.
        _ if message.contains("Received redirect without LOCATION") => Some(StoreErrorKind::Rejected),
        _ => status.and_then(|code| permanent_status(code, message, call)),
    }
}

/// The store's words for a bucket or container that does not exist (S3 and GCS XML
/// `NoSuchBucket`, GCS JSON's sentence, Azure `ContainerNotFound`).
fn bucket_missing(text: &str) -> bool {
    ["NoSuchBucket", "The specified bucket does not exist", "ContainerNotFound"]
        .iter()
        .any(|mark| text.contains(mark))
}

/// An HTTP status no retry will pass, and what kind it is; None for the kinds the
/// contract has (404, 409, 412, 304) and for the transient ones (408, 429, 5xx but 501).
fn permanent_status(code: u16, body: &str, call: Call) -> Option<StoreErrorKind> {
    match code {
        _ if bucket_missing(body) => Some(StoreErrorKind::BucketNotFound),
        401 => Some(StoreErrorKind::Unauthenticated),
        403 if credentials_refused(body) => Some(StoreErrorKind::Unauthenticated),
        403 => Some(StoreErrorKind::PermissionDenied),
        405 | 501 => (!call.optional()).then_some(StoreErrorKind::Unsupported),
        304 | 404 | 408 | 409 | 412 | 429 => None,
        // S3's "RequestTimeout": the request body came too slowly; worth another try.
        400 if body.contains("RequestTimeout") => None,
        300..=499 => Some(StoreErrorKind::Rejected),
        _ => None,
    }
}

/// Map an object_store error the adapter found transient, or one of the contract's
/// outcomes, for a call of kind `call`.
fn map_store_error(e: &object_store::Error, call: Call) -> BlobError {
    use object_store::Error as E;
    let mapped = match e {
        E::NotFound { .. } => BlobError::NotFound,
        E::AlreadyExists { .. } => match call {
            // object_store also reports S3's 409 ConditionalRequestConflict (a concurrent
            // conditional request; ours did not happen) as AlreadyExists.
            Call::Create if chain_status(e) == Some(409) => BlobError::Unavailable,
            Call::Create => BlobError::AlreadyExists,
            // A 409 on a conditional write: a concurrent conditional request; ours did not
            // happen, and asking again is safe.
            Call::Rewrite | Call::Delete | Call::Read => BlobError::Unavailable,
        },
        E::Precondition { .. } | E::NotModified { .. } => match call {
            Call::Create => BlobError::AlreadyExists,
            Call::Rewrite | Call::Delete | Call::Read => BlobError::PreconditionFailed,
        },
        // Reached only for a rewrite or delete (a capability the backend lacks).
        E::NotSupported { .. } | E::NotImplemented { .. } | E::InvalidPath { .. } => BlobError::Unsupported,
        _ => classify(e, call),
    };
    if matches!(mapped, BlobError::Timeout | BlobError::Unavailable | BlobError::Throttled) {
        tracing::debug!(error = %e, ?mapped, "store error");
    }
    mapped
}

/// A failure that is not one of object_store's typed kinds: read the HTTP status or the
/// transport failure from its chain of sources.
fn classify(e: &(dyn StdError + 'static), call: Call) -> BlobError {
    if let Some(code) = chain_status(e) {
        return map_status(code, &e.to_string());
    }
    // object_store's HTTP client is built only with a cloud backend.
    #[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
    if let Some(kind) = chain_transport(e) {
        return map_transport(kind, call.writes());
    }
    // Unknown: a write may have happened.
    if call.writes() {
        BlobError::Timeout
    } else {
        BlobError::Unavailable
    }
}

/// The kind of the first transport failure in the error's chain of sources.
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
fn chain_transport(e: &(dyn StdError + 'static)) -> Option<HttpErrorKind> {
    let mut source: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(http) = err.downcast_ref::<HttpError>() {
            return Some(http.kind());
        }
        source = err.source();
    }
    None
}

/// The first HTTP status named anywhere in the error's chain of sources.
fn chain_status(e: &(dyn StdError + 'static)) -> Option<u16> {
    let mut source: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(code) = status_in(&err.to_string()) {
            return Some(code);
        }
        source = err.source();
    }
    None
}

/// object_store reports a refused request as "... status code: 429 Too Many Requests:
/// <body>"; its error type with the status is not public.
fn status_in(text: &str) -> Option<u16> {
    const MARK: &str = "status code: ";
    let at = text.find(MARK)? + MARK.len();
    let digits = text.get(at..at + 3)?;
    digits.bytes().all(|b| b.is_ascii_digit()).then(|| digits.parse().ok()).flatten()
}

/// The contract's kind of a status [`permanent_status`] did not claim.
fn map_status(code: u16, body: &str) -> BlobError {
    match code {
        404 => BlobError::NotFound,
        412 => BlobError::PreconditionFailed,
        429 => BlobError::Throttled,
        // S3 throttles with 503 SlowDown.
        503 if body.contains("SlowDown") => BlobError::Throttled,
        // The server gave up waiting for the request: it may have been applied.
        408 | 504 => BlobError::Timeout,
        400 if body.contains("RequestTimeout") => BlobError::Timeout,
        500..=599 => BlobError::Unavailable,
        // 409 on a conditional request: a concurrent one; ours did not happen.
        409 => BlobError::Unavailable,
        _ => {
            tracing::error!(status = code, body, "the store refused the request");
            BlobError::Unavailable
        }
    }
}

#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
fn map_transport(kind: HttpErrorKind, writes: bool) -> BlobError {
    match kind {
        // Never sent.
        HttpErrorKind::Connect => BlobError::Unavailable,
        // Sent, or possibly sent, and unanswered.
        HttpErrorKind::Timeout | HttpErrorKind::Interrupted | HttpErrorKind::Request => BlobError::Timeout,
        _ if writes => BlobError::Timeout,
        _ => BlobError::Unavailable,
    }
}

#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
fn map_http_error(e: &HttpError, writes: bool) -> CallFailure {
    tracing::debug!(error = %e, kind = ?e.kind(), "http error");
    failure(map_transport(e.kind(), writes), full_message(e))
}

// Every backend: the tests build the stores they judge.
#[cfg(all(test, feature = "s3", feature = "gcs", feature = "azure", feature = "fs"))]
mod tests {
    use super::*;

    #[test]
    fn status_is_read_from_object_stores_message() {
        let text = "Generic S3 error: Error performing PUT http://h/b/k in 2ms - Server returned non-2xx status code: 429 Too Many Requests: status code: 500";
        assert_eq!(status_in(text), Some(429));
        assert_eq!(status_in("no status here"), None);
        assert_eq!(status_in("status code: 5x"), None);
    }

    #[test]
    fn statuses_map_to_the_kernels_kinds() {
        assert_eq!(map_status(429, ""), BlobError::Throttled);
        assert_eq!(map_status(503, "<Code>SlowDown</Code>"), BlobError::Throttled);
        assert_eq!(map_status(503, ""), BlobError::Unavailable);
        assert_eq!(map_status(500, ""), BlobError::Unavailable);
        assert_eq!(map_status(504, ""), BlobError::Timeout);
        assert_eq!(map_status(412, ""), BlobError::PreconditionFailed);
        assert_eq!(map_status(404, ""), BlobError::NotFound);
    }

    #[test]
    fn a_write_that_may_have_been_sent_is_a_timeout() {
        assert_eq!(map_transport(HttpErrorKind::Connect, true), BlobError::Unavailable);
        for kind in [HttpErrorKind::Timeout, HttpErrorKind::Interrupted, HttpErrorKind::Request] {
            assert_eq!(map_transport(kind, true), BlobError::Timeout);
        }
        assert_eq!(map_transport(HttpErrorKind::Unknown, true), BlobError::Timeout);
        assert_eq!(map_transport(HttpErrorKind::Unknown, false), BlobError::Unavailable);
    }

    #[test]
    fn keys_that_are_not_exact_paths_are_refused() {
        assert!(path_of("w/log/0000000000000001").is_ok());
        for key in ["w/log/", "/w", "w//x", "w/../x"] {
            let f = path_of(key).unwrap_err();
            assert_eq!(f.error, BlobError::Unsupported, "{key}");
            assert_eq!(f.permanent, Some(StoreErrorKind::InvalidPath), "{key}");
        }
    }

    #[test]
    fn every_valid_prefix_makes_keys_that_are_exact_paths() {
        for prefix in ["", "w", "worlds/a", "x/.hidden/y", "a b/ü"] {
            crate::error::validate_prefix(prefix).unwrap();
            let keys = slotlog_kernel::format::Keys::new(prefix);
            for key in [keys.marker(), keys.slot(1), keys.checkpoint(1)] {
                assert!(path_of(&key).is_ok(), "{key:?}");
            }
        }
    }

    /// An error as object_store's S3 client builds one for a refused request.
    fn refused(status: &str, body: &str) -> String {
        format!("Error performing GET http://127.0.0.1:9/bucket/w/marker in 2ms - Server returned non-2xx status code: {status}: {body}")
    }

    fn generic(text: String) -> object_store::Error {
        object_store::Error::Generic { store: "S3", source: Box::new(std::io::Error::other(text)) }
    }

    fn permanence(e: &object_store::Error, call: Call) -> Option<StoreErrorKind> {
        explain(e, call).permanent
    }

    #[test]
    fn permission_denied_is_permanent() {
        let typed = object_store::Error::PermissionDenied {
            path: "w/marker".into(),
            source: Box::new(std::io::Error::other(refused("403 Forbidden", "<Code>AccessDenied</Code>"))),
        };
        let f = explain(&typed, Call::Read);
        assert_eq!(f.permanent, Some(StoreErrorKind::PermissionDenied));
        assert_eq!(f.status, Some(403));
        assert!(f.message.contains("AccessDenied"), "the store's own words: {}", f.message);
        // A listing's 403 comes back as a generic error with the status in its text.
        let listed = generic(refused("403 Forbidden", "<Code>AccessDenied</Code>"));
        assert_eq!(permanence(&listed, Call::Read), Some(StoreErrorKind::PermissionDenied));
        assert_eq!(permanence(&listed, Call::Delete), Some(StoreErrorKind::PermissionDenied));
    }

    #[test]
    fn s3s_403_for_credentials_it_does_not_accept_is_unauthenticated() {
        for code in ["InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken"] {
            let body = format!("<Error><Code>{code}</Code></Error>");
            let typed = object_store::Error::PermissionDenied {
                path: "w/marker".into(),
                source: Box::new(std::io::Error::other(refused("403 Forbidden", &body))),
            };
            assert_eq!(permanence(&typed, Call::Read), Some(StoreErrorKind::Unauthenticated), "{code}");
            let listed = generic(refused("403 Forbidden", &body));
            assert_eq!(permanence(&listed, Call::Read), Some(StoreErrorKind::Unauthenticated), "{code}");
        }
    }

    #[test]
    fn a_credential_fetch_from_instance_metadata_says_no_credentials_were_configured() {
        let e = generic(
            "Error performing PUT http://169.254.169.254/latest/api/token in 1s: connection refused".into(),
        );
        let f = explain(&e, Call::Read);
        assert!(f.message.starts_with("no credentials in the environment"), "{}", f.message);
        assert!(f.error.is_transient(), "IMDS may be slow on a cloud host: retried within the budget");
    }

    #[test]
    fn the_backend_is_told_by_the_stores_name_and_cloud_stores_are_refused() {
        use object_store::memory::InMemory;
        assert!(matches!(detect_backend(&InMemory::new()), Ok(Backend::Memory)));
        let dir = std::env::temp_dir();
        let local = object_store::local::LocalFileSystem::new_with_prefix(&dir).unwrap();
        assert!(matches!(detect_backend(&local), Ok(Backend::Local)));
        let prefixed = object_store::prefix::PrefixStore::new(InMemory::new(), "p");
        assert!(matches!(detect_backend(&prefixed), Ok(Backend::Other)));
        install_crypto_provider();
        let s3 = object_store::aws::AmazonS3Builder::new()
            .with_bucket_name("b")
            .with_region("us-east-1")
            .with_access_key_id("k")
            .with_secret_access_key("s")
            .build()
            .unwrap();
        let refused = detect_backend(&s3).unwrap_err();
        assert_eq!((refused.store.as_str(), refused.backend), ("AmazonS3(b)", "s3"));
        let throttled = object_store::throttle::ThrottledStore::new(s3, Default::default());
        assert_eq!(detect_backend(&throttled).unwrap_err().backend, "s3");
    }

    #[test]
    fn unauthenticated_is_permanent() {
        let typed = object_store::Error::Unauthenticated {
            path: "w/marker".into(),
            source: Box::new(std::io::Error::other(refused("401 Unauthorized", ""))),
        };
        assert_eq!(permanence(&typed, Call::Create), Some(StoreErrorKind::Unauthenticated));
        let listed = generic(refused("401 Unauthorized", "<Code>InvalidAccessKeyId</Code>"));
        assert_eq!(permanence(&listed, Call::Read), Some(StoreErrorKind::Unauthenticated));
    }

    #[test]
    fn a_missing_bucket_is_permanent_not_a_missing_object() {
        let get = object_store::Error::NotFound {
            path: "w/marker".into(),
            source: Box::new(std::io::Error::other(refused("404 Not Found", "<Code>NoSuchBucket</Code>"))),
        };
        let f = explain(&get, Call::Read);
        assert_eq!(f.permanent, Some(StoreErrorKind::BucketNotFound));
        assert_eq!(f.status, Some(404));
        let list = generic(refused("404 Not Found", "<Error><Code>NoSuchBucket</Code></Error>"));
        assert_eq!(permanence(&list, Call::Read), Some(StoreErrorKind::BucketNotFound));
        let azure = generic(refused("404 The specified container does not exist.", "ContainerNotFound"));
        assert_eq!(permanence(&azure, Call::Create), Some(StoreErrorKind::BucketNotFound));
        // A missing object stays the contract's NotFound.
        let key = object_store::Error::NotFound {
            path: "w/marker".into(),
            source: Box::new(std::io::Error::other(refused("404 Not Found", "<Code>NoSuchKey</Code>"))),
        };
        let f = explain(&key, Call::Read);
        assert_eq!((f.error, f.permanent), (BlobError::NotFound, None));
    }

    #[test]
    fn an_unsupported_create_or_read_is_permanent() {
        let not_implemented = object_store::Error::NotImplemented {
            operation: "put_opts Create".into(),
            implementer: "X".into(),
        };
        assert_eq!(permanence(&not_implemented, Call::Create), Some(StoreErrorKind::Unsupported));
        let not_supported =
            object_store::Error::NotSupported { source: Box::new(std::io::Error::other("no")) };
        assert_eq!(permanence(&not_supported, Call::Read), Some(StoreErrorKind::Unsupported));
        let status_501 = generic(refused("501 Not Implemented", "<Code>NotImplemented</Code>"));
        assert_eq!(permanence(&status_501, Call::Create), Some(StoreErrorKind::Unsupported));
        let status_405 = generic(refused("405 Method Not Allowed", ""));
        assert_eq!(permanence(&status_405, Call::Read), Some(StoreErrorKind::Unsupported));
    }

    #[test]
    fn an_unsupported_rewrite_or_delete_is_the_contracts_unsupported() {
        // A backend may lack them; the kernel hears `Unsupported` and goes on.
        let not_implemented = object_store::Error::NotImplemented {
            operation: "put_opts Update".into(),
            implementer: "Local".into(),
        };
        for call in [Call::Rewrite, Call::Delete] {
            let f = explain(&not_implemented, call);
            assert_eq!((f.error, f.permanent), (BlobError::Unsupported, None), "{call:?}");
        }
        assert_eq!(permanent_status(501, "", Call::Delete), None);
    }

    #[test]
    fn an_invalid_path_is_permanent() {
        let e = object_store::Error::InvalidPath {
            source: object_store::path::Error::EmptySegment { path: "a//b".into() },
        };
        assert_eq!(permanence(&e, Call::Read), Some(StoreErrorKind::InvalidPath));
    }

    #[test]
    fn other_client_errors_and_bare_redirects_are_permanent() {
        let region = generic(refused("400 Bad Request", "<Code>AuthorizationHeaderMalformed</Code>"));
        assert_eq!(permanence(&region, Call::Read), Some(StoreErrorKind::Rejected));
        let redirect = generic(
            "Received redirect without LOCATION, this normally indicates an incorrectly configured region"
                .into(),
        );
        assert_eq!(permanence(&redirect, Call::Read), Some(StoreErrorKind::Rejected));
    }

    #[test]
    fn the_contracts_own_outcomes_are_not_permanent() {
        for (status, call, kind) in [
            ("404 Not Found", Call::Read, BlobError::NotFound),
            ("412 Precondition Failed", Call::Rewrite, BlobError::PreconditionFailed),
            ("409 Conflict", Call::Create, BlobError::Unavailable),
        ] {
            let f = explain(&generic(refused(status, "")), call);
            assert_eq!((f.error, f.permanent), (kind, None), "{status}");
        }
    }

    #[test]
    fn timeouts_5xx_429_and_connection_errors_are_transient() {
        for (status, body, kind) in [
            ("500 Internal Server Error", "", BlobError::Unavailable),
            ("502 Bad Gateway", "", BlobError::Unavailable),
            ("503 Service Unavailable", "<Code>SlowDown</Code>", BlobError::Throttled),
            ("429 Too Many Requests", "", BlobError::Throttled),
            ("408 Request Timeout", "", BlobError::Timeout),
            ("504 Gateway Timeout", "", BlobError::Timeout),
            ("400 Bad Request", "<Code>RequestTimeout</Code>", BlobError::Timeout),
        ] {
            let f = explain(&generic(refused(status, body)), Call::Create);
            assert_eq!((f.error, f.permanent), (kind, None), "{status}");
            assert!(f.error.is_transient(), "{status}");
        }
        for (kind, expected) in [
            (HttpErrorKind::Connect, BlobError::Unavailable),
            (HttpErrorKind::Timeout, BlobError::Timeout),
            (HttpErrorKind::Interrupted, BlobError::Timeout),
        ] {
            let e = object_store::Error::Generic {
                store: "S3",
                source: Box::new(HttpError::new(kind, std::io::Error::other("connection refused"))),
            };
            let f = explain(&e, Call::Create);
            assert_eq!((f.error, f.permanent), (expected, None), "{kind:?}");
            assert!(f.message.contains("connection refused"), "{}", f.message);
        }
    }
}
