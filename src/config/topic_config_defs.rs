//! The table of Kafka 4.x topic configs: name, broker synonyms (in Kafka's
//! order of precedence, with the default Kafka gives each broker key), type,
//! topic default, allowed values, a description and what Fjord does with it.
//! Types, defaults, ranges and synonyms are Kafka 4.4's (checked against a
//! Kafka 4.4 broker's DescribeConfigs and CreateTopics answers); the
//! descriptions are this project's own.

use super::topic_defs::{Allowed, ConfigDef, ConfigType as T, Support, Synonym, Unit};

const I32MAX: i64 = i32::MAX as i64;
const I64MAX: &str = "9223372036854775807";

const fn syn(key: &'static str, default: Option<&'static str>) -> Synonym {
    Synonym {
        key,
        default,
        unit: Unit::Same,
    }
}

const fn syn_unit(key: &'static str, default: Option<&'static str>, unit: Unit) -> Synonym {
    Synonym { key, default, unit }
}

/// Tiered storage is not built: the setting is stored and described, and
/// does nothing until it is.
const TIERED: Support = Support::Stored("tiered storage is not built yet");
/// One node: there is no replication to throttle, elect or wait for.
const SINGLE_NODE: Support = Support::Stored("meaningful with replication, not built yet");

/// Every topic config of Kafka 4.x, sorted by name.
pub const TOPIC_CONFIGS: &[ConfigDef] = &[
    ConfigDef { name: "cleanup.policy", synonyms: &[syn("log.cleanup.policy", Some("delete"))], ty: T::List, default: "delete", allowed: Allowed::ListOf(&["delete", "compact"]), support: Support::Enforced, doc: "delete: remove old segments by retention.ms/retention.bytes; compact: keep the latest record per key; both: compact, then delete by retention." },
    ConfigDef { name: "compression.gzip.level", synonyms: &[syn("compression.gzip.level", Some("-1"))], ty: T::Int, default: "-1", allowed: Allowed::GzipLevel, support: Support::Enforced, doc: "The level (1-9, or -1 for zlib's default 6) used when the broker compresses batches with gzip (compression.type=gzip)." },
    ConfigDef { name: "compression.lz4.level", synonyms: &[syn("compression.lz4.level", Some("9"))], ty: T::Int, default: "9", allowed: Allowed::Range(1, 17), support: Support::Enforced, doc: "The level (1-17) used when the broker compresses batches with lz4 (compression.type=lz4)." },
    ConfigDef { name: "compression.type", synonyms: &[syn("compression.type", Some("producer"))], ty: T::String, default: "producer", allowed: Allowed::OneOf(&["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"]), support: Support::Enforced, doc: "The codec of stored batches: producer keeps each batch as the producer sent it; any other value makes the broker recompress batches sent with another codec (uncompressed stores them uncompressed)." },
    ConfigDef { name: "compression.zstd.level", synonyms: &[syn("compression.zstd.level", Some("3"))], ty: T::Int, default: "3", allowed: Allowed::Range(-131072, 22), support: Support::Enforced, doc: "The level (-131072 to 22) used when the broker compresses batches with zstd (compression.type=zstd)." },
    ConfigDef { name: "delete.retention.ms", synonyms: &[syn("log.cleaner.delete.retention.ms", Some("86400000"))], ty: T::Long, default: "86400000", allowed: Allowed::Range(0, i64::MAX), support: Support::Enforced, doc: "How long (ms) a tombstone is kept after compaction reached it, so that consumers reading from the start see the delete." },
    ConfigDef { name: "errors.deadletterqueue.group.enable", synonyms: &[], ty: T::Boolean, default: "false", allowed: Allowed::Bool, support: Support::Enforced, doc: "Whether share groups may write undeliverable records to this topic as their dead-letter queue (KIP-1191): a group's dead-letter records are written only to a topic with true." },
    ConfigDef { name: "file.delete.delay.ms", synonyms: &[syn("log.segment.delete.delay.ms", Some("60000"))], ty: T::Long, default: "60000", allowed: Allowed::Range(0, i64::MAX), support: Support::Enforced, doc: "Deleted segments are first renamed *.deleted and removed from disk after this delay (ms)." },
    ConfigDef { name: "flush.messages", synonyms: &[syn("log.flush.interval.messages", Some(I64MAX))], ty: T::Long, default: I64MAX, allowed: Allowed::Range(1, i64::MAX), support: Support::Enforced, doc: "fdatasync the log after this many messages; acks=all waits for it (see docs/durability.md). The default leaves flushing to the operating system." },
    ConfigDef { name: "flush.ms", synonyms: &[syn("log.flush.interval.ms", None), syn("log.flush.scheduler.interval.ms", Some(I64MAX))], ty: T::Long, default: I64MAX, allowed: Allowed::Range(0, i64::MAX), support: Support::Enforced, doc: "fdatasync the log at most this long (ms) after an append. The default leaves flushing to the operating system." },
    ConfigDef { name: "follower.replication.throttled.replicas", synonyms: &[], ty: T::List, default: "", allowed: Allowed::ThrottledReplicas, support: SINGLE_NODE, doc: "Replicas whose replication is throttled on the follower side: `*` or a list of partitionId:brokerId." },
    ConfigDef { name: "index.interval.bytes", synonyms: &[syn("log.index.interval.bytes", Some("4096"))], ty: T::Int, default: "4096", allowed: Allowed::Range(0, I32MAX), support: Support::Enforced, doc: "Bytes appended between two entries of the sparse offset index." },
    ConfigDef { name: "leader.replication.throttled.replicas", synonyms: &[], ty: T::List, default: "", allowed: Allowed::ThrottledReplicas, support: SINGLE_NODE, doc: "Replicas whose replication is throttled on the leader side: `*` or a list of partitionId:brokerId." },
    ConfigDef { name: "local.retention.bytes", synonyms: &[syn("log.local.retention.bytes", Some("-2"))], ty: T::Long, default: "-2", allowed: Allowed::Range(-2, i64::MAX), support: TIERED, doc: "With tiered storage, the local share of a partition kept before old segments are deleted locally (bytes); -2 uses retention.bytes." },
    ConfigDef { name: "local.retention.ms", synonyms: &[syn("log.local.retention.ms", Some("-2"))], ty: T::Long, default: "-2", allowed: Allowed::Range(-2, i64::MAX), support: TIERED, doc: "With tiered storage, how long a segment is kept locally (ms); -2 uses retention.ms." },
    ConfigDef { name: "max.compaction.lag.ms", synonyms: &[syn("log.cleaner.max.compaction.lag.ms", Some(I64MAX))], ty: T::Long, default: I64MAX, allowed: Allowed::Range(1, i64::MAX), support: Support::Enforced, doc: "A record is compacted at most this long (ms) after it was written, whatever the dirty ratio." },
    ConfigDef { name: "max.decompressed.message.bytes", synonyms: &[syn("max.decompressed.message.bytes", Some("2147483639"))], ty: T::Int, default: "2147483639", allowed: Allowed::Range(1, I32MAX), support: Support::Enforced, doc: "The largest decompressed record (bytes) accepted where the broker decompresses a batch (recompression to the topic's codec); larger records are rejected with INVALID_RECORD." },
    ConfigDef { name: "max.message.bytes", synonyms: &[syn("message.max.bytes", Some("1048588"))], ty: T::Int, default: "1048588", allowed: Allowed::Range(0, I32MAX), support: Support::Enforced, doc: "The largest record batch accepted (bytes, after the producer's compression)." },
    ConfigDef { name: "message.timestamp.after.max.ms", synonyms: &[syn("log.message.timestamp.after.max.ms", Some("3600000"))], ty: T::Long, default: "3600000", allowed: Allowed::Range(0, i64::MAX), support: Support::Enforced, doc: "With CreateTime, a batch holding a record whose timestamp is more than this (ms) after the broker's clock is rejected with INVALID_TIMESTAMP. Ignored with LogAppendTime." },
    ConfigDef { name: "message.timestamp.before.max.ms", synonyms: &[syn("log.message.timestamp.before.max.ms", Some(I64MAX))], ty: T::Long, default: I64MAX, allowed: Allowed::Range(0, i64::MAX), support: Support::Enforced, doc: "With CreateTime, a batch holding a record whose timestamp is more than this (ms) before the broker's clock is rejected with INVALID_TIMESTAMP. Ignored with LogAppendTime." },
    ConfigDef { name: "message.timestamp.type", synonyms: &[syn("log.message.timestamp.type", Some("CreateTime"))], ty: T::String, default: "CreateTime", allowed: Allowed::OneOf(&["CreateTime", "LogAppendTime"]), support: Support::Enforced, doc: "Keep the producer's timestamps (CreateTime) or stamp batches with the broker's clock when they are appended (LogAppendTime)." },
    ConfigDef { name: "min.cleanable.dirty.ratio", synonyms: &[syn("log.cleaner.min.cleanable.ratio", Some("0.5"))], ty: T::Double, default: "0.5", allowed: Allowed::Ratio(0.0, 1.0), support: Support::Enforced, doc: "Compact when the share of the log not yet compacted exceeds this ratio." },
    ConfigDef { name: "min.compaction.lag.ms", synonyms: &[syn("log.cleaner.min.compaction.lag.ms", Some("0"))], ty: T::Long, default: "0", allowed: Allowed::Range(0, i64::MAX), support: Support::Enforced, doc: "A record stays uncompacted for at least this long (ms) after it was written." },
    ConfigDef { name: "min.insync.replicas", synonyms: &[syn("min.insync.replicas", Some("1"))], ty: T::Int, default: "1", allowed: Allowed::Range(1, I32MAX), support: Support::Enforced, doc: "Replicas that must hold a record before an acks=all produce is answered; with more than the one replica of a single node, acks=all produce gets NOT_ENOUGH_REPLICAS." },
    ConfigDef { name: "preallocate", synonyms: &[syn("log.preallocate", Some("false"))], ty: T::Boolean, default: "false", allowed: Allowed::Bool, support: Support::Enforced, doc: "Reserve segment.bytes of disk for a new segment when it is created (fallocate without changing the file size); the unused rest is released when the segment is rolled or closed." },
    ConfigDef { name: "remote.copy.lag.bytes", synonyms: &[syn("log.remote.copy.lag.bytes", Some("-1"))], ty: T::Long, default: "-1", allowed: Allowed::Range(-1, i64::MAX), support: TIERED, doc: "With tiered storage, the newer local data (bytes) after which a closed segment may be copied to remote storage; -1 derives it from local.retention.bytes, 0 copies at once." },
    ConfigDef { name: "remote.copy.lag.ms", synonyms: &[syn("log.remote.copy.lag.ms", Some("0"))], ty: T::Long, default: "0", allowed: Allowed::Range(-1, i64::MAX), support: TIERED, doc: "With tiered storage, the age (ms) after which a closed segment may be copied to remote storage; -1 derives it from local.retention.ms, 0 copies at once." },
    ConfigDef { name: "remote.log.copy.disable", synonyms: &[], ty: T::Boolean, default: "false", allowed: Allowed::Bool, support: TIERED, doc: "With tiered storage, stop copying segments to remote storage and keep the tiered data read-only." },
    ConfigDef { name: "remote.log.delete.on.disable", synonyms: &[], ty: T::Boolean, default: "false", allowed: Allowed::Bool, support: TIERED, doc: "With tiered storage, delete the tiered data when remote.storage.enable is turned off." },
    ConfigDef { name: "remote.storage.enable", synonyms: &[], ty: T::Boolean, default: "false", allowed: Allowed::Bool, support: Support::RefuseEnabling("Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."), doc: "Tier the topic's closed segments to remote storage. Refused (INVALID_CONFIG) while the broker has no tiered storage, as Kafka refuses it when remote storage is not configured." },
    ConfigDef { name: "retention.bytes", synonyms: &[syn("log.retention.bytes", Some("-1"))], ty: T::Long, default: "-1", allowed: Allowed::Range(-1, i64::MAX), support: Support::Enforced, doc: "Delete the oldest closed segments while the partition is larger than this (bytes); -1 for no size limit." },
    ConfigDef { name: "retention.ms", synonyms: &[syn("log.retention.ms", None), syn_unit("log.retention.minutes", None, Unit::Minutes), syn_unit("log.retention.hours", Some("168"), Unit::Hours)], ty: T::Long, default: "604800000", allowed: Allowed::Range(-1, i64::MAX), support: Support::Enforced, doc: "Delete closed segments whose newest record is older than this (ms); -1 keeps them forever." },
    ConfigDef { name: "segment.bytes", synonyms: &[syn("log.segment.bytes", Some("1073741824"))], ty: T::Int, default: "1073741824", allowed: Allowed::Range(14, I32MAX), support: Support::Enforced, doc: "Roll a new segment when the active one reaches this size (bytes)." },
    ConfigDef { name: "segment.index.bytes", synonyms: &[syn("log.index.size.max.bytes", Some("10485760"))], ty: T::Int, default: "10485760", allowed: Allowed::Range(4, I32MAX), support: Support::Enforced, doc: "The largest offset index of a segment (bytes); a full index rolls the segment." },
    ConfigDef { name: "segment.jitter.ms", synonyms: &[syn("log.roll.jitter.ms", None), syn_unit("log.roll.jitter.hours", Some("0"), Unit::Hours)], ty: T::Long, default: "0", allowed: Allowed::Range(0, i64::MAX), support: Support::Enforced, doc: "Each segment rolls on age up to this much (ms, drawn at random per segment, below segment.ms) before segment.ms, so that partitions created together do not all roll at once." },
    ConfigDef { name: "segment.ms", synonyms: &[syn("log.roll.ms", None), syn_unit("log.roll.hours", Some("168"), Unit::Hours)], ty: T::Long, default: "604800000", allowed: Allowed::Range(1, i64::MAX), support: Support::Enforced, doc: "Roll a new segment when the active one is this old (ms), so that retention and compaction can act on it." },
    ConfigDef { name: "unclean.leader.election.enable", synonyms: &[syn("unclean.leader.election.enable", Some("false"))], ty: T::Boolean, default: "false", allowed: Allowed::Bool, support: Support::Enforced, doc: "Whether a replica outside the ISR and the ELR may become leader as a last resort, at the risk of losing records (the controller elects it when nothing else is eligible)." },
];
