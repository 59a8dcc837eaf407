//! OffsetDelete (key 47), v0 (KIP-496): removes committed offsets of
//! partitions the group no longer subscribes to (GROUP_SUBSCRIBED_TO_TOPIC
//! otherwise).

use std::rc::Rc;

use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse};

use super::authz::Access;
use super::{group_owner, respond, Answers, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::error::{codes, group_code, KafkaCode};
use crate::group::coordinator;
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Answers OffsetDelete.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: OffsetDeleteRequest = frame.decode()?;
    let group = req.group_id.0.to_string();
    // Kafka's checks: DELETE on the group (GROUP_AUTHORIZATION_FAILED at
    // the top), then READ on each topic (TOPIC_AUTHORIZATION_FAILED per
    // partition, not sent on).
    let access = Access::of(shard, frame);
    let group_refused = access
        .check(Operation::Delete, ResourceType::Group, &group)
        .err()
        .map(|d| d.code());
    let mut pre: Vec<Option<i16>> = Vec::new();
    let mut parts: Vec<(String, i32)> = Vec::new();
    for t in &req.topics {
        let refused = group_refused.is_none()
            && !access.allows(Operation::Read, ResourceType::Topic, &t.name.0);
        for p in &t.partitions {
            if refused {
                pre.push(Some(codes::TOPIC_AUTHORIZATION_FAILED));
            } else {
                pre.push(None);
                parts.push((t.name.0.to_string(), p.partition_index));
            }
        }
    }
    let owner = match group_refused {
        Some(code) => Err(code),
        None => group_owner(shard, &group).map_err(|e| e.code()),
    };
    let (top, decided) = match owner {
        Err(code) => (code, Vec::new()),
        Ok(owner) => shard
            .invoke_on(owner, move |s| async move {
                match coordinator::delete_offsets(s, group, parts).await {
                    Ok(results) => (0, results.iter().map(group_code).collect::<Vec<i16>>()),
                    Err(e) => (e.code(), Vec::new()),
                }
            })
            .await
            .unwrap_or_else(|e| (e.code(), Vec::new())),
    };
    let mut resp = OffsetDeleteResponse::default();
    resp.error_code = top;
    if top == 0 {
        let mut answers = Answers::merged(&pre, decided);
        resp.topics = req
            .topics
            .iter()
            .map(|t| {
                let mut rt = OffsetDeleteResponseTopic::default();
                rt.name = t.name.clone();
                rt.partitions = t
                    .partitions
                    .iter()
                    .map(|p| {
                        let mut rp = OffsetDeleteResponsePartition::default();
                        rp.partition_index = p.partition_index;
                        rp.error_code = answers.next_code();
                        rp
                    })
                    .collect();
                rt
            })
            .collect();
    }
    Ok(respond(frame, &resp))
}
