//! The share coordinator's APIs (KIP-932), v0 each, broker to broker:
//! InitializeShareGroupState (83), ReadShareGroupState (84),
//! WriteShareGroupState (85), DeleteShareGroupState (86) and
//! ReadShareGroupStateSummary (87). Each needs CLUSTER_ACTION on the
//! cluster (every partition answers CLUSTER_AUTHORIZATION_FAILED
//! otherwise, as Kafka's); each share-partition is routed to the shard
//! leading its `__share_group_state` partition by `share_coordinator`'s
//! domain API (NOT_COORDINATOR when another broker leads it). Served
//! whatever `share.version` is finalized, as Kafka 4.4 serves them.

use std::rc::Rc;

use kafka_protocol::messages::{
    delete_share_group_state_response as del, initialize_share_group_state_response as init,
    read_share_group_state_response as read, read_share_group_state_summary_response as sum,
    write_share_group_state_response as write, DeleteShareGroupStateRequest,
    DeleteShareGroupStateResponse, InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse, ReadShareGroupStateRequest, ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest, ReadShareGroupStateSummaryResponse,
    WriteShareGroupStateRequest, WriteShareGroupStateResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::authz::Access;
use super::{respond, HandlerResult};
use crate::acl::model::Operation;
use crate::error::KafkaCode;
use crate::protocol::RequestFrame;
use crate::shard::Shard;
use crate::share::partition::StateBatch;
use crate::share::state::{StateKey, WriteRequest};
use crate::share_coordinator::{self as coord, ShareCoordinatorError};

/// Whether the caller may use the share coordinator's APIs (CLUSTER_ACTION).
fn allowed(shard: &Rc<Shard>, frame: &RequestFrame) -> bool {
    Access::of(shard, frame).cluster(Operation::ClusterAction)
}

/// (code, message) of a result.
fn outcome<T>(r: &Result<T, ShareCoordinatorError>) -> (i16, Option<StrBytes>) {
    match r {
        Ok(_) => (0, None),
        Err(e) => (e.code(), Some(StrBytes::from_string(e.to_string()))),
    }
}

/// CLUSTER_AUTHORIZATION_FAILED for every partition.
fn denied() -> (i16, Option<StrBytes>) {
    let e = ResponseError::ClusterAuthorizationFailed;
    (e.code(), Some(StrBytes::from_string(e.to_string())))
}

fn key(group: &StrBytes, topic: uuid::Uuid, partition: i32) -> StateKey {
    (group.to_string(), topic, partition)
}

/// Answers InitializeShareGroupState.
pub async fn initialize(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: InitializeShareGroupStateRequest = frame.decode()?;
    let ok = allowed(shard, frame);
    let mut resp = InitializeShareGroupStateResponse::default();
    for t in &req.topics {
        let mut result = init::InitializeStateResult::default();
        result.topic_id = t.topic_id;
        for p in &t.partitions {
            let (se, so) = (p.state_epoch, p.start_offset);
            let (code, message) = if ok {
                let k = key(&req.group_id, t.topic_id, p.partition);
                outcome(&coord::initialize(shard, k, se, so).await)
            } else {
                denied()
            };
            let mut pr = init::PartitionResult::default();
            pr.partition = p.partition;
            pr.error_code = code;
            pr.error_message = message;
            result.partitions.push(pr);
        }
        resp.results.push(result);
    }
    Ok(respond(frame, &resp))
}

/// Answers ReadShareGroupState.
pub async fn read(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: ReadShareGroupStateRequest = frame.decode()?;
    let ok = allowed(shard, frame);
    let mut resp = ReadShareGroupStateResponse::default();
    for t in &req.topics {
        let mut result = read::ReadStateResult::default();
        result.topic_id = t.topic_id;
        for p in &t.partitions {
            let mut pr = read::PartitionResult::default();
            pr.partition = p.partition;
            let le = p.leader_epoch;
            let answer = if ok {
                let k = key(&req.group_id, t.topic_id, p.partition);
                let r = coord::read(shard, k, le).await;
                (pr.error_code, pr.error_message) = outcome(&r);
                r.ok()
            } else {
                (pr.error_code, pr.error_message) = denied();
                None
            };
            if let Some(a) = answer {
                pr.state_epoch = a.state_epoch;
                pr.start_offset = a.start_offset;
                pr.state_batches = a
                    .batches
                    .iter()
                    .map(|b| {
                        let mut sb = read::StateBatch::default();
                        sb.first_offset = b.first;
                        sb.last_offset = b.last;
                        sb.delivery_state = b.state;
                        sb.delivery_count = b.delivery_count;
                        sb
                    })
                    .collect();
            }
            result.partitions.push(pr);
        }
        resp.results.push(result);
    }
    Ok(respond(frame, &resp))
}

/// Answers WriteShareGroupState.
pub async fn write(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: WriteShareGroupStateRequest = frame.decode()?;
    let ok = allowed(shard, frame);
    let mut resp = WriteShareGroupStateResponse::default();
    for t in &req.topics {
        let mut result = write::WriteStateResult::default();
        result.topic_id = t.topic_id;
        for p in &t.partitions {
            let w = WriteRequest {
                state_epoch: p.state_epoch,
                leader_epoch: p.leader_epoch,
                start_offset: p.start_offset,
                // Tagged DeliveryCompleteCount is v1, which the crate
                // does not decode: unknown.
                delivery_complete_count: -1,
                batches: p
                    .state_batches
                    .iter()
                    .map(|b| StateBatch {
                        first: b.first_offset,
                        last: b.last_offset,
                        state: b.delivery_state,
                        delivery_count: b.delivery_count,
                    })
                    .collect(),
            };
            let (code, message) = if ok {
                let k = key(&req.group_id, t.topic_id, p.partition);
                outcome(&coord::write(shard, k, w).await)
            } else {
                denied()
            };
            let mut pr = write::PartitionResult::default();
            pr.partition = p.partition;
            pr.error_code = code;
            pr.error_message = message;
            result.partitions.push(pr);
        }
        resp.results.push(result);
    }
    Ok(respond(frame, &resp))
}

/// Answers DeleteShareGroupState.
pub async fn delete(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: DeleteShareGroupStateRequest = frame.decode()?;
    let ok = allowed(shard, frame);
    let mut resp = DeleteShareGroupStateResponse::default();
    for t in &req.topics {
        let mut result = del::DeleteStateResult::default();
        result.topic_id = t.topic_id;
        for p in &t.partitions {
            let (code, message) = if ok {
                let k = key(&req.group_id, t.topic_id, p.partition);
                outcome(&coord::delete(shard, k).await)
            } else {
                denied()
            };
            let mut pr = del::PartitionResult::default();
            pr.partition = p.partition;
            pr.error_code = code;
            pr.error_message = message;
            result.partitions.push(pr);
        }
        resp.results.push(result);
    }
    Ok(respond(frame, &resp))
}

/// Answers ReadShareGroupStateSummary.
pub async fn summary(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: ReadShareGroupStateSummaryRequest = frame.decode()?;
    let ok = allowed(shard, frame);
    let mut resp = ReadShareGroupStateSummaryResponse::default();
    for t in &req.topics {
        let mut result = sum::ReadStateSummaryResult::default();
        result.topic_id = t.topic_id;
        for p in &t.partitions {
            let mut pr = sum::PartitionResult::default();
            pr.partition = p.partition;
            let answer = if ok {
                let k = key(&req.group_id, t.topic_id, p.partition);
                let r = coord::summary(shard, k).await;
                (pr.error_code, pr.error_message) = outcome(&r);
                r.ok()
            } else {
                (pr.error_code, pr.error_message) = denied();
                None
            };
            if let Some((state_epoch, leader_epoch, start_offset)) = answer {
                pr.state_epoch = state_epoch;
                pr.leader_epoch = leader_epoch;
                pr.start_offset = start_offset;
            }
            result.partitions.push(pr);
        }
        resp.results.push(result);
    }
    Ok(respond(frame, &resp))
}
