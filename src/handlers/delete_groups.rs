//! DeleteGroups (key 42), v0–v2: deletes Empty groups and their committed
//! offsets (tombstones in `__consumer_offsets`); NON_EMPTY_GROUP for groups
//! with members, GROUP_ID_NOT_FOUND for unknown ones.

use std::rc::Rc;

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse};

use super::authz::Access;
use super::{group_owner, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::error::{group_code, KafkaCode};
use crate::group::coordinator;
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Answers DeleteGroups.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: DeleteGroupsRequest = frame.decode()?;
    let mut resp = DeleteGroupsResponse::default();
    // Kafka: DELETE on each group (GROUP_AUTHORIZATION_FAILED).
    let access = Access::of(shard, frame);
    for gid in &req.groups_names {
        let group = gid.0.to_string();
        let owner = access
            .check(Operation::Delete, ResourceType::Group, &group)
            .map_err(|d| d.code())
            .and_then(|()| group_owner(shard, &group).map_err(|e| e.code()));
        let code = match owner {
            Err(code) => code,
            Ok(owner) => shard
                .invoke_on(owner, move |s| async move {
                    group_code(&coordinator::delete_group(s, group).await)
                })
                .await
                .unwrap_or_else(|e| e.code()),
        };
        let mut r = DeletableGroupResult::default();
        r.group_id = gid.clone();
        r.error_code = code;
        resp.results.push(r);
    }
    Ok(respond(frame, &resp))
}
