//! Exhaustive code tables: one variant index per `KafkaCode` enum (an
//! exhaustive `match`, no `_`) and [`check`], which every table test of
//! `src/error.rs` goes through; plus the tables of `StorageError`,
//! `BatchError`, `ShardError` and `LeadershipError`.

use super::*;
use crate::group::GroupError;
use crate::txn::error::TxnError;

/// The variants of an error enum, for its table test.
pub(crate) trait Variants {
    /// How many variants the enum has.
    const COUNT: usize;
    /// The variant's index in `0..COUNT`, from an exhaustive `match`.
    fn index(&self) -> usize;
}

/// Asserts every row's code, and that the rows' variant indices cover
/// exactly `0..T::COUNT`: one row at least per variant.
pub(crate) fn check<'a, T: KafkaCode + Variants + std::fmt::Debug + 'a>(
    rows: impl IntoIterator<Item = (&'a T, i16)>,
) {
    let variants = T::COUNT;
    let mut seen = vec![false; variants];
    for (e, code) in rows {
        assert_eq!(e.code(), code, "{e:?}");
        let i = e.index();
        assert!(
            i < variants,
            "{e:?} has variant index {i}: raise the variant count {variants}"
        );
        seen[i] = true;
    }
    let missing: Vec<usize> = (0..variants).filter(|i| !seen[*i]).collect();
    assert!(
        missing.is_empty(),
        "no row for variant index(es) {missing:?}"
    );
}

/// [`check`] over a table of (error, code) rows.
pub(crate) fn table<T: KafkaCode + Variants + std::fmt::Debug>(rows: &[(T, i16)]) {
    check(rows.iter().map(|(e, c)| (e, *c)));
}

impl Variants for GroupError {
    const COUNT: usize = 26;
    fn index(&self) -> usize {
        match self {
            GroupError::FencedMemberEpoch { .. } => 20,
            GroupError::StaleMemberEpoch { .. } => 21,
            GroupError::UnsupportedAssignor { .. } => 22,
            GroupError::UnreleasedInstanceId { .. } => 23,
            GroupError::InvalidRegularExpression { .. } => 24,
            GroupError::InvalidRequest(_) => 25,
            GroupError::UnknownMemberId { .. } => 0,
            GroupError::IllegalGeneration { .. } => 1,
            GroupError::RebalanceInProgress => 2,
            GroupError::MemberIdRequired { .. } => 3,
            GroupError::FencedInstanceId { .. } => 4,
            GroupError::GroupMaxSizeReached { .. } => 5,
            GroupError::InconsistentGroupProtocol => 6,
            GroupError::UnknownTopicOrPartition { .. } => 7,
            GroupError::NonEmptyGroup => 8,
            GroupError::GroupIdNotFound => 9,
            GroupError::CoordinatorLoadInProgress => 10,
            GroupError::CoordinatorNotAvailable => 11,
            GroupError::InvalidGroupId => 12,
            GroupError::InvalidSessionTimeout { .. } => 13,
            GroupError::OffsetMetadataTooLarge { .. } => 14,
            GroupError::GroupSubscribedToTopic { .. } => 15,
            GroupError::UnstableOffsetCommit => 16,
            GroupError::ProducerFenced { .. } => 17,
            GroupError::InvalidTxnState { .. } => 18,
            GroupError::Append(_) => 19,
        }
    }
}

impl Variants for TxnError {
    const COUNT: usize = 17;
    fn index(&self) -> usize {
        match self {
            TxnError::ConcurrentTransactions { .. } => 0,
            TxnError::ProducerFenced { .. } => 1,
            TxnError::InvalidProducerEpoch { .. } => 2,
            TxnError::InvalidProducerIdMapping { .. } => 3,
            TxnError::InvalidTxnState { .. } => 4,
            TxnError::TransactionAbortable { .. } => 16,
            TxnError::InvalidTransactionTimeout { .. } => 5,
            TxnError::TransactionalIdNotFound => 6,
            TxnError::StatePartitionNotHere { .. } => 7,
            TxnError::NotCoordinator => 14,
            TxnError::CoordinatorLoadInProgress => 15,
            TxnError::CoordinatorUnavailable(_) => 8,
            TxnError::ProducerIdAllocation { .. } => 9,
            TxnError::StateAppend { .. } => 10,
            TxnError::MarkerWrite { .. } => 11,
            TxnError::UnknownTopicOrPartition { .. } => 12,
            TxnError::OperationNotAttempted => 13,
        }
    }
}

impl Variants for ProduceError {
    const COUNT: usize = 9;
    fn index(&self) -> usize {
        match self {
            ProduceError::Batch(_) => 0,
            ProduceError::NoBatch => 1,
            ProduceError::TooManyBatches { .. } => 2,
            ProduceError::TransactionalIdRequired { .. } => 3,
            ProduceError::VerificationLost { .. } => 4,
            ProduceError::Producer(_) => 5,
            ProduceError::NotEnoughReplicas { .. } => 6,
            ProduceError::Storage(_) => 7,
            ProduceError::Leadership(_) => 8,
        }
    }
}

impl Variants for LeadershipError {
    const COUNT: usize = 8;
    fn index(&self) -> usize {
        match self {
            LeadershipError::UnknownTopicOrPartition => 0,
            LeadershipError::NotReplica { .. } => 1,
            LeadershipError::ReplicaOffline { .. } => 2,
            LeadershipError::NotLeader => 3,
            LeadershipError::FencedLeaderEpoch { .. } => 4,
            LeadershipError::UnknownLeaderEpoch { .. } => 5,
            LeadershipError::ReplicaOpening { .. } => 6,
            LeadershipError::UnknownFollower { .. } => 7,
        }
    }
}

impl Variants for ProducerStateError {
    const COUNT: usize = 5;
    fn index(&self) -> usize {
        match self {
            ProducerStateError::MissingSequence { .. } => 0,
            ProducerStateError::FencedEpoch { .. } => 1,
            ProducerStateError::OutOfOrderSequence { .. } => 2,
            ProducerStateError::DuplicateSequence { .. } => 3,
            ProducerStateError::CoordinatorFenced { .. } => 4,
        }
    }
}

impl Variants for crate::shard::owner::produce::AppendError {
    const COUNT: usize = 6;
    fn index(&self) -> usize {
        use crate::shard::owner::produce::AppendError as A;
        match self {
            A::Refused(_) => 0,
            A::Write(_) => 1,
            A::Flush(_) => 2,
            A::Replication(_) => 3,
            A::NotInTransaction { .. } => 4,
            A::Unanswered(_) => 5,
        }
    }
}

impl Variants for FlushError {
    const COUNT: usize = 2;
    fn index(&self) -> usize {
        match self {
            FlushError::Sync { .. } => 0,
            FlushError::Abandoned => 1,
        }
    }
}

impl Variants for crate::cluster::error::ElectionError {
    const COUNT: usize = 4;
    fn index(&self) -> usize {
        use crate::cluster::error::ElectionError as El;
        match self {
            El::UnknownTopicOrPartition => 0,
            El::ElectionNotNeeded => 1,
            El::PreferredLeaderNotAvailable { .. } => 2,
            El::EligibleLeadersNotAvailable => 3,
        }
    }
}

impl Variants for crate::cluster::reassignment::ReassignmentError {
    const COUNT: usize = 8;
    fn index(&self) -> usize {
        use crate::cluster::reassignment::ReassignmentError as R;
        match self {
            R::UnknownTopic { .. } => 0,
            R::UnknownPartition { .. } => 1,
            R::EmptyReplicas => 2,
            R::UnregisteredBroker { .. } => 3,
            R::DuplicateBroker { .. } => 4,
            R::ReplicationFactorChange { .. } => 5,
            R::NoReassignmentInProgress => 6,
            R::UncleanRevert { .. } => 7,
        }
    }
}

impl Variants for crate::shard::error::ReplicationWaitError {
    const COUNT: usize = 3;
    fn index(&self) -> usize {
        use crate::shard::error::ReplicationWaitError as W;
        match self {
            W::NotEnoughReplicasAfterAppend { .. } => 0,
            W::TimedOut => 1,
            W::NotLeader => 2,
        }
    }
}

impl Variants for crate::shard::fetch_session::FetchSessionError {
    const COUNT: usize = 3;
    fn index(&self) -> usize {
        use crate::shard::fetch_session::FetchSessionError as F;
        match self {
            F::SessionIdNotFound(_) => 0,
            F::InvalidSessionEpoch { .. } => 1,
            F::TopicIdUsage(_) => 2,
        }
    }
}

impl Variants for InternalAppendError {
    const COUNT: usize = 5;
    fn index(&self) -> usize {
        match self {
            InternalAppendError::Encode { .. } => 0,
            InternalAppendError::Malformed { .. } => 1,
            InternalAppendError::Storage(_) => 2,
            InternalAppendError::Flush(_) => 3,
            InternalAppendError::Replication(_) => 4,
        }
    }
}

impl Variants for MarkerError {
    const COUNT: usize = 4;
    fn index(&self) -> usize {
        match self {
            MarkerError::InvalidProducerId(_) => 0,
            MarkerError::Producer(_) => 1,
            MarkerError::Append(_) => 2,
            MarkerError::NotLeader => 3,
        }
    }
}

impl Variants for AppendFailure {
    const COUNT: usize = 5;
    fn index(&self) -> usize {
        match self {
            AppendFailure::Encode => 0,
            AppendFailure::Malformed => 1,
            AppendFailure::Storage => 2,
            AppendFailure::Flush(_) => 3,
            AppendFailure::Replication(_) => 4,
        }
    }
}

impl Variants for MarkerFailure {
    const COUNT: usize = 4;
    fn index(&self) -> usize {
        match self {
            MarkerFailure::InvalidProducerId(_) => 0,
            MarkerFailure::Producer(_) => 1,
            MarkerFailure::Append(_) => 2,
            MarkerFailure::NotLeader => 3,
        }
    }
}

impl Variants for CoordinatorLookupError {
    const COUNT: usize = 7;
    fn index(&self) -> usize {
        match self {
            CoordinatorLookupError::TopicMissing { .. } => 0,
            CoordinatorLookupError::CreateFailed { .. } => 1,
            CoordinatorLookupError::ControllerUnavailable { .. } => 2,
            CoordinatorLookupError::NoLeader { .. } => 3,
            CoordinatorLookupError::UnsupportedKeyType { .. } => 4,
            CoordinatorLookupError::NotCoordinator { .. } => 5,
            CoordinatorLookupError::MalformedShareKey => 6,
        }
    }
}

impl Variants for MetadataError {
    const COUNT: usize = 12;
    fn index(&self) -> usize {
        match self {
            MetadataError::UnknownTopicOrPartition => 0,
            MetadataError::UnknownTopicId => 1,
            MetadataError::InvalidTopic(_) => 2,
            MetadataError::TopicAlreadyExists { .. } => 3,
            MetadataError::InvalidPartitions(_) => 4,
            MetadataError::InvalidReplicationFactor { .. } => 5,
            MetadataError::InvalidReplicaAssignment(_) => 6,
            MetadataError::InvalidConfig(_) => 7,
            MetadataError::TopicDeletionDisabled => 8,
            MetadataError::InvalidRequest(_) => 9,
            MetadataError::Storage(_) => 10,
            MetadataError::Controller(_) => 11,
        }
    }
}

impl Variants for StorageError {
    const COUNT: usize = 6;
    fn index(&self) -> usize {
        match self {
            StorageError::Io(_) => 0,
            StorageError::OffsetOutOfRange { .. } => 1,
            StorageError::Corrupt { .. } => 2,
            StorageError::Inconsistent { .. } => 3,
            StorageError::NotCached { .. } => 4,
            StorageError::Batch(_) => 5,
        }
    }
}

impl Variants for BatchError {
    const COUNT: usize = 6;
    fn index(&self) -> usize {
        match self {
            BatchError::CorruptMessage(_) => 0,
            BatchError::MessageTooLarge { .. } => 1,
            BatchError::InvalidRecord(_) => 2,
            BatchError::LegacyMagic(_) => 3,
            BatchError::UnknownMagic(_) => 4,
            BatchError::InvalidTimestamp(_) => 5,
        }
    }
}

impl Variants for AnswerError {
    const COUNT: usize = 1;
    fn index(&self) -> usize {
        match self {
            AnswerError::Lost => 0,
        }
    }
}

impl Variants for VerificationError {
    const COUNT: usize = 5;
    fn index(&self) -> usize {
        match self {
            VerificationError::CoordinatorLookup(_) => 0,
            VerificationError::Remote(_) => 1,
            VerificationError::Coordinator(_) => 2,
            VerificationError::Unanswered(_) => 3,
            VerificationError::NoVerifier => 4,
        }
    }
}

impl Variants for crate::cluster::control::scram::ScramAlterError {
    const COUNT: usize = 4;
    fn index(&self) -> usize {
        use crate::cluster::control::scram::ScramAlterError as S;
        match self {
            S::UnacceptableCredential(_) => 0,
            S::UnsupportedMechanism(_) => 1,
            S::ResourceNotFound => 2,
            S::DuplicateResource => 3,
        }
    }
}

#[test]
fn scram_alter_error_codes() {
    use crate::cluster::control::scram::ScramAlterError as S;
    table(&[
        (S::UnacceptableCredential("x".into()), 93),
        (S::UnsupportedMechanism(3), 33),
        (S::ResourceNotFound, 91),
        (S::DuplicateResource, 92),
    ]);
}

impl Variants for crate::cluster::control::acl::AclError {
    const COUNT: usize = 1;
    fn index(&self) -> usize {
        match self {
            crate::cluster::control::acl::AclError::InvalidRequest(_) => 0,
        }
    }
}

#[test]
fn acl_error_codes() {
    table(&[(
        crate::cluster::control::acl::AclError::InvalidRequest("x".into()),
        42,
    )]);
}

impl Variants for crate::cluster::control::features::FeatureUpdateError {
    const COUNT: usize = 1;
    fn index(&self) -> usize {
        use crate::cluster::control::features::FeatureUpdateError as F;
        match self {
            F::InvalidUpdateVersion { .. } => 0,
        }
    }
}

#[test]
fn feature_update_error_codes() {
    use crate::cluster::control::features::FeatureUpdateError as F;
    table(&[(
        F::InvalidUpdateVersion {
            feature: "f".into(),
            level: 1,
            reason: "r".into(),
        },
        95,
    )]);
}

impl Variants for crate::acl::model::Denied {
    const COUNT: usize = 6;
    fn index(&self) -> usize {
        use crate::acl::model::ResourceType as R;
        match self.0 {
            R::Topic => 0,
            R::Group => 1,
            R::Cluster => 2,
            R::TransactionalId => 3,
            R::DelegationToken => 4,
            R::User => 5,
        }
    }
}

#[test]
fn denied_codes() {
    use crate::acl::model::{Denied, ResourceType as R};
    table(&[
        (Denied(R::Topic), 29),
        (Denied(R::Group), 30),
        (Denied(R::Cluster), 31),
        (Denied(R::TransactionalId), 53),
        (Denied(R::DelegationToken), 65),
        (Denied(R::User), 65),
    ]);
}

impl Variants for crate::cluster::control::quota::QuotaError {
    const COUNT: usize = 2;
    fn index(&self) -> usize {
        use crate::cluster::control::quota::QuotaError as Q;
        match self {
            Q::InvalidRequest(_) => 0,
            Q::UnsupportedEntityType(_) => 1,
        }
    }
}

#[test]
fn quota_error_codes() {
    use crate::cluster::control::quota::QuotaError as Q;
    table(&[
        (Q::InvalidRequest("x".into()), 42),
        (Q::UnsupportedEntityType("x".into()), 35),
    ]);
}

impl Variants for crate::quota::MutationThrottled {
    const COUNT: usize = 1;
    fn index(&self) -> usize {
        let crate::quota::MutationThrottled { .. } = self;
        0
    }
}

#[test]
fn mutation_throttled_code() {
    table(&[(crate::quota::MutationThrottled { throttle_ms: 5 }, 89)]);
}

impl Variants for TxnRefusal {
    const COUNT: usize = 8;
    fn index(&self) -> usize {
        match self {
            TxnRefusal::InvalidProducerIdMapping => 0,
            TxnRefusal::InvalidProducerEpoch => 1,
            TxnRefusal::InvalidTxnState => 2,
            TxnRefusal::ConcurrentTransactions => 3,
            TxnRefusal::CoordinatorLoadInProgress => 4,
            TxnRefusal::NotCoordinator => 5,
            TxnRefusal::CoordinatorNotAvailable => 6,
            TxnRefusal::TransactionAbortable => 7,
        }
    }
}

impl Variants for ShardError {
    const COUNT: usize = 1;
    fn index(&self) -> usize {
        match self {
            ShardError::Unavailable(_) => 0,
        }
    }
}

impl Variants for ControllerCallError {
    const COUNT: usize = 6;
    fn index(&self) -> usize {
        match self {
            ControllerCallError::Shard(_) => 0,
            ControllerCallError::NotStarted => 1,
            ControllerCallError::Unavailable(_) => 2,
            ControllerCallError::NotRegistered => 3,
            ControllerCallError::Lifecycle(_) => 4,
            ControllerCallError::UnexpectedReply => 5,
        }
    }
}

impl Variants for ControllerUnavailable {
    const COUNT: usize = 3;
    fn index(&self) -> usize {
        match self {
            ControllerUnavailable::NotController { .. } => 0,
            ControllerUnavailable::Timeout { .. } => 1,
            ControllerUnavailable::Stopped { .. } => 2,
        }
    }
}

impl Variants for LifecycleError {
    const COUNT: usize = 4;
    fn index(&self) -> usize {
        match self {
            LifecycleError::StaleBrokerEpoch { .. } => 0,
            LifecycleError::NotRegistered { .. } => 1,
            LifecycleError::DuplicateRegistration { .. } => 2,
            LifecycleError::InconsistentClusterId { .. } => 3,
        }
    }
}

#[test]
fn controller_error_codes() {
    let not_controller = ControllerUnavailable::NotController { leader: Some(2) };
    let timeout = ControllerUnavailable::Timeout {
        timeout_ms: 30000,
        last: "no active controller".into(),
    };
    table(&[
        (not_controller.clone(), 41),
        (timeout.clone(), 7),
        (
            ControllerUnavailable::Stopped {
                reason: "shutdown".into(),
            },
            7,
        ),
    ]);
    let stale = LifecycleError::StaleBrokerEpoch {
        broker: 2,
        epoch: 3,
        current: 9,
    };
    table(&[
        (stale.clone(), 77),
        (LifecycleError::NotRegistered { broker: 2 }, 102),
        (
            LifecycleError::DuplicateRegistration {
                broker: 2,
                other: uuid::Uuid::nil(),
            },
            101,
        ),
        (
            LifecycleError::InconsistentClusterId {
                given: "a".into(),
                ours: "b".into(),
            },
            104,
        ),
    ]);
    table(&[
        (ControllerCallError::Shard(ShardError::Unavailable(0)), 7),
        (ControllerCallError::NotStarted, 7),
        (ControllerCallError::Unavailable(not_controller), 41),
        (ControllerCallError::Unavailable(timeout), 7),
        (ControllerCallError::NotRegistered, 7),
        (ControllerCallError::Lifecycle(stale), 77),
        (ControllerCallError::UnexpectedReply, -1),
    ]);
}

#[test]
fn shard_error_codes() {
    table(&[(ShardError::Unavailable(3), 7)]);
}

#[test]
fn leadership_error_codes_and_texts() {
    let rows: [(LeadershipError, i16, &str); 8] = [
        (
            LeadershipError::UnknownFollower { replica_id: 9 },
            6,
            "broker 9 is not a replica of this partition",
        ),
        (
            LeadershipError::UnknownTopicOrPartition,
            3,
            "unknown topic or partition",
        ),
        (
            LeadershipError::NotReplica { broker: 2 },
            6,
            "broker 2 holds no replica of this partition",
        ),
        (
            LeadershipError::ReplicaOffline { broker: 2 },
            56,
            "broker 2 has this partition's log offline",
        ),
        (
            LeadershipError::NotLeader,
            6,
            "this broker is not the leader of this partition",
        ),
        (
            LeadershipError::ReplicaOpening { broker: 2 },
            6,
            "broker 2 is still opening this partition's log",
        ),
        (
            LeadershipError::FencedLeaderEpoch {
                requested: 1,
                current: 2,
            },
            74,
            "leader epoch 1 is older than the current leader epoch 2",
        ),
        (
            LeadershipError::UnknownLeaderEpoch {
                requested: 3,
                current: 2,
            },
            75,
            "leader epoch 3 is newer than the current leader epoch 2",
        ),
    ];
    check(rows.iter().map(|(e, c, _)| (e, *c)));
    for (e, _, text) in &rows {
        assert_eq!(e.to_string(), *text, "{e:?}");
    }
}

#[test]
fn storage_error_codes() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let file = match std::fs::File::open(&path) {
        Ok(f) => std::sync::Arc::new(f),
        Err(e) => panic!("cannot open {}: {e}", path.display()),
    };
    let rows = [
        (StorageError::Io(std::io::Error::from_raw_os_error(5)), 56),
        (
            StorageError::OffsetOutOfRange {
                requested: 9,
                log_start_offset: 0,
                log_end_offset: 5,
            },
            1,
        ),
        (
            StorageError::Corrupt {
                dir: "t-0".into(),
                damage: crate::storage::LogDamage::OverlappingSegments {
                    segment: "t-0/00000000000000000005.log".into(),
                    base_offset: 5,
                    previous_next_offset: 7,
                },
            },
            56,
        ),
        (
            StorageError::Inconsistent {
                path: None,
                what: crate::storage::Inconsistency::AppendAbandoned,
            },
            56,
        ),
        (
            StorageError::NotCached {
                file,
                path,
                position: 0,
                len: 1,
            },
            56,
        ),
        (StorageError::Batch(BatchError::LegacyMagic(1)), 87),
        (StorageError::Batch(BatchError::UnknownMagic(3)), 2),
    ];
    table(&rows);
}

/// Every variant's code, and the texts clients get in Produce v8+
/// `error_message` (unchanged from when the details were strings).
#[test]
fn batch_error_codes_and_texts() {
    use crate::storage::batch::{
        Corruption as C, RecompressError, RecordRule as R, TimestampBound, TimestampOutOfRange,
    };
    let rows: Vec<(BatchError, i16, &str)> = vec![
        (BatchError::CorruptMessage(C::EmptyRecords), 2, "corrupt message: empty records"),
        (
            BatchError::CorruptMessage(C::TrailingBytes { position: 70, len: 3 }),
            2,
            "corrupt message: 3 trailing bytes at position 70 are not a whole batch",
        ),
        (
            BatchError::CorruptMessage(C::HeaderTooShort { len: 60 }),
            2,
            "corrupt message: batch header needs 61 bytes, got 60",
        ),
        (
            BatchError::CorruptMessage(C::BatchLengthTooSmall {
                position: 0,
                batch_length: 10,
            }),
            2,
            "corrupt message: batchLength 10 at position 0 is below the minimum 49",
        ),
        (
            BatchError::CorruptMessage(C::BatchLengthOverflow),
            2,
            "corrupt message: batchLength overflow",
        ),
        (
            BatchError::CorruptMessage(C::Truncated {
                position: 0,
                size: 100,
                remaining: 80,
            }),
            2,
            "corrupt message: batch at position 0 claims 100 bytes but only 80 remain",
        ),
        (
            BatchError::CorruptMessage(C::CrcMismatch {
                position: 0,
                stored: 0xdead,
                computed: 0xbeef,
            }),
            2,
            "corrupt message: CRC32C mismatch at position 0: stored 0x0000dead, computed 0x0000beef",
        ),
        (
            BatchError::CorruptMessage(C::UnknownCompression { codec: 5 }),
            2,
            "corrupt message: unknown compression codec 5",
        ),
        (
            BatchError::CorruptMessage(C::OutsideRecords),
            2,
            "corrupt message: batch outside the records",
        ),
        (
            BatchError::CorruptMessage(C::OutsideRecordsAt {
                position: 10,
                size: 70,
                records_len: 61,
            }),
            2,
            "corrupt message: batch at 10 of 70 bytes is outside the 61-byte records",
        ),
        (
            BatchError::CorruptMessage(C::SizeMismatch { position: 10 }),
            2,
            "corrupt message: batch at 10 does not match its validated size",
        ),
        (
            BatchError::from(RecompressError::Corrupt("bad gzip header".into())),
            2,
            "corrupt message: the batch's records are corrupt: bad gzip header",
        ),
        (
            BatchError::MessageTooLarge { size: 20, max: 10 },
            10,
            "batch of 20 bytes exceeds max message size 10 bytes",
        ),
        (
            BatchError::InvalidRecord(R::RecordCount {
                records_count: 0,
                last_offset_delta: 0,
            }),
            87,
            "invalid record: invalid record count 0 / lastOffsetDelta 0",
        ),
        (
            BatchError::InvalidRecord(R::OffsetDeltaMismatch {
                last_offset_delta: 1,
                records_count: 3,
            }),
            87,
            "invalid record: inconsistent batch: lastOffsetDelta 1 but 3 records",
        ),
        (
            BatchError::InvalidRecord(R::ControlBatch),
            87,
            "invalid record: clients are not allowed to write control records",
        ),
        (
            BatchError::InvalidRecord(R::InvalidSequence {
                base_sequence: -1,
                producer_id: 7,
            }),
            87,
            "invalid record: invalid sequence -1 for producer id 7",
        ),
        (
            BatchError::from(RecompressError::Framing("header count 9".into())),
            87,
            "invalid record: malformed record: header count 9",
        ),
        (
            BatchError::from(RecompressError::RecordTooLarge { size: 9, max: 8 }),
            87,
            "invalid record: a record of 9 bytes exceeds max.decompressed.message.bytes 8",
        ),
        (BatchError::LegacyMagic(1), 87, "unsupported magic 1"),
        (BatchError::UnknownMagic(3), 2, "unsupported magic 3"),
        (
            BatchError::InvalidTimestamp(TimestampOutOfRange {
                timestamp: 5,
                earliest: 10,
                latest: 20,
                bound: TimestampBound::BeforeMax,
            }),
            32,
            "Timestamp 5 of a message in the batch is out of range. The timestamp should be within [10, 20] (message.timestamp.before.max.ms)",
        ),
        (
            BatchError::InvalidTimestamp(TimestampOutOfRange {
                timestamp: 25,
                earliest: 10,
                latest: 20,
                bound: TimestampBound::AfterMax,
            }),
            32,
            "Timestamp 25 of a message in the batch is out of range. The timestamp should be within [10, 20] (message.timestamp.after.max.ms)",
        ),
    ];
    check(rows.iter().map(|(e, c, _)| (e, *c)));
    for (e, _, text) in &rows {
        assert_eq!(e.to_string(), *text, "{e:?}");
    }
}

/// The texts of the structured storage errors (logged, and sent in
/// Produce v8+ `error_message` for a failed append).
#[test]
fn storage_error_texts() {
    use crate::storage::{Inconsistency as I, LogDamage};
    let seg = || Some(std::path::PathBuf::from("t-0/00000000000000000000.log"));
    let rows = [
        (
            StorageError::Corrupt {
                dir: "t-0".into(),
                damage: LogDamage::OverlappingSegments {
                    segment: "t-0/00000000000000000005.log".into(),
                    base_offset: 5,
                    previous_next_offset: 7,
                },
            },
            "corrupt log: t-0: segment t-0/00000000000000000005.log starts at 5 but the previous one ends at offset 7",
        ),
        (
            StorageError::Inconsistent {
                path: seg(),
                what: I::NoWholeHeader {
                    position: 100,
                    size: 120,
                },
            },
            "log inconsistency: t-0/00000000000000000000.log: no whole batch header at position 100 (size 120)",
        ),
        (
            StorageError::Inconsistent {
                path: seg(),
                what: I::BadBatchLength {
                    batch_length: 9,
                    position: 0,
                },
            },
            "log inconsistency: t-0/00000000000000000000.log: bad batch length 9 at position 0",
        ),
        (
            StorageError::Inconsistent {
                path: None,
                what: I::ReplicaOutOfStep {
                    base_offset: 9,
                    expected: 7,
                },
            },
            "log inconsistency: replica append at offset 9, but the log continues at 7",
        ),
        (
            StorageError::Inconsistent {
                path: Some("t-0".into()),
                what: I::CommitOutOfOrder {
                    base_offset: 4,
                    log_end_offset: 3,
                },
            },
            "log inconsistency: t-0: commit of offset 4 out of order (LEO 3)",
        ),
        (
            StorageError::Inconsistent {
                path: None,
                what: I::AppendTooLarge { bytes: 10 },
            },
            "log inconsistency: append of 10 bytes does not fit a segment",
        ),
        (
            StorageError::Inconsistent {
                path: None,
                what: I::NotCommitted,
            },
            "log inconsistency: append not committed",
        ),
    ];
    for (e, text) in &rows {
        assert_eq!(e.code(), 56, "{e:?}");
        assert_eq!(e.to_string(), *text, "{e:?}");
    }
}

/// A table without a row for some variant fails.
#[test]
#[should_panic(expected = "no row for variant index")]
fn a_missing_row_fails() {
    table::<ShardError>(&[]);
}
