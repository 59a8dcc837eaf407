//! `fjord topics list | describe | create | alter | delete`, the operations
//! of Kafka's `kafka-topics.sh`, over the Kafka protocol (Metadata,
//! CreateTopics, CreatePartitions, IncrementalAlterConfigs, DeleteTopics,
//! DescribeConfigs) against any Kafka-compatible broker.

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use serde_json::{json, Value};

use super::client::{ClientError, Connection};
use super::configs::{self, ConfigEntry, ResourceType};
use super::output::Report;

/// How long the broker may take to create, grow or delete topics (ms),
/// Kafka's admin client default (`default.api.timeout.ms` is larger; the
/// request timeout is what the tools send).
pub const TIMEOUT_MS: i32 = 30_000;

/// The outcome for one topic of a multi-topic operation.
pub type TopicResult = Result<(), ClientError>;

/// One partition as `describe` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionInfo {
    /// Partition index.
    pub partition: i32,
    /// Leader broker id, -1 when none.
    pub leader: i32,
    /// Leader epoch.
    pub leader_epoch: i32,
    /// Replica broker ids.
    pub replicas: Vec<i32>,
    /// In-sync replica broker ids.
    pub isr: Vec<i32>,
}

/// One topic as `describe` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicInfo {
    /// Topic name.
    pub name: String,
    /// Topic id (Kafka UUID, base64url).
    pub topic_id: String,
    /// Whether it is an internal topic (`__consumer_offsets`, …).
    pub internal: bool,
    /// Partitions, by index.
    pub partitions: Vec<PartitionInfo>,
    /// Config overrides (source DYNAMIC_TOPIC_CONFIG).
    pub configs: Vec<ConfigEntry>,
}

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

/// Takes a connection and topic names (None: every topic); gives the
/// Metadata response (topic names and ids, partitions, brokers).
pub fn metadata(
    c: &mut Connection,
    topics: Option<&[String]>,
) -> Result<MetadataResponse, ClientError> {
    let v = c.version(ApiKey::Metadata, 12)?;
    let mut req = MetadataRequest::default();
    req.topics = topics.map(|ts| {
        ts.iter()
            .map(|t| {
                let mut r = metadata_request::MetadataRequestTopic::default();
                r.name = Some(name(t));
                r
            })
            .collect()
    });
    req.allow_auto_topic_creation = false;
    c.send(ApiKey::Metadata, v, &req)
}

/// Takes a connection and whether to leave internal topics out; gives the
/// topic names, sorted.
pub fn list(c: &mut Connection, exclude_internal: bool) -> Result<Vec<String>, ClientError> {
    let md = metadata(c, None)?;
    let mut names: Vec<String> = md
        .topics
        .iter()
        .filter(|t| t.error_code == 0 && !(exclude_internal && t.is_internal))
        .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
        .collect();
    names.sort();
    Ok(names)
}

/// Takes a connection and topic names (empty: every topic); gives each
/// topic's partitions and its config overrides. An unknown topic is its
/// Kafka error (UNKNOWN_TOPIC_OR_PARTITION).
pub fn describe(c: &mut Connection, topics: &[String]) -> Result<Vec<TopicInfo>, ClientError> {
    let md = metadata(
        c,
        if topics.is_empty() {
            None
        } else {
            Some(topics)
        },
    )?;
    let mut out = Vec::new();
    for t in md.topics {
        let tname = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
        if t.error_code == 3 {
            return Err(ClientError::unknown_topic(&tname));
        }
        ClientError::check(format!("topic {tname}"), t.error_code, None)?;
        let mut partitions: Vec<PartitionInfo> = t
            .partitions
            .iter()
            .map(|p| PartitionInfo {
                partition: p.partition_index,
                leader: p.leader_id.0,
                leader_epoch: p.leader_epoch,
                replicas: p.replica_nodes.iter().map(|b| b.0).collect(),
                isr: p.isr_nodes.iter().map(|b| b.0).collect(),
            })
            .collect();
        partitions.sort_by_key(|p| p.partition);
        let configs = configs::describe(c, ResourceType::Topic, &tname, false)?;
        out.push(TopicInfo {
            name: tname,
            topic_id: crate::cluster::import::topic_id_to_kafka(&t.topic_id),
            internal: t.is_internal,
            partitions,
            configs,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Takes a topic, its partition count and replication factor (-1: the
/// broker's defaults, `num.partitions` / `default.replication.factor`) and
/// config overrides; creates it (CreateTopics) and gives its topic id.
pub fn create(
    c: &mut Connection,
    topic: &str,
    partitions: i32,
    replication_factor: i16,
    configs: &[(String, String)],
) -> Result<String, ClientError> {
    let v = c.version(ApiKey::CreateTopics, 7)?;
    let mut t = create_topics_request::CreatableTopic::default();
    t.name = name(topic);
    t.num_partitions = partitions;
    t.replication_factor = replication_factor;
    t.configs = configs
        .iter()
        .map(|(k, val)| {
            let mut cfg = create_topics_request::CreatableTopicConfig::default();
            cfg.name = StrBytes::from_string(k.clone());
            cfg.value = Some(StrBytes::from_string(val.clone()));
            cfg
        })
        .collect();
    let mut req = CreateTopicsRequest::default();
    req.topics = vec![t];
    req.timeout_ms = TIMEOUT_MS;
    let resp: CreateTopicsResponse = c.send(ApiKey::CreateTopics, v, &req)?;
    let r = resp
        .topics
        .first()
        .ok_or_else(|| ClientError::Protocol("CreateTopics: no result".into()))?;
    ClientError::check(
        format!("create topic {topic}"),
        r.error_code,
        r.error_message.as_ref(),
    )?;
    Ok(crate::cluster::import::topic_id_to_kafka(&r.topic_id))
}

/// Takes a topic and its new partition count; adds partitions
/// (CreatePartitions, the broker places them).
pub fn add_partitions(c: &mut Connection, topic: &str, count: i32) -> Result<(), ClientError> {
    let v = c.version(ApiKey::CreatePartitions, 3)?;
    let mut t = create_partitions_request::CreatePartitionsTopic::default();
    t.name = name(topic);
    t.count = count;
    t.assignments = None;
    let mut req = CreatePartitionsRequest::default();
    req.topics = vec![t];
    req.timeout_ms = TIMEOUT_MS;
    let resp: CreatePartitionsResponse = c.send(ApiKey::CreatePartitions, v, &req)?;
    let r = resp
        .results
        .first()
        .ok_or_else(|| ClientError::Protocol("CreatePartitions: no result".into()))?;
    ClientError::check(
        format!("add partitions to {topic}"),
        r.error_code,
        r.error_message.as_ref(),
    )
}

/// Takes topic names; deletes them (DeleteTopics) and gives each name with
/// its outcome.
pub fn delete(
    c: &mut Connection,
    topics: &[String],
) -> Result<Vec<(String, TopicResult)>, ClientError> {
    let v = c.version(ApiKey::DeleteTopics, 6)?;
    let mut req = DeleteTopicsRequest::default();
    if v >= 6 {
        req.topics = topics
            .iter()
            .map(|t| {
                let mut s = delete_topics_request::DeleteTopicState::default();
                s.name = Some(name(t));
                s
            })
            .collect();
    } else {
        req.topic_names = topics.iter().map(|t| name(t)).collect();
    }
    req.timeout_ms = TIMEOUT_MS;
    let resp: DeleteTopicsResponse = c.send(ApiKey::DeleteTopics, v, &req)?;
    Ok(resp
        .responses
        .iter()
        .map(|r| {
            let n = r.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
            let res = ClientError::check(
                format!("delete topic {n}"),
                r.error_code,
                r.error_message.as_ref(),
            );
            (n, res)
        })
        .collect())
}

fn ids(v: &[i32]) -> String {
    v.iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Takes described topics; gives them as `kafka-topics.sh --describe`
/// shows them (a topic line, then a line per partition) and as JSON.
pub fn describe_report(topics: &[TopicInfo]) -> Report {
    let mut text = String::new();
    let mut docs = Vec::new();
    for t in topics {
        let rf = t.partitions.first().map(|p| p.replicas.len()).unwrap_or(0);
        let cfg = t
            .configs
            .iter()
            .map(|c| format!("{}={}", c.name, c.value.as_deref().unwrap_or("")))
            .collect::<Vec<_>>()
            .join(",");
        text.push_str(&format!(
            "Topic: {}\tTopicId: {}\tPartitionCount: {}\tReplicationFactor: {rf}\tConfigs: {cfg}\n",
            t.name,
            t.topic_id,
            t.partitions.len()
        ));
        for p in &t.partitions {
            text.push_str(&format!(
                "\tTopic: {}\tPartition: {}\tLeader: {}\tReplicas: {}\tIsr: {}\n",
                t.name,
                p.partition,
                if p.leader >= 0 {
                    p.leader.to_string()
                } else {
                    "none".into()
                },
                ids(&p.replicas),
                ids(&p.isr)
            ));
        }
        docs.push(json!({
            "name": t.name,
            "topic_id": t.topic_id,
            "internal": t.internal,
            "partition_count": t.partitions.len(),
            "replication_factor": rf,
            "partitions": t.partitions.iter().map(|p| json!({
                "partition": p.partition,
                "leader": p.leader,
                "leader_epoch": p.leader_epoch,
                "replicas": p.replicas,
                "isr": p.isr,
            })).collect::<Vec<Value>>(),
            "configs": t.configs.iter().map(|c| (c.name.clone(), json!(c.value))).collect::<serde_json::Map<String, Value>>(),
        }));
    }
    Report::new(json!({ "topics": docs }), text)
}

/// Takes topic names; gives them one a line and as JSON.
pub fn list_report(names: &[String]) -> Report {
    let mut text = String::new();
    for n in names {
        text.push_str(n);
        text.push('\n');
    }
    Report::new(json!({ "topics": names }), text)
}
