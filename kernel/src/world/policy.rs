//! The world-wide policy (SPEC 1.2): validated, normalized, versioned.

use super::mutation::PolicyBody;
use super::path::{Path, PathProblem};
use serde::{Deserialize, Serialize};

/// The most versions a policy may keep per document.
pub const RETENTION_VERSIONS_MAX: u32 = 1_000_000;
/// The largest `body_bytes_max` a policy may set, in bytes (64 MiB).
pub const BODY_BYTES_LIMIT: u64 = 64 * 1024 * 1024;
/// The most read-only prefixes a policy may name.
pub const READ_ONLY_PREFIXES_MAX: usize = 64;

/// Defaults of a world at genesis (policy version 0).
pub const DEFAULT_RETENTION_VERSIONS: u32 = 64;
/// The genesis `body_bytes_max`, in bytes (4 MiB).
pub const DEFAULT_BODY_BYTES_MAX: u64 = 4 * 1024 * 1024;

/// Why a policy a client states is not valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum PolicyProblem {
    /// `retention_versions` is 0 or above [`RETENTION_VERSIONS_MAX`].
    #[error("retention outside 1 to {} versions", RETENTION_VERSIONS_MAX)]
    Retention,
    /// `body_bytes_max` is above [`BODY_BYTES_LIMIT`].
    #[error("body maximum above {} bytes", BODY_BYTES_LIMIT)]
    BodyMax,
    /// More than [`READ_ONLY_PREFIXES_MAX`] read-only prefixes.
    #[error("more than {} read-only prefixes", READ_ONLY_PREFIXES_MAX)]
    TooManyPrefixes,
    /// A read-only prefix is not a valid path.
    #[error("read-only prefix: {0}")]
    Prefix(PathProblem),
}

/// A validated, normalized policy body: prefixes normalized, sorted, deduplicated.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PolicyRules {
    /// Versions kept per document.
    pub retention_versions: u32,
    /// Largest body a document may hold, in bytes.
    pub body_bytes_max: u64,
    /// Documents under these refuse mutation.
    pub read_only_prefixes: Vec<Path>,
}

/// The policy in force, with its version (0 until the first `set_policy`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct Policy {
    /// Policy version: 0 at genesis, +1 per applied `set_policy`.
    pub version: u64,
    /// The policy itself.
    pub rules: PolicyRules,
}

impl Default for PolicyRules {
    fn default() -> Self {
        PolicyRules {
            retention_versions: DEFAULT_RETENTION_VERSIONS,
            body_bytes_max: DEFAULT_BODY_BYTES_MAX,
            read_only_prefixes: Vec::new(),
        }
    }
}

impl PolicyRules {
    /// Validates and normalizes a policy as a client states it.
    pub fn from_body(body: &PolicyBody) -> Result<PolicyRules, PolicyProblem> {
        if body.retention_versions == 0 || body.retention_versions > RETENTION_VERSIONS_MAX {
            return Err(PolicyProblem::Retention);
        }
        if body.body_bytes_max > BODY_BYTES_LIMIT {
            return Err(PolicyProblem::BodyMax);
        }
        if body.read_only_prefixes.len() > READ_ONLY_PREFIXES_MAX {
            return Err(PolicyProblem::TooManyPrefixes);
        }
        let mut prefixes = body
            .read_only_prefixes
            .iter()
            .map(|raw| Path::parse(raw).map_err(PolicyProblem::Prefix))
            .collect::<Result<Vec<Path>, PolicyProblem>>()?;
        prefixes.sort();
        prefixes.dedup();
        Ok(PolicyRules {
            retention_versions: body.retention_versions,
            body_bytes_max: body.body_bytes_max,
            read_only_prefixes: prefixes,
        })
    }

    /// The first read-only prefix `path` is under, in normalized order.
    pub fn read_only_prefix_of(&self, path: &Path) -> Option<&Path> {
        self.read_only_prefixes.iter().find(|p| path.is_under(p))
    }

    /// True when decoded rules hold the shape `from_body` produces.
    pub fn is_normalized(&self) -> bool {
        (1..=RETENTION_VERSIONS_MAX).contains(&self.retention_versions)
            && self.body_bytes_max <= BODY_BYTES_LIMIT
            && self.read_only_prefixes.len() <= READ_ONLY_PREFIXES_MAX
            && self.read_only_prefixes.windows(2).all(|w| w[0] < w[1])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(prefixes: &[&str]) -> PolicyBody {
        PolicyBody {
            retention_versions: 4,
            body_bytes_max: 100,
            read_only_prefixes: prefixes.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn prefixes_are_normalized_sorted_and_deduplicated() {
        let rules = PolicyRules::from_body(&body(&["/b/", "a", "/a", "b"])).unwrap();
        let got: Vec<&str> = rules.read_only_prefixes.iter().map(|p| p.as_str()).collect();
        assert_eq!(got, vec!["/a", "/b"]);
        assert!(rules.is_normalized());
    }

    #[test]
    fn an_invalid_prefix_makes_the_policy_invalid() {
        assert_eq!(
            PolicyRules::from_body(&body(&["/ok", "/../x"])),
            Err(PolicyProblem::Prefix(PathProblem::DotSegment))
        );
    }

    #[test]
    fn retention_must_be_between_one_and_a_million() {
        let mut b = body(&[]);
        b.retention_versions = 0;
        assert_eq!(PolicyRules::from_body(&b), Err(PolicyProblem::Retention));
        b.retention_versions = RETENTION_VERSIONS_MAX + 1;
        assert_eq!(PolicyRules::from_body(&b), Err(PolicyProblem::Retention));
        b.retention_versions = RETENTION_VERSIONS_MAX;
        assert!(PolicyRules::from_body(&b).is_ok());
    }

    #[test]
    fn body_max_is_capped_and_prefix_count_is_bounded() {
        let mut b = body(&[]);
        b.body_bytes_max = BODY_BYTES_LIMIT + 1;
        assert_eq!(PolicyRules::from_body(&b), Err(PolicyProblem::BodyMax));
        let many: Vec<String> = (0..65).map(|i| format!("/p{i}")).collect();
        let b = PolicyBody { read_only_prefixes: many, ..body(&[]) };
        assert_eq!(PolicyRules::from_body(&b), Err(PolicyProblem::TooManyPrefixes));
    }

    #[test]
    fn read_only_reports_the_first_prefix_in_order() {
        let rules = PolicyRules::from_body(&body(&["/a/b", "/a"])).unwrap();
        let path = Path::parse("/a/b/c").unwrap();
        assert_eq!(rules.read_only_prefix_of(&path).unwrap().as_str(), "/a");
        assert!(rules.read_only_prefix_of(&Path::parse("/ab").unwrap()).is_none());
    }
}
