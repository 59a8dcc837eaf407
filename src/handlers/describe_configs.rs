//! DescribeConfigs (key 32), v1–v4: a topic's configs (every Kafka 4.x topic
//! config) with value, source (topic override, broker setting or Kafka
//! default), synonyms (v1+ when asked: Kafka's broker keys as Kafka reports
//! them, see `topic_config::synonyms_of`), type and documentation (v3+); a
//! broker's settings (read-only: they come from `server.properties` and
//! flags); a group's configs (KIP-848, resource type 32: see
//! `group_configs`).

use std::rc::Rc;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::group_configs::RESOURCE_GROUP;
use super::{respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType, CLUSTER_NAME};
use crate::cluster::topic_config::{
    broker_key_entries, synonyms_of, value_of, ConfigSource, TOPIC_CONFIGS,
};
use crate::config::broker_def;
use crate::config::topic_defs::ConfigType;
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Kafka's resource types.
pub const RESOURCE_TOPIC: i8 = 2;
/// Kafka's resource types.
pub const RESOURCE_BROKER: i8 = 4;

fn s(v: impl Into<String>) -> StrBytes {
    StrBytes::from_string(v.into())
}

/// Answers DescribeConfigs.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: DescribeConfigsRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let image = shard.metadata();
    let cfg = &shard.config;
    let mut resp = DescribeConfigsResponse::default();
    // Kafka's checks (ConfigHelper): DESCRIBE_CONFIGS on the cluster for a
    // broker, on the topic for a topic (CLUSTER_ / TOPIC_AUTHORIZATION_FAILED).
    let access = Access::of(shard, frame);
    for r in &req.resources {
        let mut out = DescribeConfigsResult::default();
        out.resource_type = r.resource_type;
        out.resource_name = r.resource_name.clone();
        let refused = match r.resource_type {
            RESOURCE_TOPIC => access
                .check(
                    Operation::DescribeConfigs,
                    ResourceType::Topic,
                    &r.resource_name,
                )
                .err(),
            RESOURCE_BROKER => access
                .check(
                    Operation::DescribeConfigs,
                    ResourceType::Cluster,
                    CLUSTER_NAME,
                )
                .err(),
            RESOURCE_GROUP => access
                .check(
                    Operation::DescribeConfigs,
                    ResourceType::Group,
                    &r.resource_name,
                )
                .err(),
            _ => None,
        };
        if let Some(d) = refused {
            out.error_code = d.code();
            resp.results.push(out);
            continue;
        }
        let wanted = |name: &str| {
            r.configuration_keys
                .as_ref()
                .is_none_or(|keys| keys.iter().any(|k| k.as_str() == name))
        };
        match r.resource_type {
            RESOURCE_TOPIC => match image.topic(r.resource_name.as_str()) {
                None => {
                    out.error_code = codes::UNKNOWN_TOPIC_OR_PARTITION;
                    out.error_message =
                        Some(s(format!("topic {} does not exist", r.resource_name)));
                }
                Some(t) => {
                    for d in TOPIC_CONFIGS.iter().filter(|d| wanted(d.name)) {
                        let (value, source) = value_of(cfg, &t.configs, d);
                        let mut e = DescribeConfigsResourceResult::default();
                        e.name = s(d.name);
                        e.value = Some(s(value));
                        e.config_source = source as i8;
                        if req.include_synonyms {
                            for (name, value, source) in synonyms_of(cfg, &t.configs, d) {
                                let mut syn = DescribeConfigsSynonym::default();
                                syn.name = s(name);
                                syn.value = Some(s(value));
                                syn.source = source as i8;
                                e.synonyms.push(syn);
                            }
                        }
                        if version >= 3 {
                            e.config_type = d.ty as i8;
                            if req.include_documentation {
                                e.documentation = Some(s(d.doc));
                            }
                        }
                        out.configs.push(e);
                    }
                }
            },
            RESOURCE_BROKER => {
                let me = cfg.node_id.to_string();
                if !r.resource_name.is_empty() && r.resource_name.as_str() != me {
                    out.error_code = codes::INVALID_REQUEST;
                    out.error_message =
                        Some(s(format!("this is broker {me}, not {}", r.resource_name)));
                } else {
                    for (k, v) in cfg.describe() {
                        if !wanted(k) {
                            continue;
                        }
                        let mut e = DescribeConfigsResourceResult::default();
                        e.name = s(k);
                        e.value = v.map(s);
                        // BROKER_CONFIGS says which keys may change at run
                        // time; none may today.
                        e.read_only = broker_def(k).is_none_or(|d| !d.dynamic);
                        // As Kafka's ConfigHelper: the source of its first
                        // synonym, STATIC_BROKER_CONFIG when given in
                        // `server.properties` (or a flag), else
                        // DEFAULT_CONFIG (also for a key without a default).
                        let given = cfg.given_keys.contains(k);
                        e.config_source = if given {
                            ConfigSource::StaticBroker as i8
                        } else {
                            ConfigSource::Default as i8
                        };
                        let def = broker_def(k);
                        if req.include_synonyms {
                            // STATIC as given, then the default, as Kafka
                            // lists a broker key's own synonyms.
                            if given {
                                let mut syn = DescribeConfigsSynonym::default();
                                syn.name = s(k);
                                syn.value = e.value.clone();
                                syn.source = ConfigSource::StaticBroker as i8;
                                e.synonyms.push(syn);
                            }
                            if let Some(default) = def.and_then(|d| d.default) {
                                let mut syn = DescribeConfigsSynonym::default();
                                syn.name = s(k);
                                syn.value = Some(s(default));
                                syn.source = ConfigSource::Default as i8;
                                e.synonyms.push(syn);
                            }
                        }
                        if version >= 3 {
                            e.config_type = def.map_or(ConfigType::String as i8, |d| d.ty as i8);
                        }
                        out.configs.push(e);
                    }
                    // The security keys given (`ssl.*`, `sasl.*`, the
                    // authorizer, per-listener keys): STATIC_BROKER_CONFIG,
                    // a secret sensitive and without its value, as Kafka.
                    for (name, value, sensitive) in cfg.security.given() {
                        if !wanted(&name) {
                            continue;
                        }
                        let shown = (!sensitive).then(|| s(value));
                        let mut e = DescribeConfigsResourceResult::default();
                        e.name = s(name.clone());
                        e.value = shown.clone();
                        e.read_only = true;
                        e.is_sensitive = sensitive;
                        e.config_source = ConfigSource::StaticBroker as i8;
                        if req.include_synonyms {
                            let mut syn = DescribeConfigsSynonym::default();
                            syn.name = s(name);
                            syn.value = shown;
                            syn.source = ConfigSource::StaticBroker as i8;
                            e.synonyms.push(syn);
                        }
                        if version >= 3 {
                            e.config_type = if sensitive {
                                ConfigType::Password as i8
                            } else {
                                ConfigType::String as i8
                            };
                        }
                        out.configs.push(e);
                    }
                    for b in broker_key_entries(cfg)
                        .into_iter()
                        .filter(|b| wanted(b.name))
                    {
                        let mut e = DescribeConfigsResourceResult::default();
                        e.name = s(b.name);
                        e.value = b.value.map(s);
                        e.read_only = true;
                        e.config_source = b.source as i8;
                        if req.include_synonyms {
                            for (name, value, source) in b.synonyms {
                                let mut syn = DescribeConfigsSynonym::default();
                                syn.name = s(name);
                                syn.value = Some(s(value));
                                syn.source = source as i8;
                                e.synonyms.push(syn);
                            }
                        }
                        if version >= 3 {
                            e.config_type = b.ty as i8;
                        }
                        out.configs.push(e);
                    }
                    out.configs.sort_by(|a, b| a.name.cmp(&b.name));
                }
            }
            RESOURCE_GROUP => {
                out = super::group_configs::describe(
                    shard,
                    version,
                    r,
                    req.include_synonyms,
                    req.include_documentation,
                );
            }
            other => {
                out.error_code = codes::INVALID_REQUEST;
                out.error_message = Some(s(format!("resource type {other} is not supported")));
            }
        }
        resp.results.push(out);
    }
    Ok(respond(frame, &resp))
}
