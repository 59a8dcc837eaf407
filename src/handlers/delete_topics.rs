//! DeleteTopics (key 20), v1–v6 (v6: by name or topic id). Deletion removes the
//! topic from the registry, then each owner shard removes its partition
//! directories (renamed to `*-delete` first, as Kafka does).

use std::rc::Rc;

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::{respond, with_controller, HandlerResult};
use crate::cluster::error::InvalidRequest;
use crate::error::{KafkaCode, MetadataError};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Deletes the requested topics.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: DeleteTopicsRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let image = shard.metadata();
    // v1–v5 name topics in `topic_names`; v6 uses `topics` (name or id).
    let wanted: Vec<(Option<String>, Uuid)> = if version >= 6 {
        req.topics
            .iter()
            .map(|t| (t.name.as_ref().map(|n| n.0.to_string()), t.topic_id))
            .collect()
    } else {
        req.topic_names
            .iter()
            .map(|n| (Some(n.0.to_string()), Uuid::nil()))
            .collect()
    };
    let resolved: Vec<Result<String, MetadataError>> = wanted
        .iter()
        .map(|(name, id)| match name {
            Some(n) => Ok(n.clone()),
            None => image
                .topic_by_id(id)
                .map(|t| t.name.to_string())
                .ok_or(MetadataError::UnknownTopicId),
        })
        .collect();
    let enabled = shard.config.delete_topic_enable;
    let to_delete = resolved.clone();
    let results = with_controller(shard, move |c| {
        to_delete
            .into_iter()
            .map(|r| {
                let name = r?;
                if !enabled {
                    return Err(MetadataError::TopicDeletionDisabled);
                }
                c.delete_topic(&name).map(|t| t.id)
            })
            .collect::<Vec<_>>()
    })
    .await;
    let mut resp = DeleteTopicsResponse::default();
    resp.responses = wanted
        .iter()
        .enumerate()
        .map(|(i, (name, id))| {
            let mut r = DeletableTopicResult::default();
            r.name = resolved
                .get(i)
                .and_then(|x| x.as_ref().ok())
                .or(name.as_ref())
                .map(|n| TopicName(StrBytes::from_string(n.clone())));
            r.topic_id = *id;
            let outcome = match &results {
                Ok(v) => v
                    .get(i)
                    .cloned()
                    .unwrap_or(Err(InvalidRequest::AnswerLost.into())),
                Err(e) => Err(MetadataError::from(e.clone())),
            };
            match outcome {
                Ok(tid) => r.topic_id = tid,
                Err(e) => {
                    r.error_code = e.code();
                    r.error_message = Some(StrBytes::from_string(e.to_string()));
                }
            }
            r
        })
        .collect();
    Ok(respond(frame, &resp))
}
