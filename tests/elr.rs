//! Eligible Leader Replicas (KIP-966) on a three-node cluster of real
//! `fjord` processes: RF 3 with `min.insync.replicas=2`, the followers cut
//! off from the leader one after the other (their fetches black-holed, so
//! the leader shrinks the ISR; the metadata quorum keeps its majority) fill
//! the ELR, as DescribeTopicPartitions shows; the leader killed with
//! SIGKILL hands over to the ELR member (no unclean election, the other
//! alive replica is not eligible), every acknowledged acks=all record is
//! read back, and the killed broker, restarted without its clean-shutdown
//! marker, leaves the ELR.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::TcpStream;
use std::time::Duration;

use common::cluster::{try_kp_call, Cluster};
use common::layout::{admin, wait_topic};
use common::proxy::Fault;
use common::{admin_opts, consume_n, poll_until};
use kafka_protocol::messages::describe_topic_partitions_request::TopicRequest;
use kafka_protocol::messages::{
    DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

/// Bounds for what takes a few seconds (an ISR shrink after the 2 s lag
/// time, a fence after the 3 s session timeout, a restart and catch-up).
const DEADLINE: Duration = Duration::from_secs(60);
const NOT_ENOUGH_REPLICAS: i16 = 19;

/// Partition 0 of a topic as DescribeTopicPartitions shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Described {
    leader: i32,
    isr: Vec<i32>,
    elr: Vec<i32>,
    last_known_elr: Vec<i32>,
}

fn sorted(v: &[kafka_protocol::messages::BrokerId]) -> Vec<i32> {
    let mut v: Vec<i32> = v.iter().map(|b| b.0).collect();
    v.sort_unstable();
    v
}

/// DescribeTopicPartitions v0 of `topic` on node `id`: partition 0.
fn describe(c: &Cluster, id: i32, topic: &str) -> Result<Described, String> {
    let req = DescribeTopicPartitionsRequest::default()
        .with_topics(vec![
            TopicRequest::default().with_name(TopicName(StrBytes::from_string(topic.to_string())))
        ])
        .with_response_partition_limit(2000);
    let mut s = TcpStream::connect(c.bootstrap(id)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    let resp: DescribeTopicPartitionsResponse = try_kp_call(&mut s, 0, 3, &req)?;
    let t = resp.topics.first().ok_or("no topic")?;
    if t.error_code != 0 {
        return Err(format!("topic error {}", t.error_code));
    }
    let p = t.partitions.first().ok_or("no partition")?;
    Ok(Described {
        leader: p.leader_id.0,
        isr: sorted(&p.isr_nodes),
        elr: sorted(p.eligible_leader_replicas.as_deref().unwrap_or(&[])),
        last_known_elr: sorted(p.last_known_elr.as_deref().unwrap_or(&[])),
    })
}

/// Waits until every node of `asked` describes partition 0 of `topic` as
/// `want` says; gives what they show.
fn wait_described(
    c: &Cluster,
    asked: &[i32],
    topic: &str,
    what: &str,
    want: impl Fn(&Described) -> bool,
) -> Described {
    poll_until(DEADLINE, what, || {
        let mut seen = None;
        for &id in asked {
            let d = describe(c, id, topic)?;
            if !want(&d) {
                return Err(format!("node {id}: {d:?}"));
            }
            seen = Some(d);
        }
        seen.ok_or_else(|| "no node asked".to_string())
    })
}

/// Reads `topic`-0 from the start on node `id`: every record's value,
/// until `count` records or the deadline.
fn read_all(c: &Cluster, id: i32, topic: &str, count: usize) -> Vec<String> {
    let cons: BaseConsumer = c
        .client_config(&c.bootstrap(id))
        .set("group.id", "fjord-elr-it-unused")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "100")
        .create()
        .expect("create consumer");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)
        .unwrap();
    cons.assign(&tpl).unwrap();
    consume_n(&cons, count, DEADLINE)
        .iter()
        .map(|m| String::from_utf8(m.payload().unwrap().to_vec()).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_elr_fills_below_min_isr_and_its_member_takes_over_from_a_killed_leader() {
    let mut c = Cluster::start_with_proxies(
        3,
        &[
            "replica.lag.time.max.ms=2000",
            "replica.socket.timeout.ms=2000",
            "replica.fetch.backoff.ms=200",
        ],
    );
    let topic = "elr";
    let a = admin(&c, &c.bootstrap_all());
    let t = NewTopic::new(topic, 1, TopicReplication::Fixed(3)).set("min.insync.replicas", "2");
    let r = a.create_topics(&[t], &admin_opts()).await.unwrap();
    assert!(r[0].is_ok(), "{r:?}");
    wait_topic(&c, &c.ids(), topic, 1);
    let all = c.ids();
    let d = wait_described(&c, &all, topic, "ISR of three", |d| {
        d.leader > 0 && d.isr == all && d.elr.is_empty()
    });
    let leader = d.leader;
    let followers: Vec<i32> = all.iter().copied().filter(|&id| id != leader).collect();
    let (f1, f2) = (followers[0], followers[1]);
    let mut acked = Vec::new();
    for i in 0..3 {
        let v = format!("three-{i}");
        assert_eq!(c.produce_raw(leader, topic, v.clone()), 0);
        acked.push(v);
    }

    // f2 falls behind: the ISR is still at min ISR, nothing is eligible.
    c.set_data_link(f2, leader, Fault::BlackHole);
    let mut two = vec![leader, f1];
    two.sort_unstable();
    wait_described(&c, &all, topic, "ISR without f2, no ELR", |d| {
        d.isr == two && d.elr.is_empty() && d.leader == leader
    });
    for i in 0..3 {
        let v = format!("two-{i}");
        assert_eq!(c.produce_raw(leader, topic, v.clone()), 0);
        acked.push(v);
    }

    // f1 falls behind too: below min ISR, f1 joins the ELR (f2 does not:
    // it left while the ISR was at min ISR and may miss acked records).
    // Nobody fetches from f1 once it leads, so the ELR stays observable.
    c.set_data_link(f1, leader, Fault::BlackHole);
    c.set_data_link(f2, f1, Fault::BlackHole);
    c.set_data_link(leader, f1, Fault::BlackHole);
    wait_described(&c, &all, topic, "ISR of the leader, ELR of f1", |d| {
        d.isr == [leader] && d.elr == [f1] && d.leader == leader
    });
    assert_eq!(c.produce_raw(leader, topic, "refused"), NOT_ENOUGH_REPLICAS);

    // The leader dies: the ELR member leads (unclean.leader.election.enable
    // is false), the ISR is f1 alone and the old leader waits in the ELR.
    c.kill9(leader);
    let d = wait_described(&c, &followers, topic, "f1 elected from the ELR", |d| {
        d.leader == f1
    });
    assert_eq!(d.isr, [f1], "{d:?}");
    assert_eq!(d.elr, [leader], "{d:?}");
    assert!(d.last_known_elr.is_empty(), "{d:?}");

    // The old leader restarts after its SIGKILL (no clean-shutdown
    // marker): its log may miss acknowledged records, it leaves the ELR
    // (it cannot catch up with f1 meanwhile: its fetches are cut off).
    c.start_node(leader);
    let d = wait_described(&c, &all, topic, "old leader out of the ELR", |d| {
        d.elr.is_empty()
    });
    assert_eq!((d.leader, d.isr.clone()), (f1, vec![f1]), "{d:?}");
    assert!(d.last_known_elr.is_empty(), "f1 leads: {d:?}");

    // Healed: both catch up with f1, the ISR is back to three, the ELR and
    // last known ELR are cleared, and every acknowledged record is there.
    c.set_data_link(f2, f1, Fault::Pass);
    c.set_data_link(leader, f1, Fault::Pass);
    c.set_data_link(f1, leader, Fault::Pass);
    c.set_data_link(f2, leader, Fault::Pass);
    wait_described(&c, &all, topic, "ISR of three again", |d| {
        d.leader == f1 && d.isr == all && d.elr.is_empty() && d.last_known_elr.is_empty()
    });
    let read = read_all(&c, f1, topic, acked.len());
    assert_eq!(read, acked, "every acknowledged record, in order");
}

/// A follower stopped cleanly (SIGTERM: controlled shutdown) while the ISR
/// is at `min.insync.replicas` joins the ELR and stays in it across its
/// clean restart (its clean-shutdown marker carries its broker epoch); the
/// same follower killed with SIGKILL and started again leaves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_restart_keeps_a_replica_in_the_elr_and_a_kill_removes_it() {
    let mut c = Cluster::start_with_proxies(
        3,
        &[
            "replica.lag.time.max.ms=2000",
            "replica.socket.timeout.ms=2000",
            "replica.fetch.backoff.ms=200",
        ],
    );
    let topic = "elr-restart";
    let a = admin(&c, &c.bootstrap_all());
    let t = NewTopic::new(topic, 1, TopicReplication::Fixed(3)).set("min.insync.replicas", "2");
    let r = a.create_topics(&[t], &admin_opts()).await.unwrap();
    assert!(r[0].is_ok(), "{r:?}");
    wait_topic(&c, &c.ids(), topic, 1);
    let all = c.ids();
    let d = wait_described(&c, &all, topic, "ISR of three", |d| {
        d.leader > 0 && d.isr == all
    });
    let leader = d.leader;
    let followers: Vec<i32> = all.iter().copied().filter(|&id| id != leader).collect();
    let (f1, f2) = (followers[0], followers[1]);
    assert_eq!(c.produce_raw(leader, topic, "before"), 0);

    // f2 falls behind (ISR at min ISR, no ELR), then f1 stops cleanly.
    c.set_data_link(f2, leader, Fault::BlackHole);
    let mut two = vec![leader, f1];
    two.sort_unstable();
    wait_described(&c, &all, topic, "ISR without f2", |d| {
        d.isr == two && d.elr.is_empty()
    });
    c.stop(f1);
    let up = [leader, f2];
    wait_described(&c, &up, topic, "f1 in the ELR", |d| {
        d.isr == [leader] && d.elr == [f1] && d.leader == leader
    });

    // Clean restart, kept from catching up: still eligible once alive.
    c.set_data_link(f1, leader, Fault::BlackHole);
    c.start_node(f1);
    c.wait_brokers(&all, DEADLINE);
    let d = describe(&c, leader, topic).unwrap();
    assert_eq!(
        (d.isr.clone(), d.elr.clone()),
        (vec![leader], vec![f1]),
        "{d:?}"
    );

    // SIGKILL and start again: no clean-shutdown marker, out of the ELR.
    c.kill9(f1);
    c.start_node(f1);
    c.wait_brokers(&all, DEADLINE);
    wait_described(&c, &all, topic, "f1 out of the ELR", |d| {
        d.isr == [leader] && d.elr.is_empty()
    });

    // Healed: back to an ISR of three, nothing lost.
    c.set_data_link(f1, leader, Fault::Pass);
    c.set_data_link(f2, leader, Fault::Pass);
    wait_described(&c, &all, topic, "ISR of three again", |d| {
        d.isr == all && d.elr.is_empty()
    });
    assert_eq!(c.produce_raw(leader, topic, "after"), 0);
    assert_eq!(read_all(&c, f1, topic, 2), ["before", "after"]);
}
