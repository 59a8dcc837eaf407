//! Transaction coordinator recovery from a crash between the decision and
//! the markers: a transaction is left open by a real transactional producer,
//! the broker is killed, and `__transaction_state` is given the record the
//! coordinator writes just before the markers (PrepareCommit or
//! PrepareAbort, Kafka's TransactionLogValue v0). After the restart the
//! coordinator must finish the transaction itself: write the markers and the
//! Complete state, so read_committed consumers see a committed transaction
//! and skip an aborted one.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::io::Write;
use std::time::Duration;

use bytes::BytesMut;
use common::{assign, kp_call, poll_until, segment_batches, Broker};
use kafka_protocol::messages::DescribeTransactionsRequest;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::{Message, Offset};

use fjord::txn::records::{txn_key, txn_value, TxnLogValue, TxnStatus};

const WAIT: Duration = Duration::from_secs(30);

/// DescribeTransactions for `id`: (state, producer id, epoch).
fn describe(broker: &Broker, id: &str) -> (String, i64, i16) {
    let mut s = common::connect(&broker.bootstrap());
    let req = DescribeTransactionsRequest::default()
        .with_transactional_ids(vec![StrBytes::from_string(id.to_string()).into()]);
    let r = kp_call(&mut s, 0, 1, &req);
    let t = &r.transaction_states[0];
    assert_eq!(t.error_code, 0, "DescribeTransactions({id})");
    (
        t.transaction_state.to_string(),
        t.producer_id.0,
        t.producer_epoch,
    )
}

/// Appends one `__transaction_state` record to the end of the log of
/// partition 0 (the broker runs with one partition), as the coordinator
/// would have written it.
fn append_txn_state(broker: &Broker, id: &str, value: &TxnLogValue) {
    let path = broker.segment_path("__transaction_state", 0);
    let leo = segment_batches(&path)
        .last()
        .map(|(_, base, count, _)| base + count)
        .unwrap_or(0);
    let record = Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: leo,
        sequence: -1,
        timestamp: common::now_ms(),
        key: Some(txn_key(id)),
        value: Some(txn_value(value)),
        headers: Default::default(),
    };
    let mut buf = BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, std::iter::once(&record), &opts).expect("encode");
    let mut f = OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open __transaction_state-0");
    f.write_all(&buf).expect("append");
    f.sync_all().expect("sync");
}

/// Every value a read_committed consumer reads from `topic`-0 until it
/// reaches the high watermark `end`.
fn read_committed_until(broker: &Broker, topic: &str, end: i64) -> Vec<String> {
    let c: BaseConsumer = broker.consumer(&[("isolation.level", "read_committed")]);
    assign(&c, topic, &[0], Offset::Beginning);
    let mut got = Vec::new();
    poll_until(WAIT, "the read_committed consumer to reach the end", || {
        if let Some(Ok(m)) = c.poll(Duration::from_millis(100)) {
            got.push(String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned());
        }
        let pos = c
            .position()
            .ok()
            .and_then(|tpl| tpl.elements().first().map(|e| e.offset()));
        match pos {
            Some(Offset::Offset(o)) if o >= end => Ok(()),
            other => Err(format!("position {other:?}, want {end}")),
        }
    });
    got
}

/// Leaves a transaction of `id` open with `n` records in `topic`-0, then
/// kills the broker. Gives (producer id, epoch).
async fn open_transaction_then_crash(
    broker: &mut Broker,
    id: &str,
    topic: &str,
    n: usize,
) -> (i64, i16) {
    let p: FutureProducer =
        broker.producer(&[("transactional.id", id), ("enable.idempotence", "true")]);
    p.init_transactions(WAIT).expect("init_transactions");
    p.begin_transaction().expect("begin");
    for i in 0..n {
        let v = format!("{id}-{i}");
        p.send(
            FutureRecord::<(), _>::to(topic).partition(0).payload(&v),
            WAIT,
        )
        .await
        .expect("send");
    }
    let (state, pid, epoch) = describe(broker, id);
    assert_eq!(state, "Ongoing");
    broker.kill9();
    drop(p);
    (pid, epoch)
}

async fn prepared_transaction_is_finished_after_restart(commit: bool) {
    let mut broker = Broker::start_with(&[
        "transaction.state.log.num.partitions=1",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms=3600000",
    ]);
    let topic = if commit { "rec-commit" } else { "rec-abort" };
    let id = format!("{topic}-id");
    broker.create_topic(topic, 1).await;
    let (pid, epoch) = open_transaction_then_crash(&mut broker, &id, topic, 4).await;

    let mut partitions = BTreeSet::new();
    partitions.insert((topic.to_string(), 0));
    let now = common::now_ms();
    append_txn_state(
        &broker,
        &id,
        &TxnLogValue {
            producer_id: pid,
            producer_epoch: epoch,
            timeout_ms: 60_000,
            status: if commit {
                TxnStatus::PrepareCommit
            } else {
                TxnStatus::PrepareAbort
            },
            partitions,
            last_update_ms: now,
            start_ms: now,
        },
    );
    broker.restart();

    let want = if commit {
        "CompleteCommit"
    } else {
        "CompleteAbort"
    };
    poll_until(WAIT, "the coordinator to complete the transaction", || {
        let (state, _, _) = describe(&broker, &id);
        if state == want {
            Ok(())
        } else {
            Err(state)
        }
    });
    // Four records and one marker.
    let got = read_committed_until(&broker, topic, 5);
    let expected: Vec<String> = if commit {
        (0..4).map(|i| format!("{id}-{i}")).collect()
    } else {
        Vec::new()
    };
    assert_eq!(got, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepare_commit_found_at_start_up_is_committed() {
    prepared_transaction_is_finished_after_restart(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepare_abort_found_at_start_up_is_aborted() {
    prepared_transaction_is_finished_after_restart(false).await;
}

/// (high watermark, last stable offset) of `topic`-0 from a READ_COMMITTED
/// Fetch.
fn hw_and_lso(broker: &Broker, topic: &str) -> (i64, i64) {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::{BrokerId, FetchRequest, TopicName};
    let mut s = common::connect(&broker.bootstrap());
    let req = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_max_bytes(1 << 20)
        .with_isolation_level(1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])]);
    let r = kp_call(&mut s, 11, 1, &req);
    let p = &r.responses[0].partitions[0];
    (p.high_watermark, p.last_stable_offset)
}

/// An operator ends a transaction that holds a partition's LSO with
/// WriteTxnMarkers (what `kafka-transactions.sh abort` sends), using the
/// producer id and epoch DescribeProducers shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_txn_markers_ends_a_hanging_transaction() {
    use kafka_protocol::messages::describe_producers_request::TopicRequest;
    use kafka_protocol::messages::write_txn_markers_request::{
        WritableTxnMarker, WritableTxnMarkerTopic,
    };
    use kafka_protocol::messages::{DescribeProducersRequest, TopicName, WriteTxnMarkersRequest};

    let broker = Broker::start();
    let topic = "hanging";
    broker.create_topic(topic, 1).await;
    let p: FutureProducer = broker.producer(&[
        ("transactional.id", "hanging-id"),
        ("enable.idempotence", "true"),
    ]);
    p.init_transactions(WAIT).expect("init_transactions");
    p.begin_transaction().expect("begin");
    for i in 0..3 {
        let v = format!("open-{i}");
        p.send(
            FutureRecord::<(), _>::to(topic).partition(0).payload(&v),
            WAIT,
        )
        .await
        .expect("send");
    }
    assert_eq!(hw_and_lso(&broker, topic), (3, 0));

    let mut s = common::connect(&broker.bootstrap());
    let dp = DescribeProducersRequest::default().with_topics(vec![TopicRequest::default()
        .with_name(TopicName(StrBytes::from_static_str("hanging")))
        .with_partition_indexes(vec![0])]);
    let r = kp_call(&mut s, 0, 1, &dp);
    let prod = r.topics[0].partitions[0].active_producers[0].clone();
    assert_eq!(prod.current_txn_start_offset, 0);
    let abort = |epoch: i16| {
        WriteTxnMarkersRequest::default().with_markers(vec![WritableTxnMarker::default()
            .with_producer_id(prod.producer_id)
            .with_producer_epoch(epoch)
            .with_transaction_result(false)
            .with_coordinator_epoch(prod.coordinator_epoch.max(0))
            .with_topics(vec![WritableTxnMarkerTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("hanging")))
                .with_partition_indexes(vec![0, 9])])])
    };
    // An epoch older than the partition knows is refused; nothing written.
    if prod.producer_epoch > 0 {
        let r = kp_call(&mut s, 1, 2, &abort(prod.producer_epoch as i16 - 1));
        assert_eq!(r.markers[0].topics[0].partitions[0].error_code, 47);
    }
    let r = kp_call(&mut s, 1, 3, &abort(prod.producer_epoch as i16));
    let codes: Vec<i16> = r.markers[0].topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect();
    assert_eq!(codes, vec![0, 3], "partition 9 does not exist");
    // The marker took offset 3; the LSO is free and the records are aborted.
    assert_eq!(hw_and_lso(&broker, topic), (4, 4));
    assert!(read_committed_until(&broker, topic, 4).is_empty());
}

/// A transactional id with no transaction for `transactional.id.expiration.ms`
/// is removed (a tombstone in `__transaction_state`), and stays removed
/// after a restart; an id with an open transaction is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_transactional_ids_expire() {
    let mut broker = Broker::start_with(&[
        "transaction.state.log.num.partitions=1",
        "transactional.id.expiration.ms=1000",
        "transaction.remove.expired.transaction.cleanup.interval.ms=100",
    ]);
    broker.create_topic("expiring", 1).await;
    let idle: FutureProducer = broker.producer(&[
        ("transactional.id", "idle-id"),
        ("enable.idempotence", "true"),
    ]);
    idle.init_transactions(WAIT).expect("init idle");
    let open: FutureProducer = broker.producer(&[
        ("transactional.id", "open-id"),
        ("enable.idempotence", "true"),
    ]);
    open.init_transactions(WAIT).expect("init open");
    open.begin_transaction().expect("begin");
    open.send(
        FutureRecord::<(), _>::to("expiring")
            .partition(0)
            .payload("x"),
        WAIT,
    )
    .await
    .expect("send");

    // The answer for `id`: (error code, state), one request, so the poll
    // below never asserts on an id that expires between two requests.
    let state_of = |broker: &Broker, id: &str| {
        let mut s = common::connect(&broker.bootstrap());
        let req = DescribeTransactionsRequest::default()
            .with_transactional_ids(vec![StrBytes::from_string(id.to_string()).into()]);
        let r = kp_call(&mut s, 0, 1, &req);
        let t = &r.transaction_states[0];
        (t.error_code, t.transaction_state.to_string())
    };
    poll_until(
        WAIT,
        "the idle transactional id to expire",
        || match state_of(&broker, "idle-id") {
            (105, _) => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    assert_eq!(describe(&broker, "open-id").0, "Ongoing");
    drop(idle);
    drop(open);
    broker.restart();
    assert_eq!(
        state_of(&broker, "idle-id").0,
        105,
        "the tombstone is replayed"
    );
}
