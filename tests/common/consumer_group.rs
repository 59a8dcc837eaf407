//! Consumer group protocol (KIP-848) helpers shared by the single-node and
//! cluster tests: librdkafka members (`group.protocol=consumer` and
//! `classic`), their assignments polled to a condition, raw
//! ConsumerGroupHeartbeat frames, and a scenario run on Fjord and on Kafka
//! 4.4 with the same code.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use kafka_protocol::messages as kp;
use kafka_protocol::protocol::StrBytes;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

use super::group_client_config;
use super::kafka_peer::KafkaPeer;
use super::raw::RawConn;
use super::Broker;

/// Deadline of anything that waits for a broker.
pub const SETTLE: Duration = Duration::from_secs(60);

/// Partitions of the test topics.
pub const PARTITIONS: i32 = 6;
/// Records written to each partition by [`topic_with_records`].
pub const PER_PARTITION: usize = 10;

/// Creates `topic` with [`PARTITIONS`] partitions and writes
/// [`PER_PARTITION`] records to each.
pub fn topic_with_records(addr: &str, topic: &str) {
    let mut raw = RawConn::new(addr);
    let req = kp::CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![kp::create_topics_request::CreatableTopic::default()
            .with_name(s(topic).into())
            .with_num_partitions(PARTITIONS)
            .with_replication_factor(1)]);
    let r = raw.call(7, &req);
    assert!(
        matches!(r.topics[0].error_code, 0 | 36),
        "CreateTopics: {r:?}"
    );
    let producer: BaseProducer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", addr)
        .set("broker.address.family", "v4")
        .create()
        .expect("producer");
    for p in 0..PARTITIONS {
        for i in 0..PER_PARTITION {
            let v = format!("{p}-{i}");
            producer
                .send(BaseRecord::<(), _>::to(topic).partition(p).payload(&v))
                .expect("enqueue");
        }
    }
    producer.flush(Duration::from_secs(30)).expect("flush");
}

/// A protocol-crate string.
pub fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// A KIP-848 consumer (librdkafka's `group.protocol=consumer`) on
/// `bootstrap`, subscribed to `topic`.
pub fn member(bootstrap: &str, group: &str, topic: &str) -> BaseConsumer {
    let c: BaseConsumer = group_client_config(bootstrap, group, &[("group.protocol", "consumer")])
        // The classic protocol's settings are refused with the new one.
        .remove("session.timeout.ms")
        .remove("heartbeat.interval.ms")
        .create()
        .expect("consumer");
    c.subscribe(&[topic]).expect("subscribe");
    c
}

/// A classic-protocol consumer (librdkafka's `group.protocol=classic`) with
/// the assignor `strategy` (`range` is eager, `cooperative-sticky`
/// incremental), subscribed to `topic`.
pub fn classic_member(bootstrap: &str, group: &str, topic: &str, strategy: &str) -> BaseConsumer {
    let c: BaseConsumer = group_client_config(
        bootstrap,
        group,
        &[
            ("group.protocol", "classic"),
            ("partition.assignment.strategy", strategy),
        ],
    )
    .create()
    .expect("consumer");
    c.subscribe(&[topic]).expect("subscribe");
    c
}

/// The partitions `c` is assigned now.
pub fn assigned(c: &BaseConsumer) -> BTreeSet<i32> {
    c.assignment()
        .map(|l| l.elements().iter().map(|e| e.partition()).collect())
        .unwrap_or_default()
}

/// Polls every consumer until `done` holds for their assignments (records
/// read are counted per consumer into `seen` as (partition, offset));
/// fails when a partition is in two assignments at once or after
/// [`SETTLE`].
pub fn settle(
    cs: &[&BaseConsumer],
    seen: &mut [Vec<(i32, i64)>],
    what: &str,
    done: impl Fn(&[BTreeSet<i32>]) -> bool,
) -> Vec<BTreeSet<i32>> {
    let deadline = Instant::now() + SETTLE;
    loop {
        for (i, c) in cs.iter().enumerate() {
            if let Some(Ok(m)) = c.poll(Duration::from_millis(50)) {
                seen[i].push((m.partition(), m.offset()));
            }
        }
        let now: Vec<BTreeSet<i32>> = cs.iter().map(|c| assigned(c)).collect();
        // Never one partition in two assignments at once.
        let mut all = BTreeSet::new();
        for a in &now {
            for p in a {
                assert!(all.insert(*p), "partition {p} assigned twice: {now:?}");
            }
        }
        if done(&now) {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "timed out: {what}; assignments {now:?}"
        );
    }
}

/// ConsumerGroupHeartbeat v1 of a join of `member_id` subscribing `topic`
/// (rebalance timeout 30 s).
pub fn join(group: &str, member_id: &str, topic: &str) -> kp::ConsumerGroupHeartbeatRequest {
    kp::ConsumerGroupHeartbeatRequest::default()
        .with_group_id(s(group).into())
        .with_member_id(s(member_id))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(30_000)
        .with_subscribed_topic_names(Some(vec![s(topic).into()]))
        .with_topic_partitions(Some(vec![]))
}

/// A ConsumerGroupHeartbeat of member `id` at `epoch` owning `owned`
/// partitions of `topic_id`.
pub fn beat(
    group: &str,
    id: &str,
    epoch: i32,
    topic_id: uuid::Uuid,
    owned: &[i32],
) -> kp::ConsumerGroupHeartbeatRequest {
    kp::ConsumerGroupHeartbeatRequest::default()
        .with_group_id(s(group).into())
        .with_member_id(s(id))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(-1)
        .with_topic_partitions(Some(vec![
            kp::consumer_group_heartbeat_request::TopicPartitions::default()
                .with_topic_id(topic_id)
                .with_partitions(owned.to_vec()),
        ]))
}

/// Partitions in a heartbeat answer's assignment (0 without one).
pub fn answered_partitions(r: &kp::ConsumerGroupHeartbeatResponse) -> usize {
    r.assignment.as_ref().map_or(0, |a| {
        a.topic_partitions.iter().map(|t| t.partitions.len()).sum()
    })
}

/// Repeats `call` until it gives error 0 (the coordinator loading its
/// partition answers retriable codes); gives the answer.
pub fn until_served<R: std::fmt::Debug>(what: &str, mut call: impl FnMut() -> (i16, R)) -> R {
    let deadline = Instant::now() + SETTLE;
    loop {
        let (code, r) = call();
        if code == 0 {
            return r;
        }
        assert!(
            matches!(code, 14..=16) && Instant::now() < deadline,
            "{what}: {code} {r:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// FindCoordinator (v4) for `group` until it is answered: it makes the
/// broker create `__consumer_offsets`, whose partitions then load
/// (retriable codes meanwhile). Gives the coordinator's node id.
pub fn find_coordinator(c: &mut RawConn, group: &str) -> i32 {
    until_served("FindCoordinator", || {
        let r = c.call(
            4,
            &kp::FindCoordinatorRequest::default().with_coordinator_keys(vec![s(group)]),
        );
        let k = &r.coordinators[0];
        (k.error_code, k.node_id.0)
    })
}

/// ConsumerGroupDescribe (v1) of `group`.
pub fn describe(c: &mut RawConn, group: &str) -> kp::ConsumerGroupDescribeResponse {
    c.call(
        1,
        &kp::ConsumerGroupDescribeRequest::default().with_group_ids(vec![s(group).into()]),
    )
}

/// One member as ConsumerGroupDescribe shows it: id, epoch, member type
/// and assigned partitions.
pub type MemberView = (String, i32, i8, Vec<i32>);

/// What ConsumerGroupDescribe tells of the first group asked: error,
/// group epoch, assignment epoch, state and the members sorted by id.
pub fn group_view(
    d: &kp::ConsumerGroupDescribeResponse,
) -> (i16, i32, i32, String, Vec<MemberView>) {
    let g = &d.groups[0];
    let mut members: Vec<MemberView> = g
        .members
        .iter()
        .map(|m| {
            let mut parts: Vec<i32> = m
                .assignment
                .topic_partitions
                .iter()
                .flat_map(|t| t.partitions.clone())
                .collect();
            parts.sort();
            (
                m.member_id.to_string(),
                m.member_epoch,
                m.member_type,
                parts,
            )
        })
        .collect();
    members.sort();
    (
        g.error_code,
        g.group_epoch,
        g.assignment_epoch,
        g.group_state.to_string(),
        members,
    )
}

/// Runs `scenario` on a Fjord broker with `settings` and, when installed,
/// on Kafka 4.4 with `settings` plus `kafka_only` (Kafka's minimums, which
/// Fjord does not have); both traces must be `expected`.
pub fn on_both_with(
    settings: &[&str],
    kafka_only: &[&str],
    scenario: impl Fn(&str) -> Vec<String>,
    expected: &[&str],
) {
    let broker = Broker::start_with(settings);
    let fjord = scenario(&broker.bootstrap());
    eprintln!("Fjord: {fjord:#?}");
    drop(broker);
    let mut peer_settings: Vec<&str> = kafka_only.to_vec();
    peer_settings.extend(settings);
    if let Some(peer) = KafkaPeer::start(&peer_settings) {
        let kafka = scenario(&peer.addr);
        eprintln!("Kafka: {kafka:#?}");
        assert_eq!(kafka, expected, "Kafka's trace differs");
    }
    assert_eq!(fjord, expected);
}
