//! DescribeProducers (key 61), v0 (KIP-664): the producers a partition
//! knows, with epoch, last sequence, last timestamp, the coordinator epoch of
//! their last transaction marker (-1 if none) and the first offset of their
//! ongoing transaction (`current_txn_start_offset`, -1 if none; KIP-98).
//! Only the partition's leader answers (NOT_LEADER_OR_FOLLOWER otherwise):
//! Kafka lets any replica answer with its copy of the producer state, but a
//! follower's is not replicated yet (see docs/decisions/not-leader-answers.md).

use std::rc::Rc;
use std::sync::Arc;

use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse, ProducerId};

use super::authz::Access;
use super::{respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::cluster::leadership::Requester;
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Answers DescribeProducers.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: DescribeProducersRequest = frame.decode()?;
    let image = shard.metadata();
    let mut resp = DescribeProducersResponse::default();
    // Kafka: READ on each topic (TOPIC_AUTHORIZATION_FAILED, before whether
    // it exists).
    let access = Access::of(shard, frame);
    for t in &req.topics {
        let mut rt = TopicResponse::default();
        rt.name = t.name.clone();
        let meta = image.topic(t.name.0.as_str());
        let refused = access
            .check(Operation::Read, ResourceType::Topic, &t.name.0)
            .err();
        for &p in &t.partition_indexes {
            let mut rp = PartitionResponse::default();
            rp.partition_index = p;
            if let Some(d) = refused {
                rp.error_code = d.code();
            } else if !meta.is_some_and(|m| (0..m.partitions).contains(&p)) {
                rp.error_code = codes::UNKNOWN_TOPIC_OR_PARTITION;
            } else {
                let topic: Arc<str> = Arc::from(t.name.0.as_str());
                let owner = shard.owner(&topic, p);
                let states = shard
                    .invoke_on(owner, move |s| async move {
                        s.serving(&topic, p, Requester::Client, None)
                            .map(|part| part.describe_producers())
                    })
                    .await;
                match states {
                    Ok(Ok(list)) => {
                        rp.active_producers = list
                            .into_iter()
                            .map(|s| {
                                let mut ps = ProducerState::default();
                                ps.producer_id = ProducerId(s.producer_id);
                                ps.producer_epoch = s.producer_epoch as i32;
                                ps.last_sequence = s.last_sequence;
                                ps.last_timestamp = s.last_timestamp;
                                ps.coordinator_epoch = s.coordinator_epoch;
                                ps.current_txn_start_offset = s.current_txn_start_offset;
                                ps
                            })
                            .collect()
                    }
                    Ok(Err(e)) => rp.error_code = e.code(),
                    Err(e) => rp.error_code = e.code(),
                }
            }
            rt.partitions.push(rp);
        }
        resp.topics.push(rt);
    }
    Ok(respond(frame, &resp))
}
