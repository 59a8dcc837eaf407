//! Partitions are opened off the shard's reactor (src/shard/opening.rs):
//! until the open of a partition this broker leads has ended, Produce,
//! Fetch and ListOffsets get NOT_LEADER_OR_FOLLOWER (6), Kafka's answer for
//! a replica it does not host yet, and the partition is served once it
//! opened. A topic deleted while its partition opens leaves no directory
//! behind (the deletion runs after the open, with its cause logged), and
//! the name created again starts empty.
//!
//! Deterministic: the broker holds the open of the test's topic
//! (`FJORD_FAULT_OPEN_HOLD`, src/shard/fault.rs) until the test creates
//! the release file, and logs when the hold starts.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::TcpStream;
use std::time::Duration;

use bytes::Bytes;
use common::*;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    BrokerId, CreateTopicsRequest, DeleteTopicsRequest, FetchRequest, ListOffsetsRequest,
    ProduceRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;

const NOT_LEADER_OR_FOLLOWER: i16 = 6;

fn tn(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn create(s: &mut TcpStream, topic: &str) {
    let req = CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(tn(topic))
            .with_num_partitions(1)
            .with_replication_factor(1)]);
    let resp = kp_call(s, 7, 1, &req);
    assert_eq!(resp.topics[0].error_code, 0, "{:?}", resp.topics[0]);
}

fn delete(s: &mut TcpStream, topic: &str) {
    let req = DeleteTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![DeleteTopicState::default().with_name(Some(tn(topic)))]);
    let resp = kp_call(s, 6, 2, &req);
    assert_eq!(resp.responses[0].error_code, 0, "{:?}", resp.responses[0]);
}

/// Produce v11 of one record to partition 0: (error code, base offset).
fn produce(s: &mut TcpStream, topic: &str, value: &'static [u8]) -> (i16, i64) {
    let req = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(tn(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(one_record_batch(
                    Bytes::from_static(value),
                    now_ms(),
                )))])]);
    let resp = kp_call(s, 11, 3, &req);
    let p = &resp.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// Fetch v12 (topics by name) of partition 0 from offset 0: (error code,
/// high watermark, bytes of records).
fn fetch(s: &mut TcpStream, topic: &str) -> (i16, i64, usize) {
    let req = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(0)
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(tn(topic))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_current_leader_epoch(-1)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])]);
    let resp = kp_call(s, 12, 4, &req);
    let p = &resp.responses[0].partitions[0];
    (
        p.error_code,
        p.high_watermark,
        p.records.as_ref().map_or(0, |r| r.len()),
    )
}

/// ListOffsets v7 latest of partition 0: (error code, offset).
fn latest(s: &mut TcpStream, topic: &str) -> (i16, i64) {
    let req = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(tn(topic))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_current_leader_epoch(-1)
                .with_timestamp(-1)])]);
    let resp = kp_call(s, 7, 5, &req);
    let p = &resp.topics[0].partitions[0];
    (p.error_code, p.offset)
}

/// Waits until the broker logged `line`.
fn wait_logged(broker: &Broker, line: &str) {
    poll_until(CLIENT_TIMEOUT, line, || {
        let text = broker.stderr_text();
        if text.contains(line) {
            Ok(())
        } else {
            Err(text.lines().last().unwrap_or_default().to_string())
        }
    });
}

fn release(broker: &Broker, topic: &str) {
    std::fs::write(
        broker
            .data_dir()
            .join(format!("fault-release-open-{topic}")),
        b"",
    )
    .unwrap();
}

#[test]
fn a_partition_answers_not_leader_until_its_log_is_open() {
    let topic = "held";
    let broker = Broker::start_with_env(&[], &[("FJORD_FAULT_OPEN_HOLD", topic)]);
    let mut s = connect(&broker.bootstrap());
    // Answered after a bounded wait for the open (it is held).
    create(&mut s, topic);
    wait_logged(&broker, &format!("fault injection: open of {topic}-0 held"));

    // Still opening: every data-path API says NOT_LEADER_OR_FOLLOWER, and
    // nothing is appended.
    for _ in 0..3 {
        assert_eq!(produce(&mut s, topic, b"early").0, NOT_LEADER_OR_FOLLOWER);
        assert_eq!(fetch(&mut s, topic).0, NOT_LEADER_OR_FOLLOWER);
        assert_eq!(latest(&mut s, topic).0, NOT_LEADER_OR_FOLLOWER);
    }

    release(&broker, topic);
    wait_logged(
        &broker,
        &format!("fault injection: open of {topic}-0 released"),
    );
    // Served once open: the first record gets offset 0.
    let first = poll_until(CLIENT_TIMEOUT, "the partition served", || {
        match produce(&mut s, topic, b"first") {
            (0, offset) => Ok(offset),
            (code, _) => Err(format!("error {code}")),
        }
    });
    assert_eq!(first, 0, "nothing was appended while it opened");
    assert_eq!(produce(&mut s, topic, b"second"), (0, 1));
    let (code, hw, bytes) = fetch(&mut s, topic);
    assert_eq!((code, hw), (0, 2));
    assert!(bytes > 0);
    assert_eq!(latest(&mut s, topic), (0, 2));
}

#[test]
fn a_topic_deleted_while_its_partition_opens_leaves_nothing_behind() {
    let topic = "gone";
    let mut broker = Broker::start_with_env(&[], &[("FJORD_FAULT_OPEN_HOLD", topic)]);
    let mut s = connect(&broker.bootstrap());
    create(&mut s, topic);
    wait_logged(&broker, &format!("fault injection: open of {topic}-0 held"));
    delete(&mut s, topic);

    // The open goes on, then the deletion runs after it, with its cause.
    release(&broker, topic);
    let dir = broker.data_dir().join(format!("{topic}-0"));
    let deleting = format!("deleting {}", dir.display());
    wait_logged(&broker, &deleting);
    let text = broker.stderr_text();
    let line = text.lines().find(|l| l.contains(&deleting)).unwrap();
    assert!(
        line.contains("the topic was deleted by the metadata record at offset"),
        "the cause is logged with the deletion: {line}"
    );
    let data_dir = broker.data_dir();
    let leftovers = || -> Vec<String> {
        std::fs::read_dir(&data_dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&format!("{topic}-")))
            .collect()
    };
    poll_until(
        Duration::from_secs(10),
        "no directory of the deleted topic",
        || {
            let left = leftovers();
            if left.is_empty() {
                Ok(())
            } else {
                Err(format!("{left:?}"))
            }
        },
    );

    // The name created again starts empty (the release file lets its open
    // through at once) and keeps what it is given across a restart.
    create(&mut s, topic);
    let first = poll_until(CLIENT_TIMEOUT, "the new topic served", || {
        match produce(&mut s, topic, b"new") {
            (0, offset) => Ok(offset),
            (code, _) => Err(format!("error {code}")),
        }
    });
    assert_eq!(first, 0);
    drop(s);
    broker.stop();
    broker.set_env(&[]);
    broker.restart();
    let mut s = connect(&broker.bootstrap());
    poll_until(
        CLIENT_TIMEOUT,
        "the record after a restart",
        || match latest(&mut s, topic) {
            (0, 1) => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    assert_eq!(leftovers(), vec![format!("{topic}-0")]);
}
