//! Heartbeat (key 12), v0–v4: keeps a member's session alive and tells it
//! when a rebalance started (REBALANCE_IN_PROGRESS).

use std::rc::Rc;

use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse};

use super::authz::Access;
use super::{group_owner, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::error::{group_code, KafkaCode};
use crate::group::coordinator;
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Answers Heartbeat.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: HeartbeatRequest = frame.decode()?;
    let group = req.group_id.0.to_string();
    let member = req.member_id.to_string();
    let instance = req.group_instance_id.as_ref().map(|s| s.to_string());
    let generation = req.generation_id;
    // Kafka: READ on the group (GROUP_AUTHORIZATION_FAILED).
    let owner = Access::of(shard, frame)
        .check(Operation::Read, ResourceType::Group, &group)
        .map_err(|d| d.code())
        .and_then(|()| group_owner(shard, &group).map_err(|e| e.code()));
    let code = match owner {
        Err(code) => code,
        Ok(owner) => shard
            .invoke_on(owner, move |s| async move {
                group_code(&coordinator::heartbeat(
                    &s, &group, generation, &member, &instance,
                ))
            })
            .await
            .unwrap_or_else(|e| e.code()),
    };
    let mut resp = HeartbeatResponse::default();
    resp.error_code = code;
    Ok(respond(frame, &resp))
}
