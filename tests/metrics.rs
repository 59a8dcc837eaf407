//! The metrics endpoint (`metrics.listener`) of the real broker: every
//! shard's reactor-stall counters in Prometheus text, 404 for other paths,
//! the `fjord metrics` command, and the stall summary at shutdown. Nothing
//! here depends on whether a stall happens.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::*;
use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::producer::FutureRecord;
use rdkafka::{Offset, TopicPartitionList};

/// The value of the series `name{labels}` (labels as the endpoint writes
/// them, e.g. `topic="m"`; empty for none) at the endpoint `addr`.
fn value(addr: &str, name: &str, labels: &str) -> Option<f64> {
    let (code, body) = fjord::metrics::fetch(addr, "/metrics").ok()?;
    assert_eq!(code, 200, "{body}");
    fjord::metrics::parse(&body)
        .into_iter()
        .find(|s| s.name == name && s.labels == labels)
        .map(|s| s.value)
}

/// Waits until `name{labels}` reads `want`; panics with the last value.
fn wait_value(addr: &str, name: &str, labels: &str, want: f64) {
    let mut last = None;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        last = value(addr, name, labels);
        if last == Some(want) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{name}{{{labels}}} is {last:?}, expected {want}");
}

/// One HTTP/1.0 GET; gives the whole response (head and body).
fn get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect to the metrics endpoint");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read response");
    out
}

#[test]
fn metrics_endpoint_lists_every_shard() {
    let mut broker = Broker::start_with(&["metrics.listener=127.0.0.1:0"]);
    let addr = broker.metrics_address();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");

    let resp = get(&addr, "/metrics");
    assert!(resp.starts_with("HTTP/1.0 200"), "{resp}");
    for shard in 0..2 {
        for name in [
            "fjord_reactor_stalls_total",
            "fjord_incremental_fetch_sessions",
            "fjord_io_thread_queue_depth",
            "fjord_reactor_stall_max_us",
            "fjord_sendfile_zero_copy_bytes_total",
            "fjord_leader_partitions",
            "fjord_under_replicated_partitions",
        ] {
            let key = format!("{name}{{shard=\"{shard}\"}} ");
            assert!(resp.contains(&key), "no {key} in:\n{resp}");
        }
        let key = format!("fjord_reactor_stalls_over_ms{{shard=\"{shard}\",gt=\"1\"}} ");
        assert!(resp.contains(&key), "no {key} in:\n{resp}");
    }
    assert!(!resp.contains("shard=\"2\""), "only 2 shards:\n{resp}");
    // One node: every partition it leads has its whole replica set in sync.
    for shard in 0..2 {
        let key = format!("fjord_under_replicated_partitions{{shard=\"{shard}\"}} 0");
        assert!(resp.contains(&key), "no {key} in:\n{resp}");
    }

    let resp = get(&addr, "/other");
    assert!(resp.starts_with("HTTP/1.0 404"), "{resp}");

    // The CLI prints the same text.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fjord"))
        .args(["metrics", "--address", &addr])
        .output()
        .expect("run fjord metrics");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("fjord_reactor_stalls_total{shard=\"1\"}"),
        "{text}"
    );

    // Orderly shutdown writes each shard's summary.
    broker.stop();
    let text = broker.stderr_text();
    for shard in 0..2 {
        let key = format!("shard {shard}: reactor stalls over 500 µs: ");
        assert!(text.contains(&key), "no {key:?} in:\n{text}");
    }
}

#[test]
fn metrics_off_by_default() {
    let broker = Broker::start();
    assert!(!broker.stderr_text().contains("metrics endpoint"));
}

/// Produce and consume with a real client: the Kafka-named counters move
/// by what was done (records in, bytes in and out, requests by API), the
/// log end offsets equal the records produced, and a group's lag is what
/// it has not consumed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_named_metrics_follow_produce_and_consume() {
    let broker = Broker::start_with(&["metrics.listener=127.0.0.1:0"]);
    let addr = broker.metrics_address();
    let topic = "metered";
    broker.create_topic(topic, 2).await;
    let t = format!("topic=\"{topic}\"");

    // Nothing produced yet: the topic's counters are absent or 0.
    let before = value(
        &addr,
        "kafka_server_brokertopicmetrics_messagesin_total",
        &t,
    );
    assert!(matches!(before, None | Some(0.0)), "{before:?}");

    let producer = broker.producer(&[("acks", "all")]);
    let (to_p0, to_p1) = (40usize, 20usize);
    for i in 0..to_p0 + to_p1 {
        let partition = if i < to_p0 { 0 } else { 1 };
        let payload = format!("value-{i}");
        producer
            .send(
                FutureRecord::<(), _>::to(topic)
                    .partition(partition)
                    .payload(&payload),
                Duration::from_secs(15),
            )
            .await
            .expect("delivery");
    }
    let produced = (to_p0 + to_p1) as f64;
    wait_value(
        &addr,
        "kafka_server_brokertopicmetrics_messagesin_total",
        &t,
        produced,
    );
    // The all-topics series (no label): only this topic took produce.
    wait_value(
        &addr,
        "kafka_server_brokertopicmetrics_messagesin_total",
        "",
        produced,
    );
    let bytes_in = value(&addr, "kafka_server_brokertopicmetrics_bytesin_total", &t).unwrap();
    assert!(bytes_in >= produced * 7.0, "bytes in {bytes_in}");
    let total = value(
        &addr,
        "kafka_server_brokertopicmetrics_totalproducerequests_total",
        &t,
    )
    .unwrap();
    assert!(total >= 1.0, "{total}");
    assert_eq!(
        value(
            &addr,
            "kafka_server_brokertopicmetrics_failedproducerequests_total",
            &t
        ),
        Some(0.0)
    );
    // Produce requests, by version, and their time histogram.
    let (_, body) = fjord::metrics::fetch(&addr, "/metrics").unwrap();
    let samples = fjord::metrics::parse(&body);
    let produce_requests: f64 = samples
        .iter()
        .filter(|s| {
            s.name == "kafka_network_requestmetrics_requests_total"
                && s.labels.starts_with("request=\"Produce\",version=")
        })
        .map(|s| s.value)
        .sum();
    assert!(produce_requests >= 1.0, "{body}");
    let timed = value(
        &addr,
        "kafka_network_requestmetrics_totaltimems_count",
        "request=\"Produce\"",
    )
    .unwrap();
    assert!(timed >= produce_requests, "{timed} < {produce_requests}");

    // Log end offsets equal the records produced (refreshed once a second).
    let p = |i: i32| format!("topic=\"{topic}\",partition=\"{i}\"");
    wait_value(&addr, "kafka_log_log_logendoffset", &p(0), to_p0 as f64);
    wait_value(&addr, "kafka_log_log_logendoffset", &p(1), to_p1 as f64);
    assert_eq!(
        value(&addr, "kafka_log_log_logstartoffset", &p(0)),
        Some(0.0)
    );
    assert!(value(&addr, "kafka_log_log_size", &p(0)).unwrap() > 0.0);
    assert_eq!(
        value(&addr, "kafka_log_log_numlogsegments", &p(0)),
        Some(1.0)
    );
    assert!(value(&addr, "kafka_server_replicamanager_leadercount", "").unwrap() >= 2.0);
    assert_eq!(
        value(
            &addr,
            "kafka_server_replicamanager_underreplicatedpartitions",
            ""
        ),
        Some(0.0)
    );
    assert_eq!(
        value(
            &addr,
            "kafka_controller_kafkacontroller_activecontrollercount",
            ""
        ),
        Some(1.0)
    );
    assert!(
        value(
            &addr,
            "kafka_controller_kafkacontroller_globaltopiccount",
            ""
        )
        .unwrap()
            >= 1.0
    );

    // Consume 25 records of partition 0 in a group, and commit 25 for it
    // and 5 for partition 1.
    let group = "metered-group";
    let consumer = broker.consumer(&[("group.id", group)]);
    assign(&consumer, topic, &[0], Offset::Beginning);
    let got = consume_n(&consumer, 25, Duration::from_secs(30));
    assert_eq!(got.len(), 25);
    let mut commit = TopicPartitionList::new();
    commit
        .add_partition_offset(topic, 0, Offset::Offset(25))
        .unwrap();
    commit
        .add_partition_offset(topic, 1, Offset::Offset(5))
        .unwrap();
    consumer.commit(&commit, CommitMode::Sync).expect("commit");
    let lag = |i: i32| format!("consumergroup=\"{group}\",topic=\"{topic}\",partition=\"{i}\"");
    wait_value(
        &addr,
        "kafka_consumergroup_lag",
        &lag(0),
        (to_p0 - 25) as f64,
    );
    wait_value(
        &addr,
        "kafka_consumergroup_lag",
        &lag(1),
        (to_p1 - 5) as f64,
    );
    wait_value(&addr, "kafka_consumergroup_current_offset", &lag(0), 25.0);
    wait_value(
        &addr,
        "kafka_coordinator_group_groupmetadatamanager_numoffsets",
        "",
        2.0,
    );

    // The fetches: bytes out and per-topic fetch counts moved.
    let bytes_out = value(&addr, "kafka_server_brokertopicmetrics_bytesout_total", &t).unwrap();
    assert!(bytes_out >= 25.0 * 7.0, "bytes out {bytes_out}");
    assert!(
        value(
            &addr,
            "kafka_server_brokertopicmetrics_totalfetchrequests_total",
            &t
        )
        .unwrap()
            >= 1.0
    );
    let (_, body) = fjord::metrics::fetch(&addr, "/metrics").unwrap();
    assert!(
        fjord::metrics::parse(&body)
            .iter()
            .any(|s| s.name == "kafka_network_requestmetrics_requests_total"
                && s.labels.starts_with("request=\"Fetch\",")
                && s.value >= 1.0),
        "{body}"
    );
    // Kafka's consumer-fetch series, apart from followers'.
    assert!(
        fjord::metrics::parse(&body)
            .iter()
            .any(|s| s.name == "kafka_network_requestmetrics_requests_total"
                && s.labels.starts_with("request=\"FetchConsumer\",")
                && s.value >= 1.0),
        "{body}"
    );
    assert!(!body.contains("request=\"FetchFollower\""), "{body}");
    assert!(
        value(
            &addr,
            "kafka_network_requestmetrics_totaltimems_count",
            "request=\"FetchConsumer\""
        )
        .unwrap()
            >= 1.0
    );
}

/// A batch refused as too large counts as failed and as rejected bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_large_batches_are_rejected_bytes() {
    use rdkafka::admin::{NewTopic, TopicReplication};
    let broker = Broker::start_with(&["metrics.listener=127.0.0.1:0"]);
    let addr = broker.metrics_address();
    let topic = "small";
    let admin = broker.admin();
    let t = NewTopic::new(topic, 1, TopicReplication::Fixed(1)).set("max.message.bytes", "1000");
    let r = admin.create_topics(&[t], &admin_opts()).await.unwrap();
    assert!(r[0].is_ok(), "{r:?}");
    let consumer = broker.consumer(&[]);
    wait_for(CLIENT_TIMEOUT, "metadata", || {
        partition_count(&consumer, topic) == Some(1)
    });

    let producer = broker.producer(&[("compression.type", "none")]);
    let big = vec![b'x'; 3000];
    let sent = producer
        .send(
            FutureRecord::<(), _>::to(topic).partition(0).payload(&big),
            Duration::from_secs(15),
        )
        .await;
    assert!(sent.is_err(), "a 3000-byte record was taken: {sent:?}");
    let ok = producer
        .send(
            FutureRecord::<(), _>::to(topic)
                .partition(0)
                .payload("fits"),
            Duration::from_secs(15),
        )
        .await;
    assert!(ok.is_ok(), "{ok:?}");

    let t = format!("topic=\"{topic}\"");
    wait_value(
        &addr,
        "kafka_server_brokertopicmetrics_messagesin_total",
        &t,
        1.0,
    );
    let rejected = value(
        &addr,
        "kafka_server_brokertopicmetrics_bytesrejected_total",
        &t,
    )
    .unwrap();
    assert!(rejected >= 3000.0, "rejected {rejected}");
    assert!(
        value(
            &addr,
            "kafka_server_brokertopicmetrics_failedproducerequests_total",
            &t
        )
        .unwrap()
            >= 1.0
    );
}

/// A deleted topic's series go (Kafka removes its BrokerTopicMetrics),
/// while the all-topics series keep what it counted: they never go down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_topics_series_go_and_the_totals_stay() {
    let broker = Broker::start_with(&["metrics.listener=127.0.0.1:0"]);
    let addr = broker.metrics_address();
    let topic = "doomed";
    broker.create_topic(topic, 2).await;
    let producer = broker.producer(&[]);
    for i in 0..10 {
        producer
            .send(
                FutureRecord::<(), _>::to(topic)
                    .partition(i % 2)
                    .payload("x"),
                Duration::from_secs(15),
            )
            .await
            .unwrap();
    }
    let t = format!("topic=\"{topic}\"");
    let name = "kafka_server_brokertopicmetrics_messagesin_total";
    wait_value(&addr, name, &t, 10.0);
    let before = value(&addr, name, "").unwrap();
    assert!(before >= 10.0, "{before}");
    let r = broker
        .admin()
        .delete_topics(&[topic], &admin_opts())
        .await
        .unwrap();
    assert!(r[0].is_ok(), "{r:?}");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while value(&addr, name, &t).is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "the deleted topic's series stayed"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(value(&addr, name, ""), Some(before));
}

/// Every series of the scrape at `addr`.
fn scrape(addr: &str) -> Vec<fjord::metrics::Sample> {
    let (code, body) = fjord::metrics::fetch(addr, "/metrics").unwrap();
    assert_eq!(code, 200, "{body}");
    fjord::metrics::parse(&body)
}

/// The sum of the series `name` whose labels start with `prefix`.
fn sum_of(samples: &[fjord::metrics::Sample], name: &str, prefix: &str) -> f64 {
    samples
        .iter()
        .filter(|s| s.name == name && s.labels.starts_with(prefix))
        .map(|s| s.value)
        .sum()
}

/// `requests_total` of `request` (every version).
fn requests(samples: &[fjord::metrics::Sample], request: &str) -> f64 {
    sum_of(
        samples,
        "kafka_network_requestmetrics_requests_total",
        &format!("request=\"{request}\","),
    )
}

/// `errors_total{request, error}` (0 when absent).
fn errors(samples: &[fjord::metrics::Sample], request: &str, error: &str) -> f64 {
    sum_of(
        samples,
        "kafka_network_requestmetrics_errors_total",
        &format!("request=\"{request}\",error=\"{error}\""),
    )
}

/// The five stages of Kafka's request time, by family suffix.
const STAGES: [&str; 5] = [
    "requestqueuetimems",
    "localtimems",
    "remotetimems",
    "responsequeuetimems",
    "responsesendtimems",
];

/// `<family>_<part>{request=...}` (part: `count` or `sum`; 0 when absent).
fn hist(samples: &[fjord::metrics::Sample], family: &str, part: &str, request: &str) -> f64 {
    let name = format!("kafka_network_requestmetrics_{family}_{part}");
    samples
        .iter()
        .filter(|s| s.name == name && s.labels == format!("request=\"{request}\""))
        .map(|s| s.value)
        .sum()
}

/// Polls the endpoint until `ok` holds for a scrape (30 s at most); gives
/// that scrape, or panics with `what` and the last one.
fn scrape_until(
    addr: &str,
    what: &str,
    ok: impl Fn(&[fjord::metrics::Sample]) -> bool,
) -> Vec<fjord::metrics::Sample> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let samples = scrape(addr);
        if ok(&samples) {
            return samples;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: never held; last scrape: {samples:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Kafka's `ErrorsPerSec` and the request-time split: every Produce
/// answered NONE counts one NONE per partition; ListOffsets for an
/// unknown topic counts UNKNOWN_TOPIC_OR_PARTITION per partition; a Fetch
/// long poll's wait is remote time; each of the five stage histograms
/// counts every request `requests_total` counts, and the stages add up to
/// the total time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_and_time_split_follow_requests() {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use kafka_protocol::messages::{BrokerId, FetchRequest, ListOffsetsRequest, TopicName};
    use kafka_protocol::protocol::StrBytes;

    let broker = Broker::start_with(&["metrics.listener=127.0.0.1:0"]);
    let addr = broker.metrics_address();
    let topic = "split";
    broker.create_topic(topic, 1).await;
    let idle = "split-idle";
    broker.create_topic(idle, 1).await;

    // Produce, acks=all, one record per request (each awaited): one NONE
    // per request, its one partition.
    let before = scrape(&addr);
    let (produce0, none0) = (
        requests(&before, "Produce"),
        errors(&before, "Produce", "NONE"),
    );
    let remote0 = hist(&before, "remotetimems", "count", "Produce");
    let producer = broker.producer(&[("acks", "all"), ("linger.ms", "0")]);
    let sent = 12.0;
    for i in 0..sent as usize {
        producer
            .send(
                FutureRecord::<(), _>::to(topic)
                    .partition(0)
                    .payload(&format!("v{i}")),
                Duration::from_secs(15),
            )
            .await
            .expect("delivery");
    }
    let after = scrape_until(&addr, "produce counted", |s| {
        requests(s, "Produce") - produce0 >= sent && errors(s, "Produce", "NONE") - none0 >= sent
    });
    assert_eq!(requests(&after, "Produce") - produce0, sent);
    assert_eq!(errors(&after, "Produce", "NONE") - none0, sent);
    // acks=all on one node: the wait for the ISR is observed (near 0 ms)
    // for every request.
    assert_eq!(
        hist(&after, "remotetimems", "count", "Produce") - remote0,
        sent
    );
    drop(producer);

    // ListOffsets for a topic that does not exist: one
    // UNKNOWN_TOPIC_OR_PARTITION per partition asked, none of NONE.
    let mut conn = connect(&broker.bootstrap());
    let unknown0 = errors(&after, "ListOffsets", "UNKNOWN_TOPIC_OR_PARTITION");
    let lo_none0 = errors(&after, "ListOffsets", "NONE");
    let asks = 3;
    for cid in 0..asks {
        let req = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("no-such-topic")))
                .with_partitions(
                    (0..2)
                        .map(|p| {
                            ListOffsetsPartition::default()
                                .with_partition_index(p)
                                .with_current_leader_epoch(-1)
                                .with_timestamp(-1)
                        })
                        .collect(),
                )]);
        let r = kp_call(&mut conn, 7, cid, &req);
        for p in r.topics.iter().flat_map(|t| t.partitions.iter()) {
            assert_eq!(p.error_code, 3, "{r:?}");
        }
    }
    let samples = scrape_until(&addr, "list offsets counted", |s| {
        errors(s, "ListOffsets", "UNKNOWN_TOPIC_OR_PARTITION") - unknown0 >= f64::from(asks * 2)
    });
    assert_eq!(
        errors(&samples, "ListOffsets", "UNKNOWN_TOPIC_OR_PARTITION") - unknown0,
        f64::from(asks * 2)
    );
    assert_eq!(errors(&samples, "ListOffsets", "NONE"), lo_none0);

    // Long-poll Fetches of an empty partition: each waits max_wait_ms for
    // data that never comes; that wait is remote time.
    let fetch_remote0 = hist(&samples, "remotetimems", "sum", "Fetch");
    let consumer_remote0 = hist(&samples, "remotetimems", "sum", "FetchConsumer");
    let fetch_none0 = errors(&samples, "Fetch", "NONE");
    let wait_ms = 300;
    let polls = 3;
    for cid in 0..polls {
        let req = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(wait_ms)
            .with_min_bytes(1)
            .with_max_bytes(1 << 20)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str(idle)))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(0)
                    .with_fetch_offset(0)
                    .with_partition_max_bytes(1 << 20)])]);
        let started = std::time::Instant::now();
        let r = kp_call(&mut conn, 12, 100 + cid, &req);
        assert!(started.elapsed() >= Duration::from_millis(250), "{r:?}");
        assert_eq!(r.error_code, 0, "{r:?}");
    }
    drop(conn);
    let floor = f64::from(polls) * 250.0;
    let samples = scrape_until(&addr, "long polls counted", |s| {
        hist(s, "remotetimems", "sum", "Fetch") - fetch_remote0 >= floor
    });
    assert!(hist(&samples, "remotetimems", "sum", "FetchConsumer") - consumer_remote0 >= floor);
    // Top-level NONE and the partition's NONE, per fetch.
    assert!(
        errors(&samples, "Fetch", "NONE") - fetch_none0 >= f64::from(polls * 2),
        "{samples:#?}"
    );

    // Quiet now (every client gone): for every API counted, each stage
    // histogram and the total observed each request once, and the stages
    // add up to the total time (each sum rounds down to the µs: at most
    // 5 µs a request).
    let apis = [
        "Produce",
        "Fetch",
        "FetchConsumer",
        "ListOffsets",
        "Metadata",
        "ApiVersions",
    ];
    let samples = scrape_until(&addr, "stage counts equal requests", |s| {
        apis.iter().all(|api| {
            let n = requests(s, api);
            n >= 1.0
                && hist(s, "totaltimems", "count", api) == n
                && STAGES.iter().all(|st| hist(s, st, "count", api) == n)
        })
    });
    for api in apis {
        let n = requests(&samples, api);
        let total = hist(&samples, "totaltimems", "sum", api);
        let stages: f64 = STAGES.iter().map(|st| hist(&samples, st, "sum", api)).sum();
        assert!(
            (total - stages).abs() <= n * 0.006,
            "{api}: total {total} ms, stages {stages} ms over {n} requests"
        );
    }
    // The long polls' remote time is within their total.
    assert!(
        hist(&samples, "remotetimems", "sum", "Fetch")
            <= hist(&samples, "totaltimems", "sum", "Fetch")
    );
}

/// Waits until `name{labels}` reads more than `above`; gives the value.
fn wait_above(addr: &str, name: &str, labels: &str, above: f64) -> f64 {
    let mut last = None;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        last = value(addr, name, labels);
        if let Some(v) = last.filter(|v| *v > above) {
            return v;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{name}{{{labels}}} is {last:?}, expected more than {above}");
}

/// The prefix of Kafka's `group-coordinator-metrics` under the exporter.
const GCM: &str = "kafka_server_group_coordinator_metrics";

/// A KIP-848 consumer group is counted under `protocol="consumer"` and by
/// state, each group epoch bump is a consumer group rebalance, and its
/// commits are counted.
#[test]
fn consumer_groups_are_counted_by_protocol_and_state() {
    use common::consumer_group::{member, settle, topic_with_records, PARTITIONS};
    use std::collections::BTreeSet;
    let broker = Broker::start_with(&["metrics.listener=127.0.0.1:0"]);
    let addr = broker.metrics_address();
    let boot = broker.bootstrap();
    let topic = "cg-metered";
    topic_with_records(&boot, topic);
    let groups = format!("{GCM}_group_count");
    let states = format!("{GCM}_consumer_group_count");
    let rebalances = format!("{GCM}_consumer_group_rebalance_count_total");
    let commits = format!("{GCM}_offset_commit_count_total");
    assert_eq!(value(&addr, &groups, "protocol=\"consumer\""), Some(0.0));
    assert_eq!(value(&addr, &rebalances, ""), Some(0.0));
    assert_eq!(value(&addr, &commits, ""), Some(0.0));

    let a = member(&boot, "cg-m", topic);
    let mut seen = vec![Vec::new(), Vec::new()];
    let full: BTreeSet<i32> = (0..PARTITIONS).collect();
    settle(
        &[&a],
        &mut seen[..1],
        "one member holds every partition",
        |n| n[0] == full,
    );
    wait_value(&addr, &groups, "protocol=\"consumer\"", 1.0);
    wait_value(&addr, &states, "state=\"Stable\"", 1.0);
    assert_eq!(value(&addr, &states, "state=\"Empty\""), Some(0.0));
    assert_eq!(value(&addr, &groups, "protocol=\"classic\""), Some(0.0));
    let first = value(&addr, &rebalances, "").unwrap();
    assert!(
        first >= 1.0,
        "the first member's join bumps the epoch: {first}"
    );

    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Offset(1))
        .unwrap();
    tpl.add_partition_offset(topic, 1, Offset::Offset(1))
        .unwrap();
    a.commit(&tpl, CommitMode::Sync).expect("commit");
    assert_eq!(value(&addr, &commits, ""), Some(2.0));

    // A second member: another epoch bump, still one (stable) group.
    let b = member(&boot, "cg-m", topic);
    settle(&[&a, &b], &mut seen, "the partitions split", |n| {
        n[0].len() == 3 && n[1].len() == 3
    });
    wait_above(&addr, &rebalances, "", first);
    wait_value(&addr, &states, "state=\"Stable\"", 1.0);
    assert_eq!(value(&addr, &groups, "protocol=\"consumer\""), Some(1.0));
}

/// Finalizes `share.version` 1 where it is below.
fn enable_share(addr: &str) {
    use common::consumer_group::s;
    use kafka_protocol::messages as kp;
    let mut c = common::raw::RawConn::new(addr);
    let v = c.call(
        4,
        &kp::ApiVersionsRequest::default()
            .with_client_software_name(s("metrics-test"))
            .with_client_software_version(s("1")),
    );
    let level = v
        .finalized_features
        .iter()
        .find(|f| f.name.as_str() == "share.version")
        .map_or(0, |f| f.max_version_level);
    if level >= 1 {
        return;
    }
    let r = c.call(
        1,
        &kp::UpdateFeaturesRequest::default()
            .with_timeout_ms(30_000)
            .with_feature_updates(vec![
                kp::update_features_request::FeatureUpdateKey::default()
                    .with_feature(s("share.version"))
                    .with_max_version_level(1)
                    .with_upgrade_type(1),
            ]),
    );
    assert_eq!(r.error_code, 0, "UpdateFeatures: {r:?}");
}

/// A share group (KIP-932) with one member is counted under
/// `protocol="share"` and as Stable, its join as a share group rebalance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn share_groups_are_counted_by_state() {
    use common::consumer_group::{find_coordinator, s, until_served};
    use kafka_protocol::messages as kp;
    let broker = Broker::start_with(&["metrics.listener=127.0.0.1:0"]);
    let addr = broker.metrics_address();
    let boot = broker.bootstrap();
    let topic = "sg-metered";
    broker.create_topic(topic, 2).await;
    enable_share(&boot);
    let groups = format!("{GCM}_group_count");
    let states = format!("{GCM}_share_group_count");
    let rebalances = format!("{GCM}_share_group_rebalance_count_total");
    assert_eq!(value(&addr, &groups, "protocol=\"share\""), Some(0.0));
    assert_eq!(value(&addr, &states, "state=\"Stable\""), Some(0.0));

    let group = "sg-m";
    let mut c = common::raw::RawConn::new(&boot);
    find_coordinator(&mut c, group);
    let joined = until_served("join", || {
        let mut req = kp::ShareGroupHeartbeatRequest::default()
            .with_group_id(s(group).into())
            .with_member_id(s("member-a-0000000000000"))
            .with_member_epoch(0);
        req.subscribed_topic_names = Some(vec![s(topic).into()]);
        let r = c.call(1, &req);
        (r.error_code, r)
    });
    assert!(joined.member_epoch > 0, "{joined:?}");
    wait_value(&addr, &groups, "protocol=\"share\"", 1.0);
    wait_value(&addr, &states, "state=\"Stable\"", 1.0);
    assert_eq!(value(&addr, &states, "state=\"Empty\""), Some(0.0));
    assert_eq!(value(&addr, &groups, "protocol=\"consumer\""), Some(0.0));
    assert!(value(&addr, &rebalances, "").unwrap() >= 1.0);
}

/// A client id with a `producer_byte_rate` quota: its throttling is
/// counted under its quota entity (`user=""`: a client-id quota), a client
/// without a quota has no series.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttling_is_counted_by_quota_entity() {
    use common::consumer_group::s;
    use kafka_protocol::messages as kp;
    let broker = Broker::start_with(&["metrics.listener=127.0.0.1:0"]);
    let addr = broker.metrics_address();
    let topic = "throttled";
    broker.create_topic(topic, 1).await;
    let mut c = common::raw::RawConn::new(&broker.bootstrap());
    let req = kp::AlterClientQuotasRequest::default().with_entries(vec![
        kp::alter_client_quotas_request::EntryData::default()
            .with_entity(vec![kp::alter_client_quotas_request::EntityData::default()
                .with_entity_type(s("client-id"))
                .with_entity_name(Some(s("slow")))])
            .with_ops(vec![kp::alter_client_quotas_request::OpData::default()
                .with_key(s("producer_byte_rate"))
                .with_value(1024.0)]),
    ]);
    let r = c.call(1, &req);
    assert_eq!(r.entries[0].error_code, 0, "{r:?}");

    let labels = "user=\"\",client_id=\"slow\"";
    let throttled = "kafka_server_produce_throttled_total";
    let ms = "kafka_server_produce_throttle_time_ms_total";
    // The quota reaches every shard with the metadata image: produce
    // until a response is throttled.
    let slow = broker.producer(&[("client.id", "slow"), ("linger.ms", "0")]);
    let free = broker.producer(&[("client.id", "free")]);
    let payload = vec![b'x'; 8 * 1024];
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while value(&addr, throttled, labels).unwrap_or(0.0) < 1.0 {
        assert!(
            std::time::Instant::now() < deadline,
            "never throttled:\n{}",
            get(&addr, "/metrics")
        );
        slow.send(
            FutureRecord::<(), _>::to(topic)
                .partition(0)
                .payload(&payload),
            Duration::from_secs(30),
        )
        .await
        .unwrap();
        free.send(
            FutureRecord::<(), _>::to(topic).partition(0).payload("x"),
            Duration::from_secs(30),
        )
        .await
        .unwrap();
    }
    assert!(value(&addr, ms, labels).unwrap() > 0.0);
    let requests = value(&addr, "kafka_server_produce_quota_requests_total", labels).unwrap();
    assert!(requests >= value(&addr, throttled, labels).unwrap());
    // Each counted request carried one 8 KiB record (its Produce request
    // is larger): the bytes counted for the entity cover them.
    let bytes = value(&addr, "kafka_server_produce_bytes_total", labels).unwrap();
    assert!(
        bytes >= requests * 8192.0,
        "{bytes} bytes in {requests} requests"
    );
    let body = get(&addr, "/metrics");
    assert!(!body.contains("client_id=\"free\""), "{body}");
}

/// An ApiVersions request at a version Fjord does not serve is answered
/// (UNSUPPORTED_VERSION at v0, KIP-511) and counted as a request under the
/// version it asked, as Kafka counts it: its error code has a request.
#[test]
fn unsupported_api_versions_is_a_counted_request() {
    let broker = Broker::start_with(&["metrics.listener=127.0.0.1:0"]);
    let addr = broker.metrics_address();
    let before = scrape(&addr);
    let (requests0, errors0) = (
        requests(&before, "ApiVersions"),
        errors(&before, "ApiVersions", "UNSUPPORTED_VERSION"),
    );
    let mut s = TcpStream::connect(broker.bootstrap()).unwrap();
    let sent = 3u32;
    for cid in 0..sent {
        // Header v2: api key 18, version 99, correlation id, null client
        // id, no tagged fields; an empty body.
        let mut frame = Vec::new();
        frame.extend_from_slice(&18i16.to_be_bytes());
        frame.extend_from_slice(&99i16.to_be_bytes());
        frame.extend_from_slice(&(cid as i32).to_be_bytes());
        frame.extend_from_slice(&(-1i16).to_be_bytes());
        frame.extend_from_slice(&[0, 0]);
        s.write_all(&(frame.len() as i32).to_be_bytes()).unwrap();
        s.write_all(&frame).unwrap();
        let mut size = [0u8; 4];
        s.read_exact(&mut size).unwrap();
        let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
        s.read_exact(&mut body).unwrap();
        // Correlation id, then the v0 body's error code.
        assert_eq!(i16::from_be_bytes([body[4], body[5]]), 35, "{body:?}");
    }
    let after = scrape_until(&addr, "the unsupported requests counted", |s| {
        requests(s, "ApiVersions") - requests0 >= f64::from(sent)
    });
    assert_eq!(requests(&after, "ApiVersions") - requests0, f64::from(sent));
    assert_eq!(
        errors(&after, "ApiVersions", "UNSUPPORTED_VERSION") - errors0,
        f64::from(sent)
    );
}

/// A fetch of records no longer in the page cache is counted as a miss:
/// the segment's pages are dropped (`posix_fadvise(DONTNEED)` after an
/// fdatasync) and a consumer reads it from the start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetches_that_miss_the_page_cache_are_counted() {
    use std::os::unix::io::AsRawFd;
    let broker = Broker::start_with(&["metrics.listener=127.0.0.1:0"]);
    let addr = broker.metrics_address();
    let topic = "cold-reads";
    broker.create_topic(topic, 1).await;
    let producer = broker.producer(&[("linger.ms", "5")]);
    let payload = vec![b'c'; 16 * 1024];
    for _ in 0..64 {
        producer
            .send(
                FutureRecord::<(), _>::to(topic)
                    .partition(0)
                    .payload(&payload),
                Duration::from_secs(15),
            )
            .await
            .expect("delivery");
    }
    drop(producer);
    let sum = |name: &str| sum_of(&scrape(&addr), name, "");
    let checked0 = sum("fjord_fetch_regions_checked_total");
    let missed0 = sum("fjord_fetch_page_cache_misses_total")
        + sum("fjord_fetch_header_page_cache_misses_total");
    let log = std::fs::File::open(broker.segment_path(topic, 0)).unwrap();
    log.sync_data().unwrap();
    // SAFETY: a valid open descriptor; advice only.
    let rc = unsafe { libc::posix_fadvise(log.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0);
    let consumer = broker.consumer(&[
        ("group.id", "cold-reader"),
        ("auto.offset.reset", "earliest"),
    ]);
    consumer.subscribe(&[topic]).unwrap();
    let mut got = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while got < 64 {
        assert!(std::time::Instant::now() < deadline, "read {got} of 64");
        if let Some(Ok(_)) = consumer.poll(Duration::from_millis(200)) {
            got += 1;
        }
    }
    scrape_until(&addr, "the cold reads counted", |s| {
        sum_of(s, "fjord_fetch_regions_checked_total", "") > checked0
            && sum_of(s, "fjord_fetch_page_cache_misses_total", "")
                + sum_of(s, "fjord_fetch_header_page_cache_misses_total", "")
                > missed0
    });
}

/// Waits until `broker` has logged a reactor-stall line; gives those lines.
fn stall_lines(broker: &Broker) -> Vec<String> {
    poll_until(Duration::from_secs(30), "a reactor-stall line", || {
        // Whole lines only: the broker may be writing the last one.
        let text = broker.stderr_text();
        let lines: Vec<String> = text
            .split_inclusive('\n')
            .filter(|l| l.ends_with('\n') && l.contains("reactor stalled"))
            .map(|l| l.trim_end().to_string())
            .collect();
        if lines.is_empty() {
            Err(text)
        } else {
            Ok(lines)
        }
    })
}

/// The system's CLOCK_MONOTONIC in seconds (the clock the stall lines'
/// "began at" uses).
fn monotonic_s() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec for the call's duration.
    assert_eq!(
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) },
        0
    );
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// `reactor.stall.rusage`: each stall line also gives the shard thread's
/// CPU time, time off the CPU (split into waiting for the core and the
/// rest, where the kernel gives the run-queue wait, as Linux does here),
/// context switches and page faults during the poll, and when the poll
/// began on CLOCK_MONOTONIC; without the key the lines do not. A 1 µs
/// threshold makes every poll a stall (the shard's start-up poll alone
/// takes far longer), so both brokers log some.
#[test]
fn stall_lines_give_the_threads_resource_use_when_asked() {
    let before = monotonic_s();
    let with = Broker::start_with(&["reactor.stall.threshold.us=1", "reactor.stall.rusage=true"]);
    let without = Broker::start_with(&["reactor.stall.threshold.us=1"]);
    for line in stall_lines(&with) {
        assert!(line.contains("; on CPU "), "{line}");
        assert!(line.contains(" ms, off it "), "{line}");
        assert!(line.contains(": waiting for the core "), "{line}");
        assert!(line.contains(" (preempted "), "{line}");
        assert!(
            line.contains("), taken by the host, interrupts or blocked "),
            "{line}"
        );
        assert!(line.contains(" page fault(s) ("), "{line}");
        // The two parts of the time off the CPU add up to it (each rounded
        // to 0.01 ms).
        let ms_after = |what: &str| -> f64 {
            line.split(what)
                .nth(1)
                .and_then(|t| t.split(" ms").next())
                .and_then(|t| t.parse().ok())
                .unwrap_or_else(|| panic!("no {what:?}: {line}"))
        };
        let (off, waiting, rest) = (
            ms_after(" ms, off it "),
            ms_after(": waiting for the core "),
            ms_after("interrupts or blocked "),
        );
        assert!(
            (waiting + rest - off).abs() <= 0.011,
            "{waiting} + {rest} is not {off}: {line}"
        );
        let began: f64 = line
            .split("; began at CLOCK_MONOTONIC ")
            .nth(1)
            .and_then(|t| t.strip_suffix(" s"))
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("no start time: {line}"));
        assert!(
            began >= before - 0.001 && began <= monotonic_s(),
            "{began} outside {before}..now: {line}"
        );
    }
    for line in stall_lines(&without) {
        assert!(!line.contains("on CPU"), "{line}");
    }
}
