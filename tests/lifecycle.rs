//! Log lifecycle: topic configs (DescribeConfigs, AlterConfigs,
//! IncrementalAlterConfigs) and their effect on a running broker, retention
//! by time, DeleteRecords, DescribeLogDirs, and the durability of
//! acknowledged records across repeated `kill -9`. (Retention by size and
//! compaction are in-process scenarios in tests/inprocess.rs.)
//!
//! Retention tests start the broker with a short
//! `log.retention.check.interval.ms` and `log.segment.delete.delay.ms=0`, and
//! poll for each expected state with a deadline.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use kafka_protocol::messages::alter_configs_request as ac;
use kafka_protocol::messages::delete_records_request as dr;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
use kafka_protocol::messages::incremental_alter_configs_request as iac;
use kafka_protocol::messages::{
    AlterConfigsRequest, DeleteRecordsRequest, DescribeConfigsRequest, DescribeLogDirsRequest,
    IncrementalAlterConfigsRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{
    AlterConfig, ConfigSource, NewTopic, OwnedResourceSpecifier, ResourceSpecifier,
    TopicReplication,
};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Message, OwnedMessage, Timestamp};
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord, Producer, PurgeConfig};
use rdkafka::{Offset, TopicPartitionList};

/// Retention from start-up and every 200 ms, deleted files removed at once.
const FAST_RETENTION: &[&str] = &[
    "log.initial.task.delay.ms=0",
    "log.retention.check.interval.ms=200",
    "log.segment.delete.delay.ms=0",
];
/// How long a background task (retention, compaction) may take to act.
const BACKGROUND_DEADLINE: Duration = Duration::from_secs(20);

const RESOURCE_TOPIC: i8 = 2;
const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;
const OP_APPEND: i8 = 2;
const OP_SUBTRACT: i8 = 3;
const NONE: i16 = 0;
const OFFSET_OUT_OF_RANGE: i16 = 1;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_CONFIG: i16 = 40;

const DYNAMIC_TOPIC: &str = "DYNAMIC_TOPIC_CONFIG";
const STATIC_BROKER: &str = "STATIC_BROKER_CONFIG";
const DEFAULT: &str = "DEFAULT_CONFIG";

/// Every topic config the broker documents.
const TOPIC_CONFIG_NAMES: &[&str] = &[
    "cleanup.policy",
    "retention.ms",
    "retention.bytes",
    "segment.bytes",
    "segment.ms",
    "segment.index.bytes",
    "index.interval.bytes",
    "max.message.bytes",
    "message.timestamp.type",
    "min.compaction.lag.ms",
    "max.compaction.lag.ms",
    "delete.retention.ms",
    "min.cleanable.dirty.ratio",
    "flush.messages",
    "flush.ms",
    "file.delete.delay.ms",
    "min.insync.replicas",
    "compression.type",
];

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// One DescribeConfigs v4 entry: value, source, type, synonyms (name,
/// source), whether it has documentation.
type WireEntry = (Option<String>, i8, i8, Vec<(String, i8)>, bool);

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// Creates a one-partition topic with `configs` and waits for its leader.
async fn create_topic_with(broker: &Broker, topic: &str, configs: &[(&str, &str)]) {
    let admin = broker.admin();
    let mut nt = NewTopic::new(topic, 1, TopicReplication::Fixed(1));
    for (k, v) in configs {
        nt = nt.set(k, v);
    }
    let res = admin
        .create_topics(&[nt], &admin_opts())
        .await
        .expect("CreateTopics request");
    assert_eq!(
        res,
        vec![Ok(topic.to_string())],
        "create {topic} with {configs:?}"
    );
    let c = broker.consumer(&[]);
    wait_for(CLIENT_TIMEOUT, &format!("metadata for {topic}"), || {
        partition_count(&c, topic) == Some(1)
    });
}

fn source_name(s: &ConfigSource) -> &'static str {
    match s {
        ConfigSource::DynamicTopic => DYNAMIC_TOPIC,
        ConfigSource::StaticBroker => STATIC_BROKER,
        ConfigSource::Default => DEFAULT,
        ConfigSource::DynamicBroker => "DYNAMIC_BROKER_CONFIG",
        ConfigSource::DynamicDefaultBroker => "DYNAMIC_DEFAULT_BROKER_CONFIG",
        ConfigSource::Unknown => "UNKNOWN",
    }
}

/// DescribeConfigs (rdkafka) of a topic: name → (value, source).
async fn describe_topic(broker: &Broker, topic: &str) -> BTreeMap<String, (String, &'static str)> {
    let admin = broker.admin();
    let res = admin
        .describe_configs(&[ResourceSpecifier::Topic(topic)], &admin_opts())
        .await
        .expect("DescribeConfigs request");
    assert_eq!(res.len(), 1);
    let r = res[0]
        .as_ref()
        .unwrap_or_else(|e| panic!("DescribeConfigs {topic}: {e:?}"));
    assert_eq!(
        r.specifier,
        OwnedResourceSpecifier::Topic(topic.to_string())
    );
    let mut out = BTreeMap::new();
    for e in &r.entries {
        let v = e
            .value
            .clone()
            .unwrap_or_else(|| panic!("{} has no value", e.name));
        let prev = out.insert(e.name.clone(), (v, source_name(&e.source)));
        assert!(prev.is_none(), "{} listed twice", e.name);
    }
    out
}

/// The topic overrides (DYNAMIC_TOPIC_CONFIG entries) of a description.
fn overrides(d: &BTreeMap<String, (String, &'static str)>) -> BTreeMap<String, String> {
    d.iter()
        .filter(|(_, (_, s))| *s == DYNAMIC_TOPIC)
        .map(|(k, (v, _))| (k.clone(), v.clone()))
        .collect()
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn entry(v: &str, s: &'static str) -> (String, &'static str) {
    (v.to_string(), s)
}

/// IncrementalAlterConfigs v1 over the wire for one topic: (error code,
/// error message).
fn incremental_alter(
    broker: &Broker,
    topic: &str,
    ops: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> (i16, Option<String>) {
    let configs = ops
        .iter()
        .map(|(name, op, value)| {
            iac::AlterableConfig::default()
                .with_name(sb(name))
                .with_config_operation(*op)
                .with_value(value.map(sb))
        })
        .collect();
    let req = IncrementalAlterConfigsRequest::default()
        .with_validate_only(validate_only)
        .with_resources(vec![iac::AlterConfigsResource::default()
            .with_resource_type(RESOURCE_TOPIC)
            .with_resource_name(sb(topic))
            .with_configs(configs)]);
    let mut s = connect(&broker.bootstrap());
    let resp = kp_call(&mut s, 1, 44, &req);
    assert_eq!(resp.responses.len(), 1);
    let r = &resp.responses[0];
    assert_eq!(r.resource_type, RESOURCE_TOPIC);
    assert_eq!(r.resource_name.as_str(), topic);
    (
        r.error_code,
        r.error_message.as_ref().map(|m| m.to_string()),
    )
}

/// IncrementalAlterConfigs SET of each pair; asserts success.
fn set_configs(broker: &Broker, topic: &str, pairs: &[(&str, &str)]) {
    let ops: Vec<(&str, i8, Option<&str>)> =
        pairs.iter().map(|(k, v)| (*k, OP_SET, Some(*v))).collect();
    let (code, msg) = incremental_alter(broker, topic, &ops, false);
    assert_eq!(code, NONE, "SET {pairs:?} on {topic}: {msg:?}");
}

/// AlterConfigs (`version`) over the wire for one topic: (error code,
/// message).
fn alter_raw(
    broker: &Broker,
    topic: &str,
    version: i16,
    pairs: &[(&str, &str)],
) -> (i16, Option<String>) {
    let configs = pairs
        .iter()
        .map(|(k, v)| {
            ac::AlterableConfig::default()
                .with_name(sb(k))
                .with_value(Some(sb(v)))
        })
        .collect();
    let req =
        AlterConfigsRequest::default().with_resources(vec![ac::AlterConfigsResource::default()
            .with_resource_type(RESOURCE_TOPIC)
            .with_resource_name(sb(topic))
            .with_configs(configs)]);
    let mut s = connect(&broker.bootstrap());
    let resp = kp_call(&mut s, version, 33, &req);
    assert_eq!(resp.responses.len(), 1);
    let r = &resp.responses[0];
    (
        r.error_code,
        r.error_message.as_ref().map(|m| m.to_string()),
    )
}

/// Asserts an alter answer is INVALID_CONFIG with a message naming `key`.
fn assert_invalid_config(answer: (i16, Option<String>), key: &str, what: &str) {
    let (code, msg) = answer;
    assert_eq!(
        code, INVALID_CONFIG,
        "{what}: expected INVALID_CONFIG, message {msg:?}"
    );
    let msg = msg.unwrap_or_default();
    assert!(
        msg.contains(key),
        "{what}: message {msg:?} does not name {key}"
    );
}

/// DeleteRecords v2 over the wire: (error code, low watermark).
fn delete_records_raw(broker: &Broker, topic: &str, offset: i64) -> (i16, i64) {
    let req = DeleteRecordsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![dr::DeleteRecordsTopic::default()
            .with_name(TopicName(sb(topic)))
            .with_partitions(vec![dr::DeleteRecordsPartition::default()
                .with_partition_index(0)
                .with_offset(offset)])]);
    let mut s = connect(&broker.bootstrap());
    let resp = kp_call(&mut s, 2, 21, &req);
    assert_eq!(resp.topics.len(), 1);
    assert_eq!(resp.topics[0].partitions.len(), 1);
    let p = &resp.topics[0].partitions[0];
    assert_eq!(p.partition_index, 0);
    (p.error_code, p.low_watermark)
}

/// DescribeLogDirs v4 over the wire: the size partition 0 of `topic` reports.
fn log_dir_size(broker: &Broker, topic: &str) -> i64 {
    let req =
        DescribeLogDirsRequest::default()
            .with_topics(Some(vec![DescribableLogDirTopic::default()
                .with_topic(TopicName(sb(topic)))
                .with_partitions(vec![0])]));
    let mut s = connect(&broker.bootstrap());
    let resp = kp_call(&mut s, 4, 35, &req);
    assert_eq!(resp.error_code, NONE, "DescribeLogDirs error");
    assert_eq!(resp.results.len(), 1, "one log dir");
    let r = &resp.results[0];
    assert_eq!(r.error_code, NONE, "log dir error");
    assert!(r.total_bytes > 0, "v4 total_bytes {}", r.total_bytes);
    assert!(
        (0..=r.total_bytes).contains(&r.usable_bytes),
        "v4 usable_bytes {}",
        r.usable_bytes
    );
    let t = r
        .topics
        .iter()
        .find(|t| t.name.0.as_str() == topic)
        .unwrap_or_else(|| panic!("DescribeLogDirs has no {topic}"));
    assert_eq!(t.partitions.len(), 1);
    assert_eq!(t.partitions[0].partition_index, 0);
    t.partitions[0].partition_size
}

fn partition_dir(broker: &Broker, topic: &str) -> PathBuf {
    broker.data_dir().join(format!("{topic}-0"))
}

/// `.log` segment files of a partition directory, by base offset.
fn segment_files(dir: &Path) -> Vec<(i64, PathBuf)> {
    let mut v: Vec<(i64, PathBuf)> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(|e| {
            let e = e.expect("dir entry");
            let name = e.file_name().to_string_lossy().into_owned();
            let stem = name.strip_suffix(".log")?;
            if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some((stem.parse().unwrap(), e.path()))
        })
        .collect();
    v.sort();
    v
}

/// Names of files still waiting for removal (`*.deleted`).
fn pending_deletes(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".deleted"))
        .collect()
}

/// Checks every `.log` file of a partition: each batch has magic 2 and a
/// valid CRC32C, the file ends exactly at a batch boundary, batches lie at or
/// above the segment's base offset and offsets never go back. Gives the
/// number of batches.
fn assert_segments_intact(dir: &Path) -> usize {
    let mut next: Option<i64> = None;
    let mut total = 0;
    for (base, path) in segment_files(dir) {
        let data = fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let batches = segment_batches(&path);
        let end = batches.last().map(|b| b.0 + b.3).unwrap_or(0);
        assert_eq!(
            end,
            data.len(),
            "{} does not end on a batch boundary ({} bytes after the last whole batch)",
            path.display(),
            data.len() - end
        );
        for &(pos, offset, count, len) in &batches {
            let b = &data[pos..pos + len];
            assert_eq!(b[16], 2, "{} @{pos}: magic {}", path.display(), b[16]);
            let stored = u32::from_be_bytes(b[17..21].try_into().unwrap());
            let actual = crc32c::crc32c(&b[21..]);
            assert_eq!(
                stored,
                actual,
                "{} @{pos} (base offset {offset}): CRC32C mismatch",
                path.display()
            );
            assert!(
                offset >= base,
                "{}: batch at offset {offset} below the segment base {base}",
                path.display()
            );
            if let Some(n) = next {
                assert!(
                    offset >= n,
                    "{}: batch at offset {offset} after one ending at {n}",
                    path.display()
                );
            }
            next = Some(offset + count);
        }
        total += batches.len();
    }
    total
}

fn padded(prefix: &str, i: usize, pad: usize) -> String {
    format!("{prefix}-{i:06}-{}", "x".repeat(pad))
}

/// Produces each value as its own request (awaited one by one, so one
/// batch each), with an explicit CreateTime when `timestamp` is given.
/// Gives the offsets.
async fn produce_each(
    producer: &FutureProducer,
    topic: &str,
    values: &[String],
    timestamp: Option<i64>,
) -> Vec<i64> {
    let mut offsets = Vec::with_capacity(values.len());
    for v in values {
        let mut rec = FutureRecord::to(topic).partition(0).key("k").payload(v);
        if let Some(ts) = timestamp {
            rec = rec.timestamp(ts);
        }
        let d = producer
            .send(rec, Duration::from_secs(30))
            .await
            .unwrap_or_else(|(e, _)| panic!("produce {v:.20} to {topic}: {e}"));
        offsets.push(d.offset);
    }
    offsets
}

/// Reads partition 0 of `topic` from `from` up to the current high
/// watermark (gaps allowed, as after compaction).
fn read_to_end(broker: &Broker, topic: &str, from: Offset) -> Vec<OwnedMessage> {
    let probe = broker.consumer(&[]);
    let (_, high) = watermarks(&probe, topic, 0);
    let c = broker.assigned_consumer(topic, &[0], from);
    let mut out: Vec<OwnedMessage> = Vec::new();
    let deadline = Instant::now() + CLIENT_TIMEOUT;
    while out.last().map(|m| m.offset() + 1).unwrap_or(0) < high {
        assert!(
            Instant::now() < deadline,
            "reading {topic} to offset {high}: got {} messages, last {:?}",
            out.len(),
            out.last().map(|m| m.offset())
        );
        match c.poll(Duration::from_millis(200)) {
            None => {}
            Some(Ok(m)) => out.push(m.detach()),
            Some(Err(e)) => panic!("consumer error on {topic}: {e}"),
        }
    }
    out
}

fn payload_str(m: &OwnedMessage) -> String {
    String::from_utf8(m.payload().expect("payload").to_vec()).expect("utf8 payload")
}

// ---------------------------------------------------------------------------
// 1. Describe / alter round trip
// ---------------------------------------------------------------------------

/// DescribeConfigs reports each topic config with its value and source;
/// AlterConfigs replaces the override set; IncrementalAlterConfigs SET,
/// DELETE, APPEND and SUBTRACT change only what they name; bad values are
/// INVALID_CONFIG naming the key and change nothing; validate_only changes
/// nothing; everything survives a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configs_describe_alter_and_survive_restart() {
    let mut broker = Broker::start_with(&[
        "log.retention.bytes=987654321",
        "log.initial.task.delay.ms=0",
        "log.retention.check.interval.ms=200",
    ]);
    let topic = "configured";
    create_topic_with(
        &broker,
        topic,
        &[("segment.bytes", "65536"), ("retention.ms", "3600000")],
    )
    .await;

    // Describe: every config, with its source.
    let d = describe_topic(&broker, topic).await;
    for k in TOPIC_CONFIG_NAMES {
        assert!(d.contains_key(*k), "DescribeConfigs lacks {k}: {d:?}");
    }
    assert_eq!(d["segment.bytes"], entry("65536", DYNAMIC_TOPIC));
    assert_eq!(d["retention.ms"], entry("3600000", DYNAMIC_TOPIC));
    assert_eq!(d["retention.bytes"], entry("987654321", STATIC_BROKER));
    assert_eq!(d["max.message.bytes"], entry("1048588", DEFAULT));
    assert_eq!(d["cleanup.policy"], entry("delete", DEFAULT));
    assert_eq!(d["message.timestamp.type"], entry("CreateTime", DEFAULT));
    assert_eq!(
        overrides(&d),
        map(&[("segment.bytes", "65536"), ("retention.ms", "3600000")])
    );

    // A topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION. (rdkafka's
    // describe_configs drops per-resource errors, so this goes over the wire.)
    let req =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(RESOURCE_TOPIC)
            .with_resource_name(sb("no-such-topic"))
            .with_configuration_keys(None)]);
    let resp = kp_call(&mut connect(&broker.bootstrap()), 4, 32, &req);
    assert_eq!(resp.results.len(), 1);
    assert_eq!(
        resp.results[0].error_code, UNKNOWN_TOPIC_OR_PARTITION,
        "describe of a missing topic: {:?}",
        resp.results[0].error_message
    );
    assert!(resp.results[0].configs.is_empty());

    // DescribeConfigs v4 with chosen keys, synonyms and documentation: only
    // those keys, each with its type and its chain of synonyms (topic
    // override, broker setting, default) under the broker-level names.
    let req = DescribeConfigsRequest::default()
        .with_include_synonyms(true)
        .with_include_documentation(true)
        .with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(RESOURCE_TOPIC)
            .with_resource_name(sb(topic))
            .with_configuration_keys(Some(vec![
                sb("retention.bytes"),
                sb("segment.bytes"),
            ]))]);
    let resp = kp_call(&mut connect(&broker.bootstrap()), 4, 32, &req);
    assert_eq!(resp.results.len(), 1);
    let r = &resp.results[0];
    assert_eq!(r.error_code, NONE);
    let got: BTreeMap<String, WireEntry> = r
        .configs
        .iter()
        .map(|c| {
            (
                c.name.to_string(),
                (
                    c.value.as_ref().map(|v| v.to_string()),
                    c.config_source,
                    c.config_type,
                    c.synonyms
                        .iter()
                        .map(|s| (s.name.to_string(), s.source))
                        .collect(),
                    c.documentation.as_ref().is_some_and(|d| !d.is_empty()),
                ),
            )
        })
        .collect();
    let want: BTreeMap<String, WireEntry> = [
        (
            "retention.bytes".to_string(),
            (
                Some("987654321".to_string()),
                4,
                5,
                vec![
                    ("log.retention.bytes".to_string(), 4),
                    ("log.retention.bytes".to_string(), 5),
                ],
                true,
            ),
        ),
        (
            "segment.bytes".to_string(),
            (
                Some("65536".to_string()),
                1,
                3,
                vec![
                    ("segment.bytes".to_string(), 1),
                    ("log.segment.bytes".to_string(), 5),
                ],
                true,
            ),
        ),
    ]
    .into_iter()
    .collect();
    assert_eq!(
        got, want,
        "(value, source, type, synonyms, has documentation) per key"
    );

    // Altering a topic that does not exist.
    let r = incremental_alter(
        &broker,
        "no-such-topic",
        &[("retention.ms", OP_SET, Some("1000"))],
        false,
    );
    assert_eq!(
        r.0, UNKNOWN_TOPIC_OR_PARTITION,
        "alter of a missing topic: {r:?}"
    );

    // AlterConfigs replaces the whole override set.
    let res = broker
        .admin()
        .alter_configs(
            &[AlterConfig::new(ResourceSpecifier::Topic(topic))
                .set("max.message.bytes", "2000000")
                .set("flush.ms", "1000")],
            &admin_opts(),
        )
        .await
        .expect("AlterConfigs request");
    assert_eq!(res, vec![Ok(OwnedResourceSpecifier::Topic(topic.into()))]);
    let d = describe_topic(&broker, topic).await;
    assert_eq!(
        overrides(&d),
        map(&[("max.message.bytes", "2000000"), ("flush.ms", "1000")])
    );
    assert_eq!(d["segment.bytes"], entry("1073741824", DEFAULT));
    assert_eq!(d["retention.ms"], entry("604800000", DEFAULT));
    assert_eq!(d["retention.bytes"], entry("987654321", STATIC_BROKER));

    // IncrementalAlterConfigs: SET, DELETE, APPEND in one request.
    let r = incremental_alter(
        &broker,
        topic,
        &[
            ("retention.ms", OP_SET, Some("7200000")),
            ("flush.ms", OP_DELETE, None),
            ("cleanup.policy", OP_APPEND, Some("compact")),
        ],
        false,
    );
    assert_eq!(r, (NONE, None), "incremental SET/DELETE/APPEND");
    let d = describe_topic(&broker, topic).await;
    assert_eq!(
        overrides(&d),
        map(&[
            ("max.message.bytes", "2000000"),
            ("retention.ms", "7200000"),
            ("cleanup.policy", "delete,compact"),
        ])
    );
    assert_eq!(d["flush.ms"], entry("9223372036854775807", DEFAULT));

    // SUBTRACT then APPEND on the list config; DELETE of a key that is not
    // overridden is a no-op.
    let r = incremental_alter(
        &broker,
        topic,
        &[("cleanup.policy", OP_SUBTRACT, Some("delete"))],
        false,
    );
    assert_eq!(r.0, NONE, "SUBTRACT: {r:?}");
    let d = describe_topic(&broker, topic).await;
    assert_eq!(d["cleanup.policy"], entry("compact", DYNAMIC_TOPIC));
    let r = incremental_alter(
        &broker,
        topic,
        &[
            ("cleanup.policy", OP_APPEND, Some("delete")),
            ("segment.index.bytes", OP_DELETE, None),
        ],
        false,
    );
    assert_eq!(r.0, NONE, "APPEND: {r:?}");
    let d = describe_topic(&broker, topic).await;
    assert_eq!(d["cleanup.policy"], entry("compact,delete", DYNAMIC_TOPIC));
    assert_eq!(d["segment.index.bytes"], entry("10485760", DEFAULT));
    let expected = map(&[
        ("max.message.bytes", "2000000"),
        ("retention.ms", "7200000"),
        ("cleanup.policy", "compact,delete"),
    ]);
    assert_eq!(overrides(&d), expected);

    // validate_only: accepted, not applied.
    let r = incremental_alter(
        &broker,
        topic,
        &[("retention.ms", OP_SET, Some("1000"))],
        true,
    );
    assert_eq!(r.0, NONE, "validate_only: {r:?}");
    let r = incremental_alter(
        &broker,
        topic,
        &[("segment.bytes", OP_SET, Some("-3"))],
        true,
    );
    assert_invalid_config(r, "segment.bytes", "validate_only with a bad value");

    // Invalid values and keys: INVALID_CONFIG naming the key.
    let cases: &[(&str, i8, Option<&str>)] = &[
        ("segment.bytes", OP_SET, Some("banana")),
        ("segment.bytes", OP_SET, Some("1")),
        ("min.cleanable.dirty.ratio", OP_SET, Some("1.5")),
        ("cleanup.policy", OP_SET, Some("delete,keep")),
        ("message.timestamp.type", OP_SET, Some("WallClock")),
        ("retention.forever", OP_SET, Some("1")),
        ("segment.bytes", OP_APPEND, Some("1024")),
    ];
    for &(key, op, value) in cases {
        let r = incremental_alter(&broker, topic, &[(key, op, value)], false);
        assert_invalid_config(r, key, &format!("incremental op {op} {key}={value:?}"));
    }
    // One bad entry fails the whole resource: the good one is not applied.
    let r = incremental_alter(
        &broker,
        topic,
        &[
            ("retention.ms", OP_SET, Some("5000")),
            ("max.message.bytes", OP_SET, Some("-1")),
        ],
        false,
    );
    assert_invalid_config(r, "max.message.bytes", "mixed good and bad");
    // AlterConfigs over the wire, every version.
    for version in 0..=2 {
        assert_invalid_config(
            alter_raw(&broker, topic, version, &[("retention.ms", "-5")]),
            "retention.ms",
            &format!("AlterConfigs v{version} retention.ms=-5"),
        );
    }
    // rdkafka 0.39 reports Ok for every resource of an AlterConfigs answer
    // (it does not read per-resource errors), so only the effect is checked
    // here: nothing changes.
    broker
        .admin()
        .alter_configs(
            &[AlterConfig::new(ResourceSpecifier::Topic(topic)).set("retention.bytes", "lots")],
            &admin_opts(),
        )
        .await
        .expect("AlterConfigs request");
    let d = describe_topic(&broker, topic).await;
    assert_eq!(overrides(&d), expected, "failed alters changed nothing");

    // Clean restart: the same description.
    broker.restart();
    let after = describe_topic(&broker, topic).await;
    assert_eq!(after, d, "configs after a restart");
    broker.stop();
}

// ---------------------------------------------------------------------------
// 2. Changes apply to a running partition
// ---------------------------------------------------------------------------

/// segment.bytes, max.message.bytes and message.timestamp.type altered on a
/// live topic take effect on the next append, without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_changes_apply_without_restart() {
    let mut broker = Broker::start_with(FAST_RETENTION);
    let topic = "live";
    create_topic_with(&broker, topic, &[]).await;
    let dir = partition_dir(&broker, topic);
    // Client limits far above the broker's so the broker decides.
    let producer = broker.producer(&[("acks", "all"), ("message.max.bytes", "10000000")]);

    let first: Vec<String> = (0..10).map(|i| padded("a", i, 150)).collect();
    produce_each(&producer, topic, &first, None).await;
    assert_eq!(segment_files(&dir).len(), 1, "one segment at 1 GiB");

    // Smaller segments from the next append on.
    set_configs(&broker, topic, &[("segment.bytes", "1024")]);
    let second: Vec<String> = (0..30).map(|i| padded("b", i, 150)).collect();
    produce_each(&producer, topic, &second, None).await;
    let segs = segment_files(&dir);
    assert!(
        segs.len() >= 5,
        "30 batches of ~230 bytes at segment.bytes=1024 should give at least 5 segments, got {}",
        segs.len()
    );
    // Every segment started after the change (all but the first and the
    // active one) respects the new size.
    for (base, path) in &segs[1..segs.len() - 1] {
        let len = fs::metadata(path).unwrap().len();
        assert!(
            len <= 1024,
            "segment {base} is {len} bytes, over segment.bytes=1024"
        );
    }

    // max.message.bytes: a batch over it is refused, smaller ones pass.
    set_configs(&broker, topic, &[("max.message.bytes", "2000")]);
    let big = "B".repeat(5000);
    let err = producer
        .send(
            FutureRecord::to(topic).partition(0).key("k").payload(&big),
            Duration::from_secs(30),
        )
        .await
        .expect_err("a 5000-byte record over max.message.bytes=2000");
    assert_eq!(
        err.0,
        KafkaError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge),
        "error for a batch over max.message.bytes"
    );
    let small = vec![padded("c", 0, 500)];
    produce_each(&producer, topic, &small, None).await;
    // Back to the default: the same record passes.
    let r = incremental_alter(
        &broker,
        topic,
        &[("max.message.bytes", OP_DELETE, None)],
        false,
    );
    assert_eq!(r.0, NONE, "DELETE max.message.bytes: {r:?}");
    let big_off = produce_each(&producer, topic, std::slice::from_ref(&big), None).await[0];

    // message.timestamp.type=LogAppendTime: the broker stamps new batches.
    set_configs(
        &broker,
        topic,
        &[("message.timestamp.type", "LogAppendTime")],
    );
    let before = now_ms();
    let stamped = produce_each(&producer, topic, &[padded("d", 0, 10)], Some(1_000_000)).await[0];

    // Everything acknowledged is there, the refused batch is not.
    let msgs = read_to_end(&broker, topic, Offset::Beginning);
    let values: Vec<String> = msgs.iter().map(payload_str).collect();
    let mut expected: Vec<String> = first.clone();
    expected.extend(second.iter().cloned());
    expected.extend(small.iter().cloned());
    expected.push(big.clone());
    expected.push(padded("d", 0, 10));
    assert_eq!(values, expected);
    assert_eq!(msgs[msgs.len() - 2].offset(), big_off);
    let last = msgs.last().unwrap();
    assert_eq!(last.offset(), stamped);
    match last.timestamp() {
        Timestamp::LogAppendTime(ts) => assert!(
            ts >= before - 1000,
            "LogAppendTime {ts} is older than the produce ({before})"
        ),
        other => panic!("expected a LogAppendTime timestamp, got {other:?}"),
    }
    assert!(
        matches!(msgs[0].timestamp(), Timestamp::CreateTime(_)),
        "earlier batches keep CreateTime: {:?}",
        msgs[0].timestamp()
    );
    assert_segments_intact(&dir);
    broker.stop();
}

// ---------------------------------------------------------------------------
// 3. Retention by time
// ---------------------------------------------------------------------------

/// Records stamped an hour ago outlive a 7-day retention and a restart; once
/// retention.ms is lowered to one minute every segment holding them (the
/// active one included, after a roll) is deleted, the log start offset moves to the log
/// end, and a consumer positioned at 0 is reset to the new start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_by_time_deletes_expired_segments() {
    let mut broker = Broker::start_with(FAST_RETENTION);
    let topic = "aged";
    create_topic_with(&broker, topic, &[("segment.bytes", "1024")]).await;
    let dir = partition_dir(&broker, topic);
    let producer = broker.producer(&[("acks", "all")]);
    let hour_ago = now_ms() - 3_600_000;
    let old: Vec<String> = (0..30).map(|i| padded("old", i, 100)).collect();
    let offs = produce_each(&producer, topic, &old, Some(hour_ago)).await;
    assert_eq!(offs, (0..30).collect::<Vec<i64>>());
    let old_segments = segment_files(&dir);
    assert!(
        old_segments.len() >= 3,
        "expected several segments, got {old_segments:?}"
    );

    // Default retention (7 days) keeps them, also across a restart (the
    // segments' newest timestamps are then known from disk only).
    drop(producer);
    broker.restart();
    let producer = broker.producer(&[("acks", "all")]);
    let probe = broker.consumer(&[]);
    assert_eq!(watermarks(&probe, topic, 0), (0, 30));

    set_configs(&broker, topic, &[("retention.ms", "60000")]);
    poll_until(
        BACKGROUND_DEADLINE,
        "log start offset at the log end",
        || {
            let w = watermarks(&probe, topic, 0);
            if w == (30, 30) {
                Ok(())
            } else {
                Err(format!("watermarks {w:?}"))
            }
        },
    );
    poll_until(BACKGROUND_DEADLINE, "old segment files removed", || {
        let segs: Vec<i64> = segment_files(&dir).iter().map(|s| s.0).collect();
        let pending = pending_deletes(&dir);
        if segs == [30] && pending.is_empty() {
            Ok(())
        } else {
            Err(format!("segments {segs:?}, pending {pending:?}"))
        }
    });
    for (base, path) in &old_segments {
        assert!(!path.exists(), "segment {base} still on disk");
    }
    assert_eq!(
        log_dir_size(&broker, topic),
        0,
        "nothing left but an empty segment"
    );

    // New records are kept; a consumer at 0 is reset to the new start.
    let fresh: Vec<String> = (0..5).map(|i| padded("new", i, 100)).collect();
    let offs = produce_each(&producer, topic, &fresh, None).await;
    assert_eq!(offs, (30..35).collect::<Vec<i64>>());
    let c = broker.assigned_consumer(topic, &[0], Offset::Offset(0));
    let msgs = consume_n(&c, 5, CLIENT_TIMEOUT);
    assert_eq!(
        msgs.iter().map(|m| m.offset()).collect::<Vec<_>>(),
        (30..35).collect::<Vec<i64>>()
    );
    assert_eq!(msgs.iter().map(payload_str).collect::<Vec<_>>(), fresh);
    assert_no_more(&c, Duration::from_millis(300));
    drop(c);
    drop(probe);
    drop(producer);

    // The start offset holds across a restart.
    broker.restart();
    let probe = broker.consumer(&[]);
    assert_eq!(watermarks(&probe, topic, 0), (30, 35));
    assert_segments_intact(&dir);
    broker.stop();
}

// ---------------------------------------------------------------------------
// 4. Retention by size
// ---------------------------------------------------------------------------

// ---------------------------------------------------------------------------
// 5. DeleteRecords
// ---------------------------------------------------------------------------

/// DeleteRecords moves the low watermark to the requested offset, deletes
/// the segments wholly below it, checkpoints it (clean restart and kill -9
/// keep it), refuses offsets past the high watermark with
/// OFFSET_OUT_OF_RANGE, and -1 (Offset::End) empties the partition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_records_moves_the_log_start() {
    let mut broker = Broker::start_with(FAST_RETENTION);
    let topic = "trimmed";
    create_topic_with(&broker, topic, &[("segment.bytes", "1024")]).await;
    let dir = partition_dir(&broker, topic);
    let producer = broker.producer(&[("acks", "all")]);
    let values: Vec<String> = (0..40).map(|i| padded("t", i, 100)).collect();
    produce_each(&producer, topic, &values, None).await;
    drop(producer);
    assert!(segment_files(&dir).len() >= 4);

    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Offset(25))
        .unwrap();
    let res = broker
        .admin()
        .delete_records(&tpl, &admin_opts())
        .await
        .expect("DeleteRecords request");
    let e = res
        .find_partition(topic, 0)
        .expect("result for partition 0");
    assert_eq!(e.error(), Ok(()), "DeleteRecords to 25");
    assert_eq!(
        e.offset(),
        Offset::Offset(25),
        "low watermark in the result"
    );
    let probe = broker.consumer(&[]);
    assert_eq!(watermarks(&probe, topic, 0), (25, 40));

    // Segments wholly below 25 go; the one holding 25 stays.
    poll_until(BACKGROUND_DEADLINE, "segments below 25 removed", || {
        let bases: Vec<i64> = segment_files(&dir).iter().map(|s| s.0).collect();
        let pending = pending_deletes(&dir);
        let first_ok =
            bases.first().is_some_and(|b| *b <= 25) && bases.get(1).is_none_or(|b| *b > 25);
        if first_ok && pending.is_empty() {
            Ok(())
        } else {
            Err(format!("segments {bases:?}, pending {pending:?}"))
        }
    });
    assert_eq!(
        fs::read_to_string(dir.join("log-start-offset"))
            .expect("log-start-offset checkpoint")
            .trim(),
        "25"
    );

    let check_from_zero = |broker: &Broker| {
        let c = broker.assigned_consumer(topic, &[0], Offset::Offset(0));
        let msgs = consume_n(&c, 15, CLIENT_TIMEOUT);
        assert_eq!(
            msgs.iter().map(|m| m.offset()).collect::<Vec<_>>(),
            (25..40).collect::<Vec<i64>>()
        );
        assert_eq!(
            msgs.iter().map(payload_str).collect::<Vec<_>>(),
            values[25..].to_vec()
        );
    };
    check_from_zero(&broker);

    // Past the high watermark: OFFSET_OUT_OF_RANGE, nothing changes.
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Offset(41))
        .unwrap();
    let res = broker
        .admin()
        .delete_records(&tpl, &admin_opts())
        .await
        .expect("DeleteRecords request");
    let e = res
        .find_partition(topic, 0)
        .expect("result for partition 0");
    assert_eq!(
        e.error(),
        Err(KafkaError::OffsetFetch(RDKafkaErrorCode::OffsetOutOfRange))
    );
    assert_eq!(
        delete_records_raw(&broker, topic, 41).0,
        OFFSET_OUT_OF_RANGE
    );
    // Below the current start: no error, the start stays.
    assert_eq!(delete_records_raw(&broker, topic, 10), (NONE, 25));
    drop(probe);

    // Clean restart, then kill -9: the start offset holds.
    broker.restart();
    let probe = broker.consumer(&[]);
    assert_eq!(watermarks(&probe, topic, 0), (25, 40), "after restart");
    check_from_zero(&broker);
    drop(probe);
    broker.kill9();
    broker.restart();
    let probe = broker.consumer(&[]);
    assert_eq!(watermarks(&probe, topic, 0), (25, 40), "after kill -9");
    check_from_zero(&broker);

    // Offset::End (-1): everything up to the high watermark.
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::End).unwrap();
    let res = broker
        .admin()
        .delete_records(&tpl, &admin_opts())
        .await
        .expect("DeleteRecords request");
    let e = res
        .find_partition(topic, 0)
        .expect("result for partition 0");
    assert_eq!(e.error(), Ok(()));
    assert_eq!(e.offset(), Offset::Offset(40));
    assert_eq!(watermarks(&probe, topic, 0), (40, 40));
    drop(probe);
    // An emptied partition restarts empty and continues at 40.
    broker.restart();
    let probe = broker.consumer(&[]);
    assert_eq!(
        watermarks(&probe, topic, 0),
        (40, 40),
        "emptied, after restart"
    );
    let producer = broker.producer(&[("acks", "all")]);
    let offs = produce_each(&producer, topic, &[padded("t", 40, 10)], None).await;
    assert_eq!(offs, vec![40]);
    let c = broker.assigned_consumer(topic, &[0], Offset::Offset(0));
    let msgs = consume_n(&c, 1, CLIENT_TIMEOUT);
    assert_eq!(msgs[0].offset(), 40);
    assert_segments_intact(&dir);
    broker.stop();
}

// ---------------------------------------------------------------------------
// 6. kill -9 while producing
// ---------------------------------------------------------------------------

const KILLS: usize = 5;
const WINDOW: usize = 16;

fn durable_value(n: u64) -> String {
    format!("{n:010}|{}", "d".repeat(60))
}

fn durable_number(m: &OwnedMessage) -> u64 {
    let s = payload_str(m);
    s.split('|')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected value {s:?} at offset {}", m.offset()))
}

/// What one producer run saw: each send's number and, if acknowledged, its
/// offset.
type RunLog = Vec<(u64, Option<i64>)>;

/// Sends numbers `start..` with up to [`WINDOW`] in flight until `stop` is
/// set; counts acknowledgements in `acked`. When `purge` is set at stop (the
/// broker was killed), outstanding sends are purged and count as
/// unacknowledged; otherwise they are awaited.
async fn produce_until_stopped(
    producer: FutureProducer,
    topic: String,
    start: u64,
    stop: Arc<AtomicBool>,
    purge: Arc<AtomicBool>,
    acked: Arc<AtomicU64>,
) -> RunLog {
    let mut log: RunLog = Vec::new();
    let mut inflight: VecDeque<(u64, DeliveryFuture)> = VecDeque::new();
    let mut next = start;
    let record = |log: &mut RunLog, n: u64, r: Option<Result<i64, String>>| match r {
        Some(Ok(off)) => {
            acked.fetch_add(1, Ordering::SeqCst);
            log.push((n, Some(off)));
        }
        _ => log.push((n, None)),
    };
    'outer: while !stop.load(Ordering::SeqCst) {
        while inflight.len() < WINDOW {
            let payload = durable_value(next);
            let rec = FutureRecord::<(), _>::to(&topic)
                .partition(0)
                .payload(&payload);
            match producer.send_result(rec) {
                Ok(f) => {
                    inflight.push_back((next, f));
                    next += 1;
                }
                Err((e, _)) => panic!("enqueue {next}: {e}"),
            }
        }
        let (n, mut f) = inflight.pop_front().unwrap();
        loop {
            tokio::select! {
                r = &mut f => {
                    let r = r.ok().map(|d| d.map(|d| d.offset).map_err(|(e, _)| e.to_string()));
                    record(&mut log, n, r);
                    break;
                }
                _ = tokio::time::sleep(Duration::from_millis(5)) => {
                    if stop.load(Ordering::SeqCst) {
                        inflight.push_front((n, f));
                        break 'outer;
                    }
                }
            }
        }
    }
    if purge.load(Ordering::SeqCst) {
        producer.purge(PurgeConfig::default().queue().inflight());
    }
    for (n, f) in inflight {
        let r = tokio::time::timeout(Duration::from_secs(30), f)
            .await
            .unwrap_or_else(|_| panic!("delivery report for {n} did not arrive"));
        let r = r
            .ok()
            .map(|d| d.map(|d| d.offset).map_err(|(e, _)| e.to_string()));
        record(&mut log, n, r);
    }
    log
}

/// Polls (without blocking the runtime) until `acked` reaches `target`.
async fn wait_acked(acked: &AtomicU64, target: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while acked.load(Ordering::SeqCst) < target {
        assert!(
            Instant::now() < deadline,
            "only {} of {target} records acknowledged",
            acked.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// With log.flush.interval.messages=1 and acks=all, a producer sends
/// numbered records continuously while the broker is killed with SIGKILL
/// five times (after a seeded, varying number of acknowledgements) and
/// restarted on the same data dir; the producer resumes after the last
/// acknowledged number. Afterwards: every acknowledged record is at the
/// offset its acknowledgement named; the numbers form consecutive runs with
/// at most one break per kill and no gap; a number appears twice only if one
/// of its sends went unacknowledged; after every recovery each segment file
/// holds whole batches with valid CRC32C.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_under_load_keeps_every_acknowledged_record() {
    // `FJORD_SINGLE_KILL_ROUNDS=N` runs N kills (scripts/durability-rounds
    // single N); the suite runs KILLS.
    let kills: usize = std::env::var("FJORD_SINGLE_KILL_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(KILLS);
    let mut broker = Broker::start_with(&["log.flush.interval.messages=1"]);
    let topic = "durable";
    create_topic_with(&broker, topic, &[("segment.bytes", "4096")]).await;
    let dir = partition_dir(&broker, topic);
    // Partitions on both shards, each with one record, whose directories
    // must stay the same ones through every restart.
    let spread = "spread";
    broker.create_topic(spread, 8).await;
    let p = broker.producer(&[("acks", "all")]);
    for i in 0..8 {
        p.send(
            FutureRecord::<(), _>::to(spread)
                .partition(i)
                .payload("kept"),
            Duration::from_secs(10),
        )
        .await
        .expect("acknowledged");
    }
    drop(p);
    let directories = partition_directories(&broker.data_dir());
    assert!(directories.len() >= 9, "{directories:?}");

    let mut rng: u64 = 0x5eed_1234_abcd_0001;
    let mut next_rand = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };

    let mut sends: HashMap<u64, u32> = HashMap::new();
    let mut acks: HashMap<u64, u32> = HashMap::new();
    let mut acked_at: Vec<(u64, i64)> = Vec::new();
    let mut start = 0u64;
    for round in 0..=kills {
        let last_round = round == kills;
        let target = 40 + next_rand() % 120;
        let stop = Arc::new(AtomicBool::new(false));
        let purge = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(AtomicU64::new(0));
        let producer = broker.producer(&[("acks", "all"), ("linger.ms", "1")]);
        let task = tokio::spawn(produce_until_stopped(
            producer,
            topic.to_string(),
            start,
            stop.clone(),
            purge.clone(),
            acked.clone(),
        ));
        wait_acked(&acked, target).await;
        if !last_round {
            broker.kill9();
            purge.store(true, Ordering::SeqCst);
        }
        stop.store(true, Ordering::SeqCst);
        let log = task.await.expect("producer task");
        for &(n, off) in &log {
            *sends.entry(n).or_default() += 1;
            if let Some(off) = off {
                *acks.entry(n).or_default() += 1;
                acked_at.push((n, off));
            }
        }
        let acked_here: Vec<u64> = log
            .iter()
            .filter(|(_, o)| o.is_some())
            .map(|(n, _)| *n)
            .collect();
        assert!(acked_here.len() as u64 >= target, "round {round}");
        if last_round {
            assert!(
                log.iter().all(|(_, o)| o.is_some()),
                "without a kill every send is acknowledged"
            );
        }
        start = acked_here.iter().max().copied().unwrap() + 1;
        if !last_round {
            broker.restart();
            // What recovery left: whole, valid batches only.
            assert_segments_intact(&dir);
            // No directory deleted or made anew: the same topic id in each.
            assert_eq!(
                partition_directories(&broker.data_dir()),
                directories,
                "after kill {round}: partition directories changed"
            );
            let probe = broker.consumer(&[]);
            for i in 0..8 {
                assert_eq!(watermarks(&probe, spread, i), (0, 1), "{spread}-{i}");
            }
            let (low, high) = watermarks(&probe, topic, 0);
            let max_off = acked_at.iter().map(|a| a.1).max().unwrap();
            assert_eq!(low, 0);
            assert!(
                high > max_off,
                "after kill {round}: high watermark {high}, acknowledged offset {max_off}"
            );
        }
    }
    assert!(
        segment_files(&dir).len() > 3,
        "the run spans several segments"
    );

    let msgs = read_to_end(&broker, topic, Offset::Beginning);
    let offsets: Vec<i64> = msgs.iter().map(|m| m.offset()).collect();
    assert_eq!(
        offsets,
        (0..msgs.len() as i64).collect::<Vec<i64>>(),
        "offsets are dense from 0"
    );
    let numbers: Vec<u64> = msgs.iter().map(durable_number).collect();

    // Every acknowledgement points at its record.
    for &(n, off) in &acked_at {
        assert_eq!(
            numbers.get(off as usize).copied(),
            Some(n),
            "record {n} was acknowledged at offset {off}"
        );
    }
    // Consecutive runs, no gaps, a break only where a kill was.
    assert_eq!(numbers.first(), Some(&0));
    let mut breaks = 0;
    for w in numbers.windows(2) {
        assert!(
            w[1] <= w[0] + 1,
            "gap in the log: {} follows {}",
            w[1],
            w[0]
        );
        if w[1] != w[0] + 1 {
            breaks += 1;
        }
    }
    assert!(
        breaks <= kills,
        "{breaks} breaks in the sequence for {kills} kills"
    );
    // Duplicates only for sends that went unacknowledged.
    let mut counts: HashMap<u64, u32> = HashMap::new();
    for &n in &numbers {
        *counts.entry(n).or_default() += 1;
    }
    for (&n, &c) in &counts {
        let sent = sends.get(&n).copied().unwrap_or(0);
        assert!(c <= sent, "{n} appears {c} times but was sent {sent} times");
        if c > 1 {
            let acked = acks.get(&n).copied().unwrap_or(0);
            assert!(
                acked < sent,
                "{n} appears {c} times although all {sent} sends were acknowledged"
            );
        }
    }
    let duplicated = counts.values().filter(|&&c| c > 1).count();
    let unacked: u32 = sends
        .iter()
        .map(|(n, s)| s - acks.get(n).copied().unwrap_or(0))
        .sum();
    eprintln!(
        "kill -9 run: {} records in the log, {} acknowledged, {unacked} sends unacknowledged, \
         {breaks} sequence breaks, {duplicated} numbers duplicated",
        numbers.len(),
        acked_at.len()
    );
    broker.stop();
    assert_segments_intact(&dir);
    let log = broker.stderr_text();
    let deleted = log
        .lines()
        .filter(|l| {
            l.contains("refusing to delete") || (l.contains("deleting ") && l.contains("topic id"))
        })
        .count();
    assert_eq!(deleted, 0, "directories deleted or refused");
    eprintln!(
        "SINGLE-NODE-TALLY rounds={kills} acked={} records={} lost=0 deleted_dirs={deleted} \
         directories_checked={} duplicated={duplicated} sequence_breaks={breaks}",
        acked_at.len(),
        numbers.len(),
        directories.len()
    );
}

/// Every partition directory of a client topic under `data` (`<topic>-<n>`
/// with a `partition.metadata`), with that file's text (its topic id).
fn partition_directories(data: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(data).expect("read data dir") {
        let path = e.expect("entry").path();
        let Ok(text) = std::fs::read_to_string(path.join("partition.metadata")) else {
            continue;
        };
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("__") {
            out.insert(name, text);
        }
    }
    out
}

// ---------------------------------------------------------------------------
// 7. Compaction
// ---------------------------------------------------------------------------
