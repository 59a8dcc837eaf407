//! Fetch planning and cold reads through a real broker (`--shards 2`):
//! a multi-partition Fetch whose partitions live on both shards honours
//! `max_bytes` in request order exactly as Kafka's rule (KIP-74) does, and a
//! consumer reading segments evicted from the page cache gets every record
//! back intact.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use bytes::{Bytes, BytesMut};
use common::*;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    BrokerId, CreateTopicsRequest, FetchRequest, FetchResponse, ProduceRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::message::Message;
use rdkafka::producer::FutureRecord;
use rdkafka::Offset;
use std::time::Duration;

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// One uncompressed batch of `n` records with values of `value_len` bytes.
fn batch(n: i64, value_len: usize, tag: u8) -> Bytes {
    let recs: Vec<Record> = (0..n)
        .map(|i| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i,
            sequence: -1 + i as i32,
            timestamp: now_ms(),
            key: None,
            value: Some(Bytes::from(vec![tag; value_len])),
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

fn produce(s: &mut std::net::TcpStream, topic: &str, partition: i32, records: Bytes, cid: i32) {
    let req = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(sb(topic)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(records))])]);
    let resp = kp_call(s, 8, cid, &req);
    let pr = &resp.responses[0].partition_responses[0];
    assert_eq!(pr.error_code, 0, "{:?}", pr.error_message);
}

fn fetch(
    s: &mut std::net::TcpStream,
    topic: &str,
    order: &[i32],
    max_bytes: i32,
    pmb: i32,
    cid: i32,
) -> FetchResponse {
    let req = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(0)
        .with_max_bytes(max_bytes)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(sb(topic)))
            .with_partitions(
                order
                    .iter()
                    .map(|&p| {
                        FetchPartition::default()
                            .with_partition(p)
                            .with_fetch_offset(0)
                            .with_partition_max_bytes(pmb)
                    })
                    .collect(),
            )]);
    kp_call(s, 12, cid, &req)
}

/// Kafka's rule (`ReplicaManager.readFromLog`): in request order, each
/// partition reads min(partition_max_bytes, budget left) of whole batches;
/// the first batch is returned even if larger only while no earlier
/// partition returned data.
fn kafka_expected(max_bytes: u64, pmb: u64, parts: &[Vec<u64>]) -> Vec<u64> {
    let mut budget = max_bytes;
    let mut min_one = true;
    parts
        .iter()
        .map(|batches| {
            let limit = pmb.min(budget);
            let mut got = 0;
            for (i, b) in batches.iter().enumerate() {
                if got + b > limit {
                    if i == 0 && min_one {
                        got = *b;
                    }
                    break;
                }
                got += b;
            }
            budget = budget.saturating_sub(got);
            if got > 0 {
                min_one = false;
            }
            got
        })
        .collect()
}

#[test]
fn multi_shard_fetch_honours_max_bytes_in_request_order() {
    let broker = Broker::start();
    let topic = "plan";
    let parts = 6;
    let owners: std::collections::BTreeSet<usize> = (0..parts)
        .map(|p| fjord::cluster::metadata::owner_shard(topic, p, 2))
        .collect();
    assert_eq!(owners.len(), 2, "the partitions should live on both shards");
    let mut s = connect(&broker.bootstrap());
    let create = CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(sb(topic)))
            .with_num_partitions(parts)
            .with_replication_factor(1)]);
    assert_eq!(kp_call(&mut s, 4, 1, &create).topics[0].error_code, 0);

    // Three batches per partition, of sizes that differ per partition.
    let mut sizes: Vec<Vec<u64>> = vec![Vec::new(); parts as usize];
    let mut cid = 10;
    for p in 0..parts {
        for k in 0..3 {
            let b = batch(2 + k, 40 + 23 * p as usize + 11 * k as usize, p as u8);
            sizes[p as usize].push(b.len() as u64);
            produce(&mut s, topic, p, b, cid);
            cid += 1;
        }
    }

    let order = [4, 1, 5, 0, 3, 2];
    let in_order: Vec<Vec<u64>> = order.iter().map(|&p| sizes[p as usize].clone()).collect();
    let first = in_order[0][0];
    // Budgets: below the first batch (KIP-74 oversize), inside the first
    // partition, inside later partitions, everything.
    let mut budgets: Vec<u64> = vec![1, first - 1, first + 5, 2 * first + 3];
    let total: u64 = in_order.iter().flatten().sum();
    budgets.extend([total / 3, total / 2 + 7, total - 1, total, total + 1000]);
    for pmb in [1u64 << 20, 400, 150] {
        for &max_bytes in &budgets {
            let resp = fetch(&mut s, topic, &order, max_bytes as i32, pmb as i32, cid);
            cid += 1;
            assert_eq!(resp.error_code, 0);
            let got_parts = &resp.responses[0].partitions;
            let got_order: Vec<i32> = got_parts.iter().map(|p| p.partition_index).collect();
            assert_eq!(got_order, order, "partitions in request order");
            let got: Vec<u64> = got_parts
                .iter()
                .map(|p| p.records.as_ref().map_or(0, |r| r.len() as u64))
                .collect();
            let want = kafka_expected(max_bytes, pmb, &in_order);
            assert_eq!(got, want, "max_bytes {max_bytes} partition_max_bytes {pmb}");
            // Whole batches, from offset 0, with the partition's own values.
            for (p, part) in order.iter().zip(got_parts) {
                let mut b = part.records.clone().unwrap_or_default();
                if b.is_empty() {
                    continue;
                }
                let recs: Vec<Record> = RecordBatchDecoder::decode_all(&mut b)
                    .expect("whole batches")
                    .into_iter()
                    .flat_map(|set| set.records)
                    .collect();
                for (i, r) in recs.iter().enumerate() {
                    assert_eq!(r.offset, i as i64);
                    assert!(r
                        .value
                        .as_ref()
                        .is_some_and(|v| v.iter().all(|&x| x == *p as u8)));
                }
            }
        }
    }
}

/// Drops the pages of every `.log` of the topic from the page cache (after
/// fdatasync, so none is dirty). Gives how many files were evicted.
fn evict_topic(broker: &Broker, topic: &str) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(broker.data_dir()).expect("data dir") {
        let dir = entry.expect("dir entry").path();
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        if !name.is_some_and(|n| n.starts_with(&format!("{topic}-"))) {
            continue;
        }
        for f in std::fs::read_dir(&dir).expect("partition dir") {
            let path = f.expect("file").path();
            if path.extension().is_some_and(|e| e == "log") {
                let file = std::fs::File::open(&path).expect("open segment");
                fjord::storage::cache::evict(&file).expect("evict");
                let len = file.metadata().map(|m| m.len()).unwrap_or(0);
                let state = fjord::storage::cache::cached_state(&file, 0, len);
                if matches!(state, Ok(fjord::storage::cache::CacheState::Cached)) {
                    eprintln!("note: {} kept in the page cache", path.display());
                }
                n += 1;
            }
        }
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_reads_evicted_segments_intact() {
    // Small segments: several per partition, all of them cold.
    let broker = Broker::start();
    let topic = "cold";
    let admin = broker.admin();
    let new = NewTopic::new(topic, 2, TopicReplication::Fixed(1)).set("segment.bytes", "1048576");
    let res = admin
        .create_topics(&[new], &admin_opts())
        .await
        .expect("CreateTopics");
    assert!(res[0].is_ok(), "{:?}", res[0]);
    let probe = broker.consumer(&[]);
    wait_for(Duration::from_secs(10), "metadata of cold", || {
        partition_count(&probe, topic) == Some(2)
    });
    let producer = broker.producer(&[("acks", "all"), ("linger.ms", "5")]);
    let count = 3_000usize;
    let value = |i: usize| -> Vec<u8> {
        (0..(700 + i % 600))
            .map(|j| ((i * 13 + j) % 251) as u8)
            .collect()
    };
    let mut futs = Vec::new();
    for i in 0..count {
        let key = format!("k{i}");
        let v = value(i);
        let rec = FutureRecord::to(topic)
            .key(&key)
            .payload(&v)
            .partition((i % 2) as i32);
        futs.push(
            producer
                .send_result(rec)
                .map_err(|(e, _)| e)
                .expect("enqueue"),
        );
    }
    for f in futs {
        tokio::time::timeout(Duration::from_secs(60), f)
            .await
            .expect("delivery within 60 s")
            .expect("not cancelled")
            .unwrap_or_else(|(e, _)| panic!("delivery failed: {e}"));
    }
    let files = evict_topic(&broker, topic);
    let listing: Vec<String> = walk(&broker.data_dir().join("cold-0"));
    assert!(
        files > 2,
        "expected several segments, found {files}: {listing:?}"
    );

    let consumer = broker.assigned_consumer(topic, &[0, 1], Offset::Beginning);
    let got = consume_n(&consumer, count, Duration::from_secs(60));
    assert_eq!(got.len(), count);
    let mut seen = std::collections::HashSet::new();
    for m in &got {
        let key = std::str::from_utf8(m.key().expect("key")).expect("utf8 key");
        let i: usize = key[1..].parse().expect("key index");
        assert_eq!(m.partition(), (i % 2) as i32);
        assert_eq!(m.offset(), (i / 2) as i64, "offset of {key}");
        assert_eq!(m.payload(), Some(&value(i)[..]), "value of {key}");
        assert!(seen.insert(i), "duplicate {key}");
    }
    assert_no_more(&consumer, Duration::from_millis(300));
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| {
                    let len = e.metadata().map(|m| m.len()).unwrap_or(0);
                    format!("{} {len}", e.file_name().to_string_lossy())
                })
                .collect()
        })
        .unwrap_or_default()
}
