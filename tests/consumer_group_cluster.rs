//! The consumer group protocol (KIP-848) through failures, with real
//! clients (librdkafka's `group.protocol=consumer` and `classic`) and raw
//! frames:
//!
//! * on a three-node cluster, the broker coordinating a group of two
//!   consumer-protocol members and a classic member is killed with SIGKILL;
//!   the new coordinator loads the group from the replicated
//!   `__consumer_offsets` records, every member keeps its epoch and its
//!   partitions, the committed offsets are intact and every record written
//!   after the last commit is read exactly once; the same holds after the
//!   killed broker comes back;
//! * on one node, on Fjord and on Kafka 4.4 with the same code, a member
//!   that falls silent without leaving (what a killed client looks like to
//!   the broker) is fenced after `group.consumer.session.timeout.ms` and
//!   its partitions go to the survivor, and partitions added to the
//!   subscribed topic give the members a new assignment; a member
//!   reporting an empty owned list has revoked what it had to.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::cluster::{try_kp_call, Cluster};
use common::consumer_group::*;
use common::layout::wait_topic;
use common::poll_until;
use common::raw::RawConn;
use kafka_protocol::messages as kp;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

/// Bounds for what takes a few seconds (an election, a coordinator loading
/// its partition, a restart).
const DEADLINE: Duration = Duration::from_secs(90);

// ============================================================ failover

/// Settings of every node of the cluster.
const CLUSTER: &[&str] = &[
    "offsets.topic.num.partitions=4",
    "offsets.topic.replication.factor=3",
    "group.initial.rebalance.delay.ms=0",
    "group.consumer.heartbeat.interval.ms=1000",
];

/// One request to node `id` on a fresh connection, errors given back (the
/// node may be down or not yet know the new leaders).
fn ask<R: kafka_protocol::protocol::Request>(
    c: &Cluster,
    id: i32,
    version: i16,
    req: &R,
) -> Result<R::Response, String> {
    let mut s = TcpStream::connect(c.bootstrap(id)).map_err(|e| format!("node {id}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    try_kp_call(&mut s, version, 1, req).map_err(|e| format!("node {id}: {e}"))
}

/// The coordinator of `group` as node `asked` names it and the group as
/// that coordinator describes it (error 0), or what went wrong.
fn try_describe(
    c: &Cluster,
    asked: i32,
    not: Option<i32>,
    group: &str,
) -> Result<(i32, kp::ConsumerGroupDescribeResponse), String> {
    let r = ask(
        c,
        asked,
        4,
        &kp::FindCoordinatorRequest::default().with_coordinator_keys(vec![s(group)]),
    )?;
    let k = &r.coordinators[0];
    if k.error_code != 0 {
        return Err(format!("FindCoordinator: {}", k.error_code));
    }
    let coordinator = k.node_id.0;
    if Some(coordinator) == not {
        return Err(format!("node {asked} still names node {coordinator}"));
    }
    let d = ask(
        c,
        coordinator,
        1,
        &kp::ConsumerGroupDescribeRequest::default().with_group_ids(vec![s(group).into()]),
    )?;
    if d.groups[0].error_code != 0 {
        return Err(format!(
            "node {coordinator} describes {group}: {}",
            d.groups[0].error_code
        ));
    }
    Ok((coordinator, d))
}

/// The group's committed offsets by partition of `topic`, as OffsetFetch
/// (v8, no member) to node `coordinator` gives them.
fn try_committed(
    c: &Cluster,
    coordinator: i32,
    group: &str,
    topic: &str,
) -> Result<BTreeMap<i32, i64>, String> {
    let r = ask(
        c,
        coordinator,
        8,
        &kp::OffsetFetchRequest::default().with_groups(vec![
            kp::offset_fetch_request::OffsetFetchRequestGroup::default()
                .with_group_id(s(group).into())
                .with_topics(Some(vec![
                    kp::offset_fetch_request::OffsetFetchRequestTopics::default()
                        .with_name(s(topic).into())
                        .with_partition_indexes((0..PARTITIONS).collect()),
                ])),
        ]),
    )?;
    let g = &r.groups[0];
    if g.error_code != 0 {
        return Err(format!("OffsetFetch: {}", g.error_code));
    }
    let mut out = BTreeMap::new();
    for t in &g.topics {
        for p in &t.partitions {
            if p.error_code != 0 {
                return Err(format!(
                    "OffsetFetch {}: {}",
                    p.partition_index, p.error_code
                ));
            }
            out.insert(p.partition_index, p.committed_offset);
        }
    }
    Ok(out)
}

/// Writes [`PER_PARTITION`] records `{tag}-{p}-{i}` to each partition of
/// `topic` (idempotent, acks=all), through any node of `bootstrap`.
fn produce(bootstrap: &str, topic: &str, tag: &str) {
    let producer: BaseProducer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .set("message.timeout.ms", "60000")
        .set("reconnect.backoff.ms", "50")
        .set("reconnect.backoff.max.ms", "500")
        .create()
        .expect("producer");
    for p in 0..PARTITIONS {
        for i in 0..PER_PARTITION {
            let v = format!("{tag}-{p}-{i}");
            producer
                .send(BaseRecord::<(), _>::to(topic).partition(p).payload(&v))
                .expect("enqueue");
        }
    }
    producer.flush(DEADLINE).expect("flush");
}

/// The members, their records and what they were assigned.
struct Members<'a> {
    cs: Vec<&'a BaseConsumer>,
    /// (partition, offset) of every record each member read.
    seen: Vec<Vec<(i32, i64)>>,
    /// What each member holds (never changes once set).
    held: Vec<BTreeSet<i32>>,
}

impl Members<'_> {
    /// Polls every member until they have read `total` distinct records
    /// together; any change of a member's partitions fails the test.
    fn read_until(&mut self, total: usize, what: &str) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            for (i, c) in self.cs.iter().enumerate() {
                if let Some(r) = c.poll(Duration::from_millis(50)) {
                    match r {
                        Ok(m) => {
                            assert!(
                                self.held[i].contains(&m.partition()),
                                "{what}: member {i} read {}@{} it does not hold",
                                m.partition(),
                                m.offset()
                            );
                            self.seen[i].push((m.partition(), m.offset()));
                        }
                        // Brokers going away are reported as errors; the
                        // client carries on.
                        Err(e) => eprintln!("{what}: member {i}: {e}"),
                    }
                }
                assert_eq!(assigned(c), self.held[i], "{what}: member {i} moved");
            }
            let distinct: BTreeSet<(i32, i64)> = self.seen.iter().flatten().copied().collect();
            if distinct.len() >= total {
                let all: usize = self.seen.iter().map(Vec::len).sum();
                assert_eq!(all, distinct.len(), "{what}: a record was read twice");
                assert_eq!(distinct.len(), total, "{what}");
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: {} of {total} read",
                distinct.len()
            );
        }
    }

    /// Every member commits what it read (retried while the coordinator
    /// moves; a refused epoch fails after the deadline).
    fn commit(&self, what: &str) {
        for (i, c) in self.cs.iter().enumerate() {
            poll_until(DEADLINE, &format!("{what}: member {i} commits"), || {
                c.commit_consumer_state(CommitMode::Sync)
                    .map_err(|e| e.to_string())
            });
        }
    }
}

/// Each member of the group `d` describes, heartbeating at its epoch with
/// its partitions (ConsumerGroupHeartbeat for a consumer-protocol member,
/// a classic Heartbeat at generation = epoch for a classic one), is
/// answered by node `coordinator` without error, at the same epoch and
/// with no other assignment.
fn heartbeats_accepted(
    c: &Cluster,
    coordinator: i32,
    group: &str,
    d: &kp::ConsumerGroupDescribeResponse,
) {
    for m in &d.groups[0].members {
        let id = m.member_id.to_string();
        if m.member_type == 0 {
            let r = ask(
                c,
                coordinator,
                4,
                &kp::HeartbeatRequest::default()
                    .with_group_id(s(group).into())
                    .with_generation_id(m.member_epoch)
                    .with_member_id(s(&id)),
            )
            .expect("classic Heartbeat");
            assert_eq!(r.error_code, 0, "classic member {id}: {r:?}");
            continue;
        }
        let owned: Vec<kp::consumer_group_heartbeat_request::TopicPartitions> = m
            .assignment
            .topic_partitions
            .iter()
            .map(|t| {
                kp::consumer_group_heartbeat_request::TopicPartitions::default()
                    .with_topic_id(t.topic_id)
                    .with_partitions(t.partitions.clone())
            })
            .collect();
        let r = ask(
            c,
            coordinator,
            1,
            &kp::ConsumerGroupHeartbeatRequest::default()
                .with_group_id(s(group).into())
                .with_member_id(s(&id))
                .with_member_epoch(m.member_epoch)
                .with_rebalance_timeout_ms(-1)
                .with_topic_partitions(Some(owned)),
        )
        .expect("ConsumerGroupHeartbeat");
        assert_eq!(
            (r.error_code, r.member_epoch),
            (0, m.member_epoch),
            "member {id}: {r:?}"
        );
        if let Some(a) = &r.assignment {
            let got: Vec<i32> = a
                .topic_partitions
                .iter()
                .flat_map(|t| t.partitions.clone())
                .collect();
            let had: Vec<i32> = m
                .assignment
                .topic_partitions
                .iter()
                .flat_map(|t| t.partitions.clone())
                .collect();
            assert_eq!(got, had, "member {id}: {r:?}");
        }
    }
}

/// Two consumer-protocol members and a classic member (librdkafka
/// `group.protocol=classic` inside the consumer group) share a 6-partition
/// topic (RF 3) 2/2/2, read and commit 60 records; the broker coordinating
/// the group (FindCoordinator) is killed with SIGKILL. The new coordinator
/// (another node, which loads the group from the replicated
/// `__consumer_offsets` partition) describes the same group: same members,
/// member epochs, assignments, group and assignment epochs. The committed
/// offsets are intact, 60 more records are each read once by the member
/// holding their partition (no partition moves, nothing read twice) and
/// committed at the members' epochs. The killed broker comes back and the
/// same holds again; then the classic member leaves and the two others take
/// its partitions from its committed offsets (nothing read again).
#[test]
fn consumer_group_survives_its_coordinator_killed() {
    let mut c = Cluster::start(3, CLUSTER);
    let (topic, group) = ("cgf-topic", "cgf-group");
    let all = c.bootstrap_all();
    poll_until(DEADLINE, "CreateTopics", || {
        let r = ask(
            &c,
            1,
            7,
            &kp::CreateTopicsRequest::default()
                .with_timeout_ms(15_000)
                .with_topics(vec![kp::create_topics_request::CreatableTopic::default()
                    .with_name(s(topic).into())
                    .with_num_partitions(PARTITIONS)
                    .with_replication_factor(3)]),
        )?;
        match r.topics[0].error_code {
            0 | 36 => Ok(()),
            code => Err(format!("CreateTopics: {code}")),
        }
    });
    wait_topic(&c, &c.ids(), topic, PARTITIONS as usize);
    // The group exists as a consumer group before the classic member comes.
    // One member at a time, each settled before the next joins: a
    // librdkafka 2.12 member whose first assignment still waits in the
    // application's queue heartbeats with an empty owned list, which the
    // coordinator (as Kafka's, whose rule is the same) takes as revoked,
    // so the second member is given partitions the first one still lists
    // for a moment (seen in the group's records: the first member went
    // from 6 partitions straight to 3 at the next epoch, never revoking;
    // `an_empty_owned_list_counts_as_revoked_as_on_kafka` pins the rule).
    let a = member(&all, group, topic);
    let mut scratch = vec![Vec::new(), Vec::new(), Vec::new()];
    settle(&[&a], &mut scratch[..1], "one member with 6", |n| {
        n[0].len() == PARTITIONS as usize
    });
    let b = member(&all, group, topic);
    settle(&[&a, &b], &mut scratch[..2], "two members 3/3", |n| {
        n[0].len() == 3 && n[1].len() == 3
    });
    let classic = {
        let cfg = common::group_client_config(
            &all,
            group,
            &[
                ("group.protocol", "classic"),
                ("partition.assignment.strategy", "cooperative-sticky"),
                // Longer than the failover takes: librdkafka's classic
                // member drops its partitions when it cannot heartbeat for
                // a session.
                ("session.timeout.ms", "45000"),
                ("max.poll.interval.ms", "60000"),
            ],
        );
        let k: BaseConsumer = cfg.create().expect("classic consumer");
        k.subscribe(&[topic]).expect("subscribe");
        k
    };
    let held = settle(
        &[&a, &b, &classic],
        &mut scratch,
        "three members 2/2/2",
        |n| n.iter().all(|p| p.len() == 2),
    );
    assert!(
        scratch.iter().all(Vec::is_empty),
        "nothing written yet: {scratch:?}"
    );
    // The group as its coordinator shows it once every member has its
    // partitions (Stable).
    let (coordinator, before) = poll_until(DEADLINE, "a Stable group of three", || {
        let (k, d) = try_describe(&c, 1, None, group)?;
        let v = group_view(&d);
        if v.3 != "Stable" || v.4.len() != 3 || v.4.iter().any(|m| m.3.len() != 2) {
            return Err(format!("{v:?}"));
        }
        Ok((k, v))
    });
    let mut shown: Vec<Vec<i32>> = before.4.iter().map(|m| m.3.clone()).collect();
    let mut clients: Vec<Vec<i32>> = held.iter().map(|h| h.iter().copied().collect()).collect();
    shown.sort();
    clients.sort();
    assert_eq!(shown, clients, "the coordinator's and the clients' view");
    assert_eq!(
        before.4.iter().map(|m| m.2).collect::<BTreeSet<i8>>(),
        BTreeSet::from([0, 1]),
        "a classic (0) and consumer-protocol (1) members: {before:?}"
    );
    eprintln!("coordinator {coordinator}: {before:?}");

    let mut m = Members {
        cs: vec![&a, &b, &classic],
        seen: vec![Vec::new(), Vec::new(), Vec::new()],
        held,
    };
    produce(&all, topic, "first");
    m.read_until(60, "before the kill");
    m.commit("before the kill");
    let want: BTreeMap<i32, i64> = (0..PARTITIONS).map(|p| (p, PER_PARTITION as i64)).collect();
    let got = poll_until(DEADLINE, "committed offsets", || {
        try_committed(&c, coordinator, group, topic)
    });
    assert_eq!(got, want);

    c.kill9(coordinator);
    let survivors: Vec<i32> = c.ids().into_iter().filter(|&i| i != coordinator).collect();
    let (moved, after) = poll_until(DEADLINE, "the group on a new coordinator", || {
        try_describe(&c, survivors[0], Some(coordinator), group)
    });
    assert_ne!(moved, coordinator);
    eprintln!("node {coordinator} killed, node {moved} coordinates");
    assert_eq!(
        group_view(&after),
        before,
        "the group as node {moved} loaded it"
    );
    heartbeats_accepted(&c, moved, group, &after);
    let got = poll_until(DEADLINE, "committed offsets after the kill", || {
        try_committed(&c, moved, group, topic)
    });
    assert_eq!(got, want, "committed offsets after the kill");
    let bootstrap_survivors = survivors
        .iter()
        .map(|&i| c.bootstrap(i))
        .collect::<Vec<_>>()
        .join(",");
    produce(&bootstrap_survivors, topic, "second");
    m.read_until(120, "after the kill");
    m.commit("after the kill");
    let want: BTreeMap<i32, i64> = (0..PARTITIONS)
        .map(|p| (p, 2 * PER_PARTITION as i64))
        .collect();
    let got = poll_until(DEADLINE, "committed offsets after the kill", || {
        try_committed(&c, moved, group, topic)
            .and_then(|o| (o == want).then_some(o).ok_or("not yet".to_string()))
    });
    assert_eq!(got, want);
    // Heartbeats at their epochs kept being accepted meanwhile: a refused
    // one makes librdkafka join again at a new epoch.
    let (_, now) = try_describe(&c, moved, None, group).expect("describe");
    assert_eq!(group_view(&now), before, "after reading on node {moved}");

    c.start_node(coordinator);
    let ids = c.ids();
    c.wait_brokers(&ids, DEADLINE);
    wait_topic(&c, &ids, topic, PARTITIONS as usize);
    let (back, again) = poll_until(DEADLINE, "the group after the restart", || {
        try_describe(&c, coordinator, None, group)
    });
    assert_eq!(
        group_view(&again),
        before,
        "the group on node {back} after node {coordinator} came back"
    );
    eprintln!("node {coordinator} back, node {back} coordinates");
    heartbeats_accepted(&c, back, group, &again);
    produce(&all, topic, "third");
    m.read_until(180, "after the restart");
    m.commit("after the restart");
    let want: BTreeMap<i32, i64> = (0..PARTITIONS)
        .map(|p| (p, 3 * PER_PARTITION as i64))
        .collect();
    poll_until(DEADLINE, "committed offsets after the restart", || {
        let (k, _) = try_describe(&c, coordinator, None, group)?;
        let o = try_committed(&c, k, group, topic)?;
        (o == want).then_some(()).ok_or(format!("{o:?}"))
    });
    let (_, last) = poll_until(DEADLINE, "the group at the end", || {
        try_describe(&c, coordinator, None, group)
    });
    assert_eq!(group_view(&last), before, "at the end");
    // The loaded group goes on rebalancing: the classic member leaves and
    // the two others take its partitions.
    drop(m);
    drop(classic);
    let full: BTreeSet<i32> = (0..PARTITIONS).collect();
    let mut seen = vec![Vec::new(), Vec::new()];
    settle(
        &[&a, &b],
        &mut seen,
        "the classic member's partitions taken over",
        |n| n[0].len() == 3 && n[1].len() == 3 && n[0].union(&n[1]).count() == full.len(),
    );
    assert!(
        seen.iter().all(Vec::is_empty),
        "everything was committed: {seen:?}"
    );
    let (_, left) = try_describe(&c, coordinator, None, group).expect("describe");
    let v = group_view(&left);
    assert_eq!(v.4.len(), 2, "{v:?}");
    assert!(v.1 > before.1, "the group epoch moved on: {v:?}");
}

// ======================================================== fence, grow

/// Consumer-group session of 4 s on both brokers (Kafka also needs its
/// minimums lowered).
const SHORT_SESSION: &[&str] = &[
    "group.consumer.heartbeat.interval.ms=1000",
    "group.consumer.session.timeout.ms=4000",
    "offsets.topic.num.partitions=3",
];
const KAFKA_MINIMUMS: &[&str] = &[
    "group.consumer.min.heartbeat.interval.ms=1000",
    "group.consumer.min.session.timeout.ms=2000",
];
const SESSION: Duration = Duration::from_millis(4000);

/// A raw-frames member joins (all 6 partitions) and falls silent; a
/// librdkafka member joins beside it and gets nothing it still holds.
/// After the silent member's session it is fenced: the librdkafka member
/// holds every partition and reads every record, the group has one
/// member, and the silent member's next heartbeat is UNKNOWN_MEMBER_ID.
/// A second librdkafka member joins (3/3) and the topic grows to 8
/// partitions: the members get 4 each.
fn silent_member_fenced(addr: &str) -> Vec<String> {
    let (topic, group) = ("cgf-fence", "cgf-fence-group");
    let silent = "m-silent-aaaaaaaaaaaaaaaa";
    topic_with_records(addr, topic);
    let mut out = Vec::new();
    let mut c = RawConn::new(addr);
    find_coordinator(&mut c, group);
    let joined = until_served("join", || {
        let r = c.call(1, &join(group, silent, topic));
        (r.error_code, r)
    });
    let last_beat = Instant::now();
    out.push(format!(
        "silent member: epoch {} partitions {}",
        joined.member_epoch,
        answered_partitions(&joined)
    ));
    let topic_id = joined
        .assignment
        .as_ref()
        .expect("an assignment")
        .topic_partitions[0]
        .topic_id;
    let a = member(addr, group, topic);
    let full: BTreeSet<i32> = (0..PARTITIONS).collect();
    let mut seen = vec![Vec::new(), Vec::new()];
    settle(
        &[&a],
        &mut seen[..1],
        "the survivor gets every partition",
        |n| n[0] == full,
    );
    out.push(format!(
        "survivor holds {} partitions, not before the session: {}",
        full.len(),
        last_beat.elapsed() >= SESSION
    ));
    let deadline = Instant::now() + SETTLE;
    while seen[0].len() < PARTITIONS as usize * PER_PARTITION {
        if let Some(Ok(m)) = a.poll(Duration::from_millis(100)) {
            seen[0].push((m.partition(), m.offset()));
        }
        assert!(Instant::now() < deadline, "read {}", seen[0].len());
    }
    let distinct: BTreeSet<(i32, i64)> = seen[0].iter().copied().collect();
    out.push(format!(
        "survivor read {} records, {} distinct",
        seen[0].len(),
        distinct.len()
    ));
    let view = poll_until(SETTLE, "one Stable member", || {
        let v = group_view(&describe(&mut c, group));
        if v.3 == "Stable" && v.4.len() == 1 {
            Ok(v)
        } else {
            Err(format!("{v:?}"))
        }
    });
    out.push(format!(
        "describe: {} members {}, silent member gone: {}",
        view.3,
        view.4.len(),
        view.4.iter().all(|m| m.0 != silent)
    ));
    let r = c.call(
        1,
        &beat(
            group,
            silent,
            joined.member_epoch,
            topic_id,
            &[0, 1, 2, 3, 4, 5],
        ),
    );
    out.push(format!("silent member's heartbeat: {}", r.error_code));

    let b = member(addr, group, topic);
    let split = settle(&[&a, &b], &mut seen, "two members 3/3", |n| {
        n[0].len() == 3 && n[1].len() == 3
    });
    out.push(format!(
        "two members: {} + {}",
        split[0].len(),
        split[1].len()
    ));
    let r = c.call(
        3,
        &kp::CreatePartitionsRequest::default()
            .with_timeout_ms(15_000)
            .with_topics(vec![
                kp::create_partitions_request::CreatePartitionsTopic::default()
                    .with_name(s(topic).into())
                    .with_count(8)
                    .with_assignments(None),
            ]),
    );
    assert_eq!(r.results[0].error_code, 0, "CreatePartitions: {r:?}");
    let grown = settle(&[&a, &b], &mut seen, "the new partitions assigned", |n| {
        n[0].len() + n[1].len() == 8
    });
    out.push(format!(
        "grown to 8: {} + {}",
        grown[0].len(),
        grown[1].len()
    ));
    out
}

#[test]
fn silent_member_is_fenced_and_grown_topic_reassigned_as_on_kafka() {
    on_both_with(
        SHORT_SESSION,
        KAFKA_MINIMUMS,
        silent_member_fenced,
        &[
            "silent member: epoch 2 partitions 6",
            "survivor holds 6 partitions, not before the session: true",
            "survivor read 60 records, 60 distinct",
            "describe: Stable members 1, silent member gone: true",
            "silent member's heartbeat: 25",
            "two members: 3 + 3",
            "grown to 8: 4 + 4",
        ],
    );
}

// ================================================== an empty owned list

/// A member that reports owning nothing while the coordinator still counts
/// partitions it must revoke has revoked them: it moves to the new epoch at
/// once and the other member gets the partitions (what a librdkafka member
/// whose assignment is not applied yet sends). Targets at once
/// (`group.consumer.assignment.interval.ms=0`).
fn empty_owned_list(addr: &str) -> Vec<String> {
    let (topic, group) = ("cgf-owned", "cgf-owned-group");
    let (a, b) = ("m-owned-a-aaaaaaaaaaaaaa", "m-owned-b-bbbbbbbbbbbbbb");
    topic_with_records(addr, topic);
    let mut out = Vec::new();
    let mut c = RawConn::new(addr);
    find_coordinator(&mut c, group);
    let ja = until_served("join", || {
        let r = c.call(1, &join(group, a, topic));
        (r.error_code, r)
    });
    let topic_id = ja
        .assignment
        .as_ref()
        .expect("an assignment")
        .topic_partitions[0]
        .topic_id;
    out.push(format!(
        "a joins: epoch {} partitions {}",
        ja.member_epoch,
        answered_partitions(&ja)
    ));
    let jb = c.call(1, &join(group, b, topic));
    out.push(format!(
        "b joins: {} epoch {} partitions {}",
        jb.error_code,
        jb.member_epoch,
        answered_partitions(&jb)
    ));
    let ra = c.call(1, &beat(group, a, ja.member_epoch, topic_id, &[]));
    out.push(format!(
        "a owns nothing: {} epoch {} partitions {}",
        ra.error_code,
        ra.member_epoch,
        answered_partitions(&ra)
    ));
    let rb = c.call(1, &beat(group, b, jb.member_epoch, topic_id, &[]));
    out.push(format!(
        "b: {} epoch {} partitions {}",
        rb.error_code,
        rb.member_epoch,
        answered_partitions(&rb)
    ));
    out
}

#[test]
fn an_empty_owned_list_counts_as_revoked_as_on_kafka() {
    on_both_with(
        &[
            "group.consumer.heartbeat.interval.ms=1000",
            "group.consumer.assignment.interval.ms=0",
            "offsets.topic.num.partitions=3",
        ],
        &["group.consumer.min.heartbeat.interval.ms=1000"],
        empty_owned_list,
        &[
            "a joins: epoch 2 partitions 6",
            "b joins: 0 epoch 3 partitions 0",
            "a owns nothing: 0 epoch 3 partitions 3",
            "b: 0 epoch 3 partitions 3",
        ],
    );
}
