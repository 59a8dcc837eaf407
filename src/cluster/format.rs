//! Preparing a data directory as Kafka's `kafka-storage.sh format` does
//! (`fjord format`), and Kafka's cluster ids (`fjord random-uuid`).
//!
//! A Kafka cluster id is a Kafka `Uuid` in its text form: 16 bytes,
//! base64url-encoded without padding (22 characters). `format` writes
//! `meta.properties` (`version=1`, `cluster.id`, `node.id`, `directory.id`,
//! the keys Kafka 3.7+ writes) into the data directory (the first of
//! `log.dirs`); the broker reads it with
//! [`load_or_create_meta`](super::controller::load_or_create_meta), which
//! refuses a configured `cluster.id` other than the formatted one.

use std::path::{Path, PathBuf};

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::{alphabet, Engine};
use uuid::Uuid;

use super::controller::write_atomic;

/// Kafka's text form of a `Uuid`: base64url; on input padding is optional
/// and the unused low bits of the last character are ignored (as Java's
/// URL decoder: Kafka's own example id `MkU3OEVBNTcwNTJENDM2Qk` has them
/// set); none on output.
const KAFKA_UUID: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// Why a string is not a Kafka cluster id (Kafka: "Cluster ID string … does
/// not appear to be a valid UUID").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterIdError {
    /// Longer than any base64 text of 16 bytes (24 characters with padding).
    #[error("Cluster ID string {id} does not appear to be a valid UUID: it is {len} characters long, a UUID is 22 base64url characters")]
    TooLong {
        /// The id given.
        id: String,
        /// Its length in characters.
        len: usize,
    },
    /// Not base64url text.
    #[error("Cluster ID string {id} does not appear to be a valid UUID: it is not base64url text ({reason})")]
    NotBase64 {
        /// The id given.
        id: String,
        /// The decoder's reason.
        reason: String,
    },
    /// Decodes to other than 16 bytes.
    #[error("Cluster ID string {id} does not appear to be a valid UUID: it decodes to {bytes} bytes, a UUID has 16")]
    WrongLength {
        /// The id given.
        id: String,
        /// Bytes it decodes to.
        bytes: usize,
    },
}

/// Checks that `id` is a Kafka cluster id: a base64url-encoded 16-byte
/// UUID (22 characters; `==` padding tolerated, as Kafka's decoder does).
/// Gives the 16 bytes.
pub fn parse_cluster_id(id: &str) -> Result<[u8; 16], ClusterIdError> {
    if id.chars().count() > 24 {
        return Err(ClusterIdError::TooLong {
            id: id.to_string(),
            len: id.chars().count(),
        });
    }
    let bytes = KAFKA_UUID
        .decode(id)
        .map_err(|e| ClusterIdError::NotBase64 {
            id: id.to_string(),
            reason: e.to_string(),
        })?;
    <[u8; 16]>::try_from(bytes.as_slice()).map_err(|_| ClusterIdError::WrongLength {
        id: id.to_string(),
        bytes: bytes.len(),
    })
}

/// A new random Kafka `Uuid` in text form (22 base64url characters), as
/// `kafka-storage.sh random-uuid` prints: never one starting with `-` (a
/// command line would take it for an option), never one of Kafka's reserved
/// ids (all-zero, and the metadata topic's id, `…0001`).
pub fn random_kafka_uuid() -> String {
    loop {
        let bytes = *Uuid::new_v4().as_bytes();
        let reserved = u128::from_be_bytes(bytes) <= 1;
        let text = KAFKA_UUID.encode(bytes);
        if !reserved && !text.starts_with('-') {
            return text;
        }
    }
}

/// Why `fjord format` refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// The cluster id is not a Kafka cluster id.
    #[error(transparent)]
    ClusterId(#[from] ClusterIdError),
    /// The configuration sets `cluster.id` to another id than the one to
    /// format with; the broker would refuse the directory.
    #[error("the configuration says cluster.id={configured} but --cluster-id is {given}; use the same id")]
    ConfiguredClusterId {
        /// `cluster.id` of the configuration.
        configured: String,
        /// `--cluster-id`.
        given: String,
    },
    /// The directory has a `meta.properties` already (Kafka: "Log directory
    /// … is already formatted").
    #[error("Log directory {} is already formatted. Use --ignore-formatted to ignore this directory and format the others.", path.display())]
    AlreadyFormatted {
        /// The data directory.
        path: PathBuf,
    },
    /// The directory or the file could not be created or written.
    #[error("cannot format {}: {source} (check log.dirs and its permissions)", path.display())]
    Io {
        /// The directory or file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// What [`format_data_dir`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Formatted {
    /// `meta.properties` was written with this `directory.id`.
    Written {
        /// The new directory's `directory.id`.
        directory_id: String,
    },
    /// The directory was formatted already and `--ignore-formatted` was
    /// given: left as it was (as `kafka-storage.sh format` does).
    AlreadyFormatted,
}

/// Formats `data_dir` for node `node_id` of cluster `cluster_id`, as
/// `kafka-storage.sh format`: creates the directory if needed and writes
/// `meta.properties` (`version=1`, `cluster.id`, `node.id`, a new random
/// `directory.id`). A directory with a `meta.properties` already is refused
/// ([`FormatError::AlreadyFormatted`]) unless `ignore_formatted`, which
/// leaves it untouched. `configured_cluster_id` is the configuration's
/// `cluster.id`, which must match when set.
pub fn format_data_dir(
    data_dir: &Path,
    node_id: i32,
    cluster_id: &str,
    configured_cluster_id: Option<&str>,
    ignore_formatted: bool,
) -> Result<Formatted, FormatError> {
    parse_cluster_id(cluster_id)?;
    if let Some(configured) = configured_cluster_id.filter(|c| *c != cluster_id) {
        return Err(FormatError::ConfiguredClusterId {
            configured: configured.to_string(),
            given: cluster_id.to_string(),
        });
    }
    let path = data_dir.join("meta.properties");
    if path.exists() {
        return if ignore_formatted {
            Ok(Formatted::AlreadyFormatted)
        } else {
            Err(FormatError::AlreadyFormatted {
                path: data_dir.to_path_buf(),
            })
        };
    }
    std::fs::create_dir_all(data_dir).map_err(|source| FormatError::Io {
        path: data_dir.to_path_buf(),
        source,
    })?;
    let directory_id = random_kafka_uuid();
    let text = format!(
        "#Written by fjord format\nversion=1\ncluster.id={cluster_id}\nnode.id={node_id}\ndirectory.id={directory_id}\n"
    );
    write_atomic(&path, text.as_bytes()).map_err(|source| FormatError::Io { path, source })?;
    Ok(Formatted::Written { directory_id })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::controller::{load_or_create_meta, MetaPropertiesError};

    #[test]
    fn cluster_ids_as_kafka() {
        // Kafka's own examples are 22 base64url characters.
        assert!(parse_cluster_id("MkU3OEVBNTcwNTJENDM2Qk").is_ok());
        assert!(parse_cluster_id("4L6g3nShT-eMCtK--X86sw").is_ok());
        assert!(parse_cluster_id("4L6g3nShT-eMCtK--X86sw==").is_ok());
        assert!(matches!(
            parse_cluster_id("not a uuid"),
            Err(ClusterIdError::NotBase64 { .. })
        ));
        assert!(matches!(
            parse_cluster_id("abcd"),
            Err(ClusterIdError::WrongLength { bytes: 3, .. })
        ));
        assert!(matches!(
            parse_cluster_id("0123456789abcdef0123456789abcdef"),
            Err(ClusterIdError::TooLong { len: 32, .. })
        ));
        assert!(matches!(
            parse_cluster_id(""),
            Err(ClusterIdError::WrongLength { bytes: 0, .. })
        ));
        let e = parse_cluster_id("abcd").unwrap_err().to_string();
        assert!(
            e.starts_with("Cluster ID string abcd does not appear to be a valid UUID"),
            "{e}"
        );
    }

    #[test]
    fn random_uuids_are_cluster_ids() {
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let u = random_kafka_uuid();
            assert_eq!(u.len(), 22, "{u}");
            assert!(!u.starts_with('-'), "{u}");
            assert!(parse_cluster_id(&u).is_ok(), "{u}");
            seen.insert(u);
        }
        assert_eq!(seen.len(), 200);
    }

    #[test]
    fn format_writes_meta_properties_the_broker_reads() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let id = random_kafka_uuid();
        let f = format_data_dir(&data, 3, &id, None, false).unwrap();
        let Formatted::Written { directory_id } = f else {
            panic!("{f:?}")
        };
        let text = std::fs::read_to_string(data.join("meta.properties")).unwrap();
        for line in [
            "version=1".to_string(),
            format!("cluster.id={id}"),
            "node.id=3".to_string(),
            format!("directory.id={directory_id}"),
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in {text}");
        }
        assert_eq!(load_or_create_meta(&data, 3, None).unwrap(), id);
        assert_eq!(load_or_create_meta(&data, 3, Some(&id)).unwrap(), id);
        assert!(matches!(
            load_or_create_meta(&data, 3, Some("another")),
            Err(MetaPropertiesError::ClusterIdMismatch { .. })
        ));
        assert!(matches!(
            load_or_create_meta(&data, 4, None),
            Err(MetaPropertiesError::NodeIdMismatch { .. })
        ));
        // A second format is refused; --ignore-formatted leaves the file.
        let e = format_data_dir(&data, 3, &random_kafka_uuid(), None, false).unwrap_err();
        assert!(matches!(e, FormatError::AlreadyFormatted { .. }), "{e:?}");
        assert!(e.to_string().contains("is already formatted"), "{e}");
        assert_eq!(
            format_data_dir(&data, 3, &random_kafka_uuid(), None, true).unwrap(),
            Formatted::AlreadyFormatted
        );
        assert_eq!(
            std::fs::read_to_string(data.join("meta.properties")).unwrap(),
            text
        );
    }

    #[test]
    fn format_refuses_bad_ids() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            format_data_dir(dir.path(), 1, "my-cluster", None, false),
            Err(FormatError::ClusterId(_))
        ));
        let id = random_kafka_uuid();
        assert!(matches!(
            format_data_dir(dir.path(), 1, &id, Some("other"), false),
            Err(FormatError::ConfiguredClusterId { .. })
        ));
        assert!(!dir.path().join("meta.properties").exists());
        assert!(format_data_dir(dir.path(), 1, &id, Some(&id), false).is_ok());
    }
}
