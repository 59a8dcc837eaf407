//! Metadata (key 3), v0–v13, with topic ids (v10+). Unknown topics are
//! auto-created with `num.partitions` partitions when
//! `auto.create.topics.enable=true` and the request allows it
//! (`allow_auto_topic_creation`, v4+; always allowed before v4, as in Kafka).
//!
//! Topics are looked up by id only from v12, as in Kafka: at v10 and v11 a
//! name cannot be null in the response, so a request with a null name or a
//! topic id is answered the way Kafka answers it (every requested topic with
//! INVALID_REQUEST, a null name given back as "", no brokers). From v12 a
//! request with any topic id is answered by ids alone, whatever the names
//! (the Java client sends "" with the id); an unknown id gets
//! UNKNOWN_TOPIC_ID with a null name. v13 only adds a top-level error code
//! (KIP-1102), always NONE here.

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::authz::Access;
use super::{ask_controller, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType, CLUSTER_NAME};
use crate::cluster::control::{ControllerReply, ControllerRequest, NewTopic};
use crate::cluster::error::MetadataError;
use crate::cluster::metadata::{MetadataImage, TopicMeta, NO_LEADER};
use crate::cluster::topic_name;
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Builds the response topic for an existing topic; `ops` is its KIP-430
/// authorized-operations field (`i32::MIN` when not asked for).
fn topic_entry(image: &MetadataImage, t: &TopicMeta, ops: i32) -> MetadataResponseTopic {
    let mut rt = MetadataResponseTopic::default();
    rt.name = Some(TopicName(StrBytes::from_string(t.name.to_string())));
    rt.topic_id = t.id;
    rt.is_internal = topic_name::is_internal(&t.name);
    rt.topic_authorized_operations = ops;
    rt.partitions = t
        .assignments
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut rp = MetadataResponsePartition::default();
            rp.partition_index = i as i32;
            rp.leader_id = BrokerId(p.leader);
            rp.leader_epoch = p.leader_epoch;
            rp.replica_nodes = p.replicas.iter().map(|r| BrokerId(*r)).collect();
            rp.isr_nodes = p.isr.iter().map(|r| BrokerId(*r)).collect();
            rp.offline_replicas = image
                .offline_replicas(p)
                .into_iter()
                .map(BrokerId)
                .collect();
            if p.leader == NO_LEADER {
                rp.error_code = codes::LEADER_NOT_AVAILABLE;
            }
            rp
        })
        .collect();
    rt
}

fn error_entry(name: Option<String>, id: Uuid, code: i16) -> MetadataResponseTopic {
    let mut rt = MetadataResponseTopic::default();
    rt.name = name.map(|n| TopicName(StrBytes::from_string(n)));
    rt.topic_id = id;
    rt.error_code = code;
    rt.topic_authorized_operations = i32::MIN;
    rt
}

/// Kafka's answer to a v10/v11 request naming a topic by id only
/// (`MetadataRequest.getErrorResponse` with INVALID_REQUEST): every requested
/// topic with that error, its id given back, a null name as "" (the field
/// cannot be null before v12), no brokers and no controller.
fn invalid_request_response(requested: &[(Option<String>, Uuid)]) -> MetadataResponse {
    let mut resp = MetadataResponse::default();
    resp.controller_id = BrokerId(-1);
    resp.cluster_authorized_operations = i32::MIN;
    resp.topics = requested
        .iter()
        .map(|(name, id)| {
            let mut rt = error_entry(
                Some(name.clone().unwrap_or_default()),
                *id,
                codes::INVALID_REQUEST,
            );
            rt.is_internal = false;
            rt
        })
        .collect();
    resp
}

/// Answers a Metadata request.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: MetadataRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let allow_create =
        shard.config.auto_create_topics_enable && (version < 4 || req.allow_auto_topic_creation);

    // Kafka's checks: DESCRIBE on each topic (an all-topics request leaves
    // the others out, unlogged; a named one answers them
    // TOPIC_AUTHORIZATION_FAILED whether they exist or not); creating one
    // needs CREATE on the cluster, else on the topic.
    let access = Access::of(shard, frame);
    let describable = |name: &str| access.allows(Operation::Describe, ResourceType::Topic, name);
    let topic_ops = version >= 8 && req.include_topic_authorized_operations;
    let ops_of = |name: &str| {
        if topic_ops {
            access.operations(ResourceType::Topic, name)
        } else {
            i32::MIN
        }
    };
    let mut refused_create: Vec<String> = Vec::new();

    // Resolve which topics to describe; auto-create the unknown ones first.
    let mut image = shard.metadata();
    let requested: Option<Vec<(Option<String>, Uuid)>> = req.topics.as_ref().map(|ts| {
        ts.iter()
            .map(|t| (t.name.as_ref().map(|n| n.0.to_string()), t.topic_id))
            .collect()
    });
    // Kafka looks topics up by id from v12 only; before, a null name or a
    // topic id fails the whole request (INVALID_REQUEST), before anything
    // is created.
    let by_id = |l: &[(Option<String>, Uuid)]| l.iter().any(|(_, id)| !id.is_nil());
    if version < 12 {
        if let Some(list) = requested
            .as_ref()
            .filter(|l| by_id(l) || l.iter().any(|(n, _)| n.is_none()))
        {
            return Ok(respond(frame, &invalid_request_response(list)));
        }
    }
    // From v12, a request naming any topic id is answered by ids alone (the
    // names are not looked at, nothing is auto-created), as Kafka does.
    let ids: Option<Vec<Uuid>> = requested.as_ref().filter(|l| by_id(l)).map(|l| {
        let mut ids: Vec<Uuid> = Vec::new();
        for (_, id) in l {
            if !id.is_nil() && !ids.contains(id) {
                ids.push(*id);
            }
        }
        ids
    });
    if ids.is_none() {
        if let Some(list) = &requested {
            let mut to_create: Vec<String> = list
                .iter()
                .filter_map(|(n, _)| n.clone())
                .filter(|n| {
                    image.topic(n).is_none()
                        && topic_name::validate(n).is_ok()
                        && !topic_name::is_internal(n)
                        && describable(n)
                })
                .collect();
            if allow_create
                && !to_create.is_empty()
                && !access.allows_quietly(Operation::Create, ResourceType::Cluster, CLUSTER_NAME)
            {
                (to_create, refused_create) = to_create
                    .into_iter()
                    .partition(|n| access.allows(Operation::Create, ResourceType::Topic, n));
            }
            if allow_create && !to_create.is_empty() {
                let partitions = shard.config.num_partitions;
                let rf = shard.config.default_replication_factor;
                let topics: Vec<NewTopic> = to_create
                    .iter()
                    .map(|name| NewTopic {
                        name: name.clone(),
                        partitions,
                        replication_factor: rf,
                        assignments: None,
                        configs: BTreeMap::new(),
                        topic_id: None,
                    })
                    .collect();
                let asked = ControllerRequest::CreateTopics {
                    topics,
                    validate_only: false,
                };
                match ask_controller(shard, asked).await {
                    Ok(ControllerReply::CreateTopics(results)) => {
                        for (name, r) in to_create.iter().zip(results) {
                            match r {
                                Ok(_) => log::info!(
                                    "auto-created topic {name} with {partitions} partitions"
                                ),
                                Err(MetadataError::TopicAlreadyExists { .. }) => {}
                                Err(e) => log::warn!("auto-creating {name} failed: {e}"),
                            }
                        }
                    }
                    Ok(other) => log::warn!("auto-creation: unexpected answer {other:?}"),
                    Err(e) => log::warn!("auto-creation failed: {e}"),
                }
                image = shard.metadata();
            }
        }
    }

    let mut resp = MetadataResponse::default();
    resp.brokers = image
        .brokers(frame.listener())
        .iter()
        .map(|b| {
            let mut rb = MetadataResponseBroker::default();
            rb.node_id = BrokerId(b.node_id);
            rb.host = StrBytes::from_string(b.host.clone());
            rb.port = b.port;
            rb.rack = b.rack.clone().map(StrBytes::from_string);
            rb
        })
        .collect();
    resp.cluster_id = Some(StrBytes::from_string(image.cluster_id.clone()));
    resp.controller_id = BrokerId(super::client_controller_id(shard, &image));
    resp.cluster_authorized_operations =
        if (8..=10).contains(&version) && req.include_cluster_authorized_operations {
            access.operations(ResourceType::Cluster, CLUSTER_NAME)
        } else {
            i32::MIN
        };
    if let Some(ids) = ids {
        resp.topics = ids
            .into_iter()
            .map(|id| match image.topic_by_id(&id) {
                Some(t) if !describable(&t.name) => {
                    error_entry(None, id, codes::TOPIC_AUTHORIZATION_FAILED)
                }
                Some(t) => topic_entry(&image, t, ops_of(&t.name)),
                None => error_entry(None, id, codes::UNKNOWN_TOPIC_ID),
            })
            .collect();
        return Ok(respond(frame, &resp));
    }
    resp.topics = match requested {
        // v0: an empty list means all topics; v1+: null means all topics.
        None => all_topics(&image, &access, &ops_of),
        Some(list) if list.is_empty() && version == 0 => all_topics(&image, &access, &ops_of),
        Some(list) => list
            .into_iter()
            .map(|(name, id)| match name {
                Some(n) if !describable(&n) || refused_create.contains(&n) => {
                    error_entry(Some(n), Uuid::nil(), codes::TOPIC_AUTHORIZATION_FAILED)
                }
                Some(n) => match image.topic(&n) {
                    Some(t) => topic_entry(&image, t, ops_of(&t.name)),
                    None => {
                        let code = match topic_name::validate(&n) {
                            Err(e) => e.code(),
                            Ok(()) => codes::UNKNOWN_TOPIC_OR_PARTITION,
                        };
                        error_entry(Some(n), Uuid::nil(), code)
                    }
                },
                None => match image.topic_by_id(&id) {
                    Some(t) if !describable(&t.name) => {
                        error_entry(None, id, codes::TOPIC_AUTHORIZATION_FAILED)
                    }
                    Some(t) => topic_entry(&image, t, ops_of(&t.name)),
                    None => error_entry(None, id, codes::UNKNOWN_TOPIC_ID),
                },
            })
            .collect(),
    };
    Ok(respond(frame, &resp))
}

/// Every topic the request may DESCRIBE (the others left out, unlogged, as
/// Kafka's all-topics answer does).
fn all_topics(
    image: &MetadataImage,
    access: &Access,
    ops_of: &dyn Fn(&str) -> i32,
) -> Vec<MetadataResponseTopic> {
    image
        .topics
        .values()
        .filter(|t| access.allows_quietly(Operation::Describe, ResourceType::Topic, &t.name))
        .map(|t| topic_entry(image, t, ops_of(&t.name)))
        .collect()
}
