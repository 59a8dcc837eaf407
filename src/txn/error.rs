//! Errors of the transaction coordinator. Every coordinator function answers
//! with a [`TxnError`]; `impl KafkaCode for TxnError` in `src/error.rs` maps
//! each variant to the Kafka error code the client sees. Per-version
//! downgrades (PRODUCER_FENCED answered as INVALID_PRODUCER_EPOCH to older
//! clients, KIP-588) stay in the handlers.

use crate::mesh::ShardError;

use super::records::TxnStatus;

/// The request a coordinator error answers, for the messages and for
/// INVALID_TXN_STATE's context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnOperation {
    /// InitProducerId with a transactional id.
    InitProducerId,
    /// AddPartitionsToTxn / AddOffsetsToTxn.
    AddPartitions,
    /// AddPartitionsToTxn v4+ `verify_only`, Produce and TxnOffsetCommit
    /// asking whether a partition is in the open transaction (KIP-890).
    VerifyPartition,
    /// EndTxn with `committed = true`.
    Commit,
    /// EndTxn with `committed = false`.
    Abort,
}

/// Why a control marker could not be written to one partition of a
/// transaction.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MarkerCause {
    /// The partition refused the marker, or its append failed.
    #[error("{0}")]
    Partition(crate::shard::error::MarkerFailure),
    /// The partition's owner shard could not be reached.
    #[error("{0}")]
    Shard(ShardError),
    /// The partition's leader is another broker, which did not write it.
    #[error("{0}")]
    Remote(crate::shard::remote::RemoteError),
}

/// Why no producer id could be handed out (maps to
/// COORDINATOR_NOT_AVAILABLE (15) through [`TxnError::ProducerIdAllocation`]):
/// the active controller did not give this broker a block
/// (AllocateProducerIds).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProducerIdAllocationCause {
    /// The controller could not be reached or refused.
    #[error("{0}")]
    Controller(crate::cluster::error::ControllerCallError),
}

/// An error of the transaction coordinator (KIP-98). Each variant names the
/// Kafka error code it maps to.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TxnError {
    /// CONCURRENT_TRANSACTIONS (51): another operation on this transactional
    /// id is in flight (`state` is `None`), or the previous transaction's
    /// markers are still being written (`state` is its Prepare state).
    /// Clients retry.
    #[error("concurrent transactions (state {state:?})")]
    ConcurrentTransactions {
        /// The id's state when it decides the answer; `None` for the busy mark.
        state: Option<TxnStatus>,
    },
    /// PRODUCER_FENCED (90): the producer's epoch is not the id's current
    /// one (a newer producer with the same transactional id exists).
    #[error("producer {producer_id} epoch {epoch} is fenced (current epoch {current_epoch})")]
    ProducerFenced {
        /// Producer id of the request.
        producer_id: i64,
        /// Producer epoch of the request.
        epoch: i16,
        /// The id's current producer epoch.
        current_epoch: i16,
    },
    /// INVALID_PRODUCER_EPOCH (47): the epoch check of a partition
    /// verification (Produce, TxnOffsetCommit, AddPartitionsToTxn
    /// `verify_only`; KIP-890), where Kafka's brokers answer this code.
    #[error("producer {producer_id} epoch {epoch} is not current (current epoch {current_epoch})")]
    InvalidProducerEpoch {
        /// Producer id of the request.
        producer_id: i64,
        /// Producer epoch of the request.
        epoch: i16,
        /// The id's current producer epoch.
        current_epoch: i16,
    },
    /// INVALID_PRODUCER_ID_MAPPING (49): the transactional id is unknown
    /// (`current` is `None`) or maps to another producer id.
    #[error("producer id {producer_id} is not the transactional id's (current {current:?})")]
    InvalidProducerIdMapping {
        /// Producer id of the request.
        producer_id: i64,
        /// The id's producer id, `None` when the id is unknown.
        current: Option<i64>,
    },
    /// INVALID_TXN_STATE (48): the request does not fit the id's state
    /// (EndTxn with no open transaction, the other outcome of a decided
    /// one, a partition not in the open transaction, …).
    #[error("{operation:?} is invalid in state {state:?}")]
    InvalidTxnState {
        /// The request.
        operation: TxnOperation,
        /// The id's state.
        state: TxnStatus,
    },
    /// TRANSACTION_ABORTABLE (120): a verification (KIP-890) found the
    /// partition outside the producer's open transaction (none is open, or
    /// it is open without the partition), as Kafka 4.4's coordinator answers
    /// AddPartitionsToTxn `verify_only`. A partition leader answers clients
    /// that do not know the code INVALID_TXN_STATE (48) instead (Produce
    /// v0–v10, TxnOffsetCommit v0–v3; `crate::error`).
    #[error("the partition is not in the producer's open transaction (state {state:?})")]
    TransactionAbortable {
        /// The id's state.
        state: TxnStatus,
    },
    /// INVALID_TRANSACTION_TIMEOUT (50): `transaction.timeout.ms` is not in
    /// 1..=`transaction.max.timeout.ms`.
    #[error("transaction timeout {timeout_ms} ms is not in 1..={max_timeout_ms}")]
    InvalidTransactionTimeout {
        /// The producer's `transaction.timeout.ms`.
        timeout_ms: i32,
        /// `transaction.max.timeout.ms`.
        max_timeout_ms: i32,
    },
    /// TRANSACTIONAL_ID_NOT_FOUND (105): DescribeTransactions of an id no
    /// coordinator knows (or one being expired, state Dead).
    #[error("transactional id not found")]
    TransactionalIdNotFound,
    /// UNKNOWN_TOPIC_OR_PARTITION (3): AddPartitionsToTxn or WriteTxnMarkers
    /// names a partition this broker does not have.
    #[error("unknown topic or partition {topic}-{partition}")]
    UnknownTopicOrPartition {
        /// Topic.
        topic: String,
        /// Partition index.
        partition: i32,
    },
    /// OPERATION_NOT_ATTEMPTED (55): another partition of the same
    /// transactional id in AddPartitionsToTxn was refused (an unknown one),
    /// so nothing of it was added.
    #[error("not attempted: another partition of the request was refused")]
    OperationNotAttempted,
    /// NOT_COORDINATOR (16): another broker leads the id's
    /// `__transaction_state` partition.
    #[error("another broker coordinates this transactional id")]
    NotCoordinator,
    /// COORDINATOR_LOAD_IN_PROGRESS (14): the id's `__transaction_state`
    /// partition is still being loaded here (retriable).
    #[error("the transaction coordinator is loading this transactional id's partition")]
    CoordinatorLoadInProgress,
    /// COORDINATOR_NOT_AVAILABLE (15): the id's `__transaction_state`
    /// partition is not open on this shard.
    #[error("__transaction_state partition {partition} is not on this shard")]
    StatePartitionNotHere {
        /// The `__transaction_state` partition of the id.
        partition: i32,
    },
    /// COORDINATOR_NOT_AVAILABLE (15): the coordinator shard of the id could
    /// not be reached.
    #[error("coordinator shard: {0}")]
    CoordinatorUnavailable(ShardError),
    /// COORDINATOR_NOT_AVAILABLE (15): no producer id could be allocated
    /// (the controller's producer id block could not be persisted, or the
    /// controller shard could not be reached).
    #[error("cannot allocate a producer id: {cause}")]
    ProducerIdAllocation {
        /// Why.
        cause: ProducerIdAllocationCause,
    },
    /// The append to `__transaction_state` failed; maps to the failure's
    /// code (KAFKA_STORAGE_ERROR (56) on I/O).
    #[error("append to __transaction_state partition {partition} failed: {cause}")]
    StateAppend {
        /// The `__transaction_state` partition.
        partition: i32,
        /// Why the append failed.
        cause: crate::shard::error::AppendFailure,
    },
    /// A COMMIT/ABORT marker could not be written to a partition of the
    /// transaction; maps to the cause's code. Clients never see it: the
    /// decision is durable and the coordinator keeps retrying.
    #[error("marker for {topic}-{partition}: {cause}")]
    MarkerWrite {
        /// Topic of the partition.
        topic: String,
        /// Partition index.
        partition: i32,
        /// Why.
        cause: MarkerCause,
    },
}
