//! A three-node cluster of real `fjord` processes (combined
//! broker+controller nodes on one metadata quorum), driven by real clients:
//! metadata from every node, replica placement, producing through one
//! bootstrap node, admin requests forwarded to the active controller,
//! controller failover, fencing of a dead or partitioned broker, and a full
//! restart that keeps the metadata.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::cluster::{try_kp_call, Cluster};
use common::layout::{admin, create_with_rdkafka, layout, layout_on, wait_topic, Layout};
use common::{consume_n, poll_until, send_to_partitions, CLIENT_TIMEOUT};
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::{
    alter_configs_request as ac, incremental_alter_configs_request as iac, AlterConfigsRequest,
    CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest, DescribeConfigsRequest,
    IncrementalAlterConfigsRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{AlterConfig, ResourceSpecifier};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::FutureProducer;
use rdkafka::{Offset, TopicPartitionList};

/// Generous bounds for what should take a few seconds.
use common::layout::{FAILOVER_DEADLINE, VISIBLE_DEADLINE};

const NONE: i16 = 0;
const RESOURCE_TOPIC: i8 = 2;
const SOURCE_DYNAMIC_TOPIC: i8 = 1;
const OP_SET: i8 = 0;

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

fn tn(s: &str) -> TopicName {
    TopicName(sb(s))
}

/// Waits until no node of `nodes` knows `topic`.
fn wait_topic_gone(c: &Cluster, nodes: &[i32], topic: &str) {
    poll_until(
        VISIBLE_DEADLINE,
        &format!("{topic} gone on nodes {nodes:?}"),
        || {
            for &id in nodes {
                if let Some(l) = layout_on(c, id, topic)? {
                    return Err(format!("node {id} still shows {l:?}"));
                }
            }
            Ok(())
        },
    )
}

fn conn(c: &Cluster, id: i32) -> TcpStream {
    common::connect(&c.bootstrap(id))
}

/// CreateTopics v7 to node `id`: (error code, message).
fn create_raw(
    c: &Cluster,
    id: i32,
    topic: &str,
    parts: i32,
    rf: i16,
    configs: &[(&str, &str)],
) -> (i16, Option<String>) {
    let req = CreateTopicsRequest::default()
        .with_timeout_ms(15_000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(tn(topic))
            .with_num_partitions(parts)
            .with_replication_factor(rf)
            .with_configs(
                configs
                    .iter()
                    .map(|(k, v)| {
                        CreatableTopicConfig::default()
                            .with_name(sb(k))
                            .with_value(Some(sb(v)))
                    })
                    .collect(),
            )]);
    let resp = try_kp_call(&mut conn(c, id), 7, 11, &req).unwrap();
    let r = &resp.topics[0];
    (
        r.error_code,
        r.error_message.as_ref().map(|m| m.to_string()),
    )
}

/// CreatePartitions v3 to node `id`: (error code, message).
fn create_partitions_raw(c: &Cluster, id: i32, topic: &str, count: i32) -> (i16, Option<String>) {
    let req = CreatePartitionsRequest::default()
        .with_timeout_ms(15_000)
        .with_topics(vec![CreatePartitionsTopic::default()
            .with_name(tn(topic))
            .with_count(count)
            .with_assignments(None)]);
    let resp = try_kp_call(&mut conn(c, id), 3, 12, &req).unwrap();
    let r = &resp.results[0];
    (
        r.error_code,
        r.error_message.as_ref().map(|m| m.to_string()),
    )
}

/// DeleteTopics v6 (by name) to node `id`: (error code, message).
fn delete_raw(c: &Cluster, id: i32, topic: &str) -> (i16, Option<String>) {
    let req = DeleteTopicsRequest::default()
        .with_timeout_ms(15_000)
        .with_topics(vec![DeleteTopicState::default().with_name(Some(tn(topic)))]);
    let resp = try_kp_call(&mut conn(c, id), 6, 13, &req).unwrap();
    let r = &resp.responses[0];
    (
        r.error_code,
        r.error_message.as_ref().map(|m| m.to_string()),
    )
}

/// AlterConfigs v2 (replaces the topic's dynamic configs) to node `id`.
fn alter_raw(c: &Cluster, id: i32, topic: &str, pairs: &[(&str, &str)]) -> (i16, Option<String>) {
    let req =
        AlterConfigsRequest::default().with_resources(vec![ac::AlterConfigsResource::default()
            .with_resource_type(RESOURCE_TOPIC)
            .with_resource_name(sb(topic))
            .with_configs(
                pairs
                    .iter()
                    .map(|(k, v)| {
                        ac::AlterableConfig::default()
                            .with_name(sb(k))
                            .with_value(Some(sb(v)))
                    })
                    .collect(),
            )]);
    let resp = try_kp_call(&mut conn(c, id), 2, 14, &req).unwrap();
    let r = &resp.responses[0];
    (
        r.error_code,
        r.error_message.as_ref().map(|m| m.to_string()),
    )
}

/// IncrementalAlterConfigs v1 SET of each pair to node `id`.
fn incremental_set_raw(
    c: &Cluster,
    id: i32,
    topic: &str,
    pairs: &[(&str, &str)],
) -> (i16, Option<String>) {
    let req = IncrementalAlterConfigsRequest::default().with_resources(vec![
        iac::AlterConfigsResource::default()
            .with_resource_type(RESOURCE_TOPIC)
            .with_resource_name(sb(topic))
            .with_configs(
                pairs
                    .iter()
                    .map(|(k, v)| {
                        iac::AlterableConfig::default()
                            .with_name(sb(k))
                            .with_config_operation(OP_SET)
                            .with_value(Some(sb(v)))
                    })
                    .collect(),
            ),
    ]);
    let resp = try_kp_call(&mut conn(c, id), 1, 15, &req).unwrap();
    let r = &resp.responses[0];
    (
        r.error_code,
        r.error_message.as_ref().map(|m| m.to_string()),
    )
}

/// DescribeConfigs v4 of `topic` on node `id`: the dynamic topic configs
/// (source DYNAMIC_TOPIC_CONFIG), name → value.
fn dynamic_configs(c: &Cluster, id: i32, topic: &str) -> Result<BTreeMap<String, String>, String> {
    let req =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(RESOURCE_TOPIC)
            .with_resource_name(sb(topic))
            .with_configuration_keys(None)]);
    let mut s = TcpStream::connect(c.bootstrap(id)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let resp = try_kp_call(&mut s, 4, 16, &req)?;
    let r = &resp.results[0];
    if r.error_code != NONE {
        return Err(format!("node {id}: DescribeConfigs error {}", r.error_code));
    }
    Ok(r.configs
        .iter()
        .filter(|e| e.config_source == SOURCE_DYNAMIC_TOPIC)
        .map(|e| {
            (
                e.name.to_string(),
                e.value.as_ref().map(|v| v.to_string()).unwrap_or_default(),
            )
        })
        .collect())
}

/// Waits until every node of `nodes` describes exactly `want` as the
/// dynamic configs of `topic`.
fn wait_configs(c: &Cluster, nodes: &[i32], topic: &str, want: &[(&str, &str)]) {
    let want: BTreeMap<String, String> = want
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    poll_until(
        VISIBLE_DEADLINE,
        &format!("configs {want:?} of {topic} on nodes {nodes:?}"),
        || {
            for &id in nodes {
                let got = dynamic_configs(c, id, topic)?;
                if got != want {
                    return Err(format!("node {id}: {got:?}"));
                }
            }
            Ok(())
        },
    )
}

/// Calls `op` until it answers NONE (the controller may be moving);
/// panics with the last answer after [`FAILOVER_DEADLINE`].
fn until_ok(what: &str, mut op: impl FnMut() -> (i16, Option<String>)) {
    poll_until(FAILOVER_DEADLINE, what, || match op() {
        (NONE, _) => Ok(()),
        other => Err(format!("{other:?}")),
    })
}

fn producer(c: &Cluster, bootstrap: &str) -> FutureProducer {
    c.client_config(bootstrap)
        .set("message.timeout.ms", "30000")
        .set("linger.ms", "5")
        .set("enable.idempotence", "false")
        .create()
        .expect("create producer")
}

fn consumer(c: &Cluster, bootstrap: &str) -> BaseConsumer {
    c.client_config(bootstrap)
        .set("group.id", "fjord-cluster-it-unused")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "100")
        .create()
        .expect("create consumer")
}

/// The node ids other than `not`.
fn others(c: &Cluster, not: i32) -> Vec<i32> {
    c.ids().into_iter().filter(|&id| id != not).collect()
}

/// Leaders per broker.
fn leader_counts(l: &Layout) -> BTreeMap<i32, usize> {
    let mut m = BTreeMap::new();
    for p in l.parts.values() {
        *m.entry(p.leader).or_default() += 1;
    }
    m
}

// ---------------------------------------------------------------------------

/// (a) Metadata from every node lists the three brokers (at their own
/// client addresses), one active controller and the formatted cluster id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_from_every_node_lists_three_brokers_and_the_controller() {
    let mut c = Cluster::start(3, &[]);
    let controller = c.controller(FAILOVER_DEADLINE);
    assert!(c.ids().contains(&controller), "controller {controller}");
    for id in c.ids() {
        let md = c.metadata_from(id, None).unwrap();
        assert_eq!(
            md.controller_id.0, controller,
            "controller seen by node {id}"
        );
        assert_eq!(
            md.cluster_id.as_ref().map(|s| s.as_str()),
            Some(c.cluster_id()),
            "cluster id from node {id}"
        );
        let brokers: BTreeMap<i32, String> = md
            .brokers
            .iter()
            .map(|b| (b.node_id.0, format!("{}:{}", b.host.as_str(), b.port)))
            .collect();
        let want: BTreeMap<i32, String> = c.ids().iter().map(|&b| (b, c.bootstrap(b))).collect();
        assert_eq!(brokers, want, "brokers listed by node {id}");

        // The same through librdkafka, bootstrapped to this node only.
        let consumer = consumer(&c, &c.bootstrap(id));
        let md = consumer.fetch_metadata(None, CLIENT_TIMEOUT).unwrap();
        let brokers: BTreeMap<i32, String> = md
            .brokers()
            .iter()
            .map(|b| (b.id(), format!("{}:{}", b.host(), b.port())))
            .collect();
        assert_eq!(brokers, want, "brokers rdkafka sees through node {id}");
    }
}

/// (b) 6 partitions with RF 3 on 3 brokers: every partition has three
/// distinct replicas, all in the ISR, the first replica leads, and every
/// broker leads two partitions; every node shows the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rf3_topic_spreads_leaders_over_the_brokers() {
    let c = Cluster::start(3, &[]);
    create_with_rdkafka(&c, &c.bootstrap(1), "spread", 6, 3).await;
    let l = wait_topic(&c, &c.ids(), "spread", 6);
    for (p, s) in &l.parts {
        assert_eq!(s.error, NONE, "partition {p}: {s:?}");
        let distinct: BTreeSet<i32> = s.replicas.iter().copied().collect();
        assert_eq!(
            distinct,
            BTreeSet::from([1, 2, 3]),
            "replicas of {p}: {s:?}"
        );
        assert_eq!(s.replicas.len(), 3, "replicas of {p}: {s:?}");
        let isr: BTreeSet<i32> = s.isr.iter().copied().collect();
        assert_eq!(isr, distinct, "ISR of {p}: {s:?}");
        assert_eq!(s.leader, s.replicas[0], "preferred leader of {p}: {s:?}");
    }
    assert_eq!(
        leader_counts(&l),
        BTreeMap::from([(1, 2), (2, 2), (3, 2)]),
        "leaders: {:?}",
        l.leaders()
    );
    for id in c.ids() {
        let here = layout_on(&c, id, "spread").unwrap().unwrap();
        assert_eq!(here, l, "layout on node {id}");
    }
}

/// (c) A producer bootstrapped to one node reaches every partition leader
/// (on all three brokers); a consumer bootstrapped to another node reads
/// every record back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producing_through_one_bootstrap_node_reaches_every_leader() {
    let c = Cluster::start(3, &[]);
    let topic = "through-one";
    create_with_rdkafka(&c, &c.bootstrap(1), topic, 6, 3).await;
    let l = wait_topic(&c, &c.ids(), topic, 6);
    let leaders: BTreeSet<i32> = l.leaders().values().copied().collect();
    assert_eq!(leaders, BTreeSet::from([1, 2, 3]), "{l:?}");

    let p = producer(&c, &c.bootstrap(1));
    let records: Vec<(i32, String)> = (0..60).map(|i| (i % 6, format!("v{i}"))).collect();
    let delivered = send_to_partitions(&p, topic, &records, Duration::from_secs(30)).await;
    let mut per_part: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for (part, off, _) in &delivered {
        per_part.entry(*part).or_default().push(*off);
    }
    for part in 0..6 {
        assert_eq!(
            per_part.get(&part),
            Some(&(0..10).collect::<Vec<i64>>()),
            "offsets delivered to partition {part} (leader {})",
            l.parts[&part].leader
        );
    }

    let cons = consumer(&c, &c.bootstrap(3));
    let mut tpl = TopicPartitionList::new();
    for part in 0..6 {
        tpl.add_partition_offset(topic, part, Offset::Beginning)
            .unwrap();
    }
    cons.assign(&tpl).unwrap();
    let msgs = consume_n(&cons, 60, Duration::from_secs(30));
    let mut got: BTreeMap<i32, Vec<(i64, String)>> = BTreeMap::new();
    for m in &msgs {
        let v = String::from_utf8(m.payload().unwrap().to_vec()).unwrap();
        got.entry(m.partition()).or_default().push((m.offset(), v));
    }
    for part in 0..6 {
        let want: Vec<(i64, String)> = (0..10)
            .map(|k| (k as i64, format!("v{}", part + 6 * k)))
            .collect();
        assert_eq!(
            got.get(&part),
            Some(&want),
            "records read from partition {part}"
        );
    }
}

/// (d) CreateTopics, CreatePartitions, AlterConfigs,
/// IncrementalAlterConfigs, DescribeConfigs and DeleteTopics sent to a node
/// that is not the active controller succeed, and every node shows the
/// result. Then the same through an rdkafka admin client bootstrapped to
/// that node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_requests_to_a_non_controller_node_are_forwarded() {
    let mut c = Cluster::start(3, &[]);
    let controller = c.controller(FAILOVER_DEADLINE);
    let nc = others(&c, controller)[0];
    let all = c.ids();
    let t = "forwarded";

    let r = create_raw(&c, nc, t, 3, 3, &[("cleanup.policy", "compact")]);
    assert_eq!(r.0, NONE, "CreateTopics through node {nc}: {r:?}");
    let created = wait_topic(&c, &all, t, 3);
    assert!(created.parts.values().all(|p| p.replicas.len() == 3));
    wait_configs(&c, &all, t, &[("cleanup.policy", "compact")]);

    let r = create_partitions_raw(&c, nc, t, 5);
    assert_eq!(r.0, NONE, "CreatePartitions through node {nc}: {r:?}");
    let grown = wait_topic(&c, &all, t, 5);
    assert_eq!(grown.id, created.id, "topic id after CreatePartitions");
    for p in 0..3 {
        assert_eq!(grown.parts[&p].replicas, created.parts[&p].replicas);
    }

    let r = alter_raw(&c, nc, t, &[("retention.ms", "3600000")]);
    assert_eq!(r.0, NONE, "AlterConfigs through node {nc}: {r:?}");
    wait_configs(&c, &all, t, &[("retention.ms", "3600000")]);
    let r = incremental_set_raw(&c, nc, t, &[("max.message.bytes", "123456")]);
    assert_eq!(
        r.0, NONE,
        "IncrementalAlterConfigs through node {nc}: {r:?}"
    );
    wait_configs(
        &c,
        &all,
        t,
        &[("max.message.bytes", "123456"), ("retention.ms", "3600000")],
    );

    let r = delete_raw(&c, nc, t);
    assert_eq!(r.0, NONE, "DeleteTopics through node {nc}: {r:?}");
    wait_topic_gone(&c, &all, t);

    // A client bootstrapped to that node only.
    let boot = c.bootstrap(nc);
    let adm = admin(&c, &boot);
    let t2 = "forwarded-rdkafka";
    create_with_rdkafka(&c, &boot, t2, 2, 3).await;
    wait_topic(&c, &all, t2, 2);
    let res = adm
        .create_partitions(
            &[rdkafka::admin::NewPartitions::new(t2, 4)],
            &common::admin_opts(),
        )
        .await
        .unwrap();
    assert!(res[0].is_ok(), "{res:?}");
    wait_topic(&c, &all, t2, 4);
    let res = adm
        .alter_configs(
            &[AlterConfig::new(ResourceSpecifier::Topic(t2)).set("retention.bytes", "1048576")],
            &common::admin_opts(),
        )
        .await
        .unwrap();
    assert!(res[0].is_ok(), "{res:?}");
    wait_configs(&c, &all, t2, &[("retention.bytes", "1048576")]);
    let described = adm
        .describe_configs(&[ResourceSpecifier::Topic(t2)], &common::admin_opts())
        .await
        .unwrap();
    let desc = described[0].as_ref().unwrap();
    assert_eq!(
        desc.get("retention.bytes").and_then(|e| e.value.as_deref()),
        Some("1048576")
    );
    let res = adm
        .delete_topics(&[t2], &common::admin_opts())
        .await
        .unwrap();
    assert!(res[0].is_ok(), "{res:?}");
    wait_topic_gone(&c, &all, t2);
}

/// Whether one of the nodes `at` logged the decision an active controller
/// takes to fence broker `broker` for missed heartbeats
/// (`broker.session.timeout.ms` after its last one).
fn fenced_for_missed_heartbeats(c: &Cluster, at: &[i32], broker: i32) -> bool {
    let event = format!("broker {broker} missed its heartbeats");
    at.iter().any(|&id| c.stderr_text(id).contains(&event))
}

/// (e) kill -9 of the active controller: the other two elect a new one,
/// and topics can be created through either of them; the killed node,
/// restarted, catches up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_active_controller_elects_another() {
    let mut c = Cluster::start(3, &[]);
    let old = c.controller(FAILOVER_DEADLINE);
    let rest = others(&c, old);
    c.kill9(old);
    let new = c.controller_on(&rest, &[old], FAILOVER_DEADLINE);
    assert_ne!(new, old, "the killed node is still the controller");
    assert!(rest.contains(&new), "new controller {new}");

    // Raw CreateTopics to each survivor (one forwards), RF 1 and RF 2 (the
    // dead broker may still count as alive until its session expires).
    for (i, &id) in rest.iter().enumerate() {
        let name = format!("after-failover-{i}");
        until_ok(&format!("create {name} through node {id}"), || {
            create_raw(&c, id, &name, 2, 1, &[])
        });
        wait_topic(&c, &rest, &name, 2);
    }
    c.wait_brokers_on(&rest, &rest, FAILOVER_DEADLINE);
    let bootstrap = rest
        .iter()
        .map(|&id| c.bootstrap(id))
        .collect::<Vec<_>>()
        .join(",");
    create_with_rdkafka(&c, &bootstrap, "after-failover-rf2", 4, 2).await;
    let l = wait_topic(&c, &rest, "after-failover-rf2", 4);
    for (p, s) in &l.parts {
        assert!(
            !s.replicas.contains(&old),
            "partition {p} placed on the fenced broker {old}: {s:?}"
        );
    }

    // The killed node comes back, follows the new controller and knows
    // the topics created while it was down.
    // (It may force an election: which node wins is not checked.)
    c.start_node(old);
    c.wait_brokers(&c.ids(), FAILOVER_DEADLINE);
    c.controller(FAILOVER_DEADLINE);
    wait_topic(&c, &[old], "after-failover-rf2", 4);
    wait_topic(&c, &[old], "after-failover-0", 2);
}

/// Waits until `survivors` all list every broker but `gone` and show no
/// partition of `topic` led by it or with it in the ISR; gives the layout.
fn wait_fenced(c: &Cluster, survivors: &[i32], gone: i32, topic: &str) -> Layout {
    c.wait_brokers_on(survivors, survivors, FAILOVER_DEADLINE);
    poll_until(
        FAILOVER_DEADLINE,
        &format!("{topic} without broker {gone} as leader or in the ISR"),
        || {
            let mut first = None;
            for &id in survivors {
                let l = layout_on(c, id, topic)?.ok_or(format!("node {id}: unknown"))?;
                for (p, s) in &l.parts {
                    if s.leader == gone || s.isr.contains(&gone) {
                        return Err(format!("node {id}, partition {p}: {s:?}"));
                    }
                }
                first.get_or_insert(l);
            }
            Ok(first.unwrap())
        },
    )
}

/// Checks the partitions `gone` led: another ISR member (or nobody) leads.
fn assert_leaders_moved(before: &Layout, after: &Layout, gone: i32) {
    let mut moved = 0;
    for (p, s) in &before.parts {
        let now = &after.parts[p];
        assert_eq!(now.replicas, s.replicas, "replicas of {p} changed");
        if s.leader == gone {
            moved += 1;
            assert!(
                now.leader == -1 || (s.isr.contains(&now.leader) && now.leader != gone),
                "partition {p}: led by {gone} before ({s:?}), now {now:?}"
            );
        } else {
            assert_eq!(
                now.leader, s.leader,
                "partition {p} changed leader: {s:?} -> {now:?}"
            );
        }
    }
    assert_eq!(moved, 2, "{gone} led two partitions: {before:?}");
}

/// (f) A broker killed with SIGKILL is fenced once its session expires
/// (the controller's decision for missed heartbeats, not another path):
/// Metadata stops listing it, another ISR member leads its partitions and
/// it leaves the ISR. Restarted, it is unfenced again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_broker_is_fenced_after_its_session_timeout() {
    let mut c = Cluster::start(3, &[]);
    let controller = c.controller(FAILOVER_DEADLINE);
    let victim = others(&c, controller)[0];
    let survivors = others(&c, victim);
    create_with_rdkafka(&c, &c.bootstrap(controller), "fenced", 6, 3).await;
    let before = wait_topic(&c, &c.ids(), "fenced", 6);

    c.kill9(victim);
    let after = wait_fenced(&c, &survivors, victim, "fenced");
    // The controller fenced it because its session expired.
    poll_until(
        FAILOVER_DEADLINE,
        &format!("a controller fencing broker {victim} for missed heartbeats"),
        || {
            fenced_for_missed_heartbeats(&c, &survivors, victim)
                .then_some(())
                .ok_or_else(String::new)
        },
    );
    assert_leaders_moved(&before, &after, victim);

    c.start_node(victim);
    c.wait_brokers(&c.ids(), FAILOVER_DEADLINE);
    c.controller(FAILOVER_DEADLINE);
}

/// (f) A broker cut off from the other nodes on the controller listener
/// (a black hole both ways, the process keeps running) is fenced; healed,
/// it registers again. Then the active controller is cut off: the other
/// two elect a new one and fence it; healed, all agree on one controller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_broker_is_fenced_and_returns_when_healed() {
    let mut c = Cluster::start_with_proxies(3, &[]);
    let all = c.ids();
    let controller = c.controller(FAILOVER_DEADLINE);
    let victim = others(&c, controller)[0];
    let survivors = others(&c, victim);
    create_with_rdkafka(&c, &c.bootstrap(controller), "cut-off", 6, 3).await;
    let before = wait_topic(&c, &all, "cut-off", 6);

    for id in &all {
        let p = c.proxy(*id);
        assert!(p.accepted() > 0, "nobody connected to node {id}'s proxy");
    }
    c.isolate(victim);
    let after = wait_fenced(&c, &survivors, victim, "cut-off");
    assert!(c.is_running(victim), "the partitioned node exited");
    assert_leaders_moved(&before, &after, victim);
    for &s in &survivors {
        assert_eq!(c.view(s).unwrap().0, controller, "controller seen by {s}");
    }

    // Healed, it registers again (and may force an election, as its term
    // moved on while it was alone: which node wins is not checked).
    c.heal_all();
    c.wait_brokers(&all, FAILOVER_DEADLINE);
    let controller = c.controller(FAILOVER_DEADLINE);

    // The active controller cut off.
    let survivors = others(&c, controller);
    c.isolate(controller);
    let new = c.controller_on(&survivors, &[controller], FAILOVER_DEADLINE);
    assert!(survivors.contains(&new));
    wait_fenced(&c, &survivors, controller, "cut-off");
    // Topics can be created on the majority side.
    until_ok("create a topic on the majority side", || {
        create_raw(&c, survivors[0], "majority", 1, 2, &[])
    });
    wait_topic(&c, &survivors, "majority", 1);

    c.heal_all();
    c.wait_brokers(&all, FAILOVER_DEADLINE);
    c.controller(FAILOVER_DEADLINE);
    wait_topic(&c, &[controller], "majority", 1);
}

/// The active controller cut off (black-holed) while the brokers'
/// requests to it are in flight, with `controller.quorum.request.timeout.ms`
/// longer than the session: the majority elects a new controller and must
/// keep its own two brokers alive (their heartbeats should go to the new
/// controller once it is known, as Kafka's broker re-routes its requests
/// when the active controller changes).
///
/// No observation window: the new controller gives every broker a fresh
/// session when it takes over and fences, in one pass, every broker whose
/// session then expired. So when it fences the cut-off controller (a
/// session after the takeover at the earliest), a survivor whose
/// heartbeats had not reached it would be fenced with it; no survivor's
/// log may name a survivor, and the survivors still list each other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cutting_off_the_controller_fences_only_it_even_with_a_long_request_timeout() {
    let mut c = Cluster::start_with_proxies(3, &["controller.quorum.request.timeout.ms=5000"]);
    let controller = c.controller(FAILOVER_DEADLINE);
    let survivors = others(&c, controller);
    create_with_rdkafka(&c, &c.bootstrap(controller), "long-timeout", 6, 3).await;
    wait_topic(&c, &c.ids(), "long-timeout", 6);
    c.isolate(controller);
    let new = c.controller_on(&survivors, &[controller], FAILOVER_DEADLINE);
    assert!(survivors.contains(&new));
    wait_fenced(&c, &survivors, controller, "long-timeout");
    poll_until(
        FAILOVER_DEADLINE,
        &format!("a controller fencing broker {controller} for missed heartbeats"),
        || {
            fenced_for_missed_heartbeats(&c, &survivors, controller)
                .then_some(())
                .ok_or_else(String::new)
        },
    );
    for &s in &survivors {
        assert!(
            !fenced_for_missed_heartbeats(&c, &survivors, s),
            "broker {s} was fenced (controller {new}):\n{}",
            c.stderr_text(new)
        );
    }
    for &id in &survivors {
        let (_, alive) = c.view(id).expect("view");
        for s in &survivors {
            assert!(
                alive.contains(s),
                "node {id} lists {alive:?}: broker {s} was fenced (controller {new})"
            );
        }
    }
}

/// Everything a restart must keep: per topic its id, partitions' replicas
/// and dynamic configs, as node `id` shows them.
type Snapshot = BTreeMap<
    String,
    (
        uuid::Uuid,
        BTreeMap<i32, Vec<i32>>,
        BTreeMap<String, String>,
    ),
>;

fn snapshot(c: &Cluster, id: i32) -> Result<Snapshot, String> {
    let md = c.metadata_from(id, None)?;
    let mut out = Snapshot::new();
    for t in &md.topics {
        let name = t.name.as_ref().map(|n| n.to_string()).unwrap_or_default();
        if name.starts_with("__") {
            continue;
        }
        let l = layout(&md, &name)?.ok_or(format!("{name} vanished"))?;
        let configs = dynamic_configs(c, id, &name)?;
        out.insert(name, (l.id, l.replicas(), configs));
    }
    Ok(out)
}

/// Waits until every node shows `want` (all partitions led).
fn wait_snapshot(c: &mut Cluster, want: &Snapshot, what: &str) {
    let ids = c.ids();
    c.wait_brokers(&ids, FAILOVER_DEADLINE);
    c.controller(FAILOVER_DEADLINE);
    poll_until(FAILOVER_DEADLINE, what, || {
        for &id in &ids {
            let got = snapshot(c, id)?;
            if &got != want {
                return Err(format!("node {id}: {got:?}"));
            }
            for t in want.keys() {
                let l = layout_on(c, id, t)?.ok_or(format!("node {id}: {t} unknown"))?;
                if l.parts.values().any(|p| p.leader < 0) {
                    return Err(format!(
                        "node {id}: {t} has a partition without leader: {l:?}"
                    ));
                }
            }
        }
        Ok(())
    });
}

/// (g) Stopping and starting every node (SIGTERM, then SIGKILL) keeps all
/// metadata: topics, topic ids, partition counts and replicas, configs,
/// and deleted topics stay deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarting_every_node_keeps_the_metadata() {
    let mut c = Cluster::start(3, &[]);
    let controller = c.controller(FAILOVER_DEADLINE);
    let nc = others(&c, controller)[0];
    let all = c.ids();
    let r = create_raw(&c, nc, "kept-a", 6, 3, &[("retention.ms", "7200000")]);
    assert_eq!(r.0, NONE, "{r:?}");
    let r = create_raw(&c, controller, "kept-b", 2, 2, &[]);
    assert_eq!(r.0, NONE, "{r:?}");
    let r = create_partitions_raw(&c, nc, "kept-b", 5);
    assert_eq!(r.0, NONE, "{r:?}");
    let r = incremental_set_raw(&c, controller, "kept-b", &[("cleanup.policy", "compact")]);
    assert_eq!(r.0, NONE, "{r:?}");
    let r = create_raw(&c, nc, "kept-deleted", 1, 1, &[]);
    assert_eq!(r.0, NONE, "{r:?}");
    wait_topic(&c, &all, "kept-deleted", 1);
    let r = delete_raw(&c, nc, "kept-deleted");
    assert_eq!(r.0, NONE, "{r:?}");
    wait_topic(&c, &all, "kept-a", 6);
    wait_topic(&c, &all, "kept-b", 5);
    wait_topic_gone(&c, &all, "kept-deleted");
    wait_configs(&c, &all, "kept-a", &[("retention.ms", "7200000")]);
    wait_configs(&c, &all, "kept-b", &[("cleanup.policy", "compact")]);
    let want = snapshot(&c, controller).unwrap();
    assert_eq!(
        want.keys().cloned().collect::<Vec<_>>(),
        vec!["kept-a".to_string(), "kept-b".to_string()]
    );
    wait_snapshot(
        &mut c,
        &want,
        "the same metadata on every node before the restart",
    );

    c.restart_all();
    wait_snapshot(
        &mut c,
        &want,
        "the metadata after SIGTERM and start of every node",
    );

    for id in all.clone() {
        c.kill9(id);
    }
    c.start_nodes(&all);
    wait_snapshot(
        &mut c,
        &want,
        "the metadata after SIGKILL and start of every node",
    );

    // And the cluster still takes changes.
    let controller = c.controller(FAILOVER_DEADLINE);
    until_ok("create after the restarts", || {
        create_raw(&c, others(&c, controller)[0], "after-restarts", 3, 3, &[])
    });
    wait_topic(&c, &all, "after-restarts", 3);
}

/// Every node restarted with `controller.quorum.voters` naming other
/// addresses for the same voters (the controllers moved: here the proxies
/// the cluster ran behind are dropped, and refuse connections from then
/// on). Kafka's static quorum reads the voters' addresses from the config
/// at each start, so the cluster comes back on the new addresses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarting_with_moved_voter_addresses_uses_the_new_ones() {
    let mut c = Cluster::start_with_proxies(3, &[]);
    let all = c.ids();
    create_with_rdkafka(&c, &c.bootstrap(1), "moved", 3, 3).await;
    let before = wait_topic(&c, &all, "moved", 3);
    c.stop_many(&all);
    c.bypass_proxies();
    for &id in &all {
        c.proxy(id).refuse();
    }
    c.start_nodes(&all);
    c.wait_brokers(&all, FAILOVER_DEADLINE);
    c.controller(FAILOVER_DEADLINE);
    let after = wait_topic(&c, &all, "moved", 3);
    assert_eq!(after.id, before.id);
    until_ok("create a topic after the move", || {
        create_raw(&c, 2, "after-move", 1, 3, &[])
    });
}

/// A broker-only node (`process.roles=broker`) joins through the voters: it
/// registers, follows the metadata log from the active controller, is
/// listed to clients and gets replicas and leaderships, forwards admin
/// requests, and keeps following across a controller failover. It never
/// becomes the controller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_only_node_joins_through_the_voters() {
    let mut c = Cluster::start(3, &[]);
    let b = c.add_broker();
    assert_eq!(b, 4);
    c.wait_brokers_on(&[1, 2, 3, 4], &[1, 2, 3, 4], FAILOVER_DEADLINE);
    let (controller, brokers) = c.view(b).expect("metadata from the broker-only node");
    assert!(
        (1..=3).contains(&controller),
        "the controller {controller} is a voter"
    );
    assert_eq!(brokers.len(), 4);

    // Created through the broker-only node (forwarded): placed on all four.
    until_ok("create through the broker-only node", || {
        create_raw(&c, b, "four", 8, 2, &[])
    });
    let l = wait_topic(&c, &[1, 2, 3, 4], "four", 8);
    assert!(
        leader_counts(&l).contains_key(&b),
        "the broker-only node leads some partitions: {:?}",
        leader_counts(&l)
    );

    // The active controller dies: the broker-only node follows the new one.
    let old = c.controller(FAILOVER_DEADLINE);
    c.kill9(old);
    let rest: Vec<i32> = [1, 2, 3, 4].into_iter().filter(|n| *n != old).collect();
    let new = c.controller_on(&rest, &[old], FAILOVER_DEADLINE);
    assert_ne!(new, b, "a broker-only node is never the controller");
    until_ok("create after the failover", || {
        create_raw(&c, new, "after", 2, 1, &[])
    });
    wait_topic(&c, &[b], "after", 2);
}

/// DescribeQuorum (key 55, v2) on any broker answers from the active
/// controller: the leader, three voters whose log end offsets reach the
/// high watermark, their controller endpoints, and the broker-only node as
/// an observer. Unknown topics get UNKNOWN_TOPIC_OR_PARTITION.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_quorum_reports_voters_and_observers() {
    use kafka_protocol::messages::describe_quorum_request::{PartitionData, TopicData};
    use kafka_protocol::messages::DescribeQuorumRequest;
    let mut c = Cluster::start(3, &[]);
    let b = c.add_broker();
    let controller = c.controller(FAILOVER_DEADLINE);
    let ask = |topic: &str| {
        let mut p = PartitionData::default();
        p.partition_index = 0;
        let mut t = TopicData::default();
        t.topic_name = tn(topic);
        t.partitions = vec![p];
        let mut req = DescribeQuorumRequest::default();
        req.topics = vec![t];
        req
    };
    for id in [1, 2, 3, b] {
        // Caught up after a moment: poll until every voter reached the
        // high watermark and the observer appears.
        let deadline = Instant::now() + FAILOVER_DEADLINE;
        loop {
            let resp = try_kp_call(&mut conn(&c, id), 2, 21, &ask("__cluster_metadata")).unwrap();
            assert_eq!(resp.error_code, 0, "node {id}: {resp:?}");
            let p = &resp.topics[0].partitions[0];
            assert_eq!(p.error_code, 0);
            assert_eq!(p.leader_id.0, controller, "node {id}: leader");
            let voters: BTreeSet<i32> = p.current_voters.iter().map(|v| v.replica_id.0).collect();
            assert_eq!(voters, BTreeSet::from([1, 2, 3]), "node {id}: voters");
            assert_eq!(
                resp.nodes.len(),
                3,
                "node {id}: voter endpoints {:?}",
                resp.nodes
            );
            let caught_up = p
                .current_voters
                .iter()
                .all(|v| v.log_end_offset >= p.high_watermark && v.last_fetch_timestamp > 0);
            let observed = p.observers.iter().any(|o| o.replica_id.0 == b);
            if caught_up && observed {
                break;
            }
            assert!(Instant::now() < deadline, "node {id}: {p:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
        let resp = try_kp_call(&mut conn(&c, id), 2, 22, &ask("other")).unwrap();
        assert_eq!(
            resp.topics[0].partitions[0].error_code, 3,
            "node {id}: other topic"
        );
    }
}

/// With the quorum lost (the active controller and one more voter of three
/// killed), the survivor's image still lists them alive (nobody can fence
/// them), so it names itself as the controller once the active controller
/// has not answered its heartbeats for `broker.session.timeout.ms`: a
/// client's controller requests (kafka-topics --describe lists
/// reassignments there) then reach a live broker and get an answer instead
/// of waiting on a dead one. Back with the quorum, it names the active
/// controller again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_that_lost_the_quorum_names_itself_as_controller() {
    let mut c = Cluster::start(3, &[]);
    let controller = c.controller(FAILOVER_DEADLINE);
    let others: Vec<i32> = c.ids().into_iter().filter(|&i| i != controller).collect();
    let (survivor, second) = (others[0], others[1]);
    c.kill9(controller);
    c.kill9(second);
    poll_until(FAILOVER_DEADLINE, "the survivor names itself", || {
        let (ctl, _) = c.view(survivor)?;
        (ctl == survivor)
            .then_some(())
            .ok_or(format!("controller {ctl}"))
    });
    c.start_node(second);
    let back = c.controller_on(&[survivor, second], &[], FAILOVER_DEADLINE);
    assert!([survivor, second].contains(&back), "controller {back}");
}

/// A quorum outage does not fence the brokers that kept heartbeating: with
/// two of three voters killed for longer than `broker.session.timeout.ms`,
/// the active controller cannot commit anything, but the heartbeats of the
/// surviving broker (its own) still count, so when the two come back it
/// fences neither itself nor its partitions' leadership away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quorum_outage_does_not_fence_the_broker_that_stayed_up() {
    let mut c = Cluster::start(3, &[]);
    let controller = c.controller(FAILOVER_DEADLINE);
    let others: Vec<i32> = c.ids().into_iter().filter(|&i| i != controller).collect();
    c.kill9(others[0]);
    c.kill9(others[1]);
    poll_until(FAILOVER_DEADLINE, "the survivor names itself", || {
        let (ctl, _) = c.view(controller)?;
        (ctl == controller)
            .then_some(())
            .ok_or(format!("controller {ctl}"))
    });
    // Longer than the session timeout: the outage lasts until the
    // controller has found both killed brokers' sessions expired (it
    // decides to fence them, which it cannot commit without a quorum).
    // Without the heartbeats counted, every broker would look expired once
    // the quorum is back.
    poll_until(
        FAILOVER_DEADLINE,
        "the killed brokers' sessions expired at the controller",
        || {
            let missed: Vec<i32> = others
                .iter()
                .copied()
                .filter(|&o| !fenced_for_missed_heartbeats(&c, &[controller], o))
                .collect();
            missed
                .is_empty()
                .then_some(())
                .ok_or(format!("not yet for {missed:?}"))
        },
    );
    c.start_node(others[0]);
    c.start_node(others[1]);
    let all = c.ids();
    c.wait_brokers(&all, FAILOVER_DEADLINE);
    let fenced = format!("broker {controller} missed its heartbeats");
    assert!(
        !c.stderr_text(controller).contains(&fenced),
        "the broker that stayed up was fenced:\n{}",
        c.stderr_text(controller)
    );
}
