//! Topic-level configs as Kafka defines them, layered over the broker-level
//! defaults from `server.properties` (`log.retention.ms` for `retention.ms`,
//! …). One table ([`TOPIC_CONFIGS`]) drives validation, the effective
//! settings of a partition and DescribeConfigs (value, source, synonyms,
//! type, documentation).

use std::collections::BTreeMap;

use crate::config::Config;
use crate::error::MetadataError;
use crate::storage::{LogConfig, TimestampType};

/// A config's type as DescribeConfigs v3+ reports it (Kafka's ConfigType codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    /// true/false.
    Boolean = 1,
    /// Free text or an enumeration.
    String = 2,
    /// 32-bit integer.
    Int = 3,
    /// 64-bit integer.
    Long = 5,
    /// Floating point.
    Double = 6,
    /// Comma-separated list.
    List = 7,
}

/// Where a config's value comes from (DescribeConfigs `config_source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigSource {
    /// A topic override (DYNAMIC_TOPIC_CONFIG, 1).
    Topic = 1,
    /// The broker's `server.properties` or command line (STATIC_BROKER_CONFIG, 4).
    StaticBroker = 4,
    /// Kafka's default (DEFAULT_CONFIG, 5).
    Default = 5,
}

/// One topic config: its Kafka name, the broker key that supplies its
/// default, type, Kafka's default and a one-line description.
#[derive(Debug)]
pub struct ConfigDef {
    /// Topic-level name (`retention.ms`).
    pub name: &'static str,
    /// Broker-level synonym (`log.retention.ms`).
    pub broker_key: &'static str,
    /// Type.
    pub ty: ConfigType,
    /// Kafka's default value.
    pub default: &'static str,
    /// Inclusive numeric range for Int/Long/Double, or the allowed values.
    pub allowed: Allowed,
    /// What it does (DescribeConfigs v3 `documentation`).
    pub doc: &'static str,
}

/// Valid values of a config.
#[derive(Debug)]
pub enum Allowed {
    /// An integer in [min, max].
    Range(i64, i64),
    /// A number in [min, max].
    Ratio(f64, f64),
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// A non-empty comma-separated list of these strings.
    ListOf(&'static [&'static str]),
}

const I32MAX: i64 = i32::MAX as i64;

/// Every topic config Fjord knows, with Kafka's defaults.
pub const TOPIC_CONFIGS: &[ConfigDef] = &[
    ConfigDef { name: "cleanup.policy", broker_key: "log.cleanup.policy", ty: ConfigType::List, default: "delete", allowed: Allowed::ListOf(&["delete", "compact"]), doc: "delete: remove old segments by retention.ms/retention.bytes; compact: keep the latest record per key." },
    ConfigDef { name: "retention.ms", broker_key: "log.retention.ms", ty: ConfigType::Long, default: "604800000", allowed: Allowed::Range(-1, i64::MAX), doc: "Delete closed segments whose newest record is older than this (ms); -1 keeps them forever." },
    ConfigDef { name: "retention.bytes", broker_key: "log.retention.bytes", ty: ConfigType::Long, default: "-1", allowed: Allowed::Range(-1, i64::MAX), doc: "Delete the oldest closed segments while the partition is larger than this (bytes); -1 for no limit." },
    ConfigDef { name: "segment.bytes", broker_key: "log.segment.bytes", ty: ConfigType::Int, default: "1073741824", allowed: Allowed::Range(14, I32MAX), doc: "Roll a new segment when the active one reaches this size (bytes)." },
    ConfigDef { name: "segment.ms", broker_key: "log.roll.ms", ty: ConfigType::Long, default: "604800000", allowed: Allowed::Range(1, i64::MAX), doc: "Roll a new segment when the active one is this old (ms)." },
    ConfigDef { name: "segment.index.bytes", broker_key: "log.index.size.max.bytes", ty: ConfigType::Int, default: "10485760", allowed: Allowed::Range(4, I32MAX), doc: "Largest offset index per segment (bytes); a full index rolls the segment." },
    ConfigDef { name: "index.interval.bytes", broker_key: "log.index.interval.bytes", ty: ConfigType::Int, default: "4096", allowed: Allowed::Range(0, I32MAX), doc: "Bytes appended between two sparse index entries." },
    ConfigDef { name: "max.message.bytes", broker_key: "message.max.bytes", ty: ConfigType::Int, default: "1048588", allowed: Allowed::Range(0, I32MAX), doc: "Largest record batch accepted (bytes)." },
    ConfigDef { name: "message.timestamp.type", broker_key: "log.message.timestamp.type", ty: ConfigType::String, default: "CreateTime", allowed: Allowed::OneOf(&["CreateTime", "LogAppendTime"]), doc: "Keep the producer's timestamps (CreateTime) or stamp batches with the broker's time (LogAppendTime)." },
    ConfigDef { name: "min.compaction.lag.ms", broker_key: "log.cleaner.min.compaction.lag.ms", ty: ConfigType::Long, default: "0", allowed: Allowed::Range(0, i64::MAX), doc: "A record stays uncompacted for at least this long (ms)." },
    ConfigDef { name: "max.compaction.lag.ms", broker_key: "log.cleaner.max.compaction.lag.ms", ty: ConfigType::Long, default: "9223372036854775807", allowed: Allowed::Range(1, i64::MAX), doc: "A record is compacted at most this long after it was written (ms), whatever the dirty ratio." },
    ConfigDef { name: "delete.retention.ms", broker_key: "log.cleaner.delete.retention.ms", ty: ConfigType::Long, default: "86400000", allowed: Allowed::Range(0, i64::MAX), doc: "Tombstones are kept this long after compaction reached them (ms)." },
    ConfigDef { name: "min.cleanable.dirty.ratio", broker_key: "log.cleaner.min.cleanable.ratio", ty: ConfigType::Double, default: "0.5", allowed: Allowed::Ratio(0.0, 1.0), doc: "Compact when the uncompacted share of the log exceeds this ratio." },
    ConfigDef { name: "flush.messages", broker_key: "log.flush.interval.messages", ty: ConfigType::Long, default: "9223372036854775807", allowed: Allowed::Range(1, i64::MAX), doc: "fdatasync after this many messages; acks=all waits for it (see docs/durability.md)." },
    ConfigDef { name: "flush.ms", broker_key: "log.flush.interval.ms", ty: ConfigType::Long, default: "9223372036854775807", allowed: Allowed::Range(0, i64::MAX), doc: "fdatasync at most this long after an append (ms)." },
    ConfigDef { name: "file.delete.delay.ms", broker_key: "log.segment.delete.delay.ms", ty: ConfigType::Long, default: "60000", allowed: Allowed::Range(0, i64::MAX), doc: "Deleted segments are renamed *.deleted and removed after this delay (ms)." },
    ConfigDef { name: "min.insync.replicas", broker_key: "min.insync.replicas", ty: ConfigType::Int, default: "1", allowed: Allowed::Range(1, 1), doc: "Replicas that must have an acks=all record; 1 on a single node." },
    ConfigDef { name: "compression.type", broker_key: "compression.type", ty: ConfigType::String, default: "producer", allowed: Allowed::OneOf(&["producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"]), doc: "Only `producer` changes nothing: batches are stored as the producer compressed them." },
];

/// The definition of topic config `name`.
pub fn def(name: &str) -> Option<&'static ConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.name == name)
}

/// The definition whose broker-level key is `key` (`log.retention.ms`).
pub fn def_by_broker_key(key: &str) -> Option<&'static ConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.broker_key == key)
}

fn bad(key: &str, value: &str, allowed: String) -> MetadataError {
    MetadataError::InvalidConfig(format!("invalid value {value:?} for {key}: {allowed}"))
}

/// Checks a value against a definition; INVALID_CONFIG names the key and the
/// allowed values.
pub fn check(d: &ConfigDef, key: &str, value: &str) -> Result<(), MetadataError> {
    match &d.allowed {
        Allowed::Range(lo, hi) => {
            let v: i64 = value
                .trim()
                .parse()
                .map_err(|_| bad(key, value, format!("an integer in [{lo}, {hi}]")))?;
            if v < *lo || v > *hi {
                return Err(bad(key, value, format!("an integer in [{lo}, {hi}]")));
            }
        }
        Allowed::Ratio(lo, hi) => {
            let v: f64 = value
                .trim()
                .parse()
                .map_err(|_| bad(key, value, format!("a number in [{lo}, {hi}]")))?;
            if !(v >= *lo && v <= *hi) {
                return Err(bad(key, value, format!("a number in [{lo}, {hi}]")));
            }
        }
        Allowed::OneOf(opts) => {
            if !opts.contains(&value) {
                return Err(bad(key, value, format!("one of {}", opts.join(", "))));
            }
        }
        Allowed::ListOf(opts) => {
            let items: Vec<&str> = value.split(',').map(str::trim).collect();
            if value.trim().is_empty() || !items.iter().all(|i| opts.contains(i)) {
                return Err(bad(
                    key,
                    value,
                    format!("a comma-separated list of {}", opts.join(", ")),
                ));
            }
        }
    }
    Ok(())
}

/// Checks one topic config; INVALID_CONFIG for unknown keys or bad values.
pub fn validate(key: &str, value: &str) -> Result<(), MetadataError> {
    let d = def(key).ok_or_else(|| {
        MetadataError::InvalidConfig(format!(
            "unknown topic config {key}; supported: {}",
            TOPIC_CONFIGS
                .iter()
                .map(|d| d.name)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    check(d, key, value)
}

/// The effective settings of one partition.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicSettings {
    /// Segment and index settings for the log.
    pub log: LogConfig,
    /// `max.message.bytes`: largest batch (bytes).
    pub max_message_bytes: usize,
    /// `flush.messages`; None = page cache only.
    pub flush_messages: Option<u64>,
    /// `flush.ms`; None = page cache only.
    pub flush_ms: Option<u64>,
    /// `cleanup.policy` contains `delete`.
    pub delete: bool,
    /// `cleanup.policy` contains `compact`.
    pub compact: bool,
    /// `retention.ms`; None = forever (-1).
    pub retention_ms: Option<i64>,
    /// `retention.bytes`; None = no limit (-1).
    pub retention_bytes: Option<i64>,
    /// `delete.retention.ms`.
    pub delete_retention_ms: i64,
    /// `min.compaction.lag.ms`.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms`.
    pub max_compaction_lag_ms: i64,
    /// `min.cleanable.dirty.ratio`.
    pub min_cleanable_dirty_ratio: f64,
    /// `file.delete.delay.ms`.
    pub file_delete_delay_ms: u64,
}

/// The value of `name` for a topic and where it comes from: the topic
/// override, else the broker's setting, else Kafka's default.
pub fn value_of(
    broker: &Config,
    topic: &BTreeMap<String, String>,
    d: &ConfigDef,
) -> (String, ConfigSource) {
    if let Some(v) = topic.get(d.name) {
        return (v.clone(), ConfigSource::Topic);
    }
    if let Some(v) = broker.topic_defaults.get(d.name) {
        return (v.clone(), ConfigSource::StaticBroker);
    }
    (d.default.to_string(), ConfigSource::Default)
}

/// The settings of a topic: broker defaults with the topic's overrides.
pub fn settings(broker: &Config, topic: &BTreeMap<String, String>) -> TopicSettings {
    let get = |name: &str| -> String {
        def(name)
            .map(|d| value_of(broker, topic, d).0)
            .unwrap_or_default()
    };
    let int = |name: &str, fallback: i64| -> i64 { get(name).trim().parse().unwrap_or(fallback) };
    let opt = |v: i64| (v != i64::MAX).then_some(v.max(0) as u64);
    let policy = get("cleanup.policy");
    TopicSettings {
        log: LogConfig {
            segment_bytes: int("segment.bytes", 1 << 30).max(14) as u64,
            segment_ms: Some(int("segment.ms", 604_800_000).max(1) as u64),
            index_interval_bytes: int("index.interval.bytes", 4096).clamp(0, I32MAX) as u32,
            segment_index_bytes: int("segment.index.bytes", 10 << 20).clamp(4, I32MAX) as u32,
            message_timestamp_type: if get("message.timestamp.type") == "LogAppendTime" {
                TimestampType::LogAppendTime
            } else {
                TimestampType::CreateTime
            },
        },
        max_message_bytes: int("max.message.bytes", 1_048_588).max(0) as usize,
        flush_messages: opt(int("flush.messages", i64::MAX)),
        flush_ms: opt(int("flush.ms", i64::MAX)),
        delete: policy.split(',').any(|p| p.trim() == "delete"),
        compact: policy.split(',').any(|p| p.trim() == "compact"),
        retention_ms: Some(int("retention.ms", 604_800_000)).filter(|v| *v >= 0),
        retention_bytes: Some(int("retention.bytes", -1)).filter(|v| *v >= 0),
        delete_retention_ms: int("delete.retention.ms", 86_400_000),
        min_compaction_lag_ms: int("min.compaction.lag.ms", 0),
        max_compaction_lag_ms: int("max.compaction.lag.ms", i64::MAX),
        min_cleanable_dirty_ratio: get("min.cleanable.dirty.ratio")
            .trim()
            .parse()
            .unwrap_or(0.5),
        file_delete_delay_ms: int("file.delete.delay.ms", 60_000).max(0) as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_names_key() {
        assert!(validate("segment.bytes", "1048576").is_ok());
        let e = validate("segment.bytes", "x").unwrap_err().to_string();
        assert!(e.contains("segment.bytes") && e.contains("[14,"), "{e}");
        assert!(validate("cleanup.policy", "compact,delete").is_ok());
        assert!(validate("cleanup.policy", "keep").is_err());
        assert!(validate("min.cleanable.dirty.ratio", "1.5").is_err());
        assert!(validate("no.such.key", "1").is_err());
    }

    #[test]
    fn overrides_then_broker_then_default() {
        let mut broker = Config::default();
        broker.set("log.retention.ms", "1000").unwrap();
        let mut t = BTreeMap::new();
        t.insert("segment.bytes".to_string(), "1000".to_string());
        t.insert("flush.messages".to_string(), "1".to_string());
        t.insert(
            "message.timestamp.type".to_string(),
            "LogAppendTime".to_string(),
        );
        let s = settings(&broker, &t);
        assert_eq!(s.log.segment_bytes, 1000);
        assert_eq!(s.flush_messages, Some(1));
        assert_eq!(s.retention_ms, Some(1000));
        assert_eq!(s.retention_bytes, None);
        assert!(s.delete && !s.compact);
        assert_eq!(s.log.message_timestamp_type, TimestampType::LogAppendTime);
        let d = def("retention.ms").unwrap();
        assert_eq!(
            value_of(&broker, &t, d),
            ("1000".to_string(), ConfigSource::StaticBroker)
        );
        let d = def("retention.bytes").unwrap();
        assert_eq!(value_of(&broker, &t, d).1, ConfigSource::Default);
    }
}
