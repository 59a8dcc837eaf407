//! The transaction coordinator (KIP-98): one per `transactional.id`, on the
//! shard that owns the id's `__transaction_state` partition
//! ([`partition_for_transactional_id`], Kafka's formula). Handlers on any
//! shard forward InitProducerId (with a transactional id),
//! AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and DescribeTransactions here
//! with `Shard::invoke_on`.
//!
//! The state machine is Kafka's: Empty → Ongoing (partitions added) →
//! PrepareCommit / PrepareAbort (the decision, written to
//! `__transaction_state` before any marker) → COMMIT / ABORT control batches
//! written to every partition of the transaction, over the cross-core
//! channels to the partitions' owner shards → CompleteCommit /
//! CompleteAbort. Every transition is written to `__transaction_state`
//! before it takes effect, and replayed on start-up; a transaction found in a
//! Prepare state after a restart gets its markers written again.
//!
//! One operation per transactional id runs at a time; a request arriving
//! meanwhile gets CONCURRENT_TRANSACTIONS, which clients retry.
//! Transactions open for longer than their `transaction.timeout.ms` are
//! aborted with a bumped producer epoch (fencing the producer), checked every
//! `transaction.abort.timed.out.transaction.cleanup.interval.ms`.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::rc::Rc;
use std::time::Duration;

use kafka_protocol::ResponseError as E;

use super::records::{self, TxnLogValue, TxnStatus};
use super::{TxnConfig, TRANSACTION_STATE_TOPIC};
use crate::group::OFFSETS_TOPIC;
use crate::shard::internal::{append_records, for_each_record};
use crate::shard::{now_ms, Shard};

/// The `__transaction_state` partition of a transactional id: Java's
/// `String.hashCode` of the id, made non-negative, modulo the partition count
/// (`transaction.state.log.num.partitions`), as Kafka computes it.
pub fn partition_for_transactional_id(transactional_id: &str, partitions: i32) -> i32 {
    crate::group::records::partition_for_group(transactional_id, partitions)
}

/// One transactional id's metadata (what `__transaction_state` holds).
#[derive(Debug, Clone, PartialEq)]
pub struct TxnMetadata {
    /// The persisted fields.
    pub value: TxnLogValue,
    /// The epoch before a timeout abort bumped it (-1 when none), so the
    /// fenced producer may still re-initialise with it (KIP-588).
    pub last_epoch: i16,
}

/// A transaction as DescribeTransactions / ListTransactions show it.
#[derive(Debug, Clone, PartialEq)]
pub struct TxnDescription {
    /// Transactional id.
    pub transactional_id: String,
    /// Kafka error code (TRANSACTIONAL_ID_NOT_FOUND for unknown ids).
    pub error_code: i16,
    /// State name (`Ongoing`, `CompleteCommit`, …).
    pub state: &'static str,
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
    /// `transaction.timeout.ms`.
    pub timeout_ms: i32,
    /// Start of the current transaction (ms since the epoch), -1 when none.
    pub start_ms: i64,
    /// Partitions in the current transaction.
    pub partitions: BTreeSet<(String, i32)>,
}

/// The transactional ids coordinated by this shard.
#[derive(Default)]
pub struct TransactionCoordinator {
    txns: RefCell<HashMap<String, TxnMetadata>>,
    /// Ids with an operation in flight.
    busy: RefCell<HashSet<String>>,
}

/// Marks a transactional id busy for as long as it lives.
struct Busy {
    shard: Rc<Shard>,
    id: String,
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.shard.txns.busy.borrow_mut().remove(&self.id);
    }
}

fn acquire(shard: &Rc<Shard>, id: &str) -> Result<Busy, i16> {
    if !shard.txns.busy.borrow_mut().insert(id.to_string()) {
        return Err(E::ConcurrentTransactions.code());
    }
    Ok(Busy {
        shard: shard.clone(),
        id: id.to_string(),
    })
}

impl TransactionCoordinator {
    fn get(&self, id: &str) -> Option<TxnMetadata> {
        self.txns.borrow().get(id).cloned()
    }

    /// The transactional ids whose metadata satisfies `f`.
    fn ids_where(&self, f: impl Fn(&TxnMetadata) -> bool) -> Vec<String> {
        self.txns
            .borrow()
            .iter()
            .filter(|(_, m)| f(m))
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Replays one `__transaction_state` partition (start-up, before the
    /// shard serves requests): the last record of each id wins; a tombstone
    /// removes it.
    pub fn load(&self, part: &crate::shard::partition::Partition) {
        let mut txns = self.txns.borrow_mut();
        let n = for_each_record(part, |r| {
            let Some(key) = &r.key else { return };
            if r.control {
                return;
            }
            match records::decode(key, r.value.as_ref()) {
                Ok((id, Some(value))) => {
                    txns.insert(
                        id,
                        TxnMetadata {
                            value,
                            last_epoch: -1,
                        },
                    );
                }
                Ok((id, None)) => {
                    txns.remove(&id);
                }
                Err(e) => log::warn!(
                    "skipping record at offset {} of {}-{}: {e}",
                    r.offset,
                    part.topic(),
                    part.index()
                ),
            }
        });
        if n > 0 {
            log::info!(
                "loaded {n} record(s) from {}-{}",
                part.topic(),
                part.index()
            );
        }
    }

    /// After replay (every shard has opened its partitions): finish the
    /// transactions found in PrepareCommit / PrepareAbort (write their
    /// markers again, then complete them), and start the timers that abort
    /// timed-out transactions and remove expired transactional ids.
    pub fn start(shard: &Rc<Shard>) {
        let pending = shard.txns.ids_where(|m| {
            matches!(
                m.value.status,
                TxnStatus::PrepareCommit | TxnStatus::PrepareAbort | TxnStatus::PrepareEpochFence
            )
        });
        for id in pending {
            let Ok(busy) = acquire(shard, &id) else {
                continue;
            };
            let Some(m) = shard.txns.get(&id) else {
                continue;
            };
            let commit = m.value.status == TxnStatus::PrepareCommit;
            log::info!(
                "transactional id {id}: completing the {} found after restart",
                if commit { "commit" } else { "abort" }
            );
            let s = shard.clone();
            crate::shard::stall::spawn_local("txn recovery", async move {
                finish_markers(&s, &id, m.value, commit, Some(busy)).await;
            })
            .detach();
        }
        let cfg = shard.config.txn.clone();
        let me = Rc::downgrade(shard);
        crate::shard::stall::spawn_local("txn timeout abort", async move {
            loop {
                glommio::timer::sleep(Duration::from_millis(
                    cfg.abort_timed_out_interval_ms.max(1),
                ))
                .await;
                let Some(shard) = me.upgrade() else { break };
                abort_timed_out(&shard).await;
            }
        })
        .detach();
        let me = Rc::downgrade(shard);
        crate::shard::stall::spawn_local("txn id expiration", async move {
            loop {
                glommio::timer::sleep(Duration::from_millis(cfg.remove_expired_interval_ms.max(1)))
                    .await;
                let Some(shard) = me.upgrade() else { break };
                remove_expired(&shard, &cfg).await;
            }
        })
        .detach();
    }
}

/// Writes `value` (or a tombstone) for `id` to its `__transaction_state`
/// partition. Errors with COORDINATOR_NOT_AVAILABLE when that partition is
/// not on this shard, KAFKA_STORAGE_ERROR on I/O.
async fn persist(shard: &Rc<Shard>, id: &str, value: Option<&TxnLogValue>) -> Result<(), i16> {
    let p = partition_for_transactional_id(id, shard.config.txn.state_log_partitions);
    let Some(part) = shard.partition(TRANSACTION_STATE_TOPIC, p) else {
        return Err(E::CoordinatorNotAvailable.code());
    };
    let record = (records::txn_key(id), value.map(records::txn_value));
    append_records(&part, vec![record], None)
        .await
        .map(|_| ())
        .map_err(|e| crate::error::KafkaCode::code(&e))
}

/// Persists, then applies, a new value for `id`.
async fn transition(
    shard: &Rc<Shard>,
    id: &str,
    value: TxnLogValue,
    last_epoch: i16,
) -> Result<(), i16> {
    persist(shard, id, Some(&value)).await?;
    shard
        .txns
        .txns
        .borrow_mut()
        .insert(id.to_string(), TxnMetadata { value, last_epoch });
    Ok(())
}

async fn new_producer_id(shard: &Rc<Shard>) -> Result<i64, i16> {
    match crate::handlers::with_controller(shard, |c| {
        c.allocate_producer_id().map_err(|e| e.to_string())
    })
    .await
    {
        Ok(Ok(id)) => Ok(id),
        Ok(Err(e)) => {
            log::error!("cannot allocate a producer id: {e}");
            Err(E::CoordinatorNotAvailable.code())
        }
        Err(_) => Err(E::CoordinatorNotAvailable.code()),
    }
}

/// InitProducerId with a transactional id. `timeout_ms` is the producer's
/// `transaction.timeout.ms` (at most `transaction.max.timeout.ms`, else
/// INVALID_TRANSACTION_TIMEOUT). A new id gets a fresh producer id and epoch
/// 0; a known id gets its epoch bumped, which fences every older producer
/// with this id; an open transaction is aborted first. `current` is the
/// (producer id, epoch) the client passes from v3 (KIP-360), (-1, -1)
/// otherwise; a stale pair gives PRODUCER_FENCED. Gives (producer id, epoch)
/// or the Kafka error code (CONCURRENT_TRANSACTIONS while markers are being
/// written).
pub async fn init_producer_id(
    shard: Rc<Shard>,
    id: String,
    timeout_ms: i32,
    current: (i64, i16),
) -> Result<(i64, i16), i16> {
    if timeout_ms <= 0 || timeout_ms > shard.config.txn.max_timeout_ms {
        return Err(E::InvalidTransactionTimeout.code());
    }
    let busy = acquire(&shard, &id)?;
    let now = now_ms();
    let Some(mut m) = shard.txns.get(&id) else {
        let pid = new_producer_id(&shard).await?;
        let value = TxnLogValue {
            producer_id: pid,
            producer_epoch: 0,
            timeout_ms,
            status: TxnStatus::Empty,
            partitions: BTreeSet::new(),
            last_update_ms: now,
            start_ms: -1,
        };
        transition(&shard, &id, value, -1).await?;
        return Ok((pid, 0));
    };
    if current.0 >= 0 {
        let matches = current.0 == m.value.producer_id
            && (current.1 == m.value.producer_epoch || current.1 == m.last_epoch);
        if !matches {
            return Err(E::ProducerFenced.code());
        }
    }
    match m.value.status {
        TxnStatus::PrepareCommit | TxnStatus::PrepareAbort | TxnStatus::PrepareEpochFence => {
            return Err(E::ConcurrentTransactions.code());
        }
        TxnStatus::Ongoing => {
            // Fence the old producer and abort its transaction.
            // Epochs handed out stop at 32766, so the fence can always bump
            // (to 32767 at most; the next InitProducerId then rotates the id).
            let fence = m.value.producer_epoch.saturating_add(1);
            log::info!(
                "transactional id {id}: a new producer fences epoch {}; aborting its open transaction",
                m.value.producer_epoch
            );
            m.value = end_transaction(&shard, &id, m.value, fence, false).await?;
            if m.value.status != TxnStatus::CompleteAbort {
                // Markers still being retried: the client retries later.
                return Err(E::ConcurrentTransactions.code());
            }
        }
        _ => {}
    }
    let (pid, epoch) = if m.value.producer_epoch >= i16::MAX - 1 {
        (new_producer_id(&shard).await?, 0)
    } else {
        (m.value.producer_id, m.value.producer_epoch + 1)
    };
    let value = TxnLogValue {
        producer_id: pid,
        producer_epoch: epoch,
        timeout_ms,
        status: TxnStatus::Empty,
        partitions: BTreeSet::new(),
        last_update_ms: now_ms(),
        start_ms: -1,
    };
    transition(&shard, &id, value, -1).await?;
    drop(busy);
    Ok((pid, epoch))
}

/// Checks that (producer id, epoch) is the current one of `id`. Errors with
/// INVALID_PRODUCER_ID_MAPPING (unknown id or another producer id) or
/// PRODUCER_FENCED (another epoch).
fn check_producer(m: Option<&TxnMetadata>, producer_id: i64, epoch: i16) -> Result<(), i16> {
    let Some(m) = m else {
        return Err(E::InvalidProducerIdMapping.code());
    };
    if m.value.producer_id != producer_id {
        return Err(E::InvalidProducerIdMapping.code());
    }
    if m.value.producer_epoch != epoch {
        return Err(E::ProducerFenced.code());
    }
    Ok(())
}

/// Starts an operation of the current producer of `id`: marks the id busy
/// and gives its metadata. Errors with CONCURRENT_TRANSACTIONS or the codes
/// of [`check_producer`].
fn begin(
    shard: &Rc<Shard>,
    id: &str,
    producer_id: i64,
    epoch: i16,
) -> Result<(Busy, TxnMetadata), i16> {
    let busy = acquire(shard, id)?;
    let m = shard.txns.get(id);
    check_producer(m.as_ref(), producer_id, epoch)?;
    let m = m.ok_or(E::InvalidProducerIdMapping.code())?;
    Ok((busy, m))
}

/// Whether `partition` is in the open transaction of `id` with this producer
/// id and epoch: 0, or INVALID_PRODUCER_ID_MAPPING (unknown id or another
/// producer id), INVALID_PRODUCER_EPOCH (another epoch) or INVALID_TXN_STATE
/// (no open transaction, or the partition was not added to it). Produce
/// (before a transaction's first batch on a partition) and TxnOffsetCommit
/// ask this, as Kafka 3.6+ does (KIP-890).
pub fn verify_partition(
    shard: &Rc<Shard>,
    id: &str,
    producer_id: i64,
    epoch: i16,
    partition: &(String, i32),
) -> i16 {
    let m = shard.txns.get(id);
    match check_producer(m.as_ref(), producer_id, epoch) {
        Err(c) if c == E::ProducerFenced.code() => return E::InvalidProducerEpoch.code(),
        Err(c) => return c,
        Ok(()) => {}
    }
    match m {
        Some(m)
            if m.value.status == TxnStatus::Ongoing && m.value.partitions.contains(partition) =>
        {
            0
        }
        _ => E::InvalidTxnState.code(),
    }
}

/// AddPartitionsToTxn / AddOffsetsToTxn: adds `partitions` to the open
/// transaction of `id` (opening one if none), written to
/// `__transaction_state` before the answer. Gives 0 or the Kafka error code
/// for all of them (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
/// CONCURRENT_TRANSACTIONS while the previous transaction's markers are
/// being written).
pub async fn add_partitions(
    shard: Rc<Shard>,
    id: String,
    producer_id: i64,
    epoch: i16,
    partitions: Vec<(String, i32)>,
) -> i16 {
    let (busy, m) = match begin(&shard, &id, producer_id, epoch) {
        Ok(x) => x,
        Err(c) => return c,
    };
    let mut value = m.value.clone();
    match value.status {
        TxnStatus::PrepareCommit | TxnStatus::PrepareAbort | TxnStatus::PrepareEpochFence => {
            return E::ConcurrentTransactions.code();
        }
        TxnStatus::Dead => return E::InvalidTxnState.code(),
        TxnStatus::Ongoing => {
            if partitions.iter().all(|p| value.partitions.contains(p)) {
                return 0;
            }
        }
        TxnStatus::Empty | TxnStatus::CompleteCommit | TxnStatus::CompleteAbort => {
            value.partitions.clear();
            value.start_ms = now_ms();
            value.status = TxnStatus::Ongoing;
        }
    }
    value.partitions.extend(partitions);
    value.last_update_ms = now_ms();
    let code = match transition(&shard, &id, value, m.last_epoch).await {
        Ok(()) => 0,
        Err(c) => c,
    };
    drop(busy);
    code
}

/// EndTxn: commits (`commit`) or aborts the open transaction of `id`. The
/// decision is written to `__transaction_state` (PrepareCommit /
/// PrepareAbort), then the markers to every partition, then the Complete
/// state; the answer follows the markers, so a read_committed consumer sees
/// a committed transaction once the producer's commit returns. A retry of
/// a completed EndTxn gets 0; the other outcome gets INVALID_TXN_STATE, as
/// does an EndTxn with no transaction open.
pub async fn end_txn(
    shard: Rc<Shard>,
    id: String,
    producer_id: i64,
    epoch: i16,
    commit: bool,
) -> i16 {
    let (busy, m) = match begin(&shard, &id, producer_id, epoch) {
        Ok(x) => x,
        Err(c) => return c,
    };
    let code = match (m.value.status, commit) {
        (TxnStatus::Ongoing, _) => match end_transaction(&shard, &id, m.value, epoch, commit).await
        {
            Ok(_) => 0,
            Err(c) => c,
        },
        (TxnStatus::CompleteCommit, true) | (TxnStatus::CompleteAbort, false) => 0,
        (TxnStatus::PrepareCommit, true) | (TxnStatus::PrepareAbort, false) => {
            E::ConcurrentTransactions.code()
        }
        _ => E::InvalidTxnState.code(),
    };
    drop(busy);
    code
}

/// Ends the transaction described by `value` with producer epoch `epoch`
/// (higher than the producer's when fencing it): Prepare state, markers,
/// Complete state. The caller holds the id busy. When a marker cannot be
/// written the Prepare state stays and a background task keeps retrying;
/// the decision is already durable, so this still gives the Prepare value
/// as success.
async fn end_transaction(
    shard: &Rc<Shard>,
    id: &str,
    value: TxnLogValue,
    epoch: i16,
    commit: bool,
) -> Result<TxnLogValue, i16> {
    let last_epoch = if epoch != value.producer_epoch {
        value.producer_epoch
    } else {
        shard.txns.get(id).map(|m| m.last_epoch).unwrap_or(-1)
    };
    let prepare = TxnLogValue {
        producer_epoch: epoch,
        status: if commit {
            TxnStatus::PrepareCommit
        } else {
            TxnStatus::PrepareAbort
        },
        last_update_ms: now_ms(),
        ..value
    };
    transition(shard, id, prepare.clone(), last_epoch).await?;
    match write_markers(shard, &prepare, commit).await {
        Ok(()) => complete(shard, id, prepare, commit, last_epoch).await,
        Err(e) => {
            log::warn!(
                "transactional id {id}: markers not all written ({e}); retrying in the background"
            );
            // The Prepare state keeps other operations out
            // (CONCURRENT_TRANSACTIONS) until the retries succeed.
            let s = shard.clone();
            let id = id.to_string();
            let v = prepare.clone();
            crate::shard::stall::spawn_local("txn markers", async move {
                finish_markers(&s, &id, v, commit, None).await
            })
            .detach();
            Ok(prepare)
        }
    }
}

/// Writes the Complete state after every marker is written.
async fn complete(
    shard: &Rc<Shard>,
    id: &str,
    prepare: TxnLogValue,
    commit: bool,
    last_epoch: i16,
) -> Result<TxnLogValue, i16> {
    let current = shard.txns.get(id);
    let still_prepared = current.as_ref().is_some_and(|m| {
        m.value.producer_id == prepare.producer_id
            && m.value.producer_epoch == prepare.producer_epoch
            && m.value.status == prepare.status
    });
    if !still_prepared {
        log::warn!(
            "transactional id {id}: state changed while its markers were written; leaving it"
        );
        return Ok(current.map(|m| m.value).unwrap_or(prepare));
    }
    let done = TxnLogValue {
        status: if commit {
            TxnStatus::CompleteCommit
        } else {
            TxnStatus::CompleteAbort
        },
        partitions: BTreeSet::new(),
        // Kafka keeps the transaction's start time in the Complete state
        // (DescribeTransactions shows it after the end).
        last_update_ms: now_ms(),
        ..prepare
    };
    if let Err(c) = transition(shard, id, done.clone(), last_epoch).await {
        // The markers are written; a restart replays the Prepare state and
        // writes them again, which is harmless.
        log::warn!("transactional id {id}: cannot write the Complete state (error {c})");
        shard.txns.txns.borrow_mut().insert(
            id.to_string(),
            TxnMetadata {
                value: done.clone(),
                last_epoch,
            },
        );
    }
    Ok(done)
}

/// Retries the markers of a Prepare state until they are all written, then
/// completes the transaction (restart recovery, or after a failed write).
async fn finish_markers(
    shard: &Rc<Shard>,
    id: &str,
    prepare: TxnLogValue,
    commit: bool,
    busy: Option<Busy>,
) {
    let mut backoff = 100u64;
    loop {
        match write_markers(shard, &prepare, commit).await {
            Ok(()) => break,
            Err(e) => {
                log::warn!("transactional id {id}: writing markers failed ({e}); retrying");
                glommio::timer::sleep(Duration::from_millis(backoff)).await;
                backoff = (backoff * 2).min(5_000);
            }
        }
    }
    let last_epoch = shard.txns.get(id).map(|m| m.last_epoch).unwrap_or(-1);
    let _ = complete(shard, id, prepare, commit, last_epoch).await;
    drop(busy);
}

/// Writes a COMMIT or ABORT marker with the transaction's producer id and
/// epoch to every partition of the transaction, each on its owner shard
/// (concurrently, over the cross-core channels). Offsets partitions also end
/// the transaction's pending offset commits. Partitions of deleted topics
/// are skipped.
async fn write_markers(shard: &Rc<Shard>, value: &TxnLogValue, commit: bool) -> Result<(), String> {
    let mut by_owner: BTreeMap<usize, Vec<(String, i32)>> = BTreeMap::new();
    for (t, p) in &value.partitions {
        by_owner
            .entry(shard.owner(t, *p))
            .or_default()
            .push((t.clone(), *p));
    }
    let (pid, epoch) = (value.producer_id, value.producer_epoch);
    let mut tasks = Vec::new();
    for (owner, parts) in by_owner {
        let me = shard.clone();
        tasks.push(crate::shard::stall::spawn_local("txn marker fan-out", async move {
            me.invoke_on(owner, move |s| async move {
                for (t, p) in parts {
                    let Some(part) = s.partition(&t, p) else {
                        log::warn!("marker for {t}-{p} skipped: the partition is gone");
                        continue;
                    };
                    let written = part.write_marker(pid, epoch, commit, 0).await;
                    match written.map_err(|e| crate::error::KafkaCode::code(&e)) {
                        Ok(_) => {
                            if t == OFFSETS_TOPIC {
                                let n = s.config.group.offsets_topic_partitions;
                                s.groups.complete_txn(pid, p, n, commit);
                            }
                        }
                        Err(c) if c == E::InvalidProducerEpoch.code() => {
                            log::warn!("marker for {t}-{p} skipped: the partition knows a newer epoch of producer {pid}");
                        }
                        Err(c) => return Err(format!("{t}-{p}: error {c}")),
                    }
                }
                Ok(())
            })
            .await
        }));
    }
    let mut first_err = None;
    for t in tasks {
        match t.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(e) => {
                first_err.get_or_insert(e.to_string());
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Aborts every Ongoing transaction older than its timeout, bumping the
/// producer epoch so the producer is fenced (Kafka's behaviour).
async fn abort_timed_out(shard: &Rc<Shard>) {
    let now = now_ms();
    let expired = shard.txns.ids_where(|m| {
        m.value.status == TxnStatus::Ongoing
            && m.value.start_ms >= 0
            && now > m.value.start_ms.saturating_add(m.value.timeout_ms as i64)
    });
    for id in expired {
        let Ok(busy) = acquire(shard, &id) else {
            continue;
        };
        let Some(m) = shard.txns.get(&id) else {
            continue;
        };
        if m.value.status != TxnStatus::Ongoing {
            continue;
        }
        let fence = m.value.producer_epoch.saturating_add(1);
        log::info!(
            "transactional id {id}: transaction open for longer than {} ms; aborting it (producer epoch {} fenced)",
            m.value.timeout_ms,
            m.value.producer_epoch
        );
        if let Err(c) = end_transaction(shard, &id, m.value, fence, false).await {
            log::warn!("transactional id {id}: timeout abort failed (error {c}); will retry");
        }
        drop(busy);
    }
}

/// Removes transactional ids idle (no open transaction) for longer than
/// `transactional.id.expiration.ms`, writing a tombstone for each.
async fn remove_expired(shard: &Rc<Shard>, cfg: &TxnConfig) {
    let now = now_ms();
    let expired = shard.txns.ids_where(|m| {
        matches!(
            m.value.status,
            TxnStatus::Empty | TxnStatus::CompleteCommit | TxnStatus::CompleteAbort
        ) && now.saturating_sub(m.value.last_update_ms) > cfg.id_expiration_ms
    });
    for id in expired {
        let Ok(_busy) = acquire(shard, &id) else {
            continue;
        };
        if persist(shard, &id, None).await.is_ok() {
            shard.txns.txns.borrow_mut().remove(&id);
            log::info!("transactional id {id} expired (transactional.id.expiration.ms)");
        }
    }
}

/// DescribeTransactions for one id (TRANSACTIONAL_ID_NOT_FOUND when unknown).
pub fn describe(shard: &Rc<Shard>, id: &str) -> TxnDescription {
    match shard.txns.get(id) {
        Some(m) => TxnDescription {
            transactional_id: id.to_string(),
            error_code: 0,
            state: m.value.status.name(),
            producer_id: m.value.producer_id,
            producer_epoch: m.value.producer_epoch,
            timeout_ms: m.value.timeout_ms,
            start_ms: m.value.start_ms,
            partitions: m.value.partitions,
        },
        None => describe_unknown(id),
    }
}

/// The description of an id no coordinator knows (TRANSACTIONAL_ID_NOT_FOUND).
pub fn describe_unknown(id: &str) -> TxnDescription {
    TxnDescription {
        transactional_id: id.to_string(),
        error_code: E::TransactionalIdNotFound.code(),
        state: "",
        producer_id: -1,
        producer_epoch: -1,
        timeout_ms: 0,
        start_ms: -1,
        partitions: BTreeSet::new(),
    }
}

/// ListTransactions on this shard: ids whose state is in `states` (all when
/// empty), whose producer id is in `producer_ids` (all when empty) and, when
/// `min_duration_ms` ≥ 0, whose transaction has been open at least that long
/// (v1, KIP-994).
pub fn list(
    shard: &Rc<Shard>,
    states: &[String],
    producer_ids: &[i64],
    min_duration_ms: i64,
) -> Vec<TxnDescription> {
    let now = now_ms();
    let ids = shard.txns.ids_where(|m| {
        (states.is_empty() || states.iter().any(|s| s == m.value.status.name()))
            && (producer_ids.is_empty() || producer_ids.contains(&m.value.producer_id))
            && (min_duration_ms < 0
                || (m.value.start_ms >= 0 && now - m.value.start_ms >= min_duration_ms))
    });
    ids.iter().map(|id| describe(shard, id)).collect()
}
