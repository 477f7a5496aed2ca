//! The store's clock in a create's answer (SPEC 10.15, "Where `landed` comes from").
//!
//! After every slot and checkpoint create the writer needs a store time that bounds when
//! the object landed. object_store's `PutResult` carries none, so on its own the driver
//! reads the new object's metadata, one round trip more per slot. Every HTTP store
//! answers with a `Date` header, though: the store's clock when it answered, after the
//! object was made. [`DatedConnector`] wraps object_store's HTTP client and puts each
//! response's `Date` in the response's extensions as [`AnsweredAt`]; object_store hands
//! a PUT's response extensions back in `PutResult::extensions`, where the driver reads
//! it. The kernel judges the landing at the end of that second
//! (`WriteTime::Answered`), and the store clock learns the second itself.

use object_store::PutResult;

/// The store's clock when it answered a write, in microseconds since the Unix epoch,
/// whole seconds (an HTTP `Date`). A store of one's own that knows when its creates land
/// may put it in `PutResult::extensions`: the driver then skips the metadata read after
/// each create. It must be the store's clock, never the caller's (SPEC 10.15).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AnsweredAt(pub u64);

impl AnsweredAt {
    /// The time a write's answer carries, if its store put one there.
    pub(crate) fn of(put: &PutResult) -> Option<u64> {
        put.extensions.get::<AnsweredAt>().map(|at| at.0)
    }
}

#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub use http::DatedConnector;

#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
mod http {
    use super::AnsweredAt;
    use object_store::client::{
        HttpClient, HttpConnector, HttpError, HttpRequest, HttpResponse, HttpService, ReqwestConnector,
    };
    use object_store::ClientOptions;
    use std::time::UNIX_EPOCH;

    /// object_store's HTTP client, with each response's `Date` kept as [`AnsweredAt`].
    /// `s3_store`, `gcs_store` and `azure_store` install it over reqwest; wrap a
    /// connector of your own with [`DatedConnector::new`] to keep the saving.
    #[derive(Debug)]
    pub struct DatedConnector<C = ReqwestConnector>(C);

    impl DatedConnector {
        /// object_store's reqwest client, with each answer's `Date` kept.
        pub fn reqwest() -> Self {
            DatedConnector(ReqwestConnector::default())
        }
    }

    impl<C: HttpConnector> DatedConnector<C> {
        /// `connector`'s clients, with each answer's `Date` kept.
        pub fn new(connector: C) -> Self {
            DatedConnector(connector)
        }
    }

    impl<C: HttpConnector> HttpConnector for DatedConnector<C> {
        fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
            Ok(HttpClient::new(Dated(self.0.connect(options)?)))
        }
    }

    #[derive(Debug)]
    struct Dated(HttpClient);

    #[async_trait::async_trait]
    impl HttpService for Dated {
        async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
            let mut response = self.0.execute(request).await?;
            if let Some(at) = date_of(&response) {
                response.extensions_mut().insert(at);
            }
            Ok(response)
        }
    }

    /// The response's `Date`; none when it is missing or not an HTTP date.
    fn date_of(response: &HttpResponse) -> Option<AnsweredAt> {
        let text = response.headers().get(::http::header::DATE)?.to_str().ok()?;
        let since_epoch = httpdate::parse_http_date(text).ok()?.duration_since(UNIX_EPOCH).ok()?;
        Some(AnsweredAt(u64::try_from(since_epoch.as_micros()).ok()?))
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use object_store::client::HttpResponseBody;

        fn answered(date: Option<&str>) -> Option<AnsweredAt> {
            let mut response = ::http::Response::new(HttpResponseBody::from(bytes::Bytes::new()));
            if let Some(date) = date {
                response.headers_mut().insert(::http::header::DATE, date.parse().unwrap());
            }
            date_of(&response)
        }

        #[test]
        fn a_date_header_is_the_stores_second_in_microseconds() {
            // RFC 9110's example date: 1994-11-06 08:49:37 UTC.
            assert_eq!(
                answered(Some("Sun, 06 Nov 1994 08:49:37 GMT")),
                Some(AnsweredAt(784_111_777_000_000))
            );
        }

        #[test]
        fn a_missing_or_malformed_date_gives_no_time() {
            assert_eq!(answered(None), None);
            assert_eq!(answered(Some("yesterday")), None);
        }
    }
}
