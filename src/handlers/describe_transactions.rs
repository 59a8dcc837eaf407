//! DescribeTransactions (key 65), v0 (KIP-664): state, producer id and
//! epoch, timeout, start time and partitions of each named transactional id,
//! from its coordinator shard. Unknown ids get TRANSACTIONAL_ID_NOT_FOUND;
//! before `__transaction_state` exists every id gets it too.

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, ProducerId, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{respond, txn_owner, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::cluster::error::CoordinatorLookupError;
use crate::error::KafkaCode;
use crate::protocol::RequestFrame;
use crate::shard::Shard;
use crate::txn::coordinator::{self, TxnDescription};
use crate::txn::error::TxnError;

/// One transaction in the wire shape shared with ListTransactions' input.
fn wire(d: TxnDescription) -> TransactionState {
    let mut w = TransactionState::default();
    w.error_code = d.error.as_ref().map_or(0, |e| e.code());
    w.transactional_id = StrBytes::from_string(d.transactional_id).into();
    w.transaction_state = StrBytes::from_static_str(d.state);
    w.transaction_timeout_ms = d.timeout_ms;
    w.transaction_start_time_ms = d.start_ms;
    w.producer_id = ProducerId(d.producer_id);
    w.producer_epoch = d.producer_epoch;
    let mut topics: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for (t, p) in d.partitions {
        topics.entry(t).or_default().push(p);
    }
    w.topics = topics
        .into_iter()
        .map(|(t, ps)| {
            let mut td = TopicData::default();
            td.topic = TopicName(StrBytes::from_string(t));
            td.partitions = ps;
            td
        })
        .collect();
    w
}

/// The answer for an id whose coordinator cannot be named. Kafka's
/// DescribeTransactions answers TRANSACTIONAL_ID_NOT_FOUND (105) for an id
/// no coordinator knows; before `__transaction_state` exists (or while it
/// cannot be created) no coordinator knows any id, so every lookup failure
/// gives that code rather than COORDINATOR_NOT_AVAILABLE.
fn lookup_failed(e: &CoordinatorLookupError) -> TxnError {
    match e {
        CoordinatorLookupError::TopicMissing { .. }
        | CoordinatorLookupError::CreateFailed { .. }
        | CoordinatorLookupError::ControllerUnavailable { .. }
        | CoordinatorLookupError::NoLeader { .. }
        | CoordinatorLookupError::UnsupportedKeyType { .. }
        | CoordinatorLookupError::MalformedShareKey => TxnError::TransactionalIdNotFound,
        CoordinatorLookupError::NotCoordinator { .. } => TxnError::NotCoordinator,
    }
}

/// Answers DescribeTransactions.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: DescribeTransactionsRequest = frame.decode()?;
    let mut resp = DescribeTransactionsResponse::default();
    // Kafka: DESCRIBE on each transactional id
    // (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and only the partitions of
    // topics the request may DESCRIBE.
    let access = Access::of(shard, frame);
    for id in &req.transactional_ids {
        let id = id.0.to_string();
        if let Err(d) = access.check(Operation::Describe, ResourceType::TransactionalId, &id) {
            let mut w = TransactionState::default();
            w.transactional_id = StrBytes::from_string(id).into();
            w.error_code = d.code();
            resp.transaction_states.push(w);
            continue;
        }
        let d = match txn_owner(shard, &id) {
            Err(e) => coordinator::describe_error(&id, lookup_failed(&e)),
            Ok(owner) => {
                let key = id.clone();
                shard
                    .invoke_on(
                        owner,
                        move |s| async move { coordinator::describe(&s, &key) },
                    )
                    .await
                    .unwrap_or_else(|e| {
                        coordinator::describe_error(&id, TxnError::CoordinatorUnavailable(e))
                    })
            }
        };
        let mut w = wire(d);
        w.topics
            .retain(|t| access.allows(Operation::Describe, ResourceType::Topic, &t.topic.0));
        resp.transaction_states.push(w);
    }
    Ok(respond(frame, &resp))
}
