//! Leader-epoch fencing (KIP-320) through the real broker: a Fetch or
//! ListOffsets whose `current_leader_epoch` is older than the partition's
//! gets FENCED_LEADER_EPOCH (74), a newer one UNKNOWN_LEADER_EPOCH (75), the
//! current one (or -1) is served; Fetch v16 names the current leader and its
//! endpoint (KIP-951); ListOffsets answers with real leader epochs. The
//! restart moves the partition's leader epoch above 0 (its leader leaves at
//! shutdown and comes back), so an older epoch exists to fence.
//! OffsetForLeaderEpoch (KIP-101, KIP-320) answers from the leader-epoch
//! cache (`leader-epoch-checkpoint`, in Kafka's format), and librdkafka's
//! validation of a position with a leader epoch (a seek) uses it.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::TcpStream;

use bytes::Bytes;
use common::*;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    BrokerId, CreateTopicsRequest, FetchRequest, FetchResponse, ListOffsetsRequest,
    MetadataRequest, OffsetForLeaderEpochRequest, ProduceRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::consumer::Consumer;
use rdkafka::Message;
use rdkafka::{Offset, TopicPartitionList};
use uuid::Uuid;

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const FENCED_LEADER_EPOCH: i16 = 74;
const UNKNOWN_LEADER_EPOCH: i16 = 75;

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// One record batch of one record with timestamp `ts`.
fn batch(ts: i64) -> Bytes {
    one_record_batch(Bytes::from_static(b"v"), ts)
}

fn produce(s: &mut TcpStream, topic: &str, ts: i64, cid: i32) -> i64 {
    let req = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(sb(topic)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(batch(ts)))])]);
    let resp = kp_call(s, 11, cid, &req);
    let pr = &resp.responses[0].partition_responses[0];
    assert_eq!(pr.error_code, 0, "{:?}", pr.error_message);
    assert_eq!(
        pr.current_leader.leader_id.0, -1,
        "no leader hint on success"
    );
    assert!(resp.node_endpoints.is_empty());
    pr.base_offset
}

/// (leader id, leader epoch, topic id) of partition 0 from Metadata v12.
fn leader(s: &mut TcpStream, topic: &str) -> (i32, i32, Uuid) {
    let req = MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default().with_name(Some(TopicName(sb(topic))))
    ]));
    let resp = kp_call(s, 12, 1, &req);
    let t = &resp.topics[0];
    assert_eq!(t.error_code, 0);
    let p = &t.partitions[0];
    (p.leader_id.0, p.leader_epoch, t.topic_id)
}

fn fetch(
    s: &mut TcpStream,
    version: i16,
    topic: &str,
    id: Uuid,
    epoch: i32,
    cid: i32,
) -> FetchResponse {
    let req = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(0)
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(sb(topic)))
            .with_topic_id(id)
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_current_leader_epoch(epoch)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])]);
    kp_call(s, version, cid, &req)
}

/// (error code, offset, leader epoch) of ListOffsets v9 for `timestamp`.
fn list_offsets(s: &mut TcpStream, topic: &str, timestamp: i64, epoch: i32) -> (i16, i64, i32) {
    let req = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(TopicName(sb(topic)))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_current_leader_epoch(epoch)
                .with_timestamp(timestamp)])]);
    let resp = kp_call(s, 9, 3, &req);
    let p = &resp.topics[0].partitions[0];
    (p.error_code, p.offset, p.leader_epoch)
}

/// One partition of an OffsetForLeaderEpoch request: (topic, partition,
/// current leader epoch, leader epoch asked for).
type EpochAsk<'a> = (&'a str, i32, i32, i32);

/// OffsetForLeaderEpoch `version` from `replica_id` (-1: a consumer), each
/// item its own topic entry; gives (error code, leader epoch, end offset)
/// per item, in order.
fn end_offsets(
    s: &mut TcpStream,
    version: i16,
    replica_id: i32,
    items: &[EpochAsk<'_>],
) -> Vec<(i16, i32, i64)> {
    let req = OffsetForLeaderEpochRequest::default()
        .with_replica_id(BrokerId(replica_id))
        .with_topics(
            items
                .iter()
                .map(|&(topic, partition, current, epoch)| {
                    OffsetForLeaderTopic::default()
                        .with_topic(TopicName(sb(topic)))
                        .with_partitions(vec![OffsetForLeaderPartition::default()
                            .with_partition(partition)
                            .with_current_leader_epoch(current)
                            .with_leader_epoch(epoch)])
                })
                .collect(),
        );
    let resp = kp_call(s, version, 20, &req);
    assert_eq!(resp.topics.len(), items.len());
    resp.topics
        .iter()
        .zip(items)
        .map(|(t, &(topic, partition, ..))| {
            assert_eq!(t.topic.0.as_str(), topic);
            assert_eq!(t.partitions.len(), 1);
            let p = &t.partitions[0];
            assert_eq!(p.partition, partition);
            (p.error_code, p.leader_epoch, p.end_offset)
        })
        .collect()
}

/// (error code, leader epoch, end offset) of one partition (v4, a consumer).
fn end_offset(s: &mut TcpStream, topic: &str, current: i32, epoch: i32) -> (i16, i32, i64) {
    end_offsets(s, 4, -1, &[(topic, 0, current, epoch)])[0]
}

/// Seeks `consumer` to `offset` of partition 0 of `topic` with the leader
/// epoch of the record before it, as a consumer resuming from a position
/// does (librdkafka then validates it with OffsetForLeaderEpoch, KIP-320);
/// gives the offset of the first record consumed after the seek.
fn first_offset_after_seek(broker: &Broker, topic: &str, offset: i64, leader_epoch: i32) -> i64 {
    let c = broker.assigned_consumer(topic, &[0], Offset::Beginning);
    assert_eq!(consume_n(&c, 1, CLIENT_TIMEOUT)[0].offset(), 0);
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Offset(offset))
        .unwrap();
    // SAFETY: the list holds one element, alive while `tpl` is; librdkafka
    // copies the epoch into it.
    unsafe {
        rdkafka::bindings::rd_kafka_topic_partition_set_leader_epoch(
            (*tpl.ptr()).elems,
            leader_epoch,
        );
    }
    c.seek_partitions(tpl, CLIENT_TIMEOUT).unwrap();
    consume_n(&c, 1, CLIENT_TIMEOUT)[0].offset()
}

#[test]
fn current_leader_epoch_is_fenced_on_fetch_and_list_offsets() {
    let mut broker = Broker::start();
    let topic = "epochs";
    {
        let mut s = connect(&broker.bootstrap());
        let req = CreateTopicsRequest::default()
            .with_timeout_ms(10_000)
            .with_topics(vec![CreatableTopic::default()
                .with_name(TopicName(sb(topic)))
                .with_num_partitions(1)
                .with_replication_factor(1)]);
        let resp = kp_call(&mut s, 7, 1, &req);
        assert_eq!(resp.topics[0].error_code, 0, "{:?}", resp.topics[0]);
        assert_eq!(leader(&mut s, topic).1, 0, "a new partition's first epoch");
        // As Kafka 4.4 does, the leader records its epoch when it starts
        // leading (`leader-epoch-checkpoint` reads `0 0` right after the
        // creation): epoch 0 ends at the empty log's end offset.
        assert_eq!(
            end_offset(&mut s, topic, -1, 0),
            (0, 0, 0),
            "a new leader's epoch is in the cache before any append"
        );
        let checkpoint = broker
            .data_dir()
            .join(format!("{topic}-0"))
            .join("leader-epoch-checkpoint");
        assert_eq!(std::fs::read_to_string(&checkpoint).unwrap(), "0\n1\n0 0\n");
        assert_eq!(produce(&mut s, topic, 1_000, 2), 0);
        // One node, one epoch: it ends at the log end offset, in every version.
        for version in [2i16, 3, 4] {
            assert_eq!(
                end_offsets(&mut s, version, -1, &[(topic, 0, -1, 0)]),
                [(0, 0, 1)],
                "v{version}"
            );
        }
    }
    broker.restart();
    let mut s = connect(&broker.bootstrap());
    let (leader_id, epoch, id) = poll_until(CLIENT_TIMEOUT, "the partition led again", || {
        let mut s = connect(&broker.bootstrap());
        match leader(&mut s, topic) {
            l if l.0 >= 0 => Ok(l),
            l => Err(format!("{l:?}")),
        }
    });
    assert!(epoch > 0, "the restart moves the leader epoch, got {epoch}");
    assert_eq!(produce(&mut s, topic, 2_000, 4), 1);

    // Fetch v12 (by name) and v16 (by topic id, KIP-951 leader hints).
    for version in [12i16, 16] {
        let r = fetch(&mut s, version, topic, id, epoch - 1, 10);
        let p = &r.responses[0].partitions[0];
        assert_eq!(p.error_code, FENCED_LEADER_EPOCH, "v{version}");
        assert!(p.records.as_ref().is_none_or(|r| r.is_empty()));
        let hint = (p.current_leader.leader_id.0, p.current_leader.leader_epoch);
        if version >= 16 {
            assert_eq!(hint, (leader_id, epoch));
            let nodes: Vec<_> = r.node_endpoints.iter().map(|n| n.node_id.0).collect();
            assert_eq!(nodes, [leader_id]);
            let port = broker.bootstrap().rsplit(':').next().unwrap().to_string();
            assert_eq!(r.node_endpoints[0].port.to_string(), port);
        } else {
            assert_eq!(hint, (-1, -1), "Kafka sends no leader hint below v16");
        }
        let r = fetch(&mut s, version, topic, id, epoch + 1, 11);
        let p = &r.responses[0].partitions[0];
        assert_eq!(p.error_code, UNKNOWN_LEADER_EPOCH, "v{version}");
        assert_eq!(
            p.current_leader.leader_id.0, -1,
            "no hint for UNKNOWN_LEADER_EPOCH"
        );
        for ok in [epoch, -1] {
            let r = fetch(&mut s, version, topic, id, ok, 12);
            let p = &r.responses[0].partitions[0];
            assert_eq!(p.error_code, 0, "v{version} epoch {ok}");
            assert_eq!(p.high_watermark, 2);
            assert!(p.records.as_ref().is_some_and(|r| !r.is_empty()));
        }
    }

    // ListOffsets: fencing, and the epochs of the answers.
    assert_eq!(
        list_offsets(&mut s, topic, -1, epoch - 1).0,
        FENCED_LEADER_EPOCH
    );
    assert_eq!(
        list_offsets(&mut s, topic, -1, epoch + 1).0,
        UNKNOWN_LEADER_EPOCH
    );
    assert_eq!(list_offsets(&mut s, topic, -1, epoch), (0, 2, epoch));
    assert_eq!(list_offsets(&mut s, topic, -1, -1), (0, 2, epoch));
    assert_eq!(list_offsets(&mut s, topic, -2, -1), (0, 0, epoch));
    // Timestamp lookups answer with the found batch's epoch.
    assert_eq!(list_offsets(&mut s, topic, 500, -1), (0, 0, 0));
    assert_eq!(list_offsets(&mut s, topic, 1_500, -1), (0, 1, epoch));
    assert_eq!(list_offsets(&mut s, topic, -3, -1), (0, 1, epoch));

    // OffsetForLeaderEpoch: epoch 0 ended where the restart's epoch began;
    // the current epoch ends at the log end offset.
    assert_eq!(end_offset(&mut s, topic, epoch, epoch), (0, epoch, 2));
    assert_eq!(end_offset(&mut s, topic, -1, 0), (0, 0, 1));
    if epoch > 1 {
        // Between two cached epochs: the one below, ending where the next begins.
        assert_eq!(end_offset(&mut s, topic, -1, epoch - 1), (0, 0, 1));
    }
    assert_eq!(
        end_offset(&mut s, topic, -1, epoch + 1),
        (0, -1, -1),
        "above the latest epoch: undefined"
    );
    assert_eq!(end_offset(&mut s, topic, -1, -1), (0, -1, -1));
    // current_leader_epoch is checked first (KIP-320).
    assert_eq!(
        end_offset(&mut s, topic, epoch - 1, 0),
        (FENCED_LEADER_EPOCH, -1, -1)
    );
    assert_eq!(
        end_offset(&mut s, topic, epoch + 1, 0),
        (UNKNOWN_LEADER_EPOCH, -1, -1)
    );
    // Several partitions in one request, unknown ones among them; a
    // follower's request (replica_id >= 0) is answered by the leader too.
    let answers = end_offsets(
        &mut s,
        3,
        7,
        &[
            ("no-such-topic", 0, -1, 0),
            (topic, 0, -1, epoch),
            (topic, 5, -1, 0),
            (topic, 0, -1, 0),
        ],
    );
    assert_eq!(
        answers,
        [
            (UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
            (0, epoch, 2),
            (UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
            (0, 0, 1),
        ]
    );
    // The cache on disk, in Kafka's format.
    let checkpoint = broker
        .data_dir()
        .join(format!("{topic}-0"))
        .join("leader-epoch-checkpoint");
    assert_eq!(
        std::fs::read_to_string(checkpoint).unwrap(),
        format!("0\n2\n0 0\n{epoch} 1\n")
    );

    // librdkafka validates a position that carries a leader epoch: offset
    // 1 of epoch 0 is where epoch 0 ends, so it stands; offset 2 of epoch 0
    // is past it (a log truncated under the consumer), so the consumer
    // continues from epoch 0's end instead.
    assert_eq!(first_offset_after_seek(&broker, topic, 1, 0), 1);
    assert_eq!(first_offset_after_seek(&broker, topic, 2, 0), 1);
    assert_eq!(first_offset_after_seek(&broker, topic, 1, epoch), 1);
}
