//! The world-wide policy (SPEC 1.2): its limits, its default, and the validation and
//! normalization of a policy a client gives.

use crate::path::{is_under, normalize_path, PathProblem};
use slotlog_kernel::world::mutation::PolicyBody;

/// Fewest versions a document may be told to keep.
pub const RETENTION_VERSIONS_MIN: u32 = 1;
/// Most versions a document may be told to keep.
pub const RETENTION_VERSIONS_MAX: u32 = 1_000_000;
/// Versions kept per document at genesis.
pub const RETENTION_VERSIONS_DEFAULT: u32 = 64;
/// Largest `body_bytes_max` a policy may set (64 MiB).
pub const BODY_BYTES_MAX_LIMIT: u64 = 67_108_864;
/// `body_bytes_max` at genesis (4 MiB).
pub const BODY_BYTES_MAX_DEFAULT: u64 = 4_194_304;
/// Most read-only prefixes a policy may name.
pub const READ_ONLY_PREFIXES_MAX: usize = 64;

/// Why a client's policy is invalid. The reasons are independent of the world's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum PolicyProblem {
    /// `retention_versions` outside 1 to 1,000,000.
    #[error("retention outside {} to {} versions", RETENTION_VERSIONS_MIN, RETENTION_VERSIONS_MAX)]
    Retention,
    /// `body_bytes_max` above 67,108,864.
    #[error("body maximum above {} bytes", BODY_BYTES_MAX_LIMIT)]
    BodyMax,
    /// More than 64 read-only prefixes.
    #[error("more than {} read-only prefixes", READ_ONLY_PREFIXES_MAX)]
    TooManyPrefixes,
    /// A read-only prefix is not a valid path.
    #[error("read-only prefix: {0}")]
    Prefix(PathProblem),
}

/// A validated, normalized policy: prefixes are normalized paths, sorted in byte order,
/// without duplicates. Two policies mean the same thing exactly when they are equal, which
/// is what `set_policy`'s `Unchanged` check compares.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ModelPolicyBody {
    /// Versions kept per document (SPEC 1.2).
    pub retention_versions: u32,
    /// Largest body a document may hold, in bytes (SPEC 1.2).
    pub body_bytes_max: u64,
    /// Documents under these paths refuse mutation (SPEC 1.2).
    pub read_only_prefixes: Vec<String>,
}

impl Default for ModelPolicyBody {
    /// The genesis policy (SPEC 1.2 defaults).
    fn default() -> Self {
        ModelPolicyBody {
            retention_versions: RETENTION_VERSIONS_DEFAULT,
            body_bytes_max: BODY_BYTES_MAX_DEFAULT,
            read_only_prefixes: Vec::new(),
        }
    }
}

impl ModelPolicyBody {
    /// The read-only prefix that refuses a mutation of the normalized path `path`: the
    /// first prefix, in normalized (byte) order, that `path` is under.
    pub fn read_only_prefix_of(&self, path: &str) -> Option<&str> {
        self.read_only_prefixes.iter().find(|q| is_under(path, q)).map(|q| q.as_str())
    }
}

/// The policy in force and its version (0 at genesis, +1 per applied `set_policy`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ModelPolicy {
    /// Policy version: 0 at genesis, +1 per applied `set_policy`.
    pub version: u64,
    /// The policy itself.
    pub body: ModelPolicyBody,
}

/// Validate and normalize a client's policy (SPEC 1.2).
///
/// The SPEC lists the problems but not their order. This model checks, and reports the
/// first failing of: `Retention`, `BodyMax`, `TooManyPrefixes`, then `Prefix` for the
/// first invalid prefix in the order the client gave them.
pub fn normalize_policy(p: &PolicyBody) -> Result<ModelPolicyBody, PolicyProblem> {
    if !(RETENTION_VERSIONS_MIN..=RETENTION_VERSIONS_MAX).contains(&p.retention_versions) {
        return Err(PolicyProblem::Retention);
    }
    // `body_bytes_max` is unsigned, so 0 is the only lower bound and always holds.
    if p.body_bytes_max > BODY_BYTES_MAX_LIMIT {
        return Err(PolicyProblem::BodyMax);
    }
    // SPEC ambiguity: "at most 64" is counted on the list the client gave, before
    // duplicates are removed ("validated, then normalized"). 65 copies of one prefix are
    // therefore invalid.
    if p.read_only_prefixes.len() > READ_ONLY_PREFIXES_MAX {
        return Err(PolicyProblem::TooManyPrefixes);
    }
    let mut prefixes = Vec::with_capacity(p.read_only_prefixes.len());
    for raw in &p.read_only_prefixes {
        prefixes.push(normalize_path(raw).map_err(PolicyProblem::Prefix)?);
    }
    // `String`'s `Ord` is byte order.
    prefixes.sort();
    prefixes.dedup();
    Ok(ModelPolicyBody {
        retention_versions: p.retention_versions,
        body_bytes_max: p.body_bytes_max,
        read_only_prefixes: prefixes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(retention: u32, max: u64, prefixes: &[&str]) -> PolicyBody {
        PolicyBody {
            retention_versions: retention,
            body_bytes_max: max,
            read_only_prefixes: prefixes.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn default_policy_matches_the_spec_table() {
        let d = ModelPolicy::default();
        assert_eq!(d.version, 0);
        assert_eq!(d.body.retention_versions, 64);
        assert_eq!(d.body.body_bytes_max, 4_194_304);
        assert!(d.body.read_only_prefixes.is_empty());
    }

    #[test]
    fn policy_prefixes_are_normalized_sorted_and_deduplicated() {
        let n = normalize_policy(&body(3, 10, &["z/", "/a/b", "a", "//a//", "/a/b/", "B"])).unwrap();
        assert_eq!(n.retention_versions, 3);
        assert_eq!(n.body_bytes_max, 10);
        // Byte order: uppercase sorts before lowercase; `/a` before `/a/b`.
        assert_eq!(n.read_only_prefixes, vec!["/B", "/a", "/a/b", "/z"]);
    }

    #[test]
    fn policy_with_an_invalid_prefix_is_invalid() {
        assert_eq!(
            normalize_policy(&body(1, 0, &["/ok", "/"])),
            Err(PolicyProblem::Prefix(PathProblem::Empty))
        );
        assert_eq!(
            normalize_policy(&body(1, 0, &["/a/.."])),
            Err(PolicyProblem::Prefix(PathProblem::DotSegment))
        );
        assert_eq!(
            normalize_policy(&body(1, 0, &["/a\u{7f}"])),
            Err(PolicyProblem::Prefix(PathProblem::ControlCharacter))
        );
    }

    #[test]
    fn policy_reports_the_first_invalid_prefix_in_given_order() {
        let long = "s".repeat(256);
        assert_eq!(
            normalize_policy(&body(1, 0, &["/b", long.as_str(), "/a/."])),
            Err(PolicyProblem::Prefix(PathProblem::SegmentTooLong))
        );
        assert_eq!(
            normalize_policy(&body(1, 0, &["/a/.", long.as_str()])),
            Err(PolicyProblem::Prefix(PathProblem::DotSegment))
        );
    }

    #[test]
    fn retention_must_be_between_1_and_1_000_000() {
        assert_eq!(normalize_policy(&body(0, 0, &[])), Err(PolicyProblem::Retention));
        assert!(normalize_policy(&body(1, 0, &[])).is_ok());
        assert!(normalize_policy(&body(1_000_000, 0, &[])).is_ok());
        assert_eq!(normalize_policy(&body(1_000_001, 0, &[])), Err(PolicyProblem::Retention));
        assert_eq!(normalize_policy(&body(u32::MAX, 0, &[])), Err(PolicyProblem::Retention));
    }

    #[test]
    fn body_max_must_be_at_most_64_mib() {
        assert_eq!(normalize_policy(&body(1, 0, &[])).unwrap().body_bytes_max, 0);
        assert!(normalize_policy(&body(1, 67_108_864, &[])).is_ok());
        assert_eq!(normalize_policy(&body(1, 67_108_865, &[])), Err(PolicyProblem::BodyMax));
        assert_eq!(normalize_policy(&body(1, u64::MAX, &[])), Err(PolicyProblem::BodyMax));
    }

    #[test]
    fn at_most_64_prefixes() {
        let names: Vec<String> = (0..65).map(|i| format!("/p{i}")).collect();
        let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
        assert_eq!(normalize_policy(&body(1, 0, &refs[..64])).unwrap().read_only_prefixes.len(), 64);
        assert_eq!(normalize_policy(&body(1, 0, &refs)), Err(PolicyProblem::TooManyPrefixes));
    }

    #[test]
    fn prefix_count_is_taken_before_deduplication() {
        let same = vec!["/a"; 65];
        assert_eq!(normalize_policy(&body(1, 0, &same)), Err(PolicyProblem::TooManyPrefixes));
        let same = vec!["/a"; 64];
        assert_eq!(normalize_policy(&body(1, 0, &same)).unwrap().read_only_prefixes, vec!["/a"]);
    }

    #[test]
    fn policy_checks_run_in_order_retention_body_max_count_prefix() {
        let many_bad = vec!["/"; 65];
        assert_eq!(normalize_policy(&body(0, u64::MAX, &many_bad)), Err(PolicyProblem::Retention));
        assert_eq!(normalize_policy(&body(1, u64::MAX, &many_bad)), Err(PolicyProblem::BodyMax));
        assert_eq!(normalize_policy(&body(1, 0, &many_bad)), Err(PolicyProblem::TooManyPrefixes));
        assert_eq!(
            normalize_policy(&body(1, 0, &many_bad[..64])),
            Err(PolicyProblem::Prefix(PathProblem::Empty))
        );
    }

    #[test]
    fn read_only_prefix_is_the_first_in_normalized_order() {
        let n = normalize_policy(&body(1, 0, &["/a/b", "/a", "/c"])).unwrap();
        assert_eq!(n.read_only_prefix_of("/a/b/x"), Some("/a"));
        assert_eq!(n.read_only_prefix_of("/a"), Some("/a"));
        assert_eq!(n.read_only_prefix_of("/c"), Some("/c"));
        assert_eq!(n.read_only_prefix_of("/ab"), None);
        assert_eq!(n.read_only_prefix_of("/b/a"), None);
    }
}
