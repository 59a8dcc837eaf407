//! LeaveGroup (key 13), v0–v5; v3+ removes a batch of members, named by
//! member id or `group.instance.id` (KIP-345).

use std::rc::Rc;

use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{group_owner, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::error::{group_code, KafkaCode};
use crate::group::{coordinator, LeavingMember};
use crate::protocol::RequestFrame;
use crate::shard::error::AnswerError;
use crate::shard::Shard;

/// Answers LeaveGroup.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: LeaveGroupRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let group = req.group_id.0.to_string();
    let members: Vec<LeavingMember> = if version >= 3 {
        req.members
            .iter()
            .map(|m| LeavingMember {
                member_id: m.member_id.to_string(),
                group_instance_id: m.group_instance_id.as_ref().map(|s| s.to_string()),
            })
            .collect()
    } else {
        vec![LeavingMember {
            member_id: req.member_id.to_string(),
            group_instance_id: None,
        }]
    };
    // Kafka: READ on the group (GROUP_AUTHORIZATION_FAILED at the top).
    let owner = Access::of(shard, frame)
        .check(Operation::Read, ResourceType::Group, &group)
        .map_err(|d| d.code())
        .and_then(|()| group_owner(shard, &group).map_err(|e| e.code()));
    let (top, per_member) = match owner {
        Err(code) => (code, Vec::new()),
        Ok(owner) => {
            let m = members.clone();
            shard
                .invoke_on(owner, move |s| async move {
                    let o = coordinator::leave(&s, &group, m);
                    let top = o.error.as_ref().map_or(0, KafkaCode::code);
                    let members: Vec<(LeavingMember, i16)> = o
                        .members
                        .into_iter()
                        .map(|(m, r)| (m, group_code(&r)))
                        .collect();
                    (top, members)
                })
                .await
                .unwrap_or_else(|e| (e.code(), Vec::new()))
        }
    };
    let mut resp = LeaveGroupResponse::default();
    if version >= 3 {
        resp.error_code = top;
        resp.members = per_member
            .into_iter()
            .map(|(m, code)| {
                let mut r = MemberResponse::default();
                r.member_id = StrBytes::from_string(m.member_id);
                r.group_instance_id = m.group_instance_id.map(StrBytes::from_string);
                r.error_code = code;
                r
            })
            .collect();
    } else {
        // v0–v2 name one member, whose outcome is the answer.
        resp.error_code = if top != 0 {
            top
        } else {
            per_member
                .first()
                .map_or_else(|| AnswerError::Lost.code(), |(_, c)| *c)
        };
    }
    Ok(respond(frame, &resp))
}
