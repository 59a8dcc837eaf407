//! EndTxn (key 26), v0–v5: commit or abort the producer's transaction
//! (KIP-98). Forwarded to the transactional id's coordinator, which writes
//! the decision, the COMMIT/ABORT markers to every partition of the
//! transaction, then the Complete state, and answers after the markers.
//! PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH below v2. v4 only
//! allows TRANSACTION_ABORTABLE in the answer. v5 is transactions v2
//! (KIP-890 part 2): the coordinator bumps the epoch at every EndTxn and the
//! answer carries the producer id and epoch to continue with (-1, -1 on an
//! error, and below v5).

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
use crate::txn::records::TxnVersion;

/// Answers EndTxn.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: EndTxnRequest = frame.decode()?;
    let id = req.transactional_id.0.to_string();
    // Kafka: WRITE on the transactional id.
    let owner = Access::of(shard, frame)
        .check(Operation::Write, ResourceType::TransactionalId, &id)
        .map_err(|d| d.code())
        .and_then(|()| txn_owner(shard, &id).map_err(|e| e.code()));
    let version = frame.prefix.api_version;
    let tv = TxnVersion::for_end_txn(version);
    let answer = match owner {
        Err(c) => Err(c),
        Ok(owner) => {
            let (pid, epoch, commit) = (req.producer_id.0, req.producer_epoch, req.committed);
            shard
                .invoke_on(owner, move |s| {
                    coordinator::end_txn(s, id, pid, epoch, commit, tv)
                })
                .await
                .unwrap_or_else(|e| Err(TxnError::CoordinatorUnavailable(e)))
                .map_err(|e| e.code())
        }
    };
    let (code, (pid, epoch)) = match answer {
        Ok(pair) => (0, pair),
        Err(c) => (c, (-1, -1)),
    };
    let mut resp = EndTxnResponse::default();
    resp.error_code = fenced_for_version(code, version, 2);
    // The fields exist from v5 only; older answers are encoded without them.
    resp.producer_id = ProducerId(pid);
    resp.producer_epoch = epoch;
    Ok(respond(frame, &resp))
}
