//! The definitions of Kafka's topic configs: their types, sources, broker
//! synonyms, allowed values and the checks of a value ([`check`],
//! [`validate`]). The table itself ([`TOPIC_CONFIGS`]) is in
//! `topic_config_defs.rs`. This sits in the config layer, below
//! `cluster::topic_config` (which layers topic overrides over the broker's
//! [`Config`](super::Config)), so that the broker config can validate the
//! broker keys of topic configs without depending on the cluster layer.

use super::InvalidConfig;

/// A config's type as DescribeConfigs v3+ reports it (Kafka's ConfigType codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    /// true/false.
    Boolean = 1,
    /// Free text or an enumeration.
    String = 2,
    /// 32-bit integer.
    Int = 3,
    /// 16-bit integer.
    Short = 4,
    /// 64-bit integer.
    Long = 5,
    /// Floating point.
    Double = 6,
    /// Comma-separated list.
    List = 7,
    /// A class name.
    Class = 8,
    /// A secret (its value is never described).
    Password = 9,
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
    pub fn convert(self, key: &str, value: &str, min: i64) -> Result<String, InvalidConfig> {
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

fn bad(key: &str, value: &str, allowed: String) -> InvalidConfig {
    InvalidConfig::BadValue {
        key: key.to_string(),
        value: value.to_string(),
        allowed,
    }
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
pub fn check(d: &ConfigDef, key: &str, value: &str) -> Result<(), InvalidConfig> {
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
                    reason: why.into(),
                });
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
pub fn validate(key: &str, value: &str) -> Result<(), InvalidConfig> {
    let d = def(key).ok_or_else(|| InvalidConfig::UnknownKey {
        key: key.to_string(),
        list_supported: true,
    })?;
    check(d, key, value)
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
