//! Normalized document paths (SPEC 1.1).

use core::fmt;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A path segment longer than this is invalid.
pub const SEGMENT_BYTES_MAX: usize = 255;
/// A normalized path longer than this is invalid.
pub const PATH_BYTES_MAX: usize = 1024;

/// Why a raw path is not a document path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum PathProblem {
    /// No segments.
    #[error("path without segments")]
    Empty,
    /// A `.` or `..` segment.
    #[error("path with a . or .. segment")]
    DotSegment,
    /// A control character (below 0x20, or 0x7f).
    #[error("path with a control character")]
    ControlCharacter,
    /// A segment longer than [`SEGMENT_BYTES_MAX`].
    #[error("path segment longer than {} bytes", SEGMENT_BYTES_MAX)]
    SegmentTooLong,
    /// A normalized path longer than [`PATH_BYTES_MAX`].
    #[error("path longer than {} bytes", PATH_BYTES_MAX)]
    TooLong,
}

/// Why a decoded path is refused: a path in an object must already be normalized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum PathDecodeError {
    /// Not a valid path.
    #[error("{0}")]
    Invalid(PathProblem),
    /// Valid, but not in the form normalization gives.
    #[error("path is not normalized")]
    NotNormalized,
}

/// A normalized path: `/` then non-empty segments joined by `/`. Only [`Path::parse`] and
/// decoding (which re-checks) make one, so every `Path` in the kernel is normalized.
///
/// Shared, not owned: a path is copied into the document map, its entry, the body index,
/// receipts, overlays and the ledger, and each copy of a `String` was an allocation (about
/// 430,000 in a one-minute simulated run); a clone of an `Arc` counts a reference.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Path(Arc<str>);

/// Byte order (the `str` order `Borrow<str>` promises), compared eight bytes at a time as
/// big-endian words: paths key the documents, the overlays and the ledger, and most share
/// a long prefix, so a `memcmp` call per comparison was most of a B-tree search.
impl Ord for Path {
    #[inline]
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        bytes_cmp(self.0.as_bytes(), other.0.as_bytes())
    }
}

impl PartialOrd for Path {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Lexicographic byte order, as `<[u8]>::cmp`, without a library call.
#[inline]
fn bytes_cmp(a: &[u8], b: &[u8]) -> core::cmp::Ordering {
    let common = a.len().min(b.len());
    let (a_head, b_head) = (&a[..common], &b[..common]);
    let mut at = 0;
    while at + 8 <= common {
        let x = u64::from_be_bytes(a_head[at..at + 8].try_into().expect("8 bytes"));
        let y = u64::from_be_bytes(b_head[at..at + 8].try_into().expect("8 bytes"));
        if x != y {
            return x.cmp(&y);
        }
        at += 8;
    }
    while at < common {
        if a_head[at] != b_head[at] {
            return a_head[at].cmp(&b_head[at]);
        }
        at += 1;
    }
    a.len().cmp(&b.len())
}

/// As the string it is, borrowed: `serde(into)` cloned every path it encoded.
impl Serialize for Path {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

/// Decoded from a string, borrowed where the decoder can lend one, with the checks of
/// `TryFrom<String>`: only the checked path is allocated, once.
impl<'de> Deserialize<'de> for Path {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Path, D::Error> {
        struct PathVisitor;
        impl serde::de::Visitor<'_> for PathVisitor {
            type Value = Path;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Path, E> {
                Path::decode(s).map_err(E::custom)
            }
        }
        deserializer.deserialize_str(PathVisitor)
    }
}

impl Path {
    /// Normalizes a raw client path: drops empty segments, joins the rest under `/`.
    pub fn parse(raw: &str) -> Result<Path, PathProblem> {
        // Clients nearly always send a path already normalized: one pass over its bytes
        // finds it so, and its problems in the order the steps below would (a `Vec` of
        // segments and a second copy were 1.7% of `run single`, for every write).
        if let Some(found) = Scan::of(raw) {
            return match found.problem() {
                None if raw.len() > PATH_BYTES_MAX => Err(PathProblem::TooLong),
                None => Ok(Path(raw.into())),
                Some(problem) => Err(problem),
            };
        }
        Path::normalize(raw)
    }

    /// [`Path::parse`] of any raw path, step by step.
    fn normalize(raw: &str) -> Result<Path, PathProblem> {
        let segments: Vec<&str> = raw.split('/').filter(|s| !s.is_empty()).collect();
        if segments.is_empty() {
            return Err(PathProblem::Empty);
        }
        if segments.iter().any(|s| *s == "." || *s == "..") {
            return Err(PathProblem::DotSegment);
        }
        if raw.chars().any(|c| (c as u32) < 0x20 || c as u32 == 0x7f) {
            return Err(PathProblem::ControlCharacter);
        }
        if segments.iter().any(|s| s.len() > SEGMENT_BYTES_MAX) {
            return Err(PathProblem::SegmentTooLong);
        }
        let mut normalized = String::with_capacity(raw.len() + 1);
        for s in &segments {
            normalized.push('/');
            normalized.push_str(s);
        }
        if normalized.len() > PATH_BYTES_MAX {
            return Err(PathProblem::TooLong);
        }
        Ok(Path(normalized.into()))
    }

    /// The normalized path.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when `self` equals `prefix` or lies below it.
    pub fn is_under(&self, prefix: &Path) -> bool {
        self.0 == prefix.0 || self.is_descendant_of(prefix)
    }

    /// True when `self` lies strictly below `ancestor`.
    pub fn is_descendant_of(&self, ancestor: &Path) -> bool {
        self.0.len() > ancestor.0.len()
            && self.0.starts_with(&*ancestor.0)
            && self.0.as_bytes()[ancestor.0.len()] == b'/'
    }

    /// Proper ancestors, shortest first: `/a/b/c` gives `/a`, `/a/b`.
    pub fn ancestors(&self) -> impl Iterator<Item = &str> {
        let s = &*self.0;
        // `/` is ASCII: every index it is at is a char boundary. A byte scan, not a
        // `char` searcher: topology walks these for every document created.
        s.bytes().enumerate().filter(|&(i, b)| b == b'/' && i > 0).map(move |(i, _)| &s[..i])
    }

    /// `self + "/"`: every descendant starts with it, and sorts at or after it.
    pub fn descendant_start(&self) -> String {
        let mut s = String::with_capacity(self.0.len() + 1);
        s.push_str(&self.0);
        s.push('/');
        s
    }
}

impl TryFrom<String> for Path {
    type Error = PathDecodeError;
    fn try_from(s: String) -> Result<Path, Self::Error> {
        Path::decode(&s)
    }
}

impl Path {
    /// A path as an object holds it: it must be normalized already.
    pub(crate) fn decode(s: &str) -> Result<Path, PathDecodeError> {
        // Paths in objects are normalized: check that in one pass over the bytes, without
        // building the normalized form again (a cold start decodes a million of them, and
        // the checker every path of every slot).
        if let Some(found) = Scan::of(s) {
            return match found.problem() {
                None if s.len() > PATH_BYTES_MAX => Err(PathDecodeError::Invalid(PathProblem::TooLong)),
                None => Ok(Path(s.into())),
                Some(problem) => Err(PathDecodeError::Invalid(problem)),
            };
        }
        match Path::parse(s) {
            Ok(p) if &*p.0 == s => Ok(p),
            Ok(_) => Err(PathDecodeError::NotNormalized),
            Err(problem) => Err(PathDecodeError::Invalid(problem)),
        }
    }
}

/// What one pass over a path of normalized shape found: `/` then non-empty segments
/// joined by `/`, the form `Path::parse` gives, its problems aside.
struct Scan {
    dot_segment: bool,
    control_character: bool,
    segment_too_long: bool,
}

impl Scan {
    /// None when `s` is not of normalized shape (empty segments, no leading `/`, or a
    /// trailing one).
    fn of(s: &str) -> Option<Scan> {
        let bytes = s.as_bytes();
        if bytes.len() < 2 || bytes[0] != b'/' || bytes[bytes.len() - 1] == b'/' {
            return None;
        }
        // A byte below 0x80 is a whole character, and no byte of a longer one is below
        // 0x80; `/` is not a control character. One pass for those, one for the segments:
        // a loop that indexed each byte and tested both (with the bounds and overflow
        // checks our builds keep) was 1.5% of a simulated run, which decodes every path of
        // every slot it reads.
        let control_character = bytes.iter().any(|&b| b < 0x20 || b == 0x7f);
        let mut found = Scan { dot_segment: false, control_character, segment_too_long: false };
        for segment in bytes[1..].split(|&b| b == b'/') {
            if segment.is_empty() {
                return None;
            }
            found.dot_segment |= segment == b"." || segment == b"..";
            found.segment_too_long |= segment.len() > SEGMENT_BYTES_MAX;
        }
        Some(found)
    }

    /// The first problem `Path::parse` would find, in its order.
    fn problem(&self) -> Option<PathProblem> {
        if self.dot_segment {
            Some(PathProblem::DotSegment)
        } else if self.control_character {
            Some(PathProblem::ControlCharacter)
        } else if self.segment_too_long {
            Some(PathProblem::SegmentTooLong)
        } else {
            None
        }
    }
}

impl From<Path> for String {
    fn from(p: Path) -> String {
        p.0.to_string()
    }
}

impl core::borrow::Borrow<str> for Path {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Path {
        Path::parse(s).unwrap()
    }

    #[test]
    fn paths_order_as_their_bytes_do() {
        // Equal and differing words, tails of every length, prefixes, bytes above 0x7f.
        let raw = [
            "/a",
            "/a/b",
            "/a.md",
            "/a/",
            "/docs/00000001.md",
            "/docs/00000001.md/c.md",
            "/docs/00000002.md",
            "/docs/0000000",
            "/docs/00000001",
            "/docs/00000001.m",
            "/docs/00000010.md",
            "/ro/7.md",
            "/é",
            "/e",
            "/ab",
            "/abcdefg",
            "/abcdefgh",
            "/abcdefghi",
            "/abcdefgi",
            "/abcdefgh/ijklmnop",
            "/abcdefgh/ijklmnoq",
        ];
        let paths: Vec<Path> = raw.iter().map(|r| p(r)).collect();
        for a in &paths {
            for b in &paths {
                assert_eq!(a.cmp(b), a.as_str().cmp(b.as_str()), "{a} against {b}");
                assert_eq!(a.partial_cmp(b), Some(a.as_str().cmp(b.as_str())));
            }
        }
    }

    #[test]
    fn normalization_drops_empty_segments() {
        assert_eq!(p("notes//a.md/").as_str(), "/notes/a.md");
        assert_eq!(p("a").as_str(), "/a");
    }

    #[test]
    fn problems_are_reported_in_spec_order() {
        assert_eq!(Path::parse("//"), Err(PathProblem::Empty));
        assert_eq!(Path::parse("/a/../b\u{1}"), Err(PathProblem::DotSegment));
        assert_eq!(Path::parse("/a\u{7f}"), Err(PathProblem::ControlCharacter));
        let long = "x".repeat(256);
        assert_eq!(Path::parse(&format!("/{long}\u{1}")), Err(PathProblem::ControlCharacter));
        assert_eq!(Path::parse(&format!("/{long}")), Err(PathProblem::SegmentTooLong));
        assert!(Path::parse(&format!("/{}", "x".repeat(255))).is_ok());
    }

    #[test]
    fn a_path_of_1024_bytes_is_valid_and_1025_is_not() {
        let seg = "y".repeat(200);
        let mut s = String::new();
        while s.len() + 201 <= 1024 {
            s.push('/');
            s.push_str(&seg);
        }
        let pad = 1024 - s.len() - 1;
        s.push('/');
        s.push_str(&"z".repeat(pad));
        assert_eq!(s.len(), 1024);
        assert!(Path::parse(&s).is_ok());
        s.push('z');
        assert_eq!(Path::parse(&s), Err(PathProblem::TooLong));
    }

    #[test]
    fn ancestry_needs_a_segment_boundary() {
        assert!(p("/a.md/b.md").is_descendant_of(&p("/a.md")));
        assert!(!p("/a.mdx").is_descendant_of(&p("/a.md")));
        assert!(p("/a.md").is_under(&p("/a.md")));
        let abc = p("/a/b/c");
        let anc: Vec<&str> = abc.ancestors().collect();
        assert_eq!(anc, vec!["/a", "/a/b"]);
    }

    #[test]
    fn decoding_refuses_a_path_that_is_not_normalized() {
        assert_eq!(Path::try_from("/a//b".to_string()), Err(PathDecodeError::NotNormalized));
        assert_eq!(
            Path::try_from("/a/..".to_string()),
            Err(PathDecodeError::Invalid(PathProblem::DotSegment))
        );
        assert!(Path::try_from("/a/b".to_string()).is_ok());
    }

    /// The raw paths of every kind the tests below judge: normalized and not, with each
    /// problem, alone and together.
    fn cases() -> Vec<String> {
        let long = "x".repeat(256);
        let deep = format!("/{}", vec!["y".repeat(200); 6].join("/"));
        let cases = [
            "/a/b".to_string(),
            "/a/./b".to_string(),
            "/a/..".to_string(),
            "/a\u{1}/..".to_string(),
            "/a\u{7f}".to_string(),
            "/é/ü".to_string(),
            format!("/{long}"),
            format!("/{long}\u{1}"),
            deep,
            "/".to_string(),
            "a/b".to_string(),
            "/a/".to_string(),
            "//a".to_string(),
            "/a//".to_string(),
            "/.".to_string(),
            "/..".to_string(),
            "/.a/..b/.../c.".to_string(),
            format!("/{long}/.."),
            format!("/{long}/a\u{1f}"),
            format!("/a/{long}/b"),
            "/a\u{80}\u{9f}".to_string(),
            format!("/{}", "z".repeat(255)),
            format!("{}/z", "/y".repeat(511)),
            format!("{}/zz", "/y".repeat(511)),
            format!("/{}/", "z".repeat(255)),
        ];
        cases.to_vec()
    }

    #[test]
    fn parsing_a_normalized_path_agrees_with_normalizing_it() {
        for raw in cases() {
            assert_eq!(Path::parse(&raw), Path::normalize(&raw), "{raw:?}");
        }
    }

    #[test]
    fn decoding_a_normalized_path_agrees_with_parsing_it() {
        for raw in cases() {
            let parsed = match Path::parse(&raw) {
                Ok(p) if p.as_str() == raw => Ok(p),
                Ok(_) => Err(PathDecodeError::NotNormalized),
                Err(problem) => Err(PathDecodeError::Invalid(problem)),
            };
            assert_eq!(Path::try_from(raw.clone()), parsed, "{raw:?}");
        }
    }
}
