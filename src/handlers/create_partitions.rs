//! CreatePartitions (key 37), v0–v3: raises a topic's partition count. Manual
//! assignments may only name this broker.

use std::rc::Rc;

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};
use kafka_protocol::protocol::StrBytes;

use super::{respond, with_controller, HandlerResult};
use crate::cluster::error::{InvalidAssignment, InvalidRequest};
use crate::error::{KafkaCode, MetadataError};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Adds partitions to the requested topics.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: CreatePartitionsRequest = frame.decode()?;
    let node = shard.config.node_id;
    let items: Vec<(String, i32, Option<MetadataError>)> = req
        .topics
        .iter()
        .map(|t| {
            let bad_assignment = t.assignments.as_ref().is_some_and(|a| {
                a.iter()
                    .any(|x| x.broker_ids.len() != 1 || x.broker_ids[0].0 != node)
            });
            let err = bad_assignment.then_some(MetadataError::InvalidReplicaAssignment(
                InvalidAssignment::CreatePartitions,
            ));
            (t.name.0.to_string(), t.count, err)
        })
        .collect();
    let validate_only = req.validate_only;
    let work = items.clone();
    let results = with_controller(shard, move |c| {
        work.into_iter()
            .map(|(name, count, err)| match err {
                Some(e) => Err(e),
                None => c.create_partitions(&name, count, validate_only).map(drop),
            })
            .collect::<Vec<_>>()
    })
    .await;
    let mut resp = CreatePartitionsResponse::default();
    resp.results = items
        .iter()
        .enumerate()
        .map(|(i, (name, _, _))| {
            let mut r = CreatePartitionsTopicResult::default();
            r.name = kafka_protocol::messages::TopicName(StrBytes::from_string(name.clone()));
            let outcome = match &results {
                Ok(v) => v
                    .get(i)
                    .cloned()
                    .unwrap_or(Err(InvalidRequest::AnswerLost.into())),
                Err(e) => Err(MetadataError::from(e.clone())),
            };
            if let Err(e) = outcome {
                r.error_code = e.code();
                r.error_message = Some(StrBytes::from_string(e.to_string()));
            }
            r
        })
        .collect();
    Ok(respond(frame, &resp))
}
