//! ListOffsets (key 2), v1–v10: earliest (-2, the log start offset), latest
//! (-1, the high watermark; the last stable offset under READ_COMMITTED,
//! `isolation_level` 1, v2+, KIP-98), max-timestamp (-3, KIP-734, v7+),
//! earliest-local (-4, KIP-405, v8+: the log start offset, as every segment
//! is local), latest-tiered (-5, KIP-1005, v9+: -1, nothing is tiered) and by
//! timestamp (the first offset whose timestamp is >= the one given; -1/-1
//! when none). A special timestamp newer than the request version, or an
//! unknown one, gets UNSUPPORTED_VERSION for that partition, as Kafka
//! answers. v10's `timeout_ms` (KIP-1075, for lookups in remote storage) has
//! nothing to wait for: every answer is local and immediate. As in Kafka, timestamp and max-timestamp answers must lie
//! below the last fetchable offset (the LSO under READ_COMMITTED, the high
//! watermark otherwise); an answer at or past it is -1/-1.
//!
//! Only the partition's leader answers (NOT_LEADER_OR_FOLLOWER otherwise);
//! a `current_leader_epoch` (v4+, KIP-320) older than the partition's gets
//! FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH (-1: not checked).
//! The answer's `leader_epoch` is the partition's leader epoch for latest,
//! earliest and earliest-local (Kafka gives its leader-epoch cache's entry
//! for earliest, the same epoch while the leader never changed), the found
//! batch's `partitionLeaderEpoch` for timestamp and max-timestamp lookups.

use std::rc::Rc;
use std::sync::Arc;

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};

use super::{respond, HandlerResult};
use crate::cluster::leadership::Requester;
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::partition::{Partition, READ_COMMITTED};
use crate::shard::Shard;
use crate::storage::StorageError;
use kafka_protocol::records::{RecordBatchDecoder, TimestampType as RecordTimestampType};

/// Special timestamps of ListOffsets.
const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
const LATEST_TIERED: i64 = -5;

/// The first ListOffsets version that may carry special timestamp `ts`
/// (`None`: not a timestamp this broker knows, e.g. -6, earliest pending
/// upload, which needs v11).
fn first_version_for(ts: i64) -> Option<i16> {
    match ts {
        t if t >= 0 => Some(0),
        LATEST | EARLIEST => Some(0),
        MAX_TIMESTAMP => Some(7),
        EARLIEST_LOCAL => Some(8),
        LATEST_TIERED => Some(9),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy)]
struct Answer {
    error_code: i16,
    timestamp: i64,
    offset: i64,
    /// The leader epoch of the answer (v4+): the partition's for latest,
    /// earliest and earliest-local, the found batch's for timestamp and
    /// max-timestamp lookups; -1 with no offset.
    leader_epoch: i32,
}

impl Answer {
    /// An error answer, or no offset (`error_code` 0).
    fn none(error_code: i16) -> Answer {
        Answer {
            error_code,
            timestamp: -1,
            offset: -1,
            leader_epoch: -1,
        }
    }
}

/// Runs on the owner: answers one partition of the request, whose
/// `current_leader_epoch` (None: not checked) is fenced first (KIP-320).
fn lookup(
    shard: &Shard,
    topic: &str,
    partition: i32,
    ts: i64,
    isolation_level: i8,
    current_leader_epoch: Option<i32>,
) -> Answer {
    let none = Answer::none(0);
    let part = match shard.serving(topic, partition, Requester::Client, current_leader_epoch) {
        Ok(part) => part,
        Err(e) => return Answer::none(e.code()),
    };
    let epoch = part.leader_epoch();
    let last_fetchable = if isolation_level == READ_COMMITTED {
        part.last_stable_offset()
    } else {
        part.high_watermark()
    };
    let r: Result<Answer, StorageError> = match ts {
        LATEST => Ok(Answer {
            offset: last_fetchable,
            leader_epoch: epoch,
            ..none
        }),
        EARLIEST | EARLIEST_LOCAL => Ok(Answer {
            offset: part.log_start_offset(),
            leader_epoch: epoch,
            ..none
        }),
        LATEST_TIERED => Ok(none),
        MAX_TIMESTAMP => part.max_timestamp_offset().and_then(|o| match o {
            None => Ok(none),
            Some((last_offset, max_ts)) => {
                // The batch holding the largest timestamp ends at `last_offset`;
                // find the first record in it carrying that timestamp.
                let exact = first_record_at_or_after(&part, last_offset, max_ts, true, -1)?;
                let (offset, timestamp, leader_epoch) = match exact {
                    InBatch::Found(o, t, e) => (o, t, e),
                    InBatch::NoneBefore(_, e) => (last_offset, max_ts, e),
                    InBatch::Undecodable => (last_offset, max_ts, -1),
                };
                Ok(Answer {
                    offset,
                    timestamp,
                    leader_epoch,
                    error_code: 0,
                })
            }
        }),
        t if t >= 0 => part.offset_for_timestamp(t).and_then(|o| match o {
            None => Ok(none),
            Some((base_offset, batch_max_ts)) => {
                // Kafka's rule: the first record at or after the log start
                // offset whose timestamp is >= t. Batches left empty by the
                // cleaner, and records below the log start (DeleteRecords
                // inside a batch), are passed over.
                let start = part.log_start_offset();
                let mut at = base_offset.max(start);
                let found = loop {
                    match first_record_at_or_after(&part, at, t, false, start)? {
                        InBatch::Found(o, ts, e) => break Some((o, ts, e)),
                        InBatch::NoneBefore(next, _) if next < last_fetchable => at = next,
                        InBatch::NoneBefore(..) => break None,
                        InBatch::Undecodable => break Some((at, batch_max_ts, -1)),
                    }
                };
                Ok(
                    found.map_or(none, |(offset, timestamp, leader_epoch)| Answer {
                        offset,
                        timestamp,
                        leader_epoch,
                        error_code: 0,
                    }),
                )
            }
        }),
        _ => return Answer::none(codes::UNSUPPORTED_VERSION),
    };
    match r {
        Ok(a) if ts >= 0 || ts == MAX_TIMESTAMP => {
            if a.offset < last_fetchable {
                a
            } else {
                none
            }
        }
        Ok(a) => a,
        Err(e) => Answer::none(e.code()),
    }
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
    let Ok(header) = crate::storage::batch::BatchHeader::parse(&bytes) else {
        log::warn!("ListOffsets: no batch header at offset {offset}");
        return Ok(InBatch::Undecodable);
    };
    let mut buf = bytes::Bytes::from(bytes);
    let set = match RecordBatchDecoder::decode(&mut buf) {
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

/// Answers ListOffsets.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: ListOffsetsRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let image = shard.metadata();
    let mut answers: Vec<Vec<Answer>> = Vec::new();
    for t in &req.topics {
        let name = t.name.0.as_str();
        let meta = image.topic(name);
        let mut row = Vec::new();
        for p in &t.partitions {
            // Checked before the partition, as Kafka does.
            if first_version_for(p.timestamp).is_none_or(|v| version < v) {
                row.push(Answer::none(codes::UNSUPPORTED_VERSION));
                continue;
            }
            let known = meta.is_some_and(|m| (0..m.partitions).contains(&p.partition_index));
            if !known {
                row.push(Answer::none(codes::UNKNOWN_TOPIC_OR_PARTITION));
                continue;
            }
            let topic: Arc<str> = Arc::from(name);
            let (pi, ts, iso) = (p.partition_index, p.timestamp, req.isolation_level);
            // Kafka: -1 (the crate's value before v4) is not checked.
            let epoch = (p.current_leader_epoch != -1).then_some(p.current_leader_epoch);
            let owner = shard.owner(name, pi);
            let a = shard
                .invoke_on(owner, move |s| async move {
                    lookup(&s, &topic, pi, ts, iso, epoch)
                })
                .await
                .unwrap_or_else(|e| Answer::none(e.code()));
            row.push(a);
        }
        answers.push(row);
    }
    let mut resp = ListOffsetsResponse::default();
    resp.topics = req
        .topics
        .iter()
        .zip(answers)
        .map(|(t, row)| {
            let mut tr = ListOffsetsTopicResponse::default();
            tr.name = t.name.clone();
            tr.partitions = t
                .partitions
                .iter()
                .zip(row)
                .map(|(p, a)| {
                    let mut pr = ListOffsetsPartitionResponse::default();
                    pr.partition_index = p.partition_index;
                    pr.error_code = a.error_code;
                    pr.timestamp = a.timestamp;
                    pr.offset = a.offset;
                    // leader_epoch exists from v4 (KIP-320); the crate rejects it earlier.
                    pr.leader_epoch = if version >= 4 && a.offset >= 0 {
                        a.leader_epoch
                    } else {
                        -1
                    };
                    pr
                })
                .collect();
            tr
        })
        .collect();
    Ok(respond(frame, &resp))
}
