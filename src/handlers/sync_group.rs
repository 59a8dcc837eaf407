//! SyncGroup (key 14), v0–v5. The leader's assignments are handed to every
//! member intact; v5 checks the protocol type and name.

use std::rc::Rc;

use kafka_protocol::messages::{SyncGroupRequest, SyncGroupResponse};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{group_owner, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::error::KafkaCode;
use crate::group::{coordinator, SyncArgs, SyncResult};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Answers SyncGroup.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: SyncGroupRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let args = SyncArgs {
        group_id: req.group_id.0.to_string(),
        generation_id: req.generation_id,
        member_id: req.member_id.to_string(),
        group_instance_id: req.group_instance_id.as_ref().map(|s| s.to_string()),
        protocol_type: req.protocol_type.as_ref().map(|s| s.to_string()),
        protocol_name: req.protocol_name.as_ref().map(|s| s.to_string()),
        assignments: req
            .assignments
            .iter()
            // Copied: a slice would keep the whole receive buffer alive as long as the member.
            .map(|a| {
                (
                    a.member_id.to_string(),
                    bytes::Bytes::copy_from_slice(&a.assignment),
                )
            })
            .collect(),
    };
    // Kafka: READ on the group (GROUP_AUTHORIZATION_FAILED).
    let owner = Access::of(shard, frame)
        .check(Operation::Read, ResourceType::Group, &args.group_id)
        .map_err(|d| d.code())
        .and_then(|()| group_owner(shard, &args.group_id).map_err(|e| e.code()));
    let (code, result) = match owner {
        Err(code) => (code, SyncResult::default()),
        Ok(owner) => match shard
            .invoke_on(owner, move |s| coordinator::sync(s, args))
            .await
        {
            Ok(r) => (r.error.as_ref().map_or(0, KafkaCode::code), r),
            Err(e) => (e.code(), SyncResult::default()),
        },
    };
    let mut resp = SyncGroupResponse::default();
    resp.error_code = code;
    if version >= 5 {
        resp.protocol_type = result.protocol_type.map(StrBytes::from_string);
        resp.protocol_name = result.protocol_name.map(StrBytes::from_string);
    }
    resp.assignment = result.assignment;
    Ok(respond(frame, &resp))
}
