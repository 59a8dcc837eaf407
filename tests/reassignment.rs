//! Partition reassignment (KIP-455) on a three-node cluster of real `fjord`
//! processes: AlterPartitionReassignments moves a partition with records in
//! it from one broker to two others (the new replicas catch up, join the
//! ISR, the move completes, the old broker deletes its copy and every
//! record reads back from the new leader); a cancel while the new replica
//! cannot fetch reverts the move; the request's checks answer Kafka's
//! codes.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::TcpStream;
use std::time::Duration;

use common::cluster::{try_kp_call, Cluster};
use common::layout::{admin, layout_on, wait_topic};
use common::proxy::Fault;
use common::{admin_opts, consume_n, poll_until};
use kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsTopics;
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, BrokerId,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};

/// Bounds for what takes seconds (catch-up, ISR changes, deletion).
const DEADLINE: Duration = Duration::from_secs(60);

fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}

/// Creates `topic` with one partition on `replicas`.
async fn create_on(c: &Cluster, topic: &str, replicas: &[i32]) {
    let a = admin(c, &c.bootstrap_all());
    let assignment: [&[i32]; 1] = [replicas];
    let t = NewTopic::new(topic, 1, TopicReplication::Variable(&assignment));
    let r = a.create_topics(&[t], &admin_opts()).await.unwrap();
    assert!(r[0].is_ok(), "{r:?}");
    wait_topic(c, &c.ids(), topic, 1);
}

/// Produces `n` records `<prefix>-<i>` to `topic`-0 with acks=all.
async fn produce(c: &Cluster, topic: &str, prefix: &str, n: usize) {
    let p: FutureProducer = c
        .client_config(&c.bootstrap_all())
        .set("acks", "all")
        .set("message.timeout.ms", "60000")
        .set("linger.ms", "5")
        .create()
        .unwrap();
    let mut sends = Vec::new();
    for i in 0..n {
        let value = format!("{prefix}-{i}");
        let p = p.clone();
        let topic = topic.to_string();
        sends.push(tokio::spawn(async move {
            p.send(
                FutureRecord::<(), _>::to(&topic)
                    .partition(0)
                    .payload(&value),
                Duration::from_secs(60),
            )
            .await
            .map(|_| ())
            .map_err(|(e, _)| e.to_string())
        }));
    }
    for s in sends {
        s.await.unwrap().unwrap();
    }
}

/// Reads `topic`-0 from the start: the values of `count` records.
fn read_all(c: &Cluster, topic: &str, count: usize) -> Vec<String> {
    let cons: BaseConsumer = c
        .client_config(&c.bootstrap_all())
        .set("group.id", "fjord-reassignment-it-unused")
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "100")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)
        .unwrap();
    cons.assign(&tpl).unwrap();
    consume_n(&cons, count, DEADLINE)
        .iter()
        .map(|m| String::from_utf8(m.payload().unwrap().to_vec()).unwrap())
        .collect()
}

/// AlterPartitionReassignments v1 through node `id` for `topic`-`partition`
/// (None cancels): the partition's (error code, message).
fn alter(
    c: &Cluster,
    id: i32,
    topic: &str,
    partition: i32,
    replicas: Option<&[i32]>,
    allow_rf_change: bool,
) -> (i16, Option<String>) {
    let req = AlterPartitionReassignmentsRequest::default()
        .with_timeout_ms(30_000)
        .with_allow_replication_factor_change(allow_rf_change)
        .with_topics(vec![ReassignableTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![ReassignablePartition::default()
                .with_partition_index(partition)
                .with_replicas(
                    replicas.map(|r| r.iter().copied().map(BrokerId).collect()),
                )])]);
    let mut s = TcpStream::connect(c.bootstrap(id)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    let resp: AlterPartitionReassignmentsResponse = try_kp_call(&mut s, 1, 7, &req).unwrap();
    assert_eq!(resp.error_code, 0, "{resp:?}");
    let p = &resp.responses[0].partitions[0];
    (
        p.error_code,
        p.error_message.as_ref().map(|m| m.to_string()),
    )
}

/// One ongoing reassignment: (topic, partition, replicas, adding, removing).
type Ongoing = (String, i32, Vec<i32>, Vec<i32>, Vec<i32>);

/// ListPartitionReassignments v0 through node `id` (`topic` None: all):
/// (topic, partition, replicas, adding, removing) of each ongoing one.
fn list(c: &Cluster, id: i32, topic: Option<&str>) -> Vec<Ongoing> {
    let req = ListPartitionReassignmentsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(topic.map(|t| {
            vec![ListPartitionReassignmentsTopics::default()
                .with_name(name(t))
                .with_partition_indexes(vec![0])]
        }));
    let mut s = TcpStream::connect(c.bootstrap(id)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    let resp: ListPartitionReassignmentsResponse = try_kp_call(&mut s, 0, 8, &req).unwrap();
    assert_eq!(resp.error_code, 0, "{resp:?}");
    let ids = |v: &[BrokerId]| v.iter().map(|b| b.0).collect::<Vec<i32>>();
    resp.topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                (
                    t.name.0.to_string(),
                    p.partition_index,
                    ids(&p.replicas),
                    ids(&p.adding_replicas),
                    ids(&p.removing_replicas),
                )
            })
        })
        .collect()
}

/// Waits until every node shows `topic`-0 with `replicas` and ISR `isr`
/// (as sets) and a leader among them; gives the leader.
fn wait_assignment(c: &Cluster, topic: &str, replicas: &[i32], isr: &[i32]) -> i32 {
    let sorted = |v: &[i32]| {
        let mut v = v.to_vec();
        v.sort_unstable();
        v
    };
    poll_until(
        DEADLINE,
        &format!("{topic}-0 on {replicas:?} with ISR {isr:?}"),
        || {
            let mut leader = None;
            for id in c.ids() {
                let l = layout_on(c, id, topic)?.ok_or("unknown topic")?;
                let p = l.parts.get(&0).ok_or("no partition 0")?;
                if p.replicas != replicas
                    || sorted(&p.isr) != sorted(isr)
                    || !replicas.contains(&p.leader)
                {
                    return Err(format!("node {id}: {p:?}"));
                }
                if leader.is_some_and(|l| l != p.leader) {
                    return Err(format!("leaders differ on node {id}: {p:?}"));
                }
                leader = Some(p.leader);
            }
            leader.ok_or_else(|| "no node".to_string())
        },
    )
}

/// IncrementalAlterConfigs v1 on broker `broker`'s
/// `leader.replication.throttled.rate` with operation `op` (0 SET, 1
/// DELETE): the resource's error code.
fn alter_broker_throttle(c: &Cluster, broker: i32, op: i8) -> i16 {
    let req = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(StrBytes::from_string(broker.to_string()))
            .with_configs(vec![AlterableConfig::default()
                .with_name(StrBytes::from_static_str(
                    "leader.replication.throttled.rate",
                ))
                .with_config_operation(op)
                .with_value((op == 0).then(|| StrBytes::from_static_str("1000")))]),
    ]);
    let mut s = TcpStream::connect(c.bootstrap(broker)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    let resp: IncrementalAlterConfigsResponse = try_kp_call(&mut s, 1, 9, &req).unwrap();
    resp.responses[0].error_code
}

/// Waits until node `id` holds no directory of `topic`-0.
fn wait_dir_gone(c: &Cluster, id: i32, topic: &str) {
    let dir = c.data_dir(id).join(format!("{topic}-0"));
    poll_until(DEADLINE, &format!("{} removed", dir.display()), || {
        if dir.exists() {
            Err("still there".into())
        } else {
            Ok(())
        }
    });
}

/// A partition with records on broker 1 alone moves to brokers 2 and 3:
/// the move completes (nothing listed as ongoing), 2 and 3 are the
/// replicas and the ISR, one of them leads, broker 1 deleted its copy and
/// every record reads back, also those written after the move.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_moves_to_two_other_brokers_with_its_records() {
    let c = Cluster::start(3, &[]);
    let topic = "moving";
    create_on(&c, topic, &[1]).await;
    produce(&c, topic, "before", 500).await;

    // Kafka's checks first: nothing changes.
    assert_eq!(alter(&c, 2, topic, 0, Some(&[2, 3]), false).0, 38);
    assert_eq!(alter(&c, 2, topic, 0, Some(&[2, 2]), true).0, 39);
    assert_eq!(alter(&c, 2, topic, 0, Some(&[2, 9]), true).0, 39);
    assert_eq!(alter(&c, 2, topic, 1, Some(&[2]), true).0, 3);
    assert_eq!(alter(&c, 2, "nope", 0, Some(&[2]), true).0, 3);
    let (code, message) = alter(&c, 2, topic, 0, None, true);
    assert_eq!(
        (code, message.as_deref()),
        (85, Some("No partition reassignment is in progress."))
    );

    assert_eq!(alter(&c, 2, topic, 0, Some(&[2, 3]), true), (0, None));
    let leader = wait_assignment(&c, topic, &[2, 3], &[2, 3]);
    poll_until(DEADLINE, "no ongoing reassignment", || {
        let l = list(&c, 3, None);
        if l.is_empty() {
            Ok(())
        } else {
            Err(format!("{l:?}"))
        }
    });
    assert!(list(&c, 1, Some(topic)).is_empty());
    wait_dir_gone(&c, 1, topic);
    assert!(c.data_dir(leader).join(format!("{topic}-0")).exists());

    // `kafka-reassign-partitions --verify` then clears the throttles:
    // deleting them succeeds (nothing was set), setting one is refused.
    assert_eq!(alter_broker_throttle(&c, 1, 1), 0);
    assert_eq!(alter_broker_throttle(&c, 1, 0), 42);

    produce(&c, topic, "after", 10).await;
    // Sent concurrently: each record once, in any order.
    let mut read = read_all(&c, topic, 510);
    read.sort();
    let mut want: Vec<String> = (0..500)
        .map(|i| format!("before-{i}"))
        .chain((0..10).map(|i| format!("after-{i}")))
        .collect();
    want.sort();
    assert_eq!(read, want);
}

/// A move to broker 2 whose fetches from the leader are cut off stays in
/// progress (listed with its adding and removing replicas); a cancel
/// reverts it: broker 1 alone again, broker 2's copy deleted, the records
/// all there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_reverts_a_move_in_flight() {
    let c = Cluster::start_with_proxies(3, &[]);
    let topic = "stuck";
    create_on(&c, topic, &[1]).await;
    produce(&c, topic, "r", 50).await;
    c.set_data_link(2, 1, Fault::BlackHole);

    assert_eq!(alter(&c, 3, topic, 0, Some(&[2]), false), (0, None));
    let ongoing = (topic.to_string(), 0, vec![2, 1], vec![2], vec![1]);
    poll_until(DEADLINE, "the move listed on every node", || {
        for id in c.ids() {
            let l = list(&c, id, Some(topic));
            if l != vec![ongoing.clone()] {
                return Err(format!("node {id}: {l:?}"));
            }
        }
        Ok(())
    });
    wait_assignment(&c, topic, &[2, 1], &[1]);
    poll_until(DEADLINE, "broker 2 opened its replica", || {
        let dir = c.data_dir(2).join(format!("{topic}-0"));
        dir.exists().then_some(()).ok_or("not yet".to_string())
    });

    assert_eq!(alter(&c, 3, topic, 0, None, true), (0, None));
    assert!(list(&c, 2, None).is_empty());
    assert_eq!(wait_assignment(&c, topic, &[1], &[1]), 1);
    wait_dir_gone(&c, 2, topic);
    c.set_data_link(2, 1, Fault::Pass);
    produce(&c, topic, "s", 5).await;
    let mut read = read_all(&c, topic, 55);
    read.sort();
    let mut want: Vec<String> = (0..50)
        .map(|i| format!("r-{i}"))
        .chain((0..5).map(|i| format!("s-{i}")))
        .collect();
    want.sort();
    assert_eq!(read, want);
}

/// A partition moved from broker 1 to broker 2 and back is on broker 1
/// alone; broker 1 restarts (replaying the metadata log, whose middle says
/// it is not a replica) and still has every record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_moved_away_and_back_survives_a_restart() {
    let mut c = Cluster::start(3, &[]);
    let topic = "returning";
    create_on(&c, topic, &[1]).await;
    produce(&c, topic, "first", 20).await;
    assert_eq!(alter(&c, 1, topic, 0, Some(&[2]), false), (0, None));
    wait_assignment(&c, topic, &[2], &[2]);
    wait_dir_gone(&c, 1, topic);
    produce(&c, topic, "second", 20).await;
    assert_eq!(alter(&c, 1, topic, 0, Some(&[1]), false), (0, None));
    assert_eq!(wait_assignment(&c, topic, &[1], &[1]), 1);
    wait_dir_gone(&c, 2, topic);
    c.restart(1);
    wait_assignment(&c, topic, &[1], &[1]);
    let mut read = read_all(&c, topic, 40);
    read.sort();
    let mut want: Vec<String> = (0..20)
        .map(|i| format!("first-{i}"))
        .chain((0..20).map(|i| format!("second-{i}")))
        .collect();
    want.sort();
    assert_eq!(read, want);
}
