//! Errors per layer, and their mapping to Kafka error codes in one place.
//!
//! Each layer has its own typed error (`ProtocolError`, `StorageError`,
//! `BatchError`, `MetadataError`, `ShardError`). [`KafkaCode`] converts each to
//! the Kafka error code the client sees, with an exhaustive `match` per type so
//! that a new variant cannot be silently mapped.

use kafka_protocol::ResponseError as E;

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
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MetadataError {
    /// UNKNOWN_TOPIC_OR_PARTITION (3).
    #[error("unknown topic or partition")]
    UnknownTopicOrPartition,
    /// UNKNOWN_TOPIC_ID (100).
    #[error("unknown topic id")]
    UnknownTopicId,
    /// INVALID_TOPIC_EXCEPTION (17): the name breaks Kafka's rules.
    #[error("invalid topic name: {0}")]
    InvalidTopic(String),
    /// TOPIC_ALREADY_EXISTS (36).
    #[error("topic {0} already exists")]
    TopicAlreadyExists(String),
    /// INVALID_PARTITIONS (37).
    #[error("invalid partitions: {0}")]
    InvalidPartitions(String),
    /// INVALID_REPLICATION_FACTOR (38).
    #[error("invalid replication factor: {0}")]
    InvalidReplicationFactor(String),
    /// INVALID_REPLICA_ASSIGNMENT (39).
    #[error("invalid replica assignment: {0}")]
    InvalidReplicaAssignment(String),
    /// INVALID_CONFIG (40).
    #[error("invalid config: {0}")]
    InvalidConfig(String),
    /// TOPIC_DELETION_DISABLED (73).
    #[error("topic deletion is disabled (delete.topic.enable=false)")]
    TopicDeletionDisabled,
    /// INVALID_REQUEST (42).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// KAFKA_STORAGE_ERROR (56): the metadata could not be persisted.
    #[error("storage error: {0}")]
    Storage(String),
}

/// Errors of cross-shard work.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
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
            BatchError::UnsupportedMagic(m) if *m < 2 => E::InvalidRecord.code(),
            BatchError::UnsupportedMagic(_) => E::CorruptMessage.code(),
            BatchError::InvalidTimestamp(_) => E::InvalidTimestamp.code(),
        }
    }
}

impl KafkaCode for StorageError {
    fn code(&self) -> i16 {
        match self {
            StorageError::Io(_) => E::KafkaStorageError.code(),
            StorageError::OffsetOutOfRange { .. } => E::OffsetOutOfRange.code(),
            StorageError::Corrupt(_) => E::KafkaStorageError.code(),
            StorageError::Inconsistent(_) => E::KafkaStorageError.code(),
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
            MetadataError::TopicAlreadyExists(_) => E::TopicAlreadyExists.code(),
            MetadataError::InvalidPartitions(_) => E::InvalidPartitions.code(),
            MetadataError::InvalidReplicationFactor(_) => E::InvalidReplicationFactor.code(),
            MetadataError::InvalidReplicaAssignment(_) => E::InvalidReplicaAssignment.code(),
            MetadataError::InvalidConfig(_) => E::InvalidConfig.code(),
            MetadataError::TopicDeletionDisabled => E::TopicDeletionDisabled.code(),
            MetadataError::InvalidRequest(_) => E::InvalidRequest.code(),
            MetadataError::Storage(_) => E::KafkaStorageError.code(),
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
    /// LEADER_NOT_AVAILABLE (5).
    pub const LEADER_NOT_AVAILABLE: i16 = E::LeaderNotAvailable.code();
    /// INVALID_TOPIC_EXCEPTION (17).
    pub const INVALID_TOPIC_EXCEPTION: i16 = E::InvalidTopicException.code();
    /// UNKNOWN_TOPIC_ID (100).
    pub const UNKNOWN_TOPIC_ID: i16 = E::UnknownTopicId.code();
    /// TRANSACTIONAL_ID_AUTHORIZATION_FAILED is not used; transactional
    /// produce is answered with UNSUPPORTED_FOR_MESSAGE_FORMAT... see produce.rs.
    pub const INVALID_TXN_STATE: i16 = E::InvalidTxnState.code();
    /// UNKNOWN_PRODUCER_ID (59)... not used yet.
    pub const KAFKA_STORAGE_ERROR: i16 = E::KafkaStorageError.code();
    /// INVALID_TIMESTAMP (32).
    pub const INVALID_TIMESTAMP: i16 = E::InvalidTimestamp.code();
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
            G::Append { code } => *code,
        }
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
            TxnError::StatePartitionNotHere { .. } => E::CoordinatorNotAvailable.code(),
            TxnError::CoordinatorUnavailable(_) => E::CoordinatorNotAvailable.code(),
            TxnError::ProducerIdAllocation { .. } => E::CoordinatorNotAvailable.code(),
            TxnError::StateAppend { code, .. } => *code,
            TxnError::MarkerWrite { cause, .. } => match cause {
                MarkerCause::Partition(code) => *code,
                MarkerCause::Shard(e) => e.code(),
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
    use super::KafkaCode;
    use crate::group::GroupError as G;

    /// Pins the Kafka code of every `GroupError` variant.
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
            (G::Append { code: 56 }, 56),
        ];
        assert_eq!(table.len(), 20, "one row per variant");
        for (e, code) in table {
            assert_eq!(e.code(), code, "{e:?}");
        }
    }
}

/// Kafka error codes the transaction coordinator compares against the raw
/// codes of the partition side (`Partition::write_marker`).
pub mod txn_codes {
    use super::E;
    /// INVALID_PRODUCER_EPOCH (47): a partition refusing a marker because it
    /// knows a newer epoch of the producer.
    pub const INVALID_PRODUCER_EPOCH: i16 = E::InvalidProducerEpoch.code();
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
            (TxnError::StatePartitionNotHere { partition: 3 }, 15),
            (
                TxnError::CoordinatorUnavailable(ShardError::Unavailable(1)),
                15,
            ),
            (
                TxnError::ProducerIdAllocation {
                    cause: "disk full".into(),
                },
                15,
            ),
            (
                TxnError::StateAppend {
                    partition: 3,
                    code: 56,
                },
                56,
            ),
            (
                TxnError::MarkerWrite {
                    topic: "t".into(),
                    partition: 0,
                    cause: MarkerCause::Partition(56),
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
        for (e, code) in table {
            assert_eq!(e.code(), code, "{e:?}");
        }
        assert_eq!(txn_codes::INVALID_PRODUCER_EPOCH, 47);
    }
}
