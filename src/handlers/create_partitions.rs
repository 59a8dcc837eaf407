//! CreatePartitions (key 37), v0–v3: raises a topic's partition count. The
//! active controller places the new partitions' replicas the way the topic's
//! existing ones are (same replication factor), or checks the manual
//! assignments (registered brokers, one list per new partition).

use std::rc::Rc;

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{ask_controller, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::cluster::control::{ControllerReply, ControllerRequest, PartitionIncrease};
use crate::cluster::error::InvalidRequest;
use crate::cluster::error::MetadataError;
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Adds partitions to the requested topics.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: CreatePartitionsRequest = frame.decode()?;
    // Kafka's check: ALTER on each topic (TOPIC_AUTHORIZATION_FAILED, not
    // sent on).
    let access = Access::of(shard, frame);
    let refused: Vec<bool> = req
        .topics
        .iter()
        .map(|t| !access.allows(Operation::Alter, ResourceType::Topic, &t.name.0))
        .collect();
    let items: Vec<PartitionIncrease> = req
        .topics
        .iter()
        .map(|t| PartitionIncrease {
            topic: t.name.0.to_string(),
            count: t.count,
            assignments: t.assignments.as_ref().map(|a| {
                a.iter()
                    .map(|x| x.broker_ids.iter().map(|b| b.0).collect())
                    .collect()
            }),
        })
        .collect();
    // The controller mutation quota: each topic's new partitions (as the
    // image counts them now), strict from v3.
    let image = shard.metadata();
    let permits: Vec<Option<f64>> = items
        .iter()
        .zip(&refused)
        .map(|(i, r)| {
            let have = image.topic(&i.topic).map_or(0, |t| t.partitions);
            (!*r).then(|| f64::from((i.count - have).max(0)))
        })
        .collect();
    drop(image);
    let (verdicts, throttle_ms) = super::quota::mutations(shard, frame, &permits, 3).await;
    let throttled: Vec<Option<crate::quota::MutationThrottled>> =
        verdicts.into_iter().map(Result::err).collect();
    let asked: Vec<PartitionIncrease> = items
        .iter()
        .zip(&refused)
        .zip(&throttled)
        .filter(|((_, r), t)| !**r && t.is_none())
        .map(|((i, _), _)| i.clone())
        .collect();
    let n = asked.len();
    let results: Vec<Result<(), MetadataError>> = if n == 0 {
        Vec::new()
    } else {
        match ask_controller(
            shard,
            ControllerRequest::CreatePartitions {
                topics: asked,
                validate_only: req.validate_only,
            },
        )
        .await
        {
            Ok(ControllerReply::CreatePartitions(r)) => r,
            Ok(_) => {
                vec![Err(crate::cluster::error::ControllerCallError::UnexpectedReply.into()); n]
            }
            Err(e) => vec![Err(e); n],
        }
    };
    let mut results = results.into_iter();
    let mut resp = CreatePartitionsResponse::default();
    resp.results = items
        .iter()
        .zip(&refused)
        .zip(&throttled)
        .map(|((item, refused), throttled)| {
            let mut r = CreatePartitionsTopicResult::default();
            r.name = kafka_protocol::messages::TopicName(StrBytes::from_string(item.topic.clone()));
            if *refused {
                r.error_code = codes::TOPIC_AUTHORIZATION_FAILED;
                r.error_message = Some(StrBytes::from_static_str(
                    "The topic authorization is failed.",
                ));
                return r;
            }
            if let Some(t) = throttled {
                r.error_code = t.code();
                r.error_message = Some(StrBytes::from_string(t.to_string()));
                return r;
            }
            let outcome = results
                .next()
                .unwrap_or(Err(InvalidRequest::AnswerLost.into()));
            if let Err(e) = outcome {
                r.error_code = e.code();
                r.error_message = Some(StrBytes::from_string(e.to_string()));
            }
            r
        })
        .collect();
    Ok(super::quota::with_throttle(
        frame,
        respond(frame, &resp),
        throttle_ms,
    ))
}
