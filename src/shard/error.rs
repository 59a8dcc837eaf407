//! Errors of the partition owner: why a Produce is refused
//! ([`ProduceError`]), why a transaction marker is not written
//! ([`MarkerError`]), why an internal append fails ([`InternalAppendError`]),
//! why a wait for the flush policy fails ([`FlushError`]), why a
//! transactional partition could not be verified with its coordinator
//! ([`VerificationError`]) and an item the owner left without an answer
//! ([`AnswerError`]). Each maps to the Kafka error code in `crate::error`
//! (section "partition owner").

use crate::cluster::error::CoordinatorLookupError;
use crate::cluster::leadership::LeadershipError;
use crate::producer_state::ProducerStateError;
use crate::storage::{BatchError, StorageError};

/// Why the owner refuses one partition's records in a Produce request. The
/// Display text is the `error_message` the client gets (Produce v8+).
#[derive(Debug, thiserror::Error)]
pub enum ProduceError {
    /// The batches break a format or topic rule (`validate_batches`,
    /// `max.message.bytes`, the timestamp window, recompression): the batch
    /// error's code (CORRUPT_MESSAGE (2), MESSAGE_TOO_LARGE (10),
    /// INVALID_RECORD (87), INVALID_TIMESTAMP (32)).
    #[error(transparent)]
    Batch(#[from] BatchError),
    /// The records hold no batch at all: CORRUPT_MESSAGE (2).
    #[error("no record batch in the request")]
    NoBatch,
    /// More than one batch for the partition (Kafka's rule for Produce v3+):
    /// INVALID_RECORD (87).
    #[error("a partition's records must be exactly one record batch, got {count}")]
    TooManyBatches {
        /// Batches found.
        count: usize,
    },
    /// A transactional batch in a request without `transactional_id`:
    /// TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53).
    #[error("transactional batches need the request's transactional_id")]
    TransactionalIdRequired {
        /// The batch's producer id.
        producer_id: i64,
    },
    /// The coordinator confirmed the partition, but a marker of the producer
    /// ended its transaction meanwhile (KIP-890's verification):
    /// INVALID_TXN_STATE (48).
    #[error("the transaction ended while the batch was being verified")]
    VerificationLost {
        /// The batch's producer id.
        producer_id: i64,
        /// The batch's producer epoch.
        epoch: i16,
    },
    /// Refused by the idempotent producer checks (KIP-98): the code of the
    /// [`ProducerStateError`].
    #[error("rejected by the idempotent producer checks (KIP-98)")]
    Producer(#[source] ProducerStateError),
    /// acks=all on a partition whose ISR is smaller than the topic's
    /// `min.insync.replicas`, refused before the append:
    /// NOT_ENOUGH_REPLICAS (19).
    #[error(
        "The size of the current ISR {isr} is insufficient to satisfy the min.isr requirement of {required} for partition {topic}-{partition}"
    )]
    NotEnoughReplicas {
        /// The topic's `min.insync.replicas`.
        required: i32,
        /// The ISR's size.
        isr: usize,
        /// Topic name.
        topic: std::sync::Arc<str>,
        /// Partition index.
        partition: i32,
    },
    /// Stage 1 of the append failed (the partition is offline after a
    /// failed write: KAFKA_STORAGE_ERROR (56)): the storage error's code.
    #[error(transparent)]
    Storage(StorageError),
    /// This broker does not lead the partition (a follower, or no leader):
    /// the [`LeadershipError`]'s code, NOT_LEADER_OR_FOLLOWER (6).
    #[error(transparent)]
    Leadership(LeadershipError),
}

/// Why an acks=all produce was not answered with success after its append
/// ([`crate::shard::partition::Partition::wait_replicated`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ReplicationWaitError {
    /// The high watermark reached the batch, but the ISR is smaller than
    /// `min.insync.replicas`: NOT_ENOUGH_REPLICAS_AFTER_APPEND (20).
    #[error("the ISR of {isr} is below min.insync.replicas {required} after the append")]
    NotEnoughReplicasAfterAppend {
        /// The topic's `min.insync.replicas`.
        required: i32,
        /// The ISR's size.
        isr: usize,
    },
    /// The ISR did not replicate the batch within the produce's
    /// `timeout_ms`: REQUEST_TIMED_OUT (7).
    #[error("the batch was not replicated to the ISR within the request's timeout")]
    TimedOut,
    /// This broker stopped leading the partition while it waited:
    /// NOT_LEADER_OR_FOLLOWER (6).
    #[error("this broker stopped leading the partition")]
    NotLeader,
}

/// Why [`crate::shard::partition::Partition::wait_flushed`] failed: both
/// KAFKA_STORAGE_ERROR (56). Cloned to every waiter of one group commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FlushError {
    /// The fdatasync failed.
    #[error("{}", sync_error_text(*kind, *os_error))]
    Sync {
        /// The I/O error's kind.
        kind: std::io::ErrorKind,
        /// The OS error number (errno), when the OS gave one.
        os_error: Option<i32>,
    },
    /// The flush task ended without answering (shutdown).
    #[error("flush abandoned")]
    Abandoned,
}

impl FlushError {
    /// The [`FlushError::Sync`] of an I/O error.
    pub fn sync(e: &std::io::Error) -> FlushError {
        FlushError::Sync {
            kind: e.kind(),
            os_error: e.raw_os_error(),
        }
    }
}

/// The text of an I/O error rebuilt from its kind and errno (the same text
/// the `std::io::Error` showed).
fn sync_error_text(kind: std::io::ErrorKind, os_error: Option<i32>) -> String {
    match os_error {
        Some(code) => std::io::Error::from_raw_os_error(code).to_string(),
        None => std::io::Error::from(kind).to_string(),
    }
}

/// Why an append of broker-made batches (internal topics, transaction
/// markers; `shard::internal`) failed.
#[derive(Debug, thiserror::Error)]
pub enum InternalAppendError {
    /// The records could not be encoded as a batch: UNKNOWN_SERVER_ERROR (-1).
    #[error("cannot encode {records} records as a record batch")]
    Encode {
        /// Records in the batch.
        records: usize,
    },
    /// The encoded bytes are not whole batches at `position` (bytes):
    /// UNKNOWN_SERVER_ERROR (-1).
    #[error("internal batch bytes are malformed at position {position}")]
    Malformed {
        /// Byte position of the bad batch.
        position: usize,
    },
    /// The append or its write failed: KAFKA_STORAGE_ERROR (56), whatever
    /// the storage error.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The fdatasync of the flush policy failed: KAFKA_STORAGE_ERROR (56).
    #[error("fdatasync failed: {0}")]
    Flush(#[from] FlushError),
    /// A replicated partition's ISR did not take the records (acks=all, as
    /// Kafka appends internal records and markers): the wait's code
    /// (NOT_ENOUGH_REPLICAS_AFTER_APPEND (20), REQUEST_TIMED_OUT (7),
    /// NOT_LEADER_OR_FOLLOWER (6)); the coordinators answer their own.
    #[error("not replicated: {0}")]
    Replication(#[from] ReplicationWaitError),
}

/// Why [`crate::shard::partition::Partition::write_marker`] wrote no marker.
#[derive(Debug, thiserror::Error)]
pub enum MarkerError {
    /// A negative producer id: INVALID_REQUEST (42).
    #[error("invalid producer id {0} for a transaction marker")]
    InvalidProducerId(i64),
    /// The producer state refuses the marker: INVALID_PRODUCER_EPOCH (47)
    /// for an older producer epoch, TRANSACTION_COORDINATOR_FENCED (52) for
    /// an older coordinator epoch.
    #[error(transparent)]
    Producer(#[from] ProducerStateError),
    /// The marker could not be appended: the [`InternalAppendError`]'s code.
    #[error(transparent)]
    Append(#[from] InternalAppendError),
    /// This broker does not lead the partition (markers go to the leader
    /// only): NOT_LEADER_OR_FOLLOWER (6).
    #[error("this broker does not lead the partition")]
    NotLeader,
}

/// A copyable summary of an [`InternalAppendError`], for the coordinators'
/// results (which are cloned to every waiter and compared in their tests).
/// The full error is logged where it happens; the Kafka code is the same as
/// the [`InternalAppendError`]'s: UNKNOWN_SERVER_ERROR (-1) for `Encode` and
/// `Malformed`, KAFKA_STORAGE_ERROR (56) for `Storage` and `Flush`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AppendFailure {
    /// The records could not be encoded as a record batch.
    #[error("the records could not be encoded as a record batch")]
    Encode,
    /// The encoded bytes are not whole batches.
    #[error("the internal batch bytes are malformed")]
    Malformed,
    /// The append or its write failed.
    #[error("the append or its write failed")]
    Storage,
    /// The fdatasync of the flush policy failed.
    #[error("fdatasync failed: {0}")]
    Flush(FlushError),
    /// The ISR did not take the records.
    #[error("not replicated: {0}")]
    Replication(ReplicationWaitError),
}

impl From<&InternalAppendError> for AppendFailure {
    fn from(e: &InternalAppendError) -> AppendFailure {
        match e {
            InternalAppendError::Encode { .. } => AppendFailure::Encode,
            InternalAppendError::Malformed { .. } => AppendFailure::Malformed,
            InternalAppendError::Storage(_) => AppendFailure::Storage,
            InternalAppendError::Flush(f) => AppendFailure::Flush(*f),
            InternalAppendError::Replication(w) => AppendFailure::Replication(*w),
        }
    }
}

/// A copyable summary of a [`MarkerError`], for the transaction
/// coordinator's results; same Kafka codes as the [`MarkerError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MarkerFailure {
    /// A negative producer id: INVALID_REQUEST (42).
    #[error("invalid producer id {0} for a transaction marker")]
    InvalidProducerId(i64),
    /// The producer state refuses the marker (INVALID_PRODUCER_EPOCH (47),
    /// TRANSACTION_COORDINATOR_FENCED (52)).
    #[error(transparent)]
    Producer(ProducerStateError),
    /// The marker could not be appended.
    #[error(transparent)]
    Append(AppendFailure),
    /// This broker does not lead the partition: NOT_LEADER_OR_FOLLOWER (6).
    #[error("this broker does not lead the partition")]
    NotLeader,
}

impl From<&MarkerError> for MarkerFailure {
    fn from(e: &MarkerError) -> MarkerFailure {
        match e {
            MarkerError::InvalidProducerId(id) => MarkerFailure::InvalidProducerId(*id),
            MarkerError::Producer(p) => MarkerFailure::Producer(*p),
            MarkerError::Append(a) => MarkerFailure::Append(a.into()),
            MarkerError::NotLeader => MarkerFailure::NotLeader,
        }
    }
}

/// Why a partition verification (KIP-890: Produce with a transactional
/// batch, TxnOffsetCommit) could not be asked of the transaction
/// coordinator, or what it answered. Each variant's code is the one Kafka's
/// brokers hand their partition leader; the leader's answer to the client
/// is `crate::error::produce_verification_code` /
/// `txn_offset_commit_verification_code` of it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VerificationError {
    /// The transactional id's coordinator cannot be named:
    /// COORDINATOR_NOT_AVAILABLE (15).
    #[error("cannot verify the partition: {0}")]
    CoordinatorLookup(#[from] CoordinatorLookupError),
    /// The coordinator is another broker: its answer's code, or, when it
    /// could not be asked, NETWORK_EXCEPTION (13).
    #[error("cannot verify the partition with the coordinator: {0}")]
    Remote(#[from] super::remote::RemoteError),
    /// The coordinator, on a shard of this broker, refused: the
    /// refusal's code (see [`TxnRefusal`]).
    #[error("the coordinator refused: {0}")]
    Coordinator(TxnRefusal),
    /// The coordinator's shard did not answer: the mesh error's code
    /// (REQUEST_TIMED_OUT (7): whether it was asked is not known).
    #[error("the coordinator's shard did not answer: {0}")]
    Unanswered(crate::mesh::ShardError),
    /// No way to the coordinator is installed (start-up not finished), or
    /// it gave no answer for the partition: COORDINATOR_NOT_AVAILABLE (15).
    #[error("no transaction coordinator answered")]
    NoVerifier,
}

/// Why a coordinator's load of its partition stopped early
/// (`shard::internal::replay_log`); logged, never answered to a client.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// Locating or reading a chunk failed.
    #[error("{0}")]
    Storage(#[from] StorageError),
    /// A chunk's bytes could not be read off the reactor.
    #[error("reading a chunk: {0}")]
    Io(#[from] std::io::Error),
    /// A stored batch did not decode.
    #[error("decoding a chunk: {0}")]
    Decode(#[from] crate::storage::recompress::RecompressError),
}

/// Why the transaction coordinator says a partition may not join a
/// producer's transaction (KIP-890's check), as the partition's owner
/// needs it: the coordinator (`txn`, above the shard) turns its own error
/// into one of these, each with its Kafka code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TxnRefusal {
    /// INVALID_PRODUCER_ID_MAPPING (49): the transactional id is unknown or
    /// has another producer id.
    #[error("the producer id is not the transactional id's")]
    InvalidProducerIdMapping,
    /// INVALID_PRODUCER_EPOCH (47): another producer epoch is current.
    #[error("the producer epoch is not current")]
    InvalidProducerEpoch,
    /// INVALID_TXN_STATE (48): the coordinator's state refuses the operation.
    #[error("the partition is not in an open transaction")]
    InvalidTxnState,
    /// TRANSACTION_ABORTABLE (120): the partition is not in the producer's
    /// open transaction (none is open, or it is open without it).
    #[error("the partition is not in the producer's open transaction")]
    TransactionAbortable,
    /// CONCURRENT_TRANSACTIONS (51): the transaction is being ended.
    #[error("the transaction is being ended")]
    ConcurrentTransactions,
    /// COORDINATOR_LOAD_IN_PROGRESS (14): the coordinator is still loading
    /// the id's `__transaction_state` partition (retriable).
    #[error("the coordinator is loading")]
    CoordinatorLoadInProgress,
    /// NOT_COORDINATOR (16): another broker coordinates the id now.
    #[error("another broker coordinates the transactional id")]
    NotCoordinator,
    /// COORDINATOR_NOT_AVAILABLE (15): the coordinator could not answer.
    #[error("the coordinator is not available")]
    CoordinatorNotAvailable,
}

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

/// What the client of a transactional request can take from its
/// transaction check (KIP-890), by request version, as Kafka 4.4's
/// `AddPartitionsToTxnManager` names it: whether the coordinator adds the
/// partition (transactions v2) or only verifies it, and whether the client
/// knows TRANSACTION_ABORTABLE (120).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionSupportedOperation {
    /// Verify only; TRANSACTION_ABORTABLE is answered INVALID_TXN_STATE
    /// (Produce v0–v10, TxnOffsetCommit v0–v3).
    DefaultError,
    /// Verify only; the client takes TRANSACTION_ABORTABLE (Produce v11,
    /// TxnOffsetCommit v4; KIP-890 part 1).
    GenericErrorSupported,
    /// The coordinator adds the partition (Produce v12+, TxnOffsetCommit
    /// v5+; KIP-890 part 2).
    AddPartition,
}

impl TransactionSupportedOperation {
    /// The operation of a Produce request of `version`.
    pub fn for_produce(version: i16) -> Self {
        match version {
            i16::MIN..=10 => Self::DefaultError,
            11 => Self::GenericErrorSupported,
            12..=i16::MAX => Self::AddPartition,
        }
    }

    /// The operation of a TxnOffsetCommit request of `version`.
    pub fn for_txn_offset_commit(version: i16) -> Self {
        match version {
            i16::MIN..=3 => Self::DefaultError,
            4 => Self::GenericErrorSupported,
            5..=i16::MAX => Self::AddPartition,
        }
    }

    /// Whether the coordinator adds the partition (transactions v2).
    pub fn adds_partition(self) -> bool {
        self == Self::AddPartition
    }
}
