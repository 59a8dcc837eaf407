//! Produce and consume through librdkafka (rdkafka crate) against a real
//! broker process: ordering, offsets, payload fidelity, compression, acks,
//! watermarks, seek and long-poll wake-up. (ListOffsets by timestamp is an
//! in-process scenario in tests/inprocess.rs.)

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use common::*;
use rdkafka::consumer::Consumer;
use rdkafka::message::{Header, Headers, Message, OwnedHeaders, OwnedMessage};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::{Offset, Timestamp};

/// One record as sent, for comparison with what comes back.
#[derive(Debug, Clone, PartialEq)]
struct Sent {
    key: Vec<u8>,
    value: Vec<u8>,
    headers: Vec<(String, Option<Vec<u8>>)>,
    timestamp: i64,
}

fn headers_of(m: &OwnedMessage) -> Vec<(String, Option<Vec<u8>>)> {
    match m.headers() {
        None => Vec::new(),
        Some(h) => h
            .iter()
            .map(|h| (h.key.to_string(), h.value.map(|v| v.to_vec())))
            .collect(),
    }
}

fn owned_headers(hs: &[(String, Option<Vec<u8>>)]) -> OwnedHeaders {
    let mut out = OwnedHeaders::new_with_capacity(hs.len());
    for (k, v) in hs {
        out = out.insert(Header {
            key: k.as_str(),
            value: v.as_deref(),
        });
    }
    out
}

fn record_for(i: usize, base_ts: i64) -> Sent {
    // Values of varying size, including empty ones; repeated keys.
    let len = (i * 7919) % 300;
    let value: Vec<u8> = (0..len).map(|j| ((i * 31 + j * 17) % 256) as u8).collect();
    let mut headers = vec![
        ("seq".to_string(), Some(i.to_string().into_bytes())),
        ("bin".to_string(), Some(vec![0u8, 255, (i % 256) as u8])),
    ];
    if i % 3 == 0 {
        headers.push(("null".to_string(), None));
    }
    Sent {
        key: format!("key-{}", i % 97).into_bytes(),
        value,
        headers,
        timestamp: base_ts + i as i64,
    }
}

/// Sends all `records` asynchronously and returns `(partition, offset)` per
/// record, in the same order. Panics on any delivery error.
async fn produce_all(producer: &FutureProducer, topic: &str, records: &[Sent]) -> Vec<(i32, i64)> {
    let mut futures = Vec::with_capacity(records.len());
    for r in records {
        let rec = FutureRecord::to(topic)
            .key(&r.key)
            .payload(&r.value)
            .headers(owned_headers(&r.headers))
            .timestamp(r.timestamp);
        let fut = producer
            .send_result(rec)
            .map_err(|(e, _)| e)
            .expect("enqueue record");
        futures.push(fut);
    }
    let mut out = Vec::with_capacity(records.len());
    for f in futures {
        let d = tokio::time::timeout(Duration::from_secs(60), f)
            .await
            .expect("delivery report within 60 s")
            .expect("delivery future not cancelled")
            .unwrap_or_else(|(e, _)| panic!("delivery failed: {e}"));
        out.push((d.partition, d.offset));
    }
    out
}

fn assert_matches_sent(got: &OwnedMessage, want: &Sent) {
    let where_ = format!("{}-{}@{}", got.topic(), got.partition(), got.offset());
    assert_eq!(got.key(), Some(&want.key[..]), "key at {where_}");
    // An empty payload may come back as Some(&[]) or None.
    assert_eq!(
        got.payload().unwrap_or(&[]),
        &want.value[..],
        "value at {where_}"
    );
    assert_eq!(headers_of(got), want.headers, "headers at {where_}");
    assert_eq!(
        got.timestamp(),
        Timestamp::CreateTime(want.timestamp),
        "timestamp at {where_}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_keyed_records_round_trip() {
    let broker = Broker::start();
    let topic = "keyed";
    broker.create_topic(topic, 3).await;

    let base_ts = now_ms() - 3_600_000;
    let records: Vec<Sent> = (0..10_000).map(|i| record_for(i, base_ts)).collect();
    let producer = broker.producer(&[("acks", "all")]);
    let placed = produce_all(&producer, topic, &records).await;

    // Same key -> same partition.
    let mut key_part: HashMap<&[u8], i32> = HashMap::new();
    for (r, &(p, _)) in records.iter().zip(&placed) {
        let prev = *key_part.entry(&r.key).or_insert(p);
        assert_eq!(
            prev,
            p,
            "key {:?} went to partitions {prev} and {p}",
            String::from_utf8_lossy(&r.key)
        );
    }
    // Offsets per partition are exactly 0..n.
    let mut per_part: HashMap<i32, Vec<i64>> = HashMap::new();
    for &(p, o) in &placed {
        assert!((0..3).contains(&p), "partition {p}");
        per_part.entry(p).or_default().push(o);
    }
    assert_eq!(
        per_part.len(),
        3,
        "97 keys should spread over all 3 partitions"
    );
    for (p, offs) in per_part.iter_mut() {
        offs.sort_unstable();
        let want: Vec<i64> = (0..offs.len() as i64).collect();
        assert_eq!(*offs, want, "offsets of partition {p} are not 0..n");
    }

    // Watermarks match the counts.
    let consumer = broker.assigned_consumer(topic, &[0, 1, 2], Offset::Beginning);
    for (p, offs) in &per_part {
        assert_eq!(
            watermarks(&consumer, topic, *p),
            (0, offs.len() as i64),
            "watermarks of {p}"
        );
    }

    // Consume everything back and compare byte for byte.
    let by_pos: HashMap<(i32, i64), usize> =
        placed.iter().enumerate().map(|(i, &po)| (po, i)).collect();
    let got = consume_n(&consumer, records.len(), Duration::from_secs(60));
    let mut seen = BTreeSet::new();
    let mut last: HashMap<i32, i64> = HashMap::new();
    for m in &got {
        let pos = (m.partition(), m.offset());
        assert!(seen.insert(pos), "duplicate {pos:?}");
        let prev = last.insert(m.partition(), m.offset());
        assert!(
            prev.is_none_or(|o| o < m.offset()),
            "out of order in partition {}",
            m.partition()
        );
        let i = *by_pos
            .get(&pos)
            .unwrap_or_else(|| panic!("consumed unknown {pos:?}"));
        assert_matches_sent(m, &records[i]);
    }
    assert_no_more(&consumer, Duration::from_millis(300));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_compression_codec_round_trips() {
    let broker = Broker::start();
    let base_ts = now_ms() - 60_000;
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let topic = format!("codec-{codec}");
        broker.create_topic(&topic, 1).await;
        let producer = broker.producer(&[("compression.type", codec), ("linger.ms", "20")]);
        // Compressible values so every codec actually compresses.
        let records: Vec<Sent> = (0..500)
            .map(|i| Sent {
                key: format!("k{i}").into_bytes(),
                value: format!("{codec} value {i} ")
                    .repeat(1 + i % 20)
                    .into_bytes(),
                headers: vec![("codec".to_string(), Some(codec.as_bytes().to_vec()))],
                timestamp: base_ts + i as i64,
            })
            .collect();
        let placed = produce_all(&producer, &topic, &records).await;
        let offsets: Vec<i64> = placed.iter().map(|&(_, o)| o).collect();
        let mut sorted = offsets.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..500).collect::<Vec<i64>>(), "{codec}: offsets");

        let consumer = broker.assigned_consumer(&topic, &[0], Offset::Beginning);
        let got = consume_n(&consumer, records.len(), Duration::from_secs(30));
        for m in &got {
            let i = offsets
                .iter()
                .position(|&o| o == m.offset())
                .unwrap_or_else(|| panic!("{codec}: unknown offset {}", m.offset()));
            assert_matches_sent(m, &records[i]);
        }
        assert_eq!(
            watermarks(&consumer, &topic, 0),
            (0, 500),
            "{codec}: watermarks"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_zero_one_and_all() {
    let broker = Broker::start();
    let base_ts = now_ms();
    for acks in ["0", "1", "all"] {
        let topic = format!("acks-{acks}");
        broker.create_topic(&topic, 1).await;
        let producer = broker.producer(&[("acks", acks)]);
        let records: Vec<Sent> = (0..300)
            .map(|i| Sent {
                key: format!("k{i}").into_bytes(),
                value: format!("acks={acks} #{i}").into_bytes(),
                headers: Vec::new(),
                timestamp: base_ts + i as i64,
            })
            .collect();
        let placed = produce_all(&producer, &topic, &records).await;
        if acks != "0" {
            let offsets: Vec<i64> = placed.iter().map(|&(_, o)| o).collect();
            assert_eq!(
                offsets,
                (0..300).collect::<Vec<i64>>(),
                "acks={acks}: offsets in send order"
            );
        }
        producer.flush(Duration::from_secs(10)).expect("flush");

        let consumer = broker.assigned_consumer(&topic, &[0], Offset::Beginning);
        let got = consume_n(&consumer, records.len(), Duration::from_secs(30));
        let got_values: Vec<Vec<u8>> = got.iter().map(|m| m.payload().unwrap().to_vec()).collect();
        let want_values: Vec<Vec<u8>> = records.iter().map(|r| r.value.clone()).collect();
        assert_eq!(
            got_values, want_values,
            "acks={acks}: consumed records in order"
        );
        let offs: Vec<i64> = got.iter().map(|m| m.offset()).collect();
        assert_eq!(
            offs,
            (0..300).collect::<Vec<i64>>(),
            "acks={acks}: consumed offsets"
        );
        assert_eq!(
            watermarks(&consumer, &topic, 0),
            (0, 300),
            "acks={acks}: watermarks"
        );
        assert_no_more(&consumer, Duration::from_millis(200));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seek_reads_from_middle_offset() {
    let broker = Broker::start();
    let topic = "seek";
    broker.create_topic(topic, 1).await;
    let base_ts = now_ms();
    let records: Vec<Sent> = (0..200)
        .map(|i| Sent {
            key: format!("k{i}").into_bytes(),
            value: format!("v{i}").into_bytes(),
            headers: Vec::new(),
            timestamp: base_ts + i as i64,
        })
        .collect();
    let producer = broker.producer(&[]);
    produce_all(&producer, topic, &records).await;

    let consumer = broker.assigned_consumer(topic, &[0], Offset::Beginning);
    let first = consume_n(&consumer, 5, Duration::from_secs(30));
    assert_eq!(
        first.iter().map(|m| m.offset()).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4]
    );

    consumer
        .seek(topic, 0, Offset::Offset(123), CLIENT_TIMEOUT)
        .expect("seek");
    let rest = consume_n(&consumer, 200 - 123, Duration::from_secs(30));
    let offs: Vec<i64> = rest.iter().map(|m| m.offset()).collect();
    assert_eq!(offs, (123..200).collect::<Vec<i64>>(), "records after seek");
    for m in &rest {
        assert_matches_sent(m, &records[m.offset() as usize]);
    }

    // Seeking backwards works too.
    consumer
        .seek(topic, 0, Offset::Offset(7), CLIENT_TIMEOUT)
        .expect("seek back");
    let again = consume_n(&consumer, 3, Duration::from_secs(30));
    assert_eq!(
        again.iter().map(|m| m.offset()).collect::<Vec<_>>(),
        vec![7, 8, 9]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_consumer_wakes_up_on_produce() {
    let broker = Broker::start();
    let topic = "longpoll";
    broker.create_topic(topic, 1).await;
    let producer = broker.producer(&[("linger.ms", "0")]);
    let first = vec![Sent {
        key: b"k".to_vec(),
        value: b"first".to_vec(),
        headers: Vec::new(),
        timestamp: now_ms(),
    }];
    produce_all(&producer, topic, &first).await;

    // A long fetch.wait.max.ms: without a wake-up the second record would
    // only arrive after 20 s.
    let consumer = broker.consumer(&[("fetch.wait.max.ms", "20000")]);
    assign(&consumer, topic, &[0], Offset::Beginning);
    let got = consume_n(&consumer, 1, Duration::from_secs(30));
    assert_eq!(got[0].payload(), Some(&b"first"[..]));
    // Let the consumer park a fetch at the log end.
    assert_no_more(&consumer, Duration::from_millis(1000));

    let second = vec![Sent {
        key: b"k".to_vec(),
        value: b"second".to_vec(),
        headers: Vec::new(),
        timestamp: now_ms(),
    }];
    let t0 = Instant::now();
    let placed = produce_all(&producer, topic, &second).await;
    assert_eq!(placed, vec![(0, 1)]);
    let got = consume_n(&consumer, 1, Duration::from_secs(30));
    let waited = t0.elapsed();
    assert_eq!(got[0].payload(), Some(&b"second"[..]));
    assert_eq!(got[0].offset(), 1);
    assert!(
        waited < Duration::from_secs(10),
        "record produced while a fetch was parked arrived after {waited:?}; the parked fetch was not woken"
    );
}

/// A client that writes a burst of pipelined requests at once gets one
/// answer per request, in request order, each framed whole: Produce answers
/// that are ready together go out in one write, an acks=0 Produce gets none,
/// an error answer and a Metadata request in the middle keep their places.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_pipelined_requests_is_answered_in_order() {
    use kafka_protocol::messages::{
        MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse,
    };
    use std::io::Write;

    let broker = Broker::start();
    let topic = "burst";
    broker.create_topic(topic, 1).await;

    let produce = |partition: i32, acks: i16, value: &str| {
        let batch = one_record_batch(bytes::Bytes::from(value.to_string()), now_ms());
        common::raw::produce_request(topic, acks, vec![(partition, batch)])
    };
    // What each request of the burst gets.
    enum Want {
        Appended,
        Error(i16),
        Silent,
        Metadata,
    }
    let mut wants = Vec::new();
    let mut burst = Vec::new();
    let mut wire = std::net::TcpStream::connect(broker.bootstrap()).expect("connect");
    wire.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    for cid in 1..=60 {
        let mut one = Vec::new();
        let want = match cid {
            20 => {
                kp_encode(
                    &mut one,
                    9,
                    cid,
                    &MetadataRequest::default().with_topics(None),
                );
                Want::Metadata
            }
            30 => {
                kp_encode(&mut one, 9, cid, &produce(0, 0, "acks0"));
                Want::Silent
            }
            c if c % 7 == 0 => {
                // Partition 5 of a one-partition topic.
                kp_encode(&mut one, 9, cid, &produce(5, 1, "lost"));
                Want::Error(3)
            }
            c => {
                kp_encode(&mut one, 9, cid, &produce(0, 1, &format!("v{c}")));
                Want::Appended
            }
        };
        burst.extend_from_slice(&one);
        wants.push((cid, want));
    }
    wire.write_all(&burst).expect("write the burst");

    let mut last_offset = -1i64;
    for (cid, want) in wants {
        match want {
            Want::Silent => {}
            Want::Metadata => {
                let m: MetadataResponse = kp_recv::<MetadataRequest>(&mut wire, 9, cid);
                assert!(
                    m.topics
                        .iter()
                        .any(|t| t.name.as_ref().is_some_and(|n| n.as_str() == topic)),
                    "the Metadata answer in the middle names the topic"
                );
            }
            Want::Appended | Want::Error(_) => {
                let r: ProduceResponse = kp_recv::<ProduceRequest>(&mut wire, 9, cid);
                let p = &r.responses[0].partition_responses[0];
                match want {
                    Want::Error(code) => assert_eq!(p.error_code, code, "request {cid}"),
                    _ => {
                        assert_eq!(p.error_code, 0, "request {cid}");
                        assert!(
                            p.base_offset > last_offset,
                            "request {cid}: offset {} after {last_offset}",
                            p.base_offset
                        );
                        last_offset = p.base_offset;
                    }
                }
            }
        }
    }
    // 50 records answered and the acks=0 one between them: offsets 0..=50.
    assert_eq!(
        last_offset, 50,
        "the acks=0 record took its offset in order"
    );
}

/// What a client that writes `n` acks=1 Produce requests at once and then
/// shuts its socket for writing (a half-close) reads back: the (error code,
/// base offset) of each answer, in order, up to `n` or until the broker
/// closes; after `n` answers the broker must close the connection.
fn half_closed_produce(addr: &str, topic: &str, n: i32) -> Vec<(i16, i64)> {
    use kafka_protocol::messages::{ProduceRequest, ProduceResponse};
    use std::io::Write;

    common::raw::create_one_partition(addr, topic);
    // The partition is led once one Produce is taken (Kafka elects its
    // leader right after the creation's answer).
    let mut first = common::raw::RawConn::new(addr);
    poll_until(Duration::from_secs(30), "a leader for the topic", || {
        let batch = one_record_batch(bytes::Bytes::from_static(b"first"), now_ms());
        let r = first.call(9, &common::raw::produce_request(topic, 1, vec![(0, batch)]));
        match r.responses[0].partition_responses[0].error_code {
            0 => Ok(()),
            code => Err(format!("{topic}: error {code}")),
        }
    });
    let mut burst = Vec::new();
    for cid in 1..=n {
        let batch = one_record_batch(bytes::Bytes::from(format!("v{cid}")), now_ms());
        let req = common::raw::produce_request(topic, 1, vec![(0, batch)]);
        kp_encode(&mut burst, 9, cid, &req);
    }
    let mut wire = std::net::TcpStream::connect(addr).expect("connect");
    wire.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    wire.write_all(&burst).expect("write the burst");
    wire.shutdown(std::net::Shutdown::Write)
        .expect("half-close");
    let mut answers = Vec::new();
    for cid in 1..=n {
        if read_frame_peek_eof(&mut wire) {
            break;
        }
        let r: ProduceResponse = kp_recv::<ProduceRequest>(&mut wire, 9, cid);
        let p = &r.responses[0].partition_responses[0];
        answers.push((p.error_code, p.base_offset));
    }
    if answers.len() == n as usize {
        assert_closed(&mut wire);
    }
    answers
}

/// True when the broker closed (or reset) `wire` before another answer
/// began; false when one began. Panics on any other error (a read timeout:
/// the broker neither answered nor closed).
fn read_frame_peek_eof(wire: &mut std::net::TcpStream) -> bool {
    let mut one = [0u8; 1];
    match wire.peek(&mut one) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => true,
        Err(e) => panic!("neither an answer nor a close: {e}"),
    }
}

/// A client that writes its Produce requests and then half-closes its
/// socket (shutdown for writing, as `nc -N` does) is answered every request
/// it sent, in order, before the broker closes, as Apache Kafka 4.4 answers
/// it: the records are appended, so the client is told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_closed_client_is_answered_every_request() {
    const N: i32 = 50;
    let every_one_in_order = |who: &str, answers: &[(i16, i64)]| {
        assert_eq!(answers.len(), N as usize, "{who}: every request answered");
        for (i, (code, offset)) in answers.iter().enumerate() {
            assert_eq!(*code, 0, "{who}: request {}", i + 1);
            // Offset 0 is the record that waited for the leader.
            assert_eq!(*offset, i as i64 + 1, "{who}: request {} in order", i + 1);
        }
    };
    if let Some(kafka) = common::kafka_peer::KafkaPeer::start(&[]) {
        every_one_in_order("kafka", &half_closed_produce(&kafka.addr, "half-closed", N));
    }
    let broker = Broker::start();
    every_one_in_order(
        "fjord",
        &half_closed_produce(&broker.bootstrap(), "half-closed", N),
    );
}

/// An acks=0 Produce that fails closes the connection (so the client
/// refreshes its metadata) before any later request on it is served, as
/// Kafka does; the answer to the request before it is still written. Both
/// when every partition of the request fails and when one of them is
/// appended (its write still under way when the request is reserved).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_acks0_produce_closes_before_the_next_request() {
    use kafka_protocol::messages::{ProduceRequest, ProduceResponse};
    use std::io::{Read, Write};

    let broker = Broker::start();
    let topic = "acks0-close";
    broker.create_topic(topic, 1).await;
    let produce = |partitions: &[i32], acks: i16| {
        let batches = partitions
            .iter()
            .map(|&p| {
                (
                    p,
                    one_record_batch(bytes::Bytes::from_static(b"v"), now_ms()),
                )
            })
            .collect();
        common::raw::produce_request(topic, acks, batches)
    };
    // (the failing request's partitions, records it appends): partition 5
    // does not exist.
    let mut end = 0i64;
    for (failing, appended) in [(&[5][..], 0i64), (&[0, 5][..], 1)] {
        let mut burst = Vec::new();
        kp_encode(&mut burst, 9, 1, &produce(&[0], 1));
        kp_encode(&mut burst, 9, 2, &produce(failing, 0));
        kp_encode(&mut burst, 9, 3, &produce(&[0], 1));
        let mut wire = std::net::TcpStream::connect(broker.bootstrap()).expect("connect");
        wire.set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        wire.write_all(&burst).expect("write the burst");
        let first: ProduceResponse = kp_recv::<ProduceRequest>(&mut wire, 9, 1);
        assert_eq!(first.responses[0].partition_responses[0].error_code, 0);
        assert_eq!(first.responses[0].partition_responses[0].base_offset, end);
        let mut rest = Vec::new();
        wire.read_to_end(&mut rest)
            .expect("the broker closes the connection");
        assert!(rest.is_empty(), "no answer after the failed acks=0 request");

        // The third request was never served.
        let mut again = std::net::TcpStream::connect(broker.bootstrap()).expect("connect");
        again
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        let r: ProduceResponse = kp_call(&mut again, 9, 1, &produce(&[0], 1));
        assert_eq!(
            r.responses[0].partition_responses[0].base_offset,
            end + 1 + appended,
            "failing partitions {failing:?}: nothing after the close was appended"
        );
        end += 2 + appended;
    }
}
