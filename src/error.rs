//! Errors per layer, and their mapping to Kafka error codes in one place.
//!
//! Each layer has its own typed error (`ProtocolError`, `StorageError`,
//! `BatchError`, `MetadataError`, `ShardError`). [`KafkaCode`] converts each to
//! the Kafka error code the client sees, with an exhaustive `match` per type so
//! that a new variant cannot be silently mapped.

use kafka_protocol::ResponseError as E;

use crate::cluster::control::LifecycleError;
pub use crate::cluster::error::{
    CopiedDirectory, InvalidAssignment, InvalidConfig, InvalidPartitions, InvalidRequest,
    InvalidTopic, StorageFailure,
};
pub use crate::cluster::leadership::LeadershipError;
use crate::cluster::quorum::rpc::ControllerUnavailable;
use crate::storage::{BatchError, StorageError};

/// Errors of the wire layer: framing and header/body decoding. Most of these
/// close the one connection that sent the request (as Kafka's SocketServer does).
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// Fewer bytes than the structure needs.
    #[error("truncated {0}")]
    Truncated(&'static str),
    /// An API key unknown to the protocol.
    #[error("unknown API key {0}")]
    UnknownApiKey(i16),
    /// A known API at a version this broker does not serve.
    #[error("unsupported version {version} of API key {api_key}")]
    UnsupportedVersion {
        /// API key.
        api_key: i16,
        /// Requested version.
        version: i16,
    },
    /// A body or header that does not decode.
    #[error("malformed request: {0}")]
    Malformed(String),
    /// A frame larger than `socket.request.max.bytes`, or with a negative size.
    #[error("frame of {size} bytes is outside [8, {max}] (socket.request.max.bytes)")]
    FrameSize {
        /// Size read from the wire.
        size: i64,
        /// The configured maximum.
        max: usize,
    },
    /// A response could not be encoded (a bug; the connection is closed).
    #[error("cannot encode response: {0}")]
    Encode(String),
}

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
    #[error(
        "topic {} already exists",
        crate::cluster::error::already_exists_text(topic, copy)
    )]
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

impl KafkaCode for ControllerCallError {
    fn code(&self) -> i16 {
        match self {
            ControllerCallError::Shard(e) => e.code(),
            ControllerCallError::NotStarted => E::RequestTimedOut.code(),
            ControllerCallError::Unavailable(e) => e.code(),
            ControllerCallError::NotRegistered => E::RequestTimedOut.code(),
            ControllerCallError::Lifecycle(e) => e.code(),
            ControllerCallError::UnexpectedReply => E::UnknownServerError.code(),
        }
    }
}

impl KafkaCode for ControllerUnavailable {
    fn code(&self) -> i16 {
        match self {
            ControllerUnavailable::NotController { .. } => E::NotController.code(),
            ControllerUnavailable::Timeout { .. } => E::RequestTimedOut.code(),
            ControllerUnavailable::Stopped { .. } => E::RequestTimedOut.code(),
        }
    }
}

impl KafkaCode for LifecycleError {
    fn code(&self) -> i16 {
        match self {
            LifecycleError::StaleBrokerEpoch { .. } => E::StaleBrokerEpoch.code(),
            LifecycleError::NotRegistered { .. } => E::BrokerIdNotRegistered.code(),
            LifecycleError::DuplicateRegistration { .. } => E::DuplicateBrokerRegistration.code(),
            LifecycleError::InconsistentClusterId { .. } => E::InconsistentClusterId.code(),
        }
    }
}

/// Errors of cross-shard work.
#[derive(Debug, Clone, PartialEq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum ShardError {
    /// The target shard is gone (shutdown); the outcome of the work is unknown,
    /// so clients must retry: REQUEST_TIMED_OUT (7), as Redpanda does.
    #[error("shard {0} is not available")]
    Unavailable(usize),
}

/// Something that maps to a Kafka error code.
pub trait KafkaCode {
    /// The Kafka error code (0 = NONE).
    fn code(&self) -> i16;
}

impl KafkaCode for BatchError {
    fn code(&self) -> i16 {
        match self {
            BatchError::CorruptMessage(_) => E::CorruptMessage.code(),
            BatchError::MessageTooLarge { .. } => E::MessageTooLarge.code(),
            BatchError::InvalidRecord(_) => E::InvalidRecord.code(),
            // Current Kafka answers INVALID_RECORD for magic 0/1 in Produce v3+
            // (ProduceRequest.validateRecords) and CORRUPT_MESSAGE above 2.
            BatchError::LegacyMagic(_) => E::InvalidRecord.code(),
            BatchError::UnknownMagic(_) => E::CorruptMessage.code(),
            BatchError::InvalidTimestamp(_) => E::InvalidTimestamp.code(),
        }
    }
}

impl KafkaCode for StorageError {
    fn code(&self) -> i16 {
        match self {
            StorageError::Io(_) => E::KafkaStorageError.code(),
            StorageError::OffsetOutOfRange { .. } => E::OffsetOutOfRange.code(),
            StorageError::Corrupt { .. } => E::KafkaStorageError.code(),
            StorageError::Inconsistent { .. } => E::KafkaStorageError.code(),
            // Handled by the fetch path (warm, read again); never expected here.
            StorageError::NotCached { .. } => E::KafkaStorageError.code(),
            StorageError::Batch(b) => b.code(),
        }
    }
}

impl KafkaCode for MetadataError {
    fn code(&self) -> i16 {
        match self {
            MetadataError::UnknownTopicOrPartition => E::UnknownTopicOrPartition.code(),
            MetadataError::UnknownTopicId => E::UnknownTopicId.code(),
            MetadataError::InvalidTopic(_) => E::InvalidTopicException.code(),
            MetadataError::TopicAlreadyExists { .. } => E::TopicAlreadyExists.code(),
            MetadataError::InvalidPartitions(_) => E::InvalidPartitions.code(),
            MetadataError::InvalidReplicationFactor { .. } => E::InvalidReplicationFactor.code(),
            MetadataError::InvalidReplicaAssignment(_) => E::InvalidReplicaAssignment.code(),
            MetadataError::InvalidConfig(_) => E::InvalidConfig.code(),
            MetadataError::TopicDeletionDisabled => E::TopicDeletionDisabled.code(),
            MetadataError::InvalidRequest(_) => E::InvalidRequest.code(),
            MetadataError::Storage(_) => E::KafkaStorageError.code(),
            MetadataError::Controller(e) => e.code(),
        }
    }
}

impl KafkaCode for LeadershipError {
    fn code(&self) -> i16 {
        match self {
            LeadershipError::UnknownTopicOrPartition => E::UnknownTopicOrPartition.code(),
            // Kafka `ReplicaManager.getPartitionOrError`: the topic exists,
            // the replica is elsewhere.
            LeadershipError::NotReplica { .. } => E::NotLeaderOrFollower.code(),
            // Kafka's `HostedPartition.Offline`.
            LeadershipError::ReplicaOffline { .. } => E::KafkaStorageError.code(),
            LeadershipError::NotLeader => E::NotLeaderOrFollower.code(),
            LeadershipError::FencedLeaderEpoch { .. } => E::FencedLeaderEpoch.code(),
            LeadershipError::UnknownLeaderEpoch { .. } => E::UnknownLeaderEpoch.code(),
        }
    }
}

impl KafkaCode for ShardError {
    fn code(&self) -> i16 {
        match self {
            ShardError::Unavailable(_) => E::RequestTimedOut.code(),
        }
    }
}

/// Error codes used directly by handlers, named as Kafka names them.
pub mod codes {
    use super::E;
    /// NONE.
    pub const NONE: i16 = 0;
    /// UNSUPPORTED_VERSION (35).
    pub const UNSUPPORTED_VERSION: i16 = E::UnsupportedVersion.code();
    /// UNKNOWN_TOPIC_OR_PARTITION (3).
    pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = E::UnknownTopicOrPartition.code();
    /// INVALID_REQUIRED_ACKS (21).
    pub const INVALID_REQUIRED_ACKS: i16 = E::InvalidRequiredAcks.code();
    /// CORRUPT_MESSAGE (2).
    pub const CORRUPT_MESSAGE: i16 = E::CorruptMessage.code();
    /// INVALID_REQUEST (42).
    pub const INVALID_REQUEST: i16 = E::InvalidRequest.code();
    /// INVALID_TOPIC_EXCEPTION (17).
    pub const INVALID_TOPIC_EXCEPTION: i16 = E::InvalidTopicException.code();
    /// UNKNOWN_TOPIC_ID (100).
    pub const UNKNOWN_TOPIC_ID: i16 = E::UnknownTopicId.code();
    /// LEADER_NOT_AVAILABLE (5): a partition without a leader (Metadata).
    pub const LEADER_NOT_AVAILABLE: i16 = E::LeaderNotAvailable.code();
    /// NOT_LEADER_OR_FOLLOWER (6): this broker does not lead the partition
    /// (the answers that carry the current leader, KIP-951).
    pub const NOT_LEADER_OR_FOLLOWER: i16 = E::NotLeaderOrFollower.code();
    /// FENCED_LEADER_EPOCH (74): the request's leader epoch is older (KIP-320).
    pub const FENCED_LEADER_EPOCH: i16 = E::FencedLeaderEpoch.code();
    /// OFFSET_OUT_OF_RANGE (1): a fetch offset outside the log (a
    /// follower's replica fetcher reacts to it).
    pub const OFFSET_OUT_OF_RANGE: i16 = E::OffsetOutOfRange.code();
    /// FETCH_SESSION_ID_NOT_FOUND (70): the leader holds no such fetch
    /// session (KIP-227); a replica fetcher starts a new one.
    pub const FETCH_SESSION_ID_NOT_FOUND: i16 = E::FetchSessionIdNotFound.code();
    /// INVALID_FETCH_SESSION_EPOCH (71): not the session's next epoch
    /// (KIP-227); a replica fetcher starts a new session.
    pub const INVALID_FETCH_SESSION_EPOCH: i16 = E::InvalidFetchSessionEpoch.code();
    /// FETCH_SESSION_TOPIC_ID_ERROR (106): topic ids used otherwise than
    /// when the session was created; a replica fetcher starts a new one.
    pub const FETCH_SESSION_TOPIC_ID_ERROR: i16 = E::FetchSessionTopicIdError.code();
}

// ---- answers ----

/// An item of a request that the work below its handler left without an
/// answer: the work answered fewer items than the request has (a bug below
/// the handler). Answered UNKNOWN_SERVER_ERROR (-1), never NONE: whether
/// the item's work was done is not known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// No answer came back for the item.
    #[error("no answer came back for this item of the request")]
    Lost,
}

impl KafkaCode for AnswerError {
    fn code(&self) -> i16 {
        match self {
            AnswerError::Lost => E::UnknownServerError.code(),
        }
    }
}

#[cfg(test)]
mod answer_error_tests {
    use super::*;

    #[test]
    fn answer_error_codes() {
        crate::error::code_tables::table(&[(AnswerError::Lost, -1)]);
    }
}

// ---- partition owner ----
//
// The errors of `shard::error` and `txn::producer_state` (the partition
// owner's Produce, marker and internal-append paths) and their codes.

use crate::shard::error::{
    AppendFailure, FlushError, InternalAppendError, MarkerError, MarkerFailure, ProduceError,
};
use crate::txn::producer_state::ProducerStateError;

impl KafkaCode for ProducerStateError {
    fn code(&self) -> i16 {
        match self {
            ProducerStateError::MissingSequence { .. } => E::InvalidRecord.code(),
            ProducerStateError::FencedEpoch { .. } => E::InvalidProducerEpoch.code(),
            ProducerStateError::OutOfOrderSequence { .. } => E::OutOfOrderSequenceNumber.code(),
            ProducerStateError::DuplicateSequence { .. } => E::DuplicateSequenceNumber.code(),
            ProducerStateError::CoordinatorFenced { .. } => E::TransactionCoordinatorFenced.code(),
        }
    }
}

impl KafkaCode for ProduceError {
    fn code(&self) -> i16 {
        match self {
            ProduceError::Batch(e) => e.code(),
            ProduceError::NoBatch => E::CorruptMessage.code(),
            ProduceError::TooManyBatches { .. } => E::InvalidRecord.code(),
            ProduceError::TransactionalIdRequired { .. } => {
                E::TransactionalIdAuthorizationFailed.code()
            }
            ProduceError::VerificationLost { .. } => E::InvalidTxnState.code(),
            ProduceError::Producer(e) => e.code(),
            ProduceError::NotEnoughReplicas { .. } => E::NotEnoughReplicas.code(),
            ProduceError::Storage(e) => e.code(),
            ProduceError::Leadership(e) => e.code(),
        }
    }
}

impl KafkaCode for crate::shard::error::ReplicationWaitError {
    fn code(&self) -> i16 {
        use crate::shard::error::ReplicationWaitError as W;
        match self {
            W::NotEnoughReplicasAfterAppend { .. } => E::NotEnoughReplicasAfterAppend.code(),
            W::TimedOut => E::RequestTimedOut.code(),
            W::NotLeader => E::NotLeaderOrFollower.code(),
        }
    }
}

impl KafkaCode for crate::shard::fetch_session::FetchSessionError {
    fn code(&self) -> i16 {
        use crate::shard::fetch_session::FetchSessionError as F;
        match self {
            F::SessionIdNotFound(_) => E::FetchSessionIdNotFound.code(),
            F::InvalidSessionEpoch { .. } => E::InvalidFetchSessionEpoch.code(),
            F::TopicIdUsage(_) => E::FetchSessionTopicIdError.code(),
        }
    }
}

impl KafkaCode for FlushError {
    fn code(&self) -> i16 {
        match self {
            FlushError::Sync { .. } => E::KafkaStorageError.code(),
            FlushError::Abandoned => E::KafkaStorageError.code(),
        }
    }
}

impl KafkaCode for InternalAppendError {
    fn code(&self) -> i16 {
        match self {
            InternalAppendError::Encode { .. } => E::UnknownServerError.code(),
            InternalAppendError::Malformed { .. } => E::UnknownServerError.code(),
            // Whatever the storage error: the coordinators' callers answer
            // KAFKA_STORAGE_ERROR for a failed internal append.
            InternalAppendError::Storage(_) => E::KafkaStorageError.code(),
            InternalAppendError::Flush(e) => e.code(),
            InternalAppendError::Replication(e) => e.code(),
        }
    }
}

impl KafkaCode for AppendFailure {
    fn code(&self) -> i16 {
        match self {
            AppendFailure::Encode => E::UnknownServerError.code(),
            AppendFailure::Malformed => E::UnknownServerError.code(),
            AppendFailure::Storage => E::KafkaStorageError.code(),
            AppendFailure::Flush(e) => e.code(),
            AppendFailure::Replication(e) => e.code(),
        }
    }
}

impl KafkaCode for MarkerFailure {
    fn code(&self) -> i16 {
        match self {
            MarkerFailure::InvalidProducerId(_) => E::InvalidRequest.code(),
            MarkerFailure::Producer(e) => e.code(),
            MarkerFailure::Append(e) => e.code(),
            MarkerFailure::NotLeader => E::NotLeaderOrFollower.code(),
        }
    }
}

impl KafkaCode for MarkerError {
    fn code(&self) -> i16 {
        match self {
            MarkerError::InvalidProducerId(_) => E::InvalidRequest.code(),
            MarkerError::Producer(e) => e.code(),
            MarkerError::Append(e) => e.code(),
            MarkerError::NotLeader => E::NotLeaderOrFollower.code(),
        }
    }
}

// ---- coordinator lookup ----
//
// Why the shard coordinating a group or a transactional id cannot be
// named (`handlers::group_owner`/`txn_owner`, `ensure_*_topic`).

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
    /// A key type other than 0 (group) and 1 (transaction); share groups
    /// (2) are not served, as on Kafka 4.4 without them: INVALID_REQUEST (42).
    #[error("unsupported coordinator key type {key_type}")]
    UnsupportedKeyType {
        /// The key type asked for.
        key_type: i8,
    },
}

impl KafkaCode for CoordinatorLookupError {
    fn code(&self) -> i16 {
        match self {
            CoordinatorLookupError::TopicMissing { .. } => E::CoordinatorNotAvailable.code(),
            CoordinatorLookupError::CreateFailed { .. } => E::CoordinatorNotAvailable.code(),
            CoordinatorLookupError::ControllerUnavailable { .. } => {
                E::CoordinatorNotAvailable.code()
            }
            CoordinatorLookupError::NoLeader { .. } => E::CoordinatorNotAvailable.code(),
            CoordinatorLookupError::NotCoordinator { .. } => E::NotCoordinator.code(),
            CoordinatorLookupError::UnsupportedKeyType { .. } => E::InvalidRequest.code(),
        }
    }
}

/// Why a partition verification (KIP-890: Produce with a transactional
/// batch, TxnOffsetCommit) could not be asked of the transaction
/// coordinator.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VerificationError {
    /// The transactional id's coordinator cannot be named: INVALID_TXN_STATE
    /// (48), as Kafka's brokers answer a verification that cannot reach the
    /// coordinator (the partition cannot be shown to be in the open
    /// transaction), not the lookup's own COORDINATOR_NOT_AVAILABLE.
    #[error("cannot verify the partition: {0}")]
    CoordinatorLookup(#[from] CoordinatorLookupError),
    /// The coordinator is another broker: its answer's code, or, when it
    /// could not be asked, INVALID_TXN_STATE (48) as for a lookup failure.
    #[error("cannot verify the partition with the coordinator: {0}")]
    Remote(#[from] crate::shard::remote::RemoteError),
}

impl KafkaCode for VerificationError {
    fn code(&self) -> i16 {
        use CoordinatorLookupError as L;
        match self {
            VerificationError::CoordinatorLookup(lookup) => match lookup {
                L::TopicMissing { .. }
                | L::CreateFailed { .. }
                | L::ControllerUnavailable { .. }
                | L::NoLeader { .. }
                | L::NotCoordinator { .. }
                | L::UnsupportedKeyType { .. } => E::InvalidTxnState.code(),
            },
            VerificationError::Remote(r) => match r {
                crate::shard::remote::RemoteError::NotInstalled
                | crate::shard::remote::RemoteError::Unreachable { .. } => {
                    E::InvalidTxnState.code()
                }
                crate::shard::remote::RemoteError::Refused { code, .. } => *code,
            },
        }
    }
}

#[cfg(test)]
mod coordinator_lookup_tests {
    use super::*;

    #[test]
    fn coordinator_lookup_error_codes() {
        let topic = "__consumer_offsets";
        let table = [
            (CoordinatorLookupError::TopicMissing { topic }, 15),
            (
                CoordinatorLookupError::CreateFailed {
                    topic,
                    source: MetadataError::UnknownTopicOrPartition,
                },
                15,
            ),
            (
                CoordinatorLookupError::ControllerUnavailable {
                    topic,
                    source: ControllerCallError::Shard(ShardError::Unavailable(0)),
                },
                15,
            ),
            (
                CoordinatorLookupError::NoLeader {
                    topic,
                    partition: 3,
                },
                15,
            ),
            (
                CoordinatorLookupError::UnsupportedKeyType { key_type: 2 },
                42,
            ),
            (
                CoordinatorLookupError::NotCoordinator {
                    topic,
                    partition: 3,
                    leader: 2,
                },
                16,
            ),
        ];
        crate::error::code_tables::table(&table);
    }

    /// A verification whose coordinator cannot be named answers
    /// INVALID_TXN_STATE, whatever the lookup's failure.
    #[test]
    fn verification_error_codes() {
        let topic = "__transaction_state";
        let table: Vec<(VerificationError, i16)> = vec![
            (CoordinatorLookupError::TopicMissing { topic }.into(), 48),
            (
                crate::shard::remote::RemoteError::Unreachable {
                    broker: 2,
                    why: "refused".into(),
                }
                .into(),
                48,
            ),
            (crate::shard::remote::RemoteError::NotInstalled.into(), 48),
            (
                crate::shard::remote::RemoteError::Refused {
                    broker: 2,
                    topic: "t".into(),
                    partition: 0,
                    code: 48,
                }
                .into(),
                48,
            ),
            (
                CoordinatorLookupError::CreateFailed {
                    topic,
                    source: MetadataError::UnknownTopicOrPartition,
                }
                .into(),
                48,
            ),
            (
                CoordinatorLookupError::ControllerUnavailable {
                    topic,
                    source: ControllerCallError::Shard(ShardError::Unavailable(0)),
                }
                .into(),
                48,
            ),
        ];
        crate::error::code_tables::table(&table);
    }
}

#[cfg(test)]
mod partition_owner_tests {
    use super::*;
    use std::io::ErrorKind;
    use std::sync::Arc;

    fn io() -> StorageError {
        StorageError::Io(std::io::Error::from_raw_os_error(5))
    }

    #[test]
    fn producer_state_error_codes() {
        let table: [(ProducerStateError, i16); 5] = [
            (ProducerStateError::MissingSequence { producer_id: 1 }, 87),
            (
                ProducerStateError::FencedEpoch {
                    producer_id: 1,
                    epoch: 0,
                    current_epoch: 1,
                },
                47,
            ),
            (
                ProducerStateError::OutOfOrderSequence {
                    producer_id: 1,
                    base_sequence: 5,
                    expected: 3,
                },
                45,
            ),
            (
                ProducerStateError::DuplicateSequence {
                    producer_id: 1,
                    first_seq: 0,
                    last_seq: 2,
                },
                46,
            ),
            (
                ProducerStateError::CoordinatorFenced {
                    producer_id: 1,
                    coordinator_epoch: 2,
                    latest: 3,
                },
                52,
            ),
        ];
        crate::error::code_tables::table(&table);
    }

    #[test]
    fn produce_error_codes() {
        let fenced = ProducerStateError::FencedEpoch {
            producer_id: 1,
            epoch: 0,
            current_epoch: 1,
        };
        let table: Vec<(ProduceError, i16)> = vec![
            (ProduceError::Batch(BatchError::LegacyMagic(1)), 87),
            (ProduceError::Batch(BatchError::UnknownMagic(3)), 2),
            (ProduceError::NoBatch, 2),
            (ProduceError::TooManyBatches { count: 2 }, 87),
            (ProduceError::TransactionalIdRequired { producer_id: 1 }, 53),
            (
                ProduceError::VerificationLost {
                    producer_id: 1,
                    epoch: 0,
                },
                48,
            ),
            (ProduceError::Producer(fenced), 47),
            (
                ProduceError::NotEnoughReplicas {
                    required: 2,
                    isr: 1,
                    topic: Arc::from("t"),
                    partition: 0,
                },
                19,
            ),
            (ProduceError::Storage(io()), 56),
            (ProduceError::Leadership(LeadershipError::NotLeader), 6),
        ];
        crate::error::code_tables::table(&table);
    }

    #[test]
    fn produce_error_messages_are_the_client_texts() {
        assert_eq!(
            ProduceError::TooManyBatches { count: 2 }.to_string(),
            "a partition's records must be exactly one record batch, got 2"
        );
        assert_eq!(
            ProduceError::NotEnoughReplicas {
                required: 2,
                isr: 1,
                topic: Arc::from("t"),
                partition: 3
            }
            .to_string(),
            "The size of the current ISR 1 is insufficient to satisfy the min.isr requirement of 2 for partition t-3"
        );
        let p = ProducerStateError::MissingSequence { producer_id: 1 };
        assert_eq!(
            ProduceError::Producer(p).to_string(),
            "rejected by the idempotent producer checks (KIP-98)"
        );
    }

    #[test]
    fn election_error_codes() {
        use crate::cluster::error::ElectionError as El;
        let table = [
            (El::UnknownTopicOrPartition, 3),
            (El::ElectionNotNeeded, 84),
            (El::PreferredLeaderNotAvailable { preferred: 1 }, 80),
            (El::EligibleLeadersNotAvailable, 83),
        ];
        crate::error::code_tables::table(&table);
    }

    #[test]
    fn reassignment_error_codes() {
        use crate::cluster::reassignment::ReassignmentError as R;
        let table = [
            (R::UnknownTopic { topic: "t".into() }, 3),
            (
                R::UnknownPartition {
                    topic: "t".into(),
                    partition: 1,
                },
                3,
            ),
            (R::EmptyReplicas, 39),
            (R::UnregisteredBroker { broker: 4 }, 39),
            (R::DuplicateBroker { broker: 2 }, 39),
            (R::ReplicationFactorChange { from: 1, to: 2 }, 38),
            (R::NoReassignmentInProgress, 85),
            (
                R::UncleanRevert {
                    topic: "t".into(),
                    partition: 0,
                },
                39,
            ),
        ];
        crate::error::code_tables::table(&table);
    }

    #[test]
    fn replication_wait_error_codes() {
        use crate::shard::error::ReplicationWaitError as W;
        let table = [
            (
                W::NotEnoughReplicasAfterAppend {
                    required: 2,
                    isr: 1,
                },
                20,
            ),
            (W::TimedOut, 7),
            (W::NotLeader, 6),
        ];
        crate::error::code_tables::table(&table);
    }

    #[test]
    fn fetch_session_error_codes() {
        use crate::shard::fetch_session::FetchSessionError as F;
        let table = [
            (F::SessionIdNotFound(3), 70),
            (
                F::InvalidSessionEpoch {
                    session_id: 3,
                    expected: 2,
                    got: 5,
                },
                71,
            ),
            (F::TopicIdUsage(3), 106),
        ];
        crate::error::code_tables::table(&table);
    }

    #[test]
    fn flush_error_codes_and_text() {
        let sync = FlushError::sync(&std::io::Error::from_raw_os_error(5));
        assert_eq!(
            sync.to_string(),
            std::io::Error::from_raw_os_error(5).to_string()
        );
        let table = [
            (sync, 56),
            (
                FlushError::Sync {
                    kind: ErrorKind::Other,
                    os_error: None,
                },
                56,
            ),
            (FlushError::Abandoned, 56),
        ];
        crate::error::code_tables::table(&table);
    }

    #[test]
    fn internal_append_and_marker_error_codes() {
        let batch = StorageError::Batch(BatchError::CorruptMessage(
            crate::storage::batch::Corruption::EmptyRecords,
        ));
        let table: Vec<(InternalAppendError, i16)> = vec![
            (InternalAppendError::Encode { records: 1 }, -1),
            (InternalAppendError::Malformed { position: 0 }, -1),
            (InternalAppendError::Storage(io()), 56),
            (InternalAppendError::Storage(batch), 56),
            (InternalAppendError::Flush(FlushError::Abandoned), 56),
            (
                InternalAppendError::Replication(
                    crate::shard::error::ReplicationWaitError::TimedOut,
                ),
                7,
            ),
        ];
        crate::error::code_tables::table(&table);
        let fenced = ProducerStateError::CoordinatorFenced {
            producer_id: 1,
            coordinator_epoch: 2,
            latest: 3,
        };
        let table: Vec<(MarkerError, i16)> = vec![
            (MarkerError::InvalidProducerId(-1), 42),
            (MarkerError::Producer(fenced), 52),
            (
                MarkerError::Append(InternalAppendError::Encode { records: 1 }),
                -1,
            ),
            (MarkerError::Append(InternalAppendError::Storage(io())), 56),
            (MarkerError::NotLeader, 6),
        ];
        crate::error::code_tables::table(&table);
    }

    /// The copyable summaries the coordinators carry answer the same code as
    /// the error they summarise, for every variant.
    #[test]
    fn append_and_marker_failures_keep_their_codes() {
        let batch = || {
            StorageError::Batch(BatchError::CorruptMessage(
                crate::storage::batch::Corruption::EmptyRecords,
            ))
        };
        let appends = vec![
            InternalAppendError::Encode { records: 1 },
            InternalAppendError::Malformed { position: 0 },
            InternalAppendError::Storage(io()),
            InternalAppendError::Storage(batch()),
            InternalAppendError::Flush(FlushError::Abandoned),
            InternalAppendError::Replication(crate::shard::error::ReplicationWaitError::TimedOut),
        ];
        for e in &appends {
            assert_eq!(AppendFailure::from(e).code(), e.code(), "{e:?}");
        }
        let table: Vec<(AppendFailure, i16)> = vec![
            (AppendFailure::Encode, -1),
            (AppendFailure::Malformed, -1),
            (AppendFailure::Storage, 56),
            (AppendFailure::Flush(FlushError::Abandoned), 56),
            (
                AppendFailure::Replication(crate::shard::error::ReplicationWaitError::NotLeader),
                6,
            ),
        ];
        crate::error::code_tables::table(&table);
        let fenced = ProducerStateError::CoordinatorFenced {
            producer_id: 1,
            coordinator_epoch: 2,
            latest: 3,
        };
        let markers = vec![
            MarkerError::InvalidProducerId(-1),
            MarkerError::Producer(fenced),
            MarkerError::Append(InternalAppendError::Storage(io())),
            MarkerError::Append(InternalAppendError::Encode { records: 1 }),
            MarkerError::NotLeader,
        ];
        for e in &markers {
            assert_eq!(MarkerFailure::from(e).code(), e.code(), "{e:?}");
        }
        let table: Vec<(MarkerFailure, i16)> = vec![
            (MarkerFailure::InvalidProducerId(-1), 42),
            (MarkerFailure::Producer(fenced), 52),
            (MarkerFailure::Append(AppendFailure::Storage), 56),
            (MarkerFailure::NotLeader, 6),
        ];
        crate::error::code_tables::table(&table);
    }
}

// ---- metadata errors: codes and client texts ----

#[cfg(test)]
mod metadata_error_tests {
    use super::*;

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
        let inner = MetadataError::from(InvalidConfig::SetWithoutValue { key: "k".into() });
        let e = MetadataError::from(InvalidConfig::ForTopic {
            topic: "t".into(),
            source: Box::new(inner),
        });
        assert_eq!(
            e.to_string(),
            "invalid config: topic t: invalid config: SET k needs a value"
        );
    }
}

// ---- group coordinator ----

impl KafkaCode for crate::group::GroupError {
    fn code(&self) -> i16 {
        use crate::group::GroupError as G;
        match self {
            G::UnknownMemberId { .. } => E::UnknownMemberId.code(),
            G::IllegalGeneration { .. } => E::IllegalGeneration.code(),
            G::RebalanceInProgress => E::RebalanceInProgress.code(),
            G::MemberIdRequired { .. } => E::MemberIdRequired.code(),
            G::FencedInstanceId { .. } => E::FencedInstanceId.code(),
            G::GroupMaxSizeReached { .. } => E::GroupMaxSizeReached.code(),
            G::InconsistentGroupProtocol => E::InconsistentGroupProtocol.code(),
            G::UnknownTopicOrPartition { .. } => E::UnknownTopicOrPartition.code(),
            G::NonEmptyGroup => E::NonEmptyGroup.code(),
            G::GroupIdNotFound => E::GroupIdNotFound.code(),
            G::CoordinatorLoadInProgress => E::CoordinatorLoadInProgress.code(),
            G::CoordinatorNotAvailable => E::CoordinatorNotAvailable.code(),
            G::InvalidGroupId => E::InvalidGroupId.code(),
            G::InvalidSessionTimeout { .. } => E::InvalidSessionTimeout.code(),
            G::OffsetMetadataTooLarge { .. } => E::OffsetMetadataTooLarge.code(),
            G::GroupSubscribedToTopic { .. } => E::GroupSubscribedToTopic.code(),
            G::UnstableOffsetCommit => E::UnstableOffsetCommit.code(),
            G::ProducerFenced { .. } => E::ProducerFenced.code(),
            G::InvalidTxnState { .. } => E::InvalidTxnState.code(),
            // Kafka `GroupMetadataManager.storeOffsets`: an offset write the
            // ISR did not take is COORDINATOR_NOT_AVAILABLE (the client
            // retries), one this broker no longer leads NOT_COORDINATOR.
            G::Append(AppendFailure::Replication(w)) => replicated_write_code(w),
            G::Append(e) => e.code(),
        }
    }
}

impl KafkaCode for crate::cluster::error::ElectionError {
    fn code(&self) -> i16 {
        use crate::cluster::error::ElectionError as El;
        match self {
            El::UnknownTopicOrPartition => E::UnknownTopicOrPartition.code(),
            El::ElectionNotNeeded => E::ElectionNotNeeded.code(),
            El::PreferredLeaderNotAvailable { .. } => E::PreferredLeaderNotAvailable.code(),
            El::EligibleLeadersNotAvailable => E::EligibleLeadersNotAvailable.code(),
        }
    }
}

impl KafkaCode for crate::cluster::reassignment::ReassignmentError {
    fn code(&self) -> i16 {
        use crate::cluster::reassignment::ReassignmentError as R;
        match self {
            R::UnknownTopic { .. } | R::UnknownPartition { .. } => {
                E::UnknownTopicOrPartition.code()
            }
            R::EmptyReplicas
            | R::UnregisteredBroker { .. }
            | R::DuplicateBroker { .. }
            | R::UncleanRevert { .. } => E::InvalidReplicaAssignment.code(),
            R::ReplicationFactorChange { .. } => E::InvalidReplicationFactor.code(),
            R::NoReassignmentInProgress => E::NoReassignmentInProgress.code(),
        }
    }
}

impl KafkaCode for crate::shard::remote::RemoteError {
    fn code(&self) -> i16 {
        use crate::shard::remote::RemoteError as R;
        match self {
            R::NotInstalled => E::CoordinatorNotAvailable.code(),
            R::Unreachable { .. } => E::CoordinatorNotAvailable.code(),
            // The other broker's own answer.
            R::Refused { code, .. } => *code,
        }
    }
}

/// The code a coordinator answers when its write to its replicated
/// partition was not taken by the ISR: NOT_COORDINATOR (16) when this
/// broker stopped leading the partition, else COORDINATOR_NOT_AVAILABLE
/// (15), as Kafka's group and transaction coordinators map the produce
/// errors of their appends.
fn replicated_write_code(w: &crate::shard::error::ReplicationWaitError) -> i16 {
    use crate::shard::error::ReplicationWaitError as W;
    match w {
        W::NotLeader => E::NotCoordinator.code(),
        W::TimedOut => E::CoordinatorNotAvailable.code(),
        W::NotEnoughReplicasAfterAppend { .. } => E::CoordinatorNotAvailable.code(),
    }
}

// ---- transaction coordinator ----

impl KafkaCode for crate::txn::error::TxnError {
    fn code(&self) -> i16 {
        use crate::txn::error::{MarkerCause, TxnError};
        match self {
            TxnError::ConcurrentTransactions { .. } => E::ConcurrentTransactions.code(),
            TxnError::ProducerFenced { .. } => E::ProducerFenced.code(),
            TxnError::InvalidProducerEpoch { .. } => E::InvalidProducerEpoch.code(),
            TxnError::InvalidProducerIdMapping { .. } => E::InvalidProducerIdMapping.code(),
            TxnError::InvalidTxnState { .. } => E::InvalidTxnState.code(),
            TxnError::InvalidTransactionTimeout { .. } => E::InvalidTransactionTimeout.code(),
            TxnError::TransactionalIdNotFound => E::TransactionalIdNotFound.code(),
            TxnError::UnknownTopicOrPartition { .. } => E::UnknownTopicOrPartition.code(),
            TxnError::OperationNotAttempted => E::OperationNotAttempted.code(),
            TxnError::StatePartitionNotHere { .. } => E::CoordinatorNotAvailable.code(),
            TxnError::NotCoordinator => E::NotCoordinator.code(),
            TxnError::CoordinatorUnavailable(_) => E::CoordinatorNotAvailable.code(),
            TxnError::ProducerIdAllocation { .. } => E::CoordinatorNotAvailable.code(),
            TxnError::StateAppend {
                cause: AppendFailure::Replication(w),
                ..
            } => replicated_write_code(w),
            TxnError::StateAppend { cause, .. } => cause.code(),
            TxnError::MarkerWrite { cause, .. } => match cause {
                MarkerCause::Partition(e) => e.code(),
                MarkerCause::Shard(e) => e.code(),
                MarkerCause::Remote(e) => e.code(),
            },
        }
    }
}

/// The Kafka code of a group result: 0 for `Ok`, the error's code otherwise.
pub fn group_code(r: &Result<(), crate::group::GroupError>) -> i16 {
    match r {
        Ok(()) => codes::NONE,
        Err(e) => e.code(),
    }
}

#[cfg(test)]
mod group_code_tests {
    use crate::group::GroupError as G;

    /// Pins the Kafka code of every `GroupError` variant (one row at least
    /// per variant, see `code_tables`).
    #[test]
    fn every_group_error_maps_to_its_kafka_code() {
        let s = || "x".to_string();
        let table: Vec<(G, i16)> = vec![
            (G::UnknownMemberId { member_id: s() }, 25),
            (
                G::IllegalGeneration {
                    generation: 1,
                    current: 2,
                },
                22,
            ),
            (G::RebalanceInProgress, 27),
            (G::MemberIdRequired { member_id: s() }, 79),
            (
                G::FencedInstanceId {
                    group_instance_id: Some(s()),
                },
                82,
            ),
            (G::GroupMaxSizeReached { max_size: 1 }, 81),
            (G::InconsistentGroupProtocol, 23),
            (
                G::UnknownTopicOrPartition {
                    topic: s(),
                    partition: 0,
                },
                3,
            ),
            (G::NonEmptyGroup, 68),
            (G::GroupIdNotFound, 69),
            (G::CoordinatorLoadInProgress, 14),
            (G::CoordinatorNotAvailable, 15),
            (G::InvalidGroupId, 24),
            (
                G::InvalidSessionTimeout {
                    session_timeout_ms: 1,
                    min_ms: 6000,
                    max_ms: 1_800_000,
                },
                26,
            ),
            (G::OffsetMetadataTooLarge { size: 5, max: 4 }, 12),
            (G::GroupSubscribedToTopic { topic: s() }, 86),
            (G::UnstableOffsetCommit, 88),
            (
                G::ProducerFenced {
                    producer_id: 1,
                    producer_epoch: 0,
                },
                90,
            ),
            (G::InvalidTxnState { producer_id: 1 }, 48),
            (G::Append(crate::shard::error::AppendFailure::Storage), 56),
            (
                G::Append(crate::shard::error::AppendFailure::Replication(
                    crate::shard::error::ReplicationWaitError::NotLeader,
                )),
                16,
            ),
            (
                G::Append(crate::shard::error::AppendFailure::Replication(
                    crate::shard::error::ReplicationWaitError::TimedOut,
                )),
                15,
            ),
        ];
        crate::error::code_tables::table(&table);
    }
}

#[cfg(test)]
mod txn_error_tests {
    use super::*;
    use crate::txn::error::{MarkerCause, TxnError, TxnOperation};
    use crate::txn::records::TxnStatus;

    #[test]
    fn every_txn_error_maps_to_its_code() {
        let table: Vec<(TxnError, i16)> = vec![
            (TxnError::ConcurrentTransactions { state: None }, 51),
            (
                TxnError::ConcurrentTransactions {
                    state: Some(TxnStatus::PrepareCommit),
                },
                51,
            ),
            (
                TxnError::ProducerFenced {
                    producer_id: 1,
                    epoch: 0,
                    current_epoch: 1,
                },
                90,
            ),
            (
                TxnError::InvalidProducerEpoch {
                    producer_id: 1,
                    epoch: 0,
                    current_epoch: 1,
                },
                47,
            ),
            (
                TxnError::InvalidProducerIdMapping {
                    producer_id: 1,
                    current: None,
                },
                49,
            ),
            (
                TxnError::InvalidTxnState {
                    operation: TxnOperation::Commit,
                    state: TxnStatus::Empty,
                },
                48,
            ),
            (
                TxnError::InvalidTransactionTimeout {
                    timeout_ms: 0,
                    max_timeout_ms: 900_000,
                },
                50,
            ),
            (TxnError::TransactionalIdNotFound, 105),
            (
                TxnError::UnknownTopicOrPartition {
                    topic: "t".into(),
                    partition: 3,
                },
                3,
            ),
            (TxnError::OperationNotAttempted, 55),
            (TxnError::StatePartitionNotHere { partition: 3 }, 15),
            (TxnError::NotCoordinator, 16),
            (
                TxnError::CoordinatorUnavailable(ShardError::Unavailable(1)),
                15,
            ),
            (
                TxnError::ProducerIdAllocation {
                    cause: crate::txn::error::ProducerIdAllocationCause::Controller(
                        ControllerCallError::NotRegistered,
                    ),
                },
                15,
            ),
            (
                TxnError::StateAppend {
                    partition: 3,
                    cause: crate::shard::error::AppendFailure::Storage,
                },
                56,
            ),
            (
                TxnError::MarkerWrite {
                    topic: "t".into(),
                    partition: 0,
                    cause: MarkerCause::Partition(crate::shard::error::MarkerFailure::Append(
                        crate::shard::error::AppendFailure::Storage,
                    )),
                },
                56,
            ),
            (
                TxnError::MarkerWrite {
                    topic: "t".into(),
                    partition: 0,
                    cause: MarkerCause::Shard(ShardError::Unavailable(2)),
                },
                7,
            ),
        ];
        crate::error::code_tables::table(&table);
    }
}

// ---- exhaustive code tables ----
//
// Every `KafkaCode` enum's table test goes through `code_tables::check`
// with the enum's variant index there. Each index is an exhaustive `match`
// (no `_`): a new variant does not compile until it gets an index, and the
// table test fails until the enum's count is raised and a row pins the new
// variant's code.

#[cfg(test)]
pub(crate) mod code_tables;
