//! The cluster layer's errors: a refused metadata change ([`MetadataError`]
//! and the details its variants carry), a controller that did not answer
//! ([`ControllerCallError`]), a coordinator that cannot be named from the
//! metadata ([`CoordinatorLookupError`]). Each Display renders the text
//! clients get after the variant's prefix (`invalid partitions: …`); the
//! codes are per variant, in `src/error.rs` (the edge).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::control::LifecycleError;
use super::import::topic_id_to_kafka;
use super::quorum::rpc::ControllerUnavailable;
pub use crate::config::InvalidConfig;
use crate::mesh::ShardError;

/// Errors about topics and partitions (the cluster metadata layer).
#[derive(Debug, Clone, PartialEq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum MetadataError {
    /// UNKNOWN_TOPIC_OR_PARTITION (3).
    #[error("unknown topic or partition")]
    UnknownTopicOrPartition,
    /// UNKNOWN_TOPIC_ID (100).
    #[error("unknown topic id")]
    UnknownTopicId,
    /// INVALID_TOPIC_EXCEPTION (17): the name breaks Kafka's rules.
    #[error("invalid topic name: {0}")]
    InvalidTopic(#[from] InvalidTopic),
    /// TOPIC_ALREADY_EXISTS (36): `topic` is registered (for an import,
    /// `copy` is the directory found for it).
    #[error("topic {} already exists", already_exists_text(topic, copy))]
    TopicAlreadyExists {
        /// The topic name.
        topic: String,
        /// Import only: the partition directory copied in for it.
        copy: Option<CopiedDirectory>,
    },
    /// INVALID_PARTITIONS (37).
    #[error("invalid partitions: {0}")]
    InvalidPartitions(#[from] InvalidPartitions),
    /// INVALID_REPLICATION_FACTOR (38): more replicas than brokers.
    #[error(
        "invalid replication factor: replication factor {requested} is larger than the {brokers} available broker(s)"
    )]
    InvalidReplicationFactor {
        /// The replication factor asked for.
        requested: i16,
        /// Alive brokers in the cluster.
        brokers: i32,
    },
    /// INVALID_REPLICA_ASSIGNMENT (39).
    #[error("invalid replica assignment: {0}")]
    InvalidReplicaAssignment(#[from] InvalidAssignment),
    /// INVALID_CONFIG (40).
    #[error("invalid config: {0}")]
    InvalidConfig(#[from] InvalidConfig),
    /// TOPIC_DELETION_DISABLED (73).
    #[error("topic deletion is disabled (delete.topic.enable=false)")]
    TopicDeletionDisabled,
    /// INVALID_REQUEST (42).
    #[error("invalid request: {0}")]
    InvalidRequest(#[from] InvalidRequest),
    /// KAFKA_STORAGE_ERROR (56): the metadata could not be read or persisted.
    #[error("storage error: {0}")]
    Storage(#[from] StorageFailure),
    /// The active controller could not be reached: its call's code
    /// (REQUEST_TIMED_OUT, 7, mostly).
    #[error("{0}")]
    Controller(#[from] ControllerCallError),
}

/// Why a request for the active controller got no reply (see
/// `shard::controller_call`).
#[derive(Debug, Clone, PartialEq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum ControllerCallError {
    /// Shard 0, where the quorum member lives, did not answer
    /// (REQUEST_TIMED_OUT, 7).
    #[error(transparent)]
    Shard(#[from] ShardError),
    /// The metadata quorum is not started yet (REQUEST_TIMED_OUT, 7).
    #[error("the metadata quorum is starting")]
    NotStarted,
    /// No active controller answered in time (its code: REQUEST_TIMED_OUT, 7).
    #[error(transparent)]
    Unavailable(#[from] ControllerUnavailable),
    /// This broker has not registered with the controller yet
    /// (REQUEST_TIMED_OUT, 7; clients retry).
    #[error("this broker is not registered with the controller yet")]
    NotRegistered,
    /// The controller refused a broker-lifecycle request (its code).
    #[error(transparent)]
    Lifecycle(#[from] LifecycleError),
    /// The controller answered with a reply of another request
    /// (UNKNOWN_SERVER_ERROR, -1: a bug).
    #[error("the controller answered another kind of request")]
    UnexpectedReply,
}

// ---- coordinator lookup ----
//
// Why the broker coordinating a group or a transactional id cannot be
// named from the metadata (`handlers::group_owner`/`txn_owner`,
// `ensure_*_topic`).

/// Why no coordinator can be named for a group or a transactional id. All
/// but an unsupported key type map to COORDINATOR_NOT_AVAILABLE (15): the
/// client looks up again.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CoordinatorLookupError {
    /// The internal topic (`__consumer_offsets` or `__transaction_state`)
    /// does not exist yet; FindCoordinator creates it.
    #[error("{topic} does not exist yet")]
    TopicMissing {
        /// The internal topic.
        topic: &'static str,
    },
    /// Creating the internal topic failed.
    #[error("cannot create {topic}: {source}")]
    CreateFailed {
        /// The internal topic.
        topic: &'static str,
        /// Why the controller refused.
        source: MetadataError,
    },
    /// The active controller did not answer.
    #[error("cannot create {topic}: {source}")]
    ControllerUnavailable {
        /// The internal topic.
        topic: &'static str,
        /// Why.
        source: ControllerCallError,
    },
    /// The coordinator's partition has no leader now (its brokers are
    /// fenced or an election is under way).
    #[error("{topic} partition {partition} has no leader")]
    NoLeader {
        /// The internal topic.
        topic: &'static str,
        /// Its partition for the key.
        partition: i32,
    },
    /// Another broker leads the key's partition: NOT_COORDINATOR (16), the
    /// client looks the coordinator up again.
    #[error("{topic} partition {partition} is led by broker {leader}, not this one")]
    NotCoordinator {
        /// The internal topic.
        topic: &'static str,
        /// Its partition for the key.
        partition: i32,
        /// The partition's leader (-1: none).
        leader: i32,
    },
    /// A key type other than 0 (group), 1 (transaction) and 2 (share
    /// coordinator): INVALID_REQUEST (42).
    #[error("unsupported coordinator key type {key_type}")]
    UnsupportedKeyType {
        /// The key type asked for.
        key_type: i8,
    },
    /// A share coordinator key (type 2) that is not
    /// `groupId:topicId:partition` as Kafka 4.4 parses it: INVALID_REQUEST
    /// (42).
    #[error("malformed share coordinator key")]
    MalformedShareKey,
}

/// Why a topic name is refused (Kafka `Topic.validate`, and the registry's
/// own rules). Carried by `MetadataError::InvalidTopic` (INVALID_TOPIC_EXCEPTION, 17).
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
pub enum InvalidTopic {
    /// The name is empty.
    #[error("topic name is empty")]
    Empty,
    /// The name is `.` or `..`.
    #[error("topic name cannot be {name:?}")]
    Dots {
        /// The name.
        name: String,
    },
    /// The name is longer than `max` characters (249).
    #[error("topic name is {length} characters, more than {max}")]
    TooLong {
        /// Length of the name (bytes).
        length: usize,
        /// The longest legal name.
        max: usize,
    },
    /// The name holds a character outside `[a-zA-Z0-9._-]`.
    #[error(
        "topic name {name:?} contains {character:?}; legal characters are ASCII alphanumerics, '.', '_' and '-'"
    )]
    IllegalCharacter {
        /// The name.
        name: String,
        /// The first illegal character.
        character: char,
    },
    /// The name equals an existing one when `.` and `_` are taken as equal
    /// (they collide in Kafka's metric names).
    #[error("topic {name} collides with existing topic {existing} ('.' and '_' are equivalent)")]
    Collides {
        /// The name asked for.
        name: String,
        /// The existing topic.
        existing: String,
    },
    /// Import found a partition directory of one of Kafka's internal topics.
    #[error(
        "{directory}: Kafka's internal topic {topic} cannot be imported (committed offsets and transaction state do not move; see docs/migrating-from-kafka.md)"
    )]
    InternalImport {
        /// The partition directory's name.
        directory: String,
        /// The internal topic.
        topic: String,
    },
}

/// A partition directory import found for a topic the registry already has
/// (`MetadataError::TopicAlreadyExists`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CopiedDirectory {
    /// The registered topic's partition count.
    pub partitions: i32,
    /// The registered topic's id.
    pub topic_id: Uuid,
    /// The directory's name (`<topic>-<n>`).
    pub directory: String,
    /// The topic id in the directory's `partition.metadata`, if any.
    pub directory_topic_id: Option<Uuid>,
}

/// The text after `topic ` in `MetadataError::TopicAlreadyExists`: the name,
/// and for an import the registered topic and the copied directory.
pub(crate) fn already_exists_text(topic: &str, copy: &Option<CopiedDirectory>) -> String {
    match copy {
        None => topic.to_string(),
        Some(c) => format!(
            "{topic} (registered with {} partition(s) and topic id {}; directory {} has {}): \
             remove the copied directories or the registered topic first",
            c.partitions,
            topic_id_to_kafka(&c.topic_id),
            c.directory,
            c.directory_topic_id
                .map(|i| format!("topic id {}", topic_id_to_kafka(&i)))
                .unwrap_or_else(|| "no partition.metadata".into())
        ),
    }
}

/// Why a partition count is refused. Carried by
/// `MetadataError::InvalidPartitions` (INVALID_PARTITIONS, 37).
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
pub enum InvalidPartitions {
    /// A new topic's count outside `[min, max]`.
    #[error("number of partitions must be in [{min}, {max}], got {requested}")]
    OutOfRange {
        /// The count asked for.
        requested: i32,
        /// Lowest count (1).
        min: i32,
        /// Highest count (1000000).
        max: i32,
    },
    /// The partitions would need more open files than `ulimit -n` allows.
    #[error(
        "{partitions} partitions in all would need about {needed} open files but the limit (ulimit -n) is {limit}; raise it or use fewer partitions"
    )]
    OpenFiles {
        /// Partitions of every topic, with the new ones.
        partitions: i64,
        /// Open files they would need.
        needed: i64,
        /// The process's open-files limit.
        limit: i64,
    },
    /// CreatePartitions with a count that is not above the current one.
    #[error("topic currently has {current} partitions, {requested} would not be an increase")]
    NotAnIncrease {
        /// The topic's partition count.
        current: i32,
        /// The count asked for.
        requested: i32,
    },
    /// CreatePartitions above the highest count.
    #[error("{requested} partitions is more than {max}")]
    TooMany {
        /// The count asked for.
        requested: i32,
        /// Highest count (1000000).
        max: i32,
    },
    /// Import found partition directories with gaps.
    #[error(
        "topic {topic}: partition directories {found:?} are not 0..{} without gaps; copy every partition of the topic",
        found.len() as i32 - 1
    )]
    Gaps {
        /// The topic.
        topic: String,
        /// The partition indexes found.
        found: BTreeSet<i32>,
    },
}

/// Why replica assignments are refused. Carried by
/// `MetadataError::InvalidReplicaAssignment` (INVALID_REPLICA_ASSIGNMENT, 39).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum InvalidAssignment {
    /// The partitions' replica lists differ in length, or one is empty.
    #[error("every partition's replica list must have the same, non-zero length")]
    UnevenReplicas,
    /// A replica list names a broker twice.
    #[error("a replica list names a broker twice")]
    DuplicateBroker,
    /// A replica list names a broker that is not registered.
    #[error("broker {broker} is not registered")]
    UnknownBroker {
        /// The broker id.
        broker: i32,
    },
    /// CreatePartitions: not one replica list per new partition.
    #[error("{given} replica lists for {added} new partitions")]
    CountMismatch {
        /// Lists given.
        given: i32,
        /// Partitions added.
        added: i32,
    },
    /// CreateTopics: assignments together with a partition count or a
    /// replication factor (Kafka: "both numPartitions or replicationFactor
    /// and replicasAssignments were set").
    #[error("replica assignments come with num_partitions = -1 and replication_factor = -1")]
    WithCounts,
    /// Some alive brokers have a rack and some do not.
    #[error("not all brokers have rack information (broker.rack) for replica placement")]
    MixedRacks,
}

/// Why a request is refused as malformed or unsupported. Carried by
/// `MetadataError::InvalidRequest` (INVALID_REQUEST, 42).
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
pub enum InvalidRequest {
    /// CreateTopics names a topic twice.
    #[error("topic {topic} appears more than once")]
    DuplicateTopic {
        /// The topic.
        topic: String,
    },
    /// An IncrementalAlterConfigs operation other than SET, DELETE, APPEND,
    /// SUBTRACT (0..=3).
    #[error("unknown config operation {operation}")]
    UnknownConfigOperation {
        /// The operation code.
        operation: i8,
    },
    /// A change to broker configs, which are static here.
    #[error(
        "broker configs are static in this broker: set them in server.properties or with --override"
    )]
    StaticBrokerConfigs,
    /// A group config change for the default group (an empty name), which
    /// Kafka refuses with this text.
    #[error("Default group resources are not allowed.")]
    DefaultGroupResource,
    /// A config resource type other than topic or broker.
    #[error("resource type {resource_type} is not supported")]
    UnsupportedResourceType {
        /// The resource type code.
        resource_type: i8,
    },
    /// The controller answered fewer results than items asked for.
    #[error("lost")]
    AnswerLost,
    /// Import: a topic's partition directories name different topic ids.
    #[error("topic {topic}: its partition directories name different topic ids")]
    MixedTopicIds {
        /// The topic.
        topic: String,
    },
    /// Import: a topic's id is already another topic's.
    #[error(
        "topic {topic}: its topic id {} is already the id of topic {other}",
        topic_id_to_kafka(topic_id)
    )]
    TopicIdTaken {
        /// The topic.
        topic: String,
        /// Its topic id.
        topic_id: Uuid,
        /// The topic that has the id.
        other: String,
    },
    /// Import: `--topic-config` names a topic with nothing to import.
    #[error(
        "--topic-config names topic {topic}, which has no unregistered partition directories to import"
    )]
    ConfigForUnknownTopic {
        /// The topic.
        topic: String,
    },
}

/// Why metadata could not be read or persisted. Carried by
/// `MetadataError::Storage` (KAFKA_STORAGE_ERROR, 56).
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
pub enum StorageFailure {
    /// A file operation failed, or a file does not parse.
    #[error("{}", io_text(*kind, *os_error, detail.as_deref()))]
    Io {
        /// The I/O error's kind.
        #[serde(with = "io_kind")]
        kind: std::io::ErrorKind,
        /// The OS error number (errno), when the OS gave one.
        os_error: Option<i32>,
        /// The error's own text when it is not an OS error (e.g. a file
        /// that does not parse, named with the line); None for OS errors,
        /// whose text comes from `os_error`.
        detail: Option<String>,
    },
    /// The controller's shard did not answer (shutdown).
    #[error(transparent)]
    Controller(#[from] ShardError),
}

impl From<std::io::Error> for StorageFailure {
    fn from(e: std::io::Error) -> StorageFailure {
        let os_error = e.raw_os_error();
        StorageFailure::Io {
            kind: e.kind(),
            os_error,
            detail: os_error.is_none().then(|| e.to_string()),
        }
    }
}

impl From<std::io::Error> for MetadataError {
    fn from(e: std::io::Error) -> MetadataError {
        MetadataError::Storage(e.into())
    }
}

impl From<ShardError> for MetadataError {
    fn from(e: ShardError) -> MetadataError {
        MetadataError::Storage(e.into())
    }
}

/// The text of an I/O error: its own `detail`, else rebuilt from its
/// errno or kind.
fn io_text(kind: std::io::ErrorKind, os_error: Option<i32>, detail: Option<&str>) -> String {
    match (detail, os_error) {
        (Some(d), _) => d.to_string(),
        (None, Some(code)) => std::io::Error::from_raw_os_error(code).to_string(),
        (None, None) => std::io::Error::from(kind).to_string(),
    }
}

/// `std::io::ErrorKind` as its name (serde), for errors sent between brokers.
mod io_kind {
    use std::io::ErrorKind;

    use serde::{Deserialize, Deserializer, Serializer};

    const KINDS: &[ErrorKind] = &[
        ErrorKind::NotFound,
        ErrorKind::PermissionDenied,
        ErrorKind::AlreadyExists,
        ErrorKind::InvalidInput,
        ErrorKind::InvalidData,
        ErrorKind::TimedOut,
        ErrorKind::WriteZero,
        ErrorKind::Interrupted,
        ErrorKind::Unsupported,
        ErrorKind::UnexpectedEof,
        ErrorKind::OutOfMemory,
        ErrorKind::StorageFull,
        ErrorKind::ReadOnlyFilesystem,
        ErrorKind::Other,
    ];

    pub fn serialize<S: Serializer>(kind: &ErrorKind, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{kind:?}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ErrorKind, D::Error> {
        let name = String::deserialize(d)?;
        Ok(KINDS
            .iter()
            .copied()
            .find(|k| format!("{k:?}") == name)
            .unwrap_or(ErrorKind::Other))
    }
}

/// Why ElectLeaders elected no new leader for one partition (Kafka's
/// per-partition codes; mapped in `crate::error`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum ElectionError {
    /// No such topic or partition: UNKNOWN_TOPIC_OR_PARTITION (3).
    #[error("unknown topic or partition")]
    UnknownTopicOrPartition,
    /// The preferred replica leads already (preferred), or the partition
    /// has a leader (unclean): ELECTION_NOT_NEEDED (84).
    #[error("the partition's leader needs no election")]
    ElectionNotNeeded,
    /// The preferred replica is not alive or not in the ISR:
    /// PREFERRED_LEADER_NOT_AVAILABLE (80).
    #[error("the preferred replica {preferred} is not an alive ISR member")]
    PreferredLeaderNotAvailable {
        /// The partition's first replica.
        preferred: i32,
    },
    /// No replica is alive to lead: ELIGIBLE_LEADERS_NOT_AVAILABLE (83).
    #[error("no alive replica can lead the partition")]
    EligibleLeadersNotAvailable,
}
