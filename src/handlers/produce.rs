//! Produce (key 0), v3–v11, RecordBatch v2 only.
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
//! transaction (KIP-890's check, in process); later batches of that
//! transaction skip the check. See docs/transactions.md.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_channel::oneshot;
use kafka_protocol::messages::produce_response::{
    NodeEndpoint, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{BrokerId, ProduceRequest, ProduceResponse};
use kafka_protocol::protocol::StrBytes;

use super::{respond, HandlerResult, Outcome};
use crate::cluster::leadership::{self, Requester};
use crate::cluster::metadata::BrokerMeta;
use crate::error::{codes, KafkaCode};
use crate::mesh::ShardError;
use crate::protocol::RequestFrame;
use crate::shard::partition::ProduceOutcome;
use crate::shard::{now_ms, Shard};

/// Where a partition is in the request: the positions of its topic in
/// `topic_data` and of the partition in that topic's `partition_data`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Slot {
    /// Position of the topic in the request.
    pub topic: usize,
    /// Position of the partition in its topic.
    pub partition: usize,
}

/// One topic's answers, in request order (the shape of the request, so the
/// response is built from them alone).
#[derive(Debug, Clone, Default)]
struct TopicResults {
    /// The topic name as the request gave it.
    name: kafka_protocol::messages::TopicName,
    /// One answer per partition of the request, in its order.
    partitions: Vec<PartitionAppendResult>,
}

/// The answer at `slot`, if the request has it.
fn slot_mut(results: &mut [TopicResults], slot: Slot) -> Option<&mut PartitionAppendResult> {
    results
        .get_mut(slot.topic)
        .and_then(|t| t.partitions.get_mut(slot.partition))
}

/// One partition's share of a Produce request, sent to its owner shard.
#[derive(Debug, Clone)]
pub struct PartitionAppend {
    /// Position in the request (for merging replies).
    pub slot: Slot,
    /// Topic name.
    pub topic: Arc<str>,
    /// Partition index.
    pub partition: i32,
    /// The `records` field: one or more RecordBatch v2 (a slice of the request frame).
    pub records: Bytes,
    /// The request names a `transactional_id` (transactional batches need
    /// one: TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise, as Kafka).
    pub has_transactional_id: bool,
    /// The transaction coordinator confirmed this partition is in the
    /// producer's open transaction (see [`PartitionAppendResult::verify`]).
    pub verified: bool,
}

/// The owner's answer for one partition.
#[derive(Debug, Clone, Default)]
pub struct PartitionAppendResult {
    /// Position in the request.
    pub slot: Slot,
    /// Partition index.
    pub index: i32,
    /// Kafka error code.
    pub error_code: i16,
    /// Error text for the client (Produce v8+ `error_message`).
    pub error_message: Option<String>,
    /// Offset given to the first record, -1 on error.
    pub base_offset: i64,
    /// LogAppendTime used, or -1 for CreateTime topics.
    pub log_append_time: i64,
    /// Log start offset after the append.
    pub log_start_offset: i64,
    /// Not appended: the partition's batch would start a transaction, so
    /// the coordinator must first confirm that the partition was added to it
    /// (the check of KIP-890; without it a zombie or buggy producer could
    /// leave a transaction open that no coordinator will ever end).
    pub verify: Option<Verify>,
}

/// A partition's work handed back by its owner until the transaction
/// coordinator confirms it (see [`PartitionAppendResult::verify`]).
#[derive(Debug, Clone)]
pub struct Verify {
    /// Producer id of the transactional batch.
    pub producer_id: i64,
    /// Its producer epoch.
    pub epoch: i16,
    /// The work to send again once confirmed (`records` is the same slice
    /// of the request frame).
    pub work: PartitionAppend,
}

/// Runs on the owner shard: validates and appends each partition's batches.
/// With `acks_all` (acks=all: the deadline of the request's `timeout_ms`),
/// waits for the flush policy and, on a replicated partition, for the high
/// watermark to pass the batch (every ISR member holds it) before
/// answering: REQUEST_TIMED_OUT at the deadline,
/// NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR fell below
/// `min.insync.replicas` meanwhile.
pub async fn append_on_owner(
    shard: Rc<Shard>,
    work: Vec<PartitionAppend>,
    acks_all: Option<Instant>,
    reserved: Option<oneshot::Sender<()>>,
) -> Vec<PartitionAppendResult> {
    let wait_for_flush = acks_all.is_some();
    let mut out = Vec::with_capacity(work.len());
    let mut flushes = Vec::new();
    // Every partition is reserved (offsets assigned, writes submitted)
    // before any write is waited for.
    let mut appends = Vec::new();
    let mut duplicates = Vec::new();
    for w in work {
        let mut r = PartitionAppendResult {
            slot: w.slot,
            index: w.partition,
            base_offset: -1,
            log_append_time: -1,
            log_start_offset: -1,
            ..Default::default()
        };
        let part = match shard.serving(&w.topic, w.partition, Requester::Client, None) {
            Ok(part) => part,
            Err(e) => {
                r.error_code = e.code();
                r.error_message = Some(e.to_string());
                out.push(r);
                continue;
            }
        };
        let outcome = part.produce(
            &w.records,
            w.has_transactional_id,
            w.verified,
            wait_for_flush,
            now_ms(),
        );
        match outcome {
            ProduceOutcome::Refused(e) => {
                r.error_code = e.code();
                r.error_message = Some(e.to_string());
            }
            ProduceOutcome::Verify { producer_id, epoch } => {
                r.verify = Some(Verify {
                    producer_id,
                    epoch,
                    work: w,
                })
            }
            ProduceOutcome::Duplicate {
                base_offset,
                log_start_offset,
            } => {
                r.base_offset = base_offset;
                r.log_start_offset = log_start_offset;
                duplicates.push((out.len(), part.clone(), base_offset));
            }
            ProduceOutcome::Appending(appending) => {
                appends.push((out.len(), part.clone(), appending))
            }
        }
        out.push(r);
    }
    // Every partition reserved: the connection may go on with its next
    // request, unless a partition waits for the transaction coordinator
    // (its batch is not reserved yet, so the next request must wait).
    if let Some(tx) = reserved {
        if out.iter().all(|r| r.verify.is_none()) {
            let _ = tx.send(());
        }
    }
    let mut replicated = Vec::new();
    for (i, part, offset) in duplicates {
        part.wait_committed(offset).await;
        replicated.push((i, part, offset + 1));
    }
    for (i, part, appending) in appends {
        let Some(r) = out.get_mut(i) else { continue };
        match appending.finish().await {
            Ok((res, needs_flush)) => {
                r.base_offset = res.base_offset;
                r.log_append_time = res.log_append_time;
                r.log_start_offset = res.log_start_offset;
                // acks=all waits when this append made a flush due
                // (`flush.messages` reached); see docs/ARCHITECTURE.md.
                if wait_for_flush && needs_flush {
                    flushes.push((i, part.clone(), res.last_offset + 1));
                }
                replicated.push((i, part, res.last_offset + 1));
            }
            Err(e) => {
                log::error!("append to {}-{} failed: {e}", part.topic(), part.index());
                r.error_code = e.code();
                r.error_message = Some(e.to_string());
            }
        }
    }
    for (i, part, offset) in flushes {
        if let Err(e) = part.wait_flushed(offset).await {
            if let Some(r) = out.get_mut(i) {
                r.error_code = e.code();
                r.error_message = Some(format!("fdatasync failed: {e}"));
                r.base_offset = -1;
            }
        }
    }
    // The `planted-bug-early-ack` feature (off by default) breaks the
    // promise on purpose: acks=all answers without waiting for the ISR.
    let acks_all = acks_all.filter(|_| !cfg!(feature = "planted-bug-early-ack"));
    if let Some(deadline) = acks_all {
        for (i, part, offset) in replicated {
            if out.get(i).is_some_and(|r| r.error_code != 0) {
                continue;
            }
            if let Err(e) = part.wait_replicated(offset, deadline).await {
                if let Some(r) = out.get_mut(i) {
                    r.error_code = e.code();
                    r.error_message = Some(e.to_string());
                    r.base_offset = -1;
                }
            }
        }
    }
    out
}

/// Runs each owner's share concurrently (local work inline) and stores the
/// answers in `results` by slot.
async fn dispatch(
    shard: &Rc<Shard>,
    by_owner: Vec<Vec<PartitionAppend>>,
    acks_all: Option<Instant>,
    results: &mut [TopicResults],
    dispatched: &mut Option<oneshot::Sender<()>>,
) {
    let mut tasks = Vec::new();
    let mut slots = Vec::new();
    let mut reserved = Vec::new();
    for (owner, work) in by_owner.into_iter().enumerate() {
        if work.is_empty() {
            continue;
        }
        slots.push(work.iter().map(|w| w.slot).collect::<Vec<_>>());
        let me = shard.clone();
        let (tx, rx) = oneshot::channel();
        reserved.push(rx);
        tasks.push(crate::shard::stall::spawn_local(
            "produce fan-out",
            async move {
                me.invoke_on(owner, move |s| append_on_owner(s, work, acks_all, Some(tx)))
                    .await
            },
        ));
    }
    if dispatched.is_some() {
        let mut all = true;
        for rx in reserved {
            all &= rx.await.is_ok();
        }
        if all {
            if let Some(tx) = dispatched.take() {
                let _ = tx.send(());
            }
        }
    }
    for (t, sent) in tasks.into_iter().zip(slots) {
        match t.await {
            Ok(rs) => {
                for r in rs {
                    if let Some(dst) = slot_mut(results, r.slot) {
                        *dst = r;
                    }
                }
            }
            Err(e) => {
                // Outcome unknown: REQUEST_TIMED_OUT for this owner's partitions.
                for slot in sent {
                    if let Some(r) = slot_mut(results, slot) {
                        r.error_code = e.code();
                    }
                }
            }
        }
    }
}

/// Asks the transaction coordinator of `transactional_id` whether
/// `topic`-`partition` is in the open transaction of (producer id, epoch).
/// Gives 0 or the Kafka error code for the Produce answer.
async fn verify_in_transaction(
    shard: &Rc<Shard>,
    transactional_id: &str,
    producer_id: i64,
    epoch: i16,
    topic: &str,
    partition: i32,
) -> i16 {
    let owner = match super::txn_owner(shard, transactional_id) {
        Ok(o) => o,
        // The coordinator is another broker: ask it (AddPartitionsToTxn v4,
        // verify_only), as Kafka's partition leaders do.
        Err(crate::cluster::error::CoordinatorLookupError::NotCoordinator { leader, .. })
            if leader >= 0 =>
        {
            return crate::replication::remote::verify_partition(
                shard,
                leader,
                transactional_id,
                producer_id,
                epoch,
                topic,
                partition,
            )
            .await
            .unwrap_or_else(|e| {
                log::info!("verifying {topic}-{partition} with coordinator {leader}: {e}");
                crate::shard::error::VerificationError::from(e).code()
            });
        }
        Err(e) => return super::verification_lookup_code(&e),
    };
    let (id, tp) = (transactional_id.to_string(), (topic.to_string(), partition));
    shard
        .invoke_on(owner, move |s| async move {
            crate::txn::coordinator::verify_partition(&s, &id, producer_id, epoch, &tp)
                .map_or_else(|e| e.code(), |()| 0)
        })
        .await
        .unwrap_or_else(|e| e.code())
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

    // One answer per (topic, partition), shaped like the request; route
    // known partitions by owner.
    let mut results: Vec<TopicResults> = Vec::with_capacity(req.topic_data.len());
    let mut by_owner: Vec<Vec<PartitionAppend>> = (0..shard.shards).map(|_| Vec::new()).collect();
    for (ti, t) in req.topic_data.iter().enumerate() {
        let name = t.name.0.as_str();
        let mut answers = Vec::with_capacity(t.partition_data.len());
        for (pi, p) in t.partition_data.iter().enumerate() {
            let slot = Slot {
                topic: ti,
                partition: pi,
            };
            let mut r = PartitionAppendResult {
                slot,
                index: p.index,
                base_offset: -1,
                log_append_time: -1,
                log_start_offset: -1,
                ..Default::default()
            };
            let known = image
                .topic(name)
                .is_some_and(|m| (0..m.partitions).contains(&p.index));
            if !(acks == 0 || acks == 1 || acks == -1) {
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
                    has_transactional_id: req.transactional_id.is_some(),
                    verified: false,
                });
            } else {
                r.error_code = codes::CORRUPT_MESSAGE;
                r.error_message = Some("null records".into());
            }
            answers.push(r);
        }
        results.push(TopicResults {
            name: t.name.clone(),
            partitions: answers,
        });
    }

    // acks=all waits for the ISR until the request's `timeout_ms`.
    let acks_all = (acks == -1).then(|| {
        Instant::now() + Duration::from_millis(u64::try_from(req.timeout_ms).unwrap_or(0))
    });
    dispatch(shard, by_owner, acks_all, &mut results, &mut dispatched).await;

    // Partitions where a transaction would start came back unappended: ask
    // the coordinator, then append the confirmed ones (KIP-890's check, in
    // process).
    let to_verify: Vec<Verify> = results
        .iter_mut()
        .flat_map(|t| t.partitions.iter_mut())
        .filter_map(|r| r.verify.take())
        .collect();
    if !to_verify.is_empty() {
        let id = req
            .transactional_id
            .as_ref()
            .map(|t| t.0.to_string())
            .unwrap_or_default();
        let mut again: Vec<Vec<PartitionAppend>> = (0..shard.shards).map(|_| Vec::new()).collect();
        for v in to_verify {
            let (pid, epoch, mut w) = (v.producer_id, v.epoch, v.work);
            let code = verify_in_transaction(shard, &id, pid, epoch, &w.topic, w.partition).await;
            if code != 0 {
                if let Some(r) = slot_mut(&mut results, w.slot) {
                    r.error_code = code;
                    r.error_message = Some(format!(
                        "{}-{} is not in an open transaction of producer {pid} epoch {epoch} (error {code})",
                        w.topic, w.partition
                    ));
                }
                continue;
            }
            w.verified = true;
            let owner = shard.owner(&w.topic, w.partition);
            if let Some(r) = slot_mut(&mut results, w.slot) {
                r.error_code = ShardError::Unavailable(owner).code();
            }
            again[owner].push(w);
        }
        dispatch(shard, again, acks_all, &mut results, &mut None).await;
    }

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
                        let l = leadership::current_leader(&now, t.name.0.as_str(), r.index);
                        pr.current_leader.leader_id = BrokerId(l.leader_id);
                        pr.current_leader.leader_epoch = l.leader_epoch;
                        if let Some(node) = l.node {
                            endpoints.insert(node.node_id, node);
                        }
                    }
                    pr
                })
                .collect();
            tr.name = t.name;
            tr
        })
        .collect();
    resp.node_endpoints = endpoints.into_values().map(node_endpoint).collect();
    Ok(respond(frame, &resp))
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
