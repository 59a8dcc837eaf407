//! AddPartitionsToTxn (key 24), v0–v5 (KIP-98; v4+ KIP-890).
//!
//! v0–v3 is the client form: a transactional producer registers the
//! partitions it is about to write to. v4+ is the form Kafka's brokers send
//! to the coordinator: several transactional ids per request, each either
//! added as in v3 or, with `verify_only`, only checked (every partition
//! answered NONE when it is in the producer's open transaction,
//! TRANSACTION_ABORTABLE when it is not, CONCURRENT_TRANSACTIONS while the
//! transaction is being decided, the producer check's error otherwise); an
//! add in the v4+ form is a partition leader's implicit add for a
//! transactions-v2 client (KIP-890 part 2), recorded with that client
//! transaction version. Every form is forwarded to
//! the transactional id's coordinator. Partitions of unknown topics get
//! UNKNOWN_TOPIC_OR_PARTITION and the others of that transactional id
//! OPERATION_NOT_ATTEMPTED (nothing is added). PRODUCER_FENCED is answered as
//! INVALID_PRODUCER_EPOCH below v2.

use std::rc::Rc;

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, AddPartitionsToTxnResponse};

use super::authz::Access;
use super::{fenced_for_version, respond, txn_owner, Answers, HandlerResult};
use crate::acl::model::{Operation, ResourceType, CLUSTER_NAME};
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::Shard;
use crate::txn::coordinator;
use crate::txn::error::TxnError;
use crate::txn::records::TxnVersion;

/// One transactional id's share of the request.
struct TxnPart<'a> {
    id: String,
    producer_id: i64,
    epoch: i16,
    verify_only: bool,
    topics: &'a [AddPartitionsToTxnTopic],
}

/// Adds (or, with `verify_only`, checks) one transactional id's partitions
/// on its coordinator; gives the per-topic results in request order.
/// A client's request (v0–v3) is checked as Kafka does: WRITE on the
/// transactional id (every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
/// then WRITE on each topic (TOPIC_AUTHORIZATION_FAILED, the others
/// OPERATION_NOT_ATTEMPTED).
async fn run(
    shard: &Rc<Shard>,
    access: &Access,
    t: TxnPart<'_>,
    version: i16,
) -> Vec<AddPartitionsToTxnTopicResult> {
    let image = shard.metadata();
    let client = version <= 3;
    // Kafka: the broker form (v4+) is transactions v2 when it adds.
    let tv = TxnVersion::for_add_partitions(version);
    if client {
        if let Err(d) = access.check(Operation::Write, ResourceType::TransactionalId, &t.id) {
            return every_partition(t.topics, d.code());
        }
    }
    let mut unknown = Vec::new();
    let mut refused: Vec<&str> = Vec::new();
    let mut wanted = Vec::new();
    for topic in t.topics {
        let meta = image.topic(&topic.name.0);
        if client && !access.allows(Operation::Write, ResourceType::Topic, &topic.name.0) {
            refused.push(&topic.name.0);
            continue;
        }
        for p in &topic.partitions {
            if meta.is_some_and(|m| (0..m.partitions).contains(p)) {
                wanted.push((topic.name.0.to_string(), *p));
            } else {
                unknown.push((topic.name.0.to_string(), *p));
            }
        }
    }
    // One code per partition, in `wanted` order; unknown ones answered below.
    let codes: Vec<i16> = if !unknown.is_empty() || !refused.is_empty() {
        vec![TxnError::OperationNotAttempted.code(); wanted.len()]
    } else {
        match txn_owner(shard, &t.id).map_err(|e| e.code()) {
            Err(c) => vec![c; wanted.len()],
            Ok(owner) => {
                let (id, pid, epoch, n) = (t.id.clone(), t.producer_id, t.epoch, wanted.len());
                let answer = if t.verify_only {
                    shard
                        .invoke_on(owner, move |s| async move {
                            wanted
                                .iter()
                                .map(|p| {
                                    coordinator::verify_partition(&s, &id, pid, epoch, p)
                                        .map_or_else(|e| e.code(), |()| 0)
                                })
                                .collect::<Vec<i16>>()
                        })
                        .await
                } else {
                    shard
                        .invoke_on(owner, move |s| async move {
                            let added = if client {
                                coordinator::add_partitions(s, id, pid, epoch, wanted, tv).await
                            } else {
                                coordinator::add_partitions_for_leader(s, id, pid, epoch, wanted)
                                    .await
                            };
                            let c = added.map_or_else(|e| e.code(), |()| 0);
                            vec![c; n]
                        })
                        .await
                };
                answer.unwrap_or_else(|e| {
                    log::warn!("AddPartitionsToTxn: {e}");
                    vec![TxnError::CoordinatorUnavailable(e).code(); n]
                })
            }
        }
    };
    let mut answers = Answers::new(codes);
    t.topics
        .iter()
        .map(|topic| {
            let mut rt = AddPartitionsToTxnTopicResult::default();
            rt.name = topic.name.clone();
            rt.results_by_partition = topic
                .partitions
                .iter()
                .map(|p| {
                    let mut rp = AddPartitionsToTxnPartitionResult::default();
                    rp.partition_index = *p;
                    let is_unknown = unknown.iter().any(|(n, q)| *n == *topic.name.0 && q == p);
                    rp.partition_error_code = if refused.contains(&&*topic.name.0) {
                        codes::TOPIC_AUTHORIZATION_FAILED
                    } else if is_unknown {
                        TxnError::UnknownTopicOrPartition {
                            topic: topic.name.0.to_string(),
                            partition: *p,
                        }
                        .code()
                    } else {
                        fenced_for_version(answers.next_code(), version, 2)
                    };
                    rp
                })
                .collect();
            rt
        })
        .collect()
}

/// Every partition of `topics` answered `code`.
fn every_partition(
    topics: &[AddPartitionsToTxnTopic],
    code: i16,
) -> Vec<AddPartitionsToTxnTopicResult> {
    topics
        .iter()
        .map(|topic| {
            let mut rt = AddPartitionsToTxnTopicResult::default();
            rt.name = topic.name.clone();
            rt.results_by_partition = topic
                .partitions
                .iter()
                .map(|p| {
                    let mut rp = AddPartitionsToTxnPartitionResult::default();
                    rp.partition_index = *p;
                    rp.partition_error_code = code;
                    rp
                })
                .collect();
            rt
        })
        .collect()
}

/// Answers AddPartitionsToTxn.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: AddPartitionsToTxnRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let mut resp = AddPartitionsToTxnResponse::default();
    let access = Access::of(shard, frame);
    // Kafka: v4+ comes from brokers only and needs CLUSTER_ACTION on the
    // cluster (CLUSTER_AUTHORIZATION_FAILED at the top).
    if version >= 4 {
        if let Err(d) = access.check(
            Operation::ClusterAction,
            ResourceType::Cluster,
            CLUSTER_NAME,
        ) {
            resp.error_code = d.code();
            return Ok(respond(frame, &resp));
        }
    }
    if version <= 3 {
        let part = TxnPart {
            id: req.v3_and_below_transactional_id.0.to_string(),
            producer_id: req.v3_and_below_producer_id.0,
            epoch: req.v3_and_below_producer_epoch,
            verify_only: false,
            topics: &req.v3_and_below_topics,
        };
        resp.results_by_topic_v3_and_below = run(shard, &access, part, version).await;
    } else {
        for t in &req.transactions {
            let part = TxnPart {
                id: t.transactional_id.0.to_string(),
                producer_id: t.producer_id.0,
                epoch: t.producer_epoch,
                verify_only: t.verify_only,
                topics: &t.topics,
            };
            let mut r = AddPartitionsToTxnResult::default();
            r.transactional_id = t.transactional_id.clone();
            r.topic_results = run(shard, &access, part, version).await;
            resp.results_by_transaction.push(r);
        }
    }
    Ok(respond(frame, &resp))
}
