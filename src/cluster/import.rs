//! Adopting partition directories written by another broker (Apache Kafka or
//! a Fjord data directory whose topic registry was lost): `fjord import-logs`.
//!
//! Kafka keeps topic names, ids and partition counts in its metadata log
//! (`__cluster_metadata-0`), which Fjord does not read. What a partition
//! directory carries itself is enough to rebuild Fjord's registry entry:
//! - the directory name `<topic>-<partition>`;
//! - `partition.metadata` (KIP-516): `version: 0` and `topic_id: <id>` in
//!   Kafka's base64url form, so the topic keeps its id.
//!
//! Segment files (`.log`, `.index`, `.timeindex`, `.txnindex`, `.snapshot`)
//! are Kafka's own formats and are served as they are; the first start after
//! an import validates the last segment of each partition (no Fjord
//! clean-shutdown marker exists yet) and rebuilds indexes that do not check.
//! Topic configs live in Kafka's metadata log, not in the directories: they
//! are given on the command line.
//!
//! Refused: a topic whose name is already registered (its directories would
//! be mixed with the registered topic's), a topic id already in use (two
//! topics with one id would serve each other's data to clients that fetch by
//! id), Kafka's internal topics (`__consumer_offsets`, `__transaction_state`:
//! Kafka 4.4 writes record versions Fjord does not read), and partition
//! numbers with gaps. Producer ids named in the imported logs are reserved
//! so that InitProducerId never hands one out again.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use base64::Engine;
use uuid::Uuid;

use crate::storage::batch::{BatchHeader, RECORD_BATCH_HEADER_BYTES};

use super::controller::{load_topics, write_topic};
use super::error::{
    CopiedDirectory, InvalidConfig, InvalidPartitions, InvalidRequest, InvalidTopic,
};
use super::metadata::{MetadataImage, TopicMeta};
use crate::cluster::error::MetadataError;

/// File name of Kafka's per-partition topic-id file.
pub const PARTITION_METADATA_FILE: &str = "partition.metadata";

/// Kafka's text form of a topic id: base64url without padding (22 chars).
pub fn topic_id_to_kafka(id: &Uuid) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id.as_bytes())
}

/// Parses Kafka's text form of a topic id; `None` when it is not 16 bytes of
/// base64url.
pub fn topic_id_from_kafka(text: &str) -> Option<Uuid> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text.trim())
        .ok()?;
    Uuid::from_slice(&bytes).ok()
}

/// The contents of `partition.metadata` for `id`, as Kafka writes it.
pub fn partition_metadata_text(id: &Uuid) -> String {
    format!("version: 0\ntopic_id: {}\n", topic_id_to_kafka(id))
}

/// Reads the topic id from a partition directory's `partition.metadata`.
/// `Ok(None)` when the file is missing; an error when it is unreadable or not
/// Kafka's version-0 form.
pub fn read_partition_metadata(dir: &Path) -> std::io::Result<Option<Uuid>> {
    let path = dir.join(PARTITION_METADATA_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(std::io::Error::new(
                e.kind(),
                format!("{}: {e}", path.display()),
            ))
        }
    };
    let bad = |what: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: {what}", path.display()),
        )
    };
    let mut version = None;
    let mut id = None;
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("version:") {
            version = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("topic_id:") {
            if id.is_some() {
                return Err(bad("more than one topic_id line"));
            }
            let parsed = topic_id_from_kafka(v).ok_or_else(|| bad("topic_id is not a topic id"))?;
            if parsed.is_nil() {
                return Err(bad("topic_id is the reserved zero id"));
            }
            id = Some(parsed);
        }
    }
    if version.as_deref() != Some("0") {
        return Err(bad("only version 0 is known"));
    }
    id.map(Some).ok_or_else(|| bad("no topic_id line"))
}

/// Writes `partition.metadata` into a partition directory when it is
/// missing (Kafka writes it on creation; a Kafka broker given a copy of the
/// directory checks it against its own topic id).
pub fn ensure_partition_metadata(dir: &Path, id: &Uuid) -> std::io::Result<()> {
    let path = dir.join(PARTITION_METADATA_FILE);
    if path.exists() {
        return Ok(());
    }
    super::controller::write_atomic(&path, partition_metadata_text(id).as_bytes())
}

/// One topic found on disk and not in the registry.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundTopic {
    /// Topic name (from the directory names).
    pub name: String,
    /// Topic id from `partition.metadata`, or a new one when no directory
    /// has the file.
    pub id: Uuid,
    /// Whether `id` came from the directories (false: newly made).
    pub id_from_disk: bool,
    /// Partition count: the highest partition number found + 1.
    pub partitions: i32,
    /// The highest producer id in the topic's record batches, if any.
    pub max_producer_id: Option<i64>,
}

/// Kafka's log-dir-level checkpoint of log start offsets (moved by
/// DeleteRecords and retention), which the migration procedure copies into
/// the data directory beside the partitions.
pub const KAFKA_LOG_START_CHECKPOINT: &str = "log-start-offset-checkpoint";

pub use crate::storage::checkpoint::read_kafka_checkpoint;

/// Kafka's internal topics, whose records Fjord keeps in its own versions.
const INTERNAL_TOPICS: [&str; 2] = ["__consumer_offsets", "__transaction_state"];

/// The highest producer id in the batch headers of every `.log` file in a
/// partition directory (headers only; a torn tail ends the scan of a file).
fn max_producer_id(dir: &Path) -> std::io::Result<Option<i64>> {
    use std::os::unix::fs::FileExt;
    let mut max = None;
    for e in std::fs::read_dir(dir)? {
        let path = e?.path();
        if path.extension().and_then(|x| x.to_str()) != Some("log") {
            continue;
        }
        let f = std::fs::File::open(&path)?;
        let len = f.metadata()?.len();
        let mut pos = 0u64;
        let mut buf = [0u8; RECORD_BATCH_HEADER_BYTES];
        while pos + RECORD_BATCH_HEADER_BYTES as u64 <= len {
            f.read_exact_at(&mut buf, pos)?;
            let Ok(h) = BatchHeader::parse(&buf) else {
                break;
            };
            if h.producer_id >= 0 {
                max = max.max(Some(h.producer_id));
            }
            pos += h.total_size() as u64;
        }
    }
    Ok(max)
}

/// Splits `<topic>-<partition>` at the last '-'.
fn split_partition_dir(name: &str) -> Option<(&str, i32)> {
    let (topic, p) = name.rsplit_once('-')?;
    let p: i32 = p.parse().ok()?;
    (p >= 0 && !topic.is_empty()).then_some((topic, p))
}

/// Scans `data_dir` for partition directories of topics that `image` does
/// not know. A directory counts when its name is `<topic>-<n>`, the topic
/// name is valid, and it holds a `.log` file or `partition.metadata`.
/// Errors: a topic whose partitions are not 0..n-1 without gaps, partitions
/// naming different topic ids, a topic name the registry refuses.
pub fn scan(data_dir: &Path, image: &MetadataImage) -> Result<Vec<FoundTopic>, MetadataError> {
    let io = MetadataError::from;
    let mut found: BTreeMap<String, (BTreeSet<i32>, BTreeSet<Uuid>)> = BTreeMap::new();
    for entry in std::fs::read_dir(data_dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        if !entry.file_type().map_err(io)?.is_dir() {
            continue;
        }
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let Some((topic, p)) = split_partition_dir(&name) else {
            continue;
        };
        // Kafka's own metadata log is not a topic.
        if topic == "__cluster_metadata" || super::topic_name::validate(topic).is_err() {
            continue;
        }
        let dir = entry.path();
        let id = read_partition_metadata(&dir).map_err(io)?;
        if let Some(t) = image.topic(topic) {
            // A directory the registered topic wrote itself, or an extra
            // copy to be refused.
            let own = id.is_none_or(|i| i == t.id) && p < t.partitions;
            if own {
                continue;
            }
            return Err(MetadataError::TopicAlreadyExists {
                topic: topic.to_string(),
                copy: Some(CopiedDirectory {
                    partitions: t.partitions,
                    topic_id: t.id,
                    directory: name,
                    directory_topic_id: id,
                }),
            });
        }
        if INTERNAL_TOPICS.contains(&topic) {
            return Err(InvalidTopic::InternalImport {
                directory: name.clone(),
                topic: topic.to_string(),
            }
            .into());
        }
        let has_log = std::fs::read_dir(&dir)
            .map_err(io)?
            .flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".log"));
        if id.is_none() && !has_log {
            continue;
        }
        let slot = found.entry(topic.to_string()).or_default();
        slot.0.insert(p);
        slot.1.extend(id);
    }
    let mut out = Vec::new();
    for (name, (parts, ids)) in found {
        let n = parts.len() as i32;
        if parts.iter().copied().ne(0..n) {
            return Err(InvalidPartitions::Gaps {
                topic: name,
                found: parts,
            }
            .into());
        }
        if ids.len() > 1 {
            return Err(InvalidRequest::MixedTopicIds { topic: name }.into());
        }
        let (id, id_from_disk) = match ids.into_iter().next() {
            Some(id) => (id, true),
            None => (Uuid::new_v4(), false),
        };
        let taken = image
            .topic_by_id(&id)
            .map(|t| t.name.to_string())
            .or_else(|| {
                out.iter()
                    .find(|f: &&FoundTopic| f.id == id)
                    .map(|f| f.name.clone())
            });
        if let Some(other) = taken {
            return Err(InvalidRequest::TopicIdTaken {
                topic: name,
                topic_id: id,
                other,
            }
            .into());
        }
        let mut max_pid = None;
        for p in 0..n {
            max_pid =
                max_pid.max(max_producer_id(&data_dir.join(format!("{name}-{p}"))).map_err(io)?);
        }
        out.push(FoundTopic {
            name,
            id,
            id_from_disk,
            partitions: n,
            max_producer_id: max_pid,
        });
    }
    Ok(out)
}

/// Registers every topic [`scan`] finds in `data_dir`, with `configs`
/// (topic name → Kafka topic config overrides, each validated like
/// CreateTopics does). Run on a stopped broker. Gives the registered topics.
/// A config for a topic that is neither found nor known is an error.
pub fn import(
    data_dir: &Path,
    configs: &BTreeMap<String, BTreeMap<String, String>>,
    dry_run: bool,
) -> Result<Vec<FoundTopic>, MetadataError> {
    let io = MetadataError::from;
    // The topics the metadata log has, and those already waiting in the
    // inbox of an earlier import.
    let logged = super::quorum::state_machine::read_offline(data_dir).map_err(io)?;
    let image = load_topics(data_dir, logged).map_err(io)?;
    let found = scan(data_dir, &image)?;
    for topic in configs.keys() {
        if !found.iter().any(|f| &f.name == topic) {
            return Err(InvalidRequest::ConfigForUnknownTopic {
                topic: topic.clone(),
            }
            .into());
        }
    }
    for (topic, kv) in configs {
        for (k, v) in kv {
            super::topic_config::validate(k, v).map_err(|e| InvalidConfig::ForTopic {
                topic: topic.clone(),
                source: Box::new(e),
            })?;
        }
    }
    let checkpoint = data_dir.join(KAFKA_LOG_START_CHECKPOINT);
    let log_starts = if checkpoint.exists() {
        read_kafka_checkpoint(&checkpoint).map_err(io)?
    } else {
        BTreeMap::new()
    };
    if dry_run {
        return Ok(found);
    }
    if let Some(max) = found.iter().filter_map(|f| f.max_producer_id).max() {
        crate::cluster::producer_ids::reserve_through(
            &data_dir.join(super::controller::METADATA_DIR),
            max,
        )
        .map_err(io)?;
    }
    for f in &found {
        let meta = TopicMeta {
            name: f.name.as_str().into(),
            id: f.id,
            partitions: f.partitions,
            configs: configs.get(&f.name).cloned().unwrap_or_default(),
            assignments: Vec::new(),
        };
        for p in 0..f.partitions {
            let dir = data_dir.join(format!("{}-{p}", f.name));
            ensure_partition_metadata(&dir, &f.id).map_err(io)?;
            if let Some(&start) = log_starts.get(&(f.name.clone(), p)) {
                crate::storage::write_offset_file(
                    &dir,
                    crate::storage::retention::LOG_START_CHECKPOINT,
                    start,
                )
                .map_err(io)?;
            }
        }
        write_topic(data_dir, &meta).map_err(io)?;
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_topic_id_text_round_trips() {
        // A topic id as Kafka prints it (kafka-topics --describe).
        let id = topic_id_from_kafka("OUnLQThsT16GjBQqHdL_sA").unwrap();
        assert_eq!(topic_id_to_kafka(&id), "OUnLQThsT16GjBQqHdL_sA");
        assert!(topic_id_from_kafka("not-an-id").is_none());
    }

    #[test]
    fn kafka_checkpoint_is_parsed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(KAFKA_LOG_START_CHECKPOINT);
        std::fs::write(&p, "0\n2\norders 0 40\nmy-topic-x 3 7\n").unwrap();
        let m = read_kafka_checkpoint(&p).unwrap();
        assert_eq!(m.get(&("orders".into(), 0)), Some(&40));
        assert_eq!(m.get(&("my-topic-x".into(), 3)), Some(&7));
        std::fs::write(&p, "0\n3\norders 0 40\n").unwrap();
        assert!(read_kafka_checkpoint(&p).is_err());
    }

    #[test]
    fn partition_metadata_is_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let id = Uuid::new_v4();
        ensure_partition_metadata(dir.path(), &id).unwrap();
        assert_eq!(read_partition_metadata(dir.path()).unwrap(), Some(id));
        std::fs::write(dir.path().join(PARTITION_METADATA_FILE), "version: 1\n").unwrap();
        assert!(read_partition_metadata(dir.path()).is_err());
    }

    #[test]
    fn scan_finds_unknown_topics_and_refuses_gaps() {
        let dir = tempfile::tempdir().unwrap();
        let id = Uuid::new_v4();
        for p in 0..3 {
            let d = dir.path().join(format!("orders-{p}"));
            std::fs::create_dir_all(&d).unwrap();
            ensure_partition_metadata(&d, &id).unwrap();
        }
        std::fs::create_dir_all(dir.path().join("__cluster_metadata-0")).unwrap();
        std::fs::create_dir_all(dir.path().join("empty-0")).unwrap();
        let found = import(dir.path(), &BTreeMap::new(), false).unwrap();
        assert_eq!(
            found,
            vec![FoundTopic {
                name: "orders".into(),
                id,
                id_from_disk: true,
                partitions: 3,
                max_producer_id: None,
            }]
        );
        // Registered now: a second import finds nothing.
        assert!(import(dir.path(), &BTreeMap::new(), false)
            .unwrap()
            .is_empty());

        // A second topic with the same id, and a copy beside a registered
        // topic, are refused.
        let d = dir.path().join("twin-0");
        std::fs::create_dir_all(&d).unwrap();
        ensure_partition_metadata(&d, &id).unwrap();
        assert!(import(dir.path(), &BTreeMap::new(), true).is_err());
        std::fs::remove_dir_all(&d).unwrap();
        let d = dir.path().join("orders-3");
        std::fs::create_dir_all(&d).unwrap();
        ensure_partition_metadata(&d, &Uuid::new_v4()).unwrap();
        assert!(import(dir.path(), &BTreeMap::new(), true).is_err());
        std::fs::remove_dir_all(&d).unwrap();
        let d = dir.path().join("__consumer_offsets-0");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("00000000000000000000.log"), b"").unwrap();
        assert!(import(dir.path(), &BTreeMap::new(), true).is_err());
        std::fs::remove_dir_all(&d).unwrap();

        let d = dir.path().join("gappy-1");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("00000000000000000000.log"), b"").unwrap();
        assert!(import(dir.path(), &BTreeMap::new(), true).is_err());
    }
}
