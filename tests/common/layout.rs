//! Topics as a cluster's Metadata shows them (leaders, replicas, ISR), and
//! creating them through an rdkafka admin client while the controller may
//! move: shared by the cluster and replication tests.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kafka_protocol::messages::metadata_response::MetadataResponse;
use rdkafka::admin::{AdminClient, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;

use super::cluster::Cluster;
use super::{admin_opts, poll_until};

const NONE: i16 = 0;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
/// How long a topic change may take to show on every node.
pub const VISIBLE_DEADLINE: Duration = Duration::from_secs(20);
/// How long creating a topic may keep failing while the controller moves.
pub const FAILOVER_DEADLINE: Duration = Duration::from_secs(30);

/// One partition as Metadata shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub error: i16,
    pub leader: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
}

/// One topic as Metadata shows it: id and partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub id: uuid::Uuid,
    pub parts: BTreeMap<i32, Part>,
}

impl Layout {
    /// Replicas per partition (what placement decided; leaders move).
    pub fn replicas(&self) -> BTreeMap<i32, Vec<i32>> {
        self.parts
            .iter()
            .map(|(p, s)| (*p, s.replicas.clone()))
            .collect()
    }
    pub fn leaders(&self) -> BTreeMap<i32, i32> {
        self.parts.iter().map(|(p, s)| (*p, s.leader)).collect()
    }
}

/// `topic` in `md`: `Ok(None)` when the topic is unknown there.
pub fn layout(md: &MetadataResponse, topic: &str) -> Result<Option<Layout>, String> {
    let Some(t) = md
        .topics
        .iter()
        .find(|t| t.name.as_ref().map(|n| n.as_str()) == Some(topic))
    else {
        return Ok(None);
    };
    if t.error_code == UNKNOWN_TOPIC_OR_PARTITION {
        return Ok(None);
    }
    if t.error_code != NONE {
        return Err(format!("{topic}: error {}", t.error_code));
    }
    Ok(Some(Layout {
        id: t.topic_id,
        parts: t
            .partitions
            .iter()
            .map(|p| {
                (
                    p.partition_index,
                    Part {
                        error: p.error_code,
                        leader: p.leader_id.0,
                        replicas: p.replica_nodes.iter().map(|b| b.0).collect(),
                        isr: p.isr_nodes.iter().map(|b| b.0).collect(),
                    },
                )
            })
            .collect(),
    }))
}

/// `topic` as node `id` shows it.
pub fn layout_on(c: &Cluster, id: i32, topic: &str) -> Result<Option<Layout>, String> {
    layout(&c.metadata_from(id, Some(&[topic]))?, topic)
}

/// Waits until every node of `nodes` shows `topic` with `parts` partitions,
/// each with a leader, all with the same topic id, and each leader among
/// `nodes` serves its partition (its log is open: a broker answers
/// NOT_LEADER_OR_FOLLOWER while it opens it); gives node `nodes[0]`'s
/// layout.
pub fn wait_topic(c: &Cluster, nodes: &[i32], topic: &str, parts: usize) -> Layout {
    poll_until(
        VISIBLE_DEADLINE,
        &format!("{topic} with {parts} led partitions on nodes {nodes:?}"),
        || {
            let mut first: Option<Layout> = None;
            for &id in nodes {
                let l = layout_on(c, id, topic)?.ok_or(format!("node {id}: unknown"))?;
                if l.parts.len() != parts || l.parts.values().any(|p| p.leader < 0) {
                    return Err(format!("node {id}: {l:?}"));
                }
                match &first {
                    None => first = Some(l),
                    Some(f) if f.id != l.id => {
                        return Err(format!("topic ids differ: {} vs {} on {id}", f.id, l.id))
                    }
                    Some(_) => {}
                }
            }
            let l = first.unwrap();
            for (p, part) in &l.parts {
                if nodes.contains(&part.leader) {
                    match c.list_offsets_code(part.leader, topic, *p)? {
                        NONE => {}
                        code => {
                            return Err(format!(
                                "partition {p}: its leader {} answers error {code}",
                                part.leader
                            ))
                        }
                    }
                }
            }
            Ok(l)
        },
    )
}

/// An rdkafka admin client on `bootstrap`.
pub fn admin(c: &Cluster, bootstrap: &str) -> AdminClient<DefaultClientContext> {
    c.client_config(bootstrap)
        .create()
        .expect("create admin client")
}

/// Creates `topic` through an rdkafka admin client on `bootstrap`,
/// retrying while the controller moves; panics after the deadline.
pub async fn create_with_rdkafka(c: &Cluster, bootstrap: &str, topic: &str, parts: i32, rf: i32) {
    let admin = admin(c, bootstrap);
    let deadline = Instant::now() + FAILOVER_DEADLINE;
    loop {
        let res = admin
            .create_topics(
                &[NewTopic::new(topic, parts, TopicReplication::Fixed(rf))],
                &admin_opts(),
            )
            .await;
        let last = match res {
            Ok(r) => match &r[0] {
                Ok(_) => return,
                Err((_, rdkafka::types::RDKafkaErrorCode::TopicAlreadyExists)) => return,
                Err(e) => format!("{e:?}"),
            },
            Err(e) => e.to_string(),
        };
        assert!(
            Instant::now() < deadline,
            "creating {topic} (RF {rf}) through {bootstrap} kept failing: {last}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
