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
//! The lookups run on the partition's owner (`shard::owner::offsets`); this
//! handler decodes, routes and encodes.
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

use super::authz::Access;
use super::{respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::owner::offsets::{list_offset, FoundOffset, OffsetSpec};
use crate::shard::Shard;

/// One partition's answer: an error code, or the offset found (None: -1/-1).
type Answer = Result<Option<FoundOffset>, i16>;

/// Answers ListOffsets.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: ListOffsetsRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let image = shard.metadata();
    let access = Access::of(shard, frame);
    let mut answers: Vec<Vec<Answer>> = Vec::new();
    for t in &req.topics {
        let name = t.name.0.as_str();
        let meta = image.topic(name);
        let mut row = Vec::new();
        // Kafka: DESCRIBE on the topic, before anything else is checked.
        if let Err(d) = access.check(Operation::Describe, ResourceType::Topic, name) {
            row.extend(t.partitions.iter().map(|_| Err(d.code())));
            answers.push(row);
            continue;
        }
        for p in &t.partitions {
            // Checked before the partition, as Kafka does.
            let spec = match OffsetSpec::from_wire(p.timestamp) {
                Some(spec) if version >= spec.first_version() => spec,
                _ => {
                    row.push(Err(codes::UNSUPPORTED_VERSION));
                    continue;
                }
            };
            let known = meta.is_some_and(|m| (0..m.partitions).contains(&p.partition_index));
            if !known {
                row.push(Err(codes::UNKNOWN_TOPIC_OR_PARTITION));
                continue;
            }
            // Kafka: -1 (the crate's value before v4) is not checked.
            let epoch = (p.current_leader_epoch != -1).then_some(p.current_leader_epoch);
            let topic: Arc<str> = Arc::from(name);
            let a = list_offset(
                shard,
                topic,
                p.partition_index,
                spec,
                req.isolation_level,
                epoch,
            )
            .await
            .map_err(|e| e.code());
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
                    let found = match a {
                        Ok(found) => found,
                        Err(code) => {
                            pr.error_code = code;
                            None
                        }
                    };
                    pr.timestamp = found.map_or(-1, |f| f.timestamp);
                    pr.offset = found.map_or(-1, |f| f.offset);
                    // leader_epoch exists from v4 (KIP-320); the crate rejects it earlier.
                    pr.leader_epoch = match found {
                        Some(f) if version >= 4 && f.offset >= 0 => f.leader_epoch,
                        _ => -1,
                    };
                    pr
                })
                .collect();
            tr
        })
        .collect();
    Ok(respond(frame, &resp))
}
