//! Kafka 4.x parity: the version ranges ApiVersions lists (Produce from v0,
//! Kafka 4.0's maxima) and what the new versions answer, every Kafka 4.x
//! topic config, broker-side recompression, `preallocate`, Metadata by
//! topic id. Answers checked against Apache Kafka 4.4 are noted where they
//! are asserted. The timestamp window, `min.insync.replicas`, the
//! background tasks' first pass after a restart, idle producers' expiry and
//! timestamp lookups below the log start are in-process scenarios in
//! tests/inprocess.rs.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use kafka_protocol::messages::{self as kp, BrokerId, ProducerId, TopicName, TransactionalId};
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{AdminClient, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::Offset;
use uuid::Uuid;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

async fn create(admin: &AdminClient<DefaultClientContext>, topic: &str, configs: &[(&str, &str)]) {
    let mut nt = NewTopic::new(topic, 1, TopicReplication::Fixed(1));
    for (k, v) in configs {
        nt = nt.set(k, v);
    }
    let res = admin
        .create_topics(&[nt], &admin_opts())
        .await
        .expect("CreateTopics");
    assert_eq!(
        res,
        vec![Ok(topic.to_string())],
        "create {topic} with {configs:?}"
    );
}

async fn send(
    p: &FutureProducer,
    topic: &str,
    value: &[u8],
    ts: Option<i64>,
) -> Result<i64, KafkaError> {
    let mut r = FutureRecord::<(), [u8]>::to(topic)
        .partition(0)
        .payload(value);
    if let Some(ts) = ts {
        r = r.timestamp(ts);
    }
    p.send(r, Duration::from_secs(15))
        .await
        .map(|d| d.offset)
        .map_err(|(e, _)| e)
}

/// `(attributes, records bytes)` of each batch in a partition's first segment.
fn stored(broker: &Broker, topic: &str) -> Vec<(i16, Vec<u8>)> {
    let path = broker.segment_path(topic, 0);
    let data = std::fs::read(&path).expect("read segment");
    segment_batches(&path)
        .into_iter()
        .map(|(pos, _, _, len)| {
            let attrs = i16::from_be_bytes([data[pos + 21], data[pos + 22]]);
            (attrs, data[pos + 61..pos + len].to_vec())
        })
        .collect()
}

#[test]
fn api_versions_list_produce_from_v0_and_kafka_4_maxima() {
    let broker = Broker::start();
    let mut c = connect(&broker.bootstrap());
    let r = kp_call(&mut c, 3, 1, &kp::ApiVersionsRequest::default());
    let ranges: HashMap<i16, (i16, i16)> = r
        .api_keys
        .iter()
        .map(|k| (k.api_key, (k.min_version, k.max_version)))
        .collect();
    // Produce listed from v0 (KAFKA-18659), up to v13 (topics by id).
    assert_eq!(ranges[&0], (0, 13));
    // Kafka 4.0's maxima (TxnOffsetCommit v5, EndTxn v5: transactions v2).
    for (key, max) in [
        (2, 10),
        (3, 13),
        (10, 6),
        (15, 6),
        (22, 5),
        (24, 5),
        (25, 4),
        (26, 5),
        (28, 5),
    ] {
        assert_eq!(ranges[&key].1, max, "api key {key}");
    }
    // OffsetForLeaderEpoch: Kafka 4.x's range (v0-v1 removed).
    assert_eq!(ranges[&23], (2, 4));
}

/// Kafka 4.4 closes the connection here; this broker answers
/// UNSUPPORTED_VERSION per partition (docs/decisions/produce-v0-v2-listed.md).
#[test]
fn produce_v0_to_v2_is_answered_with_unsupported_version() {
    let broker = Broker::start();
    for (version, tail) in [(0i16, 0usize), (1, 4), (2, 12)] {
        let mut body = Wire::new();
        body.i16(1)
            .i32(1000)
            .i32(1)
            .string("t")
            .i32(1)
            .i32(0)
            .i32(0);
        let mut c = connect(&broker.bootstrap());
        let resp = roundtrip(&mut c, &frame_v1(0, version, 7, &body.buf));
        let mut r = Reader::new(&resp);
        assert_eq!(r.i32(), 7);
        assert_eq!(r.i32(), 1);
        assert_eq!(r.string().as_deref(), Some("t"));
        assert_eq!(r.i32(), 1);
        assert_eq!(r.i32(), 0);
        assert_eq!(r.i16(), 35, "v{version}: UNSUPPORTED_VERSION");
        assert_eq!(r.i64(), -1);
        assert_eq!(r.remaining(), tail, "v{version}");
    }
    // acks=0 expects no answer: the connection is closed.
    let mut body = Wire::new();
    body.i16(0)
        .i32(1000)
        .i32(1)
        .string("t")
        .i32(1)
        .i32(0)
        .i32(0);
    let mut c = connect(&broker.bootstrap());
    std::io::Write::write_all(&mut c, &frame_v1(0, 2, 8, &body.buf)).unwrap();
    assert_closed(&mut c);
}

fn metadata_req(topics: &[(Option<&str>, Uuid)]) -> kp::MetadataRequest {
    kp::MetadataRequest::default().with_topics(Some(
        topics
            .iter()
            .map(|(n, id)| {
                kp::metadata_request::MetadataRequestTopic::default()
                    .with_name(n.map(|n| TopicName(s(n))))
                    .with_topic_id(*id)
            })
            .collect(),
    ))
}

/// As Kafka 4.4 answers (checked on the peer): a null name or a topic id
/// before v12 makes every requested topic INVALID_REQUEST with "" for the
/// null name, no brokers, controller -1; from v12 an unknown id is
/// UNKNOWN_TOPIC_ID with a null name, a known id is resolved, and a request
/// with ids is answered by ids alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_by_topic_id_only_from_v12() {
    let broker = Broker::start();
    create(&broker.admin(), "by-id", &[]).await;
    let mut c = connect(&broker.bootstrap());
    let r = kp_call(
        &mut c,
        12,
        1,
        &metadata_req(&[(Some("by-id"), Uuid::nil())]),
    );
    let id = r.topics[0].topic_id;
    assert_ne!(id, Uuid::nil());
    let unknown = Uuid::new_v4();
    for version in [10i16, 11] {
        for req in [
            metadata_req(&[(None, id)]),
            metadata_req(&[(None, unknown)]),
            metadata_req(&[(None, unknown), (Some("by-id"), Uuid::nil())]),
        ] {
            let r = kp_call(&mut c, version, 2, &req);
            assert!(r.brokers.is_empty(), "v{version}: {r:?}");
            assert_eq!(r.controller_id, BrokerId(-1));
            assert_eq!(r.topics.len(), req.topics.as_ref().map_or(0, Vec::len));
            for t in &r.topics {
                assert_eq!(t.error_code, 42, "v{version}: {t:?}");
                assert!(t.name.is_some(), "a name cannot be null before v12");
            }
            assert_eq!(r.topics[0].name.as_ref().map(|n| n.0.as_str()), Some(""));
        }
    }
    for version in [12i16, 13] {
        let r = kp_call(
            &mut c,
            version,
            3,
            &metadata_req(&[(None, unknown), (None, id)]),
        );
        assert_eq!(
            (r.topics[0].error_code, r.topics[0].name.is_none()),
            (100, true)
        );
        assert_eq!(r.topics[0].topic_id, unknown);
        assert_eq!(r.topics[1].error_code, 0);
        assert_eq!(
            r.topics[1].name.as_ref().map(|n| n.0.as_str()),
            Some("by-id")
        );
        assert_eq!(r.brokers.len(), 1);
        // Any id makes it a lookup by ids: a name beside it ("" as the Java
        // client sends, a wrong one, or another topic) is not looked at.
        for req in [
            metadata_req(&[(Some(""), id)]),
            metadata_req(&[(Some("no-such"), id)]),
            metadata_req(&[(Some("by-id"), Uuid::nil()), (None, id)]),
        ] {
            let r = kp_call(&mut c, version, 4, &req);
            assert_eq!(r.topics.len(), 1, "{r:?}");
            assert_eq!(r.topics[0].error_code, 0);
            assert_eq!(
                r.topics[0].name.as_ref().map(|n| n.0.as_str()),
                Some("by-id")
            );
        }
    }
    // Before v12 a topic id is refused even with a name (Kafka 4.4).
    let r = kp_call(&mut c, 11, 5, &metadata_req(&[(Some("by-id"), id)]));
    assert_eq!(r.topics[0].error_code, 42);
    assert!(r.brokers.is_empty());
}

fn list_offsets(c: &mut std::net::TcpStream, version: i16, topic: &str, ts: i64) -> (i16, i64) {
    let req = kp::ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_timeout_ms(1000)
        .with_topics(vec![kp::list_offsets_request::ListOffsetsTopic::default()
            .with_name(TopicName(s(topic)))
            .with_partitions(vec![
                kp::list_offsets_request::ListOffsetsPartition::default()
                    .with_partition_index(0)
                    .with_timestamp(ts),
            ])]);
    let r = kp_call(c, version, 1, &req);
    let p = &r.topics[0].partitions[0];
    (p.error_code, p.offset)
}

/// The answers of Kafka 4.4 for each special timestamp by version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_offsets_special_timestamps_by_version() {
    let broker = Broker::start();
    create(&broker.admin(), "lo", &[]).await;
    let p = broker.producer(&[]);
    for _ in 0..3 {
        send(&p, "lo", b"x", None).await.expect("produce");
    }
    let mut c = connect(&broker.bootstrap());
    assert_eq!(list_offsets(&mut c, 6, "lo", -3), (35, -1));
    assert_eq!(list_offsets(&mut c, 7, "lo", -4), (35, -1));
    assert_eq!(list_offsets(&mut c, 8, "lo", -4), (0, 0), "earliest local");
    assert_eq!(list_offsets(&mut c, 8, "lo", -5), (35, -1));
    assert_eq!(
        list_offsets(&mut c, 9, "lo", -5),
        (0, -1),
        "latest tiered: none"
    );
    assert_eq!(list_offsets(&mut c, 10, "lo", -6), (35, -1));
    assert_eq!(list_offsets(&mut c, 10, "lo", -1), (0, 3));
    assert_eq!(list_offsets(&mut c, 10, "lo", -7), (35, -1));
}

#[test]
fn describe_groups_v6_unknown_group_is_not_found() {
    let broker = Broker::start();
    let mut c = connect(&broker.bootstrap());
    poll_until(CLIENT_TIMEOUT, "group coordinator", || {
        let r = kp_call(
            &mut c,
            0,
            1,
            &kp::FindCoordinatorRequest::default().with_key(s("g")),
        );
        (r.error_code == 0).then_some(()).ok_or(format!("{r:?}"))
    });
    let req = kp::DescribeGroupsRequest::default().with_groups(vec![kp::GroupId(s("no-such"))]);
    let r = kp_call(&mut c, 5, 2, &req);
    assert_eq!(
        (r.groups[0].error_code, r.groups[0].group_state.as_str()),
        (0, "Dead")
    );
    let r = kp_call(&mut c, 6, 3, &req);
    assert_eq!(
        (r.groups[0].error_code, r.groups[0].group_state.as_str()),
        (69, "Dead")
    );
    assert_eq!(
        r.groups[0].error_message.as_ref().map(|m| m.as_str()),
        Some("Group no-such not found.")
    );
}

fn add_partitions_v4(
    c: &mut std::net::TcpStream,
    id: &str,
    pid: i64,
    epoch: i16,
    verify_only: bool,
    partitions: Vec<i32>,
) -> Vec<i16> {
    use kp::add_partitions_to_txn_request::{
        AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
    };
    let req = kp::AddPartitionsToTxnRequest::default().with_transactions(vec![
        AddPartitionsToTxnTransaction::default()
            .with_transactional_id(TransactionalId(s(id)))
            .with_producer_id(ProducerId(pid))
            .with_producer_epoch(epoch)
            .with_verify_only(verify_only)
            .with_topics(vec![AddPartitionsToTxnTopic::default()
                .with_name(TopicName(s("apt")))
                .with_partitions(partitions)]),
    ]);
    let r = kp_call(c, 4, 9, &req);
    assert_eq!(r.results_by_transaction.len(), 1, "{r:?}");
    r.results_by_transaction[0].topic_results[0]
        .results_by_partition
        .iter()
        .map(|p| p.partition_error_code)
        .collect()
}

/// AddPartitionsToTxn v4+, the form Kafka's brokers send: `verify_only`
/// checks without adding, otherwise the partitions are added as in v3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_partitions_to_txn_v4_verifies_and_adds() {
    let broker = Broker::start();
    create(&broker.admin(), "apt", &[]).await;
    let mut c = connect(&broker.bootstrap());
    let id = "parity-tx";
    let (pid, epoch) = poll_until(CLIENT_TIMEOUT, "InitProducerId v5", || {
        let fc = kp::FindCoordinatorRequest::default()
            .with_key(s(id))
            .with_key_type(1);
        let _ = kp_call(&mut c, 3, 1, &fc);
        let req = kp::InitProducerIdRequest::default()
            .with_transactional_id(Some(TransactionalId(s(id))))
            .with_transaction_timeout_ms(60_000)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1);
        let r = kp_call(&mut c, 5, 2, &req);
        (r.error_code == 0)
            .then_some((r.producer_id.0, r.producer_epoch))
            .ok_or(format!("{r:?}"))
    });
    // TRANSACTION_ABORTABLE (120), as Kafka 4.4's coordinator answers it:
    // not in the transaction yet; nothing is added.
    assert_eq!(
        add_partitions_v4(&mut c, id, pid, epoch, true, vec![0]),
        [120]
    );
    assert_eq!(
        add_partitions_v4(&mut c, id, pid, epoch, true, vec![0]),
        [120]
    );
    assert_eq!(
        add_partitions_v4(&mut c, id, pid, epoch, false, vec![0]),
        [0]
    );
    assert_eq!(
        add_partitions_v4(&mut c, id, pid, epoch, true, vec![0]),
        [0]
    );
    // An unknown partition, and the others of that id not attempted (55).
    assert_eq!(
        add_partitions_v4(&mut c, id, pid, epoch, false, vec![0, 9]),
        [55, 3]
    );
    let end = kp::EndTxnRequest::default()
        .with_transactional_id(TransactionalId(s(id)))
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_committed(false);
    assert_eq!(kp_call(&mut c, 4, 3, &end).error_code, 0);
}

/// Every Kafka 4.x topic config that Fjord refused before, set at
/// CreateTopics as a Java application's topic would be, then described back.
const KAFKA_4_CONFIGS: &[(&str, &str)] = &[
    ("message.timestamp.after.max.ms", "7200000"),
    ("message.timestamp.before.max.ms", "86400000"),
    ("segment.jitter.ms", "1000"),
    ("preallocate", "true"),
    ("unclean.leader.election.enable", "true"),
    ("compression.gzip.level", "6"),
    ("compression.lz4.level", "12"),
    ("compression.zstd.level", "9"),
    ("local.retention.ms", "3600000"),
    ("local.retention.bytes", "1048576"),
    ("remote.storage.enable", "false"),
    ("remote.log.copy.disable", "true"),
    ("remote.log.delete.on.disable", "true"),
    ("remote.copy.lag.ms", "-1"),
    ("remote.copy.lag.bytes", "-1"),
    ("leader.replication.throttled.replicas", "*"),
    ("follower.replication.throttled.replicas", "0:1"),
    ("errors.deadletterqueue.group.enable", "true"),
    ("max.decompressed.message.bytes", "10485760"),
    ("min.insync.replicas", "2"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kafka_4_topic_config_is_accepted_and_described() {
    let broker = Broker::start();
    let admin = broker.admin();
    create(&admin, "all-configs", KAFKA_4_CONFIGS).await;
    create(&admin, "defaults", &[]).await;
    let r = admin
        .describe_configs(
            &[
                ResourceSpecifier::Topic("all-configs"),
                ResourceSpecifier::Topic("defaults"),
            ],
            &admin_opts(),
        )
        .await
        .expect("DescribeConfigs");
    let set = r[0].as_ref().expect("all-configs");
    for (k, v) in KAFKA_4_CONFIGS {
        let e = set.get(k).unwrap_or_else(|| panic!("{k} not described"));
        assert_eq!(e.value.as_deref(), Some(*v), "{k}");
        assert!(!e.is_default, "{k}");
    }
    let defaults = r[1].as_ref().expect("defaults");
    assert_eq!(defaults.entries.len(), 37, "every Kafka 4.4 topic config");
    for (k, v) in [
        ("message.timestamp.after.max.ms", "3600000"),
        ("local.retention.ms", "-2"),
        ("compression.lz4.level", "9"),
        ("compression.zstd.level", "3"),
        ("compression.gzip.level", "-1"),
        ("remote.storage.enable", "false"),
        ("leader.replication.throttled.replicas", ""),
    ] {
        assert_eq!(
            defaults.get(k).and_then(|e| e.value.as_deref()),
            Some(v),
            "{k}"
        );
    }
    // Tiered storage cannot be enabled: INVALID_CONFIG, as Kafka without
    // remote storage, at creation and when altered.
    let nt =
        NewTopic::new("tiered", 1, TopicReplication::Fixed(1)).set("remote.storage.enable", "true");
    let res = admin
        .create_topics(&[nt], &admin_opts())
        .await
        .expect("CreateTopics");
    assert_eq!(
        res,
        vec![Err(("tiered".to_string(), RDKafkaErrorCode::InvalidConfig))]
    );
    // AlterConfigs on the wire (the rdkafka crate reports no per-resource
    // error for AlterConfigs).
    let req = kp::AlterConfigsRequest::default().with_resources(vec![
        kp::alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(s("defaults"))
            .with_configs(vec![kp::alter_configs_request::AlterableConfig::default()
                .with_name(s("remote.storage.enable"))
                .with_value(Some(s("true")))]),
    ]);
    let mut c = connect(&broker.bootstrap());
    let r = kp_call(&mut c, 2, 1, &req);
    assert_eq!(r.responses[0].error_code, 40, "{r:?}");
    let msg = r.responses[0]
        .error_message
        .as_ref()
        .map(|m| m.to_string())
        .unwrap_or_default();
    assert!(
        msg.contains("Tiered Storage functionality is disabled"),
        "{msg}"
    );
}

/// A snappy topic fed uncompressed batches stores xerial snappy (magic,
/// big-endian version 1 / compatible 1) that librdkafka reads back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snappy_topic_stores_uncompressed_batches_as_xerial_snappy() {
    let broker = Broker::start();
    let admin = broker.admin();
    create(&admin, "snappy-topic", &[("compression.type", "snappy")]).await;
    let p = broker.producer(&[("compression.type", "none"), ("linger.ms", "0")]);
    let values: Vec<Vec<u8>> = (0..5)
        .map(|i| format!("value-{i}-{}", "abc".repeat(100)).into_bytes())
        .collect();
    for v in &values {
        send(&p, "snappy-topic", v, None).await.expect("produce");
    }
    let batches = stored(&broker, "snappy-topic");
    assert_eq!(batches.len(), values.len());
    for (attrs, body) in &batches {
        assert_eq!(attrs & 7, 2, "snappy");
        assert_eq!(
            &body[..16],
            b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"
        );
    }
    let c = broker.consumer(&[]);
    assign(&c, "snappy-topic", &[0], Offset::Beginning);
    let got: Vec<Vec<u8>> = consume_n(&c, values.len(), CLIENT_TIMEOUT)
        .iter()
        .map(|m| m.payload().unwrap_or_default().to_vec())
        .collect();
    assert_eq!(got, values);
}

/// The topic's level is used: the same records stored with gzip level 1
/// and level 9 differ in size; a zstd topic keeps a zstd batch as sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codec_levels_are_applied_when_recompressing() {
    let broker = Broker::start();
    let admin = broker.admin();
    create(
        &admin,
        "gzip-1",
        &[
            ("compression.type", "gzip"),
            ("compression.gzip.level", "1"),
        ],
    )
    .await;
    create(
        &admin,
        "gzip-9",
        &[
            ("compression.type", "gzip"),
            ("compression.gzip.level", "9"),
        ],
    )
    .await;
    let value: Vec<u8> = (0..20_000u32)
        .flat_map(|i| format!("{} ", (i * 7919) % 1000).into_bytes())
        .collect();
    let p = broker.producer(&[("compression.type", "none"), ("linger.ms", "0")]);
    for t in ["gzip-1", "gzip-9"] {
        send(&p, t, &value, None).await.expect("produce");
    }
    let (a1, b1) = &stored(&broker, "gzip-1")[0];
    let (a9, b9) = &stored(&broker, "gzip-9")[0];
    assert_eq!((a1 & 7, a9 & 7), (1, 1));
    assert!(
        b9.len() < b1.len(),
        "level 9: {} bytes, level 1: {} bytes",
        b9.len(),
        b1.len()
    );
    create(&admin, "zstd-kept", &[("compression.type", "zstd")]).await;
    let pz = broker.producer(&[("compression.type", "zstd"), ("linger.ms", "0")]);
    send(&pz, "zstd-kept", &value, None).await.expect("produce");
    assert_eq!(stored(&broker, "zstd-kept")[0].0 & 7, 4);
}

fn allocated(path: &std::path::Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).expect("stat");
    (m.len(), m.blocks() * 512)
}

/// `preallocate=true` reserves segment.bytes for the active segment without
/// changing its length; a rolled segment keeps only what its data needs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preallocate_reserves_the_active_segment() {
    let mut broker = Broker::start();
    let mib = 1 << 20;
    create(
        &broker.admin(),
        "prealloc",
        &[("preallocate", "true"), ("segment.bytes", "1048576")],
    )
    .await;
    let p = broker.producer(&[("linger.ms", "0")]);
    send(&p, "prealloc", b"first", None).await.expect("produce");
    let first = broker.segment_path("prealloc", 0);
    let (len, blocks) = allocated(&first);
    assert!(
        len < 4096 && blocks >= mib,
        "active segment: {len} bytes long, {blocks} allocated"
    );
    let chunk = vec![b'x'; 100_000];
    for _ in 0..12 {
        send(&p, "prealloc", &chunk, None).await.expect("produce");
    }
    let (len, blocks) = allocated(&first);
    assert!(
        blocks < len + 65_536,
        "rolled segment: {len} bytes long, {blocks} allocated"
    );
    drop(p);
    broker.stop();
    let dir = first.parent().expect("partition dir").to_path_buf();
    for e in std::fs::read_dir(&dir).expect("list").flatten() {
        if e.path().extension().is_some_and(|x| x == "log") {
            let (len, blocks) = allocated(&e.path());
            assert!(
                blocks < len + 65_536,
                "{:?} after close: {len} long, {blocks} allocated",
                e.path()
            );
        }
    }
}

/// The broker resource reports the broker keys of topic configs as Kafka
/// 4.4 does: `log.retention.hours=168` and `log.roll.hours=168` with their
/// DEFAULT_CONFIG synonym, the `.ms` forms with a null value and none.
/// (name, value, source, type, synonyms as `name=value@source`).
type DescribedEntry = (String, Option<String>, i8, i8, Vec<String>);

#[test]
fn broker_keys_are_described_as_kafka_reports_them() {
    let broker = Broker::start_with(&["log.segment.bytes=2097152"]);
    let keys = [
        "log.retention.hours",
        "log.retention.ms",
        "log.roll.hours",
        "log.segment.bytes",
    ];
    let req = kp::DescribeConfigsRequest::default()
        .with_include_synonyms(true)
        .with_resources(vec![
            kp::describe_configs_request::DescribeConfigsResource::default()
                .with_resource_type(4)
                .with_resource_name(s("1"))
                .with_configuration_keys(Some(keys.iter().map(|k| s(k)).collect())),
        ]);
    let mut c = connect(&broker.bootstrap());
    let r = kp_call(&mut c, 4, 1, &req);
    let got: Vec<DescribedEntry> = r.results[0]
        .configs
        .iter()
        .map(|e| {
            (
                e.name.to_string(),
                e.value.as_ref().map(|v| v.to_string()),
                e.config_source,
                e.config_type,
                e.synonyms
                    .iter()
                    .map(|y| {
                        format!(
                            "{}={}@{}",
                            y.name,
                            y.value.as_deref().unwrap_or("null"),
                            y.source
                        )
                    })
                    .collect(),
            )
        })
        .collect();
    let owned = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        got,
        vec![
            (
                "log.retention.hours".into(),
                Some("168".into()),
                5,
                3,
                owned(&["log.retention.hours=168@5"])
            ),
            ("log.retention.ms".into(), None, 5, 5, vec![]),
            (
                "log.roll.hours".into(),
                Some("168".into()),
                5,
                3,
                owned(&["log.roll.hours=168@5"])
            ),
            (
                "log.segment.bytes".into(),
                Some("2097152".into()),
                4,
                3,
                owned(&[
                    "log.segment.bytes=2097152@4",
                    "log.segment.bytes=1073741824@5"
                ])
            ),
        ]
    );
}

/// The broker resource describes the listener and group keys Kafka 4.4
/// describes, read-only, with the source of Kafka's ConfigHelper:
/// `listeners` as given (port 0, as Kafka reports its configured value, not
/// the port bound) and `offsets.retention.minutes` as set, both
/// STATIC_BROKER_CONFIG; `controller.listener.names`, unset and without a
/// default, with a null value and DEFAULT_CONFIG; `auto.create.topics.enable`,
/// unset, its default and DEFAULT_CONFIG.
#[test]
fn listener_and_offsets_keys_are_described() {
    let broker = Broker::start_with(&["offsets.retention.minutes=60"]);
    let keys = [
        "auto.create.topics.enable",
        "controller.listener.names",
        "listeners",
        "offsets.retention.minutes",
    ];
    let req = kp::DescribeConfigsRequest::default().with_resources(vec![
        kp::describe_configs_request::DescribeConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(s("1"))
            .with_configuration_keys(Some(keys.iter().map(|k| s(k)).collect())),
    ]);
    let mut c = connect(&broker.bootstrap());
    let r = kp_call(&mut c, 4, 1, &req);
    let got: Vec<(String, Option<String>, bool, i8)> = r.results[0]
        .configs
        .iter()
        .map(|e| {
            (
                e.name.to_string(),
                e.value.as_ref().map(|v| v.to_string()),
                e.read_only,
                e.config_source,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "auto.create.topics.enable".into(),
                Some("true".into()),
                true,
                5
            ),
            ("controller.listener.names".into(), None, true, 5),
            (
                "listeners".into(),
                Some("PLAINTEXT://127.0.0.1:0".into()),
                true,
                4
            ),
            (
                "offsets.retention.minutes".into(),
                Some("60".into()),
                true,
                4
            ),
        ]
    );
}
