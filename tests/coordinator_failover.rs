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
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
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
    c1.commit_consumer_state(CommitMode::Sync)
        .expect("synchronous commit");
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
    assert_eq!(
        committed(&c1, topic, "committed offsets before the kill"),
        want,
        "committed after the synchronous commit"
    );
    drop(c1);

    // The coordinator, its offsets partition fully in sync, is killed.
    let (coordinator, isr) = coordinator_on(&c, &all, &[], GROUP_KEY, group, OFFSETS_TOPIC);
    poll_until(DEADLINE, "the group's offsets partition in sync", || {
        let (k, isr) = try_coordinator(&c, &all, &[], GROUP_KEY, group, OFFSETS_TOPIC)?;
        (k == coordinator && isr.len() == all.len())
            .then_some(())
            .ok_or(format!("coordinator {k}, ISR {isr:?}"))
    });
    eprintln!("group coordinator: node {coordinator} (ISR {isr:?})");
    c.kill9(coordinator);
    let killed = Instant::now();
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
const PIPE_GROUP: &str = "pipe-group";
const TXN_ID: &str = "pipe-tx";
/// Records per transaction at most.
const BATCH: usize = 12;
/// How long the whole pipeline may take, the kill included.
const PIPELINE_DEADLINE: Duration = Duration::from_secs(180);

/// The output value of input `value` written in transaction `attempt`.
fn transform(value: &str, attempt: u64) -> String {
    format!("T({value})#{attempt}")
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
    /// Every error met, in order.
    errors: Vec<String>,
}

/// Why a transaction did not commit.
enum Failure {
    /// Aborted; the producer goes on.
    Aborted(String),
    /// The producer is unusable (fatal error, fenced); `committing`: the
    /// failure came after the commit was asked for.
    Fatal { why: String, committing: bool },
}

/// Classifies a transactional call's error: abortable, retriable or fatal.
fn txn_kind(e: &KafkaError) -> (&'static str, String) {
    match e {
        KafkaError::Transaction(t) if t.is_fatal() => ("fatal", t.to_string()),
        KafkaError::Transaction(t) if t.txn_requires_abort() => ("abort", t.to_string()),
        KafkaError::Transaction(t) if t.is_retriable() => ("retry", t.to_string()),
        other => ("abort", other.to_string()),
    }
}

/// Aborts the open transaction (retrying while librdkafka says so).
fn abort(p: &FutureProducer, why: String, deadline: Instant) -> Failure {
    loop {
        match p.abort_transaction(Duration::from_secs(30)) {
            Ok(()) => return Failure::Aborted(why),
            Err(e) => match txn_kind(&e) {
                ("retry", _) if Instant::now() < deadline => continue,
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
/// `OUTPUT` (same partition), the offsets after it sent to the transaction
/// for the consumer's group, committed.
fn transact(
    rt: &tokio::runtime::Runtime,
    p: &FutureProducer,
    consumer: &BaseConsumer,
    attempt: u64,
    batch: &[(i32, i64, String)],
    deadline: Instant,
) -> Result<(), Failure> {
    let fail = |e: &KafkaError, step: &str, committing: bool| -> Failure {
        match txn_kind(e) {
            ("fatal", text) => Failure::Fatal {
                why: format!("{step}: {text}"),
                committing,
            },
            (_, text) => abort(p, format!("{step}: {text}"), deadline),
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
            Ok(Err(_)) => return Err(abort(p, "delivery cancelled".into(), deadline)),
            Err(_) => return Err(abort(p, "no delivery report".into(), deadline)),
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
                ("retry", _) if Instant::now() < deadline => continue,
                _ => return Err(fail(&e, "send_offsets_to_transaction", false)),
            },
        }
    }
    loop {
        match p.commit_transaction(Duration::from_secs(30)) {
            Ok(()) => return Ok(()),
            Err(e) => match txn_kind(&e) {
                ("retry", _) if Instant::now() < deadline => continue,
                _ => return Err(fail(&e, "commit_transaction", true)),
            },
        }
    }
}

/// A transactional producer after a successful `init_transactions`
/// (retried while the coordinator moves).
fn init_producer(
    config: &ClientConfig,
    deadline: Instant,
    errors: &mut Vec<String>,
) -> FutureProducer {
    loop {
        let p: FutureProducer = config.create().expect("create transactional producer");
        loop {
            match p.init_transactions(Duration::from_secs(30)) {
                Ok(()) => return p,
                Err(e) => {
                    let (kind, text) = txn_kind(&e);
                    errors.push(format!("init_transactions: {text}"));
                    assert!(
                        Instant::now() < deadline,
                        "init_transactions kept failing: {errors:?}"
                    );
                    if kind != "retry" {
                        break; // a new producer
                    }
                }
            }
        }
    }
}

/// Seeks the consumer to its group's committed offsets (the start where
/// nothing is committed); gives them. A partition not assigned right now
/// starts there anyway when it is.
fn reseek(consumer: &BaseConsumer, deadline: Instant) -> BTreeMap<i32, i64> {
    let committed = loop {
        match try_committed(consumer, INPUT) {
            Ok(c) => break c,
            Err(e) => {
                assert!(Instant::now() < deadline, "committed offsets: {e}");
                thread::sleep(Duration::from_millis(50));
            }
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
    at
}

/// The pipeline: reads `INPUT` (read_committed, group `PIPE_GROUP`) and
/// writes each record transformed to `OUTPUT` in transactions of at most
/// [`BATCH`] records, with the input offsets, until the committed offsets
/// reach `end`. A transaction that fails is aborted (or, the producer
/// unusable, a new producer fences it) and the consumer goes back to the
/// committed offsets.
fn pipeline(
    consumer_config: ClientConfig,
    producer_config: ClientConfig,
    end: BTreeMap<i32, i64>,
    progress: Arc<AtomicUsize>,
) -> Outcome {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let deadline = Instant::now() + PIPELINE_DEADLINE;
    let mut out = Outcome::default();
    let consumer: BaseConsumer = consumer_config.create().expect("create consumer");
    consumer.subscribe(&[INPUT]).expect("subscribe");
    let mut producer = init_producer(&producer_config, deadline, &mut out.errors);
    // The committed position per partition, and where the next record of
    // each is expected (the end of the batch being gathered).
    let mut done: BTreeMap<i32, i64> = BTreeMap::new();
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    let mut attempt = 0u64;
    while done != end {
        assert!(
            Instant::now() < deadline,
            "pipeline not done after {PIPELINE_DEADLINE:?}: committed {done:?} of {end:?}; {out:?}"
        );
        let mut batch: Vec<(i32, i64, String)> = Vec::new();
        let gather = Instant::now() + Duration::from_millis(100);
        let mut jumped = false;
        while batch.len() < BATCH && Instant::now() < gather {
            match consumer.poll(Duration::from_millis(20)) {
                None => {}
                Some(Err(e)) => out.errors.push(format!("consumer: {e}")),
                Some(Ok(m)) => {
                    let r = triple(&m.detach());
                    if next.get(&r.0).is_some_and(|&n| n != r.1) {
                        // A rebalance or a seek moved the position: start
                        // over from the committed offsets.
                        out.errors.push(format!(
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
            done = reseek(&consumer, deadline);
            next = done.clone();
            continue;
        }
        if batch.is_empty() {
            continue;
        }
        attempt += 1;
        match transact(&rt, &producer, &consumer, attempt, &batch, deadline) {
            Ok(()) => {
                out.committed.insert(attempt);
                done.extend(batch.iter().map(|r| (r.0, r.1 + 1)));
                progress.fetch_add(batch.len(), Ordering::SeqCst);
            }
            Err(Failure::Aborted(why)) => {
                out.errors.push(format!("attempt {attempt} aborted: {why}"));
                out.aborted.insert(attempt);
                done = reseek(&consumer, deadline);
                next = done.clone();
            }
            Err(Failure::Fatal { why, committing }) => {
                out.errors.push(format!("attempt {attempt} fatal: {why}"));
                if committing {
                    out.unknown.insert(attempt);
                } else {
                    out.aborted.insert(attempt);
                }
                drop(producer);
                producer = init_producer(&producer_config, deadline, &mut out.errors);
                out.recreated += 1;
                done = reseek(&consumer, deadline);
                next = done.clone();
            }
        }
    }
    out
}

/// A consume-transform-produce pipeline (read_committed group consumer,
/// transactional producer, input and output with 3 partitions, RF 3,
/// `min.insync.replicas=2`) over 600 input records; once a quarter is
/// through, the transaction coordinator's broker (the leader of the
/// transactional id's `__transaction_state` partition) is killed with
/// SIGKILL. The pipeline aborts and retries what the kill broke (a new
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

    let consumer_config = group_client_config(
        &c.bootstrap_all(),
        PIPE_GROUP,
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
    let progress = Arc::new(AtomicUsize::new(0));
    let worker = {
        let (end, progress) = (end.clone(), progress.clone());
        thread::spawn(move || pipeline(consumer_config, producer_config, end, progress))
    };

    poll_until(DEADLINE, "a quarter of the input through", || {
        let n = progress.load(Ordering::SeqCst);
        if worker.is_finished() {
            return Ok(());
        }
        (n >= sent.len() / 4)
            .then_some(())
            .ok_or(format!("{n} records committed"))
    });
    if worker.is_finished() {
        if let Err(e) = worker.join() {
            std::panic::resume_unwind(e);
        }
        panic!("the pipeline finished before the kill");
    }
    let (coordinator, isr) = coordinator_on(&c, &all, &[], TXN_KEY, TXN_ID, TXN_TOPIC);
    let at_kill = progress.load(Ordering::SeqCst);
    eprintln!(
        "transaction coordinator: node {coordinator} (ISR {isr:?}), killed after {at_kill} records"
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
        worker.is_finished().then_some(()).ok_or(format!(
            "{} records committed",
            progress.load(Ordering::SeqCst)
        ))
    });
    let outcome = match worker.join() {
        Ok(o) => o,
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
        outcome.errors
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
        PIPE_GROUP,
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
