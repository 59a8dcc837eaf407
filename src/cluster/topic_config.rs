//! Topic-level configs as Kafka defines them, layered over the broker-level
//! defaults from `server.properties` (`log.retention.ms` for `retention.ms`,
//! …). One table ([`TOPIC_CONFIGS`], in `config/topic_config_defs.rs`, with
//! its types and validation in `config::topic_defs`) drives validation, the
//! effective settings of a partition and DescribeConfigs (value, source,
//! synonyms, type, documentation).

use std::collections::BTreeMap;

use crate::config::Config;
use crate::storage::{Codec, LogConfig, TargetCodec, TimestampType};

pub use crate::config::topic_defs::{
    check, def, def_by_broker_key, parse_bool, validate, Allowed, ConfigDef, ConfigSource,
    ConfigType, Support, Synonym, Unit, TOPIC_CONFIGS,
};

const I32MAX: i64 = i32::MAX as i64;

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
}
