//! The share-partition settings of a group (KIP-932), in one place under
//! Kafka's config names: the group's `share.*` configs over the broker's
//! `group.share.*` and the broker's `group.share.partition.max.record.locks`
//! (made by `group::share_group_coordinator::share_partition_settings`
//! from the metadata image every shard holds, so no cross-shard call; the
//! ShareFetch handler sends them with each request to the share-partitions).

use super::partition::ShareConfig;

/// Where a new share-partition starts (`share.auto.offset.reset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoOffsetReset {
    /// `latest`: at the partition's high watermark (new records only).
    Latest,
    /// `earliest`: at the log start offset.
    Earliest,
    /// `by_duration:<ISO-8601 duration>`: at the first batch whose
    /// timestamp is at most this long (ms) before the share-partition is
    /// created, or the high watermark when there is none.
    ByDuration(i64),
}

/// What a group's share-partitions run with.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupShareSettings {
    /// The window's settings (`share.record.lock.duration.ms`,
    /// `share.delivery.count.limit`,
    /// `group.share.partition.max.record.locks`).
    pub window: ShareConfig,
    /// `share.auto.offset.reset`: where a new share-partition starts.
    pub auto_offset_reset: AutoOffsetReset,
    /// `share.isolation.level` = `read_committed`: only records below the
    /// last stable offset are acquired, and those of aborted transactions
    /// are archived, never delivered (as Kafka 4.4 answers).
    pub read_committed: bool,
    /// The group's dead-letter queue (KIP-1191).
    pub dead_letter: DeadLetterSettings,
}

/// A share group's dead-letter queue settings (KIP-1191 group configs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeadLetterSettings {
    /// `errors.deadletterqueue.topic.name`: the topic, empty for none.
    pub topic: String,
    /// `errors.deadletterqueue.copy.record.enable`: dead-letter records
    /// carry the source record's key and value (else both null).
    pub copy_record: bool,
}
