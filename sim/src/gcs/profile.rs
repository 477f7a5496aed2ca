//! Latency profiles: which distribution each operation kind draws from, and the
//! load-dependent, tail and transfer terms. The numbers are the calibration.

use core::fmt;
use core::str::FromStr;
use core::time::Duration;

use slotlog_kernel::blob::BlobOp;

use super::latency::LatencyModel;

// --- gcs: real GCS, from the project's records ------------------------------------------

/// Small create, idle bucket: p50 40 ms (record: "small create about 40 ms p50 alone").
pub const GCS_CREATE_MEDIAN: Duration = Duration::from_millis(40);
/// Small create, idle bucket: p99 50 ms (record: "50 ms p99 alone").
pub const GCS_CREATE_P99: Duration = Duration::from_millis(50);
/// Get: p50 22 ms, within the record's "get 18 to 37 ms".
pub const GCS_GET_MEDIAN: Duration = Duration::from_millis(22);
/// Get: p99 37 ms, the top of the record's range.
pub const GCS_GET_P99: Duration = Duration::from_millis(37);
/// Metadata read: p50 12 ms (record: "metadata read 11 to 14 ms").
pub const GCS_STAT_MEDIAN: Duration = Duration::from_millis(12);
/// Metadata read: p99 14 ms.
pub const GCS_STAT_P99: Duration = Duration::from_millis(14);
/// List: p50 30 ms (record: "list about 30 ms").
pub const GCS_LIST_MEDIAN: Duration = Duration::from_millis(30);
/// List: p99 40 ms (assumed; the record gives only the typical figure).
pub const GCS_LIST_P99: Duration = Duration::from_millis(40);
/// Transfer at about 50 MB/s: 20 µs per KiB is 51.2 MB/s (record: "size-dependent
/// transfer time"; single-stream GCS throughput from one VM).
pub const GCS_TRANSFER_US_PER_KIB: f64 = 20.0;
/// The write median rises by this fraction of itself as load approaches
/// [`GCS_WRITE_LOAD_FULL_PER_S`]: 40 ms idle, ~45 ms at 400 writes/s, 52 ms at 1,000/s
/// (record: "45 to 52 ms p50 under load").
pub const GCS_WRITE_LOAD_GAIN: f64 = 0.3;
/// Object writes per second at which the load term is full.
pub const GCS_WRITE_LOAD_FULL_PER_S: f64 = 1_000.0;
/// Probability a call lands in the rare tail (assumed: keeps the idle p99 at ~50 ms
/// while producing the occasional 100-200 ms call seen in production traces).
pub const GCS_TAIL_RATE: f64 = 0.002;
/// A tail call's latency is multiplied by a uniform factor in this range.
pub const GCS_TAIL_FACTOR_MIN: f64 = 2.0;
/// See [`GCS_TAIL_FACTOR_MIN`].
pub const GCS_TAIL_FACTOR_MAX: f64 = 5.0;

// --- gcs-shaped: the record's in-process model ------------------------------------------

/// The record's in-process model: "create 45 ms".
pub const SHAPED_CREATE: Duration = Duration::from_millis(45);
/// "get 25 ms".
pub const SHAPED_GET: Duration = Duration::from_millis(25);
/// "list 30 ms".
pub const SHAPED_LIST: Duration = Duration::from_millis(30);
/// Metadata read, from the gcs figures (12 ms).
pub const SHAPED_STAT: Duration = Duration::from_millis(12);
/// Rewrite is a write like create.
pub const SHAPED_REWRITE: Duration = Duration::from_millis(45);
/// Delete is a metadata operation like stat.
pub const SHAPED_DELETE: Duration = Duration::from_millis(12);
/// "a tenth of jitter": each call times a uniform factor in [0.9, 1.1).
pub const SHAPED_JITTER: f64 = 0.1;

// --- fast: the record's fast model ------------------------------------------------------

/// The record's fast model: "2 ms calls".
pub const FAST_CALL: Duration = Duration::from_millis(2);
/// The same tenth of jitter as gcs-shaped.
pub const FAST_JITTER: f64 = 0.1;

/// Which operation, for picking a latency model and counting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpKind {
    /// A create if absent.
    Create,
    /// A read of an object's bytes.
    Get,
    /// A read of an object's metadata.
    Stat,
    /// A listing page.
    List,
    /// A rewrite conditioned on a version.
    Rewrite,
    /// A delete conditioned on a version.
    Delete,
}

impl OpKind {
    /// The kind of `op`.
    pub fn of(op: &BlobOp) -> Self {
        match op {
            BlobOp::Create { .. } => OpKind::Create,
            BlobOp::Get { .. } => OpKind::Get,
            BlobOp::Stat { .. } => OpKind::Stat,
            BlobOp::List { .. } => OpKind::List,
            BlobOp::Rewrite { .. } => OpKind::Rewrite,
            BlobOp::Delete { .. } => OpKind::Delete,
        }
    }

    /// An object write: counts toward the bucket's write rate and its envelope.
    pub fn is_write(self) -> bool {
        matches!(self, OpKind::Create | OpKind::Rewrite | OpKind::Delete)
    }

    /// Uploads a body whose latency rises with bucket load (create and rewrite).
    pub fn is_upload(self) -> bool {
        matches!(self, OpKind::Create | OpKind::Rewrite)
    }
}

/// The named profiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProfileKind {
    /// Real GCS, calibrated to the record's measurements.
    Gcs,
    /// The record's in-process model: fixed means with a tenth of jitter.
    GcsShaped,
    /// The record's fast model: 2 ms calls.
    Fast,
    /// S3's store rules (`StoreRules::s3`: ETags that hash the content, 409 on a create
    /// racing a delete, no per-name limit) at the `gcs` latencies, since the record has
    /// no S3 measurements; no bucket envelope.
    S3,
}

impl ProfileKind {
    /// Every profile, in the order `--profile` lists them.
    pub const ALL: [ProfileKind; 4] =
        [ProfileKind::Gcs, ProfileKind::GcsShaped, ProfileKind::Fast, ProfileKind::S3];

    /// The profile's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            ProfileKind::Gcs => "gcs",
            ProfileKind::GcsShaped => "gcs-shaped",
            ProfileKind::Fast => "fast",
            ProfileKind::S3 => "s3",
        }
    }
}

impl fmt::Display for ProfileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A profile name that is not one of [`ProfileKind::ALL`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownProfile {
    /// The name given.
    pub name: String,
}

impl fmt::Display for UnknownProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown profile {:?} (expected gcs, gcs-shaped, fast or s3)", self.name)
    }
}

impl std::error::Error for UnknownProfile {}

impl FromStr for ProfileKind {
    type Err = UnknownProfile;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProfileKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownProfile { name: s.to_owned() })
    }
}

/// Per-operation latency and the terms layered on it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Profile {
    /// Which profile this is.
    pub kind: ProfileKind,
    /// Each operation's latency, before the terms below.
    pub create: LatencyModel,
    /// See `create`.
    pub get: LatencyModel,
    /// See `create`.
    pub stat: LatencyModel,
    /// See `create`.
    pub list: LatencyModel,
    /// See `create`.
    pub rewrite: LatencyModel,
    /// See `create`.
    pub delete: LatencyModel,
    /// How long a refusal (429, 5xx) takes to come back: a round trip that does no work.
    pub refusal: LatencyModel,
    /// Bytes moved (upload for create/rewrite, download for get) cost this much, µs/KiB.
    pub transfer_us_per_kib: f64,
    /// Create and rewrite medians rise by this fraction at `write_load_full_per_s`.
    pub write_load_gain: f64,
    /// Object writes per second at which the load term is full (it is capped there).
    pub write_load_full_per_s: f64,
    /// Probability a call's latency lands in the rare tail.
    pub tail_rate: f64,
    /// A tail call's latency is multiplied by a uniform factor in [min, max).
    pub tail_factor_min: f64,
    /// See `tail_factor_min`.
    pub tail_factor_max: f64,
}

impl Profile {
    /// The profile `kind` names.
    pub fn of(kind: ProfileKind) -> Self {
        match kind {
            ProfileKind::Gcs => Self::gcs(),
            ProfileKind::GcsShaped => Self::gcs_shaped(),
            ProfileKind::Fast => Self::fast(),
            ProfileKind::S3 => Profile { kind: ProfileKind::S3, ..Self::gcs() },
        }
    }

    /// Real GCS.
    pub fn gcs() -> Self {
        let create = LatencyModel::LogNormal { median: GCS_CREATE_MEDIAN, p99: GCS_CREATE_P99 };
        let stat = LatencyModel::LogNormal { median: GCS_STAT_MEDIAN, p99: GCS_STAT_P99 };
        Profile {
            kind: ProfileKind::Gcs,
            create,
            get: LatencyModel::LogNormal { median: GCS_GET_MEDIAN, p99: GCS_GET_P99 },
            stat,
            list: LatencyModel::LogNormal { median: GCS_LIST_MEDIAN, p99: GCS_LIST_P99 },
            rewrite: create,
            delete: stat,
            refusal: stat,
            transfer_us_per_kib: GCS_TRANSFER_US_PER_KIB,
            write_load_gain: GCS_WRITE_LOAD_GAIN,
            write_load_full_per_s: GCS_WRITE_LOAD_FULL_PER_S,
            tail_rate: GCS_TAIL_RATE,
            tail_factor_min: GCS_TAIL_FACTOR_MIN,
            tail_factor_max: GCS_TAIL_FACTOR_MAX,
        }
    }

    /// The record's in-process model.
    pub fn gcs_shaped() -> Self {
        let j = |base| LatencyModel::Jittered { base, jitter: SHAPED_JITTER };
        Profile {
            kind: ProfileKind::GcsShaped,
            create: j(SHAPED_CREATE),
            get: j(SHAPED_GET),
            stat: j(SHAPED_STAT),
            list: j(SHAPED_LIST),
            rewrite: j(SHAPED_REWRITE),
            delete: j(SHAPED_DELETE),
            refusal: j(SHAPED_STAT),
            ..Self::flat(ProfileKind::GcsShaped)
        }
    }

    /// The record's fast model.
    pub fn fast() -> Self {
        Self::flat(ProfileKind::Fast)
    }

    /// Every call [`FAST_CALL`] with jitter, and no load, tail or transfer term.
    fn flat(kind: ProfileKind) -> Self {
        let m = LatencyModel::Jittered { base: FAST_CALL, jitter: FAST_JITTER };
        Profile {
            kind,
            create: m,
            get: m,
            stat: m,
            list: m,
            rewrite: m,
            delete: m,
            refusal: m,
            transfer_us_per_kib: 0.0,
            write_load_gain: 0.0,
            write_load_full_per_s: 1.0,
            tail_rate: 0.0,
            tail_factor_min: 1.0,
            tail_factor_max: 1.0,
        }
    }

    /// The latency model of operations of `kind`.
    pub fn model(&self, kind: OpKind) -> LatencyModel {
        match kind {
            OpKind::Create => self.create,
            OpKind::Get => self.get,
            OpKind::Stat => self.stat,
            OpKind::List => self.list,
            OpKind::Rewrite => self.rewrite,
            OpKind::Delete => self.delete,
        }
    }

    /// The factor on an upload's median at `write_rate_per_s` object writes per second.
    pub fn write_load_scale(&self, write_rate_per_s: f64) -> f64 {
        1.0 + self.write_load_gain * (write_rate_per_s / self.write_load_full_per_s).min(1.0)
    }

    pub(crate) fn validate(&self) {
        for m in [self.create, self.get, self.stat, self.list, self.rewrite, self.delete, self.refusal] {
            m.validate();
        }
        assert!(self.transfer_us_per_kib >= 0.0);
        assert!(self.write_load_gain >= 0.0);
        assert!(self.write_load_full_per_s > 0.0);
        assert!((0.0..=1.0).contains(&self.tail_rate));
        assert!(self.tail_factor_min >= 1.0);
        assert!(self.tail_factor_max >= self.tail_factor_min);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_names_round_trip() {
        for kind in ProfileKind::ALL {
            assert_eq!(kind.to_string().parse::<ProfileKind>(), Ok(kind));
            assert_eq!(Profile::of(kind).kind, kind);
            Profile::of(kind).validate();
        }
        assert_eq!("s3".parse::<ProfileKind>(), Ok(ProfileKind::S3));
        assert_eq!("azure".parse::<ProfileKind>(), Err(UnknownProfile { name: "azure".into() }));
    }

    #[test]
    fn gcs_write_median_rises_with_load_and_caps() {
        let p = Profile::gcs();
        assert_eq!(p.write_load_scale(0.0), 1.0);
        let at_400 = GCS_CREATE_MEDIAN.as_micros() as f64 * p.write_load_scale(400.0);
        assert!((at_400 - 44_800.0).abs() < 1.0);
        assert!((p.write_load_scale(1_000.0) - 1.3).abs() < 1e-12);
        assert_eq!(p.write_load_scale(5_000.0), p.write_load_scale(1_000.0));
    }
}
