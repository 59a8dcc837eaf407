//! The GROUP config resource (type 32, KIP-848's group configs) of
//! DescribeConfigs and IncrementalAlterConfigs: decoding the resource,
//! routing to `group::configs` and the controller, encoding the answer
//! (AlterConfigs, the legacy request, replaces a group's whole set).
//! Kafka 4.4 answers any group id (the group need not exist); the default
//! group (an empty name) may not be altered.

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::protocol::StrBytes;

use super::ask_controller;
use crate::cluster::control::{ControllerReply, ControllerRequest};
use crate::cluster::error::MetadataError;
use crate::cluster::topic_config::ConfigType;
use crate::group::configs;
use crate::shard::Shard;

/// Kafka's GROUP config resource type.
pub const RESOURCE_GROUP: i8 = 32;

fn s(v: impl Into<String>) -> StrBytes {
    StrBytes::from_string(v.into())
}

/// DescribeConfigs of one group: every group config (or the keys asked
/// for), by name, with value, source (GROUP_CONFIG 8, STATIC_BROKER_CONFIG
/// 4, DEFAULT_CONFIG 5), synonyms when asked, type and documentation (v3+).
/// Error code 0 with an empty message, as Kafka 4.4 answers.
pub fn describe(
    shard: &Shard,
    version: i16,
    r: &DescribeConfigsResource,
    include_synonyms: bool,
    include_documentation: bool,
) -> DescribeConfigsResult {
    let image = shard.metadata();
    let overrides = image.group_configs.get(r.resource_name.as_str());
    let mut out = DescribeConfigsResult::default();
    out.resource_type = r.resource_type;
    out.resource_name = r.resource_name.clone();
    out.error_message = Some(s(""));
    let wanted = |name: &str| {
        r.configuration_keys
            .as_ref()
            .is_none_or(|keys| keys.iter().any(|k| k.as_str() == name))
    };
    for c in configs::describe(&shard.config.group, &shard.config.given_keys, overrides)
        .into_iter()
        .filter(|c| wanted(c.def.name))
    {
        let mut e = DescribeConfigsResourceResult::default();
        e.name = s(c.def.name);
        e.value = Some(s(c.value));
        e.config_source = c.source as i8;
        if include_synonyms {
            for (name, value, source) in c.synonyms {
                let mut syn = DescribeConfigsSynonym::default();
                syn.name = s(name);
                syn.value = Some(s(value));
                syn.source = source as i8;
                e.synonyms.push(syn);
            }
        }
        if version >= 3 {
            e.config_type = if c.def.is_int() {
                ConfigType::Int
            } else if c.def.is_bool() {
                ConfigType::Boolean
            } else {
                ConfigType::String
            } as i8;
            if include_documentation {
                e.documentation = Some(s(c.def.doc));
            }
        }
        out.configs.push(e);
    }
    out
}

/// IncrementalAlterConfigs of one group: KIP-339's `ops` (key, operation,
/// value) checked by [`configs::alter`] against this broker's settings,
/// then the full new set sent to the controller, which writes the
/// ConfigRecords (GROUP resource) to the metadata log. Errors:
/// INVALID_CONFIG and INVALID_REQUEST with Kafka's texts, or the
/// controller call's.
pub async fn alter_incremental(
    shard: &Rc<Shard>,
    group: String,
    ops: Vec<(String, i8, Option<String>)>,
    validate_only: bool,
) -> Result<(), MetadataError> {
    let empty = BTreeMap::new();
    let image = shard.metadata();
    let current = image.group_configs.get(&group).unwrap_or(&empty);
    let configs = configs::alter(&shard.config.group, &group, current, &ops)?;
    store(shard, group, configs, validate_only).await
}

/// AlterConfigs (the legacy request) of one group: `configs` (key, value;
/// a key without a value is left out, as for topics) replace the group's
/// whole set, checked as [`alter_incremental`] checks them.
pub async fn alter_whole(
    shard: &Rc<Shard>,
    group: String,
    configs: Vec<(String, Option<String>)>,
    validate_only: bool,
) -> Result<(), MetadataError> {
    let ops: Vec<(String, i8, Option<String>)> = configs
        .into_iter()
        .filter(|(_, v)| v.is_some())
        .map(|(k, v)| (k, configs::OP_SET, v))
        .collect();
    let configs = configs::alter(&shard.config.group, &group, &BTreeMap::new(), &ops)?;
    store(shard, group, configs, validate_only).await
}

/// Sends `group`'s new set of overrides to the controller.
async fn store(
    shard: &Rc<Shard>,
    group: String,
    configs: BTreeMap<String, String>,
    validate_only: bool,
) -> Result<(), MetadataError> {
    match ask_controller(
        shard,
        ControllerRequest::AlterGroupConfigs {
            group,
            configs,
            validate_only,
        },
    )
    .await?
    {
        ControllerReply::AlterGroupConfigs => Ok(()),
        _ => Err(crate::cluster::error::ControllerCallError::UnexpectedReply.into()),
    }
}
