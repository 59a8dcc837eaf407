//! ListTransactions (key 66), v0–v1 (KIP-664; v1 adds the duration filter,
//! KIP-994): the transactional ids of every coordinator shard, filtered by
//! state name and producer id. State names this broker does not know are
//! echoed in `unknown_state_filters`.

use std::rc::Rc;

use kafka_protocol::messages::list_transactions_response::TransactionState;
use kafka_protocol::messages::{ListTransactionsRequest, ListTransactionsResponse, ProducerId};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::error::KafkaCode;
use crate::protocol::RequestFrame;
use crate::shard::Shard;
use crate::txn::coordinator;

const STATES: [&str; 8] = [
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "Dead",
    "PrepareEpochFence",
];

/// Answers ListTransactions.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: ListTransactionsRequest = frame.decode()?;
    let mut resp = ListTransactionsResponse::default();
    let mut states = Vec::new();
    for s in &req.state_filters {
        if STATES.contains(&s.as_str()) {
            states.push(s.to_string());
        } else {
            resp.unknown_state_filters.push(s.clone());
        }
    }
    if !req.state_filters.is_empty() && states.is_empty() {
        // Only unknown states asked for: nothing can match.
        return Ok(respond(frame, &resp));
    }
    let pids: Vec<i64> = req.producer_id_filters.iter().map(|p| p.0).collect();
    let duration = req.duration_filter;
    // Kafka: only the transactional ids the request may DESCRIBE.
    let access = Access::of(shard, frame);
    for target in 0..shard.shards {
        let (st, ps) = (states.clone(), pids.clone());
        match shard
            .invoke_on(target, move |_| async move {
                coordinator::list(&st, &ps, duration)
            })
            .await
        {
            Ok(Ok(list)) => {
                for d in list {
                    if !access.allows(
                        Operation::Describe,
                        ResourceType::TransactionalId,
                        &d.transactional_id,
                    ) {
                        continue;
                    }
                    let mut w = TransactionState::default();
                    w.transactional_id = StrBytes::from_string(d.transactional_id).into();
                    w.producer_id = ProducerId(d.producer_id);
                    w.transaction_state = StrBytes::from_static_str(d.state);
                    resp.transaction_states.push(w);
                }
            }
            Ok(Err(e)) => resp.error_code = e.code(),
            Err(e) => resp.error_code = e.code(),
        }
    }
    Ok(respond(frame, &resp))
}
