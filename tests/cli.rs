//! The operator commands of the `fjord` binary (topics, configs, acls,
//! users, cluster, dump-log) run as a process against a running Fjord
//! broker, their `--json` output parsed and checked; the protocol commands
//! also against Apache Kafka 4.4 when its jars are installed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::kafka_peer::KafkaPeer;
use common::*;
use rdkafka::producer::FutureRecord;
use serde_json::Value;

const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// The outcome of one run of the binary.
struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

fn fjord(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_fjord"))
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run fjord");
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs a command against `addr` with `--json`; asserts it succeeded and
/// gives the parsed output.
fn json(addr: &str, args: &[&str]) -> Value {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--bootstrap-server", addr, "--json"]);
    let r = fjord(&all);
    assert!(r.ok, "fjord {all:?} failed: {}{}", r.stdout, r.stderr);
    serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("fjord {all:?}: not JSON ({e}): {}", r.stdout))
}

/// Runs a command against `addr`; asserts it failed and gives its stderr.
fn fails(addr: &str, args: &[&str]) -> String {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--bootstrap-server", addr]);
    let r = fjord(&all);
    assert!(!r.ok, "fjord {all:?} should fail: {}", r.stdout);
    r.stderr
}

/// Polls `f` until it gives Some, for up to 30 s.
fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn topic_doc(addr: &str, topic: &str) -> Value {
    let d = json(addr, &["topics", "describe", topic]);
    let ts = d["topics"].as_array().unwrap();
    assert_eq!(ts.len(), 1, "{d}");
    ts[0].clone()
}

fn names(v: &Value) -> Vec<String> {
    v["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect()
}

/// create → describe (partitions, the override) → alter (partitions,
/// configs) → a second create refused with Kafka's error name → delete.
fn topic_lifecycle(addr: &str, node: i64) {
    let t = "cli-orders";
    let created = json(
        addr,
        &[
            "topics",
            "create",
            t,
            "--partitions",
            "2",
            "--replication-factor",
            "1",
            "--config",
            "retention.ms=3600000",
        ],
    );
    assert_eq!(created["topic"], t);
    let d = eventually("the new topic's leaders", || {
        let d = topic_doc(addr, t);
        let led = d["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["leader"].as_i64() == Some(node));
        led.then_some(d)
    });
    assert_eq!(d["partition_count"], 2, "{d}");
    assert_eq!(d["replication_factor"], 1, "{d}");
    let parts: Vec<i64> = d["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["partition"].as_i64().unwrap())
        .collect();
    assert_eq!(parts, vec![0, 1]);
    assert_eq!(d["partitions"][0]["replicas"], serde_json::json!([node]));
    assert_eq!(d["partitions"][0]["isr"], serde_json::json!([node]));
    assert_eq!(d["configs"]["retention.ms"], "3600000", "{d}");
    assert!(d["configs"].get("segment.bytes").is_none(), "{d}");
    assert!(d["topic_id"].as_str().unwrap().len() == 22, "{d}");

    assert!(names(&json(addr, &["topics", "list"])).contains(&t.to_string()));

    json(
        addr,
        &[
            "topics",
            "alter",
            t,
            "--partitions",
            "4",
            "--config",
            "segment.bytes=1048576",
            "--delete-config",
            "retention.ms",
        ],
    );
    let d = eventually("4 partitions", || {
        let d = topic_doc(addr, t);
        (d["partition_count"] == 4).then_some(d)
    });
    assert_eq!(d["configs"]["segment.bytes"], "1048576", "{d}");
    assert!(d["configs"].get("retention.ms").is_none(), "{d}");

    let err = fails(addr, &["topics", "create", t, "--partitions", "1"]);
    assert!(err.contains("TOPIC_ALREADY_EXISTS"), "{err}");
    let err = fails(addr, &["topics", "alter", t, "--partitions", "2"]);
    assert!(err.contains("INVALID_PARTITIONS"), "{err}");
    let err = fails(addr, &["topics", "describe", "cli-no-such-topic"]);
    assert!(err.contains("UNKNOWN_TOPIC_OR_PARTITION"), "{err}");
    assert!(err.contains("does not exist"), "{err}");

    let del = json(addr, &["topics", "delete", t]);
    assert_eq!(del["deleted"], serde_json::json!([t]));
    eventually("the topic gone from the list", || {
        (!names(&json(addr, &["topics", "list"])).contains(&t.to_string())).then_some(())
    });
}

/// `fjord cluster --json`: the node, the controller and the quorum.
fn cluster_shows(addr: &str, node: i64) -> Value {
    let c = json(addr, &["cluster"]);
    assert!(c["cluster_id"].as_str().unwrap().len() == 22, "{c}");
    let brokers = c["brokers"].as_array().unwrap();
    assert!(
        brokers.iter().any(|b| b["node_id"] == node
            && format!("{}:{}", b["host"].as_str().unwrap(), b["port"]) == addr),
        "{c}"
    );
    c
}

#[test]
fn topics_against_fjord() {
    let broker = Broker::start();
    topic_lifecycle(&broker.bootstrap(), 1);
    // An alter whose config the broker refuses changes nothing: not the
    // partition count asked in the same command either.
    let addr = broker.bootstrap();
    json(
        &addr,
        &["topics", "create", "cli-half", "--partitions", "2"],
    );
    let r = fjord(&[
        "topics",
        "alter",
        "cli-half",
        "--partitions",
        "7",
        "--config",
        "retention.ms=abc",
        "--bootstrap-server",
        &addr,
    ]);
    assert!(!r.ok, "{}", r.stdout);
    assert!(r.stderr.contains("INVALID_CONFIG"), "{}", r.stderr);
    let d = json(&addr, &["topics", "describe", "cli-half"]);
    assert_eq!(d["topics"][0]["partition_count"], 2, "{d}");
}

#[test]
fn cluster_and_quorum_of_fjord() {
    let broker = Broker::start();
    let addr = broker.bootstrap();
    let c = cluster_shows(&addr, 1);
    assert_eq!(c["controller_id"], 1, "{c}");
    let q = &c["quorum"];
    assert_eq!(q["leader_id"], 1, "{c}");
    assert!(q["leader_epoch"].as_i64().unwrap() >= 1, "{c}");
    let hw = q["high_watermark"].as_i64().unwrap();
    assert!(hw > 0, "{c}");
    let voters = q["voters"].as_array().unwrap();
    assert_eq!(voters.len(), 1, "{c}");
    assert_eq!(voters[0]["node_id"], 1, "{c}");
    assert!(voters[0]["log_end_offset"].as_i64().unwrap() >= hw, "{c}");
    assert_eq!(voters[0]["lag"], 0, "{c}");
    let text = fjord(&["cluster", "--bootstrap-server", &addr]);
    assert!(
        text.ok && text.stdout.contains("LeaderId: 1"),
        "{}",
        text.stdout
    );
}

#[test]
fn configs_and_quotas() {
    let broker = Broker::start();
    let addr = broker.bootstrap();
    json(
        addr.as_str(),
        &["topics", "create", "cli-cfg", "--partitions", "1"],
    );
    json(
        &addr,
        &[
            "configs",
            "alter",
            "--entity-type",
            "topics",
            "--entity-name",
            "cli-cfg",
            "--add-config",
            "cleanup.policy=[compact,delete],max.message.bytes=2000000",
        ],
    );
    let d = json(
        &addr,
        &[
            "configs",
            "describe",
            "--entity-type",
            "topics",
            "--entity-name",
            "cli-cfg",
        ],
    );
    assert_eq!(
        d["configs"]["cleanup.policy"]["value"], "compact,delete",
        "{d}"
    );
    assert_eq!(
        d["configs"]["cleanup.policy"]["source"], "DYNAMIC_TOPIC_CONFIG",
        "{d}"
    );
    assert_eq!(d["configs"]["max.message.bytes"]["value"], "2000000", "{d}");
    assert_eq!(d["configs"].as_object().unwrap().len(), 2, "{d}");
    json(
        &addr,
        &[
            "configs",
            "alter",
            "--entity-type",
            "topics",
            "--entity-name",
            "cli-cfg",
            "--delete-config",
            "max.message.bytes",
        ],
    );
    let d = json(
        &addr,
        &[
            "configs",
            "describe",
            "--entity-type",
            "topics",
            "--entity-name",
            "cli-cfg",
            "--all",
        ],
    );
    assert_eq!(
        d["configs"]["max.message.bytes"]["source"], "DEFAULT_CONFIG",
        "{d}"
    );
    let b = json(
        &addr,
        &[
            "configs",
            "describe",
            "--entity-type",
            "brokers",
            "--entity-name",
            "1",
            "--all",
        ],
    );
    assert!(b["configs"].get("log.retention.hours").is_some(), "{b}");

    json(
        &addr,
        &[
            "configs",
            "alter",
            "--entity-type",
            "users",
            "--entity-name",
            "alice",
            "--add-config",
            "producer_byte_rate=1048576,consumer_byte_rate=2097152",
        ],
    );
    let q = eventually("alice's quotas", || {
        let q = json(
            &addr,
            &[
                "configs",
                "describe",
                "--entity-type",
                "users",
                "--entity-name",
                "alice",
            ],
        );
        (q["quotas"].as_array().unwrap().len() == 1).then_some(q)
    });
    assert_eq!(q["quotas"][0]["entity"]["user"], "alice", "{q}");
    assert_eq!(
        q["quotas"][0]["values"]["producer_byte_rate"], 1048576.0,
        "{q}"
    );
    assert_eq!(
        q["quotas"][0]["values"]["consumer_byte_rate"], 2097152.0,
        "{q}"
    );

    let err = fails(
        &addr,
        &[
            "configs",
            "alter",
            "--entity-type",
            "topics",
            "--entity-name",
            "cli-cfg",
            "--add-config",
            "no.such.config=1",
        ],
    );
    assert!(err.contains("INVALID_CONFIG"), "{err}");
}

#[test]
fn acls_with_an_authorizer() {
    let broker = Broker::start_with(&[
        &format!("authorizer.class.name={STANDARD_AUTHORIZER}"),
        "super.users=User:ANONYMOUS",
    ]);
    let addr = broker.bootstrap();
    let created = json(
        &addr,
        &[
            "acls",
            "create",
            "--topic",
            "cli-acl",
            "--resource-pattern-type",
            "prefixed",
            "--principal",
            "User:bob",
            "--operation",
            "Read",
            "--permission",
            "allow",
        ],
    );
    assert_eq!(created["acls"][0]["operation"], "read");
    json(
        &addr,
        &[
            "acls",
            "create",
            "--group",
            "cli-group",
            "--principal",
            "User:bob",
            "--host",
            "10.0.0.1",
            "--operation",
            "describe",
            "--permission",
            "deny",
        ],
    );
    let listed = eventually("both ACLs listed", || {
        let l = json(&addr, &["acls", "list", "--principal", "User:bob"]);
        (l["acls"].as_array().unwrap().len() == 2).then_some(l)
    });
    let acls = listed["acls"].as_array().unwrap();
    let topic = acls
        .iter()
        .find(|a| a["resource_type"] == "topic")
        .expect("the topic ACL");
    assert_eq!(topic["resource_name"], "cli-acl");
    assert_eq!(topic["pattern_type"], "prefixed");
    assert_eq!(topic["host"], "*");
    assert_eq!(topic["permission"], "allow");
    let group = acls
        .iter()
        .find(|a| a["resource_type"] == "group")
        .expect("the group ACL");
    assert_eq!(group["host"], "10.0.0.1");
    assert_eq!(group["operation"], "describe");
    assert_eq!(group["permission"], "deny");

    let only_topics = json(&addr, &["acls", "list", "--resource-type", "topic"]);
    assert_eq!(only_topics["acls"].as_array().unwrap().len(), 1);

    let deleted = json(&addr, &["acls", "delete", "--group", "cli-group"]);
    assert_eq!(deleted["acls"].as_array().unwrap().len(), 1, "{deleted}");
    assert_eq!(deleted["acls"][0]["resource_name"], "cli-group");
    eventually("one ACL left", || {
        let l = json(&addr, &["acls", "list"]);
        (l["acls"].as_array().unwrap().len() == 1).then_some(())
    });
    let err = fails(
        &addr,
        &["acls", "create", "--topic", "x", "--operation", "read"],
    );
    assert!(err.contains("--principal"), "{err}");
}

#[test]
fn acls_without_an_authorizer_fail_with_kafkas_error() {
    let broker = Broker::start();
    let err = fails(&broker.bootstrap(), &["acls", "list"]);
    assert!(err.contains("SECURITY_DISABLED"), "{err}");
}

#[test]
fn scram_users() {
    let broker = Broker::start();
    let addr = broker.bootstrap();
    json(
        &addr,
        &[
            "users",
            "upsert",
            "carol",
            "--mechanism",
            "SCRAM-SHA-256",
            "--iterations",
            "8192",
            "--password",
            "carol-secret",
        ],
    );
    json(
        &addr,
        &["users", "upsert", "carol", "--password", "carol-secret-2"],
    );
    let d = eventually("carol's two credentials", || {
        let d = json(&addr, &["users", "describe", "carol"]);
        (d["users"][0]["credentials"].as_array().map(|c| c.len()) == Some(2)).then_some(d)
    });
    assert_eq!(d["users"][0]["user"], "carol");
    let creds = d["users"][0]["credentials"].as_array().unwrap();
    assert!(creds
        .iter()
        .any(|c| c["mechanism"] == "SCRAM-SHA-256" && c["iterations"] == 8192));
    assert!(creds
        .iter()
        .any(|c| c["mechanism"] == "SCRAM-SHA-512" && c["iterations"] == 4096));
    json(
        &addr,
        &["users", "delete", "carol", "--mechanism", "SCRAM-SHA-256"],
    );
    json(
        &addr,
        &["users", "delete", "carol", "--mechanism", "SCRAM-SHA-512"],
    );
    let err = eventually("carol gone", || {
        let mut all = vec!["users", "describe", "carol", "--bootstrap-server"];
        all.push(&addr);
        let r = fjord(&all);
        (!r.ok).then_some(r.stderr)
    });
    assert!(err.contains("RESOURCE_NOT_FOUND"), "{err}");
    let err = fails(
        &addr,
        &[
            "users",
            "upsert",
            "dave",
            "--password",
            "x",
            "--iterations",
            "10",
        ],
    );
    assert!(err.contains("4096"), "{err}");
}

fn produce(addr: &str, topic: &str, n: usize) {
    produce_with(addr, topic, n, "none");
}

fn produce_with(addr: &str, topic: &str, n: usize, codec: &str) {
    let producer: rdkafka::producer::FutureProducer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", addr)
        .set("broker.address.family", "v4")
        .set("message.timeout.ms", "30000")
        .set("enable.idempotence", "false")
        .set("linger.ms", "0")
        .set("batch.num.messages", "7")
        .set("compression.type", codec)
        .set("log_level", "4")
        .create()
        .expect("create producer");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut futs = Vec::new();
        for i in 0..n {
            let key = format!("k{i}");
            let value = format!("value-{i}-{}", "x".repeat(100));
            let rec = FutureRecord::to(topic)
                .partition(0)
                .key(&key)
                .payload(&value)
                .headers(
                    rdkafka::message::OwnedHeaders::new()
                        .insert(rdkafka::message::Header {
                            key: "h",
                            value: Some("hv"),
                        })
                        .insert(rdkafka::message::Header {
                            key: "h",
                            value: Some("hv2"),
                        }),
                );
            futs.push(
                producer
                    .send_result(rec)
                    .map_err(|(e, _)| e)
                    .expect("enqueue record"),
            );
        }
        for f in futs {
            tokio::time::timeout(Duration::from_secs(60), f)
                .await
                .expect("delivery report within 60 s")
                .expect("delivery future not cancelled")
                .unwrap_or_else(|(e, _)| panic!("delivery failed: {e}"));
        }
    });
}

#[test]
fn dump_log_of_a_real_segment() {
    let mut broker = Broker::start();
    let addr = broker.bootstrap();
    let n = 200usize;
    json(
        &addr,
        &[
            "topics",
            "create",
            "cli-dump",
            "--partitions",
            "1",
            "--config",
            "index.interval.bytes=1",
        ],
    );
    produce(&addr, "cli-dump", n);
    broker.stop();
    let log = broker.segment_path("cli-dump", 0);

    let r = fjord(&[
        "dump-log",
        "--print-records",
        "--json",
        log.to_str().unwrap(),
    ]);
    assert!(r.ok, "{}{}", r.stdout, r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let doc = &v[0];
    assert_eq!(doc["kind"], "log");
    let batches = doc["batches"].as_array().unwrap();
    check_produced(doc, n, "none");
    let positions: Vec<i64> = batches
        .iter()
        .map(|b| b["position"].as_i64().unwrap())
        .collect();

    // The offset index: every entry points at the start of a batch.
    let index = log.with_extension("index");
    let v = json_file(&["dump-log", "--json", index.to_str().unwrap()]);
    let entries = v[0]["entries"].as_array().unwrap();
    assert!(!entries.is_empty(), "{v}");
    for e in entries {
        assert!(
            positions.contains(&e["position"].as_i64().unwrap()),
            "{e} is not a batch start"
        );
    }
    // Checked against the .log beside it: every entry names its batch's
    // last offset, in order, whole entries only.
    assert_eq!(v[0]["summary"]["log_checked"], true, "{v}");
    assert_eq!(v[0]["summary"]["mismatches"], 0, "{v}");
    assert_eq!(v[0]["summary"]["out_of_order"], 0, "{v}");
    assert_eq!(v[0]["summary"]["trailing_bytes"], 0, "{v}");
    let timeindex = log.with_extension("timeindex");
    let v = json_file(&["dump-log", "--json", timeindex.to_str().unwrap()]);
    assert_eq!(v[0]["kind"], "timeindex");
    for e in v[0]["entries"].as_array().unwrap() {
        assert!(e["offset"].as_i64().unwrap() < n as i64);
    }
    assert_eq!(v[0]["summary"]["log_checked"], true, "{v}");
    assert_eq!(v[0]["summary"]["mismatches"], 0, "{v}");
    assert_eq!(v[0]["summary"]["out_of_order"], 0, "{v}");

    // A damaged copy beside the same .log: the second entry's position
    // moved 1 byte (no batch starts there) and a partial entry after the
    // last: both reported, and the command fails after printing.
    let dir = broker.data_dir().join("dump-index-copy");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&log, dir.join("00000000000000000000.log")).unwrap();
    let mut idx = std::fs::read(&index).unwrap();
    assert!(idx.len() >= 16, "two entries at least");
    let p = u32::from_be_bytes(idx[12..16].try_into().unwrap()) + 1;
    idx[12..16].copy_from_slice(&p.to_be_bytes());
    idx.extend_from_slice(&[0u8; 3]);
    let bad_index = dir.join("00000000000000000000.index");
    std::fs::write(&bad_index, &idx).unwrap();
    let r = fjord(&["dump-log", "--json", bad_index.to_str().unwrap()]);
    assert!(!r.ok, "a mismatched index must fail the command");
    assert!(r.stderr.contains("do not match the .log"), "{}", r.stderr);
    assert!(
        r.stderr.contains("after the last whole entry"),
        "{}",
        r.stderr
    );
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v[0]["summary"]["mismatches"], 1, "{v}");
    assert_eq!(v[0]["summary"]["trailing_bytes"], 3, "{v}");
    assert_eq!(v[0]["mismatches"][0]["index_offset"], entries[1]["offset"]);
    assert_eq!(v[0]["mismatches"][0]["log_offset"], Value::Null);
    let text = fjord(&["dump-log", bad_index.to_str().unwrap()]);
    assert!(
        text.stdout.contains("Mismatch: Index offset: "),
        "{}",
        text.stdout
    );

    // A zero entry with entries after it is damage, not preallocated
    // space: kept and reported (out of order, and not matching the log).
    let mut idx = std::fs::read(&index).unwrap();
    assert!(idx.len() >= 24, "three entries at least");
    idx[8..16].copy_from_slice(&[0u8; 8]);
    std::fs::write(&bad_index, &idx).unwrap();
    let r = fjord(&["dump-log", "--json", bad_index.to_str().unwrap()]);
    assert!(!r.ok, "a zeroed middle entry must fail the command");
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        v[0]["summary"]["entries"].as_u64().unwrap() as usize,
        idx.len() / 8,
        "{v}"
    );
    assert!(
        v[0]["summary"]["out_of_order"].as_u64().unwrap() >= 1,
        "{v}"
    );

    // Text output names each batch as kafka-dump-log.sh does.
    let text = fjord(&["dump-log", log.to_str().unwrap()]);
    assert!(text.ok);
    assert_eq!(text.stdout.matches("baseOffset: ").count(), batches.len());
    assert!(text.stdout.contains("isvalid: true"));

    // A flipped byte inside the second batch's records: its CRC is flagged.
    let mut bytes = std::fs::read(&log).unwrap();
    let second = positions[1] as usize;
    bytes[second + 70] ^= 0xff;
    let bad = broker.data_dir().join("00000000000000000000.log");
    std::fs::write(&bad, &bytes).unwrap();
    let r = fjord(&["dump-log", "--json", bad.to_str().unwrap()]);
    assert!(!r.ok, "a bad CRC must fail the command");
    assert!(r.stderr.contains("invalid CRC"), "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let bs = v[0]["batches"].as_array().unwrap();
    assert_eq!(bs.len(), batches.len());
    assert_eq!(bs[1]["crc_valid"], false);
    assert_eq!(v[0]["summary"]["invalid_crcs"], 1);
    assert!(bs
        .iter()
        .enumerate()
        .all(|(i, b)| i == 1 || b["crc_valid"] == true));
    let text = fjord(&["dump-log", bad.to_str().unwrap()]);
    assert!(text.stdout.contains("isvalid: false"));

    // Bytes after the last whole batch (garbage, a torn tail, a corrupt
    // batch length) fail the command too, after every batch before them.
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(&[0u8; 100]);
    let torn = broker.data_dir().join("00000000000000000100.log");
    std::fs::write(&torn, &bytes).unwrap();
    let r = fjord(&["dump-log", "--json", torn.to_str().unwrap()]);
    assert!(!r.ok, "trailing bytes must fail the command");
    assert!(r.stderr.contains("not a whole batch"), "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v[0]["batches"].as_array().unwrap().len(), batches.len());
    assert_eq!(v[0]["summary"]["trailing_bytes"], 100);

    // A missing file among good ones: the others are still printed.
    let r = fjord(&[
        "dump-log",
        "--json",
        log.to_str().unwrap(),
        "/nonexistent/00000000000000000000.log",
    ]);
    assert!(!r.ok);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1);
}

/// Compressed batches: the header names the codec and the records are
/// decompressed for `--print-records`.
#[test]
fn dump_log_of_compressed_batches() {
    let mut broker = Broker::start();
    let addr = broker.bootstrap();
    for codec in ["gzip", "lz4", "zstd"] {
        let topic = format!("cli-dump-{codec}");
        json(&addr, &["topics", "create", &topic, "--partitions", "1"]);
        produce_with(&addr, &topic, 30, codec);
    }
    broker.stop();
    for codec in ["gzip", "lz4", "zstd"] {
        let log = broker.segment_path(&format!("cli-dump-{codec}"), 0);
        let v = json_file(&[
            "dump-log",
            "--print-records",
            "--json",
            log.to_str().unwrap(),
        ]);
        check_produced(&v[0], 30, codec);
    }
    let r = fjord(&["dump-log", "Cargo.toml"]);
    assert!(!r.ok && r.stderr.contains("not a .log"), "{}", r.stderr);
}

/// Checks a segment's dump (`--print-records --json`) holds the `n`
/// records [`produce`] sent, in whole batches with valid CRCs.
fn check_produced(doc: &Value, n: usize, codec: &str) {
    let batches = doc["batches"].as_array().unwrap();
    assert!(batches.len() > 1, "{doc}");
    assert_eq!(doc["summary"]["records"], n as i64);
    assert_eq!(doc["summary"]["invalid_crcs"], 0);
    assert_eq!(doc["summary"]["trailing_bytes"], 0);
    let mut next = 0i64;
    let mut position = 0i64;
    for b in batches {
        assert_eq!(b["crc_valid"], true, "{b}");
        assert_eq!(b["base_offset"], next, "{b}");
        assert_eq!(b["position"], position, "{b}");
        assert_eq!(b["is_control"], false);
        assert_eq!(b["compression"], codec, "{b}");
        let recs = b["records"].as_array().unwrap();
        assert_eq!(recs.len() as i64, b["count"].as_i64().unwrap());
        for r in recs {
            let i = r["offset"].as_i64().unwrap();
            assert_eq!(i, next);
            assert_eq!(r["key"], format!("k{i}"));
            assert_eq!(r["value"], format!("value-{i}-{}", "x".repeat(100)));
            // A key sent twice shows twice, in the order sent (as
            // kafka-dump-log lists them).
            assert_eq!(r["headers"].as_array().unwrap().len(), 2, "{r}");
            assert_eq!(r["headers"][0]["key"], "h");
            assert_eq!(r["headers"][0]["value"], "hv");
            assert_eq!(r["headers"][1]["key"], "h");
            assert_eq!(r["headers"][1]["value"], "hv2");
            // Not idempotent: no sequence, per batch or per record.
            assert_eq!(r["sequence"], -1);
            next += 1;
        }
        assert_eq!(b["last_offset"], next - 1);
        position += b["size"].as_i64().unwrap();
    }
    assert_eq!(next, n as i64);
}

fn json_file(args: &[&str]) -> Value {
    let r = fjord(args);
    assert!(r.ok, "fjord {args:?}: {}{}", r.stdout, r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

/// The same protocol commands against Apache Kafka 4.4 (skipped when its
/// jars are not installed), and dump-log on a segment Kafka wrote.
#[test]
fn commands_against_kafka() {
    let Some(kafka) = KafkaPeer::start(&[
        &format!("authorizer.class.name={STANDARD_AUTHORIZER}"),
        "super.users=User:ANONYMOUS",
    ]) else {
        return;
    };
    let addr = kafka.addr.clone();
    eventually("Kafka answering DescribeCluster", || {
        let r = fjord(&["cluster", "--bootstrap-server", &addr, "--json"]);
        r.ok.then_some(())
    });
    let c = cluster_shows(&addr, 1);
    assert_eq!(c["quorum"]["leader_id"], 1, "{c}");
    topic_lifecycle(&addr, 1);
    json(
        &addr,
        &[
            "users",
            "upsert",
            "carol",
            "--mechanism",
            "SCRAM-SHA-256",
            "--password",
            "pw",
        ],
    );
    let d = eventually("carol on Kafka", || {
        let mut all = vec!["users", "describe", "carol", "--json", "--bootstrap-server"];
        all.push(&addr);
        let r = fjord(&all);
        r.ok.then(|| serde_json::from_str::<Value>(&r.stdout).unwrap())
    });
    assert_eq!(
        d["users"][0]["credentials"][0]["mechanism"],
        "SCRAM-SHA-256"
    );

    // dump-log on the files Kafka wrote for a partition: every batch valid,
    // the index entries (up to the zeros of Kafka's preallocated index)
    // agree with the .log.
    json(
        &addr,
        &[
            "topics",
            "create",
            "cli-kdump",
            "--partitions",
            "1",
            "--config",
            "index.interval.bytes=1",
        ],
    );
    produce(&addr, "cli-kdump", 50);
    let dir = kafka.home().join("data").join("cli-kdump-0");
    let log = dir.join("00000000000000000000.log");
    let v = json_file(&[
        "dump-log",
        "--print-records",
        "--json",
        log.to_str().unwrap(),
    ]);
    check_produced(&v[0], 50, "none");
    for kind in ["index", "timeindex"] {
        let f = log.with_extension(kind);
        let v = json_file(&["dump-log", "--json", f.to_str().unwrap()]);
        let s = &v[0]["summary"];
        assert!(s["entries"].as_i64().unwrap() >= 1, "{v}");
        assert_eq!(s["log_checked"], true, "{v}");
        assert_eq!(s["mismatches"], 0, "{v}");
        assert_eq!(s["out_of_order"], 0, "{v}");
    }
}

/// `fjord groups describe` and `reset-offsets` on a group with a commit
/// (the group commands moved out of the binary's file run as before).
#[test]
fn groups_describe_and_reset() {
    use rdkafka::consumer::Consumer;
    let broker = Broker::start();
    let addr = broker.bootstrap();
    json(&addr, &["topics", "create", "cli-grp", "--partitions", "1"]);
    produce(&addr, "cli-grp", 10);
    let consumer = broker.consumer(&[("group.id", "cli-g")]);
    let mut tpl = rdkafka::TopicPartitionList::new();
    tpl.add_partition_offset("cli-grp", 0, rdkafka::Offset::Offset(4))
        .unwrap();
    consumer
        .commit(&tpl, rdkafka::consumer::CommitMode::Sync)
        .unwrap();
    drop(consumer);
    let r = fjord(&["groups", "describe", "cli-g", "--bootstrap-server", &addr]);
    assert!(r.ok, "{}{}", r.stdout, r.stderr);
    let row = r
        .stdout
        .lines()
        .find(|l| l.starts_with("cli-grp"))
        .unwrap_or_else(|| panic!("no row for cli-grp: {}", r.stdout));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[1..5], &["0", "4", "10", "6"], "{row}");
    let r = fjord(&[
        "groups",
        "reset-offsets",
        "cli-g",
        "--topic",
        "cli-grp",
        "--to-earliest",
        "--execute",
        "--bootstrap-server",
        &addr,
    ]);
    assert!(r.ok, "{}{}", r.stdout, r.stderr);
    let r = fjord(&["groups", "describe", "cli-g", "--bootstrap-server", &addr]);
    let row = r.stdout.lines().find(|l| l.starts_with("cli-grp")).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[1..5], &["0", "0", "10", "10"], "{row}");

    // The same with --json, for scripts.
    let v = json(&addr, &["groups", "describe", "cli-g"]);
    assert_eq!(v["group"], "cli-g", "{v}");
    assert_eq!(v["exists"], true, "{v}");
    assert_eq!(v["state"], "Empty", "{v}");
    let o = &v["offsets"][0];
    assert_eq!(o["topic"], "cli-grp", "{v}");
    assert_eq!(o["partition"], 0, "{v}");
    assert_eq!(o["current_offset"], 0, "{v}");
    assert_eq!(o["log_end_offset"], 10, "{v}");
    assert_eq!(o["lag"], 10, "{v}");
    let v = json(&addr, &["groups", "list"]);
    assert!(
        v["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["group"] == "cli-g" && g["state"] == "Empty"),
        "{v}"
    );
    let v = json(
        &addr,
        &[
            "groups",
            "reset-offsets",
            "cli-g",
            "--topic",
            "cli-grp",
            "--to-offset",
            "7",
        ],
    );
    assert_eq!(v["executed"], false, "{v}");
    assert_eq!(v["offsets"][0]["new_offset"], 7, "{v}");
    let v = json(&addr, &["groups", "describe", "no-such-group"]);
    assert_eq!(v["exists"], false, "{v}");
    let v = json(&addr, &["groups", "delete", "cli-g"]);
    assert_eq!(v["deleted"][0], "cli-g", "{v}");
}

/// A consumer group of the KIP-848 protocol (librdkafka with
/// `group.protocol=consumer`): `describe` shows its member and assignment
/// (from ConsumerGroupDescribe, as Kafka's tool asks), and `reset-offsets`
/// refuses while it has a member.
#[test]
fn groups_of_the_consumer_protocol() {
    use rdkafka::consumer::Consumer;
    let broker = Broker::start();
    let addr = broker.bootstrap();
    json(&addr, &["topics", "create", "cli-848", "--partitions", "2"]);
    produce(&addr, "cli-848", 10);
    let consumer = broker.consumer(&[
        ("group.id", "cli-g848"),
        ("group.protocol", "consumer"),
        ("auto.offset.reset", "earliest"),
    ]);
    consumer.subscribe(&["cli-848"]).unwrap();
    // Poll until the member holds both partitions.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let described = loop {
        let _ = consumer.poll(std::time::Duration::from_millis(200));
        let r = fjord(&[
            "groups",
            "describe",
            "cli-g848",
            "--bootstrap-server",
            &addr,
        ]);
        if r.ok && r.stdout.contains("assigned [cli-848:0,1]") {
            break r.stdout;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never described with its assignment: {}{}",
            r.stdout,
            r.stderr
        );
    };
    assert!(
        described.contains("protocol consumer, 1 member(s)"),
        "{described}"
    );
    let r = fjord(&[
        "groups",
        "reset-offsets",
        "cli-g848",
        "--topic",
        "cli-848",
        "--to-earliest",
        "--execute",
        "--bootstrap-server",
        &addr,
    ]);
    assert!(!r.ok, "{}", r.stdout);
    assert!(r.stderr.contains("no active members"), "{}", r.stderr);
    drop(consumer);
}

/// The commands against a locked-down broker with `--command-config`
/// (Kafka's client properties): SASL/PLAIN and SCRAM over SASL_PLAINTEXT,
/// SASL over TLS, TLS with a client certificate; a wrong password or a
/// missing key fails with a message naming the cause.
#[test]
fn commands_over_sasl_and_tls() {
    let dir = tempfile::tempdir().unwrap();
    let pki = common::certs::make(dir.path());
    let jaas = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";"#;
    let broker = Broker::start_with(&[
        "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "ssl.keystore.type=PEM",
        &format!("ssl.keystore.location={}", pki.broker_keystore.display()),
        "ssl.truststore.type=PEM",
        &format!("ssl.truststore.location={}", pki.ca.display()),
        "listener.name.ssl.ssl.client.auth=required",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
        &format!("listener.name.sasl_ssl.plain.sasl.jaas.config={jaas}"),
        &format!("listener.name.sasl_plaintext.plain.sasl.jaas.config={jaas}"),
    ]);
    let plain = broker.listener("PLAINTEXT");
    json(
        &plain,
        &["topics", "create", "cli-sec", "--partitions", "1"],
    );
    json(
        &plain,
        &[
            "users",
            "upsert",
            "carol",
            "--mechanism",
            "SCRAM-SHA-512",
            "--password",
            "carol-pw",
        ],
    );
    let write = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let scram_jaas = |user: &str, pw: &str| {
        format!(
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"{user}\" password=\"{pw}\";\n"
        )
    };
    let sasl_plain = write(
        "sasl-plain.properties",
        format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={}\n",
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";"#
        ),
    );
    let scram = write(
        "scram.properties",
        format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n{}",
            scram_jaas("carol", "carol-pw")
        ),
    );
    let scram_wrong = write(
        "scram-wrong.properties",
        format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n{}",
            scram_jaas("carol", "nope")
        ),
    );
    let sasl_ssl = write(
        "sasl-ssl.properties",
        format!(
            "security.protocol=SASL_SSL\nssl.truststore.type=PEM\nssl.truststore.location={}\nsasl.mechanism=SCRAM-SHA-512\n{}",
            pki.ca.display(),
            scram_jaas("carol", "carol-pw")
        ),
    );
    let mut keystore = std::fs::read_to_string(&pki.alice_cert).unwrap();
    keystore.push_str(&std::fs::read_to_string(&pki.alice_key).unwrap());
    let alice_keystore = write("alice.pem", keystore);
    let ssl = write(
        "ssl.properties",
        format!(
            "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={}\nssl.keystore.type=PEM\nssl.keystore.location={alice_keystore}\n",
            pki.ca.display()
        ),
    );
    let listed = |addr: &str, config: &str| {
        let v = json(addr, &["topics", "list", "--command-config", config]);
        names(&v)
    };
    let sasl_addr = broker.listener("SASL_PLAINTEXT");
    assert!(listed(&sasl_addr, &sasl_plain).contains(&"cli-sec".to_string()));
    assert!(listed(&sasl_addr, &scram).contains(&"cli-sec".to_string()));
    let ssl_addr = broker.listener("SASL_SSL");
    assert!(listed(&ssl_addr, &sasl_ssl).contains(&"cli-sec".to_string()));
    assert!(listed(&broker.listener("SSL"), &ssl).contains(&"cli-sec".to_string()));
    // The broker's security keys are described as given (a secret without
    // its value), STATIC_BROKER_CONFIG, as Kafka describes them.
    let v = json(
        &plain,
        &[
            "configs",
            "describe",
            "--entity-type",
            "brokers",
            "--entity-name",
            "1",
            "--all",
        ],
    );
    let c = &v["configs"];
    assert_eq!(c["ssl.keystore.type"]["value"], "PEM", "{v}");
    assert_eq!(
        c["ssl.keystore.type"]["source"], "STATIC_BROKER_CONFIG",
        "{v}"
    );
    let jaas = &c["listener.name.sasl_ssl.plain.sasl.jaas.config"];
    assert_eq!(jaas["sensitive"], true, "{v}");
    assert_eq!(jaas["value"], Value::Null, "{v}");
    assert_eq!(
        c["sasl.enabled.mechanisms"]["value"], "PLAIN,SCRAM-SHA-512",
        "{v}"
    );

    // Group commands connect to coordinators with the same settings.
    let v = json(
        &ssl_addr,
        &["groups", "list", "--command-config", &sasl_ssl],
    );
    assert!(v["groups"].is_array(), "{v}");

    // Without the settings, or with a wrong password: a clear failure.
    let err = fails(
        &sasl_addr,
        &["topics", "list", "--command-config", &scram_wrong],
    );
    assert!(err.contains("SASL_AUTHENTICATION_FAILED"), "{err}");
    let no_mech = write(
        "no-mech.properties",
        "security.protocol=SASL_PLAINTEXT\n".to_string(),
    );
    let err = fails(
        &sasl_addr,
        &["topics", "list", "--command-config", &no_mech],
    );
    assert!(err.contains("sasl.mechanism"), "{err}");
    let no_trust = write("no-trust.properties", "security.protocol=SSL\n".to_string());
    let err = fails(
        &ssl_addr,
        &["topics", "list", "--command-config", &no_trust],
    );
    assert!(err.contains("ssl.truststore.location"), "{err}");
}
