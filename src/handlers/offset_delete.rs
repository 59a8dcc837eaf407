//! OffsetDelete (key 47), v0 (KIP-496): removes committed offsets of
//! partitions the group no longer subscribes to (GROUP_SUBSCRIBED_TO_TOPIC
//! otherwise).

use std::rc::Rc;

use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse};

use super::{group_owner, respond, Answers, HandlerResult};
use crate::error::{group_code, KafkaCode};
use crate::group::coordinator;
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Answers OffsetDelete.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: OffsetDeleteRequest = frame.decode()?;
    let group = req.group_id.0.to_string();
    let parts: Vec<(String, i32)> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.name.0.to_string(), p.partition_index))
        })
        .collect();
    let (top, codes) = match group_owner(shard, &group).map_err(|e| e.code()) {
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
        let mut answers = Answers::new(codes);
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
