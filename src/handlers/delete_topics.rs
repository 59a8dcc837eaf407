//! DeleteTopics (key 20), v1–v6 (v6: by name or topic id). Deletion removes the
//! topic from the registry, then each owner shard removes its partition
//! directories (renamed to `*-delete` first, as Kafka does).

use std::rc::Rc;

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::authz::Access;
use super::{ask_controller, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType, CLUSTER_NAME};
use crate::cluster::control::{ControllerReply, ControllerRequest};
use crate::cluster::error::InvalidRequest;
use crate::cluster::error::MetadataError;
use crate::error::{codes, KafkaCode};
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
    // Kafka's checks (ControllerApis.deleteTopics): DELETE on the cluster
    // (unlogged) allows every topic; otherwise a topic named that may not
    // be described is refused whether it exists or not, and an existing
    // one that may not be deleted is refused (a topic id's name given back
    // only when it may be described). Some(show the name) when refused.
    let access = Access::of(shard, frame);
    let cluster_delete =
        access.allows_quietly(Operation::Delete, ResourceType::Cluster, CLUSTER_NAME);
    let refused: Vec<Option<bool>> = wanted
        .iter()
        .zip(&resolved)
        .map(|((given, _), r)| {
            let Ok(name) = r else { return None };
            if cluster_delete {
                return None;
            }
            let describable = access.allows(Operation::Describe, ResourceType::Topic, name);
            let exists = image.topic(name).is_some();
            let deletable = exists && access.allows(Operation::Delete, ResourceType::Topic, name);
            match given {
                Some(_) if !describable => Some(true),
                _ if exists && !deletable => Some(describable),
                _ => None,
            }
        })
        .collect();
    let enabled = shard.config.delete_topic_enable;
    // The controller mutation quota: each existing topic's partitions,
    // strict from v5.
    let permits: Vec<Option<f64>> = resolved
        .iter()
        .zip(&refused)
        .map(|(r, refused)| match (r, refused) {
            (Ok(name), None) if enabled => image.topic(name).map(|t| f64::from(t.partitions)),
            _ => None,
        })
        .collect();
    let (verdicts, throttle_ms) = super::quota::mutations(shard, frame, &permits, 5).await;
    let throttled: Vec<Option<crate::quota::MutationThrottled>> =
        verdicts.into_iter().map(Result::err).collect();
    let names: Vec<String> = resolved
        .iter()
        .zip(&refused)
        .zip(&throttled)
        .filter(|((_, refused), t)| refused.is_none() && t.is_none())
        .filter_map(|((r, _), _)| r.as_ref().ok().cloned())
        .collect();
    let decided: Result<Vec<Result<Uuid, MetadataError>>, MetadataError> =
        if !enabled || names.is_empty() {
            Ok(Vec::new())
        } else {
            match ask_controller(shard, ControllerRequest::DeleteTopics { names }).await {
                Ok(ControllerReply::DeleteTopics(r)) => Ok(r),
                Ok(_) => Err(crate::cluster::error::ControllerCallError::UnexpectedReply.into()),
                Err(e) => Err(e),
            }
        };
    let mut decided_iter = decided.clone().unwrap_or_default().into_iter();
    let results: Vec<Result<Uuid, MetadataError>> = resolved
        .iter()
        .zip(&refused)
        .zip(&throttled)
        .map(|((r, refused), throttled)| match r {
            Err(e) => Err(e.clone()),
            // Answered below.
            Ok(_) if refused.is_some() || throttled.is_some() => Ok(Uuid::nil()),
            Ok(_) if !enabled => Err(MetadataError::TopicDeletionDisabled),
            Ok(_) => match &decided {
                Err(e) => Err(e.clone()),
                Ok(_) => decided_iter
                    .next()
                    .unwrap_or(Err(InvalidRequest::AnswerLost.into())),
            },
        })
        .collect();
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
            if let Some(show_name) = refused.get(i).copied().flatten() {
                if !show_name {
                    r.name = None;
                }
                r.error_code = codes::TOPIC_AUTHORIZATION_FAILED;
                return r;
            }
            if let Some(t) = throttled.get(i).copied().flatten() {
                r.error_code = t.code();
                r.error_message = Some(StrBytes::from_string(t.to_string()));
                return r;
            }
            let outcome = results
                .get(i)
                .cloned()
                .unwrap_or(Err(InvalidRequest::AnswerLost.into()));
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
    Ok(super::quota::with_throttle(
        frame,
        respond(frame, &resp),
        throttle_ms,
    ))
}
