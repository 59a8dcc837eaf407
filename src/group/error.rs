//! The errors the group coordinator answers, typed. Every group domain
//! function gives a [`GroupError`] (or one per member / partition); the
//! handlers turn it into the Kafka error code through
//! `crate::error::KafkaCode` (the mapping lives in `src/error.rs`).

/// An error of the classic group protocol or of committed offsets. Each
/// variant names the Kafka error code it maps to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    /// UNKNOWN_MEMBER_ID (25): the member id is not (or no longer) in the
    /// group, or the group is in a state where no member can be known.
    #[error("unknown member id {member_id:?}")]
    UnknownMemberId {
        /// The member id the request named.
        member_id: String,
    },
    /// ILLEGAL_GENERATION (22): the request's generation is not the group's.
    #[error("illegal generation {generation} (group is at {current})")]
    IllegalGeneration {
        /// Generation the request carried.
        generation: i32,
        /// The group's generation (-1 when the group does not exist).
        current: i32,
    },
    /// REBALANCE_IN_PROGRESS (27): the group is rebalancing; the member must
    /// rejoin.
    #[error("rebalance in progress")]
    RebalanceInProgress,
    /// MEMBER_ID_REQUIRED (79): JoinGroup v4+ from an unknown member gets an
    /// id and must join again with it (KIP-394).
    #[error("member id required; rejoin as {member_id}")]
    MemberIdRequired {
        /// The id handed out, pending until the member joins with it.
        member_id: String,
    },
    /// FENCED_INSTANCE_ID (82): a newer member holds this
    /// `group.instance.id` (KIP-345).
    #[error("group.instance.id {group_instance_id:?} is held by another member")]
    FencedInstanceId {
        /// The static membership id of the request (`None` when the member
        /// is static and the request named no instance id).
        group_instance_id: Option<String>,
    },
    /// GROUP_MAX_SIZE_REACHED (81): `group.max.size` members already.
    #[error("group has {max_size} members (group.max.size)")]
    GroupMaxSizeReached {
        /// `group.max.size`.
        max_size: usize,
    },
    /// INCONSISTENT_GROUP_PROTOCOL (23): the member's protocol type or
    /// protocols do not match the group's.
    #[error("inconsistent group protocol")]
    InconsistentGroupProtocol,
    /// UNKNOWN_TOPIC_OR_PARTITION (3): an offset commit for a partition the
    /// cluster does not have.
    #[error("unknown topic or partition {topic}-{partition}")]
    UnknownTopicOrPartition {
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
    },
    /// NON_EMPTY_GROUP (68): the group still has members (DeleteGroups,
    /// OffsetDelete of a non-consumer group).
    #[error("group is not empty")]
    NonEmptyGroup,
    /// GROUP_ID_NOT_FOUND (69): no such group (DeleteGroups, OffsetDelete).
    #[error("group not found")]
    GroupIdNotFound,
    /// COORDINATOR_LOAD_IN_PROGRESS (14): the group's `__consumer_offsets`
    /// partition is still being loaded. Not answered today (partitions are
    /// loaded before the shard serves requests); kept for leadership moves.
    #[error("coordinator load in progress")]
    CoordinatorLoadInProgress,
    /// COORDINATOR_NOT_AVAILABLE (15): the group is Dead (deleted while the
    /// request was on its way), or its `__consumer_offsets` partition is not
    /// on this shard.
    #[error("coordinator not available")]
    CoordinatorNotAvailable,
    /// INVALID_GROUP_ID (24): an empty group id.
    #[error("invalid (empty) group id")]
    InvalidGroupId,
    /// INVALID_SESSION_TIMEOUT (26): outside
    /// [`group.min.session.timeout.ms`, `group.max.session.timeout.ms`].
    #[error("session timeout {session_timeout_ms} ms outside [{min_ms}, {max_ms}]")]
    InvalidSessionTimeout {
        /// The member's `session.timeout.ms`.
        session_timeout_ms: i32,
        /// `group.min.session.timeout.ms`.
        min_ms: i32,
        /// `group.max.session.timeout.ms`.
        max_ms: i32,
    },
    /// OFFSET_METADATA_TOO_LARGE (12): commit metadata longer than
    /// `offset.metadata.max.bytes`.
    #[error("offset metadata of {size} bytes exceeds {max} (offset.metadata.max.bytes)")]
    OffsetMetadataTooLarge {
        /// Size of the metadata (bytes).
        size: usize,
        /// `offset.metadata.max.bytes`.
        max: usize,
    },
    /// GROUP_SUBSCRIBED_TO_TOPIC (86): OffsetDelete of a topic a member
    /// still subscribes to (KIP-496).
    #[error("group is subscribed to topic {topic}")]
    GroupSubscribedToTopic {
        /// Topic.
        topic: String,
    },
    /// UNSTABLE_OFFSET_COMMIT (88): OffsetFetch with `require_stable` while
    /// a transaction holds uncommitted offsets of the partition (KIP-447).
    #[error("an open transaction holds uncommitted offsets")]
    UnstableOffsetCommit,
    /// PRODUCER_FENCED (90): TxnOffsetCommit with a producer epoch older than
    /// the one the `__consumer_offsets` partition knows (handlers answer
    /// INVALID_PRODUCER_EPOCH below the versions that know it, KIP-588).
    #[error("producer {producer_id} epoch {producer_epoch} is fenced")]
    ProducerFenced {
        /// Producer id.
        producer_id: i64,
        /// The request's (stale) producer epoch.
        producer_epoch: i16,
    },
    /// INVALID_TXN_STATE (48): the transaction ended (its marker was written)
    /// between AddOffsetsToTxn's verification and the TxnOffsetCommit
    /// (KIP-890).
    #[error("transaction of producer {producer_id} is no longer open")]
    InvalidTxnState {
        /// Producer id.
        producer_id: i64,
    },
    /// FENCED_MEMBER_EPOCH (110): a consumer-protocol member's epoch is
    /// not the one the coordinator holds (KIP-848); it must rejoin with 0.
    #[error("member {member_id} epoch {epoch} is fenced (the group holds {expected})")]
    FencedMemberEpoch {
        /// The member.
        member_id: String,
        /// The epoch it sent.
        epoch: i32,
        /// The epoch the coordinator expects.
        expected: i32,
    },
    /// STALE_MEMBER_EPOCH (113): an offset commit with an epoch older than
    /// the member's (KIP-848, KIP-1251).
    #[error("member {member_id} epoch {epoch} is stale (the group holds {expected})")]
    StaleMemberEpoch {
        /// The member.
        member_id: String,
        /// The epoch it sent.
        epoch: i32,
        /// The epoch the coordinator expects.
        expected: i32,
    },
    /// UNSUPPORTED_ASSIGNOR (112): a server assignor not in
    /// `group.consumer.assignors`.
    #[error("ServerAssignor {assignor} is not supported. Supported assignors: {supported}.")]
    UnsupportedAssignor {
        /// The name asked for.
        assignor: String,
        /// The configured assignors, joined by ", " (Kafka's message).
        supported: String,
    },
    /// UNRELEASED_INSTANCE_ID (111): a static member joins while the
    /// member with its instance id has not left.
    #[error("instance id {instance_id} is still used by another member")]
    UnreleasedInstanceId {
        /// The instance id.
        instance_id: String,
    },
    /// INVALID_REGULAR_EXPRESSION (128): a subscription regex that does not
    /// parse (RE2 syntax).
    #[error("invalid regular expression {regex:?}: {reason}")]
    InvalidRegularExpression {
        /// The regex.
        regex: String,
        /// Why.
        reason: String,
    },
    /// INVALID_REQUEST (42): a ConsumerGroupHeartbeat missing what its
    /// epoch requires (member id, rebalance timeout, subscription).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The append to `__consumer_offsets` failed; answered with the
    /// failure's code (KAFKA_STORAGE_ERROR (56) on I/O).
    #[error("append to __consumer_offsets failed: {0}")]
    Append(crate::shard::error::AppendFailure),
}

impl GroupError {
    /// UNKNOWN_MEMBER_ID for `member_id`.
    pub fn unknown_member(member_id: &str) -> GroupError {
        GroupError::UnknownMemberId {
            member_id: member_id.to_string(),
        }
    }
}
