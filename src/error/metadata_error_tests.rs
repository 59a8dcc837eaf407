use super::*;
use crate::cluster::error::{
    CopiedDirectory, InvalidAssignment, InvalidConfig, InvalidPartitions, InvalidRequest,
    InvalidTopic,
};

/// Every variant's code, and the text clients get (unchanged from the
/// texts the handlers built before the details were structured).
#[test]
fn metadata_error_codes_and_texts() {
    let table: Vec<(MetadataError, i16, &str)> = vec![
        (
            MetadataError::UnknownTopicOrPartition,
            3,
            "unknown topic or partition",
        ),
        (MetadataError::UnknownTopicId, 100, "unknown topic id"),
        (
            InvalidTopic::TooLong {
                length: 250,
                max: 249,
            }
            .into(),
            17,
            "invalid topic name: topic name is 250 characters, more than 249",
        ),
        (
            InvalidTopic::IllegalCharacter {
                name: "a b".into(),
                character: ' ',
            }
            .into(),
            17,
            "invalid topic name: topic name \"a b\" contains ' '; legal characters are ASCII alphanumerics, '.', '_' and '-'",
        ),
        (
            MetadataError::TopicAlreadyExists {
                topic: "orders".into(),
                copy: None,
            },
            36,
            "topic orders already exists",
        ),
        (
            InvalidPartitions::OutOfRange {
                requested: 0,
                min: 1,
                max: 1_000_000,
            }
            .into(),
            37,
            "invalid partitions: number of partitions must be in [1, 1000000], got 0",
        ),
        (
            InvalidPartitions::Gaps {
                topic: "t".into(),
                found: [0, 2].into_iter().collect(),
            }
            .into(),
            37,
            "invalid partitions: topic t: partition directories {0, 2} are not 0..1 without gaps; copy every partition of the topic",
        ),
        (
            MetadataError::InvalidReplicationFactor {
                requested: 3,
                brokers: 1,
            },
            38,
            "invalid replication factor: replication factor 3 is larger than the 1 available broker(s)",
        ),
        (
            InvalidAssignment::UnknownBroker { broker: 4 }.into(),
            39,
            "invalid replica assignment: broker 4 is not registered",
        ),
        (
            InvalidConfig::BadValue {
                key: "retention.ms".into(),
                value: "x".into(),
                allowed: "an integer".into(),
            }
            .into(),
            40,
            "invalid config: invalid value \"x\" for retention.ms: an integer",
        ),
        (
            InvalidConfig::UnknownKey {
                key: "nope".into(),
                list_supported: false,
            }
            .into(),
            40,
            "invalid config: unknown topic config nope",
        ),
        (
            MetadataError::TopicDeletionDisabled,
            73,
            "topic deletion is disabled (delete.topic.enable=false)",
        ),
        (
            InvalidRequest::UnsupportedResourceType { resource_type: 9 }.into(),
            42,
            "invalid request: resource type 9 is not supported",
        ),
        (
            MetadataError::from(std::io::Error::from_raw_os_error(28)),
            56,
            "storage error: No space left on device (os error 28)",
        ),
        (
            MetadataError::from(std::io::Error::other("meta.properties: bad line 3")),
            56,
            "storage error: meta.properties: bad line 3",
        ),
        (
            MetadataError::from(ShardError::Unavailable(0)),
            56,
            "storage error: shard 0 is not available",
        ),
        (
            MetadataError::from(ControllerCallError::Unavailable(
                ControllerUnavailable::Timeout {
                    timeout_ms: 2000,
                    last: "no active controller".into(),
                },
            )),
            7,
            "no active controller answered within 2000 ms: no active controller",
        ),
    ];
    code_tables::check(table.iter().map(|(e, c, _)| (e, *c)));
    for (e, code, text) in table {
        assert_eq!(e.code(), code, "{e:?}");
        assert_eq!(e.to_string(), text, "{e:?}");
    }
}

#[test]
fn import_texts() {
    let copy = CopiedDirectory {
        partitions: 2,
        topic_id: uuid::Uuid::nil(),
        directory: "t-3".into(),
        directory_topic_id: None,
    };
    let e = MetadataError::TopicAlreadyExists {
        topic: "t".into(),
        copy: Some(copy),
    };
    assert_eq!(
        e.to_string(),
        "topic t (registered with 2 partition(s) and topic id AAAAAAAAAAAAAAAAAAAAAA; directory t-3 has no partition.metadata): remove the copied directories or the registered topic first already exists"
    );
    let inner = InvalidConfig::SetWithoutValue { key: "k".into() };
    let e = MetadataError::from(InvalidConfig::ForTopic {
        topic: "t".into(),
        source: Box::new(inner),
    });
    assert_eq!(
        e.to_string(),
        "invalid config: topic t: SET k needs a value"
    );
}
