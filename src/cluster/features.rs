//! Finalized features (KIP-584, KIP-1022): the feature levels Fjord
//! supports, the defaults a new cluster finalizes, and the bootstrap file
//! `fjord format` writes.
//!
//! The finalized levels live in the metadata log as `FeatureLevel` records
//! ([`super::records::MetadataRecord::FeatureLevel`], KRaft's
//! FeatureLevelRecord) and in [`super::metadata::MetadataImage::finalized_features`];
//! a level of 0 removes the feature from the finalized set, as in Kafka.
//! The finalized-features epoch is the metadata offset of the image (Kafka
//! 4.4 answers `finalized_features_epoch` with its image's highest offset).
//! Why each range is what it is: docs/decisions/finalized-features.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::controller::{write_atomic, METADATA_DIR};

/// `metadata.version`'s feature name.
pub const METADATA_VERSION: &str = "metadata.version";
/// `kraft.version` (KIP-853 dynamic voters from level 1).
pub const KRAFT_VERSION: &str = "kraft.version";
/// `transaction.version` (KIP-890: 2 is Transactions V2).
pub const TRANSACTION_VERSION: &str = "transaction.version";
/// `group.version` (KIP-848: 1 is the consumer group protocol).
pub const GROUP_VERSION: &str = "group.version";
/// `share.version` (KIP-932: 1 is share groups; Kafka's 2 adds the
/// dead-letter queue of KIP-1191).
pub const SHARE_VERSION: &str = "share.version";
/// The `share.version` level from which a share group with
/// `errors.deadletterqueue.topic.name` set writes dead-letter records
/// (KIP-1191), as Kafka 4.4's `ShareVersion.supportsShareGroupDLQ`.
pub const SHARE_VERSION_DLQ: i16 = 2;
/// `eligible.leader.replicas.version` (KIP-966).
pub const ELR_VERSION: &str = "eligible.leader.replicas.version";

/// The highest `transaction.version` Fjord serves: 2, Transactions V2
/// (KIP-890 part 2), with Produce v12, EndTxn v5 and TxnOffsetCommit v5
/// served (docs/decisions/transactions-v2-served.md). A new cluster
/// finalizes it, as Kafka 4.4 does, and a Java 4.x producer that sees it
/// finalized runs transactions v2 (no AddPartitionsToTxn, an epoch bump per
/// transaction). Level 1 only changes Kafka's `__transaction_state` record
/// version; Fjord reads both and writes v1 where a v2 transaction needs it.
pub const TRANSACTION_VERSION_MAX: i16 = 2;

/// `metadata.version` level of Kafka 4.4's `4.4-IV2`, the one level Fjord
/// serves (it has one code path; the level names the release whose
/// protocols it follows, and it is above 4.0-IV1, which
/// `eligible.leader.replicas.version` 1 needs).
pub const METADATA_VERSION_LEVEL: i16 = 33;

/// A feature's supported levels, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SupportedRange {
    /// Lowest level served.
    pub min: i16,
    /// Highest level served.
    pub max: i16,
}

impl SupportedRange {
    /// Whether `level` is in the range.
    pub fn contains(&self, level: i16) -> bool {
        (self.min..=self.max).contains(&level)
    }
}

impl std::fmt::Display for SupportedRange {
    /// As Kafka's `VersionRange`: `min-max`, or one number when equal.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.min == self.max {
            write!(f, "{}", self.min)
        } else {
            write!(f, "{}-{}", self.min, self.max)
        }
    }
}

/// Every feature Fjord knows, with the levels it serves and the level a
/// new cluster finalizes (Kafka 4.4's default, capped at what Fjord
/// serves): (name, range, default level). Advertised in ApiVersions
/// `supported_features`; UpdateFeatures refuses anything else.
pub const SUPPORTED: &[(&str, SupportedRange, i16)] = &[
    (
        METADATA_VERSION,
        SupportedRange {
            min: METADATA_VERSION_LEVEL,
            max: METADATA_VERSION_LEVEL,
        },
        METADATA_VERSION_LEVEL,
    ),
    // Static voters only (no KIP-853 AddRaftVoter/RemoveRaftVoter).
    (KRAFT_VERSION, SupportedRange { min: 0, max: 0 }, 0),
    (
        TRANSACTION_VERSION,
        SupportedRange {
            min: 0,
            max: TRANSACTION_VERSION_MAX,
        },
        TRANSACTION_VERSION_MAX,
    ),
    // KIP-848: ConsumerGroupHeartbeat and ConsumerGroupDescribe served at
    // level 1, which a new cluster finalizes as Kafka 4.4 does.
    (GROUP_VERSION, SupportedRange { min: 0, max: 1 }, 1),
    // KIP-932 share groups from level 1; level 2 adds the dead-letter
    // queue (KIP-1191). A new cluster finalizes 2 as Kafka 4.4 does;
    // ShareFetch/ShareAcknowledge stay listed at v1 (the protocol crate has
    // no v2), which clients negotiate down to
    // (docs/decisions/share-groups.md).
    (SHARE_VERSION, SupportedRange { min: 0, max: 2 }, 2),
    // KIP-966 ELR is always on: docs/decisions/eligible-leader-replicas.md.
    (ELR_VERSION, SupportedRange { min: 1, max: 1 }, 1),
];

/// The supported range of `name`, None for a feature Fjord does not know.
pub fn supported(name: &str) -> Option<SupportedRange> {
    SUPPORTED
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, r, _)| *r)
}

/// The levels a new cluster finalizes (features at level 0 left out).
pub fn defaults() -> BTreeMap<String, i16> {
    SUPPORTED
        .iter()
        .filter(|(_, _, d)| *d > 0)
        .map(|(n, _, d)| (n.to_string(), *d))
        .collect()
}

/// Why a `fjord format --feature` value is refused (as
/// `kafka-storage.sh format --feature`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeatureArgError {
    /// Not `name=level`.
    #[error("Can't parse feature={0}. The format must be feature=level")]
    Syntax(String),
    /// A feature Fjord does not know.
    #[error("Unsupported feature: {0}. Supported features are: {1}")]
    Unknown(String, String),
    /// A level outside the supported range.
    #[error("Feature {name} level {level} is not supported: this broker supports {range}")]
    Level {
        /// The feature.
        name: String,
        /// The level asked for.
        level: i16,
        /// What is served.
        range: SupportedRange,
    },
}

/// The bootstrap levels of `fjord format`: the defaults with each
/// `--feature name=level` applied (level 0 leaves the feature out).
pub fn bootstrap_levels(args: &[String]) -> Result<BTreeMap<String, i16>, FeatureArgError> {
    let mut levels = defaults();
    for a in args {
        let (name, level) = a
            .split_once('=')
            .ok_or_else(|| FeatureArgError::Syntax(a.clone()))?;
        let name = name.trim();
        let level: i16 = level
            .trim()
            .parse()
            .map_err(|_| FeatureArgError::Syntax(a.clone()))?;
        let range = supported(name).ok_or_else(|| {
            let known: Vec<&str> = SUPPORTED.iter().map(|(n, _, _)| *n).collect();
            FeatureArgError::Unknown(name.to_string(), known.join(", "))
        })?;
        if !range.contains(level) {
            return Err(FeatureArgError::Level {
                name: name.to_string(),
                level,
                range,
            });
        }
        if level == 0 {
            levels.remove(name);
        } else {
            levels.insert(name.to_string(), level);
        }
    }
    Ok(levels)
}

/// The bootstrap file's name, in the metadata directory.
pub const FILE: &str = "bootstrap-features.json";

fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(METADATA_DIR).join(FILE)
}

/// Writes the bootstrap levels (replacing the file).
pub fn write(data_dir: &Path, levels: &BTreeMap<String, i16>) -> std::io::Result<()> {
    std::fs::create_dir_all(data_dir.join(METADATA_DIR))?;
    let text = serde_json::to_vec_pretty(levels).map_err(std::io::Error::other)?;
    write_atomic(&path(data_dir), &text)
}

/// The levels a cluster starts with: the data directory's bootstrap file,
/// or [`defaults`] without one (`fjord serve` with no format step).
/// Errors when the file exists but cannot be read.
pub fn read(data_dir: &Path) -> std::io::Result<BTreeMap<String, i16>> {
    match std::fs::read(path(data_dir)) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(defaults()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_arguments_as_kafka_storage() {
        let d = bootstrap_levels(&[]).unwrap();
        assert_eq!(d.get(METADATA_VERSION), Some(&METADATA_VERSION_LEVEL));
        assert_eq!(d.get(ELR_VERSION), Some(&1));
        assert!(!d.contains_key(KRAFT_VERSION), "level 0 is not finalized");
        assert_eq!(d.get(GROUP_VERSION), Some(&1));
        assert!(bootstrap_levels(&["foo.version=1".into()]).is_err());
        assert!(bootstrap_levels(&["group.version=2".into()]).is_err());
        assert!(bootstrap_levels(&["group.version".into()]).is_err());
        let l = bootstrap_levels(&["transaction.version=0".into()]).unwrap();
        assert!(!l.contains_key(TRANSACTION_VERSION));
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), defaults());
        let mut custom = defaults();
        custom.remove(ELR_VERSION);
        write(dir.path(), &custom).unwrap();
        assert_eq!(read(dir.path()).unwrap(), custom);
    }

    #[test]
    fn ranges_print_as_kafka() {
        assert_eq!(SupportedRange { min: 0, max: 1 }.to_string(), "0-1");
        assert_eq!(SupportedRange { min: 0, max: 0 }.to_string(), "0");
    }
}
