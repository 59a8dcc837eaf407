//! `fjord configs describe | alter`, the operations of Kafka's
//! `kafka-configs.sh`: topic, broker and group configs through
//! DescribeConfigs / IncrementalAlterConfigs, user and client-id quotas
//! through DescribeClientQuotas / AlterClientQuotas (KIP-546).

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use serde_json::{json, Value};

use super::client::{ClientError, Connection};
use super::output::{table, Report};

/// A config resource type, with Kafka's codes (`ConfigResource.Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceType {
    /// A topic (2).
    Topic,
    /// A broker (4); the name is the broker id, empty for the cluster-wide
    /// default.
    Broker,
    /// A consumer or share group (32, KIP-848).
    Group,
}

impl ResourceType {
    /// Gives the Kafka code of the type.
    pub fn code(self) -> i8 {
        match self {
            ResourceType::Topic => 2,
            ResourceType::Broker => 4,
            ResourceType::Group => 32,
        }
    }
}

/// The `--entity-type` of `fjord configs`, as `kafka-configs.sh` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EntityType {
    /// Topic configs.
    Topics,
    /// Broker configs (`--entity-name` a broker id; `--entity-default` for
    /// the cluster-wide default).
    Brokers,
    /// Group configs (KIP-848).
    Groups,
    /// User quotas (`--entity-name` a principal name; `--entity-default`
    /// for the default user).
    Users,
    /// Client-id quotas.
    Clients,
}

/// One config entry as DescribeConfigs gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigEntry {
    /// Config name (Kafka's key).
    pub name: String,
    /// Value; None when sensitive or unset.
    pub value: Option<String>,
    /// Kafka's `ConfigSource` name (DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG, …).
    pub source: &'static str,
    /// Whether the value is hidden (passwords).
    pub sensitive: bool,
    /// Whether it cannot be altered.
    pub read_only: bool,
}

/// Takes a DescribeConfigs source code; gives Kafka's name for it.
pub fn source_name(code: i8) -> &'static str {
    match code {
        1 => "DYNAMIC_TOPIC_CONFIG",
        2 => "DYNAMIC_BROKER_CONFIG",
        3 => "DYNAMIC_DEFAULT_BROKER_CONFIG",
        4 => "STATIC_BROKER_CONFIG",
        5 => "DEFAULT_CONFIG",
        6 => "DYNAMIC_BROKER_LOGGER_CONFIG",
        7 => "CLIENT_METRICS_CONFIG",
        8 => "GROUP_CONFIG",
        _ => "UNKNOWN",
    }
}

fn is_override(source: &str) -> bool {
    matches!(
        source,
        "DYNAMIC_TOPIC_CONFIG"
            | "DYNAMIC_BROKER_CONFIG"
            | "DYNAMIC_DEFAULT_BROKER_CONFIG"
            | "DYNAMIC_BROKER_LOGGER_CONFIG"
            | "CLIENT_METRICS_CONFIG"
            | "GROUP_CONFIG"
    )
}

/// Takes a resource and whether to give every config (else only the
/// dynamic overrides, as `kafka-configs.sh --describe` without `--all`);
/// gives its config entries, sorted by name (DescribeConfigs).
pub fn describe(
    c: &mut Connection,
    rt: ResourceType,
    name: &str,
    all: bool,
) -> Result<Vec<ConfigEntry>, ClientError> {
    let v = c.version(ApiKey::DescribeConfigs, 4)?;
    let mut r = describe_configs_request::DescribeConfigsResource::default();
    r.resource_type = rt.code();
    r.resource_name = StrBytes::from_string(name.to_string());
    r.configuration_keys = None;
    let mut req = DescribeConfigsRequest::default();
    req.resources = vec![r];
    let resp: DescribeConfigsResponse = c.send(ApiKey::DescribeConfigs, v, &req)?;
    let res = resp
        .results
        .first()
        .ok_or_else(|| ClientError::Protocol("DescribeConfigs: no result".into()))?;
    ClientError::check(
        format!("describe configs of {name}"),
        res.error_code,
        res.error_message.as_ref(),
    )?;
    let mut out: Vec<ConfigEntry> = res
        .configs
        .iter()
        .map(|e| ConfigEntry {
            name: e.name.to_string(),
            value: e.value.as_ref().map(|v| v.to_string()),
            source: source_name(e.config_source),
            sensitive: e.is_sensitive,
            read_only: e.read_only,
        })
        .filter(|e| all || is_override(e.source))
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Takes a resource, configs to set and config names to delete; applies
/// them (IncrementalAlterConfigs: SET and DELETE operations).
pub fn alter(
    c: &mut Connection,
    rt: ResourceType,
    name: &str,
    set: &[(String, String)],
    delete: &[String],
) -> Result<(), ClientError> {
    let v = c.version(ApiKey::IncrementalAlterConfigs, 1)?;
    let mut r = incremental_alter_configs_request::AlterConfigsResource::default();
    r.resource_type = rt.code();
    r.resource_name = StrBytes::from_string(name.to_string());
    for (k, val) in set {
        let mut a = incremental_alter_configs_request::AlterableConfig::default();
        a.name = StrBytes::from_string(k.clone());
        a.config_operation = 0;
        a.value = Some(StrBytes::from_string(val.clone()));
        r.configs.push(a);
    }
    for k in delete {
        let mut a = incremental_alter_configs_request::AlterableConfig::default();
        a.name = StrBytes::from_string(k.clone());
        a.config_operation = 1;
        a.value = None;
        r.configs.push(a);
    }
    let mut req = IncrementalAlterConfigsRequest::default();
    req.resources = vec![r];
    let resp: IncrementalAlterConfigsResponse = c.send(ApiKey::IncrementalAlterConfigs, v, &req)?;
    let res = resp
        .responses
        .first()
        .ok_or_else(|| ClientError::Protocol("IncrementalAlterConfigs: no result".into()))?;
    ClientError::check(
        format!("alter configs of {name}"),
        res.error_code,
        res.error_message.as_ref(),
    )
}

/// One quota entity and its values, as DescribeClientQuotas gives them.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaEntry {
    /// (entity type, name; None for the default), e.g. ("user", Some("alice")).
    pub entity: Vec<(String, Option<String>)>,
    /// Quota name → value (e.g. producer_byte_rate → 1048576).
    pub values: Vec<(String, f64)>,
}

fn quota_entity_type(t: EntityType) -> &'static str {
    match t {
        EntityType::Users => "user",
        _ => "client-id",
    }
}

/// Takes users or clients, a name (None: every entity of the type, or the
/// default with `default`); gives the quotas set (DescribeClientQuotas).
pub fn describe_quotas(
    c: &mut Connection,
    t: EntityType,
    name: Option<&str>,
    default: bool,
) -> Result<Vec<QuotaEntry>, ClientError> {
    let v = c.version(ApiKey::DescribeClientQuotas, 1)?;
    let mut comp = describe_client_quotas_request::ComponentData::default();
    comp.entity_type = StrBytes::from_static_str(quota_entity_type(t));
    // match_type: 0 exact name, 1 the default entity, 2 any named entity.
    match (name, default) {
        (Some(n), _) => {
            comp.match_type = 0;
            comp._match = Some(StrBytes::from_string(n.to_string()));
        }
        (None, true) => {
            comp.match_type = 1;
            comp._match = None;
        }
        (None, false) => {
            comp.match_type = 2;
            comp._match = None;
        }
    }
    let mut req = DescribeClientQuotasRequest::default();
    req.components = vec![comp];
    req.strict = false;
    let resp: DescribeClientQuotasResponse = c.send(ApiKey::DescribeClientQuotas, v, &req)?;
    ClientError::check(
        "describe client quotas",
        resp.error_code,
        resp.error_message.as_ref(),
    )?;
    Ok(resp
        .entries
        .unwrap_or_default()
        .into_iter()
        .map(|e| QuotaEntry {
            entity: e
                .entity
                .iter()
                .map(|d| {
                    (
                        d.entity_type.to_string(),
                        d.entity_name.as_ref().map(|n| n.to_string()),
                    )
                })
                .collect(),
            values: e
                .values
                .iter()
                .map(|v| (v.key.to_string(), v.value))
                .collect(),
        })
        .collect())
}

/// Takes users or clients, a name (None: the default entity), quotas to
/// set and quota names to remove; applies them (AlterClientQuotas).
pub fn alter_quotas(
    c: &mut Connection,
    t: EntityType,
    name: Option<&str>,
    set: &[(String, String)],
    delete: &[String],
) -> Result<(), ClientError> {
    let v = c.version(ApiKey::AlterClientQuotas, 1)?;
    let mut ent = alter_client_quotas_request::EntityData::default();
    ent.entity_type = StrBytes::from_static_str(quota_entity_type(t));
    ent.entity_name = name.map(|n| StrBytes::from_string(n.to_string()));
    let mut entry = alter_client_quotas_request::EntryData::default();
    entry.entity = vec![ent];
    for (k, val) in set {
        let value: f64 = val
            .parse()
            .map_err(|_| ClientError::Invalid(format!("quota {k}={val}: not a number")))?;
        let mut op = alter_client_quotas_request::OpData::default();
        op.key = StrBytes::from_string(k.clone());
        op.value = value;
        op.remove = false;
        entry.ops.push(op);
    }
    for k in delete {
        let mut op = alter_client_quotas_request::OpData::default();
        op.key = StrBytes::from_string(k.clone());
        op.remove = true;
        entry.ops.push(op);
    }
    let mut req = AlterClientQuotasRequest::default();
    req.entries = vec![entry];
    let resp: AlterClientQuotasResponse = c.send(ApiKey::AlterClientQuotas, v, &req)?;
    for e in &resp.entries {
        ClientError::check(
            "alter client quotas",
            e.error_code,
            e.error_message.as_ref(),
        )?;
    }
    Ok(())
}

/// Takes the resource shown and its entries; gives the `kafka-configs.sh`
/// style listing and JSON (`configs`: name → {value, source, sensitive,
/// read_only}).
pub fn configs_report(entity: &str, name: &str, entries: &[ConfigEntry]) -> Report {
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            vec![
                e.name.clone(),
                if e.sensitive {
                    "(sensitive)".into()
                } else {
                    e.value.clone().unwrap_or_else(|| "null".into())
                },
                e.source.to_string(),
            ]
        })
        .collect();
    let mut text = if name.is_empty() {
        // The cluster-wide default entity (`--entity-default`).
        format!("Default configs for {entity}s in the cluster:\n")
    } else {
        format!("Configs for {entity} '{name}':\n")
    };
    text.push_str(&table(&["NAME", "VALUE", "SOURCE"], &rows));
    let configs: serde_json::Map<String, Value> = entries
        .iter()
        .map(|e| {
            (
                e.name.clone(),
                json!({
                    "value": e.value,
                    "source": e.source,
                    "sensitive": e.sensitive,
                    "read_only": e.read_only,
                }),
            )
        })
        .collect();
    Report::new(
        json!({ "entity_type": entity, "entity_name": name, "configs": configs }),
        text,
    )
}

/// Takes quota entries; gives them a line each and as JSON (`quotas`: a
/// list of {entity: {type: name or null}, values: {key: value}}).
pub fn quotas_report(entries: &[QuotaEntry]) -> Report {
    let mut text = String::new();
    let mut docs = Vec::new();
    for e in entries {
        let ent = e
            .entity
            .iter()
            .map(|(t, n)| format!("{t}={}", n.as_deref().unwrap_or("<default>")))
            .collect::<Vec<_>>()
            .join(", ");
        let vals = e
            .values
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ");
        text.push_str(&format!("Quota configs for {ent} are {vals}\n"));
        docs.push(json!({
            "entity": e.entity.iter().map(|(t, n)| (t.clone(), json!(n))).collect::<serde_json::Map<String, Value>>(),
            "values": e.values.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<String, Value>>(),
        }));
    }
    Report::new(json!({ "quotas": docs }), text)
}
