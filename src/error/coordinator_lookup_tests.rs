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
            CoordinatorLookupError::UnsupportedKeyType { key_type: 3 },
            42,
        ),
        (CoordinatorLookupError::MalformedShareKey, 42),
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

#[test]
fn txn_refusal_codes() {
    use crate::shard::error::TxnRefusal as R;
    crate::error::code_tables::table(&[
        (R::InvalidProducerIdMapping, 49),
        (R::InvalidProducerEpoch, 47),
        (R::InvalidTxnState, 48),
        (R::ConcurrentTransactions, 51),
        (R::CoordinatorLoadInProgress, 14),
        (R::NotCoordinator, 16),
        (R::CoordinatorNotAvailable, 15),
        (R::TransactionAbortable, 120),
    ]);
}

/// A verification whose coordinator cannot be named answers
/// COORDINATOR_NOT_AVAILABLE, one whose coordinator could not be asked
/// NETWORK_EXCEPTION (Kafka's `AddPartitionsToTxnManager`); the partition
/// leader turns both into NOT_ENOUGH_REPLICAS for the producer
/// (`produce_verification_code`).
#[test]
fn verification_error_codes() {
    let topic = "__transaction_state";
    let table: Vec<(VerificationError, i16)> = vec![
        (CoordinatorLookupError::TopicMissing { topic }.into(), 15),
        (
            crate::shard::remote::RemoteError::Unreachable {
                broker: 2,
                why: "refused".into(),
            }
            .into(),
            13,
        ),
        (crate::shard::remote::RemoteError::NotInstalled.into(), 13),
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
            15,
        ),
        (
            CoordinatorLookupError::ControllerUnavailable {
                topic,
                source: ControllerCallError::Shard(ShardError::Unavailable(0)),
            }
            .into(),
            15,
        ),
        // The local coordinator's own answer is kept.
        (
            VerificationError::Coordinator(TxnRefusal::InvalidProducerEpoch),
            47,
        ),
        // The coordinator's shard is gone: the mesh's REQUEST_TIMED_OUT.
        (VerificationError::Unanswered(ShardError::Unavailable(1)), 7),
        (VerificationError::NoVerifier, 15),
    ];
    crate::error::code_tables::table(&table);
}

/// What a producer sees of a failed transaction check, per request
/// version, as Kafka 4.4's partition leader translates it.
#[test]
fn produce_and_txn_offset_commit_translate_the_check_per_version() {
    use crate::shard::error::TransactionSupportedOperation as Op;
    let abortable = VerificationError::Coordinator(TxnRefusal::TransactionAbortable);
    let concurrent = VerificationError::Coordinator(TxnRefusal::ConcurrentTransactions);
    let loading = VerificationError::Coordinator(TxnRefusal::CoordinatorLoadInProgress);
    let moved = VerificationError::Coordinator(TxnRefusal::NotCoordinator);
    let lookup: VerificationError = CoordinatorLookupError::TopicMissing {
        topic: "__transaction_state",
    }
    .into();
    let unreachable: VerificationError = crate::shard::remote::RemoteError::Unreachable {
        broker: 2,
        why: "refused".into(),
    }
    .into();
    let fenced = VerificationError::Coordinator(TxnRefusal::InvalidProducerEpoch);
    let remote_abortable: VerificationError = crate::shard::remote::RemoteError::Refused {
        broker: 2,
        topic: "t".into(),
        partition: 0,
        code: 120,
    }
    .into();
    // A coordinator on another broker answers a stale epoch with
    // PRODUCER_FENCED; the producer gets INVALID_PRODUCER_EPOCH, as from a
    // coordinator on this broker (`fenced`).
    let remote_fenced: VerificationError = crate::shard::remote::RemoteError::Refused {
        broker: 2,
        topic: "t".into(),
        partition: 0,
        code: 90,
    }
    .into();
    // (error, Produce v10, v11, v12, TxnOffsetCommit v3, v4, v5)
    let table = [
        (&abortable, [48, 120, 120, 48, 120, 120]),
        (&remote_abortable, [48, 120, 120, 48, 120, 120]),
        (&concurrent, [19, 19, 51, 51, 51, 51]),
        (&loading, [19, 19, 19, 14, 14, 14]),
        (&moved, [19, 19, 19, 16, 16, 16]),
        (&lookup, [19, 19, 19, 15, 15, 15]),
        (&unreachable, [19, 19, 19, 13, 13, 13]),
        (&fenced, [47, 47, 47, 47, 47, 47]),
        (&remote_fenced, [47, 47, 47, 47, 47, 47]),
    ];
    for (e, want) in table {
        let got = [
            produce_verification_code(e, Op::for_produce(10)),
            produce_verification_code(e, Op::for_produce(11)),
            produce_verification_code(e, Op::for_produce(12)),
            txn_offset_commit_verification_code(e, Op::for_txn_offset_commit(3)),
            txn_offset_commit_verification_code(e, Op::for_txn_offset_commit(4)),
            txn_offset_commit_verification_code(e, Op::for_txn_offset_commit(5)),
        ];
        assert_eq!(got, want, "{e:?}");
    }
}
