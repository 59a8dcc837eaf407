//! The share coordinator (KIP-932) over raw frames: FindCoordinator key
//! type 2, InitializeShareGroupState, ReadShareGroupState,
//! WriteShareGroupState, ReadShareGroupStateSummary and
//! DeleteShareGroupState v0, the same requests on Fjord and on Apache Kafka
//! 4.4 (when installed; `FJORD_REQUIRE_KAFKA_PEER=1` makes its absence a
//! failure), with the answers Kafka 4.4 gives: merged state, fencing by
//! state and leader epochs, reads of uninitialized share-partitions; and
//! the same `__share_group_state` records as Kafka writes, read from both
//! logs with Kafka's `kafka-dump-log --share-group-state-decoder`, a
//! ShareSnapshot every
//! `share.coordinator.snapshot.update.records.per.snapshot` updates
//! included. On Fjord only: the state survives a restart
//! (COORDINATOR_LOAD_IN_PROGRESS while the load is held with the test-only
//! hook `FJORD_FAULT_LOAD_HOLD`), and in a 3-node cluster the SIGKILL of
//! the broker leading the state partition.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::cluster::{try_kp_call, Cluster};
use common::kafka_peer::KafkaPeer;
use common::layout::wait_topic;
use common::raw::RawConn as Conn;
use common::{poll_until, wait_for, Broker};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

const INVALID_REQUEST: i16 = 42;
const FENCED_LEADER_EPOCH: i16 = 74;
const FENCED_STATE_EPOCH: i16 = 124;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const LOAD_IN_PROGRESS: i16 = 14;

/// A state batch: (first offset, last offset, delivery state, count).
type Batch = (i64, i64, i8, i16);

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// Creates `name` (2 partitions) and gives its topic id.
fn create_topic(c: &mut Conn, name: &str) -> Uuid {
    let mut t = create_topics_request::CreatableTopic::default();
    t.name = TopicName(s(name));
    t.num_partitions = 2;
    t.replication_factor = 1;
    let mut req = CreateTopicsRequest::default();
    req.topics.push(t);
    req.timeout_ms = 30_000;
    let r = c.call(7, &req);
    assert_eq!(r.topics[0].error_code, 0, "create {name}");
    assert!(!r.topics[0].topic_id.is_nil());
    r.topics[0].topic_id
}

/// FindCoordinator v6 key type 2: (code, node id) of one key.
fn find(c: &mut Conn, key: &str) -> (i16, i32) {
    found(&c.call(6, &find_req(key)))
}

fn find_req(key: &str) -> FindCoordinatorRequest {
    let mut req = FindCoordinatorRequest::default();
    req.key_type = 2;
    req.coordinator_keys = vec![s(key)];
    req
}

fn found(r: &FindCoordinatorResponse) -> (i16, i32) {
    assert_eq!(r.coordinators.len(), 1);
    (r.coordinators[0].error_code, r.coordinators[0].node_id.0)
}

fn coordinator_key(group: &str, topic: Uuid, partition: i32) -> String {
    use base64::Engine;
    let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(topic.as_bytes());
    format!("{group}:{id}:{partition}")
}

fn init(c: &mut Conn, g: &str, t: Uuid, p: i32, state_epoch: i32, start: i64) -> i16 {
    let r = c.call(0, &init_req(g, t, p, state_epoch, start));
    assert_eq!(r.results[0].topic_id, t);
    assert_eq!(r.results[0].partitions[0].partition, p);
    r.results[0].partitions[0].error_code
}

fn init_req(
    g: &str,
    t: Uuid,
    p: i32,
    state_epoch: i32,
    start: i64,
) -> InitializeShareGroupStateRequest {
    let mut pd = initialize_share_group_state_request::PartitionData::default();
    pd.partition = p;
    pd.state_epoch = state_epoch;
    pd.start_offset = start;
    let mut td = initialize_share_group_state_request::InitializeStateData::default();
    td.topic_id = t;
    td.partitions = vec![pd];
    let mut req = InitializeShareGroupStateRequest::default();
    req.group_id = s(g);
    req.topics = vec![td];
    req
}

/// ReadShareGroupState: (code, state epoch, start offset, batches).
fn read(c: &mut Conn, g: &str, t: Uuid, p: i32, leader_epoch: i32) -> (i16, i32, i64, Vec<Batch>) {
    let r = c.call(0, &read_req(g, t, p, leader_epoch));
    assert_eq!(r.results[0].partitions[0].partition, p);
    read_answer(&r)
}

fn read_req(g: &str, t: Uuid, p: i32, leader_epoch: i32) -> ReadShareGroupStateRequest {
    let mut pd = read_share_group_state_request::PartitionData::default();
    pd.partition = p;
    pd.leader_epoch = leader_epoch;
    let mut td = read_share_group_state_request::ReadStateData::default();
    td.topic_id = t;
    td.partitions = vec![pd];
    let mut req = ReadShareGroupStateRequest::default();
    req.group_id = s(g);
    req.topics = vec![td];
    req
}

fn read_answer(r: &ReadShareGroupStateResponse) -> (i16, i32, i64, Vec<Batch>) {
    let pr = &r.results[0].partitions[0];
    let batches = pr
        .state_batches
        .iter()
        .map(|b| {
            (
                b.first_offset,
                b.last_offset,
                b.delivery_state,
                b.delivery_count,
            )
        })
        .collect();
    (pr.error_code, pr.state_epoch, pr.start_offset, batches)
}

/// ReadShareGroupStateSummary: (code, state epoch, leader epoch, start).
fn summary(c: &mut Conn, g: &str, t: Uuid, p: i32, leader_epoch: i32) -> (i16, i32, i32, i64) {
    let mut pd = read_share_group_state_summary_request::PartitionData::default();
    pd.partition = p;
    pd.leader_epoch = leader_epoch;
    let mut td = read_share_group_state_summary_request::ReadStateSummaryData::default();
    td.topic_id = t;
    td.partitions = vec![pd];
    let mut req = ReadShareGroupStateSummaryRequest::default();
    req.group_id = s(g);
    req.topics = vec![td];
    let r = c.call(0, &req);
    let pr = &r.results[0].partitions[0];
    (
        pr.error_code,
        pr.state_epoch,
        pr.leader_epoch,
        pr.start_offset,
    )
}

#[allow(clippy::too_many_arguments)]
fn write(
    c: &mut Conn,
    g: &str,
    t: Uuid,
    p: i32,
    state_epoch: i32,
    leader_epoch: i32,
    start: i64,
    batches: &[Batch],
) -> i16 {
    let req = write_req(g, t, p, (state_epoch, leader_epoch), start, batches);
    c.call(0, &req).results[0].partitions[0].error_code
}

fn write_req(
    g: &str,
    t: Uuid,
    p: i32,
    (state_epoch, leader_epoch): (i32, i32),
    start: i64,
    batches: &[Batch],
) -> WriteShareGroupStateRequest {
    let mut pd = write_share_group_state_request::PartitionData::default();
    pd.partition = p;
    pd.state_epoch = state_epoch;
    pd.leader_epoch = leader_epoch;
    pd.start_offset = start;
    pd.state_batches = batches
        .iter()
        .map(|&(f, l, st, dc)| {
            let mut x = write_share_group_state_request::StateBatch::default();
            x.first_offset = f;
            x.last_offset = l;
            x.delivery_state = st;
            x.delivery_count = dc;
            x
        })
        .collect();
    let mut td = write_share_group_state_request::WriteStateData::default();
    td.topic_id = t;
    td.partitions = vec![pd];
    let mut req = WriteShareGroupStateRequest::default();
    req.group_id = s(g);
    req.topics = vec![td];
    req
}

fn delete(c: &mut Conn, g: &str, t: Uuid, p: i32) -> i16 {
    let mut pd = delete_share_group_state_request::PartitionData::default();
    pd.partition = p;
    let mut td = delete_share_group_state_request::DeleteStateData::default();
    td.topic_id = t;
    td.partitions = vec![pd];
    let mut req = DeleteShareGroupStateRequest::default();
    req.group_id = s(g);
    req.topics = vec![td];
    let r = c.call(0, &req);
    r.results[0].partitions[0].error_code
}

/// Polls `call` until its code is not a coordinator's transient one
/// (COORDINATOR_LOAD_IN_PROGRESS 14, COORDINATOR_NOT_AVAILABLE 15,
/// NOT_COORDINATOR 16), with a deadline; gives the last answer.
fn settled<T>(what: &str, mut call: impl FnMut() -> (i16, T)) -> (i16, T) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, v) = call();
        if !matches!(code, 14..=16) || Instant::now() > deadline {
            assert!(!matches!(code, 14..=16), "{what}: still {code} after 30 s");
            return (code, v);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Polls `call` until it gives `want` (the partition may not be led yet
/// right after a start), failing after a deadline.
fn settled_on(want: i16, what: &str, mut call: impl FnMut() -> i16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let code = call();
        if code == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: {code}, not {want}, after 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The coordinator of `key` once `__share_group_state` exists.
fn coordinator_of(c: &mut Conn, key: &str) -> i32 {
    settled("FindCoordinator", || find(c, key)).1
}

/// The settings of `__share_group_state` Kafka 4.4 sets on it, as
/// DescribeConfigs gives them.
fn state_topic_configs(c: &mut Conn) -> Vec<(String, String)> {
    let keys = [
        "cleanup.policy",
        "compression.type",
        "min.insync.replicas",
        "retention.ms",
        "segment.bytes",
    ];
    let mut res = describe_configs_request::DescribeConfigsResource::default();
    res.resource_type = 2;
    res.resource_name = s("__share_group_state");
    res.configuration_keys = Some(keys.iter().map(|k| s(k)).collect());
    let mut req = DescribeConfigsRequest::default();
    req.resources = vec![res];
    let r = c.call(4, &req);
    assert_eq!(r.results[0].error_code, 0);
    let mut got: Vec<(String, String)> = r.results[0]
        .configs
        .iter()
        .map(|e| {
            let v = e.value.as_ref().map(|v| v.to_string()).unwrap_or_default();
            (e.name.to_string(), v)
        })
        .collect();
    got.sort();
    got
}

/// The same scenario on either broker: FindCoordinator key type 2 (and its
/// malformed keys), then the state APIs with Kafka 4.4's answers.
fn scenario(addr: &str, topic: &str) -> (String, Uuid) {
    let mut c = Conn::new(addr);
    // Listed in ApiVersions from v0 (Kafka 4.4 has v1 of Write and
    // ReadSummary too).
    let versions = c.call(0, &ApiVersionsRequest::default());
    for key in 83..=87 {
        let k = versions.api_keys.iter().find(|k| k.api_key == key);
        assert_eq!(k.map(|k| k.min_version), Some(0), "api key {key} at {addr}");
    }
    let t = create_topic(&mut c, topic);
    let g = format!("{topic}-group");
    let key = coordinator_key(&g, t, 0);
    assert!(coordinator_of(&mut c, &key) >= 0);
    assert_eq!(
        state_topic_configs(&mut c),
        [
            ("cleanup.policy", "delete"),
            ("compression.type", "producer"),
            ("min.insync.replicas", "1"),
            ("retention.ms", "-1"),
            ("segment.bytes", "104857600"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
    );
    // A negative partition and a group id with ':' are accepted.
    assert_eq!(find(&mut c, &coordinator_key(&g, t, -1)).0, 0);
    assert_eq!(find(&mut c, &format!("a:{key}")).0, 0);
    let id = key.split(':').nth(1).unwrap().to_string();
    for bad in [
        g.clone(),
        format!("{g}:abc:0"),
        format!("{g}:{id}:x"),
        format!("{g}:{id}"),
        format!(":{id}:0"),
    ] {
        assert_eq!(find(&mut c, &bad), (INVALID_REQUEST, -1), "{bad}");
    }

    // Before initialization.
    let r = settled("read", || {
        let r = read(&mut c, &g, t, 0, 0);
        (r.0, r)
    });
    assert_eq!(r.1, (INVALID_REQUEST, 0, 0, vec![]));
    assert_eq!(summary(&mut c, &g, t, 0, 0), (0, 0, 0, -1));
    assert_eq!(write(&mut c, &g, t, 0, 0, 0, 0, &[]), INVALID_REQUEST);
    let unknown = Uuid::new_v4();
    assert_eq!(
        init(&mut c, &g, unknown, 0, 0, 0),
        UNKNOWN_TOPIC_OR_PARTITION
    );
    assert_eq!(init(&mut c, &g, t, -1, 0, 0), INVALID_REQUEST);

    // Initialize; again with the same state epoch; an older one is fenced.
    assert_eq!(init(&mut c, &g, t, 0, 1, 5), 0);
    assert_eq!(init(&mut c, &g, t, 0, 1, 7), 0);
    assert_eq!(init(&mut c, &g, t, 0, 0, 9), FENCED_STATE_EPOCH);
    assert_eq!(read(&mut c, &g, t, 0, 3), (0, 1, 7, vec![]));
    assert_eq!(read(&mut c, &g, t, 0, 2).0, FENCED_LEADER_EPOCH);
    assert_eq!(read(&mut c, &g, t, 0, -1).0, INVALID_REQUEST);

    // Writes: fencing, then acknowledged ranges merged.
    assert_eq!(write(&mut c, &g, t, 0, 0, 3, 7, &[]), FENCED_STATE_EPOCH);
    assert_eq!(write(&mut c, &g, t, 0, 1, 2, 7, &[]), FENCED_LEADER_EPOCH);
    assert_eq!(write(&mut c, &g, t, 0, 1, -1, 7, &[]), INVALID_REQUEST);
    let first = [(7, 11, 0, 1), (12, 14, 2, 1)];
    assert_eq!(write(&mut c, &g, t, 0, 1, 3, 7, &first), 0);
    assert_eq!(write(&mut c, &g, t, 0, 1, 3, -1, &[(9, 10, 4, 2)]), 0);
    assert_eq!(
        read(&mut c, &g, t, 0, 3),
        (
            0,
            1,
            7,
            vec![(7, 8, 0, 1), (9, 10, 4, 2), (11, 11, 0, 1), (12, 14, 2, 1)]
        )
    );
    // A new start offset drops what is below it; later runs of one request
    // win; equal neighbours join.
    let second = [(13, 13, 0, 2), (15, 16, 2, 1), (16, 18, 0, 3)];
    assert_eq!(write(&mut c, &g, t, 0, 1, 4, 10, &second), 0);
    let merged = vec![
        (10, 10, 4, 2),
        (11, 11, 0, 1),
        (12, 12, 2, 1),
        (13, 13, 0, 2),
        (14, 15, 2, 1),
        (16, 18, 0, 3),
    ];
    assert_eq!(read(&mut c, &g, t, 0, 4), (0, 1, 10, merged));
    assert_eq!(summary(&mut c, &g, t, 0, 0), (0, 1, 4, 10));
    assert_eq!(write(&mut c, &g, t, 0, 1, 3, -1, &[]), FENCED_LEADER_EPOCH);

    // Delete: the state is gone; deleting again, or what never was, succeeds.
    assert_eq!(delete(&mut c, &g, t, 0), 0);
    assert_eq!(read(&mut c, &g, t, 0, 4).0, INVALID_REQUEST);
    assert_eq!(summary(&mut c, &g, t, 0, 4), (0, 0, 0, -1));
    assert_eq!(write(&mut c, &g, t, 0, 1, 4, 10, &[]), INVALID_REQUEST);
    assert_eq!(delete(&mut c, &g, t, 0), 0);
    assert_eq!(delete(&mut c, &format!("{g}-never"), t, 1), 0);
    // Initialized again from nothing: epochs start over.
    assert_eq!(init(&mut c, &g, t, 0, 0, 0), 0);
    assert_eq!(read(&mut c, &g, t, 0, 0), (0, 0, 0, vec![]));
    (g, t)
}

/// Java's `String.hashCode`, made non-negative as Kafka's `Utils.abs`.
fn java_abs_hash(s: &str) -> i32 {
    let h = s
        .encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)));
    if h == i32::MIN {
        0
    } else {
        h.abs()
    }
}

/// The records of share-partition (`g`, `t`, `partition`) in `__share_group_state`
/// (50 partitions) under `log_dir`, as Kafka 4.4's `kafka-dump-log
/// --share-group-state-decoder` reads them: the record type, then the
/// value without its timestamps (or `<DELETE>`).
fn state_log(log_dir: &std::path::Path, g: &str, t: Uuid, partition: i32) -> Vec<String> {
    let p = java_abs_hash(&coordinator_key(g, t, partition)) % 50;
    let file = log_dir
        .join(format!("__share_group_state-{p}"))
        .join("00000000000000000000.log");
    let out =
        std::process::Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/peers/kafka"))
            .args([
                "tool",
                "kafka-dump-log",
                "--share-group-state-decoder",
                "--files",
            ])
            .arg(&file)
            .output()
            .expect("run kafka-dump-log");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut records = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("| offset")) {
        let key = line
            .split(" key: ")
            .nth(1)
            .and_then(|k| k.split(" payload: ").next());
        let payload = line.split(" payload: ").nth(1);
        let (Some(key), Some(payload)) = (key, payload) else {
            panic!("{line}");
        };
        let key: serde_json::Value = serde_json::from_str(key).expect(line);
        if key["data"]["groupId"] != g {
            continue;
        }
        let value = match serde_json::from_str::<serde_json::Value>(payload) {
            Ok(mut v) => {
                if let Some(d) = v["data"].as_object_mut() {
                    d.remove("createTimestamp");
                    d.remove("writeTimestamp");
                }
                v.to_string()
            }
            Err(_) => payload.to_string(),
        };
        records.push(format!("{} {value}", key["type"]));
    }
    records
}

#[test]
fn share_state_apis_answer_as_kafka() {
    let fjord = Broker::start();
    let (g, t) = scenario(&fjord.bootstrap(), "share-state");
    if let Some(kafka) = KafkaPeer::start(&[]) {
        // The same requests leave the same records (Kafka's own decoder
        // reads Fjord's log).
        let fjord_log = state_log(&fjord.data_dir(), &g, t, 0);
        assert!(fjord_log.len() > 5, "{fjord_log:#?}");
        let (g, t) = scenario(&kafka.addr, "share-state");
        let kafka_log = state_log(&kafka.home().join("data"), &g, t, 0);
        assert_eq!(fjord_log, kafka_log);
    }
}

/// Initialize, 8 writes and a read of share-partition 1 of a new topic:
/// (group, topic id, what the read gives).
fn snapshot_sequence(addr: &str) -> (String, Uuid, (i16, i32, i64, Vec<Batch>)) {
    let mut c = Conn::new(addr);
    let t = create_topic(&mut c, "share-restart");
    let g = "restart-group";
    coordinator_of(&mut c, &coordinator_key(g, t, 1));
    assert_eq!(settled("init", || (init(&mut c, g, t, 1, 2, 0), ())).0, 0);
    for i in 0..7 {
        let first = i * 3;
        let runs = [(first, first + 1, 2, 1), (first + 2, first + 2, 4, 3)];
        assert_eq!(write(&mut c, g, t, 1, 2, 1, -1, &runs), 0, "write {i}");
    }
    assert_eq!(write(&mut c, g, t, 1, 2, 1, 3, &[]), 0);
    let before = read(&mut c, g, t, 1, 1);
    assert_eq!(before.0, 0);
    assert_eq!(before.2, 3);
    assert_eq!(before.3.len(), 12, "{:?}", before.3);
    (g.to_string(), t, before)
}

/// The state of a share-partition after a restart is what it was, with
/// ShareSnapshot records between ShareUpdates (every 2 updates here, the
/// same records as Kafka 4.4 writes with that setting).
#[test]
fn share_state_survives_a_restart() {
    let every_2 = "share.coordinator.snapshot.update.records.per.snapshot=2";
    let mut fjord = Broker::start_with(&[every_2]);
    let (g, t, before) = snapshot_sequence(&fjord.bootstrap());
    if let Some(kafka) = KafkaPeer::start(&[every_2]) {
        let fjord_log = state_log(&fjord.data_dir(), &g, t, 1);
        let snapshots = fjord_log.iter().filter(|r| r.starts_with("\"0\"")).count();
        assert!(snapshots >= 3, "{fjord_log:#?}");
        let (kafka_group, kafka_topic, kafka_read) = snapshot_sequence(&kafka.addr);
        assert_eq!(kafka_read, before);
        let kafka_log = state_log(&kafka.home().join("data"), &kafka_group, kafka_topic, 1);
        assert_eq!(fjord_log, kafka_log);
    }
    let g = g.as_str();
    // Restarted with the load of __share_group_state held (the test-only
    // fault hook): every API answers COORDINATOR_LOAD_IN_PROGRESS.
    let hold = fjord.data_dir().with_file_name("hold-share-loads");
    std::fs::write(&hold, b"held").unwrap();
    fjord.stop();
    fjord.set_env(&[("FJORD_FAULT_LOAD_HOLD", hold.to_str().unwrap())]);
    fjord.restart();
    wait_for(Duration::from_secs(30), "the share state load held", || {
        fjord
            .stderr_text()
            .contains("fault injection: load of __share_group_state-")
    });
    let mut c = Conn::new(&fjord.bootstrap());
    settled_on(LOAD_IN_PROGRESS, "the held load", || {
        read(&mut c, g, t, 1, 1).0
    });
    assert_eq!(summary(&mut c, g, t, 1, 1).0, LOAD_IN_PROGRESS);
    assert_eq!(write(&mut c, g, t, 1, 2, 1, -1, &[]), LOAD_IN_PROGRESS);
    assert_eq!(init(&mut c, g, t, 1, 2, 0), LOAD_IN_PROGRESS);
    assert_eq!(delete(&mut c, g, t, 1), LOAD_IN_PROGRESS);
    std::fs::remove_file(&hold).unwrap();
    let after = settled("read after restart", || {
        let r = read(&mut c, g, t, 1, 1);
        (r.0, r)
    });
    assert_eq!(after.1, before);
    // The leader epoch the records carry still fences after the restart.
    assert_eq!(read(&mut c, g, t, 1, 0).0, FENCED_LEADER_EPOCH);
    assert_eq!(write(&mut c, g, t, 1, 1, 1, -1, &[]), FENCED_STATE_EPOCH);
}

/// One request to node `id` of `c` on a fresh connection, errors given back
/// (the node may be down or not know the new leaders yet).
fn ask<R: kafka_protocol::protocol::Request>(
    c: &Cluster,
    id: i32,
    version: i16,
    req: &R,
) -> Result<R::Response, String> {
    let mut s =
        std::net::TcpStream::connect(c.bootstrap(id)).map_err(|e| format!("node {id}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    try_kp_call(&mut s, version, 1, req).map_err(|e| format!("node {id}: {e}"))
}

/// The share coordinator of `key` as node `asked` names it, when it is
/// not `not`.
fn coordinator_on(c: &Cluster, asked: i32, key: &str, not: Option<i32>) -> Result<i32, String> {
    let (code, node) = found(&ask(c, asked, 6, &find_req(key))?);
    match (code, node) {
        (0, n) if Some(n) != not => Ok(n),
        other => Err(format!("FindCoordinator: {other:?}")),
    }
}

/// A 3-node cluster: the state written through the coordinator of a
/// share-partition is read back from the broker that takes its state
/// partition over when the coordinator is killed with SIGKILL, and writes
/// go on there.
#[test]
fn share_state_survives_its_coordinator_killed() {
    const DEADLINE: Duration = Duration::from_secs(90);
    let mut c = Cluster::start(3, &["share.coordinator.state.topic.num.partitions=4"]);
    let topic = "share-failover";
    let t = poll_until(DEADLINE, "CreateTopics", || {
        let mut ct = create_topics_request::CreatableTopic::default();
        ct.name = TopicName(s(topic));
        ct.num_partitions = 2;
        ct.replication_factor = 3;
        let mut req = CreateTopicsRequest::default();
        req.topics.push(ct);
        req.timeout_ms = 15_000;
        let r = ask(&c, 1, 7, &req)?;
        match r.topics[0].error_code {
            0 => Ok(r.topics[0].topic_id),
            code => Err(format!("CreateTopics: {code}")),
        }
    });
    wait_topic(&c, &c.ids(), topic, 2);
    let g = "failover-group";
    let key = coordinator_key(g, t, 0);
    let leader = poll_until(DEADLINE, "the share coordinator", || {
        coordinator_on(&c, 1, &key, None)
    });
    wait_topic(&c, &c.ids(), "__share_group_state", 4);
    poll_until(DEADLINE, "initialize", || {
        match ask(&c, leader, 0, &init_req(g, t, 0, 0, 0))?.results[0].partitions[0].error_code {
            0 => Ok(()),
            code => Err(format!("initialize: {code}")),
        }
    });
    for (i, runs) in [[(0, 4, 2, 1)], [(5, 9, 4, 3)], [(10, 12, 0, 2)]]
        .iter()
        .enumerate()
    {
        let req = write_req(g, t, 0, (0, 1), -1, runs);
        let code = ask(&c, leader, 0, &req).unwrap().results[0].partitions[0].error_code;
        assert_eq!(code, 0, "write {i}");
    }
    let want = (0, 0, 0, vec![(0, 4, 2, 1), (5, 9, 4, 3), (10, 12, 0, 2)]);
    assert_eq!(
        read_answer(&ask(&c, leader, 0, &read_req(g, t, 0, 1)).unwrap()),
        want
    );

    c.kill9(leader);
    let survivors: Vec<i32> = c.ids().into_iter().filter(|&i| i != leader).collect();
    let moved = poll_until(DEADLINE, "a new share coordinator", || {
        coordinator_on(&c, survivors[0], &key, Some(leader))
    });
    let got = poll_until(DEADLINE, "the state on the new coordinator", || {
        let r = read_answer(&ask(&c, moved, 0, &read_req(g, t, 0, 2))?);
        if r.0 == 0 {
            Ok(r)
        } else {
            Err(format!("read: {}", r.0))
        }
    });
    assert_eq!(got, want, "the state as node {moved} loaded it");
    let req = write_req(g, t, 0, (0, 2), 5, &[(13, 13, 2, 1)]);
    let code = ask(&c, moved, 0, &req).unwrap().results[0].partitions[0].error_code;
    assert_eq!(code, 0, "a write on node {moved}");
    let r = read_answer(&ask(&c, moved, 0, &read_req(g, t, 0, 2)).unwrap());
    assert_eq!(
        r,
        (0, 0, 5, vec![(5, 9, 4, 3), (10, 12, 0, 2), (13, 13, 2, 1)])
    );
}
