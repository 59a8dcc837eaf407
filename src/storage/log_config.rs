//! The settings of a partition log ([`LogConfig`]) and the timestamp type
//! of its batches ([`TimestampType`]). They sit below the log: batches,
//! segments and recovery read them without depending on
//! [`PartitionLog`](super::PartitionLog).

/// Which timestamp a batch carries (Kafka `log.message.timestamp.type` /
/// topic `message.timestamp.type`; attributes bit 3 of a batch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimestampType {
    /// The producer's record timestamps are kept.
    CreateTime,
    /// The broker stamps each batch's max timestamp with its append time (ms).
    LogAppendTime,
}

/// Per-partition log settings, with Kafka's config names and defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogConfig {
    /// Max `.log` size in bytes before rolling (`log.segment.bytes` /
    /// `segment.bytes`, default 1073741824). Capped at `i32::MAX`.
    pub segment_bytes: u64,
    /// Max segment age in ms before rolling (`log.roll.ms` / `segment.ms`,
    /// default 604800000 = 7 days); None disables time-based rolling.
    pub segment_ms: Option<u64>,
    /// Bytes between `.index` entries (`log.index.interval.bytes`, default 4096).
    pub index_interval_bytes: u32,
    /// Max bytes of each index file (`log.index.size.max.bytes` /
    /// `segment.index.bytes`, default 10485760); the segment rolls when full.
    pub segment_index_bytes: u32,
    /// CreateTime or LogAppendTime (`log.message.timestamp.type`, default CreateTime).
    pub message_timestamp_type: TimestampType,
    /// Largest random amount (ms) by which a segment rolls on age before
    /// `segment_ms` (`segment.jitter.ms`, default 0).
    pub segment_jitter_ms: u64,
    /// Reserve `segment_bytes` of disk for each new segment (`preallocate`,
    /// default false).
    pub preallocate: bool,
}

impl LogConfig {
    /// A new segment's roll jitter (ms): uniform in
    /// `[0, min(segment_jitter_ms, segment_ms))`, 0 without jitter, as
    /// Kafka's `LogConfig.randomSegmentJitter`.
    pub fn random_segment_jitter(&self) -> i64 {
        let bound = match self.segment_ms {
            Some(ms) => self.segment_jitter_ms.min(ms),
            None => self.segment_jitter_ms,
        };
        if bound == 0 {
            return 0;
        }
        let r = (uuid::Uuid::new_v4().as_u128() >> 64) as u64;
        i64::try_from(r % bound).unwrap_or(0)
    }
}

impl Default for LogConfig {
    /// Gives Kafka's broker defaults.
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1_073_741_824,
            segment_ms: Some(604_800_000),
            segment_jitter_ms: 0,
            preallocate: false,
            index_interval_bytes: 4096,
            segment_index_bytes: 10_485_760,
            message_timestamp_type: TimestampType::CreateTime,
        }
    }
}
