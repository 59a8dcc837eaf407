//! Scenarios run in-process (`harness`): a whole broker with two shards in
//! this test process, driven through the owners' operations, the
//! coordinators and the partitions, without a client or a child process.
//! Each was a process test before (its doc comment names it); the
//! behaviour a real client sees end to end stays covered by the process
//! tests that need a client and by the compatibility runners.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// The handlers' futures nest as deeply as in the crate (see src/lib.rs).
#![recursion_limit = "256"]

mod harness;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use harness::groups::{assignment, join_args, subscription, sync_args, MEMBER_ID_REQUIRED};
use harness::txn::TxnProducer;
use harness::*;
use kafka_protocol::messages as kp;
use kafka_protocol::protocol::StrBytes;

// Kafka error codes the scenarios expect.
const NONE: i16 = 0;
const OFFSET_OUT_OF_RANGE: i16 = 1;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const NOT_ENOUGH_REPLICAS: i16 = 19;
const ILLEGAL_GENERATION: i16 = 22;
const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
const UNKNOWN_MEMBER_ID: i16 = 25;
const INVALID_SESSION_TIMEOUT: i16 = 26;
const REBALANCE_IN_PROGRESS: i16 = 27;
const INVALID_TIMESTAMP: i16 = 32;
const INVALID_PRODUCER_EPOCH: i16 = 47;
const INVALID_TXN_STATE: i16 = 48;
/// The coordinator's answer to a verification of a partition outside the
/// open transaction (a TxnOffsetCommit below v4 gets INVALID_TXN_STATE).
const TRANSACTION_ABORTABLE: i16 = 120;
const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
const INVALID_TRANSACTION_TIMEOUT: i16 = 50;
const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
const OPERATION_NOT_ATTEMPTED: i16 = 55;
const NON_EMPTY_GROUP: i16 = 68;
const GROUP_ID_NOT_FOUND: i16 = 69;
const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;
const INVALID_RECORD: i16 = 87;
const PRODUCER_FENCED: i16 = 90;
const TRANSACTIONAL_ID_NOT_FOUND: i16 = 105;

/// Isolation levels.
const READ_UNCOMMITTED: i8 = 0;
const READ_COMMITTED: i8 = 1;

/// Broker settings of the transaction and group scenarios (as the process
/// tests had them).
const TXN: &[&str] = &[
    "offsets.topic.num.partitions=4",
    "transaction.state.log.num.partitions=4",
    "group.initial.rebalance.delay.ms=0",
    "group.min.session.timeout.ms=1000",
];

/// Retention from start-up and every 200 ms, deleted files removed at once.
const FAST_RETENTION: &[&str] = &[
    "log.initial.task.delay.ms=0",
    "log.retention.check.interval.ms=200",
    "log.segment.delete.delay.ms=0",
];

fn with(base: &[&'static str], extra: &[&'static str]) -> Vec<&'static str> {
    base.iter().chain(extra).copied().collect()
}

/// `count` values `{tag}-{i}`.
fn values(tag: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{tag}-{i}")).collect()
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn error_code(a: &fjord::shard::owner::produce::AppendAnswer) -> i16 {
    a.error.as_ref().map_or(NONE, |e| e.code())
}

/// Records appended through the owner from the other shard are read back
/// in order, and are still there after a clean restart.
#[test]
fn appends_cross_shards_and_survive_a_restart() {
    let mut node = Node::start(&[]);
    node.create_topic("t", 4, &[]);
    let ts = now_ms();
    for p in 0..4 {
        for round in 0..3 {
            let a = node.produce(1, "t", p, batch(-1, -1, -1, 5, ts, false), None);
            assert!(a.error.is_none(), "{:?}", a.error);
            assert_eq!(a.base_offset, round * 5);
        }
    }
    node.restart();
    for p in 0..4 {
        let (read, bytes) = node.fetch("t", p, 0, 0);
        assert!(read.error.is_none(), "{:?}", read.error);
        assert_eq!(read.high_watermark, 15);
        let recs = records(&bytes);
        assert_eq!(recs.len(), 15);
        assert!(recs.iter().enumerate().all(|(i, (o, _))| *o == i as i64));
    }
}

// ================================================================ transactions

/// While a transaction is open its first offset is the last stable offset:
/// read_committed reads nothing from there on (not even a later
/// non-transactional record), ListOffsets with read_committed answers the
/// LSO; after the commit everything is visible and LSO == high watermark.
/// (Was transactions.rs `open_transaction_holds_the_last_stable_offset`.)
#[test]
fn open_transaction_holds_the_last_stable_offset() {
    let node = Node::start(TXN);
    let topic = "txn-lso";
    node.create_topic(topic, 1, &[]);
    node.txn_ready();
    let mut p = TxnProducer::init(&node, "lso-tx", 60_000);
    let first = values("c1", 10);
    p.send(&node, topic, 0, &first); // 0..=9
    assert_eq!(p.commit(&node), NONE); // marker 10

    let open = values("open", 10);
    let open_start = p.send(&node, topic, 0, &open);
    assert_eq!(
        open_start, 11,
        "the open transaction starts after c1 and its marker"
    );
    let late = node.append(
        topic,
        0,
        values_batch(&["plain-after".to_string()], now_ms()),
    );
    assert_eq!(late, 21);

    assert_eq!(node.list_offset(topic, 0, -2, READ_UNCOMMITTED), Some(0));
    assert_eq!(node.list_offset(topic, 0, -1, READ_UNCOMMITTED), Some(22));
    assert_eq!(
        node.list_offset(topic, 0, -1, READ_COMMITTED),
        Some(open_start),
        "ListOffsets latest under read_committed while the transaction is open"
    );
    let (read, _) = node.fetch(topic, 0, 0, READ_COMMITTED);
    assert_eq!(read.high_watermark, 22);
    assert_eq!(
        read.last_stable_offset, open_start,
        "LSO in the Fetch answer while the transaction is open"
    );
    assert_eq!(
        node.values(topic, 0, 0, READ_COMMITTED),
        first,
        "read_committed while the transaction is open"
    );
    assert_eq!(
        node.read_all(topic, 0, 0, READ_UNCOMMITTED).len(),
        21,
        "read_uncommitted reads c1, the open records and plain-after"
    );

    assert_eq!(p.commit(&node), NONE);
    let mut want: Vec<String> = first.iter().chain(&open).cloned().collect();
    want.push("plain-after".to_string());
    assert_eq!(
        node.values(topic, 0, 0, READ_COMMITTED),
        want,
        "read_committed after the commit"
    );
    assert_eq!(
        node.hw_and_lso(topic, 0),
        (23, 23),
        "LSO after the commit (marker at 22)"
    );
    assert_eq!(node.list_offset(topic, 0, -1, READ_COMMITTED), Some(23));
}

/// A second producer with the same transactional id fences the first: the
/// first one's open transaction is aborted, its commit is refused with
/// PRODUCER_FENCED (and it stays fenced), and the second one commits
/// normally. (Was transactions.rs `second_producer_fences_the_first`.)
#[test]
fn second_producer_fences_the_first() {
    let node = Node::start(TXN);
    let topic = "txn-fence";
    node.create_topic(topic, 1, &[]);
    node.txn_ready();
    let mut a = TxnProducer::init(&node, "fence-tx", 60_000);
    a.send(&node, topic, 0, &values("a", 5));
    let before = node.describe_txn("fence-tx");
    assert_eq!(before.state, "Ongoing", "{before:?}");

    let mut b = TxnProducer::init(&node, "fence-tx", 60_000);
    let after = node.describe_txn("fence-tx");
    assert_eq!(after.state, "Empty", "after B's InitProducerId: {after:?}");
    assert_eq!(after.producer_id, before.producer_id);
    assert!(
        after.producer_epoch > before.producer_epoch,
        "B's epoch {} must be above A's {}",
        after.producer_epoch,
        before.producer_epoch
    );
    // A's transaction was aborted: an ABORT marker follows its 5 records.
    assert_eq!(node.watermarks(topic, 0).1, 6);

    assert_eq!(
        a.commit(&node),
        PRODUCER_FENCED,
        "A's commit after being fenced"
    );
    assert_eq!(
        node.add_partitions("fence-tx", a.pid, a.epoch, &[(topic, 0)]),
        PRODUCER_FENCED,
        "A stays fenced"
    );

    b.send(&node, topic, 0, &values("b", 5));
    assert_eq!(b.commit(&node), NONE);
    assert_eq!(node.describe_txn("fence-tx").state, "CompleteCommit");
    assert_eq!(node.read_all(topic, 0, 0, READ_UNCOMMITTED).len(), 10);
    assert_eq!(
        node.values(topic, 0, 0, READ_COMMITTED),
        values("b", 5),
        "read_committed sees B's records only"
    );
}

/// A transaction left open past `transaction.timeout.ms` is aborted by the
/// coordinator with a bumped epoch: DescribeTransactions says CompleteAbort,
/// an ABORT marker ends the records, read_committed skips them, and the
/// producer's commit is refused. (Was transactions.rs
/// `coordinator_aborts_timed_out_transaction`.)
#[test]
fn coordinator_aborts_timed_out_transaction() {
    let node = Node::start(&with(
        TXN,
        &["transaction.abort.timed.out.transaction.cleanup.interval.ms=200"],
    ));
    let topic = "txn-timeout";
    node.create_topic(topic, 1, &[]);
    node.txn_ready();
    let mut p = TxnProducer::init(&node, "slow-tx", 2000);
    let initial = node.describe_txn("slow-tx");
    assert_eq!(initial.state, "Empty", "{initial:?}");
    assert_eq!(initial.timeout_ms, 2000);

    p.send(&node, topic, 0, &values("slow", 5));
    let aborted = node.poll("the coordinator to abort slow-tx", || {
        let d = node.describe_txn("slow-tx");
        (d.state == "CompleteAbort")
            .then_some(d.clone())
            .ok_or(format!("{d:?}"))
    });
    assert_eq!(aborted.error_code, NONE);
    assert_eq!(aborted.producer_id, initial.producer_id);
    assert_eq!(
        aborted.producer_epoch,
        initial.producer_epoch + 1,
        "the timeout abort bumps the epoch"
    );
    assert!(aborted.partitions.is_empty(), "{aborted:?}");
    assert_eq!(
        node.watermarks(topic, 0).1,
        6,
        "5 records + the ABORT marker"
    );
    assert_eq!(
        node.read_all(topic, 0, 0, READ_UNCOMMITTED).len(),
        5,
        "read_uncommitted sees the aborted records"
    );
    assert!(
        node.read_all(topic, 0, 0, READ_COMMITTED).is_empty(),
        "read_committed saw records of the timed-out transaction"
    );
    assert_eq!(
        node.hw_and_lso(topic, 0).1,
        6,
        "read_committed reaches past the marker"
    );
    assert_ne!(p.commit(&node), NONE, "commit of the timed-out transaction");
}

/// Offsets committed through a transaction, and the transaction's state,
/// survive a clean restart. (Was transactions.rs
/// `transactional_offsets_survive_restart`.)
#[test]
fn transactional_offsets_survive_restart() {
    let mut node = Node::start(TXN);
    let (input, output, group) = ("rs-in", "rs-out", "rs-group");
    node.create_topic(input, 1, &[]);
    node.create_topic(output, 1, &[]);
    node.groups_ready();
    node.txn_ready();
    let vs = values("v", 20);
    node.append(input, 0, values_batch(&vs, now_ms()));
    let consumed = node.values(input, 0, 0, READ_COMMITTED);
    assert_eq!(consumed, vs);
    let mut p = TxnProducer::init(&node, "rs-tx", 60_000);
    let out: Vec<String> = consumed.iter().map(|v| format!("T({v})")).collect();
    p.send(&node, output, 0, &out);
    assert_eq!(node.add_offsets("rs-tx", p.pid, p.epoch, group), NONE);
    assert_eq!(
        node.txn_offset_commit("rs-tx", group, p.pid, p.epoch, &[(input, 0, 20)]),
        vec![NONE]
    );
    assert_eq!(p.commit(&node), NONE);
    assert_eq!(
        node.committed(group, Some(&[(input, 0)])),
        vec![(input.to_string(), 0, 20)]
    );

    node.restart();
    node.groups_ready();
    node.txn_ready();
    assert_eq!(
        node.committed(group, Some(&[(input, 0)])),
        vec![(input.to_string(), 0, 20)],
        "transactional offsets after a restart"
    );
    let d = node.describe_txn("rs-tx");
    assert_eq!(d.state, "CompleteCommit", "{d:?}");
    assert_eq!(node.values(output, 0, 0, READ_COMMITTED), out);
}

fn parts(topic: &str, ps: &[i32]) -> BTreeSet<(String, i32)> {
    ps.iter().map(|p| (topic.to_string(), *p)).collect()
}

/// ListTransactions on shard 0 as the handler answers it (the unknown
/// state filters are the handler's): the answer.
fn list_txn_call(node: &Node, states: &[&str]) -> kp::ListTransactionsResponse {
    let req = kp::ListTransactionsRequest::default()
        .with_state_filters(states.iter().map(|x| s(x)).collect());
    node.call(0, 0, req)
}

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

/// DescribeTransactions and ListTransactions for an open and a committed
/// transaction, an unknown id, state and producer id filters, unknown
/// state filters; DescribeProducers agrees on producer ids and epochs.
/// (Was transactions.rs `describe_and_list_transactions`.)
#[test]
fn describe_and_list_transactions() {
    let node = Node::start(TXN);
    let topic = "txn-admin";
    node.create_topic(topic, 2, &[]);
    node.txn_ready();
    let mut open = TxnProducer::init(&node, "adm-open", 45_000);
    let mut done = TxnProducer::init(&node, "adm-done", 60_000);
    done.send(&node, topic, 0, &["done-0".to_string()]);
    assert_eq!(done.commit(&node), NONE);
    let start_floor = now_ms();
    open.send(&node, topic, 0, &values("open-p0", 2));
    open.send(&node, topic, 1, &values("open-p1", 2));
    let start_ceiling = now_ms();

    let o = node.describe_txn("adm-open");
    let c = node.describe_txn("adm-done");
    let u = node.describe_txn("adm-unknown");
    assert_eq!((o.error_code, o.state.as_str()), (NONE, "Ongoing"), "{o:?}");
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
        (NONE, "CompleteCommit"),
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

    // DescribeProducers on partition 0 lists both producers with the
    // coordinator's ids and epochs.
    let producers: BTreeMap<i64, i16> = node
        .describe_producers(topic, 0)
        .into_iter()
        .map(|p| (p.producer_id, p.producer_epoch))
        .collect();
    assert_eq!(producers.get(&o.producer_id), Some(&o.producer_epoch));
    assert_eq!(producers.get(&c.producer_id), Some(&c.producer_epoch));

    let all = node.list_txns(&[], &[]);
    assert_eq!(all.get("adm-open").map(String::as_str), Some("Ongoing"));
    assert_eq!(
        all.get("adm-done").map(String::as_str),
        Some("CompleteCommit")
    );
    let ongoing = node.list_txns(&["Ongoing"], &[]);
    assert_eq!(
        ongoing,
        BTreeMap::from([("adm-open".to_string(), "Ongoing".to_string())])
    );
    let r = list_txn_call(&node, &["Ongoing"]);
    assert!(r.unknown_state_filters.is_empty());
    assert_eq!(listed(&r), ongoing);
    let with_unknown = list_txn_call(&node, &["Ongoing", "Bogus"]);
    assert_eq!(with_unknown.error_code, NONE);
    let unknown: Vec<String> = with_unknown
        .unknown_state_filters
        .iter()
        .map(|x| x.to_string())
        .collect();
    assert_eq!(unknown, vec!["Bogus".to_string()]);
    assert_eq!(listed(&with_unknown), ongoing);
    let only_unknown = list_txn_call(&node, &["Bogus"]);
    assert!(
        only_unknown.transaction_states.is_empty(),
        "{only_unknown:?}"
    );
    assert_eq!(only_unknown.unknown_state_filters.len(), 1);
    assert_eq!(
        node.list_txns(&[], &[c.producer_id]),
        BTreeMap::from([("adm-done".to_string(), "CompleteCommit".to_string())])
    );

    assert_eq!(open.commit(&node), NONE);
    let o2 = node.describe_txn("adm-open");
    assert_eq!(o2.state, "CompleteCommit", "{o2:?}");
    assert!(o2.partitions.is_empty(), "{o2:?}");
    assert!(node.list_txns(&["Ongoing"], &[]).is_empty());
    assert_eq!(node.list_txns(&["CompleteCommit"], &[]).len(), 2);
}

/// DescribeProducers shows the first offset of a producer's open
/// transaction (KIP-664's `current_txn_start_offset`), -1 once it ends.
/// (Was transactions.rs `describe_producers_shows_open_transaction_start`.)
#[test]
fn describe_producers_shows_open_transaction_start() {
    let node = Node::start(TXN);
    let topic = "txn-producers";
    node.create_topic(topic, 1, &[]);
    node.txn_ready();
    node.append(topic, 0, values_batch(&values("plain", 2), now_ms()));
    let mut p = TxnProducer::init(&node, "dp-tx", 60_000);
    assert_eq!(p.send(&node, topic, 0, &values("open", 3)), 2);
    let pid = node.describe_txn("dp-tx").producer_id;
    let start = |node: &Node| {
        node.describe_producers(topic, 0)
            .into_iter()
            .find(|x| x.producer_id == pid)
            .unwrap_or_else(|| panic!("producer {pid} not listed"))
            .current_txn_start_offset
    };
    assert_eq!(start(&node), 2, "current_txn_start_offset while open");
    assert_eq!(p.commit(&node), NONE);
    assert_eq!(
        start(&node),
        -1,
        "current_txn_start_offset after the commit"
    );
}

/// AddPartitionsToTxn (`version`) as the handler answers it: the code per
/// (topic, partition).
fn add_partitions_call(
    node: &Node,
    version: i16,
    id: &str,
    pid: i64,
    epoch: i16,
    topics: &[(&str, &[i32])],
) -> BTreeMap<(String, i32), i16> {
    use kp::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
    let req = kp::AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(s(id).into())
        .with_v3_and_below_producer_id(kp::ProducerId(pid))
        .with_v3_and_below_producer_epoch(epoch)
        .with_v3_and_below_topics(
            topics
                .iter()
                .map(|(t, ps)| {
                    AddPartitionsToTxnTopic::default()
                        .with_name(s(t).into())
                        .with_partitions(ps.to_vec())
                })
                .collect(),
        );
    let r = node.call(0, version, req);
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

/// EndTxn v1 as the handler answers it.
fn end_txn_v1(node: &Node, id: &str, pid: i64, epoch: i16, commit: bool) -> i16 {
    let req = kp::EndTxnRequest::default()
        .with_transactional_id(s(id).into())
        .with_producer_id(kp::ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_committed(commit);
    node.call(0, 1, req).error_code
}

/// The coordinator's error answers: InitProducerId above
/// `transaction.max.timeout.ms`; EndTxn and AddPartitionsToTxn with an
/// unknown id, another producer id, a wrong epoch (PRODUCER_FENCED, and
/// INVALID_PRODUCER_EPOCH for the versions before it), nothing open; an
/// unknown partition fails the whole request; a retried abort is answered
/// 0; markers go to the transaction's partitions only; TxnOffsetCommit
/// needs AddOffsetsToTxn and the current epoch. (Was transactions.rs
/// `bad_transaction_requests_get_kafka_errors`.)
#[test]
fn bad_transaction_requests_get_kafka_errors() {
    let node = Node::start(&with(TXN, &["transaction.max.timeout.ms=30000"]));
    let topic = "txn-bad";
    node.create_topic(topic, 2, &[]);
    node.txn_ready();

    assert_eq!(
        node.try_init_producer_id("bad-tx", 30001),
        Err(INVALID_TRANSACTION_TIMEOUT)
    );
    assert_eq!(
        node.describe_txn("bad-tx").error_code,
        TRANSACTIONAL_ID_NOT_FOUND
    );
    let (pid, epoch) = node.init_producer_id("bad-tx", 30000);
    assert!(pid >= 0 && epoch >= 0);

    // EndTxn: an unknown transactional id, another producer id, nothing open.
    assert_eq!(
        node.end_txn("nobody-tx", 4242, 0, true),
        INVALID_PRODUCER_ID_MAPPING
    );
    assert_eq!(
        node.end_txn("bad-tx", pid + 1, epoch, true),
        INVALID_PRODUCER_ID_MAPPING
    );
    assert_eq!(node.end_txn("bad-tx", pid, epoch, true), INVALID_TXN_STATE);

    // AddPartitionsToTxn with a future epoch (v1 says INVALID_PRODUCER_EPOCH),
    // an unknown id.
    let p0 = [(topic, 0)];
    assert_eq!(
        node.add_partitions("bad-tx", pid, epoch + 1, &p0),
        PRODUCER_FENCED
    );
    assert_eq!(
        add_partitions_call(&node, 1, "bad-tx", pid, epoch + 1, &[(topic, &[0])]),
        BTreeMap::from([((topic.to_string(), 0), INVALID_PRODUCER_EPOCH)])
    );
    assert_eq!(
        node.add_partitions("nobody-tx", pid, epoch, &p0),
        INVALID_PRODUCER_ID_MAPPING
    );
    assert_eq!(node.describe_txn("bad-tx").state, "Empty");

    // An unknown topic (and a partition out of range) fails the whole request.
    let mixed = add_partitions_call(
        &node,
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
        node.describe_txn("bad-tx").state,
        "Empty",
        "nothing was added"
    );

    // The right epoch works; then EndTxn with a future epoch is fenced, the
    // right one aborts, and its retry is answered 0.
    assert_eq!(node.add_partitions("bad-tx", pid, epoch, &p0), NONE);
    let d = node.describe_txn("bad-tx");
    assert_eq!(
        (d.state.as_str(), d.partitions.clone()),
        ("Ongoing", parts(topic, &[0]))
    );
    assert_eq!(
        node.end_txn("bad-tx", pid, epoch + 1, false),
        PRODUCER_FENCED
    );
    assert_eq!(
        end_txn_v1(&node, "bad-tx", pid, epoch + 1, false),
        INVALID_PRODUCER_EPOCH
    );
    assert_eq!(node.end_txn("bad-tx", pid, epoch, false), NONE);
    assert_eq!(
        node.end_txn("bad-tx", pid, epoch, false),
        NONE,
        "retried abort"
    );
    assert_eq!(
        node.end_txn("bad-tx", pid, epoch, true),
        INVALID_TXN_STATE,
        "commit after abort"
    );
    assert_eq!(node.describe_txn("bad-tx").state, "CompleteAbort");
    // The ABORT marker went to the partition of the transaction only.
    assert_eq!(node.watermarks(topic, 0).1, 1);
    assert_eq!(node.watermarks(topic, 1).1, 0);

    // TxnOffsetCommit: only for a group whose offsets partition
    // AddOffsetsToTxn put in the open transaction, with the current epoch
    // (otherwise no marker could ever commit or abort those offsets).
    node.groups_ready();
    let offsets = [(topic, 0, 5)];
    assert_eq!(
        node.txn_offset_commit("bad-tx", "bad-group", pid, epoch, &offsets),
        vec![TRANSACTION_ABORTABLE]
    );
    assert_eq!(node.add_offsets("bad-tx", pid, epoch, "bad-group"), NONE);
    assert_eq!(
        node.txn_offset_commit("bad-tx", "bad-group", pid, epoch + 5, &offsets),
        vec![INVALID_PRODUCER_EPOCH]
    );
    assert_eq!(
        node.txn_offset_commit("bad-tx", "bad-group", pid, epoch, &offsets),
        vec![NONE]
    );
    assert_eq!(node.end_txn("bad-tx", pid, epoch, false), NONE);
}

// ================================================================ transaction recovery

/// Broker settings of the recovery scenarios: one `__transaction_state`
/// partition, no timeout abort in the way.
const ONE_STATE_PARTITION: &[&str] = &[
    "transaction.state.log.num.partitions=1",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms=3600000",
];

/// Appends one `__transaction_state` record for `id` to the end of the log
/// of its partition 0 (the node is stopped), as the coordinator would have
/// written it.
fn append_txn_state(node: &Node, id: &str, value: &fjord::txn::records::TxnLogValue) {
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };
    use std::io::Write;
    let path = node.segment_path(fjord::txn::TRANSACTION_STATE_TOPIC, 0);
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
        timestamp: now_ms(),
        key: Some(fjord::txn::records::txn_key(id)),
        value: Some(fjord::txn::records::txn_value(value)),
        headers: Default::default(),
    };
    let mut buf = bytes::BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, std::iter::once(&record), &opts).expect("encode");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open __transaction_state-0");
    f.write_all(&buf).expect("append");
    f.sync_all().expect("sync");
}

/// A transaction is left open with four records, the node stops, and
/// `__transaction_state` gets the record the coordinator writes just before
/// the markers (PrepareCommit or PrepareAbort); after the start the
/// coordinator finishes the transaction itself: markers and the Complete
/// state, so read_committed sees a committed transaction and skips an
/// aborted one. With `v2` the record is a transactions-v2 Prepare state
/// (TransactionLogValue v1: epoch + 1, ClientTransactionVersion 2, a
/// NextProducerId as at an exhausted epoch): the markers carry epoch + 1 and
/// the Complete state switches to the next producer id at epoch 0.
fn prepared_transaction_is_finished_after_restart(commit: bool, v2: bool) {
    use fjord::txn::records::{TxnLogTagged, TxnLogValue, TxnStatus, TxnVersion};
    let mut node = Node::start(ONE_STATE_PARTITION);
    let topic = match (commit, v2) {
        (true, false) => "rec-commit",
        (false, false) => "rec-abort",
        (true, true) => "rec-commit-v2",
        (false, true) => "rec-abort-v2",
    };
    let id = format!("{topic}-id");
    node.create_topic(topic, 1, &[]);
    node.txn_ready();
    let mut p = TxnProducer::init(&node, &id, 60_000);
    let sent: Vec<String> = (0..4).map(|i| format!("{id}-{i}")).collect();
    p.send(&node, topic, 0, &sent);
    let d = node.describe_txn(&id);
    assert_eq!(d.state, "Ongoing");
    node.stop();

    let now = now_ms();
    let next_producer_id = d.producer_id + 1_000;
    let (epoch, tagged) = if v2 {
        (
            d.producer_epoch + 1,
            TxnLogTagged {
                next_producer_id,
                client_tv: TxnVersion::Tv2,
                ..TxnLogTagged::default()
            },
        )
    } else {
        (d.producer_epoch, TxnLogTagged::default())
    };
    append_txn_state(
        &node,
        &id,
        &TxnLogValue {
            producer_id: d.producer_id,
            producer_epoch: epoch,
            timeout_ms: 60_000,
            status: if commit {
                TxnStatus::PrepareCommit
            } else {
                TxnStatus::PrepareAbort
            },
            partitions: parts(topic, &[0]),
            last_update_ms: now,
            start_ms: now,
            tagged,
        },
    );
    node.start_again();
    node.txn_ready();
    let want = if commit {
        "CompleteCommit"
    } else {
        "CompleteAbort"
    };
    node.poll("the coordinator to complete the transaction", || {
        let d = node.describe_txn(&id);
        (d.state == want).then_some(()).ok_or(format!("{d:?}"))
    });
    // Four records and one marker.
    assert_eq!(node.hw_and_lso(topic, 0), (5, 5));
    let expected = if commit { sent } else { Vec::new() };
    assert_eq!(node.values(topic, 0, 0, READ_COMMITTED), expected);
    if v2 {
        let d = node.describe_txn(&id);
        assert_eq!((d.producer_id, d.producer_epoch), (next_producer_id, 0));
    }
}

/// A PrepareCommit found at start-up is committed. (Was txn_recovery.rs
/// `prepare_commit_found_at_start_up_is_committed`, where the broker was
/// killed; here it stops, and the record is appended as there.)
#[test]
fn prepare_commit_found_at_start_up_is_committed() {
    prepared_transaction_is_finished_after_restart(true, false);
}

/// A transactions-v2 PrepareCommit (TransactionLogValue v1, a producer id
/// rotation pending) found at start-up is committed and rotates the id.
#[test]
fn prepare_commit_v2_found_at_start_up_is_committed_and_rotates() {
    prepared_transaction_is_finished_after_restart(true, true);
}

/// A transactions-v2 PrepareAbort found at start-up is aborted.
#[test]
fn prepare_abort_v2_found_at_start_up_is_aborted_and_rotates() {
    prepared_transaction_is_finished_after_restart(false, true);
}

/// A PrepareAbort found at start-up is aborted. (Was txn_recovery.rs
/// `prepare_abort_found_at_start_up_is_aborted`.)
#[test]
fn prepare_abort_found_at_start_up_is_aborted() {
    prepared_transaction_is_finished_after_restart(false, false);
}

/// Transactions v2 at the exhausted epoch: an open transaction at epoch
/// 32766 (planted in `__transaction_state`, as 32,766 InitProducerId round
/// trips would leave it) is committed by EndTxn v5, which allocates a new
/// producer id first: the marker carries epoch 32767, the answer is (new
/// id, 0), a retry with the old pair gets the same answer, and the new pair
/// runs the next transaction.
#[test]
fn end_txn_v2_at_the_exhausted_epoch_rotates_the_producer_id() {
    use fjord::txn::records::{TxnLogTagged, TxnLogValue, TxnStatus, TxnVersion};
    let mut node = Node::start(ONE_STATE_PARTITION);
    let topic = "overflow";
    let id = "overflow-id";
    node.create_topic(topic, 1, &[]);
    node.txn_ready();
    let mut p = TxnProducer::init(&node, id, 60_000);
    let sent: Vec<String> = (0..2).map(|i| format!("{id}-{i}")).collect();
    p.send(&node, topic, 0, &sent);
    let d = node.describe_txn(id);
    node.stop();
    let now = now_ms();
    let exhausted = i16::MAX - 1;
    append_txn_state(
        &node,
        id,
        &TxnLogValue {
            producer_id: d.producer_id,
            producer_epoch: exhausted,
            timeout_ms: 60_000,
            status: TxnStatus::Ongoing,
            partitions: parts(topic, &[0]),
            last_update_ms: now,
            start_ms: now,
            tagged: TxnLogTagged {
                client_tv: TxnVersion::Tv2,
                ..TxnLogTagged::default()
            },
        },
    );
    node.start_again();
    node.txn_ready();
    let (new_pid, epoch) = node
        .end_txn_v2(id, d.producer_id, exhausted, true)
        .expect("EndTxn v5 at the exhausted epoch");
    assert_ne!(new_pid, d.producer_id);
    assert_eq!(epoch, 0);
    let after = node.describe_txn(id);
    assert_eq!(after.state, "CompleteCommit");
    assert_eq!((after.producer_id, after.producer_epoch), (new_pid, 0));
    // The marker (epoch 32767) committed the records.
    assert_eq!(node.hw_and_lso(topic, 0), (3, 3));
    assert_eq!(node.values(topic, 0, 0, READ_COMMITTED), sent);
    // The retry of the old pair is recognised; another epoch is not.
    assert_eq!(
        node.end_txn_v2(id, d.producer_id, exhausted, true),
        Ok((new_pid, 0))
    );
    assert_eq!(
        node.end_txn_v2(id, d.producer_id, exhausted - 1, true),
        Err(49)
    );
    // The new pair runs the next transaction (an empty abort: epoch 1).
    assert_eq!(node.end_txn_v2(id, new_pid, 0, false), Ok((new_pid, 1)));
}

/// An operator ends a transaction that holds a partition's LSO with a
/// marker (what WriteTxnMarkers from `kafka-transactions.sh abort` writes),
/// using the producer id and epoch DescribeProducers shows: an epoch older
/// than the partition knows is refused and writes nothing, the producer's
/// epoch writes the ABORT marker, which frees the LSO; WriteTxnMarkers for
/// a partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION. (Was
/// txn_recovery.rs `write_txn_markers_ends_a_hanging_transaction`; the
/// producer is initialised twice so that an older epoch exists.)
#[test]
fn write_txn_markers_ends_a_hanging_transaction() {
    let node = Node::start(&[]);
    let topic = "hanging";
    node.create_topic(topic, 1, &[]);
    node.txn_ready();
    node.init_producer_id("hanging-id", 60_000);
    let mut p = TxnProducer::init(&node, "hanging-id", 60_000);
    assert!(p.epoch > 0);
    p.send(&node, topic, 0, &values("open", 3));
    assert_eq!(node.hw_and_lso(topic, 0), (3, 0));

    let prod = node
        .describe_producers(topic, 0)
        .into_iter()
        .find(|x| x.producer_id == p.pid)
        .expect("the producer is listed");
    assert_eq!(prod.current_txn_start_offset, 0);
    let coordinator_epoch = prod.coordinator_epoch.max(0);
    let abort = move |epoch: i16| {
        move |part: std::rc::Rc<fjord::shard::partition::Partition>| async move {
            part.write_marker(prod.producer_id, epoch, false, coordinator_epoch)
                .await
                .map_err(|e| e.code())
        }
    };
    assert_eq!(
        node.on_partition(topic, 0, abort(prod.producer_epoch - 1)),
        Err(INVALID_PRODUCER_EPOCH),
        "an older epoch is refused"
    );
    assert_eq!(node.hw_and_lso(topic, 0), (3, 0), "nothing written");
    assert_eq!(
        node.on_partition(topic, 0, abort(prod.producer_epoch)),
        Ok(3)
    );
    // The marker took offset 3; the LSO is free and the records are aborted.
    assert_eq!(node.hw_and_lso(topic, 0), (4, 4));
    assert!(node.read_all(topic, 0, 0, READ_COMMITTED).is_empty());

    use kp::write_txn_markers_request::{WritableTxnMarker, WritableTxnMarkerTopic};
    let req =
        kp::WriteTxnMarkersRequest::default().with_markers(vec![WritableTxnMarker::default()
            .with_producer_id(kp::ProducerId(prod.producer_id))
            .with_producer_epoch(prod.producer_epoch)
            .with_transaction_result(false)
            .with_coordinator_epoch(coordinator_epoch)
            .with_topics(vec![WritableTxnMarkerTopic::default()
                .with_name(kp::TopicName(s(topic)))
                .with_partition_indexes(vec![9])])]);
    let r = node.call(0, 1, req);
    assert_eq!(
        r.markers[0].topics[0].partitions[0].error_code, UNKNOWN_TOPIC_OR_PARTITION,
        "partition 9 does not exist"
    );
}

/// A transactional id with no transaction for
/// `transactional.id.expiration.ms` is removed (a tombstone in
/// `__transaction_state`), and stays removed after a restart; an id with an
/// open transaction is kept. (Was txn_recovery.rs
/// `idle_transactional_ids_expire`.)
#[test]
fn idle_transactional_ids_expire() {
    let mut node = Node::start(&[
        "transaction.state.log.num.partitions=1",
        "transactional.id.expiration.ms=1000",
        "transaction.remove.expired.transaction.cleanup.interval.ms=100",
    ]);
    node.create_topic("expiring", 1, &[]);
    node.txn_ready();
    TxnProducer::init(&node, "idle-id", 60_000);
    let mut open = TxnProducer::init(&node, "open-id", 60_000);
    open.send(&node, "expiring", 0, &["x".to_string()]);
    node.poll("the idle transactional id to expire", || {
        let d = node.describe_txn("idle-id");
        (d.error_code == TRANSACTIONAL_ID_NOT_FOUND)
            .then_some(())
            .ok_or(format!("{d:?}"))
    });
    assert_eq!(node.describe_txn("open-id").state, "Ongoing");
    node.restart();
    node.txn_ready();
    assert_eq!(
        node.describe_txn("idle-id").error_code,
        TRANSACTIONAL_ID_NOT_FOUND,
        "the tombstone is replayed"
    );
}

// ================================================================ read_committed

/// READ_COMMITTED over the owners: transactional batches keep the last
/// stable offset at the start of the open transaction, so READ_COMMITTED
/// reads and ListOffsets stop there while READ_UNCOMMITTED sees
/// everything; transactional batches need the request's transactional id
/// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and a partition added to the
/// transaction (INVALID_TXN_STATE); two batches in one partition's records,
/// and a client-sent control batch, are INVALID_RECORD; the open
/// transaction is rebuilt after a restart. (Was read_committed.rs
/// `read_committed_stops_at_the_lso`.)
#[test]
fn read_committed_stops_at_the_lso() {
    let mut node = Node::start(&[]);
    let (topic, id) = ("rc", "rc-txn");
    node.create_topic(topic, 1, &[]);
    node.txn_ready();
    let (pid, epoch) = node.init_producer_id(id, 60_000);
    let ts = now_ms();
    let produce = |records: bytes::Bytes, txn_id: Option<&str>| {
        let a = node.produce(0, topic, 0, records, txn_id);
        (error_code(&a), a.base_offset)
    };
    // 0..=1: plain records; 2..=4: an open transaction of `pid`.
    assert_eq!(produce(batch(-1, -1, -1, 2, ts, false), None), (NONE, 0));
    let txn_batch = batch(pid, epoch, 0, 3, ts + 100, true);
    // Refused without a transactional id, and before the partition is in
    // the transaction; nothing is appended.
    assert_eq!(
        produce(txn_batch.clone(), None).0,
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    );
    assert_eq!(produce(txn_batch.clone(), Some(id)).0, INVALID_TXN_STATE);
    assert_eq!(node.add_partitions(id, pid, epoch, &[(topic, 0)]), NONE);
    // One record batch per partition (Kafka's rule for Produce v3+): a
    // second batch cannot slip another producer's transaction past the
    // check.
    let mut two = bytes::BytesMut::from(&txn_batch[..]);
    two.extend_from_slice(&batch(pid + 1, 0, 0, 1, ts, true));
    assert_eq!(produce(two.freeze(), Some(id)).0, INVALID_RECORD);
    assert_eq!(produce(txn_batch, Some(id)), (NONE, 2));

    let offsets =
        |bytes: &bytes::Bytes| -> Vec<i64> { records(bytes).iter().map(|r| r.0).collect() };
    let (rc, bytes) = node.fetch(topic, 0, 0, READ_COMMITTED);
    assert!(rc.error.is_none(), "{:?}", rc.error);
    assert_eq!((rc.high_watermark, rc.last_stable_offset), (5, 2));
    assert_eq!(rc.aborted_transactions.as_ref().map(Vec::len), Some(0));
    assert_eq!(offsets(&bytes), vec![0, 1]);
    // At the LSO: nothing yet, no error.
    let (rc, bytes) = node.fetch(topic, 0, 2, READ_COMMITTED);
    assert!(rc.error.is_none(), "{:?}", rc.error);
    assert!(bytes.is_empty());
    let (ru, bytes) = node.fetch(topic, 0, 0, READ_UNCOMMITTED);
    assert_eq!((ru.high_watermark, ru.last_stable_offset), (5, 2));
    assert!(ru.aborted_transactions.is_none());
    assert_eq!(offsets(&bytes), vec![0, 1, 2, 3, 4]);

    // ListOffsets: LATEST is the LSO under READ_COMMITTED; a timestamp only
    // found in the open transaction is not answered there.
    assert_eq!(node.list_offset(topic, 0, -1, READ_COMMITTED), Some(2));
    assert_eq!(node.list_offset(topic, 0, -1, READ_UNCOMMITTED), Some(5));
    assert_eq!(node.list_offset(topic, 0, ts + 100, READ_COMMITTED), None);
    assert_eq!(
        node.list_offset(topic, 0, ts + 100, READ_UNCOMMITTED),
        Some(2)
    );
    assert_eq!(node.list_offset(topic, 0, ts, READ_COMMITTED), Some(0));

    // DescribeProducers shows the open transaction's first offset.
    let me = node
        .describe_producers(topic, 0)
        .into_iter()
        .find(|x| x.producer_id == pid)
        .expect("producer listed");
    assert_eq!(me.current_txn_start_offset, 2);

    // Clients may not write control batches (markers).
    let marker = encode(pid, epoch, 3, &[(None, None, ts)], true, true);
    assert_eq!(produce(marker, Some(id)).0, INVALID_RECORD);
    // The transaction is still open after a restart (rebuilt from the log).
    node.restart();
    assert_eq!(node.list_offset(topic, 0, -1, READ_COMMITTED), Some(2));
    let (rc, bytes) = node.fetch(topic, 0, 0, READ_COMMITTED);
    assert_eq!(rc.last_stable_offset, 2);
    assert_eq!(offsets(&bytes), vec![0, 1]);
}

// ================================================================ groups

/// A member of a group in a scenario: its JoinGroup and its id.
struct Member {
    args: fjord::group::JoinArgs,
    id: String,
}

/// Every partition of `partitions` to the first member, for a group of one.
fn all_to_first(topic: &str, partitions: i32) -> impl Fn(&[String]) -> Vec<(String, bytes::Bytes)> {
    let topic = topic.to_string();
    move |ids: &[String]| {
        let all: Vec<i32> = (0..partitions).collect();
        ids.iter()
            .enumerate()
            .map(|(i, id)| {
                let mine: Vec<i32> = if i == 0 { all.clone() } else { Vec::new() };
                (id.clone(), assignment(&topic, &mine))
            })
            .collect()
    }
}

/// `partitions` partitions of `topic` split over the members in order
/// (range-like: contiguous runs).
fn split(topic: &str, partitions: i32) -> impl Fn(&[String]) -> Vec<(String, bytes::Bytes)> {
    let topic = topic.to_string();
    move |ids: &[String]| {
        let n = ids.len() as i32;
        ids.iter()
            .enumerate()
            .map(|(i, id)| {
                let i = i as i32;
                let mine: Vec<i32> = (0..partitions)
                    .filter(|p| p * n / partitions == i)
                    .collect();
                (id.clone(), assignment(&topic, &mine))
            })
            .collect()
    }
}

/// A new member joins the group whose `members` are Stable at
/// `generation` (none and 0 for a new group), as consumers do: the new
/// member's JoinGroup (after MEMBER_ID_REQUIRED, unless it is static) is
/// parked, each member sees REBALANCE_IN_PROGRESS on its heartbeat and
/// rejoins, the leader syncs the assignments `assign` gives for the
/// members it was told of, the others sync. Gives the new generation and
/// the assignment each member got; `members` gets the new one.
fn rebalance(
    node: &Node,
    generation: i32,
    members: &mut Vec<Member>,
    new: fjord::group::JoinArgs,
    assign: impl Fn(&[String]) -> Vec<(String, bytes::Bytes)>,
) -> (i32, BTreeMap<String, bytes::Bytes>) {
    let group = new.group_id.clone();
    let mut joins = Vec::new();
    joins.push(if new.group_instance_id.is_some() {
        node.join_pending(new.clone())
    } else {
        node.join_new(new.clone()).1
    });
    for m in members.iter() {
        let instance = m.args.group_instance_id.as_deref();
        node.wait_until("REBALANCE_IN_PROGRESS on a member's heartbeat", || {
            node.heartbeat(&group, generation, &m.id, instance) == REBALANCE_IN_PROGRESS
        });
        joins.push(node.join_pending(fjord::group::JoinArgs {
            member_id: m.id.clone(),
            ..m.args.clone()
        }));
    }
    let results: Vec<fjord::group::JoinResult> = joins.into_iter().map(|j| j.wait(node)).collect();
    for r in &results {
        assert!(r.error.is_none(), "JoinGroup: {r:?}");
        assert_eq!(r.generation_id, results[0].generation_id, "{results:?}");
    }
    members.push(Member {
        args: new,
        id: results[0].member_id.clone(),
    });
    let gen = results[0].generation_id;
    let leader = results[0].leader.clone();
    let told = results
        .iter()
        .find(|r| r.member_id == leader)
        .expect("the leader's answer")
        .members
        .iter()
        .map(|(id, _, _)| id.clone())
        .collect::<Vec<_>>();
    let plan = assign(&told);
    let syncs: Vec<(String, Pending<fjord::group::SyncResult>)> = members
        .iter()
        .map(|m| {
            let mut a = sync_args(&group, gen, &m.id, Vec::new());
            a.group_instance_id = m.args.group_instance_id.clone();
            if m.id == leader {
                a.assignments = plan.clone();
            }
            (m.id.clone(), node.sync_pending(a))
        })
        .collect();
    let got = syncs
        .into_iter()
        .map(|(id, p)| {
            let r = p.wait(node);
            assert!(r.error.is_none(), "SyncGroup of {id}: {r:?}");
            (id, r.assignment)
        })
        .collect();
    (gen, got)
}

/// Waits until `group` is described Empty, without members.
fn wait_empty(node: &Node, group: &str) {
    node.poll("the group Empty", || {
        let d = node.describe_group(group);
        (d.state == "Empty" && d.members.is_empty())
            .then_some(())
            .ok_or(format!("{d:?}"))
    });
}

/// The error answers of the group APIs, request by request: the
/// coordinator's address, session timeouts, MEMBER_ID_REQUIRED (KIP-394),
/// inconsistent protocols, wrong generations and unknown members in
/// Heartbeat, SyncGroup and OffsetCommit, unknown topics in OffsetCommit,
/// OffsetDelete of a subscribed topic, OffsetFetch of every partition and
/// batched, ListGroups by state, LeaveGroup. (Was groups.rs
/// `group_api_errors_on_the_wire`.)
#[test]
fn group_api_errors_on_the_wire() {
    let node = Node::start(TXN);
    let (topic, group) = ("raw-topic", "raw-group");
    node.create_topic(topic, 1, &[]);
    // FindCoordinator (creates __consumer_offsets): this broker.
    let r = node.call(
        0,
        3,
        kp::FindCoordinatorRequest::default().with_key(s(group)),
    );
    assert_eq!(r.error_code, NONE, "FindCoordinator: {r:?}");
    assert_eq!(
        format!("{}:{}", r.host.as_str(), r.port),
        node.address().to_string(),
        "coordinator address"
    );
    node.groups_ready();

    let meta = subscription(&[topic]);
    let args = |member: &str| join_args(group, member, topic);

    // Session timeout below group.min.session.timeout.ms.
    let r = node.join(fjord::group::JoinArgs {
        session_timeout_ms: 500,
        ..args("")
    });
    assert_eq!(r.error.map(|e| e.code()), Some(INVALID_SESSION_TIMEOUT));

    // KIP-394: the first JoinGroup (v4+) of an unknown member gets an id.
    let r = node.join(args(""));
    assert_eq!(
        r.error.as_ref().map(|e| e.code()),
        Some(MEMBER_ID_REQUIRED),
        "{r:?}"
    );
    let member = r.member_id.clone();
    assert!(!member.is_empty(), "MEMBER_ID_REQUIRED without a member id");
    let r = node.join(args(&member));
    assert!(r.error.is_none(), "{r:?}");
    assert_eq!(r.generation_id, 1);
    assert_eq!(r.member_id, member);
    assert_eq!(r.leader, member, "sole member leads");
    assert_eq!(r.protocol_name.as_deref(), Some("range"));
    assert_eq!(r.members.len(), 1);
    assert_eq!(r.members[0].0, member);
    assert_eq!(r.members[0].2, meta, "leader sees member metadata");

    // A second member whose protocols share nothing with the group's, or
    // with another protocol type.
    let r = node.join(fjord::group::JoinArgs {
        protocols: vec![("other".to_string(), meta.clone())],
        ..args("")
    });
    assert_eq!(r.error.map(|e| e.code()), Some(INCONSISTENT_GROUP_PROTOCOL));
    let r = node.join(fjord::group::JoinArgs {
        protocol_type: "connect".to_string(),
        ..args("")
    });
    assert_eq!(r.error.map(|e| e.code()), Some(INCONSISTENT_GROUP_PROTOCOL));

    // Heartbeat with the wrong generation; SyncGroup by an unknown member.
    assert_eq!(node.heartbeat(group, 2, &member, None), ILLEGAL_GENERATION);
    let sync_code = |r: fjord::group::SyncResult| r.error.map_or(NONE, |e| e.code());
    assert_eq!(
        sync_code(node.sync(sync_args(group, 1, "nobody", vec![]))),
        UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        sync_code(node.sync(sync_args(group, 7, &member, vec![]))),
        ILLEGAL_GENERATION
    );

    // The leader's SyncGroup completes the rebalance.
    let assigned = assignment(topic, &[0]);
    let r = node.sync(sync_args(
        group,
        1,
        &member,
        vec![(member.clone(), assigned.clone())],
    ));
    assert!(r.error.is_none(), "{r:?}");
    assert_eq!(r.assignment, assigned);
    assert_eq!(node.heartbeat(group, 1, &member, None), NONE);
    assert_eq!(node.heartbeat(group, 1, "nobody", None), UNKNOWN_MEMBER_ID);

    // OffsetCommit: per-partition errors for an unknown topic; stale
    // generation and unknown member for the whole request.
    assert_eq!(
        node.commit(group, 1, &member, &[(topic, 0, 5), ("no-such-topic", 0, 1)]),
        vec![NONE, UNKNOWN_TOPIC_OR_PARTITION]
    );
    assert_eq!(
        node.commit(group, 0, &member, &[(topic, 0, 9)]),
        vec![ILLEGAL_GENERATION]
    );
    assert_eq!(
        node.commit(group, 1, "nobody", &[(topic, 0, 9)]),
        vec![UNKNOWN_MEMBER_ID]
    );
    assert_eq!(
        node.committed(group, Some(&[(topic, 0)])),
        vec![(topic.to_string(), 0, 5)],
        "only the valid commit counts"
    );

    // OffsetDelete refuses a topic the group is subscribed to.
    assert_eq!(
        node.delete_offsets(group, &[(topic, 0)]),
        (NONE, vec![GROUP_SUBSCRIBED_TO_TOPIC])
    );

    // OffsetFetch of every committed partition, and v8's batched form with
    // a group that never committed (the batching is the handler's).
    assert_eq!(node.committed(group, None), vec![(topic.to_string(), 0, 5)]);
    let batched = kp::OffsetFetchRequest::default().with_groups(
        [group, "never-committed"]
            .iter()
            .map(|g| {
                kp::offset_fetch_request::OffsetFetchRequestGroup::default()
                    .with_group_id(s(g).into())
                    .with_topics(None)
            })
            .collect(),
    );
    let r = node.call(0, 8, batched);
    type Committed = Vec<(String, i32, i64)>;
    let per_group: Vec<(String, i16, Committed)> = r
        .groups
        .iter()
        .map(|g| {
            let offsets = g
                .topics
                .iter()
                .flat_map(|t| {
                    t.partitions.iter().map(|p| {
                        (
                            t.name.as_str().to_string(),
                            p.partition_index,
                            p.committed_offset,
                        )
                    })
                })
                .collect();
            (g.group_id.as_str().to_string(), g.error_code, offsets)
        })
        .collect();
    assert_eq!(
        per_group,
        vec![
            (group.to_string(), NONE, vec![(topic.to_string(), 0, 5)]),
            ("never-committed".to_string(), NONE, vec![]),
        ],
        "OffsetFetch v8 (batched)"
    );

    // ListGroups filters by state (KIP-518), case-insensitively.
    let ids = |l: Vec<(String, String, String)>| -> Vec<(String, String)> {
        l.into_iter().map(|(g, _, st)| (g, st)).collect()
    };
    assert_eq!(
        ids(node.list_groups(&["stable"])),
        vec![(group.to_string(), "Stable".to_string())]
    );
    assert!(ids(node.list_groups(&["Empty"]))
        .iter()
        .all(|(g, _)| g != group));

    // LeaveGroup; the member is gone, and its topic's offsets can go.
    assert_eq!(node.leave(group, &[(&member, None)]), (NONE, vec![NONE]));
    assert_eq!(node.heartbeat(group, 1, &member, None), UNKNOWN_MEMBER_ID);
    assert_eq!(
        node.delete_offsets(group, &[(topic, 0)]),
        (NONE, vec![NONE])
    );
    assert_eq!(
        node.committed(group, Some(&[(topic, 0)])),
        vec![(topic.to_string(), 0, -1)],
        "deleted offset"
    );
}

/// ListGroups/DescribeGroups while active and when Empty; DeleteGroups
/// refuses a non-empty group, deletes an empty one with its offsets, and
/// answers GROUP_ID_NOT_FOUND the second time; a standalone commit (no
/// generation) is allowed for an Empty group. (Was groups.rs
/// `list_describe_and_delete_groups`.)
#[test]
fn list_describe_and_delete_groups() {
    let node = Node::start(TXN);
    let (topic, group) = ("admin-groups", "admin-group");
    node.create_topic(topic, 4, &[]);
    node.groups_ready();
    let mut members = Vec::new();
    let (gen, _) = rebalance(
        &node,
        0,
        &mut members,
        join_args(group, "", topic),
        split(topic, 4),
    );
    rebalance(
        &node,
        gen,
        &mut members,
        join_args(group, "", topic),
        split(topic, 4),
    );
    let view = node.describe_group(group);
    assert_eq!(view.state, "Stable");
    assert_eq!(view.protocol_type, "consumer");
    assert_eq!(view.protocol, "range");
    assert_eq!(view.members.len(), 2);
    for m in &view.members {
        assert!(!m.member_id.is_empty(), "{m:?}");
        assert_eq!(m.client_host, "/127.0.0.1", "{m:?}");
        assert!(
            !m.metadata.is_empty(),
            "subscription metadata missing: {m:?}"
        );
        assert!(!m.assignment.is_empty(), "assignment missing: {m:?}");
    }
    let listed = node.list_groups(&[]);
    assert!(
        listed.iter().any(|(g, t, _)| g == group && t == "consumer"),
        "ListGroups shows the active group: {listed:?}"
    );
    assert_eq!(node.delete_group(group), NON_EMPTY_GROUP);

    for m in &members {
        assert_eq!(node.leave(group, &[(&m.id, None)]), (NONE, vec![NONE]));
    }
    wait_empty(&node, group);

    // A standalone commit (no generation) is allowed for an Empty group.
    assert_eq!(node.commit(group, -1, "", &[(topic, 2, 0)]), vec![NONE]);
    assert_eq!(
        node.committed(group, Some(&[(topic, 2)])),
        vec![(topic.to_string(), 2, 0)]
    );

    assert_eq!(node.delete_group(group), NONE);
    assert_eq!(
        node.describe_group(group).state,
        "Dead",
        "deleted group still described"
    );
    assert!(
        !node.list_groups(&[]).iter().any(|(g, _, _)| g == group),
        "deleted group still listed"
    );
    let all: Vec<(&str, i32)> = (0..4).map(|p| (topic, p)).collect();
    assert!(
        node.committed(group, Some(&all))
            .iter()
            .all(|(_, _, o)| *o == -1),
        "offsets of a deleted group must be gone"
    );
    assert_eq!(node.delete_group(group), GROUP_ID_NOT_FOUND);
}

/// Committed offsets and the group survive a clean restart: the group is
/// described and listed Empty, its committed offsets are there, and
/// reading from them gives exactly the records produced after the commit.
/// (Was groups.rs `offsets_and_group_survive_restart`.)
#[test]
fn offsets_and_group_survive_restart() {
    let mut node = Node::start(TXN);
    let (topic, group) = ("durable", "durable-group");
    node.create_topic(topic, 2, &[]);
    node.groups_ready();
    for p in 0..2 {
        node.append(
            topic,
            p,
            values_batch(&values(&format!("first-{p}"), 15), now_ms()),
        );
    }
    let mut members = Vec::new();
    let (gen, _) = rebalance(
        &node,
        0,
        &mut members,
        join_args(group, "", topic),
        split(topic, 2),
    );
    let id = members[0].id.clone();
    assert_eq!(
        node.commit(group, gen, &id, &[(topic, 0, 15), (topic, 1, 15)]),
        vec![NONE, NONE]
    );
    assert_eq!(node.leave(group, &[(&id, None)]), (NONE, vec![NONE]));
    wait_empty(&node, group);

    node.restart();
    node.groups_ready();
    let view = node.describe_group(group);
    assert_eq!(view.state, "Empty", "group after restart: {view:?}");
    assert!(view.members.is_empty(), "group after restart: {view:?}");
    assert!(
        node.list_groups(&[]).iter().any(|(g, _, _)| g == group),
        "ListGroups after restart lacks {group}"
    );
    for p in 0..2 {
        node.append(
            topic,
            p,
            values_batch(&values(&format!("second-{p}"), 10), now_ms()),
        );
    }
    assert_eq!(
        node.committed(group, Some(&[(topic, 0), (topic, 1)])),
        vec![(topic.to_string(), 0, 15), (topic.to_string(), 1, 15)],
        "committed offsets after restart"
    );
    for p in 0..2 {
        assert_eq!(
            node.values(topic, p, 15, READ_UNCOMMITTED),
            values(&format!("second-{p}"), 10),
            "resumed at the committed offset of partition {p}"
        );
    }
}

/// A static member (`group.instance.id`) that goes away without a
/// LeaveGroup and comes back within its session timeout gets a new member
/// id and its old assignment in the same generation; the other member sees
/// no rebalance at all. (Was groups.rs
/// `static_member_rejoins_without_rebalance`.)
#[test]
fn static_member_rejoins_without_rebalance() {
    let node = Node::start(TXN);
    let (topic, group) = ("static", "static-group");
    node.create_topic(topic, 4, &[]);
    node.groups_ready();
    let a_args = fjord::group::JoinArgs {
        group_instance_id: Some("instance-a".to_string()),
        session_timeout_ms: 10_000,
        ..join_args(group, "", topic)
    };
    let b_args = fjord::group::JoinArgs {
        session_timeout_ms: 10_000,
        ..join_args(group, "", topic)
    };
    let mut members = Vec::new();
    let (gen, _) = rebalance(&node, 0, &mut members, a_args.clone(), split(topic, 4));
    let (gen, before) = rebalance(&node, gen, &mut members, b_args, split(topic, 4));
    let (old_a, b) = (members[0].id.clone(), members[1].id.clone());

    // The static member comes back (its old process sent no LeaveGroup).
    let j = node.join(a_args);
    assert!(j.error.is_none(), "{j:?}");
    assert_eq!(j.generation_id, gen, "no new generation");
    assert_ne!(
        j.member_id, old_a,
        "the returning instance gets a new member id"
    );
    let mut sync = sync_args(group, gen, &j.member_id, vec![]);
    sync.group_instance_id = Some("instance-a".to_string());
    let s = node.sync(sync);
    assert!(s.error.is_none(), "{s:?}");
    assert_eq!(
        s.assignment, before[&old_a],
        "the returning member's assignment"
    );

    assert_eq!(
        node.heartbeat(group, gen, &b, None),
        NONE,
        "the other member must see no rebalance"
    );
    let view = node.describe_group(group);
    assert_eq!(view.state, "Stable");
    let ids: BTreeSet<&str> = view.members.iter().map(|m| m.member_id.as_str()).collect();
    assert_eq!(ids, BTreeSet::from([j.member_id.as_str(), b.as_str()]));
    let assigned: BTreeMap<&str, &bytes::Bytes> = view
        .members
        .iter()
        .map(|m| (m.member_id.as_str(), &m.assignment))
        .collect();
    assert_eq!(assigned[j.member_id.as_str()], &before[&old_a]);
    assert_eq!(
        assigned[b.as_str()],
        &before[&b],
        "assignments after the static member came back"
    );
}

/// A member that keeps heartbeating but does not rejoin during a rebalance
/// is removed when the rebalance timeout passes (and not before: the clock
/// starts before the JoinGroup that begins the rebalance is sent, so a slow
/// machine only makes it later); the new generation goes on without it.
/// (Was groups.rs `member_not_rejoining_is_dropped_at_rebalance_timeout`.)
#[test]
fn member_not_rejoining_is_dropped_at_rebalance_timeout() {
    const REBALANCE_MS: i32 = 1000;
    let node = Node::start(TXN);
    let (topic, group) = ("slow-topic", "slow-group");
    node.create_topic(topic, 1, &[]);
    node.groups_ready();
    let args = fjord::group::JoinArgs {
        rebalance_timeout_ms: REBALANCE_MS,
        ..join_args(group, "", topic)
    };
    let mut members = Vec::new();
    let (gen, _) = rebalance(&node, 0, &mut members, args.clone(), all_to_first(topic, 1));
    assert_eq!(gen, 1);
    let id1 = members[0].id.clone();

    // A second member joins: its JoinGroup is parked while member 1 is
    // asked (through heartbeats) to rejoin, which it never does.
    let first = node.join(args.clone());
    assert_eq!(first.error.map(|e| e.code()), Some(MEMBER_ID_REQUIRED));
    let id2 = first.member_id;
    let sent_at = Instant::now();
    let pending = node.join_pending(fjord::group::JoinArgs {
        member_id: id2.clone(),
        ..args
    });
    node.wait_until(
        "REBALANCE_IN_PROGRESS on member 1's heartbeat",
        || match node.heartbeat(group, 1, &id1, None) {
            REBALANCE_IN_PROGRESS => true,
            NONE => false,
            other => panic!("heartbeat error {other}"),
        },
    );
    let r = pending.wait(&node);
    let took = sent_at.elapsed();
    assert!(r.error.is_none(), "{r:?}");
    assert_eq!(r.generation_id, 2);
    assert_eq!(r.leader, id2, "the remaining member leads");
    let ids: Vec<&str> = r.members.iter().map(|m| m.0.as_str()).collect();
    assert_eq!(ids, vec![id2.as_str()], "member 1 was dropped");
    assert!(
        took >= Duration::from_millis(REBALANCE_MS as u64 - 10),
        "join completed after {took:?}, before the rebalance timeout"
    );
    assert_eq!(
        node.heartbeat(group, 1, &id1, None),
        UNKNOWN_MEMBER_ID,
        "dropped member's heartbeat"
    );
}

/// A member that stops (no LeaveGroup, no more heartbeats) is removed when
/// its session times out (and not before: the clock starts before its last
/// heartbeat is sent, so a slow machine only makes it later); the survivor,
/// which kept heartbeating, rejoins alone and owns every partition. (Was
/// groups.rs `dead_member_is_removed_after_session_timeout`, where the
/// member's process was killed.)
#[test]
fn dead_member_is_removed_after_session_timeout() {
    const SESSION_MS: i32 = 1000;
    let node = Node::start(TXN);
    let (topic, group) = ("deadmember", "deadmember-group");
    node.create_topic(topic, 4, &[]);
    node.groups_ready();
    let args = fjord::group::JoinArgs {
        session_timeout_ms: SESSION_MS,
        ..join_args(group, "", topic)
    };
    let mut members = Vec::new();
    let (gen, _) = rebalance(&node, 0, &mut members, args.clone(), split(topic, 4));
    let (gen, _) = rebalance(&node, gen, &mut members, args, split(topic, 4));
    let survivor = members.pop().expect("the survivor");
    let doomed = members.pop().expect("the member that stops");
    // Its last heartbeat.
    let stopped_at = Instant::now();
    assert_eq!(node.heartbeat(group, gen, &doomed.id, None), NONE);

    // The survivor heartbeats until the coordinator notices the session
    // expiry and asks it to rejoin.
    node.wait_until(
        "REBALANCE_IN_PROGRESS on the survivor's heartbeat",
        || match node.heartbeat(group, gen, &survivor.id, None) {
            REBALANCE_IN_PROGRESS => true,
            NONE => false,
            other => panic!("heartbeat error {other}"),
        },
    );
    let took = stopped_at.elapsed();
    assert!(
        took >= Duration::from_millis(SESSION_MS as u64 - 10),
        "dead member removed after only {took:?}"
    );
    let j = node.join(fjord::group::JoinArgs {
        member_id: survivor.id.clone(),
        ..survivor.args.clone()
    });
    assert!(j.error.is_none(), "{j:?}");
    assert_eq!(j.generation_id, gen + 1);
    assert_eq!(j.leader, survivor.id);
    assert_eq!(j.members.len(), 1, "{j:?}");
    let s = node.sync(sync_args(
        group,
        j.generation_id,
        &survivor.id,
        all_to_first(topic, 4)(std::slice::from_ref(&survivor.id)),
    ));
    assert_eq!(s.assignment, assignment(topic, &[0, 1, 2, 3]));
    let view = node.describe_group(group);
    assert_eq!(
        (view.state.as_str(), view.members.len()),
        ("Stable", 1),
        "{view:?}"
    );
}

// ================================================================ restarts

/// The value of record `i` in the restart scenarios.
fn value(i: usize) -> String {
    format!("record number {i} ").repeat(1 + i % 5)
}

/// Appends records `range` (keys `k{i}`, values [`value`]) to `topic`-0 in
/// batches of `per_batch`, each acknowledged before the next; checks their
/// offsets.
fn append_range(node: &Node, topic: &str, range: std::ops::Range<usize>, per_batch: usize) {
    let ts = now_ms();
    let all: Vec<usize> = range.collect();
    for chunk in all.chunks(per_batch) {
        let recs: Vec<Rec> = chunk
            .iter()
            .map(|i| (Some(format!("k{i}")), Some(value(*i)), ts))
            .collect();
        let base = node.append(topic, 0, encode(-1, -1, -1, &recs, false, false));
        assert_eq!(base, chunk[0] as i64, "offsets continue in order");
    }
}

/// Reads `topic`-0 and checks that it holds exactly the records `range`,
/// each with its key and value at its offset.
fn check_range(node: &Node, topic: &str, range: std::ops::Range<usize>) {
    let got = node.read_all(topic, 0, range.start as i64, READ_UNCOMMITTED);
    assert_eq!(got.len(), range.len(), "records {range:?} of {topic}");
    for (r, i) in got.iter().zip(range) {
        assert_eq!(r.offset, i as i64, "offset order");
        assert_eq!(
            r.value.as_deref(),
            Some(value(i).as_str()),
            "value at offset {i}"
        );
        assert_eq!(
            r.key.as_deref(),
            Some(format!("k{i}").as_str()),
            "key at offset {i}"
        );
    }
}

/// A topic created before a clean restart is served after it, with its
/// partitions and records; the metadata log and the partition directories
/// are on disk. (Was restart_recovery.rs `topics_survive_restart`.)
#[test]
fn topics_survive_restart() {
    let mut node = Node::start(&[]);
    node.create_topic("kept", 3, &[]);
    append_range(&node, "kept", 0..10, 1);
    node.stop();
    assert!(node
        .data_dir()
        .join("__cluster_metadata-0/quorum.log")
        .exists());
    assert!(node.partition_dir("kept", 2).is_dir());

    node.start_again();
    node.wait_served("kept", 3);
    assert_eq!(node.watermarks("kept", 0), (0, 10));
    check_range(&node, "kept", 0..10);
}

/// A clean restart keeps every record, the topic's partitions and an empty
/// partition empty; offsets continue after it; a second restart in a row is
/// as clean. (Was restart_recovery.rs `clean_restart_keeps_everything`.)
#[test]
fn clean_restart_keeps_everything() {
    let mut node = Node::start(&[]);
    let topic = "durable";
    node.create_topic(topic, 2, &[]);
    append_range(&node, topic, 0..1000, 50);

    node.restart();
    node.wait_served(topic, 2);
    assert_eq!(node.watermarks(topic, 0), (0, 1000));
    let partitions = node.on(0, |s| async move {
        s.metadata().topic("durable").map(|t| t.partitions)
    });
    assert_eq!(partitions, Some(2), "topic keeps its 2 partitions");
    assert_eq!(
        node.watermarks(topic, 1),
        (0, 0),
        "untouched partition stays empty"
    );
    check_range(&node, topic, 0..1000);

    append_range(&node, topic, 1000..1100, 10);
    check_range(&node, topic, 0..1100);

    // A second restart cycle in a row is just as clean.
    node.restart();
    assert_eq!(node.watermarks(topic, 0), (0, 1100));
}

/// Appends `groups` batches of 1..=groups records each; the total.
fn append_batches(node: &Node, topic: &str, groups: usize) -> usize {
    let mut next = 0;
    for g in 1..=groups {
        append_range(node, topic, next..next + g, g);
        next += g;
    }
    next
}

/// A torn last batch (its final bytes cut while the node was down) is
/// truncated at the next start: the log ends at the last whole batch, the
/// torn bytes are gone from the segment, and producing continues there.
/// (Was restart_recovery.rs `torn_last_batch_is_truncated_on_restart`.)
#[test]
fn torn_last_batch_is_truncated_on_restart() {
    let mut node = Node::start(&[]);
    let topic = "torn";
    node.create_topic(topic, 1, &[]);
    let total = append_batches(&node, topic, 8);
    node.stop();

    let seg = node.segment_path(topic, 0);
    let batches = segment_batches(&seg);
    let file_len = std::fs::metadata(&seg).unwrap().len() as usize;
    let &(pos, base, count, len) = batches.last().expect("at least one batch");
    assert_eq!(
        pos + len,
        file_len,
        "segment ends with a whole batch after a clean stop"
    );
    assert_eq!((base + count) as usize, total, "batches cover every record");
    assert!(
        batches.len() >= 2,
        "need several batches, got {}",
        batches.len()
    );

    // Tear the last batch: cut its final 5 bytes.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .unwrap()
        .set_len((file_len - 5) as u64)
        .unwrap();

    node.start_again();
    node.wait_served(topic, 1);
    assert_eq!(
        node.watermarks(topic, 0).1,
        base,
        "log recovered to the last whole batch"
    );
    check_range(&node, topic, 0..base as usize);
    assert_eq!(
        std::fs::metadata(&seg).unwrap().len() as usize,
        pos,
        "the torn bytes are gone from the segment"
    );
    // Producing continues at the recovered end; the lost records are
    // produced again with their original values.
    append_range(&node, topic, base as usize..total, 100);
    check_range(&node, topic, 0..total);
}

/// After an unclean shutdown (no clean-shutdown marker) a last batch with a
/// bad CRC32C is dropped; producing continues before it. (Was
/// restart_recovery.rs `corrupt_last_batch_is_dropped_after_unclean_shutdown`.)
#[test]
fn corrupt_last_batch_is_dropped_after_unclean_shutdown() {
    let mut node = Node::start(&[]);
    let topic = "crc";
    node.create_topic(topic, 1, &[]);
    let total = append_batches(&node, topic, 6);
    node.stop();

    let seg = node.segment_path(topic, 0);
    let &(pos, base, _, len) = segment_batches(&seg).last().unwrap();
    // Flip one byte in the last record's value: the CRC32C no longer
    // matches. Remove the clean-shutdown marker so recovery validates CRCs.
    let mut data = std::fs::read(&seg).unwrap();
    data[pos + len - 3] ^= 0xff;
    std::fs::write(&seg, &data).unwrap();
    let marker = node.partition_dir(topic, 0).join(".clean_shutdown");
    if marker.exists() {
        std::fs::remove_file(&marker).unwrap();
    }

    node.start_again();
    node.wait_served(topic, 1);
    assert_eq!(
        node.watermarks(topic, 0).1,
        base,
        "recovery stops before the corrupt batch"
    );
    check_range(&node, topic, 0..base as usize);
    append_range(&node, topic, base as usize..total, 100);
    check_range(&node, topic, 0..total);
}

// ================================================================ offsets, timestamps, produce rules

/// ListOffsets by timestamp gives the first offset whose record's
/// timestamp is at or after the one asked, across batches; none past the
/// newest. (Was produce_consume.rs `list_offsets_by_timestamp`.)
#[test]
fn list_offsets_by_timestamp() {
    let node = Node::start(&[]);
    let topic = "times";
    node.create_topic(topic, 1, &[]);
    let base_ts = now_ms() - 600_000;
    // Timestamps base, base+10, ..., base+190 at offsets 0..19, as four
    // batches.
    for chunk in 0..4 {
        let recs: Vec<Rec> = (chunk * 5..chunk * 5 + 5)
            .map(|i| {
                (
                    Some("k".to_string()),
                    Some(format!("v{i}")),
                    base_ts + 10 * i,
                )
            })
            .collect();
        node.append(topic, 0, encode(-1, -1, -1, &recs, false, false));
    }
    assert_eq!(node.watermarks(topic, 0), (0, 20));
    let cases: [(i64, Option<i64>); 7] = [
        (base_ts - 100_000, Some(0)),
        (base_ts, Some(0)),
        (base_ts + 1, Some(1)),
        (base_ts + 55, Some(6)),
        (base_ts + 60, Some(6)),
        (base_ts + 190, Some(19)),
        (base_ts + 191, None),
    ];
    // Collect every mismatch so one run shows the whole picture.
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|&(ts, want)| {
            let got = node.list_offset(topic, 0, ts, READ_UNCOMMITTED);
            (got != want).then(|| {
                format!(
                    "timestamp base+{}: want {want:?}, got {got:?}",
                    ts - base_ts
                )
            })
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "ListOffsets by timestamp (first offset with timestamp >= t):\n{}",
        wrong.join("\n")
    );
    assert_eq!(
        node.list_offset(topic, 0, now_ms() + 86_400_000, READ_UNCOMMITTED),
        None,
        "future timestamp"
    );
}

/// ListOffsets by timestamp gives the first record at or after the log
/// start offset, as Kafka does: after DeleteRecords moved the log start
/// into the middle of a batch, a timestamp older than every record answers
/// the log start, not the batch's first (deleted) record. (Was parity.rs
/// `timestamp_lookup_starts_at_the_log_start`.)
#[test]
fn timestamp_lookup_starts_at_the_log_start() {
    let node = Node::start(&[]);
    let topic = "ts-below-start";
    node.create_topic(topic, 1, &[]);
    // One batch of 20 records, timestamps 1_000_000 + i.
    let kv: Vec<(Option<&str>, Option<&str>)> = (0..20).map(|_| (Some("k"), Some("v"))).collect();
    node.append(topic, 0, keyed(&kv, 1_000_000));
    let low = node.on_partition(topic, 0, |p| async move {
        p.delete_records(10).await.map_err(|e| e.code())
    });
    assert_eq!(low, Ok(10), "DeleteRecords to 10");
    assert_eq!(
        node.list_offset(topic, 0, 0, READ_UNCOMMITTED),
        Some(10),
        "older than every record"
    );
    assert_eq!(
        node.list_offset(topic, 0, 1_000_005, READ_UNCOMMITTED),
        Some(10),
        "a deleted record's time"
    );
    assert_eq!(
        node.list_offset(topic, 0, 1_000_015, READ_UNCOMMITTED),
        Some(15)
    );
    assert_eq!(
        node.list_offset(topic, 0, 2_000_000, READ_UNCOMMITTED),
        None,
        "newer than every record"
    );
}

/// CreateTime batches outside the topic's timestamp window
/// (`message.timestamp.after.max.ms`, `message.timestamp.before.max.ms`)
/// are refused with INVALID_TIMESTAMP; a wider window takes them; a
/// LogAppendTime topic ignores the window. (Was parity.rs
/// `timestamps_outside_the_topic_window_are_refused`.)
#[test]
fn timestamps_outside_the_topic_window_are_refused() {
    let node = Node::start(&[]);
    node.create_topic("ts-default", 1, &[]);
    node.create_topic(
        "ts-wide",
        1,
        &[("message.timestamp.after.max.ms", "10800000")],
    );
    node.create_topic(
        "ts-recent",
        1,
        &[("message.timestamp.before.max.ms", "60000")],
    );
    node.create_topic(
        "ts-append",
        1,
        &[
            ("message.timestamp.type", "LogAppendTime"),
            ("message.timestamp.before.max.ms", "0"),
        ],
    );
    let hour = 3_600_000;
    let send = |topic: &str, ts: i64| {
        error_code(&node.produce(0, topic, 0, batch(-1, -1, -1, 1, ts, false), None))
    };
    assert_eq!(
        send("ts-default", now_ms() + 2 * hour),
        INVALID_TIMESTAMP,
        "2 h ahead, default 1 h window"
    );
    assert_eq!(send("ts-wide", now_ms() + 2 * hour), NONE, "3 h window");
    assert_eq!(
        send("ts-recent", now_ms() - hour),
        INVALID_TIMESTAMP,
        "an hour old"
    );
    assert_eq!(send("ts-recent", now_ms() - 1000), NONE, "recent");
    assert_eq!(
        send("ts-append", 1),
        NONE,
        "LogAppendTime ignores the window"
    );
}

/// `min.insync.replicas` above the ISR refuses acks=all with
/// NOT_ENOUGH_REPLICAS; acks=1 appends. (Was parity.rs
/// `min_insync_replicas_above_one_refuses_acks_all`.)
#[test]
fn min_insync_replicas_above_one_refuses_acks_all() {
    let node = Node::start(&[]);
    node.create_topic("isr2", 1, &[("min.insync.replicas", "2")]);
    let records = || batch(-1, -1, -1, 1, now_ms(), false);
    let all = node.produce_acks(0, "isr2", 0, records(), None, true);
    assert_eq!(error_code(&all), NOT_ENOUGH_REPLICAS, "acks=all");
    let one = node.produce_acks(0, "isr2", 0, records(), None, false);
    assert_eq!((error_code(&one), one.base_offset), (NONE, 0), "acks=1");
}

/// `producer.id.expiration.check.interval.ms` sets how often idle producers
/// are forgotten (it used to ride on the 5-minute retention pass): an
/// idempotent producer idle for `producer.id.expiration.ms` leaves
/// DescribeProducers. (Was parity.rs
/// `idle_producers_expire_on_their_own_interval`.)
#[test]
fn idle_producers_expire_on_their_own_interval() {
    let node = Node::start(&[
        "producer.id.expiration.ms=1000",
        "producer.id.expiration.check.interval.ms=200",
        "log.initial.task.delay.ms=0",
    ]);
    node.create_topic("pids", 1, &[]);
    // InitProducerId without a transactional id: a fresh id, epoch 0.
    let pid = node.on(0, |s| async move {
        fjord::txn::coordinator::new_producer_id(&s)
            .await
            .map_err(|e| e.code())
    });
    let pid = pid.expect("a producer id");
    node.append("pids", 0, batch(pid, 0, 0, 1, now_ms(), false));
    assert_eq!(node.describe_producers("pids", 0).len(), 1);
    node.wait_until("the idle producer to expire", || {
        node.describe_producers("pids", 0).is_empty()
    });
}

/// The first retention pass runs `log.initial.task.delay.ms` after
/// start-up, not a whole `log.retention.check.interval.ms` (5 minutes by
/// default) later: segments already past retention go soon after a
/// restart. The first run waits 10 minutes before its first pass, so
/// nothing is deleted before the restart whatever the machine's speed.
/// (Was parity.rs `retention_runs_soon_after_a_restart`.)
#[test]
fn retention_runs_soon_after_a_restart() {
    let mut node = Node::start(&[
        "log.initial.task.delay.ms=600000",
        "log.segment.delete.delay.ms=0",
    ]);
    let topic = "old";
    node.create_topic(
        topic,
        1,
        &[("retention.ms", "60000"), ("segment.bytes", "1024")],
    );
    let hour_ago = now_ms() - 3_600_000;
    for _ in 0..5 {
        node.append(topic, 0, values_batch(&["x".repeat(600)], hour_ago));
    }
    assert_eq!(node.watermarks(topic, 0), (0, 5), "no retention pass yet");
    node.stop();
    node.set_overrides(&[
        "log.initial.task.delay.ms=200",
        "log.segment.delete.delay.ms=0",
    ]);
    node.start_again();
    node.wait_served(topic, 1);
    // Every segment is past retention (the active one is rolled first, as
    // in Kafka), so the log starts at its end.
    node.wait_until("retention after the restart", || {
        node.watermarks(topic, 0) == (5, 5)
    });
}

// ================================================================ retention, compaction

/// Sum of the `.log` file sizes of a partition directory.
fn log_bytes(dir: &std::path::Path) -> u64 {
    segment_files(dir)
        .iter()
        .map(|(_, p)| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum()
}

/// `{prefix}-{i:06}-` and `pad` x's.
fn padded(prefix: &str, i: usize, pad: usize) -> String {
    format!("{prefix}-{i:06}-{}", "x".repeat(pad))
}

/// retention.bytes deletes the oldest segments until the partition is
/// within one segment of the limit; the log start offset becomes the first
/// remaining segment's base offset, reads below it are OFFSET_OUT_OF_RANGE
/// and from it give the rest, and the size the partition reports
/// (DescribeLogDirs') matches the files on disk. (Was lifecycle.rs
/// `retention_by_size_shrinks_the_partition`.)
#[test]
fn retention_by_size_shrinks_the_partition() {
    let node = Node::start(FAST_RETENTION);
    let topic = "sized";
    node.create_topic(topic, 1, &[("segment.bytes", "1024")]);
    let dir = node.partition_dir(topic, 0);
    let vs: Vec<String> = (0..60).map(|i| padded("s", i, 120)).collect();
    for v in &vs {
        node.append(topic, 0, values_batch(std::slice::from_ref(v), now_ms()));
    }
    let size = |node: &Node| node.with_partition(topic, 0, |p| p.size_bytes());
    let size_before = size(&node);
    assert_eq!(size_before, log_bytes(&dir), "reported size vs files");
    assert!(size_before > 8 * 1024, "60 records: {size_before} bytes");
    assert_eq!(node.watermarks(topic, 0), (0, 60));

    let limit: u64 = 2048;
    node.set_topic_configs(topic, &[("retention.bytes", &limit.to_string())]);
    let low = node.poll("size retention", || {
        let (low, high) = node.watermarks(topic, 0);
        let (size, pending) = (size(&node), pending_deletes(&dir));
        if low > 0 && pending.is_empty() && size < limit + 1024 {
            assert_eq!(high, 60, "retention does not touch the high watermark");
            Ok(low)
        } else {
            Err(format!(
                "watermarks ({low}, {high}), size {size}, pending {pending:?}"
            ))
        }
    });
    let size_after = size(&node);
    assert!(size_after < size_before);
    assert_eq!(size_after, log_bytes(&dir), "reported size vs files");
    assert_eq!(
        segment_files(&dir)[0].0,
        low,
        "the log start is the first remaining segment's base offset"
    );
    let (read, _) = node.fetch(topic, 0, 0, READ_UNCOMMITTED);
    assert_eq!(
        read.error.as_ref().map(|e| e.code()),
        Some(OFFSET_OUT_OF_RANGE)
    );
    assert_eq!(read.log_start_offset, low);
    assert_eq!(
        node.values(topic, 0, low, READ_UNCOMMITTED),
        vs[low as usize..].to_vec()
    );
    assert_segments_intact(&dir);
}

/// cleanup.policy=compact keeps only the latest record per key in closed
/// segments, at its original offset; a tombstone stays (delete.retention.ms
/// has not passed); unique keys stay; the compacted log survives a restart
/// and holds valid batches. (Was lifecycle.rs
/// `compaction_keeps_the_latest_record_per_key`.)
#[test]
fn compaction_keeps_the_latest_record_per_key() {
    let mut node = Node::start(&[
        "log.initial.task.delay.ms=0",
        "log.cleaner.backoff.ms=200",
        "log.retention.check.interval.ms=200",
        "log.segment.delete.delay.ms=0",
    ]);
    let topic = "compacted";
    node.create_topic(
        topic,
        1,
        &[
            ("cleanup.policy", "compact"),
            ("segment.bytes", "1024"),
            ("min.cleanable.dirty.ratio", "0.01"),
            ("min.compaction.lag.ms", "0"),
        ],
    );
    let dir = node.partition_dir(topic, 0);
    const KEYS: usize = 8;
    const ROUNDS: usize = 8;
    // key → (offset, value) of its latest record; None value = tombstone.
    let mut latest: BTreeMap<String, (i64, Option<String>)> = BTreeMap::new();
    let mut send = |key: &str, value: Option<&str>| {
        let o = node.append(topic, 0, keyed(&[(Some(key), value)], now_ms()));
        latest.insert(key.to_string(), (o, value.map(str::to_string)));
    };
    for round in 0..ROUNDS {
        for k in 0..KEYS {
            let key = format!("key-{k}");
            send(
                &key,
                Some(&format!("{key}-round-{round}-{}", "v".repeat(40))),
            );
        }
    }
    send(&format!("key-{}", KEYS - 1), None);
    // Unique keys push every record above into closed segments.
    for i in 0..20 {
        let key = format!("filler-{i:02}");
        send(&key, Some(&format!("{key}-{}", "f".repeat(60))));
    }
    let high = (KEYS * ROUNDS + 1 + 20) as i64;
    assert_eq!(node.watermarks(topic, 0), (0, high));

    // The view a fully compacted log gives: one record per key, in offset
    // order, at the offset it was written at.
    let mut expected: Vec<(i64, Option<String>, Option<String>)> = latest
        .iter()
        .map(|(k, (o, v))| (*o, Some(k.clone()), v.clone()))
        .collect();
    expected.sort();
    let view = |node: &Node| -> Vec<(i64, Option<String>, Option<String>)> {
        node.read_all(topic, 0, 0, READ_UNCOMMITTED)
            .into_iter()
            .map(|r| (r.offset, r.key, r.value))
            .collect()
    };
    node.poll("the compacted view", || {
        let v = view(&node);
        (v == expected).then_some(()).ok_or(format!(
            "{} records (want {}), first {:?}",
            v.len(),
            expected.len(),
            v.first()
        ))
    });
    assert_eq!(node.watermarks(topic, 0), (0, high), "offsets unchanged");
    assert_segments_intact(&dir);

    node.restart();
    node.wait_served(topic, 1);
    assert_eq!(view(&node), expected, "compacted log after a restart");
    node.stop();
    assert_segments_intact(&dir);
}
