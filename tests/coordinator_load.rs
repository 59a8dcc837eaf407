//! A coordinator loads its partition in the background (read off the
//! reactor in chunks) when this broker becomes the partition's leader, and
//! until it is loaded answers COORDINATOR_LOAD_IN_PROGRESS (14) for the
//! groups and transactional ids it holds, as Kafka does; clients retry.
//! The load is held with the test-only fault hook `FJORD_FAULT_LOAD_HOLD`
//! (src/shard/fault.rs) for as long as the test needs, so nothing here
//! depends on how fast the load is; once released, the state written before
//! the restart is there.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    CreateTopicsRequest, DescribeGroupsRequest, DescribeTransactionsRequest,
    FindCoordinatorRequest, GroupId, InitProducerIdRequest, JoinGroupRequest, ListGroupsRequest,
    ListTransactionsRequest, OffsetCommitRequest, OffsetFetchRequest, TopicName, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;

const LOAD_IN_PROGRESS: i16 = 14;
const GROUP: &str = "load-group";
const TXN_ID: &str = "load-txn";
const TOPIC: &str = "load-topic";
const OVERRIDES: &[&str] = &[
    "offsets.topic.num.partitions=2",
    "transaction.state.log.num.partitions=2",
];

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// FindCoordinator v3 until it answers 0 (the first call creates the
/// internal topic).
fn find_coordinator(s: &mut std::net::TcpStream, key: &str, key_type: i8) {
    let req = FindCoordinatorRequest::default()
        .with_key(sb(key))
        .with_key_type(key_type);
    let mut cid = 100;
    wait_for(Duration::from_secs(30), "FindCoordinator", || {
        cid += 1;
        kp_call(s, 3, cid, &req).error_code == 0
    });
}

/// OffsetFetch v5 of [`GROUP`]'s offset for `TOPIC`-0: (top-level error,
/// committed offset).
fn fetch_offset(s: &mut std::net::TcpStream, cid: i32) -> (i16, i64) {
    let req = OffsetFetchRequest::default()
        .with_group_id(GroupId(sb(GROUP)))
        .with_topics(Some(vec![OffsetFetchRequestTopic::default()
            .with_name(TopicName(sb(TOPIC)))
            .with_partition_indexes(vec![0])]));
    let r = kp_call(s, 5, cid, &req);
    let offset = r
        .topics
        .first()
        .and_then(|t| t.partitions.first())
        .map_or(-1, |p| p.committed_offset);
    (r.error_code, offset)
}

/// InitProducerId v1 for [`TXN_ID`]: (error, producer id, epoch).
fn init_producer(s: &mut std::net::TcpStream, cid: i32) -> (i16, i64, i16) {
    let req = InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(sb(TXN_ID))))
        .with_transaction_timeout_ms(60_000);
    let r = kp_call(s, 1, cid, &req);
    (r.error_code, r.producer_id.0, r.producer_epoch)
}

#[test]
fn coordinators_answer_load_in_progress_until_their_partition_is_loaded() {
    let mut broker = Broker::start_with(OVERRIDES);
    let mut s = connect(&broker.bootstrap());
    let create = CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(sb(TOPIC)))
            .with_num_partitions(1)
            .with_replication_factor(1)]);
    assert_eq!(kp_call(&mut s, 4, 1, &create).topics[0].error_code, 0);

    // A committed offset (a simple commit: no member, generation -1) and a
    // transactional id with its producer id and epoch.
    find_coordinator(&mut s, GROUP, 0);
    let commit = OffsetCommitRequest::default()
        .with_group_id(GroupId(sb(GROUP)))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(sb(TOPIC)))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(42)])]);
    let r = kp_call(&mut s, 2, 2, &commit);
    assert_eq!(r.topics[0].partitions[0].error_code, 0, "OffsetCommit");
    find_coordinator(&mut s, TXN_ID, 1);
    let (code, pid, epoch) = init_producer(&mut s, 3);
    assert_eq!(code, 0, "InitProducerId");
    drop(s);

    // Restarted with every coordinator load held.
    let hold = broker.data_dir().with_file_name("hold-loads");
    std::fs::write(&hold, b"held").unwrap();
    broker.stop();
    broker.set_env(&[("FJORD_FAULT_LOAD_HOLD", hold.to_str().unwrap())]);
    broker.restart();
    wait_for(Duration::from_secs(30), "both loads held", || {
        let text = broker.stderr_text();
        text.contains("fault injection: load of __consumer_offsets-")
            && text.contains("fault injection: load of __transaction_state-")
    });
    let mut s = connect(&broker.bootstrap());

    assert_eq!(fetch_offset(&mut s, 10).0, LOAD_IN_PROGRESS, "OffsetFetch");
    let join = JoinGroupRequest::default()
        .with_group_id(GroupId(sb(GROUP)))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_protocol_type(sb("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(sb("range"))
            .with_metadata(bytes::Bytes::from_static(&[0, 0, 0, 0, 0, 0]))]);
    assert_eq!(
        kp_call(&mut s, 5, 11, &join).error_code,
        LOAD_IN_PROGRESS,
        "JoinGroup"
    );
    let describe = DescribeGroupsRequest::default().with_groups(vec![GroupId(sb(GROUP))]);
    assert_eq!(
        kp_call(&mut s, 5, 12, &describe).groups[0].error_code,
        LOAD_IN_PROGRESS,
        "DescribeGroups"
    );
    assert_eq!(
        kp_call(&mut s, 3, 13, &ListGroupsRequest::default()).error_code,
        LOAD_IN_PROGRESS,
        "ListGroups"
    );
    assert_eq!(
        init_producer(&mut s, 14).0,
        LOAD_IN_PROGRESS,
        "InitProducerId"
    );
    let describe_txn = DescribeTransactionsRequest::default()
        .with_transactional_ids(vec![TransactionalId(sb(TXN_ID))]);
    assert_eq!(
        kp_call(&mut s, 0, 15, &describe_txn).transaction_states[0].error_code,
        LOAD_IN_PROGRESS,
        "DescribeTransactions"
    );
    assert_eq!(
        kp_call(&mut s, 0, 16, &ListTransactionsRequest::default()).error_code,
        LOAD_IN_PROGRESS,
        "ListTransactions"
    );

    // Released: what was written before the restart is back.
    std::fs::remove_file(&hold).unwrap();
    let mut cid = 20;
    let mut fetched = (LOAD_IN_PROGRESS, -1);
    wait_for(Duration::from_secs(30), "the offsets load", || {
        cid += 1;
        fetched = fetch_offset(&mut s, cid);
        fetched.0 != LOAD_IN_PROGRESS
    });
    assert_eq!(fetched, (0, 42), "the committed offset after the load");
    let mut init = (LOAD_IN_PROGRESS, -1, -1);
    wait_for(
        Duration::from_secs(30),
        "the transaction state load",
        || {
            cid += 1;
            init = init_producer(&mut s, cid);
            init.0 != LOAD_IN_PROGRESS
        },
    );
    // The same producer id with the next epoch: the loaded state, not a
    // new transactional id.
    assert_eq!(init, (0, pid, epoch + 1), "InitProducerId after the load");
}
