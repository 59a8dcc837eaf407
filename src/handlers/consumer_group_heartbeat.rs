//! ConsumerGroupHeartbeat (key 68), v0–v1 (KIP-848): a consumer-protocol
//! member joins (epoch 0), heartbeats with its subscription and owned
//! partitions, or leaves (-1, a static member's -2); the answer carries its
//! epoch, the heartbeat interval and, when it changed, its assignment.
//! Forwarded to the group's coordinator shard; the state machine is
//! `group::consumer`, the glue `group::consumer_coordinator`.

use std::rc::Rc;

use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{client_host, client_id, group_owner, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::error::KafkaCode;
use crate::group::consumer::HeartbeatArgs;
use crate::group::consumer_coordinator;
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Answers ConsumerGroupHeartbeat.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: ConsumerGroupHeartbeatRequest = frame.decode()?;
    let group = req.group_id.0.to_string();
    let args = HeartbeatArgs {
        group_id: group.clone(),
        member_id: req.member_id.to_string(),
        member_epoch: req.member_epoch,
        instance_id: req.instance_id.as_ref().map(|s| s.to_string()),
        rack_id: req.rack_id.as_ref().map(|s| s.to_string()),
        rebalance_timeout_ms: req.rebalance_timeout_ms,
        subscribed_topic_names: req
            .subscribed_topic_names
            .as_ref()
            .map(|v| v.iter().map(|t| t.0.to_string()).collect()),
        subscribed_topic_regex: req.subscribed_topic_regex.as_ref().map(|s| s.to_string()),
        server_assignor: req.server_assignor.as_ref().map(|s| s.to_string()),
        owned: req.topic_partitions.as_ref().map(|v| {
            v.iter()
                .map(|tp| (tp.topic_id, tp.partitions.clone()))
                .collect()
        }),
        client_id: client_id(frame),
        client_host: client_host(frame),
        version: frame.prefix.api_version,
    };
    // Kafka 4.4 serves it only while `group.version` ≥ 1 is finalized
    // (UNSUPPORTED_VERSION otherwise).
    let enabled = shard
        .metadata()
        .finalized_features
        .get(crate::cluster::features::GROUP_VERSION)
        .is_some_and(|l| *l >= 1);
    // Kafka: READ on the group (GROUP_AUTHORIZATION_FAILED).
    let owner = Access::of(shard, frame)
        .check(Operation::Read, ResourceType::Group, &group)
        .map_err(|d| (d.code(), None))
        .and_then(|()| group_owner(shard, &group).map_err(|e| (e.code(), None)));
    let result = match owner {
        _ if !enabled => Err((
            kafka_protocol::ResponseError::UnsupportedVersion.code(),
            Some("The new consumer group protocol is not enabled (group.version < 1).".to_string()),
        )),
        Err(e) => Err(e),
        Ok(owner) => shard
            .invoke_on(owner, move |s| async move {
                consumer_group_coordinator_heartbeat(s, args).await
            })
            .await
            .unwrap_or_else(|e| Err((e.code(), None))),
    };
    let mut resp = ConsumerGroupHeartbeatResponse::default();
    match result {
        Ok(answer) => {
            resp.member_id = Some(StrBytes::from_string(answer.member_id));
            resp.member_epoch = answer.member_epoch;
            resp.heartbeat_interval_ms = answer.heartbeat_interval_ms;
            resp.assignment = answer.assignment.map(|a| {
                let mut w = Assignment::default();
                w.topic_partitions = a
                    .into_iter()
                    .map(|(topic_id, parts)| {
                        let mut tp = TopicPartitions::default();
                        tp.topic_id = topic_id;
                        tp.partitions = parts.into_iter().collect();
                        tp
                    })
                    .collect();
                w
            });
        }
        Err((code, message)) => {
            resp.error_code = code;
            resp.error_message = message.map(StrBytes::from_string);
        }
    }
    Ok(respond(frame, &resp))
}

/// The heartbeat on the coordinator shard, its error as (Kafka code,
/// message).
async fn consumer_group_coordinator_heartbeat(
    s: Rc<Shard>,
    args: HeartbeatArgs,
) -> Result<crate::group::consumer::HeartbeatAnswer, (i16, Option<String>)> {
    consumer_coordinator::heartbeat(s, args)
        .await
        .map_err(|(e, m)| (e.code(), m.or_else(|| Some(e.to_string()))))
}
