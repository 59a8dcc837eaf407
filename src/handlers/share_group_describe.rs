//! ShareGroupDescribe (key 77), v1 (KIP-932): each share group with its
//! epochs, assignor (`simple`) and members. A classic or consumer group
//! gets GROUP_ID_NOT_FOUND "Group G is not a share group.", an unknown
//! one "Group G not found.". As Kafka's: UNSUPPORTED_VERSION for every
//! group while share groups are off, DESCRIBE on each group
//! (GROUP_AUTHORIZATION_FAILED), and a group whose members hold a topic
//! the caller may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED
//! without its members.

use std::rc::Rc;

use kafka_protocol::messages::share_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{ShareGroupDescribeRequest, ShareGroupDescribeResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::share_group_heartbeat::share_groups_enabled;
use super::{group_owner, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::cluster::metadata::MetadataImage;
use crate::error::KafkaCode;
use crate::group::share::assignor::Assignment as Partitions;
use crate::group::share::membership::DescribedShareGroup;
use crate::group::share_group_coordinator;
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// The assignor Kafka 4.4 names (`group.share.assignors`).
const ASSIGNOR: &str = "simple";

/// Answers ShareGroupDescribe.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: ShareGroupDescribeRequest = frame.decode()?;
    let access = Access::of(shard, frame);
    let image = shard.metadata();
    let enabled = share_groups_enabled(shard);
    let mut resp = ShareGroupDescribeResponse::default();
    for gid in &req.group_ids {
        let group = gid.0.to_string();
        let mut w = DescribedGroup::default();
        w.group_id = gid.clone();
        w.authorized_operations = i32::MIN;
        let described = if !enabled {
            Err((
                kafka_protocol::ResponseError::UnsupportedVersion.code(),
                None,
            ))
        } else {
            match access
                .check(Operation::Describe, ResourceType::Group, &group)
                .map_err(|d| (d.code(), None))
                .and_then(|()| group_owner(shard, &group).map_err(|e| (e.code(), None)))
            {
                Err(e) => Err(e),
                Ok(owner) => {
                    let g = group.clone();
                    shard
                        .invoke_on(owner, move |s| async move {
                            share_group_coordinator::describe(&s, &g)
                                .map_err(|(e, m)| (e.code(), Some(m)))
                        })
                        .await
                        .unwrap_or_else(|e| Err((e.code(), None)))
                }
            }
        };
        match described {
            Ok(d) => {
                let hidden = d.members.iter().any(|m| {
                    m.assignment.keys().any(|id| {
                        let name = image
                            .topic_by_id(id)
                            .map(|t| t.name.to_string())
                            .unwrap_or_default();
                        access
                            .check(Operation::Describe, ResourceType::Topic, &name)
                            .is_err()
                    })
                });
                if hidden {
                    w.error_code = kafka_protocol::ResponseError::TopicAuthorizationFailed.code();
                    w.error_message = Some(StrBytes::from_static_str(
                        "The group has described topic(s) that the client is not authorized to describe.",
                    ));
                } else {
                    fill(&mut w, d, &image);
                    if req.include_authorized_operations {
                        w.authorized_operations = access.operations(ResourceType::Group, &group);
                    }
                }
            }
            Err((code, message)) => {
                w.error_code = code;
                w.error_message = message.filter(|m| !m.is_empty()).map(StrBytes::from_string);
            }
        }
        resp.groups.push(w);
    }
    Ok(respond(frame, &resp))
}

/// The wire form of a described group (topic names from the image).
fn fill(w: &mut DescribedGroup, d: DescribedShareGroup, image: &MetadataImage) {
    w.group_state = StrBytes::from_static_str(d.state.as_str());
    w.group_epoch = d.group_epoch;
    w.assignment_epoch = d.assignment_epoch;
    w.assignor_name = StrBytes::from_static_str(ASSIGNOR);
    w.members = d
        .members
        .into_iter()
        .map(|m| {
            let mut wm = Member::default();
            wm.member_id = StrBytes::from_string(m.member_id);
            wm.rack_id = m.rack_id.map(StrBytes::from_string);
            wm.member_epoch = m.member_epoch;
            wm.client_id = StrBytes::from_string(m.client_id);
            wm.client_host = StrBytes::from_string(m.client_host);
            wm.subscribed_topic_names = m
                .subscribed_topic_names
                .into_iter()
                .map(|t| TopicName(StrBytes::from_string(t)))
                .collect();
            wm.assignment = assignment(&m.assignment, image);
            wm
        })
        .collect();
}

fn assignment(a: &Partitions, image: &MetadataImage) -> Assignment {
    let mut w = Assignment::default();
    w.topic_partitions = a
        .iter()
        .map(|(id, parts)| {
            let mut tp = TopicPartitions::default();
            tp.topic_id = *id;
            tp.topic_name = TopicName(StrBytes::from_string(
                image
                    .topic_by_id(id)
                    .map(|t| t.name.to_string())
                    .unwrap_or_default(),
            ));
            tp.partitions = parts.iter().copied().collect();
            tp
        })
        .collect();
    w
}
