//! The edge where typed errors become Kafka error codes, in one place.
//!
//! Every layer keeps its own typed error beside its code (`ProtocolError`
//! in `protocol`, `ShardError` in `mesh`, `MetadataError` and the cluster's
//! in `cluster::error`, `InvalidConfig` in `config`, the partition owner's
//! in `shard::error`, `StorageError`/`BatchError` in `storage`, `GroupError`,
//! `TxnError`, …). [`KafkaCode`] converts each to the Kafka error code the
//! client sees, with an exhaustive `match` per type so that a new variant
//! cannot be silently mapped. Only `handlers`, `net` and `replication` use
//! this module (the layering test enforces it), so nothing it imports
//! imports it back.

use kafka_protocol::ResponseError as E;

use crate::cluster::control::LifecycleError;
use crate::cluster::error::{ControllerCallError, CoordinatorLookupError, MetadataError};
use crate::cluster::leadership::LeadershipError;
use crate::cluster::quorum::rpc::ControllerUnavailable;
use crate::mesh::ShardError;
use crate::shard::error::{
    AnswerError, TransactionSupportedOperation, TxnRefusal, VerificationError,
};
use crate::storage::{BatchError, StorageError};

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
            // Kafka: a replica not hosted yet is `HostedPartition.None`.
            LeadershipError::ReplicaOpening { .. } => E::NotLeaderOrFollower.code(),
            LeadershipError::NotLeader => E::NotLeaderOrFollower.code(),
            LeadershipError::UnknownFollower { .. } => E::NotLeaderOrFollower.code(),
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
    /// UNSUPPORTED_SASL_MECHANISM (33): not one of the listener's
    /// `sasl.enabled.mechanisms`.
    pub const UNSUPPORTED_SASL_MECHANISM: i16 = E::UnsupportedSaslMechanism.code();
    /// ILLEGAL_SASL_STATE (34): a SASL request out of turn.
    pub const ILLEGAL_SASL_STATE: i16 = E::IllegalSaslState.code();
    /// SASL_AUTHENTICATION_FAILED (58): wrong credentials (the same text
    /// whatever was wrong).
    pub const SASL_AUTHENTICATION_FAILED: i16 = E::SaslAuthenticationFailed.code();
    /// UNKNOWN_SERVER_ERROR (-1): Kafka's answer to every ACL of a CreateAcls
    /// that has one it cannot even build (an ANY or MATCH where a concrete
    /// value is needed).
    pub const UNKNOWN_SERVER_ERROR: i16 = E::UnknownServerError.code();
    /// SECURITY_DISABLED (54): the ACL APIs without an authorizer.
    pub const SECURITY_DISABLED: i16 = E::SecurityDisabled.code();
    /// CLUSTER_AUTHORIZATION_FAILED (31).
    pub const CLUSTER_AUTHORIZATION_FAILED: i16 = E::ClusterAuthorizationFailed.code();
    /// TOPIC_AUTHORIZATION_FAILED (29).
    pub const TOPIC_AUTHORIZATION_FAILED: i16 = E::TopicAuthorizationFailed.code();
    /// GROUP_AUTHORIZATION_FAILED (30).
    pub const GROUP_AUTHORIZATION_FAILED: i16 = E::GroupAuthorizationFailed.code();
    /// TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53).
    pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 =
        E::TransactionalIdAuthorizationFailed.code();
}

// ---- answers ----

impl KafkaCode for AnswerError {
    fn code(&self) -> i16 {
        match self {
            AnswerError::Lost => E::UnknownServerError.code(),
        }
    }
}

#[cfg(test)]
mod answer_error_tests;

// ---- partition owner ----
//
// The errors of `shard::error` and `producer_state` (the partition
// owner's Produce, marker and internal-append paths) and their codes.

use crate::producer_state::ProducerStateError;
use crate::shard::error::{
    AppendFailure, FlushError, InternalAppendError, MarkerError, MarkerFailure, ProduceError,
};

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

impl KafkaCode for crate::shard::owner::produce::AppendError {
    fn code(&self) -> i16 {
        use crate::shard::owner::produce::AppendError as A;
        match self {
            A::Refused(e) => e.code(),
            A::Write(e) => e.code(),
            A::Flush(e) => e.code(),
            A::Replication(e) => e.code(),
            A::NotInTransaction {
                source, operation, ..
            } => produce_verification_code(source, *operation),
            A::Unanswered(e) => e.code(),
        }
    }
}

impl KafkaCode for crate::shard::owner::fetch::FetchReadError {
    fn code(&self) -> i16 {
        use crate::shard::owner::fetch::FetchReadError as F;
        match self {
            F::Leadership(e) => e.code(),
            F::Storage(e) => e.code(),
        }
    }
}

impl KafkaCode for crate::shard::owner::offsets::ListOffsetsError {
    fn code(&self) -> i16 {
        use crate::shard::owner::offsets::ListOffsetsError as L;
        match self {
            L::Leadership(e) => e.code(),
            L::Storage(e) => e.code(),
            L::Shard(e) => e.code(),
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

impl KafkaCode for crate::share::partition::ShareError {
    fn code(&self) -> i16 {
        use crate::share::partition::ShareError as S;
        match self {
            S::InvalidRecordState { .. } => E::InvalidRecordState.code(),
            // Kafka `SharePartition.acknowledge`: "Batch record not found".
            S::PastWindow { .. } => E::InvalidRequest.code(),
            S::InvalidRange { .. } => E::InvalidRequest.code(),
        }
    }
}

impl KafkaCode for crate::share::session::ShareSessionError {
    fn code(&self) -> i16 {
        use crate::share::session::ShareSessionError as S;
        match self {
            S::NotFound { .. } => E::ShareSessionNotFound.code(),
            S::InvalidEpoch { .. } => E::InvalidShareSessionEpoch.code(),
            S::LimitReached { .. } => E::ShareSessionLimitReached.code(),
        }
    }
}

impl KafkaCode for crate::shard::owner::share::ShareReadError {
    fn code(&self) -> i16 {
        use crate::shard::owner::share::ShareReadError as S;
        match self {
            S::Leadership(e) => e.code(),
            S::Storage(e) => e.code(),
            S::Io(_) => E::KafkaStorageError.code(),
            S::State(e) => e.code(),
        }
    }
}

impl KafkaCode for crate::shard::owner::share::ShareAckError {
    fn code(&self) -> i16 {
        use crate::shard::owner::share::ShareAckError as S;
        match self {
            S::Window(e) => e.code(),
            S::BadTypes { .. } => E::InvalidRequest.code(),
            S::Persist(e) => e.code(),
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
            CoordinatorLookupError::MalformedShareKey => E::InvalidRequest.code(),
        }
    }
}

impl KafkaCode for VerificationError {
    /// The code of the verification as Kafka 4.4's `AddPartitionsToTxnManager`
    /// hands it to the partition leader: a coordinator that cannot be named
    /// is COORDINATOR_NOT_AVAILABLE, one that could not be asked
    /// NETWORK_EXCEPTION, the coordinator's own answer as it gave it. What
    /// the producer then sees is [`produce_verification_code`]'s.
    fn code(&self) -> i16 {
        use CoordinatorLookupError as L;
        match self {
            VerificationError::CoordinatorLookup(lookup) => match lookup {
                L::TopicMissing { .. }
                | L::CreateFailed { .. }
                | L::ControllerUnavailable { .. }
                | L::NoLeader { .. }
                | L::NotCoordinator { .. }
                | L::UnsupportedKeyType { .. }
                | L::MalformedShareKey => E::CoordinatorNotAvailable.code(),
            },
            VerificationError::Remote(r) => match r {
                crate::shard::remote::RemoteError::NotInstalled
                | crate::shard::remote::RemoteError::Unreachable { .. } => {
                    E::NetworkException.code()
                }
                crate::shard::remote::RemoteError::Refused { code, .. } => *code,
            },
            VerificationError::Coordinator(e) => e.code(),
            VerificationError::Unanswered(e) => e.code(),
            VerificationError::NoVerifier => E::CoordinatorNotAvailable.code(),
        }
    }
}

/// The code a Produce partition gets when its transaction check (KIP-890)
/// failed, as Kafka 4.4's partition leader (`ReplicaManager`) translates the
/// coordinator's answer for the request version's `operation`:
/// TRANSACTION_ABORTABLE (120) becomes INVALID_TXN_STATE (48) for clients
/// that do not know it (Produce v0–v10); NETWORK_EXCEPTION,
/// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE and
/// NOT_COORDINATOR become NOT_ENOUGH_REPLICAS (19), which every producer
/// retries without a metadata refresh; CONCURRENT_TRANSACTIONS (51) does too
/// below transactions v2 (Produce v12, which retries it as such); the
/// others are kept.
pub fn produce_verification_code(
    e: &VerificationError,
    operation: TransactionSupportedOperation,
) -> i16 {
    let code = verification_code_for(e.code(), operation);
    let unsure = [
        E::NetworkException.code(),
        E::CoordinatorLoadInProgress.code(),
        E::CoordinatorNotAvailable.code(),
        E::NotCoordinator.code(),
    ];
    let concurrent = code == E::ConcurrentTransactions.code()
        && operation != TransactionSupportedOperation::AddPartition;
    if unsure.contains(&code) || concurrent {
        E::NotEnoughReplicas.code()
    } else {
        code
    }
}

/// The code a TxnOffsetCommit gets when its transaction check (KIP-890)
/// failed: the coordinator's, with TRANSACTION_ABORTABLE (120) answered
/// INVALID_TXN_STATE (48) to clients that do not know it (TxnOffsetCommit
/// v0–v3), as Kafka 4.4's `AddPartitionsToTxnManager` does.
pub fn txn_offset_commit_verification_code(
    e: &VerificationError,
    operation: TransactionSupportedOperation,
) -> i16 {
    verification_code_for(e.code(), operation)
}

/// PRODUCER_FENCED (90), which a coordinator on another broker answers
/// for a stale epoch, is INVALID_PRODUCER_EPOCH (47), the code producers
/// handle here (as Kafka 4.4's `AddPartitionsToTxnManager` turns it, and as
/// a coordinator on this broker answers through `txn::verify::refusal`);
/// TRANSACTION_ABORTABLE for a client that knows it, INVALID_TXN_STATE for
/// one that does not; every other code unchanged.
fn verification_code_for(code: i16, operation: TransactionSupportedOperation) -> i16 {
    let knows_abortable = match operation {
        TransactionSupportedOperation::DefaultError => false,
        TransactionSupportedOperation::GenericErrorSupported
        | TransactionSupportedOperation::AddPartition => true,
    };
    if code == E::ProducerFenced.code() {
        E::InvalidProducerEpoch.code()
    } else if code == E::TransactionAbortable.code() && !knows_abortable {
        E::InvalidTxnState.code()
    } else {
        code
    }
}

impl KafkaCode for TxnRefusal {
    fn code(&self) -> i16 {
        match self {
            TxnRefusal::InvalidProducerIdMapping => E::InvalidProducerIdMapping.code(),
            TxnRefusal::InvalidProducerEpoch => E::InvalidProducerEpoch.code(),
            TxnRefusal::InvalidTxnState => E::InvalidTxnState.code(),
            TxnRefusal::TransactionAbortable => E::TransactionAbortable.code(),
            TxnRefusal::ConcurrentTransactions => E::ConcurrentTransactions.code(),
            TxnRefusal::CoordinatorLoadInProgress => E::CoordinatorLoadInProgress.code(),
            TxnRefusal::NotCoordinator => E::NotCoordinator.code(),
            TxnRefusal::CoordinatorNotAvailable => E::CoordinatorNotAvailable.code(),
        }
    }
}

#[cfg(test)]
mod coordinator_lookup_tests;

#[cfg(test)]
mod partition_owner_tests;

// ---- metadata errors: codes and client texts ----

#[cfg(test)]
mod metadata_error_tests;

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
            G::FencedMemberEpoch { .. } => E::FencedMemberEpoch.code(),
            G::StaleMemberEpoch { .. } => E::StaleMemberEpoch.code(),
            G::UnsupportedAssignor { .. } => E::UnsupportedAssignor.code(),
            G::UnreleasedInstanceId { .. } => E::UnreleasedInstanceId.code(),
            G::InvalidRegularExpression { .. } => E::InvalidRegularExpression.code(),
            G::InvalidRequest(_) => E::InvalidRequest.code(),
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

// ---- SCRAM credentials (KIP-554) ----

impl KafkaCode for crate::cluster::control::scram::ScramAlterError {
    fn code(&self) -> i16 {
        use crate::cluster::control::scram::ScramAlterError as S;
        match self {
            S::UnacceptableCredential(_) => E::UnacceptableCredential.code(),
            S::UnsupportedMechanism(_) => E::UnsupportedSaslMechanism.code(),
            S::ResourceNotFound => E::ResourceNotFound.code(),
            S::DuplicateResource => E::DuplicateResource.code(),
        }
    }
}

// ---- ACLs ----

impl KafkaCode for crate::acl::model::Denied {
    fn code(&self) -> i16 {
        use crate::acl::model::ResourceType as R;
        match self.0 {
            R::Topic => E::TopicAuthorizationFailed.code(),
            R::Group => E::GroupAuthorizationFailed.code(),
            R::Cluster => E::ClusterAuthorizationFailed.code(),
            R::TransactionalId => E::TransactionalIdAuthorizationFailed.code(),
            R::DelegationToken | R::User => E::DelegationTokenAuthorizationFailed.code(),
        }
    }
}

/// Kafka's message for a refusal (`Errors.message()` of its code), for the
/// responses that carry one (FindCoordinator v1+, DescribeUserScramCredentials,
/// the ACL and quota APIs).
pub fn denied_message(d: &crate::acl::model::Denied) -> &'static str {
    use crate::acl::model::ResourceType as R;
    match d.0 {
        R::Topic => "Topic authorization failed.",
        R::Group => "Group authorization failed.",
        R::Cluster => "Cluster authorization failed.",
        R::TransactionalId => "Transactional Id authorization failed.",
        R::DelegationToken | R::User => "Delegation Token authorization failed.",
    }
}

impl KafkaCode for crate::cluster::control::acl::AclError {
    fn code(&self) -> i16 {
        match self {
            crate::cluster::control::acl::AclError::InvalidRequest(_) => E::InvalidRequest.code(),
        }
    }
}

impl KafkaCode for crate::cluster::control::features::FeatureUpdateError {
    fn code(&self) -> i16 {
        use crate::cluster::control::features::FeatureUpdateError as F;
        match self {
            F::InvalidUpdateVersion { .. } => E::InvalidUpdateVersion.code(),
        }
    }
}

// ---- client quotas ----

impl KafkaCode for crate::cluster::control::quota::QuotaError {
    fn code(&self) -> i16 {
        use crate::cluster::control::quota::QuotaError as Q;
        match self {
            Q::InvalidRequest(_) => E::InvalidRequest.code(),
            Q::UnsupportedEntityType(_) => E::UnsupportedVersion.code(),
        }
    }
}

impl KafkaCode for crate::quota::MutationThrottled {
    fn code(&self) -> i16 {
        E::ThrottlingQuotaExceeded.code()
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
            TxnError::TransactionAbortable { .. } => E::TransactionAbortable.code(),
            TxnError::InvalidTransactionTimeout { .. } => E::InvalidTransactionTimeout.code(),
            TxnError::TransactionalIdNotFound => E::TransactionalIdNotFound.code(),
            TxnError::UnknownTopicOrPartition { .. } => E::UnknownTopicOrPartition.code(),
            TxnError::OperationNotAttempted => E::OperationNotAttempted.code(),
            TxnError::StatePartitionNotHere { .. } => E::CoordinatorNotAvailable.code(),
            TxnError::NotCoordinator => E::NotCoordinator.code(),
            TxnError::CoordinatorLoadInProgress => E::CoordinatorLoadInProgress.code(),
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

impl KafkaCode for crate::share::state::ShareStateError {
    fn code(&self) -> i16 {
        use crate::share::state::ShareStateError as S;
        match self {
            S::NegativePartition
            | S::NegativeLeaderEpoch
            | S::ReadUninitialized
            | S::WriteUninitialized => E::InvalidRequest.code(),
            S::FencedLeaderEpoch => E::FencedLeaderEpoch.code(),
            S::FencedStateEpoch => E::FencedStateEpoch.code(),
            S::UnknownTopicOrPartition => E::UnknownTopicOrPartition.code(),
        }
    }
}

impl KafkaCode for crate::share_coordinator::ShareCoordinatorError {
    fn code(&self) -> i16 {
        use crate::share_coordinator::ShareCoordinatorError as C;
        match self {
            C::State(e) => e.code(),
            C::Lookup(e) => e.code(),
            C::LoadInProgress => E::CoordinatorLoadInProgress.code(),
            C::NotCoordinator => E::NotCoordinator.code(),
            C::Unavailable(_) => E::CoordinatorNotAvailable.code(),
            C::Remote(crate::shard::remote::RemoteError::Refused { code, .. }) => *code,
            C::Remote(
                crate::shard::remote::RemoteError::NotInstalled
                | crate::shard::remote::RemoteError::Unreachable { .. },
            ) => E::CoordinatorNotAvailable.code(),
            C::Append {
                cause: AppendFailure::Replication(w),
                ..
            } => replicated_write_code(w),
            C::Append { cause, .. } => cause.code(),
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
mod group_code_tests;

#[cfg(test)]
mod txn_error_tests;

// ---- exhaustive code tables ----
//
// Every `KafkaCode` enum's table test goes through `code_tables::check`
// with the enum's variant index there. Each index is an exhaustive `match`
// (no `_`): a new variant does not compile until it gets an index, and the
// table test fails until the enum's count is raised and a row pins the new
// variant's code.

#[cfg(test)]
pub(crate) mod code_tables;
