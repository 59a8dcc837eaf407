//! The consumer group protocol of Kafka 4 (KIP-848) with real clients and
//! raw frames, on Fjord and on Apache Kafka 4.4 with the same code: the
//! rdkafka crate's consumer with `group.protocol=consumer` (librdkafka's
//! KIP-848 client) reads every record of a topic alone, shares the
//! partitions with a second member without a partition read by both at
//! once, commits with its member epoch and takes everything back when the
//! other leaves; ConsumerGroupHeartbeat's refusals (unsupported assignor,
//! unknown member, fenced epoch, a v1 join without a member id) and
//! ConsumerGroupDescribe's answers for a consumer group, a classic group
//! and no group.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::consumer_group::*;
use common::kafka_peer::KafkaPeer;
use common::raw::RawConn;
use common::*;
use kafka_protocol::messages as kp;
use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::message::Message;

/// One member reads everything, a second joins and the partitions split
/// 3/3 (the `uniform` assignor), offsets commit with the member epoch, and
/// the first takes all back when the second leaves. Gives what was seen.
fn two_members(addr: &str) -> Vec<String> {
    let topic = "cgp-share";
    let group = "cgp-share-group";
    topic_with_records(addr, topic);
    let mut out = Vec::new();
    let a = member(addr, group, topic);
    let mut seen = vec![Vec::new(), Vec::new()];
    let full: BTreeSet<i32> = (0..PARTITIONS).collect();
    settle(
        &[&a],
        &mut seen[..1],
        "the first member gets every partition",
        |n| n[0] == full,
    );
    let deadline = Instant::now() + SETTLE;
    while seen[0].len() < PARTITIONS as usize * PER_PARTITION {
        if let Some(Ok(m)) = a.poll(Duration::from_millis(100)) {
            seen[0].push((m.partition(), m.offset()));
        }
        assert!(Instant::now() < deadline, "read {} records", seen[0].len());
    }
    let distinct: BTreeSet<(i32, i64)> = seen[0].iter().copied().collect();
    out.push(format!(
        "alone: {} records, {} distinct",
        seen[0].len(),
        distinct.len()
    ));
    a.commit_consumer_state(CommitMode::Sync)
        .expect("commit with the member epoch");
    out.push("commit: ok".to_string());
    let b = member(addr, group, topic);
    let split = settle(
        &[&a, &b],
        &mut seen,
        "the partitions split between two members",
        |n| n[0].len() == 3 && n[1].len() == 3,
    );
    out.push(format!(
        "two members: {} + {}",
        split[0].len(),
        split[1].len()
    ));
    drop(b);
    settle(
        &[&a],
        &mut seen[..1],
        "the first member takes every partition back",
        |n| n[0] == full,
    );
    out.push("second left: the first holds all 6".to_string());
    let committed = a
        .committed(Duration::from_secs(10))
        .expect("committed offsets");
    let sum: i64 = committed
        .elements()
        .iter()
        .map(|e| e.offset().to_raw().unwrap_or(-1))
        .sum();
    out.push(format!("committed total: {sum}"));
    out
}

/// Raw ConsumerGroupHeartbeat and ConsumerGroupDescribe answers (codes and
/// the messages clients rely on).
fn raw_answers(addr: &str) -> Vec<String> {
    let topic = "cgp-raw";
    let group = "cgp-raw-group";
    topic_with_records(addr, topic);
    let mut c = RawConn::new(addr);
    let mut out = Vec::new();
    find_coordinator(&mut c, group);
    let joined = until_served("join", || {
        let r = c.call(1, &join(group, "m-1-aaaaaaaaaaaaaaaaaaaa", topic));
        (r.error_code, r)
    });
    out.push(format!(
        "join: epoch {} partitions {}",
        joined.member_epoch,
        joined.assignment.as_ref().map_or(0, |a| a
            .topic_partitions
            .iter()
            .map(|t| t.partitions.len())
            .sum())
    ));
    let r = c.call(
        1,
        &join(group, "m-2-bbbbbbbbbbbbbbbbbbbb", topic).with_server_assignor(Some(s("nope"))),
    );
    out.push(format!("unknown assignor: {}", r.error_code));
    let r = c.call(1, &join(group, "", topic));
    out.push(format!("v1 join without a member id: {}", r.error_code));
    let r = c.call(
        1,
        &kp::ConsumerGroupHeartbeatRequest::default()
            .with_group_id(s(group).into())
            .with_member_id(s("m-9-zzzzzzzzzzzzzzzzzzzz"))
            .with_member_epoch(1)
            .with_rebalance_timeout_ms(-1),
    );
    out.push(format!("unknown member: {}", r.error_code));
    let r = c.call(
        1,
        &kp::ConsumerGroupHeartbeatRequest::default()
            .with_group_id(s(group).into())
            .with_member_id(s("m-1-aaaaaaaaaaaaaaaaaaaa"))
            .with_member_epoch(joined.member_epoch + 5)
            .with_rebalance_timeout_ms(-1),
    );
    out.push(format!("epoch ahead: {}", r.error_code));
    // A classic group of another id (a plain offset commit creates it).
    let commit = kp::OffsetCommitRequest::default()
        .with_group_id(s("cgp-classic").into())
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            kp::offset_commit_request::OffsetCommitRequestTopic::default()
                .with_name(s(topic).into())
                .with_partitions(vec![
                    kp::offset_commit_request::OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(1),
                ]),
        ]);
    let r = c.call(8, &commit);
    out.push(format!(
        "classic commit: {}",
        r.topics[0].partitions[0].error_code
    ));
    let r = c.call(
        1,
        &kp::ConsumerGroupDescribeRequest::default().with_group_ids(vec![
            s(group).into(),
            s("cgp-classic").into(),
            s("cgp-none").into(),
        ]),
    );
    // Kafka answers the groups in its own order (by coordinator
    // partition): compared in group order.
    let mut groups: Vec<_> = r.groups.iter().collect();
    groups.sort_by_key(|g| g.group_id.0.to_string());
    for g in groups {
        out.push(format!(
            "describe {}: {} {:?} state {} members {}",
            g.group_id.0,
            g.error_code,
            g.error_message.as_ref().map(|m| m.to_string()),
            g.group_state,
            g.members.len()
        ));
    }
    // Leaving: epoch -1 answered with -1.
    let r = c.call(
        1,
        &kp::ConsumerGroupHeartbeatRequest::default()
            .with_group_id(s(group).into())
            .with_member_id(s("m-1-aaaaaaaaaaaaaaaaaaaa"))
            .with_member_epoch(-1)
            .with_rebalance_timeout_ms(-1),
    );
    out.push(format!("leave: {} epoch {}", r.error_code, r.member_epoch));
    out
}

/// A consumer group's members, epochs, assignment and committed offsets
/// come back after the broker is killed (SIGKILL) and restarted: the
/// records written before each heartbeat was answered are replayed when
/// the coordinator loads its partition. Two members reconcile (the first
/// revokes before the second is given anything), commit with their epoch,
/// the broker dies, and after the restart each heartbeats on at its epoch
/// with its partitions, ConsumerGroupDescribe shows the same group, and
/// commits at older epochs follow KIP-1251 (accepted for a partition held
/// since that epoch, STALE_MEMBER_EPOCH before it).
#[test]
fn consumer_groups_survive_a_kill_and_restart() {
    // Targets at once (no KIP-1263 batching): the steps below follow each
    // heartbeat's answer.
    let mut broker = Broker::start_with(&[
        "group.consumer.heartbeat.interval.ms=1000",
        "offsets.topic.num.partitions=3",
        "group.consumer.assignment.interval.ms=0",
    ]);
    let addr = broker.bootstrap();
    let (topic, group) = ("cgp-restart", "cgp-restart-group");
    topic_with_records(&addr, topic);
    let mut c = RawConn::new(&addr);
    find_coordinator(&mut c, group);
    let first = until_served("join", || {
        let r = c.call(1, &join(group, "m-a-aaaaaaaaaaaaaaaaaaaa", topic));
        (r.error_code, r)
    });
    let assignment = first.assignment.expect("the first member's assignment");
    let topic_id = assignment.topic_partitions[0].topic_id;
    assert_eq!(
        assignment.topic_partitions[0].partitions.len(),
        PARTITIONS as usize
    );
    let a_epoch = first.member_epoch;
    // The second member joins: nothing for it until the first revokes.
    let b = c.call(1, &join(group, "m-b-bbbbbbbbbbbbbbbbbbbb", topic));
    assert_eq!(b.error_code, 0);
    let b_first: usize = b.assignment.as_ref().map_or(0, |a| {
        a.topic_partitions.iter().map(|t| t.partitions.len()).sum()
    });
    assert_eq!(b_first, 0, "partitions the first member still owns: {b:?}");
    let all: Vec<i32> = (0..PARTITIONS).collect();
    let a = c.call(
        1,
        &beat(group, "m-a-aaaaaaaaaaaaaaaaaaaa", a_epoch, topic_id, &all),
    );
    assert_eq!(a.error_code, 0);
    let kept: Vec<i32> = a.assignment.as_ref().expect("revocation").topic_partitions[0]
        .partitions
        .clone();
    assert_eq!(kept.len(), 3, "{a:?}");
    assert_eq!(
        a.member_epoch, a_epoch,
        "the epoch waits for the revocation"
    );
    let a = c.call(
        1,
        &beat(group, "m-a-aaaaaaaaaaaaaaaaaaaa", a_epoch, topic_id, &kept),
    );
    let a_epoch = a.member_epoch;
    assert!(a_epoch > first.member_epoch, "{a:?}");
    let b = c.call(
        1,
        &beat(
            group,
            "m-b-bbbbbbbbbbbbbbbbbbbb",
            b.member_epoch,
            topic_id,
            &[],
        ),
    );
    let got: Vec<i32> = b
        .assignment
        .as_ref()
        .expect("the released partitions")
        .topic_partitions[0]
        .partitions
        .clone();
    assert_eq!(got.len(), 3, "{b:?}");
    assert!(got.iter().all(|p| !kept.contains(p)), "{kept:?} {got:?}");
    let b_epoch = b.member_epoch;
    let commit = |id: &str, epoch: i32, partition: i32| {
        kp::OffsetCommitRequest::default()
            .with_group_id(s(group).into())
            .with_member_id(s(id))
            .with_generation_id_or_member_epoch(epoch)
            .with_topics(vec![
                kp::offset_commit_request::OffsetCommitRequestTopic::default()
                    .with_name(s(topic).into())
                    .with_partitions(vec![
                        kp::offset_commit_request::OffsetCommitRequestPartition::default()
                            .with_partition_index(partition)
                            .with_committed_offset(7),
                    ]),
            ])
    };
    let r = c.call(9, &commit("m-a-aaaaaaaaaaaaaaaaaaaa", a_epoch, kept[0]));
    assert_eq!(r.topics[0].partitions[0].error_code, 0);
    let before = c.call(
        1,
        &kp::ConsumerGroupDescribeRequest::default().with_group_ids(vec![s(group).into()]),
    );
    drop(c);
    broker.kill9();
    broker.restart();
    let addr = broker.bootstrap();
    let mut c = RawConn::new(&addr);
    let a = until_served("the first member after the restart", || {
        let r = c.call(
            1,
            &beat(group, "m-a-aaaaaaaaaaaaaaaaaaaa", a_epoch, topic_id, &kept),
        );
        (r.error_code, r)
    });
    assert_eq!(a.member_epoch, a_epoch);
    let b = c.call(
        1,
        &beat(group, "m-b-bbbbbbbbbbbbbbbbbbbb", b_epoch, topic_id, &got),
    );
    assert_eq!((b.error_code, b.member_epoch), (0, b_epoch), "{b:?}");
    let after = c.call(
        1,
        &kp::ConsumerGroupDescribeRequest::default().with_group_ids(vec![s(group).into()]),
    );
    let view = |d: &kp::ConsumerGroupDescribeResponse| {
        let g = &d.groups[0];
        let mut members: Vec<(String, i32, Vec<i32>)> = g
            .members
            .iter()
            .map(|m| {
                (
                    m.member_id.to_string(),
                    m.member_epoch,
                    m.assignment
                        .topic_partitions
                        .iter()
                        .flat_map(|t| t.partitions.clone())
                        .collect(),
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
    };
    assert_eq!(view(&after), view(&before));
    // KIP-1251: an older epoch still commits a partition held since then
    // (the member kept it from its first epoch) …
    let r = c.call(
        9,
        &commit("m-a-aaaaaaaaaaaaaaaaaaaa", first.member_epoch, kept[0]),
    );
    assert_eq!(
        r.topics[0].partitions[0].error_code, 0,
        "assigned at that epoch"
    );
    // … not one from before it was assigned.
    let r = c.call(
        9,
        &commit("m-a-aaaaaaaaaaaaaaaaaaaa", first.member_epoch - 1, kept[0]),
    );
    assert_eq!(
        r.topics[0].partitions[0].error_code, 113,
        "STALE_MEMBER_EPOCH"
    );
    // The second member's partitions were assigned at its current epoch.
    let r = c.call(9, &commit("m-b-bbbbbbbbbbbbbbbbbbbb", b_epoch - 1, got[0]));
    assert_eq!(
        r.topics[0].partitions[0].error_code, 113,
        "STALE_MEMBER_EPOCH"
    );
    let fetched = c.call(
        9,
        &kp::OffsetFetchRequest::default().with_groups(vec![
            kp::offset_fetch_request::OffsetFetchRequestGroup::default()
                .with_group_id(s(group).into())
                .with_topics(Some(vec![
                    kp::offset_fetch_request::OffsetFetchRequestTopics::default()
                        .with_name(s(topic).into())
                        .with_partition_indexes(vec![kept[0]]),
                ])),
        ]),
    );
    assert_eq!(
        fetched.groups[0].topics[0].partitions[0].committed_offset,
        7
    );
    // OffsetFetch v9 by a member: its current epoch reads, another is
    // STALE_MEMBER_EPOCH, an unknown member UNKNOWN_MEMBER_ID.
    let fetch_as = |c: &mut RawConn, id: &str, epoch: i32| {
        let r = c.call(
            9,
            &kp::OffsetFetchRequest::default().with_groups(vec![
                kp::offset_fetch_request::OffsetFetchRequestGroup::default()
                    .with_group_id(s(group).into())
                    .with_member_id(Some(s(id)))
                    .with_member_epoch(epoch)
                    .with_topics(None),
            ]),
        );
        r.groups[0].error_code
    };
    assert_eq!(fetch_as(&mut c, "m-a-aaaaaaaaaaaaaaaaaaaa", a_epoch), 0);
    assert_eq!(
        fetch_as(&mut c, "m-a-aaaaaaaaaaaaaaaaaaaa", a_epoch - 1),
        113
    );
    assert_eq!(
        fetch_as(&mut c, "m-a-aaaaaaaaaaaaaaaaaaaa", a_epoch + 1),
        113
    );
    assert_eq!(fetch_as(&mut c, "m-z-zzzzzzzzzzzzzzzzzzzz", a_epoch), 25);
}

const EXPECTED_TWO: &[&str] = &[
    "alone: 60 records, 60 distinct",
    "commit: ok",
    "two members: 3 + 3",
    "second left: the first holds all 6",
    "committed total: 60",
];

const EXPECTED_RAW: &[&str] = &[
    "join: epoch 2 partitions 6",
    "unknown assignor: 112",
    "v1 join without a member id: 42",
    "unknown member: 25",
    "epoch ahead: 110",
    "classic commit: 0",
    "describe cgp-classic: 69 Some(\"Group cgp-classic is not a consumer group.\") state  members 0",
    "describe cgp-none: 69 Some(\"Group cgp-none not found.\") state  members 0",
    "describe cgp-raw-group: 0 None state Stable members 1",
    "leave: 0 epoch -1",
];

/// Heartbeats every second instead of every five, on both brokers.
const FAST: &[&str] = &[
    "group.consumer.heartbeat.interval.ms=1000",
    "offsets.topic.num.partitions=3",
];

/// Runs `scenario` on Fjord and, when installed, on Kafka 4.4 with the same
/// settings (Kafka also needs its minimum heartbeat lowered); both traces
/// must be `expected`.
fn on_both(scenario: fn(&str) -> Vec<String>, expected: &[&str]) {
    on_both_with(
        FAST,
        &["group.consumer.min.heartbeat.interval.ms=1000"],
        scenario,
        expected,
    );
}

#[test]
fn consumer_protocol_members_share_partitions_as_on_kafka() {
    on_both(two_members, EXPECTED_TWO);
}

#[test]
fn consumer_group_heartbeat_and_describe_answer_as_kafka() {
    on_both(raw_answers, EXPECTED_RAW);
}

/// Creates `topic` with `partitions` partitions (no records).
fn create_topic(c: &mut RawConn, topic: &str, partitions: i32) {
    let req = kp::CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![kp::create_topics_request::CreatableTopic::default()
            .with_name(s(topic).into())
            .with_num_partitions(partitions)
            .with_replication_factor(1)]);
    let r = c.call(7, &req);
    assert_eq!(r.topics[0].error_code, 0, "CreateTopics: {r:?}");
}

/// A member seen through its heartbeats: its epoch and what it was last
/// assigned (by topic id), which it reports as owned.
struct RegexMember {
    group: String,
    id: String,
    epoch: i32,
    owned: Vec<kp::consumer_group_heartbeat_request::TopicPartitions>,
}

impl RegexMember {
    fn partitions(&self) -> usize {
        self.owned.iter().map(|t| t.partitions.len()).sum()
    }

    /// Heartbeats every 200 ms at the member's epoch with what it owns
    /// until it is assigned `want` partitions.
    fn poll_until(&mut self, c: &mut RawConn, want: usize) {
        let deadline = Instant::now() + SETTLE;
        while self.partitions() != want {
            assert!(
                Instant::now() < deadline,
                "{} partitions at epoch {}, {want} expected",
                self.partitions(),
                self.epoch
            );
            std::thread::sleep(Duration::from_millis(200));
            let r = c.call(
                1,
                &kp::ConsumerGroupHeartbeatRequest::default()
                    .with_group_id(s(&self.group).into())
                    .with_member_id(s(&self.id))
                    .with_member_epoch(self.epoch)
                    .with_rebalance_timeout_ms(-1)
                    .with_topic_partitions(Some(self.owned.clone())),
            );
            assert_eq!(r.error_code, 0, "heartbeat: {r:?}");
            self.take(&r);
        }
    }

    /// Takes a heartbeat answer's epoch and assignment (none: unchanged).
    fn take(&mut self, r: &kp::ConsumerGroupHeartbeatResponse) {
        self.epoch = r.member_epoch;
        if let Some(a) = &r.assignment {
            self.owned = a
                .topic_partitions
                .iter()
                .map(|t| {
                    kp::consumer_group_heartbeat_request::TopicPartitions::default()
                        .with_topic_id(t.topic_id)
                        .with_partitions(t.partitions.clone())
                })
                .collect();
        }
    }
}

/// A regex subscription follows the topics: created topics that match and
/// partitions added to a matched topic reach the member at a higher epoch
/// without it asking for anything.
fn regex_follows_topics(addr: &str) -> Vec<String> {
    let group = "cgp-re-group";
    let mut c = RawConn::new(addr);
    create_topic(&mut c, "cgp-re-a", 2);
    let mut out = Vec::new();
    find_coordinator(&mut c, group);
    let join = kp::ConsumerGroupHeartbeatRequest::default()
        .with_group_id(s(group).into())
        .with_member_id(s("m-re-aaaaaaaaaaaaaaaaaaa"))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(30_000)
        .with_subscribed_topic_regex(Some(s("cgp-re-.*")))
        .with_topic_partitions(Some(vec![]));
    let joined = until_served("join", || {
        let r = c.call(1, &join);
        (r.error_code, r)
    });
    let mut m = RegexMember {
        group: group.to_string(),
        id: "m-re-aaaaaaaaaaaaaaaaaaa".to_string(),
        epoch: 0,
        owned: Vec::new(),
    };
    m.take(&joined);
    m.poll_until(&mut c, 2);
    out.push(format!("regex join: {} partitions", m.partitions()));
    let before = m.epoch;
    create_topic(&mut c, "cgp-re-b", 3);
    m.poll_until(&mut c, 5);
    out.push(format!(
        "cgp-re-b created: {} partitions, epoch grew: {}",
        m.partitions(),
        m.epoch > before
    ));
    let before = m.epoch;
    let req = kp::CreatePartitionsRequest::default()
        .with_timeout_ms(15_000)
        .with_topics(vec![
            kp::create_partitions_request::CreatePartitionsTopic::default()
                .with_name(s("cgp-re-a").into())
                .with_count(4)
                .with_assignments(None),
        ]);
    let r = c.call(3, &req);
    assert_eq!(r.results[0].error_code, 0, "CreatePartitions: {r:?}");
    m.poll_until(&mut c, 7);
    out.push(format!(
        "cgp-re-a grown to 4: {} partitions, epoch grew: {}",
        m.partitions(),
        m.epoch > before
    ));
    out
}

const EXPECTED_REGEX: &[&str] = &[
    "regex join: 2 partitions",
    "cgp-re-b created: 5 partitions, epoch grew: true",
    "cgp-re-a grown to 4: 7 partitions, epoch grew: true",
];

#[test]
fn regex_subscription_follows_created_and_grown_topics() {
    on_both(regex_follows_topics, EXPECTED_REGEX);
}

/// The type ListGroups (v5) gives `group`, or "none".
fn group_type(addr: &str, group: &str) -> String {
    let mut raw = RawConn::new(addr);
    let r = raw.call(5, &kp::ListGroupsRequest::default());
    r.groups
        .iter()
        .find(|g| g.group_id.as_str() == group)
        .map_or("none".to_string(), |g| g.group_type.to_string())
}

/// Online migration (Kafka 4.4's `group.consumer.migration.policy`
/// bidirectional): a classic member reads every partition; a
/// consumer-protocol member joins and converts the live group (upgrade),
/// the partitions split between them with none in two assignments at once
/// and the classic member keeps working inside the consumer group; the
/// consumer-protocol member leaves and the group converts back to classic
/// (downgrade) and rebalances, the classic member taking every partition.
fn classic_to_consumer_and_back(addr: &str, strategy: &str) -> Vec<String> {
    let topic = format!("cgm-topic-{strategy}");
    let topic = topic.as_str();
    let group = format!("cgm-group-{strategy}");
    let group = group.as_str();
    topic_with_records(addr, topic);
    let mut out = Vec::new();
    let full: BTreeSet<i32> = (0..PARTITIONS).collect();
    let a = classic_member(addr, group, topic, strategy);
    let mut seen = vec![Vec::new(), Vec::new()];
    settle(
        &[&a],
        &mut seen[..1],
        "the classic member gets every partition",
        |n| n[0] == full,
    );
    out.push(format!("classic alone: {}", group_type(addr, group)));
    let b = member(addr, group, topic);
    let split = settle(
        &[&a, &b],
        &mut seen,
        "the partitions split between the classic and the consumer member",
        |n| n[0].len() == 3 && n[1].len() == 3,
    );
    out.push(format!(
        "upgraded: {} with {} + {}",
        group_type(addr, group),
        split[0].len(),
        split[1].len()
    ));
    drop(b);
    // Right after the downgrade, before it rejoins, the classic member
    // commits at the generation it joined (its member epoch): accepted.
    let mut tpl = rdkafka::TopicPartitionList::new();
    let held = split[0].iter().next().copied().unwrap_or(0);
    tpl.add_partition_offset(topic, held, rdkafka::Offset::Offset(1))
        .expect("offset");
    out.push(format!(
        "commit right after the downgrade: {:?}",
        a.commit(&tpl, CommitMode::Sync).map_err(|e| e.to_string())
    ));
    settle(
        &[&a],
        &mut seen[..1],
        "the classic member takes every partition back",
        |n| n[0] == full,
    );
    out.push(format!("downgraded: {}", group_type(addr, group)));
    let deadline = Instant::now() + SETTLE;
    let distinct = |seen: &[Vec<(i32, i64)>]| -> usize {
        seen.iter()
            .flatten()
            .copied()
            .collect::<BTreeSet<(i32, i64)>>()
            .len()
    };
    while distinct(&seen) < PARTITIONS as usize * PER_PARTITION {
        if let Some(Ok(m)) = a.poll(Duration::from_millis(100)) {
            seen[0].push((m.partition(), m.offset()));
        }
        assert!(Instant::now() < deadline, "read {}", distinct(&seen));
    }
    out.push(format!("records read: {}", distinct(&seen)));
    out
}

const EXPECTED_MIGRATION: &[&str] = &[
    "classic alone: classic",
    "upgraded: consumer with 3 + 3",
    "commit right after the downgrade: Ok(())",
    "downgraded: classic",
    "records read: 60",
];

#[test]
fn eager_classic_member_migrates_online_as_on_kafka() {
    on_both(
        |a| classic_to_consumer_and_back(a, "range"),
        EXPECTED_MIGRATION,
    );
}

#[test]
fn cooperative_classic_member_migrates_online_as_on_kafka() {
    on_both(
        |a| classic_to_consumer_and_back(a, "cooperative-sticky"),
        EXPECTED_MIGRATION,
    );
}

/// With `group.consumer.migration.policy=disabled` a consumer-protocol
/// member may not join a live classic group (GROUP_ID_NOT_FOUND), and the
/// group stays classic.
fn migration_refused(addr: &str) -> Vec<String> {
    let topic = "cgm-refused";
    let group = "cgm-refused-group";
    topic_with_records(addr, topic);
    let mut out = Vec::new();
    let a = classic_member(addr, group, topic, "range");
    let mut seen = vec![Vec::new()];
    let full: BTreeSet<i32> = (0..PARTITIONS).collect();
    settle(
        &[&a],
        &mut seen,
        "the classic member gets every partition",
        |n| n[0] == full,
    );
    let mut raw = RawConn::new(addr);
    find_coordinator(&mut raw, group);
    let r = raw.call(1, &join(group, &uuid::Uuid::new_v4().to_string(), topic));
    out.push(format!(
        "consumer member joins a live classic group: {}",
        r.error_code
    ));
    out.push(format!("group stays: {}", group_type(addr, group)));
    out
}

#[test]
fn migration_policy_disabled_refuses_the_upgrade_as_kafka() {
    let broker = Broker::start_with(&[
        "group.consumer.heartbeat.interval.ms=1000",
        "offsets.topic.num.partitions=3",
        "group.consumer.migration.policy=disabled",
    ]);
    let fjord = migration_refused(&broker.bootstrap());
    let expected = [
        "consumer member joins a live classic group: 69",
        "group stays: classic",
    ];
    if let Some(peer) = KafkaPeer::start(&[
        "group.consumer.min.heartbeat.interval.ms=1000",
        "group.consumer.heartbeat.interval.ms=1000",
        "offsets.topic.num.partitions=3",
        "group.consumer.migration.policy=disabled",
    ]) {
        assert_eq!(
            migration_refused(&peer.addr),
            expected,
            "Kafka's trace differs"
        );
    }
    assert_eq!(fjord, expected);
}

/// KIP-1263 batching (`group.consumer.assignment.interval.ms`, 5000 here):
/// a member joining right after the first target gets the target's epoch
/// and nothing, the group shows Assigning with its epoch ahead of the
/// assignment epoch, and a heartbeat after the interval computes the
/// target (the joiner moves to the group epoch).
fn batched_assignment(addr: &str) -> Vec<String> {
    let topic = "cgp-batch";
    let group = "cgp-batch-group";
    topic_with_records(addr, topic);
    let mut c = RawConn::new(addr);
    find_coordinator(&mut c, group);
    let mut out = Vec::new();
    let a = until_served("join", || {
        let r = c.call(1, &join(group, "m-1-aaaaaaaaaaaaaaaaaaaa", topic));
        (r.error_code, r)
    });
    out.push(format!("first: epoch {}", a.member_epoch));
    let b = c.call(1, &join(group, "m-2-bbbbbbbbbbbbbbbbbbbb", topic));
    let count = |r: &kp::ConsumerGroupHeartbeatResponse| {
        r.assignment.as_ref().map_or(0, |a| {
            a.topic_partitions
                .iter()
                .map(|t| t.partitions.len())
                .sum::<usize>()
        })
    };
    out.push(format!(
        "second: epoch {} partitions {}",
        b.member_epoch,
        count(&b)
    ));
    let describe = |c: &mut RawConn| {
        let r = c.call(
            1,
            &kp::ConsumerGroupDescribeRequest::default().with_group_ids(vec![s(group).into()]),
        );
        let g = &r.groups[0];
        format!(
            "{} epoch {} assignment epoch {}",
            g.group_state, g.group_epoch, g.assignment_epoch
        )
    };
    out.push(describe(&mut c));
    let deadline = Instant::now() + SETTLE;
    let moved = loop {
        let r = c.call(
            1,
            &kp::ConsumerGroupHeartbeatRequest::default()
                .with_group_id(s(group).into())
                .with_member_id(s("m-2-bbbbbbbbbbbbbbbbbbbb"))
                .with_member_epoch(b.member_epoch)
                .with_rebalance_timeout_ms(-1),
        );
        assert_eq!(r.error_code, 0, "{r:?}");
        if r.member_epoch != b.member_epoch {
            break r.member_epoch;
        }
        assert!(Instant::now() < deadline, "no target after the interval");
        std::thread::sleep(Duration::from_millis(200));
    };
    out.push(format!("after the interval: epoch {moved}"));
    out.push(describe(&mut c));
    out
}

#[test]
fn assignment_is_batched_by_the_interval_as_on_kafka() {
    let settings = [
        "group.consumer.heartbeat.interval.ms=1000",
        "offsets.topic.num.partitions=3",
        "group.consumer.assignment.interval.ms=5000",
    ];
    let expected = [
        "first: epoch 2",
        "second: epoch 2 partitions 0",
        "Assigning epoch 3 assignment epoch 2",
        "after the interval: epoch 3",
        "Reconciling epoch 3 assignment epoch 3",
    ];
    let broker = Broker::start_with(&settings);
    let fjord = batched_assignment(&broker.bootstrap());
    let mut peer_settings = vec!["group.consumer.min.heartbeat.interval.ms=1000"];
    peer_settings.extend(settings);
    if let Some(peer) = KafkaPeer::start(&peer_settings) {
        assert_eq!(
            batched_assignment(&peer.addr),
            expected,
            "Kafka's trace differs"
        );
    }
    assert_eq!(fjord, expected);
}
