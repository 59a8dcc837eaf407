//! AlterConfigs (key 33), v0–v2, and IncrementalAlterConfigs (key 44),
//! v0–v1 (KIP-339: SET, DELETE, APPEND, SUBTRACT). Topic configs are
//! validated (INVALID_CONFIG naming the key and the allowed values),
//! persisted and applied by every shard without a restart. Broker configs
//! are static (read from `server.properties` and flags): altering them is
//! refused with INVALID_REQUEST, except an IncrementalAlterConfigs of DELETE
//! operations only, which has nothing to delete and succeeds.

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse as IncResponse;
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::describe_configs::{RESOURCE_BROKER, RESOURCE_TOPIC};
use super::group_configs::RESOURCE_GROUP;
use super::{ask_controller, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType, CLUSTER_NAME};
use crate::cluster::control::{ControllerReply, ControllerRequest};
use crate::cluster::error::MetadataError;
use crate::cluster::error::{InvalidConfig, InvalidRequest};
use crate::cluster::topic_config::{self, ConfigType};
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;
const OP_APPEND: i8 = 2;
const OP_SUBTRACT: i8 = 3;

/// Applies KIP-339 operations to a topic's current overrides.
fn incremental(
    current: &BTreeMap<String, String>,
    ops: &[(String, i8, Option<String>)],
) -> Result<BTreeMap<String, String>, MetadataError> {
    let mut next = current.clone();
    for (name, op, value) in ops {
        let d = topic_config::def(name).ok_or_else(|| InvalidConfig::UnknownKey {
            key: name.clone(),
            list_supported: false,
        })?;
        let list_op = || -> Result<Vec<String>, MetadataError> {
            if d.ty != ConfigType::List {
                return Err(InvalidConfig::NotAList { key: name.clone() }.into());
            }
            let cur = next
                .get(name.as_str())
                .cloned()
                .unwrap_or_else(|| d.default.to_string());
            Ok(cur
                .split(',')
                .map(|x| x.trim().to_string())
                .filter(|x| !x.is_empty())
                .collect())
        };
        match *op {
            OP_SET => {
                let v = value
                    .clone()
                    .ok_or_else(|| InvalidConfig::SetWithoutValue { key: name.clone() })?;
                next.insert(name.clone(), v);
            }
            OP_DELETE => {
                next.remove(name.as_str());
            }
            OP_APPEND => {
                let mut items = list_op()?;
                for v in value
                    .as_deref()
                    .unwrap_or("")
                    .split(',')
                    .map(str::trim)
                    .filter(|x| !x.is_empty())
                {
                    if !items.iter().any(|i| i == v) {
                        items.push(v.to_string());
                    }
                }
                next.insert(name.clone(), items.join(","));
            }
            OP_SUBTRACT => {
                let remove: Vec<&str> = value
                    .as_deref()
                    .unwrap_or("")
                    .split(',')
                    .map(str::trim)
                    .collect();
                let items: Vec<String> = list_op()?
                    .into_iter()
                    .filter(|i| !remove.contains(&i.as_str()))
                    .collect();
                next.insert(name.clone(), items.join(","));
            }
            other => return Err(InvalidRequest::UnknownConfigOperation { operation: other }.into()),
        }
    }
    Ok(next)
}

async fn alter_topic(
    shard: &Rc<Shard>,
    topic: String,
    change: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, MetadataError>
        + Send
        + 'static,
    validate_only: bool,
) -> Result<(), MetadataError> {
    // The change is computed against this broker's image: the controller
    // replaces the whole set (AlterConfigs semantics).
    let current = shard
        .metadata()
        .topic(&topic)
        .map(|t| t.configs.clone())
        .ok_or(MetadataError::UnknownTopicOrPartition)?;
    let configs = change(&current)?;
    match ask_controller(
        shard,
        ControllerRequest::AlterTopicConfigs {
            topic,
            configs,
            validate_only,
        },
    )
    .await?
    {
        ControllerReply::AlterTopicConfigs(r) => r,
        _ => Err(crate::cluster::error::ControllerCallError::UnexpectedReply.into()),
    }
}

/// Kafka's check (ControllerApis.authorizeAlterResource): ALTER_CONFIGS
/// on the cluster for a broker, on the topic for a topic; the refusal's
/// code (CLUSTER_ / TOPIC_AUTHORIZATION_FAILED) when refused.
fn refused(access: &Access, resource_type: i8, name: &str) -> Option<i16> {
    let denied = match resource_type {
        RESOURCE_TOPIC => access.check(Operation::AlterConfigs, ResourceType::Topic, name),
        RESOURCE_GROUP => access.check(Operation::AlterConfigs, ResourceType::Group, name),
        RESOURCE_BROKER => {
            access.check(Operation::AlterConfigs, ResourceType::Cluster, CLUSTER_NAME)
        }
        _ => Ok(()),
    };
    denied.err().map(|d| d.code())
}

fn outcome(resource_type: i8, r: Result<(), MetadataError>) -> (i16, Option<StrBytes>) {
    match (resource_type, r) {
        (_, Ok(())) => (0, None),
        // A group's refusals read as Kafka 4.4's texts, without this
        // broker's "invalid config: " prefix.
        (RESOURCE_GROUP, Err(MetadataError::InvalidConfig(c))) => (
            MetadataError::InvalidConfig(c.clone()).code(),
            Some(StrBytes::from_string(c.to_string())),
        ),
        (RESOURCE_GROUP, Err(MetadataError::InvalidRequest(r))) => (
            MetadataError::InvalidRequest(r.clone()).code(),
            Some(StrBytes::from_string(r.to_string())),
        ),
        (_, Err(e)) => (e.code(), Some(StrBytes::from_string(e.to_string()))),
    }
}

/// Answers AlterConfigs (replaces a topic's whole override set).
pub async fn handle_alter(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: AlterConfigsRequest = frame.decode()?;
    let mut resp = AlterConfigsResponse::default();
    let access = Access::of(shard, frame);
    for r in &req.resources {
        if let Some(code) = refused(&access, r.resource_type, &r.resource_name) {
            let mut out = AlterConfigsResourceResponse::default();
            out.error_code = code;
            out.resource_type = r.resource_type;
            out.resource_name = r.resource_name.clone();
            resp.responses.push(out);
            continue;
        }
        let result = match r.resource_type {
            RESOURCE_TOPIC => {
                let configs: BTreeMap<String, String> = r
                    .configs
                    .iter()
                    .filter_map(|c| {
                        c.value
                            .as_ref()
                            .map(|v| (c.name.to_string(), v.to_string()))
                    })
                    .collect();
                alter_topic(
                    shard,
                    r.resource_name.to_string(),
                    move |_| Ok(configs),
                    req.validate_only,
                )
                .await
            }
            RESOURCE_GROUP => {
                let configs = r
                    .configs
                    .iter()
                    .map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string())))
                    .collect();
                super::group_configs::alter_whole(
                    shard,
                    r.resource_name.to_string(),
                    configs,
                    req.validate_only,
                )
                .await
            }
            RESOURCE_BROKER => Err(InvalidRequest::StaticBrokerConfigs.into()),
            other => Err(InvalidRequest::UnsupportedResourceType {
                resource_type: other,
            }
            .into()),
        };
        let (code, msg) = outcome(r.resource_type, result);
        let mut out = AlterConfigsResourceResponse::default();
        out.error_code = code;
        out.error_message = msg;
        out.resource_type = r.resource_type;
        out.resource_name = r.resource_name.clone();
        resp.responses.push(out);
    }
    Ok(respond(frame, &resp))
}

/// Answers IncrementalAlterConfigs.
pub async fn handle_incremental(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: IncrementalAlterConfigsRequest = frame.decode()?;
    let mut resp = IncrementalAlterConfigsResponse::default();
    let access = Access::of(shard, frame);
    for r in &req.resources {
        if let Some(code) = refused(&access, r.resource_type, &r.resource_name) {
            let mut out = IncResponse::default();
            out.error_code = code;
            out.resource_type = r.resource_type;
            out.resource_name = r.resource_name.clone();
            resp.responses.push(out);
            continue;
        }
        let result = match r.resource_type {
            RESOURCE_TOPIC => {
                let ops = incremental_ops(r);
                alter_topic(
                    shard,
                    r.resource_name.to_string(),
                    move |cur| incremental(cur, &ops),
                    req.validate_only,
                )
                .await
            }
            RESOURCE_GROUP => {
                let ops = incremental_ops(r);
                super::group_configs::alter_incremental(
                    shard,
                    r.resource_name.to_string(),
                    ops,
                    req.validate_only,
                )
                .await
            }
            // Deleting broker configs nobody set dynamically changes
            // nothing, and succeeds as on Kafka: `kafka-reassign-partitions
            // --verify` clears the replication throttles this way.
            RESOURCE_BROKER if r.configs.iter().all(|c| c.config_operation == OP_DELETE) => Ok(()),
            RESOURCE_BROKER => Err(InvalidRequest::StaticBrokerConfigs.into()),
            other => Err(InvalidRequest::UnsupportedResourceType {
                resource_type: other,
            }
            .into()),
        };
        let (code, msg) = outcome(r.resource_type, result);
        let mut out = IncResponse::default();
        out.error_code = if code == 0 { codes::NONE } else { code };
        out.error_message = msg;
        out.resource_type = r.resource_type;
        out.resource_name = r.resource_name.clone();
        resp.responses.push(out);
    }
    Ok(respond(frame, &resp))
}

/// An IncrementalAlterConfigs resource's (name, operation, value) list, as
/// the topic and group config paths take it.
fn incremental_ops(
    r: &kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource,
) -> Vec<(String, i8, Option<String>)> {
    r.configs
        .iter()
        .map(|c| {
            (
                c.name.to_string(),
                c.config_operation,
                c.value.as_ref().map(|v| v.to_string()),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kip339_operations() {
        let mut cur = BTreeMap::new();
        cur.insert("retention.ms".to_string(), "1000".to_string());
        let next = incremental(
            &cur,
            &[
                ("cleanup.policy".into(), OP_APPEND, Some("compact".into())),
                ("retention.ms".into(), OP_DELETE, None),
                ("segment.bytes".into(), OP_SET, Some("2048".into())),
            ],
        )
        .unwrap();
        assert_eq!(
            next.get("cleanup.policy").map(String::as_str),
            Some("delete,compact")
        );
        assert!(!next.contains_key("retention.ms"));
        let next = incremental(
            &next,
            &[("cleanup.policy".into(), OP_SUBTRACT, Some("delete".into()))],
        )
        .unwrap();
        assert_eq!(
            next.get("cleanup.policy").map(String::as_str),
            Some("compact")
        );
        assert!(incremental(
            &next,
            &[("segment.bytes".into(), OP_APPEND, Some("1".into()))]
        )
        .is_err());
    }
}
