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
    /// `group.consumer.min.session.timeout.ms` (default 45000): the
    /// smallest `consumer.session.timeout.ms` a group config may set.
    pub consumer_min_session_timeout_ms: i32,
    /// `group.consumer.max.session.timeout.ms` (default 60000): the
    /// largest `consumer.session.timeout.ms` a group config may set.
    pub consumer_max_session_timeout_ms: i32,
    /// `group.consumer.min.heartbeat.interval.ms` (default 5000): the
    /// smallest `consumer.heartbeat.interval.ms` a group config may set.
    pub consumer_min_heartbeat_interval_ms: i32,
    /// `group.consumer.max.heartbeat.interval.ms` (default 15000): the
    /// largest `consumer.heartbeat.interval.ms` a group config may set.
    pub consumer_max_heartbeat_interval_ms: i32,
    /// `group.consumer.assignment.interval.ms` (default 1000, KIP-1263):
    /// the least time between two target assignments of a consumer group.
    pub consumer_assignment_interval_ms: i32,
    /// `group.consumer.min.assignment.interval.ms` (default 0): the
    /// smallest `consumer.assignment.interval.ms` a group config may set.
    pub consumer_min_assignment_interval_ms: i32,
    /// `group.consumer.max.assignment.interval.ms` (default 15000): the
    /// largest `consumer.assignment.interval.ms` a group config may set.
    pub consumer_max_assignment_interval_ms: i32,
    /// `group.consumer.migration.policy` (default `bidirectional`): which
    /// online conversions between a classic group and a consumer group
    /// (KIP-848) are allowed.
    pub consumer_migration_policy: MigrationPolicy,
    /// `group.share.heartbeat.interval.ms` (default 5000, at least 1): the
    /// heartbeat interval given to share group members (KIP-932).
    pub share_heartbeat_interval_ms: i32,
    /// `group.share.min.heartbeat.interval.ms` (default 5000): the smallest
    /// `share.heartbeat.interval.ms` a group config may set.
    pub share_min_heartbeat_interval_ms: i32,
    /// `group.share.max.heartbeat.interval.ms` (default 15000): the largest
    /// `share.heartbeat.interval.ms` a group config may set.
    pub share_max_heartbeat_interval_ms: i32,
    /// `group.share.session.timeout.ms` (default 45000): a share group
    /// member not heard from for this long is fenced.
    pub share_session_timeout_ms: i32,
    /// `group.share.min.session.timeout.ms` (default 45000): the smallest
    /// `share.session.timeout.ms` a group config may set.
    pub share_min_session_timeout_ms: i32,
    /// `group.share.max.session.timeout.ms` (default 60000): the largest
    /// `share.session.timeout.ms` a group config may set.
    pub share_max_session_timeout_ms: i32,
    /// `group.share.max.size` (default 200, 1–1000): the most members of a
    /// share group; a join beyond it gets GROUP_MAX_SIZE_REACHED.
    pub share_max_size: usize,
    /// `group.share.assignors` (default `simple`, the only one served).
    pub share_assignors: Vec<String>,
    /// `group.share.record.lock.duration.ms` (default 30000, 1000–3600000):
    /// how long a share group member holds the records it acquired.
    pub share_record_lock_duration_ms: i32,
    /// `group.share.min.record.lock.duration.ms` (default 15000,
    /// 1000–30000): the smallest `share.record.lock.duration.ms` a group
    /// config may set.
    pub share_min_record_lock_duration_ms: i32,
    /// `group.share.max.record.lock.duration.ms` (default 60000,
    /// 30000–3600000): the largest `share.record.lock.duration.ms` a group
    /// config may set.
    pub share_max_record_lock_duration_ms: i32,
    /// `group.share.delivery.count.limit` (default 5, 2–10): deliveries of a
    /// record to a share group before it is archived.
    pub share_delivery_count_limit: i32,
    /// `group.share.min.delivery.count.limit` (default 2, 2–5): the smallest
    /// `share.delivery.count.limit` a group config may set.
    pub share_min_delivery_count_limit: i32,
    /// `group.share.max.delivery.count.limit` (default 10, 5–25): the largest
    /// `share.delivery.count.limit` a group config may set.
    pub share_max_delivery_count_limit: i32,
    /// `group.share.partition.max.record.locks` (default 2000, 100–10000):
    /// the most records in flight in one share-partition.
    pub share_partition_max_record_locks: i32,
    /// `group.share.max.share.sessions` (default 2000, at least 1): the most
    /// share sessions (ShareFetch) one broker holds.
    pub share_max_share_sessions: i32,
    /// `errors.deadletterqueue.topic.name.prefix` (default `dlq.`,
    /// KIP-1191): the prefix a share group's dead-letter queue topic must
    /// have; empty: any name.
    pub dlq_topic_name_prefix: String,
    /// `errors.deadletterqueue.auto.create.topics.enable` (default false,
    /// KIP-1191): whether a missing dead-letter queue topic is created on
    /// its first write.
    pub dlq_auto_create_topics_enable: bool,
}

/// `group.consumer.migration.policy`: whether a live classic group may be
/// converted to a consumer group when a consumer-protocol member joins it
/// (upgrade), and a consumer group back to a classic group when its last
/// consumer-protocol member leaves (downgrade). Empty groups are replaced
/// whatever the policy, as Kafka replaces them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrationPolicy {
    /// `disabled`: neither.
    Disabled,
    /// `upgrade`: classic → consumer only.
    Upgrade,
    /// `downgrade`: consumer → classic only.
    Downgrade,
    /// `bidirectional`: both (Kafka 4.4's default).
    Bidirectional,
}

impl MigrationPolicy {
    /// The config value (`disabled`, `upgrade`, `downgrade`, `bidirectional`).
    pub fn as_str(&self) -> &'static str {
        match self {
            MigrationPolicy::Disabled => "disabled",
            MigrationPolicy::Upgrade => "upgrade",
            MigrationPolicy::Downgrade => "downgrade",
            MigrationPolicy::Bidirectional => "bidirectional",
        }
    }

    /// The policy named `value` (one of [`MigrationPolicy::as_str`]'s).
    pub fn parse(value: &str) -> Option<MigrationPolicy> {
        [
            MigrationPolicy::Disabled,
            MigrationPolicy::Upgrade,
            MigrationPolicy::Downgrade,
            MigrationPolicy::Bidirectional,
        ]
        .into_iter()
        .find(|p| p.as_str() == value)
    }

    /// Whether a classic group may become a consumer group.
    pub fn upgrades(&self) -> bool {
        matches!(
            self,
            MigrationPolicy::Upgrade | MigrationPolicy::Bidirectional
        )
    }

    /// Whether a consumer group may become a classic group.
    pub fn downgrades(&self) -> bool {
        matches!(
            self,
            MigrationPolicy::Downgrade | MigrationPolicy::Bidirectional
        )
    }
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
            consumer_min_session_timeout_ms: 45_000,
            consumer_max_session_timeout_ms: 60_000,
            consumer_min_heartbeat_interval_ms: 5_000,
            consumer_max_heartbeat_interval_ms: 15_000,
            consumer_assignment_interval_ms: 1_000,
            consumer_min_assignment_interval_ms: 0,
            consumer_max_assignment_interval_ms: 15_000,
            consumer_migration_policy: MigrationPolicy::Bidirectional,
            share_heartbeat_interval_ms: 5_000,
            share_min_heartbeat_interval_ms: 5_000,
            share_max_heartbeat_interval_ms: 15_000,
            share_session_timeout_ms: 45_000,
            share_min_session_timeout_ms: 45_000,
            share_max_session_timeout_ms: 60_000,
            share_max_size: 200,
            share_assignors: vec!["simple".to_string()],
            share_record_lock_duration_ms: 30_000,
            share_min_record_lock_duration_ms: 15_000,
            share_max_record_lock_duration_ms: 60_000,
            share_delivery_count_limit: 5,
            share_min_delivery_count_limit: 2,
            share_max_delivery_count_limit: 10,
            share_partition_max_record_locks: 2_000,
            share_max_share_sessions: 2_000,
            dlq_topic_name_prefix: "dlq.".to_string(),
            dlq_auto_create_topics_enable: false,
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

/// Share coordinator settings (KIP-932), with Kafka 4.4's names and
/// defaults (`share.coordinator.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct ShareCoordinatorConfig {
    /// `share.coordinator.state.topic.num.partitions` (default 50).
    pub state_topic_partitions: i32,
    /// `share.coordinator.state.topic.replication.factor` (default 3; a
    /// single-voter cluster uses at most its broker count).
    pub state_topic_replication_factor: i16,
    /// `share.coordinator.state.topic.min.isr` (default 2).
    pub state_topic_min_isr: i16,
    /// `share.coordinator.state.topic.segment.bytes` (default 104857600).
    pub state_topic_segment_bytes: u64,
    /// `share.coordinator.snapshot.update.records.per.snapshot`: ShareUpdate
    /// records written for a share-partition before the next write is a
    /// ShareSnapshot again (default 500, 0–500).
    pub snapshot_update_records_per_snapshot: i32,
}

impl Default for ShareCoordinatorConfig {
    fn default() -> Self {
        ShareCoordinatorConfig {
            state_topic_partitions: 50,
            state_topic_replication_factor: 3,
            state_topic_min_isr: 2,
            state_topic_segment_bytes: 100 * 1024 * 1024,
            snapshot_update_records_per_snapshot: 500,
        }
    }
}

/// How a setting must relate to another (Kafka's `Utils.require` texts).
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// value >= other: "must be greater than or equal to".
    AtLeast,
    /// value <= other: "must be less than or equal to".
    AtMost,
    /// value < other: "must be less than".
    Below,
}

impl GroupConfig {
    /// Checks the share group settings against each other once all are
    /// applied, as Kafka 4.4's `ShareGroupConfig` and
    /// `GroupCoordinatorConfig` do at start-up (each key's own range is
    /// checked when it is set): a value between its `min.` and `max.` keys
    /// (heartbeat interval, session timeout, record lock duration,
    /// delivery count limit), the heartbeat interval below the session
    /// timeout, and `group.share.max.share.sessions` at least
    /// `group.share.max.size`. Errors with Kafka's text, naming the first
    /// key and its value.
    pub fn validate_share(&self) -> Result<(), super::ConfigError> {
        let size = i64::try_from(self.share_max_size).unwrap_or(i64::MAX);
        use Rule::{AtLeast, AtMost, Below};
        // (key, value, Kafka's rule, other key, other value).
        let rules: [(&str, i64, Rule, &str, i64); 12] = [
            (
                "group.share.max.heartbeat.interval.ms",
                self.share_max_heartbeat_interval_ms.into(),
                AtLeast,
                "group.share.min.heartbeat.interval.ms",
                self.share_min_heartbeat_interval_ms.into(),
            ),
            (
                "group.share.heartbeat.interval.ms",
                self.share_heartbeat_interval_ms.into(),
                AtLeast,
                "group.share.min.heartbeat.interval.ms",
                self.share_min_heartbeat_interval_ms.into(),
            ),
            (
                "group.share.heartbeat.interval.ms",
                self.share_heartbeat_interval_ms.into(),
                AtMost,
                "group.share.max.heartbeat.interval.ms",
                self.share_max_heartbeat_interval_ms.into(),
            ),
            (
                "group.share.max.session.timeout.ms",
                self.share_max_session_timeout_ms.into(),
                AtLeast,
                "group.share.min.session.timeout.ms",
                self.share_min_session_timeout_ms.into(),
            ),
            (
                "group.share.session.timeout.ms",
                self.share_session_timeout_ms.into(),
                AtLeast,
                "group.share.min.session.timeout.ms",
                self.share_min_session_timeout_ms.into(),
            ),
            (
                "group.share.session.timeout.ms",
                self.share_session_timeout_ms.into(),
                AtMost,
                "group.share.max.session.timeout.ms",
                self.share_max_session_timeout_ms.into(),
            ),
            (
                "group.share.heartbeat.interval.ms",
                self.share_heartbeat_interval_ms.into(),
                Below,
                "group.share.session.timeout.ms",
                self.share_session_timeout_ms.into(),
            ),
            (
                "group.share.max.delivery.count.limit",
                self.share_max_delivery_count_limit.into(),
                AtLeast,
                "group.share.delivery.count.limit",
                self.share_delivery_count_limit.into(),
            ),
            (
                "group.share.delivery.count.limit",
                self.share_delivery_count_limit.into(),
                AtLeast,
                "group.share.min.delivery.count.limit",
                self.share_min_delivery_count_limit.into(),
            ),
            (
                "group.share.record.lock.duration.ms",
                self.share_record_lock_duration_ms.into(),
                AtLeast,
                "group.share.min.record.lock.duration.ms",
                self.share_min_record_lock_duration_ms.into(),
            ),
            (
                "group.share.max.record.lock.duration.ms",
                self.share_max_record_lock_duration_ms.into(),
                AtLeast,
                "group.share.record.lock.duration.ms",
                self.share_record_lock_duration_ms.into(),
            ),
            (
                "group.share.max.share.sessions",
                self.share_max_share_sessions.into(),
                AtLeast,
                "group.share.max.size",
                size,
            ),
        ];
        for (key, value, rule, other, other_value) in rules {
            let (holds, text) = match rule {
                AtLeast => (value >= other_value, "must be greater than or equal to"),
                AtMost => (value <= other_value, "must be less than or equal to"),
                Below => (value < other_value, "must be less than"),
            };
            if !holds {
                return Err(super::invalid(
                    key,
                    &value.to_string(),
                    &format!("{key} {text} {other}"),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod share_rule_tests {
    use super::GroupConfig;

    #[test]
    fn share_settings_are_checked_against_each_other_as_kafka() {
        assert!(GroupConfig::default().validate_share().is_ok());
        let refused = |f: &dyn Fn(&mut GroupConfig)| {
            let mut g = GroupConfig::default();
            f(&mut g);
            g.validate_share().unwrap_err().to_string()
        };
        let e = refused(&|g| g.share_record_lock_duration_ms = 10_000);
        assert!(
            e.ends_with("group.share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"),
            "{e}"
        );
        let e = refused(&|g| {
            g.share_delivery_count_limit = 9;
            g.share_max_delivery_count_limit = 5;
        });
        assert!(
            e.ends_with("group.share.max.delivery.count.limit must be greater than or equal to group.share.delivery.count.limit"),
            "{e}"
        );
        let e = refused(&|g| {
            g.share_min_session_timeout_ms = 60_000;
            g.share_max_session_timeout_ms = 50_000;
        });
        assert!(
            e.ends_with("group.share.max.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms"),
            "{e}"
        );
        let e = refused(&|g| {
            g.share_min_heartbeat_interval_ms = 1_000;
            g.share_min_session_timeout_ms = 1_000;
            g.share_heartbeat_interval_ms = 5_000;
            g.share_session_timeout_ms = 5_000;
        });
        assert!(
            e.ends_with("group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms"),
            "{e}"
        );
        let e = refused(&|g| g.share_max_share_sessions = 100);
        assert!(
            e.ends_with("group.share.max.share.sessions must be greater than or equal to group.share.max.size"),
            "{e}"
        );
    }
}
