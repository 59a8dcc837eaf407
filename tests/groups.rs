//! Consumer groups end to end: librdkafka consumers that `subscribe` (join,
//! sync, heartbeat, leave, commit, fetch offsets) against the real broker,
//! with the client's assignors. The coordinator's own rules (the group
//! APIs' error answers, list/describe/delete, static members, session and
//! rebalance timeouts, offsets across a restart) are in-process scenarios
//! in tests/inprocess.rs.
//!
//! Every membership check waits for two views to agree: each consumer's own
//! `assignment()` and the coordinator's (DescribeGroups: state `Stable`, the
//! expected members, their assignments decoded from the group protocol).

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use bytes::{Buf, Bytes};
use common::*;
use kafka_protocol::messages::ConsumerProtocolAssignment;
use kafka_protocol::protocol::Decodable;
use rdkafka::client::ClientContext;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
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

/// Keeps the rebalance and poll errors a consumer receives.
#[derive(Default)]
struct RebalanceLog {
    /// Rebalance errors (e.g. a failed incremental assign).
    errors: Mutex<Vec<String>>,
    /// Errors returned by `poll` (diagnostics only: transient ones are normal).
    poll_errors: Mutex<Vec<String>>,
}

impl ClientContext for RebalanceLog {}

impl ConsumerContext for RebalanceLog {
    fn post_rebalance(&self, _c: &BaseConsumer<Self>, r: &Rebalance<'_>) {
        if let Rebalance::Error(e) = r {
            self.errors.lock().unwrap().push(e.to_string());
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
    client_id: String,
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
            client_id: m.client_id().to_string(),
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

// ---------------------------------------------------------------- static membership

// ---------------------------------------------------------------- restart

// ---------------------------------------------------------------- admin

// ---------------------------------------------------------------- raw protocol

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
