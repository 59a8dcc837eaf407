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
    ]);
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
        // The local coordinator's own answer is kept.
        (
            VerificationError::Coordinator(TxnRefusal::InvalidProducerEpoch),
            47,
        ),
        // The coordinator's shard is gone: the mesh's REQUEST_TIMED_OUT.
        (VerificationError::Unanswered(ShardError::Unavailable(1)), 7),
        (VerificationError::NoVerifier, 48),
    ];
    crate::error::code_tables::table(&table);
}
