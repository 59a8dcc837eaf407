//! OffsetForLeaderEpoch (key 23), v2–v4 (KIP-101, KIP-279, KIP-320): per
//! partition, the end offset of a leader epoch in the leader's log, from its
//! leader-epoch cache (`PartitionLog::end_offset_for_epoch`, Kafka's
//! `LeaderEpochFileCache.endOffsetFor`): the latest epoch ends at the log end
//! offset; an older one where the next cached epoch starts, answered with
//! the largest cached epoch at or below it; an epoch above the latest, -1,
//! or a log with no epoch gets leader epoch -1 and end offset -1
//! (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET) with no error.
//!
//! Followers use it to find where their log diverges from the new leader's
//! and truncate there; consumers (librdkafka, the Java client) use it after
//! a leader change to check that their position still exists (KIP-320).
//!
//! As in Kafka (`ReplicaManager.lastOffsetForLeaderEpoch` with
//! `fetchOnlyFromLeader`), only the leader answers: NOT_LEADER_OR_FOLLOWER
//! otherwise, after the `current_leader_epoch` check (-1: not checked;
//! older than the partition's: FENCED_LEADER_EPOCH; newer:
//! UNKNOWN_LEADER_EPOCH). `replica_id` (v3+) -1 is a consumer, >= 0 a
//! follower broker; v2 has no such field (the protocol crate's -2, Kafka's
//! debugging id) and is served as a consumer. A topic or partition the
//! metadata does not know gets UNKNOWN_TOPIC_OR_PARTITION. Partitions are
//! asked on their owner shards, one concurrent call per owner shard.

use std::rc::Rc;
use std::sync::Arc;

use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};

use super::authz::Access;
use super::{respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType, CLUSTER_NAME};
use crate::cluster::leadership::Requester;
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Kafka's `RecordBatch.NO_PARTITION_LEADER_EPOCH`: a `current_leader_epoch`
/// that is not checked.
const NO_PARTITION_LEADER_EPOCH: i32 = -1;

/// One partition to answer, as the owner shard needs it.
#[derive(Debug, Clone)]
struct Ask {
    topic: Arc<str>,
    partition: i32,
    /// The request's `current_leader_epoch` (None: not checked).
    current_leader_epoch: Option<i32>,
    /// The epoch whose end offset is asked for.
    leader_epoch: i32,
}

/// One partition's answer: error code, leader epoch, end offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Answer {
    error_code: i16,
    leader_epoch: i32,
    end_offset: i64,
}

impl Answer {
    /// An answer without an offset: `error_code`, epoch -1, end offset -1.
    fn none(error_code: i16) -> Answer {
        Answer {
            error_code,
            leader_epoch: -1,
            end_offset: -1,
        }
    }
}

/// Takes a request's `replica_id`; gives who asks: a follower broker for an
/// id >= 0, else a consumer (-1, or v2's missing field).
fn requester(replica_id: i32) -> Requester {
    if replica_id >= 0 {
        Requester::Follower { replica_id }
    } else {
        Requester::Client
    }
}

/// Runs on the owner shard: answers its partitions of the request, in order.
fn answer_on_owner(shard: &Shard, asks: &[Ask], who: Requester) -> Vec<Answer> {
    asks.iter()
        .map(
            |a| match shard.serving(&a.topic, a.partition, who, a.current_leader_epoch) {
                Err(e) => Answer::none(e.code()),
                Ok(part) => match part.end_offset_for_epoch(a.leader_epoch) {
                    Some((leader_epoch, end_offset)) => Answer {
                        error_code: codes::NONE,
                        leader_epoch,
                        end_offset,
                    },
                    None => Answer::none(codes::NONE),
                },
            },
        )
        .collect()
}

/// Answers OffsetForLeaderEpoch.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: OffsetForLeaderEpochRequest = frame.decode()?;
    let who = requester(req.replica_id.0);
    let image = shard.metadata();
    // Every partition in request order, with its answer once known.
    let mut answers: Vec<Answer> = Vec::new();
    let mut by_owner: Vec<(Vec<usize>, Vec<Ask>)> = (0..shard.shards)
        .map(|_| (Vec::new(), Vec::new()))
        .collect();
    // Kafka: CLUSTER_ACTION on the cluster (unlogged) covers every topic;
    // otherwise DESCRIBE on each (TOPIC_AUTHORIZATION_FAILED).
    let access = Access::of(shard, frame);
    let any_topic = access.allows_quietly(
        Operation::ClusterAction,
        ResourceType::Cluster,
        CLUSTER_NAME,
    );
    for t in &req.topics {
        let name = t.topic.0.as_str();
        let meta = image.topic(name);
        let topic: Arc<str> = Arc::from(name);
        let refused = !any_topic && !access.allows(Operation::Describe, ResourceType::Topic, name);
        for p in &t.partitions {
            let slot = answers.len();
            if refused {
                answers.push(Answer::none(codes::TOPIC_AUTHORIZATION_FAILED));
                continue;
            }
            answers.push(Answer::none(codes::UNKNOWN_TOPIC_OR_PARTITION));
            if !meta.is_some_and(|m| (0..m.partitions).contains(&p.partition)) {
                continue;
            }
            let ask = Ask {
                topic: topic.clone(),
                partition: p.partition,
                current_leader_epoch: (p.current_leader_epoch != NO_PARTITION_LEADER_EPOCH)
                    .then_some(p.current_leader_epoch),
                leader_epoch: p.leader_epoch,
            };
            if let Some((slots, asks)) = by_owner.get_mut(shard.owner(name, p.partition)) {
                slots.push(slot);
                asks.push(ask);
            }
        }
    }
    let mut tasks = Vec::new();
    for (owner, (slots, asks)) in by_owner.into_iter().enumerate() {
        if slots.is_empty() {
            continue;
        }
        let me = shard.clone();
        let task =
            crate::shard::stall::spawn_local("offset-for-leader-epoch fan-out", async move {
                me.invoke_on(
                    owner,
                    move |s| async move { answer_on_owner(&s, &asks, who) },
                )
                .await
            });
        tasks.push((slots, task));
    }
    for (slots, task) in tasks {
        match task.await {
            Ok(found) => {
                for (slot, a) in slots.iter().zip(found) {
                    if let Some(out) = answers.get_mut(*slot) {
                        *out = a;
                    }
                }
            }
            Err(e) => {
                for slot in slots {
                    if let Some(out) = answers.get_mut(slot) {
                        *out = Answer::none(e.code());
                    }
                }
            }
        }
    }
    let mut found = answers.into_iter();
    let mut resp = OffsetForLeaderEpochResponse::default();
    resp.topics = req
        .topics
        .iter()
        .map(|t| {
            let mut tr = OffsetForLeaderTopicResult::default();
            tr.topic = t.topic.clone();
            tr.partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let a = found.next().unwrap_or_else(|| {
                        Answer::none(crate::shard::error::AnswerError::Lost.code())
                    });
                    let mut r = EpochEndOffset::default();
                    r.partition = p.partition;
                    r.error_code = a.error_code;
                    r.leader_epoch = a.leader_epoch;
                    r.end_offset = a.end_offset;
                    r
                })
                .collect();
            tr
        })
        .collect();
    Ok(respond(frame, &resp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replica_id_names_the_requester() {
        assert_eq!(requester(-1), Requester::Client);
        assert_eq!(requester(-2), Requester::Client, "v2: no replica_id");
        assert_eq!(requester(0), Requester::Follower { replica_id: 0 });
        assert_eq!(requester(3), Requester::Follower { replica_id: 3 });
    }

    #[test]
    fn an_answer_without_offset_is_minus_one() {
        let a = Answer::none(codes::UNKNOWN_TOPIC_OR_PARTITION);
        assert_eq!((a.leader_epoch, a.end_offset), (-1, -1));
        let d = EpochEndOffset::default();
        assert_eq!((d.leader_epoch, d.end_offset), (-1, -1));
    }
}
