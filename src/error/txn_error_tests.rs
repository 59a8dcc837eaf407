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
            TxnError::TransactionAbortable {
                state: TxnStatus::Ongoing,
            },
            120,
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
        (TxnError::CoordinatorLoadInProgress, 14),
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
