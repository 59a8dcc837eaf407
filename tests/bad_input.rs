//! Malformed and hostile input on the wire (hand-encoded requests over plain
//! TCP), plus invalid admin requests through rdkafka. After each case the
//! broker must keep serving other connections and real clients.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use common::*;
use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::consumer::Consumer;
use rdkafka::error::RDKafkaErrorCode;
use rdkafka::message::Message;
use rdkafka::producer::FutureRecord;
use rdkafka::types::RDKafkaRespErr;
use rdkafka::Offset;

const PRODUCE: i16 = 0;
const METADATA: i16 = 3;
const API_VERSIONS: i16 = 18;

const CORRUPT_MESSAGE: i16 = 2;
const INVALID_RECORD: i16 = 87;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const UNSUPPORTED_VERSION: i16 = 35;

/// One record's bytes (length prefix included) with no headers.
fn plain_record(key: &[u8], value: &[u8]) -> Vec<u8> {
    record_with_header_count(key, value, 0)
}

/// One record's bytes whose header count field says `headers` although no
/// header follows: its length field matches its bytes, only the count lies.
fn record_with_header_count(key: &[u8], value: &[u8], headers: i64) -> Vec<u8> {
    let mut rec = Wire::new();
    rec.i8(0) // attributes
        .varint(0) // timestamp delta
        .varint(0) // offset delta
        .varint(key.len() as i64)
        .bytes(key)
        .varint(value.len() as i64)
        .bytes(value)
        .varint(headers);
    let mut record = Wire::new();
    record.varint(rec.buf.len() as i64).bytes(&rec.buf);
    record.buf
}

/// One RecordBatch v2 holding a single record. With `good_crc` false the
/// CRC32C field is deliberately off by one bit.
fn record_batch(key: &[u8], value: &[u8], timestamp: i64, good_crc: bool) -> Vec<u8> {
    batch_of(&plain_record(key, value), 0, timestamp, good_crc)
}

/// A RecordBatch v2 around one record's bytes, its records section
/// compressed with `codec` (0: none, 1: gzip).
fn batch_of(record: &[u8], codec: i16, timestamp: i64, good_crc: bool) -> Vec<u8> {
    let mut b = batch_with_count(record, codec, timestamp, 1);
    if !good_crc {
        b[20] ^= 1;
    }
    b
}

/// A RecordBatch v2 (good CRC) around `records`, compressed with `codec`
/// (0: none, 1: gzip), whose record count field says `count`.
fn batch_with_count(records: &[u8], codec: i16, timestamp: i64, count: i32) -> Vec<u8> {
    let record = records;
    let records = match codec {
        0 => record.to_vec(),
        1 => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(record).unwrap();
            e.finish().unwrap()
        }
        c => panic!("codec {c} is not built here"),
    };
    let mut b = Wire::new();
    b.i64(0) // base offset
        .i32(0) // batch length, patched below
        .i32(-1) // partition leader epoch
        .i8(2) // magic
        .u32(0) // crc, patched below
        .i16(codec) // attributes: codec, CreateTime
        .i32(0) // last offset delta
        .i64(timestamp)
        .i64(timestamp)
        .i64(-1) // producer id
        .i16(-1) // producer epoch
        .i32(-1) // base sequence
        .i32(count)
        .bytes(&records);
    let mut batch = b.buf;
    let len = (batch.len() - 12) as i32;
    batch[8..12].copy_from_slice(&len.to_be_bytes());
    // last offset delta: count - 1, as a producer writes it.
    batch[23..27].copy_from_slice(&(count - 1).max(0).to_be_bytes());
    let crc = crc32c::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    batch
}

/// Produce v3 for one topic-partition with acks=1.
fn produce_v3(correlation_id: i32, topic: &str, partition: i32, records: &[u8]) -> Vec<u8> {
    let mut body = Wire::new();
    body.i16(-1) // transactional id: null
        .i16(1) // acks
        .i32(10_000) // timeout ms
        .i32(1) // topics
        .string(topic)
        .i32(1) // partitions
        .i32(partition)
        .i32(records.len() as i32)
        .bytes(records);
    frame_v1(PRODUCE, 3, correlation_id, &body.buf)
}

/// Parses a Produce v3 response with one topic and one partition:
/// `(error_code, base_offset)`.
fn parse_produce_v3(resp: &[u8], correlation_id: i32, topic: &str, partition: i32) -> (i16, i64) {
    let mut r = Reader::new(resp);
    assert_eq!(r.i32(), correlation_id, "correlation id");
    assert_eq!(r.i32(), 1, "topic count");
    assert_eq!(r.string().as_deref(), Some(topic));
    assert_eq!(r.i32(), 1, "partition count");
    assert_eq!(r.i32(), partition, "partition index");
    let error = r.i16();
    let base_offset = r.i64();
    let _log_append_time = r.i64();
    let _throttle = r.i32();
    assert_eq!(r.remaining(), 0, "trailing bytes in Produce v3 response");
    (error, base_offset)
}

/// ApiVersions v0 round trip: asserts success and returns key -> (min, max).
fn api_versions_v0(s: &mut TcpStream, correlation_id: i32) -> HashMap<i16, (i16, i16)> {
    let resp = roundtrip(s, &frame_v1(API_VERSIONS, 0, correlation_id, &[]));
    let mut r = Reader::new(&resp);
    assert_eq!(r.i32(), correlation_id, "correlation id");
    assert_eq!(r.i16(), 0, "ApiVersions v0 error code");
    let n = r.i32();
    let mut out = HashMap::new();
    for _ in 0..n {
        let (k, lo, hi) = (r.i16(), r.i16(), r.i16());
        out.insert(k, (lo, hi));
    }
    assert_eq!(r.remaining(), 0);
    out
}

/// Metadata v1 for `topics` (None = all): returns (broker port, topic -> error code).
fn metadata_v1(
    s: &mut TcpStream,
    correlation_id: i32,
    topics: Option<&[&str]>,
) -> (i32, HashMap<String, i16>) {
    let mut body = Wire::new();
    match topics {
        None => {
            body.i32(-1);
        }
        Some(ts) => {
            body.i32(ts.len() as i32);
            for t in ts {
                body.string(t);
            }
        }
    }
    let resp = roundtrip(s, &frame_v1(METADATA, 1, correlation_id, &body.buf));
    let mut r = Reader::new(&resp);
    assert_eq!(r.i32(), correlation_id, "correlation id");
    let brokers = r.i32();
    assert_eq!(brokers, 1, "one broker");
    let _node = r.i32();
    assert_eq!(r.string().as_deref(), Some("127.0.0.1"));
    let port = r.i32();
    let _rack = r.string();
    let _controller = r.i32();
    let mut out = HashMap::new();
    let n = r.i32();
    for _ in 0..n {
        let err = r.i16();
        let name = r.string().expect("topic name");
        let _internal = r.i8();
        let parts = r.i32();
        for _ in 0..parts {
            let _err = r.i16();
            let _idx = r.i32();
            let _leader = r.i32();
            let replicas = r.i32();
            for _ in 0..replicas {
                r.i32();
            }
            let isr = r.i32();
            for _ in 0..isr {
                r.i32();
            }
        }
        out.insert(name, err);
    }
    assert_eq!(r.remaining(), 0, "trailing bytes in Metadata v1 response");
    (port, out)
}

fn port_of(addr: &str) -> i32 {
    addr.rsplit(':').next().unwrap().parse().unwrap()
}

/// The high watermark of `topic`-0 as seen by rdkafka.
fn hw(broker: &Broker, topic: &str) -> i64 {
    let c = broker.consumer(&[]);
    watermarks(&c, topic, 0).1
}

/// Proves a real client still works: produce one record, read it back.
async fn client_round_trip(broker: &Broker, topic: &str) {
    let producer = broker.producer(&[("acks", "all")]);
    let value = format!("still serving {topic}");
    let d = producer
        .send(
            FutureRecord::to(topic)
                .partition(0)
                .key("k")
                .payload(&value),
            Duration::from_secs(30),
        )
        .await
        .unwrap_or_else(|(e, _)| panic!("produce after bad input: {e}"));
    let c = broker.assigned_consumer(topic, &[0], Offset::Offset(d.offset));
    let got = consume_n(&c, 1, Duration::from_secs(30));
    assert_eq!(got[0].payload(), Some(value.as_bytes()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_with_bad_crc_is_rejected() {
    let broker = Broker::start();
    let topic = "raw";
    broker.create_topic(topic, 1).await;
    let mut s = connect(&broker.bootstrap());
    let ts = now_ms();

    // Wrong CRC: CORRUPT_MESSAGE and nothing appended.
    let bad = record_batch(b"key", b"bad value", ts, false);
    let resp = roundtrip(&mut s, &produce_v3(11, topic, 0, &bad));
    let (err, base) = parse_produce_v3(&resp, 11, topic, 0);
    assert_eq!(
        err, CORRUPT_MESSAGE,
        "error code for a batch with a wrong CRC32C"
    );
    assert_eq!(base, -1, "base offset on error");
    assert_eq!(
        hw(&broker, topic),
        0,
        "high watermark after a rejected batch"
    );

    // Same encoder, correct CRC: accepted at offset 0.
    let good = record_batch(b"key", b"good value", ts, true);
    let resp = roundtrip(&mut s, &produce_v3(12, topic, 0, &good));
    assert_eq!(
        parse_produce_v3(&resp, 12, topic, 0),
        (0, 0),
        "good batch accepted at offset 0"
    );
    assert_eq!(hw(&broker, topic), 1);

    // A bad batch after a good one changes nothing either; the connection
    // is still usable after an error response.
    let resp = roundtrip(&mut s, &produce_v3(13, topic, 0, &bad));
    assert_eq!(parse_produce_v3(&resp, 13, topic, 0).0, CORRUPT_MESSAGE);
    assert_eq!(hw(&broker, topic), 1);
    let resp = roundtrip(&mut s, &produce_v3(14, topic, 0, &good));
    assert_eq!(parse_produce_v3(&resp, 14, topic, 0), (0, 1));
    assert_eq!(hw(&broker, topic), 2);

    // The accepted records read back through rdkafka as sent.
    let c = broker.assigned_consumer(topic, &[0], Offset::Beginning);
    let got = consume_n(&c, 2, Duration::from_secs(30));
    for m in &got {
        assert_eq!(m.key(), Some(&b"key"[..]));
        assert_eq!(m.payload(), Some(&b"good value"[..]));
        assert_eq!(m.timestamp(), rdkafka::Timestamp::CreateTime(ts));
    }
    assert_no_more(&c, Duration::from_millis(200));

    // Unknown partition of a known topic.
    let resp = roundtrip(&mut s, &produce_v3(15, topic, 7, &good));
    assert_eq!(
        parse_produce_v3(&resp, 15, topic, 7).0,
        UNKNOWN_TOPIC_OR_PARTITION
    );
}

/// Records whose framing is wrong, uncompressed and inside a gzip batch
/// (kept as the producer sent it on a `compression.type=producer` topic): a
/// header count far more than the record's bytes can hold (the field a
/// decoder may size memory from), a record count the records do not add up
/// to, fields that do not fill their record, a negative header key length.
/// Each is refused with INVALID_RECORD and nothing appended, as Apache
/// Kafka 4.4 answers the same bytes; the same record well framed is
/// accepted and reads back through rdkafka.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_with_a_wrong_framing_are_refused() {
    let broker = Broker::start();
    let topic = "framing";
    broker.create_topic(topic, 1).await;
    let mut s = connect(&broker.bootstrap());
    let ts = now_ms();
    let good = plain_record(b"k", b"v");
    // attributes, timestamp delta, offset delta, null key, value "v", then
    // `tail`, inside a record whose length covers exactly those bytes.
    let framed = |tail: &[u8]| {
        let mut body = vec![0, 0, 0, 1, 2, b'v'];
        body.extend_from_slice(tail);
        let mut r = Wire::new();
        r.varint(body.len() as i64).bytes(&body);
        r.buf
    };
    let cases: Vec<(&str, Vec<u8>, i32)> = vec![
        (
            "header count i32::MAX",
            record_with_header_count(b"k", b"v", i64::from(i32::MAX)),
            1,
        ),
        (
            "header count 3, none sent",
            record_with_header_count(b"k", b"v", 3),
            1,
        ),
        ("record count 2, one record", good.clone(), 2),
        (
            "record count 1, two records",
            [good.clone(), good.clone()].concat(),
            1,
        ),
        ("a byte after the fields", framed(&[0, 0]), 1),
        ("negative header key length", framed(&[2, 1, 1]), 1),
    ];
    let mut id = 20;
    for codec in [0, 1] {
        for (what, record, count) in &cases {
            let bad = batch_with_count(record, codec, ts, *count);
            id += 1;
            let resp = roundtrip(&mut s, &produce_v3(id, topic, 0, &bad));
            assert_eq!(
                parse_produce_v3(&resp, id, topic, 0),
                (INVALID_RECORD, -1),
                "{what}, codec {codec}"
            );
        }
        assert_eq!(hw(&broker, topic), 0, "nothing appended (codec {codec})");
    }
    let good = batch_of(&plain_record(b"k", b"gzip value"), 1, ts, true);
    let resp = roundtrip(&mut s, &produce_v3(40, topic, 0, &good));
    assert_eq!(parse_produce_v3(&resp, 40, topic, 0), (0, 0));
    let c = broker.assigned_consumer(topic, &[0], Offset::Beginning);
    let got = consume_n(&c, 1, Duration::from_secs(30));
    assert_eq!(got[0].payload(), Some(&b"gzip value"[..]));
    client_round_trip(&broker, topic).await;
}

/// Deterministic pseudo-random bytes (xorshift64).
fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_closes_only_that_connection() {
    let broker = Broker::start();
    let addr = broker.bootstrap();
    let topic = "survivor";
    broker.create_topic(topic, 1).await;

    // Opened before any garbage and kept open throughout.
    let mut keeper = connect(&addr);
    let versions = api_versions_v0(&mut keeper, 1);
    assert_eq!(versions.get(&API_VERSIONS), Some(&(0, 4)));

    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    // Random bytes whose size prefix is negative.
    let mut random = noise(0x9e37_79b9_7f4a_7c15, 4096);
    random[0] |= 0x80;
    cases.push(("random bytes", random));
    // Random bytes in a well-sized frame (unknown API key forced).
    let mut body = noise(42, 200);
    body[0..2].copy_from_slice(&0x7abcu16.to_be_bytes());
    let mut framed = (body.len() as i32).to_be_bytes().to_vec();
    framed.extend_from_slice(&body);
    cases.push(("random frame", framed));
    // A frame claiming 2 GiB.
    let mut huge = 0x7fff_ffffi32.to_be_bytes().to_vec();
    huge.extend_from_slice(&noise(7, 64));
    cases.push(("size 0x7fffffff", huge));
    // A frame too small to hold a header.
    cases.push(("size 3", vec![0, 0, 0, 3, 1, 2, 3]));
    // Metadata v1 whose topics array claims 0x7fffffff entries.
    let mut b = Wire::new();
    b.i32(0x7fff_ffff);
    cases.push((
        "Metadata v1 array count 0x7fffffff",
        frame_v1(METADATA, 1, 5, &b.buf),
    ));
    // Same with a flexible version: compact array length as a varint.
    let mut b = Wire::new();
    b.uvarint(0x7fff_ffff);
    cases.push((
        "Metadata v9 compact array count 0x7fffffff",
        frame_v2(METADATA, 9, 6, &b.buf),
    ));
    // A string whose length runs past the end of the frame.
    let mut b = Wire::new();
    b.i32(1).i16(30_000).bytes(b"abc");
    cases.push((
        "Metadata v1 string past the frame",
        frame_v1(METADATA, 1, 7, &b.buf),
    ));

    for (i, (name, bytes)) in cases.iter().enumerate() {
        let mut s = connect(&addr);
        // The peer may close before everything is written; that is fine.
        let _ = s.write_all(bytes);
        assert_closed(&mut s);
        assert!(broker_alive(&broker), "broker died after {name}");
        // The connection opened earlier still answers correctly.
        let cid = 100 + i as i32;
        let v = api_versions_v0(&mut keeper, cid);
        assert_eq!(v.get(&METADATA).map(|r| r.0), Some(0), "after {name}");
        let (port, topics) = metadata_v1(&mut keeper, 1000 + cid, Some(&[topic]));
        assert_eq!(port, port_of(&addr), "after {name}");
        assert_eq!(topics.get(topic), Some(&0), "after {name}");
    }
    let (_, all) = metadata_v1(&mut keeper, 9999, None);
    assert!(all.contains_key(topic));
    client_round_trip(&broker, topic).await;
}

fn broker_alive(broker: &Broker) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(broker.pid() as libc::pid_t, 0) == 0 }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_api_key_closes_connection() {
    let mut broker = Broker::start();
    let addr = broker.bootstrap();
    let mut s = connect(&addr);
    s.write_all(&frame_v1(9999, 0, 77, &[])).unwrap();
    assert_closed(&mut s);

    // Also after a valid request on the same connection.
    let mut s = connect(&addr);
    api_versions_v0(&mut s, 1);
    s.write_all(&frame_v1(-5, 3, 78, &[1, 2, 3])).unwrap();
    assert_closed(&mut s);

    assert!(broker.is_running(), "broker exited");
    let mut s = connect(&addr);
    assert!(api_versions_v0(&mut s, 2).contains_key(&PRODUCE));
    broker.create_topic("after-unknown", 1).await;
    client_round_trip(&broker, "after-unknown").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_versions_unsupported_version_answers_v0() {
    let broker = Broker::start();
    let mut s = connect(&broker.bootstrap());
    // A future client: header v2, a v3-shaped body.
    let mut body = Wire::new();
    body.compact_string("future-client")
        .compact_string("99.0")
        .uvarint(0);
    let resp = roundtrip(&mut s, &frame_v2(API_VERSIONS, 127, 4242, &body.buf));
    let mut r = Reader::new(&resp);
    assert_eq!(r.i32(), 4242, "correlation id");
    assert_eq!(r.i16(), UNSUPPORTED_VERSION, "error code");
    let n = r.i32();
    assert!(n > 0, "api key list");
    let mut keys = HashMap::new();
    for _ in 0..n {
        let (k, lo, hi) = (r.i16(), r.i16(), r.i16());
        keys.insert(k, (lo, hi));
    }
    assert_eq!(r.remaining(), 0, "v0 layout: nothing after the array");
    assert_eq!(keys.get(&API_VERSIONS), Some(&(0, 4)), "ApiVersions range");
    assert!(keys.contains_key(&PRODUCE) && keys.contains_key(&METADATA));

    // The connection stays usable for the retry at a supported version.
    let mut body = Wire::new();
    body.compact_string("fjord-it")
        .compact_string("1.0")
        .uvarint(0);
    let resp = roundtrip(&mut s, &frame_v2(API_VERSIONS, 3, 4243, &body.buf));
    let mut r = Reader::new(&resp);
    assert_eq!(r.i32(), 4243);
    assert_eq!(r.i16(), 0, "ApiVersions v3 error code");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_admin_requests_get_kafka_errors() {
    let broker = Broker::start();
    let admin = broker.admin();
    let res = admin
        .create_topics(
            &[
                NewTopic::new("bad/name", 1, TopicReplication::Fixed(1)),
                NewTopic::new("..", 1, TopicReplication::Fixed(1)),
                NewTopic::new(&"x".repeat(250), 1, TopicReplication::Fixed(1)),
                NewTopic::new("three-replicas", 1, TopicReplication::Fixed(3)),
                NewTopic::new("no-partitions", 0, TopicReplication::Fixed(1)),
                NewTopic::new("fine", 1, TopicReplication::Fixed(1)),
            ],
            &admin_opts(),
        )
        .await
        .expect("CreateTopics request");
    let codes: HashMap<String, Option<RDKafkaErrorCode>> = res
        .into_iter()
        .map(|r| match r {
            Ok(name) => (name, None),
            Err((name, code)) => (name, Some(code)),
        })
        .collect();
    assert_eq!(codes["bad/name"], Some(RDKafkaErrorCode::InvalidTopic));
    assert_eq!(codes[".."], Some(RDKafkaErrorCode::InvalidTopic));
    assert_eq!(
        codes[&"x".repeat(250)],
        Some(RDKafkaErrorCode::InvalidTopic)
    );
    assert_eq!(
        codes["three-replicas"],
        Some(RDKafkaErrorCode::InvalidReplicationFactor)
    );
    assert_eq!(
        codes["no-partitions"],
        Some(RDKafkaErrorCode::InvalidPartitions)
    );
    assert_eq!(codes["fine"], None);

    // Nothing was created for the rejected names.
    let c = broker.consumer(&[]);
    let md = c.fetch_metadata(None, CLIENT_TIMEOUT).expect("metadata");
    let names: Vec<&str> = md.topics().iter().map(|t| t.name()).collect();
    assert!(names.contains(&"fine"), "{names:?}");
    assert!(!names
        .iter()
        .any(|n| *n == "three-replicas" || *n == "no-partitions" || n.contains('/')));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_topic_without_auto_create() {
    let broker = Broker::start_with(&["auto.create.topics.enable=false"]);
    // Through rdkafka.
    let c = broker.consumer(&[]);
    let md = c
        .fetch_metadata(Some("does-not-exist"), CLIENT_TIMEOUT)
        .expect("metadata");
    let t = md
        .topics()
        .iter()
        .find(|t| t.name() == "does-not-exist")
        .expect("topic in response");
    assert_eq!(
        t.error(),
        Some(RDKafkaRespErr::RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
    );
    // On the wire, with the exact error code.
    let mut s = connect(&broker.bootstrap());
    let (_, topics) = metadata_v1(&mut s, 3, Some(&["does-not-exist"]));
    assert_eq!(
        topics.get("does-not-exist"),
        Some(&UNKNOWN_TOPIC_OR_PARTITION)
    );
    // And it was not created as a side effect.
    let (_, all) = metadata_v1(&mut s, 4, None);
    assert!(!all.contains_key("does-not-exist"), "{all:?}");
    assert!(!broker.data_dir().join("does-not-exist-0").exists());
}

/// Clients that send a Fetch for tens of MiB and never read the answer fill
/// their sockets' buffers: the broker must then wait for them without
/// holding its shards, so every other connection is still answered. (The
/// answers' file regions go out with sendfile(2), which blocks on a full
/// socket unless told not to.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetches_never_read_do_not_hold_the_broker() {
    use kafka_protocol::messages::{
        fetch_request, produce_request, ApiVersionsRequest, FetchRequest, ProduceRequest,
        ProduceResponse, TopicName,
    };
    use kafka_protocol::protocol::StrBytes;

    let broker = Broker::start();
    let topic = "big";
    broker.create_topic(topic, 1).await;
    let name = || TopicName(StrBytes::from_string(topic.to_string()));
    // 32 MiB in one-record batches of 900 KiB.
    let mut producer = connect(&broker.bootstrap());
    producer
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    for cid in 0..36 {
        let batch = one_record_batch(bytes::Bytes::from(vec![b'x'; 900 << 10]), now_ms());
        let req = ProduceRequest::default()
            .with_acks(1)
            .with_timeout_ms(10_000)
            .with_topic_data(vec![produce_request::TopicProduceData::default()
                .with_name(name())
                .with_partition_data(vec![
                    produce_request::PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(batch)),
                ])]);
        let r: ProduceResponse = kp_call(&mut producer, 9, cid, &req);
        assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    }
    // Four stuck readers (connections go to both shards).
    let fetch = FetchRequest::default()
        .with_replica_id(kafka_protocol::messages::BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(64 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![fetch_request::FetchTopic::default()
            .with_topic(name())
            .with_partitions(vec![fetch_request::FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(64 << 20)])]);
    let mut stuck = Vec::new();
    for cid in 0..4 {
        let mut s = connect(&broker.bootstrap());
        kp_send(&mut s, 12, cid, &fetch);
        stuck.push(s);
    }
    // Let the broker fill their buffers.
    std::thread::sleep(Duration::from_secs(1));
    for cid in 0..8 {
        let mut other = connect(&broker.bootstrap());
        other
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let r = kp_call(&mut other, 3, cid, &ApiVersionsRequest::default());
        assert_eq!(
            r.error_code, 0,
            "connection {cid} answered beside the stuck readers"
        );
    }
    drop(stuck);
}
