//! Transactions (KIP-98) end to end with librdkafka producers and consumers:
//! commit and abort as read_committed and read_uncommitted consumers see
//! them, consume-transform-produce with offsets committed in the
//! transaction, and recovery after a crash (SIGKILL). The coordinator's
//! rules (fencing, the LSO of an open transaction, the timeout abort,
//! Describe/ListTransactions, DescribeProducers, the error answers) are
//! in-process scenarios in tests/inprocess.rs.
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
use kafka_protocol::messages as kp;
use kafka_protocol::protocol::StrBytes;
use rdkafka::client::ClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
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
