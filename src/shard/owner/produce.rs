//! Produce on the partition's owner: [`append_on`] sends one owner's share
//! of a Produce request to it and gives one [`AppendAnswer`] per partition.
//! The owner reserves every partition (offsets assigned, writes submitted)
//! before it waits for any write, so a request's partitions share one
//! flush; acks=all then waits for the flush policy and the ISR.
//!
//! A transactional batch that would start a transaction on a partition is
//! held until the transaction coordinator confirms the partition is in the
//! producer's open transaction (KIP-890's check). The owner asks once for
//! all such partitions of its share, through the [`TxnVerifier`] installed
//! at start-up, then appends the confirmed ones itself: a request's first
//! transactional batches take two cross-shard rounds whatever the number of
//! partitions (connection shard → owners, owners → coordinator shard).

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use crate::cluster::leadership::Requester;
use crate::mesh::ShardError;
use crate::shard::error::{
    FlushError, ProduceError, ReplicationWaitError, TransactionSupportedOperation,
    VerificationError,
};
use crate::shard::partition::{Partition, ProduceOutcome};
use crate::shard::{now_ms, Shard};
use crate::storage::{BatchError, StorageError};

/// Where a partition is in the request: the positions of its topic in
/// `topic_data` and of the partition in that topic's `partition_data`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Slot {
    /// Position of the topic in the request.
    pub topic: usize,
    /// Position of the partition in its topic.
    pub partition: usize,
}

/// One partition's share of a Produce request, sent to its owner shard.
#[derive(Debug, Clone)]
pub struct PartitionAppend {
    /// Position in the request (for merging answers).
    pub slot: Slot,
    /// Topic name.
    pub topic: Arc<str>,
    /// Partition index.
    pub partition: i32,
    /// The `records` field: one or more RecordBatch v2 (a slice of the
    /// request frame).
    pub records: Bytes,
    /// The request's `transactional_id` (transactional batches need one:
    /// TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise, as Kafka).
    pub transactional_id: Option<Arc<str>>,
    /// What the request's version takes from the transaction check
    /// (KIP-890): from Produce v12 (transactions v2, part 2) a transaction's
    /// first batch on the partition has the coordinator add the partition to
    /// the transaction (the client sends no AddPartitionsToTxn) instead of
    /// only verifying that it was added; v11 takes TRANSACTION_ABORTABLE.
    pub txn_operation: TransactionSupportedOperation,
}

/// Why a partition of a Produce request was not appended, or its append
/// not confirmed; each maps to its Kafka code in `crate::error`. The
/// Display text is the client's `error_message` (Produce v8+).
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    /// Refused before the append (leadership, batch rules, idempotence,
    /// `min.insync.replicas`): the [`ProduceError`]'s code.
    #[error(transparent)]
    Refused(#[from] ProduceError),
    /// The write failed after offsets were assigned: the storage error's
    /// code (KAFKA_STORAGE_ERROR (56)).
    #[error(transparent)]
    Write(#[from] StorageError),
    /// acks=all and the fdatasync of the flush policy failed:
    /// KAFKA_STORAGE_ERROR (56).
    #[error("fdatasync failed: {0}")]
    Flush(#[from] FlushError),
    /// acks=all and the ISR did not take the batch: the wait's code
    /// (NOT_ENOUGH_REPLICAS_AFTER_APPEND (20), REQUEST_TIMED_OUT (7),
    /// NOT_LEADER_OR_FOLLOWER (6)).
    #[error(transparent)]
    Replication(#[from] ReplicationWaitError),
    /// The coordinator did not confirm that the partition is in the
    /// producer's open transaction (KIP-890): the verification's code.
    #[error("{topic}-{partition} is not in an open transaction of producer {producer_id} epoch {epoch}: {source}")]
    NotInTransaction {
        /// Topic name.
        topic: Arc<str>,
        /// Partition index.
        partition: i32,
        /// The batch's producer id.
        producer_id: i64,
        /// Its producer epoch.
        epoch: i16,
        /// Why not.
        source: VerificationError,
        /// The request version's operation, which decides the code the
        /// client gets (`crate::error::produce_verification_code`).
        operation: TransactionSupportedOperation,
    },
    /// The owner shard did not answer: the mesh error's code
    /// (REQUEST_TIMED_OUT (7): the outcome is unknown).
    #[error(transparent)]
    Unanswered(#[from] ShardError),
}

/// The owner's answer for one partition.
#[derive(Debug)]
pub struct AppendAnswer {
    /// Position in the request.
    pub slot: Slot,
    /// Why the partition has no success (None: appended, and confirmed as
    /// acks asked).
    pub error: Option<AppendError>,
    /// Offset given to the first record, -1 on error.
    pub base_offset: i64,
    /// LogAppendTime used (ms), or -1 for CreateTime topics.
    pub log_append_time: i64,
    /// Log start offset after the append, -1 when unknown.
    pub log_start_offset: i64,
    /// acks=all: the time the owner waited for the followers (the ISR)
    /// to hold this partition's batch (zero when it did not wait); the
    /// request's remote time.
    pub replication_wait: std::time::Duration,
}

impl AppendAnswer {
    fn new(slot: Slot) -> AppendAnswer {
        AppendAnswer {
            slot,
            error: None,
            base_offset: -1,
            log_append_time: -1,
            log_start_offset: -1,
            replication_wait: std::time::Duration::ZERO,
        }
    }

    fn fail(&mut self, e: impl Into<AppendError>) {
        self.error = Some(e.into());
        self.base_offset = -1;
    }
}

/// A future run on the shard that creates it.
pub type LocalFuture<T> = Pin<Box<dyn Future<Output = T>>>;

/// The way an owner asks the transaction coordinator (on any shard or
/// broker) whether partitions are in a producer's open transaction, or has
/// it add them; installed on every shard at start-up
/// ([`Shard::set_txn_verifier`]) by the layer that knows the coordinator.
pub trait TxnVerifier {
    /// Asks, in one call, whether each of `partitions` is in the open
    /// transaction of `transactional_id` with this `producer_id` and
    /// `epoch` or, with `add` (Produce v12+, TxnOffsetCommit v5+:
    /// transactions v2), adds them to it (opening one when none is).
    /// Gives one result per partition, in order.
    fn verify(
        &self,
        shard: Rc<Shard>,
        transactional_id: Arc<str>,
        producer_id: i64,
        epoch: i16,
        partitions: Vec<(Arc<str>, i32)>,
        add: bool,
    ) -> LocalFuture<Vec<Result<(), VerificationError>>>;
}

/// Sends `work` (partitions owned by shard `owner`) to its owner and gives
/// one answer per partition. `acks_all` is the deadline of an acks=all
/// request (its `timeout_ms`); `reserved` is sent once every partition is
/// reserved, so the connection may start on its next request: true when
/// every one was, false when any was refused (an acks=0 request then
/// closes its connection before the next is read). A shard that
/// does not answer gives every partition [`AppendError::Unanswered`].
pub async fn append_on(
    shard: &Shard,
    owner: usize,
    work: Vec<PartitionAppend>,
    acks_all: Option<Instant>,
    reserved: crate::shard::home::Reply<bool>,
) -> Vec<AppendAnswer> {
    let slots: Vec<Slot> = work.iter().map(|w| w.slot).collect();
    match shard
        .invoke_on(owner, move |s| append(s, work, acks_all, reserved))
        .await
    {
        Ok(answers) => answers,
        Err(e) => slots
            .into_iter()
            .map(|slot| AppendAnswer {
                error: Some(AppendError::Unanswered(e.clone())),
                ..AppendAnswer::new(slot)
            })
            .collect(),
    }
}

/// A partition reserved by stage 1, waiting for its write.
enum Reserved {
    Appending(Rc<Partition>, crate::shard::partition::Appending),
    Duplicate(Rc<Partition>, i64),
}

/// Runs on the owner shard: validates and appends each partition's batches.
/// With `acks_all` (acks=all: the deadline of the request's `timeout_ms`),
/// waits for the flush policy and, on a replicated partition, for the high
/// watermark to pass the batch (every ISR member holds it) before
/// answering: REQUEST_TIMED_OUT at the deadline,
/// NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR fell below
/// `min.insync.replicas` meanwhile.
async fn append(
    shard: Rc<Shard>,
    work: Vec<PartitionAppend>,
    acks_all: Option<Instant>,
    reserved: crate::shard::home::Reply<bool>,
) -> Vec<AppendAnswer> {
    let wait_for_flush = acks_all.is_some();
    let mut out: Vec<AppendAnswer> = work.iter().map(|w| AppendAnswer::new(w.slot)).collect();
    let mut stage1: Vec<(usize, Reserved)> = Vec::new();
    let mut to_verify: Vec<(usize, Rc<Partition>, i64, i16)> = Vec::new();
    for (i, w) in work.iter().enumerate() {
        let part = match shard.serving(&w.topic, w.partition, Requester::Client, None) {
            Ok(part) => part,
            Err(e) => {
                out[i].fail(ProduceError::Leadership(e));
                continue;
            }
        };
        ready_for(&part, &w.records).await;
        let outcome = part.produce(
            &w.records,
            w.transactional_id.is_some(),
            false,
            wait_for_flush,
            now_ms(),
        );
        match outcome {
            ProduceOutcome::Verify { producer_id, epoch } => {
                to_verify.push((i, part, producer_id, epoch))
            }
            other => settle(&mut out[i], &mut stage1, i, part, other),
        }
    }
    // The partitions whose batch would start a transaction: one question to
    // the coordinator for all of them, then their stage 1.
    if !to_verify.is_empty() {
        verify_all(
            &shard,
            &work,
            to_verify,
            &mut out,
            &mut stage1,
            wait_for_flush,
        )
        .await;
    }
    // Every partition reserved (or refused): the connection may go on with
    // its next request.
    reserved.send(out.iter().all(|a| a.error.is_none()));
    let appended = finish(stage1, &mut out, acks_all).await;
    for (i, w) in work.iter().enumerate() {
        let error = out.get(i).and_then(|a| a.error.as_ref());
        let failed = error.is_some();
        // Kafka's BytesRejectedPerSec: batches refused as too large.
        let too_large = matches!(
            error,
            Some(AppendError::Refused(ProduceError::Batch(
                BatchError::MessageTooLarge { .. }
            )))
        );
        let records = appended.get(i).copied().flatten();
        crate::metrics::shard::with_topic(&w.topic, |c| {
            c.total_produce.fetch_add(1, Relaxed);
            if failed {
                c.failed_produce.fetch_add(1, Relaxed);
                if too_large {
                    c.bytes_rejected.fetch_add(w.records.len() as u64, Relaxed);
                }
            } else if let Some(n) = records {
                c.messages_in.fetch_add(n, Relaxed);
                c.bytes_in.fetch_add(w.records.len() as u64, Relaxed);
            }
        });
    }
    out
}

/// Waits, when the append of `records` would roll the partition's active
/// segment, until the next segment is prepared (created on the I/O thread
/// ahead of the roll; `Partition::ready_for_append`), so the reservation
/// that follows without an await opens no file on the reactor.
async fn ready_for(part: &Rc<Partition>, records: &Bytes) {
    let offsets = crate::storage::BatchHeader::parse(records)
        .map_or(1, |h| i64::from(h.last_offset_delta) + 1);
    part.ready_for_append(records.len() as u64, offsets).await;
}

/// Records a stage-1 outcome that needs no coordinator.
fn settle(
    answer: &mut AppendAnswer,
    stage1: &mut Vec<(usize, Reserved)>,
    i: usize,
    part: Rc<Partition>,
    outcome: ProduceOutcome,
) {
    match outcome {
        ProduceOutcome::Refused(e) => answer.fail(e),
        ProduceOutcome::Duplicate {
            base_offset,
            log_start_offset,
        } => {
            answer.base_offset = base_offset;
            answer.log_start_offset = log_start_offset;
            stage1.push((i, Reserved::Duplicate(part, base_offset)));
        }
        ProduceOutcome::Appending(a) => stage1.push((i, Reserved::Appending(part, a))),
        // A verified batch is not sent back for verification.
        ProduceOutcome::Verify { producer_id, epoch } => {
            answer.fail(ProduceError::VerificationLost { producer_id, epoch })
        }
    }
}

/// Asks the coordinator about every partition of `to_verify` (grouped by
/// producer id and epoch: one call each, one in practice) and runs stage 1
/// again for the confirmed ones, as verified.
async fn verify_all(
    shard: &Rc<Shard>,
    work: &[PartitionAppend],
    mut to_verify: Vec<(usize, Rc<Partition>, i64, i16)>,
    out: &mut [AppendAnswer],
    stage1: &mut Vec<(usize, Reserved)>,
    wait_for_flush: bool,
) {
    while let Some(&(first, _, pid, epoch)) = to_verify.first() {
        // One request has one version: every partition adds, or none does.
        let operation = work
            .get(first)
            .map_or(TransactionSupportedOperation::DefaultError, |w| {
                w.txn_operation
            });
        let add = operation.adds_partition();
        let (these, rest): (Vec<_>, Vec<_>) = to_verify
            .into_iter()
            .partition(|(_, _, p, e)| (*p, *e) == (pid, epoch));
        to_verify = rest;
        // A transactional batch without a transactional_id is refused
        // before verification (ProduceError::TransactionalIdRequired).
        let id = these
            .first()
            .and_then(|(i, ..)| work.get(*i))
            .and_then(|w| w.transactional_id.clone())
            .unwrap_or_else(|| Arc::from(""));
        let partitions: Vec<(Arc<str>, i32)> = these
            .iter()
            .filter_map(|(i, ..)| work.get(*i).map(|w| (w.topic.clone(), w.partition)))
            .collect();
        let verdicts = match shard.txn_verifier() {
            Some(v) => {
                v.verify(shard.clone(), id, pid, epoch, partitions, add)
                    .await
            }
            None => Vec::new(),
        };
        let mut verdicts = verdicts.into_iter();
        for (i, part, pid, epoch) in these {
            let (Some(w), Some(answer)) = (work.get(i), out.get_mut(i)) else {
                continue;
            };
            match verdicts
                .next()
                .unwrap_or(Err(VerificationError::NoVerifier))
            {
                Ok(()) => {
                    ready_for(&part, &w.records).await;
                    let outcome = part.produce(&w.records, true, true, wait_for_flush, now_ms());
                    settle(answer, stage1, i, part, outcome);
                }
                Err(source) => answer.fail(AppendError::NotInTransaction {
                    topic: w.topic.clone(),
                    partition: w.partition,
                    producer_id: pid,
                    epoch,
                    source,
                    operation,
                }),
            }
        }
    }
}

/// Stage 2 and the acks: waits for each reserved write, then (acks=all)
/// for the flush policy and the ISR. Gives, by work index, the records
/// each written append added (None: not appended, or a duplicate).
async fn finish(
    stage1: Vec<(usize, Reserved)>,
    out: &mut [AppendAnswer],
    acks_all: Option<Instant>,
) -> Vec<Option<u64>> {
    let mut appended = vec![None; out.len()];
    let wait_for_flush = acks_all.is_some();
    let mut flushes = Vec::new();
    let mut replicated = Vec::new();
    for (i, r) in stage1 {
        let Some(answer) = out.get_mut(i) else {
            continue;
        };
        match r {
            Reserved::Duplicate(part, offset) => {
                part.wait_committed(offset).await;
                replicated.push((i, part, offset + 1));
            }
            Reserved::Appending(part, appending) => match appending.finish().await {
                Ok((res, needs_flush)) => {
                    if let Some(slot) = appended.get_mut(i) {
                        *slot = u64::try_from(res.last_offset - res.base_offset + 1).ok();
                    }
                    answer.base_offset = res.base_offset;
                    answer.log_append_time = res.log_append_time;
                    answer.log_start_offset = res.log_start_offset;
                    // acks=all waits when this append made a flush due
                    // (`flush.messages` reached); see docs/ARCHITECTURE.md.
                    if wait_for_flush && needs_flush {
                        flushes.push((i, part.clone(), res.last_offset + 1));
                    }
                    replicated.push((i, part, res.last_offset + 1));
                }
                Err(e) => {
                    log::error!("append to {}-{} failed: {e}", part.topic(), part.index());
                    answer.fail(e);
                }
            },
        }
    }
    for (i, part, offset) in flushes {
        if let Err(e) = part.wait_flushed(offset).await {
            if let Some(answer) = out.get_mut(i) {
                answer.fail(e);
            }
        }
    }
    // The `planted-bug-early-ack` feature (off by default) breaks the
    // promise on purpose: acks=all answers without waiting for the ISR.
    let acks_all = acks_all.filter(|_| !cfg!(feature = "planted-bug-early-ack"));
    if let Some(deadline) = acks_all {
        for (i, part, offset) in replicated {
            if out.get(i).is_some_and(|a| a.error.is_some()) {
                continue;
            }
            let (waited, result) = part.wait_replicated_timed(offset, deadline).await;
            if let Some(answer) = out.get_mut(i) {
                answer.replication_wait = waited;
                if let Err(e) = result {
                    answer.fail(e);
                }
            }
        }
    }
    appended
}
