//! The consumer group records of `__consumer_offsets` (KIP-848), as Kafka
//! 4.4 writes them: the key is a 2-byte key version (= the record type,
//! Kafka's `apiKey`) and the key's fields in the non-flexible encoding;
//! the value is a 2-byte value version (0) and its fields in the flexible
//! encoding (compact strings and arrays, tagged fields). A tombstone (no
//! value) removes what the key names. Schemas: Kafka 4.4's
//! `ConsumerGroup*Key/Value.json` (group coordinator).
//!
//! | key version | record | key fields |
//! |---|---|---|
//! | 3 | ConsumerGroupMetadata | group id |
//! | 4 | ConsumerGroupPartitionMetadata (superseded by the metadata hash; read and ignored) | group id |
//! | 5 | ConsumerGroupMemberMetadata | group id, member id |
//! | 6 | ConsumerGroupTargetAssignmentMetadata | group id |
//! | 7 | ConsumerGroupTargetAssignmentMember | group id, member id |
//! | 8 | ConsumerGroupCurrentMemberAssignment | group id, member id |
//! | 16 | ConsumerGroupRegularExpression | group id, regex |

use bytes::Bytes;
use uuid::Uuid;

/// Partitions of one topic, with (record 8, KIP-1251) the epoch at which
/// each was assigned (same length as `partitions`, or None).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopicPartitions {
    /// Topic id.
    pub topic_id: Uuid,
    /// Partition indexes.
    pub partitions: Vec<i32>,
    /// Tagged field 0 of record 8's TopicPartitions: the epoch each
    /// partition was assigned at.
    pub assignment_epochs: Option<Vec<i32>>,
}

/// Record 5's value.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberMetadata {
    /// Static instance id.
    pub instance_id: Option<String>,
    /// Rack id.
    pub rack_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Subscribed topic names.
    pub subscribed_topic_names: Vec<String>,
    /// Subscribed regex.
    pub subscribed_topic_regex: Option<String>,
    /// Rebalance timeout (ms), default -1.
    pub rebalance_timeout_ms: i32,
    /// Server assignor.
    pub server_assignor: Option<String>,
    /// Tagged 0: a classic member's session timeout and protocols (None for
    /// a consumer-protocol member). Kept as read, written back unchanged.
    pub classic_member_metadata: Option<ClassicMemberMetadata>,
}

/// Record 5's tagged `ClassicMemberMetadata`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClassicMemberMetadata {
    /// Session timeout (ms).
    pub session_timeout_ms: i32,
    /// (protocol name, metadata).
    pub supported_protocols: Vec<(String, Bytes)>,
}

/// Record 8's value: where a member stands in its reconciliation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CurrentMemberAssignment {
    /// The epoch the member is expected to heartbeat with.
    pub member_epoch: i32,
    /// The epoch before the last bump (a member whose answer was lost
    /// retries with it).
    pub previous_member_epoch: i32,
    /// Kafka's MemberState: 0 STABLE, 1 UNREVOKED_PARTITIONS,
    /// 2 UNRELEASED_PARTITIONS, 127 UNKNOWN.
    pub state: i8,
    /// Assigned (or owned) partitions.
    pub assigned: Vec<TopicPartitions>,
    /// Partitions the member must revoke.
    pub pending_revocation: Vec<TopicPartitions>,
}

/// One consumer group record: the key's fields and the value (None: a
/// tombstone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerRecord {
    /// 3: the group epoch and the hash of its subscribed topics' metadata.
    GroupMetadata {
        /// Group id.
        group_id: String,
        /// (epoch, metadata hash); None removes the group.
        value: Option<(i32, i64)>,
    },
    /// 4: superseded; read and ignored, never written.
    PartitionMetadata {
        /// Group id.
        group_id: String,
    },
    /// 5: a member's subscription and client data.
    MemberMetadata {
        /// Group id.
        group_id: String,
        /// Member id.
        member_id: String,
        /// None removes the member.
        value: Option<MemberMetadata>,
    },
    /// 6: the target assignment's epoch (and when it was computed, ms).
    TargetAssignmentMetadata {
        /// Group id.
        group_id: String,
        /// (assignment epoch, assignment timestamp ms); None removes it.
        value: Option<(i32, i64)>,
    },
    /// 7: one member's target assignment.
    TargetAssignmentMember {
        /// Group id.
        group_id: String,
        /// Member id.
        member_id: String,
        /// None removes it.
        value: Option<Vec<TopicPartitions>>,
    },
    /// 8: one member's current assignment and reconciliation state.
    CurrentMemberAssignment {
        /// Group id.
        group_id: String,
        /// Member id.
        member_id: String,
        /// None removes it.
        value: Option<CurrentMemberAssignment>,
    },
    /// 16: a regex's resolved topics.
    RegularExpression {
        /// Group id.
        group_id: String,
        /// The regex.
        regex: String,
        /// (topics, version, timestamp ms); None removes it.
        value: Option<(Vec<String>, i64, i64)>,
    },
}

/// Why a record could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// Too short or a length out of range.
    #[error("truncated or malformed consumer group record: {0}")]
    Malformed(&'static str),
    /// A key version outside 3–8 and 16.
    #[error("key version {0} is not a consumer group record")]
    NotConsumerGroup(i16),
    /// A value version this broker does not know.
    #[error("value version {0} of key version {1} is not known")]
    UnknownValueVersion(i16, i16),
}

impl ConsumerRecord {
    /// The group the record belongs to.
    pub fn group_id(&self) -> &str {
        match self {
            ConsumerRecord::GroupMetadata { group_id, .. }
            | ConsumerRecord::PartitionMetadata { group_id }
            | ConsumerRecord::MemberMetadata { group_id, .. }
            | ConsumerRecord::TargetAssignmentMetadata { group_id, .. }
            | ConsumerRecord::TargetAssignmentMember { group_id, .. }
            | ConsumerRecord::CurrentMemberAssignment { group_id, .. }
            | ConsumerRecord::RegularExpression { group_id, .. } => group_id,
        }
    }

    /// The record as Kafka 4.4 writes it: (key, value or None for a
    /// tombstone).
    pub fn encode(&self) -> (Bytes, Option<Bytes>) {
        unimplemented!("skeleton")
    }

    /// Reads a record of key version 3–8 or 16 (`key` starts with the key
    /// version). Errors name what is wrong.
    pub fn decode(_key: &[u8], _value: Option<&[u8]>) -> Result<ConsumerRecord, RecordError> {
        unimplemented!("skeleton")
    }
}
