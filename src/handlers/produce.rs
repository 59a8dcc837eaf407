//! Produce (key 0), v3–v11, RecordBatch v2 only.
//!
//! The connection's shard splits the request by owner shard; each owner
//! validates its partitions' batches (magic, sizes, CRC32C — no per-record
//! work), appends them (offsets assigned in place, record bytes written from
//! the request buffer without a copy) and, for acks=all with a flush policy,
//! waits for the group-committed fdatasync. Replies are merged back in request
//! order. acks=0 gets no response; an error with acks=0 closes the connection,
//! as Kafka does, so the client refreshes its metadata.

use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};
use kafka_protocol::protocol::StrBytes;

use super::{respond, HandlerResult, Outcome};
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::{now_ms, Shard};
use crate::storage::validate_batches;
use crate::txn::producer_state::Check;

/// One partition's share of a Produce request, sent to its owner shard.
#[derive(Debug)]
pub struct PartitionAppend {
    /// Position in the flattened request (for merging replies).
    pub slot: usize,
    /// Topic name.
    pub topic: Arc<str>,
    /// Partition index.
    pub partition: i32,
    /// The `records` field: one or more RecordBatch v2 (a slice of the request frame).
    pub records: Bytes,
}

/// The owner's answer for one partition.
#[derive(Debug, Clone, Default)]
pub struct PartitionAppendResult {
    /// Position in the flattened request.
    pub slot: usize,
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
}

/// The idempotence check for one partition's batches. The borrow ends here,
/// before the append updates the state.
fn check_producers(
    part: &crate::shard::partition::Partition,
    batches: &[crate::storage::ValidatedBatch],
) -> Result<Check, i16> {
    let headers: Vec<_> = batches.iter().map(|b| b.header).collect();
    let state = part.producers.borrow();
    state.check(&headers)
}

/// Runs on the owner shard: validates and appends each partition's batches.
/// With `wait_for_flush` (acks=all), waits for the flush policy before
/// answering.
pub async fn append_on_owner(
    shard: Rc<Shard>,
    work: Vec<PartitionAppend>,
    wait_for_flush: bool,
) -> Vec<PartitionAppendResult> {
    let mut out = Vec::with_capacity(work.len());
    let mut flushes = Vec::new();
    for w in work {
        let mut r = PartitionAppendResult {
            slot: w.slot,
            base_offset: -1,
            log_append_time: -1,
            log_start_offset: -1,
            ..Default::default()
        };
        let Some(part) = shard.partition(&w.topic, w.partition) else {
            r.error_code = codes::UNKNOWN_TOPIC_OR_PARTITION;
            out.push(r);
            continue;
        };
        let max = part.settings().max_message_bytes;
        match validate_batches(&w.records, max) {
            Err(e) => {
                log::debug!("rejecting produce to {}-{}: {e}", w.topic, w.partition);
                r.error_code = e.code();
                r.error_message = Some(e.to_string());
            }
            Ok(batches) if batches.is_empty() => {
                r.error_code = codes::CORRUPT_MESSAGE;
                r.error_message = Some("no record batch in the request".into());
            }
            Ok(batches) => match check_producers(&part, &batches) {
                Err(code) => {
                    r.error_code = code;
                    r.error_message =
                        Some("rejected by the idempotent producer checks (KIP-98)".into());
                }
                Ok(Check::Duplicate(meta)) => {
                    // A retry of an appended batch: answer with its offsets.
                    log::debug!(
                        "{}-{}: duplicate batch (sequence {}..{}) answered with offset {}",
                        w.topic,
                        w.partition,
                        meta.first_seq,
                        meta.last_seq,
                        meta.first_offset
                    );
                    r.base_offset = meta.first_offset;
                    r.log_start_offset = part.log.borrow().log_start_offset();
                }
                Ok(Check::Append) => match part.append(&w.records, &batches, now_ms()) {
                    Ok((res, needs_flush)) => {
                        r.base_offset = res.base_offset;
                        r.log_append_time = res.log_append_time;
                        r.log_start_offset = res.log_start_offset;
                        // acks=all waits when this append made a flush due
                        // (`flush.messages` reached); see docs/ARCHITECTURE.md.
                        if wait_for_flush && needs_flush {
                            flushes.push((out.len(), part.clone(), res.last_offset + 1));
                        }
                    }
                    Err(e) => {
                        log::error!("append to {}-{} failed: {e}", w.topic, w.partition);
                        r.error_code = e.code();
                        r.error_message = Some(e.to_string());
                    }
                },
            },
        }
        out.push(r);
    }
    for (i, part, offset) in flushes {
        if let Err(e) = part.wait_flushed(offset).await {
            if let Some(r) = out.get_mut(i) {
                r.error_code = codes::KAFKA_STORAGE_ERROR;
                r.error_message = Some(format!("fdatasync failed: {e}"));
                r.base_offset = -1;
            }
        }
    }
    out
}

/// Answers a Produce request.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: ProduceRequest = frame.decode()?;
    let acks = req.acks;
    let image = shard.metadata();

    // Flatten (topic, partition) in request order; route known ones by owner.
    let mut results: Vec<PartitionAppendResult> = Vec::new();
    let mut by_owner: Vec<Vec<PartitionAppend>> = (0..shard.shards).map(|_| Vec::new()).collect();
    for t in &req.topic_data {
        let name = t.name.0.as_str();
        for p in &t.partition_data {
            let slot = results.len();
            results.push(PartitionAppendResult {
                slot,
                base_offset: -1,
                log_append_time: -1,
                log_start_offset: -1,
                ..Default::default()
            });
            let known = image
                .topic(name)
                .is_some_and(|m| (0..m.partitions).contains(&p.index));
            if !(acks == 0 || acks == 1 || acks == -1) {
                results[slot].error_code = codes::INVALID_REQUIRED_ACKS;
            } else if !known {
                results[slot].error_code = codes::UNKNOWN_TOPIC_OR_PARTITION;
            } else if crate::cluster::topic_name::is_internal(name) {
                // Kafka: clients cannot append to internal topics.
                results[slot].error_code = codes::INVALID_TOPIC_EXCEPTION;
                results[slot].error_message =
                    Some(format!("cannot append to internal topic {name}"));
            } else {
                let Some(records) = p.records.clone() else {
                    results[slot].error_code = codes::CORRUPT_MESSAGE;
                    results[slot].error_message = Some("null records".into());
                    continue;
                };
                let owner = shard.owner(name, p.index);
                let topic: Arc<str> = image
                    .topic(name)
                    .map(|m| m.name.clone())
                    .unwrap_or_else(|| Arc::from(name));
                by_owner[owner].push(PartitionAppend {
                    slot,
                    topic,
                    partition: p.index,
                    records,
                });
            }
        }
    }

    // One task per owner shard, run concurrently; local work inline.
    let wait_for_flush = acks == -1;
    let mut tasks = Vec::new();
    for (owner, work) in by_owner.into_iter().enumerate() {
        if work.is_empty() {
            continue;
        }
        let me = shard.clone();
        tasks.push(glommio::spawn_local(async move {
            me.invoke_on(owner, move |s| append_on_owner(s, work, wait_for_flush))
                .await
        }));
    }
    for t in tasks {
        match t.await {
            Ok(rs) => {
                for r in rs {
                    let slot = r.slot;
                    if let Some(dst) = results.get_mut(slot) {
                        *dst = r;
                    }
                }
            }
            Err(e) => {
                // Outcome unknown: REQUEST_TIMED_OUT for partitions without an answer.
                for r in results
                    .iter_mut()
                    .filter(|r| r.error_code == 0 && r.base_offset < 0)
                {
                    r.error_code = e.code();
                }
            }
        }
    }

    if acks == 0 {
        return Ok(match results.iter().find(|r| r.error_code != 0) {
            Some(r) => Outcome::Close(format!(
                "acks=0 produce failed with error {} ({}); closing so the client refreshes metadata",
                r.error_code,
                r.error_message.clone().unwrap_or_default()
            )),
            None => Outcome::NoResponse,
        });
    }

    let mut resp = ProduceResponse::default();
    let mut it = results.into_iter();
    resp.responses = req
        .topic_data
        .iter()
        .map(|t| {
            let mut tr = TopicProduceResponse::default();
            tr.name = t.name.clone();
            tr.partition_responses = t
                .partition_data
                .iter()
                .map(|p| {
                    let r = it.next().unwrap_or_default();
                    let mut pr = PartitionProduceResponse::default();
                    pr.index = p.index;
                    pr.error_code = r.error_code;
                    pr.base_offset = r.base_offset;
                    pr.log_append_time_ms = r.log_append_time;
                    pr.log_start_offset = r.log_start_offset;
                    pr.error_message = r.error_message.map(StrBytes::from_string);
                    pr
                })
                .collect();
            tr
        })
        .collect();
    Ok(respond(frame, &resp))
}
