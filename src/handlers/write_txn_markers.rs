//! WriteTxnMarkers (key 27), v1: writes COMMIT/ABORT markers to partitions
//! directly. In Kafka this is how the transaction coordinator reaches the
//! partition leaders, and how operators end a hanging transaction
//! (`kafka-transactions.sh abort`, `Admin.abortTransaction`, KIP-664): the
//! admin client finds the producer with DescribeProducers and asks for an
//! ABORT marker with its producer id, epoch and coordinator epoch. Fjord's
//! own coordinator writes markers in process (`Partition::write_marker`);
//! this API serves the operators. Per partition: 0, UNKNOWN_TOPIC_OR_PARTITION,
//! INVALID_PRODUCER_EPOCH (47, an older epoch than the partition knows),
//! TRANSACTION_COORDINATOR_FENCED (52, an older coordinator epoch) or
//! KAFKA_STORAGE_ERROR.

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{WriteTxnMarkersRequest, WriteTxnMarkersResponse};

use super::authz::Access;
use super::{respond, Answers, HandlerResult};
use crate::acl::model::{Operation, ResourceType, CLUSTER_NAME};
use crate::error::{codes, KafkaCode};
use crate::group::OFFSETS_TOPIC;
use crate::protocol::RequestFrame;
use crate::shard::error::AnswerError;
use crate::shard::Shard;
use crate::txn::error::TxnError;

/// Writes one marker to each of `partitions` on their owner shards; gives
/// the error code of each, in order (a partition its owner left without an
/// answer gets [`AnswerError::Lost`]'s).
async fn write_all(
    shard: &Rc<Shard>,
    partitions: Vec<(String, i32)>,
    producer: (i64, i16),
    commit: bool,
    coordinator_epoch: i32,
) -> Vec<i16> {
    let mut by_owner: BTreeMap<usize, Vec<(usize, String, i32)>> = BTreeMap::new();
    for (i, (t, p)) in partitions.iter().enumerate() {
        by_owner
            .entry(shard.owner(t, *p))
            .or_default()
            .push((i, t.clone(), *p));
    }
    let mut out: Vec<Option<i16>> = vec![None; partitions.len()];
    for (owner, work) in by_owner {
        let slots: Vec<usize> = work.iter().map(|(i, _, _)| *i).collect();
        let res = shard
            .invoke_on(owner, move |s| async move {
                let mut written = Vec::with_capacity(work.len());
                for (_, t, p) in work {
                    let Some(part) = s.partition(&t, p) else {
                        // Still opening here: the coordinator retries.
                        if s.is_opening(&t, p) {
                            written.push(codes::NOT_LEADER_OR_FOLLOWER);
                            continue;
                        }
                        let unknown = TxnError::UnknownTopicOrPartition {
                            topic: t,
                            partition: p,
                        };
                        written.push(unknown.code());
                        continue;
                    };
                    let (pid, epoch) = producer;
                    match part.write_marker(pid, epoch, commit, coordinator_epoch).await {
                        Ok(offset) => {
                            log::info!(
                                "{t}-{p}: {} marker of producer {pid} epoch {epoch} written at offset {offset} (WriteTxnMarkers)",
                                if commit { "COMMIT" } else { "ABORT" }
                            );
                            if t == OFFSETS_TOPIC {
                                let n = s.config.group.offsets_topic_partitions;
                                crate::group::GroupCoordinator::here().complete_txn(pid, p, n, commit);
                            }
                            written.push(codes::NONE);
                        }
                        Err(e) => written.push(e.code()),
                    }
                }
                written
            })
            .await;
        match res {
            Ok(written) => {
                for (slot, c) in slots.into_iter().zip(written) {
                    out[slot] = Some(c);
                }
            }
            Err(e) => {
                for slot in slots {
                    out[slot] = Some(e.code());
                }
            }
        }
    }
    out.into_iter()
        .map(|c| c.unwrap_or_else(|| AnswerError::Lost.code()))
        .collect()
}

/// Answers WriteTxnMarkers.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: WriteTxnMarkersRequest = frame.decode()?;
    let mut resp = WriteTxnMarkersResponse::default();
    // Kafka: ALTER on the cluster (unlogged), else CLUSTER_ACTION; refused,
    // CLUSTER_AUTHORIZATION_FAILED on every partition.
    let access = Access::of(shard, frame);
    let refused = !access.allows_quietly(Operation::Alter, ResourceType::Cluster, CLUSTER_NAME)
        && !access.cluster(Operation::ClusterAction);
    for m in &req.markers {
        let partitions: Vec<(String, i32)> = m
            .topics
            .iter()
            .flat_map(|t| {
                t.partition_indexes
                    .iter()
                    .map(move |p| (t.name.0.to_string(), *p))
            })
            .collect();
        let producer = (m.producer_id.0, m.producer_epoch);
        let mut answers = Answers::new(if refused {
            vec![codes::CLUSTER_AUTHORIZATION_FAILED; partitions.len()]
        } else {
            write_all(
                shard,
                partitions,
                producer,
                m.transaction_result,
                m.coordinator_epoch,
            )
            .await
        });
        let mut r = WritableTxnMarkerResult::default();
        r.producer_id = m.producer_id;
        r.topics = m
            .topics
            .iter()
            .map(|t| {
                let mut rt = WritableTxnMarkerTopicResult::default();
                rt.name = t.name.clone();
                rt.partitions = t
                    .partition_indexes
                    .iter()
                    .map(|p| {
                        let mut rp = WritableTxnMarkerPartitionResult::default();
                        rp.partition_index = *p;
                        rp.error_code = answers.next_code();
                        rp
                    })
                    .collect();
                rt
            })
            .collect();
        resp.markers.push(r);
    }
    Ok(respond(frame, &resp))
}
