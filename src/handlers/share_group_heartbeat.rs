//! ShareGroupHeartbeat (key 76), v1 (KIP-932): a share group member joins
//! (epoch 0, with its topic names), heartbeats at its epoch or leaves (-1);
//! the answer carries its epoch, the heartbeat interval and, on a join, a
//! full request or a change, its partitions. Forwarded to the group's
//! coordinator shard; the state machine is `group::share::membership`,
//! the glue `group::share_group_coordinator`.

use std::rc::Rc;

use kafka_protocol::messages::share_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{client_host, client_id, group_owner, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::error::KafkaCode;
use crate::group::share::membership::{ShareHeartbeatAnswer, ShareHeartbeatArgs};
use crate::group::share_group_coordinator;
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Whether `share.version` ≥ 1 is finalized: Kafka 4.4 serves the share
/// group APIs only then (UNSUPPORTED_VERSION otherwise).
pub(super) fn share_groups_enabled(shard: &Shard) -> bool {
    shard
        .metadata()
        .finalized_features
        .get(crate::cluster::features::SHARE_VERSION)
        .is_some_and(|l| *l >= 1)
}

/// Answers ShareGroupHeartbeat. As Kafka's: UNSUPPORTED_VERSION while
/// share groups are off, then READ on the group
/// (GROUP_AUTHORIZATION_FAILED), a member id of 1–36 characters
/// (INVALID_REQUEST, without a message), DESCRIBE on every
/// subscribed topic (TOPIC_AUTHORIZATION_FAILED), then the coordinator.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: ShareGroupHeartbeatRequest = frame.decode()?;
    let group = req.group_id.0.to_string();
    let member_id = req.member_id.to_string();
    let topics: Option<Vec<String>> = req
        .subscribed_topic_names
        .as_ref()
        .map(|v| v.iter().map(|t| t.0.to_string()).collect());
    let access = Access::of(shard, frame);
    let result: Result<ShareHeartbeatAnswer, (i16, Option<String>)> =
        if !share_groups_enabled(shard) {
            Err((
                kafka_protocol::ResponseError::UnsupportedVersion.code(),
                None,
            ))
        } else if let Err(d) = access.check(Operation::Read, ResourceType::Group, &group) {
            Err((d.code(), None))
        } else if member_id.is_empty() || member_id.chars().count() > 36 {
            // Kafka's error response carries the code alone.
            Err((kafka_protocol::ResponseError::InvalidRequest.code(), None))
        } else if topics.iter().flatten().any(|t| {
            access
                .check(Operation::Describe, ResourceType::Topic, t)
                .is_err()
        }) {
            Err((
                kafka_protocol::ResponseError::TopicAuthorizationFailed.code(),
                None,
            ))
        } else {
            let args = ShareHeartbeatArgs {
                group_id: group.clone(),
                member_id,
                member_epoch: req.member_epoch,
                rack_id: req.rack_id.as_ref().map(|s| s.to_string()),
                subscribed_topic_names: topics,
                client_id: client_id(frame),
                client_host: client_host(frame),
            };
            match group_owner(shard, &group) {
                Err(e) => Err((e.code(), None)),
                Ok(owner) => shard
                    .invoke_on(owner, move |s| async move {
                        share_group_coordinator::heartbeat(s, args)
                            .await
                            .map_err(|(e, m)| (e.code(), m.or_else(|| Some(e.to_string()))))
                    })
                    .await
                    .unwrap_or_else(|e| Err((e.code(), None))),
            }
        };
    let mut resp = ShareGroupHeartbeatResponse::default();
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
