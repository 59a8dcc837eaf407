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
