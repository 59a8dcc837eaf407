//! Coordinator failover on a three-node cluster of real `fjord` processes,
//! driven by librdkafka: a consumer group's committed offsets survive the
//! group coordinator's broker killed with SIGKILL (a new member of the group,
//! bootstrapped to the survivors, sees exactly those offsets and consumes
//! exactly the rest), and a consume-transform-produce pipeline with a
//! transactional producer keeps running through the transaction
//! coordinator's broker killed (aborting and retrying what the kill broke),
//! its read_committed output holding every input record transformed exactly
//! once and nothing of an aborted transaction.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::cluster::{try_kp_call, Cluster};
use common::layout::{admin, layout_on, wait_topic};
use common::{
    admin_opts, consume_n, group_client_config, poll_until, send_to_partitions, CLIENT_TIMEOUT,
};
use kafka_protocol::messages::FindCoordinatorRequest;
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Message, OwnedMessage};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};

/// Bounds for what takes a few seconds (a fence after the 3 s session
/// timeout, an election, a coordinator loading its partition, a restart).
const DEADLINE: Duration = Duration::from_secs(60);
/// Partitions of the internal topics (small, so they are created quickly).
const INTERNAL_PARTITIONS: i32 = 4;
/// Broker settings of every node (kept over restarts).
const OVERRIDES: &[&str] = &[
    "offsets.topic.num.partitions=4",
    "transaction.state.log.num.partitions=4",
    "group.initial.rebalance.delay.ms=0",
    "group.min.session.timeout.ms=1000",
];
const OFFSETS_TOPIC: &str = "__consumer_offsets";
const TXN_TOPIC: &str = "__transaction_state";
/// Partitions of the test topics.
const PARTITIONS: i32 = 3;
/// FindCoordinator key types.
const GROUP_KEY: i8 = 0;
const TXN_KEY: i8 = 1;

// ------------------------------------------------------------- cluster

/// Creates `topic` (3 partitions, RF 3, `min.insync.replicas=2`) and waits
/// until every node shows it with a leader per partition.
async fn create_durable(c: &Cluster, topic: &str) {
    let a = admin(c, &c.bootstrap_all());
    let t = NewTopic::new(topic, PARTITIONS, TopicReplication::Fixed(3))
        .set("min.insync.replicas", "2");
    let r = a.create_topics(&[t], &admin_opts()).await.unwrap();
    assert!(r[0].is_ok(), "{r:?}");
    wait_topic(c, &c.ids(), topic, PARTITIONS as usize);
}

/// Kafka's partition of a group id or transactional id in its internal
/// topic: `abs(String.hashCode(key)) % partitions`.
fn key_partition(key: &str, partitions: i32) -> i32 {
    let mut h: i32 = 0;
    for unit in key.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(i32::from(unit));
    }
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % partitions
}

/// FindCoordinator (v3) for `key` of `key_type` asked of node `id`: the
/// coordinator's node id, or the error seen.
fn find_coordinator(c: &Cluster, id: i32, key_type: i8, key: &str) -> Result<i32, String> {
    let req = FindCoordinatorRequest::default()
        .with_key(StrBytes::from_string(key.to_string()))
        .with_key_type(key_type);
    let mut s = TcpStream::connect(c.bootstrap(id)).map_err(|e| format!("node {id}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    let r = try_kp_call(&mut s, 3, 1, &req).map_err(|e| format!("node {id}: {e}"))?;
    if r.error_code != 0 {
        return Err(format!(
            "node {id}: FindCoordinator error {} ({:?})",
            r.error_code, r.error_message
        ));
    }
    Ok(r.node_id.0)
}

/// What every node of `asked` says of `key`'s coordinator: the node all of
/// them name, one not in `not`, when it is the leader of the key's
/// partition of `internal` as Metadata shows it; with that partition's ISR.
fn try_coordinator(
    c: &Cluster,
    asked: &[i32],
    not: &[i32],
    key_type: i8,
    key: &str,
    internal: &str,
) -> Result<(i32, Vec<i32>), String> {
    let partition = key_partition(key, INTERNAL_PARTITIONS);
    let mut seen = BTreeSet::new();
    for &id in asked {
        seen.insert(find_coordinator(c, id, key_type, key)?);
    }
    let coordinator = match seen.iter().collect::<Vec<_>>()[..] {
        [&k] if !not.contains(&k) => k,
        _ => return Err(format!("coordinators named: {seen:?}")),
    };
    let layout = layout_on(c, asked[0], internal)?.ok_or(format!("no {internal}"))?;
    let p = layout
        .parts
        .get(&partition)
        .ok_or(format!("no {internal}-{partition}"))?;
    if p.leader != coordinator {
        return Err(format!(
            "coordinator {coordinator}, {internal}-{partition} led by {}",
            p.leader
        ));
    }
    Ok((coordinator, p.isr.clone()))
}

/// [`try_coordinator`] polled until it answers (at most [`DEADLINE`]).
fn coordinator_on(
    c: &Cluster,
    asked: &[i32],
    not: &[i32],
    key_type: i8,
    key: &str,
    internal: &str,
) -> (i32, Vec<i32>) {
    poll_until(
        DEADLINE,
        &format!("coordinator of {key:?} (not {not:?}) on {asked:?}"),
        || try_coordinator(c, asked, not, key_type, key, internal),
    )
}

/// Waits until every node lists every broker alive and every partition of
/// `topics` (name, partitions) has a leader and all three replicas in sync.
fn wait_healthy(c: &mut Cluster, topics: &[(&str, i32)]) {
    let all = c.ids();
    c.wait_brokers(&all, DEADLINE);
    let want: BTreeSet<i32> = all.iter().copied().collect();
    poll_until(DEADLINE, "every partition led with a full ISR", || {
        for &id in &all {
            for &(topic, parts) in topics {
                let l = layout_on(c, id, topic)?.ok_or(format!("node {id}: no {topic}"))?;
                if l.parts.len() != parts as usize {
                    return Err(format!(
                        "node {id}: {topic} has {} partitions",
                        l.parts.len()
                    ));
                }
                for (p, s) in &l.parts {
                    let isr: BTreeSet<i32> = s.isr.iter().copied().collect();
                    if s.leader < 0 || isr != want {
                        return Err(format!(
                            "node {id}: {topic}-{p} leader {} ISR {:?}",
                            s.leader, s.isr
                        ));
                    }
                }
            }
        }
        Ok(())
    });
}

/// The bootstrap list of the nodes `ids`.
fn bootstrap_of(c: &Cluster, ids: &[i32]) -> String {
    ids.iter()
        .map(|&id| c.bootstrap(id))
        .collect::<Vec<_>>()
        .join(",")
}

// ------------------------------------------------------------- clients

/// An idempotent acks=all producer on every node.
fn producer(c: &Cluster) -> FutureProducer {
    c.client_config(&c.bootstrap_all())
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .set("message.timeout.ms", "60000")
        .set("linger.ms", "2")
        .create()
        .expect("create producer")
}

/// `count` records `{tag}-{i}`, record `i` to partition `i % PARTITIONS`.
fn values(tag: &str, count: usize) -> Vec<(i32, String)> {
    (0..count)
        .map(|i| ((i as i32) % PARTITIONS, format!("{tag}-{i:04}")))
        .collect()
}

/// `(partition, offset, value)` of a consumed message.
fn triple(m: &OwnedMessage) -> (i32, i64, String) {
    (
        m.partition(),
        m.offset(),
        String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned(),
    )
}

/// The committed offsets of the consumer's group for every partition of
/// `topic` (OffsetFetch through librdkafka): `None` where nothing is
/// committed. An error of the call or of a partition (the coordinator
/// moving or loading) is given back for the caller to retry.
fn try_committed<C: Consumer>(
    consumer: &C,
    topic: &str,
) -> Result<BTreeMap<i32, Option<i64>>, String> {
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition(topic, p);
    }
    let got = consumer
        .committed_offsets(tpl, Duration::from_secs(5))
        .map_err(|e| format!("committed_offsets: {e}"))?;
    let mut out = BTreeMap::new();
    for e in got.elements() {
        if let Err(err) = e.error() {
            return Err(format!("partition {}: {err}", e.partition()));
        }
        let off = match e.offset() {
            Offset::Offset(o) => Some(o),
            Offset::Invalid => None,
            other => return Err(format!("partition {}: offset {other:?}", e.partition())),
        };
        out.insert(e.partition(), off);
    }
    Ok(out)
}

/// [`try_committed`] retried until it answers (at most [`DEADLINE`]).
fn committed<C: Consumer>(consumer: &C, topic: &str, what: &str) -> BTreeMap<i32, Option<i64>> {
    poll_until(DEADLINE, what, || try_committed(consumer, topic))
}

/// High watermark of every partition of `topic`.
fn high_watermarks(consumer: &BaseConsumer, topic: &str) -> BTreeMap<i32, i64> {
    (0..PARTITIONS)
        .map(|p| {
            let (_, hw) = poll_until(DEADLINE, &format!("watermarks of {topic}-{p}"), || {
                consumer
                    .fetch_watermarks(topic, p, CLIENT_TIMEOUT)
                    .map_err(|e| e.to_string())
            });
            (p, hw)
        })
        .collect()
}

/// The consumer's position per partition (those with one).
fn positions<C: Consumer>(consumer: &C) -> BTreeMap<i32, i64> {
    consumer
        .position()
        .expect("position")
        .elements()
        .iter()
        .filter_map(|e| match e.offset() {
            Offset::Offset(o) => Some((e.partition(), o)),
            _ => None,
        })
        .collect()
}

/// Polls `consumer` until its position on every partition is `end`
/// (control records and aborted records move it too); `start` stands for
/// a partition it has no position on yet (nothing read there: it is where
/// it started). Any message on the way fails the test.
fn wait_at_end(
    consumer: &BaseConsumer,
    start: &BTreeMap<i32, i64>,
    end: &BTreeMap<i32, i64>,
    what: &str,
) {
    poll_until(DEADLINE, what, || {
        if let Some(r) = consumer.poll(Duration::from_millis(100)) {
            let m = r.unwrap_or_else(|e| panic!("{what}: consumer error {e}"));
            panic!(
                "{what}: unexpected extra record {}@{}: {:?}",
                m.partition(),
                m.offset(),
                m.payload().map(String::from_utf8_lossy)
            );
        }
        let mut at = start.clone();
        at.extend(positions(consumer));
        (&at == end)
            .then_some(())
            .ok_or(format!("positions {at:?}, end {end:?}"))
    });
}

// ================================================================= test 1

/// A group member consumes half of 300 records (3 partitions, RF 3,
/// `min.insync.replicas=2`) and commits synchronously; the group
/// coordinator's broker (the leader of the group's `__consumer_offsets`
/// partition) is killed with SIGKILL. A new member of the group,
/// bootstrapped to the two survivors, sees exactly the committed offsets
/// once the coordinator has moved, and consumes exactly the other half.
/// The killed broker starts again and every partition gets its full ISR
/// back; the group's final offsets are served as committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_offsets_survive_the_coordinator_killed() {
    let started = Instant::now();
    let mut c = Cluster::start(3, OVERRIDES);
    let (topic, group) = ("offsets-failover", "failover-group");
    create_durable(&c, topic).await;
    let records = values("v", 300);
    let sent = send_to_partitions(&producer(&c), topic, &records, DEADLINE).await;
    let all = c.ids();

    // The first member: half of the records, committed synchronously.
    let c1: BaseConsumer = group_client_config(&c.bootstrap_all(), group, &[])
        .create()
        .expect("create consumer");
    c1.subscribe(&[topic]).expect("subscribe");
    let first: Vec<(i32, i64, String)> = consume_n(&c1, sent.len() / 2, DEADLINE)
        .iter()
        .map(triple)
        .collect();
    // The coordinator, its offsets partition fully in sync.
    let (coordinator, isr) = coordinator_on(&c, &all, &[], GROUP_KEY, group, OFFSETS_TOPIC);
    poll_until(DEADLINE, "the group's offsets partition in sync", || {
        let (k, isr) = try_coordinator(&c, &all, &[], GROUP_KEY, group, OFFSETS_TOPIC)?;
        (k == coordinator && isr.len() == all.len())
            .then_some(())
            .ok_or(format!("coordinator {k}, ISR {isr:?}"))
    });
    eprintln!("group coordinator: node {coordinator} (ISR {isr:?})");
    // The commit is acknowledged (written to the ISR), and the coordinator's
    // broker is killed at once.
    c1.commit_consumer_state(CommitMode::Sync)
        .expect("synchronous commit");
    c.kill9(coordinator);
    let killed = Instant::now();
    // What was consumed of each partition is a prefix: offsets 0..k.
    let mut want: BTreeMap<i32, Option<i64>> = (0..PARTITIONS).map(|p| (p, None)).collect();
    for p in 0..PARTITIONS {
        let offs: Vec<i64> = first.iter().filter(|r| r.0 == p).map(|r| r.1).collect();
        assert_eq!(
            offs,
            (0..offs.len() as i64).collect::<Vec<_>>(),
            "partition {p}"
        );
        if !offs.is_empty() {
            want.insert(p, Some(offs.len() as i64));
        }
    }
    // The first member leaves (through the new coordinator).
    drop(c1);
    let survivors: Vec<i32> = all
        .iter()
        .copied()
        .filter(|&id| id != coordinator)
        .collect();
    let (moved_to, _) = coordinator_on(
        &c,
        &survivors,
        &[coordinator],
        GROUP_KEY,
        group,
        OFFSETS_TOPIC,
    );
    eprintln!(
        "group coordinator moved to node {moved_to} {:?} after the kill",
        killed.elapsed()
    );

    // A new member on the survivors: exactly the committed offsets, then
    // exactly the rest.
    let c2: BaseConsumer = group_client_config(&bootstrap_of(&c, &survivors), group, &[])
        .create()
        .expect("create consumer");
    assert_eq!(
        committed(&c2, topic, "committed offsets from the new coordinator"),
        want,
        "committed offsets after the coordinator's broker was killed"
    );
    eprintln!(
        "committed offsets served again {:?} after the kill",
        killed.elapsed()
    );
    c2.subscribe(&[topic]).expect("subscribe");
    let rest: Vec<(i32, i64, String)> = consume_n(&c2, sent.len() - first.len(), DEADLINE)
        .iter()
        .map(triple)
        .collect();
    let mut want_rest: Vec<(i32, i64, String)> = sent
        .iter()
        .filter(|(p, o, _)| want[p].is_none_or(|c| *o >= c))
        .cloned()
        .collect();
    want_rest.sort();
    let mut got_rest = rest.clone();
    got_rest.sort();
    assert_eq!(
        got_rest, want_rest,
        "the new member reads exactly what was not committed"
    );
    let hw = high_watermarks(&c2, topic);
    let start: BTreeMap<i32, i64> = want.iter().map(|(p, o)| (*p, o.unwrap_or(0))).collect();
    wait_at_end(&c2, &start, &hw, "the new member at the end of the topic");
    c2.commit_consumer_state(CommitMode::Sync)
        .expect("synchronous commit on the new coordinator");
    drop(c2);

    // The killed broker comes back; the cluster heals.
    c.start_node(coordinator);
    wait_healthy(
        &mut c,
        &[(topic, PARTITIONS), (OFFSETS_TOPIC, INTERNAL_PARTITIONS)],
    );
    let c3: BaseConsumer = group_client_config(&c.bootstrap(coordinator), group, &[])
        .create()
        .expect("create consumer");
    let end: BTreeMap<i32, Option<i64>> = hw.iter().map(|(p, o)| (*p, Some(*o))).collect();
    assert_eq!(
        committed(&c3, topic, "committed offsets after the restart"),
        end,
        "the final offsets, asked through the restarted broker"
    );
    eprintln!(
        "committed_offsets_survive_the_coordinator_killed: {:?}",
        started.elapsed()
    );
}
// ================================================================= test 2

const INPUT: &str = "pipe-in";
const OUTPUT: &str = "pipe-out";
const TXN_ID: &str = "pipe-tx";
/// Records per transaction at most.
const BATCH: usize = 12;
/// How long the whole pipeline may take, the kill included.
const PIPELINE_DEADLINE: Duration = Duration::from_secs(180);
/// Errors the pipeline prints as they come (all are kept).
const PRINTED_ERRORS: usize = 20;

/// The output value of input `value` written in transaction `attempt`.
fn transform(value: &str, attempt: u64) -> String {
    format!("T({value})#{attempt}")
}

/// What the pipeline and the test share while it runs.
#[derive(Default)]
struct Shared {
    /// Input records committed so far.
    progress: AtomicUsize,
    /// Set when the test ends (or fails): the pipeline returns.
    stop: AtomicBool,
    /// Every error the pipeline met, in order.
    errors: Mutex<Vec<String>>,
}

impl Shared {
    /// Records an error (printing the first few at once, to show in the
    /// output of a test that fails or hangs).
    fn note(&self, what: String) {
        let mut errors = self.errors.lock().unwrap();
        if errors.len() < PRINTED_ERRORS {
            eprintln!("pipeline: {what}");
        }
        errors.push(what);
    }

    fn last_error(&self) -> Option<String> {
        self.errors.lock().unwrap().last().cloned()
    }

    fn error_count(&self) -> usize {
        self.errors.lock().unwrap().len()
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

/// Stops the pipeline when dropped (the test returning or panicking).
struct StopOnDrop(Arc<Shared>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::SeqCst);
    }
}

/// What the pipeline did, by transaction attempt.
#[derive(Debug, Default)]
struct Outcome {
    /// Committed (commit_transaction succeeded).
    committed: BTreeSet<u64>,
    /// Aborted (abort_transaction succeeded, or the producer failed before
    /// asking to commit: its successor's InitProducerId aborts it).
    aborted: BTreeSet<u64>,
    /// The producer failed fatally while committing: either outcome.
    unknown: BTreeSet<u64>,
    /// Producers created after the first.
    recreated: usize,
}

/// Why a transaction did not commit.
enum Failure {
    /// Aborted; the producer goes on.
    Aborted(String),
    /// The producer is unusable (fatal error, fenced); `committing`: the
    /// failure came after the commit was asked for.
    Fatal { why: String, committing: bool },
}

/// How a transactional call's error is handled.
#[derive(PartialEq)]
enum Kind {
    Fatal,
    Abort,
    Retry,
}

/// Classifies a transactional call's error as librdkafka does.
fn txn_kind(e: &KafkaError) -> (Kind, String) {
    match e {
        KafkaError::Transaction(t) if t.is_fatal() => (Kind::Fatal, t.to_string()),
        KafkaError::Transaction(t) if t.txn_requires_abort() => (Kind::Abort, t.to_string()),
        KafkaError::Transaction(t) if t.is_retriable() => (Kind::Retry, t.to_string()),
        other => (Kind::Abort, other.to_string()),
    }
}

/// The pipeline's clock: the deadline and the test's stop.
struct Run {
    shared: Arc<Shared>,
    deadline: Instant,
}

impl Run {
    /// True while the pipeline may go on waiting and retrying.
    fn live(&self) -> bool {
        Instant::now() < self.deadline && !self.shared.stopped()
    }
}

/// Aborts the open transaction (retrying while librdkafka says so).
fn abort(run: &Run, p: &FutureProducer, why: String) -> Failure {
    loop {
        match p.abort_transaction(Duration::from_secs(30)) {
            Ok(()) => return Failure::Aborted(why),
            Err(e) => match txn_kind(&e) {
                (Kind::Retry, text) if run.live() => {
                    run.shared
                        .note(format!("abort_transaction (retried): {text}"));
                }
                (_, text) => {
                    return Failure::Fatal {
                        why: format!("{why}; abort_transaction: {text}"),
                        committing: false,
                    }
                }
            },
        }
    }
}

/// One transaction: `batch` (partition, offset, value) transformed to
/// `OUTPUT` (same partition), the input offsets after it sent to the
/// transaction for the consumer's group, committed. A retriable error is
/// retried, an abortable one aborts, a fatal one leaves the producer to be
/// replaced.
fn transact(
    run: &Run,
    rt: &tokio::runtime::Runtime,
    p: &FutureProducer,
    consumer: &BaseConsumer,
    attempt: u64,
    batch: &[(i32, i64, String)],
) -> Result<(), Failure> {
    let fail = |e: &KafkaError, step: &str, committing: bool| -> Failure {
        match txn_kind(e) {
            (Kind::Fatal, text) => Failure::Fatal {
                why: format!("{step}: {text}"),
                committing,
            },
            (_, text) => abort(run, p, format!("{step}: {text}")),
        }
    };
    if let Err(e) = p.begin_transaction() {
        return Err(fail(&e, "begin_transaction", false));
    }
    let mut deliveries = Vec::new();
    for (partition, _, value) in batch {
        let out = transform(value, attempt);
        let rec = FutureRecord::<(), _>::to(OUTPUT)
            .partition(*partition)
            .payload(&out);
        match p.send_result(rec) {
            Ok(f) => deliveries.push(f),
            Err((e, _)) => return Err(fail(&e, "send", false)),
        }
    }
    for f in deliveries {
        let r = rt.block_on(async { tokio::time::timeout(Duration::from_secs(90), f).await });
        match r {
            Ok(Ok(Ok(_))) => {}
            Ok(Ok(Err((e, _)))) => return Err(fail(&e, "delivery", false)),
            Ok(Err(_)) => return Err(abort(run, p, "delivery cancelled".into())),
            Err(_) => return Err(abort(run, p, "no delivery report in 90 s".into())),
        }
    }
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    for (partition, offset, _) in batch {
        next.insert(*partition, offset + 1);
    }
    let mut tpl = TopicPartitionList::new();
    for (partition, offset) in &next {
        tpl.add_partition_offset(INPUT, *partition, Offset::Offset(*offset))
            .expect("add partition offset");
    }
    let cgm = consumer.group_metadata().expect("group metadata");
    loop {
        match p.send_offsets_to_transaction(&tpl, &cgm, Duration::from_secs(30)) {
            Ok(()) => break,
            Err(e) => match txn_kind(&e) {
                (Kind::Retry, text) if run.live() => run
                    .shared
                    .note(format!("send_offsets_to_transaction (retried): {text}")),
                _ => return Err(fail(&e, "send_offsets_to_transaction", false)),
            },
        }
    }
    loop {
        match p.commit_transaction(Duration::from_secs(30)) {
            Ok(()) => return Ok(()),
            Err(e) => match txn_kind(&e) {
                (Kind::Retry, text) if run.live() => run
                    .shared
                    .note(format!("commit_transaction (retried): {text}")),
                _ => return Err(fail(&e, "commit_transaction", true)),
            },
        }
    }
}

/// A transactional producer after a successful `init_transactions`
/// (retried while the coordinator moves); `None` once the run is over.
fn init_producer(run: &Run, config: &ClientConfig) -> Option<FutureProducer> {
    while run.live() {
        let p: FutureProducer = config.create().expect("create transactional producer");
        while run.live() {
            match p.init_transactions(Duration::from_secs(30)) {
                Ok(()) => return Some(p),
                Err(e) => {
                    let (kind, text) = txn_kind(&e);
                    run.shared.note(format!("init_transactions: {text}"));
                    if kind != Kind::Retry {
                        break; // a new producer
                    }
                }
            }
        }
    }
    None
}

/// Seeks the consumer to its group's committed offsets (the start where
/// nothing is committed); gives them, `None` once the run is over. A
/// partition not assigned right now starts there anyway when it is.
fn reseek(run: &Run, consumer: &BaseConsumer) -> Option<BTreeMap<i32, i64>> {
    let committed = loop {
        match try_committed(consumer, INPUT) {
            Ok(c) => break c,
            Err(e) if run.live() => {
                run.shared.note(format!("committed offsets: {e}"));
                thread::sleep(Duration::from_millis(50));
            }
            Err(_) => return None,
        }
    };
    let at: BTreeMap<i32, i64> = committed
        .iter()
        .map(|(p, o)| (*p, o.unwrap_or(0)))
        .collect();
    for (p, o) in &at {
        // Fails when the partition is not assigned at the moment.
        let _ = consumer.seek(INPUT, *p, Offset::Offset(*o), Duration::from_secs(5));
    }
    Some(at)
}

/// The pipeline: reads `INPUT` (read_committed, the group of
/// `consumer_config`) and writes each record transformed to `OUTPUT` in
/// transactions of at most [`BATCH`] records, with the input offsets,
/// until the committed offsets reach `end`. A transaction that fails is
/// aborted (or, the producer unusable, a new producer fences it) and the
/// consumer goes back to the committed offsets. Gives `None` when stopped
/// or out of time before the end.
fn pipeline(
    consumer_config: ClientConfig,
    producer_config: ClientConfig,
    end: BTreeMap<i32, i64>,
    shared: Arc<Shared>,
) -> Option<Outcome> {
    let run = Run {
        shared,
        deadline: Instant::now() + PIPELINE_DEADLINE,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let mut out = Outcome::default();
    let consumer: BaseConsumer = consumer_config.create().expect("create consumer");
    consumer.subscribe(&[INPUT]).expect("subscribe");
    let mut producer = init_producer(&run, &producer_config)?;
    // The committed position per partition, and where the next record of
    // each is expected (after the batch being gathered).
    let mut done: BTreeMap<i32, i64> = BTreeMap::new();
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    let mut attempt = 0u64;
    while done != end {
        if !run.live() {
            return None;
        }
        let mut batch: Vec<(i32, i64, String)> = Vec::new();
        let gather = Instant::now() + Duration::from_millis(100);
        let mut jumped = false;
        while batch.len() < BATCH && Instant::now() < gather {
            match consumer.poll(Duration::from_millis(20)) {
                None => {}
                Some(Err(e)) => run.shared.note(format!("consumer: {e}")),
                Some(Ok(m)) => {
                    let r = triple(&m.detach());
                    if next.get(&r.0).is_some_and(|&n| n != r.1) {
                        // A rebalance or a seek moved the position: start
                        // over from the committed offsets.
                        run.shared.note(format!(
                            "record {}@{} where {:?} was expected",
                            r.0,
                            r.1,
                            next.get(&r.0)
                        ));
                        jumped = true;
                        break;
                    }
                    next.insert(r.0, r.1 + 1);
                    batch.push(r);
                }
            }
        }
        if jumped {
            done = reseek(&run, &consumer)?;
            next = done.clone();
            continue;
        }
        if batch.is_empty() {
            continue;
        }
        attempt += 1;
        match transact(&run, &rt, &producer, &consumer, attempt, &batch) {
            Ok(()) => {
                out.committed.insert(attempt);
                done.extend(batch.iter().map(|r| (r.0, r.1 + 1)));
                run.shared.progress.fetch_add(batch.len(), Ordering::SeqCst);
            }
            Err(Failure::Aborted(why)) => {
                run.shared
                    .note(format!("transaction {attempt} aborted: {why}"));
                out.aborted.insert(attempt);
                done = reseek(&run, &consumer)?;
                next = done.clone();
            }
            Err(Failure::Fatal { why, committing }) => {
                run.shared
                    .note(format!("transaction {attempt}, producer unusable: {why}"));
                if committing {
                    out.unknown.insert(attempt);
                } else {
                    out.aborted.insert(attempt);
                }
                drop(producer);
                producer = init_producer(&run, &producer_config)?;
                out.recreated += 1;
                done = reseek(&run, &consumer)?;
                next = done.clone();
            }
        }
    }
    Some(out)
}

/// A group id whose coordinator is a broker other than `not` (the usual
/// case: Kafka spreads the coordinators over the brokers).
fn group_coordinated_elsewhere(c: &Cluster, not: i32) -> (String, i32) {
    let all = c.ids();
    for k in 0..64 {
        let group = format!("pipe-group-{k}");
        let (coordinator, _) = coordinator_on(c, &all, &[], GROUP_KEY, &group, OFFSETS_TOPIC);
        if coordinator != not {
            return (group, coordinator);
        }
    }
    panic!("every group tried is coordinated by node {not}");
}

/// A consume-transform-produce pipeline (read_committed group consumer,
/// transactional producer, input and output with 3 partitions, RF 3,
/// `min.insync.replicas=2`; the group's coordinator on another broker than
/// the transaction coordinator, as is usual) over 600 input records; once
/// a quarter is through, the transaction coordinator's broker (the leader
/// of the transactional id's `__transaction_state` partition) is killed
/// with SIGKILL. The pipeline aborts and retries what the kill broke (a new
/// producer when the old one is unusable) and finishes; a read_committed
/// reader of the output sees every input record transformed exactly once,
/// in input order per partition, none written by an aborted transaction;
/// the group's offsets are the input's end. The killed broker starts again
/// and every partition gets its full ISR back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transactional_pipeline_keeps_running_through_a_coordinator_kill() {
    let started = Instant::now();
    let mut c = Cluster::start(3, OVERRIDES);
    create_durable(&c, INPUT).await;
    create_durable(&c, OUTPUT).await;
    let records = values("in", 600);
    let sent = send_to_partitions(&producer(&c), INPUT, &records, DEADLINE).await;
    let all = c.ids();
    let probe: BaseConsumer = c
        .client_config(&c.bootstrap_all())
        .set("group.id", "fjord-failover-probe")
        .create()
        .expect("create consumer");
    let end = high_watermarks(&probe, INPUT);
    drop(probe);
    // FindCoordinator creates the internal topics.
    let (txn_coordinator, _) = coordinator_on(&c, &all, &[], TXN_KEY, TXN_ID, TXN_TOPIC);
    let (group, group_coordinator) = group_coordinated_elsewhere(&c, txn_coordinator);
    eprintln!(
        "transaction coordinator: node {txn_coordinator}; group {group}'s coordinator: node \
         {group_coordinator}"
    );

    let consumer_config = group_client_config(
        &c.bootstrap_all(),
        &group,
        &[
            ("isolation.level", "read_committed"),
            // Commits happen in the transactions; a transaction blocked
            // while the coordinator moves must not cost the membership.
            ("max.poll.interval.ms", "120000"),
        ],
    );
    let mut producer_config = c.client_config(&c.bootstrap_all());
    producer_config
        .set("transactional.id", TXN_ID)
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("transaction.timeout.ms", "60000")
        .set("message.timeout.ms", "60000")
        .set("linger.ms", "2");
    let shared = Arc::new(Shared::default());
    let _stop = StopOnDrop(shared.clone());
    let worker = {
        let (end, shared) = (end.clone(), shared.clone());
        thread::spawn(move || pipeline(consumer_config, producer_config, end, shared))
    };

    poll_until(DEADLINE, "a quarter of the input through", || {
        let n = shared.progress.load(Ordering::SeqCst);
        if worker.is_finished() || n >= sent.len() / 4 {
            return Ok(());
        }
        Err(format!(
            "{n} records committed; {} errors, the last: {:?}",
            shared.error_count(),
            shared.last_error()
        ))
    });
    if worker.is_finished() {
        match worker.join() {
            Err(e) => std::panic::resume_unwind(e),
            Ok(_) => panic!("the pipeline finished before the kill"),
        }
    }
    let (coordinator, isr) = coordinator_on(&c, &all, &[], TXN_KEY, TXN_ID, TXN_TOPIC);
    let at_kill = shared.progress.load(Ordering::SeqCst);
    eprintln!(
        "transaction coordinator: node {coordinator} (ISR {isr:?}), killed after {at_kill} \
         records"
    );
    c.kill9(coordinator);
    let killed = Instant::now();
    let survivors: Vec<i32> = all
        .iter()
        .copied()
        .filter(|&id| id != coordinator)
        .collect();
    let (moved_to, _) = coordinator_on(&c, &survivors, &[coordinator], TXN_KEY, TXN_ID, TXN_TOPIC);
    eprintln!(
        "transaction coordinator moved to node {moved_to} {:?} after the kill",
        killed.elapsed()
    );
    poll_until(PIPELINE_DEADLINE, "the pipeline to finish", || {
        if worker.is_finished() {
            return Ok(());
        }
        Err(format!(
            "{} records committed; {} errors, the last: {:?}",
            shared.progress.load(Ordering::SeqCst),
            shared.error_count(),
            shared.last_error()
        ))
    });
    let outcome = match worker.join() {
        Ok(Some(o)) => o,
        Ok(None) => panic!(
            "the pipeline ran out of time; errors: {:#?}",
            shared.errors.lock().unwrap()
        ),
        Err(e) => std::panic::resume_unwind(e),
    };
    eprintln!(
        "pipeline done {:?} after the kill: {} committed, {} aborted, {} unknown transactions, \
         {} new producers; errors: {:#?}",
        killed.elapsed(),
        outcome.committed.len(),
        outcome.aborted.len(),
        outcome.unknown.len(),
        outcome.recreated,
        shared.errors.lock().unwrap()
    );

    // The output, read_committed: each input record once, transformed, in
    // input order per partition, none of an aborted transaction.
    let reader: BaseConsumer = c
        .client_config(&bootstrap_of(&c, &survivors))
        .set("group.id", "fjord-failover-reader")
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "100")
        .create()
        .expect("create consumer");
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition_offset(OUTPUT, p, Offset::Beginning)
            .unwrap();
    }
    reader.assign(&tpl).unwrap();
    let read: Vec<(i32, i64, String)> = consume_n(&reader, sent.len(), DEADLINE)
        .iter()
        .map(triple)
        .collect();
    for (p, _, v) in &read {
        let (_, attempt) = v.rsplit_once('#').expect("attempt suffix");
        let attempt: u64 = attempt.parse().expect("attempt number");
        assert!(
            !outcome.aborted.contains(&attempt),
            "{p}: {v} is of aborted transaction {attempt}"
        );
        assert!(
            outcome.committed.contains(&attempt) || outcome.unknown.contains(&attempt),
            "{p}: {v} is of transaction {attempt}, never committed"
        );
    }
    for p in 0..PARTITIONS {
        let got: Vec<String> = read
            .iter()
            .filter(|r| r.0 == p)
            .map(|r| r.2.rsplit_once('#').unwrap().0.to_string())
            .collect();
        let want: Vec<String> = sent
            .iter()
            .filter(|r| r.0 == p)
            .map(|r| format!("T({})", r.2))
            .collect();
        assert_eq!(
            got, want,
            "output partition {p}: every input record once, in order"
        );
    }
    let out_hw = high_watermarks(&reader, OUTPUT);
    let start: BTreeMap<i32, i64> = (0..PARTITIONS).map(|p| (p, 0)).collect();
    wait_at_end(&reader, &start, &out_hw, "the output reader at the end");
    drop(reader);
    let group_reader: BaseConsumer = group_client_config(
        &bootstrap_of(&c, &survivors),
        &group,
        &[("isolation.level", "read_committed")],
    )
    .create()
    .expect("create consumer");
    let want_end: BTreeMap<i32, Option<i64>> = end.iter().map(|(p, o)| (*p, Some(*o))).collect();
    assert_eq!(
        committed(&group_reader, INPUT, "the pipeline's group offsets"),
        want_end,
        "the pipeline's committed input offsets"
    );
    drop(group_reader);

    c.start_node(coordinator);
    wait_healthy(
        &mut c,
        &[
            (INPUT, PARTITIONS),
            (OUTPUT, PARTITIONS),
            (TXN_TOPIC, INTERNAL_PARTITIONS),
            (OFFSETS_TOPIC, INTERNAL_PARTITIONS),
        ],
    );
    eprintln!(
        "a_transactional_pipeline_keeps_running_through_a_coordinator_kill: {:?}",
        started.elapsed()
    );
}
