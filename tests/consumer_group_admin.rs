//! The admin APIs on consumer groups (KIP-848), on Fjord and on Apache
//! Kafka 4.4 with the same code: DescribeGroups of a consumer group (per
//! request version), ListGroups with type and state filters, OffsetDelete
//! (GROUP_SUBSCRIBED_TO_TOPIC while a member subscribes the topic),
//! DeleteGroups (NON_EMPTY_GROUP with members; an empty group's records
//! are tombstoned as Kafka tombstones them, keys compared byte for byte,
//! so a restart does not bring it back), group configs (DescribeConfigs,
//! IncrementalAlterConfigs, `kafka-configs`), and Kafka's own
//! `kafka-consumer-groups` tool on a group made by librdkafka's KIP-848
//! consumer.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
#[path = "consumer_group_admin/configs.rs"]
mod configs;

use std::time::{Duration, Instant};

use common::kafka_peer::KafkaPeer;
use common::raw::RawConn;
use common::*;
use kafka_protocol::messages as kp;
use kafka_protocol::protocol::StrBytes;

/// Deadline of anything that waits for a broker.
const SETTLE: Duration = Duration::from_secs(60);

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// Heartbeats every second instead of every five (Kafka needs its minimum
/// lowered for that), on both brokers.
const FAST: &[&str] = &[
    "group.consumer.min.heartbeat.interval.ms=1000",
    "group.consumer.heartbeat.interval.ms=1000",
    "offsets.topic.num.partitions=3",
];

/// Runs `scenario` on Fjord and, when installed, on Kafka 4.4 with the same
/// settings; both traces must be `expected`.
fn on_both(scenario: fn(&str) -> Vec<String>, expected: &[&str]) {
    on_both_with(FAST, scenario, expected);
}

/// [`on_both`] with `settings` on both brokers.
fn on_both_with(settings: &[&str], scenario: fn(&str) -> Vec<String>, expected: &[&str]) {
    let broker = Broker::start_with(settings);
    let fjord = scenario(&broker.bootstrap());
    eprintln!("Fjord: {fjord:#?}");
    if let Some(peer) = KafkaPeer::start(settings) {
        let kafka = scenario(&peer.addr);
        eprintln!("Kafka: {kafka:#?}");
        assert_eq!(kafka, expected, "Kafka's trace differs");
    }
    assert_eq!(fjord, expected);
}

/// Repeats `call` until it gives error 0 (the coordinator loading its
/// partition answers retriable codes); gives the answer.
fn until_served<R: std::fmt::Debug>(what: &str, mut call: impl FnMut() -> (i16, R)) -> R {
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

/// FindCoordinator for `group` until it is answered.
fn find_coordinator(c: &mut RawConn, group: &str) {
    until_served("FindCoordinator", || {
        let r = c.call(
            4,
            &kp::FindCoordinatorRequest::default().with_coordinator_keys(vec![s(group)]),
        );
        (r.coordinators[0].error_code, ())
    });
}

/// An OffsetCommit without a member (the admin client's) of `offset` for
/// partition 0 of each of `topics`; gives the codes.
fn commit(c: &mut RawConn, group: &str, topics: &[&str], offset: i64) -> Vec<i16> {
    let req = kp::OffsetCommitRequest::default()
        .with_group_id(s(group).into())
        .with_generation_id_or_member_epoch(-1)
        .with_topics(
            topics
                .iter()
                .map(|t| {
                    kp::offset_commit_request::OffsetCommitRequestTopic::default()
                        .with_name(s(t).into())
                        .with_partitions(vec![
                            kp::offset_commit_request::OffsetCommitRequestPartition::default()
                                .with_partition_index(0)
                                .with_committed_offset(offset),
                        ])
                })
                .collect(),
        );
    let r = c.call(8, &req);
    r.topics
        .iter()
        .map(|t| t.partitions[0].error_code)
        .collect()
}

/// The committed offsets of partition 0 of `topics` (OffsetFetch v7).
fn committed(c: &mut RawConn, group: &str, topics: &[&str]) -> Vec<i64> {
    offset_fetch(c, group, topics).1
}

/// OffsetFetch v7 of partition 0 of `topics`: the group-level error code
/// (COORDINATOR_LOAD_IN_PROGRESS while loading) and the offsets.
fn offset_fetch(c: &mut RawConn, group: &str, topics: &[&str]) -> (i16, Vec<i64>) {
    let req = kp::OffsetFetchRequest::default()
        .with_group_id(s(group).into())
        .with_topics(Some(
            topics
                .iter()
                .map(|t| {
                    kp::offset_fetch_request::OffsetFetchRequestTopic::default()
                        .with_name(s(t).into())
                        .with_partition_indexes(vec![0])
                })
                .collect(),
        ));
    let r = c.call(7, &req);
    let offsets = r
        .topics
        .iter()
        .map(|t| t.partitions[0].committed_offset)
        .collect();
    (r.error_code, offsets)
}

/// DescribeGroups of `group` at every version: code, message, state,
/// protocol type, protocol and member count.
fn describe_all_versions(c: &mut RawConn, group: &str, out: &mut Vec<String>, what: &str) {
    for v in 0..=6 {
        let r = c.call(
            v,
            &kp::DescribeGroupsRequest::default().with_groups(vec![s(group).into()]),
        );
        let g = &r.groups[0];
        out.push(format!(
            "{what} DescribeGroups v{v}: {} {:?} state {:?} type {:?} protocol {:?} members {}",
            g.error_code,
            g.error_message.as_ref().map(|m| m.to_string()),
            g.group_state.to_string(),
            g.protocol_type.to_string(),
            g.protocol_data.to_string(),
            g.members.len()
        ));
    }
}

/// ListGroups v5 with filters: the groups named `prefix*` with their type,
/// protocol type and state.
fn list(c: &mut RawConn, prefix: &str, states: &[&str], types: &[&str]) -> String {
    let r = until_served("ListGroups", || {
        let r = c.call(
            5,
            &kp::ListGroupsRequest::default()
                .with_states_filter(states.iter().map(|x| s(x)).collect())
                .with_types_filter(types.iter().map(|x| s(x)).collect()),
        );
        (r.error_code, r)
    });
    let mut found: Vec<String> = r
        .groups
        .iter()
        .filter(|g| g.group_id.0.starts_with(prefix))
        .map(|g| {
            format!(
                "{} {} {:?} {}",
                g.group_id.0, g.group_type, g.protocol_type, g.group_state
            )
        })
        .collect();
    found.sort();
    format!("ListGroups {states:?} {types:?}: {found:?}")
}

/// OffsetDelete of partition 0 of `topics`: the group's code and each
/// partition's.
fn offset_delete(c: &mut RawConn, group: &str, topics: &[&str]) -> String {
    let req = kp::OffsetDeleteRequest::default()
        .with_group_id(s(group).into())
        .with_topics(
            topics
                .iter()
                .map(|t| {
                    kp::offset_delete_request::OffsetDeleteRequestTopic::default()
                        .with_name(s(t).into())
                        .with_partitions(vec![
                            kp::offset_delete_request::OffsetDeleteRequestPartition::default()
                                .with_partition_index(0),
                        ])
                })
                .collect(),
        );
    let r = c.call(0, &req);
    let mut parts: Vec<String> = r
        .topics
        .iter()
        .map(|t| format!("{}={}", t.name.0, t.partitions[0].error_code))
        .collect();
    parts.sort();
    format!("OffsetDelete: {} {parts:?}", r.error_code)
}

/// DeleteGroups v2 of `group`: its code.
fn delete(c: &mut RawConn, group: &str) -> i16 {
    let r = c.call(
        2,
        &kp::DeleteGroupsRequest::default().with_groups_names(vec![s(group).into()]),
    );
    r.results[0].error_code
}

/// A raw consumer group member of `group` subscribed to `topic` joins;
/// gives its epoch.
fn join(c: &mut RawConn, group: &str, member_id: &str, topic: &str) -> i32 {
    let r = until_served("join", || {
        let r = c.call(
            1,
            &kp::ConsumerGroupHeartbeatRequest::default()
                .with_group_id(s(group).into())
                .with_member_id(s(member_id))
                .with_member_epoch(0)
                .with_rebalance_timeout_ms(30_000)
                .with_subscribed_topic_names(Some(vec![s(topic).into()]))
                .with_topic_partitions(Some(vec![])),
        );
        (r.error_code, r)
    });
    r.member_epoch
}

/// The member leaves (epoch -1); gives the code.
fn leave(c: &mut RawConn, group: &str, member_id: &str) -> i16 {
    let r = c.call(
        1,
        &kp::ConsumerGroupHeartbeatRequest::default()
            .with_group_id(s(group).into())
            .with_member_id(s(member_id))
            .with_member_epoch(-1)
            .with_rebalance_timeout_ms(-1),
    );
    r.error_code
}

/// Kafka's partition of a group id in `__consumer_offsets` (3 partitions
/// here): `abs(String.hashCode(id)) % 3`.
fn offsets_partition(group: &str) -> i32 {
    let mut h: i32 = 0;
    for unit in group.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(i32::from(unit));
    }
    (if h == i32::MIN { 0 } else { h.abs() }) % 3
}

/// The records a DeleteGroups of `group` appended: those of its
/// `__consumer_offsets` partition after the last offset commit (key
/// version 1 with a value), each as its key version, whether it is a
/// tombstone, and its key bytes in hex.
fn delete_records(addr: &str, group: &str) -> Vec<(i16, bool, String)> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::message::Message;
    let p = offsets_partition(group);
    let reader: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", addr)
        .set("broker.address.family", "v4")
        .set("group.id", "cga-reader")
        .set("enable.auto.commit", "false")
        .create()
        .expect("reader");
    let (_, high) = reader
        .fetch_watermarks("__consumer_offsets", p, Duration::from_secs(10))
        .expect("watermarks");
    assign(
        &reader,
        "__consumer_offsets",
        &[p],
        rdkafka::Offset::Beginning,
    );
    let mut all: Vec<(i16, bool, Vec<u8>)> = Vec::new();
    let deadline = Instant::now() + SETTLE;
    let mut next = 0;
    while next < high {
        assert!(Instant::now() < deadline, "read {next} of {high}");
        if let Some(Ok(m)) = reader.poll(Duration::from_millis(100)) {
            next = m.offset() + 1;
            let key = m.key().unwrap_or_default().to_vec();
            if key.len() < 4 {
                continue;
            }
            let version = i16::from_be_bytes([key[0], key[1]]);
            let len = usize::from(u16::from_be_bytes([key[2], key[3]]));
            if key.get(4..4 + len) == Some(group.as_bytes()) {
                all.push((version, m.payload().is_none(), key));
            }
        }
    }
    let last_commit = all
        .iter()
        .rposition(|(v, t, _)| *v == 1 && !*t)
        .map_or(0, |i| i + 1);
    all[last_commit..]
        .iter()
        .map(|(v, t, k)| (*v, *t, k.iter().map(|b| format!("{b:02x}")).collect()))
        .collect()
}

/// The admin requests on a consumer group with a member and once empty.
fn admin_answers(addr: &str) -> Vec<String> {
    let group = "cga-group";
    let (subscribed, other) = ("cga-sub", "cga-other");
    let member = "m-1-aaaaaaaaaaaaaaaaaaaa";
    let mut c = RawConn::new(addr);
    let mut out = Vec::new();
    create_topic(&mut c, subscribed, 2);
    create_topic(&mut c, other, 1);
    find_coordinator(&mut c, group);
    // Offsets first (an empty classic group), then a consumer group
    // replaces it and keeps them.
    let codes = until_served("commit", || {
        let codes = commit(&mut c, group, &[subscribed, other], 5);
        (codes.iter().copied().find(|c| *c != 0).unwrap_or(0), codes)
    });
    out.push(format!("commit: {codes:?}"));
    out.push(format!(
        "join: epoch {}",
        join(&mut c, group, member, subscribed)
    ));
    describe_all_versions(&mut c, group, &mut out, "member");
    out.push(list(&mut c, "cga-", &[], &[]));
    out.push(list(&mut c, "cga-", &[], &["consumer"]));
    out.push(list(&mut c, "cga-", &[], &["classic"]));
    out.push(list(&mut c, "cga-", &["stable"], &[]));
    out.push(list(&mut c, "cga-", &["Empty"], &["consumer"]));
    out.push(offset_delete(&mut c, group, &[subscribed, other]));
    out.push(format!(
        "committed: {:?}",
        committed(&mut c, group, &[subscribed, other])
    ));
    out.push(format!("delete with a member: {}", delete(&mut c, group)));
    out.push(format!("leave: {}", leave(&mut c, group, member)));
    describe_all_versions(&mut c, group, &mut out, "empty");
    out.push(list(&mut c, "cga-", &["Empty"], &["consumer"]));
    out.push(offset_delete(&mut c, group, &[subscribed]));
    out.push(format!(
        "commit again: {:?}",
        commit(&mut c, group, &[subscribed], 7)
    ));
    out.push(format!("delete empty: {}", delete(&mut c, group)));
    out.push(format!("delete wrote: {:?}", delete_records(addr, group)));
    out.push(format!("delete again: {}", delete(&mut c, group)));
    out.push(format!(
        "committed: {:?}",
        committed(&mut c, group, &[subscribed, other])
    ));
    out.push(list(&mut c, "cga-", &[], &[]));
    let r = c.call(
        1,
        &kp::ConsumerGroupDescribeRequest::default().with_group_ids(vec![s(group).into()]),
    );
    out.push(format!(
        "ConsumerGroupDescribe: {} {:?}",
        r.groups[0].error_code,
        r.groups[0].error_message.as_ref().map(|m| m.to_string())
    ));
    out
}

const EXPECTED_ADMIN: &[&str] = &[
    "commit: [0, 0]",
    "join: epoch 2",
    "member DescribeGroups v0: 0 None state \"Dead\" type \"\" protocol \"\" members 0",
    "member DescribeGroups v1: 0 None state \"Dead\" type \"\" protocol \"\" members 0",
    "member DescribeGroups v2: 0 None state \"Dead\" type \"\" protocol \"\" members 0",
    "member DescribeGroups v3: 0 None state \"Dead\" type \"\" protocol \"\" members 0",
    "member DescribeGroups v4: 0 None state \"Dead\" type \"\" protocol \"\" members 0",
    "member DescribeGroups v5: 0 None state \"Dead\" type \"\" protocol \"\" members 0",
    "member DescribeGroups v6: 69 Some(\"Group cga-group is not a classic group.\") state \"Dead\" type \"\" protocol \"\" members 0",
    "ListGroups [] []: [\"cga-group consumer \\\"consumer\\\" Stable\"]",
    "ListGroups [] [\"consumer\"]: [\"cga-group consumer \\\"consumer\\\" Stable\"]",
    "ListGroups [] [\"classic\"]: []",
    "ListGroups [\"stable\"] []: [\"cga-group consumer \\\"consumer\\\" Stable\"]",
    "ListGroups [\"Empty\"] [\"consumer\"]: []",
    "OffsetDelete: 0 [\"cga-other=0\", \"cga-sub=86\"]",
    "committed: [5, -1]",
    "delete with a member: 68",
    "leave: 0",
    "empty DescribeGroups v0: 0 None state \"Dead\" type \"\" protocol \"\" members 0",
    "empty DescribeGroups v1: 0 None state \"Dead\" type \"\" protocol \"\" members 0",
    "empty DescribeGroups v2: 0 None state \"Dead\" type \"\" protocol \"\" members 0",
    "empty DescribeGroups v3: 0 None state \"Dead\" type \"\" protocol \"\" members 0",
    "empty DescribeGroups v4: 0 None state \"Dead\" type \"\" protocol \"\" members 0",
    "empty DescribeGroups v5: 0 None state \"Dead\" type \"\" protocol \"\" members 0",
    "empty DescribeGroups v6: 69 Some(\"Group cga-group is not a classic group.\") state \"Dead\" type \"\" protocol \"\" members 0",
    "ListGroups [\"Empty\"] [\"consumer\"]: [\"cga-group consumer \\\"consumer\\\" Empty\"]",
    "OffsetDelete: 0 [\"cga-sub=0\"]",
    "commit again: [0]",
    "delete empty: 0",
    r#"delete wrote: [(1, true, "000100096367612d67726f757000076367612d73756200000000"), (6, true, "000600096367612d67726f7570"), (4, true, "000400096367612d67726f7570"), (3, true, "000300096367612d67726f7570")]"#,
    "delete again: 69",
    "committed: [-1, -1]",
    "ListGroups [] []: []",
    "ConsumerGroupDescribe: 69 Some(\"Group cga-group not found.\")",
];

#[test]
fn admin_requests_on_a_consumer_group_answer_as_kafka() {
    on_both(admin_answers, EXPECTED_ADMIN);
}

/// Kafka's `kafka-consumer-groups` with `args` against `addr`: its output
/// (stdout then stderr), whitespace runs made one space, the broker's
/// address and the members' ids (`members`) replaced by names.
fn consumer_groups_tool(addr: &str, args: &[&str], members: &[String]) -> String {
    let out = std::process::Command::new(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/peers/kafka"),
    )
    .args(["tool", "kafka-consumer-groups", "--bootstrap-server", addr])
    .args(args)
    .output()
    .expect("run scripts/peers/kafka tool");
    let mut text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for (i, m) in members.iter().enumerate() {
        text = text.replace(m.as_str(), &format!("MEMBER{i}"));
    }
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("WARN") && !l.starts_with('\t'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .map(|l| l.replace(addr, "BROKER"))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The member ids of consumer group `group` (ConsumerGroupDescribe).
fn member_ids(c: &mut RawConn, group: &str) -> Vec<String> {
    let r = c.call(
        0,
        &kp::ConsumerGroupDescribeRequest::default().with_group_ids(vec![s(group).into()]),
    );
    r.groups[0]
        .members
        .iter()
        .map(|m| m.member_id.to_string())
        .collect()
}

/// Kafka's `kafka-consumer-groups` on a group of librdkafka's KIP-848
/// consumer: describe (members, offsets, state) while it reads; reset,
/// delete-offsets and delete refused while it is a member, allowed once it
/// left.
fn tool_on_consumer_group(addr: &str) -> Vec<String> {
    use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let (topic, group) = ("cga-tool", "cga-tool-group");
    let mut c = RawConn::new(addr);
    create_topic(&mut c, topic, 2);
    let producer: BaseProducer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", addr)
        .set("broker.address.family", "v4")
        .create()
        .expect("producer");
    for p in 0..2 {
        for i in 0..5 {
            let v = format!("{p}-{i}");
            producer
                .send(BaseRecord::<(), _>::to(topic).partition(p).payload(&v))
                .expect("enqueue");
        }
    }
    producer.flush(Duration::from_secs(30)).expect("flush");
    let consumer: BaseConsumer =
        group_client_config(addr, group, &[("group.protocol", "consumer")])
            .remove("session.timeout.ms")
            .remove("heartbeat.interval.ms")
            .create()
            .expect("consumer");
    consumer.subscribe(&[topic]).expect("subscribe");
    let got = consume_n(&consumer, 10, SETTLE);
    assert_eq!(got.len(), 10);
    consumer
        .commit_consumer_state(CommitMode::Sync)
        .expect("commit");
    let members = member_ids(&mut c, group);
    let mut out = vec![format!("members: {}", members.len())];
    for args in [
        &["--describe", "--group", group, "--members"][..],
        &["--describe", "--group", group, "--offsets"][..],
        &["--describe", "--group", group, "--state"][..],
        &["--list", "--type", "consumer"][..],
        &[
            "--reset-offsets",
            "--group",
            group,
            "--topic",
            topic,
            "--to-earliest",
            "--execute",
        ][..],
        &["--delete-offsets", "--group", group, "--topic", topic][..],
        &["--delete", "--group", group][..],
    ] {
        out.push(format!(
            "{args:?}: {}",
            consumer_groups_tool(addr, args, &members)
        ));
    }
    drop(consumer);
    let partition_1 = format!("{topic}:1");
    // The member left when it closed.
    wait_for(SETTLE, "the group empties", || {
        member_ids(&mut c, group).is_empty()
    });
    for args in [
        &["--describe", "--group", group, "--state"][..],
        &[
            "--reset-offsets",
            "--group",
            group,
            "--topic",
            topic,
            "--to-offset",
            "2",
            "--execute",
        ][..],
        &["--describe", "--group", group, "--offsets"][..],
        &[
            "--delete-offsets",
            "--group",
            group,
            "--topic",
            &partition_1,
        ][..],
        &["--describe", "--group", group, "--offsets"][..],
        &["--delete", "--group", group][..],
        &["--list"][..],
    ] {
        out.push(format!(
            "{args:?}: {}",
            consumer_groups_tool(addr, args, &members)
        ));
    }
    out
}

const EXPECTED_TOOL: &[&str] = &[
    r#"members: 1"#,
    r#"["--describe", "--group", "cga-tool-group", "--members"]: GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS | cga-tool-group MEMBER0 /127.0.0.1 rdkafka 2"#,
    r#"["--describe", "--group", "cga-tool-group", "--offsets"]: GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID | cga-tool-group cga-tool 0 5 5 0 MEMBER0 /127.0.0.1 rdkafka | cga-tool-group cga-tool 1 5 5 0 MEMBER0 /127.0.0.1 rdkafka"#,
    r#"["--describe", "--group", "cga-tool-group", "--state"]: GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS | cga-tool-group BROKER (1) uniform Stable 1"#,
    r#"["--list", "--type", "consumer"]: GROUP TYPE | cga-tool-group Consumer"#,
    r#"["--reset-offsets", "--group", "cga-tool-group", "--topic", "cga-tool", "--to-earliest", "--execute"]: Error: Assignments can only be reset if the group 'cga-tool-group' is inactive, but the current state is Stable. | GROUP TOPIC PARTITION NEW-OFFSET"#,
    r#"["--delete-offsets", "--group", "cga-tool-group", "--topic", "cga-tool"]: Error: Encountered some partition-level error, see the follow-up details. | TOPIC PARTITION STATUS | cga-tool 0 Error: org.apache.kafka.common.errors.GroupSubscribedToTopicException: Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it. | cga-tool 1 Error: org.apache.kafka.common.errors.GroupSubscribedToTopicException: Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it."#,
    r#"["--delete", "--group", "cga-tool-group"]: Error: Deletion of some consumer groups failed: | * Group 'cga-tool-group' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty."#,
    r#"["--describe", "--group", "cga-tool-group", "--state"]: GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS | cga-tool-group BROKER (1) uniform Empty 0 | Consumer group 'cga-tool-group' has no active members."#,
    r#"["--reset-offsets", "--group", "cga-tool-group", "--topic", "cga-tool", "--to-offset", "2", "--execute"]: GROUP TOPIC PARTITION NEW-OFFSET | cga-tool-group cga-tool 1 2 | cga-tool-group cga-tool 0 2"#,
    r#"["--describe", "--group", "cga-tool-group", "--offsets"]: GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID | cga-tool-group cga-tool 0 2 5 3 - - - | cga-tool-group cga-tool 1 2 5 3 - - - | Consumer group 'cga-tool-group' has no active members."#,
    r#"["--delete-offsets", "--group", "cga-tool-group", "--topic", "cga-tool:1"]: Request succeeded for deleting offsets from group cga-tool-group. | TOPIC PARTITION STATUS | cga-tool 1 Successful"#,
    r#"["--describe", "--group", "cga-tool-group", "--offsets"]: GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID | cga-tool-group cga-tool 0 2 5 3 - - - | Consumer group 'cga-tool-group' has no active members."#,
    r#"["--delete", "--group", "cga-tool-group"]: Deletion of requested consumer groups ('cga-tool-group') was successful."#,
    r#"["--list"]: "#,
];

#[test]
fn kafka_consumer_groups_tool_on_a_consumer_group_as_on_kafka() {
    on_both(tool_on_consumer_group, EXPECTED_TOOL);
}

/// A deleted consumer group stays deleted after a restart: its offsets and
/// records were tombstoned, so loading `__consumer_offsets` again does not
/// bring it back, while an empty consumer group left alone comes back.
/// (Fjord only: the Kafka peer is not restarted by these tests.)
#[test]
fn a_deleted_consumer_group_does_not_come_back_after_a_restart() {
    let mut broker = Broker::start_with(FAST);
    let addr = broker.bootstrap();
    let topic = "cga-restart";
    let (deleted, kept) = ("cga-restart-deleted", "cga-restart-kept");
    let mut c = RawConn::new(&addr);
    create_topic(&mut c, topic, 1);
    for (group, member) in [
        (deleted, "m-d-dddddddddddddddddddd"),
        (kept, "m-k-kkkkkkkkkkkkkkkkkkkk"),
    ] {
        find_coordinator(&mut c, group);
        join(&mut c, group, member, topic);
        assert_eq!(
            commit(&mut c, group, &[topic], 3),
            vec![25],
            "a commit without the member"
        );
        assert_eq!(leave(&mut c, group, member), 0);
        assert_eq!(commit(&mut c, group, &[topic], 3), vec![0]);
    }
    assert_eq!(delete(&mut c, deleted), 0);
    broker.restart();
    let mut c = RawConn::new(&broker.bootstrap());
    find_coordinator(&mut c, deleted);
    find_coordinator(&mut c, kept);
    assert_eq!(
        list(&mut c, "cga-restart", &[], &[]),
        r#"ListGroups [] []: ["cga-restart-kept consumer \"consumer\" Empty"]"#
    );
    let r = until_served("ConsumerGroupDescribe", || {
        let r = c.call(
            1,
            &kp::ConsumerGroupDescribeRequest::default()
                .with_group_ids(vec![s(deleted).into(), s(kept).into()]),
        );
        let code = r
            .groups
            .iter()
            .map(|g| g.error_code)
            .find(|c| matches!(c, 14..=16));
        (code.unwrap_or(0), r)
    });
    let codes: Vec<(String, i16)> = r
        .groups
        .iter()
        .map(|g| (g.group_id.to_string(), g.error_code))
        .collect();
    assert!(codes.contains(&(deleted.to_string(), 69)), "{codes:?}");
    assert!(codes.contains(&(kept.to_string(), 0)), "{codes:?}");
    assert_eq!(committed(&mut c, deleted, &[topic]), vec![-1]);
    assert_eq!(committed(&mut c, kept, &[topic]), vec![3]);
    assert_eq!(delete(&mut c, deleted), 69);
}

/// A group's committed offset of a topic, the topic deleted, then created
/// again under the same name: the offset goes with the topic (Kafka's
/// `onPartitionsDeleted` tombstones it in every group), so a consumer of
/// the new topic starts from its reset policy, not from the old position.
fn deleted_topic_answers(addr: &str) -> Vec<String> {
    let (group, topic) = ("cga-deleted-topic-group", "cga-deleted-topic");
    let mut c = RawConn::new(addr);
    let mut out = Vec::new();
    create_topic(&mut c, topic, 1);
    find_coordinator(&mut c, group);
    let codes = until_served("OffsetCommit", || {
        let r = commit(&mut c, group, &[topic], 3);
        (r[0], r)
    });
    out.push(format!("commit: {codes:?}"));
    out.push(format!(
        "committed: {:?}",
        committed(&mut c, group, &[topic])
    ));
    let req = kp::DeleteTopicsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(vec![
            kp::delete_topics_request::DeleteTopicState::default().with_name(Some(s(topic).into()))
        ]);
    let r = c.call(6, &req);
    out.push(format!("DeleteTopics: {}", r.responses[0].error_code));
    // The tombstone follows the deletion's metadata record: wait for it.
    let deadline = Instant::now() + SETTLE;
    loop {
        let now = committed(&mut c, group, &[topic]);
        if now == [-1] {
            out.push(format!("committed after the deletion: {now:?}"));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "offset kept after the deletion: {now:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Created again (a deletion may take a moment to finish: retried).
    let deadline = Instant::now() + SETTLE;
    loop {
        let req = kp::CreateTopicsRequest::default()
            .with_timeout_ms(10_000)
            .with_topics(vec![kp::create_topics_request::CreatableTopic::default()
                .with_name(s(topic).into())
                .with_num_partitions(1)
                .with_replication_factor(1)]);
        let code = c.call(7, &req).topics[0].error_code;
        if code == 0 {
            break;
        }
        assert!(
            code == 36 && Instant::now() < deadline,
            "CreateTopics again: {code}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    out.push(format!(
        "committed after creating it again: {:?}",
        committed(&mut c, group, &[topic])
    ));
    out
}

const EXPECTED_DELETED_TOPIC: &[&str] = &[
    "commit: [0]",
    "committed: [3]",
    "DeleteTopics: 0",
    "committed after the deletion: [-1]",
    "committed after creating it again: [-1]",
];

#[test]
fn a_deleted_topics_offsets_go_with_it_as_on_kafka() {
    on_both(deleted_topic_answers, EXPECTED_DELETED_TOPIC);
}

/// The same on Fjord across a restart: the tombstones are in
/// `__consumer_offsets`, so the offset does not come back when the log is
/// loaded again.
#[test]
fn a_deleted_topics_offsets_stay_gone_after_a_restart() {
    let mut broker = Broker::start_with(FAST);
    let trace = deleted_topic_answers(&broker.bootstrap());
    assert_eq!(trace, EXPECTED_DELETED_TOPIC);
    let mut c = RawConn::new(&broker.bootstrap());
    // Once the group's partition is loaded (a loading coordinator answers
    // OffsetFetch with COORDINATOR_LOAD_IN_PROGRESS), the offset is still
    // gone, while the same group's offset of a live topic, committed after it,
    // is there (the load did read the log).
    create_topic(&mut c, "cga-live-topic", 1);
    let codes = until_served("OffsetCommit", || {
        let r = commit(&mut c, "cga-deleted-topic-group", &["cga-live-topic"], 5);
        (r[0], r)
    });
    assert_eq!(codes, [0]);
    broker.restart();
    let mut c = RawConn::new(&broker.bootstrap());
    find_coordinator(&mut c, "cga-deleted-topic-group");
    let after = until_served("OffsetFetch", || {
        offset_fetch(
            &mut c,
            "cga-deleted-topic-group",
            &["cga-deleted-topic", "cga-live-topic"],
        )
    });
    assert_eq!(after, [-1, 5]);
}
