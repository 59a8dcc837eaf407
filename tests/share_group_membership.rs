//! Share group membership (KIP-932) with raw frames, on Fjord and on
//! Apache Kafka 4.4 with the same code: ShareGroupHeartbeat joins with
//! epoch 0, two and three members over a 3-partition topic (every
//! partition read, counts within one), fenced and unknown member epochs, a
//! leave with -1 bumping the group epoch, ShareGroupDescribe, the one group
//! namespace (wrong-type ids, ListGroups' types and states, DescribeGroups,
//! a classic JoinGroup), the session timeout fencing a silent member,
//! DeleteGroups, and (Fjord) a restart keeping the group.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::consumer_group::{find_coordinator, s, until_served, SETTLE};
use common::kafka_peer::KafkaPeer;
use common::raw::RawConn;
use common::Broker;
use kafka_protocol::messages as kp;
use kafka_protocol::messages::update_features_request::FeatureUpdateKey;

/// Partitions of the test topic.
const PARTITIONS: i32 = 3;

/// The broker settings both brokers run with: a short share session so a
/// silent member is fenced within the test.
const SETTINGS: &[&str] = &[
    "group.share.min.session.timeout.ms=1000",
    "group.share.session.timeout.ms=3000",
    "group.share.min.heartbeat.interval.ms=500",
    "group.share.heartbeat.interval.ms=1000",
    "group.share.max.size=3",
];

fn create_topic(addr: &str, topic: &str) -> kafka_protocol::messages::TopicName {
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
    s(topic).into()
}

/// Finalizes `share.version` 1 where it is below (a new Fjord cluster);
/// Kafka 4.4 finalizes 2 on its own.
fn enable_share(addr: &str) {
    let mut c = RawConn::new(addr);
    let v = c.call(
        4,
        &kp::ApiVersionsRequest::default()
            .with_client_software_name(s("share-test"))
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
            .with_feature_updates(vec![FeatureUpdateKey::default()
                .with_feature(s("share.version"))
                .with_max_version_level(1)
                .with_upgrade_type(1)]),
    );
    assert_eq!(r.error_code, 0, "UpdateFeatures: {r:?}");
}

fn heartbeat(
    c: &mut RawConn,
    group: &str,
    member: &str,
    epoch: i32,
    topics: Option<&[&str]>,
) -> kp::ShareGroupHeartbeatResponse {
    let mut req = kp::ShareGroupHeartbeatRequest::default()
        .with_group_id(s(group).into())
        .with_member_id(s(member))
        .with_member_epoch(epoch);
    req.subscribed_topic_names = topics.map(|t| t.iter().map(|n| s(n).into()).collect());
    c.call(1, &req)
}

fn share_describe(
    c: &mut RawConn,
    group: &str,
) -> kp::share_group_describe_response::DescribedGroup {
    let r = c.call(
        1,
        &kp::ShareGroupDescribeRequest::default().with_group_ids(vec![s(group).into()]),
    );
    r.groups.into_iter().next().expect("one group")
}

/// The partitions of a heartbeat answer's assignment, when it has one.
fn answered(r: &kp::ShareGroupHeartbeatResponse) -> Option<BTreeSet<i32>> {
    r.assignment.as_ref().map(|a| {
        a.topic_partitions
            .iter()
            .flat_map(|t| t.partitions.iter().copied())
            .collect()
    })
}

/// A member as the test tracks it: epoch and partitions.
#[derive(Default, Clone)]
struct Seen {
    epoch: i32,
    partitions: BTreeSet<i32>,
}

/// Heartbeats every member (at its epoch) until `done` holds for the
/// partitions they were given; Kafka computes assignments in batches
/// (`group.share.assignment.interval.ms`), so a new target may come a
/// heartbeat or two later.
fn settle(
    c: &mut RawConn,
    group: &str,
    members: &mut BTreeMap<String, Seen>,
    what: &str,
    done: impl Fn(&BTreeMap<String, Seen>) -> bool,
) {
    let deadline = Instant::now() + SETTLE;
    loop {
        for (id, m) in members.iter_mut() {
            let r = heartbeat(c, group, id, m.epoch, None);
            assert_eq!(r.error_code, 0, "{what}: heartbeat of {id}: {r:?}");
            m.epoch = r.member_epoch;
            if let Some(p) = answered(&r) {
                m.partitions = p;
            }
        }
        if done(members) {
            return;
        }
        if Instant::now() >= deadline {
            let d = share_describe(c, group);
            panic!("{what}: not reached: {:?}", d);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Every partition read and counts within one.
fn balanced(members: &BTreeMap<String, Seen>) -> bool {
    let all: BTreeSet<i32> = members
        .values()
        .flat_map(|m| m.partitions.clone())
        .collect();
    let counts: Vec<usize> = members.values().map(|m| m.partitions.len()).collect();
    let (lo, hi) = (
        counts.iter().min().copied().unwrap_or(0),
        counts.iter().max().copied().unwrap_or(0),
    );
    all.len() == PARTITIONS as usize && hi - lo <= 1 && lo > 0
}

/// The scenario; gives its trace.
fn membership(addr: &str) -> Vec<String> {
    let topic = "sgm-topic";
    let group = "sgm-group";
    enable_share(addr);
    create_topic(addr, topic);
    let mut c = RawConn::new(addr);
    let mut out = Vec::new();
    find_coordinator(&mut c, group);
    let joined = until_served("join", || {
        let r = heartbeat(&mut c, group, "member-a-0000000000000", 0, Some(&[topic]));
        (r.error_code, r)
    });
    // Kafka 4.4: a new group is at epoch 1, the first member's join makes
    // it 2; the partitions may come a heartbeat later (Kafka assigns only
    // share-partitions whose state is initialized).
    out.push(format!(
        "join: epoch {} interval {} assignment sent {}",
        joined.member_epoch,
        joined.heartbeat_interval_ms,
        joined.assignment.is_some()
    ));
    let mut members = BTreeMap::new();
    members.insert(
        "member-a-0000000000000".to_string(),
        Seen {
            epoch: joined.member_epoch,
            partitions: answered(&joined).unwrap_or_default(),
        },
    );
    settle(&mut c, group, &mut members, "one member", |m| {
        m.values()
            .all(|s| s.partitions.len() == PARTITIONS as usize)
    });
    // Kafka may assign a heartbeat later (only share-partitions whose
    // state is initialized), so the epochs are compared, not printed.
    let alone = members["member-a-0000000000000"].epoch;
    let d = share_describe(&mut c, group);
    out.push(format!(
        "describe: {} {} epochs equal {} {} assignor {} members {:?}",
        d.error_code,
        d.group_state,
        d.group_epoch == alone,
        d.assignment_epoch == alone,
        d.assignor_name,
        d.members
            .iter()
            .map(|m| (
                m.member_id.to_string(),
                m.member_epoch == alone,
                m.subscribed_topic_names.len(),
                m.assignment
                    .topic_partitions
                    .iter()
                    .map(|t| (t.topic_name.to_string(), t.partitions.len()))
                    .collect::<Vec<_>>(),
            ))
            .collect::<Vec<_>>()
    ));
    for id in ["member-b-0000000000000", "member-c-0000000000000"] {
        let before = share_describe(&mut c, group).group_epoch;
        let r = heartbeat(&mut c, group, id, 0, Some(&[topic]));
        let after = share_describe(&mut c, group).group_epoch;
        out.push(format!(
            "join {id}: {} group epoch +{}",
            r.error_code,
            after - before
        ));
        members.insert(
            id.to_string(),
            Seen {
                epoch: r.member_epoch,
                partitions: answered(&r).unwrap_or_default(),
            },
        );
        let n = members.len();
        settle(&mut c, group, &mut members, "balanced", |m| {
            balanced(m)
                && m.values()
                    .all(|s| s.epoch == m.values().next().map_or(0, |f| f.epoch))
                && n == m.len()
        });
        let d = share_describe(&mut c, group);
        let mut counts: Vec<usize> = members.values().map(|m| m.partitions.len()).collect();
        counts.sort();
        out.push(format!(
            "{} members: all at the group epoch {} counts {:?}",
            members.len(),
            members.values().all(|m| m.epoch == d.group_epoch),
            counts
        ));
    }
    let r = heartbeat(&mut c, group, "member-d-0000000000000", 0, Some(&[topic]));
    out.push(format!(
        "a fourth member (group.share.max.size=3): {} {:?}",
        r.error_code, r.error_message
    ));
    let a_epoch = members["member-a-0000000000000"].epoch;
    let r = heartbeat(&mut c, group, "member-a-0000000000000", a_epoch + 5, None);
    out.push(format!(
        "epoch ahead: {} {:?}",
        r.error_code,
        r.error_message.map(|m| m
            .replace(&format!("({})", a_epoch + 5), "(E+5)")
            .replace(&format!("({a_epoch})"), "(E)"))
    ));
    let r = heartbeat(&mut c, group, "member-a-0000000000000", a_epoch - 1, None);
    out.push(format!(
        "epoch behind: {} {:?}",
        r.error_code, r.error_message
    ));
    let r = heartbeat(&mut c, group, "member-z-0000000000000", 3, None);
    out.push(format!("member id of 37 characters: {:?}", {
        let r = heartbeat(&mut c, group, &"x".repeat(37), 0, Some(&[topic]));
        (r.error_code, r.error_message)
    }));
    out.push(format!(
        "unknown member: {} {:?}",
        r.error_code, r.error_message
    ));
    let r = heartbeat(&mut c, group, "member-z-0000000000000", 0, None);
    out.push(format!(
        "join without topics: {} {:?}",
        r.error_code, r.error_message
    ));
    let before = share_describe(&mut c, group).group_epoch;
    let r = heartbeat(&mut c, group, "member-c-0000000000000", -1, None);
    members.remove("member-c-0000000000000");
    let after = share_describe(&mut c, group).group_epoch;
    out.push(format!(
        "leave: {} epoch {} group epoch +{}",
        r.error_code,
        r.member_epoch,
        after - before
    ));
    // Wrong types in one namespace.
    let d = c.call(
        1,
        &kp::ConsumerGroupDescribeRequest::default().with_group_ids(vec![s(group).into()]),
    );
    out.push(format!(
        "ConsumerGroupDescribe: {} {:?}",
        d.groups[0].error_code, d.groups[0].error_message
    ));
    let r = c.call(
        1,
        &kp::ConsumerGroupHeartbeatRequest::default()
            .with_group_id(s(group).into())
            .with_member_id(s("cg-member-00000000000"))
            .with_member_epoch(0)
            .with_rebalance_timeout_ms(30000)
            .with_subscribed_topic_names(Some(vec![s(topic).into()]))
            .with_topic_partitions(Some(vec![])),
    );
    out.push(format!(
        "ConsumerGroupHeartbeat: {} {:?}",
        r.error_code, r.error_message
    ));
    let r = c.call(
        9,
        &kp::JoinGroupRequest::default()
            .with_group_id(s(group).into())
            .with_session_timeout_ms(10000)
            .with_rebalance_timeout_ms(10000)
            .with_member_id(s(""))
            .with_protocol_type(s("consumer"))
            .with_protocols(vec![
                kp::join_group_request::JoinGroupRequestProtocol::default()
                    .with_name(s("range"))
                    .with_metadata(bytes::Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 0])),
            ]),
    );
    out.push(format!("JoinGroup: {}", r.error_code));
    let r = c.call(
        5,
        &kp::DescribeGroupsRequest::default().with_groups(vec![s(group).into()]),
    );
    let g = &r.groups[0];
    out.push(format!(
        "DescribeGroups: {} {:?} state {} type {} members {}",
        g.error_code,
        g.error_message,
        g.group_state,
        g.protocol_type,
        g.members.len()
    ));
    let r = c.call(
        6,
        &kp::DescribeGroupsRequest::default().with_groups(vec![s(group).into()]),
    );
    out.push(format!(
        "DescribeGroups v6: {} {:?}",
        r.groups[0].error_code, r.groups[0].error_message
    ));
    // Offsets of a share group's id through the classic APIs.
    let share_commit = kp::OffsetCommitRequest::default()
        .with_group_id(s(group).into())
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            kp::offset_commit_request::OffsetCommitRequestTopic::default()
                .with_name(s(topic).into())
                .with_partitions(vec![
                    kp::offset_commit_request::OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(0),
                ]),
        ]);
    let r = c.call(9, &share_commit);
    out.push(format!(
        "OffsetCommit to the share group: {}",
        r.topics[0].partitions[0].error_code
    ));
    let r = c.call(
        8,
        &kp::OffsetFetchRequest::default().with_groups(vec![
            kp::offset_fetch_request::OffsetFetchRequestGroup::default()
                .with_group_id(s(group).into())
                .with_topics(None),
        ]),
    );
    out.push(format!(
        "OffsetFetch of the share group: {} {}",
        r.groups[0].error_code,
        r.groups[0].topics.len()
    ));
    // A classic group (an offset commit makes one) asked as a share group.
    let commit = kp::OffsetCommitRequest::default()
        .with_group_id(s("sgm-classic").into())
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            kp::offset_commit_request::OffsetCommitRequestTopic::default()
                .with_name(s(topic).into())
                .with_partitions(vec![
                    kp::offset_commit_request::OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(0),
                ]),
        ]);
    find_coordinator(&mut c, "sgm-classic");
    let r = c.call(8, &commit);
    out.push(format!(
        "classic commit: {}",
        r.topics[0].partitions[0].error_code
    ));
    let d = share_describe(&mut c, "sgm-classic");
    out.push(format!(
        "ShareGroupDescribe classic: {} {:?}",
        d.error_code, d.error_message
    ));
    let r = heartbeat(
        &mut c,
        "sgm-classic",
        "member-x-0000000000000",
        0,
        Some(&[topic]),
    );
    out.push(format!(
        "ShareGroupHeartbeat classic: {} {:?}",
        r.error_code, r.error_message
    ));
    for epoch in [3, -1] {
        let r = heartbeat(&mut c, "sgm-none", "member-x-0000000000000", epoch, None);
        out.push(format!(
            "heartbeat at {epoch} to no group: {} {:?}",
            r.error_code, r.error_message
        ));
    }
    let d = share_describe(&mut c, "sgm-none");
    out.push(format!(
        "ShareGroupDescribe none: {} {:?}",
        d.error_code, d.error_message
    ));
    let list = |c: &mut RawConn, types: Vec<&str>| {
        let r = c.call(
            5,
            &kp::ListGroupsRequest::default().with_types_filter(types.into_iter().map(s).collect()),
        );
        let mut v: Vec<String> = r
            .groups
            .iter()
            .filter(|g| g.group_id.starts_with("sgm-"))
            .map(|g| {
                format!(
                    "{}:{}:{}:{}",
                    g.group_id.as_str(),
                    g.group_type,
                    g.group_state,
                    g.protocol_type
                )
            })
            .collect();
        v.sort();
        v
    };
    out.push(format!("ListGroups: {:?}", list(&mut c, vec![])));
    out.push(format!(
        "ListGroups share: {:?}",
        list(&mut c, vec!["share"])
    ));
    out.push(format!(
        "ListGroups classic: {:?}",
        list(&mut c, vec!["classic"])
    ));
    // A silent member is fenced after the session timeout; the other keeps
    // heartbeating.
    members.remove("member-b-0000000000000");
    let deadline = Instant::now() + SETTLE;
    loop {
        settle(&mut c, group, &mut members, "a heartbeats", |_| true);
        let d = share_describe(&mut c, group);
        if d.members.len() == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "the silent member is not fenced");
        std::thread::sleep(Duration::from_millis(300));
    }
    settle(&mut c, group, &mut members, "a alone", |m| {
        m.values()
            .all(|s| s.partitions.len() == PARTITIONS as usize)
    });
    out.push("silent member fenced; the other holds every partition".to_string());
    // The topic grows: the group's epoch is bumped from the metadata and
    // the member is given the new partition.
    let before = share_describe(&mut c, group).group_epoch;
    let r = c.call(
        3,
        &kp::CreatePartitionsRequest::default()
            .with_timeout_ms(10_000)
            .with_topics(vec![
                kp::create_partitions_request::CreatePartitionsTopic::default()
                    .with_name(s(topic).into())
                    .with_count(PARTITIONS + 1)
                    .with_assignments(None),
            ]),
    );
    out.push(format!("CreatePartitions: {}", r.results[0].error_code));
    settle(&mut c, group, &mut members, "the new partition", |m| {
        m.values()
            .all(|s| s.partitions.len() == PARTITIONS as usize + 1)
    });
    let after = share_describe(&mut c, group).group_epoch;
    out.push(format!(
        "grown: the member reads {} partitions, group epoch bumped {}",
        PARTITIONS + 1,
        after > before
    ));
    let r = heartbeat(&mut c, group, "member-b-0000000000000", 3, None);
    out.push(format!("fenced member beats: {}", r.error_code));
    let del = |c: &mut RawConn| {
        let r = c.call(
            2,
            &kp::DeleteGroupsRequest::default().with_groups_names(vec![s(group).into()]),
        );
        r.results[0].error_code
    };
    out.push(format!("DeleteGroups with a member: {}", del(&mut c)));
    let r = heartbeat(&mut c, group, "member-a-0000000000000", -1, None);
    out.push(format!("last leaves: {}", r.error_code));
    let d = share_describe(&mut c, group);
    out.push(format!(
        "empty: {} {} members {}",
        d.error_code,
        d.group_state,
        d.members.len()
    ));
    out.push(format!(
        "ListGroups share: {:?}",
        list(&mut c, vec!["share"])
    ));
    out.push(format!("DeleteGroups empty: {}", del(&mut c)));
    let d = share_describe(&mut c, group);
    out.push(format!("deleted: {} {:?}", d.error_code, d.error_message));
    out
}

const EXPECTED: &[&str] = &[
    "join: epoch 2 interval 1000 assignment sent true",
    "describe: 0 Stable epochs equal true true assignor simple members [(\"member-a-0000000000000\", true, 1, [(\"sgm-topic\", 3)])]",
    "join member-b-0000000000000: 0 group epoch +1",
    "2 members: all at the group epoch true counts [1, 2]",
    "join member-c-0000000000000: 0 group epoch +1",
    "3 members: all at the group epoch true counts [1, 1, 1]",
    "a fourth member (group.share.max.size=3): 81 Some(\"The share group has reached its maximum capacity of 3 members.\")",
    "epoch ahead: 110 Some(\"The share group member has a greater member epoch (E+5) than the one known by the group coordinator (E). The member must abandon all its partitions and rejoin.\")",
    "epoch behind: 0 None",
    "member id of 37 characters: (42, None)",
    "unknown member: 81 Some(\"The share group has reached its maximum capacity of 3 members.\")",
    "join without topics: 42 Some(\"SubscribedTopicNames must be set in first request.\")",
    "leave: 0 epoch -1 group epoch +1",
    "ConsumerGroupDescribe: 69 Some(\"Group sgm-group is not a consumer group.\")",
    "ConsumerGroupHeartbeat: 69 Some(\"Group sgm-group is not a consumer group.\")",
    "JoinGroup: 23",
    "DescribeGroups: 0 None state Dead type  members 0",
    "DescribeGroups v6: 69 Some(\"Group sgm-group is not a classic group.\")",
    "OffsetCommit to the share group: 69",
    "OffsetFetch of the share group: 0 0",
    "classic commit: 0",
    "ShareGroupDescribe classic: 69 Some(\"Group sgm-classic is not a share group.\")",
    "ShareGroupHeartbeat classic: 69 Some(\"Group sgm-classic is not a share group.\")",
    "heartbeat at 3 to no group: 69 Some(\"Share group sgm-none not found.\")",
    "heartbeat at -1 to no group: 69 Some(\"Group sgm-none not found.\")",
    "ShareGroupDescribe none: 69 Some(\"Group sgm-none not found.\")",
    "ListGroups: [\"sgm-classic:classic:Empty:\", \"sgm-group:share:Stable:share\"]",
    "ListGroups share: [\"sgm-group:share:Stable:share\"]",
    "ListGroups classic: [\"sgm-classic:classic:Empty:\"]",
    "silent member fenced; the other holds every partition",
    "CreatePartitions: 0",
    "grown: the member reads 4 partitions, group epoch bumped true",
    "fenced member beats: 25",
    "DeleteGroups with a member: 68",
    "last leaves: 0",
    "empty: 0 Empty members 0",
    "ListGroups share: [\"sgm-group:share:Empty:share\"]",
    "DeleteGroups empty: 0",
    "deleted: 69 Some(\"Group sgm-group not found.\")",
];

/// The scenario on Fjord (share.version finalized by UpdateFeatures) and
/// on Kafka 4.4 with the same short share sessions: the same trace.
#[test]
fn share_group_membership_on_fjord_and_kafka() {
    let broker = Broker::start_with(SETTINGS);
    let fjord = membership(&broker.bootstrap());
    eprintln!("Fjord: {fjord:#?}");
    drop(broker);
    if let Some(peer) = KafkaPeer::start(SETTINGS) {
        let kafka = membership(&peer.addr);
        eprintln!("Kafka: {kafka:#?}");
        assert_eq!(kafka, EXPECTED, "Kafka's trace differs");
    }
    assert_eq!(fjord, EXPECTED);
}

/// What ShareGroupDescribe tells of a group: epochs and each member's
/// (id, epoch, partitions).
type View = (i32, i32, Vec<(String, i32, Vec<i32>)>);

fn view(c: &mut RawConn, group: &str) -> (i16, View) {
    let d = share_describe(c, group);
    let mut members: Vec<(String, i32, Vec<i32>)> = d
        .members
        .iter()
        .map(|m| {
            let mut p: Vec<i32> = m
                .assignment
                .topic_partitions
                .iter()
                .flat_map(|t| t.partitions.clone())
                .collect();
            p.sort();
            (m.member_id.to_string(), m.member_epoch, p)
        })
        .collect();
    members.sort();
    (d.error_code, (d.group_epoch, d.assignment_epoch, members))
}

/// Fjord restarted keeps a share group from its `__consumer_offsets`
/// records: the group epoch, the members with their epochs and partitions;
/// a member heartbeats at its epoch without a bump, and a member silent
/// since the restart is fenced when its session (restarted at the load)
/// ends.
#[test]
fn a_restart_keeps_the_share_group() {
    let mut broker = Broker::start_with(SETTINGS);
    let addr = broker.bootstrap();
    let (topic, group) = ("sgr-topic", "sgr-group");
    enable_share(&addr);
    create_topic(&addr, topic);
    let mut c = RawConn::new(&addr);
    find_coordinator(&mut c, group);
    let mut members = BTreeMap::new();
    for id in ["member-a-0000000000000", "member-b-0000000000000"] {
        let r = until_served("join", || {
            let r = heartbeat(&mut c, group, id, 0, Some(&[topic]));
            (r.error_code, r)
        });
        members.insert(
            id.to_string(),
            Seen {
                epoch: r.member_epoch,
                partitions: answered(&r).unwrap_or_default(),
            },
        );
    }
    settle(&mut c, group, &mut members, "balanced", balanced);
    let (_, before) = view(&mut c, group);
    broker.restart();
    let addr = broker.bootstrap();
    let mut c = RawConn::new(&addr);
    find_coordinator(&mut c, group);
    let after = until_served("describe after the restart", || view(&mut c, group));
    assert_eq!(after, before, "the group as loaded");
    let a = &members["member-a-0000000000000"];
    let r = heartbeat(&mut c, group, "member-a-0000000000000", a.epoch, None);
    assert_eq!((r.error_code, r.member_epoch), (0, a.epoch), "{r:?}");
    // b stays silent: fenced when its session (3 s from the load) ends.
    members.remove("member-b-0000000000000");
    let deadline = Instant::now() + SETTLE;
    loop {
        settle(&mut c, group, &mut members, "a heartbeats", |_| true);
        let (_, (epoch, _, left)) = view(&mut c, group);
        if left.len() == 1 {
            assert!(epoch > before.0, "the fence bumps the epoch");
            break;
        }
        assert!(Instant::now() < deadline, "b is not fenced");
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// While `share.version` is below 1 (downgraded to 0, on Fjord as on
/// Kafka 4.4) both share group APIs answer UNSUPPORTED_VERSION.
#[test]
fn share_groups_are_off_below_share_version_1() {
    let off = |addr: &str| {
        let mut c = RawConn::new(addr);
        let r = heartbeat(
            &mut c,
            "sgo-group",
            "member-a-0000000000000",
            0,
            Some(&["t"]),
        );
        let d = share_describe(&mut c, "sgo-group");
        vec![
            format!("heartbeat: {} {:?}", r.error_code, r.error_message),
            format!("describe: {} {:?}", d.error_code, d.error_message),
        ]
    };
    let want = ["heartbeat: 35 None", "describe: 35 None"];
    let downgraded = |addr: &str, who: &str| {
        let mut c = RawConn::new(addr);
        let r = c.call(
            1,
            &kp::UpdateFeaturesRequest::default()
                .with_timeout_ms(30_000)
                .with_feature_updates(vec![FeatureUpdateKey::default()
                    .with_feature(s("share.version"))
                    .with_max_version_level(0)
                    .with_upgrade_type(2)]),
        );
        assert_eq!(r.error_code, 0, "{who}: downgrade: {r:?}");
        let deadline = Instant::now() + SETTLE;
        loop {
            let got = off(addr);
            if got == want {
                break;
            }
            assert!(Instant::now() < deadline, "{who}: {got:?}");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let broker = Broker::start_with(SETTINGS);
    downgraded(&broker.bootstrap(), "Fjord");
    drop(broker);
    if let Some(peer) = KafkaPeer::start(SETTINGS) {
        downgraded(&peer.addr, "Kafka");
    }
}

/// DescribeConfigs v4 of the share keys of group `group`: name, value,
/// source, type and synonyms.
fn describe_share_configs(c: &mut RawConn, group: &str) -> Vec<String> {
    let keys = [
        "share.auto.offset.reset",
        "share.delivery.count.limit",
        "share.heartbeat.interval.ms",
        "share.isolation.level",
        "share.record.lock.duration.ms",
        "share.session.timeout.ms",
    ];
    let r = c.call(
        4,
        &kp::DescribeConfigsRequest::default()
            .with_include_synonyms(true)
            .with_resources(vec![
                kp::describe_configs_request::DescribeConfigsResource::default()
                    .with_resource_type(32)
                    .with_resource_name(s(group))
                    .with_configuration_keys(Some(keys.iter().map(|x| s(x)).collect())),
            ]),
    );
    let res = &r.results[0];
    let mut out: Vec<String> = res
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
    out.sort();
    out.insert(0, format!("DescribeConfigs: {}", res.error_code));
    out
}

/// IncrementalAlterConfigs v1 setting `key` to `value` on group `group`.
fn set_group_config(c: &mut RawConn, group: &str, key: &str, value: &str) -> String {
    let r = c.call(
        1,
        &kp::IncrementalAlterConfigsRequest::default().with_resources(vec![
            kp::incremental_alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(32)
                .with_resource_name(s(group))
                .with_configs(vec![
                    kp::incremental_alter_configs_request::AlterableConfig::default()
                        .with_name(s(key))
                        .with_config_operation(0)
                        .with_value(Some(s(value))),
                ]),
        ]),
    );
    let res = &r.responses[0];
    format!(
        "{key}={value}: {} {:?}",
        res.error_code,
        res.error_message.as_ref().map(|m| m.to_string())
    )
}

/// The share group configs of the GROUP resource: their defaults as
/// DescribeConfigs shows them, Kafka's checks, and an override in force.
fn share_group_configs(addr: &str) -> Vec<String> {
    let group = "sgc-group";
    let mut c = RawConn::new(addr);
    let mut out = describe_share_configs(&mut c, group);
    for (k, v) in [
        ("share.session.timeout.ms", "1000"),
        ("share.delivery.count.limit", "1"),
        ("share.delivery.count.limit", "11"),
        ("share.record.lock.duration.ms", "abc"),
        ("share.auto.offset.reset", "EARLIEST"),
        ("share.auto.offset.reset", "by_duration:PT-1H"),
        ("share.isolation.level", "none"),
        ("share.auto.offset.reset", "by_duration:PT1H"),
        ("share.isolation.level", "read_committed"),
        ("share.delivery.count.limit", "3"),
    ] {
        out.push(set_group_config(&mut c, group, k, v));
    }
    let deadline = Instant::now() + SETTLE;
    loop {
        let now = describe_share_configs(&mut c, group);
        // The last override set shows once every one before it does.
        if now
            .iter()
            .any(|l| l.starts_with("share.delivery.count.limit=Some(\"3\")"))
        {
            out.extend(now);
            break;
        }
        assert!(Instant::now() < deadline, "the overrides do not show");
        std::thread::sleep(Duration::from_millis(200));
    }
    out
}

/// The share group configs answer on Fjord as on Kafka 4.4.
#[test]
fn share_group_configs_answer_as_kafka() {
    let broker = Broker::start();
    let fjord = share_group_configs(&broker.bootstrap());
    eprintln!("Fjord: {fjord:#?}");
    drop(broker);
    if let Some(peer) = KafkaPeer::start(&[]) {
        let kafka = share_group_configs(&peer.addr);
        eprintln!("Kafka: {kafka:#?}");
        assert_eq!(fjord, kafka, "Fjord's and Kafka's answers differ");
    }
}
