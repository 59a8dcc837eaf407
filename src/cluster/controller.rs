//! The node's own files in the data directory, outside the metadata log:
//!
//! - `meta.properties` — Kafka's file: `version=1`, `node.id`, `cluster.id`
//!   (and `directory.id` when written by `fjord format`, see
//!   [`super::format`]).
//! - `__cluster_metadata/<topic>.topic` — the registry of earlier versions
//!   and the inbox of `fjord import-logs`: one file per topic, `topic.id=<uuid>`,
//!   `partitions=<n>`, then `config.<kafka name>=<value>` lines. Written to a
//!   temporary file, fsynced and renamed. At start the active controller
//!   adopts every such topic into the metadata log (keeping its id), then
//!   removes the file (see [`super::quorum`]).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use uuid::Uuid;

use super::metadata::{MetadataImage, TopicMeta};

/// Directory holding the topic registry, beside the partition directories.
pub const METADATA_DIR: &str = "__cluster_metadata";

/// Why `meta.properties` in the data directory refuses this broker.
#[derive(Debug, thiserror::Error)]
pub enum MetaPropertiesError {
    /// The directory belongs to another node (Kafka refuses to start too).
    #[error("{} has node.id={found} but the configuration says node.id={configured}; use the matching node.id or another log.dirs", path.display())]
    NodeIdMismatch {
        /// The `meta.properties` file.
        path: PathBuf,
        /// The id in the file, as written.
        found: String,
        /// `node.id` of the configuration.
        configured: i32,
    },
    /// The directory belongs to another cluster: `cluster.id` is set in the
    /// configuration and differs from the one the directory was formatted
    /// with.
    #[error("{} has cluster.id={found} but the configuration says cluster.id={configured}; this data directory belongs to another cluster: use another log.dirs", path.display())]
    ClusterIdMismatch {
        /// The `meta.properties` file.
        path: PathBuf,
        /// The cluster id in the file.
        found: String,
        /// `cluster.id` of the configuration.
        configured: String,
    },
    /// The file could not be written.
    #[error("cannot write {}: {source} (check log.dirs and its permissions)", path.display())]
    Write {
        /// The `meta.properties` file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Reads or creates `meta.properties` in `data_dir`; returns the cluster id.
/// A `node.id` in the file that differs from the configured one, or a
/// configured `cluster.id` that differs from the file's, is an error (Kafka
/// refuses to start in those cases too).
pub fn load_or_create_meta(
    data_dir: &Path,
    node_id: i32,
    cluster_id: Option<&str>,
) -> Result<String, MetaPropertiesError> {
    let path = data_dir.join("meta.properties");
    if let Ok(text) = std::fs::read_to_string(&path) {
        let mut found_cluster = None;
        for line in text.lines() {
            if let Some(v) = line.strip_prefix("cluster.id=") {
                found_cluster = Some(v.trim().to_string());
            }
            if let Some(v) = line.strip_prefix("node.id=") {
                if v.trim() != node_id.to_string() {
                    return Err(MetaPropertiesError::NodeIdMismatch {
                        path,
                        found: v.trim().to_string(),
                        configured: node_id,
                    });
                }
            }
        }
        if let Some(found) = found_cluster {
            if let Some(configured) = cluster_id.filter(|c| *c != found) {
                return Err(MetaPropertiesError::ClusterIdMismatch {
                    path,
                    found,
                    configured: configured.to_string(),
                });
            }
            return Ok(found);
        }
    }
    let cluster = cluster_id
        .map(str::to_string)
        .unwrap_or_else(crate::cluster::format::random_kafka_uuid);
    write_atomic(
        &path,
        format!("#Written by fjord\nversion=1\nnode.id={node_id}\ncluster.id={cluster}\n")
            .as_bytes(),
    )
    .map_err(|source| MetaPropertiesError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(cluster)
}

/// Writes `bytes` to `path` atomically: temp file, fsync, rename, fsync dir.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// Persists one topic's registry entry (atomically) under `data_dir`.
pub fn write_topic(data_dir: &Path, topic: &TopicMeta) -> std::io::Result<()> {
    std::fs::create_dir_all(data_dir.join(METADATA_DIR))?;
    write_atomic(
        &topic_file(data_dir, &topic.name),
        encode_topic(topic).as_bytes(),
    )
}

fn topic_file(data_dir: &Path, name: &str) -> PathBuf {
    data_dir.join(METADATA_DIR).join(format!("{name}.topic"))
}

fn encode_topic(t: &TopicMeta) -> String {
    let mut s = format!("topic.id={}\npartitions={}\n", t.id, t.partitions);
    for (k, v) in &t.configs {
        s.push_str(&format!("config.{k}={v}\n"));
    }
    s
}

fn decode_topic(name: &str, text: &str) -> Option<TopicMeta> {
    let mut id = None;
    let mut partitions = None;
    let mut configs = BTreeMap::new();
    for line in text.lines() {
        let (k, v) = line.split_once('=')?;
        match k {
            "topic.id" => id = Uuid::parse_str(v).ok(),
            "partitions" => partitions = v.parse().ok(),
            _ => {
                if let Some(c) = k.strip_prefix("config.") {
                    configs.insert(c.to_string(), v.to_string());
                }
            }
        }
    }
    Some(TopicMeta {
        name: Arc::from(name),
        id: id?,
        partitions: partitions?,
        configs,
        assignments: Vec::new(),
    })
}

/// Loads every persisted topic into `image`. Unreadable files are logged and
/// skipped (their partition directories stay on disk untouched).
pub fn load_topics(data_dir: &Path, mut image: MetadataImage) -> std::io::Result<MetadataImage> {
    let dir = data_dir.join(METADATA_DIR);
    std::fs::create_dir_all(&dir)?;
    for entry in std::fs::read_dir(&dir)? {
        let entry = entry?;
        let path = entry.path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".topic"))
        else {
            continue;
        };
        match std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| decode_topic(name, &t))
        {
            Some(t) => image = image.with_topic(t),
            None => log::warn!("skipping unreadable topic file {}", path.display()),
        }
    }
    Ok(image)
}

/// Removes the legacy registry entry of `name` (adopted into the metadata
/// log).
pub fn remove_topic_file(data_dir: &Path, name: &str) -> std::io::Result<()> {
    match std::fs::remove_file(topic_file(data_dir, name)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The broker's clean-shutdown marker in the data directory: written with
/// the broker epoch once every shard closed its logs cleanly, read and
/// removed at the next start (Kafka's `.kafka_cleanshutdown`, whose epoch
/// is KIP-966's `PreviousBrokerEpoch`).
pub const BROKER_CLEAN_SHUTDOWN_FILE: &str = ".broker_clean_shutdown";

/// Takes the data directory and this broker's last epoch; writes the
/// clean-shutdown marker (`broker.epoch=<n>`, fsynced).
pub fn write_clean_shutdown(data_dir: &Path, broker_epoch: i64) -> std::io::Result<()> {
    write_atomic(
        &data_dir.join(BROKER_CLEAN_SHUTDOWN_FILE),
        format!("broker.epoch={broker_epoch}\n").as_bytes(),
    )
}

/// Takes the data directory; gives the broker epoch of the last clean
/// shutdown and removes the marker (a crash from now on is unclean), or
/// None when there is no readable marker or it cannot be removed.
pub fn take_clean_shutdown(data_dir: &Path) -> Option<i64> {
    let path = data_dir.join(BROKER_CLEAN_SHUTDOWN_FILE);
    let text = std::fs::read_to_string(&path).ok()?;
    if let Err(e) = std::fs::remove_file(&path) {
        log::warn!(
            "cannot remove {}: {e}; this start counts as after an unclean shutdown",
            path.display()
        );
        return None;
    }
    text.lines()
        .find_map(|l| l.strip_prefix("broker.epoch="))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_registry_round_trips_and_entries_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let mut configs = BTreeMap::new();
        configs.insert("cleanup.policy".to_string(), "compact".to_string());
        let t = TopicMeta {
            name: Arc::from("orders"),
            id: Uuid::new_v4(),
            partitions: 5,
            configs,
            assignments: Vec::new(),
        };
        write_topic(dir.path(), &t).unwrap();
        let img = load_topics(dir.path(), MetadataImage::empty("c".into())).unwrap();
        let r = img.topic("orders").unwrap();
        assert_eq!((r.id, r.partitions), (t.id, 5));
        assert_eq!(
            r.configs.get("cleanup.policy").map(String::as_str),
            Some("compact")
        );
        remove_topic_file(dir.path(), "orders").unwrap();
        remove_topic_file(dir.path(), "orders").unwrap();
        let img = load_topics(dir.path(), MetadataImage::empty("c".into())).unwrap();
        assert!(img.topic("orders").is_none());
    }

    #[test]
    fn meta_properties_keeps_cluster_id_and_checks_node_id() {
        let dir = tempfile::tempdir().unwrap();
        let a = load_or_create_meta(dir.path(), 1, None).unwrap();
        let b = load_or_create_meta(dir.path(), 1, None).unwrap();
        assert_eq!(a, b);
        assert!(matches!(
            load_or_create_meta(dir.path(), 2, None),
            Err(MetaPropertiesError::NodeIdMismatch { configured: 2, .. })
        ));
        assert_eq!(
            load_or_create_meta(dir.path(), 1, Some(a.as_str())).ok(),
            Some(a.clone()),
            "the same cluster id is accepted"
        );
        let other = load_or_create_meta(dir.path(), 1, Some("another-cluster"));
        match other {
            Err(e @ MetaPropertiesError::ClusterIdMismatch { .. }) => {
                assert!(e.to_string().contains("belongs to another cluster"), "{e}");
            }
            other => panic!("expected a cluster id mismatch, got {other:?}"),
        }
    }

    #[test]
    fn the_clean_shutdown_marker_is_read_once() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(take_clean_shutdown(dir.path()), None);
        write_clean_shutdown(dir.path(), 42).unwrap();
        assert_eq!(take_clean_shutdown(dir.path()), Some(42));
        assert_eq!(
            take_clean_shutdown(dir.path()),
            None,
            "a crash after a start is unclean"
        );
    }
}
