//! READ_COMMITTED (KIP-98) over the wire: transactional batches sent with a
//! raw Produce (attributes bit 4) keep the last stable offset (LSO) at the
//! start of the open transaction, so READ_COMMITTED Fetch and ListOffsets
//! stop there while READ_UNCOMMITTED sees everything; a client-sent control
//! batch is refused with INVALID_RECORD. Transactional batches need the
//! request's transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and a
//! partition added to the open transaction (INVALID_TXN_STATE), so no
//! transaction the coordinator does not know can hold the LSO. (Markers are
//! written by the transaction coordinator; `Partition::write_marker` is
//! tested in the unit tests.)

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use bytes::{Bytes, BytesMut};
use common::*;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, BrokerId, CreateTopicsRequest, DescribeProducersRequest,
    FetchRequest, FetchResponse, InitProducerIdRequest, ListOffsetsRequest, ProduceRequest,
    ProducerId, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

const TOPIC: &str = "rc";
const INVALID_RECORD: i16 = 87;
const INVALID_TXN_STATE: i16 = 48;
const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
const TXN_ID: &str = "rc-txn";

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// One batch of `n` records; transactional/control as asked.
fn batch(pid: i64, epoch: i16, seq: i32, n: i64, ts: i64, txn: bool, control: bool) -> Bytes {
    let recs: Vec<Record> = (0..n)
        .map(|i| Record {
            transactional: txn,
            control,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: pid,
            producer_epoch: epoch,
            timestamp_type: TimestampType::Creation,
            offset: i,
            sequence: seq + i as i32,
            timestamp: ts + i,
            key: Some(Bytes::from(if control {
                vec![0, 0, 0, 1]
            } else {
                format!("k{i}").into_bytes()
            })),
            value: Some(Bytes::from(format!("v{i}"))),
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, recs.iter(), &opts).expect("encode batch");
    buf.freeze()
}

/// Creates `topic` with `partitions` partitions (replication factor 1)
/// with a raw CreateTopics v4.
fn create_topic(s: &mut std::net::TcpStream, topic: &str, partitions: i32) {
    let create = CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(sb(topic)))
            .with_num_partitions(partitions)
            .with_replication_factor(1)]);
    let resp = kp_call(s, 4, 1, &create);
    assert_eq!(resp.topics[0].error_code, 0, "CreateTopics {topic}");
}

/// InitProducerId v1 for [`TXN_ID`]: its (producer id, epoch).
fn init_producer(s: &mut std::net::TcpStream) -> (i64, i16) {
    let init = InitProducerIdRequest::default()
        .with_transactional_id(Some(sb(TXN_ID).into()))
        .with_transaction_timeout_ms(60_000);
    let resp = kp_call(s, 1, 2, &init);
    assert_eq!(resp.error_code, 0, "InitProducerId");
    (resp.producer_id.0, resp.producer_epoch)
}

fn produce(s: &mut std::net::TcpStream, records: Bytes, cid: i32) -> (i16, i64) {
    produce_as(s, records, cid, Some(TXN_ID))
}

fn produce_as(
    s: &mut std::net::TcpStream,
    records: Bytes,
    cid: i32,
    transactional_id: Option<&str>,
) -> (i16, i64) {
    let req = ProduceRequest::default()
        .with_transactional_id(transactional_id.map(|t| sb(t).into()))
        .with_acks(-1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(sb(TOPIC)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(records))])]);
    let resp = kp_call(s, 8, cid, &req);
    let p = &resp.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

fn fetch(s: &mut std::net::TcpStream, offset: i64, isolation: i8, cid: i32) -> FetchResponse {
    let req = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(0)
        .with_max_bytes(1 << 20)
        .with_isolation_level(isolation)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(sb(TOPIC)))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(1 << 20)])]);
    kp_call(s, 11, cid, &req)
}

/// Offsets of the records in a fetch response's partition 0.
fn record_offsets(resp: &FetchResponse) -> Vec<i64> {
    let p = &resp.responses[0].partitions[0];
    let mut b = p.records.clone().unwrap_or_default();
    if b.is_empty() {
        return Vec::new();
    }
    RecordBatchDecoder::decode_all(&mut b)
        .expect("decode records")
        .into_iter()
        .flat_map(|set| set.records.into_iter().map(|r| r.offset))
        .collect()
}

fn list_offset(s: &mut std::net::TcpStream, ts: i64, isolation: i8, cid: i32) -> i64 {
    let req = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_isolation_level(isolation)
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(TopicName(sb(TOPIC)))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_timestamp(ts)])]);
    let resp = kp_call(s, 4, cid, &req);
    let p = &resp.topics[0].partitions[0];
    assert_eq!(p.error_code, 0, "ListOffsets error");
    p.offset
}

#[test]
fn read_committed_stops_at_the_lso() {
    let broker = Broker::start();
    let mut s = connect(&broker.bootstrap());
    create_topic(&mut s, TOPIC, 1);

    let (pid, epoch) = init_producer(&mut s);

    let ts = now_ms();
    // 0..=1: plain records; 2..=4: an open transaction of `pid`.
    assert_eq!(
        produce_as(&mut s, batch(-1, -1, -1, 2, ts, false, false), 3, None),
        (0, 0)
    );
    let txn_batch = batch(pid, epoch, 0, 3, ts + 100, true, false);
    // Refused without a transactional id, and before the partition is in
    // the transaction; nothing is appended.
    assert_eq!(
        produce_as(&mut s, txn_batch.clone(), 20, None).0,
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    );
    assert_eq!(produce(&mut s, txn_batch.clone(), 21).0, INVALID_TXN_STATE);
    let add = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(sb(TXN_ID).into())
        .with_v3_and_below_producer_id(ProducerId(pid))
        .with_v3_and_below_producer_epoch(epoch)
        .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
            .with_name(TopicName(sb(TOPIC)))
            .with_partitions(vec![0])]);
    let resp = kp_call(&mut s, 3, 22, &add);
    assert_eq!(
        resp.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
        0
    );
    // One record batch per partition (Kafka's rule for Produce v3+): a
    // second batch cannot slip another producer's transaction past the
    // check.
    let mut two = BytesMut::from(&txn_batch[..]);
    two.extend_from_slice(&batch(pid + 1, 0, 0, 1, ts, true, false));
    assert_eq!(produce(&mut s, two.freeze(), 23).0, INVALID_RECORD);
    assert_eq!(produce(&mut s, txn_batch, 4), (0, 2));

    let rc = fetch(&mut s, 0, 1, 5);
    let p = &rc.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    assert_eq!((p.high_watermark, p.last_stable_offset), (5, 2));
    assert_eq!(p.aborted_transactions.as_deref().map(|v| v.len()), Some(0));
    assert_eq!(record_offsets(&rc), vec![0, 1]);
    // At the LSO: nothing yet, no error.
    let rc = fetch(&mut s, 2, 1, 6);
    assert_eq!(rc.responses[0].partitions[0].error_code, 0);
    assert!(record_offsets(&rc).is_empty());

    let ru = fetch(&mut s, 0, 0, 7);
    let p = &ru.responses[0].partitions[0];
    assert_eq!((p.high_watermark, p.last_stable_offset), (5, 2));
    assert!(p.aborted_transactions.is_none());
    assert_eq!(record_offsets(&ru), vec![0, 1, 2, 3, 4]);

    // ListOffsets: LATEST is the LSO under READ_COMMITTED; a timestamp only
    // found in the open transaction is not answered there.
    assert_eq!(list_offset(&mut s, -1, 1, 8), 2);
    assert_eq!(list_offset(&mut s, -1, 0, 9), 5);
    assert_eq!(list_offset(&mut s, ts + 100, 1, 10), -1);
    assert_eq!(list_offset(&mut s, ts + 100, 0, 11), 2);
    assert_eq!(list_offset(&mut s, ts, 1, 12), 0);

    // DescribeProducers shows the open transaction's first offset.
    let dp = DescribeProducersRequest::default().with_topics(vec![TopicRequest::default()
        .with_name(TopicName(sb(TOPIC)))
        .with_partition_indexes(vec![0])]);
    let resp = kp_call(&mut s, 0, 13, &dp);
    let prods = &resp.topics[0].partitions[0].active_producers;
    let me = prods
        .iter()
        .find(|x| x.producer_id.0 == pid)
        .expect("producer listed");
    assert_eq!(me.current_txn_start_offset, 2);

    // Clients may not write control batches (markers).
    let (code, _) = produce(&mut s, batch(pid, epoch, 3, 1, ts, true, true), 14);
    assert_eq!(code, INVALID_RECORD);
    // The transaction is still open after a restart (rebuilt from the log).
    drop(s);
    let mut broker = broker;
    broker.restart();
    let mut s = connect(&broker.bootstrap());
    assert_eq!(list_offset(&mut s, -1, 1, 15), 2);
    let rc = fetch(&mut s, 0, 1, 16);
    assert_eq!(rc.responses[0].partitions[0].last_stable_offset, 2);
    assert_eq!(record_offsets(&rc), vec![0, 1]);
}

/// Tasks the shards sent to each other while serving Produce requests
/// (`fjord_cross_shard_calls_total{api_key="0"}`, summed over shards).
fn produce_cross_shard_calls(addr: &str) -> f64 {
    let (status, body) = fjord::metrics::fetch(addr, "/metrics").expect("metrics");
    assert_eq!(status, 200);
    fjord::metrics::parse(&body)
        .iter()
        .filter(|s| s.name == "fjord_cross_shard_calls_total" && s.labels.contains("api_key=\"0\""))
        .map(|s| s.value)
        .sum()
}

/// One Produce of a transaction's first batch on each of ten partitions
/// spread over both shards: each owner asks the coordinator once for all
/// its partitions (KIP-890's check) and appends the confirmed ones itself,
/// so the request costs at most two cross-shard rounds (connection shard →
/// owner, owner → coordinator shard), not one per partition. The same
/// holds when the coordinator refuses them all.
#[test]
fn first_transactional_batches_on_ten_partitions_take_two_cross_shard_rounds() {
    let topic = "rounds";
    let parts = 10;
    let owners: std::collections::BTreeSet<usize> = (0..parts)
        .map(|p| fjord::cluster::metadata::owner_shard(topic, p, 2))
        .collect();
    assert_eq!(owners.len(), 2, "the partitions should live on both shards");
    let broker = Broker::start_with(&["metrics.listener=127.0.0.1:0"]);
    let metrics = broker.metrics_address();
    let mut s = connect(&broker.bootstrap());
    create_topic(&mut s, topic, parts);
    let (pid, epoch) = init_producer(&mut s);
    let ts = now_ms();
    // One transactional batch of `n` records from sequence `seq` on every
    // partition; the partitions' error codes.
    let produce_all = |s: &mut std::net::TcpStream, cid: i32, seq: i32, n: i64| -> Vec<i16> {
        let req = ProduceRequest::default()
            .with_transactional_id(Some(sb(TXN_ID).into()))
            .with_acks(-1)
            .with_timeout_ms(5_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(sb(topic)))
                .with_partition_data(
                    (0..parts)
                        .map(|p| {
                            PartitionProduceData::default()
                                .with_index(p)
                                .with_records(Some(batch(pid, epoch, seq, n, ts, true, false)))
                        })
                        .collect(),
                )]);
        let resp = kp_call(s, 8, cid, &req);
        resp.responses[0]
            .partition_responses
            .iter()
            .map(|p| p.error_code)
            .collect()
    };

    // Not yet in the transaction: all refused, in at most two rounds.
    let before = produce_cross_shard_calls(&metrics);
    assert_eq!(produce_all(&mut s, 3, 0, 2), vec![INVALID_TXN_STATE; 10]);
    let refused = produce_cross_shard_calls(&metrics) - before;
    // Exactly two whichever shard the connection landed on: the other
    // owner is one call away, and of the two owners exactly one is not the
    // coordinator's shard.
    assert_eq!(
        refused, 2.0,
        "cross-shard calls for a refused 10-partition produce"
    );

    let add = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(sb(TXN_ID).into())
        .with_v3_and_below_producer_id(ProducerId(pid))
        .with_v3_and_below_producer_epoch(epoch)
        .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
            .with_name(TopicName(sb(topic)))
            .with_partitions((0..parts).collect())]);
    let resp = kp_call(&mut s, 3, 4, &add);
    let added: Vec<i16> = resp.results_by_topic_v3_and_below[0]
        .results_by_partition
        .iter()
        .map(|p| p.partition_error_code)
        .collect();
    assert_eq!(added, vec![0; 10]);

    let before = produce_cross_shard_calls(&metrics);
    assert_eq!(produce_all(&mut s, 5, 0, 2), vec![0; 10]);
    let appended = produce_cross_shard_calls(&metrics) - before;
    assert_eq!(
        appended, 2.0,
        "cross-shard calls for a 10-partition first transactional produce"
    );
    // Later batches of the transaction skip the check: one round.
    let before = produce_cross_shard_calls(&metrics);
    assert_eq!(produce_all(&mut s, 6, 2, 1), vec![0; 10]);
    let later = produce_cross_shard_calls(&metrics) - before;
    assert_eq!(later, 1.0, "cross-shard calls for a later produce");
}
