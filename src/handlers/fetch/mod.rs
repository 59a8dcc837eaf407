//! Fetch (key 1), v4–v18.
//!
//! Plan (per request): one concurrent cross-core call per owner shard (the
//! local one inline), each owner reading its partitions as if each were the
//! first with data: `partition_max_bytes` capped at `max_bytes`, the first
//! batch even if larger. Owners return file regions of whole batches, not
//! bytes, so reading with the whole budget costs nothing. The connection's
//! shard then walks the results in request order and applies KIP-74: each
//! partition gets min(`partition_max_bytes`, budget left), only the first
//! with data may exceed it by one batch ([`cut_to_budget`]); a result whose
//! first batch does not fit is dropped, and one of which only part fits is
//! read again on its owner with its exact limit (a second round for those
//! only). Batch headers are read with `RWF_NOWAIT`; a header out of the page
//! cache is warmed on the blocking pool and the read retried
//! (`shard::owner::fetch`). When the response holds fewer than `min_bytes`,
//! wait on the owners' append signals (no polling) until data arrives or
//! `max_wait_ms` expires, then read again.
//!
//! Fetch sessions (KIP-227): the session cache of the connection's shard
//! (`shard::fetch_session`) decides what is read (the request's partitions,
//! or all of an incremental request's session) and, once read, which
//! partitions an incremental answer carries (records, an error, a moved
//! high watermark / LSO / log start offset); the long poll waits on every
//! partition read, as for a full request. A refused session (unknown id,
//! also one of another shard; wrong epoch) fails the whole request with
//! its top-level code. See docs/decisions/fetch-sessions.md.
//!
//! Only the partition's leader serves a fetch, decided on the owner
//! (`Shard::serving`): a follower or a broker without a replica answers
//! NOT_LEADER_OR_FOLLOWER; a `current_leader_epoch` (v9+, KIP-320) older
//! than the partition's gets FENCED_LEADER_EPOCH, a newer one
//! UNKNOWN_LEADER_EPOCH. From v16 (KIP-951) the first two carry the
//! partition's `current_leader` and the response the leaders'
//! `node_endpoints`. Follower fetches are read as consumer fetches for now
//! ([`requester`] is where they will part).
//!
//! `isolation_level` 1 (READ_COMMITTED, KIP-98) returns only whole batches
//! below the last stable offset, with the aborted transactions overlapping
//! them; a marker append bumps the append signal, so long-polls wake when
//! the LSO moves. Every response carries the LSO.

mod encode;

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::FetchRequest;
use uuid::Uuid;

use super::authz::Access;
use super::{HandlerResult, Outcome};
use crate::acl::model::{Operation, ResourceType};
use crate::cluster::leadership::{self, Requester};
use crate::cluster::metadata::BrokerMeta;
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::fetch_session::{
    FetchParams, Mode, PartitionAnswer, SessionKey, TopicRef, FINAL_EPOCH,
};
use crate::shard::notify::any_changed;
pub use crate::shard::owner::fetch::PartitionRead;
use crate::shard::owner::fetch::{self as owner_fetch, OwnerRead};
use crate::shard::Shard;
pub use encode::{encode_fetch_response, FetchPartitionOut, FetchTopicOut};

/// The owner's answer for one partition, with its Kafka error code (also
/// for the partitions the handler refuses before any read).
#[derive(Debug, Default)]
pub struct PartitionReadResult {
    /// Kafka error code.
    pub error_code: i16,
    /// What the owner read (its `error` is the code's source).
    pub read: OwnerRead,
}

impl From<OwnerRead> for PartitionReadResult {
    fn from(read: OwnerRead) -> PartitionReadResult {
        PartitionReadResult {
            error_code: read.error.as_ref().map_or(codes::NONE, |e| e.code()),
            read,
        }
    }
}

impl PartitionReadResult {
    fn failed(error_code: i16) -> PartitionReadResult {
        PartitionReadResult {
            error_code,
            read: OwnerRead::empty(),
        }
    }

    /// Drops the data (nothing of this partition fits the response).
    fn drop_data(&mut self) {
        self.read.regions.clear();
        self.read.bytes = 0;
        self.read.first_batch_bytes = 0;
    }

    /// Narrows the aborted list to the data kept: [fetch offset, end of the
    /// data) capped at the LSO, or [fetch offset, LSO) with no data.
    fn narrow_aborted(&mut self) {
        let r = &mut self.read;
        let upper = if r.bytes > 0 {
            r.end_offset.min(r.last_stable_offset)
        } else {
            r.last_stable_offset
        };
        if let Some(a) = r.aborted_transactions.as_mut() {
            a.retain(|(_, first)| *first < upper);
        }
    }
}

/// What [`cut_to_budget`] decided for one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Keep the result as it is.
    Keep,
    /// Send no data for the partition (its first batch does not fit).
    Drop,
    /// Read again with this limit (bytes) and `allow_oversize`: only part of
    /// the data fits, and where the last whole batch ends is not known.
    Reread(u64, bool),
}

/// Takes one partition's `partition_max_bytes`, the bytes and first batch
/// size (bytes) of its read made with the whole response budget, the budget
/// left (bytes) and whether no earlier partition in request order holds data;
/// gives what Kafka's sequential rule (KIP-74, `ReplicaManager.readFromLog`)
/// sends for it: min(`partition_max_bytes`, budget left), of which only the
/// first partition with data may exceed it (by its first batch), later ones
/// must fit. After it, the budget left shrinks by the bytes kept.
pub fn cut_to_budget(pmb: u64, bytes: u64, first_batch: u64, budget: u64, first: bool) -> Cut {
    let limit = pmb.min(budget);
    if bytes == 0 || bytes <= limit {
        Cut::Keep
    } else if !first && first_batch > limit {
        Cut::Drop
    } else if first && first_batch >= bytes {
        // Only the first batch, larger than the limit: what a read with
        // `allow_oversize` gives.
        Cut::Keep
    } else {
        Cut::Reread(limit, first)
    }
}

struct Slot {
    topic_index: usize,
    read: PartitionRead,
    owner: usize,
    error_code: i16,
}

/// Takes a Fetch request and its version; gives who fetches: a follower
/// replica when `replica_id` (v4–v14) or `replica_state.replica_id` (v15+,
/// KIP-903) is a broker id (>= 0), else a consumer. Both are served by the
/// leader only for now (`Requester::needs_leader`); what a follower fetch
/// also does (reading to the log end, the ISR) comes with replication.
pub fn requester(req: &FetchRequest, version: i16) -> Requester {
    let replica_id = if version >= 15 {
        req.replica_state.replica_id.0
    } else {
        req.replica_id.0
    };
    if replica_id >= 0 {
        Requester::Follower { replica_id }
    } else {
        Requester::Client
    }
}

/// A Fetch answer as its zero-copy encoder writes it: the top-level code
/// and the topics carried, for the error count
/// (`kafka_network_requestmetrics_errors_total`: the top-level code and
/// each partition's, as Kafka's `FetchResponse.errorCounts`).
struct Answered<'a>(i16, &'a [FetchTopicOut]);

impl super::ErrorCodes for Answered<'_> {
    fn error_codes(&self, _version: i16, each: &mut dyn FnMut(i16)) {
        each(self.0);
        for t in self.1 {
            for p in &t.partitions {
                each(p.error_code);
            }
        }
    }
}

/// Answers a Fetch request.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: FetchRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let image = shard.metadata();

    // KIP-227: the session cache of this shard decides what to read (the
    // request's partitions, or all of its session's) and how to answer.
    // Before v7 a request has no session fields: sessionless.
    let (session_id, epoch) = if version >= 7 {
        (req.session_id, req.session_epoch)
    } else {
        (0, FINAL_EPOCH)
    };
    let (wanted, forgotten) = session_request(&req, version);
    let begun = shard.fetch_sessions.borrow_mut().begin(
        session_id,
        epoch,
        version >= 13,
        wanted,
        &forgotten,
    );
    let begun = match begun {
        Ok(b) => b,
        Err(e) => {
            log::debug!("fetch: {e}");
            super::count_errors(frame, &Answered(e.code(), &[]));
            let resp = encode_fetch_response(
                version,
                frame.prefix.correlation_id,
                e.code(),
                0,
                &[],
                req.isolation_level,
                &[],
            );
            return Ok(Outcome::Respond(resp));
        }
    };
    let mode = begun.mode;

    let requester = requester(&req, version);
    // Kafka's checks: a follower needs CLUSTER_ACTION on the cluster (every
    // partition TOPIC_AUTHORIZATION_FAILED otherwise); a consumer READ on
    // each topic, checked before whether it exists (a topic id that names
    // no topic stays UNKNOWN_TOPIC_ID).
    let access = Access::of(shard, frame);
    let follower_refused = matches!(requester, Requester::Follower { .. })
        && access.enabled()
        && !access.cluster(Operation::ClusterAction);
    // Per response topic: whether READ was refused.
    let mut refused_of: Vec<bool> = Vec::new();
    // Topics of the response, in the order first read.
    let mut topics_out: Vec<(Option<Arc<str>>, Uuid)> = Vec::new();
    let mut topic_index_of: HashMap<TopicRef, usize> = HashMap::new();
    let mut slots: Vec<Slot> = Vec::new();
    let mut keys: Vec<SessionKey> = Vec::with_capacity(begun.partitions.len());
    for (key, p) in begun.partitions {
        let (meta, unknown) = match &key.topic {
            TopicRef::Id(id) => (image.topic_by_id(id), codes::UNKNOWN_TOPIC_ID),
            TopicRef::Name(n) => (image.topic(n), codes::UNKNOWN_TOPIC_OR_PARTITION),
        };
        let topic_index = match topic_index_of.get(&key.topic) {
            Some(i) => *i,
            None => {
                let (name, id) = match &key.topic {
                    TopicRef::Id(id) => (meta.map(|m| m.name.clone()), *id),
                    TopicRef::Name(n) => (Some(n.clone()), Uuid::nil()),
                };
                let refused = match (&requester, &name) {
                    (Requester::Follower { .. }, _) => follower_refused,
                    (_, Some(n)) => !access.allows(Operation::Read, ResourceType::Topic, n),
                    (_, None) => false,
                };
                refused_of.push(refused);
                topics_out.push((name, id));
                topic_index_of.insert(key.topic.clone(), topics_out.len() - 1);
                topics_out.len() - 1
            }
        };
        let name: Arc<str> = match (&key.topic, meta) {
            (_, Some(m)) => m.name.clone(),
            (TopicRef::Name(n), None) => n.clone(),
            (TopicRef::Id(_), None) => Arc::from(""),
        };
        let error_code = match meta {
            _ if refused_of.get(topic_index).copied().unwrap_or(false) => {
                codes::TOPIC_AUTHORIZATION_FAILED
            }
            None => unknown,
            Some(m) if !(0..m.partitions).contains(&key.partition) => {
                codes::UNKNOWN_TOPIC_OR_PARTITION
            }
            Some(_) => codes::NONE,
        };
        slots.push(Slot {
            topic_index,
            owner: shard.owner(&name, key.partition),
            read: PartitionRead {
                topic: name,
                partition: key.partition,
                fetch_offset: p.fetch_offset,
                partition_max_bytes: p.partition_max_bytes.max(0) as u64,
                isolation_level: req.isolation_level,
                // Kafka `FetchRequest.optionalEpoch`: a negative epoch
                // is not checked (the crate gives -1 before v9).
                current_leader_epoch: (p.current_leader_epoch >= 0)
                    .then_some(p.current_leader_epoch),
                requester,
                last_fetched_epoch: (version >= 12 && p.last_fetched_epoch >= 0)
                    .then_some(p.last_fetched_epoch),
            },
            error_code,
        });
        keys.push(key);
    }

    if matches!(requester, Requester::Follower { .. }) {
        // Shard-local replication (net::handoff): what still crosses cores
        // (reads only: a partition answered with an error reads nothing).
        let reads = slots.iter().filter(|s| s.error_code == codes::NONE);
        let (total, remote) = reads.fold((0u64, 0u64), |(t, r), s| {
            (t + 1, r + u64::from(s.owner != shard.id))
        });
        crate::shard::write_stats::WRITE_STATS.with(|w| {
            w.replica_reads.set(w.replica_reads.get() + total);
            w.replica_reads_cross_shard
                .set(w.replica_reads_cross_shard.get() + remote)
        });
    }
    let max_bytes = if req.max_bytes <= 0 {
        i32::MAX as u64
    } else {
        req.max_bytes as u64
    };
    // A consumer under a `consumer_byte_rate` quota fetches at most what
    // one quota window holds, and waits for no more than that (Kafka).
    let max_bytes = match requester {
        Requester::Follower { .. } => max_bytes,
        Requester::Client => {
            super::quota::fetch_max_bytes_cap(shard, frame).map_or(max_bytes, |c| max_bytes.min(c))
        }
    };
    let min_bytes = (req.min_bytes.max(0) as u64).min(max_bytes);
    let deadline = Instant::now() + Duration::from_millis(req.max_wait_ms.max(0) as u64);

    let results = loop {
        let results = read_all(shard, &slots, max_bytes).await;
        let total: u64 = results.iter().map(|r| r.read.bytes).sum();
        // An error or a divergence is answered at once, as data is.
        let any_error = results
            .iter()
            .any(|r| r.error_code != 0 || r.read.diverging_epoch.is_some());
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
        // The long poll's wait is the request's remote time (Kafka's
        // DelayedFetch in purgatory).
        let woken = Instant::now();
        frame.notes.add_remote(woken.saturating_duration_since(now));
        if woken >= deadline {
            // One last read so that data appended at the deadline is not missed.
            break read_all(shard, &slots, max_bytes).await;
        }
    };

    let mut topics: Vec<FetchTopicOut> = topics_out
        .into_iter()
        .map(|(name, id)| FetchTopicOut {
            name,
            topic_id: id,
            partitions: Vec::new(),
        })
        .collect();
    // KIP-951 (v16+, as Kafka's `handleFetchRequest`): a partition refused
    // with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH names its current
    // leader, and the response the alive leaders' endpoints (as of now: a
    // long poll may have waited).
    let now = shard.metadata();
    let mut endpoints = BTreeMap::new();
    let mut outs = Vec::with_capacity(slots.len());
    let mut answers = Vec::with_capacity(slots.len());
    let consumer = matches!(requester, Requester::Client);
    for ((slot, result), key) in slots.iter().zip(results).zip(keys) {
        let (error_code, r) = (result.error_code, result.read);
        if !slot.read.topic.is_empty() {
            crate::metrics::shard::with_topic(&slot.read.topic, |c| {
                use std::sync::atomic::Ordering::Relaxed;
                c.total_fetch.fetch_add(1, Relaxed);
                if error_code != codes::NONE {
                    c.failed_fetch.fetch_add(1, Relaxed);
                } else if consumer {
                    c.bytes_out.fetch_add(r.bytes, Relaxed);
                } else {
                    c.replication_bytes_out.fetch_add(r.bytes, Relaxed);
                }
            });
        }
        let refused = matches!(
            error_code,
            codes::NOT_LEADER_OR_FOLLOWER | codes::FENCED_LEADER_EPOCH
        );
        let current_leader = (version >= 16 && refused).then(|| {
            let l = leadership::current_leader(
                &now,
                &slot.read.topic,
                slot.read.partition,
                frame.listener(),
            );
            if let Some(node) = l.node {
                endpoints.insert(node.node_id, node);
            }
            (l.leader_id, l.leader_epoch)
        });
        answers.push((
            key,
            PartitionAnswer {
                failed: error_code != codes::NONE,
                has_records: r.bytes > 0,
                must_send: r.diverging_epoch.is_some() || current_leader.is_some(),
                high_watermark: r.high_watermark,
                last_stable_offset: r.last_stable_offset,
                log_start_offset: r.log_start_offset,
            },
        ));
        outs.push((
            slot.topic_index,
            FetchPartitionOut {
                partition: slot.read.partition,
                error_code,
                high_watermark: r.high_watermark,
                last_stable_offset: r.last_stable_offset,
                log_start_offset: r.log_start_offset,
                aborted_transactions: r.aborted_transactions,
                regions: r.regions,
                current_leader,
                diverging_epoch: r.diverging_epoch,
            },
        ));
    }
    // An incremental answer carries only the partitions with something new
    // (KIP-227); a full or sessionless one carries all.
    let carried = shard.fetch_sessions.borrow_mut().answered(mode, &answers);
    for ((topic_index, out), carry) in outs.into_iter().zip(carried) {
        if let (true, Some(t)) = (carry, topics.get_mut(topic_index)) {
            t.partitions.push(out);
        }
    }
    if matches!(mode, Mode::Incremental { .. }) {
        topics.retain(|t| !t.partitions.is_empty());
    }
    let endpoints: Vec<BrokerMeta> = endpoints.into_values().collect();
    frame.notes.set_fetch_follower(!consumer);
    super::count_errors(frame, &Answered(codes::NONE, &topics));
    Ok(Outcome::Respond(encode_fetch_response(
        version,
        frame.prefix.correlation_id,
        0,
        mode.session_id(),
        &topics,
        req.isolation_level,
        &endpoints,
    )))
}

/// Takes a Fetch request and its version; gives its partitions in request
/// order, keyed as its session keys them (topic ids from v13, names
/// before), with their fields, and its `forgotten_topics_data` (v7+,
/// KIP-227) keyed the same way.
pub fn session_request(
    req: &FetchRequest,
    version: i16,
) -> (Vec<(SessionKey, FetchParams)>, Vec<SessionKey>) {
    let topic_ref = |id: Uuid, name: &str| {
        if version >= 13 {
            TopicRef::Id(id)
        } else {
            TopicRef::Name(Arc::from(name))
        }
    };
    let mut wanted = Vec::new();
    for t in &req.topics {
        let topic = topic_ref(t.topic_id, t.topic.0.as_str());
        for p in &t.partitions {
            wanted.push((
                SessionKey {
                    topic: topic.clone(),
                    partition: p.partition,
                },
                FetchParams {
                    fetch_offset: p.fetch_offset,
                    partition_max_bytes: p.partition_max_bytes,
                    current_leader_epoch: p.current_leader_epoch,
                    last_fetched_epoch: p.last_fetched_epoch,
                    log_start_offset: p.log_start_offset,
                },
            ));
        }
    }
    let mut forgotten = Vec::new();
    for t in &req.forgotten_topics_data {
        let topic = topic_ref(t.topic_id, t.topic.0.as_str());
        for p in &t.partitions {
            forgotten.push(SessionKey {
                topic: topic.clone(),
                partition: *p,
            });
        }
    }
    (wanted, forgotten)
}

/// Reads every slot: one concurrent cross-core call per owner shard (the
/// local one inline), each partition read with the whole budget; then, in
/// request order, the results are cut to `max_bytes` (KIP-74, see
/// [`cut_to_budget`]); a partition of which only part fits is read again on its
/// owner with its exact limit (a second round, only for those).
async fn read_all(shard: &Rc<Shard>, slots: &[Slot], max_bytes: u64) -> Vec<PartitionReadResult> {
    let mut out: Vec<PartitionReadResult> = slots
        .iter()
        .map(|s| PartitionReadResult::failed(s.error_code))
        .collect();
    let mut by_owner: Vec<Vec<usize>> = (0..shard.shards).map(|_| Vec::new()).collect();
    for (i, s) in slots.iter().enumerate() {
        if s.error_code == 0 {
            if let Some(v) = by_owner.get_mut(s.owner) {
                v.push(i);
            } else {
                out[i] = PartitionReadResult::failed(codes::UNKNOWN_TOPIC_OR_PARTITION);
            }
        }
    }
    let mut tasks = Vec::new();
    for (owner, idx) in by_owner.into_iter().enumerate() {
        if idx.is_empty() {
            continue;
        }
        let reads: Vec<PartitionRead> = idx.iter().map(|&i| slots[i].read.clone()).collect();
        let me = shard.clone();
        let task = crate::shard::stall::spawn_local("fetch fan-out", async move {
            owner_fetch::read_on(&me, owner, reads, max_bytes).await
        });
        tasks.push((idx, task));
    }
    for (idx, task) in tasks {
        match task.await {
            Ok(rs) => {
                for (i, r) in idx.into_iter().zip(rs) {
                    out[i] = r.into();
                }
            }
            Err(e) => {
                for i in idx {
                    out[i] = PartitionReadResult::failed(e.code());
                }
            }
        }
    }

    // In request order: keep, drop, or re-read (one at a time: the budget
    // of those after a re-read depends on what it gave).
    let mut budget = max_bytes;
    let mut first = true;
    for (i, slot) in slots.iter().enumerate() {
        let r = &out[i];
        let cut = cut_to_budget(
            slot.read.partition_max_bytes,
            r.read.bytes,
            r.read.first_batch_bytes,
            budget,
            first,
        );
        match cut {
            Cut::Keep => {}
            Cut::Drop => out[i].drop_data(),
            Cut::Reread(limit, oversize) => {
                let again =
                    owner_fetch::reread_on(shard, slot.owner, slot.read.clone(), limit, oversize)
                        .await;
                out[i] = again.map_or_else(|e| PartitionReadResult::failed(e.code()), Into::into);
            }
        }
        out[i].narrow_aborted();
        budget = budget.saturating_sub(out[i].read.bytes);
        if out[i].read.bytes > 0 {
            first = false;
        }
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
            per_owner[s.owner].push((s.read.topic.clone(), s.read.partition, r.read.generation));
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
                            s.partition(t, *p)
                                .map(|part| (part.append_signal().clone(), *g))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Kafka's rule (`ReplicaManager.readFromLog` + `LogSegment.read`):
    /// partitions in request order, each read with min(partition_max_bytes,
    /// budget left), the first batch even if larger only while no earlier
    /// partition returned data. Gives the bytes per partition.
    fn kafka_sequential(max_bytes: u64, parts: &[(u64, Vec<u64>)]) -> Vec<u64> {
        let mut budget = max_bytes;
        let mut min_one = true;
        parts
            .iter()
            .map(|(pmb, batches)| {
                let got = take(batches, (*pmb).min(budget), min_one);
                budget = budget.saturating_sub(got);
                if got > 0 {
                    min_one = false;
                }
                got
            })
            .collect()
    }

    /// What one partition read gives: the whole batches fitting `limit`, or
    /// the first batch alone when it does not fit and `min_one`.
    fn take(batches: &[u64], limit: u64, min_one: bool) -> u64 {
        let mut sum = 0;
        for (i, b) in batches.iter().enumerate() {
            if sum + b > limit {
                if i == 0 && min_one {
                    return *b;
                }
                break;
            }
            sum += b;
        }
        sum
    }

    /// The plan: every partition read at once with the whole budget, then
    /// cut in request order with `cut_to_budget` (re-reads with the limit).
    fn planned(max_bytes: u64, parts: &[(u64, Vec<u64>)]) -> (Vec<u64>, usize) {
        let full: Vec<(u64, u64)> = parts
            .iter()
            .map(|(pmb, b)| {
                (
                    take(b, (*pmb).min(max_bytes), true),
                    b.first().copied().unwrap_or(0),
                )
            })
            .collect();
        let mut budget = max_bytes;
        let mut first = true;
        let mut rereads = 0;
        let out = parts
            .iter()
            .zip(full)
            .map(|((pmb, batches), (bytes, first_batch))| {
                let first_batch = if bytes > 0 { first_batch } else { 0 };
                let got = match cut_to_budget(*pmb, bytes, first_batch, budget, first) {
                    Cut::Keep => bytes,
                    Cut::Drop => 0,
                    Cut::Reread(limit, oversize) => {
                        rereads += 1;
                        take(batches, limit, oversize)
                    }
                };
                budget = budget.saturating_sub(got);
                if got > 0 {
                    first = false;
                }
                got
            })
            .collect();
        (out, rereads)
    }

    #[test]
    fn replica_ids_make_follower_fetches() {
        use kafka_protocol::messages::fetch_request::ReplicaState;
        use kafka_protocol::messages::BrokerId;
        let consumer = FetchRequest::default().with_replica_id(BrokerId(-1));
        assert_eq!(requester(&consumer, 14), Requester::Client);
        assert_eq!(requester(&consumer, 15), Requester::Client);
        let old = FetchRequest::default().with_replica_id(BrokerId(2));
        assert_eq!(requester(&old, 14), Requester::Follower { replica_id: 2 });
        // v15+ (KIP-903) carries the id in `replica_state`.
        let new = FetchRequest::default()
            .with_replica_state(ReplicaState::default().with_replica_id(BrokerId(3)));
        assert_eq!(requester(&new, 15), Requester::Follower { replica_id: 3 });
        assert_eq!(requester(&new, 14), Requester::Client);
    }

    #[test]
    fn budget_cut_matches_kafka_sequential_rule() {
        // Deterministic pseudo-random cases (xorshift).
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..20_000 {
            let n = 1 + rnd(5) as usize;
            let parts: Vec<(u64, Vec<u64>)> = (0..n)
                .map(|_| {
                    let pmb = 1 + rnd(400);
                    let k = rnd(6) as usize;
                    (pmb, (0..k).map(|_| 1 + rnd(200)).collect())
                })
                .collect();
            let max_bytes = 1 + rnd(600);
            let (got, _) = planned(max_bytes, &parts);
            assert_eq!(
                got,
                kafka_sequential(max_bytes, &parts),
                "{max_bytes} {parts:?}"
            );
        }
    }

    #[test]
    fn budget_exhausted_drops_later_partitions_without_rereads() {
        // First partition: one oversized batch (KIP-74); the rest do not fit.
        let parts = vec![
            (1000, vec![300, 300]),
            (1000, vec![100]),
            (1000, vec![50, 50]),
        ];
        let (got, rereads) = planned(250, &parts);
        assert_eq!(got, vec![300, 0, 0]);
        assert_eq!(rereads, 0);
        // The budget runs out inside the second partition: one re-read.
        let (got, rereads) = planned(500, &[(1000, vec![200]), (1000, vec![100, 100, 100, 100])]);
        assert_eq!(got, vec![200, 300]);
        assert_eq!(rereads, 1);
    }
}
