//! Fetch (key 1), v4–v18.
//!
//! Plan (per request): flatten the partitions in request order and read runs of
//! consecutive partitions with the same owner shard, one cross-core call per
//! run, passing down the response budget left (`max_bytes`) so the first
//! partition with data may exceed it by one batch (KIP-74) and no later one
//! does. Each owner returns file regions of whole batches, not bytes. When the
//! response holds fewer than `min_bytes`, wait on the owners' append signals
//! (no polling) until data arrives or `max_wait_ms` expires, then read again.
//! Fetch sessions (KIP-227) are answered sessionless (session id 0).
//!
//! `isolation_level` 1 (READ_COMMITTED, KIP-98) returns only whole batches
//! below the last stable offset, with the aborted transactions overlapping
//! them; a marker append bumps the append signal, so long-polls wake when
//! the LSO moves. Every response carries the LSO.

mod encode;

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::FetchRequest;
use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::{HandlerResult, Outcome};
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::notify::any_changed;
use crate::shard::Shard;
use crate::storage::{FileRegion, StorageError};
pub use encode::{encode_fetch_response, FetchPartitionOut, FetchTopicOut};

/// One partition to read, as sent to its owner.
#[derive(Debug, Clone)]
pub struct PartitionRead {
    /// Topic name.
    pub topic: Arc<str>,
    /// Partition index.
    pub partition: i32,
    /// First offset wanted.
    pub fetch_offset: i64,
    /// Per-partition limit (bytes), `partition_max_bytes`.
    pub partition_max_bytes: u64,
    /// The request's `isolation_level` (v4+): 0 READ_UNCOMMITTED, 1
    /// READ_COMMITTED (data below the LSO only, KIP-98).
    pub isolation_level: i8,
}

/// The owner's answer for one partition.
#[derive(Debug, Default)]
pub struct PartitionReadResult {
    /// Kafka error code.
    pub error_code: i16,
    /// High watermark (== LEO on one node).
    pub high_watermark: i64,
    /// Last stable offset (KIP-98; == high watermark with no open transaction).
    pub last_stable_offset: i64,
    /// Log start offset.
    pub log_start_offset: i64,
    /// Whole batches to send, as `.log` file ranges.
    pub regions: Vec<FileRegion>,
    /// Sum of the regions' lengths.
    pub bytes: u64,
    /// Append-signal generation seen at read time (to wait without a race).
    pub generation: u64,
    /// READ_COMMITTED: (producer id, first offset) of the aborted
    /// transactions overlapping the returned data; None for READ_UNCOMMITTED.
    pub aborted_transactions: Option<Vec<(i64, i64)>>,
}

/// Runs on the owner: reads each partition while `budget` lasts.
pub fn read_on_owner(
    shard: &Shard,
    reads: &[PartitionRead],
    mut budget: u64,
    mut allow_oversize: bool,
) -> Vec<PartitionReadResult> {
    reads
        .iter()
        .map(|r| {
            let mut out = PartitionReadResult {
                high_watermark: -1,
                last_stable_offset: -1,
                log_start_offset: -1,
                ..Default::default()
            };
            let Some(part) = shard.partition(&r.topic, r.partition) else {
                out.error_code = codes::UNKNOWN_TOPIC_OR_PARTITION;
                return out;
            };
            out.generation = part.appended.generation();
            let limit = r.partition_max_bytes.min(budget);
            match part.read_isolated(r.fetch_offset, limit, allow_oversize, r.isolation_level) {
                Ok(iso) => {
                    let res = iso.read;
                    out.high_watermark = res.high_watermark;
                    out.last_stable_offset = iso.last_stable_offset;
                    out.aborted_transactions = iso.aborted;
                    out.log_start_offset = res.log_start_offset;
                    out.bytes = res.bytes;
                    out.regions = res.regions;
                    budget = budget.saturating_sub(out.bytes);
                    if out.bytes > 0 {
                        allow_oversize = false;
                    }
                }
                Err(e) => {
                    if let StorageError::OffsetOutOfRange {
                        log_start_offset,
                        log_end_offset,
                        ..
                    } = &e
                    {
                        out.high_watermark = *log_end_offset;
                        out.last_stable_offset = part.last_stable_offset();
                        out.log_start_offset = *log_start_offset;
                    }
                    out.error_code = e.code();
                }
            }
            out
        })
        .collect()
}

struct Slot {
    topic_index: usize,
    read: PartitionRead,
    owner: usize,
    error_code: i16,
}

/// Answers a Fetch request.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: FetchRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let image = shard.metadata();

    // KIP-227: we never create sessions; a request naming one we did not
    // create gets FETCH_SESSION_ID_NOT_FOUND.
    if req.session_id != 0 {
        let resp = encode_fetch_response(
            version,
            frame.prefix.correlation_id,
            ResponseError::FetchSessionIdNotFound.code(),
            &[],
            req.isolation_level,
        );
        return Ok(Outcome::Respond(resp));
    }

    let mut topics_out: Vec<(Option<Arc<str>>, Uuid)> = Vec::new();
    let mut slots: Vec<Slot> = Vec::new();
    for t in &req.topics {
        let meta = if version >= 13 {
            image.topic_by_id(&t.topic_id)
        } else {
            image.topic(t.topic.0.as_str())
        };
        let topic_index = topics_out.len();
        topics_out.push((
            meta.map(|m| m.name.clone())
                .or_else(|| (version < 13).then(|| Arc::from(t.topic.0.as_str()))),
            t.topic_id,
        ));
        for p in &t.partitions {
            let name: Arc<str> = meta
                .map(|m| m.name.clone())
                .unwrap_or_else(|| Arc::from(t.topic.0.as_str()));
            let error_code = match meta {
                None if version >= 13 => codes::UNKNOWN_TOPIC_ID,
                None => codes::UNKNOWN_TOPIC_OR_PARTITION,
                Some(m) if !(0..m.partitions).contains(&p.partition) => {
                    codes::UNKNOWN_TOPIC_OR_PARTITION
                }
                Some(_) => codes::NONE,
            };
            slots.push(Slot {
                topic_index,
                owner: shard.owner(&name, p.partition),
                read: PartitionRead {
                    topic: name,
                    partition: p.partition,
                    fetch_offset: p.fetch_offset,
                    partition_max_bytes: p.partition_max_bytes.max(0) as u64,
                    isolation_level: req.isolation_level,
                },
                error_code,
            });
        }
    }

    let max_bytes = if req.max_bytes <= 0 {
        i32::MAX as u64
    } else {
        req.max_bytes as u64
    };
    let min_bytes = req.min_bytes.max(0) as u64;
    let deadline = Instant::now() + Duration::from_millis(req.max_wait_ms.max(0) as u64);

    let results = loop {
        let results = read_all(shard, &slots, max_bytes).await;
        let total: u64 = results.iter().map(|r| r.bytes).sum();
        let any_error = results.iter().any(|r| r.error_code != 0);
        let now = Instant::now();
        if total >= min_bytes.max(1)
            || any_error
            || now >= deadline
            || slots.is_empty()
            || min_bytes == 0
        {
            break results;
        }
        wait_for_appends(shard, &slots, &results, deadline).await;
        if Instant::now() >= deadline {
            // One last read so that data appended at the deadline is not missed.
            break read_all(shard, &slots, max_bytes).await;
        }
    };

    // Group back into topics in request order.
    let mut topics: Vec<FetchTopicOut> = topics_out
        .into_iter()
        .map(|(name, id)| FetchTopicOut {
            name,
            topic_id: id,
            partitions: Vec::new(),
        })
        .collect();
    for (slot, r) in slots.iter().zip(results) {
        if let Some(t) = topics.get_mut(slot.topic_index) {
            t.partitions.push(FetchPartitionOut {
                partition: slot.read.partition,
                error_code: r.error_code,
                high_watermark: r.high_watermark,
                last_stable_offset: r.last_stable_offset,
                log_start_offset: r.log_start_offset,
                aborted_transactions: r.aborted_transactions,
                regions: r.regions,
            });
        }
    }
    Ok(Outcome::Respond(encode_fetch_response(
        version,
        frame.prefix.correlation_id,
        0,
        &topics,
        req.isolation_level,
    )))
}

/// Reads every slot: runs of consecutive same-owner partitions, one call each,
/// sequentially so the response budget is shared in request order.
async fn read_all(shard: &Rc<Shard>, slots: &[Slot], max_bytes: u64) -> Vec<PartitionReadResult> {
    let mut out: Vec<PartitionReadResult> = Vec::with_capacity(slots.len());
    let mut budget = max_bytes;
    let mut i = 0;
    while i < slots.len() {
        if slots[i].error_code != 0 {
            out.push(PartitionReadResult {
                error_code: slots[i].error_code,
                high_watermark: -1,
                last_stable_offset: -1,
                log_start_offset: -1,
                ..Default::default()
            });
            i += 1;
            continue;
        }
        let owner = slots[i].owner;
        let mut j = i;
        while j < slots.len() && slots[j].owner == owner && slots[j].error_code == 0 {
            j += 1;
        }
        let reads: Vec<PartitionRead> = slots[i..j].iter().map(|s| s.read.clone()).collect();
        let n = reads.len();
        let allow_oversize = out.iter().all(|r| r.bytes == 0);
        let res = shard
            .invoke_on(owner, move |s| async move {
                read_on_owner(&s, &reads, budget, allow_oversize)
            })
            .await;
        match res {
            Ok(rs) => {
                for r in rs {
                    budget = budget.saturating_sub(r.bytes);
                    out.push(r);
                }
            }
            Err(e) => {
                for _ in 0..n {
                    out.push(PartitionReadResult {
                        error_code: e.code(),
                        high_watermark: -1,
                        last_stable_offset: -1,
                        log_start_offset: -1,
                        ..Default::default()
                    });
                }
            }
        }
        i = j;
    }
    out
}

/// Waits until any fetched partition gets an append after the generation seen
/// at read time, or until `deadline`. One wait per owner shard, raced.
async fn wait_for_appends(
    shard: &Rc<Shard>,
    slots: &[Slot],
    results: &[PartitionReadResult],
    deadline: Instant,
) {
    let mut per_owner: Vec<Vec<(Arc<str>, i32, u64)>> =
        (0..shard.shards).map(|_| Vec::new()).collect();
    for (s, r) in slots.iter().zip(results) {
        if s.error_code == 0 {
            per_owner[s.owner].push((s.read.topic.clone(), s.read.partition, r.generation));
        }
    }
    let remaining = deadline.saturating_duration_since(Instant::now());
    let (tx, rx) = futures_channel::oneshot::channel::<()>();
    let tx = Rc::new(std::cell::RefCell::new(Some(tx)));
    let mut tasks = Vec::new();
    let mut cancels = Vec::new();
    for (owner, parts) in per_owner.into_iter().enumerate() {
        if parts.is_empty() {
            continue;
        }
        let me = shard.clone();
        let tx = tx.clone();
        // Dropped when this fetch stops waiting, which ends the remote waiter
        // at once instead of at the deadline.
        let (cancel_tx, cancel_rx) = futures_channel::oneshot::channel::<()>();
        cancels.push(cancel_tx);
        let task = crate::shard::stall::spawn_local("fetch fan-out", async move {
            let _ = me
                .invoke_on(owner, move |s| async move {
                    let signals = parts
                        .iter()
                        .filter_map(|(t, p, g)| {
                            s.partition(t, *p).map(|part| (part.appended.clone(), *g))
                        })
                        .collect();
                    let cancelled = async {
                        let _ = cancel_rx.await;
                    };
                    futures_lite::future::or(
                        any_changed(signals),
                        futures_lite::future::or(glommio::timer::sleep(remaining), cancelled),
                    )
                    .await;
                })
                .await;
            if let Some(tx) = tx.borrow_mut().take() {
                let _ = tx.send(());
            }
        });
        tasks.push(task);
    }
    futures_lite::future::or(
        async {
            let _ = rx.await;
        },
        glommio::timer::sleep(remaining),
    )
    .await;
    for t in tasks {
        t.detach();
    }
}
