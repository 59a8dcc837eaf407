//! The settings of the group and transaction coordinators (`group.*`,
//! `offsets.*`, `transaction.*` keys), with Kafka's names and defaults.
//! They live in the config layer so that [`crate::config::Config`] needs
//! nothing above it; `group` and `txn` re-export them.

/// Group coordinator settings, with Kafka's names and defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupConfig {
    /// `group.min.session.timeout.ms` (default 6000).
    pub min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms` (default 1800000).
    pub max_session_timeout_ms: i32,
    /// `group.initial.rebalance.delay.ms` (default 3000).
    pub initial_rebalance_delay_ms: i32,
    /// `group.max.size` (default 2147483647, Kafka's `Integer.MAX_VALUE`).
    pub max_size: usize,
    /// `offsets.topic.num.partitions` (default 50).
    pub offsets_topic_partitions: i32,
    /// `offsets.topic.segment.bytes` (default 104857600).
    pub offsets_topic_segment_bytes: u64,
    /// `offsets.retention.minutes` in ms (default 7 days).
    pub offsets_retention_ms: i64,
    /// `offsets.retention.check.interval.ms` (default 600000).
    pub offsets_retention_check_interval_ms: u64,
    /// `offset.metadata.max.bytes` (default 4096).
    pub offset_metadata_max_bytes: usize,
    /// `group.consumer.heartbeat.interval.ms` (default 5000): the interval
    /// given to consumer-protocol members (KIP-848).
    pub consumer_heartbeat_interval_ms: i32,
    /// `group.consumer.session.timeout.ms` (default 45000): a
    /// consumer-protocol member not heard from for this long is fenced.
    pub consumer_session_timeout_ms: i32,
    /// `group.consumer.max.size` (default 2147483647): the most members of
    /// a consumer group.
    pub consumer_max_size: usize,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            min_session_timeout_ms: 6_000,
            max_session_timeout_ms: 1_800_000,
            initial_rebalance_delay_ms: 3_000,
            max_size: i32::MAX as usize,
            offsets_topic_partitions: 50,
            offsets_topic_segment_bytes: 100 * 1024 * 1024,
            offsets_retention_ms: 7 * 24 * 3_600_000,
            offsets_retention_check_interval_ms: 600_000,
            offset_metadata_max_bytes: 4096,
            consumer_heartbeat_interval_ms: 5_000,
            consumer_session_timeout_ms: 45_000,
            consumer_max_size: i32::MAX as usize,
        }
    }
}

/// Transaction coordinator settings, with Kafka's names and defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct TxnConfig {
    /// `transaction.state.log.num.partitions` (default 50).
    pub state_log_partitions: i32,
    /// `transaction.state.log.segment.bytes` (default 104857600).
    pub state_log_segment_bytes: u64,
    /// `transaction.max.timeout.ms`: the largest `transaction.timeout.ms` a
    /// producer may ask for (default 900000); larger gets
    /// INVALID_TRANSACTION_TIMEOUT.
    pub max_timeout_ms: i32,
    /// `transactional.id.expiration.ms`: a transactional id with no
    /// transaction for this long is forgotten (default 604800000 = 7 days).
    pub id_expiration_ms: i64,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`: how
    /// often ongoing transactions past their timeout are aborted (default
    /// 10000).
    pub abort_timed_out_interval_ms: u64,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms`: how often
    /// expired transactional ids are removed (default 3600000).
    pub remove_expired_interval_ms: u64,
}

impl Default for TxnConfig {
    fn default() -> Self {
        TxnConfig {
            state_log_partitions: 50,
            state_log_segment_bytes: 100 * 1024 * 1024,
            max_timeout_ms: 900_000,
            id_expiration_ms: 7 * 24 * 3_600_000,
            abort_timed_out_interval_ms: 10_000,
            remove_expired_interval_ms: 3_600_000,
        }
    }
}
