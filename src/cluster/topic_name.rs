//! Kafka's topic-name rules (`org.apache.kafka.common.internals.Topic.validate`).

use crate::error::MetadataError;

/// Longest legal topic name (Kafka: 249 characters).
pub const MAX_TOPIC_NAME_LEN: usize = 249;

/// Checks a topic name: 1..=249 characters from `[a-zA-Z0-9._-]`, and not `.`
/// or `..`. Errors with INVALID_TOPIC_EXCEPTION.
pub fn validate(name: &str) -> Result<(), MetadataError> {
    if name.is_empty() {
        return Err(MetadataError::InvalidTopic("topic name is empty".into()));
    }
    if name == "." || name == ".." {
        return Err(MetadataError::InvalidTopic(format!(
            "topic name cannot be {name:?}"
        )));
    }
    if name.len() > MAX_TOPIC_NAME_LEN {
        return Err(MetadataError::InvalidTopic(format!(
            "topic name is {} characters, more than {MAX_TOPIC_NAME_LEN}",
            name.len()
        )));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(MetadataError::InvalidTopic(format!(
            "topic name {name:?} contains {c:?}; legal characters are ASCII alphanumerics, '.', '_' and '-'"
        )));
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
