//! Paths (SPEC 1.1): normalization of a client's raw string, and the "under" and
//! "ancestor" relations that read-only prefixes and topology are stated in.

/// Longest segment, in UTF-8 bytes, a normalized path may hold.
pub const SEGMENT_BYTES_MAX: usize = 255;
/// Longest normalized path, in UTF-8 bytes (including the leading `/`).
pub const PATH_BYTES_MAX: usize = 1024;

/// Why a raw path is invalid. One variant per numbered check of SPEC 1.1, so a
/// disagreement with the kernel names the check that differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum PathProblem {
    /// No segments remain once empty ones are dropped.
    #[error("path without segments")]
    Empty,
    /// A segment is `.` or `..`.
    #[error("path with a . or .. segment")]
    DotSegment,
    /// A character U+0000 to U+001F or U+007F appears.
    #[error("path with a control character")]
    ControlCharacter,
    /// A segment is longer than [`SEGMENT_BYTES_MAX`] bytes.
    #[error("path segment longer than {} bytes", SEGMENT_BYTES_MAX)]
    SegmentTooLong,
    /// The normalized path is longer than [`PATH_BYTES_MAX`] bytes.
    #[error("path longer than {} bytes", PATH_BYTES_MAX)]
    TooLong,
}

/// Normalize a raw client path (SPEC 1.1). Every check runs over the whole path before
/// the next check starts, so the reported problem is the first failing check in SPEC
/// order, not the problem of the first bad segment.
pub fn normalize_path(raw: &str) -> Result<String, PathProblem> {
    if is_normal(raw) {
        return Ok(raw.to_owned());
    }
    normalize_by_segments(raw)
}

/// `raw` is a normalized path already (the clients' usual case), so the checks below
/// would pass and give it back unchanged: one pass over its bytes instead of splitting
/// and joining. A control character is one byte below 0x20 or 0x7F in UTF-8 (no other
/// character's encoding holds such a byte), so bytes are enough.
fn is_normal(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    if bytes.len() < 2 || bytes.len() > PATH_BYTES_MAX || bytes[0] != b'/' {
        return false;
    }
    let mut segment_start = 1;
    for i in 1..=bytes.len() {
        if i < bytes.len() && bytes[i] != b'/' {
            if bytes[i] <= 0x1f || bytes[i] == 0x7f {
                return false;
            }
            continue;
        }
        let segment = &bytes[segment_start..i];
        if segment.is_empty() || segment == b"." || segment == b".." || segment.len() > SEGMENT_BYTES_MAX {
            return false;
        }
        segment_start = i + 1;
    }
    true
}

/// The SPEC's steps as written, for any raw path.
fn normalize_by_segments(raw: &str) -> Result<String, PathProblem> {
    // 1. Split on `/` and drop empty segments.
    let segments: Vec<&str> = raw.split('/').filter(|s| !s.is_empty()).collect();
    // 2. Nothing left.
    if segments.is_empty() {
        return Err(PathProblem::Empty);
    }
    // 3. Dot segments.
    if segments.iter().any(|s| *s == "." || *s == "..") {
        return Err(PathProblem::DotSegment);
    }
    // 4. Control characters. Only `/` was dropped from the raw string, so looking at the
    // segments is the same as looking "anywhere". Exactly U+0000..=U+001F and U+007F, as
    // the SPEC says; the C1 range U+0080..=U+009F is allowed.
    if segments.iter().any(|s| s.chars().any(is_control)) {
        return Err(PathProblem::ControlCharacter);
    }
    // 5. Segment length in UTF-8 bytes.
    if segments.iter().any(|s| s.len() > SEGMENT_BYTES_MAX) {
        return Err(PathProblem::SegmentTooLong);
    }
    // 6. Join, then the total length. Built in one buffer of its final length (a join
    // then a `format!` made two strings and went through the formatter for each path).
    let mut normalized = String::with_capacity(segments.iter().map(|s| s.len() + 1).sum());
    for s in &segments {
        normalized.push('/');
        normalized.push_str(s);
    }
    if normalized.len() > PATH_BYTES_MAX {
        return Err(PathProblem::TooLong);
    }
    Ok(normalized)
}

fn is_control(c: char) -> bool {
    c <= '\u{1f}' || c == '\u{7f}'
}

/// SPEC 1.1: `p` is under `q` when it equals `q` or is a descendant of it. Both are
/// normalized paths.
pub fn is_under(p: &str, q: &str) -> bool {
    p == q || is_ancestor(q, p)
}

/// SPEC 1.1: `q` is an ancestor of `p` when `p` starts with `q` followed by `/`.
pub fn is_ancestor(q: &str, p: &str) -> bool {
    p.len() > q.len() && p.starts_with(q) && p.as_bytes()[q.len()] == b'/'
}

/// Every proper ancestor of the normalized path `p`, shortest first: `/a/b/c` gives
/// `/a`, then `/a/b`. Topology walks these instead of scanning all documents.
pub fn ancestors(p: &str) -> impl Iterator<Item = &str> {
    // `/` is ASCII, so every index it is found at is a char boundary. Index 0 is the
    // leading `/`, which would give the empty string, not a path.
    p.match_indices('/').map(|(i, _)| i).filter(|&i| i > 0).map(move |i| &p[..i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_drops_empty_segments_and_adds_the_leading_slash() {
        assert_eq!(normalize_path("notes//a.md/").unwrap(), "/notes/a.md");
        assert_eq!(normalize_path("notes/a.md").unwrap(), "/notes/a.md");
        assert_eq!(normalize_path("///notes///a.md///").unwrap(), "/notes/a.md");
        assert_eq!(normalize_path("a").unwrap(), "/a");
    }

    #[test]
    fn normalize_keeps_a_normal_path_as_is() {
        assert_eq!(normalize_path("/notes/a.md").unwrap(), "/notes/a.md");
        assert_eq!(normalize_path("/x y/ü/🦀").unwrap(), "/x y/ü/🦀");
    }

    #[test]
    fn path_with_no_segments_is_empty() {
        for raw in ["", "/", "//", "////"] {
            assert_eq!(normalize_path(raw), Err(PathProblem::Empty), "{raw:?}");
        }
    }

    #[test]
    fn dot_segments_are_invalid() {
        for raw in [".", "..", "/a/./b", "/a/../b", "a/..", "./a", "a/b/."] {
            assert_eq!(normalize_path(raw), Err(PathProblem::DotSegment), "{raw:?}");
        }
    }

    #[test]
    fn segments_that_merely_contain_dots_are_valid() {
        assert_eq!(normalize_path("/.../a").unwrap(), "/.../a");
        assert_eq!(normalize_path("/.a/b.").unwrap(), "/.a/b.");
        assert_eq!(normalize_path("/a..b").unwrap(), "/a..b");
    }

    #[test]
    fn control_characters_are_invalid() {
        for raw in ["/a\u{0}b", "/\u{1}", "/a/\u{1f}", "/a\u{7f}", "\n/a", "/a/b\t"] {
            assert_eq!(normalize_path(raw), Err(PathProblem::ControlCharacter), "{raw:?}");
        }
    }

    #[test]
    fn characters_outside_the_control_ranges_are_valid() {
        // Space (U+0020), tilde (U+007E), U+0080 and U+009F are not in the SPEC's ranges.
        for raw in ["/a b", "/a~", "/a\u{80}", "/a\u{9f}", "/\u{a0}"] {
            assert!(normalize_path(raw).is_ok(), "{raw:?}");
        }
    }

    #[test]
    fn segment_of_255_bytes_is_valid_and_256_is_too_long() {
        let ok = "s".repeat(255);
        assert_eq!(normalize_path(&ok).unwrap(), format!("/{ok}"));
        let long = "s".repeat(256);
        assert_eq!(normalize_path(&long), Err(PathProblem::SegmentTooLong));
        assert_eq!(normalize_path(&format!("/a/{long}/b")), Err(PathProblem::SegmentTooLong));
    }

    #[test]
    fn segment_length_counts_utf8_bytes_not_characters() {
        // "é" is two bytes: 127 of them plus one ASCII byte is 255, 128 is 256.
        let ok = format!("{}x", "é".repeat(127));
        assert_eq!(ok.len(), 255);
        assert!(normalize_path(&ok).is_ok());
        let long = "é".repeat(128);
        assert_eq!(long.len(), 256);
        assert_eq!(normalize_path(&long), Err(PathProblem::SegmentTooLong));
    }

    /// A normalized path of exactly `len` bytes built from segments of at most 255 bytes.
    fn path_of_len(len: usize) -> String {
        let mut p = String::new();
        while p.len() < len {
            let room = len - p.len() - 1; // minus the `/`
            p.push('/');
            p.push_str(&"p".repeat(room.min(200)));
        }
        assert_eq!(p.len(), len);
        p
    }

    #[test]
    fn path_of_1024_bytes_is_valid_and_1025_is_too_long() {
        let ok = path_of_len(1024);
        assert_eq!(normalize_path(&ok).unwrap(), ok);
        let long = path_of_len(1025);
        assert_eq!(normalize_path(&long), Err(PathProblem::TooLong));
    }

    #[test]
    fn path_length_is_measured_after_normalization() {
        // Doubled and trailing slashes do not count: the raw string is far longer than
        // 1024 bytes, the normalized one is exactly 1024.
        let ok = path_of_len(1024);
        let raw = format!("{}//////", ok.replace('/', "//"));
        assert!(raw.len() > 1025);
        assert_eq!(normalize_path(&raw).unwrap(), ok);
        // A missing leading slash is added and counts.
        let long = path_of_len(1025);
        assert_eq!(normalize_path(&long[1..]), Err(PathProblem::TooLong));
    }

    #[test]
    fn path_checks_run_in_spec_order() {
        let long_segment = "s".repeat(256);
        // Dot segment (3) before control character (4), even when the control comes first.
        assert_eq!(normalize_path("/a\u{1}/.."), Err(PathProblem::DotSegment));
        // Dot segment (3) before segment length (5).
        assert_eq!(normalize_path(&format!("/{long_segment}/.")), Err(PathProblem::DotSegment));
        // Control character (4) before segment length (5).
        assert_eq!(normalize_path(&format!("/{long_segment}/\u{7f}")), Err(PathProblem::ControlCharacter));
        // Segment length (5) before total length (6).
        let long_path = format!("{}/{long_segment}", path_of_len(1024));
        assert_eq!(normalize_path(&long_path), Err(PathProblem::SegmentTooLong));
        // Total length with a control character: control (4) first.
        let long_path = format!("{}/\u{0}", path_of_len(1024));
        assert_eq!(normalize_path(&long_path), Err(PathProblem::ControlCharacter));
    }

    #[test]
    fn under_means_equal_or_descendant_on_whole_segments() {
        assert!(is_under("/a", "/a"));
        assert!(is_under("/a/b", "/a"));
        assert!(is_under("/a/b/c", "/a"));
        assert!(!is_under("/ab", "/a"));
        assert!(!is_under("/a", "/a/b"));
        assert!(!is_under("/b/a", "/a"));
    }

    #[test]
    fn ancestor_excludes_the_path_itself() {
        assert!(is_ancestor("/a", "/a/b"));
        assert!(!is_ancestor("/a", "/a"));
        assert!(!is_ancestor("/a", "/ab"));
        assert!(!is_ancestor("/a/b", "/a"));
    }

    #[test]
    fn ancestors_are_listed_shortest_first() {
        assert_eq!(ancestors("/a/b/c").collect::<Vec<_>>(), vec!["/a", "/a/b"]);
        assert_eq!(ancestors("/a").count(), 0);
        for q in ancestors("/x/yy/zzz/w") {
            assert!(is_ancestor(q, "/x/yy/zzz/w"));
        }
    }

    /// The one-pass check for a normal path agrees with the SPEC's steps on every string
    /// of up to six characters over slashes, dots, letters, control and multi-byte
    /// characters, and at the length limits.
    #[test]
    fn a_normal_path_is_recognized_exactly_as_the_steps_would_keep_it() {
        let alphabet = ['/', '.', 'a', '\u{1f}', '\u{7f}', '\u{80}', 'é'];
        let mut cases = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..6 {
            last = last.iter().flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}"))).collect();
            cases.extend(last.iter().cloned());
        }
        for (seg, total) in [(255, 0), (256, 0), (0, 1024), (0, 1025)] {
            if seg > 0 {
                let s = "s".repeat(seg);
                cases.extend([format!("/{s}"), format!("/a/{s}/b"), format!("//{s}")]);
            } else {
                let p = path_of_len(total);
                cases.extend([p.clone(), format!("/{p}"), format!("{p}/")]);
            }
        }
        let mut normal = 0;
        for raw in &cases {
            assert_eq!(normalize_path(raw), normalize_by_segments(raw), "{raw:?}");
            if is_normal(raw) {
                assert_eq!(normalize_by_segments(raw).as_deref(), Ok(raw.as_str()), "{raw:?}");
                normal += 1;
            }
        }
        assert!(normal > 1000, "the one-pass check took {normal} cases");
    }
}
