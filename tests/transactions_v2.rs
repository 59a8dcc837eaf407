//! Transactions v2 (KIP-890 part 2) over raw frames built with the protocol
//! crate, since no Rust client speaks it: Produce v12 and TxnOffsetCommit
//! v5 without AddPartitionsToTxn / AddOffsetsToTxn, EndTxn v5 bumping the
//! epoch at every commit and abort, retries told apart by epoch, the old
//! epoch fenced, an empty abort after a commit. The same scenario runs
//! against Fjord and, when its jars are installed (`scripts/peers/kafka
//! install`), against Apache Kafka 4.4; both traces must be equal, and
//! Fjord's must be the one written here. `FJORD_REQUIRE_KAFKA_PEER=1` makes
//! a missing peer a failure. A second trace interleaves a transactions-v1
//! producer (AddPartitionsToTxn v3, Produce v11, EndTxn v4) and a v2 one on
//! the same partition, then lets the coordinator abort a transaction past
//! its timeout and checks the late producer's calls and a new
//! InitProducerId. Then a read_committed consumer (librdkafka) reads exactly
//! the committed records, and the id's `__transaction_state` records, as
//! each broker wrote them (TransactionLogValue v1 from Kafka), are read
//! with Fjord's decoder and must match.
//!
//! The epoch overflow is driven on both brokers as a client reaches it:
//! 32,765 InitProducerId round trips up to epoch 32766 (a few seconds),
//! then a commit there rotates the producer id; the old id is fenced by
//! the partition (its markers carry epoch 32767) and no longer mapped by the
//! coordinator. A transactional write the coordinator does not know of is
//! answered per request version (TRANSACTION_ABORTABLE from Produce v11 and
//! TxnOffsetCommit v4, INVALID_TXN_STATE before), also on both.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::kafka_peer::KafkaPeer;
use common::raw::{txn_batch, txn_produce, RawConn};
use common::*;
use kafka_protocol::messages as kp;
use kafka_protocol::protocol::StrBytes;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use versions::{
    by_topic_id, overflow, unadded, EXPECTED_BY_TOPIC_ID, EXPECTED_OVERFLOW, EXPECTED_UNADDED,
};

#[path = "transactions_v2/versions.rs"]
mod versions;

/// Deadline of anything that waits for a broker.
const SETTLE: Duration = Duration::from_secs(30);

const TOPIC: &str = "tv2";
const TXN_ID: &str = "tv2-tx";
const GROUP: &str = "tv2-group";

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// A raw connection for one transactional producer.
struct Conn {
    raw: RawConn,
    /// The transactional id this connection's producer uses.
    id: String,
}

impl Conn {
    fn new(addr: &str, id: &str) -> Conn {
        Conn {
            raw: RawConn::new(addr),
            id: id.to_string(),
        }
    }

    fn call<R: kafka_protocol::protocol::Request>(&mut self, version: i16, req: &R) -> R::Response {
        self.raw.call(version, req)
    }

    /// Repeats `f` until it gives `Some`, within [`SETTLE`] (topics and
    /// coordinators being created and loaded answer retriable errors).
    fn until<T>(&mut self, what: &str, mut f: impl FnMut(&mut Conn) -> Option<T>) -> T {
        let deadline = Instant::now() + SETTLE;
        loop {
            if let Some(v) = f(self) {
                return v;
            }
            assert!(Instant::now() < deadline, "timed out: {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Produce v12 of one transactional batch of `values` (sequence
    /// `seq`) from (`pid`, `epoch`); the partition's error code.
    fn produce(&mut self, pid: i64, epoch: i16, seq: i32, values: &[&str]) -> i16 {
        self.produce_v(12, pid, epoch, seq, values)
    }

    /// [`Conn::produce`] at `version`.
    fn produce_v(&mut self, version: i16, pid: i64, epoch: i16, seq: i32, values: &[&str]) -> i16 {
        let req = txn_produce(&self.id, TOPIC, 0, txn_batch(pid, epoch, seq, values));
        let r = self.call(version, &req);
        r.responses[0].partition_responses[0].error_code
    }

    /// AddPartitionsToTxn v3 (transactions v1) of partition 0.
    fn add_partition(&mut self, pid: i64, epoch: i16) -> i16 {
        let req = kp::AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(s(&self.id).into())
            .with_v3_and_below_producer_id(pid.into())
            .with_v3_and_below_producer_epoch(epoch)
            .with_v3_and_below_topics(vec![
                kp::add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                    .with_name(s(TOPIC).into())
                    .with_partitions(vec![0]),
            ]);
        let r = self.call(3, &req);
        r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
    }

    /// EndTxn v4 (transactions v1), settled as [`Conn::end_settled`]; the
    /// error code (v4 answers no producer id or epoch).
    fn end_v1(&mut self, pid: i64, epoch: i16, commit: bool) -> i16 {
        let code = self.end_txn_v(4, pid, epoch, commit).0;
        self.until("the transaction completes", |c| {
            (!c.describe_txn().0.starts_with("Prepare")).then_some(())
        });
        code
    }

    /// EndTxn v5: (error code, producer id, epoch) as answered, retried
    /// while CONCURRENT_TRANSACTIONS (51) as clients do (Kafka writes the
    /// Complete state after answering, and answers 51 until it is written).
    fn end_txn(&mut self, pid: i64, epoch: i16, commit: bool) -> (i16, i64, i16) {
        self.end_txn_v(5, pid, epoch, commit)
    }

    /// [`Conn::end_txn`] at `version`.
    fn end_txn_v(&mut self, version: i16, pid: i64, epoch: i16, commit: bool) -> (i16, i64, i16) {
        let req = kp::EndTxnRequest::default()
            .with_transactional_id(s(&self.id).into())
            .with_producer_id(pid.into())
            .with_producer_epoch(epoch)
            .with_committed(commit);
        self.until("EndTxn", |c| {
            let r = c.call(version, &req);
            (r.error_code != 51).then_some((r.error_code, r.producer_id.0, r.producer_epoch))
        })
    }

    /// EndTxn v5, then (Kafka answers once the decision is written, before
    /// its markers) waits until the transaction left its Prepare state, so
    /// the next step does not race the markers.
    fn end_settled(&mut self, pid: i64, epoch: i16, commit: bool) -> (i16, i64, i16) {
        let answer = self.end_txn(pid, epoch, commit);
        self.until("the transaction completes", |c| {
            (!c.describe_txn().0.starts_with("Prepare")).then_some(())
        });
        answer
    }

    /// DescribeTransactions of this producer's id: (state, producer id,
    /// epoch).
    fn describe_txn(&mut self) -> (String, i64, i16) {
        let req = kp::DescribeTransactionsRequest::default()
            .with_transactional_ids(vec![s(&self.id).into()]);
        let r = self.call(0, &req);
        let t = &r.transaction_states[0];
        (
            t.transaction_state.to_string(),
            t.producer_id.0,
            t.producer_epoch,
        )
    }

    /// DescribeProducers of partition 0: (producer id, epoch) of each.
    fn describe_producers(&mut self) -> Vec<(i64, i32)> {
        let req = kp::DescribeProducersRequest::default().with_topics(vec![
            kp::describe_producers_request::TopicRequest::default()
                .with_name(s(TOPIC).into())
                .with_partition_indexes(vec![0]),
        ]);
        let r = self.call(0, &req);
        r.topics[0].partitions[0]
            .active_producers
            .iter()
            .map(|p| (p.producer_id.0, p.producer_epoch))
            .collect()
    }

    /// The committed offset of [`GROUP`] on partition 0 (OffsetFetch v7,
    /// stable offsets only); -1 when none.
    fn committed_offset(&mut self) -> Option<i64> {
        let req = kp::OffsetFetchRequest::default()
            .with_group_id(s(GROUP).into())
            .with_require_stable(true)
            .with_topics(Some(vec![
                kp::offset_fetch_request::OffsetFetchRequestTopic::default()
                    .with_name(s(TOPIC).into())
                    .with_partition_indexes(vec![0]),
            ]));
        let r = self.call(7, &req);
        if r.error_code != 0 {
            return None;
        }
        let p = &r.topics[0].partitions[0];
        (p.error_code == 0).then_some(p.committed_offset)
    }
}

/// Creates [`TOPIC`] (one partition) and waits until a plain Produce to it
/// is answered without error.
fn create_topic(c: &mut Conn) {
    let req = kp::CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![kp::create_topics_request::CreatableTopic::default()
            .with_name(s(TOPIC).into())
            .with_num_partitions(1)
            .with_replication_factor(1)]);
    let r = c.call(7, &req);
    assert!(
        matches!(r.topics[0].error_code, 0 | 36),
        "CreateTopics: {r:?}"
    );
    c.until("the topic leads", |c| {
        let req = kp::ListOffsetsRequest::default()
            .with_replica_id((-1).into())
            .with_topics(vec![kp::list_offsets_request::ListOffsetsTopic::default()
                .with_name(s(TOPIC).into())
                .with_partitions(vec![
                    kp::list_offsets_request::ListOffsetsPartition::default()
                        .with_partition_index(0)
                        .with_timestamp(-1),
                ])]);
        let r = c.call(7, &req);
        (r.topics[0].partitions[0].error_code == 0).then_some(())
    });
}

/// TxnOffsetCommit of [`GROUP`]'s offset `offset` on partition 0 of
/// [`TOPIC`] in the transaction of `id` (producer `pid` at `epoch`), with no
/// member (generation -1).
fn offsets_in_txn(id: &str, pid: i64, epoch: i16, offset: i64) -> kp::TxnOffsetCommitRequest {
    kp::TxnOffsetCommitRequest::default()
        .with_transactional_id(s(id).into())
        .with_group_id(s(GROUP).into())
        .with_producer_id(pid.into())
        .with_producer_epoch(epoch)
        .with_generation_id(-1)
        .with_member_id(s(""))
        .with_topics(vec![
            kp::txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
                .with_name(s(TOPIC).into())
                .with_partitions(vec![
                    kp::txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(offset)
                        .with_committed_leader_epoch(-1),
                ]),
        ])
}

/// The transaction coordinator is ready and gives the connection's id a
/// producer id: (producer id, epoch) from InitProducerId v5 with this
/// `transaction.timeout.ms`.
fn init_producer(c: &mut Conn, timeout_ms: i32) -> (i64, i16) {
    let id = c.id.clone();
    c.until("the transaction coordinator", |c| {
        let req = kp::FindCoordinatorRequest::default()
            .with_key_type(1)
            .with_coordinator_keys(vec![s(&id)]);
        let r = c.call(4, &req);
        (r.coordinators[0].error_code == 0).then_some(())
    });
    c.until("InitProducerId", |c| {
        let req = kp::InitProducerIdRequest::default()
            .with_transactional_id(Some(s(&id).into()))
            .with_transaction_timeout_ms(timeout_ms)
            .with_producer_id((-1).into())
            .with_producer_epoch(-1);
        let r = c.call(5, &req);
        match r.error_code {
            0 => Some((r.producer_id.0, r.producer_epoch)),
            // COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
            // NOT_COORDINATOR, CONCURRENT_TRANSACTIONS: retriable.
            14 | 15 | 16 | 51 => None,
            e => panic!("InitProducerId: {e}"),
        }
    })
}

/// The scenario on one broker: a trace of every answer, epochs relative to
/// the first one (`e`), producer ids as "pid" when they are the producer's.
fn scenario(addr: &str) -> Vec<String> {
    let mut c = Conn::new(addr, TXN_ID);
    create_topic(&mut c);
    let (pid, e) = init_producer(&mut c, 60_000);
    let mut trace = Vec::new();
    let rel = |(code, p, epoch): (i16, i64, i16)| {
        let who = if p == pid {
            "pid".to_string()
        } else {
            p.to_string()
        };
        let ep = if epoch < 0 {
            epoch.to_string()
        } else {
            format!("e+{}", epoch - e)
        };
        format!("{code} {who} {ep}")
    };

    // Produce v12 with no AddPartitionsToTxn, then commit: epoch + 1.
    trace.push(format!(
        "produce e: {}",
        c.produce(pid, e, 0, &["c1", "c2"])
    ));
    trace.push(format!("describe: {:?}", c.describe_txn().0));
    trace.push(format!("commit e: {}", rel(c.end_settled(pid, e, true))));
    // The commit retried with the epoch it was sent with: the same answer.
    trace.push(format!(
        "commit retry e: {}",
        rel(c.end_settled(pid, e, true))
    ));
    // An abort right after the commit (nothing produced): epoch + 2.
    trace.push(format!(
        "empty abort e+1: {}",
        rel(c.end_txn(pid, e + 1, false))
    ));
    // A zombie with the first epoch is fenced, by the coordinator and by
    // the partition.
    trace.push(format!(
        "zombie end e: {}",
        rel(c.end_settled(pid, e, true))
    ));
    trace.push(format!(
        "zombie produce e: {}",
        c.produce(pid, e, 2, &["z"])
    ));
    // An aborted transaction: epoch + 3.
    trace.push(format!(
        "produce e+2: {}",
        c.produce(pid, e + 2, 0, &["a1"])
    ));
    trace.push(format!(
        "abort e+2: {}",
        rel(c.end_settled(pid, e + 2, false))
    ));
    // A commit one epoch below is a retry of the abort: INVALID_TXN_STATE.
    trace.push(format!("commit e+2: {}", rel(c.end_txn(pid, e + 2, true))));
    let (state, p, epoch) = c.describe_txn();
    trace.push(format!("describe: {state} {} e+{}", p == pid, epoch - e));
    // Offsets committed with TxnOffsetCommit v5, no AddOffsetsToTxn.
    c.until("the group coordinator", |c| {
        let req = kp::FindCoordinatorRequest::default()
            .with_key_type(0)
            .with_coordinator_keys(vec![s(GROUP)]);
        let r = c.call(4, &req);
        (r.coordinators[0].error_code == 0).then_some(())
    });
    trace.push(format!(
        "produce e+3: {}",
        c.produce(pid, e + 3, 0, &["c3"])
    ));
    let req = offsets_in_txn(TXN_ID, pid, e + 3, 3);
    // COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE and
    // NOT_COORDINATOR are retried, as clients do (Kafka answers
    // NOT_COORDINATOR while the offsets topic it just created is not led
    // yet).
    let code = c.until("TxnOffsetCommit", |c| {
        let code = c.call(5, &req).topics[0].partitions[0].error_code;
        (!matches!(code, 14..=16)).then_some(code)
    });
    trace.push(format!("txn offset commit: {code}"));
    trace.push(format!(
        "commit e+3: {}",
        rel(c.end_settled(pid, e + 3, true))
    ));
    // The offset shows once the commit's markers are written (both brokers
    // answer EndTxn after that, but a read may still race the load).
    let deadline = Instant::now() + Duration::from_secs(10);
    let offset = loop {
        let o = c.committed_offset();
        if o.is_some_and(|o| o >= 0) || Instant::now() > deadline {
            break o;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    trace.push(format!("group offset: {offset:?}"));
    let producers = c.describe_producers();
    trace.push(format!(
        "producers: {:?}",
        producers
            .iter()
            .map(|(p, ep)| (*p == pid, ep - i32::from(e)))
            .collect::<Vec<_>>()
    ));
    trace
}

/// Transactions v1 and v2 producers interleaved on one partition, then a
/// transaction aborted by the coordinator's timeout: a trace as
/// [`scenario`] gives it (epochs relative to each producer's first).
fn mixed_and_timeout(addr: &str) -> Vec<String> {
    let mut trace = Vec::new();
    let mut a = Conn::new(addr, "tv1-producer");
    let mut b = Conn::new(addr, "tv2-producer");
    let (pa, ea) = init_producer(&mut a, 60_000);
    let (pb, eb) = init_producer(&mut b, 60_000);
    let rel = |base: i16, (code, _, epoch): (i16, i64, i16)| {
        if epoch < 0 {
            format!("{code}")
        } else {
            format!("{code} e+{}", epoch - base)
        }
    };
    trace.push(format!("v1 add: {}", a.add_partition(pa, ea)));
    trace.push(format!(
        "v1 produce: {}",
        a.produce_v(11, pa, ea, 0, &["v1-a"])
    ));
    trace.push(format!("v2 produce: {}", b.produce(pb, eb, 0, &["v2-a"])));
    trace.push(format!("v1 commit: {}", a.end_v1(pa, ea, true)));
    trace.push(format!(
        "v2 abort: {}",
        rel(eb, b.end_settled(pb, eb, false))
    ));
    trace.push(format!("v1 add: {}", a.add_partition(pa, ea)));
    trace.push(format!(
        "v1 produce: {}",
        a.produce_v(11, pa, ea, 1, &["v1-b"])
    ));
    trace.push(format!(
        "v2 produce: {}",
        b.produce(pb, eb + 1, 0, &["v2-b"])
    ));
    trace.push(format!("v1 abort: {}", a.end_v1(pa, ea, false)));
    trace.push(format!(
        "v2 commit: {}",
        rel(eb, b.end_settled(pb, eb + 1, true))
    ));
    let (state, _, epoch) = a.describe_txn();
    trace.push(format!("v1 describe: {state} e+{}", epoch - ea));
    let (state, _, epoch) = b.describe_txn();
    trace.push(format!("v2 describe: {state} e+{}", epoch - eb));

    // A transaction open past its 1 s timeout is aborted by the
    // coordinator with the epoch bumped.
    let mut c = Conn::new(addr, "tv2-timeout");
    let (pc, ec) = init_producer(&mut c, 1_000);
    trace.push(format!(
        "timeout produce: {}",
        c.produce(pc, ec, 0, &["t1"])
    ));
    let (state, _, epoch) = c.until("the timeout abort", |c| {
        let d = c.describe_txn();
        (d.0 == "CompleteAbort").then_some(d)
    });
    trace.push(format!("timed out: {state} e+{}", epoch - ec));
    // The producer's next calls with its old epoch.
    trace.push(format!("late produce: {}", c.produce(pc, ec, 1, &["t2"])));
    trace.push(format!("late commit: {}", rel(ec, c.end_txn(pc, ec, true))));
    // A new InitProducerId starts over with the next epoch.
    let (pc2, ec2) = init_producer(&mut c, 60_000);
    trace.push(format!("new init: same id {} e+{}", pc2 == pc, ec2 - ec));
    trace.push(format!("new produce: {}", c.produce(pc2, ec2, 0, &["t3"])));
    trace.push(format!(
        "new commit: {}",
        rel(ec, c.end_settled(pc2, ec2, true))
    ));
    trace
}

/// The records of [`TXN_ID`] in `__transaction_state` (with
/// `state_partitions` partitions) as a Fetch reads them, each decoded with
/// Fjord's reader: (status, epoch above `base`, client transaction version
/// level, whether a PreviousProducerId / NextProducerId is set). Every
/// record of the partition must decode, whichever broker wrote it.
fn transaction_log(addr: &str, state_partitions: i32, base: i16) -> Vec<String> {
    use fjord::txn::records::decode;
    let partition =
        fjord::txn::coordinator::partition_for_transactional_id(TXN_ID, state_partitions);
    let mut c = Conn::new(addr, TXN_ID);
    let req = kp::FetchRequest::default()
        .with_replica_id((-1).into())
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![kp::fetch_request::FetchTopic::default()
            .with_topic(s("__transaction_state").into())
            .with_partitions(vec![kp::fetch_request::FetchPartition::default()
                .with_partition(partition)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])]);
    let r = c.call(12, &req);
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.error_code, 0, "Fetch __transaction_state-{partition}");
    let mut b = p.records.clone().unwrap_or_default();
    let mut out = Vec::new();
    for set in kafka_protocol::records::RecordBatchDecoder::decode_all(&mut b).unwrap() {
        for r in set.records {
            let key = r.key.clone().unwrap();
            let (id, value) = decode(&key, r.value.as_ref())
                .unwrap_or_else(|e| panic!("record at {} does not decode: {e}", r.offset));
            if id != TXN_ID {
                continue;
            }
            let Some(v) = value else {
                out.push("tombstone".to_string());
                continue;
            };
            out.push(format!(
                "{} e+{} tv{} prev {} next {}",
                v.status.name(),
                v.producer_epoch - base,
                v.tagged.client_tv as i16,
                if v.tagged.previous_producer_id == v.producer_id {
                    "same".to_string()
                } else {
                    v.tagged.previous_producer_id.to_string()
                },
                v.tagged.next_producer_id >= 0
            ));
        }
    }
    out
}

/// What a read_committed consumer reads from partition 0 (librdkafka),
/// until it reached the high watermark's last stable offset.
fn read_committed(addr: &str) -> Vec<String> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", addr)
        .set("group.id", "tv2-reader")
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(TOPIC, 0, Offset::Beginning)
        .unwrap();
    consumer.assign(&tpl).unwrap();
    let (_, high) = consumer
        .fetch_watermarks(TOPIC, 0, Duration::from_secs(10))
        .unwrap();
    let mut got = Vec::new();
    let deadline = Instant::now() + SETTLE;
    loop {
        if let Some(m) = consumer.poll(Duration::from_millis(200)) {
            let m = m.unwrap();
            got.push(String::from_utf8_lossy(m.payload().unwrap_or(&[])).into_owned());
        }
        let position = consumer
            .position()
            .ok()
            .and_then(|p| p.find_partition(TOPIC, 0).map(|e| e.offset()));
        if let Some(Offset::Offset(o)) = position {
            if o >= high {
                return got;
            }
        }
        assert!(Instant::now() < deadline, "read_committed: {got:?}");
    }
}

/// The trace Kafka 4.4 gives (and Fjord must give).
const EXPECTED: &[&str] = &[
    "produce e: 0",
    "describe: \"Ongoing\"",
    "commit e: 0 pid e+1",
    "commit retry e: 0 pid e+1",
    "empty abort e+1: 0 pid e+2",
    "zombie end e: 90 -1 -1",
    "zombie produce e: 47",
    "produce e+2: 0",
    "abort e+2: 0 pid e+3",
    "commit e+2: 48 -1 -1",
    "describe: CompleteAbort true e+3",
    "produce e+3: 0",
    "txn offset commit: 0",
    "commit e+3: 0 pid e+4",
    "group offset: Some(3)",
    "producers: [(true, 4)]",
];

/// The trace of [`mixed_and_timeout`] Kafka 4.4 gives.
const EXPECTED_MIXED: &[&str] = &[
    "v1 add: 0",
    "v1 produce: 0",
    "v2 produce: 0",
    "v1 commit: 0",
    "v2 abort: 0 e+1",
    "v1 add: 0",
    "v1 produce: 0",
    "v2 produce: 0",
    "v1 abort: 0",
    "v2 commit: 0 e+2",
    "v1 describe: CompleteAbort e+0",
    "v2 describe: CompleteCommit e+2",
    "timeout produce: 0",
    "timed out: CompleteAbort e+1",
    "late produce: 47",
    "late commit: 48",
    "new init: same id true e+2",
    "new produce: 0",
    "new commit: 0 e+3",
];

/// The timeout abort runs every 200 ms on both brokers, so the 1 s
/// transaction is aborted soon after its timeout.
const ABORT_INTERVAL: &str = "transaction.abort.timed.out.transaction.cleanup.interval.ms=200";

#[test]
fn transactions_v2_bump_the_epoch_and_add_partitions_implicitly() {
    let broker = Broker::start_with(&[
        "offsets.topic.num.partitions=2",
        "transaction.state.log.num.partitions=2",
        ABORT_INTERVAL,
    ]);
    let fjord = scenario(&broker.bootstrap());
    eprintln!("Fjord: {fjord:#?}");
    let fjord_mixed = mixed_and_timeout(&broker.bootstrap());
    eprintln!("Fjord: {fjord_mixed:#?}");
    let fjord_read = read_committed(&broker.bootstrap());
    let fjord_unadded = unadded(&broker.bootstrap());
    eprintln!("Fjord: {fjord_unadded:#?}");
    let fjord_by_id = by_topic_id(&broker.bootstrap());
    let fjord_overflow = overflow(&broker.bootstrap());
    eprintln!("Fjord: {fjord_overflow:#?}");
    let fjord_log = transaction_log(&broker.bootstrap(), 2, 0);
    eprintln!("Fjord's log: {fjord_log:#?}");
    let kafka = KafkaPeer::start(&[ABORT_INTERVAL]).map(|peer| {
        let trace = scenario(&peer.addr);
        eprintln!("Kafka: {trace:#?}");
        let mixed = mixed_and_timeout(&peer.addr);
        eprintln!("Kafka: {mixed:#?}");
        let read = read_committed(&peer.addr);
        let unadded = unadded(&peer.addr);
        eprintln!("Kafka: {unadded:#?}");
        assert_eq!(unadded, EXPECTED_UNADDED, "Kafka's unadded trace differs");
        let by_id = by_topic_id(&peer.addr);
        assert_eq!(
            by_id, EXPECTED_BY_TOPIC_ID,
            "Kafka's Produce v13 trace differs"
        );
        let overflow = overflow(&peer.addr);
        eprintln!("Kafka: {overflow:#?}");
        assert_eq!(
            overflow, EXPECTED_OVERFLOW,
            "Kafka's overflow trace differs"
        );
        // Kafka's default transaction.state.log.num.partitions.
        let log = transaction_log(&peer.addr, 50, 0);
        eprintln!("Kafka's log: {log:#?}");
        (trace, mixed, read, log)
    });
    if let Some((trace, mixed, read, log)) = &kafka {
        // The same records, read by Fjord's reader from Kafka's log; Kafka
        // writes every value as v1 (PreviousProducerId set from the first),
        // Fjord the Empty state of a transactions-v1 InitProducerId as v0.
        assert_eq!(
            log.get(1..),
            fjord_log.get(1..),
            "__transaction_state records"
        );
        assert_eq!(
            trace, EXPECTED,
            "Kafka's trace differs from the recorded one"
        );
        assert_eq!(mixed, EXPECTED_MIXED, "Kafka's mixed trace differs");
        assert_eq!(read, &fjord_read, "Kafka's read_committed view");
    }
    assert_eq!(fjord, EXPECTED);
    assert_eq!(fjord_mixed, EXPECTED_MIXED);
    assert_eq!(fjord_unadded, EXPECTED_UNADDED);
    assert_eq!(fjord_by_id, EXPECTED_BY_TOPIC_ID);
    assert_eq!(fjord_overflow, EXPECTED_OVERFLOW);
    assert_eq!(fjord_read, ["c1", "c2", "c3", "v1-a", "v2-b", "t3"]);
}

/// Produce v12 on a partition led by another broker than the transaction
/// coordinator: the leader has the coordinator add the partition with one
/// AddPartitionsToTxn v4 without `verify_only`, and the commit's marker
/// reaches it (Fjord only: a two-node cluster).
#[test]
fn produce_v12_adds_a_partition_through_a_remote_coordinator() {
    use common::cluster::Cluster;
    use common::layout::wait_topic;
    let topic = "tv2-remote";
    let c = Cluster::start(
        2,
        &[
            "transaction.state.log.num.partitions=1",
            "transaction.state.log.replication.factor=1",
            "offsets.topic.replication.factor=1",
        ],
    );
    let mut admin = Conn::new(&c.bootstrap(1), TXN_ID);
    let req = kp::CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![kp::create_topics_request::CreatableTopic::default()
            .with_name(s(topic).into())
            .with_num_partitions(4)
            .with_replication_factor(1)]);
    assert_eq!(admin.call(7, &req).topics[0].error_code, 0);
    let layout = wait_topic(&c, &[1, 2], topic, 4);
    // The coordinator of the id, then a partition led by the other broker.
    let coordinator = admin.until("the transaction coordinator", |a| {
        let req = kp::FindCoordinatorRequest::default()
            .with_key_type(1)
            .with_coordinator_keys(vec![s(TXN_ID)]);
        let r = a.call(4, &req);
        let k = &r.coordinators[0];
        (k.error_code == 0).then_some(k.node_id.0)
    });
    let (&partition, part) = layout
        .parts
        .iter()
        .find(|(_, p)| p.leader != coordinator)
        .expect("a partition led by the other broker");
    eprintln!(
        "coordinator {coordinator}, partition {partition} led by {}",
        part.leader
    );
    let mut coord = Conn::new(&c.bootstrap(coordinator), TXN_ID);
    let (pid, e) = init_producer(&mut coord, 60_000);
    let mut leader = Conn::new(&c.bootstrap(part.leader), TXN_ID);
    let req = txn_produce(
        TXN_ID,
        topic,
        partition,
        txn_batch(pid, e, 0, &["r1", "r2"]),
    );
    let code = leader.until("the remote add", |l| {
        let code = l.call(12, &req).responses[0].partition_responses[0].error_code;
        // Retriable while the brokers connect: NOT_COORDINATOR,
        // COORDINATOR_NOT_AVAILABLE, CONCURRENT_TRANSACTIONS.
        (!matches!(code, 15 | 16 | 51)).then_some(code)
    });
    assert_eq!(code, 0, "Produce v12 through the remote coordinator");
    let req =
        kp::DescribeTransactionsRequest::default().with_transactional_ids(vec![s(TXN_ID).into()]);
    let t = coord.call(0, &req).transaction_states[0].clone();
    assert_eq!(t.transaction_state.to_string(), "Ongoing");
    assert_eq!(t.topics[0].topic.0.to_string(), topic);
    assert_eq!(t.topics[0].partitions, vec![partition]);
    assert_eq!(coord.end_settled(pid, e, true), (0, pid, e + 1));
    // The marker reached the leader: the partition's LSO is past it.
    leader.until("the commit marker on the leader", |l| {
        let req = kp::ListOffsetsRequest::default()
            .with_replica_id((-1).into())
            .with_isolation_level(1)
            .with_topics(vec![kp::list_offsets_request::ListOffsetsTopic::default()
                .with_name(s(topic).into())
                .with_partitions(vec![
                    kp::list_offsets_request::ListOffsetsPartition::default()
                        .with_partition_index(partition)
                        .with_timestamp(-1),
                ])]);
        let r = l.call(7, &req);
        (r.topics[0].partitions[0].offset == 3).then_some(())
    });
}
