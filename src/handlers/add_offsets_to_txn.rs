//! AddOffsetsToTxn (key 25), v0–v4 (v4 only allows TRANSACTION_ABORTABLE): a transactional producer about to
//! commit a consumer group's offsets in its transaction
//! (`sendOffsetsToTransaction`) adds the group's `__consumer_offsets`
//! partition to the transaction, so the transaction's marker ends the
//! pending offset commits there (KIP-98). PRODUCER_FENCED is answered as
//! INVALID_PRODUCER_EPOCH below v2.

use std::rc::Rc;

use kafka_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse};

use super::authz::Access;
use super::find_coordinator::ensure_offsets_topic;
use super::{fenced_for_version, respond, txn_owner, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::error::KafkaCode;
use crate::group::records::partition_for_group;
use crate::group::{GroupError, OFFSETS_TOPIC};
use crate::protocol::RequestFrame;
use crate::shard::Shard;
use crate::txn::coordinator;
use crate::txn::error::TxnError;
use crate::txn::records::TxnVersion;

/// Answers AddOffsetsToTxn.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: AddOffsetsToTxnRequest = frame.decode()?;
    let mut resp = AddOffsetsToTxnResponse::default();
    let group = req.group_id.0.to_string();
    let id = req.transactional_id.0.to_string();
    // Kafka: WRITE on the transactional id, then READ on the group.
    let access = Access::of(shard, frame);
    let refused = access
        .check(Operation::Write, ResourceType::TransactionalId, &id)
        .and_then(|()| access.check(Operation::Read, ResourceType::Group, &group))
        .err();
    let code = if let Some(d) = refused {
        d.code()
    } else if group.is_empty() {
        GroupError::InvalidGroupId.code()
    } else if let Err(c) = ensure_offsets_topic(shard).await.map_err(|e| e.code()) {
        c
    } else {
        match txn_owner(shard, &id).map_err(|e| e.code()) {
            Err(c) => c,
            Ok(owner) => {
                let p = partition_for_group(&group, shard.config.group.offsets_topic_partitions);
                let (pid, epoch) = (req.producer_id.0, req.producer_epoch);
                shard
                    .invoke_on(owner, move |s| {
                        coordinator::add_partitions(
                            s,
                            id,
                            pid,
                            epoch,
                            vec![(OFFSETS_TOPIC.to_string(), p)],
                            TxnVersion::Tv0,
                        )
                    })
                    .await
                    .unwrap_or_else(|e| Err(TxnError::CoordinatorUnavailable(e)))
                    .map_or_else(|e| e.code(), |()| 0)
            }
        }
    };
    resp.error_code = fenced_for_version(code, frame.prefix.api_version, 2);
    Ok(respond(frame, &resp))
}
