//! Leader-epoch fencing (KIP-320) through the real broker: a Fetch or
//! ListOffsets whose `current_leader_epoch` is older than the partition's
//! gets FENCED_LEADER_EPOCH (74), a newer one UNKNOWN_LEADER_EPOCH (75), the
//! current one (or -1) is served; Fetch v16 names the current leader and its
//! endpoint (KIP-951); ListOffsets answers with real leader epochs. The
//! restart moves the partition's leader epoch above 0 (its leader leaves at
//! shutdown and comes back), so an older epoch exists to fence.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::TcpStream;

use bytes::{Bytes, BytesMut};
use common::*;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    BrokerId, CreateTopicsRequest, FetchRequest, FetchResponse, ListOffsetsRequest,
    MetadataRequest, ProduceRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use uuid::Uuid;

const FENCED_LEADER_EPOCH: i16 = 74;
const UNKNOWN_LEADER_EPOCH: i16 = 75;

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// One record batch of one record with timestamp `ts`.
fn batch(ts: i64) -> Bytes {
    let rec = Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp: ts,
        key: None,
        value: Some(Bytes::from_static(b"v")),
        headers: Default::default(),
    };
    let mut buf = BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, [rec].iter(), &opts).expect("encode batch");
    buf.freeze()
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
        assert_eq!(produce(&mut s, topic, 1_000, 2), 0);
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
}
