//! JoinGroup (key 11), v0–v9. Forwarded to the group's coordinator shard,
//! where the response waits for the rebalance to complete. v4+ first answers
//! MEMBER_ID_REQUIRED to an unknown member (KIP-394); v5+ carries
//! `group.instance.id` (KIP-345); v0 has no rebalance timeout (the session
//! timeout is used, as Kafka does).

use std::rc::Rc;

use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{client_host, client_id, group_owner, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::error::KafkaCode;
use crate::group::{coordinator, JoinArgs, JoinResult};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Answers JoinGroup.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: JoinGroupRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let args = JoinArgs {
        group_id: req.group_id.0.to_string(),
        member_id: req.member_id.to_string(),
        group_instance_id: req.group_instance_id.as_ref().map(|s| s.to_string()),
        client_id: client_id(frame),
        client_host: client_host(frame),
        session_timeout_ms: req.session_timeout_ms,
        rebalance_timeout_ms: if version >= 1 {
            req.rebalance_timeout_ms
        } else {
            req.session_timeout_ms
        },
        protocol_type: req.protocol_type.to_string(),
        protocols: req
            .protocols
            .iter()
            // Copied: a slice would keep the whole receive buffer alive as long as the member.
            .map(|p| {
                (
                    p.name.to_string(),
                    bytes::Bytes::copy_from_slice(&p.metadata),
                )
            })
            .collect(),
        require_known_member_id: version >= 4,
    };
    let member_id = args.member_id.clone();
    let failed = |code: i16| {
        let r = JoinResult {
            generation_id: -1,
            member_id: member_id.clone(),
            ..Default::default()
        };
        (code, r)
    };
    // Kafka: READ on the group (GROUP_AUTHORIZATION_FAILED).
    let owner = Access::of(shard, frame)
        .check(Operation::Read, ResourceType::Group, &args.group_id)
        .map_err(|d| d.code())
        .and_then(|()| group_owner(shard, &args.group_id).map_err(|e| e.code()));
    let (code, result) = match owner {
        Err(code) => failed(code),
        Ok(owner) => match shard
            .invoke_on(owner, move |s| coordinator::join(s, args))
            .await
        {
            Ok(r) => (r.error.as_ref().map_or(0, KafkaCode::code), r),
            Err(e) => failed(e.code()),
        },
    };
    let mut resp = JoinGroupResponse::default();
    resp.error_code = code;
    resp.generation_id = result.generation_id;
    resp.protocol_type = result.protocol_type.map(StrBytes::from_string);
    resp.protocol_name = result.protocol_name.map(StrBytes::from_string);
    if version < 7 && resp.protocol_name.is_none() {
        resp.protocol_name = Some(StrBytes::default());
    }
    resp.leader = StrBytes::from_string(result.leader);
    resp.member_id = StrBytes::from_string(result.member_id);
    resp.skip_assignment = version >= 9 && result.skip_assignment;
    resp.members = result
        .members
        .into_iter()
        .map(|(id, instance, metadata)| {
            let mut m = JoinGroupResponseMember::default();
            m.member_id = StrBytes::from_string(id);
            m.group_instance_id = instance.map(StrBytes::from_string);
            m.metadata = metadata;
            m
        })
        .collect();
    Ok(respond(frame, &resp))
}
