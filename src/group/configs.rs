//! Group configs (KIP-848, KIP-932; Kafka's GROUP config resource, type
//! 32): the per-group overrides of `consumer.session.timeout.ms`,
//! `consumer.heartbeat.interval.ms`, `consumer.assignment.interval.ms` and
//! the share group keys (`share.session.timeout.ms`,
//! `share.heartbeat.interval.ms`, `share.record.lock.duration.ms`,
//! `share.delivery.count.limit`, `share.auto.offset.reset`,
//! `share.isolation.level`), the share group dead-letter queue keys of
//! KIP-1191 (`errors.deadletterqueue.topic.name`,
//! `errors.deadletterqueue.copy.record.enable`), their validation against the broker's
//! `group.*.min/max.*` ranges (Kafka's texts), KIP-339's operations
//! on them, and how DescribeConfigs reports them (value, source, synonyms).
//! The overrides live in the metadata image (`MetadataImage::group_configs`,
//! ConfigRecords of the GROUP resource); the consumer group coordinator
//! reads them for each heartbeat ([`effective`]).

use std::collections::{BTreeMap, BTreeSet};

use super::GroupConfig;
use crate::cluster::error::{InvalidConfig, InvalidRequest, MetadataError};

/// What a group config holds and where its default comes from.
#[derive(Debug)]
pub enum GroupConfigKind {
    /// An INT (ms or a count) whose default is a broker key's value and
    /// which a group may set within the broker's range.
    Int {
        /// The broker key that gives its default.
        broker_key: &'static str,
        /// Kafka's default of the broker key.
        kafka_default: i32,
        /// The broker's value of `broker_key`.
        broker_value: fn(&GroupConfig) -> i32,
        /// The range a group may set: the broker's `group.*.min/max.*`
        /// keys.
        range: fn(&GroupConfig) -> (i32, i32),
        /// The least value the key's type allows (Kafka's ConfigDef
        /// validator: "Value must be at least N").
        at_least: i32,
    },
    /// A BOOLEAN (`true` or `false`, any case) with Kafka's default.
    Bool {
        /// Kafka's default.
        kafka_default: bool,
    },
    /// A STRING with Kafka's default and check.
    Text {
        /// Kafka's default.
        kafka_default: &'static str,
        /// Kafka's check; the error is its text.
        check: fn(&str, &str) -> Result<(), InvalidConfig>,
    },
}

/// One group config key.
#[derive(Debug)]
pub struct GroupConfigDef {
    /// The group-level key.
    pub name: &'static str,
    /// What it sets.
    pub doc: &'static str,
    /// Its type, default and range.
    pub kind: GroupConfigKind,
}

impl GroupConfigDef {
    /// Whether DescribeConfigs reports it as an INT.
    pub fn is_int(&self) -> bool {
        matches!(self.kind, GroupConfigKind::Int { .. })
    }

    /// Whether DescribeConfigs reports it as a BOOLEAN.
    pub fn is_bool(&self) -> bool {
        matches!(self.kind, GroupConfigKind::Bool { .. })
    }
}

/// An INT group config over a broker key (see [`GroupConfigKind::Int`]).
const fn int(
    name: &'static str,
    broker_key: &'static str,
    kafka_default: i32,
    doc: &'static str,
    broker_value: fn(&GroupConfig) -> i32,
    range: fn(&GroupConfig) -> (i32, i32),
    at_least: i32,
) -> GroupConfigDef {
    GroupConfigDef {
        name,
        doc,
        kind: GroupConfigKind::Int {
            broker_key,
            kafka_default,
            broker_value,
            range,
            at_least,
        },
    }
}

/// The group config keys served, in Kafka's names, sorted.
pub static GROUP_CONFIGS: &[GroupConfigDef] = &[
    int(
        "consumer.assignment.interval.ms",
        "group.consumer.assignment.interval.ms",
        1000,
        "The least time between two target assignments of this consumer group (ms, KIP-1263).",
        |c| c.consumer_assignment_interval_ms,
        |c| {
            (
                c.consumer_min_assignment_interval_ms,
                c.consumer_max_assignment_interval_ms,
            )
        },
        0,
    ),
    int(
        "consumer.heartbeat.interval.ms",
        "group.consumer.heartbeat.interval.ms",
        5000,
        "The heartbeat interval given to the members of this consumer group (ms).",
        |c| c.consumer_heartbeat_interval_ms,
        |c| {
            (
                c.consumer_min_heartbeat_interval_ms,
                c.consumer_max_heartbeat_interval_ms,
            )
        },
        1,
    ),
    int(
        "consumer.session.timeout.ms",
        "group.consumer.session.timeout.ms",
        45000,
        "How long a member of this consumer group may go without a heartbeat before it is fenced (ms).",
        |c| c.consumer_session_timeout_ms,
        |c| {
            (
                c.consumer_min_session_timeout_ms,
                c.consumer_max_session_timeout_ms,
            )
        },
        1,
    ),
    GroupConfigDef {
        name: "errors.deadletterqueue.copy.record.enable",
        doc: "Whether the dead-letter records of this share group carry the original record's key and value (KIP-1191); false: only the context headers.",
        kind: GroupConfigKind::Bool {
            kafka_default: false,
        },
    },
    GroupConfigDef {
        name: "errors.deadletterqueue.topic.name",
        doc: "The dead-letter queue topic of this share group (KIP-1191): rejected records and records given up at the delivery-count limit are written there. Empty (the default): none.",
        kind: GroupConfigKind::Text {
            kafka_default: "",
            check: check_dlq_topic_name,
        },
    },
    GroupConfigDef {
        name: "share.auto.offset.reset",
        doc: "Where a share-partition of this share group starts (KIP-932): latest, earliest or by_duration:<ISO-8601 duration> before now.",
        kind: GroupConfigKind::Text {
            kafka_default: "latest",
            check: check_auto_offset_reset,
        },
    },
    int(
        "share.delivery.count.limit",
        "group.share.delivery.count.limit",
        5,
        "The most deliveries of a record to this share group before it is archived.",
        |c| c.share_delivery_count_limit,
        |c| {
            (
                c.share_min_delivery_count_limit,
                c.share_max_delivery_count_limit,
            )
        },
        2,
    ),
    int(
        "share.heartbeat.interval.ms",
        "group.share.heartbeat.interval.ms",
        5000,
        "The heartbeat interval given to the members of this share group (ms).",
        |c| c.share_heartbeat_interval_ms,
        |c| {
            (
                c.share_min_heartbeat_interval_ms,
                c.share_max_heartbeat_interval_ms,
            )
        },
        1,
    ),
    GroupConfigDef {
        name: "share.isolation.level",
        doc: "Whether this share group delivers transactional records only once committed (read_committed) or all (read_uncommitted).",
        kind: GroupConfigKind::Text {
            kafka_default: "read_uncommitted",
            check: check_isolation_level,
        },
    },
    int(
        "share.record.lock.duration.ms",
        "group.share.record.lock.duration.ms",
        30000,
        "How long a member of this share group holds the records it acquired (ms).",
        |c| c.share_record_lock_duration_ms,
        |c| {
            (
                c.share_min_record_lock_duration_ms,
                c.share_max_record_lock_duration_ms,
            )
        },
        1000,
    ),
    int(
        "share.session.timeout.ms",
        "group.share.session.timeout.ms",
        45000,
        "How long a member of this share group may go without a heartbeat before it is fenced (ms).",
        |c| c.share_session_timeout_ms,
        |c| {
            (
                c.share_min_session_timeout_ms,
                c.share_max_session_timeout_ms,
            )
        },
        1,
    ),
];

/// Kafka's `share.auto.offset.reset` check: `latest`, `earliest` or
/// `by_duration:` and a non-negative ISO-8601 duration (`PnDTnHnMn.nS`,
/// as Java's `Duration.parse` reads it).
fn check_auto_offset_reset(key: &str, value: &str) -> Result<(), InvalidConfig> {
    let ok = match value {
        "latest" | "earliest" => true,
        v => v.strip_prefix("by_duration:").is_some_and(iso_duration),
    };
    if ok {
        return Ok(());
    }
    Err(InvalidConfig::GroupValue {
        key: key.to_string(),
        value: value.to_string(),
        reason: format!(
            "Invalid value `{value}` for configuration {key}. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
        ),
    })
}

/// A non-negative ISO-8601 duration as Java's `Duration.parse` accepts it:
/// `P`, then days, then `T` and hours, minutes, seconds (with a fraction),
/// at least one part, letters in either case.
fn iso_duration(d: &str) -> bool {
    iso_duration_ms(d).is_some()
}

/// The length (ms, saturating; a fraction below a millisecond dropped) of
/// a non-negative ISO-8601 duration as [`iso_duration`] accepts it (the
/// `by_duration:` of `share.auto.offset.reset`), None for anything else.
pub fn iso_duration_ms(d: &str) -> Option<i64> {
    let d = d.to_ascii_uppercase();
    let rest = d.strip_prefix('P')?;
    let (date, time) = match rest.split_once('T') {
        Some((a, b)) => (a, Some(b)),
        None => (rest, None),
    };
    // (whole part, milliseconds of the fraction) of a number.
    let number = |s: &str, fraction: bool| -> Option<(i64, i64)> {
        let (int, frac) = match s.split_once('.') {
            Some((i, f)) if fraction => (i, Some(f)),
            Some(_) => return None,
            None => (s, None),
        };
        if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let whole = int.parse::<i64>().unwrap_or(i64::MAX);
        let ms = match frac {
            None => 0,
            Some(f) if !f.is_empty() && f.len() <= 9 && f.bytes().all(|b| b.is_ascii_digit()) => {
                format!("{f:0<3}")
                    .get(..3)
                    .and_then(|x| x.parse::<i64>().ok())
                    .unwrap_or(0)
            }
            Some(_) => return None,
        };
        Some((whole, ms))
    };
    let mut parts = 0;
    let mut total: i64 = 0;
    if !date.is_empty() {
        let (days, _) = number(date.strip_suffix('D')?, false)?;
        total = total.saturating_add(days.saturating_mul(86_400_000));
        parts += 1;
    }
    if let Some(mut t) = time {
        if t.is_empty() {
            return None;
        }
        for (unit, fraction, scale) in [
            ('H', false, 3_600_000),
            ('M', false, 60_000),
            ('S', true, 1_000),
        ] {
            if let Some(i) = t.find(unit) {
                let (whole, ms) = number(t.get(..i)?, fraction)?;
                total = total
                    .saturating_add(whole.saturating_mul(scale))
                    .saturating_add(ms);
                parts += 1;
                t = t.get(i + 1..)?;
            }
        }
        if !t.is_empty() {
            return None;
        }
    }
    (parts > 0).then_some(total)
}

/// Kafka's `errors.deadletterqueue.topic.name` check at alter time: a
/// name starting with `__` is refused (the broker's prefix is checked
/// only when a record is written, as Kafka 4.4 does).
fn check_dlq_topic_name(_key: &str, value: &str) -> Result<(), InvalidConfig> {
    if value.starts_with("__") {
        return Err(InvalidConfig::DlqTopicInternal);
    }
    Ok(())
}

/// Kafka's BOOLEAN parse: `true` or `false` in any case, trimmed.
pub fn parse_bool(value: &str) -> Option<bool> {
    let v = value.trim();
    if v.eq_ignore_ascii_case("true") {
        Some(true)
    } else if v.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// Kafka's `share.isolation.level` check.
fn check_isolation_level(key: &str, value: &str) -> Result<(), InvalidConfig> {
    match value {
        "read_committed" | "read_uncommitted" => Ok(()),
        _ => Err(InvalidConfig::GroupValue {
            key: key.to_string(),
            value: value.to_string(),
            reason: "String must be one of: read_committed, read_uncommitted".to_string(),
        }),
    }
}

/// The definition of group config `name`.
pub fn def(name: &str) -> Option<&'static GroupConfigDef> {
    GROUP_CONFIGS.iter().find(|d| d.name == name)
}

/// Where a group config's value comes from (DescribeConfigs
/// `config_source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupConfigSource {
    /// The broker's `server.properties` or flags (STATIC_BROKER_CONFIG, 4).
    StaticBroker = 4,
    /// Kafka's default (DEFAULT_CONFIG, 5).
    Default = 5,
    /// The group's own override (GROUP_CONFIG, 8).
    Group = 8,
}

/// One group config as DescribeConfigs reports it.
#[derive(Debug, Clone)]
pub struct DescribedGroupConfig {
    /// The definition.
    pub def: &'static GroupConfigDef,
    /// The value in force.
    pub value: String,
    /// Where it comes from.
    pub source: GroupConfigSource,
    /// (key, value, source): the group override, the broker key when it
    /// was given, then Kafka's default, as Kafka lists them.
    pub synonyms: Vec<(&'static str, String, GroupConfigSource)>,
}

/// Every group config of a group with `overrides` on a broker of `cfg`
/// whose `server.properties` and flags gave the keys `given`.
pub fn describe(
    cfg: &GroupConfig,
    given: &BTreeSet<String>,
    overrides: Option<&BTreeMap<String, String>>,
) -> Vec<DescribedGroupConfig> {
    GROUP_CONFIGS
        .iter()
        .map(|d| {
            let mut synonyms = Vec::new();
            if let Some(v) = overrides.and_then(|o| o.get(d.name)) {
                synonyms.push((d.name, v.clone(), GroupConfigSource::Group));
            }
            let default = match &d.kind {
                GroupConfigKind::Int {
                    broker_key,
                    kafka_default,
                    broker_value,
                    ..
                } => {
                    if given.contains(*broker_key) {
                        synonyms.push((
                            *broker_key,
                            broker_value(cfg).to_string(),
                            GroupConfigSource::StaticBroker,
                        ));
                    }
                    synonyms.push((
                        *broker_key,
                        kafka_default.to_string(),
                        GroupConfigSource::Default,
                    ));
                    kafka_default.to_string()
                }
                GroupConfigKind::Text { kafka_default, .. } => {
                    synonyms.push((
                        d.name,
                        kafka_default.to_string(),
                        GroupConfigSource::Default,
                    ));
                    kafka_default.to_string()
                }
                GroupConfigKind::Bool { kafka_default } => {
                    synonyms.push((
                        d.name,
                        kafka_default.to_string(),
                        GroupConfigSource::Default,
                    ));
                    kafka_default.to_string()
                }
            };
            let (value, source) = synonyms
                .first()
                .map(|(_, v, s)| (v.clone(), *s))
                .unwrap_or((default, GroupConfigSource::Default));
            DescribedGroupConfig {
                def: d,
                value,
                source,
                synonyms,
            }
        })
        .collect()
}

/// The settings in force for a group with `overrides` (each override, else
/// the broker's value), in ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effective {
    /// `consumer.session.timeout.ms`.
    pub session_timeout_ms: i32,
    /// `consumer.heartbeat.interval.ms`.
    pub heartbeat_interval_ms: i32,
    /// `consumer.assignment.interval.ms`.
    pub assignment_interval_ms: i32,
}

/// The settings in force for a group with `overrides`.
pub fn effective(cfg: &GroupConfig, overrides: Option<&BTreeMap<String, String>>) -> Effective {
    let get = |name: &str, broker: i32| {
        overrides
            .and_then(|o| o.get(name))
            .and_then(|v| v.trim().parse::<i32>().ok())
            .unwrap_or(broker)
    };
    Effective {
        session_timeout_ms: get(
            "consumer.session.timeout.ms",
            cfg.consumer_session_timeout_ms,
        ),
        heartbeat_interval_ms: get(
            "consumer.heartbeat.interval.ms",
            cfg.consumer_heartbeat_interval_ms,
        ),
        assignment_interval_ms: get(
            "consumer.assignment.interval.ms",
            cfg.consumer_assignment_interval_ms,
        ),
    }
}

/// The share group settings in force for a group with `overrides`
/// (KIP-932 group configs over the broker's `group.share.*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectiveShare {
    /// `share.session.timeout.ms` (ms).
    pub session_timeout_ms: i32,
    /// `share.heartbeat.interval.ms` (ms).
    pub heartbeat_interval_ms: i32,
    /// `share.record.lock.duration.ms` (ms).
    pub record_lock_duration_ms: i32,
    /// `share.delivery.count.limit`.
    pub delivery_count_limit: i32,
    /// `share.auto.offset.reset`: `latest` (default), `earliest` or
    /// `by_duration:<ISO-8601 duration>`, as set.
    pub auto_offset_reset: String,
    /// `share.isolation.level`: `read_uncommitted` (default) or
    /// `read_committed`.
    pub isolation_level: String,
    /// `errors.deadletterqueue.topic.name` (KIP-1191): the dead-letter
    /// queue topic, empty for none.
    pub dlq_topic: String,
    /// `errors.deadletterqueue.copy.record.enable` (KIP-1191): whether
    /// dead-letter records carry the source record's key and value.
    pub dlq_copy_record: bool,
}

/// The share group settings in force for a group with `overrides`: each
/// override, else the broker's value (what ShareFetch and the share
/// partitions read for a group).
pub fn effective_share(
    cfg: &GroupConfig,
    overrides: Option<&BTreeMap<String, String>>,
) -> EffectiveShare {
    let get = |name: &str, broker: i32| {
        overrides
            .and_then(|o| o.get(name))
            .and_then(|v| v.trim().parse::<i32>().ok())
            .unwrap_or(broker)
    };
    let text = |name: &str, default: &str| {
        overrides
            .and_then(|o| o.get(name))
            .cloned()
            .unwrap_or_else(|| default.to_string())
    };
    EffectiveShare {
        session_timeout_ms: get("share.session.timeout.ms", cfg.share_session_timeout_ms),
        heartbeat_interval_ms: get(
            "share.heartbeat.interval.ms",
            cfg.share_heartbeat_interval_ms,
        ),
        record_lock_duration_ms: get(
            "share.record.lock.duration.ms",
            cfg.share_record_lock_duration_ms,
        ),
        delivery_count_limit: get("share.delivery.count.limit", cfg.share_delivery_count_limit),
        auto_offset_reset: text("share.auto.offset.reset", "latest"),
        isolation_level: text("share.isolation.level", "read_uncommitted"),
        dlq_topic: text("errors.deadletterqueue.topic.name", ""),
        dlq_copy_record: parse_bool(&text("errors.deadletterqueue.copy.record.enable", "false"))
            .unwrap_or(false),
    }
}

/// KIP-339's operation codes (SET also for the legacy AlterConfigs).
pub const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;
const OP_APPEND: i8 = 2;
const OP_SUBTRACT: i8 = 3;

/// Applies IncrementalAlterConfigs `ops` (key, operation, value) to
/// `group`'s `current` overrides and checks the result as Kafka does
/// (`GroupConfig.validate`): each key a group config (INVALID_CONFIG
/// "Unknown group config name: K"), an INT ("Invalid value V for
/// configuration K: Not a number of type INT"), within the broker's range
/// ("K must be in the range MIN to MAX inclusive."), the session timeout in
/// force above the heartbeat interval in force ("consumer.session.timeout.ms
/// must be greater than consumer.heartbeat.interval.ms"); APPEND and SUBTRACT
/// refused (no group config is a list). The default group (an empty name)
/// is INVALID_REQUEST. Gives the full new set of overrides.
pub fn alter(
    cfg: &GroupConfig,
    group: &str,
    current: &BTreeMap<String, String>,
    ops: &[(String, i8, Option<String>)],
) -> Result<BTreeMap<String, String>, MetadataError> {
    if group.is_empty() {
        return Err(InvalidRequest::DefaultGroupResource.into());
    }
    let mut next = current.clone();
    for (name, op, value) in ops {
        if def(name).is_none() {
            return Err(InvalidConfig::UnknownGroupKey { key: name.clone() }.into());
        }
        match *op {
            OP_SET => {
                let v = value
                    .clone()
                    .ok_or_else(|| InvalidConfig::SetWithoutValue { key: name.clone() })?;
                // A BOOLEAN is kept as Kafka stores it: `true` or `false`.
                let v = if def(name).is_some_and(GroupConfigDef::is_bool) {
                    parse_bool(&v).map_or(v, |b| b.to_string())
                } else {
                    v
                };
                next.insert(name.clone(), v);
            }
            OP_DELETE => {
                next.remove(name.as_str());
            }
            OP_APPEND | OP_SUBTRACT => {
                return Err(InvalidConfig::GroupKeyNotAList {
                    key: name.clone(),
                    operation: if *op == OP_APPEND {
                        "APPEND"
                    } else {
                        "SUBTRACT"
                    }
                    .to_string(),
                }
                .into())
            }
            other => return Err(InvalidRequest::UnknownConfigOperation { operation: other }.into()),
        }
    }
    for (k, v) in &next {
        validate(cfg, k, v)?;
    }
    let e = effective(cfg, Some(&next));
    if e.session_timeout_ms <= e.heartbeat_interval_ms {
        return Err(InvalidConfig::SessionNotAboveHeartbeat.into());
    }
    Ok(next)
}

/// Checks one group config value (see [`alter`]): its type first (Kafka's
/// ConfigDef texts), then the broker's range.
fn validate(cfg: &GroupConfig, key: &str, value: &str) -> Result<(), InvalidConfig> {
    let d = def(key).ok_or_else(|| InvalidConfig::UnknownGroupKey {
        key: key.to_string(),
    })?;
    match &d.kind {
        GroupConfigKind::Text { check, .. } => check(key, value),
        GroupConfigKind::Bool { .. } => match parse_bool(value) {
            Some(_) => Ok(()),
            None => Err(InvalidConfig::GroupValue {
                key: key.to_string(),
                value: value.to_string(),
                reason: "Expected value to be either true or false".to_string(),
            }),
        },
        GroupConfigKind::Int {
            range, at_least, ..
        } => {
            let n: i32 = value.trim().parse().map_err(|_| InvalidConfig::NotAnInt {
                key: key.to_string(),
                value: value.to_string(),
            })?;
            if n < *at_least {
                return Err(InvalidConfig::GroupValue {
                    key: key.to_string(),
                    value: value.to_string(),
                    reason: format!("Value must be at least {at_least}"),
                });
            }
            let (min, max) = range(cfg);
            if n < min || n > max {
                return Err(InvalidConfig::OutOfRange {
                    key: key.to_string(),
                    min,
                    max,
                });
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(k: &str, v: &str) -> (String, i8, Option<String>) {
        (k.to_string(), OP_SET, Some(v.to_string()))
    }

    #[test]
    fn ranges_come_from_the_broker_and_texts_are_kafkas() {
        let cfg = GroupConfig::default();
        let none = BTreeMap::new();
        let ok = alter(
            &cfg,
            "g",
            &none,
            &[set("consumer.heartbeat.interval.ms", "6000")],
        );
        assert_eq!(
            ok.ok()
                .and_then(|m| m.get("consumer.heartbeat.interval.ms").cloned()),
            Some("6000".into())
        );
        let e = alter(
            &cfg,
            "g",
            &none,
            &[set("consumer.session.timeout.ms", "1000")],
        );
        let Err(MetadataError::InvalidConfig(c)) = e else {
            panic!("{e:?}");
        };
        assert_eq!(
            c.to_string(),
            "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."
        );
        let e = alter(
            &cfg,
            "",
            &none,
            &[set("consumer.session.timeout.ms", "50000")],
        );
        assert!(matches!(e, Err(MetadataError::InvalidRequest(_))));
    }

    #[test]
    fn an_override_wins_then_the_broker_then_kafkas_default() {
        let cfg = GroupConfig {
            consumer_heartbeat_interval_ms: 1000,
            ..GroupConfig::default()
        };
        let mut o = BTreeMap::new();
        o.insert(
            "consumer.heartbeat.interval.ms".to_string(),
            "2000".to_string(),
        );
        let given: BTreeSet<String> = ["group.consumer.heartbeat.interval.ms".to_string()].into();
        let d = describe(&cfg, &given, Some(&o));
        let hb = d
            .iter()
            .find(|d| d.def.name == "consumer.heartbeat.interval.ms");
        let hb = hb.map(|d| (d.value.clone(), d.source, d.synonyms.len()));
        assert_eq!(hb, Some(("2000".to_string(), GroupConfigSource::Group, 3)));
        let pair = |e: Effective| (e.session_timeout_ms, e.heartbeat_interval_ms);
        assert_eq!(pair(effective(&cfg, Some(&o))), (45000, 2000));
        assert_eq!(pair(effective(&cfg, None)), (45000, 1000));
        assert_eq!(effective(&cfg, None).assignment_interval_ms, 1000);
    }

    #[test]
    fn share_group_configs_are_checked_with_kafkas_texts() {
        let cfg = GroupConfig::default();
        let none = BTreeMap::new();
        // Texts of Kafka 4.4's GroupConfig.validate for the same values.
        let cases = [
            (
                "share.session.timeout.ms",
                "1000",
                "share.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
            ),
            (
                "share.session.timeout.ms",
                "x",
                "Invalid value x for configuration share.session.timeout.ms: Not a number of type INT",
            ),
            (
                "share.record.lock.duration.ms",
                "90000",
                "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.",
            ),
            (
                "share.delivery.count.limit",
                "11",
                "share.delivery.count.limit must be in the range 2 to 10 inclusive.",
            ),
            (
                "share.delivery.count.limit",
                "1",
                "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2",
            ),
            (
                "share.auto.offset.reset",
                "EARLIEST",
                "Invalid value EARLIEST for configuration share.auto.offset.reset: Invalid value `EARLIEST` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
            ),
            (
                "share.auto.offset.reset",
                "by_duration:-PT1H",
                "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value `by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
            ),
            (
                "share.isolation.level",
                "foo",
                "Invalid value foo for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted",
            ),
            (
                "errors.deadletterqueue.topic.name",
                "__x",
                "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'",
            ),
            (
                "errors.deadletterqueue.copy.record.enable",
                "yes",
                "Invalid value yes for configuration errors.deadletterqueue.copy.record.enable: Expected value to be either true or false",
            ),
        ];
        let stored = alter(
            &cfg,
            "g",
            &none,
            &[set("errors.deadletterqueue.copy.record.enable", "TRUE")],
        )
        .unwrap();
        assert_eq!(
            stored
                .get("errors.deadletterqueue.copy.record.enable")
                .map(String::as_str),
            Some("true"),
            "a BOOLEAN is stored as Kafka stores it"
        );
        for (k, v, want) in cases {
            let e = alter(&cfg, "g", &none, &[set(k, v)]);
            let Err(MetadataError::InvalidConfig(c)) = e else {
                panic!("{k}={v}: {e:?}");
            };
            assert_eq!(c.to_string(), want, "{k}={v}");
        }
        for (k, v) in [
            ("share.auto.offset.reset", "by_duration:PT1H"),
            ("share.auto.offset.reset", "by_duration:P1DT2H3M4.5S"),
            ("share.auto.offset.reset", "earliest"),
            ("share.isolation.level", "read_committed"),
            ("share.session.timeout.ms", "50000"),
            (
                "errors.deadletterqueue.topic.name",
                "no-prefix-checked-here",
            ),
            ("errors.deadletterqueue.topic.name", ""),
        ] {
            assert!(alter(&cfg, "g", &none, &[set(k, v)]).is_ok(), "{k}={v}");
        }
        for d in ["PT", "P", "PT1X", "P1H", "1D", "PT1.5M"] {
            assert!(!iso_duration(d), "{d}");
        }
        for (d, ms) in [
            ("PT1H", 3_600_000),
            ("P1DT2H3M4.5S", 93_784_500),
            ("pt0.0015s", 1),
            ("P2D", 172_800_000),
            ("PT0S", 0),
        ] {
            assert_eq!(iso_duration_ms(d), Some(ms), "{d}");
        }
        let mut o = BTreeMap::new();
        o.insert(
            "share.auto.offset.reset".to_string(),
            "earliest".to_string(),
        );
        o.insert("share.delivery.count.limit".to_string(), "3".to_string());
        let e = effective_share(&cfg, Some(&o));
        assert_eq!(
            (
                e.auto_offset_reset.as_str(),
                e.delivery_count_limit,
                e.record_lock_duration_ms,
                e.isolation_level.as_str()
            ),
            ("earliest", 3, 30000, "read_uncommitted")
        );
    }
}
