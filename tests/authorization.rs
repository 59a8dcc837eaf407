//! The per-API authorization matrix: every served API, sent by a principal
//! (`User:alice`, SASL/PLAIN) first without an ACL and then with the ACLs
//! Kafka's authorizer wants for it, on Fjord and on Apache Kafka 4.4
//! configured the same way (StandardAuthorizer, `super.users`), and the
//! answers compared code for code. Each step's ACLs are written by a super
//! user (`User:admin`) together with a probe ACL (DESCRIBE on a topic named
//! after the step) that the case's own connection waits to see, so a case
//! never runs before its ACLs are in force on either broker.
//!
//! [`EXPECTED`] is the matrix as Kafka 4.4 answers it. Fjord is always held
//! against it; when Kafka's jars are installed (`scripts/peers/kafka
//! install`, which the test command runs first) the same cases run against
//! Kafka too and must give the same table, so a wrong expectation fails
//! here rather than hiding a difference. `FJORD_REQUIRE_KAFKA_PEER=1` (set
//! by the test command) makes a missing peer a failure.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::cluster::Cluster;
use common::kafka_peer::KafkaPeer;
use common::ports::free_port;
use common::raw::RawConn as Conn;
use common::*;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

const JAAS: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";"#;
const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

// Kafka's codes for resource types, operations, patterns and permissions.
const TOPIC: i8 = 2;
const GROUP: i8 = 3;
const CLUSTER: i8 = 4;
const TXN_ID: i8 = 5;
const READ: i8 = 3;
const WRITE: i8 = 4;
const CREATE: i8 = 5;
const DELETE: i8 = 6;
const ALTER: i8 = 7;
const DESCRIBE: i8 = 8;
const CLUSTER_ACTION: i8 = 9;
const DESCRIBE_CONFIGS: i8 = 10;
const ALTER_CONFIGS: i8 = 11;
const LITERAL: i8 = 3;
const ALLOW: i8 = 3;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn tn(v: &str) -> TopicName {
    TopicName(s(v))
}

/// A broker to run the matrix on.
struct Target {
    addr: String,
    node_id: i32,
}

fn acl(rt: i8, name: &str, op: i8) -> create_acls_request::AclCreation {
    create_acls_request::AclCreation::default()
        .with_resource_type(rt)
        .with_resource_name(s(name))
        .with_resource_pattern_type(LITERAL)
        .with_principal(s("User:alice"))
        .with_host(s("*"))
        .with_operation(op)
        .with_permission_type(ALLOW)
}

/// Names used by the cases (each run gets its own suffix on Fjord and
/// Kafka alike, so a rerun against a kept peer starts clean).
struct Names {
    topic: String,
    group: String,
    txn: String,
    run: i64,
}

impl Names {
    fn new() -> Names {
        let run = now_ms();
        Names {
            topic: format!("m-topic-{run}"),
            group: format!("m-group-{run}"),
            txn: format!("m-txn-{run}"),
            run,
        }
    }
    fn other(&self, what: &str) -> String {
        format!("m-{what}-{}", self.run)
    }
}

/// A case's request: sent on the connection given, to the broker given,
/// with the run's names; gives the answer's codes.
type CaseFn = dyn Fn(&mut Conn, &Target, &Names) -> Vec<i32>;

/// One case: its name, the ACLs that grant it, and the request it sends
/// (giving the codes of the answer that the matrix compares).
struct Case {
    name: &'static str,
    grants: Vec<create_acls_request::AclCreation>,
    run: Box<CaseFn>,
}

fn case(
    name: &'static str,
    grants: Vec<create_acls_request::AclCreation>,
    run: impl Fn(&mut Conn, &Target, &Names) -> Vec<i32> + 'static,
) -> Case {
    Case {
        name,
        grants,
        run: Box::new(run),
    }
}

fn i(c: i16) -> i32 {
    i32::from(c)
}

fn produce(c: &mut Conn, topic: &str, txn: Option<&str>, batch: bytes::Bytes) -> Vec<i32> {
    let req = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_transactional_id(txn.map(|t| TransactionalId(s(t))))
        .with_topic_data(vec![produce_request::TopicProduceData::default()
            .with_name(tn(topic))
            .with_partition_data(vec![
                produce_request::PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(batch)),
            ])]);
    let r = c.call(9, &req);
    r.responses
        .iter()
        .flat_map(|t| t.partition_responses.iter().map(|p| i(p.error_code)))
        .collect()
}

fn fetch(c: &mut Conn, topic: &str, replica: i32) -> Vec<i32> {
    let req = FetchRequest::default()
        .with_replica_id(BrokerId(replica))
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![fetch_request::FetchTopic::default()
            .with_topic(tn(topic))
            .with_partitions(vec![fetch_request::FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])]);
    let r = c.call(12, &req);
    let mut out = vec![i(r.error_code)];
    out.extend(
        r.responses
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| i(p.error_code))),
    );
    out
}

fn offset_for_leader_epoch(c: &mut Conn, topic: &str, replica: i32) -> Vec<i32> {
    let req = OffsetForLeaderEpochRequest::default()
        .with_replica_id(BrokerId(replica))
        .with_topics(vec![
            offset_for_leader_epoch_request::OffsetForLeaderTopic::default()
                .with_topic(tn(topic))
                .with_partitions(vec![
                    offset_for_leader_epoch_request::OffsetForLeaderPartition::default()
                        .with_partition(0)
                        .with_current_leader_epoch(-1)
                        .with_leader_epoch(0),
                ]),
        ]);
    let r = c.call(4, &req);
    r.topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| i(p.error_code)))
        .collect()
}

fn metadata(
    c: &mut Conn,
    topics: Option<Vec<&str>>,
    create: bool,
    version: i16,
) -> MetadataResponse {
    let req = MetadataRequest::default()
        .with_topics(topics.map(|ts| {
            ts.into_iter()
                .map(|t| metadata_request::MetadataRequestTopic::default().with_name(Some(tn(t))))
                .collect()
        }))
        .with_allow_auto_topic_creation(create)
        .with_include_cluster_authorized_operations(version <= 10)
        .with_include_topic_authorized_operations(true);
    c.call(version, &req)
}

fn init_producer_id(c: &mut Conn, txn: Option<&str>) -> InitProducerIdResponse {
    let req = InitProducerIdRequest::default()
        .with_transactional_id(txn.map(|t| TransactionalId(s(t))))
        .with_transaction_timeout_ms(60_000)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    c.call(4, &req)
}

/// Runs `f` again while its answer holds a retriable coordinator code
/// (COORDINATOR_LOAD_IN_PROGRESS 14, COORDINATOR_NOT_AVAILABLE 15), as a
/// client would: a coordinator the first lookup creates is not at once
/// ready on either broker, and never for an authorization reason.
fn retrying(mut f: impl FnMut() -> Vec<i32>) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let codes = f();
        if !codes.iter().any(|c| *c == 14 || *c == 15) || Instant::now() > deadline {
            return codes;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The topic id of the share coordinator's cases (no such topic).
const SHARE_TOPIC_ID: uuid::Uuid = uuid::Uuid::from_u128(0x5eed_0000_0000_0000_0000_0000_0000_0932);

/// FindCoordinator v6 for the share coordinator of `group`'s partition 0
/// of [`SHARE_TOPIC_ID`] (key type 2).
fn share_coordinator_lookup(group: &str) -> FindCoordinatorRequest {
    use base64::Engine;
    let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(SHARE_TOPIC_ID.as_bytes());
    FindCoordinatorRequest::default()
        .with_key_type(2)
        .with_coordinator_keys(vec![s(&format!("{group}:{id}:0"))])
}

/// The codes of a share-state answer, partition by partition.
fn partition_codes<P: Iterator<Item = i16>>(topics: impl Iterator<Item = P>) -> Vec<i32> {
    topics.flatten().map(i).collect()
}

/// [`retrying`], NOT_COORDINATOR (16) included: a coordinator just made
/// leader of its partition.
fn retrying_coordinator(mut f: impl FnMut() -> Vec<i32>) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let codes = f();
        if !codes.iter().any(|c| (14..=16).contains(c)) || Instant::now() > deadline {
            return codes;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A share coordinator API (KIP-932) case: one partition of
/// `SHARE_TOPIC_ID` in the request, CLUSTER_ACTION granted, the partitions'
/// codes answered (retried while the coordinator is not ready).
macro_rules! share_state_case {
    ($label:expr, $req:ident, $m:ident, $data:ident) => {
        case(
            $label,
            vec![acl(CLUSTER, "kafka-cluster", CLUSTER_ACTION)],
            |c, _, n| {
                let req = $req::default().with_group_id(s(&n.group)).with_topics(vec![
                    $m::$data::default()
                        .with_topic_id(SHARE_TOPIC_ID)
                        .with_partitions(vec![$m::PartitionData::default()]),
                ]);
                retrying_coordinator(|| {
                    partition_codes(
                        c.call(0, &req)
                            .results
                            .iter()
                            .map(|t| t.partitions.iter().map(|p| p.error_code)),
                    )
                })
            },
        )
    };
}

fn cases() -> Vec<Case> {
    vec![
        case("Produce", vec![acl(TOPIC, "{topic}", WRITE)], |c, _, n| {
            produce(
                c,
                &n.topic,
                None,
                one_record_batch(bytes::Bytes::from_static(b"v"), now_ms()),
            )
        }),
        case("Fetch", vec![acl(TOPIC, "{topic}", READ)], |c, _, n| {
            fetch(c, &n.topic, -1)
        }),
        case(
            "Fetch (follower)",
            vec![acl(CLUSTER, "kafka-cluster", CLUSTER_ACTION)],
            |c, t, n| fetch(c, &n.topic, t.node_id + 100),
        ),
        case(
            "ListOffsets",
            vec![acl(TOPIC, "{topic}", DESCRIBE)],
            |c, _, n| {
                let req = ListOffsetsRequest::default()
                    .with_replica_id(BrokerId(-1))
                    .with_topics(vec![list_offsets_request::ListOffsetsTopic::default()
                        .with_name(tn(&n.topic))
                        .with_partitions(vec![
                            list_offsets_request::ListOffsetsPartition::default()
                                .with_partition_index(0)
                                .with_current_leader_epoch(-1)
                                .with_timestamp(-1),
                        ])]);
                let r = c.call(7, &req);
                r.topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| i(p.error_code)))
                    .collect()
            },
        ),
        case(
            "OffsetForLeaderEpoch",
            vec![acl(TOPIC, "{topic}", DESCRIBE)],
            |c, _, n| offset_for_leader_epoch(c, &n.topic, -1),
        ),
        case(
            "OffsetForLeaderEpoch (follower)",
            vec![acl(CLUSTER, "kafka-cluster", CLUSTER_ACTION)],
            |c, t, n| offset_for_leader_epoch(c, &n.topic, t.node_id),
        ),
        case(
            "Metadata (named, with KIP-430 bits)",
            vec![acl(TOPIC, "{topic}", READ)],
            |c, _, n| {
                let r = metadata(c, Some(vec![&n.topic]), false, 12);
                r.topics
                    .iter()
                    .flat_map(|t| [i(t.error_code), t.topic_authorized_operations])
                    .collect()
            },
        ),
        case(
            "Metadata v10 (cluster KIP-430 bits)",
            vec![acl(CLUSTER, "kafka-cluster", DESCRIBE)],
            |c, _, n| {
                let r = metadata(c, Some(vec![&n.topic]), false, 10);
                vec![r.cluster_authorized_operations]
            },
        ),
        case(
            "Metadata (all topics)",
            vec![acl(TOPIC, "{topic}", DESCRIBE)],
            |c, _, n| {
                let r = metadata(c, None, false, 12);
                let seen = r
                    .topics
                    .iter()
                    .filter(|t| t.name.as_ref().is_some_and(|x| x.0.as_str() == n.topic))
                    .count();
                vec![seen as i32]
            },
        ),
        case(
            "Metadata (auto-create without CREATE)",
            vec![acl(TOPIC, "{auto}", DESCRIBE)],
            |c, _, n| {
                let auto = n.other("auto");
                let r = metadata(c, Some(vec![&auto]), true, 12);
                r.topics.iter().map(|t| i(t.error_code)).collect()
            },
        ),
        case(
            "CreateTopics",
            vec![acl(TOPIC, "{created}", CREATE)],
            |c, _, n| {
                let req = CreateTopicsRequest::default()
                    .with_timeout_ms(30_000)
                    .with_topics(vec![create_topics_request::CreatableTopic::default()
                        .with_name(tn(&n.other("created")))
                        .with_num_partitions(1)
                        .with_replication_factor(1)]);
                let r = c.call(7, &req);
                r.topics
                    .iter()
                    .flat_map(|t| [i(t.error_code), i(t.topic_config_error_code)])
                    .collect()
            },
        ),
        case(
            "CreateTopics (with DESCRIBE_CONFIGS)",
            vec![
                acl(TOPIC, "{created2}", CREATE),
                acl(TOPIC, "{created2}", DESCRIBE_CONFIGS),
            ],
            |c, _, n| {
                let req = CreateTopicsRequest::default()
                    .with_timeout_ms(30_000)
                    .with_topics(vec![create_topics_request::CreatableTopic::default()
                        .with_name(tn(&n.other("created2")))
                        .with_num_partitions(1)
                        .with_replication_factor(1)]);
                let r = c.call(7, &req);
                r.topics
                    .iter()
                    .flat_map(|t| [i(t.error_code), i(t.topic_config_error_code)])
                    .collect()
            },
        ),
        case(
            "DeleteTopics",
            vec![acl(TOPIC, "{doomed}", DELETE)],
            |c, _, n| {
                let req = DeleteTopicsRequest::default()
                    .with_timeout_ms(30_000)
                    .with_topics(vec![delete_topics_request::DeleteTopicState::default()
                        .with_name(Some(tn(&n.other("doomed"))))]);
                let r = c.call(6, &req);
                r.responses.iter().map(|t| i(t.error_code)).collect()
            },
        ),
        case(
            "DeleteTopics (missing, DESCRIBE only)",
            vec![acl(TOPIC, "{missing}", DESCRIBE)],
            |c, _, n| {
                let req = DeleteTopicsRequest::default()
                    .with_timeout_ms(30_000)
                    .with_topics(vec![delete_topics_request::DeleteTopicState::default()
                        .with_name(Some(tn(&n.other("missing"))))]);
                let r = c.call(6, &req);
                r.responses.iter().map(|t| i(t.error_code)).collect()
            },
        ),
        case(
            "CreatePartitions",
            vec![acl(TOPIC, "{parts}", ALTER)],
            |c, _, n| {
                let req = CreatePartitionsRequest::default()
                    .with_timeout_ms(30_000)
                    .with_validate_only(true)
                    .with_topics(vec![
                        create_partitions_request::CreatePartitionsTopic::default()
                            .with_name(tn(&n.other("parts")))
                            .with_count(2)
                            .with_assignments(None),
                    ]);
                let r = c.call(3, &req);
                r.results.iter().map(|t| i(t.error_code)).collect()
            },
        ),
        case(
            "ElectLeaders",
            vec![acl(CLUSTER, "kafka-cluster", ALTER)],
            |c, _, n| {
                let req = ElectLeadersRequest::default()
                    .with_election_type(0)
                    .with_timeout_ms(30_000)
                    .with_topic_partitions(Some(vec![
                        elect_leaders_request::TopicPartitions::default()
                            .with_topic(tn(&n.topic))
                            .with_partitions(vec![0]),
                    ]));
                let r = c.call(2, &req);
                let mut out = vec![i(r.error_code)];
                out.extend(
                    r.replica_election_results
                        .iter()
                        .flat_map(|t| t.partition_result.iter().map(|p| i(p.error_code))),
                );
                out
            },
        ),
        case(
            "AlterPartitionReassignments (cancel)",
            vec![acl(CLUSTER, "kafka-cluster", ALTER)],
            |c, _, n| {
                let req = AlterPartitionReassignmentsRequest::default()
                    .with_timeout_ms(30_000)
                    .with_topics(vec![
                        alter_partition_reassignments_request::ReassignableTopic::default()
                            .with_name(tn(&n.topic))
                            .with_partitions(vec![
                                alter_partition_reassignments_request::ReassignablePartition::default()
                                    .with_partition_index(0)
                                    .with_replicas(None),
                            ]),
                    ]);
                let r = c.call(0, &req);
                let mut out = vec![i(r.error_code)];
                out.extend(
                    r.responses
                        .iter()
                        .flat_map(|t| t.partitions.iter().map(|p| i(p.error_code))),
                );
                out
            },
        ),
        case(
            "ListPartitionReassignments",
            vec![acl(CLUSTER, "kafka-cluster", DESCRIBE)],
            |c, _, _| {
                let r = c.call(
                    0,
                    &ListPartitionReassignmentsRequest::default().with_timeout_ms(30_000),
                );
                vec![i(r.error_code)]
            },
        ),
        case(
            "DescribeCluster (KIP-430 bits)",
            vec![acl(CLUSTER, "kafka-cluster", DESCRIBE)],
            |c, _, _| {
                let r = c.call(
                    1,
                    &DescribeClusterRequest::default()
                        .with_include_cluster_authorized_operations(true)
                        .with_endpoint_type(1),
                );
                vec![i(r.error_code), r.cluster_authorized_operations]
            },
        ),
        case(
            "DescribeTopicPartitions (KIP-430 bits)",
            vec![acl(TOPIC, "{topic}", WRITE)],
            |c, _, n| {
                let req = DescribeTopicPartitionsRequest::default()
                    .with_response_partition_limit(2000)
                    .with_topics(vec![
                        describe_topic_partitions_request::TopicRequest::default()
                            .with_name(tn(&n.topic)),
                    ]);
                let r = c.call(0, &req);
                r.topics
                    .iter()
                    .flat_map(|t| [i(t.error_code), t.topic_authorized_operations])
                    .collect()
            },
        ),
        case(
            "DescribeQuorum",
            vec![acl(CLUSTER, "kafka-cluster", DESCRIBE)],
            |c, _, _| {
                let req = DescribeQuorumRequest::default().with_topics(vec![
                    describe_quorum_request::TopicData::default()
                        .with_topic_name(tn("__cluster_metadata"))
                        .with_partitions(vec![describe_quorum_request::PartitionData::default()
                            .with_partition_index(0)]),
                ]);
                let r = c.call(2, &req);
                let mut out = vec![i(r.error_code)];
                out.extend(
                    r.topics
                        .iter()
                        .flat_map(|t| t.partitions.iter().map(|p| i(p.error_code))),
                );
                out
            },
        ),
        case(
            "FindCoordinator (group)",
            vec![acl(GROUP, "{group}", DESCRIBE)],
            |c, _, n| {
                let req = FindCoordinatorRequest::default()
                    .with_key_type(0)
                    .with_coordinator_keys(vec![s(&n.group)]);
                let r = c.call(4, &req);
                r.coordinators.iter().map(|k| i(k.error_code)).collect()
            },
        ),
        case(
            "FindCoordinator (transaction)",
            vec![acl(TXN_ID, "{txn}", DESCRIBE)],
            |c, _, n| {
                let req = FindCoordinatorRequest::default()
                    .with_key_type(1)
                    .with_coordinator_keys(vec![s(&n.txn)]);
                retrying(|| {
                    let r = c.call(4, &req);
                    r.coordinators.iter().map(|k| i(k.error_code)).collect()
                })
            },
        ),
        case(
            "FindCoordinator (share)",
            vec![acl(CLUSTER, "kafka-cluster", CLUSTER_ACTION)],
            |c, _, n| {
                // Kafka answers COORDINATOR_NOT_AVAILABLE while the first
                // lookup creates __share_group_state.
                retrying(|| {
                    let r = c.call(6, &share_coordinator_lookup(&n.group));
                    r.coordinators.iter().map(|k| i(k.error_code)).collect()
                })
            },
        ),
        case(
            "ReadShareGroupStateSummary (unknown topic id)",
            vec![acl(CLUSTER, "kafka-cluster", CLUSTER_ACTION)],
            |c, _, n| {
                // The lookup creates __share_group_state when allowed.
                c.call(6, &share_coordinator_lookup(&n.group));
                let req = ReadShareGroupStateSummaryRequest::default()
                    .with_group_id(s(&n.group))
                    .with_topics(vec![
                        read_share_group_state_summary_request::ReadStateSummaryData::default()
                            .with_topic_id(SHARE_TOPIC_ID)
                            .with_partitions(vec![
                                read_share_group_state_summary_request::PartitionData::default(),
                            ]),
                    ]);
                retrying_coordinator(|| {
                    let r = c.call(0, &req);
                    r.results
                        .iter()
                        .flat_map(|t| t.partitions.iter().map(|p| i(p.error_code)))
                        .collect()
                })
            },
        ),
        share_state_case!(
            "InitializeShareGroupState (unknown topic id)",
            InitializeShareGroupStateRequest,
            initialize_share_group_state_request,
            InitializeStateData
        ),
        share_state_case!(
            "ReadShareGroupState (not initialized)",
            ReadShareGroupStateRequest,
            read_share_group_state_request,
            ReadStateData
        ),
        share_state_case!(
            "WriteShareGroupState (not initialized)",
            WriteShareGroupStateRequest,
            write_share_group_state_request,
            WriteStateData
        ),
        share_state_case!(
            "DeleteShareGroupState (unknown topic id)",
            DeleteShareGroupStateRequest,
            delete_share_group_state_request,
            DeleteStateData
        ),
        case("JoinGroup", vec![acl(GROUP, "{join}", READ)], |c, _, n| {
            let req = JoinGroupRequest::default()
                .with_group_id(GroupId(s(&n.other("join"))))
                .with_session_timeout_ms(30_000)
                .with_rebalance_timeout_ms(30_000)
                .with_member_id(s(""))
                .with_protocol_type(s("consumer"))
                .with_protocols(vec![join_group_request::JoinGroupRequestProtocol::default(
                )
                .with_name(s("range"))
                .with_metadata(bytes::Bytes::from_static(&[0, 1, 0, 0, 0, 0, 0, 0, 0, 0]))]);
            let r = c.call(5, &req);
            vec![i(r.error_code)]
        }),
        case("SyncGroup", vec![acl(GROUP, "{group}", READ)], |c, _, n| {
            let req = SyncGroupRequest::default()
                .with_group_id(GroupId(s(&n.group)))
                .with_generation_id(1)
                .with_member_id(s("nobody"));
            let r = c.call(3, &req);
            vec![i(r.error_code)]
        }),
        case("Heartbeat", vec![acl(GROUP, "{group}", READ)], |c, _, n| {
            let req = HeartbeatRequest::default()
                .with_group_id(GroupId(s(&n.group)))
                .with_generation_id(1)
                .with_member_id(s("nobody"));
            let r = c.call(3, &req);
            vec![i(r.error_code)]
        }),
        case(
            "LeaveGroup",
            vec![acl(GROUP, "{group}", READ)],
            |c, _, n| {
                let req = LeaveGroupRequest::default()
                    .with_group_id(GroupId(s(&n.group)))
                    .with_members(vec![
                        leave_group_request::MemberIdentity::default().with_member_id(s("nobody"))
                    ]);
                let r = c.call(3, &req);
                let mut out = vec![i(r.error_code)];
                out.extend(r.members.iter().map(|m| i(m.error_code)));
                out
            },
        ),
        case(
            "OffsetCommit (group only)",
            vec![acl(GROUP, "{group}", READ)],
            |c, _, n| offset_commit(c, n),
        ),
        case(
            "OffsetCommit",
            vec![acl(GROUP, "{group}", READ), acl(TOPIC, "{topic}", READ)],
            |c, _, n| offset_commit(c, n),
        ),
        case(
            "OffsetFetch (group only)",
            vec![acl(GROUP, "{group}", DESCRIBE)],
            |c, _, n| offset_fetch(c, n),
        ),
        case(
            "OffsetFetch",
            vec![
                acl(GROUP, "{group}", DESCRIBE),
                acl(TOPIC, "{topic}", DESCRIBE),
            ],
            |c, _, n| offset_fetch(c, n),
        ),
        case(
            "ListGroups",
            vec![acl(GROUP, "{group}", DESCRIBE)],
            |c, _, n| {
                let r = c.call(4, &ListGroupsRequest::default());
                let seen = r
                    .groups
                    .iter()
                    .filter(|g| g.group_id.0.as_str() == n.group)
                    .count();
                vec![i(r.error_code), seen as i32]
            },
        ),
        case(
            "DescribeGroups (KIP-430 bits)",
            vec![acl(GROUP, "{group}", READ)],
            |c, _, n| {
                let r = c.call(
                    5,
                    &DescribeGroupsRequest::default()
                        .with_groups(vec![GroupId(s(&n.group))])
                        .with_include_authorized_operations(true),
                );
                r.groups
                    .iter()
                    .flat_map(|g| [i(g.error_code), g.authorized_operations])
                    .collect()
            },
        ),
        case(
            "OffsetDelete (group only)",
            vec![acl(GROUP, "{group}", DELETE)],
            |c, _, n| offset_delete(c, n),
        ),
        case(
            "OffsetDelete",
            vec![acl(GROUP, "{group}", DELETE), acl(TOPIC, "{topic}", READ)],
            |c, _, n| offset_delete(c, n),
        ),
        case(
            "DeleteGroups",
            vec![acl(GROUP, "{group}", DELETE)],
            |c, _, n| {
                let r = c.call(
                    2,
                    &DeleteGroupsRequest::default().with_groups_names(vec![GroupId(s(&n.group))]),
                );
                r.results.iter().map(|g| i(g.error_code)).collect()
            },
        ),
        case(
            "DescribeConfigs (topic)",
            vec![acl(TOPIC, "{topic}", DESCRIBE_CONFIGS)],
            |c, _, n| describe_configs(c, TOPIC_RESOURCE, &n.topic),
        ),
        case(
            "DescribeConfigs (broker)",
            vec![acl(CLUSTER, "kafka-cluster", DESCRIBE_CONFIGS)],
            |c, t, _| describe_configs(c, BROKER_RESOURCE, &t.node_id.to_string()),
        ),
        case(
            "AlterConfigs (topic)",
            vec![acl(TOPIC, "{topic}", ALTER_CONFIGS)],
            |c, _, n| {
                let req = AlterConfigsRequest::default().with_resources(vec![
                    alter_configs_request::AlterConfigsResource::default()
                        .with_resource_type(TOPIC_RESOURCE)
                        .with_resource_name(s(&n.topic))
                        .with_configs(vec![alter_configs_request::AlterableConfig::default()
                            .with_name(s("retention.ms"))
                            .with_value(Some(s("86400000")))]),
                ]);
                let r = c.call(2, &req);
                r.responses.iter().map(|x| i(x.error_code)).collect()
            },
        ),
        case(
            "IncrementalAlterConfigs (topic)",
            vec![acl(TOPIC, "{topic}", ALTER_CONFIGS)],
            |c, _, n| incremental_alter(c, TOPIC_RESOURCE, &n.topic, 0, Some("86400000")),
        ),
        case(
            "IncrementalAlterConfigs (broker)",
            vec![acl(CLUSTER, "kafka-cluster", ALTER_CONFIGS)],
            |c, t, _| incremental_alter(c, BROKER_RESOURCE, &t.node_id.to_string(), 1, None),
        ),
        case(
            "DescribeConfigs (group)",
            vec![acl(GROUP, "{group}", DESCRIBE_CONFIGS)],
            |c, _, n| describe_configs(c, GROUP_RESOURCE, &n.group),
        ),
        case(
            "IncrementalAlterConfigs (group)",
            vec![acl(GROUP, "{group}", ALTER_CONFIGS)],
            |c, _, n| incremental_alter(c, GROUP_RESOURCE, &n.group, 0, Some("6000")),
        ),
        case(
            "DeleteRecords",
            vec![acl(TOPIC, "{topic}", DELETE)],
            |c, _, n| {
                let req = DeleteRecordsRequest::default()
                    .with_timeout_ms(30_000)
                    .with_topics(vec![delete_records_request::DeleteRecordsTopic::default()
                        .with_name(tn(&n.topic))
                        .with_partitions(vec![
                            delete_records_request::DeleteRecordsPartition::default()
                                .with_partition_index(0)
                                .with_offset(0),
                        ])]);
                let r = c.call(2, &req);
                r.topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| i(p.error_code)))
                    .collect()
            },
        ),
        case(
            "DescribeLogDirs",
            vec![acl(CLUSTER, "kafka-cluster", DESCRIBE)],
            |c, _, n| {
                let req = DescribeLogDirsRequest::default().with_topics(Some(vec![
                    describe_log_dirs_request::DescribableLogDirTopic::default()
                        .with_topic(tn(&n.topic))
                        .with_partitions(vec![0]),
                ]));
                let r = c.call(4, &req);
                vec![i(r.error_code), r.results.len().min(1) as i32]
            },
        ),
        case(
            "InitProducerId (idempotent, WRITE on a topic)",
            vec![acl(TOPIC, "{topic}", WRITE)],
            |c, _, _| retrying(|| vec![i(init_producer_id(c, None).error_code)]),
        ),
        case(
            "InitProducerId (idempotent, IDEMPOTENT_WRITE)",
            vec![acl(CLUSTER, "kafka-cluster", 12)],
            |c, _, _| retrying(|| vec![i(init_producer_id(c, None).error_code)]),
        ),
        case(
            "InitProducerId (transactional)",
            vec![acl(TXN_ID, "{txn}", WRITE)],
            |c, _, n| retrying(|| vec![i(init_producer_id(c, Some(&n.txn)).error_code)]),
        ),
        case(
            "DescribeProducers",
            vec![acl(TOPIC, "{topic}", READ)],
            |c, _, n| {
                let req = DescribeProducersRequest::default().with_topics(vec![
                    describe_producers_request::TopicRequest::default()
                        .with_name(tn(&n.topic))
                        .with_partition_indexes(vec![0]),
                ]);
                let r = c.call(0, &req);
                r.topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| i(p.error_code)))
                    .collect()
            },
        ),
        case(
            "AddPartitionsToTxn v3 (transactional id only)",
            vec![acl(TXN_ID, "{txn}", WRITE)],
            |c, _, n| add_partitions_v3(c, n),
        ),
        case(
            "AddPartitionsToTxn v3",
            vec![acl(TXN_ID, "{txn}", WRITE), acl(TOPIC, "{topic}", WRITE)],
            |c, _, n| add_partitions_v3(c, n),
        ),
        case(
            "AddPartitionsToTxn v4 (verify only, from a broker)",
            vec![acl(CLUSTER, "kafka-cluster", CLUSTER_ACTION)],
            |c, _, n| {
                let req = AddPartitionsToTxnRequest::default().with_transactions(vec![
                    add_partitions_to_txn_request::AddPartitionsToTxnTransaction::default()
                        .with_transactional_id(TransactionalId(s(&n.other("unknown-txn"))))
                        .with_producer_id(ProducerId(1))
                        .with_producer_epoch(0)
                        .with_verify_only(true)
                        .with_topics(vec![
                            add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                                .with_name(tn(&n.topic))
                                .with_partitions(vec![0]),
                        ]),
                ]);
                let r = c.call(4, &req);
                let mut out = vec![i(r.error_code)];
                out.extend(r.results_by_transaction.iter().flat_map(|t| {
                    t.topic_results.iter().flat_map(|x| {
                        x.results_by_partition
                            .iter()
                            .map(|p| i(p.partition_error_code))
                    })
                }));
                out
            },
        ),
        case(
            "AddOffsetsToTxn (transactional id only)",
            vec![acl(TXN_ID, "{txn}", WRITE)],
            |c, _, n| add_offsets(c, n),
        ),
        case(
            "AddOffsetsToTxn",
            vec![acl(TXN_ID, "{txn}", WRITE), acl(GROUP, "{group}", READ)],
            |c, _, n| add_offsets(c, n),
        ),
        case(
            "TxnOffsetCommit (transactional id and group)",
            vec![acl(TXN_ID, "{txn}", WRITE), acl(GROUP, "{group}", READ)],
            |c, _, n| txn_offset_commit(c, n),
        ),
        case("EndTxn", vec![acl(TXN_ID, "{txn}", WRITE)], |c, _, n| {
            let req = EndTxnRequest::default()
                .with_transactional_id(TransactionalId(s(&n.txn)))
                .with_producer_id(ProducerId(123_456))
                .with_producer_epoch(0)
                .with_committed(false);
            vec![i(c.call(3, &req).error_code)]
        }),
        case(
            "Produce (transactional batch)",
            vec![acl(TOPIC, "{topic}", WRITE)],
            |c, _, n| produce(c, &n.topic, Some(&n.txn), transactional_batch()),
        ),
        case(
            "DescribeTransactions",
            vec![acl(TXN_ID, "{txn}", DESCRIBE)],
            |c, _, n| {
                let r = c.call(
                    0,
                    &DescribeTransactionsRequest::default()
                        .with_transactional_ids(vec![TransactionalId(s(&n.txn))]),
                );
                r.transaction_states
                    .iter()
                    .map(|t| i(t.error_code))
                    .collect()
            },
        ),
        case(
            "ListTransactions",
            vec![acl(TXN_ID, "{txn}", DESCRIBE)],
            |c, _, n| {
                let r = c.call(
                    1,
                    &ListTransactionsRequest::default().with_duration_filter(-1),
                );
                let seen = r
                    .transaction_states
                    .iter()
                    .filter(|t| t.transactional_id.0.as_str() == n.txn)
                    .count();
                vec![i(r.error_code), seen as i32]
            },
        ),
        case(
            "WriteTxnMarkers",
            vec![acl(CLUSTER, "kafka-cluster", CLUSTER_ACTION)],
            |c, _, n| {
                let req = WriteTxnMarkersRequest::default().with_markers(vec![
                    write_txn_markers_request::WritableTxnMarker::default()
                        .with_producer_id(ProducerId(123_456))
                        .with_producer_epoch(0)
                        .with_transaction_result(false)
                        .with_coordinator_epoch(0)
                        .with_topics(vec![
                            write_txn_markers_request::WritableTxnMarkerTopic::default()
                                .with_name(tn(&n.other("no-such-topic")))
                                .with_partition_indexes(vec![0]),
                        ]),
                ]);
                let r = c.call(1, &req);
                r.markers
                    .iter()
                    .flat_map(|m| {
                        m.topics
                            .iter()
                            .flat_map(|t| t.partitions.iter().map(|p| i(p.error_code)))
                    })
                    .collect()
            },
        ),
        case(
            "DescribeUserScramCredentials",
            vec![acl(CLUSTER, "kafka-cluster", DESCRIBE)],
            |c, _, _| {
                let req = DescribeUserScramCredentialsRequest::default().with_users(Some(vec![
                    describe_user_scram_credentials_request::UserName::default()
                        .with_name(s("nobody")),
                ]));
                let r = c.call(0, &req);
                let mut out = vec![i(r.error_code)];
                out.extend(r.results.iter().map(|x| i(x.error_code)));
                out
            },
        ),
        case(
            "AlterUserScramCredentials",
            vec![acl(CLUSTER, "kafka-cluster", ALTER)],
            |c, _, _| {
                let req = AlterUserScramCredentialsRequest::default().with_deletions(vec![
                    alter_user_scram_credentials_request::ScramCredentialDeletion::default()
                        .with_name(s("nobody"))
                        .with_mechanism(1),
                ]);
                let r = c.call(0, &req);
                r.results.iter().map(|x| i(x.error_code)).collect()
            },
        ),
        case(
            "DescribeAcls",
            vec![acl(CLUSTER, "kafka-cluster", DESCRIBE)],
            |c, _, _| {
                let req = DescribeAclsRequest::default()
                    .with_resource_name_filter(None)
                    .with_principal_filter(None)
                    .with_host_filter(None)
                    .with_resource_type_filter(1)
                    .with_pattern_type_filter(1)
                    .with_operation(1)
                    .with_permission_type(1);
                vec![i(c.call(3, &req).error_code)]
            },
        ),
        case(
            "CreateAcls",
            vec![acl(CLUSTER, "kafka-cluster", ALTER)],
            |c, _, n| {
                let mut a = acl(TOPIC, &n.other("by-alice"), READ);
                a.principal = s("User:bob");
                let r = c.call(3, &CreateAclsRequest::default().with_creations(vec![a]));
                r.results.iter().map(|x| i(x.error_code)).collect()
            },
        ),
        case(
            "DeleteAcls",
            vec![acl(CLUSTER, "kafka-cluster", ALTER)],
            |c, _, n| {
                let f = delete_acls_request::DeleteAclsFilter::default()
                    .with_resource_type_filter(TOPIC)
                    .with_resource_name_filter(Some(s(&n.other("by-alice"))))
                    .with_pattern_type_filter(LITERAL)
                    .with_principal_filter(None)
                    .with_host_filter(None)
                    .with_operation(1)
                    .with_permission_type(1);
                let r = c.call(3, &DeleteAclsRequest::default().with_filters(vec![f]));
                r.filter_results.iter().map(|x| i(x.error_code)).collect()
            },
        ),
        case(
            "DescribeClientQuotas",
            vec![acl(CLUSTER, "kafka-cluster", DESCRIBE_CONFIGS)],
            |c, _, n| {
                let req = DescribeClientQuotasRequest::default().with_components(vec![
                    describe_client_quotas_request::ComponentData::default()
                        .with_entity_type(s("user"))
                        .with_match_type(0)
                        .with_match(Some(s(&n.other("nobody")))),
                ]);
                let r = c.call(1, &req);
                vec![i(r.error_code), r.entries.map_or(-1, |e| e.len() as i32)]
            },
        ),
        case(
            "AlterClientQuotas (validate only)",
            vec![acl(CLUSTER, "kafka-cluster", ALTER_CONFIGS)],
            |c, _, n| alter_quota(c, &n.other("quota-user"), "producer_byte_rate"),
        ),
        case(
            "AlterClientQuotas (unknown key)",
            vec![acl(CLUSTER, "kafka-cluster", ALTER_CONFIGS)],
            |c, _, n| alter_quota(c, &n.other("quota-user"), "no_such_rate"),
        ),
        case(
            "UpdateFeatures (validate only)",
            vec![acl(CLUSTER, "kafka-cluster", ALTER)],
            |c, _, _| {
                // metadata.version 4.4-IV2 (33), finalized on both brokers.
                let req = UpdateFeaturesRequest::default()
                    .with_timeout_ms(30_000)
                    .with_validate_only(true)
                    .with_feature_updates(vec![
                        update_features_request::FeatureUpdateKey::default()
                            .with_feature(s("metadata.version"))
                            .with_max_version_level(33),
                    ]);
                vec![i(c.call(1, &req).error_code)]
            },
        ),
        // Share groups (KIP-932): READ on the group, DESCRIBE on every
        // subscribed topic (TOPIC_AUTHORIZATION_FAILED for the request).
        case(
            "ShareGroupHeartbeat (group only)",
            vec![acl(GROUP, "{share}", READ)],
            |c, _, n| vec![i(share_join(c, n).error_code)],
        ),
        case(
            "ShareGroupHeartbeat",
            vec![acl(GROUP, "{share}", READ), acl(TOPIC, "{topic}", DESCRIBE)],
            |c, _, n| vec![i(share_join(c, n).error_code)],
        ),
        // DESCRIBE on the group; a group whose members hold a topic the
        // caller may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED.
        case(
            "ShareGroupDescribe (group only)",
            vec![acl(GROUP, "{share}", DESCRIBE)],
            share_describe,
        ),
        case(
            "ShareGroupDescribe",
            vec![
                acl(GROUP, "{share}", DESCRIBE),
                acl(TOPIC, "{topic}", DESCRIBE),
            ],
            share_describe,
        ),
        // The share group offsets APIs (the run's share group has a member
        // by now): DESCRIBE / READ / DELETE on the group, then the topic.
        case(
            "DescribeShareGroupOffsets (group only)",
            vec![acl(GROUP, "{share}", DESCRIBE)],
            share_offsets_describe,
        ),
        case(
            "DescribeShareGroupOffsets",
            vec![
                acl(GROUP, "{share}", DESCRIBE),
                acl(TOPIC, "{topic}", DESCRIBE),
            ],
            share_offsets_describe,
        ),
        case(
            "AlterShareGroupOffsets (group only)",
            vec![acl(GROUP, "{share}", READ)],
            |c, _, n| {
                let mut p = alter_share_group_offsets_request::AlterShareGroupOffsetsRequestPartition::default();
                p.start_offset = 0;
                let mut t =
                    alter_share_group_offsets_request::AlterShareGroupOffsetsRequestTopic::default(
                    );
                t.topic_name = tn(&n.topic);
                t.partitions = vec![p];
                let mut req = AlterShareGroupOffsetsRequest::default();
                req.group_id = GroupId(s(&n.other("share")));
                req.topics = vec![t];
                let r = c.call(0, &req);
                let mut out = vec![i(r.error_code)];
                out.extend(partition_codes(
                    r.responses
                        .iter()
                        .map(|t| t.partitions.iter().map(|p| p.error_code)),
                ));
                out
            },
        ),
        case(
            "DeleteShareGroupOffsets (group only)",
            vec![acl(GROUP, "{share}", DELETE)],
            |c, _, n| {
                let mut t = delete_share_group_offsets_request::DeleteShareGroupOffsetsRequestTopic::default();
                t.topic_name = tn(&n.topic);
                let mut req = DeleteShareGroupOffsetsRequest::default();
                req.group_id = GroupId(s(&n.other("share")));
                req.topics = vec![t];
                let r = c.call(0, &req);
                let mut out = vec![i(r.error_code)];
                out.extend(r.responses.iter().map(|t| i(t.error_code)));
                out
            },
        ),
    ]
}

/// DescribeShareGroupOffsets v0 of the run's share group, partition 0 of
/// the run's topic: the group's code, then the partition's.
fn share_offsets_describe(c: &mut Conn, _: &Target, n: &Names) -> Vec<i32> {
    let mut t =
        describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestTopic::default();
    t.topic_name = tn(&n.topic);
    t.partitions = vec![0];
    let mut g =
        describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup::default();
    g.group_id = GroupId(s(&n.other("share")));
    g.topics = Some(vec![t]);
    let mut req = DescribeShareGroupOffsetsRequest::default();
    req.groups = vec![g];
    let r = c.call(0, &req);
    r.groups
        .iter()
        .flat_map(|g| {
            std::iter::once(i(g.error_code)).chain(
                g.topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| i(p.error_code))),
            )
        })
        .collect()
}

/// ShareGroupHeartbeat v1: a member joins the run's share group with the
/// run's topic.
fn share_join(c: &mut Conn, n: &Names) -> ShareGroupHeartbeatResponse {
    let req = ShareGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s(&n.other("share"))))
        .with_member_id(s("alice-share-member-0001"))
        .with_member_epoch(0)
        .with_subscribed_topic_names(Some(vec![tn(&n.topic)]));
    c.call(1, &req)
}

/// ShareGroupDescribe v1 of the run's share group, once its member holds
/// the run's topic (the super user rejoins it until it is assigned: Kafka
/// assigns a share-partition once its state is initialized).
fn share_describe(c: &mut Conn, t: &Target, n: &Names) -> Vec<i32> {
    let mut admin = Conn::login(&t.addr, "admin", "admin-secret");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = share_join(&mut admin, n);
        let held = r
            .assignment
            .as_ref()
            .is_some_and(|a| !a.topic_partitions.is_empty());
        if r.error_code == 0 && held {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the share member is not assigned: {r:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let req =
        ShareGroupDescribeRequest::default().with_group_ids(vec![GroupId(s(&n.other("share")))]);
    let r = c.call(1, &req);
    r.groups.iter().map(|g| i(g.error_code)).collect()
}

/// AlterClientQuotas v1, validate only: `key` = 1024 for user `user`.
fn alter_quota(c: &mut Conn, user: &str, key: &str) -> Vec<i32> {
    let req = AlterClientQuotasRequest::default()
        .with_validate_only(true)
        .with_entries(vec![alter_client_quotas_request::EntryData::default()
            .with_entity(vec![alter_client_quotas_request::EntityData::default()
                .with_entity_type(s("user"))
                .with_entity_name(Some(s(user)))])
            .with_ops(vec![alter_client_quotas_request::OpData::default()
                .with_key(s(key))
                .with_value(1024.0)])]);
    let r = c.call(1, &req);
    r.entries.iter().map(|e| i(e.error_code)).collect()
}

const TOPIC_RESOURCE: i8 = 2;
const BROKER_RESOURCE: i8 = 4;
const GROUP_RESOURCE: i8 = 32;

fn offset_commit(c: &mut Conn, n: &Names) -> Vec<i32> {
    let req = OffsetCommitRequest::default()
        .with_group_id(GroupId(s(&n.group)))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(s(""))
        .with_topics(vec![
            offset_commit_request::OffsetCommitRequestTopic::default()
                .with_name(tn(&n.topic))
                .with_partitions(vec![
                    offset_commit_request::OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(1)
                        .with_committed_leader_epoch(-1),
                ]),
        ]);
    let r = c.call(8, &req);
    r.topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| i(p.error_code)))
        .collect()
}

fn offset_fetch(c: &mut Conn, n: &Names) -> Vec<i32> {
    let req = OffsetFetchRequest::default().with_groups(vec![
        offset_fetch_request::OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(s(&n.group)))
            .with_topics(Some(vec![
                offset_fetch_request::OffsetFetchRequestTopics::default()
                    .with_name(tn(&n.topic))
                    .with_partition_indexes(vec![0]),
            ])),
    ]);
    let r = c.call(8, &req);
    let mut out = Vec::new();
    for g in &r.groups {
        out.push(i(g.error_code));
        out.extend(
            g.topics
                .iter()
                .flat_map(|t| t.partitions.iter().map(|p| i(p.error_code))),
        );
    }
    out
}

fn offset_delete(c: &mut Conn, n: &Names) -> Vec<i32> {
    let req = OffsetDeleteRequest::default()
        .with_group_id(GroupId(s(&n.group)))
        .with_topics(vec![
            offset_delete_request::OffsetDeleteRequestTopic::default()
                .with_name(tn(&n.topic))
                .with_partitions(vec![
                    offset_delete_request::OffsetDeleteRequestPartition::default()
                        .with_partition_index(0),
                ]),
        ]);
    let r = c.call(0, &req);
    let mut out = vec![i(r.error_code)];
    out.extend(
        r.topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| i(p.error_code))),
    );
    out
}

fn describe_configs(c: &mut Conn, rt: i8, name: &str) -> Vec<i32> {
    let req = DescribeConfigsRequest::default().with_resources(vec![
        describe_configs_request::DescribeConfigsResource::default()
            .with_resource_type(rt)
            .with_resource_name(s(name))
            .with_configuration_keys(Some(vec![s("retention.ms"), s("log.retention.ms")])),
    ]);
    let r = c.call(4, &req);
    r.results.iter().map(|x| i(x.error_code)).collect()
}

fn incremental_alter(c: &mut Conn, rt: i8, name: &str, op: i8, value: Option<&str>) -> Vec<i32> {
    let key = match rt {
        TOPIC_RESOURCE => "retention.ms",
        GROUP_RESOURCE => "consumer.heartbeat.interval.ms",
        _ => "log.retention.ms",
    };
    let req = IncrementalAlterConfigsRequest::default().with_resources(vec![
        incremental_alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(rt)
            .with_resource_name(s(name))
            .with_configs(vec![
                incremental_alter_configs_request::AlterableConfig::default()
                    .with_name(s(key))
                    .with_config_operation(op)
                    .with_value(value.map(s)),
            ]),
    ]);
    let r = c.call(1, &req);
    r.responses.iter().map(|x| i(x.error_code)).collect()
}

fn add_partitions_v3(c: &mut Conn, n: &Names) -> Vec<i32> {
    let req = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(TransactionalId(s(&n.txn)))
        .with_v3_and_below_producer_id(ProducerId(123_456))
        .with_v3_and_below_producer_epoch(0)
        .with_v3_and_below_topics(vec![
            add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                .with_name(tn(&n.topic))
                .with_partitions(vec![0]),
        ]);
    let r = c.call(3, &req);
    r.results_by_topic_v3_and_below
        .iter()
        .flat_map(|t| {
            t.results_by_partition
                .iter()
                .map(|p| i(p.partition_error_code))
        })
        .collect()
}

fn add_offsets(c: &mut Conn, n: &Names) -> Vec<i32> {
    let req = AddOffsetsToTxnRequest::default()
        .with_transactional_id(TransactionalId(s(&n.txn)))
        .with_producer_id(ProducerId(123_456))
        .with_producer_epoch(0)
        .with_group_id(GroupId(s(&n.group)));
    vec![i(c.call(3, &req).error_code)]
}

fn txn_offset_commit(c: &mut Conn, n: &Names) -> Vec<i32> {
    let req = TxnOffsetCommitRequest::default()
        .with_transactional_id(TransactionalId(s(&n.txn)))
        .with_group_id(GroupId(s(&n.group)))
        .with_producer_id(ProducerId(123_456))
        .with_producer_epoch(0)
        .with_generation_id(-1)
        .with_member_id(s(""))
        .with_topics(vec![
            txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
                .with_name(tn(&n.topic))
                .with_partitions(vec![
                    txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(1)
                        .with_committed_leader_epoch(-1),
                ]),
        ]);
    let r = c.call(3, &req);
    r.topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| i(p.error_code)))
        .collect()
}

/// A RecordBatch v2 marked transactional (attributes bit 4) for producer
/// 123456 epoch 0, CRC32C recomputed.
fn transactional_batch() -> bytes::Bytes {
    let mut b = one_record_batch(bytes::Bytes::from_static(b"t"), now_ms()).to_vec();
    b[21..23].copy_from_slice(&0x10i16.to_be_bytes());
    b[43..51].copy_from_slice(&123_456i64.to_be_bytes());
    b[51..53].copy_from_slice(&0i16.to_be_bytes());
    b[53..57].copy_from_slice(&0i32.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    bytes::Bytes::from(b)
}

/// Replaces `{topic}`, `{group}`, `{txn}` and `{other}` names in an ACL.
fn named(a: &create_acls_request::AclCreation, n: &Names) -> create_acls_request::AclCreation {
    let raw = a.resource_name.as_str();
    let name = match raw {
        "{topic}" => n.topic.clone(),
        "{group}" => n.group.clone(),
        "{txn}" => n.txn.clone(),
        r if r.starts_with('{') && r.ends_with('}') => n.other(&r[1..r.len() - 1]),
        r => r.to_string(),
    };
    a.clone().with_resource_name(s(&name))
}

fn create_acls(admin: &mut Conn, acls: Vec<create_acls_request::AclCreation>) {
    let r = admin.call(3, &CreateAclsRequest::default().with_creations(acls));
    for x in &r.results {
        assert_eq!(x.error_code, 0, "CreateAcls: {:?}", x.error_message);
    }
}

/// Deletes every ACL of `User:alice`.
fn clear_acls(admin: &mut Conn) {
    let f = delete_acls_request::DeleteAclsFilter::default()
        .with_resource_name_filter(None)
        .with_host_filter(None)
        .with_resource_type_filter(1)
        .with_pattern_type_filter(1)
        .with_principal_filter(Some(s("User:alice")))
        .with_operation(1)
        .with_permission_type(1);
    let r = admin.call(3, &DeleteAclsRequest::default().with_filters(vec![f]));
    for x in &r.filter_results {
        assert_eq!(x.error_code, 0, "DeleteAcls: {:?}", x.error_message);
    }
}

/// Waits until `c` sees DESCRIBE on topic `probe` allowed (`allowed`) or
/// refused: the ACLs written with it are then in force for `c`.
fn await_probe(c: &mut Conn, probe: &str, allowed: bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = metadata(c, Some(vec![probe]), false, 12);
        let code = r.topics.first().map(|t| t.error_code).unwrap_or(-1);
        if (code != 29) == allowed {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "probe {probe} not {} after 30 s",
            if allowed { "allowed" } else { "refused" }
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The fixtures every case starts from, made by the super user: the topic
/// with one record, the other topics the cases touch, a group with a
/// committed offset.
fn fixtures(admin: &mut Conn, n: &Names) {
    enable_share_groups(admin);
    let topics = [n.topic.clone(), n.other("doomed"), n.other("parts")];
    let req = CreateTopicsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(
            topics
                .iter()
                .map(|t| {
                    create_topics_request::CreatableTopic::default()
                        .with_name(tn(t))
                        .with_num_partitions(1)
                        .with_replication_factor(1)
                })
                .collect(),
        );
    let r = admin.call(7, &req);
    for t in &r.topics {
        assert_eq!(
            t.error_code, 0,
            "create {:?}: {:?}",
            t.name, t.error_message
        );
    }
    poll_until(Duration::from_secs(30), "the fixture topic serves", || {
        let codes = produce(
            admin,
            &n.topic,
            None,
            one_record_batch(bytes::Bytes::from_static(b"fixture"), now_ms()),
        );
        if codes == vec![0] {
            Ok(())
        } else {
            Err(format!("{codes:?}"))
        }
    });
    // The group's coordinator (FindCoordinator creates __consumer_offsets),
    // then a committed offset.
    poll_until(Duration::from_secs(60), "the fixture group commits", || {
        let req = FindCoordinatorRequest::default()
            .with_key_type(0)
            .with_coordinator_keys(vec![s(&n.group)]);
        let found = admin.call(4, &req);
        if found.coordinators.iter().any(|k| k.error_code != 0) {
            return Err("no coordinator yet".into());
        }
        let codes = offset_commit(admin, n);
        if codes == vec![0] {
            Ok(())
        } else {
            Err(format!("{codes:?}"))
        }
    });
}

/// Finalizes `share.version` 1 where it is below (a new Fjord cluster;
/// Kafka 4.4 finalizes 2), so the share group APIs are served.
fn enable_share_groups(admin: &mut Conn) {
    let level = |c: &mut Conn| {
        let v = c.call(
            4,
            &ApiVersionsRequest::default()
                .with_client_software_name(s("authorization-test"))
                .with_client_software_version(s("1")),
        );
        v.finalized_features
            .iter()
            .find(|f| f.name.as_str() == "share.version")
            .map_or(0, |f| f.max_version_level)
    };
    if level(admin) >= 1 {
        return;
    }
    let req = UpdateFeaturesRequest::default()
        .with_timeout_ms(30_000)
        .with_feature_updates(vec![update_features_request::FeatureUpdateKey::default()
            .with_feature(s("share.version"))
            .with_max_version_level(1)
            .with_upgrade_type(1)]);
    assert_eq!(admin.call(1, &req).error_code, 0, "share.version 1");
    poll_until(Duration::from_secs(30), "share.version 1 finalized", || {
        if level(admin) >= 1 {
            Ok(())
        } else {
            Err("not yet".into())
        }
    });
}

/// Runs every case on `t`: (case name, codes without ACLs, codes with).
fn run_matrix(t: &Target) -> Vec<(String, Vec<i32>, Vec<i32>)> {
    let n = Names::new();
    let mut admin = Conn::login(&t.addr, "admin", "admin-secret");
    let mut alice = Conn::login(&t.addr, "alice", "alice-secret");
    fixtures(&mut admin, &n);
    let mut out = Vec::new();
    for (k, c) in cases().into_iter().enumerate() {
        let without = (c.run)(&mut alice, t, &n);
        let probe = format!("probe-{}-{k}", n.run);
        let mut grants: Vec<_> = c.grants.iter().map(|a| named(a, &n)).collect();
        grants.push(acl(TOPIC, &probe, DESCRIBE));
        create_acls(&mut admin, grants);
        await_probe(&mut alice, &probe, true);
        let with = (c.run)(&mut alice, t, &n);
        clear_acls(&mut admin);
        await_probe(&mut alice, &probe, false);
        out.push((c.name.to_string(), without, with));
    }
    out
}

/// An ACL's fields as DescribeAcls and DeleteAcls give them back.
type AclRow = (i8, String, i8, String, String, i8, i8);

fn creation(
    rt: i8,
    name: &str,
    pattern: i8,
    principal: &str,
    host: &str,
    op: i8,
    perm: i8,
) -> create_acls_request::AclCreation {
    create_acls_request::AclCreation::default()
        .with_resource_type(rt)
        .with_resource_name(s(name))
        .with_resource_pattern_type(pattern)
        .with_principal(s(principal))
        .with_host(s(host))
        .with_operation(op)
        .with_permission_type(perm)
}

/// A DescribeAcls filter: (type, name, pattern, principal, host, op, perm).
type Filter = (
    i8,
    Option<&'static str>,
    i8,
    Option<&'static str>,
    Option<&'static str>,
    i8,
    i8,
);

fn describe_filtered(c: &mut Conn, f: Filter) -> (i32, Vec<AclRow>) {
    let req = DescribeAclsRequest::default()
        .with_resource_type_filter(f.0)
        .with_resource_name_filter(f.1.map(s))
        .with_pattern_type_filter(f.2)
        .with_principal_filter(f.3.map(s))
        .with_host_filter(f.4.map(s))
        .with_operation(f.5)
        .with_permission_type(f.6);
    let r = c.call(3, &req);
    let mut rows: Vec<AclRow> = r
        .resources
        .iter()
        .flat_map(|res| {
            res.acls.iter().map(|a| {
                (
                    res.resource_type,
                    res.resource_name.to_string(),
                    res.pattern_type,
                    a.principal.to_string(),
                    a.host.to_string(),
                    a.operation,
                    a.permission_type,
                )
            })
        })
        .collect();
    rows.sort();
    (i(r.error_code), rows)
}

/// Kafka's ACL API scenarios (its SaslSslAdminIntegrationTest's): valid and
/// invalid creations, DescribeAcls with every kind of filter, DeleteAcls
/// with a MATCH filter, a repeated creation; gives what each answered, to
/// compare between brokers.
fn acl_api_scenarios(t: &Target) -> Vec<String> {
    let mut admin = Conn::login(&t.addr, "admin", "admin-secret");
    let run = now_ms();
    let t1 = format!("t1-{run}");
    let pre = format!("pre-{run}");
    let leak = |v: String| -> &'static str { Box::leak(v.into_boxed_str()) };
    let t1s = leak(t1.clone());
    let pres = leak(pre.clone());
    let inside = leak(format!("{pre}-inside"));
    let mut out = Vec::new();
    let creations = vec![
        creation(TOPIC, &t1, LITERAL, "User:alice", "*", READ, ALLOW),
        creation(TOPIC, &pre, 4, "User:alice", "*", WRITE, ALLOW),
        creation(GROUP, "*", LITERAL, "User:*", "*", DESCRIBE, ALLOW),
        creation(TOPIC, &t1, LITERAL, "User:bob", "10.0.0.1", READ, 2),
        creation(TOPIC, "", LITERAL, "User:alice", "*", READ, ALLOW),
        creation(
            CLUSTER,
            "not-the-cluster",
            LITERAL,
            "User:alice",
            "*",
            ALTER,
            ALLOW,
        ),
        creation(TOPIC, &t1, LITERAL, "alice", "*", READ, ALLOW),
        creation(TOPIC, &t1, LITERAL, "User:alice", "*", 99, ALLOW),
        creation(TOPIC, &t1, LITERAL, "User:alice", "*", READ, ALLOW),
    ];
    let r = admin.call(3, &CreateAclsRequest::default().with_creations(creations));
    out.push(format!(
        "create: {:?}",
        r.results
            .iter()
            .map(|x| i(x.error_code))
            .collect::<Vec<_>>()
    ));
    // A filter value (ANY, MATCH) where an ACL needs a concrete one fails
    // the whole request, the valid creation beside it too.
    for (what, rt, pattern, op, perm) in [
        ("pattern ANY", TOPIC, 1, READ, ALLOW),
        ("pattern MATCH", TOPIC, 2, READ, ALLOW),
        ("operation ANY", TOPIC, LITERAL, 1, ALLOW),
        ("permission ANY", TOPIC, LITERAL, READ, 1),
        ("resource type ANY", 1, LITERAL, READ, ALLOW),
    ] {
        let batch = vec![
            creation(
                TOPIC,
                &format!("{t1}-ok"),
                LITERAL,
                "User:alice",
                "*",
                READ,
                ALLOW,
            ),
            creation(rt, &t1, pattern, "User:alice", "*", op, perm),
        ];
        let r = admin.call(3, &CreateAclsRequest::default().with_creations(batch));
        out.push(format!(
            "create with {what}: {:?}",
            r.results
                .iter()
                .map(|x| i(x.error_code))
                .collect::<Vec<_>>()
        ));
    }
    let filters: Vec<(&str, Filter)> = vec![
        ("literal t1", (TOPIC, Some(t1s), LITERAL, None, None, 1, 1)),
        ("any t1", (TOPIC, Some(t1s), 1, None, None, 1, 1)),
        (
            "match inside the prefix",
            (TOPIC, Some(inside), 2, None, None, 1, 1),
        ),
        ("prefixed", (TOPIC, Some(pres), 4, None, None, 1, 1)),
        ("match a group", (GROUP, Some("g"), 2, None, None, 1, 1)),
        ("bob's", (1, None, 1, Some("User:bob"), None, 1, 1)),
        ("host 10.0.0.1", (1, None, 1, None, Some("10.0.0.1"), 1, 1)),
        ("deny", (1, None, 1, None, None, 1, 2)),
        ("write", (TOPIC, None, 1, None, None, WRITE, 1)),
    ];
    for (name, f) in filters {
        let (code, rows) = describe_filtered(&mut admin, f);
        // Only this run's ACLs (a kept peer may hold others).
        let rows: Vec<_> = rows
            .into_iter()
            .filter(|r| r.1.contains(&run.to_string()) || r.1 == "*")
            .collect();
        out.push(format!("describe {name}: {code} {rows:?}"));
    }
    let f = delete_acls_request::DeleteAclsFilter::default()
        .with_resource_type_filter(TOPIC)
        .with_resource_name_filter(Some(s(&t1)))
        .with_pattern_type_filter(2)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_operation(1)
        .with_permission_type(1);
    let r = admin.call(3, &DeleteAclsRequest::default().with_filters(vec![f]));
    for x in &r.filter_results {
        let mut m: Vec<_> = x
            .matching_acls
            .iter()
            .map(|a| {
                (
                    a.resource_name.to_string(),
                    a.principal.to_string(),
                    i(a.error_code),
                )
            })
            .collect();
        m.sort();
        out.push(format!("delete: {} {m:?}", x.error_code));
    }
    let (code, rows) = describe_filtered(&mut admin, (1, None, 1, None, None, 1, 1));
    let rows: Vec<_> = rows
        .into_iter()
        .filter(|r| r.1.contains(&run.to_string()))
        .collect();
    out.push(format!("left: {code} {rows:?}"));
    // An UNKNOWN (0) element: Kafka cannot parse the request and closes
    // the connection; a code it does not know (99) is answered.
    let closes = |send: &dyn Fn(&mut Conn)| {
        let mut c = Conn::login(&t.addr, "admin", "admin-secret");
        c.s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        send(&mut c);
        let mut buf = [0u8; 4];
        match std::io::Read::read(&mut c.s, &mut buf) {
            Ok(0) | Err(_) => "closed",
            Ok(_) => "answered",
        }
    };
    for (what, rt, pattern, op, perm) in [
        ("create, unknown resource type", 0, LITERAL, READ, ALLOW),
        ("create, unknown pattern type", TOPIC, 0, READ, ALLOW),
        ("create, unknown operation", TOPIC, LITERAL, 0, ALLOW),
        ("create, unknown permission", TOPIC, LITERAL, READ, 0),
        ("create, operation 99", TOPIC, LITERAL, 99, ALLOW),
    ] {
        let c = creation(rt, &t1, pattern, "User:alice", "*", op, perm);
        let outcome = closes(&|conn: &mut Conn| {
            conn.send(
                3,
                &CreateAclsRequest::default().with_creations(vec![c.clone()]),
            );
        });
        out.push(format!("{what}: {outcome}"));
    }
    for (what, pattern, op) in [
        ("describe, unknown pattern type", 0, 1),
        ("describe, unknown operation", 1, 0),
    ] {
        let req = DescribeAclsRequest::default()
            .with_resource_type_filter(TOPIC)
            .with_resource_name_filter(None)
            .with_pattern_type_filter(pattern)
            .with_principal_filter(None)
            .with_host_filter(None)
            .with_operation(op)
            .with_permission_type(1);
        let outcome = closes(&|conn: &mut Conn| {
            conn.send(3, &req);
        });
        out.push(format!("{what}: {outcome}"));
    }
    // Clean up what is left (the group wildcard too).
    let all = delete_acls_request::DeleteAclsFilter::default()
        .with_resource_type_filter(1)
        .with_resource_name_filter(None)
        .with_pattern_type_filter(1)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_operation(1)
        .with_permission_type(1);
    admin.call(3, &DeleteAclsRequest::default().with_filters(vec![all]));
    // Names carry the run; give them back without it.
    out.into_iter()
        .map(|l| l.replace(&format!("-{run}"), "-RUN"))
        .collect()
}

fn fjord_target() -> (Broker, Target) {
    let broker = Broker::start_with(&[
        "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms=PLAIN",
        &format!("listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}"),
        &format!("authorizer.class.name={STANDARD_AUTHORIZER}"),
        "super.users=User:admin;User:ANONYMOUS",
    ]);
    let addr = broker.listener("SASL_PLAINTEXT");
    let node_id = 1;
    (broker, Target { addr, node_id })
}

/// Apache Kafka 4.4 configured as Fjord is (the authorizer, super users,
/// a SASL_PLAINTEXT listener beside PLAINTEXT), and its SASL listener as
/// the target; None when its jars are not installed.
fn kafka_target() -> Option<(KafkaPeer, Target)> {
    let sasl = free_port();
    let peer = KafkaPeer::start_with(|plain, controller| {
        vec![
            format!(
                "listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl},CONTROLLER://127.0.0.1:{controller}"
            ),
            format!(
                "advertised.listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}"
            ),
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT".to_string(),
            "sasl.enabled.mechanisms=PLAIN".to_string(),
            format!("listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}"),
            format!("authorizer.class.name={STANDARD_AUTHORIZER}"),
            "super.users=User:admin;User:ANONYMOUS".to_string(),
        ]
    })?;
    let target = Target {
        addr: format!("127.0.0.1:{sasl}"),
        node_id: 1,
    };
    Some((peer, target))
}

fn print(label: &str, rows: &[(String, Vec<i32>, Vec<i32>)]) {
    eprintln!("--- {label}: case | without ACLs | with ACLs");
    for (name, without, with) in rows {
        eprintln!("    (\"{name}\", &{without:?}, &{with:?}),");
    }
}

/// The matrix as Apache Kafka 4.4 answers it: (case, codes without ACLs,
/// codes with them). KIP-430 bit fields appear as numbers (bit `1 << op`).
/// Bits: 264 = READ and DESCRIBE (a READ ACL implies DESCRIBE); 272 =
/// WRITE and DESCRIBE; 256 = DESCRIBE on the cluster.
const EXPECTED: &[(&str, &[i32], &[i32])] = &[
    ("Produce", &[29], &[0]),
    ("Fetch", &[0, 29], &[0, 0]),
    ("Fetch (follower)", &[0, 29], &[0, 6]),
    ("ListOffsets", &[29], &[0]),
    ("OffsetForLeaderEpoch", &[29], &[0]),
    ("OffsetForLeaderEpoch (follower)", &[29], &[0]),
    (
        "Metadata (named, with KIP-430 bits)",
        &[29, -2147483648],
        &[0, 264],
    ),
    ("Metadata v10 (cluster KIP-430 bits)", &[0], &[256]),
    ("Metadata (all topics)", &[0], &[1]),
    ("Metadata (auto-create without CREATE)", &[29], &[29]),
    ("CreateTopics", &[29, 0], &[0, 29]),
    ("CreateTopics (with DESCRIBE_CONFIGS)", &[29, 0], &[0, 0]),
    ("DeleteTopics", &[29], &[0]),
    ("DeleteTopics (missing, DESCRIBE only)", &[29], &[3]),
    ("CreatePartitions", &[29], &[0]),
    ("ElectLeaders", &[31, 31], &[0, 84]),
    ("AlterPartitionReassignments (cancel)", &[31, 31], &[0, 85]),
    ("ListPartitionReassignments", &[31], &[0]),
    ("DescribeCluster (KIP-430 bits)", &[0, 0], &[0, 256]),
    (
        "DescribeTopicPartitions (KIP-430 bits)",
        &[29, -2147483648],
        &[0, 272],
    ),
    ("DescribeQuorum", &[31], &[0, 0]),
    ("FindCoordinator (group)", &[30], &[0]),
    ("FindCoordinator (transaction)", &[53], &[0]),
    ("FindCoordinator (share)", &[31], &[0]),
    ("ReadShareGroupStateSummary (unknown topic id)", &[31], &[3]),
    ("InitializeShareGroupState (unknown topic id)", &[31], &[3]),
    ("ReadShareGroupState (not initialized)", &[31], &[42]),
    ("WriteShareGroupState (not initialized)", &[31], &[42]),
    ("DeleteShareGroupState (unknown topic id)", &[31], &[3]),
    ("JoinGroup", &[30], &[79]),
    ("SyncGroup", &[30], &[25]),
    ("Heartbeat", &[30], &[25]),
    ("LeaveGroup", &[30], &[0, 25]),
    ("OffsetCommit (group only)", &[30], &[29]),
    ("OffsetCommit", &[30], &[0]),
    ("OffsetFetch (group only)", &[30], &[0, 29]),
    ("OffsetFetch", &[30], &[0, 0]),
    ("ListGroups", &[0, 0], &[0, 1]),
    (
        "DescribeGroups (KIP-430 bits)",
        &[30, -2147483648],
        &[0, 264],
    ),
    ("OffsetDelete (group only)", &[30], &[0, 29]),
    ("OffsetDelete", &[30], &[0, 0]),
    ("DeleteGroups", &[30], &[0]),
    ("DescribeConfigs (topic)", &[29], &[0]),
    ("DescribeConfigs (broker)", &[31], &[0]),
    ("AlterConfigs (topic)", &[29], &[0]),
    ("IncrementalAlterConfigs (topic)", &[29], &[0]),
    ("IncrementalAlterConfigs (broker)", &[31], &[0]),
    ("DescribeConfigs (group)", &[30], &[0]),
    ("IncrementalAlterConfigs (group)", &[30], &[0]),
    ("DeleteRecords", &[29], &[0]),
    ("DescribeLogDirs", &[31, 0], &[0, 1]),
    ("InitProducerId (idempotent, WRITE on a topic)", &[31], &[0]),
    ("InitProducerId (idempotent, IDEMPOTENT_WRITE)", &[31], &[0]),
    ("InitProducerId (transactional)", &[53], &[0]),
    ("DescribeProducers", &[29], &[0]),
    (
        "AddPartitionsToTxn v3 (transactional id only)",
        &[53],
        &[29],
    ),
    ("AddPartitionsToTxn v3", &[53], &[49]),
    (
        "AddPartitionsToTxn v4 (verify only, from a broker)",
        &[31],
        &[0, 49],
    ),
    ("AddOffsetsToTxn (transactional id only)", &[53], &[30]),
    ("AddOffsetsToTxn", &[53], &[49]),
    ("TxnOffsetCommit (transactional id and group)", &[53], &[29]),
    ("EndTxn", &[53], &[49]),
    ("Produce (transactional batch)", &[53], &[53]),
    ("DescribeTransactions", &[53], &[0]),
    ("ListTransactions", &[0, 0], &[0, 1]),
    ("WriteTxnMarkers", &[31], &[3]),
    ("DescribeUserScramCredentials", &[31, 31], &[0, 91]),
    ("AlterUserScramCredentials", &[31], &[91]),
    ("DescribeAcls", &[31], &[0]),
    ("CreateAcls", &[31], &[0]),
    ("DeleteAcls", &[31], &[0]),
    ("DescribeClientQuotas", &[31, -1], &[0, 0]),
    ("AlterClientQuotas (validate only)", &[31], &[0]),
    ("AlterClientQuotas (unknown key)", &[31], &[42]),
    ("UpdateFeatures (validate only)", &[31], &[0]),
    ("ShareGroupHeartbeat (group only)", &[30], &[29]),
    ("ShareGroupHeartbeat", &[30], &[0]),
    ("ShareGroupDescribe (group only)", &[30], &[29]),
    ("ShareGroupDescribe", &[30], &[0]),
    ("DescribeShareGroupOffsets (group only)", &[30], &[0, 29]),
    ("DescribeShareGroupOffsets", &[30], &[0, 0]),
    ("AlterShareGroupOffsets (group only)", &[30], &[68]),
    ("DeleteShareGroupOffsets (group only)", &[30], &[68]),
];

/// [`acl_api_scenarios`] as Apache Kafka 4.4 answers them.
const EXPECTED_ACL_APIS: &[&str] = &[
    "create: [0, 0, 0, 0, 42, 42, 42, 42, 0]",
    "create with pattern ANY: [-1, -1]",
    "create with pattern MATCH: [-1, -1]",
    "create with operation ANY: [-1, -1]",
    "create with permission ANY: [-1, -1]",
    "create with resource type ANY: [-1, -1]",
    "describe literal t1: 0 [(2, \"t1-RUN\", 3, \"User:alice\", \"*\", 3, 3), (2, \"t1-RUN\", 3, \"User:bob\", \"10.0.0.1\", 3, 2)]",
    "describe any t1: 0 [(2, \"t1-RUN\", 3, \"User:alice\", \"*\", 3, 3), (2, \"t1-RUN\", 3, \"User:bob\", \"10.0.0.1\", 3, 2)]",
    "describe match inside the prefix: 0 [(2, \"pre-RUN\", 4, \"User:alice\", \"*\", 4, 3)]",
    "describe prefixed: 0 [(2, \"pre-RUN\", 4, \"User:alice\", \"*\", 4, 3)]",
    "describe match a group: 0 [(3, \"*\", 3, \"User:*\", \"*\", 8, 3)]",
    "describe bob's: 0 [(2, \"t1-RUN\", 3, \"User:bob\", \"10.0.0.1\", 3, 2)]",
    "describe host 10.0.0.1: 0 [(2, \"t1-RUN\", 3, \"User:bob\", \"10.0.0.1\", 3, 2)]",
    "describe deny: 0 [(2, \"t1-RUN\", 3, \"User:bob\", \"10.0.0.1\", 3, 2)]",
    "describe write: 0 [(2, \"pre-RUN\", 4, \"User:alice\", \"*\", 4, 3)]",
    "delete: 0 [(\"t1-RUN\", \"User:alice\", 0), (\"t1-RUN\", \"User:bob\", 0)]",
    "left: 0 [(2, \"pre-RUN\", 4, \"User:alice\", \"*\", 4, 3)]",
    "create, unknown resource type: closed",
    "create, unknown pattern type: closed",
    "create, unknown operation: closed",
    "create, unknown permission: closed",
    "create, operation 99: answered",
    "describe, unknown pattern type: closed",
    "describe, unknown operation: closed",
];

#[test]
fn every_api_is_authorized_as_kafka_authorizes_it() {
    let (_fjord, target) = fjord_target();
    let fjord_acl_apis = acl_api_scenarios(&target);
    let fjord = run_matrix(&target);
    print("Fjord", &fjord);
    let mut kafka_acl_apis = None;
    let kafka = match kafka_target() {
        Some((peer, target)) => {
            kafka_acl_apis = Some(acl_api_scenarios(&target));
            let rows = run_matrix(&target);
            print("Apache Kafka", &rows);
            drop(peer);
            Some(rows)
        }
        None => {
            assert!(
                std::env::var("FJORD_REQUIRE_KAFKA_PEER").is_err(),
                "FJORD_REQUIRE_KAFKA_PEER is set but Kafka's jars are not installed (scripts/peers/kafka install)"
            );
            eprintln!(
                "Apache Kafka is not installed: Fjord is held against the recorded matrix only"
            );
            None
        }
    };
    let mut differences = Vec::new();
    let expected: Vec<(String, Vec<i32>, Vec<i32>)> = EXPECTED
        .iter()
        .map(|(n, a, b)| (n.to_string(), a.to_vec(), b.to_vec()))
        .collect();
    if let Some(k) = &kafka {
        for (e, got) in expected.iter().zip(k) {
            if e != got {
                differences.push(format!(
                    "Kafka differs from the recorded matrix: {got:?}, recorded {e:?}"
                ));
            }
        }
    }
    match &kafka_acl_apis {
        Some(k) => {
            for (f, k) in fjord_acl_apis.iter().zip(k) {
                if f != k {
                    differences.push(format!("ACL APIs: Fjord {f}\n           Kafka {k}"));
                }
            }
        }
        None => {
            let recorded: Vec<String> = EXPECTED_ACL_APIS.iter().map(|l| l.to_string()).collect();
            if fjord_acl_apis != recorded {
                differences.push(format!(
                    "ACL APIs: Fjord {fjord_acl_apis:#?}, recorded {recorded:#?}"
                ));
            }
        }
    }
    if let Some(k) = &kafka_acl_apis {
        if k.iter()
            .map(String::as_str)
            .ne(EXPECTED_ACL_APIS.iter().copied())
        {
            eprintln!("--- Kafka's ACL API answers (EXPECTED_ACL_APIS):");
            for l in k {
                eprintln!("    {l:?},");
            }
            differences.push("Kafka's ACL API answers differ from EXPECTED_ACL_APIS".into());
        }
    }
    let reference = kafka.as_ref().unwrap_or(&expected);
    assert_eq!(reference.len(), fjord.len(), "one row per case");
    for (r, f) in reference.iter().zip(&fjord) {
        if r != f {
            differences.push(format!("Fjord {f:?}, Kafka {r:?}"));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// A plain connection (PLAINTEXT: `User:ANONYMOUS`).
fn plain(addr: &str) -> Conn {
    Conn::new(addr)
}

/// Metadata's codes for `topics` as `c` sees them.
fn topic_codes(c: &mut Conn, topics: &[&str]) -> Vec<i32> {
    let r = metadata(c, Some(topics.to_vec()), false, 12);
    r.topics.iter().map(|t| i(t.error_code)).collect()
}

/// Every ACL `c`'s broker describes, as (type, name, principal, operation).
fn described(c: &mut Conn) -> Vec<(i8, String, String, i8)> {
    let req = DescribeAclsRequest::default()
        .with_resource_type_filter(1)
        .with_resource_name_filter(None)
        .with_pattern_type_filter(1)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_operation(1)
        .with_permission_type(1);
    let r = c.call(3, &req);
    assert_eq!(r.error_code, 0, "DescribeAcls");
    let mut out: Vec<_> = r
        .resources
        .iter()
        .flat_map(|res| {
            res.acls.iter().map(|a| {
                (
                    res.resource_type,
                    res.resource_name.to_string(),
                    a.principal.to_string(),
                    a.operation,
                )
            })
        })
        .collect();
    out.sort();
    out
}

/// ACLs live in the metadata log: created through one node of a three-node
/// cluster, every node enforces them and describes the same set; they
/// survive a restart of every node; deleted through another node, every
/// node lets the principal in again. (`allow.everyone.if.no.acl.found`
/// lets `User:ANONYMOUS`, the nodes' own PLAINTEXT principal, do what no
/// ACL names, so the test needs no super user.)
#[test]
fn acls_agree_across_a_cluster_and_survive_restarts() {
    let mut cluster = Cluster::start(
        3,
        &[
            &format!("authorizer.class.name={STANDARD_AUTHORIZER}"),
            "allow.everyone.if.no.acl.found=true",
        ],
    );
    let ids = cluster.ids();
    let mut first = plain(&cluster.bootstrap(ids[0]));
    let req = CreateTopicsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(
            ["locked", "open"]
                .iter()
                .map(|t| {
                    create_topics_request::CreatableTopic::default()
                        .with_name(tn(t))
                        .with_num_partitions(1)
                        .with_replication_factor(3)
                })
                .collect(),
        );
    let r = first.call(7, &req);
    assert!(r.topics.iter().all(|t| t.error_code == 0), "{r:?}");
    // An ACL for bob on `locked`: the topic now has ACLs, none for
    // ANONYMOUS, so ANONYMOUS may no longer describe it.
    let mut bob_only = acl(TOPIC, "locked", DESCRIBE);
    bob_only.principal = s("User:bob");
    create_acls(&mut first, vec![bob_only]);
    assert_eq!(topic_codes(&mut first, &["locked", "open"]), vec![29, 0]);
    let each_node = |cluster: &Cluster, want: Vec<i32>| {
        for id in cluster.ids() {
            poll_until(Duration::from_secs(30), "the node applies the ACLs", || {
                let mut c = plain(&cluster.bootstrap(id));
                let got = topic_codes(&mut c, &["locked", "open"]);
                if got == want {
                    Ok(())
                } else {
                    Err(format!("node {id}: {got:?}"))
                }
            });
        }
    };
    each_node(&cluster, vec![29, 0]);
    let sets: Vec<_> = cluster
        .ids()
        .iter()
        .map(|id| described(&mut plain(&cluster.bootstrap(*id))))
        .collect();
    assert_eq!(sets[0].len(), 1, "{sets:?}");
    assert!(sets.iter().all(|s| *s == sets[0]), "{sets:?}");

    cluster.restart_all();
    each_node(&cluster, vec![29, 0]);

    let mut other = plain(&cluster.bootstrap(ids[2]));
    let f = delete_acls_request::DeleteAclsFilter::default()
        .with_resource_type_filter(TOPIC)
        .with_resource_name_filter(Some(s("locked")))
        .with_pattern_type_filter(LITERAL)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_operation(1)
        .with_permission_type(1);
    let r = other.call(3, &DeleteAclsRequest::default().with_filters(vec![f]));
    assert_eq!(r.filter_results[0].matching_acls.len(), 1, "{r:?}");
    each_node(&cluster, vec![0, 0]);
}
