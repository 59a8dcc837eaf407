//! Durability across restarts of the broker process: an earlier data
//! directory upgraded in place, SIGHUP, kill -9 with per-message flushing,
//! the listener's port across restarts. A clean restart, a torn and a
//! corrupted last batch are in-process scenarios in tests/inprocess.rs.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;
use rdkafka::consumer::Consumer;
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::Offset;

fn value(i: usize) -> Vec<u8> {
    format!("record number {i} ").repeat(1 + i % 5).into_bytes()
}

/// Sends values `range` to partition 0 concurrently; returns their offsets in
/// send order.
async fn produce_range(
    producer: &FutureProducer,
    topic: &str,
    range: std::ops::Range<usize>,
) -> Vec<i64> {
    let values: Vec<Vec<u8>> = range.clone().map(value).collect();
    let keys: Vec<String> = range.map(|i| format!("k{i}")).collect();
    let mut futs = Vec::new();
    for (k, v) in keys.iter().zip(&values) {
        let rec = FutureRecord::to(topic).partition(0).key(k).payload(v);
        futs.push(
            producer
                .send_result(rec)
                .map_err(|(e, _)| e)
                .expect("enqueue"),
        );
    }
    let mut out = Vec::new();
    for f in futs {
        let d = tokio::time::timeout(Duration::from_secs(60), f)
            .await
            .expect("delivery within 60 s")
            .expect("not cancelled")
            .unwrap_or_else(|(e, _)| panic!("delivery failed: {e}"));
        assert_eq!(d.partition, 0);
        out.push(d.offset);
    }
    out
}

/// Waits until metadata lists `topic` with at least `partitions` partitions,
/// with a clear failure message naming the restart.
fn wait_topic(broker: &Broker, topic: &str, partitions: usize) {
    let c = broker.consumer(&[]);
    let deadline = std::time::Instant::now() + CLIENT_TIMEOUT;
    loop {
        let md = c.fetch_metadata(None, CLIENT_TIMEOUT).expect("metadata");
        let found = md
            .topics()
            .iter()
            .find(|t| t.name() == topic)
            .map(|t| t.partitions().len());
        if found.is_some_and(|n| n >= partitions) {
            return;
        }
        let listed: Vec<&str> = md.topics().iter().map(|t| t.name()).collect();
        assert!(
            std::time::Instant::now() < deadline,
            "after restart, Metadata (all topics) lists {listed:?}: topic {topic:?} with {partitions} partition(s) is missing"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Consumes offsets `range` of partition 0 and checks each value.
fn check_range(broker: &Broker, topic: &str, range: std::ops::Range<usize>) {
    let consumer = broker.assigned_consumer(topic, &[0], Offset::Offset(range.start as i64));
    let got = consume_n(&consumer, range.len(), Duration::from_secs(30));
    for (m, i) in got.iter().zip(range.clone()) {
        assert_eq!(m.offset(), i as i64, "offset order");
        assert_eq!(m.payload(), Some(&value(i)[..]), "value at offset {i}");
        assert_eq!(
            m.key(),
            Some(format!("k{i}").as_bytes()),
            "key at offset {i}"
        );
    }
    assert_no_more(&consumer, Duration::from_millis(200));
}

fn high_watermark(broker: &Broker, topic: &str) -> i64 {
    wait_topic(broker, topic, 1);
    let c = broker.consumer(&[]);
    let (lo, hi) = watermarks(&c, topic, 0);
    assert_eq!(lo, 0, "log start offset");
    hi
}

/// A data directory of an earlier version (topics in
/// `__cluster_metadata/<topic>.topic`, no metadata log) upgrades in place:
/// the topics are adopted into the metadata log with their ids, configs and
/// data, the registry files go, and a producer id block file of that version
/// keeps its ids from being handed out again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_earlier_data_directory_upgrades_in_place() {
    let mut broker = Broker::start();
    broker.create_topic("old", 2).await;
    let producer = broker.producer(&[("acks", "all")]);
    produce_range(&producer, "old", 0..10).await;
    drop(producer);
    let id = {
        let c = broker.consumer(&[]);
        let md = c
            .fetch_metadata(Some("old"), CLIENT_TIMEOUT)
            .expect("metadata");
        assert_eq!(md.topics()[0].partitions().len(), 2);
        std::fs::read_to_string(broker.data_dir().join("old-0/partition.metadata"))
            .expect("partition.metadata")
    };
    broker.stop();
    // Make it look like the earlier layout: no metadata log, the registry
    // file (topic id from the partition directory, a config), and the
    // producer id block file.
    let dir = broker.data_dir();
    std::fs::remove_dir_all(dir.join("__cluster_metadata-0")).unwrap();
    let b64 = id
        .lines()
        .find_map(|l| l.strip_prefix("topic_id: "))
        .unwrap()
        .trim()
        .to_string();
    let uuid = {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&b64)
            .unwrap();
        uuid::Uuid::from_slice(&bytes).unwrap()
    };
    std::fs::create_dir_all(dir.join("__cluster_metadata")).unwrap();
    std::fs::write(
        dir.join("__cluster_metadata/old.topic"),
        format!("topic.id={uuid}\npartitions=2\nconfig.retention.ms=123456789\n"),
    )
    .unwrap();
    std::fs::write(dir.join("__cluster_metadata/producer-ids"), "7000\n").unwrap();

    broker.restart();
    wait_topic(&broker, "old", 2);
    assert_eq!(high_watermark(&broker, "old"), 10);
    check_range(&broker, "old", 0..10);
    assert!(
        !dir.join("__cluster_metadata/old.topic").exists(),
        "the registry file is removed once adopted"
    );
    // The same topic id, and the config came along.
    let c = broker.consumer(&[]);
    let md = c
        .fetch_metadata(Some("old"), CLIENT_TIMEOUT)
        .expect("metadata");
    assert_eq!(md.topics()[0].name(), "old");
    let log = String::from_utf8_lossy(
        &std::fs::read(dir.join("__cluster_metadata-0/quorum.log")).unwrap(),
    )
    .to_string();
    assert!(
        log.contains(&uuid.to_string()),
        "topic id {uuid} kept: {log}"
    );
    assert!(log.contains("123456789"), "retention.ms kept");
    // The old block's end is reserved in the log, and new producers work.
    assert!(
        log.contains("\"next_producer_id\":7000"),
        "producer ids below 7000 reserved"
    );
    let producer = broker.producer(&[("enable.idempotence", "true")]);
    produce_range(&producer, "old", 10..11).await;
    drop(producer);
    broker.stop();
}

/// SIGHUP (a closed terminal, `kill -HUP`) shuts the broker down cleanly,
/// as the JVM's shutdown hook does for Kafka: exit code 0, and the next
/// start finds every log closed cleanly (no recovery scan).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_shuts_down_cleanly() {
    let mut broker = Broker::start();
    let topic = "hangup";
    broker.create_topic(topic, 1).await;
    let producer = broker.producer(&[("acks", "all")]);
    produce_range(&producer, topic, 0..100).await;
    drop(producer);
    broker.stop_with(libc::SIGHUP); // asserts exit status 0
    let first = broker.stderr_text();
    assert!(first.contains("shutdown complete"), "{first}");
    broker.restart();
    check_range(&broker, topic, 0..100);
    let all = broker.stderr_text();
    let second = &all[first.len()..];
    assert!(
        !second.contains("recovered after unclean shutdown"),
        "the restart recovered a log:\n{second}"
    );
    broker.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_keeps_acknowledged_records() {
    let mut broker = Broker::start_with(&["log.flush.interval.messages=1"]);
    let topic = "kill9";
    broker.create_topic(topic, 1).await;
    let producer = broker.producer(&[("acks", "all")]);
    let offs = produce_range(&producer, topic, 0..500).await;
    assert_eq!(offs, (0..500).collect::<Vec<i64>>());
    drop(producer);

    broker.kill9();
    broker.restart();

    assert_eq!(
        high_watermark(&broker, topic),
        500,
        "every acknowledged record survives kill -9"
    );
    check_range(&broker, topic, 0..500);
    let producer = broker.producer(&[("acks", "all")]);
    let offs = produce_range(&producer, topic, 500..600).await;
    assert_eq!(offs, (500..600).collect::<Vec<i64>>());
    check_range(&broker, topic, 0..600);
    broker.stop();
}

/// An operator restarting a broker gets its port back at once, although the
/// previous run's client connections are still in TIME_WAIT; clients that
/// kept the bootstrap address carry on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_on_the_same_port_with_clients_connected() {
    let mut broker = Broker::start();
    let addr = broker.bootstrap();
    broker.create_topic("same-port", 1).await;
    let producer = broker.producer(&[]);
    let first = produce_range(&producer, "same-port", 0..20).await;
    assert_eq!(first.len(), 20);
    // The consumer holds its own connection open across the restart.
    let consumer = broker.assigned_consumer("same-port", &[0], Offset::Beginning);
    assert_eq!(consume_n(&consumer, 20, CLIENT_TIMEOUT).len(), 20);

    broker.restart_same_port();
    assert_eq!(broker.bootstrap(), addr);
    // The same producer reconnects to the same address and goes on.
    let more = produce_range(&producer, "same-port", 20..30).await;
    assert_eq!(more, (20..30).collect::<Vec<i64>>());
    check_range(&broker, "same-port", 0..30);
}

/// A second broker on a port another broker listens on is refused with a
/// clear message instead of sharing it (SO_REUSEPORT would allow that).
#[test]
fn second_broker_on_a_used_port_is_refused() {
    let broker = Broker::start();
    let other = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fjord"))
        .arg("serve")
        .arg("--listeners")
        .arg(format!("PLAINTEXT://{}", broker.bootstrap()))
        .arg("--log-dirs")
        .arg(other.path())
        .output()
        .expect("run fjord");
    assert!(!out.status.success(), "the second broker started");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Address already in use"), "stderr: {err}");
}
