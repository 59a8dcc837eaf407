//! Shard-local replication at the leader (`net::handoff`): two brokers with
//! two shards each and a topic whose partitions spread over both shards.
//! Each follower runs one replica fetcher per (shard, leader); the leader
//! hands each fetcher's connection to the shard owning its partitions, so
//! no follower fetch is read on another shard than its connection's. Shown
//! with a real client (librdkafka, acks=all with `min.insync.replicas=2`,
//! so every acknowledgement waited for the follower) and the metrics
//! endpoint's counters of follower-fetch partitions served and of those
//! that crossed cores.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::cluster::Cluster;
use common::layout::{admin, wait_topic};
use common::{admin_opts, consume_n, poll_until};
use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};

const DEADLINE: Duration = Duration::from_secs(60);
const PARTITIONS: i32 = 8;
const PER_PARTITION: usize = 25;

/// Sums a counter family over the shards of node `id`'s metrics endpoint.
fn counter(c: &Cluster, id: i32, name: &str) -> u64 {
    let text = c.stderr_text(id);
    let line = text
        .lines()
        .find(|l| l.contains("metrics endpoint on http://"))
        .unwrap_or_else(|| panic!("node {id} logged no metrics address"));
    let addr = line
        .split("http://")
        .nth(1)
        .unwrap()
        .trim_end_matches("/metrics")
        .trim()
        .to_string();
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follower_fetches_are_served_on_the_owner_shard() {
    let c = Cluster::start_sharded(2, 2, &["metrics.listener=127.0.0.1:0"]);
    let topic = "local";
    let a = admin(&c, &c.bootstrap_all());
    let t = NewTopic::new(topic, PARTITIONS, TopicReplication::Fixed(2))
        .set("min.insync.replicas", "2");
    let r = a.create_topics(&[t], &admin_opts()).await.unwrap();
    assert!(r[0].is_ok(), "{r:?}");
    wait_topic(&c, &c.ids(), topic, PARTITIONS as usize);

    let producer: FutureProducer = c
        .client_config(&c.bootstrap_all())
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .set("message.timeout.ms", "60000")
        .create()
        .unwrap();
    let mut deliveries = Vec::new();
    for i in 0..PER_PARTITION {
        for p in 0..PARTITIONS {
            let value = format!("p{p}-{i:03}");
            let rec = FutureRecord::<(), _>::to(topic)
                .partition(p)
                .payload(&value);
            deliveries.push(producer.send_result(rec).map_err(|(e, _)| e).unwrap());
        }
    }
    for d in deliveries {
        d.await.unwrap().unwrap();
    }

    let cons: BaseConsumer = c
        .client_config(&c.bootstrap_all())
        .set("group.id", "fjord-handoff-it-unused")
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "100")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    cons.assign(&tpl).unwrap();
    let got = consume_n(&cons, PER_PARTITION * PARTITIONS as usize, DEADLINE);
    let mut per: BTreeMap<i32, usize> = BTreeMap::new();
    for m in &got {
        *per.entry(rdkafka::Message::partition(m)).or_default() += 1;
    }
    assert!(
        per.values().all(|n| *n == PER_PARTITION) && per.len() == PARTITIONS as usize,
        "{per:?}"
    );

    // Every acknowledgement waited for the follower's fetch, so follower
    // fetches were served on both brokers (each leads some partitions);
    // none of their partitions was read on another shard than the
    // connection's. The counters are copied about once a second.
    for id in c.ids() {
        poll_until(DEADLINE, "follower fetches counted", || {
            let served = counter(&c, id, "fjord_replica_fetch_partitions_total");
            (served > 0)
                .then_some(())
                .ok_or(format!("node {id}: {served}"))
        });
        let crossed = counter(&c, id, "fjord_replica_fetch_cross_shard_partitions_total");
        assert_eq!(
            crossed, 0,
            "node {id}: follower fetch partitions read across shards"
        );
    }
}
