//! A transactions-v2 (KIP-890 part 2) coordinator killed with SIGKILL
//! between its decision and the end of the transaction, on a three-node
//! cluster of real `fjord` processes (Fjord only: Apache Kafka's peer runs
//! one node). The producer speaks raw frames built with the protocol crate,
//! as no Rust client speaks transactions v2: Produce v12 to each
//! partition's leader with no AddPartitionsToTxn, then EndTxn v5.
//!
//! The coordinator (broker A) is held between PrepareCommit (or
//! PrepareAbort) and the Complete state without relying on timing: the
//! link from A to the client listener of broker B, which leads one of the
//! transaction's partitions, is black-holed (the cluster's proxies), so
//! B's marker cannot be written, while B stays a live member of every ISR
//! (its own fetches from A pass) and keeps its partitions. The test then
//! sees the Prepare state (a TransactionLogValue v1 record at the first
//! epoch + 1) through DescribeTransactions on A and kills A. Stopping B
//! with SIGSTOP instead races: B stops fetching, so A's append of the
//! Prepare record waits for it in the ISR until the controller fences B
//! (`broker.session.timeout.ms`; when B was the active controller the
//! append may time out first and EndTxn answers COORDINATOR_NOT_AVAILABLE),
//! and the fence moves B's partitions, whose markers then go through.
//!
//! What Kafka promises then: the coordinator moves to a survivor, loads the
//! Prepare record and finishes the transaction (DescribeTransactions shows
//! the Complete state at the first epoch + 1); a read_committed consumer
//! reads every committed record exactly once and nothing of an aborted
//! transaction; each partition's last stable offset reaches its high
//! watermark; the producer's EndTxn v5 retried with the epoch it sent is a
//! retry (one epoch below the id's: success with the bumped epoch), a
//! zombie's Produce at the old epoch gets INVALID_PRODUCER_EPOCH on every
//! partition (also where its leader asks the coordinator on another
//! broker), and the producer carries on with a second transaction at the
//! new epoch. A
//! restarts, rejoins every ISR, and every broker names the same
//! coordinator, which describes the same state.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpStream;
use std::thread;
use std::time::Duration;

use common::cluster::{try_kp_call, Cluster};
use common::layout::{layout_on, wait_topic};
use common::poll_until;
use common::proxy::Fault;
use common::raw::{txn_batch, txn_produce};
use kafka_protocol::messages as kp;
use kafka_protocol::protocol::{Request, StrBytes};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

/// Bound of anything that waits for the cluster (an election after the 3 s
/// session timeout, a coordinator loading its partition, a restart).
const DEADLINE: Duration = Duration::from_secs(60);
/// Broker settings of every node: small internal topics, replicated three
/// times.
const OVERRIDES: &[&str] = &[
    "offsets.topic.num.partitions=4",
    "transaction.state.log.num.partitions=4",
    "transaction.state.log.replication.factor=3",
    "transaction.state.log.min.isr=2",
    // Leadership goes back to a restarted broker within a second, so the
    // killed coordinator coordinates its ids again once it rejoins.
    "leader.imbalance.check.interval.seconds=1",
];
const TXN_TOPIC: &str = "__transaction_state";
/// `transaction.state.log.num.partitions` of [`OVERRIDES`].
const STATE_PARTITIONS: i32 = 4;
/// Partitions of the test topic.
const PARTITIONS: i32 = 6;
/// The transactions write partitions `0..IN_TXN`; the others never see the
/// producer, so a zombie's batch there is checked with the coordinator.
const IN_TXN: i32 = 3;
/// Records per partition in each transaction.
const PER_PARTITION: usize = 3;
/// FindCoordinator key type of a transactional id.
const TXN_KEY: i8 = 1;
/// Retriable coordinator errors: COORDINATOR_LOAD_IN_PROGRESS (14),
/// COORDINATOR_NOT_AVAILABLE (15), NOT_COORDINATOR (16).
const COORDINATOR_MOVING: [i16; 3] = [14, 15, 16];
/// CONCURRENT_TRANSACTIONS.
const CONCURRENT_TRANSACTIONS: i16 = 51;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// A raw connection to one node, opened again after an error.
struct Client {
    addr: String,
    stream: Option<TcpStream>,
    corr: i32,
}

impl Client {
    fn new(addr: &str) -> Client {
        Client {
            addr: addr.to_string(),
            stream: None,
            corr: 0,
        }
    }

    /// One request and its answer; an I/O or decoding error (the node
    /// down, killed meanwhile) is given back and drops the connection.
    fn call<R: Request>(&mut self, version: i16, req: &R) -> Result<R::Response, String> {
        if self.stream.is_none() {
            let st = TcpStream::connect(&self.addr).map_err(|e| format!("{}: {e}", self.addr))?;
            st.set_read_timeout(Some(DEADLINE))
                .map_err(|e| e.to_string())?;
            st.set_write_timeout(Some(DEADLINE))
                .map_err(|e| e.to_string())?;
            self.stream = Some(st);
        }
        self.corr += 1;
        let st = self.stream.as_mut().expect("connected");
        let r = try_kp_call(st, version, self.corr, req);
        if r.is_err() {
            self.stream = None;
        }
        r.map_err(|e| format!("{}: {e}", self.addr))
    }
}

/// What DescribeTransactions (v0) shows of a transactional id.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Described {
    state: String,
    producer_id: i64,
    epoch: i16,
    partitions: BTreeSet<i32>,
}

/// DescribeTransactions of `id` on `node`; an error code is an `Err`.
fn describe(node: &mut Client, id: &str) -> Result<Described, String> {
    let req = kp::DescribeTransactionsRequest::default().with_transactional_ids(vec![s(id).into()]);
    let r = node.call(0, &req)?;
    let t = &r.transaction_states[0];
    if t.error_code != 0 {
        return Err(format!("DescribeTransactions: error {}", t.error_code));
    }
    Ok(Described {
        state: t.transaction_state.to_string(),
        producer_id: t.producer_id.0,
        epoch: t.producer_epoch,
        partitions: t
            .topics
            .iter()
            .flat_map(|x| x.partitions.iter().copied())
            .collect(),
    })
}

/// The node every node of `asked` names as `id`'s transaction coordinator
/// (FindCoordinator v4), one not in `not`, once it answers
/// DescribeTransactions for `id` (its partition loaded).
fn coordinator(c: &Cluster, asked: &[i32], not: &[i32], id: &str) -> i32 {
    poll_until(
        DEADLINE,
        &format!("the coordinator of {id} named by {asked:?}, not {not:?}"),
        || {
            let mut named = BTreeSet::new();
            for &n in asked {
                let req = kp::FindCoordinatorRequest::default()
                    .with_key_type(TXN_KEY)
                    .with_coordinator_keys(vec![s(id)]);
                let r = Client::new(&c.bootstrap(n)).call(4, &req)?;
                let k = &r.coordinators[0];
                if k.error_code != 0 {
                    return Err(format!("node {n}: FindCoordinator error {}", k.error_code));
                }
                named.insert(k.node_id.0);
            }
            let k = match named.iter().copied().collect::<Vec<_>>()[..] {
                [k] if !not.contains(&k) => k,
                _ => return Err(format!("coordinators named: {named:?}")),
            };
            match describe(&mut Client::new(&c.bootstrap(k)), id) {
                // An id not known yet (before InitProducerId) is loaded too.
                Err(e) if e.ends_with("error 105") => Ok(k),
                Err(e) => Err(format!("node {k}: {e}")),
                Ok(_) => Ok(k),
            }
        },
    )
}

/// The values of transaction `tag` on `partition`.
fn values(tag: &str, partition: i32) -> Vec<String> {
    (0..PER_PARTITION)
        .map(|i| format!("{tag}-p{partition}-{i}"))
        .collect()
}

/// The leader of every partition of `topic` as node `asked` shows it, once
/// each is one of `alive`.
fn leaders(c: &Cluster, asked: i32, alive: &[i32], topic: &str) -> BTreeMap<i32, i32> {
    poll_until(DEADLINE, &format!("{topic} led by {alive:?}"), || {
        let l = layout_on(c, asked, topic)?.ok_or(format!("no {topic}"))?;
        let leaders = l.leaders();
        (leaders.len() == PARTITIONS as usize && leaders.values().all(|l| alive.contains(l)))
            .then_some(leaders.clone())
            .ok_or(format!("leaders {leaders:?}"))
    })
}

/// Produce v12 of one transactional batch of `values` from (`pid`,
/// `epoch`), sequences from 0, to `topic`-`partition` on its leader
/// `leader`, with no AddPartitionsToTxn: the leader has the coordinator add
/// the partition. Retried while the leader reaches the coordinator
/// (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, NOT_ENOUGH_REPLICAS,
/// CONCURRENT_TRANSACTIONS);
/// the partition's error code.
fn produce_to(
    c: &Cluster,
    (topic, partition, leader): (&str, i32, i32),
    id: &str,
    (pid, epoch): (i64, i16),
    values: &[String],
) -> i16 {
    let req = txn_produce(id, topic, partition, txn_batch(pid, epoch, 0, values));
    let mut node = Client::new(&c.bootstrap(leader));
    poll_until(
        DEADLINE,
        &format!("Produce v12 to {topic}-{partition}"),
        || {
            let r = node.call(12, &req)?;
            match r.responses[0].partition_responses[0].error_code {
                // NOT_ENOUGH_REPLICAS: the coordinator could not be asked.
                code @ (15 | 16 | 19 | CONCURRENT_TRANSACTIONS) => Err(format!("error {code}")),
                code => Ok(code),
            }
        },
    )
}

/// [`produce_to`] of transaction `tag` to partitions `0..IN_TXN`, each to
/// its leader of `leaders` (partition → leader); every partition must
/// answer 0.
fn produce(
    c: &Cluster,
    leaders: &BTreeMap<i32, i32>,
    topic: &str,
    id: &str,
    producer: (i64, i16),
    tag: &str,
) {
    for (&p, &leader) in leaders.range(..IN_TXN) {
        let code = produce_to(c, (topic, p, leader), id, producer, &values(tag, p));
        assert_eq!(
            code, 0,
            "Produce v12 of {tag} to {topic}-{p} (leader {leader})"
        );
    }
}

/// EndTxn v5 of (`pid`, `epoch`) on `node`, retried while the coordinator
/// moves or ends the transaction (CONCURRENT_TRANSACTIONS), as clients
/// retry: (error code, producer id, epoch) as answered.
fn end_txn(node: &mut Client, id: &str, (pid, epoch): (i64, i16), commit: bool) -> (i16, i64, i16) {
    let req = end_txn_request(id, pid, epoch, commit);
    poll_until(DEADLINE, "EndTxn v5", || {
        let r = node.call(5, &req)?;
        if r.error_code == CONCURRENT_TRANSACTIONS || COORDINATOR_MOVING.contains(&r.error_code) {
            return Err(format!("error {}", r.error_code));
        }
        Ok((r.error_code, r.producer_id.0, r.producer_epoch))
    })
}

fn end_txn_request(id: &str, pid: i64, epoch: i16, commit: bool) -> kp::EndTxnRequest {
    kp::EndTxnRequest::default()
        .with_transactional_id(s(id).into())
        .with_producer_id(pid.into())
        .with_producer_epoch(epoch)
        .with_committed(commit)
}

/// ListOffsets v7 of the latest offset of `topic`-`partition` on `leader`
/// at `isolation` (0: the high watermark, 1: the last stable offset).
fn latest(
    c: &Cluster,
    leader: i32,
    topic: &str,
    partition: i32,
    isolation: i8,
) -> Result<i64, String> {
    let req = kp::ListOffsetsRequest::default()
        .with_replica_id((-1).into())
        .with_isolation_level(isolation)
        .with_topics(vec![kp::list_offsets_request::ListOffsetsTopic::default()
            .with_name(s(topic).into())
            .with_partitions(vec![
                kp::list_offsets_request::ListOffsetsPartition::default()
                    .with_partition_index(partition)
                    .with_timestamp(-1),
            ])]);
    let r = Client::new(&c.bootstrap(leader)).call(7, &req)?;
    let p = &r.topics[0].partitions[0];
    if p.error_code != 0 {
        return Err(format!(
            "ListOffsets {topic}-{partition} on {leader}: error {}",
            p.error_code
        ));
    }
    Ok(p.offset)
}

/// Waits until the last stable offset of every partition of `topic` is its
/// high watermark (no transaction left open), asked of its leader among
/// `alive`.
fn wait_stable(c: &Cluster, alive: &[i32], topic: &str) {
    poll_until(DEADLINE, &format!("{topic}: LSO = high watermark"), || {
        for (p, leader) in leaders(c, alive[0], alive, topic) {
            let hw = latest(c, leader, topic, p, 0)?;
            let lso = latest(c, leader, topic, p, 1)?;
            if lso != hw {
                return Err(format!(
                    "{topic}-{p} on {leader}: LSO {lso}, high watermark {hw}"
                ));
            }
        }
        Ok(())
    });
}

/// What a read_committed consumer (librdkafka) bootstrapped to `alive`
/// reads of every partition of `topic` from the beginning, up to each
/// partition's high watermark.
fn read_committed(c: &Cluster, alive: &[i32], topic: &str) -> BTreeMap<i32, Vec<String>> {
    let bootstrap = alive
        .iter()
        .map(|&n| c.bootstrap(n))
        .collect::<Vec<_>>()
        .join(",");
    let consumer: BaseConsumer = c
        .client_config(&bootstrap)
        .set("group.id", "tv2-failover-reader")
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&tpl).unwrap();
    let high: BTreeMap<i32, i64> = (0..PARTITIONS)
        .map(|p| {
            let (_, hw) = poll_until(DEADLINE, &format!("watermarks of {topic}-{p}"), || {
                consumer
                    .fetch_watermarks(topic, p, Duration::from_secs(5))
                    .map_err(|e| e.to_string())
            });
            (p, hw)
        })
        .collect();
    let mut got: BTreeMap<i32, Vec<String>> = (0..PARTITIONS).map(|p| (p, Vec::new())).collect();
    poll_until(DEADLINE, "read_committed up to the high watermarks", || {
        if let Some(m) = consumer.poll(Duration::from_millis(100)) {
            let m = m.map_err(|e| format!("consumer error {e}"))?;
            let v = String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned();
            got.entry(m.partition()).or_default().push(v);
        }
        let at: BTreeMap<i32, i64> = consumer
            .position()
            .map_err(|e| e.to_string())?
            .elements()
            .iter()
            .filter_map(|e| match e.offset() {
                Offset::Offset(o) => Some((e.partition(), o)),
                _ => None,
            })
            .collect();
        high.iter()
            // No position yet: nothing read, still at the log start (0).
            .all(|(p, hw)| at.get(p).copied().unwrap_or(0) >= *hw)
            .then_some(())
            .ok_or(format!("positions {at:?}, high watermarks {high:?}"))
    });
    got
}

/// The records a read_committed consumer must read: transaction `t1` when
/// `t1_commits`, then `t2`, on every partition of the transactions.
fn expected(t1_commits: bool) -> BTreeMap<i32, Vec<String>> {
    (0..PARTITIONS)
        .map(|p| {
            let mut v = Vec::new();
            if p >= IN_TXN {
                return (p, v);
            }
            if t1_commits {
                v.extend(values("t1", p));
            }
            v.extend(values("t2", p));
            (p, v)
        })
        .collect()
}

/// Waits until every node lists every broker and every partition of
/// `topic` and of [`TXN_TOPIC`] has all three replicas in sync.
fn wait_full_isr(c: &mut Cluster, topic: &str) {
    let all = c.ids();
    c.wait_brokers(&all, DEADLINE);
    poll_until(DEADLINE, "every ISR full again", || {
        for &n in &all {
            for t in [topic, TXN_TOPIC] {
                let l = layout_on(c, n, t)?.ok_or(format!("node {n}: no {t}"))?;
                for (p, part) in &l.parts {
                    if part.leader < 0 || part.isr.len() != all.len() {
                        return Err(format!("node {n}: {t}-{p} {part:?}"));
                    }
                }
            }
        }
        Ok(())
    });
}

/// The records of `id` in its `__transaction_state` partition as its
/// leader `node` serves them (Fetch v12 from offset 0), each decoded with
/// Fjord's reader: (value version, state, epoch, ClientTransactionVersion
/// level), a run of equal records (one Ongoing record per partition added)
/// kept once.
fn state_log(c: &Cluster, node: i32, id: &str) -> Vec<(i16, String, i16, i16)> {
    let partition = fjord::txn::coordinator::partition_for_transactional_id(id, STATE_PARTITIONS);
    let req = kp::FetchRequest::default()
        .with_replica_id((-1).into())
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![kp::fetch_request::FetchTopic::default()
            .with_topic(s(TXN_TOPIC).into())
            .with_partitions(vec![kp::fetch_request::FetchPartition::default()
                .with_partition(partition)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])]);
    let r = Client::new(&c.bootstrap(node)).call(12, &req).unwrap();
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.error_code, 0, "Fetch {TXN_TOPIC}-{partition} from {node}");
    let mut b = p.records.clone().unwrap_or_default();
    let mut out: Vec<(i16, String, i16, i16)> = Vec::new();
    for set in kafka_protocol::records::RecordBatchDecoder::decode_all(&mut b).unwrap() {
        for r in set.records {
            let (key, Some(value)) = (r.key.clone().unwrap(), r.value.clone()) else {
                continue;
            };
            let (got, v) = fjord::txn::records::decode(&key, Some(&value)).unwrap();
            let Some(v) = v.filter(|_| got == id) else {
                continue;
            };
            let version = i16::from_be_bytes([value[0], value[1]]);
            let row = (
                version,
                v.status.name().to_string(),
                v.producer_epoch,
                v.tagged.client_tv as i16,
            );
            if out.last() != Some(&row) {
                out.push(row);
            }
        }
    }
    out
}

/// Waits until every partition of `topic` and of [`TXN_TOPIC`] is led by
/// its preferred (first) replica, as every node shows it.
fn wait_preferred(c: &Cluster, topic: &str) {
    poll_until(
        DEADLINE,
        "every partition led by its preferred replica",
        || {
            for n in c.ids() {
                for t in [topic, TXN_TOPIC] {
                    let l = layout_on(c, n, t)?.ok_or(format!("node {n}: no {t}"))?;
                    for (p, part) in &l.parts {
                        if part.replicas.first() != Some(&part.leader) {
                            return Err(format!("node {n}: {t}-{p} {part:?}"));
                        }
                    }
                }
            }
            Ok(())
        },
    );
}

/// The scenario: transaction t1 ended with `commit` (true: commit, false:
/// abort) while its coordinator is killed between the Prepare and the
/// Complete state; then t2 committed at the new epoch.
fn coordinator_killed_mid_end(commit: bool, topic: &str, id: &str) {
    let (prepare, complete) = if commit {
        ("PrepareCommit", "CompleteCommit")
    } else {
        ("PrepareAbort", "CompleteAbort")
    };
    let mut c = Cluster::start_with_proxies(3, OVERRIDES);
    let all = c.ids();
    let create = kp::CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![kp::create_topics_request::CreatableTopic::default()
            .with_name(s(topic).into())
            .with_num_partitions(PARTITIONS)
            .with_replication_factor(3)
            .with_configs(vec![
                kp::create_topics_request::CreatableTopicConfig::default()
                    .with_name(s("min.insync.replicas"))
                    .with_value(Some(s("2"))),
            ])]);
    let mut first = Client::new(&c.bootstrap(all[0]));
    poll_until(DEADLINE, "CreateTopics", || {
        let r = first.call(7, &create)?;
        match r.topics[0].error_code {
            0 | 36 => Ok(()),
            code => Err(format!("CreateTopics: error {code}")),
        }
    });
    wait_topic(&c, &all, topic, PARTITIONS as usize);

    // The producer: its coordinator A, a producer id, t1 on every partition.
    let a = coordinator(&c, &all, &[], id);
    let mut at_a = Client::new(&c.bootstrap(a));
    let (pid, e) = poll_until(DEADLINE, "InitProducerId", || {
        let req = kp::InitProducerIdRequest::default()
            .with_transactional_id(Some(s(id).into()))
            .with_transaction_timeout_ms(120_000)
            .with_producer_id((-1).into())
            .with_producer_epoch(-1);
        let r = at_a.call(5, &req)?;
        match r.error_code {
            0 => Ok((r.producer_id.0, r.producer_epoch)),
            code => Err(format!("InitProducerId: error {code}")),
        }
    });
    // Every ISR full, so every replica holds what A acknowledges.
    wait_full_isr(&mut c, topic);
    let before = leaders(&c, a, &all, topic);
    produce(&c, &before, topic, id, (pid, e), "t1");
    let open = describe(&mut at_a, id).unwrap();
    assert_eq!(
        (open.state.as_str(), open.producer_id, open.epoch),
        ("Ongoing", pid, e),
        "t1 after Produce v12"
    );
    assert_eq!(open.partitions, (0..IN_TXN).collect(), "t1's partitions");
    let (&held, &b) = before
        .range(..IN_TXN)
        .find(|(_, &l)| l != a)
        .unwrap_or_else(|| panic!("a partition led by another broker than {a}: {before:?}"));
    eprintln!("coordinator: node {a}; {topic}-{held} led by node {b}; producer {pid} epoch {e}");

    // A's markers cannot reach B; the EndTxn v5 goes to A from another
    // thread (its answer may never come).
    c.set_data_link(a, b, Fault::BlackHole);
    let addr = c.bootstrap(a);
    let req = end_txn_request(id, pid, e, commit);
    let sent = thread::spawn(move || Client::new(&addr).call(5, &req));
    let prepared = poll_until(DEADLINE, &format!("{prepare} on node {a}"), || {
        let d = describe(&mut at_a, id)?;
        (d.state == prepare)
            .then_some(d.clone())
            .ok_or(format!("{d:?}"))
    });
    assert_eq!(
        (
            prepared.producer_id,
            prepared.epoch,
            prepared.partitions.clone()
        ),
        (pid, e + 1, (0..IN_TXN).collect()),
        "{prepare} as transactions v2 writes it: the epoch bumped, every partition"
    );
    // B's partition still holds the transaction open: its marker is not
    // written.
    let hw = latest(&c, b, topic, held, 0).unwrap();
    let lso = latest(&c, b, topic, held, 1).unwrap();
    assert!(
        lso < hw,
        "{topic}-{held}: LSO {lso} below the high watermark {hw}"
    );

    // The coordinator's broker is killed in the Prepare state.
    c.kill9(a);
    c.set_data_link(a, b, Fault::Pass);
    eprintln!("EndTxn answer before the kill: {:?}", sent.join().unwrap());
    let survivors: Vec<i32> = all.iter().copied().filter(|&n| n != a).collect();

    // A survivor takes over, loads the Prepare record and finishes it.
    let k = coordinator(&c, &survivors, &[a], id);
    let mut at_k = Client::new(&c.bootstrap(k));
    let done = poll_until(DEADLINE, &format!("{complete} on node {k}"), || {
        let d = describe(&mut at_k, id)?;
        (d.state == complete)
            .then_some(d.clone())
            .ok_or(format!("{d:?}"))
    });
    assert_eq!(
        (done.producer_id, done.epoch),
        (pid, e + 1),
        "{complete} on the new coordinator {k}"
    );
    wait_stable(&c, &survivors, topic);
    // The log the new coordinator finished: the Prepare record A wrote, as
    // transactions v2 writes it (TransactionLogValue v1,
    // ClientTransactionVersion 2), then its Complete state.
    let log = state_log(&c, k, id);
    let from = log
        .iter()
        .position(|r| r.1 == "Ongoing")
        .unwrap_or_else(|| panic!("no Ongoing record: {log:?}"));
    assert_eq!(
        log[from..],
        [
            (1, "Ongoing".to_string(), e, 2),
            (1, prepare.to_string(), e + 1, 2),
            (1, complete.to_string(), e + 1, 2),
        ],
        "{TXN_TOPIC} records of {id}"
    );

    // A zombie with the first epoch is fenced on every partition:
    // INVALID_PRODUCER_EPOCH. Those of the transaction know the new epoch
    // from the markers the new coordinator wrote; the others ask the
    // coordinator, on the same broker or over the network (Kafka's leaders
    // turn the coordinator's PRODUCER_FENCED into it).
    for (p, leader) in leaders(&c, survivors[0], &survivors, topic) {
        if p >= IN_TXN && leader != k {
            eprintln!("zombie batch to {topic}-{p}: checked by {leader} with coordinator {k}");
        }
        let zombie = produce_to(
            &c,
            (topic, p, leader),
            id,
            (pid, e),
            &["zombie".to_string()],
        );
        assert_eq!(
            zombie, 47,
            "Produce v12 at epoch {e} to {topic}-{p} on {leader} (coordinator {k})"
        );
    }

    // The producer's EndTxn retried with the epoch it sent: a retry of a
    // finished commit or abort, answered with the bumped epoch.
    assert_eq!(
        end_txn(&mut at_k, id, (pid, e), commit),
        (0, pid, e + 1),
        "EndTxn v5 retried at epoch {e}"
    );
    // The producer carries on at the new epoch: t2 commits.
    let after = leaders(&c, survivors[0], &survivors, topic);
    produce(&c, &after, topic, id, (pid, e + 1), "t2");
    assert_eq!(
        end_txn(&mut at_k, id, (pid, e + 1), true),
        (0, pid, e + 2),
        "t2's commit"
    );
    wait_stable(&c, &survivors, topic);
    assert_eq!(
        read_committed(&c, &survivors, topic),
        expected(commit),
        "read_committed on the survivors"
    );

    // A starts again, rejoins every ISR and leads again what it led first
    // (its preferred partitions): the id's preferred replica coordinates
    // it, A when A was its first leader, from its own copy of the log.
    // Every broker names it, and it describes the state the survivors left.
    c.start_node(a);
    wait_full_isr(&mut c, topic);
    wait_preferred(&c, topic);
    let state_partition =
        fjord::txn::coordinator::partition_for_transactional_id(id, STATE_PARTITIONS);
    let preferred =
        layout_on(&c, a, TXN_TOPIC).unwrap().unwrap().parts[&state_partition].replicas[0];
    let k2 = coordinator(&c, &all, &[], id);
    assert_eq!(k2, preferred, "the coordinator after node {a} rejoined");
    eprintln!("after node {a} rejoined: node {k2} coordinates {id}");
    let mut states = BTreeSet::new();
    for &n in &all {
        let named = coordinator(&c, &[n], &[], id);
        assert_eq!(named, k2, "node {n} names another coordinator");
        let d = poll_until(DEADLINE, "DescribeTransactions", || {
            describe(&mut Client::new(&c.bootstrap(named)), id)
        });
        states.insert((d.state, d.producer_id, d.epoch));
    }
    assert_eq!(
        states,
        BTreeSet::from([("CompleteCommit".to_string(), pid, e + 2)]),
        "the state after node {a} rejoined"
    );
    wait_stable(&c, &all, topic);
    assert_eq!(
        read_committed(&c, &all, topic),
        expected(commit),
        "read_committed after node {a} rejoined"
    );
}

/// EndTxn v5 commit: PrepareCommit at epoch + 1 on the killed coordinator,
/// CompleteCommit on its successor, every record read once.
#[test]
fn commit_survives_the_coordinator_killed_in_prepare_commit() {
    coordinator_killed_mid_end(true, "tv2-failover-commit", "tv2-failover-commit-tx");
}

/// EndTxn v5 abort: PrepareAbort at epoch + 1 on the killed coordinator,
/// CompleteAbort on its successor, nothing of it read.
#[test]
fn abort_survives_the_coordinator_killed_in_prepare_abort() {
    coordinator_killed_mid_end(false, "tv2-failover-abort", "tv2-failover-abort-tx");
}
