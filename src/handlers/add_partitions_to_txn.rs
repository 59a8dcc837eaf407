//! AddPartitionsToTxn (key 24), v0–v3: a transactional producer registers
//! the partitions it is about to write to before producing to them (KIP-98).
//! Forwarded to the transactional id's coordinator. Partitions of unknown
//! topics get UNKNOWN_TOPIC_OR_PARTITION and the rest OPERATION_NOT_ATTEMPTED
//! (nothing is added). v4+ is Kafka's broker-to-broker form (KIP-890) and is
//! not served. PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH below v2.

use std::rc::Rc;

use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, AddPartitionsToTxnResponse};
use kafka_protocol::ResponseError as E;

use super::{fenced_for_version, respond, txn_owner, HandlerResult};
use crate::protocol::RequestFrame;
use crate::shard::Shard;
use crate::txn::coordinator;

/// Answers AddPartitionsToTxn.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: AddPartitionsToTxnRequest = frame.decode()?;
    let image = shard.metadata();
    let mut unknown = Vec::new();
    let mut wanted = Vec::new();
    for t in &req.v3_and_below_topics {
        let meta = image.topic(&t.name.0);
        for p in &t.partitions {
            if meta.is_some_and(|m| (0..m.partitions).contains(p)) {
                wanted.push((t.name.0.to_string(), *p));
            } else {
                unknown.push((t.name.0.to_string(), *p));
            }
        }
    }
    let code_for = |topic: &str, p: i32, common: i16| {
        if unknown.iter().any(|(t, q)| t == topic && *q == p) {
            E::UnknownTopicOrPartition.code()
        } else {
            common
        }
    };
    let common = if !unknown.is_empty() {
        E::OperationNotAttempted.code()
    } else {
        let id = req.v3_and_below_transactional_id.0.to_string();
        match txn_owner(shard, &id) {
            Err(c) => c,
            Ok(owner) => {
                let (pid, epoch) = (
                    req.v3_and_below_producer_id.0,
                    req.v3_and_below_producer_epoch,
                );
                shard
                    .invoke_on(owner, move |s| {
                        coordinator::add_partitions(s, id, pid, epoch, wanted)
                    })
                    .await
                    .unwrap_or_else(|e| {
                        log::warn!("AddPartitionsToTxn: {e}");
                        E::CoordinatorNotAvailable.code()
                    })
            }
        }
    };
    let common = fenced_for_version(common, frame.prefix.api_version, 2);
    let mut resp = AddPartitionsToTxnResponse::default();
    resp.results_by_topic_v3_and_below = req
        .v3_and_below_topics
        .iter()
        .map(|t| {
            let mut rt = AddPartitionsToTxnTopicResult::default();
            rt.name = t.name.clone();
            rt.results_by_partition = t
                .partitions
                .iter()
                .map(|p| {
                    let mut rp = AddPartitionsToTxnPartitionResult::default();
                    rp.partition_index = *p;
                    rp.partition_error_code = code_for(&t.name.0, *p, common);
                    rp
                })
                .collect();
            rt
        })
        .collect();
    Ok(respond(frame, &resp))
}
