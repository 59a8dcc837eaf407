//! Topic-level configs (Kafka's names) layered over the broker defaults.
//!
//! Supported keys, as Kafka defines them: `segment.bytes`, `segment.ms`,
//! `segment.index.bytes`, `index.interval.bytes`, `max.message.bytes`,
//! `message.timestamp.type`, `flush.messages`, `flush.ms`, `cleanup.policy`
//! and `retention.ms` / `retention.bytes` (stored and described; retention
//! itself is enforced by the log-lifecycle work).

use std::collections::BTreeMap;

use crate::config::Config;
use crate::error::MetadataError;
use crate::storage::{LogConfig, TimestampType};

/// The effective settings of one partition.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicSettings {
    /// Segment and index settings for the log.
    pub log: LogConfig,
    /// `max.message.bytes` (broker: `message.max.bytes`): largest batch, bytes.
    pub max_message_bytes: usize,
    /// `flush.messages` (broker: `log.flush.interval.messages`); None = page cache.
    pub flush_messages: Option<u64>,
    /// `flush.ms` (broker: `log.flush.interval.ms`); None = page cache.
    pub flush_ms: Option<u64>,
}

const KEYS: &[&str] = &[
    "segment.bytes",
    "segment.ms",
    "segment.index.bytes",
    "index.interval.bytes",
    "max.message.bytes",
    "message.timestamp.type",
    "flush.messages",
    "flush.ms",
    "cleanup.policy",
    "retention.ms",
    "retention.bytes",
    "min.insync.replicas",
    "compression.type",
];

fn bad(key: &str, value: &str, allowed: &str) -> MetadataError {
    MetadataError::InvalidConfig(format!("invalid value {value:?} for {key}: {allowed}"))
}

fn int(key: &str, value: &str, min: i64, max: i64) -> Result<i64, MetadataError> {
    let allowed = format!("an integer in [{min}, {max}]");
    let v: i64 = value.parse().map_err(|_| bad(key, value, &allowed))?;
    if v < min || v > max {
        return Err(bad(key, value, &allowed));
    }
    Ok(v)
}

/// Checks one topic config; INVALID_CONFIG names the key and allowed values.
pub fn validate(key: &str, value: &str) -> Result<(), MetadataError> {
    match key {
        "segment.bytes" => int(key, value, 14, i32::MAX as i64).map(drop),
        "segment.ms" => int(key, value, 1, i64::MAX).map(drop),
        "segment.index.bytes" => int(key, value, 4, i32::MAX as i64).map(drop),
        "index.interval.bytes" => int(key, value, 0, i32::MAX as i64).map(drop),
        "max.message.bytes" => int(key, value, 0, i32::MAX as i64).map(drop),
        "flush.messages" => int(key, value, 1, i64::MAX).map(drop),
        "flush.ms" => int(key, value, 0, i64::MAX).map(drop),
        "retention.ms" => int(key, value, -1, i64::MAX).map(drop),
        "retention.bytes" => int(key, value, -1, i64::MAX).map(drop),
        "min.insync.replicas" => int(key, value, 1, 1).map(drop),
        "message.timestamp.type" => match value {
            "CreateTime" | "LogAppendTime" => Ok(()),
            _ => Err(bad(key, value, "CreateTime or LogAppendTime")),
        },
        "cleanup.policy" => {
            let ok = value
                .split(',')
                .map(str::trim)
                .all(|p| p == "delete" || p == "compact");
            if ok && !value.trim().is_empty() {
                Ok(())
            } else {
                Err(bad(key, value, "a list of delete, compact"))
            }
        }
        "compression.type" => match value {
            "producer" | "uncompressed" | "gzip" | "snappy" | "lz4" | "zstd" => Ok(()),
            _ => Err(bad(
                key,
                value,
                "producer, uncompressed, gzip, snappy, lz4 or zstd",
            )),
        },
        _ => Err(MetadataError::InvalidConfig(format!(
            "unknown topic config {key}; supported: {}",
            KEYS.join(", ")
        ))),
    }
}

/// The settings of a topic: broker defaults with the topic's overrides.
/// Values were validated when stored; an unparsable one falls back to the
/// broker default.
pub fn settings(broker: &Config, topic: &BTreeMap<String, String>) -> TopicSettings {
    let mut s = TopicSettings {
        log: broker.log_config(),
        max_message_bytes: broker.message_max_bytes,
        flush_messages: broker.log_flush_interval_messages,
        flush_ms: broker.log_flush_interval_ms,
    };
    for (k, v) in topic {
        match k.as_str() {
            "segment.bytes" => s.log.segment_bytes = v.parse().unwrap_or(s.log.segment_bytes),
            "segment.ms" => s.log.segment_ms = v.parse().ok().or(s.log.segment_ms),
            "segment.index.bytes" => {
                s.log.segment_index_bytes = v.parse().unwrap_or(s.log.segment_index_bytes)
            }
            "index.interval.bytes" => {
                s.log.index_interval_bytes = v.parse().unwrap_or(s.log.index_interval_bytes)
            }
            "max.message.bytes" => s.max_message_bytes = v.parse().unwrap_or(s.max_message_bytes),
            "flush.messages" => {
                s.flush_messages = v.parse().ok().filter(|&n: &u64| n != i64::MAX as u64)
            }
            "flush.ms" => s.flush_ms = v.parse().ok().filter(|&n: &u64| n != i64::MAX as u64),
            "message.timestamp.type" => {
                s.log.message_timestamp_type = if v == "LogAppendTime" {
                    TimestampType::LogAppendTime
                } else {
                    TimestampType::CreateTime
                }
            }
            _ => {}
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_names_key() {
        assert!(validate("segment.bytes", "1048576").is_ok());
        let e = validate("segment.bytes", "x").unwrap_err().to_string();
        assert!(e.contains("segment.bytes"), "{e}");
        assert!(validate("cleanup.policy", "compact,delete").is_ok());
        assert!(validate("cleanup.policy", "keep").is_err());
        assert!(validate("no.such.key", "1").is_err());
    }

    #[test]
    fn overrides_apply() {
        let mut t = BTreeMap::new();
        t.insert("segment.bytes".to_string(), "1000".to_string());
        t.insert("flush.messages".to_string(), "1".to_string());
        t.insert(
            "message.timestamp.type".to_string(),
            "LogAppendTime".to_string(),
        );
        let s = settings(&Config::default(), &t);
        assert_eq!(s.log.segment_bytes, 1000);
        assert_eq!(s.flush_messages, Some(1));
        assert_eq!(s.log.message_timestamp_type, TimestampType::LogAppendTime);
    }
}
