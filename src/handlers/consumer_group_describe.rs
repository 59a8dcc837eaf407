//! ConsumerGroupDescribe (key 69), v0–v1 (KIP-848): each consumer group
//! with its epochs, assignor and members (current and target assignment).
//! A classic group gets GROUP_ID_NOT_FOUND "Group G is not a consumer
//! group." — the answer on which Kafka's Admin client falls back to
//! DescribeGroups — and an unknown one "Group G not found.".

use std::rc::Rc;

use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{group_owner, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::error::KafkaCode;
use crate::group::consumer::{self, DescribedGroup as Group};
use crate::group::consumer_coordinator;
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Answers ConsumerGroupDescribe.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: ConsumerGroupDescribeRequest = frame.decode()?;
    let access = Access::of(shard, frame);
    let image = shard.metadata();
    let mut resp = ConsumerGroupDescribeResponse::default();
    for gid in &req.group_ids {
        let group = gid.0.to_string();
        let mut w = DescribedGroup::default();
        w.group_id = gid.clone();
        w.authorized_operations = i32::MIN;
        // Kafka: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED).
        let owner = access
            .check(Operation::Describe, ResourceType::Group, &group)
            .map_err(|d| (d.code(), None))
            .and_then(|()| group_owner(shard, &group).map_err(|e| (e.code(), None)));
        let described = match owner {
            Err(e) => Err(e),
            Ok(owner) => {
                let g = group.clone();
                shard
                    .invoke_on(owner, move |s| async move {
                        consumer_coordinator::describe(&s, &g).map_err(|(e, m)| (e.code(), Some(m)))
                    })
                    .await
                    .unwrap_or_else(|e| Err((e.code(), None)))
            }
        };
        match described {
            Ok(d) => {
                fill(&mut w, d, &image);
                if req.include_authorized_operations {
                    w.authorized_operations = access.operations(ResourceType::Group, &group);
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
fn fill(w: &mut DescribedGroup, d: Group, image: &crate::cluster::metadata::MetadataImage) {
    w.group_state = StrBytes::from_static_str(d.state.as_str());
    w.group_epoch = d.group_epoch;
    w.assignment_epoch = d.assignment_epoch;
    w.assignor_name = StrBytes::from_string(d.assignor_name);
    w.members = d
        .members
        .into_iter()
        .map(|m| {
            let mut wm = Member::default();
            wm.member_id = StrBytes::from_string(m.member_id);
            wm.instance_id = m.instance_id.map(StrBytes::from_string);
            wm.rack_id = m.rack_id.map(StrBytes::from_string);
            wm.member_epoch = m.member_epoch;
            wm.client_id = StrBytes::from_string(m.client_id);
            wm.client_host = StrBytes::from_string(m.client_host);
            wm.subscribed_topic_names = m
                .subscribed_topic_names
                .into_iter()
                .map(|t| TopicName(StrBytes::from_string(t)))
                .collect();
            wm.subscribed_topic_regex = m.subscribed_topic_regex.map(StrBytes::from_string);
            wm.assignment = assignment(&m.assignment, image);
            wm.target_assignment = assignment(&m.target_assignment, image);
            // v1 (KIP-1099): 0 = a classic member, 1 = a consumer-protocol one.
            wm.member_type = if m.classic { 0 } else { 1 };
            wm
        })
        .collect();
}

fn assignment(
    a: &consumer::Assignment,
    image: &crate::cluster::metadata::MetadataImage,
) -> Assignment {
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
