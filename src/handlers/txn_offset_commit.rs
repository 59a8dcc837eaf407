//! TxnOffsetCommit (key 28), v0–v5: a transactional producer commits a
//! consumer group's offsets inside its transaction (KIP-98; group
//! generation and member checks from v3, KIP-447). Forwarded to the group's
//! coordinator, which writes them to `__consumer_offsets` as a transactional
//! batch; they become the group's committed offsets when the transaction
//! commits and are dropped when it aborts. The transaction coordinator must
//! confirm first that AddOffsetsToTxn added the group's partition to the
//! producer's open transaction (KIP-890's check); from v5 (transactions v2,
//! KIP-890 part 2) it adds that partition itself, with no AddOffsetsToTxn.
//! PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH below v2.

use std::rc::Rc;

use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{TxnOffsetCommitRequest, TxnOffsetCommitResponse};

use super::authz::Access;
use super::{fenced_for_version, group_owner, respond, Answers, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::error::txn_offset_commit_verification_code;
use crate::error::{group_code, KafkaCode};
use crate::group::records::partition_for_group;
use crate::group::OFFSETS_TOPIC;
use crate::group::{coordinator, CommitPartition};
use crate::protocol::RequestFrame;
use crate::shard::error::{TransactionSupportedOperation, VerificationError};
use crate::shard::Shard;

/// Asks the transaction coordinator whether the group's `__consumer_offsets`
/// partition is in the producer's open transaction (AddOffsetsToTxn came
/// first, the producer id and epoch are current): 0 or the Kafka error code
/// (INVALID_PRODUCER_ID_MAPPING, INVALID_PRODUCER_EPOCH, TRANSACTION_ABORTABLE
/// from v4, INVALID_TXN_STATE below it; `txn_offset_commit_verification_code`).
/// Offsets a coordinator does not know about could never be committed or
/// aborted by a marker.
///
/// From v5 (`operation` adds, transactions v2, KIP-890 part 2) the transaction
/// coordinator adds the partition to the transaction instead (the client
/// sends no AddOffsetsToTxn), in the same call.
async fn verify(
    shard: &Rc<Shard>,
    req: &TxnOffsetCommitRequest,
    group: &str,
    operation: TransactionSupportedOperation,
) -> i16 {
    let add = operation.adds_partition();
    let (pid, epoch) = (req.producer_id.0, req.producer_epoch);
    // Mark the verification on the group's shard first (see
    // `coordinator::begin_txn_commit`).
    let g = group.to_string();
    let begun = match group_owner(shard, group).map_err(|e| e.code()) {
        Err(c) => Err(c),
        Ok(owner) => shard
            .invoke_on(owner, move |s| async move {
                coordinator::begin_txn_commit(&s, &g, (pid, epoch)).map_err(|e| e.code())
            })
            .await
            .unwrap_or_else(|e| Err(e.code())),
    };
    if let Err(c) = begun {
        return c;
    }
    let id: std::sync::Arc<str> = std::sync::Arc::from(req.transactional_id.0.as_str());
    let p = partition_for_group(group, shard.config.group.offsets_topic_partitions);
    let partition = (std::sync::Arc::from(OFFSETS_TOPIC), p);
    crate::txn::verify::verify_partitions(shard.clone(), id, pid, epoch, vec![partition], add)
        .await
        .into_iter()
        .next()
        .unwrap_or(Err(VerificationError::NoVerifier))
        .map_or_else(
            |e| txn_offset_commit_verification_code(&e, operation),
            |()| 0,
        )
}

/// Answers TxnOffsetCommit.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: TxnOffsetCommitRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let image = shard.metadata();
    let group = req.group_id.0.to_string();
    // Kafka's checks: WRITE on the transactional id, READ on the group
    // (every partition TRANSACTIONAL_ID_ / GROUP_AUTHORIZATION_FAILED), then
    // READ on each topic (TOPIC_AUTHORIZATION_FAILED, not sent on).
    let access = Access::of(shard, frame);
    let whole_refused = access
        .check(
            Operation::Write,
            ResourceType::TransactionalId,
            &req.transactional_id.0,
        )
        .and_then(|()| access.check(Operation::Read, ResourceType::Group, &group))
        .err()
        .map(|d| d.code());
    let mut pre: Vec<Option<i16>> = Vec::new();
    let mut parts = Vec::new();
    for t in &req.topics {
        let refused = whole_refused.or_else(|| {
            access
                .check(Operation::Read, ResourceType::Topic, &t.name.0)
                .err()
                .map(|d| d.code())
        });
        for p in &t.partitions {
            pre.push(refused);
            if refused.is_some() {
                continue;
            }
            parts.push(CommitPartition::checked(
                &image,
                &t.name.0,
                p.partition_index,
                p.committed_offset,
                p.committed_leader_epoch,
                p.committed_metadata.as_ref().map(|m| m.to_string()),
            ));
        }
    }
    let n = parts.len();
    let verified = if n == 0 {
        0
    } else {
        verify(
            shard,
            &req,
            &group,
            TransactionSupportedOperation::for_txn_offset_commit(version),
        )
        .await
    };
    let out: Vec<i16> = match group_owner(shard, &group).map_err(|e| e.code()) {
        _ if n == 0 => Vec::new(),
        Err(code) => vec![code; n],
        Ok(_) if verified != 0 => vec![verified; n],
        Ok(owner) => {
            let producer = (req.producer_id.0, req.producer_epoch);
            let (generation, member, instance) = (
                req.generation_id,
                req.member_id.to_string(),
                req.group_instance_id.as_ref().map(|s| s.to_string()),
            );
            shard
                .invoke_on(owner, move |s| async move {
                    coordinator::txn_commit(s, group, producer, generation, member, instance, parts)
                        .await
                        .iter()
                        .map(group_code)
                        .collect::<Vec<i16>>()
                })
                .await
                .unwrap_or_else(|e| vec![e.code(); n])
        }
    };
    let mut answers = Answers::merged(&pre, out);
    let mut resp = TxnOffsetCommitResponse::default();
    resp.topics = req
        .topics
        .iter()
        .map(|t| {
            let mut rt = TxnOffsetCommitResponseTopic::default();
            rt.name = t.name.clone();
            rt.partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let mut rp = TxnOffsetCommitResponsePartition::default();
                    rp.partition_index = p.partition_index;
                    rp.error_code = fenced_for_version(answers.next_code(), version, 2);
                    rp
                })
                .collect();
            rt
        })
        .collect();
    Ok(respond(frame, &resp))
}
