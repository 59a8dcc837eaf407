//! ISR replication on a three-node cluster of real `fjord` processes,
//! driven by librdkafka: acks=all with `min.insync.replicas=2` while the
//! leader is killed with SIGKILL round after round (every acknowledged
//! record read back once, in order; every replica's log the same batches),
//! a rolling restart of all three brokers under load, and a follower cut
//! off from its leader leaving the ISR, acks=all going on with two,
//! NOT_ENOUGH_REPLICAS with one, and the follower rejoining.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::cluster::{try_kp_call, Cluster};
use common::layout::{admin, layout_on, wait_topic};
use common::proxy::Fault;
use common::{admin_opts, consume_n, poll_until, segment_batches};
use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};

/// Bounds for what takes a few seconds (a fence after the 3 s session
/// timeout, an election, a restart and catch-up).
const DEADLINE: Duration = Duration::from_secs(60);
const NOT_ENOUGH_REPLICAS: i16 = 19;

/// Creates `topic` (1 partition, RF 3, `min.insync.replicas=2`).
async fn create_durable(c: &Cluster, topic: &str) {
    let a = admin(c, &c.bootstrap_all());
    let t = NewTopic::new(topic, 1, TopicReplication::Fixed(3)).set("min.insync.replicas", "2");
    let r = a.create_topics(&[t], &admin_opts()).await.unwrap();
    assert!(r[0].is_ok(), "{r:?}");
    wait_topic(c, &c.ids(), topic, 1);
}

/// (leader, ISR) of partition 0 of `topic` as node `id` shows it.
fn leader_isr(c: &Cluster, id: i32, topic: &str) -> Result<(i32, BTreeSet<i32>), String> {
    let l = layout_on(c, id, topic)?.ok_or("unknown topic")?;
    let p = l.parts.get(&0).ok_or("no partition 0")?;
    Ok((p.leader, p.isr.iter().copied().collect()))
}

/// Waits until every node of `asked` shows partition 0 of `topic` led by a
/// broker not in `not`, with ISR `isr` when given; gives the leader.
fn wait_partition(
    c: &Cluster,
    asked: &[i32],
    topic: &str,
    not: &[i32],
    isr: Option<&[i32]>,
) -> i32 {
    let want: Option<BTreeSet<i32>> = isr.map(|i| i.iter().copied().collect());
    poll_until(
        DEADLINE,
        &format!("{topic}-0 led by none of {not:?} with ISR {isr:?} on {asked:?}"),
        || {
            let mut leaders = BTreeSet::new();
            for &id in asked {
                let (leader, got) = leader_isr(c, id, topic)?;
                if leader < 0 || not.contains(&leader) {
                    return Err(format!("node {id}: leader {leader}"));
                }
                if let Some(w) = &want {
                    if &got != w {
                        return Err(format!("node {id}: ISR {got:?}"));
                    }
                }
                leaders.insert(leader);
            }
            match leaders.len() {
                1 => Ok(*leaders.iter().next().unwrap()),
                _ => Err(format!("leaders differ: {leaders:?}")),
            }
        },
    )
}

/// One stored batch: (base offset, record count, partition leader epoch,
/// the bytes after the epoch — magic, CRC and the CRC-covered rest).
type StoredBatch = (i64, i64, i32, Vec<u8>);

/// Every batch of partition 0 of `topic` in a node's data directory.
fn replica_batches(dir: &Path, topic: &str) -> Vec<StoredBatch> {
    let pdir = dir.join(format!("{topic}-0"));
    let mut logs: Vec<_> = std::fs::read_dir(&pdir)
        .unwrap_or_else(|e| panic!("read {}: {e}", pdir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    let mut out = Vec::new();
    for log in logs {
        let data = std::fs::read(&log).unwrap();
        for (pos, base, count, len) in segment_batches(&log) {
            let epoch = i32::from_be_bytes(data[pos + 12..pos + 16].try_into().unwrap());
            out.push((base, count, epoch, data[pos + 16..pos + len].to_vec()));
        }
    }
    out
}

/// Waits until every node's replica of `topic`-0 holds the same batches,
/// byte for byte with the same leader epochs, and at least `min_records`.
fn wait_replicas_agree(c: &Cluster, topic: &str, min_records: i64) {
    poll_until(DEADLINE, &format!("replicas of {topic}-0 agree"), || {
        let mut first: Option<(i32, Vec<StoredBatch>)> = None;
        for id in c.ids() {
            let b = replica_batches(&c.data_dir(id), topic);
            let records: i64 = b.iter().map(|x| x.1).sum();
            if records < min_records {
                return Err(format!("node {id} has {records} records"));
            }
            match &first {
                None => first = Some((id, b)),
                Some((f, fb)) if *fb != b => {
                    return Err(format!(
                        "node {f} has {} batches, node {id} {} (first difference at {:?})",
                        fb.len(),
                        b.len(),
                        fb.iter().zip(&b).position(|(x, y)| x != y)
                    ))
                }
                Some(_) => {}
            }
        }
        Ok(())
    });
}

fn idempotent_producer(c: &Cluster) -> FutureProducer {
    c.client_config(&c.bootstrap_all())
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .set("message.timeout.ms", "120000")
        .set("linger.ms", "2")
        .create()
        .expect("create producer")
}

fn reader(c: &Cluster, topic: &str) -> BaseConsumer {
    let cons: BaseConsumer = c
        .client_config(&c.bootstrap_all())
        .set("group.id", "fjord-replication-it-unused")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "100")
        .create()
        .expect("create consumer");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)
        .unwrap();
    cons.assign(&tpl).unwrap();
    cons
}

/// Reads `topic`-0 from the start: (offset, value) of every record, until
/// `count` records or the deadline.
fn read_all(c: &Cluster, topic: &str, count: usize) -> Vec<(i64, String)> {
    let cons = reader(c, topic);
    consume_n(&cons, count, DEADLINE)
        .iter()
        .map(|m| {
            (
                m.offset(),
                String::from_utf8(m.payload().unwrap().to_vec()).unwrap(),
            )
        })
        .collect()
}

/// Rounds of [`acks_all_survives_the_leader_killed_round_after_round`]:
/// `FJORD_KILL_ROUNDS` (scripts/durability-rounds runs 1,000), else 20.
fn kill_rounds() -> usize {
    std::env::var("FJORD_KILL_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

/// (Done-when, part 2) RF 3, `min.insync.replicas=2`, acks=all with an
/// idempotent producer writing all along; the partition's leader is killed
/// with SIGKILL round after round (20, or `FJORD_KILL_ROUNDS`; each time
/// started again once another broker leads, and back in the ISR before the
/// next round). Every acknowledged
/// record is read back exactly once, at its acknowledged offset, in the
/// order sent; every replica ends with the same batches byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_all_survives_the_leader_killed_round_after_round() {
    let started = std::time::Instant::now();
    let mut c = Cluster::start(3, &[]);
    let topic = "durable";
    create_durable(&c, topic).await;
    let w = Writer::start(&c, topic);
    let rounds = kill_rounds();
    let mut kills = Vec::new();
    for round in 0..rounds {
        w.wait_for_more(20);
        let all = c.ids();
        let leader = wait_partition(&c, &all, topic, &[], Some(&all));
        c.kill9(leader);
        kills.push(leader);
        let survivors: Vec<i32> = all.iter().copied().filter(|&id| id != leader).collect();
        let new_leader = wait_partition(&c, &survivors, topic, &[leader], None);
        assert_ne!(new_leader, leader, "round {round}");
        c.start_node(leader);
        wait_partition(&c, &all, topic, &[], Some(&all));
    }
    let acked = w.finish().await;
    let kills_seen: BTreeSet<i32> = kills.iter().copied().collect();
    assert!(kills_seen.len() >= 2, "leaders killed: {kills:?}");
    let read = check_exactly_once(&c, topic, &acked);
    // The tally scripts/durability-rounds writes to docs/durability.md.
    println!(
        "DURABILITY-TALLY rounds={rounds} acked={} read={read} lost=0 duplicated=0 \
         out_of_order=0 replicas_identical=yes leaders_killed={kills_seen:?} seconds={}",
        acked.len(),
        started.elapsed().as_secs()
    );
}

/// (Done-when, part 2) A rolling restart of all three brokers (SIGTERM,
/// start again, back in the ISR, the next one) while an idempotent acks=all
/// producer writes: no delivery fails (the producer sees only retriable
/// errors), every acknowledged record is read back exactly once, in order,
/// and the replicas end identical. (That a clean stop leaves the logs
/// marked clean is `storage::log` unit tests' part.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_under_load_loses_no_acknowledged_record() {
    let mut c = Cluster::start(3, &[]);
    let topic = "rolling";
    create_durable(&c, topic).await;
    let w = Writer::start(&c, topic);
    let all = c.ids();
    for id in all.clone() {
        w.wait_for_more(20);
        wait_partition(&c, &all, topic, &[], Some(&all));
        c.restart(id);
        wait_partition(&c, &all, topic, &[], Some(&all));
    }
    let acked = w.finish().await;
    check_exactly_once(&c, topic, &acked);
    // A clean stop writes each broker's high-watermark checkpoint in
    // Kafka's format (`replication-offset-checkpoint`, one file per shard):
    // every replica names the partition, none above what was written, and
    // the leader's covers every acknowledged record.
    let last_acked = acked.iter().map(|(o, _)| *o).max().unwrap_or(-1);
    c.stop_many(&all);
    let mut highest = -1;
    for id in all {
        let hw = checkpointed_high_watermark(&c.data_dir(id), topic, 0)
            .unwrap_or_else(|| panic!("broker {id} checkpointed no high watermark for {topic}-0"));
        assert!(hw > 0, "broker {id}: high watermark {hw}");
        highest = highest.max(hw);
    }
    assert!(
        highest > last_acked,
        "the leader's checkpoint {highest} is below the last acknowledged offset {last_acked}"
    );
}

/// The high watermark of `topic`-`partition` in a data directory's
/// `replication-offset-checkpoint-*` files (version 0, a count, then
/// `topic partition offset` lines), if any names it.
fn checkpointed_high_watermark(dir: &std::path::Path, topic: &str, partition: i32) -> Option<i64> {
    let mut found = None;
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.starts_with("replication-offset-checkpoint") || name.ends_with(".tmp") {
            continue;
        }
        let text = std::fs::read_to_string(e.path()).ok()?;
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("0"), "{name}: version line");
        let count: usize = lines
            .next()
            .and_then(|l| l.parse().ok())
            .expect("count line");
        let rest: Vec<&str> = lines.collect();
        assert_eq!(rest.len(), count, "{name}: {count} entries announced");
        for l in rest {
            let f: Vec<&str> = l.split(' ').collect();
            if f.len() == 3 && f[0] == topic && f[1] == partition.to_string() {
                found = f[2].parse().ok();
            }
        }
    }
    found
}

/// An idempotent acks=all producer writing `r0000000`, `r0000001`, … to
/// partition 0 all along (up to 20 in flight), keeping what was
/// acknowledged and what failed.
struct Writer {
    acked: Arc<Mutex<Vec<(i64, String)>>>,
    failed: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Writer {
    fn start(c: &Cluster, topic: &str) -> Writer {
        let p = idempotent_producer(c);
        let acked: Arc<Mutex<Vec<(i64, String)>>> = Arc::default();
        let failed: Arc<Mutex<Vec<String>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let topic = topic.to_string();
        let task = {
            let (acked, failed, stop) = (acked.clone(), failed.clone(), stop.clone());
            tokio::spawn(async move {
                let mut i = 0u64;
                let mut inflight = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    let value = format!("r{i:07}");
                    i += 1;
                    // Enqueued here, in send order (a spawned task could
                    // enqueue out of order on a loaded machine); only the
                    // delivery report is awaited in a task.
                    let delivery = loop {
                        let rec = FutureRecord::<(), _>::to(&topic)
                            .partition(0)
                            .payload(&value);
                        match p.send_result(rec) {
                            Ok(f) => break Ok(f),
                            Err((
                                KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull),
                                _,
                            )) => tokio::time::sleep(Duration::from_millis(10)).await,
                            Err((e, _)) => break Err(e),
                        }
                    };
                    let (acked, failed) = (acked.clone(), failed.clone());
                    inflight.push(tokio::spawn(async move {
                        match delivery {
                            Ok(f) => match f.await {
                                Ok(Ok(d)) => acked.lock().unwrap().push((d.offset, value)),
                                Ok(Err((e, _))) => {
                                    failed.lock().unwrap().push(format!("{value}: {e}"))
                                }
                                Err(_) => failed
                                    .lock()
                                    .unwrap()
                                    .push(format!("{value}: delivery cancelled")),
                            },
                            Err(e) => failed.lock().unwrap().push(format!("{value}: {e}")),
                        }
                    }));
                    if inflight.len() >= 20 {
                        for t in inflight.drain(..) {
                            let _ = t.await;
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                for t in inflight {
                    let _ = t.await;
                }
            })
        };
        Writer {
            acked,
            failed,
            stop,
            task,
        }
    }

    /// Waits until `n` more records than now are acknowledged.
    fn wait_for_more(&self, n: usize) {
        let before = self.acked.lock().unwrap().len();
        poll_until(DEADLINE, "more acknowledged records", || {
            let now = self.acked.lock().unwrap().len();
            (now >= before + n)
                .then_some(())
                .ok_or(format!("{now} acknowledged"))
        });
    }

    /// Stops writing, waits for every delivery, asserts none failed; gives
    /// the acknowledged (offset, value) pairs by offset.
    async fn finish(self) -> Vec<(i64, String)> {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.unwrap();
        let failed = self.failed.lock().unwrap().clone();
        assert!(failed.is_empty(), "deliveries failed: {failed:?}");
        let mut acked = self.acked.lock().unwrap().clone();
        acked.sort();
        acked
    }
}

/// Reads `topic`-0 back and asserts every acknowledged record is there
/// exactly once, at its acknowledged offset, in send order, and that every
/// replica holds the same batches; gives the records read.
fn check_exactly_once(c: &Cluster, topic: &str, acked: &[(i64, String)]) -> usize {
    let read = read_all(c, topic, acked.len());
    let mut seen = BTreeMap::new();
    for (off, v) in &read {
        assert!(seen.insert(v.clone(), *off).is_none(), "{v} read twice");
    }
    for (off, v) in acked {
        assert_eq!(seen.get(v), Some(off), "acked {v} at {off}");
    }
    let values: Vec<&String> = read.iter().map(|(_, v)| v).collect();
    let mut sorted = values.clone();
    sorted.sort();
    assert_eq!(values, sorted, "records out of send order");
    wait_replicas_agree(c, topic, acked.len() as i64);
    read.len()
}

/// (Done-when, part 2) A follower cut off from its leader (its fetches
/// black-holed, its heartbeats still flowing) leaves the ISR after
/// `replica.lag.time.max.ms`; acks=all goes on with two in sync; with the
/// second follower cut off too, acks=all gets NOT_ENOUGH_REPLICAS; healed, both catch up and rejoin the ISR with
/// the same batches as the leader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_follower_leaves_the_isr_and_rejoins() {
    let c = Cluster::start_with_proxies(
        3,
        &[
            "replica.lag.time.max.ms=2000",
            "replica.socket.timeout.ms=2000",
            "replica.fetch.backoff.ms=200",
        ],
    );
    let topic = "cutoff";
    create_durable(&c, topic).await;
    let all = c.ids();
    let leader = wait_partition(&c, &all, topic, &[], Some(&all));
    let followers: Vec<i32> = all.iter().copied().filter(|&id| id != leader).collect();
    let (f1, f2) = (followers[0], followers[1]);
    assert_eq!(c.produce_raw(leader, topic, "all-three"), 0);

    c.set_data_link(f2, leader, Fault::BlackHole);
    wait_partition(&c, &all, topic, &[], Some(&[leader, f1]));
    for _ in 0..5 {
        assert_eq!(c.produce_raw(leader, topic, "two-in-sync"), 0);
    }

    c.set_data_link(f1, leader, Fault::BlackHole);
    wait_partition(&c, &all, topic, &[], Some(&[leader]));
    assert_eq!(c.produce_raw(leader, topic, "refused"), NOT_ENOUGH_REPLICAS);

    c.set_data_link(f1, leader, Fault::Pass);
    c.set_data_link(f2, leader, Fault::Pass);
    wait_partition(&c, &all, topic, &[], Some(&all));
    assert_eq!(c.produce_raw(leader, topic, "all-three-again"), 0);
    wait_replicas_agree(&c, topic, 7);
    let read: Vec<String> = read_all(&c, topic, 7).into_iter().map(|(_, v)| v).collect();
    assert_eq!(read.first().map(String::as_str), Some("all-three"));
    assert_eq!(read.last().map(String::as_str), Some("all-three-again"));
    assert!(!read.iter().any(|v| v == "refused"), "{read:?}");
}

/// ElectLeaders (preferred) for `topic`-0 through node `id`: the
/// partition's error code.
fn elect_preferred(c: &Cluster, id: i32, topic: &str) -> i16 {
    let req = ElectLeadersRequest::default()
        .with_election_type(0)
        .with_timeout_ms(30_000)
        .with_topic_partitions(Some(vec![TopicPartitions::default()
            .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partitions(vec![0])]));
    let mut s = TcpStream::connect(c.bootstrap(id)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    let resp: ElectLeadersResponse = try_kp_call(&mut s, 2, 3, &req).unwrap();
    assert_eq!(resp.error_code, 0);
    resp.replica_election_results[0].partition_result[0].error_code
}

/// After its preferred leader was killed and came back in sync, a partition
/// is led by another replica until ElectLeaders (preferred, as
/// `kafka-leader-election.sh --election-type PREFERRED`) moves it back; a
/// second election is not needed (ELECTION_NOT_NEEDED), and the data
/// written before and after is all there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preferred_leader_election_moves_leadership_back() {
    let mut c = Cluster::start(3, &[]);
    let topic = "preferred";
    create_durable(&c, topic).await;
    let all = c.ids();
    let preferred = layout_on(&c, 1, topic).unwrap().unwrap().parts[&0].replicas[0];
    let leader = wait_partition(&c, &all, topic, &[], Some(&all));
    assert_eq!(leader, preferred);
    assert_eq!(c.produce_raw(leader, topic, "first"), 0);
    c.kill9(preferred);
    let others: Vec<i32> = all.iter().copied().filter(|&id| id != preferred).collect();
    let interim = wait_partition(&c, &others, topic, &[preferred], None);
    assert_eq!(c.produce_raw(interim, topic, "second"), 0);
    c.start_node(preferred);
    wait_partition(&c, &all, topic, &[], Some(&all));
    assert_eq!(
        wait_partition(&c, &all, topic, &[], None),
        interim,
        "no automatic move back"
    );
    assert_eq!(elect_preferred(&c, others[0], topic), 0);
    assert_eq!(wait_partition(&c, &all, topic, &[interim], None), preferred);
    assert_eq!(
        elect_preferred(&c, preferred, topic),
        84,
        "ELECTION_NOT_NEEDED"
    );
    assert_eq!(c.produce_raw(preferred, topic, "third"), 0);
    let read: Vec<String> = read_all(&c, topic, 3).into_iter().map(|(_, v)| v).collect();
    assert_eq!(read, ["first", "second", "third"]);
    wait_replicas_agree(&c, topic, 3);
}

/// With `auto.leader.rebalance.enable` (Kafka's default) and a short
/// `leader.imbalance.check.interval.seconds`, the preferred replica leads
/// its partition again by itself once it is back in the ISR.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preferred_replica_leads_again_by_itself() {
    let mut c = Cluster::start(3, &["leader.imbalance.check.interval.seconds=1"]);
    let topic = "rebalanced";
    create_durable(&c, topic).await;
    let all = c.ids();
    let preferred = wait_partition(&c, &all, topic, &[], Some(&all));
    c.kill9(preferred);
    let others: Vec<i32> = all.iter().copied().filter(|&id| id != preferred).collect();
    let interim = wait_partition(&c, &others, topic, &[preferred], None);
    assert_eq!(c.produce_raw(interim, topic, "while-away"), 0);
    c.start_node(preferred);
    let others_now: Vec<i32> = all.iter().copied().filter(|&id| id != preferred).collect();
    assert_eq!(
        wait_partition(&c, &all, topic, &others_now, Some(&all)),
        preferred
    );
    assert_eq!(c.produce_raw(preferred, topic, "back"), 0);
    let read: Vec<String> = read_all(&c, topic, 2).into_iter().map(|(_, v)| v).collect();
    assert_eq!(read, ["while-away", "back"]);
}
