//! The share group dead-letter queue (KIP-1191, as Kafka 4.4 serves it):
//! the ARCHIVING runs a share-partition's window hands out
//! ([`SharePartition::take_dead_letters`](crate::share::partition::SharePartition::take_dead_letters))
//! are written to the group's dead-letter queue topic, one record per
//! offset, then archived in the window and persisted like any state change.
//!
//! Stages, each with its own error: the group's settings and the topic
//! are checked before each write ([`check_topic`]: the name set and not
//! starting with `__`, an existing topic with
//! `errors.deadletterqueue.group.enable=true`, a missing one only with
//! `errors.deadletterqueue.auto.create.topics.enable`, then created, the
//! broker's `errors.deadletterqueue.topic.name.prefix`); the records are
//! built ([`dead_letter_batches`]: uncompressed, CreateTime at the write,
//! six `__dlq.errors.*` headers, the source key and value only with
//! `errors.deadletterqueue.copy.record.enable`); they are appended to DLQ
//! partition `source partition % DLQ partitions`, through its owner shard
//! when this broker leads it, else with a Produce (acks=-1) to its leader.
//! A write is tried up to [`ATTEMPTS`] times, [`FIRST_BACKOFF`] apart,
//! doubling to [`MAX_BACKOFF`], as Kafka's; a run that cannot be written is
//! logged and archived anyway, so it never holds the share-partition start
//! offset. The write is not atomic with the state change: a crash between
//! them writes the run again when the window is loaded (duplicates are
//! possible, as on Kafka).

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::produce::{append_on, AppendError, PartitionAppend, Slot};
use super::share::ShareKey;
use crate::cluster::control::{ControllerReply, ControllerRequest, NewTopic};
use crate::cluster::error::{ControllerCallError, MetadataError};
use crate::cluster::metadata::NO_LEADER;
use crate::mesh::ShardError;
use crate::shard::error::{InternalAppendError, TransactionSupportedOperation};
use crate::shard::remote::RemoteError;
use crate::shard::{now_ms, Shard};
use crate::share::config::DeadLetterSettings;
use crate::share::partition::DeadLetterRun;

/// How many times a dead-letter write is tried (Kafka 4.4: 5).
pub const ATTEMPTS: u32 = 5;
/// The pause after the first failed try (Kafka 4.4: 1 s), doubled after
/// each further one.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(1_000);
/// The longest pause between two tries (Kafka 4.4: 30 s).
pub const MAX_BACKOFF: Duration = Duration::from_millis(30_000);
/// How long one append may wait for its acknowledgement (acks=-1).
const APPEND_TIMEOUT: Duration = Duration::from_secs(30);
/// The most record bytes (keys and values copied) in one dead-letter
/// batch, below the default `max.message.bytes` (1048588).
const BATCH_BYTES: usize = 512 * 1024;

/// The topic config a dead-letter queue topic must have set to `true`.
pub const GROUP_ENABLE_CONFIG: &str = "errors.deadletterqueue.group.enable";

/// Why a dead-letter write failed. Logged only (no client waits for it):
/// the run is archived anyway.
#[derive(Debug, thiserror::Error)]
pub enum DeadLetterError {
    /// The group has no `errors.deadletterqueue.topic.name` (any more).
    #[error("DLQ topic is not configured for share group {group}")]
    NotConfigured {
        /// The share group.
        group: String,
    },
    /// The name starts with `__` (internal topics).
    #[error(
        "Configured DLQ topic name in share group: {group} cannot start with __, topic: {topic}"
    )]
    InternalName {
        /// The share group.
        group: String,
        /// The configured topic.
        topic: String,
    },
    /// The topic exists without `errors.deadletterqueue.group.enable=true`.
    #[error("DLQ is not enabled on configured DLQ topic for share group: {group}, topic: {topic}")]
    NotEnabled {
        /// The share group.
        group: String,
        /// The configured topic.
        topic: String,
    },
    /// The topic does not exist and
    /// `errors.deadletterqueue.auto.create.topics.enable` is false.
    #[error("DLQ topic does not exist and auto create is disabled on cluster for share group: {group}, topic: {topic}")]
    MissingNoAutoCreate {
        /// The share group.
        group: String,
        /// The configured topic.
        topic: String,
    },
    /// The name lacks `errors.deadletterqueue.topic.name.prefix`.
    #[error("Configured DLQ topic name does not comply with the DLQ topic prefix in share group: {group}, topic: {topic}, prefix: {prefix}")]
    Prefix {
        /// The share group.
        group: String,
        /// The configured topic.
        topic: String,
        /// The broker's prefix.
        prefix: String,
    },
    /// Creating the missing topic failed (the controller's answer).
    #[error("creating DLQ topic {topic}: {source}")]
    Create {
        /// The topic.
        topic: String,
        /// Why.
        source: Box<MetadataError>,
    },
    /// The controller could not be asked to create the topic.
    #[error("creating DLQ topic {topic}: {source}")]
    Controller {
        /// The topic.
        topic: String,
        /// Why.
        source: ControllerCallError,
    },
    /// The topic (just created) or its partition has no leader yet.
    #[error("DLQ topic partition {topic}-{partition} has no leader")]
    NoLeader {
        /// The topic.
        topic: String,
        /// The DLQ partition.
        partition: i32,
    },
    /// The records could not be encoded.
    #[error(transparent)]
    Encode(#[from] InternalAppendError),
    /// The append on this broker failed (the produce path's error).
    #[error("appending to DLQ partition: {0}")]
    Append(Box<AppendError>),
    /// The owner shard of the DLQ partition did not answer.
    #[error(transparent)]
    Unanswered(#[from] ShardError),
    /// The Produce to the leader broker failed.
    #[error(transparent)]
    Remote(#[from] RemoteError),
}

impl DeadLetterError {
    /// Whether another try may succeed: a leader not elected yet, or an
    /// append, a broker or a controller that failed; a configuration that
    /// refuses the write does not change by retrying.
    fn retriable(&self) -> bool {
        match self {
            DeadLetterError::NotConfigured { .. }
            | DeadLetterError::InternalName { .. }
            | DeadLetterError::NotEnabled { .. }
            | DeadLetterError::MissingNoAutoCreate { .. }
            | DeadLetterError::Prefix { .. }
            | DeadLetterError::Encode(_) => false,
            DeadLetterError::Create { .. }
            | DeadLetterError::Controller { .. }
            | DeadLetterError::NoLeader { .. }
            | DeadLetterError::Append(_)
            | DeadLetterError::Unanswered(_)
            | DeadLetterError::Remote(_) => true,
        }
    }
}

/// What one dead-letter write is about: the share-partition (its key and
/// topic name) and a run of ARCHIVING offsets.
#[derive(Debug, Clone)]
struct Job {
    key: ShareKey,
    topic: Arc<str>,
    run: DeadLetterRun,
    settings: DeadLetterSettings,
}

/// Writes `runs` of the share-partition `key` (topic `topic`) to its
/// group's dead-letter queue (`settings`, the group's configs in force) in
/// the background on this shard (the one leading the source partition),
/// then archives each run in the window and persists it.
pub fn spawn(
    shard: &Rc<Shard>,
    key: &ShareKey,
    topic: &Arc<str>,
    settings: &DeadLetterSettings,
    runs: Vec<DeadLetterRun>,
) {
    if runs.is_empty() {
        return;
    }
    let me = shard.clone();
    let key = key.clone();
    let jobs: Vec<Job> = runs
        .into_iter()
        .map(|run| Job {
            key: key.clone(),
            topic: topic.clone(),
            run,
            settings: settings.clone(),
        })
        .collect();
    crate::shard::stall::spawn_local("share dead-letter write", async move {
        let mut cache = SourceCache::default();
        let mut changed = false;
        for job in jobs {
            if let Err(e) = write_with_retries(&me, &job, &mut cache).await {
                log::warn!(
                    "share group {}: dead-letter records of {}-{} offsets {}..={} not written ({e}); archived anyway",
                    job.key.0,
                    job.topic,
                    job.key.2,
                    job.run.first,
                    job.run.last
                );
            }
            changed |= me
                .share_partitions
                .borrow_mut()
                .get_mut(&job.key)
                .is_some_and(|led| led.window_mut().dead_lettered(job.run.first, job.run.last));
        }
        // One state write for every run of the acknowledgement. A failed
        // write dropped the window; the next load resumes what is still
        // ARCHIVING.
        if changed {
            let _ = super::share_persist::persist(&me, &key).await;
        }
    })
    .detach();
}

/// [`write_once`] until it succeeds, fails for good, or [`ATTEMPTS`] tries
/// failed (then the last error).
async fn write_with_retries(
    shard: &Rc<Shard>,
    job: &Job,
    cache: &mut SourceCache,
) -> Result<(), DeadLetterError> {
    let mut backoff = FIRST_BACKOFF;
    let mut attempt = 1;
    loop {
        match write_once(shard, job, cache).await {
            Ok(()) => return Ok(()),
            Err(e) if !e.retriable() || attempt >= ATTEMPTS => return Err(e),
            Err(e) => {
                log::info!(
                    "share group {}: dead-letter write of {}-{} try {attempt} failed: {e}; trying again in {backoff:?}",
                    job.key.0,
                    job.topic,
                    job.key.2
                );
                glommio::timer::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                attempt += 1;
            }
        }
    }
}

/// One try: the topic checked (and created), the records built, appended.
async fn write_once(
    shard: &Rc<Shard>,
    job: &Job,
    cache: &mut SourceCache,
) -> Result<(), DeadLetterError> {
    let group = job.key.0.to_string();
    let dlq = job.settings.topic.clone();
    let exists = check_topic(shard, &group, &dlq)?;
    if !exists {
        create_topic(shard, &dlq).await?;
    }
    let image = shard.metadata();
    let meta = image
        .topic(&dlq)
        .ok_or_else(|| DeadLetterError::NoLeader {
            topic: dlq.clone(),
            partition: -1,
        })?
        .clone();
    let target = job.key.2 % meta.partitions.max(1);
    let leader = meta.partition(target).map_or(NO_LEADER, |p| p.leader);
    if leader == NO_LEADER {
        return Err(DeadLetterError::NoLeader {
            topic: dlq,
            partition: target,
        });
    }
    let sources = if job.settings.copy_record {
        source_records(shard, job, cache).await
    } else {
        BTreeMap::new()
    };
    let dlq_topic: Arc<str> = dlq.into();
    for batch in dead_letter_batches(job, &sources, now_ms())? {
        if leader == shard.config.node_id {
            append_here(shard, &dlq_topic, target, batch).await?;
        } else {
            let remote = shard.remote().ok_or(RemoteError::NotInstalled)?;
            remote
                .produce(shard.clone(), leader, dlq_topic.clone(), target, batch)
                .await?;
        }
    }
    Ok(())
}

/// Checks the group's dead-letter queue topic `dlq` before a write, in
/// Kafka 4.4's order; gives whether it exists (false: to be created).
fn check_topic(shard: &Shard, group: &str, dlq: &str) -> Result<bool, DeadLetterError> {
    if dlq.is_empty() {
        return Err(DeadLetterError::NotConfigured {
            group: group.to_string(),
        });
    }
    let named = || (group.to_string(), dlq.to_string());
    if dlq.starts_with("__") {
        let (group, topic) = named();
        return Err(DeadLetterError::InternalName { group, topic });
    }
    let image = shard.metadata();
    let existing = image.topic(dlq);
    if let Some(t) = existing {
        let enabled = t
            .configs
            .get(GROUP_ENABLE_CONFIG)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        if !enabled {
            let (group, topic) = named();
            return Err(DeadLetterError::NotEnabled { group, topic });
        }
    } else if !shard.config.group.dlq_auto_create_topics_enable {
        let (group, topic) = named();
        return Err(DeadLetterError::MissingNoAutoCreate { group, topic });
    }
    let prefix = &shard.config.group.dlq_topic_name_prefix;
    if !prefix.is_empty() && !dlq.starts_with(prefix.as_str()) {
        let (group, topic) = named();
        return Err(DeadLetterError::Prefix {
            group,
            topic,
            prefix: prefix.clone(),
        });
    }
    Ok(existing.is_some())
}

/// Creates the missing dead-letter queue topic `dlq` with the broker's
/// default partitions and replication factor and the configs Kafka 4.4
/// gives it (`errors.deadletterqueue.group.enable=true`,
/// `message.timestamp.type=CreateTime`); one created meanwhile is fine.
async fn create_topic(shard: &Rc<Shard>, dlq: &str) -> Result<(), DeadLetterError> {
    let configs = BTreeMap::from([
        (GROUP_ENABLE_CONFIG.to_string(), "true".to_string()),
        (
            "message.timestamp.type".to_string(),
            "CreateTime".to_string(),
        ),
    ]);
    let req = ControllerRequest::CreateTopics {
        topics: vec![NewTopic {
            name: dlq.to_string(),
            partitions: shard.config.num_partitions,
            replication_factor: shard.config.default_replication_factor,
            assignments: None,
            configs,
            topic_id: None,
        }],
        validate_only: false,
    };
    let reply =
        crate::shard::submit(shard, req)
            .await
            .map_err(|source| DeadLetterError::Controller {
                topic: dlq.to_string(),
                source,
            })?;
    if let ControllerReply::CreateTopics(results) = reply {
        for r in results {
            match r {
                Ok(_) => log::info!("created dead-letter queue topic {dlq}"),
                Err(MetadataError::TopicAlreadyExists { .. }) => {}
                Err(source) => {
                    return Err(DeadLetterError::Create {
                        topic: dlq.to_string(),
                        source: Box::new(source),
                    })
                }
            }
        }
    }
    Ok(())
}

/// Appends one batch to `topic`-`partition` through its owner shard on
/// this broker, as a Produce with acks=-1 would.
async fn append_here(
    shard: &Rc<Shard>,
    topic: &Arc<str>,
    partition: i32,
    records: Bytes,
) -> Result<(), DeadLetterError> {
    let owner = shard.owner(topic, partition);
    let work = vec![PartitionAppend {
        slot: Slot::default(),
        topic: topic.clone(),
        partition,
        records,
        transactional_id: None,
        txn_operation: TransactionSupportedOperation::DefaultError,
    }];
    let (reserved, _rx) = crate::shard::home::reply_channel();
    let answers = append_on(
        shard,
        owner,
        work,
        Some(Instant::now() + APPEND_TIMEOUT),
        reserved,
    )
    .await;
    for a in answers {
        if let Some(e) = a.error {
            return Err(DeadLetterError::Append(Box::new(e)));
        }
    }
    Ok(())
}

/// The source records a writer read last, for its next runs: key and
/// value by offset, covering offsets `first..end` (the batches read).
/// Consecutive runs of one acknowledgement mostly fall in one batch, which
/// is then read and decoded once.
#[derive(Debug, Default)]
struct SourceCache {
    first: i64,
    end: i64,
    records: BTreeMap<i64, (Option<Bytes>, Option<Bytes>)>,
}

/// How many bytes one read of source records asks for: a read gives at
/// least the whole batch holding the offset asked, so only that batch is
/// read and decoded.
const SOURCE_READ_BYTES: u64 = 1;

/// The key and value of each record of `job`'s run, by offset, read from
/// the partition on this shard; what cannot be read (records gone, control
/// records, read failures) is left out: those dead-letter records carry
/// the headers only, as Kafka 4.4 writes them when the source cannot be
/// fetched. Reads the batches holding them one at a time, through `cache`.
async fn source_records(
    shard: &Rc<Shard>,
    job: &Job,
    cache: &mut SourceCache,
) -> BTreeMap<i64, (Option<Bytes>, Option<Bytes>)> {
    let mut out = BTreeMap::new();
    let Some(part) = shard.partition(&job.topic, job.key.2) else {
        return out;
    };
    let mut from = job.run.first;
    while from <= job.run.last {
        if !(cache.first..cache.end).contains(&from) {
            match read_source_batch(&part, job, from).await {
                Some(read) => *cache = read,
                None => break,
            }
        }
        let last = job.run.last.min(cache.end - 1);
        for (offset, kv) in cache.records.range(from..=last) {
            out.insert(*offset, kv.clone());
        }
        from = cache.end;
    }
    out
}

/// The records of the batch of `job`'s source partition holding offset
/// `from` (None when there is none or it cannot be read or decoded: logged).
async fn read_source_batch(
    part: &Rc<crate::shard::partition::Partition>,
    job: &Job,
    from: i64,
) -> Option<SourceCache> {
    let bytes = match super::share::read_batches(part, from, SOURCE_READ_BYTES, false).await {
        Ok((bytes, _)) if !bytes.is_empty() => bytes,
        Ok(_) => return None,
        Err(e) => {
            log::warn!(
                "share group {}: reading {}-{} at {from} for dead-letter records: {e}",
                job.key.0,
                job.topic,
                job.key.2
            );
            return None;
        }
    };
    let mut buf = bytes;
    let sets = match crate::storage::records::decode_batches(&mut buf) {
        Ok(s) => s,
        Err(e) => {
            log::warn!(
                "share group {}: decoding {}-{} at {from} for dead-letter records: {e}",
                job.key.0,
                job.topic,
                job.key.2
            );
            return None;
        }
    };
    let mut read = SourceCache {
        first: from,
        end: from,
        records: BTreeMap::new(),
    };
    for set in sets {
        for r in set.records {
            read.end = read.end.max(r.offset + 1);
            if r.offset >= from && !r.control {
                read.records.insert(r.offset, (r.key, r.value));
            }
        }
    }
    (read.end > from).then_some(read)
}

/// The dead-letter records of the job's run, one per offset, as
/// uncompressed batches of at most [`BATCH_BYTES`] copied bytes: timestamp
/// `now_ms` (CreateTime), the key and value from `sources` (null without),
/// and the headers `__dlq.errors.topic`, `__dlq.errors.partition`,
/// `__dlq.errors.offset`, `__dlq.errors.group`,
/// `__dlq.errors.delivery.count`, `__dlq.errors.message` (UTF-8 text).
fn dead_letter_batches(
    job: &Job,
    sources: &BTreeMap<i64, (Option<Bytes>, Option<Bytes>)>,
    now_ms: i64,
) -> Result<Vec<Bytes>, DeadLetterError> {
    let mut out = Vec::new();
    let mut records = Vec::new();
    let mut bytes = 0usize;
    for offset in job.run.first..=job.run.last {
        let (key, value) = sources.get(&offset).cloned().unwrap_or((None, None));
        let size = key.as_ref().map_or(0, Bytes::len) + value.as_ref().map_or(0, Bytes::len);
        if !records.is_empty() && bytes + size > BATCH_BYTES {
            out.push(crate::shard::internal::encode_batch(&records)?);
            records.clear();
            bytes = 0;
        }
        let mut r = crate::protocol::plain_record(records.len() as i64, now_ms, key, value);
        for (name, v) in [
            ("__dlq.errors.topic", job.topic.to_string()),
            ("__dlq.errors.partition", job.key.2.to_string()),
            ("__dlq.errors.offset", offset.to_string()),
            ("__dlq.errors.group", job.key.0.to_string()),
            (
                "__dlq.errors.delivery.count",
                job.run.delivery_count.to_string(),
            ),
            ("__dlq.errors.message", job.run.cause.message().to_string()),
        ] {
            r.headers.insert(name.into(), Some(Bytes::from(v)));
        }
        bytes += size;
        records.push(r);
    }
    if !records.is_empty() {
        out.push(crate::shard::internal::encode_batch(&records)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::share::partition::DeadLetterCause;

    #[test]
    fn one_record_per_offset_with_the_six_headers() {
        let job = Job {
            key: ("g".into(), uuid::Uuid::nil(), 1),
            topic: "t".into(),
            run: DeadLetterRun {
                first: 3,
                last: 4,
                delivery_count: 2,
                cause: DeadLetterCause::Rejected,
            },
            settings: DeadLetterSettings::default(),
        };
        let sources = BTreeMap::from([(4, (Some(Bytes::from("k")), Some(Bytes::from("v"))))]);
        let batches = dead_letter_batches(&job, &sources, 1234).unwrap();
        assert_eq!(batches.len(), 1);
        let mut buf = batches[0].clone();
        let set = crate::storage::records::decode_batch(&mut buf).unwrap();
        assert_eq!(set.records.len(), 2);
        let r = &set.records[0];
        assert_eq!((r.key.clone(), r.value.clone()), (None, None));
        assert_eq!(r.timestamp, 1234);
        let h = |name: &str| {
            r.headers
                .iter()
                .find(|(k, _)| k.as_str() == name)
                .and_then(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(h("__dlq.errors.topic"), Bytes::from("t"));
        assert_eq!(h("__dlq.errors.partition"), Bytes::from("1"));
        assert_eq!(h("__dlq.errors.offset"), Bytes::from("3"));
        assert_eq!(h("__dlq.errors.group"), Bytes::from("g"));
        assert_eq!(h("__dlq.errors.delivery.count"), Bytes::from("2"));
        assert_eq!(
            h("__dlq.errors.message"),
            Bytes::from("Offset rejected by client.")
        );
        assert_eq!(set.records[1].value, Some(Bytes::from("v")));
    }
}
