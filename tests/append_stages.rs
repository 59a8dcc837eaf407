//! Kill -9 with appends in flight at each stage of the two-stage append
//! (reserved: offsets assigned, nothing written; written: the bytes are in
//! the file, not yet committed; committed: readable, the producer not yet
//! answered). The broker pauses every append at the stage under test
//! (`FJORD_FAULT_APPEND_PAUSE`, see src/shard/fault.rs) and logs that it did;
//! the test kills it during that pause, restarts it without the fault and
//! checks that every acknowledged record is there, in order, with its value,
//! that offsets stay contiguous, that every batch served passes the client's
//! CRC check, and that the partition takes new appends at the next offset.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use rdkafka::consumer::Consumer;
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::Offset;

/// Long enough that the kill always lands inside the pause.
const PAUSE_MS: u64 = 4000;
const ACKED: usize = 40;
const IN_FLIGHT: usize = 40;

fn value(i: usize) -> String {
    format!("stage record {i} ").repeat(1 + i % 7)
}

fn pauses(broker: &Broker) -> usize {
    broker
        .stderr_text()
        .matches("fault injection: append paused at")
        .count()
}

fn send(producer: &FutureProducer, topic: &str, i: usize) -> rdkafka::producer::DeliveryFuture {
    let v = value(i);
    producer
        .send_result(FutureRecord::to(topic).partition(0).key("k").payload(&v))
        .map_err(|(e, _)| e)
        .expect("enqueue")
}

async fn kill_at(stage: &str) {
    let fault = format!("{stage}:{PAUSE_MS}");
    let mut broker = Broker::start_with_env(&[], &[("FJORD_FAULT_APPEND_PAUSE", &fault)]);
    let topic = format!("stage-{stage}");
    broker.create_topic(&topic, 1).await;
    let producer = broker.producer(&[("acks", "all"), ("linger.ms", "50")]);

    // Acknowledged before the crash.
    let futs: Vec<_> = (0..ACKED).map(|i| send(&producer, &topic, i)).collect();
    for f in futs {
        tokio::time::timeout(Duration::from_secs(60), f)
            .await
            .expect("delivery within 60 s")
            .expect("not cancelled")
            .unwrap_or_else(|(e, _)| panic!("delivery failed: {e}"));
    }
    let before = pauses(&broker);

    // In flight at the crash: wait until the broker holds them at `stage`.
    let _inflight: Vec<_> = (ACKED..ACKED + IN_FLIGHT)
        .map(|i| send(&producer, &topic, i))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while pauses(&broker) == before {
        assert!(
            Instant::now() < deadline,
            "the broker never paused an append at {stage}:\n{}",
            broker.stderr_text()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    broker.kill9();
    drop(_inflight);
    drop(producer);

    broker.set_env(&[]);
    broker.restart();
    let c = broker.consumer(&[]);
    let deadline = Instant::now() + CLIENT_TIMEOUT;
    let (lo, hw) = loop {
        if let Ok(w) = c.fetch_watermarks(&topic, 0, Duration::from_secs(5)) {
            break w;
        }
        assert!(Instant::now() < deadline, "no watermarks after restart");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(lo, 0);
    let hw = hw as usize;
    assert!(
        hw >= ACKED,
        "stage {stage}: high watermark {hw} after kill -9, but {ACKED} records were acknowledged"
    );
    match stage {
        // Nothing of the paused request was written.
        "reserved" => assert_eq!(hw, ACKED, "stage reserved: unwritten records appeared"),
        // Its bytes were in the page cache: a process kill keeps them.
        _ => assert!(hw > ACKED, "stage {stage}: written records were lost"),
    }
    assert!(hw <= ACKED + IN_FLIGHT);

    let consumer = broker.consumer(&[("check.crcs", "true")]);
    assign(&consumer, &topic, &[0], Offset::Beginning);
    let got = consume_n(&consumer, hw, Duration::from_secs(30));
    for (i, m) in got.iter().enumerate() {
        assert_eq!(m.offset(), i as i64, "contiguous offsets");
        assert_eq!(
            m.payload(),
            Some(value(i).as_bytes()),
            "stage {stage}: value at offset {i}"
        );
    }
    assert_no_more(&consumer, Duration::from_millis(300));

    // The partition goes on at the next offset.
    let producer = broker.producer(&[("acks", "all")]);
    let d = tokio::time::timeout(Duration::from_secs(30), send(&producer, &topic, hw))
        .await
        .expect("delivery within 30 s")
        .expect("not cancelled")
        .unwrap_or_else(|(e, _)| panic!("delivery after restart failed: {e}"));
    assert_eq!(d.offset, hw as i64);
    broker.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_with_appends_reserved_not_written() {
    kill_at("reserved").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_with_appends_written_not_committed() {
    kill_at("written").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_with_appends_committed_not_answered() {
    kill_at("committed").await;
}
