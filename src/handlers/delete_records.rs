//! DeleteRecords (key 21), v0–v2: moves a partition's log start offset
//! (offset -1 = the high watermark) and deletes the segments below it;
//! consumers positioned earlier get OFFSET_OUT_OF_RANGE and reset. Only the
//! partition's leader deletes (NOT_LEADER_OR_FOLLOWER otherwise, as Kafka's
//! `Partition.deleteRecordsOnLeader`).

use std::rc::Rc;
use std::sync::Arc;

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};

use super::authz::Access;
use super::{respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::cluster::leadership::Requester;
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Answers DeleteRecords.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: DeleteRecordsRequest = frame.decode()?;
    let image = shard.metadata();
    let mut resp = DeleteRecordsResponse::default();
    // Kafka: DELETE on each topic (TOPIC_AUTHORIZATION_FAILED, before
    // whether it exists).
    let access = Access::of(shard, frame);
    for t in &req.topics {
        let mut rt = DeleteRecordsTopicResult::default();
        rt.name = t.name.clone();
        let meta = image.topic(t.name.0.as_str());
        let refused = access
            .check(Operation::Delete, ResourceType::Topic, &t.name.0)
            .err();
        for p in &t.partitions {
            let mut rp = DeleteRecordsPartitionResult::default();
            rp.partition_index = p.partition_index;
            rp.low_watermark = -1;
            if let Some(d) = refused {
                rp.error_code = d.code();
            } else if !meta.is_some_and(|m| (0..m.partitions).contains(&p.partition_index)) {
                rp.error_code = codes::UNKNOWN_TOPIC_OR_PARTITION;
            } else {
                let topic: Arc<str> = Arc::from(t.name.0.as_str());
                let (pi, offset) = (p.partition_index, p.offset);
                let r = shard
                    .invoke_on(shard.owner(&topic, pi), move |s| async move {
                        match s.serving(&topic, pi, Requester::Client, None) {
                            Err(e) => Err(e.code()),
                            Ok(part) => part.delete_records(offset).await.map_err(|e| e.code()),
                        }
                    })
                    .await
                    .unwrap_or_else(|e| Err(e.code()));
                match r {
                    Ok(low) => rp.low_watermark = low,
                    Err(code) => rp.error_code = code,
                }
            }
            rt.partitions.push(rp);
        }
        resp.topics.push(rt);
    }
    Ok(respond(frame, &resp))
}
