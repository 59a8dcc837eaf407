//! The share group dead-letter queue (KIP-1191) with raw frames, the same
//! cases on Fjord and on Apache Kafka 4.4 (both finalize `share.version`
//! 2 on a new cluster): a group with `errors.deadletterqueue.topic.name`
//! set to `dlq.<case>` (2 partitions, `errors.deadletterqueue.group.enable`
//! true) reads partition 1 of its topic; (1) REJECTed records give one
//! dead-letter record per offset on DLQ partition 1 with the six
//! `__dlq.errors.*` headers and a null key and value; (2) with
//! `errors.deadletterqueue.copy.record.enable` the source key and value are
//! copied; (3) records given up at `share.delivery.count.limit` by RELEASE
//! carry the delivery count and the other message; (4) a DLQ topic without
//! `errors.deadletterqueue.group.enable` gets nothing and the records are
//! archived anyway (the share start offset moves past them); (5) so does a
//! topic without the broker's `dlq.` prefix; (6) a missing DLQ topic is
//! created with `errors.deadletterqueue.auto.create.topics.enable`; the DLQ
//! group configs are refused and described as Kafka does. The DLQ topic
//! is read with a plain Fetch; every wait has a deadline. On Fjord, records
//! rejected right before a SIGKILL are dead-lettered after the restart; on
//! a 3-node cluster a DLQ partition led by another broker gets them through
//! a Produce to that broker, and a write that could not happen before the
//! source leader was killed is resumed by the new leader from the persisted
//! ARCHIVING state.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "share_fetch/cluster.rs"]
mod cluster;
mod common;
#[allow(dead_code)]
#[path = "share_fetch/wire.rs"]
mod wire;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::raw::RawConn as Conn;
use common::*;
use kafka_protocol::messages::*;
use kafka_protocol::records::RecordBatchDecoder;
use uuid::Uuid;
use wire::*;

const ACCEPT: i8 = 1;
const RELEASE: i8 = 2;
const REJECT: i8 = 3;

/// How long a dead-letter record may take to appear.
const DLQ_WAIT: Duration = Duration::from_secs(60);

/// One record as read back: key, value, headers (name, UTF-8 value).
type Read = (Option<Bytes>, Option<Bytes>, Vec<(String, String)>);

/// Creates `topic` with `partitions` and, when given,
/// `errors.deadletterqueue.group.enable`; waits until every partition has
/// a leader. Gives its id.
fn create_topic_with(addr: &str, topic: &str, partitions: i32, group_enable: Option<bool>) -> Uuid {
    match group_enable {
        Some(e) => create_topic_with_configs(
            addr,
            topic,
            partitions,
            &[(
                "errors.deadletterqueue.group.enable",
                if e { "true" } else { "false" },
            )],
        ),
        None => create_topic(addr, topic, partitions),
    }
}

/// Produces (key, value) records as one uncompressed batch to
/// `topic`-`partition`.
fn produce_keyed(addr: &str, topic: &str, partition: i32, records: &[(&str, &str)]) {
    let keyed: Vec<(Option<&str>, &str)> = records.iter().map(|(k, v)| (Some(*k), *v)).collect();
    produce_batch(addr, topic, partition, keyed_batch(&keyed));
}

/// Every record of `topic`-`partition` from offset 0, read with Fetch v12.
fn read_all(addr: &str, topic: &str, partition: i32) -> Vec<Read> {
    let req = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(100)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_isolation_level(0)
        .with_topics(vec![fetch_request::FetchTopic::default()
            .with_topic(s(topic).into())
            .with_partitions(vec![fetch_request::FetchPartition::default()
                .with_partition(partition)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])]);
    let r = Conn::new(addr).call(12, &req);
    let p = &r.responses[0].partitions[0];
    if p.error_code != 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut buf = p.records.clone().unwrap_or_default();
    while !buf.is_empty() {
        let set = RecordBatchDecoder::decode(&mut buf).unwrap();
        for r in set.records {
            let headers = r
                .headers
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        String::from_utf8(v.clone().unwrap_or_default().to_vec()).unwrap(),
                    )
                })
                .collect();
            out.push((r.key, r.value, headers));
        }
    }
    out
}

/// Reads `topic`-`partition` until it holds at least `n` records.
fn wait_records(addr: &str, topic: &str, partition: i32, n: usize) -> Vec<Read> {
    let deadline = Instant::now() + DLQ_WAIT;
    loop {
        let got = read_all(addr, topic, partition);
        if got.len() >= n {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "{topic}-{partition}: {} of {n} dead-letter records",
            got.len()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The share start offset of `group` on `topic`-`partition`
/// (DescribeShareGroupOffsets v0; -1 when not known).
fn start_offset(addr: &str, group: &str, topic: &str, partition: i32) -> i64 {
    let mut t =
        describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestTopic::default();
    t.topic_name = s(topic).into();
    t.partitions = vec![partition];
    let mut g =
        describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup::default();
    g.group_id = s(group).into();
    g.topics = Some(vec![t]);
    let mut req = DescribeShareGroupOffsetsRequest::default();
    req.groups = vec![g];
    let r = Conn::new(addr).call(0, &req);
    r.groups[0]
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter())
        .find(|p| p.partition_index == partition)
        .map_or(-1, |p| p.start_offset)
}

/// The expected headers of a dead-letter record.
fn headers(
    topic: &str,
    offset: i64,
    group: &str,
    count: i16,
    message: &str,
) -> Vec<(String, String)> {
    [
        ("__dlq.errors.topic", topic.to_string()),
        ("__dlq.errors.partition", "1".to_string()),
        ("__dlq.errors.offset", offset.to_string()),
        ("__dlq.errors.group", group.to_string()),
        ("__dlq.errors.delivery.count", count.to_string()),
        ("__dlq.errors.message", message.to_string()),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.clone()))
    .collect()
}

const REJECTED: &str = "Offset rejected by client.";
const EXCEEDED: &str = "Offset delivery count exceeded the threshold.";

/// A source topic of 2 partitions with two keyed records on partition 1,
/// a DLQ topic of 2 partitions (`group_enable` as given), the group's
/// configs `extra` with the DLQ topic, and a member with its session;
/// gives (topic, topic id, DLQ topic, group, session).
fn setup(
    t: &Target,
    name: &str,
    group_enable: Option<bool>,
    extra: &[(&str, &str)],
) -> (String, Uuid, String, String, Session) {
    let topic = format!("{name}-t");
    let dlq = format!("dlq.{name}");
    let group = format!("{name}-g");
    let tid = create_topic_with(&t.addr, &topic, 2, None);
    create_topic_with(&t.addr, &dlq, 2, group_enable);
    let mut configs = vec![
        ("errors.deadletterqueue.topic.name", dlq.as_str()),
        ("share.auto.offset.reset", "earliest"),
    ];
    configs.extend_from_slice(extra);
    set_group_configs(&t.addr, &group, &configs);
    produce_keyed(&t.addr, &topic, 1, &[("k0", "v0"), ("k1", "v1")]);
    let member = join(t, &group, &[&topic]);
    let s = Session::new(t, &group, &member);
    (topic, tid, dlq, group, s)
}

/// (1) REJECT: one record per offset on DLQ partition 1, six headers,
/// null key and value; the share start offset moves past them.
fn case_reject(t: &Target, name: &str) {
    let (topic, tid, dlq, group, mut s) = setup(t, name, Some(true), &[]);
    assert_eq!(
        s.fetch_some(tid, 1, 100, Duration::from_secs(20)),
        vec![(0, 1, 1)]
    );
    assert_eq!(s.ack(tid, 1, &vec![(0, 1, REJECT)]), 0, "{name}");
    let got = wait_records(&t.addr, &dlq, 1, 2);
    assert_eq!(got.len(), 2, "{name}: {got:?}");
    for (i, (k, v, h)) in got.iter().enumerate() {
        assert_eq!((k, v), (&None, &None), "{name}");
        assert_eq!(h, &headers(&topic, i as i64, &group, 1, REJECTED), "{name}");
    }
    assert!(read_all(&t.addr, &dlq, 0).is_empty(), "{name}: partition 0");
    wait_moved_on(t, &mut s, tid, &group, &topic);
}

/// (2) `errors.deadletterqueue.copy.record.enable`: key and value copied.
fn case_copy(t: &Target, name: &str) {
    let (topic, tid, dlq, group, mut s) = setup(
        t,
        name,
        Some(true),
        &[("errors.deadletterqueue.copy.record.enable", "true")],
    );
    s.fetch_some(tid, 1, 100, Duration::from_secs(20));
    assert_eq!(s.ack(tid, 1, &vec![(0, 1, REJECT)]), 0, "{name}");
    let got = wait_records(&t.addr, &dlq, 1, 2);
    for (i, (k, v, h)) in got.iter().enumerate() {
        assert_eq!(k.as_deref(), Some(format!("k{i}").as_bytes()), "{name}");
        assert_eq!(v.as_deref(), Some(format!("v{i}").as_bytes()), "{name}");
        assert_eq!(h, &headers(&topic, i as i64, &group, 1, REJECTED), "{name}");
    }
}

/// (3) The delivery-count limit (2) reached by RELEASE.
fn case_limit(t: &Target, name: &str) {
    let (topic, tid, dlq, group, mut s) =
        setup(t, name, Some(true), &[("share.delivery.count.limit", "2")]);
    for count in 1..=2 {
        assert_eq!(
            s.fetch_some(tid, 1, 100, Duration::from_secs(20)),
            vec![(0, 1, count)],
            "{name}"
        );
        assert_eq!(s.ack(tid, 1, &vec![(0, 1, RELEASE)]), 0, "{name}");
    }
    let got = wait_records(&t.addr, &dlq, 1, 2);
    for (i, (k, v, h)) in got.iter().enumerate() {
        assert_eq!((k, v), (&None, &None), "{name}");
        assert_eq!(h, &headers(&topic, i as i64, &group, 2, EXCEEDED), "{name}");
    }
    wait_moved_on(t, &mut s, tid, &group, &topic);
}

/// (4) A DLQ topic without `errors.deadletterqueue.group.enable`: nothing
/// written, the records archived anyway.
fn case_not_enabled(t: &Target, name: &str) {
    let (topic, tid, dlq, group, mut s) = setup(t, name, None, &[]);
    s.fetch_some(tid, 1, 100, Duration::from_secs(20));
    assert_eq!(s.ack(tid, 1, &vec![(0, 1, REJECT)]), 0, "{name}");
    wait_moved_on(t, &mut s, tid, &group, &topic);
    assert!(read_all(&t.addr, &dlq, 1).is_empty(), "{name}");
    assert!(read_all(&t.addr, &dlq, 0).is_empty(), "{name}");
}

/// Waits until the share start offset of partition 1 passes offsets 0
/// and 1 (the dead-lettered records). Kafka 4.4 moves its persisted start
/// offset past archived records only at the next acknowledgement, so each
/// round produces one more record and accepts it.
fn wait_moved_on(t: &Target, s: &mut Session, tid: Uuid, group: &str, topic: &str) {
    let deadline = Instant::now() + DLQ_WAIT;
    let mut round = 0;
    loop {
        let got = start_offset(&t.addr, group, topic, 1);
        if got >= 2 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{group}: the start offset stays at {got}"
        );
        let (k, v) = (format!("kn{round}"), format!("vn{round}"));
        produce_keyed(&t.addr, topic, 1, &[(&k, &v)]);
        let acks: Acks = s
            .fetch_some(tid, 1, 100, Duration::from_secs(20))
            .into_iter()
            .map(|(f, l, _)| (f, l, ACCEPT))
            .collect();
        assert_eq!(s.ack(tid, 1, &acks), 0, "{group}");
        round += 1;
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// (5) A DLQ topic without the broker's prefix (`dlq.`): nothing written,
/// the records archived anyway (the prefix is checked at each write, not
/// when the group config is set).
fn case_prefix(t: &Target, name: &str) {
    let topic = format!("{name}-t");
    let dlq = format!("noprefix.{name}");
    let group = format!("{name}-g");
    let tid = create_topic_with(&t.addr, &topic, 2, None);
    create_topic_with(&t.addr, &dlq, 2, Some(true));
    set_group_configs(
        &t.addr,
        &group,
        &[
            ("errors.deadletterqueue.topic.name", dlq.as_str()),
            ("share.auto.offset.reset", "earliest"),
        ],
    );
    produce_keyed(&t.addr, &topic, 1, &[("k0", "v0"), ("k1", "v1")]);
    let member = join(t, &group, &[&topic]);
    let mut session = Session::new(t, &group, &member);
    session.fetch_some(tid, 1, 100, Duration::from_secs(20));
    assert_eq!(session.ack(tid, 1, &vec![(0, 1, REJECT)]), 0, "{name}");
    wait_moved_on(t, &mut session, tid, &group, &topic);
    assert!(read_all(&t.addr, &dlq, 1).is_empty(), "{name}");
}

/// (6) With `errors.deadletterqueue.auto.create.topics.enable=true` a
/// missing DLQ topic is created on the first write (the broker's default
/// partitions: 1 here, so DLQ partition 0) with
/// `errors.deadletterqueue.group.enable=true`.
fn case_auto_create(t: &Target, name: &str) {
    let topic = format!("{name}-t");
    let dlq = format!("dlq.{name}");
    let group = format!("{name}-g");
    let tid = create_topic_with(&t.addr, &topic, 2, None);
    set_group_configs(
        &t.addr,
        &group,
        &[
            ("errors.deadletterqueue.topic.name", dlq.as_str()),
            ("share.auto.offset.reset", "earliest"),
        ],
    );
    produce_keyed(&t.addr, &topic, 1, &[("k0", "v0")]);
    let member = join(t, &group, &[&topic]);
    let mut session = Session::new(t, &group, &member);
    session.fetch_some(tid, 1, 100, Duration::from_secs(20));
    assert_eq!(session.ack(tid, 1, &vec![(0, 0, REJECT)]), 0, "{name}");
    let got = wait_records(&t.addr, &dlq, 0, 1);
    assert_eq!(got[0].2, headers(&topic, 0, &group, 1, REJECTED), "{name}");
    let r = Conn::new(&t.addr).call(
        4,
        &DescribeConfigsRequest::default().with_resources(vec![
            describe_configs_request::DescribeConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(s(&dlq))
                .with_configuration_keys(Some(vec![s("errors.deadletterqueue.group.enable")])),
        ]),
    );
    let enabled = &r.results[0].configs[0];
    assert_eq!(enabled.value.as_deref(), Some("true"), "{name}: {r:?}");
    assert_eq!(enabled.config_source, 1, "{name}: a topic config");
}

fn run_cases(t: &Target, tag: &str) {
    case_reject(t, &format!("{tag}-reject"));
    case_copy(t, &format!("{tag}-copy"));
    case_limit(t, &format!("{tag}-limit"));
    case_not_enabled(t, &format!("{tag}-off"));
    case_prefix(t, &format!("{tag}-prefix"));
}

const AUTO_CREATE: &str = "errors.deadletterqueue.auto.create.topics.enable=true";

#[test]
fn share_dlq_auto_create_on_fjord_and_kafka() {
    let b = Broker::start_with(&[AUTO_CREATE]);
    let t = Target {
        addr: b.bootstrap(),
    };
    enable_share(&t.addr);
    case_auto_create(&t, "f-auto");
    drop(b);
    if let Some((_peer, t)) = kafka_target(&[AUTO_CREATE]) {
        case_auto_create(&t, "k-auto");
    }
}

#[test]
fn share_dlq_on_fjord() {
    let b = Broker::start();
    let t = Target {
        addr: b.bootstrap(),
    };
    enable_share(&t.addr);
    run_cases(&t, "f");
}

#[test]
fn share_dlq_on_kafka() {
    let Some((_peer, t)) = kafka_target(&[]) else {
        return;
    };
    run_cases(&t, "k");
}

/// Records rejected right before the broker is killed (SIGKILL) are
/// dead-lettered at least once after the restart, written before the kill
/// or resumed on load from their persisted ARCHIVING state, and the share
/// start offset moves past them. Fjord only (the peer is not restarted
/// here; tests/share_persistence.rs restarts it for the share state).
#[test]
fn share_dlq_resumes_after_a_restart_on_fjord() {
    let mut b = Broker::start();
    let t = Target {
        addr: b.bootstrap(),
    };
    enable_share(&t.addr);
    let (topic, tid, dlq, group, mut s) = setup(&t, "restart", Some(true), &[]);
    s.fetch_some(tid, 1, 100, Duration::from_secs(20));
    assert_eq!(s.ack(tid, 1, &vec![(0, 1, REJECT)]), 0);
    drop(s);
    b.kill9();
    b.restart();
    let t = Target {
        addr: b.bootstrap(),
    };
    let member = join(&t, &group, &[&topic]);
    let mut s = Session::new(&t, &group, &member);
    // The first use of the share-partition loads it (and resumes).
    let _ = s.fetch(tid, 1, &vec![], 500, 100);
    let got = wait_records(&t.addr, &dlq, 1, 2);
    let offsets: std::collections::BTreeSet<String> = got
        .iter()
        .filter_map(|(_, _, h)| {
            h.iter()
                .find(|(k, _)| k == "__dlq.errors.offset")
                .map(|(_, v)| v.clone())
        })
        .collect();
    assert_eq!(
        offsets,
        ["0".to_string(), "1".to_string()].into(),
        "{got:?}"
    );
    wait_moved_on(&t, &mut s, tid, &group, &topic);
}

/// The DLQ group configs as IncrementalAlterConfigs and DescribeConfigs
/// v4 answer them: a name starting with `__` and a non-boolean refused
/// with Kafka's texts, a name without the broker's prefix accepted (it is
/// checked at each write), then both keys described (value, source, type,
/// synonyms).
fn config_answers(addr: &str, group: &str) -> Vec<String> {
    let mut c = Conn::new(addr);
    let mut out = Vec::new();
    for (k, v) in [
        ("errors.deadletterqueue.topic.name", "__internal"),
        ("errors.deadletterqueue.copy.record.enable", "maybe"),
        ("errors.deadletterqueue.topic.name", "noprefix"),
        ("errors.deadletterqueue.copy.record.enable", "TRUE"),
    ] {
        let req = IncrementalAlterConfigsRequest::default().with_resources(vec![
            incremental_alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(32)
                .with_resource_name(s(group))
                .with_configs(vec![
                    incremental_alter_configs_request::AlterableConfig::default()
                        .with_name(s(k))
                        .with_config_operation(0)
                        .with_value(Some(s(v))),
                ]),
        ]);
        let r = &c.call(1, &req).responses[0];
        out.push(format!(
            "set {k}={v}: {} {:?}",
            r.error_code,
            r.error_message.as_ref().map(|m| m.to_string())
        ));
    }
    let keys = [
        "errors.deadletterqueue.copy.record.enable",
        "errors.deadletterqueue.topic.name",
    ];
    let describe = DescribeConfigsRequest::default()
        .with_include_synonyms(true)
        .with_resources(vec![
            describe_configs_request::DescribeConfigsResource::default()
                .with_resource_type(32)
                .with_resource_name(s(group))
                .with_configuration_keys(Some(keys.iter().map(|x| s(x)).collect())),
        ]);
    // Applied from the metadata log after the answer: wait for both.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = c.call(4, &describe);
        let lines: Vec<String> = r.results[0]
            .configs
            .iter()
            .map(|cfg| {
                format!(
                    "{}={:?} source {} type {} synonyms {:?}",
                    cfg.name,
                    cfg.value.as_ref().map(|v| v.to_string()),
                    cfg.config_source,
                    cfg.config_type,
                    cfg.synonyms
                        .iter()
                        .map(|y| format!(
                            "{}={:?}/{}",
                            y.name,
                            y.value.as_ref().map(|v| v.to_string()),
                            y.source
                        ))
                        .collect::<Vec<_>>()
                )
            })
            .collect();
        if lines.iter().all(|l| l.contains("source 8")) && lines.len() == 2 {
            out.extend(lines);
            return out;
        }
        assert!(Instant::now() < deadline, "{group}: {lines:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn share_dlq_configs_as_kafka() {
    let b = Broker::start();
    let fjord = config_answers(&b.bootstrap(), "cfg-g");
    drop(b);
    assert_eq!(
        fjord[0],
        "set errors.deadletterqueue.topic.name=__internal: 40 Some(\"errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'\")"
    );
    if let Some((_peer, t)) = kafka_target(&[]) {
        let kafka = config_answers(&t.addr, "cfg-g");
        assert_eq!(fjord, kafka);
    }
}

/// Joins `group` as a new member reading `topic` through its coordinator
/// (FindCoordinator asked of `nodes`, wherever the coordinator is); gives
/// the member id once it is assigned a partition.
fn join_cluster(c: &common::cluster::Cluster, nodes: &[i32], group: &str, topic: &str) -> String {
    let member = Uuid::new_v4().to_string();
    let mut epoch = 0;
    poll_until(cluster::CLUSTER_DEADLINE, "an assignment", || {
        let coordinator = cluster::coordinator_of(c, nodes[0], 0, group);
        if !nodes.contains(&coordinator) {
            return Err(format!("coordinator {coordinator} not among {nodes:?}"));
        }
        let req = ShareGroupHeartbeatRequest::default()
            .with_group_id(s(group).into())
            .with_member_id(s(&member))
            .with_member_epoch(epoch)
            .with_subscribed_topic_names((epoch == 0).then(|| vec![s(topic).into()]));
        let r = cluster::ask(c, coordinator, 1, &req)?;
        if r.error_code != 0 {
            return Err(format!("ShareGroupHeartbeat: {}", r.error_code));
        }
        epoch = r.member_epoch;
        match r.assignment {
            Some(a) if !a.topic_partitions.is_empty() => Ok(member.clone()),
            _ => Err("nothing assigned yet".into()),
        }
    })
}

/// Creates `dlq` (one partition, on broker `on` only, with
/// `errors.deadletterqueue.group.enable=true`) through node `asked`.
fn create_dlq_on(c: &common::cluster::Cluster, asked: i32, dlq: &str, on: i32) {
    poll_until(cluster::CLUSTER_DEADLINE, "the DLQ topic", || {
        let req = CreateTopicsRequest::default()
            .with_topics(vec![create_topics_request::CreatableTopic::default()
                .with_name(s(dlq).into())
                .with_num_partitions(-1)
                .with_replication_factor(-1)
                .with_assignments(vec![
                    create_topics_request::CreatableReplicaAssignment::default()
                        .with_partition_index(0)
                        .with_broker_ids(vec![BrokerId(on)]),
                ])
                .with_configs(vec![
                    create_topics_request::CreatableTopicConfig::default()
                        .with_name(s("errors.deadletterqueue.group.enable"))
                        .with_value(Some(s("true"))),
                ])])
            .with_timeout_ms(15_000);
        let r = cluster::ask(c, asked, 7, &req)?;
        match r.topics[0].error_code {
            0 | 36 => Ok(()),
            code => Err(format!("CreateTopics: {code}")),
        }
    });
}

/// A 3-node Fjord cluster set up for a dead-letter write to another
/// broker: `topic` (RF 3, one partition) holding "a" and "b", its DLQ
/// topic `dlq` on one partition led by `holder` (not the topic's leader),
/// the group configured with it, and a member's session on the leader that
/// acquired both records.
struct RemoteDlq {
    c: common::cluster::Cluster,
    tid: Uuid,
    /// The leader of `topic`-0.
    leader: i32,
    /// The broker of the DLQ partition.
    holder: i32,
    /// The broker that is neither.
    third: i32,
    session: Session,
}

fn remote_dlq(topic: &str, dlq: &str, group: &str) -> RemoteDlq {
    let c = common::cluster::Cluster::start(3, &["share.coordinator.state.topic.num.partitions=4"]);
    let any = c.ids()[0];
    enable_share(&c.bootstrap(any));
    let tid = cluster::create_rf3(&c, any, topic, 1);
    let leader = common::layout::wait_topic(&c, &c.ids(), topic, 1).parts[&0].leader;
    let others: Vec<i32> = c.ids().into_iter().filter(|&i| i != leader).collect();
    let (holder, third) = (others[0], others[1]);
    create_dlq_on(&c, any, dlq, holder);
    let dlq_leader = common::layout::wait_topic(&c, &c.ids(), dlq, 1).parts[&0].leader;
    assert_eq!(dlq_leader, holder);
    let at_leader = Target {
        addr: c.bootstrap(leader),
    };
    set_group_configs(
        &at_leader.addr,
        group,
        &[
            ("errors.deadletterqueue.topic.name", dlq),
            ("share.auto.offset.reset", "earliest"),
        ],
    );
    produce(&at_leader.addr, topic, 0, &["a", "b"]);
    let member = join_cluster(&c, &c.ids(), group, topic);
    let mut session = Session::new(&at_leader, group, &member);
    assert_eq!(
        session.fetch_some(tid, 0, 100, Duration::from_secs(30)),
        vec![(0, 1, 1)]
    );
    RemoteDlq {
        c,
        tid,
        leader,
        holder,
        third,
        session,
    }
}

/// A 3-node Fjord cluster (the Kafka peer is one node): the DLQ partition
/// is led by another broker than the source partition, so the leader of
/// the source writes the dead-letter records with a Produce to it.
#[test]
fn share_dlq_to_another_broker() {
    let RemoteDlq {
        c,
        tid,
        holder,
        mut session,
        ..
    } = remote_dlq("remote-t", "dlq.remote", "remote-g");
    assert_eq!(session.ack(tid, 0, &vec![(0, 1, REJECT)]), 0);
    let got = wait_records(&c.bootstrap(holder), "dlq.remote", 0, 2);
    for (i, (_, _, h)) in got.iter().enumerate() {
        assert!(
            h.contains(&("__dlq.errors.offset".to_string(), i.to_string())),
            "{h:?}"
        );
        assert!(
            h.contains(&("__dlq.errors.message".to_string(), REJECTED.to_string())),
            "{h:?}"
        );
    }
}

/// ARCHIVING resumes on load: the broker holding the DLQ partition is
/// killed, so the dead-letter write of the rejected records keeps failing
/// (retried); the source partition's leader is killed too while it
/// retries. With the DLQ broker back, the new leader of the source
/// partition reads the persisted ARCHIVING state on its first ShareFetch
/// and writes the records.
#[test]
fn share_dlq_resumes_on_a_new_leader() {
    let (topic, dlq) = ("resume-t", "dlq.resume");
    let RemoteDlq {
        mut c,
        tid,
        leader,
        holder,
        third,
        mut session,
    } = remote_dlq(topic, dlq, "resume-g");
    let group = "resume-g";
    c.kill9(holder);
    // Answered once ARCHIVING is persisted; the write then fails (retried).
    assert_eq!(session.ack(tid, 0, &vec![(0, 1, REJECT)]), 0);
    drop(session);
    c.kill9(leader);
    c.start_node(holder);
    let alive = vec![holder, third];
    let moved = poll_until(cluster::CLUSTER_DEADLINE, "a new source leader", || {
        let l = common::layout::wait_topic(&c, &alive, topic, 1).parts[&0].leader;
        let d = common::layout::wait_topic(&c, &alive, dlq, 1).parts[&0].leader;
        if alive.contains(&l) && d == holder {
            Ok(l)
        } else {
            Err(format!("source leader {l}, DLQ leader {d}"))
        }
    });
    let member = join_cluster(&c, &alive, group, topic);
    let mut session = Session::new(
        &Target {
            addr: c.bootstrap(moved),
        },
        group,
        &member,
    );
    // The first fetch loads the window (and resumes the write).
    let _ = session.fetch(tid, 0, &vec![], 500, 100);
    let got = wait_records(&c.bootstrap(holder), dlq, 0, 2);
    let offsets: std::collections::BTreeSet<String> = got
        .iter()
        .filter_map(|(_, _, h)| {
            h.iter()
                .find(|(k, _)| k == "__dlq.errors.offset")
                .map(|(_, v)| v.clone())
        })
        .collect();
    assert_eq!(
        offsets,
        ["0".to_string(), "1".to_string()].into(),
        "{got:?}"
    );
}

/// Many dead-letter records from a fragmented window: 1,500 records, every
/// third rejected, every third released (twice: `share.delivery.count.limit`
/// 2) and the others accepted, each acknowledged in a request of its own,
/// so every dead-lettered record is a run of its own, its source record
/// copied. All 1,000 reach the DLQ topic and the share start offset moves
/// past the last record within the usual wait.
#[test]
fn share_dlq_many_fragmented_runs_on_fjord() {
    const N: i64 = 1_500;
    let b = Broker::start();
    let t = Target {
        addr: b.bootstrap(),
    };
    enable_share(&t.addr);
    let (topic, dlq, group) = ("many-t", "dlq.many", "many-g");
    let tid = create_topic(&t.addr, topic, 1);
    create_topic_with(&t.addr, dlq, 1, Some(true));
    set_group_configs(
        &t.addr,
        group,
        &[
            ("errors.deadletterqueue.topic.name", dlq),
            ("share.auto.offset.reset", "earliest"),
            ("share.delivery.count.limit", "2"),
            ("errors.deadletterqueue.copy.record.enable", "true"),
        ],
    );
    for chunk in 0..N / 100 {
        let values: Vec<String> = (0..100).map(|i| format!("v{}", chunk * 100 + i)).collect();
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        produce(&t.addr, topic, 0, &refs);
    }
    let member = join(&t, group, &[topic]);
    let mut session = Session::new(&t, group, &member);
    // Each offset ≡ 1 (mod 3) is delivered twice; the others once.
    let deliveries = N + N / 3;
    let mut acked = 0;
    while acked < deliveries {
        for (first, last, _) in session.fetch_some(tid, 0, 500, Duration::from_secs(30)) {
            // One ShareAcknowledge per record, as a consumer acknowledging
            // each record as it processes it sends them.
            for o in first..=last {
                let kind = match o % 3 {
                    0 => REJECT,
                    1 => RELEASE,
                    _ => ACCEPT,
                };
                assert_eq!(session.ack(tid, 0, &vec![(o, o, kind)]), 0);
            }
            acked += last - first + 1;
        }
    }
    let want = (2 * N / 3) as usize;
    let got = wait_records(&t.addr, dlq, 0, want);
    assert_eq!(got.len(), want);
    // Each carries its source record's value (copy.record.enable), read
    // from the 100-record batches the records were produced in.
    for (_, value, h) in &got {
        let offset = h
            .iter()
            .find(|(k, _)| k == "__dlq.errors.offset")
            .map(|(_, v)| v.clone())
            .expect("an offset header");
        assert_eq!(
            value.as_deref(),
            Some(format!("v{offset}").as_bytes()),
            "the value of offset {offset}"
        );
    }
    poll_until(
        DLQ_WAIT,
        "the share start offset past the last record",
        || match start_offset(&t.addr, group, topic, 0) {
            o if o >= N => Ok(()),
            o => Err(format!("start offset {o}")),
        },
    );
}
