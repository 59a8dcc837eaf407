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
        (
            G::FencedMemberEpoch {
                member_id: s(),
                epoch: 3,
                expected: 4,
            },
            110,
        ),
        (
            G::StaleMemberEpoch {
                member_id: s(),
                epoch: 3,
                expected: 4,
            },
            113,
        ),
        (
            G::UnsupportedAssignor {
                assignor: s(),
                supported: s(),
            },
            112,
        ),
        (G::UnreleasedInstanceId { instance_id: s() }, 111),
        (
            G::InvalidRegularExpression {
                regex: s(),
                reason: s(),
            },
            128,
        ),
        (G::InvalidRequest(s()), 42),
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
