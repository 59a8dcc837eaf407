//! Kafka's topic-name rules (`org.apache.kafka.common.internals.Topic.validate`).

use super::error::InvalidTopic;
use crate::cluster::error::MetadataError;

/// Longest legal topic name (Kafka: 249 characters).
pub const MAX_TOPIC_NAME_LEN: usize = 249;

/// Checks a topic name: 1..=249 characters from `[a-zA-Z0-9._-]`, and not `.`
/// or `..`. Errors with INVALID_TOPIC_EXCEPTION.
pub fn validate(name: &str) -> Result<(), MetadataError> {
    if name.is_empty() {
        return Err(InvalidTopic::Empty.into());
    }
    if name == "." || name == ".." {
        return Err(InvalidTopic::Dots {
            name: name.to_string(),
        }
        .into());
    }
    if name.len() > MAX_TOPIC_NAME_LEN {
        return Err(InvalidTopic::TooLong {
            length: name.len(),
            max: MAX_TOPIC_NAME_LEN,
        }
        .into());
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(InvalidTopic::IllegalCharacter {
            name: name.to_string(),
            character: c,
        }
        .into());
    }
    Ok(())
}

/// True for Kafka's internal topics (`__consumer_offsets`, `__transaction_state`).
pub fn is_internal(name: &str) -> bool {
    name == "__consumer_offsets" || name == "__transaction_state"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        assert!(validate("orders.v1_x-2").is_ok());
        assert!(validate("").is_err());
        assert!(validate("..").is_err());
        assert!(validate("a b").is_err());
        assert!(validate("é").is_err());
        assert!(validate(&"a".repeat(249)).is_ok());
        assert!(validate(&"a".repeat(250)).is_err());
    }
}
