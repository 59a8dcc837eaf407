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

/// A Produce partition's answer keeps the code of what failed; the owner
/// shard's silence is REQUEST_TIMED_OUT (the outcome is unknown).
#[test]
fn append_error_codes() {
    use crate::shard::owner::produce::AppendError as A;
    let table: Vec<(A, i16)> = vec![
        (A::Refused(ProduceError::NoBatch), 2),
        (A::Write(io()), 56),
        (A::Flush(FlushError::Abandoned), 56),
        (
            A::Replication(crate::shard::error::ReplicationWaitError::TimedOut),
            7,
        ),
        (
            A::NotInTransaction {
                topic: Arc::from("t"),
                partition: 0,
                producer_id: 1,
                epoch: 0,
                source: crate::shard::error::VerificationError::NoVerifier,
                operation: crate::shard::error::TransactionSupportedOperation::DefaultError,
            },
            19,
        ),
        (A::Unanswered(crate::mesh::ShardError::Unavailable(1)), 7),
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
            InternalAppendError::Replication(crate::shard::error::ReplicationWaitError::TimedOut),
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
