//! Topic-level configs as Kafka defines them, layered over the broker-level
//! defaults from `server.properties` (`log.retention.ms` for `retention.ms`,
//! …). One table ([`TOPIC_CONFIGS`], in `topic_config_defs.rs`) drives
//! validation, the effective settings of a partition and DescribeConfigs
//! (value, source, synonyms, type, documentation).

use std::collections::BTreeMap;

use super::error::InvalidConfig;
use crate::config::Config;
use crate::error::MetadataError;
use crate::storage::{Codec, LogConfig, TargetCodec, TimestampType};

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

/// How a broker synonym's value becomes the topic config's (ms) value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Same unit and meaning.
    Same,
    /// Minutes (`log.retention.minutes`).
    Minutes,
    /// Hours (`log.retention.hours`, `log.roll.hours`).
    Hours,
}

/// A broker-level key that supplies a topic config's default, as Kafka
/// lists it (`ServerTopicConfigSynonyms`), with the default Kafka gives that
/// key (None when Kafka's broker key has no default, as `log.retention.ms`).
#[derive(Debug)]
pub struct Synonym {
    /// Broker key (`log.retention.hours`).
    pub key: &'static str,
    /// Kafka's default of the broker key, as DescribeConfigs reports it.
    pub default: Option<&'static str>,
    /// How the broker value converts to the topic config's value.
    pub unit: Unit,
}

/// What Fjord does with a topic config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Applied to the partitions.
    Enforced,
    /// Accepted, stored and described; it has no effect yet (the reason).
    Stored(&'static str),
    /// `true` is refused with this INVALID_CONFIG message (a feature that is
    /// not built, as Kafka refuses it where the feature is not configured).
    RefuseEnabling(&'static str),
}

/// One topic config: its Kafka name, the broker keys that supply its
/// default, type, Kafka's default, allowed values, support and description.
#[derive(Debug)]
pub struct ConfigDef {
    /// Topic-level name (`retention.ms`).
    pub name: &'static str,
    /// Broker-level synonyms, first = highest precedence (`log.retention.ms`,
    /// then `log.retention.minutes`, then `log.retention.hours`).
    pub synonyms: &'static [Synonym],
    /// Type.
    pub ty: ConfigType,
    /// Kafka's default value of the topic config.
    pub default: &'static str,
    /// Inclusive numeric range for Int/Long/Double, or the allowed values.
    pub allowed: Allowed,
    /// What Fjord does with it.
    pub support: Support,
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
    /// `true` or `false`, in any case.
    Bool,
    /// A gzip level: 1 to 9, or -1.
    GzipLevel,
    /// `*`, or a (possibly empty) list of `partitionId:brokerId`.
    ThrottledReplicas,
}

const I32MAX: i64 = i32::MAX as i64;

pub use super::topic_config_defs::TOPIC_CONFIGS;

/// The definition of topic config `name`.
pub fn def(name: &str) -> Option<&'static ConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.name == name)
}

/// The definition and synonym for broker-level key `key`
/// (`log.retention.hours` gives `retention.ms`).
pub fn def_by_broker_key(key: &str) -> Option<(&'static ConfigDef, &'static Synonym)> {
    TOPIC_CONFIGS
        .iter()
        .find_map(|d| d.synonyms.iter().find(|s| s.key == key).map(|s| (d, s)))
}

impl ConfigDef {
    /// The broker key Kafka names first for this config (`log.retention.ms`),
    /// if it has one.
    pub fn primary_broker_key(&self) -> Option<&'static str> {
        self.synonyms.first().map(|s| s.key)
    }
}

impl Unit {
    /// Converts a broker value in this unit to the topic config's value;
    /// negative durations mean "forever" (-1), as Kafka reads them.
    /// Errors with the allowed range when `value` is not an integer ≥ `min`.
    pub fn convert(self, key: &str, value: &str, min: i64) -> Result<String, MetadataError> {
        let factor = match self {
            Unit::Same => return Ok(value.to_string()),
            Unit::Minutes => 60_000,
            Unit::Hours => 3_600_000,
        };
        let allowed = || format!("an integer of at least {min}");
        let v: i64 = value
            .trim()
            .parse()
            .map_err(|_| bad(key, value, allowed()))?;
        if v < min || v > I32MAX {
            return Err(bad(key, value, allowed()));
        }
        Ok(if v < 0 { -1 } else { v.saturating_mul(factor) }.to_string())
    }
}

fn bad(key: &str, value: &str, allowed: String) -> MetadataError {
    InvalidConfig::BadValue {
        key: key.to_string(),
        value: value.to_string(),
        allowed,
    }
    .into()
}

/// Reads a boolean as Kafka does (`true`/`false`, any case, trimmed).
pub fn parse_bool(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// Checks a value against a definition; INVALID_CONFIG names the key and the
/// allowed values (or, for a feature that is not built, says so).
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
        Allowed::Bool => {
            let Some(on) = parse_bool(value) else {
                return Err(bad(key, value, "true or false".into()));
            };
            if let (true, Support::RefuseEnabling(why)) = (on, d.support) {
                return Err(InvalidConfig::Unsupported {
                    key: key.to_string(),
                    reason: why,
                }
                .into());
            }
        }
        Allowed::GzipLevel => {
            let v: Option<i64> = value.trim().parse().ok();
            if !v.is_some_and(|v| v == -1 || (1..=9).contains(&v)) {
                return Err(bad(key, value, "an integer in [1, 9], or -1".into()));
            }
        }
        Allowed::ThrottledReplicas => {
            let v = value.trim();
            let replica = |r: &str| {
                r.split_once(':').is_some_and(|(p, b)| {
                    p.trim().parse::<u32>().is_ok() && b.trim().parse::<u32>().is_ok()
                })
            };
            if !(v.is_empty() || v == "*" || v.split(',').all(|r| replica(r.trim()))) {
                return Err(bad(
                    key,
                    value,
                    "`*` or a list of partitionId:brokerId".into(),
                ));
            }
        }
    }
    Ok(())
}

/// Checks one topic config; INVALID_CONFIG for unknown keys or bad values.
pub fn validate(key: &str, value: &str) -> Result<(), MetadataError> {
    let d = def(key).ok_or_else(|| InvalidConfig::UnknownKey {
        key: key.to_string(),
        list_supported: true,
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
    /// `compression.type` with its level (`compression.*.level`); None for
    /// `producer` (batches kept as sent).
    pub compression: Option<TargetCodec>,
    /// `message.timestamp.before.max.ms` (CreateTime topics).
    pub timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms` (CreateTime topics).
    pub timestamp_after_max_ms: i64,
    /// `min.insync.replicas`.
    pub min_insync_replicas: i32,
    /// `max.decompressed.message.bytes`: largest record where the broker
    /// decompresses a batch.
    pub max_decompressed_message_bytes: usize,
}

/// One synonym of a described config: broker (or topic) key, value, source.
pub type DescribedSynonym = (&'static str, String, ConfigSource);

/// The synonyms Kafka reports for topic config `d` (DescribeConfigs with
/// `include_synonyms`), highest precedence first: the topic override, then
/// each broker synonym set in `server.properties` or flags, as given, then
/// each broker synonym's Kafka default where it has one. As Kafka does
/// (`ConfigHelper.configSynonyms`), the broker part starts at the first
/// entry for the primary broker key, so `retention.ms` reports no
/// `log.retention.hours=168` unless `log.retention.ms` is set.
pub fn synonyms_of(
    broker: &Config,
    topic: &BTreeMap<String, String>,
    d: &ConfigDef,
) -> Vec<DescribedSynonym> {
    let mut out: Vec<DescribedSynonym> = Vec::new();
    for s in d.synonyms {
        if let Some(v) = broker.broker_synonyms.get(s.key) {
            out.push((s.key, v.clone(), ConfigSource::StaticBroker));
        }
    }
    for s in d.synonyms {
        if let Some(v) = s.default {
            out.push((s.key, v.to_string(), ConfigSource::Default));
        }
    }
    let primary = d.primary_broker_key();
    let first = out
        .iter()
        .position(|(k, _, _)| Some(*k) == primary)
        .unwrap_or(out.len());
    out.drain(..first);
    if let Some(v) = topic.get(d.name) {
        out.insert(0, (d.name, v.clone(), ConfigSource::Topic));
    }
    out
}

/// One broker-level key of a topic config as DescribeConfigs reports it on
/// the broker resource (`log.retention.hours=168`).
#[derive(Debug, Clone, PartialEq)]
pub struct BrokerKeyEntry {
    /// Broker key.
    pub name: &'static str,
    /// Its value as set, else Kafka's default; None when Kafka's key has no
    /// default (`log.retention.ms`), as Kafka reports it (a null value).
    pub value: Option<String>,
    /// STATIC_BROKER_CONFIG when set, else DEFAULT_CONFIG.
    pub source: ConfigSource,
    /// The key's type (the hours and minutes forms are Int).
    pub ty: ConfigType,
    /// Its synonyms, as Kafka lists them: the keys of the same topic config
    /// set statically, then those with a default, from this key on.
    pub synonyms: Vec<DescribedSynonym>,
}

/// Every broker-level key of every topic config, as the broker resource's
/// DescribeConfigs reports them (Kafka's `ConfigHelper` for broker configs).
pub fn broker_key_entries(broker: &Config) -> Vec<BrokerKeyEntry> {
    let mut out = Vec::new();
    for d in TOPIC_CONFIGS {
        let mut group: Vec<DescribedSynonym> = Vec::new();
        for s in d.synonyms {
            if let Some(v) = broker.broker_synonyms.get(s.key) {
                group.push((s.key, v.clone(), ConfigSource::StaticBroker));
            }
        }
        for s in d.synonyms {
            if let Some(v) = s.default {
                group.push((s.key, v.to_string(), ConfigSource::Default));
            }
        }
        for s in d.synonyms {
            let from = group
                .iter()
                .position(|(k, _, _)| *k == s.key)
                .unwrap_or(group.len());
            let synonyms = group[from..].to_vec();
            let value = broker
                .broker_synonyms
                .get(s.key)
                .cloned()
                .or_else(|| s.default.map(str::to_string));
            out.push(BrokerKeyEntry {
                name: s.key,
                value,
                source: synonyms
                    .first()
                    .map(|x| x.2)
                    .unwrap_or(ConfigSource::Default),
                ty: match s.unit {
                    Unit::Same => d.ty,
                    Unit::Minutes | Unit::Hours => ConfigType::Int,
                },
                synonyms,
            });
        }
    }
    out
}

/// The value of `name` for a topic and where it comes from: the topic
/// override, else the broker's setting (converted to the topic config's
/// unit), else Kafka's default. The source is that of the first synonym
/// Kafka reports ([`synonyms_of`]), DEFAULT_CONFIG when there is none (so a
/// `log.retention.hours` alone reports its value with DEFAULT_CONFIG, as
/// Kafka does).
pub fn value_of(
    broker: &Config,
    topic: &BTreeMap<String, String>,
    d: &ConfigDef,
) -> (String, ConfigSource) {
    let source = synonyms_of(broker, topic, d)
        .first()
        .map(|s| s.2)
        .unwrap_or(ConfigSource::Default);
    if let Some(v) = topic.get(d.name) {
        return (v.clone(), source);
    }
    if let Some(v) = broker.topic_defaults.get(d.name) {
        return (v.clone(), source);
    }
    (d.default.to_string(), source)
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
    let level = |name: &str, fallback: i64| int(name, fallback) as i32;
    let compression = match get("compression.type").as_str() {
        "uncompressed" => Some(TargetCodec::new(Codec::None, 0)),
        "gzip" => Some(TargetCodec::new(
            Codec::Gzip,
            level("compression.gzip.level", -1),
        )),
        "snappy" => Some(TargetCodec::new(Codec::Snappy, 0)),
        "lz4" => Some(TargetCodec::new(
            Codec::Lz4,
            level("compression.lz4.level", 9),
        )),
        "zstd" => Some(TargetCodec::new(
            Codec::Zstd,
            level("compression.zstd.level", 3),
        )),
        _ => None,
    };
    TopicSettings {
        log: LogConfig {
            segment_bytes: int("segment.bytes", 1 << 30).max(14) as u64,
            segment_ms: Some(int("segment.ms", 604_800_000).max(1) as u64),
            segment_jitter_ms: int("segment.jitter.ms", 0).max(0) as u64,
            index_interval_bytes: int("index.interval.bytes", 4096).clamp(0, I32MAX) as u32,
            segment_index_bytes: int("segment.index.bytes", 10 << 20).clamp(4, I32MAX) as u32,
            message_timestamp_type: if get("message.timestamp.type") == "LogAppendTime" {
                TimestampType::LogAppendTime
            } else {
                TimestampType::CreateTime
            },
            preallocate: parse_bool(&get("preallocate")).unwrap_or(false),
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
        compression,
        timestamp_before_max_ms: int("message.timestamp.before.max.ms", i64::MAX).max(0),
        timestamp_after_max_ms: int("message.timestamp.after.max.ms", 3_600_000).max(0),
        min_insync_replicas: int("min.insync.replicas", 1).clamp(1, I32MAX) as i32,
        max_decompressed_message_bytes: int("max.decompressed.message.bytes", 2_147_483_639)
            .clamp(1, I32MAX) as usize,
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

    /// The values Kafka 4.4 accepts and refuses at CreateTopics (checked on
    /// a Kafka 4.4 broker with validate_only).
    #[test]
    fn kafka_validators() {
        for (k, v) in [
            ("remote.storage.enable", "false"),
            ("compression.gzip.level", "9"),
            ("compression.gzip.level", "-1"),
            ("compression.lz4.level", "17"),
            ("compression.zstd.level", "-131072"),
            ("local.retention.ms", "1000"),
            ("local.retention.bytes", "-2"),
            ("remote.log.copy.disable", "true"),
            ("remote.log.delete.on.disable", "TRUE"),
            ("message.timestamp.before.max.ms", "0"),
            ("leader.replication.throttled.replicas", "*"),
            ("leader.replication.throttled.replicas", "0:1,1:2"),
            ("follower.replication.throttled.replicas", ""),
            ("unclean.leader.election.enable", "true"),
            ("preallocate", "true"),
            ("errors.deadletterqueue.group.enable", "true"),
            ("min.insync.replicas", "2"),
        ] {
            assert!(validate(k, v).is_ok(), "{k}={v}");
        }
        for (k, v) in [
            ("remote.storage.enable", "yes"),
            ("compression.gzip.level", "0"),
            ("compression.gzip.level", "10"),
            ("compression.lz4.level", "0"),
            ("compression.lz4.level", "18"),
            ("compression.zstd.level", "23"),
            ("compression.zstd.level", "-131073"),
            ("local.retention.ms", "-3"),
            ("remote.copy.lag.ms", "-2"),
            ("remote.copy.lag.bytes", "-2"),
            ("max.decompressed.message.bytes", "0"),
            ("segment.jitter.ms", "-1"),
            ("message.timestamp.after.max.ms", "-1"),
            ("leader.replication.throttled.replicas", "x"),
            ("segment.ms", "0"),
            ("retention.ms", "-2"),
        ] {
            assert!(validate(k, v).is_err(), "{k}={v}");
        }
        let e = validate("remote.storage.enable", "TRUE")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Tiered Storage functionality is disabled"),
            "{e}"
        );
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
        assert_eq!(s.compression, None);
        assert_eq!(s.timestamp_after_max_ms, 3_600_000);
        let d = def("retention.ms").unwrap();
        assert_eq!(
            value_of(&broker, &t, d),
            ("1000".to_string(), ConfigSource::StaticBroker)
        );
        let d = def("retention.bytes").unwrap();
        assert_eq!(value_of(&broker, &t, d).1, ConfigSource::Default);
    }

    /// Kafka 4.4's synonyms for a topic with every default: the DEFAULT
    /// entry of each broker key with a default, none for configs whose
    /// primary broker key has no default (retention.ms, segment.ms, flush.ms,
    /// segment.jitter.ms) or that have no broker key.
    #[test]
    fn synonyms_as_kafka_reports_them() {
        let broker = Config::default();
        let none = BTreeMap::new();
        let of = |b: &Config, t: &BTreeMap<String, String>, name: &str| {
            synonyms_of(b, t, def(name).unwrap())
                .into_iter()
                .map(|(k, v, s)| format!("{k}={v}@{}", s as i8))
                .collect::<Vec<_>>()
        };
        assert!(of(&broker, &none, "retention.ms").is_empty());
        assert!(of(&broker, &none, "segment.ms").is_empty());
        assert!(of(&broker, &none, "flush.ms").is_empty());
        assert!(of(&broker, &none, "remote.storage.enable").is_empty());
        assert_eq!(
            of(&broker, &none, "preallocate"),
            ["log.preallocate=false@5"]
        );
        assert_eq!(
            of(&broker, &none, "segment.bytes"),
            ["log.segment.bytes=1073741824@5"]
        );
        let mut b = Config::default();
        b.set("log.retention.hours", "100").unwrap();
        // Kafka: no log.retention.ms entry, so nothing is reported, and the
        // value (from the hours) has DEFAULT_CONFIG as its source.
        assert!(of(&b, &none, "retention.ms").is_empty());
        assert_eq!(
            value_of(&b, &none, def("retention.ms").unwrap()),
            ("360000000".to_string(), ConfigSource::Default)
        );
        b.set("log.retention.ms", "5000").unwrap();
        let mut t = BTreeMap::new();
        t.insert("retention.ms".to_string(), "7".to_string());
        assert_eq!(
            of(&b, &t, "retention.ms"),
            [
                "retention.ms=7@1",
                "log.retention.ms=5000@4",
                "log.retention.hours=100@4",
                "log.retention.hours=168@5"
            ]
        );
        assert_eq!(
            value_of(&b, &none, def("retention.ms").unwrap()),
            ("5000".to_string(), ConfigSource::StaticBroker)
        );
    }

    /// The broker resource as Kafka 4.4 reports these keys: the hours forms
    /// with their default, the ms forms with a null value and no synonyms.
    #[test]
    fn broker_keys_as_kafka_reports_them() {
        let find = |b: &Config, k: &str| {
            broker_key_entries(b)
                .into_iter()
                .find(|e| e.name == k)
                .unwrap_or_else(|| panic!("{k}"))
        };
        let b = Config::default();
        let e = find(&b, "log.retention.hours");
        assert_eq!(e.value.as_deref(), Some("168"));
        assert_eq!((e.source, e.ty), (ConfigSource::Default, ConfigType::Int));
        assert_eq!(e.synonyms.len(), 1);
        let e = find(&b, "log.retention.ms");
        assert_eq!((e.value, e.synonyms.len()), (None, 0));
        assert_eq!(find(&b, "log.roll.hours").value.as_deref(), Some("168"));
        assert_eq!(find(&b, "log.roll.ms").value, None);
        let mut b = Config::default();
        b.set("log.retention.ms", "5000").unwrap();
        let e = find(&b, "log.retention.ms");
        assert_eq!(e.value.as_deref(), Some("5000"));
        assert_eq!(e.source, ConfigSource::StaticBroker);
        assert_eq!(e.synonyms.len(), 2, "{:?}", e.synonyms);
    }

    #[test]
    fn codec_and_level_from_configs() {
        let broker = Config::default();
        let mut t = BTreeMap::new();
        t.insert("compression.type".to_string(), "zstd".to_string());
        t.insert("compression.zstd.level".to_string(), "7".to_string());
        assert_eq!(
            settings(&broker, &t).compression,
            Some(TargetCodec::new(Codec::Zstd, 7))
        );
        t.insert("compression.type".to_string(), "gzip".to_string());
        assert_eq!(
            settings(&broker, &t).compression,
            Some(TargetCodec::new(Codec::Gzip, -1))
        );
    }

    #[test]
    fn every_config_is_valid_at_its_default() {
        for d in TOPIC_CONFIGS {
            assert!(check(d, d.name, d.default).is_ok(), "{}", d.name);
            for s in d.synonyms {
                if let (Some(v), Unit::Same) = (s.default, s.unit) {
                    assert!(check(d, s.key, v).is_ok(), "{}", s.key);
                }
            }
        }
        let mut names: Vec<&str> = TOPIC_CONFIGS.iter().map(|d| d.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TOPIC_CONFIGS.len());
        assert_eq!(TOPIC_CONFIGS.len(), 37);
    }
}
