//! DescribeGroups (key 15), v0–v6: state, protocol, and each member with its
//! metadata and assignment. An unknown group is described as "Dead": with no
//! error before v6, with GROUP_ID_NOT_FOUND (69) and "Group G not found."
//! from v6 (KIP-1043), as Kafka does. A consumer group (KIP-848) is not
//! described here (ConsumerGroupDescribe does): Dead before v6, and from v6
//! GROUP_ID_NOT_FOUND with "Group G is not a classic group.", as Kafka 4.4.

use std::rc::Rc;

use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{group_owner, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::error::KafkaCode;
use crate::group::{coordinator, GroupDescription, GroupError};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Answers DescribeGroups.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: DescribeGroupsRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let mut resp = DescribeGroupsResponse::default();
    // Kafka: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED); KIP-430's
    // authorized operations (v3+) when asked for, for a group answered.
    let access = Access::of(shard, frame);
    let with_ops = version >= 3 && req.include_authorized_operations;
    for gid in &req.groups {
        let group = gid.0.to_string();
        let failed = || GroupDescription {
            group_id: group.clone(),
            ..Default::default()
        };
        let owner = access
            .check(Operation::Describe, ResourceType::Group, &group)
            .map_err(|d| d.code())
            .and_then(|()| group_owner(shard, &group).map_err(|e| e.code()));
        let (code, d) = match owner {
            Err(code) => (code, failed()),
            Ok(owner) => {
                let g = group.clone();
                match shard
                    .invoke_on(owner, move |s| async move { coordinator::describe(&s, &g) })
                    .await
                {
                    Ok(Ok(d)) => (0, d),
                    Ok(Err(e)) => (e.code(), failed()),
                    Err(e) => (e.code(), failed()),
                }
            }
        };
        let mut w = DescribedGroup::default();
        w.error_code = code;
        if version >= 6 && code == 0 && d.state == "Dead" {
            w.error_code = GroupError::GroupIdNotFound.code();
            w.error_message = Some(StrBytes::from_string(if d.consumer_group {
                format!("Group {group} is not a classic group.")
            } else {
                format!("Group {group} not found.")
            }));
        }
        if with_ops && code == 0 {
            w.authorized_operations = access.operations(ResourceType::Group, &group);
        }
        w.group_id = gid.clone();
        w.group_state = StrBytes::from_string(d.state);
        w.protocol_type = StrBytes::from_string(d.protocol_type);
        w.protocol_data = StrBytes::from_string(d.protocol);
        w.members = d
            .members
            .into_iter()
            .map(|m| {
                let mut wm = DescribedGroupMember::default();
                wm.member_id = StrBytes::from_string(m.member_id);
                wm.group_instance_id = m.group_instance_id.map(StrBytes::from_string);
                wm.client_id = StrBytes::from_string(m.client_id);
                wm.client_host = StrBytes::from_string(m.client_host);
                wm.member_metadata = m.metadata;
                wm.member_assignment = m.assignment;
                wm
            })
            .collect();
        resp.groups.push(w);
    }
    Ok(respond(frame, &resp))
}
