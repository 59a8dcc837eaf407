//! The controller role (shard 0): validates topic changes, persists them and
//! produces the next [`MetadataImage`]. Publishing the image to the shards is
//! done by `shard::Shard::publish_metadata`.
//!
//! On-disk state under the data directory:
//! - `meta.properties` — Kafka's file: `version=1`, `node.id`, `cluster.id`
//!   (and `directory.id` when written by `fjord format`, see
//!   [`super::format`]).
//! - `__cluster_metadata/<topic>.topic` — one file per topic: `topic.id=<uuid>`,
//!   `partitions=<n>`, then `config.<kafka name>=<value>` lines. Written to a
//!   temporary file, fsynced and renamed, so a crash leaves the old or the new
//!   file.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use uuid::Uuid;

use super::error::{InvalidPartitions, InvalidTopic};
use super::metadata::{MetadataImage, TopicMeta};
use crate::error::MetadataError;

/// Directory holding the topic registry, beside the partition directories.
pub const METADATA_DIR: &str = "__cluster_metadata";

/// Most partitions a topic may have (CreateTopics, CreatePartitions).
pub const MAX_PARTITIONS: i32 = 1_000_000;

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
        .unwrap_or_else(|| Uuid::new_v4().simple().to_string());
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

/// The controller's state: the latest image and where to persist changes.
#[derive(Debug)]
pub struct Controller {
    data_dir: PathBuf,
    image: Arc<MetadataImage>,
    producer_ids: Option<crate::txn::producer_ids::ProducerIdManager>,
}

impl Controller {
    /// A controller over `image`, persisting under `data_dir`.
    pub fn new(data_dir: PathBuf, image: Arc<MetadataImage>) -> Controller {
        Controller {
            data_dir,
            image,
            producer_ids: None,
        }
    }

    /// A producer id never handed out before (InitProducerId), from blocks
    /// persisted under `__cluster_metadata/producer-ids`.
    pub fn allocate_producer_id(&mut self) -> std::io::Result<i64> {
        if self.producer_ids.is_none() {
            let dir = self.data_dir.join(METADATA_DIR);
            std::fs::create_dir_all(&dir)?;
            self.producer_ids = Some(crate::txn::producer_ids::ProducerIdManager::open(&dir)?);
        }
        match self.producer_ids.as_mut() {
            Some(m) => m.allocate(),
            None => Err(std::io::Error::other("producer id manager unavailable")),
        }
    }

    /// The latest image.
    pub fn image(&self) -> Arc<MetadataImage> {
        self.image.clone()
    }

    /// Validates and persists a new topic; returns the next image.
    /// Errors: INVALID_TOPIC_EXCEPTION, TOPIC_ALREADY_EXISTS,
    /// INVALID_PARTITIONS (count < 1 or > 1,000,000), KAFKA_STORAGE_ERROR.
    /// With `validate_only` nothing is persisted and the image is unchanged.
    pub fn create_topic(
        &mut self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<Arc<TopicMeta>, MetadataError> {
        super::topic_name::validate(name)?;
        if self.image.topic(name).is_some() {
            return Err(MetadataError::TopicAlreadyExists {
                topic: name.to_string(),
                copy: None,
            });
        }
        if !(1..=1_000_000).contains(&partitions) {
            return Err(InvalidPartitions::OutOfRange {
                requested: partitions,
                min: 1,
                max: MAX_PARTITIONS,
            }
            .into());
        }
        // Kafka: '.' and '_' collide in metric names, so such topics cannot coexist.
        let canonical = name.replace('.', "_");
        if let Some(other) = self
            .image
            .topics
            .keys()
            .find(|t| t.replace('.', "_") == canonical)
        {
            return Err(InvalidTopic::Collides {
                name: name.to_string(),
                existing: other.to_string(),
            }
            .into());
        }
        self.check_open_files(partitions as i64)?;
        let topic = TopicMeta {
            name: Arc::from(name),
            id: Uuid::new_v4(),
            partitions,
            configs,
        };
        if validate_only {
            return Ok(Arc::new(topic));
        }
        self.commit_topic(topic)
    }

    /// Refuses `extra` more partitions when every partition's three open
    /// files (`.log`, `.index`, `.timeindex`) would not fit in the process's
    /// open-files limit (`ulimit -n`), keeping room for connections.
    fn check_open_files(&self, extra: i64) -> Result<(), MetadataError> {
        // SAFETY: getrlimit on a local struct.
        let limit = unsafe {
            let mut l: libc::rlimit = std::mem::zeroed();
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) != 0 {
                return Ok(());
            }
            l.rlim_cur as i64
        };
        let existing: i64 = self
            .image
            .topics
            .values()
            .map(|t| t.partitions as i64)
            .sum();
        let needed = (existing + extra) * 3 + 1024;
        if needed > limit {
            return Err(InvalidPartitions::OpenFiles {
                partitions: existing + extra,
                needed,
                limit,
            }
            .into());
        }
        Ok(())
    }

    /// Persists a new or changed topic, then moves the image to a version
    /// that has it; gives the topic as published.
    fn commit_topic(&mut self, topic: TopicMeta) -> Result<Arc<TopicMeta>, MetadataError> {
        write_topic(&self.data_dir, &topic)?;
        let name = topic.name.clone();
        self.image = Arc::new(self.image.with_topic(topic));
        self.image
            .topic(&name)
            .cloned()
            .ok_or(MetadataError::UnknownTopicOrPartition)
    }

    /// Removes a topic from the registry; returns it. The shards delete its
    /// partition directories when they apply the next image.
    pub fn delete_topic(&mut self, name: &str) -> Result<Arc<TopicMeta>, MetadataError> {
        let topic = self
            .image
            .topic(name)
            .cloned()
            .ok_or(MetadataError::UnknownTopicOrPartition)?;
        std::fs::remove_file(topic_file(&self.data_dir, name))?;
        self.image = Arc::new(self.image.without_topic(name));
        Ok(topic)
    }

    /// Replaces a topic's config overrides (AlterConfigs semantics; the
    /// caller computes the new set for IncrementalAlterConfigs). Every value
    /// is validated (INVALID_CONFIG naming the key); UNKNOWN_TOPIC_OR_PARTITION
    /// for unknown topics. Persisted, then published as a new image.
    pub fn alter_topic_configs(
        &mut self,
        name: &str,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<Arc<TopicMeta>, MetadataError> {
        let current = self
            .image
            .topic(name)
            .cloned()
            .ok_or(MetadataError::UnknownTopicOrPartition)?;
        for (k, v) in &configs {
            super::topic_config::validate(k, v)?;
        }
        let mut next = (*current).clone();
        next.configs = configs;
        if validate_only || next == *current {
            return Ok(Arc::new(next));
        }
        self.commit_topic(next)
    }

    /// Raises a topic's partition count to `count` (CreatePartitions).
    /// Errors: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS when `count` is
    /// not larger than the current count.
    pub fn create_partitions(
        &mut self,
        name: &str,
        count: i32,
        validate_only: bool,
    ) -> Result<Arc<TopicMeta>, MetadataError> {
        let current = self
            .image
            .topic(name)
            .cloned()
            .ok_or(MetadataError::UnknownTopicOrPartition)?;
        if count <= current.partitions {
            return Err(InvalidPartitions::NotAnIncrease {
                current: current.partitions,
                requested: count,
            }
            .into());
        }
        if count > MAX_PARTITIONS {
            return Err(InvalidPartitions::TooMany {
                requested: count,
                max: MAX_PARTITIONS,
            }
            .into());
        }
        let mut next = (*current).clone();
        next.partitions = count;
        if validate_only {
            return Ok(Arc::new(next));
        }
        self.commit_topic(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::metadata::BrokerMeta;

    fn image() -> MetadataImage {
        MetadataImage::empty(
            "c".into(),
            1,
            BrokerMeta {
                node_id: 1,
                host: "h".into(),
                port: 1,
                rack: None,
            },
        )
    }

    #[test]
    fn create_persist_reload_delete() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(METADATA_DIR)).unwrap();
        let mut c = Controller::new(dir.path().to_path_buf(), Arc::new(image()));
        let mut cfg = BTreeMap::new();
        cfg.insert("cleanup.policy".to_string(), "compact".to_string());
        let t = c.create_topic("orders", 3, cfg, false).unwrap();
        assert!(matches!(
            c.create_topic("orders", 3, BTreeMap::new(), false),
            Err(MetadataError::TopicAlreadyExists { .. })
        ));
        assert!(matches!(
            c.create_topic("bad name", 3, BTreeMap::new(), false),
            Err(MetadataError::InvalidTopic(_))
        ));
        assert!(matches!(
            c.create_topic("x", 0, BTreeMap::new(), false),
            Err(MetadataError::InvalidPartitions(_))
        ));
        c.create_partitions("orders", 5, false).unwrap();
        assert!(c.create_partitions("orders", 5, false).is_err());
        let reloaded = load_topics(dir.path(), image()).unwrap();
        let r = reloaded.topic("orders").unwrap();
        assert_eq!((r.id, r.partitions), (t.id, 5));
        assert_eq!(
            r.configs.get("cleanup.policy").map(String::as_str),
            Some("compact")
        );
        c.delete_topic("orders").unwrap();
        assert!(load_topics(dir.path(), image())
            .unwrap()
            .topic("orders")
            .is_none());
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
}
