//! FindCoordinator (key 10), v0–v6 (v4+: batched `coordinator_keys`, KIP-699; v5 only allows
//! TRANSACTION_ABORTABLE; v6 key type 2 names the share coordinator of
//! `groupId:topicId:partition`, KIP-932, INVALID_REQUEST for a key Kafka 4.4
//! does not parse; its first lookup creates `__share_group_state`).
//! A key's coordinator is the broker leading the key's partition of the
//! internal topic (`abs(hashCode(key)) % partitions`, as Kafka); within it,
//! the connection's shard forwards group requests to the owning shard. The
//! first group lookup creates `__consumer_offsets`
//! (`offsets.topic.num.partitions`, `offsets.topic.replication.factor`,
//! compacted), as Kafka does; the first transaction coordinator lookup (key
//! type 1) creates `__transaction_state` the same way.

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType, CLUSTER_NAME};
use crate::cluster::control::{ControllerReply, ControllerRequest, NewTopic};
use crate::cluster::error::{ControllerCallError, CoordinatorLookupError, MetadataError};
use crate::cluster::metadata::BrokerMeta;
use crate::error::{denied_message, KafkaCode};
use crate::group::records::partition_for_group;
use crate::group::OFFSETS_TOPIC;
use crate::protocol::RequestFrame;
use crate::shard::{submit, Shard};
use crate::share::state::parse_coordinator_key;
use crate::share_coordinator::SHARE_GROUP_STATE_TOPIC;
use crate::txn::TRANSACTION_STATE_TOPIC;

/// Creates `__consumer_offsets` when missing. Errors with the
/// [`CoordinatorLookupError`] (COORDINATOR_NOT_AVAILABLE).
pub async fn ensure_offsets_topic(shard: &Rc<Shard>) -> Result<(), CoordinatorLookupError> {
    let g = &shard.config.group;
    let (n, seg) = (g.offsets_topic_partitions, g.offsets_topic_segment_bytes);
    ensure_internal_topic(shard, OFFSETS_TOPIC, n, seg).await
}

/// Creates `__transaction_state` when missing
/// (`transaction.state.log.num.partitions`,
/// `transaction.state.log.segment.bytes`). Errors with the
/// [`CoordinatorLookupError`] (COORDINATOR_NOT_AVAILABLE).
pub async fn ensure_transaction_state_topic(
    shard: &Rc<Shard>,
) -> Result<(), CoordinatorLookupError> {
    let t = &shard.config.txn;
    let (n, seg) = (t.state_log_partitions, t.state_log_segment_bytes);
    ensure_internal_topic(shard, TRANSACTION_STATE_TOPIC, n, seg).await
}

/// Creates `__share_group_state` when missing, as Kafka 4.4 does
/// (`share.coordinator.state.topic.*`; `cleanup.policy=delete` with
/// `retention.ms=-1` and `compression.type=producer`, Kafka's settings for
/// it). Errors with the
/// [`CoordinatorLookupError`] (COORDINATOR_NOT_AVAILABLE).
pub async fn ensure_share_state_topic(shard: &Rc<Shard>) -> Result<(), CoordinatorLookupError> {
    let s = &shard.config.share_coordinator;
    let (n, seg) = (s.state_topic_partitions, s.state_topic_segment_bytes);
    ensure_internal_topic(shard, SHARE_GROUP_STATE_TOPIC, n, seg).await
}

/// The replication factor of a new internal topic: `configured`; in a
/// single-voter cluster (the single-node broker) at most the alive brokers,
/// so a lone broker serves groups and transactions with Kafka's defaults
/// (Kafka itself refuses until enough brokers are alive, and a multi-node
/// cluster here does too).
fn internal_rf(shard: &Shard, configured: i16) -> i16 {
    let single = shard.config.kraft.voters.len() <= 1;
    if single {
        let alive = shard.metadata().brokers(None).len().max(1);
        configured.min(i16::try_from(alive).unwrap_or(i16::MAX))
    } else {
        configured
    }
}

/// Creates a compacted internal topic when missing, as Kafka does on the
/// first coordinator lookup. Errors with `CreateFailed` or
/// `ControllerUnavailable` (COORDINATOR_NOT_AVAILABLE).
async fn ensure_internal_topic(
    shard: &Rc<Shard>,
    name: &'static str,
    partitions: i32,
    segment_bytes: u64,
) -> Result<(), CoordinatorLookupError> {
    if shard.metadata().topic(name).is_some() {
        return Ok(());
    }
    let mut configs = BTreeMap::new();
    configs.insert("cleanup.policy".to_string(), "compact".to_string());
    configs.insert("segment.bytes".to_string(), segment_bytes.to_string());
    let c = &shard.config.cluster;
    let rf = if name == SHARE_GROUP_STATE_TOPIC {
        let s = &shard.config.share_coordinator;
        let rf = internal_rf(shard, s.state_topic_replication_factor);
        let min_isr = s.state_topic_min_isr.min(rf).max(1);
        configs.insert("cleanup.policy".to_string(), "delete".to_string());
        configs.insert("retention.ms".to_string(), "-1".to_string());
        configs.insert("compression.type".to_string(), "producer".to_string());
        configs.insert("min.insync.replicas".to_string(), min_isr.to_string());
        rf
    } else if name == TRANSACTION_STATE_TOPIC {
        let rf = internal_rf(shard, c.transaction_state_replication_factor);
        let min_isr = c.transaction_state_min_isr.min(i32::from(rf)).max(1);
        configs.insert("min.insync.replicas".to_string(), min_isr.to_string());
        rf
    } else {
        internal_rf(shard, c.offsets_topic_replication_factor)
    };
    let req = ControllerRequest::CreateTopics {
        topics: vec![NewTopic {
            name: name.to_string(),
            partitions,
            replication_factor: rf,
            assignments: None,
            configs,
            topic_id: None,
        }],
        validate_only: false,
    };
    let outcome = match submit(shard, req).await {
        Ok(ControllerReply::CreateTopics(mut r)) => r
            .pop()
            .unwrap_or(Err(crate::cluster::error::InvalidRequest::AnswerLost.into())),
        Ok(_) => Err(MetadataError::from(ControllerCallError::UnexpectedReply)),
        Err(source) => {
            return Err(CoordinatorLookupError::ControllerUnavailable {
                topic: name,
                source,
            })
        }
    };
    match outcome {
        Ok(_) => {
            log::info!("created {name} with {partitions} partitions, replication factor {rf}");
            Ok(())
        }
        Err(MetadataError::TopicAlreadyExists { .. }) => Ok(()),
        Err(source) => {
            log::error!("cannot create {name}: {source}");
            Err(CoordinatorLookupError::CreateFailed {
                topic: name,
                source,
            })
        }
    }
}

/// The broker coordinating `key` (a group id for key type 0, a
/// transactional id for 1, `groupId:topicId:partition` for 2): the leader of the key's partition of the
/// internal topic, created first when missing.
async fn coordinator(
    shard: &Rc<Shard>,
    (version, key_type): (i16, i8),
    key: &str,
    listener: Option<&str>,
) -> Result<BrokerMeta, CoordinatorLookupError> {
    let (topic, partitions) = match key_type {
        // Kafka 4.4 names the share coordinator from v6 only.
        2 if version < 6 => return Err(CoordinatorLookupError::UnsupportedKeyType { key_type }),
        0 => {
            ensure_offsets_topic(shard).await?;
            (OFFSETS_TOPIC, shard.config.group.offsets_topic_partitions)
        }
        1 => {
            ensure_transaction_state_topic(shard).await?;
            (
                TRANSACTION_STATE_TOPIC,
                shard.config.txn.state_log_partitions,
            )
        }
        2 => {
            parse_coordinator_key(key).ok_or(CoordinatorLookupError::MalformedShareKey)?;
            ensure_share_state_topic(shard).await?;
            (
                SHARE_GROUP_STATE_TOPIC,
                shard.config.share_coordinator.state_topic_partitions,
            )
        }
        other => return Err(CoordinatorLookupError::UnsupportedKeyType { key_type: other }),
    };
    let image = shard.metadata();
    let meta = image
        .topic(topic)
        .ok_or(CoordinatorLookupError::TopicMissing { topic })?;
    // The partition count of the topic as it exists (it may predate a
    // change of the setting).
    let n = if meta.partitions > 0 {
        meta.partitions
    } else {
        partitions
    };
    let partition = partition_for_group(key, n);
    let leader = meta
        .partition(partition)
        .map(|p| p.leader)
        .filter(|l| image.is_alive(*l))
        .ok_or(CoordinatorLookupError::NoLeader { topic, partition })?;
    image
        .broker_meta(leader, listener)
        .ok_or(CoordinatorLookupError::NoLeader { topic, partition })
}

/// Answers FindCoordinator.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: FindCoordinatorRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let mut resp = FindCoordinatorResponse::default();
    // Kafka: DESCRIBE on the group (key type 0) or the transactional id
    // (1), GROUP_ / TRANSACTIONAL_ID_AUTHORIZATION_FAILED per key; the
    // share coordinator (2, brokers only) CLUSTER_ACTION on the cluster.
    let access = Access::of(shard, frame);
    let check = |key: &str| match req.key_type {
        0 => access.check(Operation::Describe, ResourceType::Group, key),
        1 => access.check(Operation::Describe, ResourceType::TransactionalId, key),
        2 => access.check(
            Operation::ClusterAction,
            ResourceType::Cluster,
            CLUSTER_NAME,
        ),
        _ => Ok(()),
    };
    if version >= 4 {
        for k in &req.coordinator_keys {
            let mut c = Coordinator::default();
            c.key = k.clone();
            if let Err(d) = check(k) {
                c.error_code = d.code();
                c.error_message = Some(StrBytes::from_static_str(denied_message(&d)));
                c.node_id = BrokerId(-1);
                c.port = -1;
                resp.coordinators.push(c);
                continue;
            }
            match coordinator(shard, (version, req.key_type), k, frame.listener()).await {
                Ok(b) => {
                    c.node_id = BrokerId(b.node_id);
                    c.host = StrBytes::from_string(b.host);
                    c.port = b.port;
                }
                Err(e) => {
                    c.error_code = e.code();
                    c.node_id = BrokerId(-1);
                    c.port = -1;
                }
            }
            resp.coordinators.push(c);
        }
    } else if let Err(d) = check(&req.key) {
        resp.error_code = d.code();
        if version >= 1 {
            resp.error_message = Some(StrBytes::from_static_str(denied_message(&d)));
        }
        resp.node_id = BrokerId(-1);
        resp.port = -1;
    } else {
        match coordinator(shard, (version, req.key_type), &req.key, frame.listener()).await {
            Ok(b) => {
                resp.node_id = BrokerId(b.node_id);
                resp.host = StrBytes::from_string(b.host);
                resp.port = b.port;
            }
            Err(e) => {
                resp.error_code = e.code();
                resp.node_id = BrokerId(-1);
                resp.port = -1;
                if version >= 1 {
                    resp.error_message = Some(StrBytes::from_static_str(
                        "The coordinator is not available.",
                    ));
                }
            }
        }
    }
    Ok(respond(frame, &resp))
}
