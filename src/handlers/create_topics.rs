//! CreateTopics (key 19), v2–v7. `num_partitions = -1` and
//! `replication_factor = -1` take the broker defaults (KIP-464). Topic
//! configs are validated here (INVALID_CONFIG naming the key); the active
//! controller places the replicas over the alive brokers
//! (INVALID_REPLICATION_FACTOR when there are fewer), checks explicit
//! assignments and answers once the topic is in the metadata log and applied
//! on this broker.

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType, CLUSTER_NAME};
use crate::cluster::control::{ControllerReply, ControllerRequest, NewTopic};
use crate::cluster::error::MetadataError;
use crate::cluster::error::{InvalidAssignment, InvalidPartitions, InvalidRequest};
use crate::cluster::topic_config;
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::{submit, Shard};

struct Plan {
    name: String,
    topic: NewTopic,
    early_error: Option<MetadataError>,
    /// CREATE refused (TOPIC_AUTHORIZATION_FAILED, not sent on).
    denied: bool,
    /// Whether the answer may carry the topic's configs (DESCRIBE_CONFIGS
    /// on it; TOPIC_AUTHORIZATION_FAILED as its config error otherwise).
    describable: bool,
    /// Refused by the controller mutation quota (KIP-599, v6+).
    throttled: Option<crate::quota::MutationThrottled>,
}

/// Creates the requested topics through the controller.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: CreateTopicsRequest = frame.decode()?;
    let cfg = &shard.config;
    // Kafka's checks (ControllerApis.createTopics): CREATE on the cluster
    // (unlogged), else on each topic; DESCRIBE_CONFIGS (unlogged) decides
    // whether a created topic's configs are returned.
    let access = Access::of(shard, frame);
    let cluster_create =
        access.allows_quietly(Operation::Create, ResourceType::Cluster, CLUSTER_NAME);
    let mut seen = std::collections::HashSet::new();
    let mut plans: Vec<Plan> = req
        .topics
        .iter()
        .map(|t| {
            let name = t.name.0.to_string();
            let partitions = if t.num_partitions == -1 {
                cfg.num_partitions
            } else {
                t.num_partitions
            };
            let rf = if t.replication_factor == -1 {
                cfg.default_replication_factor
            } else {
                t.replication_factor
            };
            let mut configs = BTreeMap::new();
            let mut early_error = None;
            if !seen.insert(name.clone()) {
                early_error = Some(MetadataError::from(InvalidRequest::DuplicateTopic {
                    topic: name.clone(),
                }));
            }
            let denied = early_error.is_none()
                && !cluster_create
                && !access.allows(Operation::Create, ResourceType::Topic, &name);
            let describable =
                access.allows_quietly(Operation::DescribeConfigs, ResourceType::Topic, &name);
            let mut assignments = None;
            if !t.assignments.is_empty() {
                if t.num_partitions != -1 || t.replication_factor != -1 {
                    early_error.get_or_insert(MetadataError::InvalidReplicaAssignment(
                        InvalidAssignment::WithCounts,
                    ));
                }
                let mut lists: Vec<(i32, Vec<i32>)> = t
                    .assignments
                    .iter()
                    .map(|a| {
                        (
                            a.partition_index,
                            a.broker_ids.iter().map(|b| b.0).collect(),
                        )
                    })
                    .collect();
                lists.sort_by_key(|(p, _)| *p);
                if lists.iter().enumerate().any(|(i, (p, _))| *p != i as i32) {
                    early_error.get_or_insert(
                        InvalidPartitions::OutOfRange {
                            requested: lists.len() as i32,
                            min: 1,
                            max: crate::cluster::control::MAX_PARTITIONS,
                        }
                        .into(),
                    );
                }
                assignments = Some(lists.into_iter().map(|(_, l)| l).collect());
            }
            for c in &t.configs {
                let k = c.name.to_string();
                if let Some(v) = &c.value {
                    match topic_config::validate(&k, v) {
                        Ok(()) => {
                            configs.insert(k, v.to_string());
                        }
                        Err(e) => {
                            early_error.get_or_insert(e.into());
                        }
                    }
                }
            }
            Plan {
                topic: NewTopic {
                    name: name.clone(),
                    partitions,
                    replication_factor: rf,
                    assignments,
                    configs,
                    topic_id: None,
                },
                name,
                early_error,
                denied,
                describable,
                throttled: None,
            }
        })
        .collect();
    // The controller mutation quota: each topic's partitions, strict from v6.
    let permits: Vec<Option<f64>> = plans
        .iter()
        .map(|p| {
            (p.early_error.is_none() && !p.denied).then(|| {
                let n = p
                    .topic
                    .assignments
                    .as_ref()
                    .map_or(p.topic.partitions, |a| a.len() as i32);
                f64::from(n)
            })
        })
        .collect();
    let (verdicts, throttle_ms) = super::quota::mutations(shard, frame, &permits, 6).await;
    for (p, v) in plans.iter_mut().zip(verdicts) {
        p.throttled = v.err();
    }

    let asked: Vec<NewTopic> = plans
        .iter()
        .filter(|p| p.early_error.is_none() && !p.denied && p.throttled.is_none())
        .map(|p| p.topic.clone())
        .collect();
    let results = if asked.is_empty() {
        Ok(Vec::new())
    } else {
        match submit(
            shard,
            ControllerRequest::CreateTopics {
                topics: asked,
                validate_only: req.validate_only,
            },
        )
        .await
        {
            Ok(ControllerReply::CreateTopics(r)) => Ok(r),
            Ok(_) => Err(MetadataError::from(
                crate::cluster::error::ControllerCallError::UnexpectedReply,
            )),
            Err(e) => Err(MetadataError::from(e)),
        }
    };
    let mut decided = match &results {
        Ok(v) => v.clone().into_iter(),
        Err(_) => Vec::new().into_iter(),
    };

    let mut resp = CreateTopicsResponse::default();
    resp.topics = plans
        .iter()
        .map(|p| {
            let mut r = CreatableTopicResult::default();
            r.name = kafka_protocol::messages::TopicName(StrBytes::from_string(p.name.clone()));
            if p.denied {
                r.error_code = codes::TOPIC_AUTHORIZATION_FAILED;
                r.error_message = Some(StrBytes::from_static_str("Authorization failed."));
                r.num_partitions = -1;
                r.replication_factor = -1;
                return r;
            }
            if let Some(t) = &p.throttled {
                r.error_code = t.code();
                r.error_message = Some(StrBytes::from_string(t.to_string()));
                r.num_partitions = -1;
                r.replication_factor = -1;
                return r;
            }
            let outcome = match (&p.early_error, &results) {
                (Some(e), _) => Err(e.clone()),
                (None, Ok(_)) => decided
                    .next()
                    .unwrap_or(Err(InvalidRequest::AnswerLost.into())),
                (None, Err(e)) => Err(e.clone()),
            };
            match outcome {
                Ok(t) if !p.describable => {
                    r.topic_id = t.id;
                    r.topic_config_error_code = codes::TOPIC_AUTHORIZATION_FAILED;
                    r.num_partitions = -1;
                    r.replication_factor = -1;
                }
                Ok(t) => {
                    r.topic_id = t.id;
                    r.num_partitions = t.partitions;
                    r.replication_factor = t.replication_factor;
                    r.configs = Some(
                        t.configs
                            .iter()
                            .map(|(k, v)| {
                                let mut c = CreatableTopicConfigs::default();
                                c.name = StrBytes::from_string(k.clone());
                                c.value = Some(StrBytes::from_string(v.clone()));
                                c.config_source = 1; // DYNAMIC_TOPIC_CONFIG
                                c
                            })
                            .collect(),
                    );
                }
                Err(e) => {
                    r.error_code = e.code();
                    r.error_message = Some(StrBytes::from_string(e.to_string()));
                    r.num_partitions = -1;
                    r.replication_factor = -1;
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
