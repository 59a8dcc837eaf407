//! Why a topic config is refused: the config layer's error, carried up by
//! `cluster::error::MetadataError::InvalidConfig` (INVALID_CONFIG, 40).

/// Why a topic config is refused. Carried by `MetadataError::InvalidConfig`
/// (INVALID_CONFIG, 40).
#[derive(Debug, Clone, PartialEq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum InvalidConfig {
    /// A value outside what the key allows.
    #[error("invalid value {value:?} for {key}: {allowed}")]
    BadValue {
        /// The config key.
        key: String,
        /// The value given.
        value: String,
        /// What the key allows, as text (e.g. "an integer in [0, 10]").
        allowed: String,
    },
    /// Enabling a feature this build does not have.
    #[error("{reason}")]
    Unsupported {
        /// The config key.
        key: String,
        /// Why it cannot be enabled.
        reason: std::borrow::Cow<'static, str>,
    },
    /// A key that is not a topic config; with `list_supported` the text
    /// lists the supported keys.
    #[error("unknown topic config {key}{}", if *list_supported { supported_keys() } else { String::new() })]
    UnknownKey {
        /// The config key.
        key: String,
        /// The text lists the supported keys.
        list_supported: bool,
    },
    /// APPEND or SUBTRACT (KIP-339) on a key that is not a list.
    #[error("{key} is not a list: APPEND and SUBTRACT apply to list configs only")]
    NotAList {
        /// The config key.
        key: String,
    },
    /// SET (KIP-339) without a value.
    #[error("SET {key} needs a value")]
    SetWithoutValue {
        /// The config key.
        key: String,
    },
    /// A group config (KIP-848) outside the broker's
    /// `group.consumer.min/max.*` range; Kafka's text.
    #[error("{key} must be in the range {min} to {max} inclusive.")]
    OutOfRange {
        /// The config key.
        key: String,
        /// The smallest value allowed.
        min: i32,
        /// The largest value allowed.
        max: i32,
    },
    /// A group config (KIP-848) that is not an INT; Kafka's text.
    #[error("Invalid value {value} for configuration {key}: Not a number of type INT")]
    NotAnInt {
        /// The config key.
        key: String,
        /// The value given.
        value: String,
    },
    /// A group's session timeout (its own or the broker's) not above its
    /// heartbeat interval; Kafka's text.
    #[error("consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms")]
    SessionNotAboveHeartbeat,
    /// A group config value its type refuses; Kafka's text ("Invalid
    /// value V for configuration K: REASON").
    #[error("Invalid value {value} for configuration {key}: {reason}")]
    GroupValue {
        /// The config key.
        key: String,
        /// The value given.
        value: String,
        /// Kafka's reason.
        reason: String,
    },
    /// A share group's `errors.deadletterqueue.topic.name` starting with
    /// `__` (KIP-1191); Kafka's text.
    #[error("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")]
    DlqTopicInternal,
    /// A key that is not a group config; Kafka's text.
    #[error("Unknown group config name: {key}")]
    UnknownGroupKey {
        /// The config key.
        key: String,
    },
    /// APPEND or SUBTRACT (KIP-339) on a group config, none of which is a
    /// list; Kafka's text.
    #[error("Can't {operation} to key {key} because its type is not LIST.")]
    GroupKeyNotAList {
        /// The config key.
        key: String,
        /// `APPEND` or `SUBTRACT`.
        operation: String,
    },
    /// A config of an import's `--topic-config`, refused.
    #[error("topic {topic}: {source}")]
    ForTopic {
        /// The topic.
        topic: String,
        /// Why.
        source: Box<InvalidConfig>,
    },
}

/// `; supported: a, b, …` for [`InvalidConfig::UnknownKey`].
fn supported_keys() -> String {
    let names: Vec<&str> = super::TOPIC_CONFIGS.iter().map(|d| d.name).collect();
    format!("; supported: {}", names.join(", "))
}
