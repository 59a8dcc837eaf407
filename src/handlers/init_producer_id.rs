//! InitProducerId (key 22), v0–v5 (KIP-98; v5 only allows TRANSACTION_ABORTABLE).
//!
//! Without a transactional id: a fresh producer id with epoch 0 for an
//! idempotent producer, never reused after a restart, also when a v3+
//! client passes its current id and epoch to reset its sequences (KIP-360;
//! Kafka answers those with a new id too).
//!
//! With a transactional id: forwarded to the id's transaction coordinator
//! (`txn::coordinator::init_producer_id`), which bumps the epoch (fencing
//! older producers with the same id) and aborts an open transaction.
//! `transaction_timeout_ms` above `transaction.max.timeout.ms` gives
//! INVALID_TRANSACTION_TIMEOUT. PRODUCER_FENCED is answered as
//! INVALID_PRODUCER_EPOCH below v4.

use std::rc::Rc;

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};

use super::authz::Access;
use super::find_coordinator::ensure_transaction_state_topic;
use super::{fenced_for_version, respond, txn_owner, HandlerResult};
use crate::acl::model::{Operation, ResourceType, CLUSTER_NAME};
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::Shard;
use crate::txn::coordinator;
use crate::txn::error::TxnError;

/// Answers InitProducerId.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: InitProducerIdRequest = frame.decode()?;
    let mut resp = InitProducerIdResponse::default();
    resp.producer_id = ProducerId(-1);
    resp.producer_epoch = -1;
    let access = Access::of(shard, frame);
    if let Some(id) = &req.transactional_id {
        let id = id.0.to_string();
        // Kafka: WRITE on the transactional id.
        if let Err(d) = access.check(Operation::Write, ResourceType::TransactionalId, &id) {
            resp.error_code = d.code();
            return Ok(respond(frame, &resp));
        }
        let r = match ensure_transaction_state_topic(shard)
            .await
            .map_err(|e| e.code())
        {
            Err(c) => Err(c),
            Ok(()) => match txn_owner(shard, &id).map_err(|e| e.code()) {
                Err(c) => Err(c),
                Ok(owner) => {
                    let (timeout, current) = (
                        req.transaction_timeout_ms,
                        (req.producer_id.0, req.producer_epoch),
                    );
                    shard
                        .invoke_on(owner, move |s| {
                            coordinator::init_producer_id(s, id, timeout, current)
                        })
                        .await
                        .unwrap_or_else(|e| Err(TxnError::CoordinatorUnavailable(e)))
                        .map_err(|e| e.code())
                }
            },
        };
        match r {
            Ok((pid, epoch)) => {
                resp.producer_id = ProducerId(pid);
                resp.producer_epoch = epoch;
            }
            Err(c) => resp.error_code = fenced_for_version(c, frame.prefix.api_version, 4),
        }
        return Ok(respond(frame, &resp));
    }
    // Kafka (KAFKA-10619): IDEMPOTENT_WRITE on the cluster (unlogged), or
    // WRITE on some topic; CLUSTER_AUTHORIZATION_FAILED otherwise.
    if access.enabled()
        && !access.allows_quietly(
            Operation::IdempotentWrite,
            ResourceType::Cluster,
            CLUSTER_NAME,
        )
        && !access.any_of_type(Operation::Write, ResourceType::Topic)
    {
        resp.error_code = codes::CLUSTER_AUTHORIZATION_FAILED;
        return Ok(respond(frame, &resp));
    }
    // Without a transactional id every call gets a new producer id with
    // epoch 0, also when the client passes its current id and epoch (v3+,
    // KIP-360), as Kafka answers it: bumping an id the client names could
    // hand another producer's id to this one.
    match coordinator::new_producer_id(shard).await {
        Ok(id) => {
            resp.producer_id = ProducerId(id);
            resp.producer_epoch = 0;
        }
        Err(e) => resp.error_code = e.code(),
    }
    Ok(respond(frame, &resp))
}
