//! Transactional Produce over the wire: a request's first transactional
//! batches on ten partitions over both shards cost two cross-shard rounds
//! (each owner asks the coordinator once for all its partitions, KIP-890),
//! counted with the metrics endpoint. The READ_COMMITTED rules (the LSO,
//! the refusals of transactional and control batches) are an in-process
//! scenario (tests/inprocess.rs `read_committed_stops_at_the_lso`). A first
//! Produce v12 (transactions v2) adds its partitions in the same two rounds.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use bytes::{Bytes, BytesMut};
use common::*;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, CreateTopicsRequest, InitProducerIdRequest, ProduceRequest,
    ProducerId, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

const INVALID_TXN_STATE: i16 = 48;
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

/// Transactions v2: a first Produce v12 on ten partitions over both shards,
/// with no AddPartitionsToTxn, has each owner add its partitions on the
/// coordinator in the call the verification makes: every partition
/// appended, in two cross-shard rounds, the two owners' adds on one id
/// waiting for each other rather than failing.
#[test]
fn first_produce_v12_adds_ten_partitions_in_two_cross_shard_rounds() {
    let topic = "rounds-v2";
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
                            .with_records(Some(batch(pid, epoch, 0, 2, ts, true, false)))
                    })
                    .collect(),
            )]);
    let before = produce_cross_shard_calls(&metrics);
    let resp = kp_call(&mut s, 12, 3, &req);
    let codes: Vec<i16> = resp.responses[0]
        .partition_responses
        .iter()
        .map(|p| p.error_code)
        .collect();
    assert_eq!(codes, vec![0; 10]);
    let rounds = produce_cross_shard_calls(&metrics) - before;
    assert_eq!(
        rounds, 2.0,
        "cross-shard calls for a 10-partition first Produce v12"
    );
}
