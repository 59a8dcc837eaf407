//! The operator commands of the `fjord` binary (topics, configs, acls,
//! users, cluster, groups) run as a process against a running Fjord
//! broker, their `--json` output parsed and checked; the protocol commands
//! also against Apache Kafka 4.4 when its jars are installed. dump-log:
//! `tests/cli_dump_log.rs`; over TLS and SASL: `tests/cli_security.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::cli::*;
use common::kafka_peer::KafkaPeer;
use common::*;
use serde_json::Value;

const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

fn topic_doc(addr: &str, topic: &str) -> Value {
    let d = json(addr, &["topics", "describe", topic]);
    let ts = d["topics"].as_array().unwrap();
    assert_eq!(ts.len(), 1, "{d}");
    ts[0].clone()
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
