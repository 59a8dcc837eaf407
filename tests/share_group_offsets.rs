//! A share group's offsets for operators (KIP-932) with raw frames, the same
//! cases on Fjord (share.version=1 finalized with UpdateFeatures) and on
//! Apache Kafka 4.4: DescribeShareGroupOffsets (with and without topics,
//! groups that do not exist or are of another type), AlterShareGroupOffsets
//! and DeleteShareGroupOffsets (empty group only; the next member starts
//! where the alter says, or from `share.auto.offset.reset` after a delete),
//! and DeleteGroups of a share group deleting its state, so the group
//! created again under the same id starts over.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
// Not every helper of the shared frames is used here.
#[path = "share_fetch/cluster.rs"]
mod cluster;
#[allow(dead_code)]
#[path = "share_fetch/wire.rs"]
mod wire;

use std::time::{Duration, Instant};

use cluster::*;
use common::cluster::Cluster;
use common::layout::wait_topic;
use common::raw::RawConn as Conn;
use common::*;
use kafka_protocol::messages::*;
use uuid::Uuid;
use wire::*;

const ACCEPT: i8 = 1;
const NON_EMPTY_GROUP: i16 = 68;
const GROUP_ID_NOT_FOUND: i16 = 69;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const NOT_HOSTED: &str = "This server does not host this topic-partition.";

/// (topic name, topic id, [(partition, start offset, leader epoch, code)]).
type Described = Vec<(String, Uuid, Vec<(i32, i64, i32, i16)>)>;

/// DescribeShareGroupOffsets v0 of one group: its code and topics.
fn describe(t: &Target, group: &str, topics: Option<&[(&str, &[i32])]>) -> (i16, Described) {
    let mut g =
        describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup::default();
    g.group_id = s(group).into();
    g.topics = topics.map(|ts| {
        ts.iter()
            .map(|(name, parts)| {
                let mut x =
                    describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestTopic::default();
                x.topic_name = s(name).into();
                x.partitions = parts.to_vec();
                x
            })
            .collect()
    });
    let mut req = DescribeShareGroupOffsetsRequest::default();
    req.groups = vec![g];
    let r = Conn::new(&t.addr).call(0, &req);
    let g = &r.groups[0];
    let topics = g
        .topics
        .iter()
        .map(|t| {
            (
                t.topic_name.to_string(),
                t.topic_id,
                t.partitions
                    .iter()
                    .map(|p| {
                        (
                            p.partition_index,
                            p.start_offset,
                            p.leader_epoch,
                            p.error_code,
                        )
                    })
                    .collect(),
            )
        })
        .collect();
    (g.error_code, topics)
}

/// AlterShareGroupOffsets v0 of one topic.
fn alter(
    t: &Target,
    group: &str,
    topic: &str,
    parts: &[(i32, i64)],
) -> AlterShareGroupOffsetsResponse {
    let mut x = alter_share_group_offsets_request::AlterShareGroupOffsetsRequestTopic::default();
    x.topic_name = s(topic).into();
    x.partitions = parts
        .iter()
        .map(|(p, o)| {
            let mut y =
                alter_share_group_offsets_request::AlterShareGroupOffsetsRequestPartition::default(
                );
            y.partition_index = *p;
            y.start_offset = *o;
            y
        })
        .collect();
    let mut req = AlterShareGroupOffsetsRequest::default();
    req.group_id = s(group).into();
    req.topics = vec![x];
    Conn::new(&t.addr).call(0, &req)
}

/// DeleteShareGroupOffsets v0.
fn delete_offsets(t: &Target, group: &str, topics: &[&str]) -> DeleteShareGroupOffsetsResponse {
    let mut req = DeleteShareGroupOffsetsRequest::default();
    req.group_id = s(group).into();
    req.topics = topics
        .iter()
        .map(|n| {
            let mut x =
                delete_share_group_offsets_request::DeleteShareGroupOffsetsRequestTopic::default();
            x.topic_name = s(n).into();
            x
        })
        .collect();
    Conn::new(&t.addr).call(0, &req)
}

/// Sets `share.auto.offset.reset` of `group` (IncrementalAlterConfigs on
/// the GROUP resource).
fn earliest(t: &Target, group: &str) {
    let req = IncrementalAlterConfigsRequest::default().with_resources(vec![
        incremental_alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(32)
            .with_resource_name(s(group))
            .with_configs(vec![
                incremental_alter_configs_request::AlterableConfig::default()
                    .with_name(s("share.auto.offset.reset"))
                    .with_config_operation(0)
                    .with_value(Some(s("earliest"))),
            ]),
    ]);
    let r = Conn::new(&t.addr).call(1, &req);
    assert_eq!(r.responses[0].error_code, 0, "{group}: {r:?}");
}

fn leave(t: &Target, group: &str, member: &str) {
    let r = Conn::new(&t.addr).call(
        1,
        &ShareGroupHeartbeatRequest::default()
            .with_group_id(s(group).into())
            .with_member_id(s(member))
            .with_member_epoch(-1),
    );
    assert_eq!(r.error_code, 0, "leave: {r:?}");
}

/// Joins `group`, fetches partition 0 of `topic_id` until something is
/// acquired (within 20 s), accepts it, closes the share session and leaves.
/// Gives the acquired runs (first, last, delivery count).
fn consume_once(t: &Target, group: &str, topic: &str, topic_id: Uuid) -> Vec<(i64, i64, i16)> {
    consume_on(t, t, group, topic, topic_id)
}

/// [`consume_once`] joining through `coordinator` and fetching from
/// `leader`.
fn consume_on(
    coordinator: &Target,
    leader: &Target,
    group: &str,
    topic: &str,
    topic_id: Uuid,
) -> Vec<(i64, i64, i16)> {
    let t = coordinator;
    let member = join(t, group, &[topic]);
    let mut c = Conn::new(&leader.addr);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut epoch = 0;
    let got = loop {
        let r = c.call(
            1,
            &share_fetch_req(group, &member, epoch, topic_id, 0, &vec![], 1000, 100),
        );
        assert_eq!(r.error_code, 0, "{group}: {r:?}");
        epoch += 1;
        let got: Vec<(i64, i64, i16)> = r
            .responses
            .iter()
            .flat_map(|t| t.partitions.iter())
            .filter(|p| p.partition_index == 0)
            .flat_map(|p| p.acquired_records.iter())
            .map(|a| (a.first_offset, a.last_offset, a.delivery_count))
            .collect();
        if !got.is_empty() {
            break got;
        }
        assert!(Instant::now() < deadline, "{group}: nothing acquired");
    };
    let acks: Acks = got.iter().map(|(f, l, _)| (*f, *l, ACCEPT)).collect();
    let r = c.call(1, &share_ack_req(group, &member, epoch, topic_id, 0, &acks));
    assert_eq!(r.error_code, 0, "{group}: {r:?}");
    assert_eq!(r.responses[0].partitions[0].error_code, 0, "{group}: {r:?}");
    leave(t, group, &member);
    got
}

/// Describes `group` without topics until partition 0 of `topic` shows
/// `start` (an alter is written before it answers on both brokers; the
/// poll only absorbs the coordinator's loading).
fn wait_start(t: &Target, group: &str, topic: &str, start: i64) -> Described {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (code, d) = describe(t, group, None);
        assert_eq!(code, 0, "{group}: {d:?}");
        let at = d
            .iter()
            .filter(|(n, _, _)| n == topic)
            .flat_map(|(_, _, ps)| ps.iter())
            .find(|p| p.0 == 0)
            .map(|p| p.1);
        if at == Some(start) {
            return d;
        }
        assert!(
            Instant::now() < deadline,
            "{group}: {d:?}, want start {start}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Describe: a group that does not exist (no topics; asked topics at -1), a share group's partitions with state at -1 once it is
/// joined (an unknown topic or partition at -1 without an error), the
/// share-partition start offset after acknowledgements.
fn case_describe(t: &Target, name: &str) {
    let topic = format!("{name}-t");
    let group = format!("{name}-g");
    let tid = create_topic(&t.addr, &topic, 2);
    produce(&t.addr, &topic, 0, &["a", "b", "c"]);
    earliest(t, &group);
    // (The join makes `__consumer_offsets` exist, as an admin client's
    // FindCoordinator does before it describes.)
    let member = join(t, &group, &[&topic]);
    let none = format!("{name}-none");
    assert_eq!(describe(t, &none, None), (0, vec![]), "{name}");
    assert_eq!(
        describe(t, &none, Some(&[(&topic, &[0])])),
        (0, vec![(topic.clone(), tid, vec![(0, -1, 0, 0)])]),
        "{name}"
    );
    assert_eq!(
        describe(t, &group, None),
        (
            0,
            vec![(topic.clone(), tid, vec![(0, -1, 0, 0), (1, -1, 0, 0)])]
        ),
        "{name}: joined"
    );
    assert_eq!(
        describe(t, &group, Some(&[(&topic, &[1, 5]), ("nosuch", &[0])])),
        (
            0,
            vec![
                (topic.clone(), tid, vec![(1, -1, 0, 0), (5, -1, 0, 0)]),
                ("nosuch".to_string(), Uuid::nil(), vec![(0, -1, 0, 0)]),
            ]
        ),
        "{name}: asked"
    );
    // Not empty: no alter, no delete.
    let r = alter(t, &group, &topic, &[(0, 1)]);
    assert_eq!(
        (r.error_code, r.error_message.as_deref()),
        (NON_EMPTY_GROUP, Some("The group is not empty.")),
        "{name}: {r:?}"
    );
    let r = delete_offsets(t, &group, &[&topic]);
    assert_eq!(
        (r.error_code, r.error_message.as_deref()),
        (NON_EMPTY_GROUP, Some("The group is not empty.")),
        "{name}: {r:?}"
    );
    leave(t, &group, &member);
    assert_eq!(
        consume_once(t, &group, &topic, tid),
        vec![(0, 2, 1)],
        "{name}"
    );
    // Kafka 4.4 writes a share-partition's state before it moves the start
    // offset past the records just acknowledged, so it describes 0 (the
    // start offset of that write, records 0-2 acknowledged in it) until its
    // next write; Fjord writes the window as it is after the change (3).
    let (code, d) = describe(t, &group, None);
    assert_eq!(code, 0, "{name}: {d:?}");
    let start = d[0].2[0].1;
    assert!(start == 0 || start == 3, "{name}: {d:?}");
    assert_eq!(
        d,
        vec![(topic.clone(), tid, vec![(0, start, 0, 0), (1, -1, 0, 0)])],
        "{name}"
    );
}

/// Alter on an empty group: the next member starts at the given offset;
/// an unknown partition or topic is UNKNOWN_TOPIC_OR_PARTITION with Kafka's
/// text; a group that does not exist is created (listed as an Empty share
/// group); a classic group is refused.
fn case_alter(t: &Target, name: &str) {
    let topic = format!("{name}-t");
    let group = format!("{name}-g");
    let tid = create_topic(&t.addr, &topic, 1);
    produce(&t.addr, &topic, 0, &["a", "b", "c", "d"]);
    earliest(t, &group);
    assert_eq!(
        consume_once(t, &group, &topic, tid),
        vec![(0, 3, 1)],
        "{name}"
    );
    let r = alter(t, &group, &topic, &[(0, 1), (7, 0)]);
    assert_eq!(r.error_code, 0, "{name}: {r:?}");
    let parts: Vec<(i32, i16, Option<&str>)> = r.responses[0]
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.error_code, p.error_message.as_deref()))
        .collect();
    assert_eq!(
        parts,
        vec![
            (0, 0, None),
            (7, UNKNOWN_TOPIC_OR_PARTITION, Some(NOT_HOSTED))
        ],
        "{name}"
    );
    assert_eq!(r.responses[0].topic_id, tid, "{name}");
    let r = alter(t, &group, "nosuch", &[(0, 1)]);
    assert_eq!(r.error_code, 0, "{name}: {r:?}");
    assert_eq!(r.responses[0].topic_id, Uuid::nil(), "{name}");
    assert_eq!(
        r.responses[0].partitions[0].error_code, UNKNOWN_TOPIC_OR_PARTITION,
        "{name}"
    );
    wait_start(t, &group, &topic, 1);
    assert_eq!(
        consume_once(t, &group, &topic, tid),
        vec![(1, 3, 1)],
        "{name}: from the altered offset"
    );
    // A group that does not exist: created empty, as a share group.
    let created = format!("{name}-created");
    let r = alter(t, &created, &topic, &[(0, 2)]);
    assert_eq!(r.error_code, 0, "{name}: {r:?}");
    assert_eq!(
        describe(t, &created, None),
        (0, vec![(topic.clone(), tid, vec![(0, 2, 0, 0)])]),
        "{name}"
    );
    let listed = Conn::new(&t.addr).call(5, &ListGroupsRequest::default());
    let found: Vec<(&str, &str, &str)> = listed
        .groups
        .iter()
        .filter(|g| g.group_id.as_str() == created)
        .map(|g| {
            (
                g.group_type.as_str(),
                g.protocol_type.as_str(),
                g.group_state.as_str(),
            )
        })
        .collect();
    assert_eq!(found, vec![("share", "share", "Empty")], "{name}");
}

/// Commits an offset of partition 0 of `topic` for the classic group
/// `group` (OffsetCommit v2 with generation -1, retried while the
/// coordinator loads).
fn classic_group(t: &Target, group: &str, topic: &str) {
    let mut c = Conn::new(&t.addr);
    let mut p = offset_commit_request::OffsetCommitRequestPartition::default();
    p.partition_index = 0;
    p.committed_offset = 1;
    let mut tp = offset_commit_request::OffsetCommitRequestTopic::default();
    tp.name = s(topic).into();
    tp.partitions = vec![p];
    let mut req = OffsetCommitRequest::default();
    req.group_id = s(group).into();
    req.generation_id_or_member_epoch = -1;
    req.member_id = s("");
    req.topics = vec![tp];
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = c.call(2, &req);
        if r.topics[0].partitions[0].error_code == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "{group}: {r:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// DeleteShareGroupOffsets: an unknown topic per topic, a group that does
/// not exist or is classic refused with Kafka's texts, and a deleted topic
/// starts again from `share.auto.offset.reset`.
fn case_delete_offsets(t: &Target, name: &str) {
    let topic = format!("{name}-t");
    let group = format!("{name}-g");
    let tid = create_topic(&t.addr, &topic, 1);
    produce(&t.addr, &topic, 0, &["a", "b"]);
    earliest(t, &group);
    assert_eq!(
        consume_once(t, &group, &topic, tid),
        vec![(0, 1, 1)],
        "{name}"
    );
    let r = delete_offsets(t, &group, &["nosuch"]);
    assert_eq!(r.error_code, 0, "{name}: {r:?}");
    assert_eq!(
        (
            r.responses[0].error_code,
            r.responses[0].error_message.as_deref()
        ),
        (UNKNOWN_TOPIC_OR_PARTITION, Some(NOT_HOSTED)),
        "{name}"
    );
    let none = format!("{name}-none");
    let r = delete_offsets(t, &none, &[&topic]);
    let text = format!("Group {none} not found.");
    assert_eq!(
        (r.error_code, r.error_message.as_deref()),
        (GROUP_ID_NOT_FOUND, Some(text.as_str())),
        "{name}"
    );
    let classic = format!("{name}-classic");
    classic_group(t, &classic, &topic);
    let text = format!("Group {classic} is not a share group.");
    for (code, msg) in [
        {
            let r = delete_offsets(t, &classic, &[&topic]);
            (r.error_code, r.error_message.map(|m| m.to_string()))
        },
        {
            let r = alter(t, &classic, &topic, &[(0, 0)]);
            (r.error_code, r.error_message.map(|m| m.to_string()))
        },
    ] {
        assert_eq!(
            (code, msg.as_deref()),
            (GROUP_ID_NOT_FOUND, Some(text.as_str())),
            "{name}"
        );
    }
    assert_eq!(describe(t, &classic, None), (0, vec![]), "{name}");
    let r = delete_offsets(t, &group, &[&topic]);
    assert_eq!(r.error_code, 0, "{name}: {r:?}");
    assert_eq!(
        (r.responses[0].error_code, r.responses[0].topic_id),
        (0, tid),
        "{name}"
    );
    assert_eq!(describe(t, &group, None), (0, vec![]), "{name}: deleted");
    assert_eq!(
        consume_once(t, &group, &topic, tid),
        vec![(0, 1, 1)],
        "{name}: from earliest again"
    );
}

/// DeleteGroups of a share group deletes its state: the group created
/// again under the same id starts from `share.auto.offset.reset`, not from
/// where the deleted group was.
fn case_delete_group(t: &Target, name: &str) {
    let topic = format!("{name}-t");
    let group = format!("{name}-g");
    let tid = create_topic(&t.addr, &topic, 1);
    produce(&t.addr, &topic, 0, &["a", "b", "c"]);
    earliest(t, &group);
    assert_eq!(
        consume_once(t, &group, &topic, tid),
        vec![(0, 2, 1)],
        "{name}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = Conn::new(&t.addr).call(
            2,
            &DeleteGroupsRequest::default().with_groups_names(vec![s(&group).into()]),
        );
        if r.results[0].error_code == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{name}: {r:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(describe(t, &group, None), (0, vec![]), "{name}: deleted");
    earliest(t, &group);
    assert_eq!(
        consume_once(t, &group, &topic, tid),
        vec![(0, 2, 1)],
        "{name}: the group created again starts from earliest"
    );
}

fn run_cases(t: &Target, tag: &str) {
    case_describe(t, &format!("{tag}-describe"));
    case_alter(t, &format!("{tag}-alter"));
    case_delete_offsets(t, &format!("{tag}-deloff"));
    case_delete_group(t, &format!("{tag}-delgroup"));
}

#[test]
fn share_group_offsets_on_fjord() {
    let b = Broker::start();
    let t = Target {
        addr: b.bootstrap(),
    };
    enable_share(&t.addr);
    run_cases(&t, "f");
}

#[test]
fn share_group_offsets_on_kafka() {
    let Some((_peer, t)) = kafka_target(&[]) else {
        return;
    };
    run_cases(&t, "k");
}

/// Kafka's `kafka-share-groups` with `args` against `addr`: its output
/// (stdout then stderr) without stack frames, whitespace runs made one
/// space, the broker's address made `BROKER`, and the LAG column (the
/// last one of a START-OFFSET table) made `?`: Kafka 4.4 answers
/// DescribeShareGroupOffsets v1 with a lag, Fjord serves v0 (the protocol
/// crate's), which has none, so the tool prints `-`.
fn share_groups_tool(addr: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/peers/kafka"),
    )
    .args(["tool", "kafka-share-groups", "--bootstrap-server", addr])
    .args(args)
    .output()
    .expect("run scripts/peers/kafka tool");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lag_table = false;
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("WARN") && !l.starts_with('\t'))
        .map(|l| {
            let mut words: Vec<&str> = l.split_whitespace().collect();
            if words.first() == Some(&"GROUP") {
                lag_table = words.last() == Some(&"LAG");
            } else if lag_table {
                if let Some(last) = words.last_mut() {
                    *last = "?";
                }
            }
            words.join(" ").replace(addr, "BROKER")
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The operator's commands of `kafka-share-groups` on a share group that
/// has state on both partitions of its topic (a member joined and left):
/// list, describe (offsets, state, members), reset to latest and earliest
/// (execute and dry run), delete offsets, delete, and an unknown group.
fn tool_outputs(t: &Target, name: &str) -> Vec<String> {
    let topic = format!("{name}-t");
    let group = format!("{name}-g");
    create_topic(&t.addr, &topic, 2);
    produce(&t.addr, &topic, 0, &["a", "b"]);
    produce(&t.addr, &topic, 1, &["c"]);
    let member = join(t, &group, &[&topic]);
    leave(t, &group, &member);
    let g = group.as_str();
    let tp = topic.as_str();
    let runs: Vec<Vec<&str>> = vec![
        vec!["--list"],
        vec!["--describe", "--group", g],
        vec!["--describe", "--offsets", "--group", g, "--verbose"],
        vec!["--describe", "--state", "--group", g],
        vec!["--describe", "--members", "--group", g],
        vec![
            "--reset-offsets",
            "--to-latest",
            "--execute",
            "--topic",
            tp,
            "--group",
            g,
        ],
        vec!["--describe", "--group", g],
        vec![
            "--reset-offsets",
            "--to-earliest",
            "--dry-run",
            "--topic",
            tp,
            "--group",
            g,
        ],
        vec![
            "--reset-offsets",
            "--to-earliest",
            "--execute",
            "--topic",
            tp,
            "--group",
            g,
        ],
        vec!["--describe", "--offsets", "--group", g],
        vec!["--delete-offsets", "--topic", tp, "--group", g],
        vec!["--describe", "--group", g],
        vec!["--delete", "--group", g],
        vec!["--list"],
        vec!["--describe", "--group", "nosuch"],
    ];
    runs.iter()
        .map(|args| format!("{}: {}", args.join(" "), share_groups_tool(&t.addr, args)))
        .collect()
}

/// `kafka-share-groups` of Kafka 4.4 prints the same on Fjord as on Kafka
/// 4.4 for the same steps (addresses and the v1-only LAG column aside).
#[test]
fn kafka_share_groups_tool_as_on_kafka() {
    let b = Broker::start();
    let t = Target {
        addr: b.bootstrap(),
    };
    enable_share(&t.addr);
    let fjord = tool_outputs(&t, "tool");
    let listed = &fjord[0];
    assert!(listed.ends_with(": tool-g"), "{fjord:#?}");
    assert!(
        fjord[6].ends_with("tool-g tool-t 0 2 ? | tool-g tool-t 1 1 ?"),
        "{fjord:#?}"
    );
    let Some((_peer, k)) = kafka_target(&[]) else {
        return;
    };
    let kafka = tool_outputs(&k, "tool");
    assert_eq!(fjord, kafka);
}

/// A 3-node Fjord cluster: the share group offsets APIs sent to the
/// group's coordinator reach the share coordinators of other brokers
/// (ReadShareGroupStateSummary, InitializeShareGroupState and
/// DeleteShareGroupState forwarded as inter-broker calls): an alter of six
/// partitions is described back, a delete of the topic describes -1.
#[test]
fn share_group_offsets_across_brokers() {
    use base64::Engine;
    let c = Cluster::start(3, &["share.coordinator.state.topic.num.partitions=4"]);
    let any = c.ids()[0];
    enable_share(&c.bootstrap(any));
    let topic = "across-t";
    let tid = create_rf3(&c, any, topic, 6);
    wait_topic(&c, &c.ids(), topic, 6);
    let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(tid.as_bytes());
    // A group whose share-partitions' states other brokers coordinate too.
    let (group, node) = (0..64)
        .map(|i| format!("across-g{i}"))
        .find_map(|g| {
            let node = coordinator_of(&c, any, 0, &g);
            let elsewhere =
                (0..6).any(|p| coordinator_of(&c, any, 2, &format!("{g}:{id}:{p}")) != node);
            elsewhere.then_some((g, node))
        })
        .expect("a group with states coordinated elsewhere");
    let t = Target {
        addr: c.bootstrap(node),
    };
    let parts: Vec<(i32, i64)> = (0..6).map(|p| (p, 0)).collect();
    let r = poll_until(Duration::from_secs(60), "AlterShareGroupOffsets", || {
        let r = alter(&t, &group, topic, &parts);
        let codes: Vec<i16> = r
            .responses
            .iter()
            .flat_map(|t| t.partitions.iter())
            .map(|p| p.error_code)
            .collect();
        if r.error_code == 0 && codes.iter().all(|c| *c == 0) {
            Ok(r)
        } else {
            Err(format!("{r:?}"))
        }
    });
    assert_eq!(r.responses[0].partitions.len(), 6, "{r:?}");
    let all: Vec<(i32, i64, i32, i16)> = (0..6).map(|p| (p, 0, 0, 0)).collect();
    assert_eq!(
        describe(&t, &group, None),
        (0, vec![(topic.to_string(), tid, all)])
    );
    let r = delete_offsets(&t, &group, &[topic]);
    assert_eq!((r.error_code, r.responses[0].error_code), (0, 0), "{r:?}");
    assert_eq!(describe(&t, &group, None), (0, vec![]));
    let asked: Vec<i32> = (0..6).collect();
    let none: Vec<(i32, i64, i32, i16)> = (0..6).map(|p| (p, -1, 0, 0)).collect();
    assert_eq!(
        describe(&t, &group, Some(&[(topic, &asked)])),
        (0, vec![(topic.to_string(), tid, none)])
    );
}

/// A 3-node Fjord cluster: DeleteGroups handled by the group's coordinator
/// while another broker leads the partition (and holds the group's window
/// in memory): the group created again starts from
/// `share.auto.offset.reset`, as the leader checks the window against the
/// persisted state when the new member opens its share session.
#[test]
fn recreated_group_starts_over_on_another_leader() {
    let c = Cluster::start(3, &["share.coordinator.state.topic.num.partitions=4"]);
    let any = c.ids()[0];
    enable_share(&c.bootstrap(any));
    let topic = "recreate-t";
    let tid = create_rf3(&c, any, topic, 1);
    let leader = wait_topic(&c, &c.ids(), topic, 1).parts[&0].leader;
    let (group, node) = (0..64)
        .map(|i| format!("recreate-g{i}"))
        .find_map(|g| {
            let node = coordinator_of(&c, any, 0, &g);
            (node != leader).then_some((g, node))
        })
        .expect("a group coordinated by another broker than the leader");
    let coordinator = Target {
        addr: c.bootstrap(node),
    };
    let led = Target {
        addr: c.bootstrap(leader),
    };
    produce(&led.addr, topic, 0, &["a", "b", "c"]);
    earliest(&coordinator, &group);
    assert_eq!(
        consume_on(&coordinator, &led, &group, topic, tid),
        vec![(0, 2, 1)]
    );
    poll_until(Duration::from_secs(60), "DeleteGroups", || {
        let r = ask(
            &c,
            node,
            2,
            &DeleteGroupsRequest::default().with_groups_names(vec![s(&group).into()]),
        )?;
        match r.results[0].error_code {
            0 => Ok(()),
            code => Err(format!("DeleteGroups: {code}")),
        }
    });
    earliest(&coordinator, &group);
    assert_eq!(
        consume_on(&coordinator, &led, &group, topic, tid),
        vec![(0, 2, 1)],
        "node {leader} starts the group created again from earliest"
    );
}
