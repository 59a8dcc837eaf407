//! Transactions (KIP-98) end to end with librdkafka producers and consumers:
//! commit and abort as read_committed and read_uncommitted consumers see
//! them, the last stable offset while a transaction is open, consume-
//! transform-produce with offsets committed in the transaction, fencing by a
//! second producer with the same `transactional.id`, the coordinator's
//! timeout abort, recovery after a crash, and the admin and error answers on
//! a raw connection.
//!
//! "A consumer read everything" is never a quiet period: [`read_view`] waits
//! until the consumer's own statistics show a Fetch answered with the
//! current high watermark and the application position at the end the
//! consumer may read to (the last stable offset for read_committed, the high
//! watermark otherwise). Control records move that position too, so a
//! read_committed consumer only gets there by skipping aborted records and
//! markers.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::TcpStream;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::*;
use kafka_protocol::messages::{self as kp, ProducerId};
use kafka_protocol::protocol::StrBytes;
use rdkafka::client::ClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, Producer};
use rdkafka::statistics::Statistics;
use rdkafka::{Offset, TopicPartitionList};

/// Broker settings for fast transaction tests.
const OVERRIDES: &[&str] = &[
    "offsets.topic.num.partitions=4",
    "transaction.state.log.num.partitions=4",
    "group.initial.rebalance.delay.ms=0",
    "group.min.session.timeout.ms=1000",
];

/// Deadline for anything that waits on the broker (consumers catching up,
/// transaction calls, group joins).
const SETTLE: Duration = Duration::from_secs(30);

/// Kafka error codes the tests expect.
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const INVALID_PRODUCER_EPOCH: i16 = 47;
const INVALID_TXN_STATE: i16 = 48;
const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
const INVALID_TRANSACTION_TIMEOUT: i16 = 50;
const CONCURRENT_TRANSACTIONS: i16 = 51;
const OPERATION_NOT_ATTEMPTED: i16 = 55;
const PRODUCER_FENCED: i16 = 90;
const TRANSACTIONAL_ID_NOT_FOUND: i16 = 105;

fn start_broker() -> Broker {
    Broker::start_with(OVERRIDES)
}

fn start_broker_with(extra: &[&str]) -> Broker {
    let mut o: Vec<&str> = OVERRIDES.to_vec();
    o.extend_from_slice(extra);
    Broker::start_with(&o)
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

// ------------------------------------------------------------- producers

/// A transactional producer with `transactional.id` = `id` (not yet
/// initialised); `extra` wins.
fn txn_producer(broker: &Broker, id: &str, extra: &[(&str, &str)]) -> FutureProducer {
    let mut settings: Vec<(&str, &str)> = vec![
        ("transactional.id", id),
        ("enable.idempotence", "true"),
        ("acks", "all"),
        ("transaction.timeout.ms", "60000"),
    ];
    settings.extend_from_slice(extra);
    broker.producer(&settings)
}

/// A transactional producer after a successful `init_transactions`.
fn init_producer(broker: &Broker, id: &str, extra: &[(&str, &str)]) -> FutureProducer {
    let p = txn_producer(broker, id, extra);
    p.init_transactions(SETTLE)
        .unwrap_or_else(|e| panic!("init_transactions({id}): {e}"));
    p
}

/// Sends `(partition, value)` records to `topic` and waits for every
/// delivery report; gives `(partition, offset, value)` per record.
async fn send(
    producer: &FutureProducer,
    topic: &str,
    records: &[(i32, String)],
) -> Vec<(i32, i64, String)> {
    send_to_partitions(producer, topic, records, SETTLE).await
}

/// `count` records `{tag}-{i}`, record `i` to partition `i % partitions`.
fn values(tag: &str, count: usize, partitions: i32) -> Vec<(i32, String)> {
    (0..count)
        .map(|i| ((i as i32) % partitions, format!("{tag}-{i}")))
        .collect()
}

/// One committed transaction with `records`.
async fn commit_txn(producer: &FutureProducer, topic: &str, records: &[(i32, String)]) {
    producer.begin_transaction().expect("begin_transaction");
    send(producer, topic, records).await;
    producer
        .commit_transaction(SETTLE)
        .unwrap_or_else(|e| panic!("commit_transaction: {e}"));
}

// ------------------------------------------------------------- consumers

/// Keeps the latest librdkafka statistics of every partition.
#[derive(Default)]
struct PartitionStats {
    parts: Mutex<HashMap<(String, i32), rdkafka::statistics::Partition>>,
}

impl ClientContext for PartitionStats {
    fn stats(&self, stats: Statistics) {
        let mut parts = self.parts.lock().unwrap();
        for (topic, t) in stats.topics {
            for (p, ps) in t.partitions {
                if p >= 0 {
                    parts.insert((topic.clone(), p), ps);
                }
            }
        }
    }
}

impl ConsumerContext for PartitionStats {}

/// What a consumer read from a whole topic.
#[derive(Debug)]
struct View {
    /// `(partition, offset, value)` in arrival order.
    msgs: Vec<(i32, i64, String)>,
    /// Last stable offset per partition, as the last Fetch answered it.
    lso: BTreeMap<i32, i64>,
    /// High watermark per partition, as the last Fetch answered it.
    hw: BTreeMap<i32, i64>,
}

impl View {
    fn values(&self) -> Vec<String> {
        self.msgs.iter().map(|m| m.2.clone()).collect()
    }

    fn values_of(&self, partition: i32) -> Vec<String> {
        self.msgs
            .iter()
            .filter(|m| m.0 == partition)
            .map(|m| m.2.clone())
            .collect()
    }
}

/// librdkafka's default isolation level is read_committed: consumers that
/// must see the high watermark say so.
const READ_UNCOMMITTED: (&str, &str) = ("isolation.level", "read_uncommitted");

/// High watermark of every partition of `topic` (read_uncommitted ListOffsets).
fn high_watermarks(broker: &Broker, topic: &str, partitions: i32) -> BTreeMap<i32, i64> {
    let c = broker.consumer(&[READ_UNCOMMITTED]);
    (0..partitions)
        .map(|p| (p, watermarks(&c, topic, p).1))
        .collect()
}

/// Reads `topic` from the beginning with `isolation.level` = `isolation`
/// until the consumer is at the end it may read to: its statistics show a
/// Fetch answered with the current high watermark (taken before it starts),
/// nothing left in its fetch queue, and its position at the last stable
/// offset (read_committed) or high watermark (read_uncommitted). Panics with
/// what it saw after [`SETTLE`].
fn read_view(broker: &Broker, topic: &str, partitions: i32, isolation: &str) -> View {
    let target_hw = high_watermarks(broker, topic, partitions);
    let mut cfg = broker.client_config();
    cfg.set("group.id", "fjord-it-txn-view")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "100")
        .set("statistics.interval.ms", "100")
        .set("isolation.level", isolation);
    let c: BaseConsumer<PartitionStats> = cfg
        .create_with_context(PartitionStats::default())
        .expect("create consumer");
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .expect("add partition");
    }
    c.assign(&tpl).expect("assign");
    let committed = isolation == "read_committed";
    let deadline = Instant::now() + SETTLE;
    let mut msgs = Vec::new();
    loop {
        match c.poll(Duration::from_millis(50)) {
            Some(Ok(m)) => msgs.push((
                m.partition(),
                m.offset(),
                String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned(),
            )),
            Some(Err(e)) => panic!("{isolation} consumer of {topic}: {e}"),
            None => {}
        }
        let stats = c.context().parts.lock().unwrap().clone();
        let mut lso = BTreeMap::new();
        let mut hw = BTreeMap::new();
        let mut done = true;
        let mut state = Vec::new();
        for p in 0..partitions {
            let Some(ps) = stats.get(&(topic.to_string(), p)) else {
                done = false;
                state.push(format!("p{p}: no statistics yet"));
                continue;
            };
            // Nothing delivered yet: the position is still "invalid".
            let app = ps.app_offset.max(0);
            let end = if committed {
                ps.ls_offset
            } else {
                ps.hi_offset
            };
            let ok = ps.hi_offset == target_hw[&p]
                && ps.ls_offset >= 0
                && ps.fetchq_cnt == 0
                && app >= end;
            done &= ok;
            state.push(format!(
                "p{p}: hi {} (want {}), ls {}, app {}, fetchq {}",
                ps.hi_offset, target_hw[&p], ps.ls_offset, ps.app_offset, ps.fetchq_cnt
            ));
            lso.insert(p, ps.ls_offset);
            hw.insert(p, ps.hi_offset);
        }
        if done {
            return View { msgs, lso, hw };
        }
        assert!(
            Instant::now() < deadline,
            "{isolation} consumer of {topic} did not reach its end within {SETTLE:?}: {}; \
             {} message(s) read: {:?}",
            state.join("; "),
            msgs.len(),
            msgs.iter().take(30).collect::<Vec<_>>()
        );
    }
}

/// Asserts every partition's values arrived in the order they were sent.
fn assert_partition_order(view: &View, sent: &[(i32, String)], partitions: i32, what: &str) {
    for p in 0..partitions {
        let want: Vec<String> = sent
            .iter()
            .filter(|r| r.0 == p)
            .map(|r| r.1.clone())
            .collect();
        assert_eq!(view.values_of(p), want, "{what}: partition {p}");
    }
}

/// Offsets in `msgs` strictly increase in every partition.
fn assert_offsets_increase(view: &View, what: &str) {
    let mut last: HashMap<i32, i64> = HashMap::new();
    for (p, o, v) in &view.msgs {
        if let Some(prev) = last.insert(*p, *o) {
            assert!(prev < *o, "{what}: {v} at {p}@{o} after offset {prev}");
        }
    }
}

/// `(base offset, record count, control, producer id, epoch)` of every
/// batch in a partition's first segment, for failure messages.
fn batch_layout(broker: &Broker, topic: &str, partition: i32) -> Vec<(i64, i64, bool, i64, i16)> {
    let path = broker.segment_path(topic, partition);
    let data = std::fs::read(&path).unwrap_or_default();
    segment_batches(&path)
        .into_iter()
        .map(|(pos, base, count, _)| {
            let attrs = i16::from_be_bytes(data[pos + 21..pos + 23].try_into().unwrap());
            let pid = i64::from_be_bytes(data[pos + 43..pos + 51].try_into().unwrap());
            let epoch = i16::from_be_bytes(data[pos + 51..pos + 53].try_into().unwrap());
            (base, count, attrs & 0x20 != 0, pid, epoch)
        })
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

// ------------------------------------------------------------- raw requests

/// A raw connection with its own correlation ids.
struct Conn {
    s: TcpStream,
    corr: i32,
}

impl Conn {
    fn new(broker: &Broker) -> Conn {
        Conn {
            s: connect(&broker.bootstrap()),
            corr: 0,
        }
    }

    fn call<R: kafka_protocol::protocol::Request>(&mut self, version: i16, req: &R) -> R::Response {
        self.corr += 1;
        kp_call(&mut self.s, version, self.corr, req)
    }

    fn describe_txn(
        &mut self,
        ids: &[&str],
    ) -> Vec<kp::describe_transactions_response::TransactionState> {
        let req = kp::DescribeTransactionsRequest::default()
            .with_transactional_ids(ids.iter().map(|i| s(i).into()).collect());
        let r = self.call(0, &req);
        assert_eq!(r.transaction_states.len(), ids.len(), "{r:?}");
        r.transaction_states
    }

    fn describe_one(&mut self, id: &str) -> TxnView {
        TxnView::from(&self.describe_txn(&[id])[0])
    }

    fn list_txn(&mut self, states: &[&str], pids: &[i64]) -> kp::ListTransactionsResponse {
        let req = kp::ListTransactionsRequest::default()
            .with_state_filters(states.iter().map(|x| s(x)).collect())
            .with_producer_id_filters(pids.iter().map(|p| ProducerId(*p)).collect());
        self.call(0, &req)
    }

    /// `(producer id, epoch, current_txn_start_offset)` of the producers of
    /// one partition.
    fn describe_producers(&mut self, topic: &str, partition: i32) -> Vec<(i64, i32, i64)> {
        let req = kp::DescribeProducersRequest::default().with_topics(vec![
            kp::describe_producers_request::TopicRequest::default()
                .with_name(s(topic).into())
                .with_partition_indexes(vec![partition]),
        ]);
        let r = self.call(0, &req);
        let p = &r.topics[0].partitions[0];
        assert_eq!(
            p.error_code, 0,
            "DescribeProducers {topic}-{partition}: {p:?}"
        );
        p.active_producers
            .iter()
            .map(|a| {
                (
                    a.producer_id.0,
                    a.producer_epoch,
                    a.current_txn_start_offset,
                )
            })
            .collect()
    }

    fn init_pid(&mut self, version: i16, id: &str, timeout_ms: i32) -> kp::InitProducerIdResponse {
        let req = kp::InitProducerIdRequest::default()
            .with_transactional_id(Some(s(id).into()))
            .with_transaction_timeout_ms(timeout_ms);
        self.call(version, &req)
    }

    fn add_partitions(
        &mut self,
        version: i16,
        id: &str,
        pid: i64,
        epoch: i16,
        parts: &[(&str, &[i32])],
    ) -> BTreeMap<(String, i32), i16> {
        use kp::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
        let req = kp::AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(s(id).into())
            .with_v3_and_below_producer_id(ProducerId(pid))
            .with_v3_and_below_producer_epoch(epoch)
            .with_v3_and_below_topics(
                parts
                    .iter()
                    .map(|(t, ps)| {
                        AddPartitionsToTxnTopic::default()
                            .with_name(s(t).into())
                            .with_partitions(ps.to_vec())
                    })
                    .collect(),
            );
        let r = self.call(version, &req);
        let mut out = BTreeMap::new();
        for t in &r.results_by_topic_v3_and_below {
            for p in &t.results_by_partition {
                out.insert(
                    (t.name.0.to_string(), p.partition_index),
                    p.partition_error_code,
                );
            }
        }
        out
    }

    fn end_txn(&mut self, version: i16, id: &str, pid: i64, epoch: i16, commit: bool) -> i16 {
        let req = kp::EndTxnRequest::default()
            .with_transactional_id(s(id).into())
            .with_producer_id(ProducerId(pid))
            .with_producer_epoch(epoch)
            .with_committed(commit);
        self.call(version, &req).error_code
    }
}

/// The parts of a DescribeTransactions answer the tests compare.
#[derive(Debug, Clone, PartialEq)]
struct TxnView {
    error_code: i16,
    state: String,
    producer_id: i64,
    producer_epoch: i16,
    timeout_ms: i32,
    start_ms: i64,
    partitions: BTreeSet<(String, i32)>,
}

impl From<&kp::describe_transactions_response::TransactionState> for TxnView {
    fn from(t: &kp::describe_transactions_response::TransactionState) -> Self {
        let mut partitions = BTreeSet::new();
        for td in &t.topics {
            for p in &td.partitions {
                partitions.insert((td.topic.0.to_string(), *p));
            }
        }
        TxnView {
            error_code: t.error_code,
            state: t.transaction_state.to_string(),
            producer_id: t.producer_id.0,
            producer_epoch: t.producer_epoch,
            timeout_ms: t.transaction_timeout_ms,
            start_ms: t.transaction_start_time_ms,
            partitions,
        }
    }
}

fn parts(topic: &str, ps: &[i32]) -> BTreeSet<(String, i32)> {
    ps.iter().map(|p| (topic.to_string(), *p)).collect()
}

/// Transactional ids and states in a ListTransactions answer.
fn listed(r: &kp::ListTransactionsResponse) -> BTreeMap<String, String> {
    r.transaction_states
        .iter()
        .map(|t| {
            (
                t.transactional_id.0.to_string(),
                t.transaction_state.to_string(),
            )
        })
        .collect()
}

/// Committed offsets of `group` for partitions `0..partitions` of `topic`,
/// read by a consumer of that group (OffsetFetch; read_committed asks for
/// stable offsets). Gives -1 where nothing is committed.
fn group_offsets(broker: &Broker, group: &str, topic: &str, partitions: i32) -> BTreeMap<i32, i64> {
    let c = broker.group_consumer(group, &[("isolation.level", "read_committed")]);
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition(topic, p);
    }
    let got = poll_until(SETTLE, &format!("OffsetFetch of {group}"), || {
        c.committed_offsets(tpl.clone(), CLIENT_TIMEOUT)
            .map_err(|e| e.to_string())
    });
    got.elements()
        .iter()
        .map(|e| {
            let o = match e.offset() {
                Offset::Offset(o) => o,
                Offset::Invalid => -1,
                other => panic!("unexpected committed offset {other:?}"),
            };
            (e.partition(), o)
        })
        .collect()
}

/// The consumer's positions as a map (partitions with a position only).
fn positions(c: &BaseConsumer) -> BTreeMap<i32, i64> {
    c.position()
        .expect("position")
        .elements()
        .iter()
        .filter_map(|e| match e.offset() {
            Offset::Offset(o) => Some((e.partition(), o)),
            _ => None,
        })
        .collect()
}

fn offsets_tpl(topic: &str, offsets: &BTreeMap<i32, i64>) -> TopicPartitionList {
    let mut tpl = TopicPartitionList::new();
    for (p, o) in offsets {
        tpl.add_partition_offset(topic, *p, Offset::Offset(*o))
            .expect("add partition offset");
    }
    tpl
}

/// The librdkafka error code of a transactional call's error, and whether
/// librdkafka considers it fatal.
fn txn_error(e: &KafkaError) -> (Option<RDKafkaErrorCode>, bool) {
    match e {
        KafkaError::Transaction(t) => (Some(t.code()), t.is_fatal()),
        other => (other.rdkafka_error_code(), false),
    }
}

// ================================================================= tests

/// Three committed transactions over three partitions: a read_committed
/// consumer reads exactly the 300 records, in order per partition, and the
/// log holds one COMMIT marker per partition and transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_transactions_are_read_in_order() {
    let broker = start_broker();
    let (topic, partitions) = ("txn-commit", 3);
    broker.create_topic(topic, partitions).await;
    let p = init_producer(&broker, "commit-tx", &[]);
    let mut sent = Vec::new();
    for t in 0..3 {
        let recs = values(&format!("t{t}"), 100, partitions);
        commit_txn(&p, topic, &recs).await;
        sent.extend(recs);
    }

    // Coordinator side: each transaction wrote one marker to each partition.
    let hw = high_watermarks(&broker, topic, partitions);
    for p in 0..partitions {
        let records = sent.iter().filter(|r| r.0 == p).count() as i64;
        assert_eq!(
            hw[&p],
            records + 3,
            "partition {p}: {records} records + 3 COMMIT markers; batches (base offset, records, \
             control, producer id, epoch): {:?}",
            batch_layout(&broker, topic, p)
        );
    }

    let rc = read_view(&broker, topic, partitions, "read_committed");
    assert_eq!(rc.lso, rc.hw, "no transaction open: LSO == high watermark");
    assert_eq!(
        sorted(rc.values()),
        sorted(sent.iter().map(|r| r.1.clone()).collect())
    );
    assert_partition_order(&rc, &sent, partitions, "read_committed");
    assert_offsets_increase(&rc, "read_committed");

    let ru = read_view(&broker, topic, partitions, "read_uncommitted");
    assert_partition_order(&ru, &sent, partitions, "read_uncommitted");
}

/// An aborted transaction between two committed ones: read_committed skips
/// its records (and the markers) and still reads the later transaction;
/// read_uncommitted reads all three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborted_transaction_is_skipped_by_read_committed() {
    let broker = start_broker();
    let (topic, partitions) = ("txn-abort", 2);
    broker.create_topic(topic, partitions).await;
    let p = init_producer(&broker, "abort-tx", &[]);

    let first = values("c1", 40, partitions);
    commit_txn(&p, topic, &first).await;
    let aborted = values("ab", 40, partitions);
    p.begin_transaction().expect("begin");
    // Every aborted record is in the log before the abort.
    send(&p, topic, &aborted).await;
    p.abort_transaction(SETTLE).expect("abort_transaction");
    let second = values("c2", 40, partitions);
    commit_txn(&p, topic, &second).await;

    let hw = high_watermarks(&broker, topic, partitions);
    for p in 0..partitions {
        assert_eq!(hw[&p], 60 + 3, "partition {p}: 60 records + 3 markers");
    }

    let ru = read_view(&broker, topic, partitions, "read_uncommitted");
    let all: Vec<(i32, String)> = [first.clone(), aborted.clone(), second.clone()].concat();
    assert_partition_order(
        &ru,
        &all,
        partitions,
        "read_uncommitted sees the aborted records",
    );

    let rc = read_view(&broker, topic, partitions, "read_committed");
    let aborted_seen: Vec<String> = rc
        .values()
        .into_iter()
        .filter(|v| v.starts_with("ab-"))
        .collect();
    assert!(
        aborted_seen.is_empty(),
        "read_committed consumer saw {} aborted record(s), first {:?}",
        aborted_seen.len(),
        &aborted_seen[..aborted_seen.len().min(5)]
    );
    let committed: Vec<(i32, String)> = [first, second].concat();
    assert_partition_order(&rc, &committed, partitions, "read_committed");
    assert_eq!(rc.lso, rc.hw, "no transaction open: LSO == high watermark");
}

/// While a transaction is open its first offset is the last stable offset:
/// read_committed reads nothing from there on (not even a later
/// non-transactional record), ListOffsets with read_committed answers the
/// LSO; after the commit everything is visible and LSO == high watermark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_transaction_holds_the_last_stable_offset() {
    let broker = start_broker();
    let topic = "txn-lso";
    broker.create_topic(topic, 1).await;
    let p = init_producer(&broker, "lso-tx", &[]);
    let first = values("c1", 10, 1);
    commit_txn(&p, topic, &first).await; // offsets 0..=9, marker 10

    p.begin_transaction().expect("begin");
    let open = values("open", 10, 1);
    let delivered = send(&p, topic, &open).await;
    let open_start = delivered[0].1;
    assert_eq!(
        open_start, 11,
        "the open transaction starts after c1 and its marker"
    );
    let plain = broker.producer(&[]);
    let late = send(&plain, topic, &[(0, "plain-after".to_string())]).await;
    assert_eq!(late[0].1, 21);

    let ru_watermarks = broker.consumer(&[READ_UNCOMMITTED]);
    assert_eq!(watermarks(&ru_watermarks, topic, 0), (0, 22));
    let rc_watermarks = broker.consumer(&[("isolation.level", "read_committed")]);
    let rc_open = watermarks(&rc_watermarks, topic, 0);

    let rc = read_view(&broker, topic, 1, "read_committed");
    let ru = read_view(&broker, topic, 1, "read_uncommitted");
    assert_eq!(
        ru.msgs.len(),
        21,
        "read_uncommitted reads c1, the open records and plain-after"
    );
    assert_eq!(rc.hw[&0], 22);
    assert_eq!(
        rc.lso[&0], open_start,
        "LSO in the Fetch answer while the transaction is open"
    );
    assert_eq!(
        rc.values(),
        first.iter().map(|r| r.1.clone()).collect::<Vec<_>>(),
        "read_committed while the transaction is open"
    );
    assert_eq!(
        rc_open,
        (0, open_start),
        "librdkafka's watermarks for a read_committed consumer (ListOffsets isolation 1) \
         while the transaction is open"
    );

    p.commit_transaction(SETTLE).expect("commit");
    let rc = read_view(&broker, topic, 1, "read_committed");
    let mut want: Vec<String> = first.iter().chain(&open).map(|r| r.1.clone()).collect();
    want.push("plain-after".to_string());
    assert_eq!(rc.values(), want, "read_committed after the commit");
    assert_eq!(rc.lso[&0], 23, "LSO after the commit (marker at 22)");
    assert_eq!(rc.hw[&0], 23);
    assert_eq!(watermarks(&rc_watermarks, topic, 0), (0, 23));
}

/// Consume-transform-produce with a group consumer: the offsets sent in a
/// committed transaction are the group's committed offsets, those sent in
/// an aborted one are not, and a new member resumes where the last committed
/// transaction left off, so the output holds every input record exactly
/// once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consume_transform_produce_commits_offsets_atomically() {
    let broker = start_broker();
    let (input, output, group, partitions) = ("ctp-in", "ctp-out", "ctp-group", 2);
    broker.create_topic(input, partitions).await;
    broker.create_topic(output, partitions).await;
    let plain = broker.producer(&[]);
    let in_records = values("v", 100, partitions);
    send(&plain, input, &in_records).await;
    let transform = |v: &str| format!("T({v})");

    let member_cfg = [("isolation.level", "read_committed")];
    let c1 = broker.group_consumer(group, &member_cfg);
    c1.subscribe(&[input]).expect("subscribe");
    let producer = init_producer(&broker, "ctp-tx", &[]);

    // Round 1: 60 records, committed.
    let round1 = consume_n(&c1, 60, SETTLE);
    let pos1 = positions(&c1);
    let out1: Vec<(i32, String)> = round1
        .iter()
        .map(|m| {
            (
                m.partition(),
                transform(&String::from_utf8_lossy(m.payload().unwrap())),
            )
        })
        .collect();
    producer.begin_transaction().expect("begin");
    send(&producer, output, &out1).await;
    let cgm = c1.group_metadata().expect("group metadata");
    producer
        .send_offsets_to_transaction(&offsets_tpl(input, &pos1), &cgm, SETTLE)
        .expect("send_offsets_to_transaction");
    producer.commit_transaction(SETTLE).expect("commit round 1");
    let mut want_committed: BTreeMap<i32, i64> = (0..partitions).map(|p| (p, -1)).collect();
    want_committed.extend(pos1.clone());
    assert_eq!(
        group_offsets(&broker, group, input, partitions),
        want_committed,
        "group offsets after the committed round"
    );

    // Round 2: 20 more, aborted.
    let round2 = consume_n(&c1, 20, SETTLE);
    let pos2 = positions(&c1);
    assert_ne!(pos1, pos2);
    let out2: Vec<(i32, String)> = round2
        .iter()
        .map(|m| {
            (
                m.partition(),
                transform(&String::from_utf8_lossy(m.payload().unwrap())),
            )
        })
        .collect();
    producer.begin_transaction().expect("begin");
    send(&producer, output, &out2).await;
    producer
        .send_offsets_to_transaction(&offsets_tpl(input, &pos2), &cgm, SETTLE)
        .expect("send_offsets_to_transaction");
    producer.abort_transaction(SETTLE).expect("abort round 2");
    assert_eq!(
        group_offsets(&broker, group, input, partitions),
        want_committed,
        "offsets sent in the aborted transaction must not be committed"
    );
    drop(c1);

    // Round 3: a new member resumes at the committed offsets.
    let c2 = broker.group_consumer(group, &member_cfg);
    c2.subscribe(&[input]).expect("subscribe");
    let round3 = consume_n(&c2, 40, SETTLE);
    let in_hw = high_watermarks(&broker, input, partitions);
    // A partition the new member read nothing from has no position yet:
    // it is at its committed offset.
    wait_for(SETTLE, "the new member at the end of the input", || {
        let _ = c2.poll(Duration::from_millis(20)).map(|r| {
            let m = r.expect("consumer error");
            panic!(
                "extra record {}@{} after resuming",
                m.partition(),
                m.offset()
            )
        });
        let mut at = want_committed.clone();
        at.extend(positions(&c2));
        at == in_hw
    });
    let mut resumed: Vec<String> = round3
        .iter()
        .map(|m| String::from_utf8_lossy(m.payload().unwrap()).into_owned())
        .collect();
    resumed.sort();
    let round1_values: BTreeSet<String> = round1
        .iter()
        .map(|m| String::from_utf8_lossy(m.payload().unwrap()).into_owned())
        .collect();
    let want_rest = sorted(
        in_records
            .iter()
            .map(|r| r.1.clone())
            .filter(|v| !round1_values.contains(v))
            .collect(),
    );
    assert_eq!(resumed, want_rest, "the new member resumes after round 1");
    let out3: Vec<(i32, String)> = round3
        .iter()
        .map(|m| {
            (
                m.partition(),
                transform(&String::from_utf8_lossy(m.payload().unwrap())),
            )
        })
        .collect();
    producer.begin_transaction().expect("begin");
    send(&producer, output, &out3).await;
    let cgm2 = c2.group_metadata().expect("group metadata");
    producer
        .send_offsets_to_transaction(&offsets_tpl(input, &in_hw), &cgm2, SETTLE)
        .expect("send_offsets_to_transaction");
    producer.commit_transaction(SETTLE).expect("commit round 3");
    assert_eq!(
        group_offsets(&broker, group, input, partitions),
        in_hw,
        "group offsets after the last round"
    );

    // Output: every input record transformed exactly once (rounds 1 and 3).
    let rc = read_view(&broker, output, partitions, "read_committed");
    let want_out = sorted(in_records.iter().map(|r| transform(&r.1)).collect());
    assert_eq!(
        sorted(rc.values()),
        want_out,
        "read_committed output: exactly the committed rounds"
    );
    let ru = read_view(&broker, output, partitions, "read_uncommitted");
    assert_eq!(
        ru.msgs.len(),
        120,
        "read_uncommitted output includes the aborted round"
    );
}

/// A second producer with the same transactional id fences the first: the
/// first one's open transaction is aborted, its commit fails fatally, and
/// the second one commits normally.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_producer_fences_the_first() {
    let broker = start_broker();
    let topic = "txn-fence";
    broker.create_topic(topic, 1).await;
    let a = init_producer(&broker, "fence-tx", &[]);
    a.begin_transaction().expect("A begins");
    send(&a, topic, &values("a", 5, 1)).await;

    let mut conn = Conn::new(&broker);
    let before = conn.describe_one("fence-tx");
    assert_eq!(before.state, "Ongoing", "{before:?}");

    let b = init_producer(&broker, "fence-tx", &[]);
    let after = conn.describe_one("fence-tx");
    assert_eq!(after.state, "Empty", "after B's InitProducerId: {after:?}");
    assert_eq!(after.producer_id, before.producer_id);
    assert!(
        after.producer_epoch > before.producer_epoch,
        "B's epoch {} must be above A's {}",
        after.producer_epoch,
        before.producer_epoch
    );
    // A's transaction was aborted: an ABORT marker follows its 5 records.
    assert_eq!(high_watermarks(&broker, topic, 1)[&0], 6);

    let err = a
        .commit_transaction(SETTLE)
        .expect_err("A's commit after being fenced");
    let (code, fatal) = txn_error(&err);
    assert!(
        fatal && matches!(code, Some(RDKafkaErrorCode::Fenced)),
        "A's commit must fail with a fatal fenced error, got {err:?} (code {code:?}, fatal {fatal})"
    );
    assert!(a.begin_transaction().is_err(), "A stays fenced");

    commit_txn(&b, topic, &values("b", 5, 1)).await;
    assert_eq!(conn.describe_one("fence-tx").state, "CompleteCommit");

    let ru = read_view(&broker, topic, 1, "read_uncommitted");
    assert_eq!(ru.msgs.len(), 10, "{:?}", ru.values());
    let rc = read_view(&broker, topic, 1, "read_committed");
    assert_eq!(
        rc.values(),
        (0..5).map(|i| format!("b-{i}")).collect::<Vec<_>>(),
        "read_committed sees B's records only"
    );
}

/// A transaction left open past `transaction.timeout.ms` is aborted by the
/// coordinator with a bumped epoch: DescribeTransactions says CompleteAbort,
/// an ABORT marker ends the records, read_committed skips them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coordinator_aborts_timed_out_transaction() {
    let broker =
        start_broker_with(&["transaction.abort.timed.out.transaction.cleanup.interval.ms=200"]);
    let topic = "txn-timeout";
    broker.create_topic(topic, 1).await;
    let p = init_producer(
        &broker,
        "slow-tx",
        &[
            ("transaction.timeout.ms", "2000"),
            ("message.timeout.ms", "2000"),
            ("socket.timeout.ms", "2000"),
        ],
    );
    let mut conn = Conn::new(&broker);
    let initial = conn.describe_one("slow-tx");
    assert_eq!(initial.state, "Empty", "{initial:?}");
    assert_eq!(initial.timeout_ms, 2000);

    p.begin_transaction().expect("begin");
    send(&p, topic, &values("slow", 5, 1)).await;
    p.flush(SETTLE).expect("flush");

    let aborted = poll_until(SETTLE, "the coordinator to abort slow-tx", || {
        let d = conn.describe_one("slow-tx");
        if d.state == "CompleteAbort" {
            Ok(d)
        } else {
            Err(format!("{d:?}"))
        }
    });
    assert_eq!(aborted.error_code, 0);
    assert_eq!(aborted.producer_id, initial.producer_id);
    assert_eq!(
        aborted.producer_epoch,
        initial.producer_epoch + 1,
        "the timeout abort bumps the epoch"
    );
    assert!(aborted.partitions.is_empty(), "{aborted:?}");
    assert_eq!(
        high_watermarks(&broker, topic, 1)[&0],
        6,
        "5 records + the ABORT marker"
    );

    let ru = read_view(&broker, topic, 1, "read_uncommitted");
    assert_eq!(
        ru.msgs.len(),
        5,
        "read_uncommitted sees the aborted records"
    );
    let rc = read_view(&broker, topic, 1, "read_committed");
    assert!(
        rc.msgs.is_empty(),
        "read_committed saw records of the timed-out transaction: {:?}",
        rc.values()
    );
    assert_eq!(rc.lso[&0], 6, "read_committed reaches past the marker");

    let err = p
        .commit_transaction(SETTLE)
        .expect_err("commit of the timed-out transaction");
    eprintln!(
        "commit after the timeout abort: {err:?} ({:?})",
        txn_error(&err)
    );
}

/// SIGKILL with one committed and one open transaction: after the restart
/// the coordinator still knows the open transaction, the committed records
/// are visible and the open ones are not; a new producer with the same id
/// aborts the leftover, and a fresh transaction commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_with_open_transaction_recovers() {
    // Acknowledged records survive SIGKILL only when flushed per message.
    let mut broker = start_broker_with(&["log.flush.interval.messages=1"]);
    let topic = "txn-crash";
    broker.create_topic(topic, 1).await;
    let p1 = init_producer(&broker, "crash-tx", &[]);
    let first = values("c1", 10, 1);
    commit_txn(&p1, topic, &first).await; // 0..=9, marker 10
    p1.begin_transaction().expect("begin");
    send(&p1, topic, &values("open", 10, 1)).await; // 11..=20
    let before = Conn::new(&broker).describe_one("crash-tx");
    assert_eq!(before.state, "Ongoing");

    broker.kill9();
    drop(p1);
    broker.restart();

    let mut conn = Conn::new(&broker);
    let replayed = poll_until(SETTLE, "crash-tx described after restart", || {
        let d = conn.describe_one("crash-tx");
        if d.error_code == 0 {
            Ok(d)
        } else {
            Err(format!("{d:?}"))
        }
    });
    assert_eq!(
        replayed, before,
        "the open transaction after replaying __transaction_state"
    );
    assert_eq!(high_watermarks(&broker, topic, 1)[&0], 21);
    // Read now, checked after the coordinator-side steps below.
    let rc_open = read_view(&broker, topic, 1, "read_committed");

    let p2 = init_producer(&broker, "crash-tx", &[]);
    let after_init = conn.describe_one("crash-tx");
    assert_eq!(after_init.state, "Empty", "{after_init:?}");
    assert!(after_init.producer_epoch > before.producer_epoch);
    assert_eq!(
        high_watermarks(&broker, topic, 1)[&0],
        22,
        "the leftover transaction gets its ABORT marker"
    );
    let third = values("c3", 10, 1);
    commit_txn(&p2, topic, &third).await; // 22..=31, marker 32
    assert_eq!(conn.describe_one("crash-tx").state, "CompleteCommit");

    let first_values: Vec<String> = first.iter().map(|r| r.1.clone()).collect();
    assert_eq!(
        rc_open.values(),
        first_values,
        "read_committed after the crash, transaction still open"
    );
    assert_eq!(
        rc_open.lso[&0], 11,
        "LSO after the crash: the open transaction's start"
    );
    let rc = read_view(&broker, topic, 1, "read_committed");
    let want: Vec<String> = first.iter().chain(&third).map(|r| r.1.clone()).collect();
    assert_eq!(
        rc.values(),
        want,
        "read_committed after the leftover was aborted"
    );
    assert_eq!(rc.lso[&0], 33);
    assert_eq!(rc.hw[&0], 33);
}

/// Offsets committed through a transaction, and the transaction's state,
/// survive a clean restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactional_offsets_survive_restart() {
    let mut broker = start_broker();
    let (input, output, group) = ("rs-in", "rs-out", "rs-group");
    broker.create_topic(input, 1).await;
    broker.create_topic(output, 1).await;
    send(&broker.producer(&[]), input, &values("v", 20, 1)).await;
    {
        let c = broker.group_consumer(group, &[("isolation.level", "read_committed")]);
        c.subscribe(&[input]).expect("subscribe");
        let got = consume_n(&c, 20, SETTLE);
        let pos = positions(&c);
        assert_eq!(pos, BTreeMap::from([(0, 20)]));
        let p = init_producer(&broker, "rs-tx", &[]);
        p.begin_transaction().expect("begin");
        let out: Vec<(i32, String)> = got
            .iter()
            .map(|m| {
                (
                    0,
                    format!("T({})", String::from_utf8_lossy(m.payload().unwrap())),
                )
            })
            .collect();
        send(&p, output, &out).await;
        p.send_offsets_to_transaction(
            &offsets_tpl(input, &pos),
            &c.group_metadata().expect("group metadata"),
            SETTLE,
        )
        .expect("send_offsets_to_transaction");
        p.commit_transaction(SETTLE).expect("commit");
    }
    assert_eq!(
        group_offsets(&broker, group, input, 1),
        BTreeMap::from([(0, 20)])
    );

    broker.stop();
    broker.restart();
    assert_eq!(
        group_offsets(&broker, group, input, 1),
        BTreeMap::from([(0, 20)]),
        "transactional offsets after a restart"
    );
    let d = Conn::new(&broker).describe_one("rs-tx");
    assert_eq!(d.state, "CompleteCommit", "{d:?}");
    let rc = read_view(&broker, output, 1, "read_committed");
    assert_eq!(rc.msgs.len(), 20, "{:?}", rc.values());
}

/// DescribeTransactions and ListTransactions for an open and a committed
/// transaction, an unknown id, state and producer id filters, unknown
/// state filters; DescribeProducers agrees on producer ids and epochs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_and_list_transactions() {
    let broker = start_broker();
    let topic = "txn-admin";
    broker.create_topic(topic, 2).await;
    let open = init_producer(&broker, "adm-open", &[("transaction.timeout.ms", "45000")]);
    let done = init_producer(&broker, "adm-done", &[]);
    commit_txn(&done, topic, &[(0, "done-0".to_string())]).await;
    let start_floor = now_ms();
    open.begin_transaction().expect("begin");
    send(&open, topic, &values("open", 4, 2)).await;
    let start_ceiling = now_ms();

    let mut conn = Conn::new(&broker);
    let d = conn.describe_txn(&["adm-open", "adm-done", "adm-unknown"]);
    let (o, c, u) = (
        TxnView::from(&d[0]),
        TxnView::from(&d[1]),
        TxnView::from(&d[2]),
    );
    assert_eq!(d[0].transactional_id.0.as_str(), "adm-open");
    assert_eq!((o.error_code, o.state.as_str()), (0, "Ongoing"), "{o:?}");
    assert_eq!(o.partitions, parts(topic, &[0, 1]));
    assert_eq!(o.timeout_ms, 45000);
    assert!(
        (start_floor - 1000..=start_ceiling).contains(&o.start_ms),
        "start time {} not within [{start_floor}, {start_ceiling}]",
        o.start_ms
    );
    assert!(o.producer_id >= 0);
    assert_eq!(
        (c.error_code, c.state.as_str()),
        (0, "CompleteCommit"),
        "{c:?}"
    );
    assert!(c.partitions.is_empty(), "{c:?}");
    // Kafka keeps the start time in the Complete state.
    assert!(
        c.start_ms > 0 && c.start_ms <= start_floor,
        "completed transaction's start time {} (must be before {start_floor})",
        c.start_ms
    );
    assert_ne!(c.producer_id, o.producer_id);
    assert_eq!(u.error_code, TRANSACTIONAL_ID_NOT_FOUND, "{u:?}");
    assert_eq!(d[2].transactional_id.0.as_str(), "adm-unknown");

    // DescribeProducers on partition 0 lists both producers with the
    // coordinator's ids and epochs.
    let producers: BTreeMap<i64, i32> = conn
        .describe_producers(topic, 0)
        .into_iter()
        .map(|(pid, epoch, _)| (pid, epoch))
        .collect();
    assert_eq!(
        producers.get(&o.producer_id),
        Some(&(o.producer_epoch as i32))
    );
    assert_eq!(
        producers.get(&c.producer_id),
        Some(&(c.producer_epoch as i32))
    );

    let all = listed(&conn.list_txn(&[], &[]));
    assert_eq!(all.get("adm-open").map(String::as_str), Some("Ongoing"));
    assert_eq!(
        all.get("adm-done").map(String::as_str),
        Some("CompleteCommit")
    );
    let ongoing = conn.list_txn(&["Ongoing"], &[]);
    assert_eq!(
        listed(&ongoing),
        BTreeMap::from([("adm-open".to_string(), "Ongoing".to_string())])
    );
    assert!(ongoing.unknown_state_filters.is_empty());
    let with_unknown = conn.list_txn(&["Ongoing", "Bogus"], &[]);
    assert_eq!(with_unknown.error_code, 0);
    assert_eq!(
        with_unknown
            .unknown_state_filters
            .iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>(),
        vec!["Bogus".to_string()]
    );
    assert_eq!(listed(&with_unknown), listed(&ongoing));
    let only_unknown = conn.list_txn(&["Bogus"], &[]);
    assert!(
        only_unknown.transaction_states.is_empty(),
        "{only_unknown:?}"
    );
    assert_eq!(only_unknown.unknown_state_filters.len(), 1);
    let by_pid = conn.list_txn(&[], &[c.producer_id]);
    assert_eq!(
        listed(&by_pid),
        BTreeMap::from([("adm-done".to_string(), "CompleteCommit".to_string())])
    );

    open.commit_transaction(SETTLE).expect("commit");
    let o2 = conn.describe_one("adm-open");
    assert_eq!(o2.state, "CompleteCommit", "{o2:?}");
    assert!(o2.partitions.is_empty(), "{o2:?}");
    assert!(listed(&conn.list_txn(&["Ongoing"], &[])).is_empty());
    let complete = listed(&conn.list_txn(&["CompleteCommit"], &[]));
    assert_eq!(complete.len(), 2, "{complete:?}");
}

/// DescribeProducers shows the first offset of a producer's open
/// transaction (KIP-664's `current_txn_start_offset`), -1 once it ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_producers_shows_open_transaction_start() {
    let broker = start_broker();
    let topic = "txn-producers";
    broker.create_topic(topic, 1).await;
    send(&broker.producer(&[]), topic, &values("plain", 2, 1)).await;
    let p = init_producer(&broker, "dp-tx", &[]);
    p.begin_transaction().expect("begin");
    let sent = send(&p, topic, &values("open", 3, 1)).await;
    assert_eq!(sent[0].1, 2);
    let mut conn = Conn::new(&broker);
    let pid = conn.describe_one("dp-tx").producer_id;
    let find = |conn: &mut Conn| {
        conn.describe_producers(topic, 0)
            .into_iter()
            .find(|x| x.0 == pid)
            .unwrap_or_else(|| panic!("producer {pid} not listed"))
    };
    assert_eq!(find(&mut conn).2, 2, "current_txn_start_offset while open");
    p.commit_transaction(SETTLE).expect("commit");
    assert_eq!(
        find(&mut conn).2,
        -1,
        "current_txn_start_offset after the commit"
    );
}

/// The coordinator's error answers on a raw connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_transaction_requests_get_kafka_errors() {
    let broker = start_broker_with(&["transaction.max.timeout.ms=30000"]);
    let topic = "txn-bad";
    broker.create_topic(topic, 2).await;
    let mut conn = Conn::new(&broker);

    // FindCoordinator for a transactional id creates __transaction_state.
    let fc = kp::FindCoordinatorRequest::default()
        .with_key(s("bad-tx"))
        .with_key_type(1);
    poll_until(SETTLE, "the transaction coordinator", || {
        let r = conn.call(3, &fc);
        if r.error_code == 0 {
            Ok(())
        } else {
            Err(format!("{r:?}"))
        }
    });

    // InitProducerId: a timeout above transaction.max.timeout.ms.
    let r = conn.init_pid(4, "bad-tx", 30001);
    assert_eq!(r.error_code, INVALID_TRANSACTION_TIMEOUT, "{r:?}");
    assert_eq!(
        conn.describe_one("bad-tx").error_code,
        TRANSACTIONAL_ID_NOT_FOUND
    );
    let r = poll_until(SETTLE, "InitProducerId for bad-tx", || {
        let r = conn.init_pid(4, "bad-tx", 30000);
        match r.error_code {
            0 => Ok(r),
            COORDINATOR_NOT_AVAILABLE | CONCURRENT_TRANSACTIONS => Err(format!("{r:?}")),
            other => panic!("InitProducerId: error {other}: {r:?}"),
        }
    });
    let (pid, epoch) = (r.producer_id.0, r.producer_epoch);
    assert!(pid >= 0 && epoch >= 0, "{r:?}");

    // EndTxn: an unknown transactional id, another producer id, nothing open.
    assert_eq!(
        conn.end_txn(3, "nobody-tx", 4242, 0, true),
        INVALID_PRODUCER_ID_MAPPING
    );
    assert_eq!(
        conn.end_txn(3, "bad-tx", pid + 1, epoch, true),
        INVALID_PRODUCER_ID_MAPPING
    );
    assert_eq!(
        conn.end_txn(3, "bad-tx", pid, epoch, true),
        INVALID_TXN_STATE
    );

    // AddPartitionsToTxn with a stale / future epoch.
    let p0: &[i32] = &[0];
    let wrong = conn.add_partitions(3, "bad-tx", pid, epoch + 1, &[(topic, p0)]);
    assert_eq!(
        wrong,
        BTreeMap::from([((topic.to_string(), 0), PRODUCER_FENCED)])
    );
    let wrong = conn.add_partitions(1, "bad-tx", pid, epoch + 1, &[(topic, p0)]);
    assert_eq!(
        wrong,
        BTreeMap::from([((topic.to_string(), 0), INVALID_PRODUCER_EPOCH)])
    );
    let wrong = conn.add_partitions(3, "nobody-tx", pid, epoch, &[(topic, p0)]);
    assert_eq!(
        wrong,
        BTreeMap::from([((topic.to_string(), 0), INVALID_PRODUCER_ID_MAPPING)])
    );
    assert_eq!(conn.describe_one("bad-tx").state, "Empty");

    // An unknown topic (and a partition out of range) fails the whole request.
    let mixed = conn.add_partitions(
        3,
        "bad-tx",
        pid,
        epoch,
        &[(topic, &[0, 1, 7]), ("no-such-topic", &[0])],
    );
    assert_eq!(
        mixed,
        BTreeMap::from([
            ((topic.to_string(), 0), OPERATION_NOT_ATTEMPTED),
            ((topic.to_string(), 1), OPERATION_NOT_ATTEMPTED),
            ((topic.to_string(), 7), UNKNOWN_TOPIC_OR_PARTITION),
            (("no-such-topic".to_string(), 0), UNKNOWN_TOPIC_OR_PARTITION),
        ])
    );
    assert_eq!(
        conn.describe_one("bad-tx").state,
        "Empty",
        "nothing was added"
    );

    // The right epoch works; then EndTxn with a stale epoch is fenced, the
    // right one aborts, and its retry is answered 0.
    let ok = conn.add_partitions(3, "bad-tx", pid, epoch, &[(topic, p0)]);
    assert_eq!(ok, BTreeMap::from([((topic.to_string(), 0), 0)]));
    let d = conn.describe_one("bad-tx");
    assert_eq!(
        (d.state.as_str(), d.partitions.clone()),
        ("Ongoing", parts(topic, &[0]))
    );
    assert_eq!(
        conn.end_txn(3, "bad-tx", pid, epoch + 1, false),
        PRODUCER_FENCED
    );
    assert_eq!(
        conn.end_txn(1, "bad-tx", pid, epoch + 1, false),
        INVALID_PRODUCER_EPOCH
    );
    assert_eq!(conn.end_txn(3, "bad-tx", pid, epoch, false), 0);
    assert_eq!(
        conn.end_txn(3, "bad-tx", pid, epoch, false),
        0,
        "retried abort"
    );
    assert_eq!(
        conn.end_txn(3, "bad-tx", pid, epoch, true),
        INVALID_TXN_STATE,
        "commit after abort"
    );
    assert_eq!(conn.describe_one("bad-tx").state, "CompleteAbort");
    // The ABORT marker went to the partition of the transaction only.
    assert_eq!(
        high_watermarks(&broker, topic, 2),
        BTreeMap::from([(0, 1), (1, 0)])
    );

    // TxnOffsetCommit: only for a group whose offsets partition
    // AddOffsetsToTxn put in the open transaction, with the current epoch
    // (otherwise no marker could ever commit or abort those offsets).
    let fc = kp::FindCoordinatorRequest::default()
        .with_key(s("bad-group"))
        .with_key_type(0);
    assert_eq!(conn.call(3, &fc).error_code, 0);
    let offsets = |e: i16| {
        kp::TxnOffsetCommitRequest::default()
            .with_transactional_id(s("bad-tx").into())
            .with_group_id(s("bad-group").into())
            .with_producer_id(ProducerId(pid))
            .with_producer_epoch(e)
            .with_topics(vec![
                kp::txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
                    .with_name(kp::TopicName(s(topic)))
                    .with_partitions(vec![
                        kp::txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
                            .with_partition_index(0)
                            .with_committed_offset(5),
                    ]),
            ])
    };
    let code = |r: kp::TxnOffsetCommitResponse| r.topics[0].partitions[0].error_code;
    assert_eq!(code(conn.call(3, &offsets(epoch))), INVALID_TXN_STATE);
    let add = kp::AddOffsetsToTxnRequest::default()
        .with_transactional_id(s("bad-tx").into())
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_group_id(s("bad-group").into());
    assert_eq!(conn.call(3, &add).error_code, 0);
    assert_eq!(
        code(conn.call(3, &offsets(epoch + 5))),
        INVALID_PRODUCER_EPOCH
    );
    assert_eq!(code(conn.call(3, &offsets(epoch))), 0);
    assert_eq!(conn.end_txn(3, "bad-tx", pid, epoch, false), 0);
}
