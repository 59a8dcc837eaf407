//! The table of broker configs ([`BROKER_CONFIGS`]): Kafka key, type,
//! default, allowed values, description, whether it can change at run time,
//! how DescribeConfigs reports it, and the [`Config`] field it sets. The
//! table is the one source of the broker's keys: [`Config::set`] validates
//! and applies a value through it, `impl Default for Config` takes its
//! defaults from it and [`Config::describe`] lists the keys it marks
//! [`Describe::Own`]. The broker keys of topic configs (`log.retention.ms`,
//! …) are the synonym columns of [`TOPIC_CONFIGS`](super::TOPIC_CONFIGS);
//! the few of them that also set a broker field (`message.max.bytes`,
//! `log.segment.bytes`, …) are in both tables, marked
//! [`Describe::TopicSynonym`].

use std::net::SocketAddr;
use std::path::PathBuf;

use super::topic_defs::ConfigType as T;
use super::{invalid, kraft, parse_listeners, resolve, AdvertisedListener, Config, ConfigError};
use crate::storage::TimestampType;

const I32MAX: i64 = i32::MAX as i64;
const I64MAX: i64 = i64::MAX;
const I64MAX_STR: &str = "9223372036854775807";
const MS_PER_HOUR: i64 = 3_600_000;
const MS_PER_MINUTE: i64 = 60_000;

/// How DescribeConfigs on the broker resource reports a broker config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Describe {
    /// Reported by itself: its current value (a null value when it has
    /// none, as Kafka), STATIC_BROKER_CONFIG (4) when given in
    /// `server.properties` or a flag, else DEFAULT_CONFIG (5), read-only
    /// unless [`BrokerConfigDef::dynamic`].
    Own,
    /// A broker key of a topic config: reported with that topic config's
    /// synonyms, by `cluster::topic_config::broker_key_entries`.
    TopicSynonym,
    /// Not reported (why): Fjord's own settings, and keys Kafka has no
    /// broker config for.
    Hidden(&'static str),
}

/// The allowed values of a broker config and the [`Config`] field a valid
/// value is stored in.
#[derive(Debug, Clone, Copy)]
pub enum Field {
    /// An integer in `[min, max]` (inclusive); anything else is rejected
    /// with "an integer in [min, max]".
    Int {
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
        /// Stores a valid value.
        set: fn(&mut Config, i64),
    },
    /// `true` or `false`, in any case; anything else is rejected with
    /// "true or false".
    Bool {
        /// Stores a valid value.
        set: fn(&mut Config, bool),
    },
    /// One of these strings, exactly; anything else is rejected with the
    /// values joined by "or".
    OneOf {
        /// Accepted values.
        values: &'static [&'static str],
        /// Stores a valid value.
        set: fn(&mut Config, &str),
    },
    /// Free-form text parsed by `set` (listeners, directories, addresses),
    /// which gives the [`ConfigError::Invalid`] itself.
    Text {
        /// What is accepted, for documentation.
        allowed: &'static str,
        /// Parses and stores a value; errors name the key and value.
        set: fn(&mut Config, &str, &str) -> Result<(), ConfigError>,
    },
}

/// One broker config.
#[derive(Debug)]
pub struct BrokerConfigDef {
    /// Kafka's property name (`num.partitions`); Fjord's own keys are
    /// marked in [`doc`](Self::doc).
    pub name: &'static str,
    /// Kafka's type of the key.
    pub ty: T,
    /// The default as Kafka writes it; None when the key has none of its own
    /// (an alias, or a key whose field stays unset or takes its value from
    /// another key).
    pub default: Option<&'static str>,
    /// Allowed values and the field a value sets.
    pub field: Field,
    /// What it does.
    pub doc: &'static str,
    /// Whether it may change at run time (Kafka's dynamic broker configs);
    /// false for every key today: all come from `server.properties` and
    /// flags.
    pub dynamic: bool,
    /// How DescribeConfigs reports it on the broker resource.
    pub describe: Describe,
    /// The current value as DescribeConfigs reports it; None when unset.
    pub get: fn(&Config) -> Option<String>,
}

impl BrokerConfigDef {
    /// Validates `value` for this key and stores it in `c`; an invalid
    /// value gives [`ConfigError::Invalid`] naming the key, the value and
    /// what is allowed.
    pub fn apply(&self, c: &mut Config, value: &str) -> Result<(), ConfigError> {
        let key = self.name;
        match self.field {
            Field::Int { min, max, set } => {
                let allowed = format!("an integer in [{min}, {max}]");
                let v: i64 = value.parse().map_err(|_| invalid(key, value, &allowed))?;
                if v < min || v > max {
                    return Err(invalid(key, value, &allowed));
                }
                set(c, v);
            }
            Field::Bool { set } => match value.to_ascii_lowercase().as_str() {
                "true" => set(c, true),
                "false" => set(c, false),
                _ => return Err(invalid(key, value, "true or false")),
            },
            Field::OneOf { values, set } => {
                if !values.contains(&value) {
                    return Err(invalid(key, value, &values.join(" or ")));
                }
                set(c, value);
            }
            Field::Text { set, .. } => set(c, key, value)?,
        }
        Ok(())
    }
}

/// The definition of broker key `name`.
pub fn broker_def(name: &str) -> Option<&'static BrokerConfigDef> {
    BROKER_CONFIGS.iter().find(|d| d.name == name)
}

// Integer fields: the table's range is checked before `set`, so every
// conversion below is lossless for the range its entry gives.
fn to_i32(v: i64) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}
fn to_i16(v: i64) -> i16 {
    i16::try_from(v).unwrap_or(i16::MAX)
}

fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}
fn to_u32(v: i64) -> u32 {
    u32::try_from(v).unwrap_or(0)
}
fn to_usize(v: i64) -> usize {
    usize::try_from(v).unwrap_or(0)
}

fn set_rack(c: &mut Config, _key: &str, value: &str) -> Result<(), ConfigError> {
    let v = value.trim();
    c.cluster.rack = (!v.is_empty()).then(|| v.to_string());
    Ok(())
}

fn set_dlq_prefix(c: &mut Config, _key: &str, value: &str) -> Result<(), ConfigError> {
    c.group.dlq_topic_name_prefix = value.trim().to_string();
    Ok(())
}

fn some(v: impl ToString) -> Option<String> {
    Some(v.to_string())
}

/// A LIST config's value as Kafka reports it: the items, trimmed, joined
/// by commas, in the order given.
fn list_text(value: &str) -> String {
    value
        .trim()
        .split(',')
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(",")
}

fn set_listeners(c: &mut Config, key: &str, value: &str) -> Result<(), ConfigError> {
    c.listeners = parse_listeners(key, value)?;
    c.given_text.listeners = list_text(value);
    Ok(())
}

fn set_advertised(c: &mut Config, key: &str, value: &str) -> Result<(), ConfigError> {
    let mut out: Vec<AdvertisedListener> = Vec::new();
    for l in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, hp) = l.split_once("://").unwrap_or(("PLAINTEXT", l));
        let (h, p) = hp
            .rsplit_once(':')
            .ok_or_else(|| invalid(key, value, "PLAINTEXT://host:port"))?;
        let allowed = format!("an integer in [1, {}]", u16::MAX);
        let port: u16 = p.parse().map_err(|_| invalid(key, p, &allowed))?;
        if port < 1 {
            return Err(invalid(key, p, &allowed));
        }
        let name = name.to_ascii_uppercase();
        if out.iter().any(|a| a.name == name) {
            return Err(invalid(key, value, "each listener name once"));
        }
        out.push(AdvertisedListener {
            name,
            host: h.to_string(),
            port,
        });
    }
    if out.is_empty() {
        return Err(invalid(key, value, "PLAINTEXT://host:port"));
    }
    c.advertised_listeners = out;
    c.given_text.advertised_listeners = Some(list_text(value));
    Ok(())
}

fn set_process_roles(c: &mut Config, key: &str, value: &str) -> Result<(), ConfigError> {
    c.kraft.process_roles = Some(kraft::parse_process_roles(key, value)?);
    c.given_text.process_roles = Some(list_text(value));
    Ok(())
}

fn set_voters(c: &mut Config, key: &str, value: &str) -> Result<(), ConfigError> {
    c.kraft.voters = kraft::parse_voters(key, value)?;
    Ok(())
}

fn set_bootstrap_servers(c: &mut Config, key: &str, value: &str) -> Result<(), ConfigError> {
    c.kraft.bootstrap_servers = kraft::parse_host_ports(key, value)?;
    Ok(())
}

fn set_controller_listener_names(
    c: &mut Config,
    key: &str,
    value: &str,
) -> Result<(), ConfigError> {
    c.kraft.controller_listener_names = kraft::parse_listener_names(key, value)?;
    c.given_text.controller_listener_names =
        (!c.kraft.controller_listener_names.is_empty()).then(|| list_text(value));
    Ok(())
}

fn set_protocol_map(c: &mut Config, key: &str, value: &str) -> Result<(), ConfigError> {
    // An empty value is the unset key: Kafka's default map.
    let map = kraft::parse_protocol_map(key, value)?;
    c.given_text.protocol_map = (!map.is_empty()).then(|| value.trim().to_string());
    c.kraft.protocol_map = (!map.is_empty()).then_some(map);
    Ok(())
}

fn set_inter_broker_name(c: &mut Config, key: &str, value: &str) -> Result<(), ConfigError> {
    c.kraft.inter_broker_listener_name = kraft::parse_inter_broker_name(key, value)?;
    c.given_text.inter_broker_listener_name = c
        .kraft
        .inter_broker_listener_name
        .as_ref()
        .map(|_| value.trim().to_string());
    Ok(())
}

fn get_process_roles(c: &Config) -> Option<String> {
    c.given_text.process_roles.clone()
}

fn get_voters(c: &Config) -> Option<String> {
    let v: Vec<String> = c
        .kraft
        .voters
        .iter()
        .map(|v| format!("{}@{}:{}", v.id, v.host, v.port))
        .collect();
    Some(v.join(","))
}

fn get_bootstrap_servers(c: &Config) -> Option<String> {
    let v: Vec<String> = c
        .kraft
        .bootstrap_servers
        .iter()
        .map(|h| format!("{}:{}", h.host, h.port))
        .collect();
    Some(v.join(","))
}

/// Kafka's `listener.security.protocol.map` default, as Kafka writes it.
const PROTOCOL_MAP_DEFAULT: &str =
    "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT";

/// The map as given; unset: Kafka's default, which the broker runs with.
fn get_protocol_map(c: &Config) -> Option<String> {
    Some(
        c.given_text
            .protocol_map
            .clone()
            .unwrap_or_else(|| PROTOCOL_MAP_DEFAULT.to_string()),
    )
}

fn set_dirs(c: &mut Config, key: &str, value: &str) -> Result<(), ConfigError> {
    let dirs: Vec<PathBuf> = value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .collect();
    if dirs.is_empty() {
        return Err(invalid(key, value, "one or more directories"));
    }
    c.log_dirs = dirs;
    Ok(())
}

fn set_cluster_id(c: &mut Config, _key: &str, value: &str) -> Result<(), ConfigError> {
    c.cluster_id = Some(value.to_string());
    Ok(())
}

fn set_metrics_listener(c: &mut Config, key: &str, value: &str) -> Result<(), ConfigError> {
    let v = value.trim();
    c.metrics_listener =
        if v.is_empty() {
            None
        } else {
            let hp = v.split_once("://").map_or(v, |x| x.1);
            Some(resolve(hp).ok_or_else(|| {
                invalid(key, value, "host:port (port 0 picks a free port), or empty")
            })?)
        };
    Ok(())
}

fn get_listeners(c: &Config) -> Option<String> {
    Some(c.given_text.listeners.clone())
}

fn get_advertised(c: &Config) -> Option<String> {
    c.given_text.advertised_listeners.clone()
}

fn get_addr(a: Option<SocketAddr>) -> Option<String> {
    a.map(|a| a.to_string())
}

/// Every broker config Fjord accepts, sorted by name. Kafka's defaults,
/// types and ranges; the descriptions are this project's own.
pub static BROKER_CONFIGS: &[BrokerConfigDef] = &[
    BrokerConfigDef { name: "advertised.listeners", ty: T::List, default: None, field: Field::Text { allowed: "a comma-separated list of NAME://host:port", set: set_advertised }, doc: "host:port given to clients in Metadata: the entry named as the client listener; unset: the bound listener.", dynamic: false, describe: Describe::Own, get: get_advertised },
    BrokerConfigDef { name: "auto.create.topics.enable", ty: T::Boolean, default: Some("true"), field: Field::Bool { set: |c, v| c.auto_create_topics_enable = v }, doc: "Metadata may create unknown topics when the request allows it.", dynamic: false, describe: Describe::Own, get: |c| some(c.auto_create_topics_enable) },
    BrokerConfigDef { name: "auto.leader.rebalance.enable", ty: T::Boolean, default: Some("true"), field: Field::Bool { set: |c, v| c.cluster.auto_leader_rebalance_enable = v }, doc: "The active controller moves each partition's leadership back to its preferred (first) replica when that replica is an alive ISR member, every leader.imbalance.check.interval.seconds.", dynamic: false, describe: Describe::Own, get: |c| some(c.cluster.auto_leader_rebalance_enable) },
    BrokerConfigDef { name: "broker.heartbeat.interval.ms", ty: T::Int, default: Some("2000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.cluster.broker_heartbeat_interval_ms = to_u64(v) }, doc: "How often (ms) the broker heartbeats the active controller.", dynamic: false, describe: Describe::Own, get: |c| some(c.cluster.broker_heartbeat_interval_ms) },
    BrokerConfigDef { name: "broker.id", ty: T::Int, default: None, field: Field::Int { min: 0, max: I32MAX, set: |c, v| { c.node_id = to_i32(v); c.ids_given.1 = Some(to_i32(v)) } }, doc: "The older name of node.id.", dynamic: false, describe: Describe::Own, get: |c| some(c.node_id) },
    BrokerConfigDef { name: "broker.rack", ty: T::String, default: None, field: Field::Text { allowed: "a rack name", set: set_rack }, doc: "This broker's rack: replicas of a partition go to different racks first.", dynamic: false, describe: Describe::Own, get: |c| c.cluster.rack.clone() },
    BrokerConfigDef { name: "broker.session.timeout.ms", ty: T::Int, default: Some("9000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.cluster.broker_session_timeout_ms = to_u64(v) }, doc: "A broker whose heartbeats stop for this long (ms) is fenced: it leads no partition until it heartbeats again.", dynamic: false, describe: Describe::Own, get: |c| some(c.cluster.broker_session_timeout_ms) },
    BrokerConfigDef { name: "cluster.id", ty: T::String, default: None, field: Field::Text { allowed: "any text", set: set_cluster_id }, doc: "Cluster id for a new data directory; unset: read from or generated into meta.properties. A data directory formatted for another cluster id is refused.", dynamic: false, describe: Describe::Hidden("not a Kafka broker config: Kafka keeps the cluster id in meta.properties only"), get: |c| c.cluster_id.clone() },
    BrokerConfigDef { name: "controller.listener.names", ty: T::List, default: None, field: Field::Text { allowed: "a comma-separated list of listener names", set: set_controller_listener_names }, doc: "Names of the controller listeners in listeners (Kafka's KRaft key); the others are client listeners. The metadata quorum runs over the first.", dynamic: false, describe: Describe::Own, get: |c| c.given_text.controller_listener_names.clone() },
    BrokerConfigDef { name: "controller.quorum.bootstrap.servers", ty: T::List, default: Some(""), field: Field::Text { allowed: "a comma-separated list of host:port", set: set_bootstrap_servers }, doc: "Controllers to contact to find the quorum (Kafka's KRaft key, the newer alternative to controller.quorum.voters). Recorded for the metadata quorum, not used yet.", dynamic: false, describe: Describe::Own, get: get_bootstrap_servers },
    BrokerConfigDef { name: "controller.quorum.election.timeout.ms", ty: T::Int, default: Some("1000"), field: Field::Int { min: 10, max: I32MAX, set: |c, v| c.cluster.election_timeout_ms = to_u64(v) }, doc: "How long (ms) a voter waits for the active controller before it starts an election.", dynamic: false, describe: Describe::Own, get: |c| some(c.cluster.election_timeout_ms) },
    BrokerConfigDef { name: "controller.quorum.request.timeout.ms", ty: T::Int, default: Some("2000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.cluster.request_timeout_ms = to_u64(v) }, doc: "How long (ms) a request for the active controller (forwarded admin requests, registration, heartbeats) is retried.", dynamic: false, describe: Describe::Own, get: |c| some(c.cluster.request_timeout_ms) },
    BrokerConfigDef { name: "controller.quorum.voters", ty: T::List, default: Some(""), field: Field::Text { allowed: "a comma-separated list of id@host:port", set: set_voters }, doc: "The metadata quorum's voters (Kafka's KRaft key); must include node.id when process.roles has controller. Recorded for the metadata quorum, not used yet.", dynamic: false, describe: Describe::Own, get: get_voters },
    BrokerConfigDef { name: "controller.quota.window.num", ty: T::Int, default: Some("11"), field: Field::Int { min: 1, max: 1000, set: |c, v| c.controller_quota_windows.samples = to_u32(v) }, doc: "Samples of the controller mutation quota's token bucket (its burst is this many windows of the rate).", dynamic: false, describe: Describe::Own, get: |c| some(c.controller_quota_windows.samples) },
    BrokerConfigDef { name: "controller.quota.window.size.seconds", ty: T::Int, default: Some("1"), field: Field::Int { min: 1, max: 3600, set: |c, v| c.controller_quota_windows.window_ms = to_u64(v) * 1000 }, doc: "Length (s) of each sample of the controller mutation quota.", dynamic: false, describe: Describe::Own, get: |c| some(c.controller_quota_windows.window_ms / 1000) },
    BrokerConfigDef { name: "controller.socket.timeout.ms", ty: T::Int, default: Some("30000"), field: Field::Int { min: 0, max: I32MAX, set: |c, v| c.cluster.controller_socket_timeout_ms = to_u64(v) }, doc: "How long (ms) a client's request that needs the active controller (admin requests, producer id blocks) waits for it to be committed and applied.", dynamic: false, describe: Describe::Own, get: |c| some(c.cluster.controller_socket_timeout_ms) },
    BrokerConfigDef { name: "default.replication.factor", ty: T::Int, default: Some("1"), field: Field::Int { min: 1, max: 32767, set: |c, v| c.default_replication_factor = to_i16(v) }, doc: "Replication factor of auto-created topics and of CreateTopics with -1.", dynamic: false, describe: Describe::Own, get: |c| some(c.default_replication_factor) },
    BrokerConfigDef { name: "delete.topic.enable", ty: T::Boolean, default: Some("true"), field: Field::Bool { set: |c, v| c.delete_topic_enable = v }, doc: "Whether DeleteTopics may delete topics.", dynamic: false, describe: Describe::Own, get: |c| some(c.delete_topic_enable) },
    BrokerConfigDef { name: "errors.deadletterqueue.auto.create.topics.enable", ty: T::Boolean, default: Some("false"), field: Field::Bool { set: |c, v| c.group.dlq_auto_create_topics_enable = v }, doc: "Whether a share group's dead-letter queue topic (KIP-1191) that does not exist is created on its first write, with the broker's default partitions and replication factor.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.dlq_auto_create_topics_enable) },
    BrokerConfigDef { name: "errors.deadletterqueue.topic.name.prefix", ty: T::String, default: Some("dlq."), field: Field::Text { allowed: "any text (empty: no restriction)", set: set_dlq_prefix }, doc: "The prefix every share group dead-letter queue topic name (KIP-1191) must have; empty: any name.", dynamic: false, describe: Describe::Own, get: |c| Some(c.group.dlq_topic_name_prefix.clone()) },
    BrokerConfigDef { name: "fjord.shards", ty: T::Int, default: None, field: Field::Int { min: 1, max: 1024, set: |c, v| c.shards = Some(to_usize(v)) }, doc: "Fjord's own: the number of shards (pinned executors); unset: every CPU the process may use.", dynamic: false, describe: Describe::Hidden("Fjord's own"), get: |c| c.shards.map(|s| s.to_string()) },
    BrokerConfigDef { name: "group.consumer.assignment.interval.ms", ty: T::Int, default: Some("1000"), field: Field::Int { min: 0, max: I32MAX, set: |c, v| c.group.consumer_assignment_interval_ms = to_i32(v) }, doc: "The least time (ms) between two target assignments of a consumer group (KIP-1263): after a membership or subscription change the group is Assigning until a heartbeat comes this long after the previous assignment; 0 assigns at once.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.consumer_assignment_interval_ms) },
    BrokerConfigDef { name: "group.consumer.heartbeat.interval.ms", ty: T::Int, default: Some("5000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.group.consumer_heartbeat_interval_ms = to_i32(v) }, doc: "The heartbeat interval (ms) given to consumer-protocol members (KIP-848).", dynamic: false, describe: Describe::Own, get: |c| some(c.group.consumer_heartbeat_interval_ms) },
    BrokerConfigDef { name: "group.consumer.max.assignment.interval.ms", ty: T::Int, default: Some("15000"), field: Field::Int { min: 0, max: I32MAX, set: |c, v| c.group.consumer_max_assignment_interval_ms = to_i32(v) }, doc: "The largest consumer.assignment.interval.ms a group config (KIP-848, KIP-1263) may set (ms).", dynamic: false, describe: Describe::Own, get: |c| some(c.group.consumer_max_assignment_interval_ms) },
    BrokerConfigDef { name: "group.consumer.max.heartbeat.interval.ms", ty: T::Int, default: Some("15000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.group.consumer_max_heartbeat_interval_ms = to_i32(v) }, doc: "The largest consumer.heartbeat.interval.ms a group config (KIP-848) may set (ms).", dynamic: false, describe: Describe::Own, get: |c| some(c.group.consumer_max_heartbeat_interval_ms) },
    BrokerConfigDef { name: "group.consumer.max.session.timeout.ms", ty: T::Int, default: Some("60000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.group.consumer_max_session_timeout_ms = to_i32(v) }, doc: "The largest consumer.session.timeout.ms a group config (KIP-848) may set (ms).", dynamic: false, describe: Describe::Own, get: |c| some(c.group.consumer_max_session_timeout_ms) },
    BrokerConfigDef { name: "group.consumer.max.size", ty: T::Int, default: Some("2147483647"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.group.consumer_max_size = to_usize(v) }, doc: "The most members a consumer group (KIP-848) may have; a join beyond it gets GROUP_MAX_SIZE_REACHED.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.consumer_max_size.min(I32MAX as usize)) },
    BrokerConfigDef { name: "group.consumer.migration.policy", ty: T::String, default: Some("bidirectional"), field: Field::OneOf { values: &["disabled", "upgrade", "downgrade", "bidirectional"], set: |c, v| c.group.consumer_migration_policy = crate::config::coordinators::MigrationPolicy::parse(v).unwrap_or(crate::config::coordinators::MigrationPolicy::Bidirectional) }, doc: "Which online conversions between classic and consumer groups (KIP-848) are allowed: upgrade (a consumer-protocol member joining a live classic group), downgrade (the last consumer-protocol member leaving a group of classic members), both, or neither.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.consumer_migration_policy.as_str()) },
    BrokerConfigDef { name: "group.consumer.min.assignment.interval.ms", ty: T::Int, default: Some("0"), field: Field::Int { min: 0, max: I32MAX, set: |c, v| c.group.consumer_min_assignment_interval_ms = to_i32(v) }, doc: "The smallest consumer.assignment.interval.ms a group config (KIP-848, KIP-1263) may set (ms).", dynamic: false, describe: Describe::Own, get: |c| some(c.group.consumer_min_assignment_interval_ms) },
    BrokerConfigDef { name: "group.consumer.min.heartbeat.interval.ms", ty: T::Int, default: Some("5000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.group.consumer_min_heartbeat_interval_ms = to_i32(v) }, doc: "The smallest consumer.heartbeat.interval.ms a group config (KIP-848) may set (ms).", dynamic: false, describe: Describe::Own, get: |c| some(c.group.consumer_min_heartbeat_interval_ms) },
    BrokerConfigDef { name: "group.consumer.min.session.timeout.ms", ty: T::Int, default: Some("45000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.group.consumer_min_session_timeout_ms = to_i32(v) }, doc: "The smallest consumer.session.timeout.ms a group config (KIP-848) may set (ms).", dynamic: false, describe: Describe::Own, get: |c| some(c.group.consumer_min_session_timeout_ms) },
    BrokerConfigDef { name: "group.consumer.session.timeout.ms", ty: T::Int, default: Some("45000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.group.consumer_session_timeout_ms = to_i32(v) }, doc: "How long (ms) a consumer-protocol member (KIP-848) may go without a heartbeat before it is fenced.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.consumer_session_timeout_ms) },
    BrokerConfigDef { name: "group.initial.rebalance.delay.ms", ty: T::Int, default: Some("3000"), field: Field::Int { min: 0, max: I32MAX, set: |c, v| c.group.initial_rebalance_delay_ms = to_i32(v) }, doc: "How long (ms) the first rebalance of an empty group waits for more members to join.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.initial_rebalance_delay_ms) },
    BrokerConfigDef { name: "group.max.session.timeout.ms", ty: T::Int, default: Some("1800000"), field: Field::Int { min: 0, max: I32MAX, set: |c, v| c.group.max_session_timeout_ms = to_i32(v) }, doc: "The largest session timeout (ms) a member may ask for; larger gets INVALID_SESSION_TIMEOUT.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.max_session_timeout_ms) },
    // Kafka's default is Integer.MAX_VALUE, applied from this table like
    // every default (GroupConfig's own default is the same); reading back
    // caps a larger size set in a GroupConfig by hand.
    BrokerConfigDef { name: "group.max.size", ty: T::Int, default: Some("2147483647"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.group.max_size = to_usize(v) }, doc: "The most members a group may have.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.max_size.min(I32MAX as usize)) },
    BrokerConfigDef { name: "group.min.session.timeout.ms", ty: T::Int, default: Some("6000"), field: Field::Int { min: 0, max: I32MAX, set: |c, v| c.group.min_session_timeout_ms = to_i32(v) }, doc: "The smallest session timeout (ms) a member may ask for; smaller gets INVALID_SESSION_TIMEOUT.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.min_session_timeout_ms) },
    BrokerConfigDef { name: "group.share.assignors", ty: T::List, default: Some("simple"), field: Field::OneOf { values: &["simple"], set: |c, v| c.group.share_assignors = vec![v.to_string()] }, doc: "The share group assignor (KIP-932); simple, the only one served.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.share_assignors.join(",")) },
    BrokerConfigDef { name: "group.share.delivery.count.limit", ty: T::Int, default: Some("5"), field: Field::Int { min: 2, max: 10, set: |c, v| c.group.share_delivery_count_limit = to_i32(v) }, doc: "The most deliveries of a record to a share group (KIP-932) before it is archived.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.share_delivery_count_limit) },
    BrokerConfigDef { name: "group.share.heartbeat.interval.ms", ty: T::Int, default: Some("5000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.group.share_heartbeat_interval_ms = to_i32(v) }, doc: "The heartbeat interval (ms) given to the members of a share group (KIP-932).", dynamic: false, describe: Describe::Own, get: |c| some(c.group.share_heartbeat_interval_ms) },
    BrokerConfigDef { name: "group.share.max.delivery.count.limit", ty: T::Int, default: Some("10"), field: Field::Int { min: 5, max: 25, set: |c, v| c.group.share_max_delivery_count_limit = to_i32(v) }, doc: "The largest share.delivery.count.limit a group config may set.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.share_max_delivery_count_limit) },
    BrokerConfigDef { name: "group.share.max.heartbeat.interval.ms", ty: T::Int, default: Some("15000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.group.share_max_heartbeat_interval_ms = to_i32(v) }, doc: "The largest share.heartbeat.interval.ms a group config may set (ms).", dynamic: false, describe: Describe::Own, get: |c| some(c.group.share_max_heartbeat_interval_ms) },
    BrokerConfigDef { name: "group.share.max.record.lock.duration.ms", ty: T::Int, default: Some("60000"), field: Field::Int { min: 30000, max: 3600000, set: |c, v| c.group.share_max_record_lock_duration_ms = to_i32(v) }, doc: "The largest share.record.lock.duration.ms a group config may set (ms).", dynamic: false, describe: Describe::Own, get: |c| some(c.group.share_max_record_lock_duration_ms) },
    BrokerConfigDef { name: "group.share.max.session.timeout.ms", ty: T::Int, default: Some("60000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.group.share_max_session_timeout_ms = to_i32(v) }, doc: "The largest share.session.timeout.ms a group config may set (ms).", dynamic: false, describe: Describe::Own, get: |c| some(c.group.share_max_session_timeout_ms) },
    BrokerConfigDef { name: "group.share.max.share.sessions", ty: T::Int, default: Some("2000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.group.share_max_share_sessions = to_i32(v) }, doc: "The most share sessions (ShareFetch, KIP-932) one broker holds.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.share_max_share_sessions) },
    BrokerConfigDef { name: "group.share.max.size", ty: T::Int, default: Some("200"), field: Field::Int { min: 1, max: 1000, set: |c, v| c.group.share_max_size = to_usize(v) }, doc: "The most members a share group (KIP-932) may have; a join beyond it gets GROUP_MAX_SIZE_REACHED.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.share_max_size) },
    BrokerConfigDef { name: "group.share.min.delivery.count.limit", ty: T::Int, default: Some("2"), field: Field::Int { min: 2, max: 5, set: |c, v| c.group.share_min_delivery_count_limit = to_i32(v) }, doc: "The smallest share.delivery.count.limit a group config may set.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.share_min_delivery_count_limit) },
    BrokerConfigDef { name: "group.share.min.heartbeat.interval.ms", ty: T::Int, default: Some("5000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.group.share_min_heartbeat_interval_ms = to_i32(v) }, doc: "The smallest share.heartbeat.interval.ms a group config may set (ms).", dynamic: false, describe: Describe::Own, get: |c| some(c.group.share_min_heartbeat_interval_ms) },
    BrokerConfigDef { name: "group.share.min.record.lock.duration.ms", ty: T::Int, default: Some("15000"), field: Field::Int { min: 1000, max: 30000, set: |c, v| c.group.share_min_record_lock_duration_ms = to_i32(v) }, doc: "The smallest share.record.lock.duration.ms a group config may set (ms).", dynamic: false, describe: Describe::Own, get: |c| some(c.group.share_min_record_lock_duration_ms) },
    BrokerConfigDef { name: "group.share.min.session.timeout.ms", ty: T::Int, default: Some("45000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.group.share_min_session_timeout_ms = to_i32(v) }, doc: "The smallest share.session.timeout.ms a group config may set (ms).", dynamic: false, describe: Describe::Own, get: |c| some(c.group.share_min_session_timeout_ms) },
    BrokerConfigDef { name: "group.share.partition.max.record.locks", ty: T::Int, default: Some("2000"), field: Field::Int { min: 100, max: 10000, set: |c, v| c.group.share_partition_max_record_locks = to_i32(v) }, doc: "The most records in flight (acquired, not yet acknowledged) in one share-partition.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.share_partition_max_record_locks) },
    BrokerConfigDef { name: "group.share.record.lock.duration.ms", ty: T::Int, default: Some("30000"), field: Field::Int { min: 1000, max: 3600000, set: |c, v| c.group.share_record_lock_duration_ms = to_i32(v) }, doc: "How long (ms) a share group member holds the records it acquired before they are delivered again.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.share_record_lock_duration_ms) },
    BrokerConfigDef { name: "group.share.session.timeout.ms", ty: T::Int, default: Some("45000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.group.share_session_timeout_ms = to_i32(v) }, doc: "How long (ms) a share group member (KIP-932) may go without a heartbeat before it is fenced.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.share_session_timeout_ms) },
    BrokerConfigDef { name: "inter.broker.listener.name", ty: T::String, default: None, field: Field::Text { allowed: "a listener name", set: set_inter_broker_name }, doc: "The listener brokers use between themselves (Kafka's key): replica fetchers and coordinator calls connect to it with its protocol; must name a client listener.", dynamic: false, describe: Describe::Own, get: |c| c.given_text.inter_broker_listener_name.clone() },
    BrokerConfigDef { name: "leader.imbalance.check.interval.seconds", ty: T::Long, default: Some("300"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.cluster.leader_imbalance_check_interval_s = to_u64(v) }, doc: "How often (s) the active controller looks for partitions not led by their preferred replica (auto.leader.rebalance.enable).", dynamic: false, describe: Describe::Own, get: |c| some(c.cluster.leader_imbalance_check_interval_s) },
    BrokerConfigDef { name: "listener.security.protocol.map", ty: T::String, default: None, field: Field::Text { allowed: "a comma-separated list of NAME:PROTOCOL", set: set_protocol_map }, doc: "Security protocol of each listener name (Kafka's key): PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; unset: Kafka's default map, controller listeners PLAINTEXT.", dynamic: false, describe: Describe::Own, get: get_protocol_map },
    BrokerConfigDef { name: "listeners", ty: T::List, default: Some("PLAINTEXT://127.0.0.1:9092"), field: Field::Text { allowed: "a comma-separated list of NAME://host:port", set: set_listeners }, doc: "Where clients connect (every listener not named in controller.listener.names, each with its protocol from listener.security.protocol.map) and the controller listener; port 0 picks a free port.", dynamic: false, describe: Describe::Own, get: get_listeners },
    BrokerConfigDef { name: "log.cleaner.backoff.ms", ty: T::Long, default: Some("15000"), field: Field::Int { min: 1, max: I64MAX, set: |c, v| c.log_cleaner_backoff_ms = to_u64(v) }, doc: "How often (ms) the cleaner looks for work after its first pass.", dynamic: false, describe: Describe::Own, get: |c| some(c.log_cleaner_backoff_ms) },
    BrokerConfigDef { name: "log.dir", ty: T::List, default: None, field: Field::Text { allowed: "one or more directories", set: set_dirs }, doc: "The older name of log.dirs.", dynamic: false, describe: Describe::Own, get: |c| some(c.data_dir().display()) },
    BrokerConfigDef { name: "log.dirs", ty: T::List, default: Some("./data"), field: Field::Text { allowed: "one or more directories", set: set_dirs }, doc: "The data directory; only the first of a list is used.", dynamic: false, describe: Describe::Own, get: |c| some(c.data_dir().display()) },
    BrokerConfigDef { name: "log.flush.interval.messages", ty: T::Long, default: Some(I64MAX_STR), field: Field::Int { min: 1, max: I64MAX, set: |c, v| c.log_flush_interval_messages = (v != I64MAX).then_some(to_u64(v)) }, doc: "fdatasync after this many messages; the default leaves flushing to the operating system.", dynamic: false, describe: Describe::TopicSynonym, get: |c| some(c.log_flush_interval_messages.map_or(I64MAX_STR.to_string(), |v| v.to_string())) },
    BrokerConfigDef { name: "log.flush.interval.ms", ty: T::Long, default: None, field: Field::Int { min: 0, max: I64MAX, set: |c, v| c.log_flush_interval_ms = (v != I64MAX).then_some(to_u64(v)) }, doc: "fdatasync at most this long (ms) after an append; unset leaves flushing to the operating system.", dynamic: false, describe: Describe::TopicSynonym, get: |c| c.log_flush_interval_ms.map(|v| v.to_string()) },
    BrokerConfigDef { name: "log.index.interval.bytes", ty: T::Int, default: Some("4096"), field: Field::Int { min: 0, max: I32MAX, set: |c, v| c.log_index_interval_bytes = to_u32(v) }, doc: "Bytes appended between two entries of the sparse offset index.", dynamic: false, describe: Describe::TopicSynonym, get: |c| some(c.log_index_interval_bytes) },
    BrokerConfigDef { name: "log.index.size.max.bytes", ty: T::Int, default: Some("10485760"), field: Field::Int { min: 4, max: I32MAX, set: |c, v| c.log_index_size_max_bytes = to_u32(v) }, doc: "The largest offset index of a segment (bytes); a full index rolls the segment.", dynamic: false, describe: Describe::TopicSynonym, get: |c| some(c.log_index_size_max_bytes) },
    BrokerConfigDef { name: "log.initial.task.delay.ms", ty: T::Long, default: Some("30000"), field: Field::Int { min: 0, max: I64MAX, set: |c, v| c.log_initial_task_delay_ms = to_u64(v) }, doc: "Delay (ms) after start-up before the first retention, cleaner and producer-expiration passes.", dynamic: false, describe: Describe::Own, get: |c| some(c.log_initial_task_delay_ms) },
    BrokerConfigDef { name: "log.message.timestamp.type", ty: T::String, default: Some("CreateTime"), field: Field::OneOf { values: &["CreateTime", "LogAppendTime"], set: |c, v| c.log_message_timestamp_type = if v == "LogAppendTime" { TimestampType::LogAppendTime } else { TimestampType::CreateTime } }, doc: "Keep the producer's timestamps (CreateTime) or stamp batches with the broker's clock (LogAppendTime).", dynamic: false, describe: Describe::TopicSynonym, get: |c| some(match c.log_message_timestamp_type { TimestampType::CreateTime => "CreateTime", TimestampType::LogAppendTime => "LogAppendTime" }) },
    BrokerConfigDef { name: "log.retention.check.interval.ms", ty: T::Long, default: Some("300000"), field: Field::Int { min: 1, max: I64MAX, set: |c, v| c.log_retention_check_interval_ms = to_u64(v) }, doc: "How often (ms) retention runs after its first pass.", dynamic: false, describe: Describe::Own, get: |c| some(c.log_retention_check_interval_ms) },
    BrokerConfigDef { name: "log.roll.hours", ty: T::Int, default: Some("168"), field: Field::Int { min: 1, max: 1_000_000, set: |c, v| c.log_roll_ms = to_u64(v * MS_PER_HOUR) }, doc: "Roll a segment this old (hours); log.roll.ms wins when both are set.", dynamic: false, describe: Describe::TopicSynonym, get: |c| some(c.log_roll_ms / MS_PER_HOUR as u64) },
    BrokerConfigDef { name: "log.roll.ms", ty: T::Long, default: None, field: Field::Int { min: 1, max: I64MAX, set: |c, v| c.log_roll_ms = to_u64(v) }, doc: "Roll a segment this old (ms); unset: log.roll.hours.", dynamic: false, describe: Describe::TopicSynonym, get: |c| some(c.log_roll_ms) },
    BrokerConfigDef { name: "log.segment.bytes", ty: T::Int, default: Some("1073741824"), field: Field::Int { min: 14, max: I32MAX, set: |c, v| c.log_segment_bytes = to_u64(v) }, doc: "Roll a segment at this size (bytes).", dynamic: false, describe: Describe::TopicSynonym, get: |c| some(c.log_segment_bytes) },
    BrokerConfigDef { name: "max.incremental.fetch.session.cache.slots", ty: T::Int, default: Some("1000"), field: Field::Int { min: 0, max: I32MAX, set: |c, v| c.max_incremental_fetch_session_cache_slots = to_usize(v) }, doc: "How many incremental fetch sessions (KIP-227) the broker keeps, split evenly over the shards (each evicts its least recently used session when full); 0 serves every fetch sessionless.", dynamic: false, describe: Describe::Own, get: |c| some(c.max_incremental_fetch_session_cache_slots) },
    BrokerConfigDef { name: "message.max.bytes", ty: T::Int, default: Some("1048588"), field: Field::Int { min: 0, max: I32MAX, set: |c, v| c.message_max_bytes = to_usize(v) }, doc: "The largest record batch accepted (bytes, after the producer's compression).", dynamic: false, describe: Describe::TopicSynonym, get: |c| some(c.message_max_bytes) },
    BrokerConfigDef { name: "metrics.listener", ty: T::String, default: None, field: Field::Text { allowed: "host:port (port 0 picks a free port), or empty", set: set_metrics_listener }, doc: "Fjord's own: host:port of the Prometheus-text metrics endpoint (GET /metrics); unset or empty: no endpoint.", dynamic: false, describe: Describe::Hidden("Fjord's own"), get: |c| get_addr(c.metrics_listener) },
    BrokerConfigDef { name: "node.id", ty: T::Int, default: Some("1"), field: Field::Int { min: 0, max: I32MAX, set: |c, v| { c.node_id = to_i32(v); c.ids_given.0 = Some(to_i32(v)) } }, doc: "This broker's id in Metadata; must match meta.properties in the data directory.", dynamic: false, describe: Describe::Own, get: |c| some(c.node_id) },
    BrokerConfigDef { name: "num.partitions", ty: T::Int, default: Some("1"), field: Field::Int { min: 1, max: 1_000_000, set: |c, v| c.num_partitions = to_i32(v) }, doc: "Partitions of auto-created topics and of CreateTopics with -1.", dynamic: false, describe: Describe::Own, get: |c| some(c.num_partitions) },
    BrokerConfigDef { name: "offset.metadata.max.bytes", ty: T::Int, default: Some("4096"), field: Field::Int { min: 0, max: I32MAX, set: |c, v| c.group.offset_metadata_max_bytes = to_usize(v) }, doc: "The longest metadata string of a committed offset (bytes); longer gets OFFSET_METADATA_TOO_LARGE.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.offset_metadata_max_bytes) },
    BrokerConfigDef { name: "offsets.retention.check.interval.ms", ty: T::Long, default: Some("600000"), field: Field::Int { min: 1, max: I64MAX, set: |c, v| c.group.offsets_retention_check_interval_ms = to_u64(v) }, doc: "How often (ms) expired committed offsets are looked for.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.offsets_retention_check_interval_ms) },
    BrokerConfigDef { name: "offsets.retention.minutes", ty: T::Int, default: Some("10080"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.group.offsets_retention_ms = v * MS_PER_MINUTE }, doc: "How long (minutes) the committed offsets of an empty group are kept.", dynamic: false, describe: Describe::Own, get: |c| some(c.group.offsets_retention_ms / MS_PER_MINUTE) },
    BrokerConfigDef { name: "offsets.topic.num.partitions", ty: T::Int, default: Some("50"), field: Field::Int { min: 1, max: 100_000, set: |c, v| c.group.offsets_topic_partitions = to_i32(v) }, doc: "Partitions of __consumer_offsets (created on the first group lookup).", dynamic: false, describe: Describe::Own, get: |c| some(c.group.offsets_topic_partitions) },
    BrokerConfigDef { name: "offsets.topic.replication.factor", ty: T::Short, default: Some("3"), field: Field::Int { min: 1, max: 32767, set: |c, v| c.cluster.offsets_topic_replication_factor = to_i16(v) }, doc: "Replication factor of __consumer_offsets; a single-voter cluster uses at most its broker count.", dynamic: false, describe: Describe::Own, get: |c| some(c.cluster.offsets_topic_replication_factor) },
    BrokerConfigDef { name: "offsets.topic.segment.bytes", ty: T::Int, default: Some("104857600"), field: Field::Int { min: 14, max: I32MAX, set: |c, v| c.group.offsets_topic_segment_bytes = to_u64(v) }, doc: "Segment size of __consumer_offsets (bytes).", dynamic: false, describe: Describe::Own, get: |c| some(c.group.offsets_topic_segment_bytes) },
    BrokerConfigDef { name: "process.roles", ty: T::List, default: None, field: Field::Text { allowed: "broker,controller", set: set_process_roles }, doc: "The node's KRaft roles (Kafka's key); this build runs combined nodes only: broker,controller. Unset: the combined node.", dynamic: false, describe: Describe::Own, get: get_process_roles },
    BrokerConfigDef { name: "producer.id.expiration.check.interval.ms", ty: T::Int, default: Some("600000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.producer_id_expiration_check_interval_ms = to_u64(v) }, doc: "How often (ms) each shard looks for idle idempotent producers.", dynamic: false, describe: Describe::Own, get: |c| some(c.producer_id_expiration_check_interval_ms) },
    BrokerConfigDef { name: "producer.id.expiration.ms", ty: T::Int, default: Some("86400000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.producer_id_expiration_ms = v }, doc: "Idle idempotent producers are forgotten after this long (ms).", dynamic: false, describe: Describe::Own, get: |c| some(c.producer_id_expiration_ms) },
    BrokerConfigDef { name: "quota.window.num", ty: T::Int, default: Some("11"), field: Field::Int { min: 1, max: 1000, set: |c, v| c.quota_windows.samples = to_u32(v) }, doc: "Samples retained of the client quotas' rates (producer_byte_rate, consumer_byte_rate, request_percentage).", dynamic: false, describe: Describe::Own, get: |c| some(c.quota_windows.samples) },
    BrokerConfigDef { name: "quota.window.size.seconds", ty: T::Int, default: Some("1"), field: Field::Int { min: 1, max: 3600, set: |c, v| c.quota_windows.window_ms = to_u64(v) * 1000 }, doc: "Length (s) of each sample of the client quotas' rates.", dynamic: false, describe: Describe::Own, get: |c| some(c.quota_windows.window_ms / 1000) },
    BrokerConfigDef { name: "reactor.stall.rusage", ty: T::Boolean, default: Some("false"), field: Field::Bool { set: |c, v| c.reactor_stall_rusage = v }, doc: "Fjord's own: each stall line also says how much of the stall the shard's thread spent on the CPU (CLOCK_THREAD_CPUTIME_ID) and off it, waiting for the core or taken by the host, interrupts or blocked (/proc/thread-self/schedstat), how often it was preempted or blocked, its page faults (getrusage(2)) and when the poll began on CLOCK_MONOTONIC; costs three system calls per task poll and three more per stall line; nothing while the stall detector is off.", dynamic: false, describe: Describe::Hidden("Fjord's own"), get: |c| some(c.reactor_stall_rusage) },
    BrokerConfigDef { name: "reactor.stall.threshold.us", ty: T::Long, default: Some("500"), field: Field::Int { min: 0, max: 60_000_000, set: |c, v| c.reactor_stall_threshold_us = to_u64(v) }, doc: "Fjord's own: a task poll that keeps a shard busy longer than this (µs) is counted and logged as a reactor stall; 0 turns the detector off.", dynamic: false, describe: Describe::Hidden("Fjord's own"), get: |c| some(c.reactor_stall_threshold_us) },
    BrokerConfigDef { name: "replica.fetch.backoff.ms", ty: T::Int, default: Some("1000"), field: Field::Int { min: 0, max: I32MAX, set: |c, v| c.cluster.replica_fetch_backoff_ms = to_u64(v) }, doc: "How long (ms) a follower waits after a failed fetch from a leader before it tries again.", dynamic: false, describe: Describe::Own, get: |c| some(c.cluster.replica_fetch_backoff_ms) },
    BrokerConfigDef { name: "replica.fetch.max.bytes", ty: T::Int, default: Some("1048576"), field: Field::Int { min: 0, max: I32MAX, set: |c, v| c.cluster.replica_fetch_max_bytes = to_u64(v) }, doc: "A follower fetch's limit per partition (bytes); the first batch is sent even if larger.", dynamic: false, describe: Describe::Own, get: |c| some(c.cluster.replica_fetch_max_bytes) },
    BrokerConfigDef { name: "replica.fetch.response.max.bytes", ty: T::Int, default: Some("10485760"), field: Field::Int { min: 0, max: I32MAX, set: |c, v| c.cluster.replica_fetch_response_max_bytes = to_u64(v) }, doc: "A follower fetch's limit for the whole response (bytes).", dynamic: false, describe: Describe::Own, get: |c| some(c.cluster.replica_fetch_response_max_bytes) },
    BrokerConfigDef { name: "replica.fetch.wait.max.ms", ty: T::Int, default: Some("500"), field: Field::Int { min: 0, max: I32MAX, set: |c, v| c.cluster.replica_fetch_wait_max_ms = to_u64(v) }, doc: "How long (ms) a follower's fetch waits at the leader for new data; below replica.lag.time.max.ms.", dynamic: false, describe: Describe::Own, get: |c| some(c.cluster.replica_fetch_wait_max_ms) },
    BrokerConfigDef { name: "replica.high.watermark.checkpoint.interval.ms", ty: T::Long, default: Some("5000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.cluster.replica_high_watermark_checkpoint_interval_ms = to_u64(v) }, doc: "How often (ms) each shard writes its partitions' high watermarks to its replication-offset-checkpoint file (also written at shutdown).", dynamic: false, describe: Describe::Own, get: |c| some(c.cluster.replica_high_watermark_checkpoint_interval_ms) },
    BrokerConfigDef { name: "replica.lag.time.max.ms", ty: T::Long, default: Some("30000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.cluster.replica_lag_time_max_ms = to_u64(v) }, doc: "A follower that has not caught up with the leader's log end for this long (ms) leaves the ISR.", dynamic: false, describe: Describe::Own, get: |c| some(c.cluster.replica_lag_time_max_ms) },
    BrokerConfigDef { name: "replica.socket.receive.buffer.bytes", ty: T::Int, default: Some("65536"), field: Field::Int { min: -1, max: I32MAX, set: |c, v| c.cluster.replica_socket_receive_buffer_bytes = to_i32(v) }, doc: "SO_RCVBUF of a follower's fetch connections to its leaders (bytes; the kernel doubles it, capped by net.core.rmem_max); -1 or 0 keeps the kernel's autotuning.", dynamic: false, describe: Describe::Own, get: |c| some(c.cluster.replica_socket_receive_buffer_bytes) },
    BrokerConfigDef { name: "replica.socket.timeout.ms", ty: T::Int, default: Some("30000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.cluster.replica_socket_timeout_ms = to_u64(v) }, doc: "How long (ms) a follower's fetch may go unanswered beyond replica.fetch.wait.max.ms before its connection is made again.", dynamic: false, describe: Describe::Own, get: |c| some(c.cluster.replica_socket_timeout_ms) },
    BrokerConfigDef { name: "share.coordinator.snapshot.update.records.per.snapshot", ty: T::Int, default: Some("500"), field: Field::Int { min: 0, max: 500, set: |c, v| c.share_coordinator.snapshot_update_records_per_snapshot = to_i32(v) }, doc: "ShareUpdate records written for a share-partition between two ShareSnapshot records (KIP-932).", dynamic: false, describe: Describe::Own, get: |c| some(c.share_coordinator.snapshot_update_records_per_snapshot) },
    BrokerConfigDef { name: "share.coordinator.state.topic.min.isr", ty: T::Short, default: Some("2"), field: Field::Int { min: 1, max: 32767, set: |c, v| c.share_coordinator.state_topic_min_isr = to_i16(v) }, doc: "min.insync.replicas of __share_group_state.", dynamic: false, describe: Describe::Own, get: |c| some(c.share_coordinator.state_topic_min_isr) },
    BrokerConfigDef { name: "share.coordinator.state.topic.num.partitions", ty: T::Int, default: Some("50"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.share_coordinator.state_topic_partitions = to_i32(v) }, doc: "Partitions of __share_group_state (created on the first share coordinator lookup or share-state request).", dynamic: false, describe: Describe::Own, get: |c| some(c.share_coordinator.state_topic_partitions) },
    BrokerConfigDef { name: "share.coordinator.state.topic.replication.factor", ty: T::Short, default: Some("3"), field: Field::Int { min: 1, max: 32767, set: |c, v| c.share_coordinator.state_topic_replication_factor = to_i16(v) }, doc: "Replication factor of __share_group_state; a single-voter cluster uses at most its broker count.", dynamic: false, describe: Describe::Own, get: |c| some(c.share_coordinator.state_topic_replication_factor) },
    BrokerConfigDef { name: "share.coordinator.state.topic.segment.bytes", ty: T::Int, default: Some("104857600"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.share_coordinator.state_topic_segment_bytes = to_u64(v) }, doc: "Segment size of __share_group_state (bytes).", dynamic: false, describe: Describe::Own, get: |c| some(c.share_coordinator.state_topic_segment_bytes) },
    BrokerConfigDef { name: "socket.receive.buffer.bytes", ty: T::Int, default: Some("-1"), field: Field::Int { min: -1, max: I32MAX, set: |c, v| c.socket_receive_buffer_bytes = to_i32(v) }, doc: "SO_RCVBUF of the listeners' connections (bytes; the kernel doubles it, capped by net.core.rmem_max); -1 or 0 keeps the kernel's autotuning. Kafka's default is 102400: see docs/decisions/socket-buffers.md.", dynamic: false, describe: Describe::Own, get: |c| some(c.socket_receive_buffer_bytes) },
    BrokerConfigDef { name: "socket.request.max.bytes", ty: T::Int, default: Some("104857600"), field: Field::Int { min: 1024, max: I32MAX, set: |c, v| c.socket_request_max_bytes = to_usize(v) }, doc: "The largest request frame (bytes); a larger one closes the connection.", dynamic: false, describe: Describe::Own, get: |c| some(c.socket_request_max_bytes) },
    BrokerConfigDef { name: "socket.send.buffer.bytes", ty: T::Int, default: Some("102400"), field: Field::Int { min: -1, max: I32MAX, set: |c, v| c.socket_send_buffer_bytes = to_i32(v) }, doc: "SO_SNDBUF of the listeners' connections (bytes; the kernel doubles it, capped by net.core.wmem_max); -1 or 0 keeps the kernel's autotuning.", dynamic: false, describe: Describe::Own, get: |c| some(c.socket_send_buffer_bytes) },
    BrokerConfigDef { name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", ty: T::Int, default: Some("10000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.txn.abort_timed_out_interval_ms = to_u64(v) }, doc: "How often (ms) open transactions past their timeout are aborted.", dynamic: false, describe: Describe::Own, get: |c| some(c.txn.abort_timed_out_interval_ms) },
    BrokerConfigDef { name: "transaction.max.timeout.ms", ty: T::Int, default: Some("900000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.txn.max_timeout_ms = to_i32(v) }, doc: "The largest transaction.timeout.ms a producer may ask for; larger gets INVALID_TRANSACTION_TIMEOUT.", dynamic: false, describe: Describe::Own, get: |c| some(c.txn.max_timeout_ms) },
    BrokerConfigDef { name: "transaction.remove.expired.transaction.cleanup.interval.ms", ty: T::Int, default: Some("3600000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.txn.remove_expired_interval_ms = to_u64(v) }, doc: "How often (ms) expired transactional ids are removed.", dynamic: false, describe: Describe::Own, get: |c| some(c.txn.remove_expired_interval_ms) },
    BrokerConfigDef { name: "transaction.state.log.min.isr", ty: T::Int, default: Some("2"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.cluster.transaction_state_min_isr = to_i32(v) }, doc: "min.insync.replicas of __transaction_state.", dynamic: false, describe: Describe::Own, get: |c| some(c.cluster.transaction_state_min_isr) },
    BrokerConfigDef { name: "transaction.state.log.num.partitions", ty: T::Int, default: Some("50"), field: Field::Int { min: 1, max: 100_000, set: |c, v| c.txn.state_log_partitions = to_i32(v) }, doc: "Partitions of __transaction_state (created on the first transactional lookup).", dynamic: false, describe: Describe::Own, get: |c| some(c.txn.state_log_partitions) },
    BrokerConfigDef { name: "transaction.state.log.replication.factor", ty: T::Short, default: Some("3"), field: Field::Int { min: 1, max: 32767, set: |c, v| c.cluster.transaction_state_replication_factor = to_i16(v) }, doc: "Replication factor of __transaction_state; a single-voter cluster uses at most its broker count.", dynamic: false, describe: Describe::Own, get: |c| some(c.cluster.transaction_state_replication_factor) },
    BrokerConfigDef { name: "transaction.state.log.segment.bytes", ty: T::Int, default: Some("104857600"), field: Field::Int { min: 1024, max: I32MAX, set: |c, v| c.txn.state_log_segment_bytes = to_u64(v) }, doc: "Segment size of __transaction_state (bytes).", dynamic: false, describe: Describe::Own, get: |c| some(c.txn.state_log_segment_bytes) },
    BrokerConfigDef { name: "transactional.id.expiration.ms", ty: T::Int, default: Some("604800000"), field: Field::Int { min: 1, max: I32MAX, set: |c, v| c.txn.id_expiration_ms = v }, doc: "A transactional id with no transaction for this long (ms) is forgotten.", dynamic: false, describe: Describe::Own, get: |c| some(c.txn.id_expiration_ms) },
];

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::cluster::topic_config::broker_key_entries;
    use crate::config::topic_defs::{def_by_broker_key, TOPIC_CONFIGS};

    #[test]
    fn no_duplicate_keys_and_sorted() {
        let names: Vec<&str> = BROKER_CONFIGS.iter().map(|d| d.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            names, sorted,
            "BROKER_CONFIGS must be sorted, without duplicates"
        );
    }

    /// Kafka's INT keys are 32-bit (its ConfigDef parses them as an
    /// Integer): their range here is within i32, and a value past
    /// i32::MAX is refused. Every INT and LONG key is an integer field.
    #[test]
    fn int_keys_are_32_bit() {
        let mut ints = 0;
        for d in BROKER_CONFIGS {
            match (d.ty, d.field) {
                (T::Int, Field::Int { min, max, .. }) => {
                    assert!(
                        i32::try_from(min).is_ok() && i32::try_from(max).is_ok() && min <= max,
                        "{}: INT range [{min}, {max}] is not within i32",
                        d.name
                    );
                    let mut c = Config::blank();
                    let past = (i64::from(i32::MAX) + 1).to_string();
                    assert!(d.apply(&mut c, &past).is_err(), "{}={past}", d.name);
                    ints += 1;
                }
                (T::Long, Field::Int { .. }) => {}
                (T::Short, Field::Int { min, max, .. }) => {
                    assert!(
                        i16::try_from(min).is_ok() && i16::try_from(max).is_ok(),
                        "{}: SHORT range [{min}, {max}] is not within i16",
                        d.name
                    );
                }
                (T::Int | T::Long | T::Short, _) => {
                    panic!(
                        "{}: an INT, LONG or SHORT key that is not Field::Int",
                        d.name
                    )
                }
                (T::Boolean | T::String | T::Double | T::List | T::Class | T::Password, _) => {}
            }
        }
        assert!(ints > 20, "{ints} INT keys");
    }

    #[test]
    fn every_default_applies_and_reads_back() {
        let c = Config::default();
        for d in BROKER_CONFIGS {
            let Some(v) = d.default else { continue };
            let mut blank = Config::blank();
            assert!(d.apply(&mut blank, v).is_ok(), "{}={v}", d.name);
            assert_eq!((d.get)(&c).as_deref(), Some(v), "{}", d.name);
        }
    }

    /// The group and transaction settings start from their structs'
    /// defaults (`config/coordinators.rs`); those must be the table's.
    #[test]
    fn group_and_txn_defaults_agree_with_the_table() {
        let c = Config::default();
        assert_eq!(
            format!("{:?}", c.group),
            format!("{:?}", crate::group::GroupConfig::default())
        );
        assert_eq!(
            format!("{:?}", c.txn),
            format!("{:?}", crate::txn::TxnConfig::default())
        );
    }

    /// A key is a broker key of a topic config exactly when the table says
    /// it is described as one, and then its type and default are the topic
    /// table's.
    #[test]
    fn topic_synonyms_agree_with_the_topic_table() {
        for d in BROKER_CONFIGS {
            let syn = def_by_broker_key(d.name);
            assert_eq!(
                syn.is_some(),
                d.describe == Describe::TopicSynonym,
                "{}",
                d.name
            );
            if let Some((_, s)) = syn {
                assert_eq!(s.default, d.default, "{}", d.name);
            }
        }
        let entries = broker_key_entries(&Config::default());
        for d in BROKER_CONFIGS
            .iter()
            .filter(|d| d.describe == Describe::TopicSynonym)
        {
            let e = entries.iter().find(|e| e.name == d.name);
            assert_eq!(e.map(|e| e.ty), Some(d.ty), "{}", d.name);
        }
    }

    /// Every entry marked Own is described, every described key is in one
    /// of the two tables, no key is described twice, and keys not marked
    /// Own or TopicSynonym are not described.
    #[test]
    fn table_and_describe_agree() {
        let c = Config::default();
        let own: BTreeSet<&str> = c.describe().into_keys().collect();
        let synonyms: Vec<&str> = broker_key_entries(&c).iter().map(|e| e.name).collect();
        let synonym_set: BTreeSet<&str> = synonyms.iter().copied().collect();
        assert_eq!(
            synonyms.len(),
            synonym_set.len(),
            "a broker key described twice"
        );
        assert!(
            own.is_disjoint(&synonym_set),
            "{:?}",
            own.intersection(&synonym_set)
        );
        for d in BROKER_CONFIGS {
            match d.describe {
                Describe::Own => assert!(own.contains(d.name), "{}", d.name),
                Describe::TopicSynonym => assert!(synonym_set.contains(d.name), "{}", d.name),
                Describe::Hidden(_) => {
                    assert!(
                        !own.contains(d.name) && !synonym_set.contains(d.name),
                        "{}",
                        d.name
                    )
                }
            }
        }
        for k in &own {
            assert!(
                broker_def(k).is_some_and(|d| d.describe == Describe::Own),
                "{k}"
            );
        }
        for k in &synonym_set {
            assert!(def_by_broker_key(k).is_some(), "{k}");
        }
        // Today's broker resource: 97 own settings, read-only.
        assert_eq!(own.len(), 97);
        assert!(BROKER_CONFIGS.iter().all(|d| !d.dynamic));
    }

    /// The broker resource's own settings with every default: the 21 that
    /// DescribeConfigs reported before the table, unchanged, and the keys
    /// Kafka 4.4 describes too (a null value where Kafka's key has no value).
    #[test]
    fn described_defaults_are_unchanged() {
        let got: Vec<(&str, Option<String>)> = Config::default().describe().into_iter().collect();
        let want: [(&str, Option<&str>); 97] = [
            ("advertised.listeners", None),
            ("auto.create.topics.enable", Some("true")),
            ("auto.leader.rebalance.enable", Some("true")),
            ("broker.heartbeat.interval.ms", Some("2000")),
            ("broker.id", Some("1")),
            ("broker.rack", None),
            ("broker.session.timeout.ms", Some("9000")),
            ("controller.listener.names", None),
            ("controller.quorum.bootstrap.servers", Some("")),
            ("controller.quorum.election.timeout.ms", Some("1000")),
            ("controller.quorum.request.timeout.ms", Some("2000")),
            ("controller.quorum.voters", Some("")),
            ("controller.quota.window.num", Some("11")),
            ("controller.quota.window.size.seconds", Some("1")),
            ("controller.socket.timeout.ms", Some("30000")),
            ("default.replication.factor", Some("1")),
            ("delete.topic.enable", Some("true")),
            (
                "errors.deadletterqueue.auto.create.topics.enable",
                Some("false"),
            ),
            ("errors.deadletterqueue.topic.name.prefix", Some("dlq.")),
            ("group.consumer.assignment.interval.ms", Some("1000")),
            ("group.consumer.heartbeat.interval.ms", Some("5000")),
            ("group.consumer.max.assignment.interval.ms", Some("15000")),
            ("group.consumer.max.heartbeat.interval.ms", Some("15000")),
            ("group.consumer.max.session.timeout.ms", Some("60000")),
            ("group.consumer.max.size", Some("2147483647")),
            ("group.consumer.migration.policy", Some("bidirectional")),
            ("group.consumer.min.assignment.interval.ms", Some("0")),
            ("group.consumer.min.heartbeat.interval.ms", Some("5000")),
            ("group.consumer.min.session.timeout.ms", Some("45000")),
            ("group.consumer.session.timeout.ms", Some("45000")),
            ("group.initial.rebalance.delay.ms", Some("3000")),
            ("group.max.session.timeout.ms", Some("1800000")),
            ("group.max.size", Some("2147483647")),
            ("group.min.session.timeout.ms", Some("6000")),
            ("group.share.assignors", Some("simple")),
            ("group.share.delivery.count.limit", Some("5")),
            ("group.share.heartbeat.interval.ms", Some("5000")),
            ("group.share.max.delivery.count.limit", Some("10")),
            ("group.share.max.heartbeat.interval.ms", Some("15000")),
            ("group.share.max.record.lock.duration.ms", Some("60000")),
            ("group.share.max.session.timeout.ms", Some("60000")),
            ("group.share.max.share.sessions", Some("2000")),
            ("group.share.max.size", Some("200")),
            ("group.share.min.delivery.count.limit", Some("2")),
            ("group.share.min.heartbeat.interval.ms", Some("5000")),
            ("group.share.min.record.lock.duration.ms", Some("15000")),
            ("group.share.min.session.timeout.ms", Some("45000")),
            ("group.share.partition.max.record.locks", Some("2000")),
            ("group.share.record.lock.duration.ms", Some("30000")),
            ("group.share.session.timeout.ms", Some("45000")),
            ("inter.broker.listener.name", None),
            ("leader.imbalance.check.interval.seconds", Some("300")),
            (
                "listener.security.protocol.map",
                Some("SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"),
            ),
            ("listeners", Some("PLAINTEXT://127.0.0.1:9092")),
            ("log.cleaner.backoff.ms", Some("15000")),
            ("log.dir", Some("./data")),
            ("log.dirs", Some("./data")),
            ("log.initial.task.delay.ms", Some("30000")),
            ("log.retention.check.interval.ms", Some("300000")),
            ("max.incremental.fetch.session.cache.slots", Some("1000")),
            ("node.id", Some("1")),
            ("num.partitions", Some("1")),
            ("offset.metadata.max.bytes", Some("4096")),
            ("offsets.retention.check.interval.ms", Some("600000")),
            ("offsets.retention.minutes", Some("10080")),
            ("offsets.topic.num.partitions", Some("50")),
            ("offsets.topic.replication.factor", Some("3")),
            ("offsets.topic.segment.bytes", Some("104857600")),
            ("process.roles", None),
            ("producer.id.expiration.check.interval.ms", Some("600000")),
            ("producer.id.expiration.ms", Some("86400000")),
            ("quota.window.num", Some("11")),
            ("quota.window.size.seconds", Some("1")),
            ("replica.fetch.backoff.ms", Some("1000")),
            ("replica.fetch.max.bytes", Some("1048576")),
            ("replica.fetch.response.max.bytes", Some("10485760")),
            ("replica.fetch.wait.max.ms", Some("500")),
            (
                "replica.high.watermark.checkpoint.interval.ms",
                Some("5000"),
            ),
            ("replica.lag.time.max.ms", Some("30000")),
            ("replica.socket.receive.buffer.bytes", Some("65536")),
            ("replica.socket.timeout.ms", Some("30000")),
            (
                "share.coordinator.snapshot.update.records.per.snapshot",
                Some("500"),
            ),
            ("share.coordinator.state.topic.min.isr", Some("2")),
            ("share.coordinator.state.topic.num.partitions", Some("50")),
            (
                "share.coordinator.state.topic.replication.factor",
                Some("3"),
            ),
            (
                "share.coordinator.state.topic.segment.bytes",
                Some("104857600"),
            ),
            ("socket.receive.buffer.bytes", Some("-1")),
            ("socket.request.max.bytes", Some("104857600")),
            ("socket.send.buffer.bytes", Some("102400")),
            (
                "transaction.abort.timed.out.transaction.cleanup.interval.ms",
                Some("10000"),
            ),
            ("transaction.max.timeout.ms", Some("900000")),
            (
                "transaction.remove.expired.transaction.cleanup.interval.ms",
                Some("3600000"),
            ),
            ("transaction.state.log.min.isr", Some("2")),
            ("transaction.state.log.num.partitions", Some("50")),
            ("transaction.state.log.replication.factor", Some("3")),
            ("transaction.state.log.segment.bytes", Some("104857600")),
            ("transactional.id.expiration.ms", Some("604800000")),
        ];
        let want: Vec<(&str, Option<String>)> = want
            .iter()
            .map(|(k, v)| (*k, v.map(str::to_string)))
            .collect();
        assert_eq!(got, want);
    }

    /// A KRaft combined node's server.properties: the keys are described
    /// with the values given, in Kafka's text form (STRING keys as given,
    /// trimmed: host names unresolved, the map in the order given).
    #[test]
    fn kraft_keys_described_as_given() {
        let mut c = Config::default();
        for (k, v) in [
            ("process.roles", "controller, broker"),
            ("node.id", "1"),
            ("controller.quorum.voters", "1@127.0.0.1:9093"),
            (
                "listeners",
                " PLAINTEXT://localhost:9092 , CONTROLLER://127.0.0.1:9093 ",
            ),
            (
                "advertised.listeners",
                "PLAINTEXT://example:9092,CONTROLLER://example:9093",
            ),
            ("controller.listener.names", "CONTROLLER"),
            ("inter.broker.listener.name", "plaintext"),
            (
                "listener.security.protocol.map",
                "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            ),
            ("group.max.size", "10"),
            ("offsets.retention.minutes", "60"),
        ] {
            assert!(c.set(k, v).is_ok(), "{k}={v}");
        }
        assert!(c.validate().is_ok());
        let d = c.describe();
        let get = |k: &str| d.get(k).cloned().flatten();
        assert_eq!(get("process.roles").as_deref(), Some("controller,broker"));
        assert_eq!(
            get("listeners").as_deref(),
            Some("PLAINTEXT://localhost:9092,CONTROLLER://127.0.0.1:9093")
        );
        assert_eq!(
            get("advertised.listeners").as_deref(),
            Some("PLAINTEXT://example:9092,CONTROLLER://example:9093")
        );
        assert_eq!(
            get("controller.quorum.voters").as_deref(),
            Some("1@127.0.0.1:9093")
        );
        assert_eq!(
            get("controller.listener.names").as_deref(),
            Some("CONTROLLER")
        );
        assert_eq!(
            get("inter.broker.listener.name").as_deref(),
            Some("plaintext")
        );
        assert_eq!(
            get("listener.security.protocol.map").as_deref(),
            Some("PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT")
        );
        assert_eq!(get("group.max.size").as_deref(), Some("10"));
        assert_eq!(get("offsets.retention.minutes").as_deref(), Some("60"));
        assert_eq!(get("cluster.id"), None);
        for hidden in [
            "cluster.id",
            "fjord.shards",
            "metrics.listener",
            "reactor.stall.threshold.us",
        ] {
            assert!(!d.contains_key(hidden), "{hidden}");
        }
    }

    /// The same validation messages as before the table.
    #[test]
    fn validation_messages() {
        let mut c = Config::default();
        let err = |c: &mut Config, k: &str, v: &str| c.set(k, v).err().map(|e| e.to_string());
        assert_eq!(
            err(&mut c, "num.partitions", "0").as_deref(),
            Some("invalid value \"0\" for num.partitions: an integer in [1, 1000000]")
        );
        assert_eq!(
            err(&mut c, "log.cleaner.backoff.ms", "x").as_deref(),
            Some("invalid value \"x\" for log.cleaner.backoff.ms: an integer in [1, 9223372036854775807]")
        );
        assert_eq!(
            err(&mut c, "delete.topic.enable", "yes").as_deref(),
            Some("invalid value \"yes\" for delete.topic.enable: true or false")
        );
        assert_eq!(
            err(&mut c, "advertised.listeners", "PLAINTEXT://h:0").as_deref(),
            Some("invalid value \"0\" for advertised.listeners: an integer in [1, 65535]")
        );
        assert_eq!(
            err(&mut c, "log.roll.hours", "2000000").as_deref(),
            Some("invalid value \"2000000\" for log.roll.hours: an integer in [1, 1000000]")
        );
        // A topic config's broker key: the reason once, not nested.
        assert_eq!(
            err(&mut c, "log.segment.bytes", "10").as_deref(),
            Some("invalid value \"10\" for log.segment.bytes: an integer in [14, 2147483647]")
        );
        assert!(c.set("log.dirs", " , ").is_err());
        assert!(c.set("default.replication.factor", "0").is_err());
        c.set("advertised.listeners", "PLAINTEXT://example:9093")
            .unwrap_or_default();
        assert_eq!(c.client_advertised(), Some(("example".to_string(), 9093)));
        c.set("broker.id", "7").unwrap_or_default();
        assert_eq!(c.node_id, 7);
        assert!(c.validate().is_ok(), "broker.id alone");
        c.set("node.id", "7").unwrap_or_default();
        assert!(c.validate().is_ok(), "the same id twice");
        c.set("node.id", "5").unwrap_or_default();
        assert_eq!(
            c.validate().map_err(|e| e.to_string()).err().as_deref(),
            Some("invalid value \"7\" for broker.id: the same id as node.id (5)")
        );
        c.set("broker.id", "5").unwrap_or_default();
        c.set("offsets.retention.minutes", "2").unwrap_or_default();
        assert_eq!(c.group.offsets_retention_ms, 120_000);
        c.set("log.roll.hours", "2").unwrap_or_default();
        assert_eq!(c.log_roll_ms, 7_200_000);
        c.set("log.message.timestamp.type", "LogAppendTime")
            .unwrap_or_default();
        assert_eq!(c.log_message_timestamp_type, TimestampType::LogAppendTime);
        c.set("no.such.key", "1").unwrap_or_default();
        assert_eq!(c.unknown_keys, ["no.such.key"]);
        // Topic-level names are not broker keys.
        assert!(TOPIC_CONFIGS
            .iter()
            .all(|t| broker_def(t.name).is_none() || def_by_broker_key(t.name).is_some()));
    }

    /// docs/configuration.md names every key of the table.
    #[test]
    fn every_key_is_documented() {
        let docs = include_str!("../../docs/configuration.md");
        for d in BROKER_CONFIGS {
            assert!(
                docs.contains(&format!("`{}`", d.name)),
                "{} is not in docs/configuration.md",
                d.name
            );
        }
    }
}
