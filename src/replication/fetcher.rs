//! Replica fetchers: a follower copies each partition it follows from the
//! partition's leader, as Kafka's `ReplicaFetcherThread` does. Every shard
//! runs one fetcher per leader broker for the partitions it owns (so the
//! appends stay on the owner shard); a fetcher sends Fetch v15 to the
//! leader's inter-broker (first) client endpoint with `replica_state`
//! (this broker's id and epoch, KIP-903), each partition's LEO as fetch
//! offset, its latest leader epoch as `last_fetched_epoch` and the leader
//! epoch it follows as `current_leader_epoch`; it appends the batches byte
//! for byte (`Partition::append_replica`), waits for the commit, takes the
//! leader's high watermark and log start offset, and fetches again from
//! the new LEO (which tells the leader that the follower has the batches:
//! acks=all moves on that). A `diverging_epoch` in the answer truncates the
//! log to where it agrees with the leader's first (KIP-320, KIP-595's
//! rule as the Fetch path of Kafka 2.7+ uses it for data).
//!
//! The fetchers follow the metadata image: after each applied image the
//! shard's set of followed partitions is grouped by leader, fetchers start
//! for new leaders and stop for leaders no partition follows any more.
//!
//! Each fetcher keeps a KIP-227 fetch session on its leader
//! ([`super::fetch_session`]): the first request is full (epoch 0), the
//! next ones name only the partitions whose fetch offset, epochs or log
//! start offset changed and forget the partitions the fetcher dropped (or
//! holds back after an error); the leader reads every partition of the
//! session, so it still learns each follower's LEO from every request. A
//! refused session (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH)
//! or a new connection starts over with a full request. See
//! docs/decisions/fetch-sessions.md.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::fetch_request::{FetchPartition, ReplicaState};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse};
use uuid::Uuid;

use super::client::BrokerConnection;
use super::fetch_session::{Built, FollowerSession};
use crate::cluster::metadata::NO_LEADER;
use crate::error::codes;
use crate::shard::notify::{any_changed, Notify};
use crate::shard::partition::Partition;
use crate::shard::{now_ms, stall, Shard};
use crate::storage::replica_batches;

/// The Fetch version followers send (v15: `replica_state`, KIP-903).
const FETCH_VERSION: i16 = 15;

/// (topic, partition).
type Key = (Arc<str>, i32);

/// A partition a fetcher copies.
struct Followed {
    part: Rc<Partition>,
    /// The leader epoch of the image that named this leader.
    leader_epoch: i32,
    /// Not fetched before this broker time (ms): after an error.
    retry_after_ms: i64,
}

/// One fetcher: the partitions this shard follows on one leader.
struct Fetcher {
    leader: i32,
    partitions: RefCell<BTreeMap<Key, Followed>>,
    changed: Rc<Notify>,
    stopped: Cell<bool>,
}

/// Starts the fetchers of `shard`: they follow every image it applies.
pub fn start(shard: &Rc<Shard>) {
    let me = Rc::downgrade(shard);
    stall::spawn_local("replica fetchers", async move {
        let mut fetchers: BTreeMap<i32, Rc<Fetcher>> = BTreeMap::new();
        loop {
            let Some(shard) = me.upgrade() else { break };
            let signal = shard.metadata_applied().clone();
            let g = signal.generation();
            reconcile(&shard, &mut fetchers);
            drop(shard);
            any_changed(vec![(signal, g)]).await;
        }
        for f in fetchers.values() {
            f.stopped.set(true);
            f.changed.notify_all();
        }
    })
    .detach();
}

/// Groups the partitions `shard` follows by leader and hands each fetcher
/// its set; starts and stops fetchers as leaders come and go.
fn reconcile(shard: &Rc<Shard>, fetchers: &mut BTreeMap<i32, Rc<Fetcher>>) {
    let image = shard.metadata();
    let node = shard.config.node_id;
    let mut want: BTreeMap<i32, Vec<(Key, Rc<Partition>, i32)>> = BTreeMap::new();
    for p in shard.owned_partitions() {
        let Some(reg) = image.partition(p.topic(), p.index()) else {
            continue;
        };
        if p.is_leader() || reg.leader == NO_LEADER || reg.leader == node {
            continue;
        }
        if !reg.replicas.contains(&node) {
            continue;
        }
        let key = (p.topic().clone(), p.index());
        want.entry(reg.leader)
            .or_default()
            .push((key, p, reg.leader_epoch));
    }
    fetchers.retain(|leader, f| {
        let keep = want.contains_key(leader);
        if !keep {
            f.stopped.set(true);
            f.changed.notify_all();
        }
        keep
    });
    for (leader, parts) in want {
        let f = fetchers.entry(leader).or_insert_with(|| {
            let f = Rc::new(Fetcher {
                leader,
                partitions: RefCell::new(BTreeMap::new()),
                changed: Rc::new(Notify::default()),
                stopped: Cell::new(false),
            });
            log::info!(
                "shard {}: replica fetcher for leader {leader} starts",
                shard.id
            );
            stall::spawn_local("replica fetcher", run(Rc::downgrade(shard), f.clone())).detach();
            f
        });
        let mut map = f.partitions.borrow_mut();
        let mut next = BTreeMap::new();
        for (key, part, leader_epoch) in parts {
            let retry_after_ms = match map.remove(&key) {
                Some(old) if old.leader_epoch == leader_epoch && Rc::ptr_eq(&old.part, &part) => {
                    old.retry_after_ms
                }
                _ => 0,
            };
            next.insert(
                key,
                Followed {
                    part,
                    leader_epoch,
                    retry_after_ms,
                },
            );
        }
        *map = next;
        drop(map);
        f.changed.notify_all();
    }
}

/// One fetcher's loop: fetch, apply, again, until stopped.
async fn run(shard: Weak<Shard>, f: Rc<Fetcher>) {
    let mut conn: Option<BrokerConnection> = None;
    // The fetch session on the leader, tied to `conn`: a new connection
    // may land on another shard of the leader, so it starts a new session.
    let mut session = FollowerSession::default();
    loop {
        if f.stopped.get() {
            log::info!("replica fetcher for leader {} stops", f.leader);
            return;
        }
        let Some(shard) = shard.upgrade() else { return };
        let backoff = Duration::from_millis(shard.config.cluster.replica_fetch_backoff_ms.max(10));
        let now = now_ms();
        let ready: Vec<(Key, Rc<Partition>, i32)> = f
            .partitions
            .borrow()
            .iter()
            .filter(|(_, p)| p.retry_after_ms <= now)
            .map(|(k, p)| (k.clone(), p.part.clone(), p.leader_epoch))
            .collect();
        if ready.is_empty() {
            let g = f.changed.generation();
            let waiting = !f.partitions.borrow().is_empty();
            drop(shard);
            if waiting {
                let changed = any_changed(vec![(f.changed.clone(), g)]);
                futures_lite::future::or(changed, glommio::timer::sleep(backoff)).await;
            } else {
                any_changed(vec![(f.changed.clone(), g)]).await;
            }
            continue;
        }
        let image = shard.metadata();
        let addr = image
            .registrations
            .get(&f.leader)
            .and_then(|b| b.endpoint_for(&shard.security.inter_broker.listener))
            .map(|e| format!("{}:{}", e.host, e.port));
        let Some(addr) = addr else {
            drop(shard);
            glommio::timer::sleep(backoff).await;
            continue;
        };
        if conn.as_ref().is_some_and(|c| c.addr() != addr) {
            conn = None;
            session.reset();
        }
        let socket_timeout = Duration::from_millis(shard.config.cluster.replica_socket_timeout_ms);
        if conn.is_none() {
            session.reset();
            match BrokerConnection::connect(&addr, socket_timeout, &shard.security.inter_broker)
                .await
            {
                Ok(c) => {
                    c.set_receive_buffer(
                        "replica.socket.receive.buffer.bytes",
                        shard.config.cluster.replica_socket_receive_buffer_bytes,
                    );
                    conn = Some(c)
                }
                Err(e) => {
                    log::debug!(
                        "replica fetcher: cannot reach leader {} at {addr}: {e}",
                        f.leader
                    );
                    drop(shard);
                    glommio::timer::sleep(backoff).await;
                    continue;
                }
            }
        }
        let Some(c) = conn.as_mut() else { continue };
        let built = session.build(wanted(&shard, &ready));
        let Some(req) = request(&shard, &built) else {
            drop(shard);
            glommio::timer::sleep(backoff).await;
            continue;
        };
        let wait = Duration::from_millis(shard.config.cluster.replica_fetch_wait_max_ms);
        match c.call(&req, FETCH_VERSION, wait + socket_timeout).await {
            Ok(resp) => {
                let (code, id) = (resp.error_code, resp.session_id);
                if session.answered(built, code, id) {
                    log::debug!(
                        "replica fetch from leader {}: session {} refused ({code}); \
                         starting a new one",
                        f.leader,
                        req.session_id
                    );
                    continue;
                }
                apply(&shard, &f, &ready, resp, backoff).await
            }
            Err(e) => {
                session.reset();
                log::info!(
                    "replica fetch from leader {} at {addr} failed: {e}",
                    f.leader
                );
                conn = None;
                drop(shard);
                glommio::timer::sleep(backoff).await;
            }
        }
    }
}

/// Every partition of `ready` as a follower fetches it: its topic id and
/// its fields (the LEO as fetch offset, its latest epoch as
/// `last_fetched_epoch`, the leader epoch it follows, its log start offset
/// and `replica.fetch.max.bytes`).
fn wanted(shard: &Shard, ready: &[(Key, Rc<Partition>, i32)]) -> Vec<(Uuid, FetchPartition)> {
    let max_bytes = as_i32(shard.config.cluster.replica_fetch_max_bytes);
    ready
        .iter()
        .map(|((_, index), part, leader_epoch)| {
            let partition = FetchPartition::default()
                .with_partition(*index)
                .with_current_leader_epoch(*leader_epoch)
                .with_fetch_offset(part.log_end_offset())
                .with_last_fetched_epoch(part.latest_epoch().unwrap_or(-1))
                .with_log_start_offset(part.log_start_offset())
                .with_partition_max_bytes(max_bytes);
            (part.topic_id(), partition)
        })
        .collect()
}

fn as_i32(v: u64) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

/// The Fetch request of `built` (the session's id, epoch, partitions and
/// forgotten partitions), or None before this broker is registered.
fn request(shard: &Shard, built: &Built) -> Option<FetchRequest> {
    let image = shard.metadata();
    let node = shard.config.node_id;
    let epoch = image.registrations.get(&node)?.epoch;
    let cfg = &shard.config.cluster;
    Some(
        FetchRequest::default()
            .with_replica_state(
                ReplicaState::default()
                    .with_replica_id(BrokerId(node))
                    .with_replica_epoch(epoch),
            )
            .with_max_wait_ms(as_i32(cfg.replica_fetch_wait_max_ms))
            .with_min_bytes(1)
            .with_max_bytes(as_i32(cfg.replica_fetch_response_max_bytes))
            .with_isolation_level(0)
            .with_session_id(built.session_id)
            .with_session_epoch(built.epoch)
            .with_topics(built.topics.clone())
            .with_forgotten_topics_data(built.forgotten.clone()),
    )
}

/// Applies a Fetch response to the partitions it answers (those still
/// followed under the same leader epoch).
async fn apply(
    shard: &Rc<Shard>,
    f: &Fetcher,
    ready: &[(Key, Rc<Partition>, i32)],
    resp: FetchResponse,
    backoff: Duration,
) {
    if resp.error_code != codes::NONE {
        log::info!(
            "replica fetch from leader {} answered error {}",
            f.leader,
            resp.error_code
        );
        delay_all(f, backoff);
        return;
    }
    for t in &resp.responses {
        for pd in &t.partitions {
            let Some((_, part, leader_epoch)) = ready
                .iter()
                .find(|(_, p, _)| p.topic_id() == t.topic_id && p.index() == pd.partition_index)
            else {
                continue;
            };
            let still = f
                .partitions
                .borrow()
                .get(&(part.topic().clone(), part.index()))
                .is_some_and(|p| p.leader_epoch == *leader_epoch && Rc::ptr_eq(&p.part, part));
            if !still || part.is_leader() || part.leader_epoch() != *leader_epoch {
                continue;
            }
            if let Err(why) = apply_partition(shard, part, pd).await {
                log::info!(
                    "{}-{}: replica fetch from leader {}: {why}; retrying in {backoff:?}",
                    part.topic(),
                    part.index(),
                    f.leader
                );
                if let Some(p) = f
                    .partitions
                    .borrow_mut()
                    .get_mut(&(part.topic().clone(), part.index()))
                {
                    p.retry_after_ms = now_ms() + backoff.as_millis() as i64;
                }
            }
        }
    }
}

/// Every partition of `f` waits `backoff` before its next fetch.
fn delay_all(f: &Fetcher, backoff: Duration) {
    let until = now_ms() + backoff.as_millis() as i64;
    for p in f.partitions.borrow_mut().values_mut() {
        p.retry_after_ms = until;
    }
}

/// Applies one partition's answer: truncation to a divergence, the
/// batches, the leader's high watermark and log start offset. Errors with
/// why the partition should wait before it fetches again.
async fn apply_partition(
    shard: &Rc<Shard>,
    part: &Rc<Partition>,
    pd: &PartitionData,
) -> Result<(), String> {
    let _ = shard;
    match pd.error_code {
        codes::NONE => {}
        codes::OFFSET_OUT_OF_RANGE => return out_of_range(part, pd).await,
        code => return Err(format!("error {code}")),
    }
    let div = &pd.diverging_epoch;
    if div.epoch >= 0 || div.end_offset >= 0 {
        let to = truncation_point(part, div.epoch, div.end_offset);
        let leo = part
            .truncate_to(to)
            .await
            .map_err(|e| format!("truncation to {to} failed: {e}"))?;
        log::info!(
            "{}-{}: diverged from the leader at epoch {} end offset {}; truncated to {leo}",
            part.topic(),
            part.index(),
            div.epoch,
            div.end_offset
        );
        return Ok(());
    }
    if let Some(records) = pd.records.as_ref().filter(|r| !r.is_empty()) {
        let batches = replica_batches(records).map_err(|e| format!("bad batches: {e}"))?;
        if let Some(last) = batches.last() {
            // The segment a roll needs is prepared first (off the reactor).
            let end = last.header.base_offset + i64::from(last.header.last_offset_delta) + 1;
            part.ready_for_append(records.len() as u64, end - part.log_end_offset())
                .await;
            let appending = part
                .append_replica(records, &batches, now_ms())
                .map_err(|e| format!("append failed: {e}"))?;
            appending
                .finish()
                .await
                .map_err(|e| format!("append failed: {e}"))?;
            crate::metrics::shard::with_topic(part.topic(), |c| {
                c.replication_bytes_in
                    .fetch_add(records.len() as u64, std::sync::atomic::Ordering::Relaxed);
            });
        }
    }
    part.set_follower_high_watermark(pd.high_watermark);
    if pd.log_start_offset > part.log_start_offset() && pd.log_start_offset <= part.high_watermark()
    {
        if let Err(e) = part.delete_records(pd.log_start_offset).await {
            log::warn!(
                "{}-{}: cannot follow the leader's log start {}: {e}",
                part.topic(),
                part.index(),
                pd.log_start_offset
            );
        }
    }
    Ok(())
}

/// Where a follower truncates to when the leader says its log diverges
/// after (`epoch`, `end_offset`): the leader's end offset of that epoch,
/// or this replica's own end of the epoch if that is earlier (Kafka
/// `AbstractFetcherThread.truncateOnFetchResponse`).
fn truncation_point(part: &Partition, epoch: i32, end_offset: i64) -> i64 {
    let ours = part
        .end_offset_for_epoch(epoch)
        .map_or(part.high_watermark(), |(_, end)| end);
    end_offset.min(ours).min(part.log_end_offset()).max(0)
}

/// OFFSET_OUT_OF_RANGE: this replica's LEO is past the leader's (a tail the
/// leader never had: truncate to the leader's LEO, which the answer gives
/// as its high watermark bound) or before the leader's log start (start
/// again there: Kafka `truncateFullyAndStartAt`).
async fn out_of_range(part: &Rc<Partition>, pd: &PartitionData) -> Result<(), String> {
    let leo = part.log_end_offset();
    if leo < pd.log_start_offset {
        let at = part
            .truncate_fully_and_start_at(pd.log_start_offset)
            .await
            .map_err(|e| format!("restart at {} failed: {e}", pd.log_start_offset))?;
        log::info!(
            "{}-{}: behind the leader's log start; the log starts again at {at}",
            part.topic(),
            part.index()
        );
        return Ok(());
    }
    if pd.high_watermark >= 0 && leo > pd.high_watermark {
        let to = pd.high_watermark;
        let at = part
            .truncate_to(to)
            .await
            .map_err(|e| format!("truncation to {to} failed: {e}"))?;
        log::info!(
            "{}-{}: past the leader's log end; truncated to {at}",
            part.topic(),
            part.index()
        );
        return Ok(());
    }
    Err("offset out of range".into())
}
