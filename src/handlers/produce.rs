//! Produce (key 0), v3–v13, RecordBatch v2 only. From v13 (KIP-516) topics
//! are named by topic id (an id this broker does not know: UNKNOWN_TOPIC_ID
//! (100) for each of its partitions) and the response answers by id.
//!
//! The connection's shard splits the request by owner shard; each owner
//! validates its partitions' batches (magic, sizes, CRC32C — no per-record
//! work; exactly one RecordBatch per partition, as Kafka requires from v3,
//! INVALID_RECORD otherwise), appends them (offsets assigned in place,
//! record bytes written from the request buffer without a copy) and, for
//! acks=all with a flush policy,
//! waits for the group-committed fdatasync. Replies are merged back in request
//! order. acks=0 gets no response; an error with acks=0 closes the connection,
//! as Kafka does, so the client refreshes its metadata.
//!
//! Only the partition's leader appends: a follower, a partition without a
//! leader and a partition of an existing topic with no replica here get
//! NOT_LEADER_OR_FOLLOWER (6), decided on the owner
//! (`Shard::serving`, and `Partition::produce` again); from v10 (KIP-951)
//! such answers carry the partition's `current_leader` and the response the
//! leaders' `node_endpoints`, so clients re-route without a Metadata round.
//!
//! Transactional batches (KIP-98) need the request's `transactional_id`
//! (TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise). A batch that would start
//! a transaction on a partition is held back until the transaction
//! coordinator confirms that the partition is in the producer's open
//! transaction (KIP-890's check, asked by the owner for all its partitions
//! at once: `shard::owner::produce`); later batches of that
//! transaction skip the check. From v12 (transactions v2, KIP-890 part 2)
//! the coordinator adds the partition to the transaction instead, in the
//! same call: the client sends no AddPartitionsToTxn. See
//! docs/transactions.md.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_channel::oneshot;
use kafka_protocol::messages::produce_response::{
    NodeEndpoint, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{BrokerId, ProduceRequest, ProduceResponse};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{respond, HandlerResult, Outcome};
use crate::acl::model::{Operation, ResourceType};
use crate::cluster::leadership;
use crate::cluster::metadata::BrokerMeta;
use crate::error::{codes, KafkaCode};
use crate::mesh::ShardError;
use crate::protocol::RequestFrame;
use crate::shard::error::TransactionSupportedOperation;
use crate::shard::owner::produce::{self as owner_produce, PartitionAppend, Slot};
use crate::shard::Shard;

/// One partition's answer as the response gives it.
#[derive(Debug, Clone, Default)]
struct PartitionResult {
    /// Partition index.
    index: i32,
    /// Kafka error code.
    error_code: i16,
    /// Error text for the client (Produce v8+ `error_message`).
    error_message: Option<String>,
    /// Offset given to the first record, -1 on error.
    base_offset: i64,
    /// LogAppendTime used, or -1 for CreateTime topics.
    log_append_time: i64,
    /// Log start offset after the append.
    log_start_offset: i64,
}

/// One topic's answers, in request order (the shape of the request, so the
/// response is built from them alone).
#[derive(Debug, Clone, Default)]
struct TopicResults {
    /// The topic name as the request gave it (v0–v12).
    name: kafka_protocol::messages::TopicName,
    /// The topic id as the request gave it (v13+).
    topic_id: uuid::Uuid,
    /// The topic's name, as the request gave it or as its id names it;
    /// `None` for an unknown id.
    resolved: Option<Arc<str>>,
    /// One answer per partition of the request, in its order.
    partitions: Vec<PartitionResult>,
}

/// The answer at `slot`, if the request has it.
fn slot_mut(results: &mut [TopicResults], slot: Slot) -> Option<&mut PartitionResult> {
    results
        .get_mut(slot.topic)
        .and_then(|t| t.partitions.get_mut(slot.partition))
}

/// Sends each owner's share (local work inline) concurrently and stores the
/// answers in `results` by slot; `dispatched` is sent once every owner has
/// reserved its partitions (with `close_on_refusal`, acks=0, only when none
/// refused one). Gives the longest time an owner waited for
/// followers (acks=all): the request's remote time, the owners waiting
/// at the same time.
async fn dispatch(
    shard: &Rc<Shard>,
    by_owner: Vec<Vec<PartitionAppend>>,
    acks_all: Option<Instant>,
    results: &mut [TopicResults],
    dispatched: &mut Option<oneshot::Sender<()>>,
    close_on_refusal: bool,
) -> Duration {
    let mut remote = Duration::ZERO;
    // Whether an owner's reservation answer lets the connection go on.
    let goes_on = |r: Result<bool, _>| r.is_ok_and(|all| all || !close_on_refusal);
    // One owner (the common case: one partition, or a shard's own
    // partitions): its share runs in this task, awaited together with its
    // reservation signal, instead of in a task of its own.
    let mut owners = by_owner
        .iter()
        .enumerate()
        .filter(|(_, w)| !w.is_empty())
        .map(|(i, _)| i);
    if let (Some(owner), None) = (owners.next(), owners.next()) {
        let work = by_owner.into_iter().nth(owner).unwrap_or_default();
        let (tx, rx) = crate::shard::home::reply_channel();
        // Waited for only when someone listens (a pipelined request).
        let signal = async {
            if let Some(tx) = dispatched.take() {
                if goes_on(rx.await) {
                    let _ = tx.send(());
                }
            }
        };
        let append = owner_produce::append_on(shard, owner, work, acks_all, tx);
        let (answers, ()) = futures_lite::future::zip(append, signal).await;
        return store_answers(answers, results);
    }
    let mut tasks = Vec::new();
    let mut reserved = Vec::new();
    for (owner, work) in by_owner.into_iter().enumerate() {
        if work.is_empty() {
            continue;
        }
        let me = shard.clone();
        // Sent on the owner shard, delivered here (`shard::home`).
        let (tx, rx) = crate::shard::home::reply_channel();
        reserved.push(rx);
        tasks.push(crate::shard::stall::spawn_local(
            "produce fan-out",
            async move { owner_produce::append_on(&me, owner, work, acks_all, tx).await },
        ));
    }
    if dispatched.is_some() {
        let mut all = true;
        for rx in reserved {
            all &= goes_on(rx.await);
        }
        if all {
            if let Some(tx) = dispatched.take() {
                let _ = tx.send(());
            }
        }
    }
    for t in tasks {
        remote = remote.max(store_answers(t.await, results));
    }
    remote
}

/// Stores one owner's answers in `results` by slot; gives the sum of the
/// owner's waits for followers (its part of the request's remote time).
fn store_answers(
    answers: Vec<owner_produce::AppendAnswer>,
    results: &mut [TopicResults],
) -> Duration {
    let mut waited = Duration::ZERO;
    for a in answers {
        waited = waited.saturating_add(a.replication_wait);
        if let Some(dst) = slot_mut(results, a.slot) {
            dst.base_offset = a.base_offset;
            dst.log_append_time = a.log_append_time;
            dst.log_start_offset = a.log_start_offset;
            match a.error {
                None => {
                    dst.error_code = 0;
                    dst.error_message = None;
                }
                Some(e) => {
                    dst.error_code = e.code();
                    dst.error_message = Some(e.to_string());
                }
            }
        }
    }
    waited
}

/// Answers a Produce request. `dispatched` (see
/// `handlers::dispatch_pipelined`) is sent once every partition is reserved.
pub async fn handle(
    shard: &Rc<Shard>,
    frame: &RequestFrame,
    mut dispatched: Option<oneshot::Sender<()>>,
) -> HandlerResult {
    let req: ProduceRequest = frame.decode()?;
    let acks = req.acks;
    let image = shard.metadata();
    let transactional_id: Option<Arc<str>> = req
        .transactional_id
        .as_ref()
        .map(|t| Arc::from(t.0.as_str()));

    // Kafka's checks (KafkaApis): a request with transactional batches
    // needs WRITE on its transactional id (every partition answered
    // TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise); then WRITE on each
    // topic, checked before whether it exists.
    let access = Access::of(shard, frame);
    let refused_txn = access.enabled()
        && has_transactional_batch(&req)
        && match &transactional_id {
            Some(id) => access
                .check(Operation::Write, ResourceType::TransactionalId, id)
                .is_err(),
            None => true,
        };

    // One answer per (topic, partition), shaped like the request; route
    // known partitions by owner.
    let mut results: Vec<TopicResults> = Vec::with_capacity(req.topic_data.len());
    let mut by_owner: Vec<Vec<PartitionAppend>> = (0..shard.shards).map(|_| Vec::new()).collect();
    let by_id = frame.prefix.api_version >= 13;
    for (ti, t) in req.topic_data.iter().enumerate() {
        // v13 names the topic by id (KIP-516); an unknown id is refused
        // before the topic's own checks (after the transactional id's), as
        // Kafka does.
        let resolved: Option<Arc<str>> = if by_id {
            image.topic_by_id(&t.topic_id).map(|m| m.name.clone())
        } else {
            Some(Arc::from(t.name.0.as_str()))
        };
        let name = resolved.as_deref().unwrap_or("");
        let refused = if refused_txn {
            Some(codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        } else if resolved.is_none() {
            Some(codes::UNKNOWN_TOPIC_ID)
        } else {
            access
                .check(Operation::Write, ResourceType::Topic, name)
                .err()
                .map(|d| d.code())
        };
        let mut answers = Vec::with_capacity(t.partition_data.len());
        for (pi, p) in t.partition_data.iter().enumerate() {
            let slot = Slot {
                topic: ti,
                partition: pi,
            };
            let mut r = PartitionResult {
                index: p.index,
                base_offset: -1,
                log_append_time: -1,
                log_start_offset: -1,
                ..Default::default()
            };
            let known = image
                .topic(name)
                .is_some_and(|m| (0..m.partitions).contains(&p.index));
            if let Some(code) = refused {
                r.error_code = code;
            } else if !(acks == 0 || acks == 1 || acks == -1) {
                r.error_code = codes::INVALID_REQUIRED_ACKS;
            } else if !known {
                r.error_code = codes::UNKNOWN_TOPIC_OR_PARTITION;
            } else if crate::cluster::topic_name::is_internal(name) {
                // Kafka: clients cannot append to internal topics.
                r.error_code = codes::INVALID_TOPIC_EXCEPTION;
                r.error_message = Some(format!("cannot append to internal topic {name}"));
            } else if let Some(records) = p.records.clone() {
                let owner = shard.owner(name, p.index);
                // Until the owner answers: a partition it leaves unanswered
                // is not a success.
                r.error_code = ShardError::Unavailable(owner).code();
                let topic: Arc<str> = image
                    .topic(name)
                    .map(|m| m.name.clone())
                    .unwrap_or_else(|| Arc::from(name));
                by_owner[owner].push(PartitionAppend {
                    slot,
                    topic,
                    partition: p.index,
                    records,
                    transactional_id: transactional_id.clone(),
                    txn_operation: TransactionSupportedOperation::for_produce(
                        frame.prefix.api_version,
                    ),
                });
            } else {
                r.error_code = codes::CORRUPT_MESSAGE;
                r.error_message = Some("null records".into());
            }
            answers.push(r);
        }
        results.push(TopicResults {
            name: t.name.clone(),
            topic_id: t.topic_id,
            resolved,
            partitions: answers,
        });
    }

    // acks=all waits for the ISR until the request's `timeout_ms`.
    let acks_all = (acks == -1).then(|| {
        Instant::now() + Duration::from_millis(u64::try_from(req.timeout_ms).unwrap_or(0))
    });
    // acks=0: a refused partition closes the connection (below), which must
    // happen before the next request is read, so such a request sends no
    // reservation signal and the connection waits for its outcome.
    let close_on_refusal = acks == 0;
    if close_on_refusal
        && results
            .iter()
            .any(|t| t.partitions.iter().any(|r| r.error_code != 0))
    {
        dispatched = None;
    }
    let remote = dispatch(
        shard,
        by_owner,
        acks_all,
        &mut results,
        &mut dispatched,
        close_on_refusal,
    )
    .await;
    frame.notes.add_remote(remote);

    if acks == 0 {
        let mut all = results.iter().flat_map(|t| t.partitions.iter());
        return Ok(match all.find(|r| r.error_code != 0) {
            Some(r) => Outcome::Close(format!(
                "acks=0 produce failed with error {} ({}); closing so the client refreshes metadata",
                r.error_code,
                r.error_message.clone().unwrap_or_default()
            )),
            None => Outcome::NoResponse,
        });
    }

    // Built from the answers alone: they have the request's shape, so no
    // partition can be left without one.
    let with_leaders = frame.prefix.api_version >= 10;
    // The leaders as of now, not as of the request's arrival.
    let now = shard.metadata();
    let mut endpoints = BTreeMap::new();
    let mut resp = ProduceResponse::default();
    resp.responses = results
        .into_iter()
        .map(|t| {
            let mut tr = TopicProduceResponse::default();
            tr.partition_responses = t
                .partitions
                .into_iter()
                .map(|r| {
                    let mut pr = PartitionProduceResponse::default();
                    pr.index = r.index;
                    pr.error_code = r.error_code;
                    pr.base_offset = r.base_offset;
                    pr.log_append_time_ms = r.log_append_time;
                    pr.log_start_offset = r.log_start_offset;
                    pr.error_message = r.error_message.map(StrBytes::from_string);
                    if with_leaders && r.error_code == codes::NOT_LEADER_OR_FOLLOWER {
                        let l = leadership::current_leader(
                            &now,
                            t.resolved.as_deref().unwrap_or(""),
                            r.index,
                            frame.listener(),
                        );
                        pr.current_leader.leader_id = BrokerId(l.leader_id);
                        pr.current_leader.leader_epoch = l.leader_epoch;
                        if let Some(node) = l.node {
                            endpoints.insert(node.node_id, node);
                        }
                    }
                    pr
                })
                .collect();
            if by_id {
                tr.topic_id = t.topic_id;
            } else {
                tr.name = t.name;
            }
            tr
        })
        .collect();
    resp.node_endpoints = endpoints.into_values().map(node_endpoint).collect();
    Ok(respond(frame, &resp))
}

/// Whether some partition's batch is transactional (RecordBatch v2's
/// attributes, bit 4, at byte 21 of the batch): Kafka's
/// `hasTransactionalRecords`, which decides the transactional-id check.
fn has_transactional_batch(req: &ProduceRequest) -> bool {
    req.topic_data.iter().any(|t| {
        t.partition_data.iter().any(|p| {
            p.records
                .as_ref()
                .and_then(|r| r.get(22))
                .is_some_and(|attributes_low| attributes_low & 0x10 != 0)
        })
    })
}

/// Takes a broker as clients see it; gives its Produce v10+
/// `node_endpoints` entry (KIP-951).
fn node_endpoint(b: BrokerMeta) -> NodeEndpoint {
    let mut e = NodeEndpoint::default();
    e.node_id = BrokerId(b.node_id);
    e.host = StrBytes::from_string(b.host);
    e.port = b.port;
    e.rack = b.rack.map(StrBytes::from_string);
    e
}
