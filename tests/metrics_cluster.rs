//! The metrics endpoint of a 3-node cluster (every node a quorum voter)
//! and a broker-only node: replication bytes on the leader and the
//! followers of an RF-3 topic, and the metadata quorum's Raft figures
//! (Kafka's `raft-metrics`).

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::cluster::Cluster;
use common::layout::{create_with_rdkafka, wait_topic};
use common::send_to_partitions;
use rdkafka::producer::FutureProducer;

/// The value of the series `name{labels}` at the endpoint `addr`.
fn value(addr: &str, name: &str, labels: &str) -> Option<f64> {
    let (code, body) = fjord::metrics::fetch(addr, "/metrics").ok()?;
    assert_eq!(code, 200, "{body}");
    fjord::metrics::parse(&body)
        .into_iter()
        .find(|s| s.name == name && s.labels == labels)
        .map(|s| s.value)
}

/// Waits until `name{labels}` at `addr` passes `ok`; gives the value.
fn wait(addr: &str, name: &str, labels: &str, what: &str, ok: impl Fn(f64) -> bool) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = None;
    while Instant::now() < deadline {
        last = value(addr, name, labels);
        if let Some(v) = last.filter(|v| ok(*v)) {
            return v;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{what}: {name}{{{labels}}} at {addr} is {last:?}");
}

fn producer(c: &Cluster) -> FutureProducer {
    c.client_config(&c.bootstrap_all())
        .set("message.timeout.ms", "30000")
        .set("linger.ms", "5")
        .set("enable.idempotence", "false")
        .create()
        .expect("create producer")
}

const RAFT: &str = "kafka_server_raft_metrics";

/// Produced to an RF-3 partition: each follower counts the leader's bytes
/// in as replication bytes in, the leader reads at least as much for them
/// as replication bytes out; every voter serves the same quorum leader
/// and its committed and last offsets; a broker-only node serves the
/// leader as an observer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replication_bytes_and_raft_figures() {
    let mut c = Cluster::start(3, &["metrics.listener=127.0.0.1:0"]);
    let ids = c.ids();
    let topic = "replicated-bytes";
    create_with_rdkafka(&c, &c.bootstrap_all(), topic, 1, 3).await;
    let leader = wait_topic(&c, &ids, topic, 1).leaders()[&0];
    let records: Vec<(i32, String)> = (0..50).map(|i| (0, format!("value {i}"))).collect();
    send_to_partitions(&producer(&c), topic, &records, Duration::from_secs(30)).await;

    let t = format!("topic=\"{topic}\"");
    let addrs: std::collections::BTreeMap<i32, String> =
        ids.iter().map(|&id| (id, c.metrics_address(id))).collect();
    let at = |id: i32| addrs[&id].clone();
    let bytes_in = wait(
        &at(leader),
        "kafka_server_brokertopicmetrics_bytesin_total",
        &t,
        "the leader's bytes in",
        |v| v > 0.0,
    );
    let mut replicated = 0.0;
    for &id in ids.iter().filter(|&&id| id != leader) {
        // Byte for byte what the leader appended.
        replicated += wait(
            &at(id),
            "kafka_server_brokertopicmetrics_replicationbytesin_total",
            &t,
            "a follower's replication bytes in",
            |v| v == bytes_in,
        );
        assert_eq!(
            value(&at(id), "kafka_server_brokertopicmetrics_bytesin_total", &t).unwrap_or(0.0),
            0.0,
            "a follower appends nothing as leader"
        );
        assert!(
            value(
                &at(id),
                "kafka_server_brokertopicmetrics_replicationbytesin_total",
                ""
            )
            .unwrap()
                >= bytes_in
        );
    }
    wait(
        &at(leader),
        "kafka_server_brokertopicmetrics_replicationbytesout_total",
        &t,
        "the leader's replication bytes out",
        |v| v >= replicated,
    );
    assert_eq!(
        value(
            &at(leader),
            "kafka_server_brokertopicmetrics_replicationbytesin_total",
            &t
        )
        .unwrap_or(0.0),
        0.0
    );

    // The quorum: one leader, the same on every voter.
    let active = c.controller(Duration::from_secs(30));
    let mut leaders = 0;
    for &id in &ids {
        let a = at(id);
        wait(
            &a,
            &format!("{RAFT}_current_leader"),
            "",
            "the quorum leader",
            |v| v == f64::from(active),
        );
        let hw = wait(
            &a,
            &format!("{RAFT}_high_watermark"),
            "",
            "committed",
            |v| v > 0.0,
        );
        let leo = value(&a, &format!("{RAFT}_log_end_offset"), "").unwrap();
        assert!(leo >= hw, "node {id}: log end {leo} < high watermark {hw}");
        assert!(value(&a, &format!("{RAFT}_current_epoch"), "").unwrap() >= 1.0);
        let state = |s: &str| {
            value(
                &a,
                &format!("{RAFT}_current_state"),
                &format!("state=\"{s}\""),
            )
        };
        if id == active {
            assert_eq!(state("leader"), Some(1.0), "node {id}");
            leaders += 1;
        } else {
            assert_eq!(state("leader"), Some(0.0), "node {id}");
            assert_eq!(state("follower"), Some(1.0), "node {id}");
        }
    }
    assert_eq!(leaders, 1);

    // A broker-only node observes the quorum: the leader and its state.
    let observer = c.add_broker();
    let a = c.metrics_address(observer);
    wait(
        &a,
        &format!("{RAFT}_current_state"),
        "state=\"observer\"",
        "an observer",
        |v| v == 1.0,
    );
    wait(
        &a,
        &format!("{RAFT}_current_leader"),
        "",
        "the observer's leader",
        |v| v == f64::from(active),
    );
    assert_eq!(value(&a, &format!("{RAFT}_high_watermark"), ""), None);
}
