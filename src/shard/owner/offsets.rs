//! ListOffsets on the partition's owner: the offset a special timestamp
//! names (latest, earliest, earliest-local, latest-tiered, max-timestamp) or
//! the first offset whose timestamp is at or after a given one, as Kafka's
//! `UnifiedLog.fetchOffsetByTimestamp` answers. [`list_offset`] wraps its own
//! cross-shard call; the handler decodes, routes by topic and encodes.
//!
//! Timestamp and max-timestamp answers must lie below the last fetchable
//! offset (the LSO under READ_COMMITTED, the high watermark otherwise); an
//! answer at or past it is no offset. The answer's leader epoch is the
//! partition's for latest, earliest and earliest-local, the found batch's
//! `partitionLeaderEpoch` for timestamp and max-timestamp lookups.

use std::rc::Rc;
use std::sync::Arc;

use kafka_protocol::records::TimestampType as RecordTimestampType;

use crate::cluster::leadership::{LeadershipError, Requester};
use crate::mesh::ShardError;
use crate::shard::partition::{Partition, READ_COMMITTED};
use crate::shard::Shard;
use crate::storage::StorageError;

/// What a ListOffsets partition asks for: Kafka's special timestamps or a
/// timestamp (ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpec {
    /// -1: the last fetchable offset (high watermark, or the LSO under
    /// READ_COMMITTED, KIP-98).
    Latest,
    /// -2: the log start offset.
    Earliest,
    /// -3 (KIP-734, v7+): the first record holding the largest timestamp.
    MaxTimestamp,
    /// -4 (KIP-405, v8+): the log start offset (every segment is local).
    EarliestLocal,
    /// -5 (KIP-1005, v9+): no offset (nothing is tiered).
    LatestTiered,
    /// ≥ 0: the first offset whose timestamp is at or after this one (ms).
    Timestamp(i64),
}

impl OffsetSpec {
    /// Takes a request's `timestamp`; gives what it asks for, or None for a
    /// special timestamp this broker does not know (e.g. -6, earliest
    /// pending upload, KIP-1023, v11).
    pub fn from_wire(ts: i64) -> Option<OffsetSpec> {
        match ts {
            t if t >= 0 => Some(OffsetSpec::Timestamp(t)),
            -1 => Some(OffsetSpec::Latest),
            -2 => Some(OffsetSpec::Earliest),
            -3 => Some(OffsetSpec::MaxTimestamp),
            -4 => Some(OffsetSpec::EarliestLocal),
            -5 => Some(OffsetSpec::LatestTiered),
            _ => None,
        }
    }

    /// The first ListOffsets version that may ask for it (older versions get
    /// UNSUPPORTED_VERSION for that partition, as Kafka answers).
    pub fn first_version(self) -> i16 {
        match self {
            OffsetSpec::Latest | OffsetSpec::Earliest | OffsetSpec::Timestamp(_) => 0,
            OffsetSpec::MaxTimestamp => 7,
            OffsetSpec::EarliestLocal => 8,
            OffsetSpec::LatestTiered => 9,
        }
    }
}

/// An offset found: offset, its record's timestamp (ms; -1 for latest,
/// earliest and earliest-local) and the leader epoch of the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FoundOffset {
    /// Offset.
    pub offset: i64,
    /// Timestamp (ms), -1 when the lookup has none.
    pub timestamp: i64,
    /// Leader epoch (see the module documentation).
    pub leader_epoch: i32,
}

/// Why a ListOffsets partition gets no answer; each maps to its Kafka code
/// in `crate::error`.
#[derive(Debug, thiserror::Error)]
pub enum ListOffsetsError {
    /// Not the leader here, or the `current_leader_epoch` is fenced or
    /// unknown (KIP-320): NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH,
    /// UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION.
    #[error(transparent)]
    Leadership(#[from] LeadershipError),
    /// The log could not be read: the storage error's code.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The owner shard did not answer: the mesh error's code.
    #[error(transparent)]
    Shard(#[from] ShardError),
}

/// Takes the partition, what is asked, the isolation level (1:
/// READ_COMMITTED) and the `current_leader_epoch` (None: not checked); asks
/// the partition's owner shard and gives the offset found (None: no offset,
/// Kafka's -1/-1) or why not.
pub async fn list_offset(
    shard: &Rc<Shard>,
    topic: Arc<str>,
    partition: i32,
    spec: OffsetSpec,
    isolation_level: i8,
    current_leader_epoch: Option<i32>,
) -> Result<Option<FoundOffset>, ListOffsetsError> {
    let owner = shard.owner(&topic, partition);
    shard
        .invoke_on(owner, move |s| async move {
            lookup(
                &s,
                &topic,
                partition,
                spec,
                isolation_level,
                current_leader_epoch,
            )
        })
        .await?
}

/// Runs on the owner: answers one partition, whose `current_leader_epoch`
/// is fenced first (KIP-320).
fn lookup(
    shard: &Shard,
    topic: &str,
    partition: i32,
    spec: OffsetSpec,
    isolation_level: i8,
    current_leader_epoch: Option<i32>,
) -> Result<Option<FoundOffset>, ListOffsetsError> {
    let part = shard.serving(topic, partition, Requester::Client, current_leader_epoch)?;
    let epoch = part.leader_epoch();
    let last_fetchable = if isolation_level == READ_COMMITTED {
        part.last_stable_offset()
    } else {
        part.high_watermark()
    };
    let at = |offset| FoundOffset {
        offset,
        timestamp: -1,
        leader_epoch: epoch,
    };
    let found = match spec {
        OffsetSpec::Latest => return Ok(Some(at(last_fetchable))),
        OffsetSpec::Earliest | OffsetSpec::EarliestLocal => {
            return Ok(Some(at(part.log_start_offset())))
        }
        OffsetSpec::LatestTiered => return Ok(None),
        OffsetSpec::MaxTimestamp => match part.max_timestamp_offset()? {
            None => None,
            Some((last_offset, max_ts)) => {
                // The batch holding the largest timestamp ends at `last_offset`;
                // find the first record in it carrying that timestamp.
                let exact = first_record_at_or_after(&part, last_offset, max_ts, true, -1)?;
                let (offset, timestamp, leader_epoch) = match exact {
                    InBatch::Found(o, t, e) => (o, t, e),
                    InBatch::NoneBefore(_, e) => (last_offset, max_ts, e),
                    InBatch::Undecodable => (last_offset, max_ts, -1),
                };
                Some(FoundOffset {
                    offset,
                    timestamp,
                    leader_epoch,
                })
            }
        },
        OffsetSpec::Timestamp(t) => match part.offset_for_timestamp(t)? {
            None => None,
            Some((base_offset, batch_max_ts)) => {
                // Kafka's rule: the first record at or after the log start
                // offset whose timestamp is >= t. Batches left empty by the
                // cleaner, and records below the log start (DeleteRecords
                // inside a batch), are passed over.
                let start = part.log_start_offset();
                let mut at = base_offset.max(start);
                loop {
                    match first_record_at_or_after(&part, at, t, false, start)? {
                        InBatch::Found(o, ts, e) => break Some((o, ts, e)),
                        InBatch::NoneBefore(next, _) if next < last_fetchable => at = next,
                        InBatch::NoneBefore(..) => break None,
                        InBatch::Undecodable => break Some((at, batch_max_ts, -1)),
                    }
                }
                .map(|(offset, timestamp, leader_epoch)| FoundOffset {
                    offset,
                    timestamp,
                    leader_epoch,
                })
            }
        },
    };
    Ok(found.filter(|f| f.offset < last_fetchable))
}

/// What one batch holds for a timestamp lookup.
enum InBatch {
    /// (offset, timestamp) of the first matching record, and the batch's
    /// partition leader epoch.
    Found(i64, i64, i32),
    /// No record of the batch matches; the next batch starts at this
    /// offset. With the batch's partition leader epoch.
    NoneBefore(i64, i32),
    /// The batch could not be decoded.
    Undecodable,
}

/// Record-level answer inside one batch: decodes the batch containing
/// `offset` (decompressing it with the protocol crate's codecs, as Kafka does
/// for this lookup) and gives the first record at or after `min_offset`
/// whose timestamp is >= `ts` (or == `ts` with `exact`). LogAppendTime
/// batches answer with the batch's timestamp for every record.
fn first_record_at_or_after(
    part: &Partition,
    offset: i64,
    ts: i64,
    exact: bool,
    min_offset: i64,
) -> Result<InBatch, StorageError> {
    let read = part.read(offset, 1, true)?;
    let mut bytes = Vec::with_capacity(read.bytes as usize);
    for r in &read.regions {
        let start = bytes.len();
        bytes.resize(start + r.len as usize, 0);
        std::os::unix::fs::FileExt::read_exact_at(&*r.file, &mut bytes[start..], r.position)?;
    }
    let Ok(header) = crate::storage::BatchHeader::parse(&bytes) else {
        log::warn!("ListOffsets: no batch header at offset {offset}");
        return Ok(InBatch::Undecodable);
    };
    let mut buf = bytes::Bytes::from(bytes);
    let set = match crate::storage::records::decode_batch(&mut buf) {
        Ok(set) => set,
        Err(e) => {
            log::warn!("ListOffsets: cannot decode batch at offset {offset}: {e}");
            return Ok(InBatch::Undecodable);
        }
    };
    Ok(set
        .records
        .iter()
        .find(|r| {
            r.offset >= min_offset
                && (r.timestamp_type == RecordTimestampType::LogAppend
                    || if exact {
                        r.timestamp == ts
                    } else {
                        r.timestamp >= ts
                    })
        })
        .map_or(
            InBatch::NoneBefore(header.next_offset(), header.partition_leader_epoch),
            |r| InBatch::Found(r.offset, r.timestamp, header.partition_leader_epoch),
        ))
}
