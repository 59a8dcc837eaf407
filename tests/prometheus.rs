//! A real Prometheus (Debian's `prometheus` package, installed by
//! scripts/install-test-deps) scrapes Fjord every second: under produce
//! load the rate of records in is above 0, the consumer lag it stores is
//! what a group has not consumed, killing a follower of a 3-node cluster
//! raises the under-replicated partitions and its return brings them back
//! to 0 (and the group coordinator reports the lag of partitions other
//! nodes lead), and every expression of the Grafana dashboard
//! (docs/grafana/fjord.json) parses and names only exported metrics.
//!
//! Without the package the tests are left out with a note, unless
//! `FJORD_REQUIRE_PROMETHEUS` is set (as scripts/test sets it).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cluster::Cluster;
use common::layout::{create_with_rdkafka, wait_topic};
use common::ports::free_port;
use common::*;
use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};
use serde_json::Value;

/// How long a condition on Prometheus' answers may take to hold.
const DEADLINE: Duration = Duration::from_secs(60);

/// The `prometheus` binary: on `PATH` or Debian's path. None (with a note)
/// when it is not installed, a failed test when `FJORD_REQUIRE_PROMETHEUS`
/// is set.
fn prometheus_binary() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("prometheus"))
            .find(|p| p.is_file())
    });
    let found = on_path.or_else(|| {
        let debian = PathBuf::from("/usr/bin/prometheus");
        debian.is_file().then_some(debian)
    });
    if found.is_none() {
        assert!(
            std::env::var("FJORD_REQUIRE_PROMETHEUS").is_err(),
            "FJORD_REQUIRE_PROMETHEUS is set but prometheus is not installed (scripts/install-test-deps)"
        );
        eprintln!("prometheus is not installed: its tests are left out");
    }
    found
}

/// A Prometheus server scraping the targets of its file (rewritten with
/// [`Prometheus::set_targets`]) every second; killed on drop.
struct Prometheus {
    child: Child,
    dir: tempfile::TempDir,
    /// `host:port` of its HTTP API.
    addr: String,
}

impl Prometheus {
    /// Starts Prometheus with `targets` (`host:port` of metrics endpoints)
    /// as job `fjord`; waits until it is ready.
    fn start(binary: &Path, targets: &[String]) -> Prometheus {
        let dir = tempfile::Builder::new()
            .prefix("prometheus-")
            .tempdir()
            .unwrap();
        let config = "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: fjord\n    file_sd_configs:\n      - files: ['targets.json']\n        refresh_interval: 1s\n";
        std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let mut p = Prometheus {
            child: Command::new(binary)
                .current_dir(dir.path())
                .arg("--config.file=prometheus.yml")
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.path().join("data").display()
                ))
                .arg(format!("--web.listen-address={addr}"))
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(dir.path().join("stderr")).unwrap())
                .spawn()
                .expect("start prometheus"),
            dir,
            addr,
        };
        p.set_targets(targets);
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Ok((200, _)) = fjord::metrics::fetch(&p.addr, "/-/ready") {
                return p;
            }
            assert!(
                p.child.try_wait().unwrap().is_none(),
                "prometheus exited:\n{}",
                p.stderr()
            );
            assert!(
                Instant::now() < deadline,
                "prometheus not ready:\n{}",
                p.stderr()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// What Prometheus wrote on stderr.
    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr")).unwrap_or_default()
    }

    /// Replaces the scraped targets (file-based discovery: written to a
    /// temporary file, then renamed over the watched one).
    fn set_targets(&self, targets: &[String]) {
        let body = serde_json::json!([{ "targets": targets, "labels": {} }]);
        let tmp = self.dir.path().join("targets.json.tmp");
        std::fs::write(&tmp, body.to_string()).unwrap();
        std::fs::rename(&tmp, self.dir.path().join("targets.json")).unwrap();
    }

    /// GET `path` of the HTTP API; gives the status and the parsed body.
    fn get(&self, path: &str) -> (u16, Value) {
        let (code, body) = fjord::metrics::fetch(&self.addr, path).expect("prometheus answers");
        let v = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("not JSON ({e}) from {path}: {body}"));
        (code, v)
    }

    /// An instant query: the status and body of `/api/v1/query`.
    fn query(&self, expr: &str) -> (u16, Value) {
        self.get(&format!("/api/v1/query?query={}", encode(expr)))
    }

    /// The first sample's value of the vector `expr` gives, if any.
    fn scalar(&self, expr: &str) -> Option<f64> {
        let (code, v) = self.query(expr);
        assert_eq!(code, 200, "{expr}: {v}");
        v["data"]["result"].as_array()?.first()?["value"][1]
            .as_str()?
            .parse()
            .ok()
    }

    /// Waits until `expr`'s value satisfies `ok`; panics with `what` and
    /// the last value.
    fn wait(&self, expr: &str, what: &str, ok: impl Fn(f64) -> bool) -> f64 {
        let deadline = Instant::now() + DEADLINE;
        let mut last = None;
        while Instant::now() < deadline {
            last = self.scalar(expr);
            if let Some(v) = last.filter(|v| ok(*v)) {
                return v;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        let (_, targets) = self.get("/api/v1/targets");
        panic!("{what}: `{expr}` is {last:?}\ntargets: {targets}");
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Percent-encodes a query parameter (RFC 3986: all but unreserved).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Produces to `topic` partition 0 until `stop` is set; gives the records
/// acknowledged.
async fn produce_until(producer: FutureProducer, topic: String, stop: Arc<AtomicBool>) -> usize {
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        let payload = format!("load-{n}");
        producer
            .send(
                FutureRecord::<(), _>::to(&topic)
                    .partition(0)
                    .payload(&payload),
                Duration::from_secs(15),
            )
            .await
            .expect("delivery");
        n += 1;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_sees_the_rate_under_load_and_the_lag() {
    let Some(binary) = prometheus_binary() else {
        return;
    };
    let broker = Broker::start_with(&["metrics.listener=127.0.0.1:0"]);
    let prom = Prometheus::start(&binary, &[broker.metrics_address()]);
    let topic = "scraped";
    broker.create_topic(topic, 1).await;
    prom.wait("up{job=\"fjord\"}", "Fjord scraped", |v| v == 1.0);

    // Under load, the rate of records in is above 0.
    let stop = Arc::new(AtomicBool::new(false));
    let load = tokio::spawn(produce_until(
        broker.producer(&[]),
        topic.to_string(),
        stop.clone(),
    ));
    let rate =
        format!("rate(kafka_server_brokertopicmetrics_messagesin_total{{topic=\"{topic}\"}}[5s])");
    prom.wait(&rate, "records in under load", |v| v > 0.0);
    stop.store(true, Ordering::SeqCst);
    let produced = load.await.unwrap();
    assert!(produced > 0);

    // The stored counter and log end offset catch up with what was
    // produced; a group that committed a third has the rest as lag.
    prom.wait(
        &format!("kafka_server_brokertopicmetrics_messagesin_total{{topic=\"{topic}\"}}"),
        "records in",
        |v| v == produced as f64,
    );
    prom.wait(
        &format!("kafka_log_log_logendoffset{{topic=\"{topic}\",partition=\"0\"}}"),
        "log end offset",
        |v| v == produced as f64,
    );
    let committed = produced / 3;
    let group = "scraped-group";
    let consumer = broker.consumer(&[("group.id", group)]);
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Offset(committed as i64))
        .unwrap();
    consumer.commit(&tpl, CommitMode::Sync).expect("commit");
    let lag = format!(
        "kafka_consumergroup_lag{{consumergroup=\"{group}\",topic=\"{topic}\",partition=\"0\"}}"
    );
    prom.wait(&lag, "lag of what is unconsumed", |v| {
        v == (produced - committed) as f64
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_sees_under_replicated_partitions_while_a_follower_is_down() {
    let Some(binary) = prometheus_binary() else {
        return;
    };
    let mut c = Cluster::start(
        3,
        &[
            "metrics.listener=127.0.0.1:0",
            "replica.lag.time.max.ms=2000",
            "replica.socket.timeout.ms=2000",
            "replica.fetch.backoff.ms=200",
        ],
    );
    let ids = c.ids();
    let targets = |c: &Cluster, ids: &[i32]| -> Vec<String> {
        ids.iter().map(|&id| c.metrics_address(id)).collect()
    };
    let prom = Prometheus::start(&binary, &targets(&c, &ids));
    let topic = "replicated";
    create_with_rdkafka(&c, &c.bootstrap_all(), topic, 1, 3).await;
    let layout = wait_topic(&c, &ids, topic, 1);
    let leader = layout.leaders()[&0];
    let follower = *ids.iter().find(|&&id| id != leader).unwrap();
    prom.wait("count(up{job=\"fjord\"} == 1)", "all three scraped", |v| {
        v == 3.0
    });
    prom.wait(
        "sum(kafka_network_requestmetrics_requests_total{request=\"FetchFollower\"})",
        "followers' fetches counted",
        |v| v > 0.0,
    );
    let urp = "sum(kafka_server_replicamanager_underreplicatedpartitions)";
    prom.wait(urp, "fully replicated at first", |v| v == 0.0);

    // Consumer lag of partitions led by other brokers than the group's
    // coordinator: three partitions led across the nodes, ten records each,
    // offset 4 committed for each; the coordinator reports every
    // partition's lag (from its follower replica where it does not lead).
    let lagged = "lagged";
    create_with_rdkafka(&c, &c.bootstrap_all(), lagged, 3, 3).await;
    wait_topic(&c, &ids, lagged, 3);
    let producer: FutureProducer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", c.bootstrap_all())
        .set("broker.address.family", "v4")
        .set("acks", "all")
        .create()
        .expect("producer");
    for p in 0..3 {
        for i in 0..10 {
            let payload = format!("r{i}");
            producer
                .send(
                    FutureRecord::<(), _>::to(lagged)
                        .partition(p)
                        .payload(&payload),
                    Duration::from_secs(30),
                )
                .await
                .expect("delivery");
        }
    }
    let consumer: rdkafka::consumer::BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", c.bootstrap_all())
        .set("broker.address.family", "v4")
        .set("group.id", "lag-g")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for p in 0..3 {
        tpl.add_partition_offset(lagged, p, Offset::Offset(4))
            .unwrap();
    }
    // The offsets topic is created on the first FindCoordinator: retried
    // while the coordinator is not available yet.
    let deadline = Instant::now() + DEADLINE;
    while let Err(e) = consumer.commit(&tpl, CommitMode::Sync) {
        assert!(Instant::now() < deadline, "commit: {e}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    prom.wait(
        "count(kafka_consumergroup_lag{consumergroup=\"lag-g\"})",
        "a lag series for each partition",
        |v| v == 3.0,
    );
    prom.wait(
        "sum(kafka_consumergroup_lag{consumergroup=\"lag-g\"})",
        "the lag of every partition",
        |v| v == 18.0,
    );

    c.kill9(follower);
    prom.wait(urp, "under-replicated with a follower down", |v| v >= 1.0);

    c.start_node(follower);
    prom.set_targets(&targets(&c, &ids));
    prom.wait(
        "count(up{job=\"fjord\"} == 1)",
        "all three scraped again",
        |v| v == 3.0,
    );
    prom.wait(urp, "fully replicated once it is back", |v| v == 0.0);
    prom.wait(
        "sum(kafka_server_replicamanager_isrexpands_total)",
        "an ISR expansion counted",
        |v| v >= 1.0,
    );
}

/// Every metric name (`kafka_*`, `fjord_*`) an expression names.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut word = String::new();
    for ch in expr.chars().chain(std::iter::once(' ')) {
        if ch.is_ascii_alphanumeric() || ch == '_' || ch == ':' {
            word.push(ch);
        } else {
            if word.starts_with("kafka_") || word.starts_with("fjord_") {
                out.insert(std::mem::take(&mut word));
            }
            word.clear();
        }
    }
    out
}

/// Every `expr` of a Grafana dashboard (any depth).
fn exprs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("expr", Value::String(s)) => out.push(s.clone()),
                    _ => exprs(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| exprs(v, out)),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dashboard_expression_parses_and_names_exported_metrics() {
    let Some(binary) = prometheus_binary() else {
        return;
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/grafana/fjord.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .expect("the dashboard is JSON");
    let mut all = Vec::new();
    exprs(&dashboard, &mut all);
    assert!(all.len() >= 10, "only {} expressions", all.len());

    let broker = Broker::start_with(&["metrics.listener=127.0.0.1:0"]);
    let prom = Prometheus::start(&binary, &[broker.metrics_address()]);
    // Some traffic, so that the request and topic families have series.
    broker.create_topic("dash", 1).await;
    let producer = broker.producer(&[]);
    producer
        .send(
            FutureRecord::<(), _>::to("dash").partition(0).payload("x"),
            Duration::from_secs(15),
        )
        .await
        .expect("delivery");
    let consumer = broker.assigned_consumer("dash", &[0], Offset::Beginning);
    assert_eq!(consume_n(&consumer, 1, Duration::from_secs(30)).len(), 1);

    // Names Fjord exports, from its endpoint (histograms and counters
    // under their family names too).
    let (_, body) = fjord::metrics::fetch(&broker.metrics_address(), "/metrics").unwrap();
    let exported: BTreeSet<String> = body
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .flat_map(|l| {
            let mut parts = l.split_whitespace();
            let (name, kind) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            match kind {
                "histogram" => vec![
                    format!("{name}_bucket"),
                    format!("{name}_sum"),
                    format!("{name}_count"),
                ],
                _ => vec![name.to_string()],
            }
        })
        .collect();
    for expr in &all {
        let (code, v) = prom.query(expr);
        assert_eq!(code, 200, "`{expr}` does not parse: {v}");
        assert_eq!(v["status"], "success", "`{expr}`: {v}");
        let names = metric_names(expr);
        assert!(!names.is_empty(), "`{expr}` names no Fjord metric");
        for name in names {
            assert!(
                exported.contains(&name),
                "`{expr}` names {name}, which Fjord does not export"
            );
        }
    }
    // The check can fail: a broken expression is refused as bad_data.
    let (code, v) = prom.query("rate(kafka_server_brokertopicmetrics_messagesin_total[1m]");
    assert_eq!(code, 400, "{v}");
    assert_eq!(v["errorType"], "bad_data", "{v}");
}
