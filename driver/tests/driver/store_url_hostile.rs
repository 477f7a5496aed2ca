//! Hostile store URLs (issue 13): the driver's URL grammar, fed random strings and
//! mutated valid URLs, answers with a location or a typed [`StoreUrlError`], never a
//! panic; what it answers keeps the grammar's promises (a bucket is never empty, a prefix
//! has no leading or trailing `/`, a local directory is absolute); and a valid URL made
//! from parts reads back as those parts. `fuzz/` has the same judgement as a fuzz target.

use proptest::prelude::*;
use slotlog::{parse_store_url, StoreLocation, StoreUrlError};

/// Characters that mean something to a URL parser, and a few that mean nothing.
const HOSTILE: &[char] = &[
    '/', ':', '@', '%', '?', '#', '[', ']', '\\', ' ', '\0', '\t', '.', '~', 'é', '漢', '+', '=', '&', '2',
    'F',
];

/// What `parse_store_url` must say of `url`: a location keeping the grammar's promises,
/// or an error; the same answer twice.
fn judge(url: &str) -> Result<(), TestCaseError> {
    let first = parse_store_url(url);
    let again = parse_store_url(url);
    prop_assert_eq!(format!("{first:?}"), format!("{again:?}"), "two answers for {:?}", url);
    let bare = |prefix: &str| !prefix.starts_with('/') && !prefix.ends_with('/');
    match first {
        Ok(StoreLocation::Memory { prefix }) => prop_assert!(bare(&prefix), "{:?}: prefix {:?}", url, prefix),
        Ok(StoreLocation::Local { dir }) => prop_assert!(dir.is_absolute(), "{:?}: dir {:?}", url, dir),
        Ok(StoreLocation::S3 { bucket, prefix }) | Ok(StoreLocation::Gcs { bucket, prefix }) => {
            prop_assert!(!bucket.is_empty(), "{:?}: no bucket", url);
            prop_assert!(bare(&prefix), "{:?}: prefix {:?}", url, prefix);
        }
        Ok(StoreLocation::Azure { account, container, prefix }) => {
            prop_assert!(!container.is_empty(), "{:?}: no container", url);
            prop_assert!(account.is_none_or(|a| !a.is_empty()), "{:?}: empty account", url);
            prop_assert!(bare(&prefix), "{:?}: prefix {:?}", url, prefix);
        }
        Ok(other) => prop_assert!(false, "{:?}: a location this test does not know: {:?}", url, other),
        Err(error) => {
            // Every error names itself; Display must not panic either.
            let _ = error.to_string();
            if let StoreUrlError::InvalidUrl { url: named, .. } = &error {
                prop_assert_eq!(named.as_str(), url);
            }
        }
    }
    Ok(())
}

fn scheme() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "s3://",
        "s3a://",
        "gs://",
        "memory://",
        "file://",
        "file:///",
        "az://",
        "abfss://",
        "https://",
        "http://",
        "ftp://",
        "S3://",
        "",
    ])
}

fn bucket() -> impl Strategy<Value = String> {
    "[a-z0-9][a-z0-9.-]{1,20}[a-z0-9]"
}

/// Path segments. A segment never starts with a dot: URL parsing removes the dot
/// segments `.` and `..` (RFC 3986), so `s3://b/./x` is `s3://b/x`, which is not the
/// parts it was written with.
fn segments() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[a-zA-Z0-9_~-][a-zA-Z0-9_.~-]{0,9}", 0..4)
}

/// One edit to a URL.
#[derive(Clone, Debug)]
enum Edit {
    Insert(prop::sample::Index, char),
    Delete(prop::sample::Index),
    Replace(prop::sample::Index, char),
    Truncate(prop::sample::Index),
    Repeat(prop::sample::Index),
}

fn edit() -> impl Strategy<Value = Edit> {
    let c = || prop_oneof![prop::sample::select(HOSTILE.to_vec()), any::<char>()];
    let at = any::<prop::sample::Index>;
    prop_oneof![
        (at(), c()).prop_map(|(i, c)| Edit::Insert(i, c)),
        at().prop_map(Edit::Delete),
        (at(), c()).prop_map(|(i, c)| Edit::Replace(i, c)),
        at().prop_map(Edit::Truncate),
        at().prop_map(Edit::Repeat),
    ]
}

fn apply(url: &str, edit: &Edit) -> String {
    let mut chars: Vec<char> = url.chars().collect();
    let n = chars.len();
    match edit {
        Edit::Insert(at, c) => chars.insert(at.index(n + 1), *c),
        Edit::Delete(at) if n > 0 => {
            chars.remove(at.index(n));
        }
        Edit::Replace(at, c) if n > 0 => chars[at.index(n)] = *c,
        Edit::Truncate(at) => chars.truncate(at.index(n + 1)),
        Edit::Repeat(at) if n > 0 => {
            let from = at.index(n);
            let piece: Vec<char> = chars[from..].to_vec();
            chars.extend(piece);
        }
        _ => chars.push('/'),
    }
    chars.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_strings_never_panic_the_url_parser(url in ".{0,80}") {
        judge(&url)?;
    }

    #[test]
    fn mutated_store_urls_are_read_or_refused_never_a_panic(
        scheme in scheme(),
        bucket in bucket(),
        segments in segments(),
        edits in prop::collection::vec(edit(), 1..5),
    ) {
        let mut url = format!("{scheme}{bucket}/{}", segments.join("/"));
        judge(&url)?;
        for e in &edits {
            url = apply(&url, e);
            judge(&url)?;
        }
    }

    #[test]
    fn a_store_url_made_of_parts_reads_back_as_those_parts(
        bucket in bucket(),
        segments in segments(),
        trailing in any::<bool>(),
    ) {
        let prefix = segments.join("/");
        let slash = if trailing && !prefix.is_empty() { "/" } else { "" };
        for scheme in ["s3", "s3a", "gs"] {
            let url = format!("{scheme}://{bucket}/{prefix}{slash}");
            let location = parse_store_url(&url).map_err(|e| TestCaseError::fail(format!("{url}: {e}")))?;
            let expected = match scheme {
                "gs" => StoreLocation::Gcs { bucket: bucket.clone(), prefix: prefix.clone() },
                _ => StoreLocation::S3 { bucket: bucket.clone(), prefix: prefix.clone() },
            };
            prop_assert_eq!(location, expected, "{}", url);
        }
    }
}
