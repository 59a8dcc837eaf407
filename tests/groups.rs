//! Consumer groups end to end: librdkafka consumers that `subscribe` (join,
//! sync, heartbeat, leave, commit, fetch offsets) against the real broker,
//! plus the group APIs' error answers on a raw connection.
//!
//! Every membership check waits for two views to agree: each consumer's own
//! `assignment()` and the coordinator's (DescribeGroups: state `Stable`, the
//! expected members, their assignments decoded from the group protocol).

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::ops::Range;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use common::*;
use kafka_protocol::messages::{self as kp, ConsumerProtocolAssignment};
use kafka_protocol::protocol::{Decodable, StrBytes};
use rdkafka::client::ClientContext;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::RDKafkaErrorCode;
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

/// Broker settings for fast group tests.
const OVERRIDES: &[&str] = &[
    "offsets.topic.num.partitions=4",
    "group.initial.rebalance.delay.ms=0",
    "group.min.session.timeout.ms=1000",
];

/// Deadline for a group to settle after a membership change.
const SETTLE: Duration = Duration::from_secs(30);

fn start_broker() -> Broker {
    Broker::start_with(OVERRIDES)
}

fn all_partitions(n: i32) -> BTreeSet<i32> {
    (0..n).collect()
}

/// Produces values `v{i}` for `range`, record `i` to partition `i % partitions`;
/// gives `(partition, offset, value)` per record.
async fn produce(
    broker: &Broker,
    topic: &str,
    partitions: i32,
    range: Range<usize>,
) -> Vec<(i32, i64, String)> {
    let producer = broker.producer(&[]);
    let values: Vec<(i32, String)> = range
        .map(|i| ((i as i32) % partitions, format!("v{i}")))
        .collect();
    send_to_partitions(&producer, topic, &values, Duration::from_secs(60)).await
}

fn sorted<T: Ord + Clone>(v: &[T]) -> Vec<T> {
    let mut v = v.to_vec();
    v.sort();
    v
}

/// `(partition, offset, value)` of consumed messages.
fn triples(msgs: &[rdkafka::message::OwnedMessage]) -> Vec<(i32, i64, String)> {
    msgs.iter()
        .map(|m| {
            (
                m.partition(),
                m.offset(),
                String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned(),
            )
        })
        .collect()
}

/// Committed offset per partition of `topic` for the group of `consumer`
/// (OffsetFetch); `None` where nothing is committed.
fn committed(consumer: &BaseConsumer, topic: &str, partitions: i32) -> BTreeMap<i32, Option<i64>> {
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition(topic, p);
    }
    let got = consumer
        .committed_offsets(tpl, CLIENT_TIMEOUT)
        .expect("committed_offsets (OffsetFetch)");
    got.elements()
        .iter()
        .map(|e| {
            assert!(
                e.error().is_ok(),
                "partition {}: {:?}",
                e.partition(),
                e.error()
            );
            let off = match e.offset() {
                Offset::Offset(o) => Some(o),
                Offset::Invalid => None,
                other => panic!("unexpected committed offset {other:?}"),
            };
            (e.partition(), off)
        })
        .collect()
}

// ---------------------------------------------------------------- members

/// Counts the rebalance callbacks a consumer receives.
#[derive(Default)]
struct RebalanceLog {
    assigned: AtomicUsize,
    revoked: AtomicUsize,
    /// Rebalance errors (e.g. a failed incremental assign).
    errors: Mutex<Vec<String>>,
    /// Errors returned by `poll` (diagnostics only: transient ones are normal).
    poll_errors: Mutex<Vec<String>>,
}

impl ClientContext for RebalanceLog {}

impl ConsumerContext for RebalanceLog {
    fn post_rebalance(&self, _c: &BaseConsumer<Self>, r: &Rebalance<'_>) {
        match r {
            Rebalance::Assign(_) => {
                self.assigned.fetch_add(1, Ordering::SeqCst);
            }
            Rebalance::Revoke(_) => {
                self.revoked.fetch_add(1, Ordering::SeqCst);
            }
            Rebalance::Error(e) => self.errors.lock().unwrap().push(e.to_string()),
        }
    }
}

type Received = Arc<Mutex<Vec<(i32, i64, String)>>>;

/// A subscribed consumer polled by its own thread. Dropping it closes the
/// consumer (which leaves the group, unless it is a static member).
struct Member {
    client_id: String,
    topic: String,
    consumer: Option<Arc<BaseConsumer<RebalanceLog>>>,
    stop: Arc<AtomicBool>,
    poller: Option<JoinHandle<()>>,
    received: Received,
}

impl Member {
    /// Creates a consumer in `group` with `client.id` = `client_id`,
    /// subscribes to `topic` and starts polling.
    fn join(
        broker: &Broker,
        group: &str,
        client_id: &str,
        topic: &str,
        extra: &[(&str, &str)],
    ) -> Member {
        let mut cfg = broker.group_config(group, extra);
        cfg.set("client.id", client_id);
        let consumer: BaseConsumer<RebalanceLog> = cfg
            .create_with_context(RebalanceLog::default())
            .expect("create group consumer");
        consumer.subscribe(&[topic]).expect("subscribe");
        let consumer = Arc::new(consumer);
        let stop = Arc::new(AtomicBool::new(false));
        let received: Received = Arc::default();
        let poller = {
            let (c, stop, received) = (consumer.clone(), stop.clone(), received.clone());
            thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match c.poll(Duration::from_millis(50)) {
                        Some(Ok(m)) => received.lock().unwrap().push((
                            m.partition(),
                            m.offset(),
                            String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned(),
                        )),
                        Some(Err(e)) => c.context().poll_errors.lock().unwrap().push(e.to_string()),
                        None => {}
                    }
                }
            })
        };
        Member {
            client_id: client_id.to_string(),
            topic: topic.to_string(),
            consumer: Some(consumer),
            stop,
            poller: Some(poller),
            received,
        }
    }

    fn consumer(&self) -> &BaseConsumer<RebalanceLog> {
        self.consumer.as_ref().expect("member is closed")
    }

    /// Partitions of the topic currently assigned, as the consumer sees them.
    fn assignment(&self) -> BTreeSet<i32> {
        self.consumer()
            .assignment()
            .expect("assignment")
            .elements()
            .iter()
            .filter(|e| e.topic() == self.topic)
            .map(|e| e.partition())
            .collect()
    }

    fn received(&self) -> Vec<(i32, i64, String)> {
        self.received.lock().unwrap().clone()
    }

    /// (assign callbacks, revoke callbacks) so far.
    fn rebalances(&self) -> (usize, usize) {
        let log = self.consumer().context();
        (
            log.assigned.load(Ordering::SeqCst),
            log.revoked.load(Ordering::SeqCst),
        )
    }

    /// Rebalance errors so far.
    fn errors(&self) -> Vec<String> {
        self.consumer().context().errors.lock().unwrap().clone()
    }

    /// Stops polling and closes the consumer.
    fn close(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.poller.take() {
            let _ = h.join();
        }
        // The poller's clone is gone: this drop closes the consumer.
        self.consumer.take();
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Each member's own view of its assignment, by client id.
fn local_views(members: &[&Member]) -> BTreeMap<String, BTreeSet<i32>> {
    members
        .iter()
        .map(|m| (m.client_id.clone(), m.assignment()))
        .collect()
}

// ---------------------------------------------------------------- coordinator view

#[derive(Debug, Clone)]
struct ViewMember {
    member_id: String,
    client_id: String,
    client_host: String,
    metadata_len: usize,
    partitions: BTreeSet<i32>,
}

/// A group as DescribeGroups shows it (through librdkafka's list_groups).
#[derive(Debug, Clone)]
struct GroupView {
    state: String,
    protocol_type: String,
    protocol: String,
    members: Vec<ViewMember>,
}

impl GroupView {
    fn by_client(&self) -> BTreeMap<String, BTreeSet<i32>> {
        self.members
            .iter()
            .map(|m| (m.client_id.clone(), m.partitions.clone()))
            .collect()
    }

    fn member(&self, client_id: &str) -> &ViewMember {
        self.members
            .iter()
            .find(|m| m.client_id == client_id)
            .unwrap_or_else(|| panic!("no member with client id {client_id} in {self:?}"))
    }
}

/// Partitions of `topic` in a ConsumerProtocolAssignment (version-prefixed).
fn decode_assignment(bytes: &[u8], topic: &str) -> Result<BTreeSet<i32>, String> {
    if bytes.is_empty() {
        return Ok(BTreeSet::new());
    }
    if bytes.len() < 2 {
        return Err(format!("assignment of {} byte(s)", bytes.len()));
    }
    let mut b = Bytes::copy_from_slice(bytes);
    let version = b.get_i16();
    let a = ConsumerProtocolAssignment::decode(&mut b, version)
        .map_err(|e| format!("undecodable assignment v{version}: {e}"))?;
    let mut out = BTreeSet::new();
    for tp in a.assigned_partitions {
        if tp.topic.as_str() != topic {
            return Err(format!("assignment names topic {:?}", tp.topic.as_str()));
        }
        out.extend(tp.partitions);
    }
    Ok(out)
}

/// The coordinator's description of `group`, or `None` when it does not list
/// it (or lists it as Dead).
fn describe(
    observer: &BaseConsumer,
    group: &str,
    topic: &str,
) -> Result<Option<GroupView>, String> {
    let list = observer
        .fetch_group_list(Some(group), CLIENT_TIMEOUT)
        .map_err(|e| format!("fetch_group_list: {e}"))?;
    let Some(g) = list.groups().iter().find(|g| g.name() == group) else {
        return Ok(None);
    };
    if g.state() == "Dead" {
        return Ok(None);
    }
    let mut members = Vec::new();
    for m in g.members() {
        members.push(ViewMember {
            member_id: m.id().to_string(),
            client_id: m.client_id().to_string(),
            client_host: m.client_host().to_string(),
            metadata_len: m.metadata().map_or(0, |b| b.len()),
            partitions: decode_assignment(m.assignment().unwrap_or_default(), topic)?,
        });
    }
    Ok(Some(GroupView {
        state: g.state().to_string(),
        protocol_type: g.protocol_type().to_string(),
        protocol: g.protocol().to_string(),
        members,
    }))
}

/// Waits until the group is Stable with exactly the members of `local()`
/// (client id → the consumer's own assignment), every consumer's view equals
/// the coordinator's, and the assignments are non-empty, disjoint and cover
/// all `partitions`. Gives the final assignment and the coordinator's view.
fn wait_balanced(
    observer: &BaseConsumer,
    group: &str,
    topic: &str,
    partitions: i32,
    mut local: impl FnMut() -> BTreeMap<String, BTreeSet<i32>>,
) -> (BTreeMap<String, BTreeSet<i32>>, GroupView) {
    poll_until(SETTLE, &format!("group {group} to settle"), || {
        let mine = local();
        let view = describe(observer, group, topic)?
            .ok_or_else(|| format!("group {group} not listed; local {mine:?}"))?;
        if view.state != "Stable" {
            return Err(format!("state {}; local {mine:?}", view.state));
        }
        let theirs = view.by_client();
        if view.members.len() != mine.len() || theirs != mine {
            return Err(format!("coordinator {:?} vs local {mine:?}", view.members));
        }
        check_partition_split(&mine, partitions)?;
        Ok((mine, view))
    })
}

/// Non-empty, pairwise disjoint sets covering `0..partitions`.
fn check_partition_split(
    split: &BTreeMap<String, BTreeSet<i32>>,
    partitions: i32,
) -> Result<(), String> {
    let mut union = BTreeSet::new();
    for (who, set) in split {
        if set.is_empty() {
            return Err(format!("{who} has no partitions in {split:?}"));
        }
        for p in set {
            if !union.insert(*p) {
                return Err(format!("partition {p} assigned twice in {split:?}"));
            }
        }
    }
    if union != all_partitions(partitions) {
        return Err(format!("{split:?} does not cover 0..{partitions}"));
    }
    Ok(())
}

// ---------------------------------------------------------------- tests

/// A consumer commits what it consumed and closes; a new consumer in the same
/// group starts exactly at the committed offsets: it gets every record
/// produced afterwards and nothing it had already seen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_consumer_resumes_at_committed_offset() {
    let broker = start_broker();
    let (topic, group) = ("resume", "resume-group");
    broker.create_topic(topic, 2).await;
    let first = produce(&broker, topic, 2, 0..40).await;

    let c1 = broker.group_consumer(group, &[]);
    c1.subscribe(&[topic]).expect("subscribe");
    let got = triples(&consume_n(&c1, first.len(), SETTLE));
    assert_eq!(sorted(&got), sorted(&first), "first consumer's records");
    c1.commit_consumer_state(CommitMode::Sync)
        .expect("synchronous commit");
    let want: BTreeMap<i32, Option<i64>> = [(0, Some(20)), (1, Some(20))].into();
    assert_eq!(committed(&c1, topic, 2), want, "committed after the commit");
    drop(c1);

    let second = produce(&broker, topic, 2, 40..70).await;
    let c2 = broker.group_consumer(group, &[]);
    assert_eq!(
        committed(&c2, topic, 2),
        want,
        "committed seen by a new consumer"
    );
    c2.subscribe(&[topic]).expect("subscribe");
    let got = triples(&consume_n(&c2, second.len(), SETTLE));
    assert_eq!(
        sorted(&got),
        sorted(&second),
        "second consumer must get exactly the records after the commit"
    );
    assert_no_more(&c2, Duration::from_millis(800));
}

/// Two consumers split a 4-partition topic (disjoint, non-empty, covering)
/// and together consume every record exactly once, each only from its own
/// partitions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_consumers_split_partitions_and_records() {
    let broker = start_broker();
    let (topic, group) = ("split", "split-group");
    broker.create_topic(topic, 4).await;
    let observer = broker.consumer(&[]);
    let a = Member::join(&broker, group, "a", topic, &[]);
    let b = Member::join(&broker, group, "b", topic, &[]);
    let (split, view) = wait_balanced(&observer, group, topic, 4, || local_views(&[&a, &b]));
    assert_eq!(view.protocol_type, "consumer");

    let sent = produce(&broker, topic, 4, 0..200).await;
    poll_until(SETTLE, "all 200 records consumed", || {
        let n = a.received().len() + b.received().len();
        if n >= sent.len() {
            Ok(())
        } else {
            Err(format!("{n} consumed"))
        }
    });
    let mut all = a.received();
    all.extend(b.received());
    assert_eq!(sorted(&all), sorted(&sent), "every record exactly once");
    for m in [&a, &b] {
        let mine = &split[&m.client_id];
        for (p, o, _) in m.received() {
            assert!(
                mine.contains(&p),
                "{} got {p}@{o} outside its {mine:?}",
                m.client_id
            );
        }
    }
    assert_eq!(local_views(&[&a, &b]), split, "no rebalance after settling");
}

/// A third consumer joins: three disjoint covering assignments. One closes:
/// its partitions move to the other two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_joining_and_leaving_rebalance() {
    let broker = start_broker();
    let (topic, group) = ("rebalance", "rebalance-group");
    broker.create_topic(topic, 4).await;
    let observer = broker.consumer(&[]);
    let a = Member::join(&broker, group, "a", topic, &[]);
    let b = Member::join(&broker, group, "b", topic, &[]);
    wait_balanced(&observer, group, topic, 4, || local_views(&[&a, &b]));

    let c = Member::join(&broker, group, "c", topic, &[]);
    let (three, _) = wait_balanced(&observer, group, topic, 4, || local_views(&[&a, &b, &c]));
    assert_eq!(three.len(), 3);

    let moved = three["b"].clone();
    b.close();
    let (two, view) = wait_balanced(&observer, group, topic, 4, || local_views(&[&a, &c]));
    assert_eq!(view.members.len(), 2);
    for p in moved {
        assert!(
            two["a"].contains(&p) || two["c"].contains(&p),
            "partition {p} of the closed member not reassigned: {two:?}"
        );
    }
}

/// Two members with `strategy`; optionally a third joins afterwards.
/// Returns the assignments after each step.
fn check_assignor(
    broker: &Broker,
    strategy: &str,
    third: bool,
) -> Vec<BTreeMap<String, BTreeSet<i32>>> {
    let topic = format!("assign-{strategy}");
    let group = format!("group-{strategy}");
    let observer = broker.consumer(&[]);
    let extra = [("partition.assignment.strategy", strategy)];
    let a = Member::join(broker, &group, "a", &topic, &extra);
    let b = Member::join(broker, &group, "b", &topic, &extra);
    let (two, view) = wait_balanced(&observer, &group, &topic, 4, || local_views(&[&a, &b]));
    assert_eq!(
        view.protocol, strategy,
        "protocol chosen by the coordinator"
    );
    assert!(
        two.values().all(|s| s.len() == 2),
        "{strategy}: 4 partitions over 2 members should be 2 + 2: {two:?}"
    );
    let mut out = vec![two];
    if third {
        let c = Member::join(broker, &group, "c", &topic, &extra);
        let (three, view) =
            wait_balanced(&observer, &group, &topic, 4, || local_views(&[&a, &b, &c]));
        assert_eq!(view.protocol, strategy);
        let errors: Vec<String> = [&a, &b, &c].iter().flat_map(|m| m.errors()).collect();
        assert!(errors.is_empty(), "rebalance errors: {errors:?}");
        out.push(three);
    }
    out
}

async fn assignor_test(strategy: &str, third: bool) -> Vec<BTreeMap<String, BTreeSet<i32>>> {
    let broker = start_broker();
    broker.create_topic(&format!("assign-{strategy}"), 4).await;
    check_assignor(&broker, strategy, third)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn range_assignor() {
    let steps = assignor_test("range", false).await;
    // Range gives each member a contiguous run.
    for set in steps[0].values() {
        let v: Vec<i32> = set.iter().copied().collect();
        assert_eq!(v[1], v[0] + 1, "range assignment {:?}", steps[0]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roundrobin_assignor() {
    let steps = assignor_test("roundrobin", false).await;
    for set in steps[0].values() {
        let v: Vec<i32> = set.iter().copied().collect();
        assert_eq!(v[1], v[0] + 2, "round-robin assignment {:?}", steps[0]);
    }
}

/// Cooperative rebalancing rejoins twice when a member is added (revoke, then
/// assign); the result covers all partitions and the old members keep a
/// subset of what they had (their owned partitions reached the leader).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cooperative_sticky_assignor() {
    let steps = assignor_test("cooperative-sticky", true).await;
    for who in ["a", "b"] {
        assert!(
            steps[1][who].is_subset(&steps[0][who]),
            "{who} gained partitions in a sticky rebalance: {:?} -> {:?}",
            steps[0],
            steps[1]
        );
    }
}

/// With auto commit on, the committed offsets (OffsetFetch from another
/// consumer of the group) reach the end of every partition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_commit_reaches_the_end() {
    let broker = start_broker();
    let (topic, group) = ("autocommit", "autocommit-group");
    broker.create_topic(topic, 2).await;
    let observer = broker.consumer(&[]);
    let m = Member::join(
        &broker,
        group,
        "auto",
        topic,
        &[
            ("enable.auto.commit", "true"),
            ("auto.commit.interval.ms", "200"),
        ],
    );
    wait_balanced(&observer, group, topic, 2, || local_views(&[&m]));
    let sent = produce(&broker, topic, 2, 0..100).await;
    poll_until(SETTLE, "all records consumed", || {
        let n = m.received().len();
        if n >= sent.len() {
            Ok(())
        } else {
            Err(format!("{n} consumed"))
        }
    });
    assert_eq!(sorted(&m.received()), sorted(&sent));
    let checker = broker.group_consumer(group, &[]);
    let want: BTreeMap<i32, Option<i64>> = [(0, Some(50)), (1, Some(50))].into();
    poll_until(SETTLE, "auto-committed offsets at the end", || {
        let got = committed(&checker, topic, 2);
        if got == want {
            Ok(())
        } else {
            Err(format!("{got:?}"))
        }
    });
}

// ---------------------------------------------------------------- dead member

const CHILD_ENV: &str = "FJORD_IT_GROUP_CHILD";
const CHILD_TEST: &str = "group_member_child_process";

/// Not a test by itself: when `FJORD_IT_GROUP_CHILD` is set, this process is
/// the group member that `dead_member_is_removed_after_session_timeout`
/// kills with SIGKILL. It prints its assignment whenever it changes and
/// exits when its stdin closes (the parent went away) or after 2 minutes.
#[test]
fn group_member_child_process() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let parts: Vec<&str> = spec.split('|').collect();
    let [bootstrap, topic, group, client_id, session] = parts[..] else {
        panic!("bad {CHILD_ENV}: {spec}");
    };
    thread::spawn(|| {
        let mut buf = [0u8; 64];
        let mut stdin = std::io::stdin();
        while let Ok(n) = stdin.read(&mut buf) {
            if n == 0 {
                break;
            }
        }
        std::process::exit(0);
    });
    let consumer: BaseConsumer = group_client_config(
        bootstrap,
        group,
        &[("client.id", client_id), ("session.timeout.ms", session)],
    )
    .create()
    .expect("create child consumer");
    consumer.subscribe(&[topic]).expect("subscribe");
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut last: Option<Vec<i32>> = None;
    while Instant::now() < deadline {
        let _ = consumer.poll(Duration::from_millis(50));
        let now: Vec<i32> = consumer
            .assignment()
            .map(|t| t.elements().iter().map(|e| e.partition()).collect())
            .unwrap_or_default();
        if last.as_ref() != Some(&now) {
            let list: Vec<String> = now.iter().map(|p| p.to_string()).collect();
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "CHILD-ASSIGNMENT [{}]", list.join(","));
            let _ = out.flush();
            last = Some(now);
        }
    }
    std::process::exit(0);
}

/// Kills the child on drop (test failure included).
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A member whose process is killed (no LeaveGroup) is removed when its
/// session times out; the survivor then owns every partition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_member_is_removed_after_session_timeout() {
    const SESSION_MS: u64 = 2000;
    let broker = start_broker();
    let (topic, group) = ("deadmember", "deadmember-group");
    broker.create_topic(topic, 4).await;
    let observer = broker.consumer(&[]);

    let spec = format!("{}|{topic}|{group}|doomed|{SESSION_MS}", broker.bootstrap());
    let mut child = Command::new(std::env::current_exe().expect("current exe"))
        .args(["--exact", CHILD_TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, spec)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child consumer");
    let stdout = child.stdout.take().expect("child stdout");
    let mut child = ChildGuard(child);
    let child_view: Arc<Mutex<Option<BTreeSet<i32>>>> = Arc::default();
    {
        let view = child_view.clone();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                eprintln!("child: {line}");
                if let Some((_, rest)) = line.split_once("CHILD-ASSIGNMENT [") {
                    let set = rest
                        .trim_end_matches(']')
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(|s| s.parse().expect("partition"))
                        .collect();
                    *view.lock().unwrap() = Some(set);
                }
            }
        });
    }
    let child_local = || child_view.lock().unwrap().clone().unwrap_or_default();
    wait_balanced(&observer, group, topic, 4, || {
        [("doomed".to_string(), child_local())].into()
    });

    let b = Member::join(
        &broker,
        group,
        "survivor",
        topic,
        &[("session.timeout.ms", "2000")],
    );
    wait_balanced(&observer, group, topic, 4, || {
        let mut m = local_views(&[&b]);
        m.insert("doomed".into(), child_local());
        m
    });

    let killed_at = Instant::now();
    child.0.kill().expect("SIGKILL the child consumer");
    child.0.wait().expect("reap child");
    let (split, view) = wait_balanced(&observer, group, topic, 4, || local_views(&[&b]));
    let took = killed_at.elapsed();
    assert_eq!(split["survivor"], all_partitions(4));
    assert_eq!(view.members.len(), 1);
    // Without a LeaveGroup the coordinator can only notice the session
    // expiry: not before session.timeout.ms minus one heartbeat interval.
    assert!(
        took >= Duration::from_millis(SESSION_MS - 1000),
        "dead member removed after only {took:?}"
    );
}

// ---------------------------------------------------------------- static membership

/// A static member (`group.instance.id`) that closes (no LeaveGroup) and comes
/// back within its session timeout gets its old assignment; the other member
/// sees no rebalance at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_member_rejoins_without_rebalance() {
    let broker = start_broker();
    let (topic, group) = ("static", "static-group");
    broker.create_topic(topic, 4).await;
    let observer = broker.consumer(&[]);
    let static_extra = [
        ("group.instance.id", "instance-a"),
        ("session.timeout.ms", "10000"),
    ];
    let a = Member::join(&broker, group, "a", topic, &static_extra);
    wait_balanced(&observer, group, topic, 4, || local_views(&[&a]));
    let b = Member::join(
        &broker,
        group,
        "b",
        topic,
        &[("session.timeout.ms", "10000")],
    );
    let (before, view_before) =
        wait_balanced(&observer, group, topic, 4, || local_views(&[&a, &b]));
    let b_rebalances = b.rebalances();
    let old_a_id = view_before.member("a").member_id.clone();
    let b_id = view_before.member("b").member_id.clone();

    a.close();
    let a2 = Member::join(&broker, group, "a", topic, &static_extra);
    let (after, view_after) = wait_balanced(&observer, group, topic, 4, || local_views(&[&a2, &b]));
    assert_eq!(
        after, before,
        "assignments after the static member came back"
    );
    assert_ne!(
        view_after.member("a").member_id,
        old_a_id,
        "the returning instance gets a new member id"
    );
    assert_eq!(view_after.member("b").member_id, b_id);
    assert_eq!(
        b.rebalances(),
        b_rebalances,
        "the other member must see no rebalance (assign, revoke callbacks)"
    );
    assert_eq!(a2.rebalances(), (1, 0), "returning member: one assignment");
}

// ---------------------------------------------------------------- restart

/// Committed offsets and the group survive a clean broker restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_and_group_survive_restart() {
    let mut broker = start_broker();
    let (topic, group) = ("durable", "durable-group");
    broker.create_topic(topic, 2).await;
    let first = produce(&broker, topic, 2, 0..30).await;
    {
        let c = broker.group_consumer(group, &[]);
        c.subscribe(&[topic]).expect("subscribe");
        let got = triples(&consume_n(&c, first.len(), SETTLE));
        assert_eq!(sorted(&got), sorted(&first));
        c.commit_consumer_state(CommitMode::Sync).expect("commit");
    }
    let observer = broker.consumer(&[]);
    poll_until(
        SETTLE,
        "group Empty after its consumer closed",
        || match describe(&observer, group, topic)? {
            Some(v) if v.state == "Empty" && v.members.is_empty() => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    drop(observer);

    broker.restart();
    let observer = broker.consumer(&[]);
    let view = poll_until(SETTLE, "group listed after restart", || {
        describe(&observer, group, topic)?.ok_or_else(|| "not listed".to_string())
    });
    assert_eq!(view.state, "Empty", "group after restart: {view:?}");
    assert!(view.members.is_empty(), "group after restart: {view:?}");
    let listed = observer
        .fetch_group_list(None, CLIENT_TIMEOUT)
        .expect("list groups");
    assert!(
        listed.groups().iter().any(|g| g.name() == group),
        "ListGroups after restart lacks {group}"
    );

    let second = produce(&broker, topic, 2, 30..50).await;
    let c = broker.group_consumer(group, &[]);
    let want: BTreeMap<i32, Option<i64>> = [(0, Some(15)), (1, Some(15))].into();
    assert_eq!(
        committed(&c, topic, 2),
        want,
        "committed offsets after restart"
    );
    c.subscribe(&[topic]).expect("subscribe");
    let got = triples(&consume_n(&c, second.len(), SETTLE));
    assert_eq!(
        sorted(&got),
        sorted(&second),
        "resumed at the committed offsets"
    );
    assert_no_more(&c, Duration::from_millis(800));
}

// ---------------------------------------------------------------- admin

/// ListGroups/DescribeGroups while active and when Empty; DeleteGroups
/// refuses a non-empty group, deletes an empty one with its offsets, and
/// answers GROUP_ID_NOT_FOUND the second time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_describe_and_delete_groups() {
    let broker = start_broker();
    let (topic, group) = ("admin-groups", "admin-group");
    broker.create_topic(topic, 4).await;
    let observer = broker.consumer(&[]);
    let admin = broker.admin();
    let a = Member::join(&broker, group, "a", topic, &[]);
    let b = Member::join(&broker, group, "b", topic, &[]);
    let (_, view) = wait_balanced(&observer, group, topic, 4, || local_views(&[&a, &b]));
    assert_eq!(view.protocol_type, "consumer");
    assert_eq!(
        view.protocol, "range",
        "librdkafka's first default assignor"
    );
    for m in &view.members {
        assert!(!m.member_id.is_empty(), "{m:?}");
        assert_eq!(m.client_host, "/127.0.0.1", "{m:?}");
        assert!(m.metadata_len > 0, "subscription metadata missing: {m:?}");
    }
    let listed = observer
        .fetch_group_list(None, CLIENT_TIMEOUT)
        .expect("list groups");
    let g = listed
        .groups()
        .iter()
        .find(|g| g.name() == group)
        .expect("ListGroups shows the active group");
    assert_eq!(g.protocol_type(), "consumer");

    let res = admin
        .delete_groups(&[group], &admin_opts())
        .await
        .expect("DeleteGroups request");
    assert_eq!(
        res,
        vec![Err((group.to_string(), RDKafkaErrorCode::NonEmptyGroup))]
    );

    a.close();
    b.close();
    poll_until(SETTLE, "group Empty", || {
        match describe(&observer, group, topic)? {
            Some(v) if v.state == "Empty" && v.members.is_empty() => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });

    // A standalone commit (no generation) is allowed for an Empty group.
    let standalone = broker.group_consumer(group, &[]);
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 2, Offset::Offset(0))
        .expect("tpl");
    standalone
        .commit(&tpl, CommitMode::Sync)
        .expect("standalone commit to an Empty group");
    assert_eq!(committed(&standalone, topic, 4)[&2], Some(0));

    let res = admin
        .delete_groups(&[group], &admin_opts())
        .await
        .expect("DeleteGroups request");
    assert_eq!(res, vec![Ok(group.to_string())]);
    assert!(
        describe(&observer, group, topic)
            .expect("describe")
            .is_none(),
        "deleted group still described"
    );
    let listed = observer
        .fetch_group_list(None, CLIENT_TIMEOUT)
        .expect("list groups");
    assert!(
        !listed.groups().iter().any(|g| g.name() == group),
        "deleted group still listed"
    );
    assert!(
        committed(&standalone, topic, 4)
            .values()
            .all(Option::is_none),
        "offsets of a deleted group must be gone"
    );
    let res = admin
        .delete_groups(&[group], &admin_opts())
        .await
        .expect("DeleteGroups request");
    assert_eq!(
        res,
        vec![Err((group.to_string(), RDKafkaErrorCode::GroupIdNotFound))]
    );
}

// ---------------------------------------------------------------- raw protocol

const NONE: i16 = 0;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const ILLEGAL_GENERATION: i16 = 22;
const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
const UNKNOWN_MEMBER_ID: i16 = 25;
const INVALID_SESSION_TIMEOUT: i16 = 26;
const MEMBER_ID_REQUIRED: i16 = 79;
const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;

/// `(topic, partition, committed offset)` as OffsetFetch answers them.
type CommittedList = Vec<(String, i32, i64)>;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// ConsumerProtocolSubscription v0 for `topics`, version-prefixed.
fn subscription(topics: &[&str]) -> Bytes {
    let mut w = Wire::new();
    w.i16(0).i32(topics.len() as i32);
    for t in topics {
        w.string(t);
    }
    w.i32(-1); // no user data
    Bytes::from(w.buf)
}

/// ConsumerProtocolAssignment v0 for `partitions` of `topic`, version-prefixed.
fn assignment_bytes(topic: &str, partitions: &[i32]) -> Bytes {
    let mut w = Wire::new();
    w.i16(0).i32(1).string(topic).i32(partitions.len() as i32);
    for p in partitions {
        w.i32(*p);
    }
    w.i32(-1);
    Bytes::from(w.buf)
}

fn join_v4(
    group: &str,
    member_id: &str,
    session_ms: i32,
    protocol_type: &str,
    protocols: &[(&str, Bytes)],
) -> kp::JoinGroupRequest {
    kp::JoinGroupRequest::default()
        .with_group_id(s(group).into())
        .with_session_timeout_ms(session_ms)
        .with_rebalance_timeout_ms(30_000)
        .with_member_id(s(member_id))
        .with_protocol_type(s(protocol_type))
        .with_protocols(
            protocols
                .iter()
                .map(|(n, m)| {
                    kp::join_group_request::JoinGroupRequestProtocol::default()
                        .with_name(s(n))
                        .with_metadata(m.clone())
                })
                .collect(),
        )
}

fn heartbeat_v3(group: &str, generation: i32, member_id: &str) -> kp::HeartbeatRequest {
    kp::HeartbeatRequest::default()
        .with_group_id(s(group).into())
        .with_generation_id(generation)
        .with_member_id(s(member_id))
}

fn commit_v8(
    group: &str,
    generation: i32,
    member_id: &str,
    offsets: &[(&str, i32, i64)],
) -> kp::OffsetCommitRequest {
    use kp::offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic};
    kp::OffsetCommitRequest::default()
        .with_group_id(s(group).into())
        .with_generation_id_or_member_epoch(generation)
        .with_member_id(s(member_id))
        .with_topics(
            offsets
                .iter()
                .map(|(t, p, o)| {
                    OffsetCommitRequestTopic::default()
                        .with_name(s(t).into())
                        .with_partitions(vec![OffsetCommitRequestPartition::default()
                            .with_partition_index(*p)
                            .with_committed_offset(*o)])
                })
                .collect(),
        )
}

fn commit_codes(r: &kp::OffsetCommitResponse) -> Vec<(String, i16)> {
    r.topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.as_str().to_string(), p.error_code))
        })
        .collect()
}

fn fetch_offset_v5(conn: &mut std::net::TcpStream, corr: i32, group: &str, topic: &str) -> i64 {
    let req = kp::OffsetFetchRequest::default()
        .with_group_id(s(group).into())
        .with_topics(Some(vec![
            kp::offset_fetch_request::OffsetFetchRequestTopic::default()
                .with_name(s(topic).into())
                .with_partition_indexes(vec![0]),
        ]));
    let r = kp_call(conn, 5, corr, &req);
    assert_eq!(r.error_code, NONE, "OffsetFetch");
    let p = &r.topics[0].partitions[0];
    assert_eq!(p.error_code, NONE, "OffsetFetch partition");
    p.committed_offset
}

fn offset_delete_v0(
    conn: &mut std::net::TcpStream,
    corr: i32,
    group: &str,
    topic: &str,
) -> (i16, Vec<i16>) {
    use kp::offset_delete_request::{OffsetDeleteRequestPartition, OffsetDeleteRequestTopic};
    let req = kp::OffsetDeleteRequest::default()
        .with_group_id(s(group).into())
        .with_topics(vec![OffsetDeleteRequestTopic::default()
            .with_name(s(topic).into())
            .with_partitions(vec![
                OffsetDeleteRequestPartition::default().with_partition_index(0)
            ])]);
    let r = kp_call(conn, 0, corr, &req);
    let codes = r
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect();
    (r.error_code, codes)
}

/// The error answers of the group APIs, request by request, on a raw
/// connection (requests encoded with the kafka-protocol crate).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_api_errors_on_the_wire() {
    let broker = start_broker();
    let (topic, group) = ("raw-topic", "raw-group");
    broker.create_topic(topic, 1).await;
    let mut conn = connect(&broker.bootstrap());
    let mut corr = 0;
    let mut next = || {
        corr += 1;
        corr
    };

    // FindCoordinator (creates __consumer_offsets): this broker.
    let fc = kp::FindCoordinatorRequest::default().with_key(s(group));
    let r = kp_call(&mut conn, 3, next(), &fc);
    assert_eq!(r.error_code, NONE, "FindCoordinator: {r:?}");
    assert_eq!(
        format!("{}:{}", r.host.as_str(), r.port),
        broker.bootstrap(),
        "coordinator address"
    );

    let meta = subscription(&[topic]);
    let range = [("range", meta.clone())];

    // Session timeout below group.min.session.timeout.ms.
    let r = kp_call(
        &mut conn,
        4,
        next(),
        &join_v4(group, "", 500, "consumer", &range),
    );
    assert_eq!(r.error_code, INVALID_SESSION_TIMEOUT, "{r:?}");

    // KIP-394: the first JoinGroup (v4+) of an unknown member gets an id.
    let r = kp_call(
        &mut conn,
        4,
        next(),
        &join_v4(group, "", 30_000, "consumer", &range),
    );
    assert_eq!(r.error_code, MEMBER_ID_REQUIRED, "{r:?}");
    let member = r.member_id.as_str().to_string();
    assert!(!member.is_empty(), "MEMBER_ID_REQUIRED without a member id");

    let r = kp_call(
        &mut conn,
        4,
        next(),
        &join_v4(group, &member, 30_000, "consumer", &range),
    );
    assert_eq!(r.error_code, NONE, "{r:?}");
    assert_eq!(r.generation_id, 1);
    assert_eq!(r.member_id.as_str(), member);
    assert_eq!(r.leader.as_str(), member, "sole member leads");
    assert_eq!(r.protocol_name.as_ref().map(|p| p.as_str()), Some("range"));
    assert_eq!(r.members.len(), 1);
    assert_eq!(r.members[0].member_id.as_str(), member);
    assert_eq!(r.members[0].metadata, meta, "leader sees member metadata");

    // A second member whose protocols share nothing with the group's, or
    // with another protocol type.
    let mut other = connect(&broker.bootstrap());
    let r = kp_call(
        &mut other,
        4,
        1,
        &join_v4(group, "", 30_000, "consumer", &[("other", meta.clone())]),
    );
    assert_eq!(r.error_code, INCONSISTENT_GROUP_PROTOCOL, "{r:?}");
    let r = kp_call(
        &mut other,
        4,
        2,
        &join_v4(group, "", 30_000, "connect", &range),
    );
    assert_eq!(r.error_code, INCONSISTENT_GROUP_PROTOCOL, "{r:?}");

    // Heartbeat with the wrong generation; SyncGroup by an unknown member.
    let r = kp_call(&mut conn, 3, next(), &heartbeat_v3(group, 2, &member));
    assert_eq!(r.error_code, ILLEGAL_GENERATION, "{r:?}");
    let sync = |generation: i32, member_id: &str, assignments: Vec<(String, Bytes)>| {
        kp::SyncGroupRequest::default()
            .with_group_id(s(group).into())
            .with_generation_id(generation)
            .with_member_id(s(member_id))
            .with_assignments(
                assignments
                    .into_iter()
                    .map(|(m, a)| {
                        kp::sync_group_request::SyncGroupRequestAssignment::default()
                            .with_member_id(s(&m))
                            .with_assignment(a)
                    })
                    .collect(),
            )
    };
    let r = kp_call(&mut conn, 3, next(), &sync(1, "nobody", vec![]));
    assert_eq!(r.error_code, UNKNOWN_MEMBER_ID, "{r:?}");
    let r = kp_call(&mut conn, 3, next(), &sync(7, &member, vec![]));
    assert_eq!(r.error_code, ILLEGAL_GENERATION, "{r:?}");

    // The leader's SyncGroup completes the rebalance.
    let assigned = assignment_bytes(topic, &[0]);
    let r = kp_call(
        &mut conn,
        3,
        next(),
        &sync(1, &member, vec![(member.clone(), assigned.clone())]),
    );
    assert_eq!(r.error_code, NONE, "{r:?}");
    assert_eq!(r.assignment, assigned);
    let r = kp_call(&mut conn, 3, next(), &heartbeat_v3(group, 1, &member));
    assert_eq!(r.error_code, NONE, "{r:?}");
    let r = kp_call(&mut conn, 3, next(), &heartbeat_v3(group, 1, "nobody"));
    assert_eq!(r.error_code, UNKNOWN_MEMBER_ID, "{r:?}");

    // OffsetCommit: per-partition errors for an unknown topic; stale
    // generation and unknown member for the whole request.
    let r = kp_call(
        &mut conn,
        8,
        next(),
        &commit_v8(group, 1, &member, &[(topic, 0, 5), ("no-such-topic", 0, 1)]),
    );
    assert_eq!(
        commit_codes(&r),
        vec![
            (topic.to_string(), NONE),
            ("no-such-topic".to_string(), UNKNOWN_TOPIC_OR_PARTITION)
        ]
    );
    let r = kp_call(
        &mut conn,
        8,
        next(),
        &commit_v8(group, 0, &member, &[(topic, 0, 9)]),
    );
    assert_eq!(
        commit_codes(&r),
        vec![(topic.to_string(), ILLEGAL_GENERATION)]
    );
    let r = kp_call(
        &mut conn,
        8,
        next(),
        &commit_v8(group, 1, "nobody", &[(topic, 0, 9)]),
    );
    assert_eq!(
        commit_codes(&r),
        vec![(topic.to_string(), UNKNOWN_MEMBER_ID)]
    );
    let c = next();
    assert_eq!(
        fetch_offset_v5(&mut conn, c, group, topic),
        5,
        "only the valid commit counts"
    );

    // OffsetDelete refuses a topic the group is subscribed to.
    let c = next();
    assert_eq!(
        offset_delete_v0(&mut conn, c, group, topic),
        (NONE, vec![GROUP_SUBSCRIBED_TO_TOPIC])
    );

    // OffsetFetch of every committed partition (null topics), and v8's
    // batched form with a group that never committed.
    let all = kp::OffsetFetchRequest::default()
        .with_group_id(s(group).into())
        .with_topics(None);
    let r = kp_call(&mut conn, 5, next(), &all);
    let got: Vec<(String, i32, i64)> = r
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
    assert_eq!(
        got,
        vec![(topic.to_string(), 0, 5)],
        "OffsetFetch v5, all topics"
    );
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
    let r = kp_call(&mut conn, 8, next(), &batched);
    let per_group: Vec<(String, i16, CommittedList)> = r
        .groups
        .iter()
        .map(|g| {
            (
                g.group_id.as_str().to_string(),
                g.error_code,
                g.topics
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
                    .collect(),
            )
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

    // ListGroups v4 filters by state (KIP-518).
    let listed =
        |conn: &mut std::net::TcpStream, corr: i32, state: &str| -> Vec<(String, String)> {
            let req = kp::ListGroupsRequest::default().with_states_filter(vec![s(state)]);
            let r = kp_call(conn, 4, corr, &req);
            assert_eq!(r.error_code, NONE);
            r.groups
                .iter()
                .map(|g| {
                    (
                        g.group_id.as_str().to_string(),
                        g.group_state.as_str().to_string(),
                    )
                })
                .collect()
        };
    let c = next();
    assert_eq!(
        listed(&mut conn, c, "stable"),
        vec![(group.to_string(), "Stable".to_string())]
    );
    let c = next();
    assert!(listed(&mut conn, c, "Empty")
        .iter()
        .all(|(g, _)| g != group));

    // LeaveGroup; the member is gone, and its topic's offsets can go.
    let leave = kp::LeaveGroupRequest::default()
        .with_group_id(s(group).into())
        .with_members(vec![
            kp::leave_group_request::MemberIdentity::default().with_member_id(s(&member))
        ]);
    let r = kp_call(&mut conn, 3, next(), &leave);
    assert_eq!(r.error_code, NONE, "{r:?}");
    assert_eq!(r.members.len(), 1);
    assert_eq!(r.members[0].error_code, NONE, "{r:?}");
    let r = kp_call(&mut conn, 3, next(), &heartbeat_v3(group, 1, &member));
    assert_eq!(r.error_code, UNKNOWN_MEMBER_ID, "{r:?}");
    let c = next();
    assert_eq!(
        offset_delete_v0(&mut conn, c, group, topic),
        (NONE, vec![NONE])
    );
    let c = next();
    assert_eq!(
        fetch_offset_v5(&mut conn, c, group, topic),
        -1,
        "deleted offset"
    );
}

/// A member that keeps heartbeating but does not rejoin during a rebalance
/// is removed when the rebalance timeout passes; the new generation goes on
/// without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn member_not_rejoining_is_dropped_at_rebalance_timeout() {
    const REBALANCE_MS: i32 = 2000;
    const REBALANCE_IN_PROGRESS: i16 = 27;
    let broker = start_broker();
    let (topic, group) = ("slow-topic", "slow-group");
    broker.create_topic(topic, 1).await;
    let range = [("range", subscription(&[topic]))];
    let join = |member: &str| {
        join_v4(group, member, 30_000, "consumer", &range).with_rebalance_timeout_ms(REBALANCE_MS)
    };
    let mut conn1 = connect(&broker.bootstrap());
    let fc = kp::FindCoordinatorRequest::default().with_key(s(group));
    assert_eq!(kp_call(&mut conn1, 3, 1, &fc).error_code, NONE);
    let id1 = kp_call(&mut conn1, 4, 2, &join(""))
        .member_id
        .as_str()
        .to_string();
    let r = kp_call(&mut conn1, 4, 3, &join(&id1));
    assert_eq!((r.error_code, r.generation_id), (NONE, 1), "{r:?}");
    let sync = kp::SyncGroupRequest::default()
        .with_group_id(s(group).into())
        .with_generation_id(1)
        .with_member_id(s(&id1))
        .with_assignments(vec![
            kp::sync_group_request::SyncGroupRequestAssignment::default()
                .with_member_id(s(&id1))
                .with_assignment(assignment_bytes(topic, &[0])),
        ]);
    assert_eq!(kp_call(&mut conn1, 3, 4, &sync).error_code, NONE);

    // A second member joins: its JoinGroup is parked while member 1 is
    // asked (through heartbeats) to rejoin, which it never does.
    let mut conn2 = connect(&broker.bootstrap());
    let r = kp_call(&mut conn2, 4, 1, &join(""));
    assert_eq!(r.error_code, MEMBER_ID_REQUIRED);
    let id2 = r.member_id.as_str().to_string();
    let sent_at = Instant::now();
    kp_send(&mut conn2, 4, 2, &join(&id2));
    let mut corr = 10;
    poll_until(
        SETTLE,
        "REBALANCE_IN_PROGRESS on member 1's heartbeat",
        || {
            corr += 1;
            let code = kp_call(&mut conn1, 3, corr, &heartbeat_v3(group, 1, &id1)).error_code;
            match code {
                REBALANCE_IN_PROGRESS => Ok(()),
                NONE => Err("heartbeat ok".into()),
                other => panic!("heartbeat error {other}"),
            }
        },
    );

    let r = kp_recv::<kp::JoinGroupRequest>(&mut conn2, 4, 2);
    let took = sent_at.elapsed();
    assert_eq!(r.error_code, NONE, "{r:?}");
    assert_eq!(r.generation_id, 2);
    assert_eq!(r.leader.as_str(), id2, "the remaining member leads");
    let members: Vec<&str> = r.members.iter().map(|m| m.member_id.as_str()).collect();
    assert_eq!(members, vec![id2.as_str()], "member 1 was dropped");
    assert!(
        took >= Duration::from_millis(REBALANCE_MS as u64 - 500),
        "join completed after {took:?}, before the rebalance timeout"
    );
    corr += 1;
    let r = kp_call(&mut conn1, 3, corr, &heartbeat_v3(group, 1, &id1));
    assert_eq!(
        r.error_code, UNKNOWN_MEMBER_ID,
        "dropped member's heartbeat: {r:?}"
    );
}

/// Growing the subscribed topic makes the leader rejoin; the new partitions
/// are assigned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn added_partitions_are_assigned() {
    let broker = start_broker();
    let (topic, group) = ("growing", "growing-group");
    broker.create_topic(topic, 2).await;
    let observer = broker.consumer(&[]);
    let extra = [("topic.metadata.refresh.interval.ms", "300")];
    let a = Member::join(&broker, group, "a", topic, &extra);
    let b = Member::join(&broker, group, "b", topic, &extra);
    wait_balanced(&observer, group, topic, 2, || local_views(&[&a, &b]));
    let res = broker
        .admin()
        .create_partitions(
            &[rdkafka::admin::NewPartitions::new(topic, 4)],
            &admin_opts(),
        )
        .await
        .expect("CreatePartitions request");
    assert_eq!(res, vec![Ok(topic.to_string())]);
    wait_balanced(&observer, group, topic, 4, || local_views(&[&a, &b]));
}
