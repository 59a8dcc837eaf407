//! Broker configuration with Kafka's property names.
//!
//! Sources, later ones win: built-in defaults (Kafka's defaults), a
//! `server.properties`-style file (`--config`), then CLI flags and
//! `--override key=value`. Every value is validated at start; an invalid value
//! is rejected with a [`ConfigError`] naming the key, the value and the allowed
//! range.
//!
//! The broker's keys are one table, [`BROKER_CONFIGS`] (`broker_defs.rs`):
//! Kafka key, type, default, validation, description, whether it is
//! dynamic and how DescribeConfigs reports it. [`Config::set`], the
//! defaults and [`Config::describe`] all read it. The broker keys of topic
//! configs (`log.retention.ms`, …) are the synonyms of [`TOPIC_CONFIGS`]
//! (`topic_config_defs.rs`, with its types and checks in [`topic_defs`]).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::storage::TimestampType;

pub mod broker_defs;
mod coordinators;
mod error;
pub mod kraft;
pub mod security;
mod topic_config_defs;
pub mod topic_defs;

pub use broker_defs::{broker_def, BrokerConfigDef, Describe, Field, BROKER_CONFIGS};
pub use coordinators::{GroupConfig, ShareCoordinatorConfig, TxnConfig};
pub use error::InvalidConfig;
pub use kraft::{HostPort, KraftConfig, ProcessRoles, QuorumVoter, SecurityProtocol};
pub use security::SecuritySettings;
pub use topic_defs::TOPIC_CONFIGS;

/// A configuration error found at start. The message names the key, the value
/// and what is allowed.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file given with `--config` could not be read.
    #[error("cannot read config file {path}: {source}")]
    File {
        /// Path of the file.
        path: PathBuf,
        /// Underlying I/O error.
        source: std::io::Error,
    },
    /// The file cannot be read as a Java properties file.
    #[error("{path}:{line}: not a properties line: {text}")]
    Syntax {
        /// Path of the file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The offending text.
        text: String,
    },
    /// A key has a value outside its allowed range or of the wrong type.
    #[error("invalid value {value:?} for {key}: {allowed}")]
    Invalid {
        /// Kafka property name.
        key: String,
        /// The rejected value.
        value: String,
        /// What the key accepts.
        allowed: String,
    },
    /// A key this broker does not know. Kafka logs unknown keys and goes on; we
    /// do the same for keys that look like Kafka's, but reject obvious typos of
    /// known keys. (Not used for unknown keys: see [`Config::unknown_keys`].)
    #[error("unknown config key {0}")]
    Unknown(String),
}

/// One listener, `NAME://host:port` in Kafka's `listeners` syntax.
#[derive(Debug, Clone, PartialEq)]
pub struct Listener {
    /// Listener name, upper-cased (`PLAINTEXT`, `CONTROLLER`, …); its
    /// security protocol comes from `listener.security.protocol.map`, and
    /// only PLAINTEXT is served.
    pub name: String,
    /// Address to bind; port 0 picks a free port.
    pub addr: SocketAddr,
}

/// The listener and KRaft keys as given, for DescribeConfigs: Kafka
/// reports a STRING config's text and a LIST config's items, not a parsed
/// form (host names stay unresolved, case and order are kept). Empty or
/// None until set.
#[derive(Debug, Clone, Default)]
pub struct GivenText {
    /// `listeners` (a LIST): its items trimmed, joined by commas.
    pub listeners: String,
    /// `advertised.listeners` (a LIST), as `listeners`; None when not set.
    pub advertised_listeners: Option<String>,
    /// `listener.security.protocol.map` as given; None when not set or
    /// empty (Kafka's default map applies).
    pub protocol_map: Option<String>,
    /// `process.roles` (a LIST): its items trimmed, joined by commas, in
    /// the order given; None when not set.
    pub process_roles: Option<String>,
    /// `controller.listener.names` (a LIST), as `listeners`; None when not
    /// set or empty.
    pub controller_listener_names: Option<String>,
    /// `inter.broker.listener.name` as given; None when not set or empty.
    pub inter_broker_listener_name: Option<String>,
}

/// One entry of `advertised.listeners`: `NAME://host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdvertisedListener {
    /// Listener name, upper-cased; `PLAINTEXT` when the entry has none.
    pub name: String,
    /// Host given to clients in Metadata (not resolved).
    pub host: String,
    /// Port given to clients in Metadata.
    pub port: u16,
}

/// The settings of a broker in a cluster (Kafka's names; defaults are
/// Kafka's and are set from the config table).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterConfig {
    /// `broker.session.timeout.ms`: a broker whose heartbeats stop for this
    /// long is fenced (ms). Default 9000.
    pub broker_session_timeout_ms: u64,
    /// `broker.heartbeat.interval.ms`: how often a broker heartbeats the
    /// active controller (ms). Default 2000.
    pub broker_heartbeat_interval_ms: u64,
    /// `controller.quorum.election.timeout.ms`: how long a voter waits for
    /// the leader before it starts an election (ms). Default 1000.
    pub election_timeout_ms: u64,
    /// `controller.quorum.request.timeout.ms`: how long a request for the
    /// active controller is retried (ms). Default 2000.
    pub request_timeout_ms: u64,
    /// `controller.socket.timeout.ms`: how long a client's request that
    /// needs the active controller (an admin request: topics, configs,
    /// ACLs, quotas, features; a producer id block) may wait for it to be
    /// committed and applied before the client gets REQUEST_TIMED_OUT (ms),
    /// as Kafka's broker forwards such requests. Default 30000.
    pub controller_socket_timeout_ms: u64,
    /// `broker.rack`: this broker's rack, for rack-aware replica placement.
    pub rack: Option<String>,
    /// `offsets.topic.replication.factor`. Default 3.
    pub offsets_topic_replication_factor: i16,
    /// `transaction.state.log.replication.factor`. Default 3.
    pub transaction_state_replication_factor: i16,
    /// `transaction.state.log.min.isr`. Default 2.
    pub transaction_state_min_isr: i32,
    /// `replica.lag.time.max.ms`: a follower that has not caught up with the
    /// leader's LEO for this long leaves the ISR (ms). Default 30000.
    pub replica_lag_time_max_ms: u64,
    /// `replica.fetch.wait.max.ms`: how long a follower's fetch waits at the
    /// leader for new data (ms). Default 500.
    pub replica_fetch_wait_max_ms: u64,
    /// `replica.fetch.max.bytes`: a follower fetch's limit per partition
    /// (bytes). Default 1048576.
    pub replica_fetch_max_bytes: u64,
    /// `replica.fetch.response.max.bytes`: a follower fetch's limit for the
    /// whole response (bytes). Default 10485760.
    pub replica_fetch_response_max_bytes: u64,
    /// `replica.fetch.backoff.ms`: how long a follower waits after a failed
    /// fetch before it tries again (ms). Default 1000.
    pub replica_fetch_backoff_ms: u64,
    /// `auto.leader.rebalance.enable`: the active controller gives each
    /// partition's preferred replica its leadership back when it is an
    /// alive ISR member. Default true.
    pub auto_leader_rebalance_enable: bool,
    /// `leader.imbalance.check.interval.seconds`: how often (s) the active
    /// controller looks for partitions not led by their preferred replica.
    /// Default 300.
    pub leader_imbalance_check_interval_s: u64,
    /// `replica.socket.timeout.ms`: how long a follower's fetch may go
    /// unanswered beyond `replica.fetch.wait.max.ms` before the connection
    /// is dropped and made again (ms). Default 30000.
    pub replica_socket_timeout_ms: u64,
    /// `replica.socket.receive.buffer.bytes`: SO_RCVBUF of a follower's
    /// fetch connections to its leaders (bytes; Linux doubles it); 0 or -1 keeps
    /// the kernel's autotuning. Default 65536, Kafka's.
    pub replica_socket_receive_buffer_bytes: i32,
    /// `replica.high.watermark.checkpoint.interval.ms`: how often each
    /// shard writes its partitions' high watermarks to its
    /// `replication-offset-checkpoint` file (ms). Default 5000.
    pub replica_high_watermark_checkpoint_interval_ms: u64,
}

/// Typed broker configuration. Field docs name the Kafka property.
#[derive(Debug, Clone)]
pub struct Config {
    /// `node.id`: this broker's id in Metadata responses. Default 1.
    pub node_id: i32,
    /// The id given as `node.id` and as `broker.id` (its older name), each
    /// when set: Kafka refuses two different ids ([`Config::validate`]).
    pub ids_given: (Option<i32>, Option<i32>),
    /// `listeners`: where to accept Kafka clients. Default `PLAINTEXT://127.0.0.1:9092`.
    pub listeners: Vec<Listener>,
    /// `advertised.listeners`: every entry, by listener name. The broker
    /// gives clients [`Config::client_advertised`], the entry of the client
    /// listener; with none, the bound listener.
    pub advertised_listeners: Vec<AdvertisedListener>,
    /// The text of the listener and KRaft keys as Kafka describes them: a
    /// STRING as given (trimmed), a LIST as its items.
    pub given_text: GivenText,
    /// The KRaft keys (`process.roles`, `controller.quorum.voters`, …):
    /// checked and kept for the metadata quorum.
    pub kraft: KraftConfig,
    /// `log.dirs` (or `log.dir`): data directory. Default `./data`. Only the first is used.
    pub log_dirs: Vec<PathBuf>,
    /// Number of shards (pinned executors). Default: every CPU the process may use.
    pub shards: Option<usize>,
    /// `num.partitions`: partitions of auto-created topics and of CreateTopics with -1. Default 1.
    pub num_partitions: i32,
    /// `default.replication.factor`: only 1 is possible on one node. Default 1.
    pub default_replication_factor: i16,
    /// `auto.create.topics.enable`: Metadata may create unknown topics. Default true.
    pub auto_create_topics_enable: bool,
    /// `message.max.bytes`: largest record batch accepted (bytes). Default 1048588.
    pub message_max_bytes: usize,
    /// `socket.request.max.bytes`: largest request frame (bytes). Default 104857600.
    pub socket_request_max_bytes: usize,
    /// `socket.send.buffer.bytes`: SO_SNDBUF of every connection a listener
    /// accepts (bytes; Linux doubles it); 0 or -1 keeps the kernel's
    /// autotuning. Default 102400, Kafka's.
    pub socket_send_buffer_bytes: i32,
    /// `socket.receive.buffer.bytes`: SO_RCVBUF of those connections (bytes);
    /// 0 or -1 keeps the kernel's autotuning. Default -1, where Kafka's is
    /// 102400 (docs/decisions/socket-buffers.md).
    pub socket_receive_buffer_bytes: i32,
    /// `quota.window.num` and `quota.window.size.seconds`: the samples of
    /// the client quotas' rates (defaults 11 and 1 s).
    pub quota_windows: crate::quota::rate::Windows,
    /// `controller.quota.window.num` and
    /// `controller.quota.window.size.seconds`: those of the controller
    /// mutation quota (defaults 11 and 1 s).
    pub controller_quota_windows: crate::quota::rate::Windows,
    /// `max.incremental.fetch.session.cache.slots`: how many fetch sessions
    /// (KIP-227) the broker keeps, split evenly over the shards; 0 serves
    /// every fetch sessionless.
    pub max_incremental_fetch_session_cache_slots: usize,
    /// `log.segment.bytes`: roll a segment at this size (bytes). Default 1 GiB.
    pub log_segment_bytes: u64,
    /// `log.roll.ms` / `log.roll.hours`: roll a segment this old (ms). Default 168 h.
    pub log_roll_ms: u64,
    /// `log.index.interval.bytes`: bytes between sparse index entries. Default 4096.
    pub log_index_interval_bytes: u32,
    /// `log.index.size.max.bytes`: index size that forces a roll (bytes). Default 10 MiB.
    pub log_index_size_max_bytes: u32,
    /// `log.flush.interval.messages`: fdatasync after this many messages; None = page cache only (Kafka's default, Long.MAX_VALUE).
    pub log_flush_interval_messages: Option<u64>,
    /// `log.flush.interval.ms`: fdatasync data older than this (ms); None = page cache only.
    pub log_flush_interval_ms: Option<u64>,
    /// `log.message.timestamp.type`: CreateTime or LogAppendTime. Default CreateTime.
    pub log_message_timestamp_type: TimestampType,
    /// `delete.topic.enable`. Default true.
    pub delete_topic_enable: bool,
    /// `cluster.id` override; otherwise read from or written to `meta.properties`.
    pub cluster_id: Option<String>,
    /// Group coordinator settings (`group.*`, `offsets.*`).
    pub group: GroupConfig,
    /// Broker-level defaults of topic configs, keyed by the topic-level name
    /// (`log.retention.ms=…` is stored as `retention.ms`); see
    /// `cluster::topic_config`.
    pub topic_defaults: BTreeMap<String, String>,
    /// The broker keys of topic configs as given (`log.retention.hours` →
    /// `100`), for DescribeConfigs' synonyms.
    pub broker_synonyms: BTreeMap<String, String>,
    /// `log.retention.check.interval.ms`: how often retention runs (ms). Default 300000.
    pub log_retention_check_interval_ms: u64,
    /// `log.cleaner.backoff.ms`: how often the cleaner looks for work (ms). Default 15000.
    pub log_cleaner_backoff_ms: u64,
    /// `producer.id.expiration.ms`: idle idempotent producers are forgotten after this (ms). Default 86400000.
    pub producer_id_expiration_ms: i64,
    /// `producer.id.expiration.check.interval.ms`: how often idle producers are looked for (ms). Default 600000.
    pub producer_id_expiration_check_interval_ms: u64,
    /// `log.initial.task.delay.ms`: delay after start-up before the first
    /// retention, cleaner and producer-expiration passes (ms). Default 30000.
    pub log_initial_task_delay_ms: u64,
    /// Transaction coordinator settings (`transaction.*`, `transactional.id.*`).
    pub txn: TxnConfig,
    /// Share coordinator settings (`share.coordinator.*`, KIP-932).
    pub share_coordinator: ShareCoordinatorConfig,
    /// `reactor.stall.threshold.us` (Fjord's own): a task poll that keeps a
    /// shard busy longer than this is counted and logged as a reactor
    /// stall (µs); 0 turns the detector off. Default 500.
    pub reactor_stall_threshold_us: u64,
    /// `reactor.stall.rusage` (Fjord's own): each stall line also gives the
    /// shard thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), its time off the
    /// CPU split into waiting for the core and the rest (the run-queue wait
    /// of /proc/thread-self/schedstat), context switches and page faults
    /// (getrusage(2), `RUSAGE_THREAD`) during the stalled poll, and when
    /// the poll began on CLOCK_MONOTONIC: three system calls per task poll
    /// while on, three more per stall line; nothing while the detector is
    /// off (`reactor.stall.threshold.us=0`). Tells a poll that worked from
    /// one that waited for another thread or for the hypervisor. Default
    /// false.
    pub reactor_stall_rusage: bool,
    /// `metrics.listener` (Fjord's own): `host:port` of the Prometheus-text
    /// metrics endpoint (`GET /metrics`); port 0 picks a free port. Default
    /// unset (no endpoint).
    pub metrics_listener: Option<SocketAddr>,
    /// The cluster settings: broker sessions, the metadata quorum's
    /// timeouts, `broker.rack`, the internal topics' replication.
    pub cluster: ClusterConfig,
    /// The security keys (`ssl.*`, `sasl.*`, `super.users`, …, broker-wide
    /// and `listener.name.<listener>.…`), as text; read and checked at
    /// start (`security::Security::from_config`).
    pub security: SecuritySettings,
    /// Keys given that this broker does not use (logged at start, like Kafka).
    pub unknown_keys: Vec<String>,
    /// The keys of the broker table given (`server.properties` or flags)
    /// and accepted: DescribeConfigs reports them as STATIC_BROKER_CONFIG
    /// synonyms of group configs, even when given Kafka's default value.
    pub given_keys: std::collections::BTreeSet<String>,
}

impl Default for Config {
    /// Kafka's defaults, from [`BROKER_CONFIGS`]: every entry with a
    /// default is applied to a blank config (the unit tests check that each
    /// default is valid and reads back as written).
    fn default() -> Self {
        let mut c = Config::blank();
        for d in BROKER_CONFIGS {
            if let Some(v) = d.default {
                // A default that did not apply would leave the blank value;
                // `every_default_applies` rules that out.
                let _ = d.apply(&mut c, v);
            }
        }
        // Only ids the operator gives count for `validate`.
        c.ids_given = (None, None);
        c
    }
}

impl Config {
    /// The config before the table's defaults: empty or zero where the
    /// table gives a default, unset where it gives none; the group and
    /// transaction settings start from their own defaults (the unit tests
    /// check that those agree with the table).
    fn blank() -> Self {
        Config {
            node_id: 0,
            listeners: Vec::new(),
            advertised_listeners: Vec::new(),
            given_text: GivenText::default(),
            kraft: KraftConfig::default(),
            log_dirs: Vec::new(),
            shards: None,
            num_partitions: 0,
            default_replication_factor: 0,
            auto_create_topics_enable: false,
            message_max_bytes: 0,
            socket_request_max_bytes: 0,
            socket_send_buffer_bytes: 0,
            socket_receive_buffer_bytes: 0,
            quota_windows: crate::quota::rate::Windows::default(),
            controller_quota_windows: crate::quota::rate::Windows::default(),
            max_incremental_fetch_session_cache_slots: 0,
            log_segment_bytes: 0,
            log_roll_ms: 0,
            log_index_interval_bytes: 0,
            log_index_size_max_bytes: 0,
            log_flush_interval_messages: None,
            log_flush_interval_ms: None,
            log_message_timestamp_type: TimestampType::CreateTime,
            delete_topic_enable: false,
            cluster_id: None,
            group: GroupConfig::default(),
            topic_defaults: BTreeMap::new(),
            broker_synonyms: BTreeMap::new(),
            log_retention_check_interval_ms: 0,
            log_cleaner_backoff_ms: 0,
            producer_id_expiration_ms: 0,
            producer_id_expiration_check_interval_ms: 0,
            log_initial_task_delay_ms: 0,
            txn: TxnConfig::default(),
            share_coordinator: ShareCoordinatorConfig::default(),
            reactor_stall_threshold_us: 0,
            reactor_stall_rusage: false,
            metrics_listener: None,
            cluster: ClusterConfig::default(),
            security: SecuritySettings::default(),
            unknown_keys: Vec::new(),
            given_keys: Default::default(),
            ids_given: (None, None),
        }
    }
}

/// Reads a `server.properties` (or client properties) file into ordered
/// key/value pairs as Java's `Properties.load` reads it (the
/// `java-properties` crate): `#` and `!` comments, a line ending in `\`
/// continued on the next, `key=value`, `key:value` and `key value`, and
/// escapes (`\n`, `\uXXXX`, …); keys and values trimmed, as Kafka's
/// config parsing trims them. Read as UTF-8 (ASCII files read the same as
/// in Java).
pub fn read_properties(path: &std::path::Path) -> Result<Vec<(String, String)>, ConfigError> {
    let file = std::fs::File::open(path).map_err(|source| ConfigError::File {
        path: path.to_path_buf(),
        source,
    })?;
    let mut out = Vec::new();
    java_properties::PropertiesIter::new_with_encoding(
        std::io::BufReader::new(file),
        encoding_rs::UTF_8,
    )
    .read_into(|k, v| out.push((k.trim().to_string(), v.trim().to_string())))
    .map_err(|e| ConfigError::Syntax {
        path: path.to_path_buf(),
        line: e.line_number().unwrap_or(0),
        text: e.to_string(),
    })?;
    Ok(out)
}

pub(crate) fn invalid(key: &str, value: &str, allowed: &str) -> ConfigError {
    ConfigError::Invalid {
        key: key.to_string(),
        value: value.to_string(),
        allowed: allowed.to_string(),
    }
}

/// Parses `NAME://host:port[,…]` (Kafka's `listeners` syntax; an entry
/// without `NAME://` is PLAINTEXT). Names are upper-cased and each given
/// once; the protocol of each name comes from
/// `listener.security.protocol.map` (checked by [`Config::validate`]).
pub fn parse_listeners(key: &str, value: &str) -> Result<Vec<Listener>, ConfigError> {
    let allowed = "a comma-separated list of NAME://host:port (PLAINTEXT://host:port)";
    let mut out: Vec<Listener> = Vec::new();
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, hostport) = item.split_once("://").unwrap_or(("PLAINTEXT", item));
        let name = name.to_ascii_uppercase();
        if !kraft::valid_listener_name(&name) {
            return Err(invalid(key, value, allowed));
        }
        if out.iter().any(|l| l.name == name) {
            return Err(invalid(key, value, "each listener name once"));
        }
        let addr = resolve(hostport).ok_or_else(|| invalid(key, value, allowed))?;
        out.push(Listener { name, addr });
    }
    if out.is_empty() {
        return Err(invalid(key, value, allowed));
    }
    Ok(out)
}

pub(crate) fn resolve(hostport: &str) -> Option<SocketAddr> {
    use std::net::ToSocketAddrs;
    let hp = if let Some(rest) = hostport.strip_prefix(':') {
        format!("0.0.0.0:{rest}")
    } else {
        hostport.to_string()
    };
    hp.to_socket_addrs().ok()?.next()
}

impl Config {
    /// Applies one `key=value` with Kafka's property name. Unknown keys are
    /// remembered in [`Config::unknown_keys`] and logged at start.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        if self.security.set(key, value) {
            return Ok(());
        }
        // Broker-level defaults of topic configs (log.retention.ms, …).
        if let Some((d, syn)) = topic_defs::def_by_broker_key(key) {
            let lowest = match d.allowed {
                topic_defs::Allowed::Range(lo, _) => lo,
                _ => 0,
            };
            let checked = match syn.unit {
                topic_defs::Unit::Same => topic_defs::check(d, key, value),
                unit => unit.convert(key, value, lowest).map(drop),
            };
            checked.map_err(|e| ConfigError::Invalid {
                key: key.to_string(),
                value: value.to_string(),
                allowed: match e {
                    // The check's own text already names the key and value.
                    InvalidConfig::BadValue { allowed, .. } => allowed,
                    // As the topic-config answer reads (INVALID_CONFIG's text).
                    other => format!("invalid config: {other}"),
                },
            })?;
            self.broker_synonyms
                .insert(key.to_string(), value.trim().to_string());
            // The synonym with the highest precedence that is set wins, as
            // in Kafka (log.retention.ms over .minutes over .hours).
            for s in d.synonyms {
                if let Some(v) = self.broker_synonyms.get(s.key) {
                    let v = s.unit.convert(s.key, v, lowest).unwrap_or_default();
                    self.topic_defaults.insert(d.name.to_string(), v);
                    break;
                }
            }
        }
        match broker_def(key) {
            Some(d) => {
                d.apply(self, value)?;
                self.given_keys.insert(key.to_string());
                Ok(())
            }
            // A topic config's broker key with no broker field of its own
            // is done above; any other key is unknown.
            None if topic_defs::def_by_broker_key(key).is_some() => Ok(()),
            None => {
                self.unknown_keys.push(key.to_string());
                Ok(())
            }
        }
    }

    /// Checks the settings against each other once all are applied, as
    /// Kafka's `KafkaConfig`: `broker.id` and `node.id` must name the same id
    /// when both are given; `process.roles` must be `broker,controller`
    /// (the only node this build runs) with this node among
    /// `controller.quorum.voters`; the listeners need a PLAINTEXT protocol
    /// and one of them must not be a controller listener (see
    /// `config::kraft`); the share group settings against each other
    /// (`GroupConfig::validate_share`, Kafka's `ShareGroupConfig` rules).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let (Some(node), Some(broker)) = self.ids_given {
            if node != broker {
                return Err(ConfigError::Invalid {
                    key: "broker.id".to_string(),
                    value: broker.to_string(),
                    allowed: format!("the same id as node.id ({node})"),
                });
            }
        }
        self.group.validate_share()?;
        kraft::validate(self)
    }

    /// The listener clients connect to: the first one not named in
    /// `controller.listener.names` (Kafka's rule). None only before
    /// [`Config::validate`] has passed.
    pub fn client_listener(&self) -> Option<&Listener> {
        self.listeners
            .iter()
            .find(|l| !self.kraft.is_controller_listener(&l.name))
    }

    /// The controller listener (the first listener named in
    /// `controller.listener.names`), recorded for the metadata quorum; not
    /// served yet.
    pub fn controller_listener(&self) -> Option<&Listener> {
        self.listeners
            .iter()
            .find(|l| self.kraft.is_controller_listener(&l.name))
    }

    /// The `(host, port)` given to clients in Metadata: the
    /// `advertised.listeners` entry of the client listener's name; None:
    /// advertise the bound client listener.
    pub fn client_advertised(&self) -> Option<(String, u16)> {
        let name = &self.client_listener()?.name;
        self.advertised_listeners
            .iter()
            .find(|a| &a.name == name)
            .map(|a| (a.host.clone(), a.port))
    }

    /// Applies pairs in order (later wins).
    pub fn apply<'a>(
        &mut self,
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<(), ConfigError> {
        for (k, v) in pairs {
            self.set(k, v)?;
        }
        Ok(())
    }

    /// The data directory (first of `log.dirs`).
    pub fn data_dir(&self) -> PathBuf {
        self.log_dirs
            .first()
            .cloned()
            .unwrap_or_else(|| PathBuf::from("./data"))
    }

    /// The broker's own settings as `(Kafka name, value)` pairs, for
    /// DescribeConfigs on the broker resource: the entries of
    /// [`BROKER_CONFIGS`] marked [`Describe::Own`] (the broker keys of topic
    /// configs come from `cluster::topic_config::broker_key_entries`).
    /// A key with no value (set or default) gives None: Kafka's null value.
    pub fn describe(&self) -> BTreeMap<&'static str, Option<String>> {
        BROKER_CONFIGS
            .iter()
            .filter(|d| d.describe == Describe::Own)
            .map(|d| (d.name, (d.get)(self)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_kafka() {
        let c = Config::default();
        assert_eq!(c.message_max_bytes, 1_048_588);
        assert_eq!(c.log_segment_bytes, 1_073_741_824);
        assert_eq!(c.listeners[0].addr.to_string(), "127.0.0.1:9092");
        assert!(c.log_flush_interval_messages.is_none());
    }

    #[test]
    fn invalid_value_names_key_and_range() {
        let mut c = Config::default();
        let e = c.set("num.partitions", "0").unwrap_err().to_string();
        assert!(
            e.contains("num.partitions") && e.contains("\"0\"") && e.contains("[1,"),
            "{e}"
        );
        let e = c
            .set("auto.create.topics.enable", "yes")
            .unwrap_err()
            .to_string();
        assert!(e.contains("true or false"), "{e}");
    }

    /// Read as Java reads a properties file: continuations, escapes, and
    /// the `key value` and `key:value` forms Kafka's docs use.
    #[test]
    fn properties_read_as_java_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("client.properties");
        std::fs::write(
            &path,
            "# comment\n! comment\nlisteners = PLAINTEXT://127.0.0.1:0\n\
             sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n    \
             username=\"admin\" \\\n    password=\"a\\u0062c\";\n\
             num.partitions 3\nlog.retention.ms:1000\nssl.truststore.certificates=-----BEGIN\\nX\\n\n",
        )
        .unwrap();
        let got = read_properties(&path).unwrap();
        let want: Vec<(String, String)> = [
            ("listeners", "PLAINTEXT://127.0.0.1:0"),
            (
                "sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" password=\"abc\";",
            ),
            ("num.partitions", "3"),
            ("log.retention.ms", "1000"),
            ("ssl.truststore.certificates", "-----BEGIN\nX"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn listeners_parse() {
        let l = parse_listeners("listeners", "PLAINTEXT://127.0.0.1:0").unwrap();
        assert_eq!(l[0].addr.port(), 0);
        let l = parse_listeners("listeners", "SSL://127.0.0.1:1,sasl_ssl://127.0.0.1:2").unwrap();
        assert_eq!(
            (l[0].name.as_str(), l[1].name.as_str()),
            ("SSL", "SASL_SSL")
        );
        assert!(parse_listeners("listeners", "SSL://127.0.0.1:1,SSL://127.0.0.1:2").is_err());
    }

    #[test]
    fn flush_interval_max_means_unset() {
        let mut c = Config::default();
        c.set("log.flush.interval.messages", "1").unwrap();
        assert_eq!(c.log_flush_interval_messages, Some(1));
        c.set("log.flush.interval.messages", &i64::MAX.to_string())
            .unwrap();
        assert_eq!(c.log_flush_interval_messages, None);
    }

    #[test]
    fn retention_units_and_precedence() {
        let mut c = Config::default();
        c.set("log.retention.ms", "5000").unwrap();
        c.set("log.retention.hours", "2").unwrap();
        // log.retention.ms wins whatever the order.
        assert_eq!(c.topic_defaults["retention.ms"], "5000");
        let mut c = Config::default();
        c.set("log.retention.minutes", "-1").unwrap();
        assert_eq!(c.topic_defaults["retention.ms"], "-1");
        c.set("log.roll.jitter.hours", "1").unwrap();
        assert_eq!(c.topic_defaults["segment.jitter.ms"], "3600000");
        assert!(c.set("log.roll.hours", "0").is_err());
        c.set("log.preallocate", "true").unwrap();
        assert_eq!(c.topic_defaults["preallocate"], "true");
        assert!(c.unknown_keys.is_empty(), "{:?}", c.unknown_keys);
    }

    #[test]
    fn background_task_timers() {
        let mut c = Config::default();
        assert_eq!(c.log_initial_task_delay_ms, 30_000);
        assert_eq!(c.producer_id_expiration_check_interval_ms, 600_000);
        c.set("log.initial.task.delay.ms", "0").unwrap();
        c.set("producer.id.expiration.check.interval.ms", "100")
            .unwrap();
        assert_eq!(c.log_initial_task_delay_ms, 0);
        assert_eq!(c.producer_id_expiration_check_interval_ms, 100);
        assert!(c
            .set("producer.id.expiration.check.interval.ms", "0")
            .is_err());
        assert!(c.unknown_keys.is_empty());
    }

    #[test]
    fn stall_threshold_and_metrics_listener() {
        let mut c = Config::default();
        assert_eq!(c.reactor_stall_threshold_us, 500);
        assert!(c.metrics_listener.is_none());
        c.set("reactor.stall.threshold.us", "0").unwrap();
        assert_eq!(c.reactor_stall_threshold_us, 0);
        assert!(!c.reactor_stall_rusage);
        c.set("reactor.stall.rusage", "true").unwrap();
        assert!(c.reactor_stall_rusage);
        assert!(c.set("reactor.stall.threshold.us", "-1").is_err());
        c.set("metrics.listener", "127.0.0.1:0").unwrap();
        assert_eq!(c.metrics_listener.map(|a| a.port()), Some(0));
        c.set("metrics.listener", "").unwrap();
        assert!(c.metrics_listener.is_none());
        let e = c.set("metrics.listener", "nohost").unwrap_err().to_string();
        assert!(e.contains("metrics.listener"), "{e}");
        assert!(c.unknown_keys.is_empty());
    }
}
