//! CreateTopics (key 19), v2–v7. `num_partitions = -1` and
//! `replication_factor = -1` take the broker defaults (KIP-464). Replication
//! factor must be 1 on a single node (INVALID_REPLICATION_FACTOR otherwise);
//! topic configs are validated (INVALID_CONFIG naming the key).

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};
use kafka_protocol::protocol::StrBytes;

use super::{respond, with_controller, HandlerResult};
use crate::cluster::error::{InvalidAssignment, InvalidRequest};
use crate::cluster::topic_config;
use crate::error::{KafkaCode, MetadataError};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

struct Plan {
    name: String,
    partitions: i32,
    replication_factor: i16,
    configs: BTreeMap<String, String>,
    early_error: Option<MetadataError>,
}

/// Creates the requested topics through the controller.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: CreateTopicsRequest = frame.decode()?;
    let cfg = &shard.config;
    let mut seen = std::collections::HashSet::new();
    let plans: Vec<Plan> = req
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
            if rf != 1 {
                early_error.get_or_insert(MetadataError::InvalidReplicationFactor {
                    requested: rf,
                    brokers: 1,
                });
            }
            if !t.assignments.is_empty() {
                let ok = t
                    .assignments
                    .iter()
                    .all(|a| a.broker_ids.len() == 1 && a.broker_ids[0].0 == cfg.node_id);
                if !ok || t.num_partitions != -1 {
                    early_error.get_or_insert(MetadataError::InvalidReplicaAssignment(
                        InvalidAssignment::CreateTopics,
                    ));
                }
            }
            for c in &t.configs {
                let k = c.name.to_string();
                if let Some(v) = &c.value {
                    match topic_config::validate(&k, v) {
                        Ok(()) => {
                            configs.insert(k, v.to_string());
                        }
                        Err(e) => {
                            early_error.get_or_insert(e);
                        }
                    }
                }
            }
            let partitions = if t.assignments.is_empty() {
                partitions
            } else {
                t.assignments.len() as i32
            };
            Plan {
                name,
                partitions,
                replication_factor: rf,
                configs,
                early_error,
            }
        })
        .collect();

    let validate_only = req.validate_only;
    type Input = (String, i32, BTreeMap<String, String>, Option<MetadataError>);
    let inputs: Vec<Input> = plans
        .iter()
        .map(|p| {
            (
                p.name.clone(),
                p.partitions,
                p.configs.clone(),
                p.early_error.clone(),
            )
        })
        .collect();
    let results = with_controller(shard, move |c| {
        inputs
            .into_iter()
            .map(|(name, partitions, configs, early)| match early {
                Some(e) => Err(e),
                None => c.create_topic(&name, partitions, configs, validate_only),
            })
            .collect::<Vec<_>>()
    })
    .await;

    let mut resp = CreateTopicsResponse::default();
    resp.topics = plans
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut r = CreatableTopicResult::default();
            r.name = kafka_protocol::messages::TopicName(StrBytes::from_string(p.name.clone()));
            let outcome = match &results {
                Ok(v) => v
                    .get(i)
                    .cloned()
                    .unwrap_or(Err(InvalidRequest::AnswerLost.into())),
                Err(e) => Err(MetadataError::from(e.clone())),
            };
            match outcome {
                Ok(t) => {
                    r.topic_id = t.id;
                    r.num_partitions = t.partitions;
                    r.replication_factor = p.replication_factor;
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
    Ok(respond(frame, &resp))
}
