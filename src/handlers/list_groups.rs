//! ListGroups (key 16), v0–v5: every group on every shard; v4 filters by state
//! (KIP-518), v5 by type (every group here is "classic").

use std::rc::Rc;

use kafka_protocol::messages::list_groups_response::ListedGroup as WireGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType, CLUSTER_NAME};
use crate::group::coordinator;
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Answers ListGroups.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: ListGroupsRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let states: Vec<String> = req.states_filter.iter().map(|s| s.to_string()).collect();
    let types: Vec<String> = req.types_filter.iter().map(|s| s.to_string()).collect();
    let mut resp = ListGroupsResponse::default();
    // Kafka: DESCRIBE on the cluster (unlogged) lists every group;
    // otherwise those the request may DESCRIBE (never an error).
    let access = Access::of(shard, frame);
    let every = access.allows_quietly(Operation::Describe, ResourceType::Cluster, CLUSTER_NAME);
    for target in 0..shard.shards {
        let (st, ty) = (states.clone(), types.clone());
        match shard
            .invoke_on(target, move |_| async move { coordinator::list(&st, &ty) })
            .await
        {
            Ok(Ok(groups)) => {
                for g in groups {
                    if !every
                        && !access.allows_quietly(
                            Operation::Describe,
                            ResourceType::Group,
                            &g.group_id,
                        )
                    {
                        continue;
                    }
                    let mut w = WireGroup::default();
                    w.group_id = GroupId(StrBytes::from_string(g.group_id));
                    w.protocol_type = StrBytes::from_string(g.protocol_type);
                    if version >= 4 {
                        w.group_state = StrBytes::from_string(g.state);
                    }
                    if version >= 5 {
                        w.group_type = StrBytes::from_static_str(g.group_type);
                    }
                    resp.groups.push(w);
                }
            }
            Ok(Err(e)) => {
                resp.error_code = crate::error::KafkaCode::code(&e);
            }
            Err(e) => {
                resp.error_code = crate::error::KafkaCode::code(&e);
            }
        }
    }
    Ok(respond(frame, &resp))
}
