//! The driver's store URL grammar, fed the fuzzer's strings: a location that keeps the
//! grammar's promises (a bucket is never empty, a prefix has no leading or trailing `/`,
//! a local directory is absolute) or a typed error, never a panic, and the same answer
//! twice.
#![no_main]

use libfuzzer_sys::fuzz_target;
use slotlog::{parse_store_url, StoreLocation};

fuzz_target!(|bytes: &[u8]| {
    let Ok(url) = std::str::from_utf8(bytes) else { return };
    let answer = parse_store_url(url);
    assert_eq!(format!("{answer:?}"), format!("{:?}", parse_store_url(url)), "two answers");
    let bare = |prefix: &str| !prefix.starts_with('/') && !prefix.ends_with('/');
    match answer {
        Ok(StoreLocation::Memory { prefix }) => assert!(bare(&prefix)),
        Ok(StoreLocation::Local { dir }) => assert!(dir.is_absolute()),
        Ok(StoreLocation::S3 { bucket, prefix }) | Ok(StoreLocation::Gcs { bucket, prefix }) => {
            assert!(!bucket.is_empty());
            assert!(bare(&prefix));
        }
        Ok(StoreLocation::Azure { account, container, prefix }) => {
            assert!(!container.is_empty());
            assert!(account.is_none_or(|a| !a.is_empty()));
            assert!(bare(&prefix));
        }
        Ok(other) => panic!("a location this target does not know: {other:?}"),
        Err(error) => {
            let _ = error.to_string();
        }
    }
});
