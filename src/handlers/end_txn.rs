//! EndTxn (key 26), v0–v4 (v4 only allows TRANSACTION_ABORTABLE; v5, transactions v2, is not served): commit or abort the producer's transaction
//! (KIP-98). Forwarded to the transactional id's coordinator, which writes
//! the decision, the COMMIT/ABORT markers to every partition of the
//! transaction, then the Complete state, and answers after the markers.
//! PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH below v2. v4 adds
//! TRANSACTION_ABORTABLE and v5 the epoch bump of KIP-890, not served.

use std::rc::Rc;

use kafka_protocol::messages::{EndTxnRequest, EndTxnResponse, ProducerId};

use super::authz::Access;
use super::{fenced_for_version, respond, txn_owner, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::error::KafkaCode;
use crate::protocol::RequestFrame;
use crate::shard::Shard;
use crate::txn::coordinator;
use crate::txn::error::TxnError;

/// Answers EndTxn.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: EndTxnRequest = frame.decode()?;
    let id = req.transactional_id.0.to_string();
    // Kafka: WRITE on the transactional id.
    let owner = Access::of(shard, frame)
        .check(Operation::Write, ResourceType::TransactionalId, &id)
        .map_err(|d| d.code())
        .and_then(|()| txn_owner(shard, &id).map_err(|e| e.code()));
    let code = match owner {
        Err(c) => c,
        Ok(owner) => {
            let (pid, epoch, commit) = (req.producer_id.0, req.producer_epoch, req.committed);
            shard
                .invoke_on(owner, move |s| {
                    coordinator::end_txn(s, id, pid, epoch, commit)
                })
                .await
                .unwrap_or_else(|e| Err(TxnError::CoordinatorUnavailable(e)))
                .map_or_else(|e| e.code(), |()| 0)
        }
    };
    let mut resp = EndTxnResponse::default();
    resp.error_code = fenced_for_version(code, frame.prefix.api_version, 2);
    resp.producer_id = ProducerId(-1);
    resp.producer_epoch = -1;
    Ok(respond(frame, &resp))
}
